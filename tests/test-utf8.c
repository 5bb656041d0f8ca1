/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/utf8.c: where well-formed UTF-8 stops, text mended with U+FFFD
 * (or a character cut short dropped), and the escape for terminals. */

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "utf8.h"

#define FFFD "\xef\xbf\xbd"

START_TEST(test_valid_length) {
        static const struct {
                const char *s;
                size_t len, valid;
        } t[] = {
#define T(s, valid) { s, sizeof(s) - 1, valid }
                T("", 0),
                T("plain", 5),
                T("caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5", 14),
                T("a\0b", 3),                     /* U+0000 is well-formed */
                T("caf\xe9", 3),                  /* Latin-1 */
                T("\xff", 0),
                T("a\x80", 1),                    /* a lone continuation byte */
                T("\xc0\xaf", 0),                 /* overlong '/' */
                T("\xe0\x80\xaf", 0),             /* overlong, 3 bytes */
                T("\xed\xa0\x80", 0),             /* a surrogate */
                T("\xf4\x90\x80\x80", 0),         /* past U+10FFFF */
                T("ok\xe2\x82", 2),               /* cut short at the end */
#undef T
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++)
                ck_assert_msg(svff_utf8_valid_length(t[i].s, t[i].len) == t[i].valid, "case %zu: %zu", i,
                              svff_utf8_valid_length(t[i].s, t[i].len));
}
END_TEST

START_TEST(test_make_valid) {
        static const struct {
                const char *s;
                size_t len;
                bool drop_cut;
                const char *want;
        } t[] = {
#define T(s, drop, want) { s, sizeof(s) - 1, drop, want }
                T("", false, ""),
                T("caf\xc3\xa9", false, "caf\xc3\xa9"),
                T("caf\xe9 ok", false, "caf" FFFD " ok"),
                T("caf\xe9 ok", true, "caf ok"),        /* a lead byte cut short */
                T("\xff\xfe", true, FFFD FFFD),          /* no lead byte: never dropped */
                T("\xed\xa0\x80", false, FFFD FFFD FFFD),   /* a surrogate: nothing of it kept */
                T("ab\xe2\x82", false, "ab" FFFD),
                T("ab\xe2\x82", true, "ab"),
#undef T
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *v = NULL;
                size_t n = 0;

                ck_assert_int_eq(svff_utf8_make_valid(t[i].s, t[i].len, t[i].drop_cut, &v, &n), 0);
                ck_assert_msg(streq(v, t[i].want), "case %zu: '%s'", i, v);
                ck_assert_uint_eq(n, strlen(t[i].want));
                ck_assert_uint_eq(svff_utf8_valid_length(v, n), n);
        }
        {
                _cleanup_free_ char *v = svff_utf8_dup_valid("\xff" "abc");

                ck_assert_str_eq(v, FFFD "abc");
                ck_assert_ptr_null(svff_utf8_dup_valid(NULL));
        }
}
END_TEST

START_TEST(test_escape) {
        static const struct {
                const char *s;
                bool keep_newline;
                const char *want;
        } t[] = {
                { "fpga", false, "fpga" },
                { "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 " FFFD, false, "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x94\xa5 " FFFD },
                { "a\x1b[31mb\x07", false, "a\\x1b[31mb\\x07" },
                { "one\ntwo\tthree\r", false, "one\\x0atwo\\x09three\\x0d" },
                { "one\ntwo", true, "one\ntwo" },
                { "del\x7f", false, "del\\x7f" },
                { "c1 \xc2\x85 \xc2\x9b", false, "c1 \\u0085 \\u009b" },
                { "\xe2\x80\xaegpf.exe", false, "\\u202egpf.exe" },
                { "\xe2\x80\xaa\xe2\x80\xab\xe2\x80\xac\xe2\x80\xad \xe2\x81\xa6\xe2\x81\xa7\xe2\x81\xa8\xe2\x81\xa9",
                  false, "\\u202a\\u202b\\u202c\\u202d \\u2066\\u2067\\u2068\\u2069" },
                { "\xe2\x80\x8e\xe2\x80\x8f\xd8\x9c \xe2\x80\xa8\xe2\x80\xa9", false,
                  "\\u200e\\u200f\\u061c \\u2028\\u2029" },
                /* not UTF-8: each bad byte shown */
                { "caf\xe9 \xff", false, "caf\\xe9 \\xff" },
                { "", false, "" },
        };

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                _cleanup_free_ char *e = svff_utf8_escape(t[i].s, t[i].keep_newline);

                ck_assert_ptr_nonnull(e);
                ck_assert_msg(streq(e, t[i].want), "case %zu: '%s'", i, e);
        }
        ck_assert_ptr_null(svff_utf8_escape(NULL, false));
}
END_TEST

int main(void) {
        Suite *s = suite_create("utf8");
        TCase *tc = tcase_create("utf8");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_valid_length);
        tcase_add_test(tc, test_make_valid);
        tcase_add_test(tc, test_escape);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

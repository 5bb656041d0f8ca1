/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/sha256.c: the test vectors of FIPS 180-4's examples (NIST's
 * "SHA256.pdf"), every split of a message into updates, the padding at
 * each length around a block's end, and a file read through a pipe. */

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "sha256.h"

START_TEST(test_vectors) {
        static const struct {
                const char *msg, *digest;
        } t[] = {
                { "", "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855" },
                { "abc", "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad" },
                { "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq",
                  "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1" },
                { "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmnoijklmnopjklmnopqklmnopqrlmnopqrs"
                  "mnopqrstnopqrstu",
                  "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1" },
        };
        char hex[SVFF_SHA256_HEX_SIZE];

        for (size_t i = 0; i < ELEMENTSOF(t); i++) {
                svff_sha256_hex(t[i].msg, strlen(t[i].msg), hex);
                ck_assert_msg(streq(hex, t[i].digest), "vector %zu: %s", i, hex);
                ck_assert(svff_sha256_hex_valid(hex));
        }
}
END_TEST

START_TEST(test_million_a) {
        struct svff_sha256 c;
        uint8_t d[SVFF_SHA256_SIZE], chunk[1000];
        static const uint8_t want[SVFF_SHA256_SIZE] = {
                0xcd, 0xc7, 0x6e, 0x5c, 0x99, 0x14, 0xfb, 0x92, 0x81, 0xa1, 0xc7, 0xe2, 0x84, 0xd7, 0x3e, 0x67,
                0xf1, 0x80, 0x9a, 0x48, 0xa4, 0x97, 0x20, 0x0e, 0x04, 0x6d, 0x39, 0xcc, 0xc7, 0x11, 0x2c, 0xd0,
        };

        memset(chunk, 'a', sizeof(chunk));
        svff_sha256_init(&c);
        for (int i = 0; i < 1000; i++)
                svff_sha256_update(&c, chunk, sizeof(chunk));
        svff_sha256_final(&c, d);
        ck_assert_mem_eq(d, want, sizeof(want));
}
END_TEST

/* Every length from 0 to 200 (each side of the 55/56/64-byte padding
 * edges, three blocks' worth), fed whole and in every two-piece split:
 * the digest depends on the bytes only. */
START_TEST(test_splits) {
        uint8_t msg[200];

        for (size_t i = 0; i < sizeof(msg); i++)
                msg[i] = (uint8_t) (i * 7 + 3);
        for (size_t n = 0; n <= sizeof(msg); n++) {
                char whole[SVFF_SHA256_HEX_SIZE];

                svff_sha256_hex(msg, n, whole);
                for (size_t cut = 0; cut <= n; cut++) {
                        struct svff_sha256 c;
                        uint8_t d[SVFF_SHA256_SIZE];
                        char hex[SVFF_SHA256_HEX_SIZE];
                        static const char digits[] = "0123456789abcdef";

                        svff_sha256_init(&c);
                        svff_sha256_update(&c, msg, cut);
                        svff_sha256_update(&c, msg + cut, n - cut);
                        svff_sha256_final(&c, d);
                        for (size_t i = 0; i < SVFF_SHA256_SIZE; i++) {
                                hex[2 * i] = digits[d[i] >> 4];
                                hex[2 * i + 1] = digits[d[i] & 15];
                        }
                        hex[2 * SVFF_SHA256_SIZE] = '\0';
                        ck_assert_msg(streq(hex, whole), "length %zu cut at %zu", n, cut);
                }
        }
}
END_TEST

START_TEST(test_hex_valid) {
        const char *ok = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";

        ck_assert(svff_sha256_hex_valid(ok));
        ck_assert(!svff_sha256_hex_valid(NULL));
        ck_assert(!svff_sha256_hex_valid(""));
        ck_assert(!svff_sha256_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b85"));
        ck_assert(!svff_sha256_hex_valid("e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b8555"));
        ck_assert(!svff_sha256_hex_valid("E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855"));
        ck_assert(!svff_sha256_hex_valid("g3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"));
}
END_TEST

static bool cancel_now(void *userdata) {
        return *(bool *) userdata;
}

/* Through a pipe: short reads, and what arrives across several of them. */
START_TEST(test_fd) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        char hex[SVFF_SHA256_HEX_SIZE];
        int p[2];
        bool cancel = false;

        ck_assert_int_eq(pipe(p), 0);
        ck_assert_int_eq(write(p[1], "ab", 2), 2);
        ck_assert_int_eq(write(p[1], "c", 1), 1);
        close(p[1]);
        ck_assert_int_eq(svff_sha256_fd(p[0], "pipe", cancel_now, &cancel, hex, &err), 0);
        ck_assert_str_eq(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
        close(p[0]);

        ck_assert_int_eq(pipe(p), 0);
        close(p[1]);
        cancel = true;
        ck_assert_int_eq(svff_sha256_fd(p[0], "the image", cancel_now, &cancel, hex, &err), -ECANCELED);
        ck_assert_msg(strstr(svff_error_message(&err), "the image"), "%s", svff_error_message(&err));
        close(p[0]);

        svff_error_free(&err);
        ck_assert_int_eq(svff_sha256_fd(-1, "nothing", NULL, NULL, hex, &err), -EBADF);
        ck_assert_msg(strstr(svff_error_message(&err), "Cannot read 'nothing'"), "%s", svff_error_message(&err));
}
END_TEST

int main(void) {
        Suite *s = suite_create("sha256");
        TCase *tc = tcase_create("sha256");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_vectors);
        tcase_add_test(tc, test_million_a);
        tcase_add_test(tc, test_splits);
        tcase_add_test(tc, test_hex_valid);
        tcase_add_test(tc, test_fd);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

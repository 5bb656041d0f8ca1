/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <errno.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static struct json_object *parse_ok(const char *s) {
        struct json_object *v = NULL;
        const char *why = NULL;
        int r;

        r = svff_json_parse(s, strlen(s), 16, &v, &why);
        ck_assert_msg(r == 0, "parse of '%s' failed: %d (%s)", s, r, strna(why));
        return v;
}

static int parse_err(const char *s, size_t len) {
        struct json_object *v = (struct json_object *) 0x1;
        const char *why = NULL;
        int r;

        r = svff_json_parse(s, len, 16, &v, &why);
        ck_assert_int_lt(r, 0);
        ck_assert_ptr_eq(v, (struct json_object *) 0x1);  /* untouched */
        if (r == -EBADMSG)
                ck_assert_ptr_nonnull(why);
        return r;
}

START_TEST(test_parse_strict) {
        struct json_object *v;

        v = parse_ok("{\"a\":1}");
        json_object_put(v);
        v = parse_ok("  {\"a\":[1,2,{\"b\":null}]} \n\t");
        json_object_put(v);
        v = parse_ok("123");
        ck_assert_int_eq(json_object_get_int(v), 123);
        json_object_put(v);

        ck_assert_int_eq(parse_err("{\"a\":1} x", 9), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\":1}{}", 9), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\":1,}", 8), -EBADMSG);
        ck_assert_int_eq(parse_err("/* c */{}", 9), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\":'x'}", 9), -EBADMSG);
        ck_assert_int_eq(parse_err("[True]", 6), -EBADMSG);
        ck_assert_int_eq(parse_err("[nan]", 5), -EBADMSG);
        ck_assert_int_eq(parse_err("[01]", 4), -EBADMSG);
        v = parse_ok("[true,false,null,\"NaN'\"]");
        json_object_put(v);
        /* json-c's strict mode takes these; they do not round-trip */
        ck_assert_int_eq(parse_err("[NaN]", 5), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\":[1,{\"b\":-Infinity}]}", 25), -EBADMSG);
        ck_assert_int_eq(parse_err("[1e999]", 7), -EBADMSG);
        /* and this one, harmlessly */
        v = parse_ok("{'a':1}");
        json_object_put(v);
        v = parse_ok("null");
        ck_assert_ptr_null(v);
        ck_assert_int_eq(parse_err("{\"a\":1", 6), -EBADMSG);
        ck_assert_int_eq(parse_err("", 0), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\":\"\xff\"}", 8), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\":1}\0", 8), -EBADMSG);
        ck_assert_int_eq(parse_err("{\"a\"\0:1}", 8), -EBADMSG);
}
END_TEST

START_TEST(test_parse_depth) {
        char deep[64];
        struct json_object *v = NULL;
        int r;

        /* 16 empty arrays parse with a limit of 16, 17 do not; a scalar
         * inside the innermost counts as one more level (json-c's rule) */
        memset(deep, '[', 16);
        memset(deep + 16, ']', 16);
        r = svff_json_parse(deep, 32, 16, &v, NULL);
        ck_assert_int_eq(r, 0);
        json_object_put(v);

        memset(deep, '[', 17);
        memset(deep + 17, ']', 17);
        ck_assert_int_eq(parse_err(deep, 34), -EBADMSG);

        memset(deep, '[', 15);
        deep[15] = '1';
        memset(deep + 16, ']', 15);
        r = svff_json_parse(deep, 31, 16, &v, NULL);
        ck_assert_int_eq(r, 0);
        json_object_put(v);

        memset(deep, '[', 16);
        deep[16] = '1';
        memset(deep + 17, ']', 16);
        ck_assert_int_eq(parse_err(deep, 33), -EBADMSG);
}
END_TEST

START_TEST(test_wide_integers) {
        _cleanup_(json_object_putp) struct json_object *v = NULL;
        uint64_t u = 7;
        int64_t i = 7;
        unsigned x = 7;

        v = parse_ok("{\"umax\":18446744073709551615,\"uover\":18446744073709551616,"
                     "\"huge\":123456789012345678901234567890,"
                     "\"imin\":-9223372036854775808,\"iunder\":-9223372036854775809,"
                     "\"imax\":9223372036854775807,\"i2\":9223372036854775808,"
                     "\"neg\":-1,\"zero\":0,\"frac\":1.5,\"exp\":1e3,\"big\":1e300,"
                     "\"s\":\"18446744073709551616\",\"esc\":\"\\\"1844674407370955161600\","
                     "\"arr\":[18446744073709551616],\"uintmax\":4294967295,\"uover32\":4294967296,"
                     "\"t\":true,\"n\":null,\"str\":\"x\",\"nul\":\"a\\u0000b\",\"o\":{},"
                     "\"umax1\":18446744073709551614,"
                     "\"imin1\":-9223372036854775807}");

        ck_assert_int_eq(svff_json_get_u64(v, "umax1", &u), 0);
        ck_assert_uint_eq(u, UINT64_MAX - 1);
        ck_assert_int_eq(svff_json_get_i64(v, "imin1", &i), 0);
        ck_assert_int_eq(i, INT64_MIN + 1);
        ck_assert(svff_json_has_clamped_int(v));
        ck_assert(!svff_json_has_clamped_int(json_object_object_get(v, "umax1")));
        u = 7;
        i = 7;

        /* json-c clamps overflows to UINT64_MAX and INT64_MIN, so those
         * two values are refused with them */
        ck_assert_int_eq(svff_json_get_u64(v, "umax", &u), -ERANGE);
        ck_assert_int_eq(svff_json_get_u64(v, "uover", &u), -ERANGE);
        ck_assert_int_eq(svff_json_get_u64(v, "huge", &u), -ERANGE);
        ck_assert_int_eq(svff_json_get_i64(v, "uover", &i), -ERANGE);
        ck_assert_int_eq(svff_json_get_i64(v, "huge", &i), -ERANGE);
        ck_assert_uint_eq(u, 7);  /* untouched */

        ck_assert_int_eq(svff_json_get_i64(v, "imin", &i), -ERANGE);
        ck_assert_int_eq(svff_json_get_i64(v, "iunder", &i), -ERANGE);
        ck_assert_int_eq(i, 7);  /* untouched */
        ck_assert_int_eq(svff_json_get_u64(v, "iunder", &u), -ERANGE);
        ck_assert_int_eq(svff_json_get_i64(v, "imax", &i), 0);
        ck_assert_int_eq(i, INT64_MAX);
        ck_assert_int_eq(svff_json_get_i64(v, "i2", &i), -ERANGE);
        ck_assert_int_eq(svff_json_get_u64(v, "i2", &u), 0);
        ck_assert_uint_eq(u, 9223372036854775808ULL);

        ck_assert_int_eq(svff_json_get_u64(v, "neg", &u), -ERANGE);
        ck_assert_int_eq(svff_json_get_i64(v, "neg", &i), 0);
        ck_assert_int_eq(i, -1);
        ck_assert_int_eq(svff_json_get_u64(v, "zero", &u), 0);
        ck_assert_uint_eq(u, 0);

        ck_assert_int_eq(svff_json_get_u64(v, "frac", &u), -EINVAL);
        ck_assert_int_eq(svff_json_get_u64(v, "exp", &u), -EINVAL);
        ck_assert_int_eq(svff_json_get_u64(v, "big", &u), -ERANGE);
        ck_assert_int_eq(svff_json_get_u64(v, "s", &u), -EINVAL);
        ck_assert_int_eq(svff_json_get_u64(v, "t", &u), -EINVAL);
        ck_assert_int_eq(svff_json_get_u64(v, "n", &u), -EINVAL);
        ck_assert_int_eq(svff_json_get_u64(v, "missing", &u), -ENOENT);
        ck_assert_int_eq(svff_json_get_u64(json_object_object_get(v, "arr"), "x", &u), -EINVAL);
        ck_assert_int_eq(svff_json_to_u64(json_object_array_get_idx(json_object_object_get(v, "arr"), 0), &u),
                         -ERANGE);

        /* strings that look like wide numbers are left alone */
        const char *s;
        ck_assert_int_eq(svff_json_get_string(v, "s", &s), 0);
        ck_assert_str_eq(s, "18446744073709551616");
        ck_assert_int_eq(svff_json_get_string(v, "esc", &s), 0);
        ck_assert_str_eq(s, "\"1844674407370955161600");

        ck_assert_int_eq(svff_json_get_unsigned(v, "uintmax", &x), 0);
        ck_assert_uint_eq(x, UINT_MAX);
        ck_assert_int_eq(svff_json_get_unsigned(v, "uover32", &x), -ERANGE);
        ck_assert_uint_eq(x, UINT_MAX);
}
END_TEST

START_TEST(test_getters) {
        _cleanup_(json_object_putp) struct json_object *v = NULL;
        struct json_object *o = NULL;
        const char *s = "untouched";
        bool b = false;

        v = parse_ok("{\"t\":true,\"n\":null,\"str\":\"x\",\"nul\":\"a\\u0000b\",\"o\":{},\"i\":1}");

        ck_assert_int_eq(svff_json_get_bool(v, "t", &b), 0);
        ck_assert(b);
        ck_assert_int_eq(svff_json_get_bool(v, "i", &b), -EINVAL);
        ck_assert_int_eq(svff_json_get_bool(v, "n", &b), -EINVAL);

        ck_assert_int_eq(svff_json_get_string(v, "nul", &s), -EINVAL);
        ck_assert_int_eq(svff_json_get_string(v, "n", &s), -EINVAL);
        ck_assert_int_eq(svff_json_get_string(v, "i", &s), -EINVAL);
        ck_assert_str_eq(s, "untouched");
        ck_assert_int_eq(svff_json_get_string(v, "str", &s), 0);
        ck_assert_str_eq(s, "x");
        ck_assert_int_eq(svff_json_get_string_or_null(v, "n", &s), 0);
        ck_assert_ptr_null(s);
        ck_assert_int_eq(svff_json_get_string_or_null(v, "i", &s), -EINVAL);
        ck_assert_int_eq(svff_json_get_string_or_null(v, "none", &s), -ENOENT);

        ck_assert_int_eq(svff_json_get_object(v, "o", &o), 0);
        ck_assert(json_object_is_type(o, json_type_object));
        ck_assert_int_eq(svff_json_get_object(v, "str", &o), -EINVAL);
        ck_assert_int_eq(svff_json_get_object(NULL, "o", &o), -EINVAL);
}
END_TEST

START_TEST(test_format) {
        _cleanup_(json_object_putp) struct json_object *v = NULL;
        _cleanup_free_ char *s = NULL;
        size_t n = 0;

        v = parse_ok("{ \"path\" : \"/run/svff\", \"n\" : [1, 2] }");
        ck_assert_int_eq(svff_json_format(v, JSON_C_TO_STRING_PLAIN, &s, &n), 0);
        ck_assert_str_eq(s, "{\"path\":\"/run/svff\",\"n\":[1,2]}");
        ck_assert_uint_eq(n, strlen(s));
}
END_TEST

static int collect_key(const char *const *path, size_t depth, const char *key, size_t offset, void *userdata) {
        char *buf = userdata;
        size_t n = strlen(buf);

        for (size_t i = 0; i < depth; i++)
                n += (size_t) snprintf(buf + n, 512 - n, "%s.", path[i]);
        snprintf(buf + n, 512 - n, "%s@%zu ", key, offset);
        return 0;
}

/* Every key with its path and offset, in document order; a key given
 * twice in one object is found (json-c keeps the last silently), the
 * same key in two objects is not; quotes and braces inside strings are
 * text. */
START_TEST(test_scan_keys) {
        static const char doc[] = "{ \"a\": { \"b\": 1, \"c\": \"{\\\"x\\\": 1}\" }, \"d\": [ { \"a\": 2 } ], 'e': '}' }";
        char buf[512] = "";
        size_t dup = 0;

        ck_assert_int_eq(svff_json_scan_keys(doc, strlen(doc), collect_key, buf, &dup), 0);
        ck_assert_str_eq(buf, "a@2 a.b@9 a.c@17 d@38 d.[].a@47 e@59 ");

        {
                static const char twice[] = "{\"a\": 1, \"b\": {\"a\": 1}, \"a\": 2}";

                ck_assert_int_eq(svff_json_scan_keys(twice, strlen(twice), NULL, NULL, &dup), -ENOTUNIQ);
        }
        ck_assert_uint_eq(dup, 24);
        ck_assert_int_eq(svff_json_scan_keys("{\"\": 1, \"\": 2}", strlen("{\"\": 1, \"\": 2}"), NULL, NULL, &dup), -ENOTUNIQ);
        ck_assert_int_eq(svff_json_scan_keys("{}", 2, NULL, NULL, &dup), 0);
}
END_TEST

/* Every key at any depth, arrays' objects too, values untouched; both
 * spellings of one key refused, naming the old one. */
START_TEST(test_snake_keys) {
        _cleanup_(json_object_putp) struct json_object *in = NULL, *out = NULL;
        const char *dup = NULL;
        char *k;

        k = svff_json_key_snake("max-tx-rate");
        ck_assert_str_eq(k, "max_tx_rate");
        free(k);
        in = json_tokener_parse("{\"max-tx-rate\": 100, \"link-state\": \"auto-x\", \"a_b\": null,"
                                " \"n\": [{\"pf-qmax\": 1}, 2], \"o\": {\"vf-qmax\": [\"a-b\"]}}");
        ck_assert_ptr_nonnull(in);
        ck_assert_int_eq(svff_json_snake_keys(in, &out, &dup), 0);
        ck_assert_str_eq(json_object_to_json_string_ext(out, JSON_C_TO_STRING_PLAIN),
                         "{\"max_tx_rate\":100,\"link_state\":\"auto-x\",\"a_b\":null,"
                         "\"n\":[{\"pf_qmax\":1},2],\"o\":{\"vf_qmax\":[\"a-b\"]}}");
        /* the input is left as it was */
        ck_assert(json_object_object_get_ex(in, "max-tx-rate", NULL));
        json_object_put(TAKE_PTR(in));
        json_object_put(TAKE_PTR(out));

        in = json_tokener_parse("{\"o\": {\"vf_qmax\": 1, \"vf-qmax\": 2}}");
        ck_assert_int_eq(svff_json_snake_keys(in, &out, &dup), -ENOTUNIQ);
        ck_assert_ptr_null(out);
        ck_assert_str_eq(dup, "vf-qmax");
}
END_TEST

static Suite *json_util_suite(void) {
        Suite *s = suite_create("json-util");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_parse_strict);
        tcase_add_test(tc, test_parse_depth);
        tcase_add_test(tc, test_wide_integers);
        tcase_add_test(tc, test_getters);
        tcase_add_test(tc, test_format);
        tcase_add_test(tc, test_scan_keys);
        tcase_add_test(tc, test_snake_keys);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(json_util_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}

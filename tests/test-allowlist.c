/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* svff.conf's "manage" rules: each form, and which rule a PF matches. */

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "allowlist.h"

static const struct svff_allow_pf qdma = { "0000:01:00.0", 0x10ee, 0x903f, "qdma" };
static const struct svff_allow_pf nic = { "0000:03:00.0", 0x8086, 0x1521, NULL };
static const struct svff_allow_pf nvme = { "0000:00:04.0", 0x1b36, 0x0010, "nvme" };

START_TEST(test_parse) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_allow_rule r;

        ck_assert_int_eq(svff_allow_rule_parse("all", &r, &err), 0);
        ck_assert_int_eq(r.kind, SVFF_ALLOW_ALL);
        ck_assert_int_eq(svff_allow_rule_parse("10EE:903f", &r, &err), 0);
        ck_assert_int_eq(r.kind, SVFF_ALLOW_ID);
        ck_assert_uint_eq(r.vendor_id, 0x10ee);
        ck_assert_uint_eq(r.device_id, 0x903f);
        ck_assert_int_eq(svff_allow_rule_parse("03:00.0", &r, &err), 0);
        ck_assert_int_eq(r.kind, SVFF_ALLOW_ADDRESS);
        ck_assert_str_eq(r.address, "0000:03:00.0");
        ck_assert_int_eq(svff_allow_rule_parse("class:qdma", &r, &err), 0);
        ck_assert_int_eq(r.kind, SVFF_ALLOW_CLASS);
        ck_assert_str_eq(r.class_name, "qdma");
        ck_assert_int_eq(svff_allow_rule_parse("class:none", &r, &err), 0);

        ck_assert_int_eq(svff_allow_rule_parse("class:gpu", &r, &err), -EINVAL);
        ck_assert_msg(strstr(svff_error_message(&err), "No device class 'gpu'") &&
                      strstr(svff_error_message(&err), "class:qdma"), "%s", svff_error_message(&err));
        svff_error_free(&err);
        ck_assert_int_eq(svff_allow_rule_parse("10ee:903", &r, &err), -EINVAL);
        ck_assert_msg(strstr(svff_error_message(&err), "is none of 'all'"), "%s", svff_error_message(&err));
        svff_error_free(&err);
        ck_assert_int_eq(svff_allow_rule_parse("", &r, &err), -EINVAL);
        svff_error_free(&err);
        ck_assert_int_eq(svff_allow_rule_parse("All", &r, &err), -EINVAL);
        svff_error_free(&err);
        ck_assert_int_eq(svff_allow_rule_parse("0000:03:00.0 ", &r, &err), -EINVAL);
        svff_error_free(&err);
}
END_TEST

START_TEST(test_match) {
        char *all[] = { (char *) "all", NULL };
        char *by_id[] = { (char *) "8086:1521", NULL };
        char *by_addr[] = { (char *) "1b36:0011", (char *) "0000:00:04.0", NULL };
        char *by_class[] = { (char *) "class:qdma", NULL };
        char *bare[] = { (char *) "class:none", NULL };
        char *none[] = { NULL };
        char *bad[] = { (char *) "8086:1521", (char *) "bogus", NULL };

        /* NULL is the default: every PF, as before the list existed */
        ck_assert_int_eq(svff_allowlist_match(NULL, &nic), 0);
        ck_assert_int_eq(svff_allowlist_match(all, &qdma), 0);
        ck_assert_int_eq(svff_allowlist_match(by_id, &nic), 0);
        ck_assert_int_eq(svff_allowlist_match(by_id, &qdma), -ENOENT);
        ck_assert_int_eq(svff_allowlist_match(by_addr, &nvme), 1);
        ck_assert_int_eq(svff_allowlist_match(by_addr, &nic), -ENOENT);
        ck_assert_int_eq(svff_allowlist_match(by_class, &qdma), 0);
        ck_assert_int_eq(svff_allowlist_match(by_class, &nvme), -ENOENT);
        ck_assert_int_eq(svff_allowlist_match(by_class, &nic), -ENOENT);
        ck_assert_int_eq(svff_allowlist_match(bare, &nic), 0);
        ck_assert_int_eq(svff_allowlist_match(bare, &qdma), -ENOENT);
        ck_assert_int_eq(svff_allowlist_match(none, &nic), -ENOENT);
        /* the first rule decides before a bad one is reached */
        ck_assert_int_eq(svff_allowlist_match(bad, &nic), 0);
        ck_assert_int_eq(svff_allowlist_match(bad, &qdma), -EINVAL);
}
END_TEST

START_TEST(test_format) {
        char *two[] = { (char *) "10ee:903f", (char *) "class:nvme", NULL };
        char *none[] = { NULL };
        char *s;

        s = svff_allowlist_format(NULL);
        ck_assert_str_eq(s, "all");
        free(s);
        s = svff_allowlist_format(two);
        ck_assert_str_eq(s, "10ee:903f, class:nvme");
        free(s);
        s = svff_allowlist_format(none);
        ck_assert_str_eq(s, "nothing");
        free(s);
}
END_TEST

START_TEST(test_from_json) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *v;
        char **l = (char **) &err;

        v = json_object_new_string("all");
        ck_assert_int_eq(svff_allowlist_from_json(v, &l, &err), 0);
        ck_assert_ptr_null(l);
        json_object_put(v);

        v = json_tokener_parse("[\"10ee:903f\", \"class:nvme\"]");
        ck_assert_int_eq(svff_allowlist_from_json(v, &l, &err), 0);
        ck_assert_str_eq(l[0], "10ee:903f");
        ck_assert_str_eq(l[1], "class:nvme");
        ck_assert_ptr_null(l[2]);
        strv_free(l);
        json_object_put(v);

        v = json_tokener_parse("[]");
        ck_assert_int_eq(svff_allowlist_from_json(v, &l, &err), 0);
        ck_assert_ptr_nonnull(l);
        ck_assert_ptr_null(l[0]);
        strv_free(l);
        json_object_put(v);

        v = json_tokener_parse("[\"all\", 3]");
        ck_assert_int_eq(svff_allowlist_from_json(v, &l, &err), -EINVAL);
        ck_assert_str_eq(svff_error_message(&err), "item 1 must be a string");
        svff_error_free(&err);
        json_object_put(v);

        v = json_object_new_string("none");
        ck_assert_int_eq(svff_allowlist_from_json(v, &l, &err), -EINVAL);
        svff_error_free(&err);
        json_object_put(v);
}
END_TEST

/* A PF as discovery loads it: its class found by the registry. */
START_TEST(test_check_pf) {
        struct svff_pf q = { .address = "0000:01:00.0", .vendor_id = 0x10ee, .device_id = 0x903f, .class = 0x120000 };
        struct svff_pf n = { .address = "0000:00:04.0", .vendor_id = 0x1b36, .device_id = 0x0010, .class = 0x010802 };
        char *rules[] = { (char *) "class:nvme", NULL };
        char *why = (char *) "unset";

        ck_assert_int_eq(svff_allowlist_check_pf(NULL, NULL, NULL, &q, &why), 0);
        ck_assert_ptr_null(why);
        ck_assert_int_eq(svff_allowlist_check_pf(rules, "svff.conf:3", NULL, &n, &why), 0);
        ck_assert_ptr_null(why);
        ck_assert_int_eq(svff_allowlist_check_pf(rules, "svff.conf:3", NULL, &q, &why), 1);
        ck_assert_str_eq(why, "not in manage [class:nvme] (svff.conf:3)");
        free(why);
}
END_TEST

int main(void) {
        Suite *s = suite_create("allowlist");
        TCase *tc = tcase_create("rules");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_parse);
        tcase_add_test(tc, test_match);
        tcase_add_test(tc, test_format);
        tcase_add_test(tc, test_check_pf);
        tcase_add_test(tc, test_from_json);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

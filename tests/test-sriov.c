/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-util.h"
#include "sriov.h"
#include "sysfs.h"

#define PF "0000:03:00.0"

static char *root;
static struct svff_ctx *ctx;

static void setup(void) {
        root = fixture_new();
        fixture_device(root, PF, 0x10ee, 0x903f, 0x058000, 4);
        fixture_pf(root, PF, 0x10ee, 4, 2, 4, 1, 0xa03f);
        fixture_device(root, "0000:05:00.0", 0x10ee, 0x903f, 0x058000, 4);
        fixture_pf(root, "0000:05:00.0", 0x10ee, 4, 0, 4, 1, 0xa03f);
        fixture_device(root, "0000:00:1f.0", 0x8086, 0x7000, 0x060100, 0);
        fixture_bind(root, PF, "qdma-pf");
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
}

static void teardown(void) {
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

START_TEST(test_parse) {
        unsigned n = 99;

        ck_assert_int_eq(svff_numvfs_parse("4", &n), 0);
        ck_assert_uint_eq(n, 4);
        ck_assert_int_eq(svff_numvfs_parse("0", &n), 0);
        ck_assert_uint_eq(n, 0);
        ck_assert_int_eq(svff_numvfs_parse("65535", &n), 0);
        ck_assert_uint_eq(n, 65535);
        n = 99;
        ck_assert_int_eq(svff_numvfs_parse("65536", &n), -ERANGE);
        ck_assert_int_eq(svff_numvfs_parse("99999999999999999999999", &n), -ERANGE);
        ck_assert_int_eq(svff_numvfs_parse("-1", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("+4", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse(" 4", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("4 ", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("4x", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("four", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("0x4", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse(NULL, &n), -EINVAL);
        ck_assert_uint_eq(n, 99);
}
END_TEST

static char *attr(const char *dev, const char *name) {
        char *s = NULL;
        _cleanup_free_ char *p = NULL;

        ck_assert_int_ge(asprintf(&p, "bus/pci/devices/%s/%s", dev, name), 0);
        ck_assert_int_eq(svff_sysfs_read(svff_ctx_get_rootfd(ctx), p, &s), 0);
        return s;
}

static void expect_error(const char *pf, unsigned n, int code, const char *needle) {
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, pf, n, USEC_PER_SEC, &err), code);
        ck_assert_int_eq(err.code, code);
        ck_assert_msg(strstr(svff_error_message(&err), needle), "message '%s' lacks '%s'",
                      svff_error_message(&err), needle);
        svff_error_free(&err);
}

START_TEST(test_bad_input_leaves_no_trace) {
        _cleanup_free_ char *autoprobe = NULL, *numvfs = NULL;

        expect_error("3:00.0", 2, -EINVAL, "'3:00.0' is not a PCI address");
        expect_error("0000:09:00.0", 2, -ENODEV, "No PCI device '0000:09:00.0'");
        expect_error("0000:00:1f.0", 2, -EOPNOTSUPP, "'0000:00:1f.0' does not support SR-IOV");
        expect_error("0000:03:00.4", 1, -EOPNOTSUPP, "'0000:03:00.4' is a virtual function");
        expect_error(PF, 5, -ERANGE, "'" PF "' supports at most 4 VFs");
        expect_error("0000:05:00.0", 2, -ENOENT, "'0000:05:00.0' has no driver bound");

        /* Nothing was written on the way to any of these errors. */
        autoprobe = attr("0000:05:00.0", "sriov_drivers_autoprobe");
        ck_assert_str_eq(autoprobe, "1");
        autoprobe = mfree(autoprobe);
        autoprobe = attr(PF, "sriov_drivers_autoprobe");
        ck_assert_str_eq(autoprobe, "1");
        numvfs = attr(PF, "sriov_numvfs");
        ck_assert_str_eq(numvfs, "2");
}
END_TEST

START_TEST(test_same_count_turns_autoprobe_off) {
        _cleanup_free_ char *autoprobe = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, PF, 2, USEC_PER_SEC, &err), 0);
        ck_assert(!svff_error_is_set(&err));
        autoprobe = attr(PF, "sriov_drivers_autoprobe");
        ck_assert_str_eq(autoprobe, "0");
}
END_TEST

int main(void) {
        Suite *s = suite_create("sriov");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_parse);
        tcase_add_test(tc, test_bad_input_leaves_no_trace);
        tcase_add_test(tc, test_same_count_turns_autoprobe_off);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-util.h"
#include "iommu.h"

static char *root;
static struct svff_ctx *ctx;

/* Group 1: a bridge on pcieport + a device on vfio-pci.
 * Group 2: one device on vfio-pci, one unbound.
 * Group 3: a device on vfio-pci and a NIC function still on igb. */
static void setup(void) {
        root = fixture_new();
        fixture_device(root, "0000:00:01.0", 0x8086, 0x1234, 0x060400, 0);
        fixture_bind(root, "0000:00:01.0", "pcieport");
        fixture_group(root, "0000:00:01.0", 1);
        fixture_device(root, "0000:01:00.0", 0x10ee, 0x903f, 0x058000, 0);
        fixture_bind(root, "0000:01:00.0", "vfio-pci");
        fixture_group(root, "0000:01:00.0", 1);

        fixture_device(root, "0000:02:00.0", 0x1b36, 0x0010, 0x010802, 0);
        fixture_bind(root, "0000:02:00.0", "vfio-pci");
        fixture_group(root, "0000:02:00.0", 2);
        fixture_device(root, "0000:02:00.1", 0x1b36, 0x0010, 0x010802, 0);
        fixture_group(root, "0000:02:00.1", 2);

        fixture_device(root, "0000:03:00.0", 0x8086, 0x1521, 0x020000, 0);
        fixture_bind(root, "0000:03:00.0", "vfio-pci");
        fixture_group(root, "0000:03:00.0", 3);
        fixture_device(root, "0000:03:00.1", 0x8086, 0x1521, 0x020000, 0);
        fixture_bind(root, "0000:03:00.1", "igb");
        fixture_group(root, "0000:03:00.1", 3);

        fixture_device(root, "0000:04:00.0", 0x8086, 0x1521, 0x020000, 0);
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
}

static void teardown(void) {
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

START_TEST(test_group_of) {
        int g = 42;

        ck_assert_int_eq(svff_iommu_group_of(ctx, "02:00.1", &g), 0);
        ck_assert_int_eq(g, 2);
        g = 42;
        ck_assert_int_eq(svff_iommu_group_of(ctx, "0000:04:00.0", &g), -ENOENT);
        ck_assert_int_eq(svff_iommu_group_of(ctx, "0000:09:00.0", &g), -ENODEV);
        ck_assert_int_eq(svff_iommu_group_of(ctx, "bogus", &g), -EINVAL);
        ck_assert_int_eq(g, 42);
}
END_TEST

START_TEST(test_members) {
        _cleanup_strv_free_ char **m = NULL;

        ck_assert_int_eq(svff_iommu_group_members(ctx, 3, &m), 0);
        ck_assert_str_eq(m[0], "0000:03:00.0");
        ck_assert_str_eq(m[1], "0000:03:00.1");
        ck_assert_ptr_null(m[2]);
        ck_assert_int_eq(svff_iommu_group_members(ctx, 99, &m), -ENOENT);
}
END_TEST

START_TEST(test_viable) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *blocker = NULL;

        ck_assert_int_eq(svff_iommu_group_viable(ctx, 1, &blocker, &err), 1);
        ck_assert_int_eq(svff_iommu_group_viable(ctx, 2, &blocker, &err), 1);
        ck_assert_ptr_null(blocker);
        ck_assert(!svff_error_is_set(&err));

        ck_assert_int_eq(svff_iommu_group_viable(ctx, 3, &blocker, &err), 0);
        ck_assert_str_eq(blocker, "0000:03:00.1");
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "'0000:03:00.1' is bound to 'igb'"));
        svff_error_free(&err);

        ck_assert_int_eq(svff_iommu_group_viable(ctx, 99, NULL, &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "No IOMMU group 99"));
        svff_error_free(&err);

        /* Once the NIC function moves to vfio-pci the group is usable. */
        fixture_bind(root, "0000:03:00.1", "vfio-pci");
        ck_assert_int_eq(svff_iommu_group_viable(ctx, 3, NULL, NULL), 1);
}
END_TEST

int main(void) {
        Suite *s = suite_create("iommu");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_group_of);
        tcase_add_test(tc, test_members);
        tcase_add_test(tc, test_viable);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

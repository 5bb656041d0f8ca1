/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "device.h"
#include "fixture-util.h"

#define PF "0000:03:00.0"
#define VF0 "0000:03:00.4"
#define VF1 "0000:03:00.5"
#define PLAIN "0000:00:1f.0"

static char *root;
static struct svff_ctx *ctx;

static void setup(void) {
        root = fixture_new();
        fixture_device(root, PF, 0x8086, 0x1521, 0x020000, 4);
        fixture_pf(root, PF, 0x8086, 4, 2, 4, 1, 0x1520);
        fixture_file(root, "devices/pci0000:00/" PF "/numa_node", "1\n");
        fixture_file(root, "devices/pci0000:00/" PF "/sriov_drivers_autoprobe", "0\n");
        fixture_mkdir(root, "devices/pci0000:00/" PF "/net/eth3");
        fixture_bind(root, PF, "igb");
        fixture_bind(root, VF0, "vfio-pci");
        fixture_file(root, "devices/pci0000:00/" VF0 "/driver_override", "vfio-pci\n");
        fixture_group(root, PF, 5);
        fixture_group(root, VF0, 6);
        fixture_group(root, VF1, 7);
        fixture_device(root, PLAIN, 0x8086, 0x7000, 0x060100, 0);
        /* Capability present, kernel's sriov_* attributes absent. */
        fixture_device(root, "0000:05:00.0", 0x1b36, 0x0010, 0x010802, 8);
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
}

static void teardown(void) {
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

START_TEST(test_pf_load) {
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        const struct svff_vf *vf;

        ck_assert_int_eq(svff_pf_load(ctx, "03:00.0", &pf, &err), 0);
        ck_assert(!svff_error_is_set(&err));
        ck_assert_str_eq(pf->address, PF);
        ck_assert_uint_eq(pf->vendor_id, 0x8086);
        ck_assert_uint_eq(pf->device_id, 0x1521);
        ck_assert_uint_eq(pf->class, 0x020000);
        ck_assert_uint_eq(pf->totalvfs, 4);
        ck_assert_uint_eq(pf->numvfs, 2);
        ck_assert_uint_eq(pf->offset, 4);
        ck_assert_uint_eq(pf->stride, 1);
        ck_assert_uint_eq(pf->vf_device_id, 0x1520);
        ck_assert_str_eq(pf->driver, "igb");
        ck_assert(!pf->autoprobe);
        ck_assert_int_eq(pf->numa_node, 1);
        ck_assert_int_eq(pf->iommu_group, 5);
        ck_assert_str_eq(pf->netdev, "eth3");
        if (access("/usr/share/misc/pci.ids", R_OK) == 0) {
                ck_assert_str_eq(pf->vendor_name, "Intel Corporation");
                ck_assert_str_eq(pf->device_name, "I350 Gigabit Network Connection");
        }

        ck_assert_uint_eq(pf->n_vfs, 2);
        ck_assert_uint_eq(pf->vfs[0].index, 0);
        ck_assert_str_eq(pf->vfs[0].address, VF0);
        ck_assert_str_eq(pf->vfs[0].driver, "vfio-pci");
        ck_assert_str_eq(pf->vfs[0].driver_override, "vfio-pci");
        ck_assert_int_eq(pf->vfs[0].iommu_group, 6);
        ck_assert_uint_eq(pf->vfs[1].index, 1);
        ck_assert_str_eq(pf->vfs[1].address, VF1);
        ck_assert_ptr_null(pf->vfs[1].driver);
        ck_assert_ptr_null(pf->vfs[1].driver_override);  /* "(null)" */
        ck_assert_int_eq(pf->vfs[1].iommu_group, 7);

        vf = svff_pf_find_vf(pf, "03:00.5");
        ck_assert_ptr_eq(vf, &pf->vfs[1]);
        ck_assert_ptr_null(svff_pf_find_vf(pf, "0000:03:00.6"));
        ck_assert_ptr_null(svff_pf_find_vf(pf, "junk"));
}
END_TEST

static void expect_load_error(const char *address, int code, const char *needle) {
        struct svff_pf *pf = (struct svff_pf *) 0x1;
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_pf_load(ctx, address, &pf, &err), code);
        ck_assert_ptr_eq(pf, (struct svff_pf *) 0x1);
        ck_assert_int_eq(err.code, code);
        ck_assert_msg(strstr(svff_error_message(&err), needle),
                      "message '%s' lacks '%s'", svff_error_message(&err), needle);
        svff_error_free(&err);
}

START_TEST(test_pf_load_errors) {
        expect_load_error("0000:03:00.0x", -EINVAL, "'0000:03:00.0x' is not a PCI address");
        expect_load_error("eth0", -EINVAL, "'eth0'");
        expect_load_error("0000:09:00.0", -ENODEV, "No PCI device '0000:09:00.0'");
        expect_load_error(PLAIN, -EOPNOTSUPP, "'" PLAIN "' does not support SR-IOV");
        expect_load_error(VF0, -EOPNOTSUPP, "'" VF0 "' is a virtual function of '" PF "'");
        expect_load_error("0000:05:00.0", -EOPNOTSUPP, "has an SR-IOV capability (8 VFs) but the kernel");
}
END_TEST

START_TEST(test_pf_vanished_vf) {
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *dir = NULL;

        /* virtfn1 still points to a VF whose directory is gone. */
        ck_assert_int_ge(asprintf(&dir, "rm -rf %s/devices/pci0000:00/" VF1, root), 0);
        ck_assert_int_eq(system(dir), 0);
        ck_assert_int_eq(svff_pf_load(ctx, PF, &pf, &err), -ENODEV);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "'" VF1 "' disappeared"));
        svff_error_free(&err);
}
END_TEST

START_TEST(test_pf_list) {
        struct svff_pf **pfs = NULL;
        size_t n = 0;
        struct svff_error err = SVFF_ERROR_NULL;

        fixture_device(root, "0000:02:00.0", 0x10ee, 0x903f, 0x058000, 252);
        fixture_pf(root, "0000:02:00.0", 0x10ee, 252, 0, 4, 1, 0xa03f);

        ck_assert_int_eq(svff_pf_list(ctx, &pfs, &n, &err), 0);
        ck_assert(!svff_error_is_set(&err));
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(pfs[0]->address, "0000:02:00.0");
        ck_assert_uint_eq(pfs[0]->n_vfs, 0);
        ck_assert_uint_eq(pfs[0]->vf_device_id, 0xa03f);
        ck_assert_ptr_null(pfs[0]->driver);
        ck_assert_int_eq(pfs[0]->iommu_group, -1);
        ck_assert_ptr_null(pfs[0]->netdev);
        ck_assert_str_eq(pfs[1]->address, PF);
        ck_assert_uint_eq(pfs[1]->n_vfs, 2);
        svff_pf_list_free(pfs, n);
        svff_pf_list_free(NULL, 0);
        svff_pf_free(NULL);
}
END_TEST

START_TEST(test_vf_load) {
        struct svff_vf vf = {};
        struct svff_error err = SVFF_ERROR_NULL;
        char pf[SVFF_PCI_ADDR_STRLEN] = "untouched";

        ck_assert_int_eq(svff_vf_load(ctx, "03:00.5", &vf, pf, &err), 0);
        ck_assert_str_eq(pf, PF);
        ck_assert_uint_eq(vf.index, 1);
        ck_assert_str_eq(vf.address, VF1);
        ck_assert_int_eq(vf.iommu_group, 7);
        svff_vf_done(&vf);
        svff_vf_done(NULL);

        strcpy(pf, "untouched");
        ck_assert_int_eq(svff_vf_load(ctx, PF, &vf, pf, &err), -EOPNOTSUPP);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "'" PF "' is not a virtual function"));
        ck_assert_str_eq(pf, "untouched");
        svff_error_free(&err);
        ck_assert_int_eq(svff_vf_load(ctx, "0000:03:01.0", &vf, pf, &err), -ENODEV);
        svff_error_free(&err);
        ck_assert_int_eq(svff_vf_load(ctx, "nope", &vf, pf, &err), -EINVAL);
        svff_error_free(&err);
}
END_TEST

int main(void) {
        Suite *s = suite_create("device");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_pf_load);
        tcase_add_test(tc, test_pf_load_errors);
        tcase_add_test(tc, test_pf_vanished_vf);
        tcase_add_test(tc, test_pf_list);
        tcase_add_test(tc, test_vf_load);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "fixture-util.h"
#include "pcinames.h"

#define PCI_IDS "/usr/share/misc/pci.ids"

static char *root;
static struct svff_ctx *ctx;

static void setup(void) {
        root = fixture_new();
        fixture_device(root, "0000:03:00.0", 0x10ee, 0x903f, 0x058000, 252);
        fixture_device(root, "0000:00:1f.0", 0x8086, 0x7000, 0x060100, 0);
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
}

static void teardown(void) {
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

START_TEST(test_names) {
        _cleanup_free_ char *v = NULL, *d = NULL;

        ck_assert_int_eq(svff_pci_names(ctx, 0x8086, 0x1521, &v, &d), 0);
        ck_assert_str_eq(v, "Intel Corporation");
        ck_assert_str_eq(d, "I350 Gigabit Network Connection");
        v = mfree(v);
        d = mfree(d);
        ck_assert_int_eq(svff_pci_names(ctx, 0x8086, 0x1520, &v, &d), 0);
        ck_assert_str_eq(d, "I350 Ethernet Controller Virtual Function");
        v = mfree(v);
        d = mfree(d);

        /* Unknown device of a known vendor: libpci's fallback. */
        ck_assert_int_eq(svff_pci_names(ctx, 0x10ee, 0xfffe, &v, &d), 0);
        ck_assert_str_eq(v, "Xilinx Corporation");
        ck_assert_str_eq(d, "Device fffe");
        v = mfree(v);
        d = mfree(d);

        ck_assert_int_eq(svff_pci_names(ctx, 0x1b36, 0x0010, &v, NULL), 0);
        ck_assert_str_eq(v, "Red Hat, Inc.");
}
END_TEST

START_TEST(test_corrupt_ids_is_an_error_not_an_exit) {
        _cleanup_free_ char *v = NULL, *d = NULL, *ids = NULL;
        char *untouched = (char *) "x";

        ck_assert_int_ge(asprintf(&ids, "%s/pci.ids", root), 0);
        fixture_file(root, "pci.ids", "10ee  Xilinx\n\tzzzz broken line\n");
        ck_assert_int_eq(svff_ctx_set_pci_ids_path(ctx, ids), 0);
        ck_assert_int_eq(svff_pci_names(ctx, 0x10ee, 0x903f, &untouched, NULL), -EIO);
        ck_assert_str_eq(untouched, "x");

        /* The context recovers once pointed at a good file. */
        ck_assert_int_eq(svff_ctx_set_pci_ids_path(ctx, PCI_IDS), 0);
        ck_assert_int_eq(svff_pci_names(ctx, 0x10ee, 0x903f, &v, &d), 0);
        ck_assert_str_eq(v, "Xilinx Corporation");
}
END_TEST

START_TEST(test_sriov_cap) {
        struct svff_sriov_cap cap = { .total_vfs = 7 };

        ck_assert_int_eq(svff_pci_read_sriov_cap(ctx, "03:00.0", &cap), 0);
        ck_assert_uint_eq(cap.total_vfs, 252);
        ck_assert_uint_eq(cap.initial_vfs, 252);
        ck_assert_uint_eq(cap.num_vfs, 0);
        ck_assert_uint_eq(cap.offset, 4);
        ck_assert_uint_eq(cap.stride, 1);
        ck_assert_uint_eq(cap.vf_device, 0x9040);
        ck_assert(!cap.vf_enable);

        cap.total_vfs = 7;
        ck_assert_int_eq(svff_pci_read_sriov_cap(ctx, "0000:00:1f.0", &cap), -EOPNOTSUPP);
        ck_assert_int_eq(svff_pci_read_sriov_cap(ctx, "0000:09:00.0", &cap), -ENODEV);
        ck_assert_int_eq(svff_pci_read_sriov_cap(ctx, "09:00", &cap), -EINVAL);
        ck_assert_uint_eq(cap.total_vfs, 7);
}
END_TEST

int main(void) {
        Suite *s = suite_create("pcinames");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        if (access(PCI_IDS, R_OK) < 0) {
                fprintf(stderr, "SKIP: %s not readable (install the pci.ids package)\n", PCI_IDS);
                return 77;
        }

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_names);
        tcase_add_test(tc, test_corrupt_ids_is_an_error_not_an_exit);
        tcase_add_test(tc, test_sriov_cap);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

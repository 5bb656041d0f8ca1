/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <errno.h>
#include <stdlib.h>

#include "pciaddr.h"

START_TEST(test_parse_valid) {
        struct svff_pci_addr a;
        char buf[SVFF_PCI_ADDR_STRLEN];

        ck_assert_int_eq(svff_pci_addr_parse("0000:03:00.1", &a), 0);
        ck_assert_uint_eq(a.domain, 0);
        ck_assert_uint_eq(a.bus, 3);
        ck_assert_uint_eq(a.slot, 0);
        ck_assert_uint_eq(a.func, 1);

        ck_assert_int_eq(svff_pci_addr_parse("AB:1F.7", &a), 0);
        ck_assert_str_eq(svff_pci_addr_format(&a, buf), "0000:ab:1f.7");

        ck_assert_int_eq(svff_pci_addr_parse("10000:e0:00.0", &a), 0);
        ck_assert_uint_eq(a.domain, 0x10000);
        ck_assert_str_eq(svff_pci_addr_format(&a, buf), "10000:e0:00.0");

        ck_assert_int_eq(svff_pci_addr_canonicalize("03:00.0", buf), 0);
        ck_assert_str_eq(buf, "0000:03:00.0");
}
END_TEST

START_TEST(test_parse_invalid) {
        static const char *const bad[] = {
                "", "3:0.0", "03:0.0", "0000:03:00", "0000:03:00.8", "0000:03:20.0",
                "0000:03:00.0 ", " 0000:03:00.0", "0000:03:00.0\n", "000:03:00.0",
                "0000:003:00.0", "0000:03:00.00", "0000-03:00.0", "garbage", "0x00:03:00.0",
                "+000:03:00.0", "0000:03:00.1x", "123456789:00:00.0", "0000:g3:00.0", ":03:00.0",
        };
        struct svff_pci_addr a = { .domain = 42, .bus = 1, .slot = 2, .func = 3 };
        char buf[SVFF_PCI_ADDR_STRLEN] = "untouched";

        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
                ck_assert_msg(svff_pci_addr_parse(bad[i], &a) == -EINVAL, "'%s' accepted", bad[i]);
                ck_assert_int_eq(svff_pci_addr_canonicalize(bad[i], buf), -EINVAL);
        }
        ck_assert_int_eq(svff_pci_addr_parse(NULL, &a), -EINVAL);
        /* Output untouched on failure. */
        ck_assert_uint_eq(a.domain, 42);
        ck_assert_uint_eq(a.func, 3);
        ck_assert_str_eq(buf, "untouched");
}
END_TEST

START_TEST(test_vf_address) {
        struct svff_pci_addr pf, vf, expect;

        ck_assert_int_eq(svff_pci_addr_parse("0000:03:00.0", &pf), 0);
        ck_assert_int_eq(svff_pci_addr_vf(&pf, 4, 1, 0, &vf), 0);
        ck_assert_int_eq(svff_pci_addr_parse("0000:03:00.4", &expect), 0);
        ck_assert(svff_pci_addr_equal(&vf, &expect));

        /* Crosses into the next bus: 0x300 + 4 + 251 = 0x3ff. */
        ck_assert_int_eq(svff_pci_addr_vf(&pf, 4, 1, 251, &vf), 0);
        ck_assert_int_eq(svff_pci_addr_parse("0000:03:1f.7", &expect), 0);
        ck_assert(svff_pci_addr_equal(&vf, &expect));
        ck_assert_int_eq(svff_pci_addr_vf(&pf, 4, 1, 252, &vf), 0);
        ck_assert_int_eq(svff_pci_addr_parse("0000:04:00.0", &expect), 0);
        ck_assert(svff_pci_addr_equal(&vf, &expect));
        ck_assert_uint_eq(svff_pci_addr_rid(&vf), 0x0400);

        ck_assert_int_eq(svff_pci_addr_parse("0000:ff:00.0", &pf), 0);
        vf = expect;
        ck_assert_int_eq(svff_pci_addr_vf(&pf, 0x100, 1, 0, &vf), -ERANGE);
        ck_assert(svff_pci_addr_equal(&vf, &expect));
        ck_assert_int_eq(svff_pci_addr_vf(&pf, 1, 2, 0x7f, &vf), 0);
        ck_assert_int_eq(svff_pci_addr_vf(&pf, 1, 2, 0x80, &vf), -ERANGE);
}
END_TEST

START_TEST(test_equal) {
        struct svff_pci_addr a, b;

        ck_assert_int_eq(svff_pci_addr_parse("0000:03:00.1", &a), 0);
        ck_assert_int_eq(svff_pci_addr_parse("03:00.1", &b), 0);
        ck_assert(svff_pci_addr_equal(&a, &b));
        ck_assert_int_eq(svff_pci_addr_parse("0001:03:00.1", &b), 0);
        ck_assert(!svff_pci_addr_equal(&a, &b));
}
END_TEST

int main(void) {
        Suite *s = suite_create("pciaddr");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_parse_valid);
        tcase_add_test(tc, test_parse_invalid);
        tcase_add_test(tc, test_vf_address);
        tcase_add_test(tc, test_equal);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

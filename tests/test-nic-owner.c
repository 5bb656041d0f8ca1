/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nic-owner against scratch configuration roots: NetworkManager keyfiles
 * and systemd-networkd .link/.network files, read without either running;
 * what another tool's file cannot make svff do: hang on a FIFO, read
 * /dev/zero or a file of any size. */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "fixture-util.h"
#include "error.h"
#include "nic-owner.h"

static char *root;

static void setup(void) {
        root = fixture_new();
}

static void teardown(void) {
        fixture_free(root);
        root = NULL;
}

static struct svff_nic_owner *find(const char *ifname, int expect) {
        struct svff_nic_owner *o = NULL;

        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_msg(svff_nic_owner_find(root, ifname, "0000:05:00.0", &o, &err) == expect, "%s",
                      svff_error_message(&err));
        ck_assert(expect ? o != NULL : o == NULL);
        return o;
}

START_TEST(test_none) {
        find("eth0", 0);
        fixture_file(root, "etc/NetworkManager/system-connections/wired.nmconnection",
                     "[connection]\nid=wired\ninterface-name=eth0\n\n[ethernet]\n");
        fixture_file(root, "etc/systemd/network/10-eth0.network",
                     "[Match]\nName=eth0\n\n[Network]\nDHCP=yes\n");
        fixture_file(root, "etc/systemd/network/10-eth0.link",
                     "[Match]\nOriginalName=eth0\n\n[Link]\nMTUBytes=9000\n");
        find("eth0", 0);
}
END_TEST

START_TEST(test_networkmanager_keyfile) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL;

        fixture_file(root, "etc/NetworkManager/system-connections/other.nmconnection",
                     "[connection]\ninterface-name=eth1\n[sriov]\ntotal-vfs=2\n");
        fixture_file(root, "etc/NetworkManager/system-connections/pf.nmconnection",
                     "[connection]\nid=pf\ntype=ethernet\ninterface-name = eth0\n\n"
                     "[sriov]\nautoprobe-drivers=0\ntotal-vfs=4\nvf.0=mac=02:00:00:00:00:01\n");
        o = find("eth0", 1);
        ck_assert_str_eq(o->owner, "NetworkManager");
        ck_assert_str_eq(o->file, "/etc/NetworkManager/system-connections/pf.nmconnection");
        ck_assert_str_eq(o->detail, "sriov.total-vfs=4");
        find("eth2", 0);
}
END_TEST

START_TEST(test_networkd_link) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL, *p = NULL;

        fixture_file(root, "usr/lib/systemd/network/50-pf.link",
                     "[Match]\nOriginalName=en* eth*\n\n[Link]\nSR-IOVVirtualFunctions=7\n");
        o = find("eth0", 1);
        ck_assert_str_eq(o->owner, "systemd-networkd");
        ck_assert_str_eq(o->file, "/usr/lib/systemd/network/50-pf.link");
        ck_assert_str_eq(o->detail, "SR-IOVVirtualFunctions=7");
        find("wlan0", 0);

        /* A link to /dev/null in /etc masks it. */
        fixture_mkdir(root, "etc/systemd/network");
        fixture_link(root, "etc/systemd/network/50-pf.link", "/dev/null");
        find("eth0", 0);

        /* By PCI path, and [SR-IOV] in a .network file. */
        fixture_file(root, "run/systemd/network/20-vf.network",
                     "[Match]\nPath=pci-0000:05:00.*\n\n[SR-IOV]\nVirtualFunction=0\nVLANId=5\n");
        p = find("enp5s0", 1);
        ck_assert_str_eq(p->file, "/run/systemd/network/20-vf.network");
        ck_assert_str_eq(p->detail, "[SR-IOV]");
}
END_TEST

START_TEST(test_networkd_negated_match) {
        fixture_file(root, "etc/systemd/network/50-pf.link",
                     "[Match]\nOriginalName=!eth0\n\n[Link]\nSR-IOVVirtualFunctions=7\n");
        find("eth0", 0);
        svff_nic_owner_free(find("eth1", 1));
}
END_TEST

START_TEST(test_sriov_operator) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL, *p = NULL;

        /* Another PF's file says nothing about this one. */
        fixture_file(root, "etc/sriov-operator/pci/0000:06:00.0", "{\"pciAddress\": \"0000:06:00.0\", \"numVfs\": 2}");
        find("eth0", 0);
        fixture_file(root, "etc/sriov-operator/pci/0000:05:00.0",
                     "{\"pciAddress\": \"0000:05:00.0\", \"numVfs\": 8, \"name\": \"eth0\", "
                     "\"vfGroups\": [{\"resourceName\": \"intelnics\", \"vfRange\": \"0-7\"}]}");
        o = find("eth0", 1);
        ck_assert_str_eq(o->owner, "the Kubernetes SR-IOV network operator");
        ck_assert_str_eq(o->file, "/etc/sriov-operator/pci/0000:05:00.0");
        ck_assert_str_eq(o->detail, "numVfs=8");

        /* Named before a networkd file for the same interface; a file it
         * does not parse is still its. */
        fixture_file(root, "etc/systemd/network/50-pf.link", "[Match]\nOriginalName=eth0\n\n[Link]\nSR-IOVVirtualFunctions=7\n");
        fixture_file(root, "etc/sriov-operator/pci/0000:05:00.0", "not json");
        p = find("eth0", 1);
        ck_assert_str_eq(p->owner, "the Kubernetes SR-IOV network operator");
        ck_assert_str_eq(p->detail, "its applied state");
}
END_TEST

/* A refusal of file (root-relative) by name, nothing found. */
static void find_refused(const char *file, int code, const char *why) {
        struct svff_nic_owner *o = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        int r = svff_nic_owner_find(root, "eth0", "0000:05:00.0", &o, &err);

        ck_assert_msg(r == code, "returned %d (%s), expected %d; message: %s", r, strerror(-r), code,
                      svff_error_message(&err));
        ck_assert_ptr_null(o);
        ck_assert_msg(strstr(svff_error_message(&err), file) && strstr(svff_error_message(&err), why),
                      "message '%s' lacks '%s' or '%s'", svff_error_message(&err), file, why);
        svff_error_free(&err);
}

static void fixture_fifo(const char *path) {
        char *full = NULL;

        ck_assert_int_ge(asprintf(&full, "%s/%s", root, path), 0);
        ck_assert_int_eq(mkfifo(full, 0600), 0);
        free(full);
}

static void fixture_big(const char *path, size_t size) {
        char *text = malloc(size + 1);

        ck_assert_ptr_nonnull(text);
        memset(text, ' ', size);
        text[size] = 0;
        memcpy(text, "{\"numVfs\": 8}", 13);
        fixture_file(root, path, text);
        free(text);
}

/* A FIFO, a link to /dev/zero, a file past the cap: each refused by
 * name at once (a FIFO with no writer would block a read for ever,
 * /dev/zero never ends; a hang fails by the test's timeout), where svff
 * reads another tool's files. */
START_TEST(test_hostile_files) {
        static const char *const op = "etc/sriov-operator/pci/0000:05:00.0";
        static const char *const nm = "etc/NetworkManager/system-connections/pf.nmconnection";
        static const char *const nd = "etc/systemd/network/50-pf.link";
        const char *const files[] = { op, nm, nd };

        fixture_mkdir(root, "etc/sriov-operator/pci");
        fixture_mkdir(root, "etc/NetworkManager/system-connections");
        fixture_mkdir(root, "etc/systemd/network");
        for (size_t i = 0; i < 3; i++) {
                char *path = NULL;

                ck_assert_int_ge(asprintf(&path, "%s/%s", root, files[i]), 0);

                fixture_fifo(files[i]);
                find_refused(files[i] + 3, -EINVAL, "is not a regular file");
                ck_assert_int_eq(unlink(path), 0);

                fixture_link(root, files[i], "/dev/zero");
                find_refused(files[i] + 3, i == 0 ? -ELOOP : -EINVAL,
                             i == 0 ? "is a symbolic link" : "is not a regular file");
                ck_assert_int_eq(unlink(path), 0);

                fixture_big(files[i], 64 * 1024 + 1);
                find_refused(files[i] + 3, -EFBIG, "larger than 64 KiB");
                ck_assert_int_eq(unlink(path), 0);
                free(path);
        }

        /* at the cap it is read */
        fixture_big(op, 64 * 1024);
        svff_nic_owner_free(find("eth0", 1));
}
END_TEST

int main(void) {
        Suite *s = suite_create("nic-owner");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_none);
        tcase_add_test(tc, test_networkmanager_keyfile);
        tcase_add_test(tc, test_networkd_link);
        tcase_add_test(tc, test_networkd_negated_match);
        tcase_add_test(tc, test_sriov_operator);
        tcase_add_test(tc, test_hostile_files);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

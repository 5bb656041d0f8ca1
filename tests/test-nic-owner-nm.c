/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* nic-owner's live query of NetworkManager over D-Bus, against a stand-in
 * for NetworkManager (nm-standin.c; no NetworkManager can run in a unit
 * test) on a private dbus-daemon, and its fall-through to the keyfiles
 * of a scratch configuration root when NetworkManager is not on the bus.
 * Skipped (77) where dbus-daemon is not installed. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "fixture-util.h"
#include "macro.h"
#include "nic-owner.h"
#include "nm-standin.h"

#define UUID_PF "0b1e6c5a-4f4e-4a43-9d1b-2f6f4d5e6a01"
#define UUID_VFS "8c0d2f8e-54b3-4d6e-a2a7-5a3c8b1e9f02"

static const struct nm_standin_connection connections[] = {
        /* 0 */ { "pf-eth0", UUID_PF, "/etc/NetworkManager/system-connections/pf-eth0.nmconnection", 4 },
        /* 1 */ { "dhcp", "6a9e1c44-1111-4b7e-8a55-0c1d2e3f4a03", "/etc/NetworkManager/system-connections/dhcp.nmconnection", -1 },
        /* 2 */ { "vfs-eth1", UUID_VFS, NULL, -2 },
        /* 3 */ { "static", "2d4f6a8c-2222-4c3b-9e1d-7f5a3b1c0d04", NULL, -1 },
};

static const struct nm_standin_device devices[] = {
        /* active and available */
        { "eth0", 0, { 0, 1, -1 } },
        /* its active connection has no sriov; an available one has */
        { "eth1", 1, { 1, 3, 2, -1 } },
        /* none has */
        { "eth2", 3, { 3, 1, -1 } },
        /* nothing active */
        { "eth3", -1, { 0, -1 } },
};

static const struct nm_standin nm = {
        .connections = connections,
        .n_connections = ELEMENTSOF(connections),
        .devices = devices,
        .n_devices = ELEMENTSOF(devices),
};

static char *root;
static char *address;
static pid_t bus_pid, nm_pid;
static sd_bus *bus;

static void setup(void) {
        root = fixture_new();
        address = nm_standin_bus_start(root, &bus_pid);
        ck_assert_msg(address, "dbus-daemon did not start");
        ck_assert_int_ge(sd_bus_new(&bus), 0);
        ck_assert_int_ge(sd_bus_set_address(bus, address), 0);
        ck_assert_int_ge(sd_bus_set_bus_client(bus, true), 0);
        ck_assert_int_ge(sd_bus_start(bus), 0);
        nm_pid = 0;
}

static void teardown(void) {
        bus = sd_bus_flush_close_unref(bus);
        nm_standin_stop(nm_pid);
        nm_standin_stop(bus_pid);
        free(address);
        fixture_free(root);
        root = NULL;
}

static void start_nm(void) {
        nm_pid = nm_standin_start(address, &nm);
        ck_assert_msg(nm_pid > 0, "the NetworkManager stand-in did not start");
}

static struct svff_nic_owner *find_nm(const char *ifname, int expect) {
        struct svff_nic_owner *o = NULL;

        ck_assert_int_eq(svff_nic_owner_find_nm(bus, ifname, &o), expect);
        ck_assert(expect ? o != NULL : o == NULL);
        return o;
}

START_TEST(test_active_connection) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL, *p = NULL;

        start_nm();
        o = find_nm("eth0", 1);
        ck_assert_str_eq(o->owner, "NetworkManager");
        ck_assert_str_eq(o->connection_id, "pf-eth0");
        ck_assert_str_eq(o->connection_uuid, UUID_PF);
        ck_assert_str_eq(o->detail, "sriov.total-vfs=4");
        ck_assert_str_eq(o->file, "connection 'pf-eth0', UUID " UUID_PF ", in "
                                  "/etc/NetworkManager/system-connections/pf-eth0.nmconnection");

        /* not active: NetworkManager enforces it when it activates it */
        p = find_nm("eth3", 1);
        ck_assert_str_eq(p->connection_id, "pf-eth0");
}
END_TEST

START_TEST(test_available_connection) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL;

        start_nm();
        o = find_nm("eth1", 1);
        ck_assert_str_eq(o->connection_id, "vfs-eth1");
        ck_assert_str_eq(o->connection_uuid, UUID_VFS);
        /* an sriov setting without total-vfs, in memory (no file) */
        ck_assert_str_eq(o->detail, "[sriov]");
        ck_assert_str_eq(o->file, "connection 'vfs-eth1', UUID " UUID_VFS);
}
END_TEST

START_TEST(test_no_sriov) {
        start_nm();
        find_nm("eth2", 0);
        /* a device NetworkManager does not know (UnknownDevice) */
        find_nm("ens9", 0);
}
END_TEST

/* The keyfile the stand-in's connection would be read from. */
static void keyfile(void) {
        fixture_file(root, "etc/NetworkManager/system-connections/pf.nmconnection",
                     "[connection]\nid=pf\ninterface-name=eth2\n\n[sriov]\ntotal-vfs=2\n");
}

START_TEST(test_no_networkmanager_falls_through) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL;

        /* the bus runs, NetworkManager is not on it */
        find_nm("eth2", 0);
        keyfile();
        ck_assert_int_eq(svff_nic_owner_find_with(bus, root, "eth2", "0000:05:00.0", &o, NULL), 1);
        ck_assert_str_eq(o->owner, "NetworkManager");
        ck_assert_str_eq(o->file, "/etc/NetworkManager/system-connections/pf.nmconnection");
        ck_assert_str_eq(o->detail, "sriov.total-vfs=2");
        ck_assert_ptr_null(o->connection_id);
}
END_TEST

START_TEST(test_live_before_files) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = NULL, *p = NULL, *q = NULL;

        start_nm();
        keyfile();
        /* NetworkManager's view wins where it names a connection... */
        fixture_file(root, "etc/NetworkManager/system-connections/eth0.nmconnection",
                     "[connection]\nid=old\ninterface-name=eth0\n\n[sriov]\ntotal-vfs=7\n");
        ck_assert_int_eq(svff_nic_owner_find_with(bus, root, "eth0", NULL, &o, NULL), 1);
        ck_assert_str_eq(o->connection_id, "pf-eth0");
        ck_assert_str_eq(o->detail, "sriov.total-vfs=4");
        /* ...and the files still decide where it names none (a keyfile it
         * has not loaded yet) */
        ck_assert_int_eq(svff_nic_owner_find_with(bus, root, "eth2", NULL, &p, NULL), 1);
        ck_assert_str_eq(p->file, "/etc/NetworkManager/system-connections/pf.nmconnection");
        /* and nothing anywhere is nothing */
        ck_assert_int_eq(svff_nic_owner_find_with(bus, root, "eth9", NULL, &q, NULL), 0);
        ck_assert_ptr_null(q);
}
END_TEST

static bool have_dbus_daemon(void) {
        const char *path = getenv("PATH") ?: "/usr/bin:/bin";
        _cleanup_free_ char *copy = strdup(path);
        char *save = NULL;

        for (char *d = copy ? strtok_r(copy, ":", &save) : NULL; d; d = strtok_r(NULL, ":", &save)) {
                _cleanup_free_ char *p = NULL;

                if (asprintf(&p, "%s/dbus-daemon", d) >= 0 && access(p, X_OK) == 0)
                        return true;
        }
        return false;
}

int main(void) {
        Suite *s = suite_create("nic-owner-nm");
        TCase *tc = tcase_create("NetworkManager stand-in");
        SRunner *sr;
        int failed;

        if (!have_dbus_daemon()) {
                fprintf(stderr, "dbus-daemon is not installed: cannot run a private bus for the "
                                "NetworkManager stand-in, skipping\n");
                return 77;
        }
        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_active_connection);
        tcase_add_test(tc, test_available_connection);
        tcase_add_test(tc, test_no_sriov);
        tcase_add_test(tc, test_no_networkmanager_falls_through);
        tcase_add_test(tc, test_live_before_files);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

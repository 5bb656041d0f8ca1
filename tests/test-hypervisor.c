/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The libvirt adapter: hostdev XML built and read back; lookups, error
 * mapping and domain lifecycle events against libvirt's test driver
 * (test:///default, in process), the events driving the store's
 * assignment records exactly as svffd does (svff_store_domain_event). */

#include <check.h>
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libvirt/virterror.h>

#include "hypervisor.h"
#include "store.h"

#define VF_A "0000:01:00.4"
#define VF_B "0000:01:00.5"

START_TEST(test_alias) {
        char a[SVFF_ALIAS_MAX];

        ck_assert_int_eq(svff_hv_alias_for("0000:01:00.4", a), 0);
        ck_assert_str_eq(a, "ua-svff-0000-01-00-4");
        ck_assert_int_eq(svff_hv_alias_for("01:00.4", a), 0);
        ck_assert_str_eq(a, "ua-svff-0000-01-00-4");
        ck_assert_int_eq(svff_hv_alias_for("0000:01:00.4'/>", a), -EINVAL);
}
END_TEST

START_TEST(test_hostdev_xml) {
        _cleanup_free_ char *x = NULL, *y = NULL, *dom = NULL;
        struct svff_hostdev hd;

        ck_assert_int_eq(svff_hv_hostdev_xml(VF_A, "ua-svff-0000-01-00-4", "0000:05:00.0", &x), 0);
        ck_assert_ptr_nonnull(strstr(x, "<hostdev mode=\"subsystem\" type=\"pci\" managed=\"no\">"));
        ck_assert_ptr_nonnull(strstr(x, "<driver name=\"vfio\"/>"));
        ck_assert_ptr_nonnull(strstr(x, "<source><address domain=\"0x0000\" bus=\"0x01\" slot=\"0x00\" function=\"0x4\"/></source>"));
        ck_assert_ptr_nonnull(strstr(x, "<alias name=\"ua-svff-0000-01-00-4\"/>"));
        ck_assert_ptr_nonnull(strstr(x, "<address type=\"pci\" domain=\"0x0000\" bus=\"0x05\" slot=\"0x00\" function=\"0x0\"/>"));
        ck_assert_int_eq(svff_hv_hostdev_xml(VF_A, "ua-svff", NULL, &y), 0);
        ck_assert_ptr_null(strstr(y, "type=\"pci\" domain"));

        /* What libvirt refuses is refused here first. */
        ck_assert_int_eq(svff_hv_hostdev_xml(VF_A, "svff-no-ua", NULL, &dom), -EINVAL);
        ck_assert_int_eq(svff_hv_hostdev_xml(VF_A, "ua-<x>&'\"", NULL, &dom), -EINVAL);
        ck_assert_int_eq(svff_hv_hostdev_xml(VF_A, "ua-ok", "not-an-address", &dom), -EINVAL);
        ck_assert_int_eq(svff_hv_hostdev_xml("0000:01:00.8", "ua-ok", NULL, &dom), -EINVAL);

        ck_assert_int_gt(asprintf(&dom, "<domain><name>a&amp;b</name><devices>"
                                        "<hostdev type='pci'><source><address domain='0' bus='1' slot='0' function='5'/></source></hostdev>"
                                        "%s</devices></domain>", x), 0);
        ck_assert_int_eq(svff_hv_find_hostdev_in_xml(dom, VF_A, &hd), 1);
        ck_assert_str_eq(hd.source, VF_A);
        ck_assert_str_eq(hd.alias, "ua-svff-0000-01-00-4");
        ck_assert_str_eq(hd.guest_address, "0000:05:00.0");
        ck_assert_int_eq(svff_hv_find_hostdev_in_xml(dom, VF_B, &hd), 1);
        ck_assert_str_eq(hd.alias, "");
        ck_assert_str_eq(hd.guest_address, "");
        ck_assert_int_eq(svff_hv_find_hostdev_in_xml(dom, "0000:01:00.6", &hd), 0);
        /* By alias: whatever its host address now. */
        ck_assert_int_eq(svff_hv_find_hostdev_by_alias_in_xml(dom, "ua-svff-0000-01-00-4", &hd), 1);
        ck_assert_str_eq(hd.source, VF_A);
        ck_assert_str_eq(hd.guest_address, "0000:05:00.0");
        ck_assert_int_eq(svff_hv_find_hostdev_by_alias_in_xml(dom, "ua-svff-0000-01-00-5", &hd), 0);
        ck_assert_int_eq(svff_hv_find_hostdev_by_alias_in_xml(dom, "", &hd), -EINVAL);
        ck_assert_int_eq(svff_hv_find_hostdev_in_xml("<domain", VF_A, &hd), -EBADMSG);
        ck_assert_int_eq(svff_hv_find_hostdev_in_xml("<!DOCTYPE d [<!ENTITY e SYSTEM \"file:///etc/passwd\">]><domain>&e;</domain>",
                                                     VF_A, &hd), 0);
}
END_TEST

/* A failover pair: the VF as an <interface type='hostdev'>, and the
 * standby it names found by MAC or alias. */
START_TEST(test_failover_xml) {
        _cleanup_free_ char *x = NULL, *dom = NULL, *bad = NULL;
        struct svff_failover fo = { .standby = "ua-net0", .mac = "52:54:00:ab:cd:ef" }, got;
        struct svff_hostdev hd;

        ck_assert_int_eq(svff_hv_device_xml(VF_A, "ua-svff-0000-01-00-4", "0000:05:00.0", &fo, &x), 0);
        ck_assert_ptr_nonnull(strstr(x, "<interface type=\"hostdev\" managed=\"no\"><mac address=\"52:54:00:ab:cd:ef\"/>"));
        ck_assert_ptr_nonnull(strstr(x, "<source><address type=\"pci\" domain=\"0x0000\" bus=\"0x01\" slot=\"0x00\" "
                                        "function=\"0x4\"/></source>"));
        ck_assert_ptr_nonnull(strstr(x, "<teaming type=\"transient\" persistent=\"ua-net0\"/>"));
        ck_assert_ptr_nonnull(strstr(x, "<alias name=\"ua-svff-0000-01-00-4\"/>"));
        ck_assert_ptr_null(strstr(x, "hostdev mode"));
        /* No standby: a plain hostdev. */
        ck_assert_int_eq(svff_hv_device_xml(VF_A, "ua-a", NULL, &(struct svff_failover) {}, &bad), 0);
        ck_assert_ptr_nonnull(strstr(bad, "<hostdev mode=\"subsystem\""));
        free(TAKE_PTR(bad));
        ck_assert_int_eq(svff_hv_device_xml(VF_A, "ua-a", NULL, &(struct svff_failover) { .standby = "net0",
                                            .mac = "52:54:00:ab:cd:ef" }, &bad), -EINVAL);
        ck_assert_int_eq(svff_hv_device_xml(VF_A, "ua-a", NULL, &(struct svff_failover) { .standby = "ua-net0",
                                            .mac = "52:54:00:ab:cd" }, &bad), -EINVAL);

        ck_assert_int_gt(asprintf(&dom, "<domain><devices>"
                                        "<interface type='network'><mac address='52:54:00:00:00:01'/><alias name='ua-plain'/></interface>"
                                        "<interface type='bridge'><mac address='52:54:00:AB:CD:EF'/>"
                                        "<teaming type='persistent'/><alias name='ua-net0'/></interface>"
                                        "<interface type='bridge'><mac address='52:54:00:00:00:02'/>"
                                        "<teaming type='persistent'/><alias name='net1'/></interface>"
                                        "%s</devices></domain>", x), 0);
        ck_assert_int_eq(svff_hv_find_standby_in_xml(dom, "52:54:00:ab:cd:ef", &got), 1);
        ck_assert_str_eq(got.standby, "ua-net0");
        ck_assert_str_eq(got.mac, "52:54:00:ab:cd:ef");
        ck_assert_int_eq(svff_hv_find_standby_in_xml(dom, "ua-net0", &got), 1);
        ck_assert_str_eq(got.mac, "52:54:00:ab:cd:ef");
        /* Not a standby (no persistent teaming), and one without a user alias. */
        ck_assert_int_eq(svff_hv_find_standby_in_xml(dom, "ua-plain", &got), 0);
        ck_assert_int_eq(svff_hv_find_standby_in_xml(dom, "52:54:00:00:00:02", &got), 1);
        ck_assert_str_eq(got.standby, "");
        ck_assert_int_eq(svff_hv_find_standby_in_xml(dom, "ua-none", &got), 0);
        ck_assert_int_eq(svff_hv_find_standby_in_xml("<domain", "ua-net0", &got), -EBADMSG);
        /* The pair's VF is found as any hostdev is. */
        ck_assert_int_eq(svff_hv_find_hostdev_in_xml(dom, VF_A, &hd), 1);
        ck_assert_str_eq(hd.alias, "ua-svff-0000-01-00-4");
        ck_assert_str_eq(hd.guest_address, "0000:05:00.0");
}
END_TEST

/* ---- test:///default with lifecycle events ---- */

struct events {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        struct svff_store *store;
        unsigned seen;
        unsigned outcomes[4];
};

static atomic_bool stop_loop;

static void *loop(void *p) {
        while (!atomic_load(&stop_loop))
                virEventRunDefaultImpl();
        return NULL;
}

static void wake(int timer, void *opaque) {
        virEventRemoveTimeout(timer);
}

static void on_change(const char *vf, const struct svff_assignment *a, enum svff_assign_outcome o, void *userdata) {
        struct events *e = userdata;

        e->outcomes[o]++;
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque) {
        struct events *e = opaque;
        char uuid[VIR_UUID_STRING_BUFLEN];
        enum svff_domain_event ev;

        virDomainGetUUIDString(dom, uuid);
        pthread_mutex_lock(&e->lock);
        ev = event == VIR_DOMAIN_EVENT_STARTED ? SVFF_DOMAIN_STARTED
             : event == VIR_DOMAIN_EVENT_STOPPED ? SVFF_DOMAIN_STOPPED
             : event == VIR_DOMAIN_EVENT_UNDEFINED ? SVFF_DOMAIN_UNDEFINED : (enum svff_domain_event) -1;
        if ((int) ev >= 0)
                (void) svff_store_domain_event(e->store, uuid, virDomainGetName(dom), ev, on_change, e);
        e->seen++;
        pthread_cond_broadcast(&e->cond);
        pthread_mutex_unlock(&e->lock);
        return 0;
}

static void wait_seen(struct events *e, unsigned n) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_sec += 5;
        pthread_mutex_lock(&e->lock);
        while (e->seen < n)
                if (pthread_cond_timedwait(&e->cond, &e->lock, &ts) != 0)
                        break;
        pthread_mutex_unlock(&e->lock);
        ck_assert_uint_ge(e->seen, n);
}

static void quiet(void *u, virErrorPtr e) {
}

static const char domain_xml[] =
        "<domain type='test'><name>svff-t1</name><uuid>5a3e1c2d-0000-4000-8000-5f5f00000001</uuid>"
        "<memory>65536</memory><os><type>hvm</type></os><devices>"
        "<hostdev mode='subsystem' type='pci' managed='no'><driver name='vfio'/>"
        "<source><address domain='0x0000' bus='0x01' slot='0x00' function='0x4'/></source>"
        "<alias name='ua-svff-0000-01-00-4'/>"
        "<address type='pci' domain='0x0000' bus='0x00' slot='0x07' function='0x0'/></hostdev>"
        "</devices></domain>";
#define UUID "5a3e1c2d-0000-4000-8000-5f5f00000001"

/* The slot a guest's machine keeps for its own device. */
START_TEST(test_guest_slot) {
        char *m = NULL;

        ck_assert_int_eq(svff_hv_machine_in_xml("<domain><os><type arch='x86_64' machine='pc-q35-8.2'>hvm</type>"
                                                "</os></domain>", &m), 1);
        ck_assert_str_eq(m, "pc-q35-8.2");
        free(m);
        ck_assert_int_eq(svff_hv_machine_in_xml("<domain><os><type>hvm</type></os></domain>", &m), 0);
        ck_assert_int_eq(svff_hv_machine_in_xml("<domain", &m), -EBADMSG);

        ck_assert_str_eq(svff_hv_guest_slot_owner("q35", "00:00.0"), "the host bridge");
        ck_assert_str_eq(svff_hv_guest_slot_owner("pc-q35-8.2", "0000:00:00.3"), "the host bridge");
        ck_assert_str_eq(svff_hv_guest_slot_owner("pc-i440fx-9.0", "00:00.0"), "the host bridge");
        ck_assert_str_eq(svff_hv_guest_slot_owner("pc", "00:00.0"), "the host bridge");
        ck_assert_ptr_null(svff_hv_guest_slot_owner("q35", "00:01.0"));
        ck_assert_ptr_null(svff_hv_guest_slot_owner("q35", "05:00.0"));
        ck_assert_ptr_null(svff_hv_guest_slot_owner("q35", "0001:00:00.0"));
        ck_assert_ptr_null(svff_hv_guest_slot_owner("virt", "00:00.0"));
        ck_assert_ptr_null(svff_hv_guest_slot_owner("pcx", "00:00.0"));
        ck_assert_ptr_null(svff_hv_guest_slot_owner(NULL, "00:00.0"));
}
END_TEST

/* The hotplug a guest address gets, from the controller of its bus and
 * the domain's ACPI settings. */
static enum svff_hv_hotplug hotplug_of(const char *features, const char *tail, const char *ga, char *port) {
        char xml[2048];
        enum svff_hv_hotplug h = _SVFF_HV_HOTPLUG_MAX;

        snprintf(xml, sizeof(xml),
                 "<domain type='qemu' xmlns:qemu='http://libvirt.org/schemas/domain/qemu/1.0'>"
                 "<os><type machine='q35'>hvm</type></os><features>%s</features><devices>"
                 "<controller type='usb' index='0' model='none'/>"
                 "<controller type='pci' index='0' model='pcie-root'/>"
                 "<controller type='pci' index='1' model='pcie-root-port'><target chassis='1' port='0x10'/></controller>"
                 "<controller type='pci' index='2' model='pcie-root-port'><target hotplug='off'/></controller>"
                 "<controller type='pci' index='3' model='pci-root'/>"
                 "<controller type='pci' index='16' model='pcie-switch-downstream-port'/>"
                 "<controller type='pci' index='17' model='dmi-to-pci-bridge'/>"
                 "</devices>%s</domain>", features, tail);
        ck_assert_int_eq(svff_hv_hotplug_in_xml(xml, ga, &h, port), 0);
        return h;
}

START_TEST(test_hotplug) {
        static const char native_global[] = "<qemu:commandline><qemu:arg value='-global'/>"
                "<qemu:arg value='ICH9-LPC.acpi-pci-hotplug-with-bridge-support=off'/></qemu:commandline>";
        char port[SVFF_HV_PORT_MAX];
        enum svff_hv_hotplug h;

        ck_assert_int_eq(hotplug_of("<acpi/>", "", "01:00.0", port), SVFF_HV_HOTPLUG_ACPI);
        ck_assert_str_eq(port, "pcie-root-port index 1");
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "0000:10:00.0", port), SVFF_HV_HOTPLUG_ACPI);
        ck_assert_str_eq(port, "pcie-switch-downstream-port index 16");
        /* ACPI hotplug of bridges off, either way, or no ACPI: native. */
        ck_assert_int_eq(hotplug_of("<acpi/>", native_global, "01:00.0", port), SVFF_HV_HOTPLUG_NATIVE);
        ck_assert_int_eq(hotplug_of("<acpi/><pci><acpi-bridge-hotplug state='off'/></pci>", "", "01:00.0", port),
                         SVFF_HV_HOTPLUG_NATIVE);
        ck_assert_int_eq(hotplug_of("<acpi/><pci><acpi-bridge-hotplug state='on'/></pci>", "", "01:00.0", port),
                         SVFF_HV_HOTPLUG_ACPI);
        ck_assert_int_eq(hotplug_of("", "", "01:00.0", port), SVFF_HV_HOTPLUG_NATIVE);
        /* None: the port's hotplug off, pcie-root, pci-root without ACPI. */
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "02:00.0", port), SVFF_HV_HOTPLUG_NONE);
        ck_assert_str_eq(port, "pcie-root-port index 2");
        ck_assert_int_eq(hotplug_of("<acpi/>", native_global, "02:00.0", port), SVFF_HV_HOTPLUG_NONE);
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "00:03.0", port), SVFF_HV_HOTPLUG_NONE);
        ck_assert_str_eq(port, "pcie-root index 0");
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "03:01.0", port), SVFF_HV_HOTPLUG_ACPI);
        ck_assert_int_eq(hotplug_of("", "", "03:01.0", port), SVFF_HV_HOTPLUG_NONE);
        /* Unknown: no such bus, a controller that takes no endpoint, no
         * address, another PCI domain. */
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "05:00.0", port), SVFF_HV_HOTPLUG_UNKNOWN);
        ck_assert_str_eq(port, "");
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "11:00.0", port), SVFF_HV_HOTPLUG_UNKNOWN);
        ck_assert_int_eq(hotplug_of("<acpi/>", "", NULL, port), SVFF_HV_HOTPLUG_UNKNOWN);
        ck_assert_int_eq(hotplug_of("<acpi/>", "", "0001:01:00.0", port), SVFF_HV_HOTPLUG_UNKNOWN);

        ck_assert_int_eq(svff_hv_hotplug_in_xml("<domain", "01:00.0", &h, port), -EBADMSG);
        ck_assert_str_eq(svff_hv_hotplug_to_string(SVFF_HV_HOTPLUG_NATIVE), "native");
}
END_TEST

START_TEST(test_test_driver_lifecycle) {
        char dir[] = "/tmp/svff-hv.XXXXXX";
        struct svff_error err = SVFF_ERROR_NULL;
        struct events e = { .lock = PTHREAD_MUTEX_INITIALIZER, .cond = PTHREAD_COND_INITIALIZER };
        struct svff_assignment a = { .uuid = UUID, .domain = "svff-t1", .alias = "ua-svff-0000-01-00-4",
                                     .guest_address = "0000:00:07.0", .config = true, .state = SVFF_ASSIGN_ATTACHED };
        struct svff_assignment b = a, got;
        struct svff_domain_info info;
        struct svff_hostdev hd;
        virConnectPtr conn = NULL;
        virDomainPtr dom = NULL, d2 = NULL;
        pthread_t t;
        int cb;

        virSetErrorFunc(NULL, quiet);
        ck_assert_int_eq(virEventRegisterDefaultImpl(), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, loop, NULL), 0);
        ck_assert_int_eq(svff_hv_open("test:///default", &conn, &err), 0);
        ck_assert_ptr_nonnull(mkdtemp(dir));
        ck_assert_int_eq(svff_store_open(dir, &e.store, &err), 0);
        cb = virConnectDomainEventRegisterAny(conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                                              VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle), &e, NULL);
        ck_assert_int_ge(cb, 0);

        dom = virDomainDefineXML(conn, domain_xml);
        ck_assert_msg(dom != NULL, "define: %s", virGetLastErrorMessage());
        wait_seen(&e, 1);

        /* Lookups by name and UUID, and an unknown one. */
        ck_assert_int_eq(svff_hv_lookup(conn, "svff-t1", &info, NULL, &err), 0);
        ck_assert_str_eq(info.uuid, UUID);
        ck_assert(info.persistent && !info.active);
        ck_assert_int_eq(svff_hv_lookup(conn, UUID, &info, &d2, &err), 0);
        ck_assert_str_eq(info.name, "svff-t1");
        ck_assert_int_eq(svff_hv_lookup(conn, "nope", &info, NULL, &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "No domain 'nope'"));
        svff_error_free(&err);

        /* The hostdev as the config holds it. */
        ck_assert_int_eq(svff_hv_get_hostdev(d2, VF_A, SVFF_HV_CONFIG, &hd, &err), 1);
        ck_assert_str_eq(hd.guest_address, "0000:00:07.0");
        ck_assert_str_eq(hd.alias, "ua-svff-0000-01-00-4");
        /* The test driver cannot attach: its error, mapped. */
        ck_assert_int_eq(svff_hv_attach(d2, VF_B, "ua-svff-0000-01-00-5", NULL, NULL, SVFF_HV_CONFIG, NULL, &err), -EOPNOTSUPP);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "Attaching VF 0000:01:00.5 to domain 'svff-t1' (config)"));
        svff_error_free(&err);

        /* VF A: config (and live while running); VF B: live only. */
        a.live = true;
        ck_assert_int_eq(svff_store_set_assignment(e.store, VF_A, &a), 0);
        ck_assert_int_eq(virDomainCreate(dom), 0);
        wait_seen(&e, 2);
        /* Running: from the handle's ID; persistence only when asked. */
        ck_assert_int_eq(svff_hv_lookup(conn, UUID, &info, NULL, &err), 0);
        ck_assert(info.active && info.persistent);
        ck_assert_int_eq(svff_hv_lookup_running(conn, "svff-t1", &info, NULL, &err), 0);
        ck_assert(info.active && !info.persistent);
        ck_assert_str_eq(info.uuid, UUID);
        b.live = true;
        b.config = false;
        ck_assert_int_eq(svff_store_set_assignment(e.store, VF_B, &b), 0);

        /* destroy: config kept (not live), live-only closed */
        ck_assert_int_eq(virDomainDestroy(dom), 0);
        wait_seen(&e, 3);
        pthread_mutex_lock(&e.lock);
        ck_assert_int_eq(svff_store_get_assignment(e.store, VF_A, &got), 1);
        ck_assert(got.config && !got.live);
        ck_assert_int_eq(svff_store_get_assignment(e.store, VF_B, NULL), 0);
        ck_assert_uint_eq(e.outcomes[SVFF_ASSIGN_KEPT], 1);
        ck_assert_uint_eq(e.outcomes[SVFF_ASSIGN_CLOSED], 1);
        pthread_mutex_unlock(&e.lock);

        /* start: the config assignment is live again */
        ck_assert_int_eq(virDomainCreate(dom), 0);
        wait_seen(&e, 4);
        pthread_mutex_lock(&e.lock);
        ck_assert_int_eq(svff_store_get_assignment(e.store, VF_A, &got), 1);
        ck_assert(got.live);
        ck_assert_uint_eq(e.outcomes[SVFF_ASSIGN_LIVE_AGAIN], 1);
        pthread_mutex_unlock(&e.lock);

        /* destroy and undefine: back to the pool */
        ck_assert_int_eq(virDomainDestroy(dom), 0);
        ck_assert_int_eq(virDomainUndefine(dom), 0);
        wait_seen(&e, 6);
        pthread_mutex_lock(&e.lock);
        ck_assert_int_eq(svff_store_get_assignment(e.store, VF_A, NULL), 0);
        ck_assert_uint_eq(e.outcomes[SVFF_ASSIGN_RELEASED], 1);
        pthread_mutex_unlock(&e.lock);
        ck_assert_int_eq(svff_hv_lookup(conn, UUID, NULL, NULL, &err), -ENOENT);
        svff_error_free(&err);

        virConnectDomainEventDeregisterAny(conn, cb);
        virDomainFree(dom);
        virDomainFree(d2);
        virConnectClose(conn);
        atomic_store(&stop_loop, true);
        virEventAddTimeout(0, wake, NULL, NULL);
        pthread_join(t, NULL);
        svff_store_free(e.store);
        {
                char p[64];

                snprintf(p, sizeof(p), "%s/%s", dir, SVFF_STORE_FILE);
                unlink(p);
                rmdir(dir);
        }
}
END_TEST

int main(void) {
        Suite *s = suite_create("hypervisor");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_alias);
        tcase_add_test(tc, test_hostdev_xml);
        tcase_add_test(tc, test_failover_xml);
        tcase_add_test(tc, test_guest_slot);
        tcase_add_test(tc, test_hotplug);
        tcase_add_test(tc, test_test_driver_lifecycle);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}

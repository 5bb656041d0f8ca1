/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NVMe class against a stand-in for the PF's admin queue
 * (nvme-standin.c: QEMU's controller rules; no NVMe controller can run
 * in a unit test). The PF's sysfs side is a fixture tree. */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "class.h"
#include "class-nvme.h"
#include "fixture-util.h"
#include "json-util.h"
#include "nvme-standin.h"

#define PF "0000:00:04.0"

static char *root;
static struct svff_ctx *ctx;
static struct svff_pf pf;
static struct nvme_standin st;
static struct svff_class_pf *c;
static const struct svff_class *nvme;

static void setup(void) {
        root = fixture_new();
        fixture_device(root, PF, 0x1b36, 0x0010, 0x010802, 4);
        fixture_mkdir(root, "devices/pci0000:00/" PF "/nvme/nvme0");
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
        pf = (struct svff_pf) { .address = PF, .class = 0x010802, .driver = (char *) "nvme", .totalvfs = 4 };
        nvme_standin_init_qemu(&st);
        nvme = svff_class_by_name("nvme");
        ck_assert_ptr_nonnull(nvme);
        c = NULL;
}

static void teardown(void) {
        if (c)
                nvme->close(c);
        nvme_standin_done(&st);
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

static struct json_object *json(const char *s) {
        struct json_object *v = NULL;

        ck_assert_msg(svff_json_parse(s, strlen(s), 16, &v, NULL) == 0, "bad JSON in test: %s", s);
        return v;
}

static void assert_json_eq(struct json_object *v, const char *want) {
        _cleanup_(json_object_putp) struct json_object *w = json(want);

        ck_assert_msg(json_object_equal(v, w), "got %s, want %s",
                      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), want);
}

static void assert_log(const char *want) {
        _cleanup_free_ char *got = nvme_standin_take_log(&st, false);

        ck_assert_str_eq(got, want);
}

static void clear_log(void) {
        free(nvme_standin_take_log(&st, true));
}

#define assert_err(e, needle)                                                                                   \
        do {                                                                                                    \
                ck_assert_msg(strstr(svff_error_message(e), (needle)), "message '%s' lacks '%s'",              \
                              svff_error_message(e), (needle));                                                 \
        } while (0)

static void open_ok(void) {
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_msg(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err) == 0, "open: %s",
                      svff_error_message(&err));
        clear_log();
}

static void numvfs(unsigned n) {
        nvme_standin_set_numvfs(&st, n);
        pf.numvfs = n;
}

/* settings (JSON text: an array by VF index, or NULL) loaded for n VFs
 * on c, as the daemon loads them for plan and prepare; freed with
 * svff_class_unload_all(). */
static struct svff_class_settings **load_all(unsigned n, const char *settings) {
        _cleanup_(json_object_putp) struct json_object *j = settings ? json(settings) : NULL;
        struct svff_class_settings **s = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_msg(svff_class_load_all(nvme, c, j, n, &s, &err) == 0, "load %s: %s", strna(settings),
                      svff_error_message(&err));
        return s;
}

/* provision VF index with settings (JSON text) loaded for it, and
 * recorded and tenant as a reprovision gets them, expecting r (a
 * refusal of the load included: nothing is sent then either) */
static struct json_object *provision_with(unsigned index, const char *settings, struct json_object *recorded,
                                          bool tenant, int want_r, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *j = settings ? json(settings) : NULL;
        struct svff_class_settings *s = NULL;
        struct json_object *state = NULL;
        int r = nvme->load(c, index, j, &s, err);

        if (r >= 0) {
                r = nvme->provision(c, &pf, index, s, recorded, tenant, &state, err);
                nvme->unload(s);
        } else
                ck_assert_ptr_null(s);
        ck_assert_msg(r == want_r, "provision VF %u: %d (%s), want %d", index, r, svff_error_message(err), want_r);
        if (r < 0)
                ck_assert_ptr_null(state);
        return state;
}

static struct json_object *provision(unsigned index, const char *settings, int want_r, struct svff_error *err) {
        return provision_with(index, settings, NULL, false, want_r, err);
}

static struct json_object *provision_ok(unsigned index, const char *settings) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *state = provision(index, settings, 0, &err);

        ck_assert_ptr_nonnull(state);
        return state;
}

static void assert_secondary(uint16_t scid, bool online, uint16_t nvq, uint16_t nvi) {
        const struct svff_nvme_secondary *e = nvme_standin_sec(&st, scid);

        ck_assert_ptr_nonnull(e);
        ck_assert_msg(e->online == online && e->nvq == nvq && e->nvi == nvi,
                      "secondary %u is %s %u VQ/%u VI, want %s %u/%u", scid, e->online ? "online" : "offline", e->nvq,
                      e->nvi, online ? "online" : "offline", nvq, nvi);
}

/* The stand-in replays what was seen by hand on QEMU 7.2's controller
 * in the VM tier, so that the class is tested against that behaviour. */
START_TEST(test_standin_is_qemu) {
        const struct svff_nvme_ops *o = &nvme_standin_ops;

        numvfs(2);
        assert_secondary(1, false, 0, 0);
        assert_secondary(2, false, 0, 0);
        /* virt-mgmt -c 1 -r 0 -n 2 -a 8: 2 VQ */
        ck_assert_int_eq(o->virt_mgmt(&st, SVFF_NVME_VIRT_ASSIGN, SVFF_NVME_RES_VQ, 1, 2), 0);
        /* -r 1 -n 2 -a 8: above the per-VF VI maximum of 1 */
        ck_assert_int_eq(o->virt_mgmt(&st, SVFF_NVME_VIRT_ASSIGN, SVFF_NVME_RES_VI, 1, 2),
                         SVFF_NVME_SC_INVALID_NUM_RESOURCES);
        /* -a 9 with NVI 0 */
        ck_assert_int_eq(o->virt_mgmt(&st, SVFF_NVME_VIRT_ONLINE, 0, 1, 0), SVFF_NVME_SC_INVALID_SEC_CTRL_STATE);
        /* -r 1 -n 1 -a 8, -a 9: Online, NVQ 2, NVI 1 */
        ck_assert_int_eq(o->virt_mgmt(&st, SVFF_NVME_VIRT_ASSIGN, SVFF_NVME_RES_VI, 1, 1), 0);
        ck_assert_int_eq(o->virt_mgmt(&st, SVFF_NVME_VIRT_ONLINE, 0, 1, 0), 0);
        assert_secondary(1, true, 2, 1);
        /* resources only while offline */
        ck_assert_int_eq(o->virt_mgmt(&st, SVFF_NVME_VIRT_ASSIGN, SVFF_NVME_RES_VQ, 1, 2),
                         SVFF_NVME_SC_INVALID_SEC_CTRL_STATE);
        /* attach-ns -n 1 -c 1 */
        ck_assert_int_eq(o->ns_attach(&st, 1, 1, true), 0);
        ck_assert_int_eq(o->ns_attach(&st, 1, 1, true), SVFF_NVME_SC_NS_ALREADY_ATTACHED);
        /* numvfs 0 -> 2: every secondary offline with 0/0 again */
        numvfs(0);
        numvfs(2);
        assert_secondary(1, false, 0, 0);
        ck_assert_uint_eq(st.caps.vqrfa, 0);
        ck_assert_uint_eq(st.caps.virfa, 0);
}
END_TEST

/* ---- open ---------------------------------------------------------------- */

START_TEST(test_open_qemu) {
        /* QEMU 7.2: OACS 0x10a (bit 7 clear), CNS 14h answers: supported */
        ck_assert_uint_eq(st.oacs & SVFF_NVME_OACS_VIRT_MGMT, 0);
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, NULL), 0);
        ck_assert_uint_eq(st.opens, 1);
        /* opening reads, never changes */
        assert_log("");
}
END_TEST

START_TEST(test_match_only_a_reachable_controller) {
        /* No device number for the controller in sysfs: a simulated
         * tree's PF, not the host's. It stays a bare PCI function: no
         * admin command goes to a host /dev/nvme0 in its name. */
        unsetenv("SVFF_TEST_NVME_STANDIN");
        ck_assert_ptr_null(svff_class_find(ctx, &pf));
        setenv("SVFF_TEST_NVME_STANDIN", "1", 1);
#ifdef SVFF_FAULT_POINTS
        /* Test builds: the tests' stand-in is every NVMe PF's controller. */
        ck_assert_ptr_eq(svff_class_find(ctx, &pf), nvme);
#else
        /* Any other build ignores the stand-in's variable. */
        ck_assert_ptr_null(svff_class_find(ctx, &pf));
#endif
        unsetenv("SVFF_TEST_NVME_STANDIN");
        /* Not on nvme: matched, and open refuses it by name. */
        pf.driver = (char *) "vfio-pci";
        ck_assert_ptr_eq(svff_class_find(ctx, &pf), nvme);
        pf.driver = (char *) "nvme";

        /* With a device number it is the host's: matched, and opened only
         * when /dev/nvme0 is that very character device (a number no
         * host device has here). */
        fixture_file(root, "devices/pci0000:00/" PF "/nvme/nvme0/dev", "4095:1048575\n");
        ck_assert_ptr_eq(svff_class_find(ctx, &pf), nvme);
        {
                struct svff_error err = SVFF_ERROR_NULL;

                ck_assert_int_lt(nvme->open(ctx, &pf, &c, &err), 0);
                ck_assert_ptr_null(c);
                ck_assert_msg(strstr(svff_error_message(&err), "/dev/nvme0"), "%s", svff_error_message(&err));
                svff_error_free(&err);
        }
}
END_TEST

START_TEST(test_open_not_live_yet) {
        /* Just bound (a reprogram's rescan): the kernel answers EAGAIN
         * until the controller is live; the open waits for it. */
        st.open_not_live = 3;
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, NULL), 0);
        ck_assert_uint_eq(st.open_not_live, 0);
        ck_assert_uint_eq(st.opens, 1);
}
END_TEST

START_TEST(test_open_refusals) {
        struct svff_error err = SVFF_ERROR_NULL;

        /* not on nvme: svff needs the host driver's admin queue */
        pf.driver = (char *) "vfio-pci";
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -EOPNOTSUPP);
        assert_err(&err, PF);
        assert_err(&err, "'vfio-pci'");
        assert_err(&err, "bind it to nvme");
        svff_error_free(&err);
        pf.driver = NULL;
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -EOPNOTSUPP);
        assert_err(&err, "not bound to a driver");
        svff_error_free(&err);
        ck_assert_uint_eq(st.opens, 0);
        pf.driver = (char *) "nvme";

        /* no Virtualization Management: OACS bit 7 clear and CNS 14h
         * refused */
        st.cns14 = false;
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -EOPNOTSUPP);
        assert_err(&err, "no Virtualization Management");
        assert_err(&err, "OACS 0x010a");
        assert_err(&err, "Invalid Field in Command");
        assert_err(&err, PF);
        svff_error_free(&err);
        ck_assert_ptr_null(c);

        /* bit 7 set: CNS 14h failing is an error of its own */
        st.oacs |= SVFF_NVME_OACS_VIRT_MGMT;
        st.cns14 = true;
        nvme_standin_fail(&st, "identify-primary", SVFF_NVME_SC_INTERNAL, 1);
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -EIO);
        assert_err(&err, "Internal Error (NVMe status 0x006)");
        svff_error_free(&err);

        /* no flexible resources per VF: no secondary can come online */
        st.caps.vifrsm = 0;
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -EOPNOTSUPP);
        assert_err(&err, "at most 2 VQ and 0 VI");
        svff_error_free(&err);
        st.caps.vifrsm = 1;

        /* the char device cannot be opened */
        st.open_refused = true;
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -EACCES);
        assert_err(&err, "/dev/nvme0");
        svff_error_free(&err);
        st.open_refused = false;

        /* no controller under nvme/ (resetting, failed probe) */
        fixture_free(root);
        root = fixture_new();
        fixture_device(root, PF, 0x1b36, 0x0010, 0x010802, 4);
        ctx = svff_ctx_unref(ctx);
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -ENODEV);
        assert_err(&err, "nvme/");
        svff_error_free(&err);
        ck_assert_ptr_null(c);

        /* nothing was changed by any of them */
        assert_log("");
}
END_TEST

/* ---- the controller's identity ------------------------------------------- */

/* The kernel's nvme char devices: major 242 here, minor the instance
 * ("nvme3" is 242:3). */
#define NVME_MAJOR 242
#define CTRL_DIR "devices/pci0000:00/" PF "/nvme/"

/* Another controller of the host, a disk of its own: the instance
 * number the PF's controller leaves, and its /dev name, may go to it. */
static struct nvme_standin host_disk;

/* sysfs: the PF's controller (nvme0 so far) is nvme<minor>. */
static void sysfs_ctrl(unsigned minor) {
        _cleanup_free_ char *from = NULL, *to = NULL;
        char dev[32];

        snprintf(dev, sizeof(dev), "%u:%u\n", NVME_MAJOR, minor);
        fixture_file(root, CTRL_DIR "nvme0/dev", dev);
        if (minor == 0)
                return;
        ck_assert_int_ge(asprintf(&from, "%s/" CTRL_DIR "nvme0", root), 0);
        ck_assert_int_ge(asprintf(&to, "%s/" CTRL_DIR "nvme%u", root, minor), 0);
        ck_assert_int_eq(rename(from, to), 0);
}

/* The PF's controller is nvme<minor>, in sysfs and in /dev. */
static void pf_ctrl(unsigned minor) {
        sysfs_ctrl(minor);
        snprintf(st.name, sizeof(st.name), "nvme%u", minor);
        st.dev = makedev(NVME_MAJOR, minor);
}

/* The host's disk controller takes instance minor, /dev/nvme<minor>. */
static void host_disk_is(unsigned minor) {
        nvme_standin_init_qemu(&host_disk);
        snprintf(host_disk.name, sizeof(host_disk.name), "nvme%u", minor);
        host_disk.dev = makedev(NVME_MAJOR, minor);
        /* its namespace 1 is the host's */
        host_disk.ns[0].ctrls[host_disk.ns[0].n_ctrls++] = 0;
        st.next_ctrl = &host_disk;
}

static void assert_host_disk_untouched(void) {
        _cleanup_free_ char *log = nvme_standin_take_log(&host_disk, true);

        /* opened (to be told apart) at most; no command */
        ck_assert_msg(!*log, "commands reached the host's disk controller: %s", log);
        ck_assert_uint_eq(host_disk.ns[0].formats, 0);
}

/* While the open waits for the PF's controller to come up, the
 * controller is replaced: the PF's comes back as nvme1, and the host's
 * disk takes instance 0, with /dev/nvme0. */
static void renumber_at_second_open(struct nvme_standin *s, unsigned n) {
        if (n != 2)
                return;
        pf_ctrl(1);
        host_disk_is(0);
}

START_TEST(test_open_renumbered) {
        struct svff_error err = SVFF_ERROR_NULL;
        int r;

        pf_ctrl(0);
        st.open_not_live = 1;
        st.on_open = renumber_at_second_open;
        r = svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err);
        assert_host_disk_untouched();
        ck_assert_int_eq(r, -ENXIO);
        ck_assert_ptr_null(c);
        assert_err(&err, "PF " PF ": /dev/nvme0 (242:0) is not its controller nvme1 (242:1 in sysfs)");
        assert_err(&err, "svff sends no admin command to it");
        svff_error_free(&err);

        /* again: the PF's own controller, by its own name */
        st.on_open = NULL;
        open_ok();
        ck_assert_uint_eq(st.opens, 1);
        assert_host_disk_untouched();
        numvfs(1);
        json_object_put(provision_ok(0, "{\"namespace\": 1}"));
        ck_assert(nvme_standin_attached(&st, 1, 1));
        assert_host_disk_untouched();
        nvme_standin_done(&host_disk);
}
END_TEST

START_TEST(test_open_wrong_node) {
        struct svff_error err = SVFF_ERROR_NULL;

        /* sysfs: the PF's controller is nvme0; /dev/nvme0 is a node of
         * another number, the host's disk's */
        pf_ctrl(0);
        snprintf(st.name, sizeof(st.name), "nvme7");
        host_disk_is(0);
        host_disk.dev = makedev(NVME_MAJOR, 5);
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -ENXIO);
        assert_err(&err, "PF " PF ": /dev/nvme0 (242:5) is not its controller nvme0 (242:0 in sysfs)");
        svff_error_free(&err);
        assert_host_disk_untouched();

        /* a handle with no device number against a controller with one */
        host_disk.dev = 0;
        ck_assert_int_eq(svff_class_nvme_open_with(ctx, &pf, &nvme_standin_ops, &st, &c, &err), -ENXIO);
        assert_err(&err, "is not its controller nvme0");
        svff_error_free(&err);
        assert_host_disk_untouched();
        nvme_standin_done(&host_disk);
        ck_assert_uint_eq(st.opens, 0);
}
END_TEST

/* A PF held open over many steps: every batch of commands first checks
 * that the handle is the PF's controller still. */
START_TEST(test_renumbered_while_open) {
        _cleanup_(json_object_putp) struct json_object *state = NULL, *o = NULL;
        struct svff_class_settings **none = NULL, **flex = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *log = NULL;

        pf_ctrl(0);
        open_ok();
        numvfs(2);
        state = provision_ok(0, "{\"namespace\": 1}");
        ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), 0);
        clear_log();

        /* the PF's controller was reset and came back as nvme1: the
         * handle is the controller that went */
        sysfs_ctrl(1);
        ck_assert_ptr_null(provision(1, "{\"namespace\": 2}", -ENXIO, &err));
        assert_err(&err, "PF " PF ": /dev/nvme0 (242:0) is not its controller nvme1 (242:1 in sysfs)");
        svff_error_free(&err);
        ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), -ENXIO);
        svff_error_free(&err);
        ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), -ENXIO);
        svff_error_free(&err);
        ck_assert_int_eq(nvme->inspect(c, &pf, &o, &err), -ENXIO);
        svff_error_free(&err);
        none = load_all(2, NULL);
        ck_assert_int_eq(nvme->plan(c, &pf, 2, none, &o, &err), -ENXIO);
        svff_error_free(&err);
        flex = load_all(2, "[{\"primary_flexible\": true}, null]");
        ck_assert_int_eq(nvme->prepare(c, &pf, 2, flex, &err), -ENXIO);
        svff_error_free(&err);
        ck_assert_ptr_null(o);
        svff_class_unload_all(nvme, none, 2);
        svff_class_unload_all(nvme, flex, 2);
        /* not one command, reads included */
        log = nvme_standin_take_log(&st, true);
        ck_assert_str_eq(log, "");
        ck_assert(nvme_standin_attached(&st, 1, 1));
        assert_secondary(1, true, 2, 1);
}
END_TEST

/* The real table: the device number of what the fd has open. */
START_TEST(test_libnvme_devnum) {
        const struct svff_nvme_ops *o = &svff_nvme_ops_libnvme;
        void *h = NULL;
        dev_t dev = 0;

        ck_assert_int_eq(o->open(NULL, "null", &h), 0);
        ck_assert_int_eq(o->devnum(h, &dev), 1);
        ck_assert_uint_eq(major(dev), 1);
        ck_assert_uint_eq(minor(dev), 3);
        o->close(h);
        ck_assert_int_eq(o->open(NULL, "../etc/passwd", &h), -EINVAL);
}
END_TEST

/* ---- provision ------------------------------------------------------------- */

START_TEST(test_provision_order) {
        _cleanup_(json_object_putp) struct json_object *s0 = NULL, *s1 = NULL, *again = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *d = NULL;

        open_ok();
        numvfs(2);
        /* defaults: the per-VF maxima (2 VQ, 1 VI); VI before VQ, then
         * online, then the namespace */
        s0 = provision_ok(0, "{\"namespace\": [1, 2]}");
        assert_log("virt-mgmt assign c1 vi 1; virt-mgmt assign c1 vq 2; virt-mgmt online c1; ns-attach 1 c1");
        assert_json_eq(s0, "{\"scid\": 1, \"secondary\": \"online\", \"vq\": 2, \"vi\": 1, \"namespaces\": [1], "
                           "\"subnqn\": \"nqn.2019-08.org.qemu:svffnvme0\", \"ids\": {\"1\": "
                           "{\"nguid\": \"00000000000000000000000000000000\", \"eui64\": \"0000000000000000\"}}}");
        s1 = provision_ok(1, "{\"namespace\": [1, 2]}");
        assert_log("virt-mgmt assign c2 vi 1; virt-mgmt assign c2 vq 2; virt-mgmt online c2; ns-attach 2 c2");
        assert_secondary(1, true, 2, 1);
        assert_secondary(2, true, 2, 1);
        ck_assert(nvme_standin_attached(&st, 1, 1));
        ck_assert(nvme_standin_attached(&st, 2, 2));
        ck_assert(!nvme_standin_attached(&st, 1, 2));

        d = nvme->describe(s0);
        ck_assert_str_eq(d, "online 2VQ/1VI ns 1");
        ck_assert_int_eq(nvme->verify(c, &pf, 0, s0, &err), 0);
        ck_assert_int_eq(nvme->verify(c, &pf, 1, s1, &err), 0);
        assert_log("");

        /* again, as recovery repeats it: no offline/online (that would
         * reset the controller under its user), the namespace is there */
        again = provision_ok(0, "{\"namespace\": [1, 2]}");
        assert_log("ns-attach 1 c1");
        ck_assert(json_object_equal(again, s0));
        ck_assert(!svff_error_is_set(&err));
}
END_TEST

START_TEST(test_provision_reassign) {
        _cleanup_(json_object_putp) struct json_object *s = NULL;

        st.caps.vqfrsm = 4;
        st.caps.vifrsm = 2;
        open_ok();
        numvfs(1);
        json_object_put(provision_ok(0, "{\"vq\": 2, \"vi\": 1}"));
        clear_log();
        /* online with other resources: offline first, or the controller
         * refuses the assignment */
        s = provision_ok(0, "{\"vq\": 3, \"vi\": 2}");
        assert_log("virt-mgmt offline c1; virt-mgmt assign c1 vi 2; virt-mgmt assign c1 vq 3; virt-mgmt online c1");
        assert_secondary(1, true, 3, 2);
        assert_json_eq(s, "{\"scid\": 1, \"secondary\": \"online\", \"vq\": 3, \"vi\": 2, \"namespaces\": [], "
                          "\"subnqn\": \"nqn.2019-08.org.qemu:svffnvme0\"}");
}
END_TEST

START_TEST(test_provision_refusals) {
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(2);

        /* each refused before any command that changes something */
        provision(0, "{\"vq\": 3}", -EINVAL, &err);
        assert_err(&err, "at most 2 VQ and 1 VI");
        svff_error_free(&err);
        provision(0, "{\"vq\": 1}", -EINVAL, &err);
        assert_err(&err, "'vq'");
        svff_error_free(&err);
        provision(0, "{\"namespace\": 9}", -EINVAL, &err);
        assert_err(&err, "namespace 9 does not exist on nvme0 (its namespaces: 1, 2, 3, 4)");
        assert_err(&err, "creates none");
        svff_error_free(&err);
        provision(0, "{\"queues\": 2}", -EINVAL, &err);
        assert_err(&err, "Unknown NVMe setting 'queues'");
        svff_error_free(&err);
        /* VF 3 is not enabled: refused by the controller, and what was
         * assigned for it is given back (test_online_refused) */
        provision(3, NULL, -EIO, &err);
        svff_error_free(&err);
        clear_log();
        assert_secondary(4, false, 0, 0);

        json_object_put(provision_ok(1, "{\"namespace\": 2}"));
        clear_log();
        /* namespace 2 belongs to VF 1's controller now */
        provision(0, "{\"namespace\": 2}", -EBUSY, &err);
        assert_err(&err, "namespace 2 is already attached to controller 2, the secondary of VF 1");
        svff_error_free(&err);
        assert_log("");
        assert_secondary(1, false, 0, 0);

        /* the pool: 8 VQ and 4 VI, all VI held by VF 1 (1) and
         * another secondary (3) */
        st.caps.virfa += 3;
        st.sec[3].nvi = 3;
        provision(0, NULL, -ENOSPC, &err);
        assert_err(&err, "VF 0 of PF " PF " needs 2 VQ and 1 VI flexible resources; the primary controller nvme0 "
                         "has 6 VQ and 0 VI free for it");
        svff_error_free(&err);
        assert_log("");
        /* ... what a secondary holds itself counts as free for it */
        json_object_put(provision_ok(1, "{\"namespace\": 2}"));
        assert_log("ns-attach 2 c2");

        /* a VF the controller has no secondary for */
        provision(6, NULL, -ENODEV, &err);
        assert_err(&err, "no secondary controller for VF 6 (VFN 7)");
        svff_error_free(&err);
        assert_log("");
}
END_TEST

START_TEST(test_no_ns_mgmt) {
        struct svff_error err = SVFF_ERROR_NULL;

        /* no Namespace Attachment: secondaries still work, a namespace is
         * refused up front */
        st.oacs &= ~SVFF_NVME_OACS_NS_MGMT;
        open_ok();
        numvfs(1);
        provision(0, "{\"namespace\": 1}", -EOPNOTSUPP, &err);
        assert_err(&err, "has no Namespace Management (OACS 0x0102, bit 3 clear)");
        svff_error_free(&err);
        assert_log("");
        json_object_put(provision_ok(0, NULL));
        assert_secondary(1, true, 2, 1);
}
END_TEST

START_TEST(test_online_refused) {
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(1);
        /* VF 1 is not enabled: the controller refuses to bring its
         * secondary online, and the status is named */
        provision(1, NULL, -EIO, &err);
        assert_err(&err, "VF 1's secondary controller 2 on nvme0 (PF " PF ") refused to come online with 2 VQ and 1 VI");
        assert_err(&err, "Invalid Secondary Controller State (NVMe status 0x120)");
        assert_err(&err, "nvme list-secondary /dev/nvme0");
        svff_error_free(&err);
        /* and the resources go back to the pool */
        assert_log("virt-mgmt assign c2 vi 1; virt-mgmt assign c2 vq 2; virt-mgmt online c2; virt-mgmt offline c2");
        assert_secondary(2, false, 0, 0);
        ck_assert_uint_eq(st.caps.vqrfa, 0);

        /* once the VF exists, provisioning again brings it up */
        numvfs(2);
        json_object_put(provision_ok(1, NULL));
        assert_log("virt-mgmt assign c2 vi 1; virt-mgmt assign c2 vq 2; virt-mgmt online c2");
        assert_secondary(2, true, 2, 1);
}
END_TEST

/* Every status the class handles, where it meets it: the errno, and the
 * status by name in the message. */
START_TEST(test_statuses) {
        static const struct {
                const char *cmd;        /* the command made to fail */
                int status;
                const char *settings;
                int want;
                const char *name;
        } cases[] = {
                { "virt-mgmt assign c1 vq", SVFF_NVME_SC_INVALID_NUM_RESOURCES, NULL, -ENOSPC,
                  "Invalid Number of Controller Resources (NVMe status 0x121); ask for no more than the per-VF maximum" },
                { "virt-mgmt assign c1 vi", SVFF_NVME_SC_INVALID_RESOURCE_ID, NULL, -ENOSPC,
                  "Invalid Resource Identifier (NVMe status 0x122); the primary controller has too few free" },
                { "virt-mgmt assign c1 vi", SVFF_NVME_SC_INVALID_SEC_CTRL_STATE, NULL, -EIO,
                  "Invalid Secondary Controller State (NVMe status 0x120); it must be offline" },
                { "virt-mgmt online c1", SVFF_NVME_SC_INVALID_CTRL_ID, NULL, -ENODEV,
                  "Invalid Controller Identifier (NVMe status 0x11f)" },
                { "virt-mgmt online c1", SVFF_NVME_SC_INVALID_SEC_CTRL_STATE, NULL, -EIO,
                  "refused to come online with 2 VQ and 1 VI: Invalid Secondary Controller State" },
                { "ns-attach 1 c1", SVFF_NVME_SC_CTRL_LIST_INVALID, "{\"namespace\": 1}", -ENODEV,
                  "Controller List Invalid (NVMe status 0x11c)" },
                { "ns-attach 1 c1", SVFF_NVME_SC_NS_ATTACHMENT_LIMIT, "{\"namespace\": 1}", -EBUSY,
                  "Namespace Attachment Limit Exceeded (NVMe status 0x127)" },
                { "ns-attach 1 c1", SVFF_NVME_SC_NS_IS_PRIVATE, "{\"namespace\": 1}", -EIO,
                  "Namespace Is Private (NVMe status 0x119)" },
                { "ns-attach 1 c1", SVFF_NVME_SC_INVALID_FIELD, "{\"namespace\": 1}", -EIO,
                  "Invalid Field in Command (NVMe status 0x002)" },
                { "ns-ctrls 1", SVFF_NVME_SC_INVALID_NS, "{\"namespace\": 1}", -ENOENT,
                  "Invalid Namespace or Format (NVMe status 0x00b)" },
                { "identify-secondary", SVFF_NVME_SC_INTERNAL, NULL, -EIO,
                  "Reading the secondary controller list (Identify CNS 15h) on nvme0 (PF " PF ") failed: "
                  "Internal Error (NVMe status 0x006)" },
                { "ns-list", SVFF_NVME_SC_INVALID_OPCODE, "{\"namespace\": 1}", -EOPNOTSUPP,
                  "Invalid Command Opcode (NVMe status 0x001)" },
                { "virt-mgmt online c1", 0x1ff, NULL, -EIO, "NVMe status 0x1ff" },
                { "virt-mgmt online c1", -EIO, NULL, -EIO, "Input/output error" },
        };

        open_ok();
        numvfs(1);
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct svff_error err = SVFF_ERROR_NULL;

                nvme_standin_fail(&st, cases[i].cmd, cases[i].status, 1);
                provision(0, cases[i].settings, cases[i].want, &err);
                ck_assert_msg(strstr(svff_error_message(&err), cases[i].name), "case %zu: '%s' lacks '%s'", i,
                              svff_error_message(&err), cases[i].name);
                svff_error_free(&err);
                /* and the next run gets there */
                json_object_put(provision_ok(0, cases[i].settings));
                assert_secondary(1, true, 2, 1);
                nvme_standin_set_numvfs(&st, 0);
                numvfs(1);
                for (size_t n = 0; n < st.n_ns; n++)
                        st.ns[n].n_ctrls = 0;
                clear_log();
        }

        /* the ones release meets */
        struct {
                const char *cmd;
                int status;
                int want;
                const char *name;
        } rel[] = {
                { "ns-detach 1 c1", SVFF_NVME_SC_INTERNAL, -EIO, "Detaching namespace 1 from VF 0's secondary" },
                { "virt-mgmt offline c1", SVFF_NVME_SC_INVALID_CTRL_ID, -ENODEV, "Invalid Controller Identifier" },
        };
        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                _cleanup_(json_object_putp) struct json_object *state = provision_ok(0, "{\"namespace\": 1}");
                struct svff_error err = SVFF_ERROR_NULL;

                nvme_standin_fail(&st, rel[i].cmd, rel[i].status, 1);
                ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), rel[i].want);
                ck_assert_msg(strstr(svff_error_message(&err), rel[i].name), "release case %zu: '%s' lacks '%s'", i,
                              svff_error_message(&err), rel[i].name);
                svff_error_free(&err);
                ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), 0);
                assert_secondary(1, false, 0, 0);
                ck_assert(!nvme_standin_attached(&st, 1, 1));
                ck_assert(!nvme_standin_attached(&st, 1, 0));
                clear_log();
        }

        /* every status in the table has its own name; others have none */
        static const int named[] = {
                SVFF_NVME_SC_INVALID_OPCODE,      SVFF_NVME_SC_INVALID_FIELD,        SVFF_NVME_SC_INTERNAL,
                SVFF_NVME_SC_INVALID_NS,          SVFF_NVME_SC_NS_WRITE_PROTECTED,   SVFF_NVME_SC_FORMAT_IN_PROGRESS,
                SVFF_NVME_SC_INVALID_FORMAT,      SVFF_NVME_SC_NS_ALREADY_ATTACHED,  SVFF_NVME_SC_NS_IS_PRIVATE,
                SVFF_NVME_SC_NS_NOT_ATTACHED,     SVFF_NVME_SC_CTRL_LIST_INVALID,    SVFF_NVME_SC_INVALID_CTRL_ID,
                SVFF_NVME_SC_INVALID_SEC_CTRL_STATE, SVFF_NVME_SC_INVALID_NUM_RESOURCES,
                SVFF_NVME_SC_INVALID_RESOURCE_ID, SVFF_NVME_SC_NS_ATTACHMENT_LIMIT,
        };
        for (size_t i = 0; i < ELEMENTSOF(named); i++) {
                ck_assert_ptr_nonnull(svff_nvme_status_name(named[i]));
                for (size_t j = 0; j < i; j++)
                        ck_assert_str_ne(svff_nvme_status_name(named[i]), svff_nvme_status_name(named[j]));
        }
        ck_assert_str_eq(svff_nvme_status_name(0x121), "Invalid Number of Controller Resources");
        ck_assert_ptr_null(svff_nvme_status_name(0));
        ck_assert_ptr_null(svff_nvme_status_name(0x1ff));
}
END_TEST

/* An interruption at every class step, as a crash or stop between two
 * steps leaves it (the steps before it done, the rest not), then the
 * step repeated as recovery from the journal repeats it: the same end
 * state as an uninterrupted run. */
START_TEST(test_partial_failure) {
        static const char *const steps[] = {
                "virt-mgmt offline c1",
                "virt-mgmt assign c1 vi",
                "virt-mgmt assign c1 vq",
                "virt-mgmt online c1",
                "ns-attach 3 c1",
        };
        _cleanup_(json_object_putp) struct json_object *clean = NULL;

        st.caps.vqfrsm = 4;
        open_ok();
        numvfs(1);
        /* start online with other resources, so that offline is a step */
        clean = provision_ok(0, "{\"vq\": 4}");
        json_object_put(clean);
        clean = provision_ok(0, "{\"vq\": 2, \"namespace\": 3}");
        clear_log();

        for (size_t i = 0; i < ELEMENTSOF(steps); i++) {
                _cleanup_(json_object_putp) struct json_object *state = NULL;
                struct svff_error err = SVFF_ERROR_NULL;
                _cleanup_free_ char *log = NULL;

                json_object_put(provision_ok(0, "{\"vq\": 4}"));
                st.ns[2].n_ctrls = 0;
                clear_log();
                nvme_standin_fail(&st, steps[i], -EINTR, 1);
                provision(0, "{\"vq\": 2, \"namespace\": 3}", -EINTR, &err);
                svff_error_free(&err);
                log = nvme_standin_take_log(&st, false);
                /* the steps before i ran, step i was tried, none after */
                for (size_t j = 0; j < ELEMENTSOF(steps); j++)
                        ck_assert_msg(!!strstr(log, steps[j]) == (j <= i), "step %zu: log '%s'", i, log);

                state = provision_ok(0, "{\"vq\": 2, \"namespace\": 3}");
                ck_assert_msg(json_object_equal(state, clean), "after step %zu: %s", i,
                              json_object_to_json_string(state));
                assert_secondary(1, true, 2, 1);
                ck_assert(nvme_standin_attached(&st, 3, 1));
                ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), 0);
        }

        /* release, interrupted at each of its steps and repeated */
        static const char *const rel[] = { "ns-detach 3 c1", "virt-mgmt offline c1" };
        for (size_t i = 0; i < ELEMENTSOF(rel); i++) {
                _cleanup_(json_object_putp) struct json_object *state = provision_ok(0, "{\"namespace\": 3}");
                struct svff_error err = SVFF_ERROR_NULL;

                clear_log();
                nvme_standin_fail(&st, rel[i], -EINTR, 1);
                ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), -EINTR);
                svff_error_free(&err);
                ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), 0);
                assert_secondary(1, false, 0, 0);
                ck_assert(!nvme_standin_attached(&st, 3, 1));
                ck_assert(!nvme_standin_attached(&st, 3, 0));
        }
}
END_TEST

/* ---- release --------------------------------------------------------------- */

START_TEST(test_release) {
        _cleanup_(json_object_putp) struct json_object *state = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(2);
        state = provision_ok(0, "{\"namespace\": 1}");
        clear_log();
        ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), 0);
        /* only what svff attached, then offline */
        assert_log("ns-detach 1 c1; virt-mgmt offline c1");
        assert_secondary(1, false, 0, 0);
        ck_assert(!nvme_standin_attached(&st, 1, 1));
        ck_assert_uint_eq(nvme_standin_ns(&st, 1)->formats, 0);
        /* again: nothing left to do, nothing refused */
        ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), 0);
        assert_log("ns-detach 1 c1");

        /* a VF that is gone (numvfs lowered): nothing to take offline */
        json_object_put(TAKE_PTR(state));
        state = provision_ok(1, "{\"namespace\": 4}");
        numvfs(1);
        clear_log();
        ck_assert_int_eq(nvme->release(c, &pf, 1, state, &err), 0);
        assert_log("ns-detach 4 c2");

        /* a state svff did not write */
        json_object_put(TAKE_PTR(state));
        state = json("{\"namespaces\": \"1\"}");
        ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), -EINVAL);
        assert_err(&err, "not one svff wrote");
        svff_error_free(&err);
        ck_assert_int_eq(nvme->release(c, &pf, 0, NULL, &err), -EINVAL);
        svff_error_free(&err);
}
END_TEST

/* A VF holds exactly the namespace its settings name: provision detaches
 * what an earlier tenant (or a hand) left on its secondary, and verify
 * calls a namespace nobody recorded drift. Read from the stand-in. */
START_TEST(test_exactly_its_namespace) {
        _cleanup_(json_object_putp) struct json_object *state = NULL, *none = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(2);
        json_object_put(provision_ok(1, "{\"namespace\": 2}"));
        ck_assert_uint_eq(nvme_standin_ns(&st, 2)->n_ctrls, 1);

        /* the next tenant asks for namespace 3: 2 does not stay beside it */
        state = provision_ok(1, "{\"namespace\": 3}");
        ck_assert_uint_eq(nvme_standin_ns(&st, 2)->n_ctrls, 0);
        ck_assert_uint_eq(nvme_standin_ns(&st, 3)->n_ctrls, 1);
        ck_assert_int_eq(nvme->verify(c, &pf, 1, state, &err), 0);

        /* and one asking for none gets none */
        none = provision_ok(1, "{}");
        ck_assert_uint_eq(nvme_standin_ns(&st, 3)->n_ctrls, 0);

        /* namespace 4 attached to the VF behind svff's back */
        ck_assert_int_eq(nvme_standin_ops.ns_attach(&st, 4, 2, true), 0);
        ck_assert_int_eq(nvme->verify(c, &pf, 1, none, &err), -EUCLEAN);
        assert_err(&err, "namespace 4 is attached to its secondary controller 2 but not recorded for it");
        svff_error_free(&err);
}
END_TEST

START_TEST(test_verify_drift) {
        _cleanup_(json_object_putp) struct json_object *state = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(1);
        state = provision_ok(0, "{\"namespace\": 1}");
        ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), 0);

        /* a namespace detached behind svff's back */
        nvme_standin_ns(&st, 1)->n_ctrls = 0;
        ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), -EUCLEAN);
        assert_err(&err, "namespace 1 is no longer attached to its secondary controller 1");
        svff_error_free(&err);

        /* a secondary taken offline (nvme virt-mgmt -a 7 by hand) */
        json_object_put(provision_ok(0, "{\"namespace\": 1}"));
        ck_assert_int_eq(nvme_standin_ops.virt_mgmt(&st, SVFF_NVME_VIRT_OFFLINE, 0, 1, 0), 0);
        ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), -EUCLEAN);
        assert_err(&err, "secondary controller 1 is offline with 0 VQ and 0 VI, recorded online with 2 VQ and 1 VI");
        svff_error_free(&err);

        /* and what verify reads never changes anything */
        clear_log();
        ck_assert_int_eq(nvme->verify(c, &pf, 0, state, &err), -EUCLEAN);
        svff_error_free(&err);
        assert_log("");
}
END_TEST

/* A reprovision of a VF for the tenant it had (a reconf's) is given its
 * recorded state, and must bring back what the guest's multipath head
 * re-joins by; a device that changed is refused at verify, naming what
 * changed. For anyone else, the device as it is counts. */
static struct json_object *reprovision(unsigned index, struct json_object *recorded, bool tenant, int want_r,
                                       struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *j = json("{\"namespace\": 1}");
        struct svff_class_settings *s = NULL;
        struct json_object *state = NULL;
        int r;

        ck_assert_int_eq(nvme->load(c, index, j, &s, err), 0);
        r = nvme->provision(c, &pf, index, s, recorded, tenant, &state, err);
        nvme->unload(s);
        if (r >= 0)
                r = nvme->verify(c, &pf, index, state, err);
        ck_assert_msg(r == want_r, "reprovision VF %u: %d (%s), want %d", index, r, svff_error_message(err),
                      want_r);
        if (r < 0) {
                json_object_put(state);
                state = NULL;
        }
        return state;
}

START_TEST(test_identity_kept) {
        _cleanup_(json_object_putp) struct json_object *rec = NULL, *again = NULL, *other = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        st.ns[0].ids = (struct svff_nvme_ns_ids) { .nguid = { 0xde, 0xad, [15] = 0x01 }, .eui64 = { 0x52, [7] = 0x07 } };
        open_ok();
        numvfs(1);
        rec = provision_ok(0, "{\"namespace\": 1}");
        assert_json_eq(json_object_object_get(rec, "ids"),
                       "{\"1\": {\"nguid\": \"dead0000000000000000000000000001\", \"eui64\": \"5200000000000007\"}}");
        /* the identifiers come from CNS 11h on the primary, which the
         * VF's namespace is not attached to */
        ck_assert(!nvme_standin_attached(&st, 1, 0));

        /* a reconf: the VF comes back offline, and gets it all again */
        numvfs(0);
        numvfs(1);
        again = reprovision(0, rec, true, 0, &err);
        ck_assert(json_object_equal(again, rec));

        /* the subsystem renamed (another firmware, say) */
        numvfs(0);
        numvfs(1);
        snprintf(st.subnqn, sizeof(st.subnqn), "nqn.2019-08.org.qemu:other");
        nvme->close(c);
        open_ok();
        ck_assert_ptr_null(reprovision(0, rec, true, -EUCLEAN, &err));
        /* refused before anything was sent: the secondary stays
         * offline with nothing assigned */
        assert_log("");
        assert_secondary(1, false, 0, 0);
        assert_err(&err, "VF 0 of PF " PF ": the controller nvme0's subsystem NQN is now "
                   "'nqn.2019-08.org.qemu:other', recorded 'nqn.2019-08.org.qemu:svffnvme0': a guest's NVMe "
                   "multipath head takes a controller back only with the same subsystem NQN, NSID and namespace "
                   "identifiers");
        assert_err(&err, "Detach the VF and attach it again");
        svff_error_free(&err);
        /* and status's drift check says so too */
        ck_assert_int_eq(nvme->verify(c, &pf, 0, rec, &err), -EUCLEAN);
        assert_err(&err, "subsystem NQN is now");
        svff_error_free(&err);
        snprintf(st.subnqn, sizeof(st.subnqn), "nqn.2019-08.org.qemu:svffnvme0");
        nvme->close(c);
        open_ok();

        /* the namespace recreated under the same NSID */
        st.ns[0].ids.nguid[0] = 0xbe;
        ck_assert_ptr_null(reprovision(0, rec, true, -EUCLEAN, &err));
        assert_err(&err, "namespace 1's NGUID is now bead0000000000000000000000000001, recorded "
                   "dead0000000000000000000000000001");
        svff_error_free(&err);
        st.ns[0].ids.nguid[0] = 0xde;
        st.ns[0].ids.eui64[7] = 0x08;
        ck_assert_ptr_null(reprovision(0, rec, true, -EUCLEAN, &err));
        assert_err(&err, "namespace 1's EUI64 is now 5200000000000008, recorded 5200000000000007");
        svff_error_free(&err);

        /* ... which a VF for anyone else (a hand-over, a VF of no
         * domain) takes as it is */
        other = reprovision(0, rec, false, 0, &err);
        assert_json_eq(json_object_object_get(other, "ids"),
                       "{\"1\": {\"nguid\": \"dead0000000000000000000000000001\", \"eui64\": \"5200000000000008\"}}");
}
END_TEST

START_TEST(test_identity_scid) {
        _cleanup_(json_object_putp) struct json_object *rec = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(1);
        rec = provision_ok(0, "{\"namespace\": 1}");
        /* the device now numbers VF 0's secondary 9 */
        numvfs(0);
        st.sec[0].scid = 9;
        numvfs(1);
        ck_assert_ptr_null(reprovision(0, rec, true, -EUCLEAN, &err));
        assert_err(&err, "VF 0 of PF " PF ": its secondary controller on nvme0 is now 9, recorded 1: a guest's NVMe "
                   "multipath head");
        svff_error_free(&err);
}
END_TEST

/* A subsystem NQN is device text: what is not printable is escaped
 * before it is stored or printed. */
START_TEST(test_identity_nqn_text) {
        _cleanup_(json_object_putp) struct json_object *rec = NULL;

        memcpy(st.subnqn, "nqn.x\033[2J\xff", 11);
        open_ok();
        numvfs(1);
        rec = provision_ok(0, NULL);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(rec, "subnqn")), "nqn.x\\x1b[2J\\xff");
}
END_TEST

START_TEST(test_inspect) {
        _cleanup_(json_object_putp) struct json_object *o = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(2);
        json_object_put(provision_ok(0, "{\"namespace\": 2}"));
        clear_log();
        ck_assert_int_eq(nvme->inspect(c, &pf, &o, &err), 0);
        assert_log("");
        assert_json_eq(json_object_object_get(o, "pf"),
                       "{\"controller\": \"nvme0\", \"cntlid\": 0, \"oacs\": 266, \"virtualization\": \"cns-14h\","
                       " \"vq\": {\"total\": 8, \"primary\": 0, \"assigned\": 2, \"free\": 6, \"per_vf_max\": 2,"
                       " \"primary_private\": 5},"
                       " \"vi\": {\"total\": 4, \"primary\": 0, \"assigned\": 1, \"free\": 3, \"per_vf_max\": 1,"
                       " \"primary_private\": 4},"
                       " \"secondaries\": 4, \"namespaces\": [1, 2, 3, 4]}");
        /* the VFs that exist, by index */
        assert_json_eq(json_object_object_get(o, "vfs"),
                       "{\"0\": {\"scid\": 1, \"secondary\": \"online\", \"vq\": 2, \"vi\": 1, \"namespaces\": [2]},"
                       " \"1\": {\"scid\": 2, \"secondary\": \"offline\", \"vq\": 0, \"vi\": 0, \"namespaces\": []}}");
}
END_TEST

/* ---- plan ------------------------------------------------------------------ */

/* plan n VFs with settings (JSON text: an array by VF index, or NULL)
 * loaded as the daemon loads them, expecting r (a refusal of the load
 * included) */
static int plan(unsigned n, const char *settings, struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *j = settings ? json(settings) : NULL;
        struct svff_class_settings **s = NULL;
        int r = svff_class_load_all(nvme, c, j, n, &s, err);

        if (r >= 0)
                r = nvme->plan(c, &pf, n, s, ret, err);
        svff_class_unload_all(nvme, s, n);
        /* a plan never changes anything */
        assert_log("");
        return r;
}

START_TEST(test_plan) {
        _cleanup_(json_object_putp) struct json_object *p = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *steps;

        open_ok();
        ck_assert_int_eq(plan(4, "[{\"namespace\": [1, 2, 3, 4]}, {\"namespace\": [1, 2, 3, 4]},"
                                 " {\"namespace\": [1, 2, 3, 4]}, {\"namespace\": [1, 2, 3, 4]}]",
                             &p, &err),
                         0);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(p, "needs")),
                         "4 VFs need 8 VQ and 4 VI flexible resources");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(p, "has")), "8 VQ and 4 VI free");
        steps = json_object_object_get(p, "steps");
        ck_assert_uint_eq(json_object_array_length(steps), 12);
        assert_json_eq(json_object_array_get_idx(steps, 0),
                       "{\"vf\": 0, \"action\": \"assign\", \"detail\": \"secondary controller of VFN 1: 1 VI, 2 VQ\"}");
        assert_json_eq(json_object_array_get_idx(steps, 11),
                       "{\"vf\": 3, \"action\": \"attach-namespace\", \"detail\": \"attach namespace 4\"}");
        ck_assert_uint_eq(json_object_array_length(json_object_object_get(p, "warnings")), 0);
        json_object_put(TAKE_PTR(p));

        /* NULL settings: the defaults for every VF */
        ck_assert_int_eq(plan(2, NULL, &p, &err), 0);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(p, "needs")),
                         "2 VFs need 4 VQ and 2 VI flexible resources");
        json_object_put(TAKE_PTR(p));
        ck_assert(!svff_error_is_set(&err));
}
END_TEST

START_TEST(test_plan_refusals) {
        _cleanup_(json_object_putp) struct json_object *p = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        /* 8 VFs at 2 VQ/1 VI each from a pool of 8 VQ and 8 VI */
        st.n_sec = 8;
        for (size_t i = 0; i < st.n_sec; i++)
                st.sec[i] = (struct svff_nvme_secondary) { .scid = i + 1, .vfn = i + 1 };
        st.caps.vifrt = 8;
        open_ok();
        ck_assert_int_eq(plan(8, NULL, &p, &err), -ENOSPC);
        assert_err(&err, "8 VFs need 16 VQ and 8 VI flexible resources; the primary controller nvme0 of PF " PF
                         " has 8 VQ free: ask for fewer VFs");
        ck_assert_ptr_null(p);
        svff_error_free(&err);
        ck_assert_int_eq(plan(4, NULL, &p, &err), 0);
        json_object_put(TAKE_PTR(p));

        /* more VFs than secondaries */
        ck_assert_int_eq(plan(9, NULL, &p, &err), -ERANGE);
        assert_err(&err, "8 secondary controllers");
        svff_error_free(&err);

        /* above the per-VF maximum */
        ck_assert_int_eq(plan(2, "[{\"vi\": 2}, null]", &p, &err), -EINVAL);
        assert_err(&err, "VF 0 of PF " PF " asks for 2 VQ and 2 VI flexible resources; the controller nvme0 gives "
                         "one secondary at most 2 VQ and 1 VI");
        svff_error_free(&err);

        /* below what online needs */
        ck_assert_int_eq(plan(1, "[{\"vi\": 0}]", &p, &err), -EINVAL);
        assert_err(&err, "needs 1 at least");
        svff_error_free(&err);

        /* unknown namespace; one given to two VFs; one another VF has */
        ck_assert_int_eq(plan(2, "[{\"namespace\": [1, 7]}, {\"namespace\": [1, 7]}]", &p, &err), -EINVAL);
        assert_err(&err, "VF 1 of PF " PF ": namespace 7 does not exist");
        svff_error_free(&err);
        ck_assert_int_eq(plan(2, "[{\"namespace\": [1, 1]}, {\"namespace\": [1, 1]}]", &p, &err), -EINVAL);
        assert_err(&err, "gives namespace 1 to VF 0 and VF 1");
        svff_error_free(&err);
        numvfs(2);
        json_object_put(provision_ok(1, "{\"namespace\": 3}"));
        clear_log();
        ck_assert_int_eq(plan(2, "[{\"namespace\": 3}, null]", &p, &err), -EBUSY);
        assert_err(&err, "namespace 3 is already attached to controller 2, the secondary of VF 1");
        svff_error_free(&err);
        /* ... but VF 1 keeping its own is no conflict */
        ck_assert_int_eq(plan(2, "[null, {\"namespace\": 3}]", &p, &err), 0);
        json_object_put(TAKE_PTR(p));

        /* settings that are not per-VF */
        ck_assert_int_eq(plan(1, "{\"vq\": 2}", &p, &err), -EINVAL);
        svff_error_free(&err);
}
END_TEST

/* What plan and provision get is loaded once per VF: the VF's own
 * value, and no JSON left. On a device as for a check, the keys the
 * daemon once added for a reprovision ("state", "tenant") are no
 * setting: recorded and tenant are provision's arguments now. */
START_TEST(test_load) {
        _cleanup_(json_object_putp) struct json_object *p = NULL, *list = json("{\"namespace\": [1, 2]}"),
                                                       *state = json("{\"namespace\": 1, \"state\": {}}"),
                                                       *tenant = json("{\"tenant\": true}");
        struct svff_class_settings *s = NULL, *loaded[2] = { NULL, NULL };
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *steps;

        open_ok();
        numvfs(2);
        ck_assert_int_eq(nvme->load(c, 0, state, &s, &err), -EINVAL);
        assert_err(&err, "Unknown NVMe setting 'state'");
        svff_error_free(&err);
        ck_assert_ptr_null(s);
        ck_assert_int_eq(nvme->load(c, 0, tenant, &s, &err), -EINVAL);
        assert_err(&err, "Unknown NVMe setting 'tenant'");
        svff_error_free(&err);
        ck_assert_ptr_null(s);
        /* a load reads nothing from the device */
        assert_log("");

        /* VF 1 of a list by VF index gets its own entry */
        ck_assert_int_eq(nvme->load(c, 0, NULL, &loaded[0], &err), 0);
        ck_assert_int_eq(nvme->load(c, 1, list, &loaded[1], &err), 0);
        ck_assert_int_eq(nvme->plan(c, &pf, 2, loaded, &p, &err), 0);
        steps = json_object_object_get(p, "steps");
        ck_assert_uint_eq(json_object_array_length(steps), 5);
        assert_json_eq(json_object_array_get_idx(steps, 4),
                       "{\"vf\": 1, \"action\": \"attach-namespace\", \"detail\": \"attach namespace 2\"}");
        nvme->unload(loaded[0]);
        nvme->unload(loaded[1]);
        ck_assert(!svff_error_is_set(&err));
}
END_TEST

START_TEST(test_primary_flexible) {
        _cleanup_(json_object_putp) struct json_object *p = NULL;
        struct svff_class_settings **s = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *steps, *last;

        /* the primary holds half the VQ pool */
        st.caps.vqrfap = st.next_vqrfap = 4;
        open_ok();
        ck_assert_int_eq(plan(4, NULL, &p, &err), -ENOSPC);
        assert_err(&err, "4 VFs need 8 VQ and 4 VI flexible resources; the primary controller nvme0 of PF " PF
                         " has 4 VQ free");
        assert_err(&err, "'primary_flexible': true; resets the PF's controller");
        svff_error_free(&err);

        /* allowed: the plan says what it costs the host */
        ck_assert_int_eq(plan(4, "[{\"primary_flexible\": true}, null, null, null]", &p, &err), 0);
        steps = json_object_object_get(p, "steps");
        last = json_object_array_get_idx(steps, json_object_array_length(steps) - 1);
        ck_assert(json_object_get_type(json_object_object_get(last, "vf")) == json_type_null);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(last, "action")), "primary-flexible");
        ck_assert(json_object_get_boolean(json_object_object_get(last, "disruptive")));
        ck_assert(strstr(json_object_get_string(json_object_object_get(last, "detail")),
                         "shrink the primary controller's flexible share to 0 VQ and 0 VI, then reset nvme0"));

        /* prepare does it, before numvfs */
        s = load_all(4, "[{\"primary_flexible\": true}, null, null, null]");
        ck_assert_int_eq(nvme->prepare(c, &pf, 4, s, &err), 0);
        assert_log("virt-mgmt primary vq 0; reset");
        ck_assert_uint_eq(st.caps.vqrfap, 0);
        /* and again: nothing left to do */
        ck_assert_int_eq(nvme->prepare(c, &pf, 4, s, &err), 0);
        assert_log("");
        svff_class_unload_all(nvme, s, 4);
        json_object_put(TAKE_PTR(p));
        ck_assert_int_eq(plan(4, NULL, &p, &err), 0);
        numvfs(4);
        for (unsigned i = 0; i < 4; i++)
                json_object_put(provision_ok(i, NULL));
        assert_secondary(4, true, 2, 1);
}
END_TEST

/* A namespace the host's own (primary) controller has attached is the
 * host's disk: refused for a guest, before anything is touched. */
START_TEST(test_host_namespace_refused) {
        _cleanup_(json_object_putp) struct json_object *p = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct standin_ns *ns2 = nvme_standin_ns(&st, 2);

        ns2->ctrls[ns2->n_ctrls++] = 0;
        open_ok();
        numvfs(2);
        ck_assert_int_eq(plan(2, "[{\"namespace\": 2}, null]", &p, &err), -EBUSY);
        assert_err(&err, "VF 0 of PF " PF ": namespace 2 is attached to the host's own controller nvme0 (controller "
                         "0, the PF's primary)");
        svff_error_free(&err);
        ck_assert_ptr_null(p);
        provision(1, "{\"namespace\": 2, \"scrub_on_release\": \"format\"}", -EBUSY, &err);
        assert_err(&err, "VF 1 of PF " PF ": namespace 2 is attached to the host's own controller nvme0");
        assert_err(&err, "'nvme detach-ns /dev/nvme0 -n 2 -c 0'");
        svff_error_free(&err);
        assert_log("");
        assert_secondary(2, false, 0, 0);
        ck_assert(!nvme_standin_attached(&st, 2, 2));
        ck_assert(nvme_standin_attached(&st, 2, 0));
        ck_assert_uint_eq(ns2->formats, 0);

        /* a namespace no controller has is no one's */
        json_object_put(provision_ok(1, "{\"namespace\": 3}"));
        ck_assert(nvme_standin_attached(&st, 3, 2));
}
END_TEST

/* scrub_on_release "format": Format NVM runs on a controller the
 * namespace is attached to; svff reaches none but the host's, and never
 * hands the host a guest's namespace for it. */
START_TEST(test_scrub_refused) {
        _cleanup_(json_object_putp) struct json_object *p = NULL, *state = NULL, *old = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        open_ok();
        numvfs(2);
        /* a state an earlier svff recorded, to format through the host:
         * the namespace leaves the VF, is never attached to the host's
         * controller, is not formatted, and release says so */
        json_object_put(provision_ok(0, "{\"namespace\": 1}"));
        old = json("{\"scid\": 1, \"secondary\": \"online\", \"vq\": 2, \"vi\": 1, \"namespaces\": [1],"
                   " \"scrub_on_release\": \"format\", \"private\": [1]}");
        clear_log();
        ck_assert_int_eq(nvme->release(c, &pf, 0, old, &err), -EOPNOTSUPP);
        assert_err(&err, "VF 0 of PF " PF ": namespace 1 was not formatted (scrub_on_release)");
        assert_err(&err, "It is detached from the VF and still holds the guest's data");
        svff_error_free(&err);
        assert_log("ns-detach 1 c1; virt-mgmt offline c1");
        ck_assert(!nvme_standin_attached(&st, 1, 0));
        ck_assert(!nvme_standin_attached(&st, 1, 1));
        ck_assert_uint_eq(nvme_standin_ns(&st, 1)->formats, 0);
        assert_secondary(1, false, 0, 0);

        /* refused by the plan and by provision, before anything */
        ck_assert_int_eq(plan(2, "[{\"namespace\": 1, \"scrub_on_release\": \"format\"}, null]", &p, &err),
                         -EOPNOTSUPP);
        assert_err(&err, "VF 0 of PF " PF ": 'scrub_on_release' \"format\" cannot be kept for namespace 1");
        assert_err(&err, "svff does not attach a guest's namespace to the host's controller nvme0");
        assert_err(&err, "set 'scrub_on_release' to \"none\"");
        svff_error_free(&err);
        ck_assert_ptr_null(p);
        provision(0, "{\"namespace\": 1, \"scrub_on_release\": \"format\"}", -EOPNOTSUPP, &err);
        assert_err(&err, "the VF's own secondary controller 1");
        svff_error_free(&err);
        assert_log("");
        assert_secondary(1, false, 0, 0);
        ck_assert(!nvme_standin_attached(&st, 1, 1));

        /* no namespace: nothing to format */
        state = provision_ok(0, "{\"scrub_on_release\": \"format\"}");
        clear_log();
        ck_assert_int_eq(nvme->release(c, &pf, 0, state, &err), 0);
        assert_log("virt-mgmt offline c1");
        assert_secondary(1, false, 0, 0);
}
END_TEST

START_TEST(test_check_and_describe) {
        static const struct {
                const char *settings;
                const char *needle;     /* NULL: accepted */
        } cases[] = {
                { "{}", NULL },
                { "{\"vq\": 2, \"vi\": 1, \"namespace\": 1, \"primary_flexible\": false, \"scrub_on_release\": \"none\"}", NULL },
                { "{\"namespace\": [1, null, 3]}", NULL },
                { "{\"vq\": null}", NULL },
                { "{\"vq\": \"2\"}", "'vq' must be a number" },
                { "{\"vq\": 70000}", "takes at most 65535" },
                { "{\"namespace\": 0}", "an NSID is 1 to 4294967294" },
                { "{\"namespace\": [1, \"2\"]}", "takes an NSID, a list of them or null" },
                { "{\"namespace\": [2, 2]}", "gives namespace 2 to VF 0 and VF 1" },
                { "{\"primary_flexible\": \"yes\"}", "'primary_flexible' must be true or false" },
                { "{\"scrub_on_release\": \"shred\"}", "takes \"none\" or \"format\"" },
                { "{\"mac\": \"02:00:00:00:00:01\"}", "Unknown NVMe setting 'mac'" },
                /* once svffd's keys for a reprovision, now provision's
                 * own arguments: nobody's settings */
                { "{\"state\": {}}", "Unknown NVMe setting 'state'" },
                { "{\"tenant\": true}", "Unknown NVMe setting 'tenant'" },
        };
        _cleanup_(json_object_putp) struct json_object *off = json("{\"scid\": 2, \"secondary\": \"offline\", \"vq\": 0, \"vi\": 0, \"namespaces\": []}");
        _cleanup_(json_object_putp) struct json_object *two = json("{\"secondary\": \"online\", \"vq\": 2, \"vi\": 1, \"namespaces\": [1, 5]}");
        _cleanup_free_ char *d1 = NULL, *d2 = NULL, *d3 = NULL;

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(json_object_putp) struct json_object *s = json(cases[i].settings);
                struct svff_error err = SVFF_ERROR_NULL;
                int r = svff_class_check(nvme, s, &err);

                if (!cases[i].needle) {
                        ck_assert_msg(r == 0, "%s: %s", cases[i].settings, svff_error_message(&err));
                        continue;
                }
                ck_assert_int_eq(r, -EINVAL);
                ck_assert_msg(strstr(svff_error_message(&err), cases[i].needle), "%s: '%s' lacks '%s'",
                              cases[i].settings, svff_error_message(&err), cases[i].needle);
                svff_error_free(&err);
        }

        d1 = nvme->describe(off);
        ck_assert_str_eq(d1, "offline 0VQ/0VI");
        d2 = nvme->describe(two);
        ck_assert_str_eq(d2, "online 2VQ/1VI ns 1,5");
        d3 = nvme->describe(NULL);
        ck_assert_str_eq(d3, "-");
        free(d1);
        free(d2);
        free(d3);
        d1 = nvme->summarize(off);
        ck_assert_str_eq(d1, "offline");
        d2 = nvme->summarize(two);
        ck_assert_str_eq(d2, "online ns 1,5");
        d3 = nvme->summarize(NULL);
        ck_assert_str_eq(d3, "-");
}
END_TEST

static Suite *class_nvme_suite(void) {
        Suite *s = suite_create("class-nvme");
        TCase *tc = tcase_create("standin");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_standin_is_qemu);
        tcase_add_test(tc, test_open_qemu);
        tcase_add_test(tc, test_open_not_live_yet);
        tcase_add_test(tc, test_match_only_a_reachable_controller);
        tcase_add_test(tc, test_open_refusals);
        tcase_add_test(tc, test_open_renumbered);
        tcase_add_test(tc, test_open_wrong_node);
        tcase_add_test(tc, test_renumbered_while_open);
        tcase_add_test(tc, test_libnvme_devnum);
        tcase_add_test(tc, test_provision_order);
        tcase_add_test(tc, test_provision_reassign);
        tcase_add_test(tc, test_provision_refusals);
        tcase_add_test(tc, test_no_ns_mgmt);
        tcase_add_test(tc, test_online_refused);
        tcase_add_test(tc, test_statuses);
        tcase_add_test(tc, test_partial_failure);
        tcase_add_test(tc, test_release);
        tcase_add_test(tc, test_host_namespace_refused);
        tcase_add_test(tc, test_scrub_refused);
        tcase_add_test(tc, test_exactly_its_namespace);
        tcase_add_test(tc, test_verify_drift);
        tcase_add_test(tc, test_identity_kept);
        tcase_add_test(tc, test_identity_scid);
        tcase_add_test(tc, test_identity_nqn_text);
        tcase_add_test(tc, test_inspect);
        tcase_add_test(tc, test_plan);
        tcase_add_test(tc, test_plan_refusals);
        tcase_add_test(tc, test_load);
        tcase_add_test(tc, test_primary_flexible);
        tcase_add_test(tc, test_check_and_describe);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(class_nvme_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The core against pcisim: real FUSE-backed sysfs semantics (EBUSY on
 * N -> M, blocking disables, partial creation, hot removal). */

#include <check.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <time.h>

#include "bind.h"
#include "device.h"
#include "iommu.h"
#include "pcisim-util.h"
#include "sriov.h"
#include "sysfs.h"
#include "cause.h"

#define QDMA_PF "0000:01:00.0"
#define NIC_PF "0000:03:00.0"
#define HOST_BRIDGE "0000:00:00.0"

static struct pcisim *sim;
static struct svff_ctx *ctx;
static int rootfd;
static char *debug_log;         /* the library's messages, one a line */

static void log_collect(void *userdata, int priority, const char *file, int line, const char *fn,
                        const char *format, va_list args) {
        _cleanup_free_ char *msg = NULL;
        char *joined = NULL;

        (void) userdata;
        (void) priority;
        (void) file;
        (void) line;
        (void) fn;
        if (vasprintf(&msg, format, args) < 0 ||
            asprintf(&joined, "%s%s\n", debug_log ? debug_log : "", msg) < 0)
                return;
        free(debug_log);
        debug_log = joined;
}

static void start(const char *scenario) {
        int r = pcisim_start(scenario, &sim);

        ck_assert_msg(r >= 0, "pcisim_start(%s): %s", scenario, strerror(-r));
        ck_assert_int_eq(svff_ctx_new(pcisim_root(sim), &ctx), 0);
        svff_ctx_set_log_fn(ctx, log_collect, NULL);
        svff_ctx_set_log_priority(ctx, LOG_DEBUG);
        rootfd = svff_ctx_get_rootfd(ctx);
}

static void stop(void) {
        ctx = svff_ctx_unref(ctx);
        pcisim_free(sim);
        sim = NULL;
        debug_log = mfree(debug_log);
}

static void setup_qdma(void) {
        start("qdma");
}

static void setup_mixed(void) {
        start("mixed");
}

static void assert_logged(const char *needle) {
        ck_assert_msg(debug_log && strstr(debug_log, needle), "no debug message with '%s' in:\n%s", needle,
                      debug_log ? debug_log : "(none)");
}

static char *read_attr(const char *dev, const char *name) {
        char *s = NULL;

        ck_assert_int_eq(svff_sysfs_readf(rootfd, &s, "bus/pci/devices/%s/%s", dev, name), 0);
        return s;
}

static void assert_attr(const char *dev, const char *name, const char *expect) {
        _cleanup_free_ char *s = read_attr(dev, name);

        ck_assert_msg(streq(s, expect), "%s/%s is '%s', expected '%s'", dev, name, s, expect);
}

static char *driver_of(const char *dev) {
        char *d = (char *) "unset";

        ck_assert_int_eq(svff_dev_get_driver(ctx, dev, &d), 0);
        return d;
}

static void assert_error(int r, const struct svff_error *err, int code, const char *needle) {
        ck_assert_msg(r == code, "returned %d (%s), expected %d; message: %s", r, strerror(-r), code,
                      svff_error_message(err));
        ck_assert_int_eq(err->code, code);
        ck_assert_msg(strstr(svff_error_message(err), needle), "message '%s' lacks '%s'",
                      svff_error_message(err), needle);
}

/* The kernel's errno reaches the operator with its cause (cause.h): the
 * numvfs write's ENOSPC names interrupt vectors, ENOMEM the max_vfs
 * module parameter, a bind's EIO the device; too many VFs shows the
 * limits sysfs and the SR-IOV capability expose. */
START_TEST(test_causes) {
        struct svff_error err = SVFF_ERROR_NULL;
        unsigned total = 0, cap = 0;

        ck_assert_int_eq(pcisim_ctl(sim, "fail " QDMA_PF " sriov_numvfs ENOSPC 1"), 0);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), &err, -ENOSPC, "MSI-X");
        svff_error_free(&err);
        ck_assert_int_eq(pcisim_ctl(sim, "fail " QDMA_PF " sriov_numvfs ENOMEM 1"), 0);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), &err, -ENOMEM, "max_vfs");
        svff_error_free(&err);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 253, 10 * USEC_PER_SEC, &err), &err, -ERANGE,
                     "SR-IOV capability's TotalVFs");
        svff_error_free(&err);

        ck_assert_int_eq(svff_pf_vf_limits(ctx, QDMA_PF, &total, &cap), 0);
        ck_assert_uint_eq(total, 252);
        ck_assert_uint_eq(cap, 252);

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 2, 10 * USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "fail 0000:01:00.4 driver_override EIO 1"), 0);
        assert_error(svff_dev_bind(ctx, "0000:01:00.4", "vfio-pci", NULL, &err), &err, -EIO,
                     "the device failed to respond");
        svff_error_free(&err);
        /* EBUSY on the count names the VF that sysfs shows held. */
        ck_assert_int_eq(svff_dev_bind(ctx, "0000:01:00.4", "vfio-pci", NULL, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "fail " QDMA_PF " sriov_numvfs EBUSY 1"), 0);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 3, 10 * USEC_PER_SEC, &err), &err, -EBUSY,
                     "held: VF 0000:01:00.4 on 'vfio-pci'");
        svff_error_free(&err);

        ck_assert_str_eq(svff_dev_kind(ctx, QDMA_PF), "PF");
        ck_assert_str_eq(svff_dev_kind(ctx, "0000:01:00.4"), "VF");
        ck_assert_str_eq(svff_dev_kind(ctx, HOST_BRIDGE), "host bridge");
        ck_assert_ptr_null(svff_cause(SVFF_CAUSE_NUMVFS, -EPERM));
        ck_assert_ptr_nonnull(svff_cause(SVFF_CAUSE_ATTACH, -ENODEV));
}
END_TEST

START_TEST(test_discovery) {
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        struct svff_pf **pfs = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n;

        ck_assert_int_eq(svff_pf_list(ctx, &pfs, &n, &err), 0);
        ck_assert_uint_eq(n, 1);
        ck_assert_str_eq(pfs[0]->address, QDMA_PF);
        ck_assert_uint_eq(pfs[0]->totalvfs, 252);
        ck_assert_uint_eq(pfs[0]->numvfs, 0);
        ck_assert_uint_eq(pfs[0]->offset, 4);
        ck_assert_uint_eq(pfs[0]->stride, 1);
        ck_assert_uint_eq(pfs[0]->vf_device_id, 0xa03f);
        ck_assert_str_eq(pfs[0]->driver, "qdma-pf");
        ck_assert_str_eq(pfs[0]->vendor_name, "Xilinx Corporation");
        ck_assert_int_eq(pfs[0]->numa_node, 0);
        ck_assert_int_ge(pfs[0]->iommu_group, 0);
        svff_pf_list_free(pfs, n);

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(svff_pf_load(ctx, QDMA_PF, &pf, &err), 0);
        ck_assert_uint_eq(pf->n_vfs, 4);
        ck_assert_uint_eq(pf->vf_missing, UINT_MAX);
        ck_assert_str_eq(pf->vfs[3].address, "0000:01:00.7");
        ck_assert_ptr_null(pf->vfs[3].driver);      /* autoprobe was turned off */
        ck_assert_ptr_null(pf->vfs[3].driver_override);
        ck_assert_int_ge(pf->vfs[3].iommu_group, 0);
        ck_assert(!pf->autoprobe);
}
END_TEST

/* pcisim's "vanish-read" removes a device in the instant before the named
 * attribute is read: gone between being listed and being read, with
 * certainty. Discovery leaves it out and says so at debug level. */
START_TEST(test_discovery_vf_vanishes) {
        struct svff_pf **pfs = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n = 0;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "vanish-read 0000:01:00.6 0000:01:00.6 driver_override"), 0);
        ck_assert_msg(svff_pf_list(ctx, &pfs, &n, &err) == 0, "discovery failed: %s", svff_error_message(&err));
        ck_assert(!svff_error_is_set(&err));
        ck_assert_uint_eq(n, 1);
        ck_assert_uint_eq(pfs[0]->n_vfs, 3);
        ck_assert_str_eq(pfs[0]->vfs[0].address, "0000:01:00.4");
        ck_assert_str_eq(pfs[0]->vfs[1].address, "0000:01:00.5");
        ck_assert_str_eq(pfs[0]->vfs[2].address, "0000:01:00.7");
        ck_assert_uint_eq(pfs[0]->vfs[2].index, 3);
        ck_assert_uint_eq(pfs[0]->vf_missing, 2);
        svff_pf_list_free(pfs, n);
        ck_assert_int_eq(svff_dev_exists(ctx, "0000:01:00.6"), 0);
        assert_logged("VF '0000:01:00.6' of '" QDMA_PF "' vanished during discovery");
}
END_TEST

/* A VF lost as it came (pcisim's drop-vf), its virtfn link gone with
 * it or left naming nothing: VF k is the one virtfn<k> names, never the
 * k-th found, and the index without a VF is vf_missing. */
START_TEST(test_discovery_virtfn_gap) {
        static const char *const how[] = { "", " dangling" };

        for (size_t h = 0; h < ELEMENTSOF(how); h++) {
                _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
                _cleanup_free_ char *target = NULL;
                struct svff_error err = SVFF_ERROR_NULL;

                ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 0, 10 * USEC_PER_SEC, &err), 0);
                ck_assert_int_eq(pcisim_ctl(sim, "drop-vf %s 1%s", QDMA_PF, how[h]), 0);
                ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
                ck_assert_int_eq(pcisim_readlink(sim, "bus/pci/devices/" QDMA_PF "/virtfn1", &target),
                                 h == 0 ? -ENOENT : 0);
                ck_assert_int_eq(svff_dev_exists(ctx, "0000:01:00.5"), 0);

                ck_assert_msg(svff_pf_load(ctx, QDMA_PF, &pf, &err) == 0, "%s", svff_error_message(&err));
                ck_assert_uint_eq(pf->numvfs, 4);
                ck_assert_uint_eq(pf->vf_missing, 1);
                ck_assert_uint_eq(pf->n_vfs, 3);
                ck_assert_ptr_null(svff_pf_vf_at(pf, 1));
                ck_assert_ptr_nonnull(svff_pf_vf_at(pf, 2));
                ck_assert_str_eq(svff_pf_vf_at(pf, 2)->address, "0000:01:00.6");
                ck_assert_ptr_nonnull(svff_pf_vf_at(pf, 3));
                ck_assert_str_eq(svff_pf_vf_at(pf, 3)->address, "0000:01:00.7");
                ck_assert_uint_eq(pf->vfs[1].index, 2);
                ck_assert_str_eq(pf->vfs[1].address, "0000:01:00.6");
        }
}
END_TEST

/* A read failing for another reason fails the pass, and so does ENODEV
 * from a device that is still there: only a device gone is left out. */
START_TEST(test_discovery_read_errors) {
        struct svff_pf **pfs = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n = 0;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read 0000:01:00.6 driver_override EIO"), 0);
        assert_error(svff_pf_list(ctx, &pfs, &n, &err), &err, -EIO, "'0000:01:00.6'");
        svff_error_free(&err);
        ck_assert_ptr_null(pfs);

        /* ENODEV once from a VF whose address is still there: the count
         * went through 0 and back while the pass read it (another
         * init or reconf). The device now at that address is read. */
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read 0000:01:00.6 driver_override ENODEV"), 0);
        ck_assert_msg(svff_pf_list(ctx, &pfs, &n, &err) == 0, "a VF re-created under the pass: %s",
                      svff_error_message(&err));
        ck_assert_uint_eq(pfs[0]->n_vfs, 4);
        ck_assert_str_eq(pfs[0]->vfs[2].address, "0000:01:00.6");
        ck_assert_uint_eq(pfs[0]->vf_missing, UINT_MAX);
        assert_logged("VF '0000:01:00.6' of '" QDMA_PF "' answered ENODEV while present, reading it again");
        svff_pf_list_free(pfs, n);
        pfs = NULL;

        /* A device that keeps answering so is not hidden. */
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read 0000:01:00.6 driver_override ENODEV always"), 0);
        assert_error(svff_pf_list(ctx, &pfs, &n, &err), &err, -ENODEV, "'0000:01:00.6'");
        svff_error_free(&err);
        ck_assert_ptr_null(pfs);
        ck_assert_int_eq(pcisim_ctl(sim, "clear-faults"), 0);

        ck_assert_int_eq(pcisim_ctl(sim, "fail-read " QDMA_PF " sriov_numvfs EIO"), 0);
        assert_error(svff_pf_list(ctx, &pfs, &n, &err), &err, -EIO, "'" QDMA_PF "'");
        svff_error_free(&err);
        ck_assert_ptr_null(debug_log ? strstr(debug_log, "vanished") : NULL);

        /* The device read is gone and its address seen free: that VF is
         * not part of the pass, although the address is taken again
         * before the pass would look once more. */
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read 0000:01:00.6 driver_override ENODEV"), 0);
        /* A look at a link the kernel knows is two lookups when the
         * first fails (revalidation, then a lookup afresh): one look.
         * The look here makes sure the kernel knows it. */
        ck_assert_int_eq(svff_dev_exists(ctx, "0000:01:00.6"), 1);
        ck_assert_int_eq(pcisim_ctl(sim, "hide 0000:01:00.6 2"), 0);
        ck_assert_msg(svff_pf_list(ctx, &pfs, &n, &err) == 0, "a VF gone for an instant: %s",
                      svff_error_message(&err));
        ck_assert_uint_eq(pfs[0]->n_vfs, 3);
        ck_assert_uint_eq(pfs[0]->vf_missing, 2);
        assert_logged("VF '0000:01:00.6' of '" QDMA_PF "' vanished during discovery");
        svff_pf_list_free(pfs, n);
        pfs = NULL;
        /* both lookups used: the address is seen again */
        ck_assert_int_eq(svff_dev_exists(ctx, "0000:01:00.6"), 1);
        ck_assert_int_eq(pcisim_ctl(sim, "clear-faults"), 0);

        ck_assert_int_eq(svff_pf_list(ctx, &pfs, &n, &err), 0);
        ck_assert_uint_eq(pfs[0]->n_vfs, 4);
        svff_pf_list_free(pfs, n);
}
END_TEST

START_TEST(test_init_252_bind_restore) {
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 252, 30 * USEC_PER_SEC, &err), 0);
        assert_attr(QDMA_PF, "sriov_numvfs", "252");
        assert_attr(QDMA_PF, "sriov_drivers_autoprobe", "0");
        ck_assert_int_eq(svff_pf_load(ctx, QDMA_PF, &pf, &err), 0);
        ck_assert_uint_eq(pf->n_vfs, 252);

        for (size_t i = 0; i < pf->n_vfs; i++) {
                _cleanup_free_ char *prev = (char *) 0x1;
                int viable;

                ck_assert_msg(svff_dev_bind(ctx, pf->vfs[i].address, "vfio-pci", &prev, &err) == 0,
                              "bind %s: %s", pf->vfs[i].address, svff_error_message(&err));
                ck_assert_ptr_null(prev);  /* autoprobe off: nothing had it */
                viable = svff_iommu_group_viable(ctx, pf->vfs[i].iommu_group, NULL, &err);
                ck_assert_int_eq(viable, 1);
        }
        for (size_t i = 0; i < pf->n_vfs; i++) {
                _cleanup_free_ char *d = driver_of(pf->vfs[i].address);
                ck_assert_str_eq(d, "vfio-pci");
        }

        /* Binding again is a no-op that reports the current driver. */
        {
                _cleanup_free_ char *prev = NULL;
                ck_assert_int_eq(svff_dev_bind(ctx, pf->vfs[7].address, "vfio-pci", &prev, &err), 0);
                ck_assert_str_eq(prev, "vfio-pci");
        }

        for (size_t i = 0; i < pf->n_vfs; i++) {
                _cleanup_free_ char *d = NULL;

                ck_assert_int_eq(svff_dev_restore(ctx, pf->vfs[i].address, NULL, &err), 0);
                d = driver_of(pf->vfs[i].address);
                ck_assert_ptr_null(d);
        }
        assert_attr(pf->vfs[251].address, "driver_override", "(null)");
}
END_TEST

/* VFs that a host driver grabbed (autoprobe on) go to vfio-pci and come
 * back to that driver, although autoprobe is off by then. */
START_TEST(test_restore_original_driver) {
        struct svff_error err = SVFF_ERROR_NULL;
        static const char *const vfs[] = { "0000:01:00.4", "0000:01:00.5", "0000:01:00.6" };
        char *prev[3] = {};

        ck_assert_int_eq(svff_sysfs_write(rootfd, "bus/pci/devices/" QDMA_PF "/sriov_numvfs", "3"), 0);
        for (size_t i = 0; i < 3; i++) {
                _cleanup_free_ char *d = driver_of(vfs[i]);
                ck_assert_str_eq(d, "qdma-vf");
        }
        /* Same count again: no change, autoprobe off. */
        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 3, 10 * USEC_PER_SEC, &err), 0);
        assert_attr(QDMA_PF, "sriov_drivers_autoprobe", "0");

        for (size_t i = 0; i < 3; i++) {
                ck_assert_int_eq(svff_dev_bind(ctx, vfs[i], "vfio-pci", &prev[i], &err), 0);
                ck_assert_str_eq(prev[i], "qdma-vf");
                assert_attr(vfs[i], "driver_override", "vfio-pci");
        }
        for (size_t i = 0; i < 3; i++) {
                _cleanup_free_ char *d = NULL;

                ck_assert_msg(svff_dev_restore(ctx, vfs[i], prev[i], &err) == 0, "%s",
                              svff_error_message(&err));
                d = driver_of(vfs[i]);
                ck_assert_str_eq(d, "qdma-vf");
                assert_attr(vfs[i], "driver_override", "(null)");
                free(prev[i]);
        }
}
END_TEST

START_TEST(test_ebusy_goes_through_zero) {
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
        /* What a naive tool does, and what the kernel says to it. */
        ck_assert_int_eq(svff_sysfs_write(rootfd, "bus/pci/devices/" QDMA_PF "/sriov_numvfs", "8"), -EBUSY);
        assert_attr(QDMA_PF, "sriov_numvfs", "4");

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 8, 10 * USEC_PER_SEC, &err), 0);
        assert_attr(QDMA_PF, "sriov_numvfs", "8");
        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 2, 10 * USEC_PER_SEC, &err), 0);
        assert_attr(QDMA_PF, "sriov_numvfs", "2");
        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 0, 10 * USEC_PER_SEC, &err), 0);
        assert_attr(QDMA_PF, "sriov_numvfs", "0");

        /* Someone else's EBUSY, injected between our 0 and our N. */
        ck_assert_int_eq(pcisim_ctl(sim, "fail %s sriov_numvfs EBUSY", QDMA_PF), 0);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), &err, -EBUSY,
                     "'" QDMA_PF "'");
        svff_error_free(&err);
}
END_TEST

START_TEST(test_blocked_disable_deadline) {
        struct svff_error err = SVFF_ERROR_NULL;
        usec_t deadline;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(svff_dev_bind(ctx, "0000:01:00.5", "vfio-pci", NULL, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "hold 0000:01:00.5"), 0);

        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 2, 300 * USEC_PER_MSEC, &err), &err, -ETIMEDOUT,
                     "'" QDMA_PF "' did not finish within 300 ms");
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "open by a VFIO user"));
        svff_error_free(&err);
        ck_assert_uint_eq(svff_ctx_get_stuck_writes(ctx), 1);

        ck_assert_int_eq(pcisim_ctl(sim, "release 0000:01:00.5"), 0);
        deadline = svff_now_usec() + 10 * USEC_PER_SEC;
        while (svff_ctx_get_stuck_writes(ctx) > 0 && svff_now_usec() < deadline)
                nanosleep(&(struct timespec) { .tv_nsec = 5 * 1000 * 1000 }, NULL);
        ck_assert_uint_eq(svff_ctx_get_stuck_writes(ctx), 0);
        /* The stuck write of 0 went through on its own. */
        assert_attr(QDMA_PF, "sriov_numvfs", "0");

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 2, 10 * USEC_PER_SEC, &err), 0);
        assert_attr(QDMA_PF, "sriov_numvfs", "2");
}
END_TEST

START_TEST(test_partial_creation) {
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(pcisim_ctl(sim, "partial %s 3", QDMA_PF), 0);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 8, 10 * USEC_PER_SEC, &err), &err, -EIO,
                     "PF '" QDMA_PF "' has 3 VFs after asking for 8");
        svff_error_free(&err);
        assert_attr(QDMA_PF, "sriov_numvfs", "3");
}
END_TEST

/* pcisim's "vanish" removes the device in the instant before the named
 * write reaches it, so "gone between two steps" is certain, not a race
 * against a timer. */
START_TEST(test_vf_removed_during_bind) {
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "vanish 0000:01:00.6 pci drivers_probe"), 0);
        assert_error(svff_dev_bind(ctx, "0000:01:00.6", "vfio-pci", NULL, &err), &err, -ENODEV,
                     "'0000:01:00.6' disappeared");
        svff_error_free(&err);
        ck_assert_int_eq(svff_dev_exists(ctx, "0000:01:00.6"), 0);
}
END_TEST

START_TEST(test_pf_removed_during_numvfs) {
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(pcisim_ctl(sim, "vanish " QDMA_PF " " QDMA_PF " sriov_numvfs"), 0);
        assert_error(svff_pf_set_numvfs(ctx, QDMA_PF, 4, 10 * USEC_PER_SEC, &err), &err, -ENODEV,
                     "'" QDMA_PF "' disappeared");
        svff_error_free(&err);
        ck_assert_int_eq(svff_dev_exists(ctx, QDMA_PF), 0);
}
END_TEST

START_TEST(test_bad_input) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_pf *pf = NULL;
        unsigned n = 7;

#define EXPECT(call, code, needle)                              \
        do {                                                    \
                assert_error((call), &err, (code), (needle));   \
                svff_error_free(&err);                          \
        } while (0)

        EXPECT(svff_pf_set_numvfs(ctx, "01:00", 4, USEC_PER_SEC, &err), -EINVAL, "'01:00' is not a PCI address");
        EXPECT(svff_pf_set_numvfs(ctx, "eth0", 4, USEC_PER_SEC, &err), -EINVAL, "'eth0'");
        EXPECT(svff_pf_set_numvfs(ctx, "0000:42:00.0", 4, USEC_PER_SEC, &err), -ENODEV,
               "No PCI device '0000:42:00.0'");
        EXPECT(svff_pf_set_numvfs(ctx, HOST_BRIDGE, 4, USEC_PER_SEC, &err), -EOPNOTSUPP,
               "'" HOST_BRIDGE "' does not support SR-IOV");
        EXPECT(svff_pf_set_numvfs(ctx, QDMA_PF, 253, USEC_PER_SEC, &err), -ERANGE,
               "'" QDMA_PF "' supports at most 252 VFs");
        EXPECT(svff_pf_load(ctx, HOST_BRIDGE, &pf, &err), -EOPNOTSUPP, "'" HOST_BRIDGE "'");
        EXPECT(svff_pf_load(ctx, "0000:42:00.0", &pf, &err), -ENODEV, "'0000:42:00.0'");
        ck_assert_ptr_null(pf);
        EXPECT(svff_dev_bind(ctx, "0000:42:00.0", "vfio-pci", NULL, &err), -ENODEV, "'0000:42:00.0'");
        EXPECT(svff_dev_bind(ctx, "xyz", "vfio-pci", NULL, &err), -EINVAL, "'xyz'");
        EXPECT(svff_dev_bind(ctx, QDMA_PF, "no-such-driver", NULL, &err), -ENXIO,
               "No PCI driver 'no-such-driver'");
        EXPECT(svff_dev_bind(ctx, QDMA_PF, "../x", NULL, &err), -EINVAL, "'../x' is not a driver name");

        ck_assert_int_eq(svff_numvfs_parse("-1", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("four", &n), -EINVAL);
        ck_assert_int_eq(svff_numvfs_parse("70000", &n), -ERANGE);
        ck_assert_uint_eq(n, 7);

        /* Nothing above changed the PF. */
        assert_attr(QDMA_PF, "sriov_numvfs", "0");
        assert_attr(QDMA_PF, "sriov_drivers_autoprobe", "1");

        /* A PF without its driver cannot create VFs. */
        ck_assert_int_eq(svff_dev_unbind(ctx, QDMA_PF, &err), 0);
        EXPECT(svff_pf_set_numvfs(ctx, QDMA_PF, 4, USEC_PER_SEC, &err), -ENOENT,
               "PF '" QDMA_PF "' has no driver bound");
        assert_attr(QDMA_PF, "sriov_drivers_autoprobe", "1");
#undef EXPECT
}
END_TEST

/* The NIC PF goes while its attributes are being read: the other PFs are
 * listed. */
START_TEST(test_discovery_pf_vanishes) {
        struct svff_pf **pfs = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        size_t n = 0, before;

        ck_assert_int_eq(svff_pf_list(ctx, &pfs, &n, &err), 0);
        before = n;
        ck_assert_uint_ge(before, 2);
        svff_pf_list_free(pfs, n);

        ck_assert_int_eq(pcisim_ctl(sim, "vanish-read " NIC_PF " " NIC_PF " sriov_numvfs"), 0);
        ck_assert_msg(svff_pf_list(ctx, &pfs, &n, &err) == 0, "discovery failed: %s", svff_error_message(&err));
        ck_assert_uint_eq(n, before - 1);
        for (size_t i = 0; i < n; i++)
                ck_assert_str_ne(pfs[i]->address, NIC_PF);
        svff_pf_list_free(pfs, n);
        ck_assert_int_eq(svff_dev_exists(ctx, NIC_PF), 0);
        assert_logged("'" NIC_PF "' vanished during discovery");
}
END_TEST

int main(void) {
        Suite *s = suite_create("core-pcisim");
        TCase *tc = tcase_create("qdma"), *tc_mixed = tcase_create("mixed");
        struct pcisim *probe;
        SRunner *sr;
        int failed, r;

        /* Skip early, and say why, when FUSE is unusable here. */
        r = pcisim_start("qdma", &probe);
        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "SKIP: FUSE is not usable here (no /dev/fuse or no permission to mount)\n");
                return 77;
        }
        if (r < 0) {
                fprintf(stderr, "pcisim failed to start: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        pcisim_free(probe);

        tcase_add_checked_fixture(tc, setup_qdma, stop);
        tcase_set_timeout(tc, 300);
        tcase_add_test(tc, test_discovery);
        tcase_add_test(tc, test_causes);
        tcase_add_test(tc, test_discovery_vf_vanishes);
        tcase_add_test(tc, test_discovery_virtfn_gap);
        tcase_add_test(tc, test_discovery_read_errors);
        tcase_add_test(tc, test_init_252_bind_restore);
        tcase_add_test(tc, test_restore_original_driver);
        tcase_add_test(tc, test_ebusy_goes_through_zero);
        tcase_add_test(tc, test_blocked_disable_deadline);
        tcase_add_test(tc, test_partial_creation);
        tcase_add_test(tc, test_vf_removed_during_bind);
        tcase_add_test(tc, test_pf_removed_during_numvfs);
        tcase_add_test(tc, test_bad_input);
        suite_add_tcase(s, tc);
        tcase_add_checked_fixture(tc_mixed, setup_mixed, stop);
        tcase_set_timeout(tc_mixed, 300);
        tcase_add_test(tc_mixed, test_discovery_pf_vanishes);
        suite_add_tcase(s, tc_mixed);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

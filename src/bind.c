/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "bind.h"
#include "cause.h"
#include "device.h"
#include "sysfs.h"

/* How long the driver link may stay absent after drivers_probe: probing
 * is synchronous, but the link appears at the very end of it, and a
 * driver with async probing returns earlier still. */
#define BIND_VERIFY_TIMEOUT_USEC (500 * USEC_PER_MSEC)

/* One device being (un)bound: directory fds for bus/pci and the device,
 * opened once, so each step is one lookup instead of a walk down the
 * whole path (on FUSE every component is a round trip). */
struct dev {
        struct svff_ctx *ctx;   /* borrowed */
        int pcifd;
        int dfd;
        char addr[SVFF_PCI_ADDR_STRLEN];
};

static void dev_close(struct dev *d) {
        closep(&d->pcifd);
        closep(&d->dfd);
}

/* Driver names are a path component here: refuse anything that would
 * walk elsewhere. */
static int check_driver(const char *driver, struct svff_error *err) {
        if (!driver || driver[0] == '\0' || strchr(driver, '/') || strchr(driver, '\n') ||
            streq(driver, ".") || streq(driver, ".."))
                return svff_error_set(err, -EINVAL, "'%s' is not a driver name (e.g. vfio-pci)",
                                      strna(driver));
        return 0;
}

static int dev_open(struct svff_ctx *ctx, const char *address, struct dev *d, struct svff_error *err) {
        _cleanup_free_ char *path = NULL;
        int r;

        *d = (struct dev) { .ctx = ctx, .pcifd = -EBADF, .dfd = -EBADF };
        r = svff_dev_canonicalize(address, d->addr, err);
        if (r < 0)
                return r;

        d->pcifd = svff_sysfs_open_dir(svff_ctx_get_rootfd(ctx), "bus/pci");
        if (d->pcifd < 0)
                return svff_error_set_errno(err, d->pcifd, "Cannot open '%s/bus/pci'", svff_ctx_get_root(ctx));

        if (asprintf(&path, "devices/%s", d->addr) < 0)
                return -ENOMEM;
        d->dfd = svff_sysfs_open_dir(d->pcifd, path);
        if (d->dfd == -ENOENT || d->dfd == -ENOTDIR)
                return svff_error_set(err, -ENODEV, "No PCI device '%s': check the address with 'lspci -D'",
                                      d->addr);
        if (d->dfd < 0)
                return svff_error_set_errno(err, d->dfd, "Cannot open PCI device '%s'", d->addr);
        return 0;
}

static bool dev_gone(struct dev *d) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "devices/%s", d->addr) < 0)
                return false;
        return svff_sysfs_exists(d->pcifd, path) == 0;
}

static int driver_write(struct dev *d, const char *driver, const char *attr) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "drivers/%s/%s", driver, attr) < 0)
                return -ENOMEM;
        return svff_sysfs_write(d->pcifd, path, d->addr);
}

/* Writing "" never reaches the kernel (a zero-length write stores
 * nothing); a lone newline is what clears driver_override. */
static int set_override(struct dev *d, const char *driver) {
        return svff_sysfs_write(d->dfd, "driver_override", driver ?: "\n");
}

static int get_driver(struct dev *d, char **ret) {
        int r;

        r = svff_sysfs_readlink_base(d->dfd, "driver", ret);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int probe(struct dev *d) {
        return svff_sysfs_write(d->pcifd, "drivers_probe", d->addr);
}

static int step_failed(struct dev *d, struct svff_error *err, int r, const char *step) {
        if ((r == -ENOENT || r == -ENODEV) && dev_gone(d))
                return svff_error_set(err, -ENODEV,
                                      "PCI device '%s' disappeared while %s (hot-removed, or its PF's VFs "
                                      "were disabled); list devices and retry", d->addr, step);
        {
                _cleanup_free_ char *cause = NULL;

                (void) svff_cause_describe(d->ctx, SVFF_CAUSE_BIND, d->addr, r, &cause);
                if (cause)
                        return svff_error_set_errno(err, r, "Failed %s for PCI device '%s' (%s)", step, d->addr,
                                                    cause);
        }
        return svff_error_set_errno(err, r, "Failed %s for PCI device '%s'", step, d->addr);
}

/* Polls the driver link until it names driver (NULL: any driver, then
 * named in *ret_now). Returns 0 when it does, -EBUSY with *ret_now set
 * to what is bound instead (NULL: nothing). */
static int verify_driver(struct dev *d, const char *driver, char **ret_now) {
        usec_t deadline = svff_now_usec() + BIND_VERIFY_TIMEOUT_USEC;
        long delay_ns = 1000 * 1000;
        int r;

        for (;;) {
                _cleanup_free_ char *now = NULL;

                r = get_driver(d, &now);
                if (r < 0)
                        return r;
                if (now && (!driver || streq(now, driver))) {
                        if (!driver)
                                *ret_now = TAKE_PTR(now);
                        return 0;
                }
                /* Bound elsewhere is final; absent may still be probing,
                 * unless the device itself is gone. */
                if (now || svff_now_usec() >= deadline || dev_gone(d)) {
                        *ret_now = TAKE_PTR(now);
                        return -EBUSY;
                }
                nanosleep(&(struct timespec) { .tv_nsec = delay_ns }, NULL);
                if (delay_ns < 64 * 1000 * 1000)
                        delay_ns *= 2;
        }
}

/* Puts the device back on prev (NULL: unbound) after a failed bind, with
 * no override left behind. Best effort: returns what it managed. */
static int rollback(struct dev *d, const char *prev) {
        _cleanup_free_ char *now = NULL;
        int r = 0;

        (void) get_driver(d, &now);
        if (now && (!prev || !streq(now, prev)))
                (void) driver_write(d, now, "unbind");
        if (prev) {
                (void) set_override(d, prev);
                (void) probe(d);
                now = mfree(now);
                r = verify_driver(d, prev, &now);
        }
        (void) set_override(d, NULL);
        return r;
}

static int bind_dev(struct svff_ctx *ctx, struct dev *d, const char *driver, char **ret_prev_driver,
                    struct svff_error *err) {
        _cleanup_free_ char *prev = NULL, *driver_dir = NULL, *now = NULL;
        int r, probe_r;

        r = check_driver(driver, err);
        if (r < 0)
                return r;

        if (asprintf(&driver_dir, "drivers/%s", driver) < 0)
                return -ENOMEM;
        r = svff_sysfs_exists(d->pcifd, driver_dir);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot look up driver '%s'", driver);
        if (r == 0)
                return svff_error_set(err, -ENXIO,
                                      "No PCI driver '%s' is registered, so '%s' cannot be bound to it: "
                                      "load its module (modprobe %s) and retry", driver, d->addr, driver);

        r = get_driver(d, &prev);
        if (r < 0)
                return step_failed(d, err, r, "reading its driver");

        /* By address, never new_id: the override makes only this device
         * match driver, and lets a VF probe even with autoprobe off. */
        r = set_override(d, driver);
        if (r < 0)
                return step_failed(d, err, r, "setting driver_override");

        if (prev && streq(prev, driver))
                goto done;

        if (prev) {
                r = driver_write(d, prev, "unbind");
                /* ENODEV: unbound meanwhile, which is what we wanted. */
                if (r < 0 && !(r == -ENODEV && !dev_gone(d))) {
                        (void) set_override(d, NULL);
                        return step_failed(d, err, r, "unbinding it from its driver");
                }
        }

        probe_r = probe(d);
        if (probe_r < 0 && dev_gone(d))
                return step_failed(d, err, -ENODEV, "probing drivers");

        /* drivers_probe says nothing reliable: the link does. */
        r = verify_driver(d, driver, &now);
        if (r == -EBUSY) {
                int k;

                if (dev_gone(d))
                        return step_failed(d, err, -ENODEV, "binding it");
                const char *cause = probe_r < 0 ? svff_cause(SVFF_CAUSE_PROBE, probe_r) : NULL;

                k = rollback(d, prev);
                return svff_error_set(err, -EBUSY,
                                      "PCI device '%s' is %s%s after probing '%s'%s%s%s%s%s (check dmesg: the "
                                      "driver may have refused it); %s%s",
                                      d->addr, now ? "bound to " : "unbound", now ?: "", driver,
                                      probe_r < 0 ? ", which failed: " : "",
                                      probe_r < 0 ? strerror(-probe_r) : "",
                                      cause ? " (" : "", cause ?: "", cause ? ")" : "",
                                      k >= 0 ? "it was put back on " : "putting it back on ",
                                      k >= 0 ? (prev ?: "no driver") : (prev ? "its driver failed too" : ""));
        }
        if (r < 0)
                return step_failed(d, err, r, "verifying its driver");

done:
        if (ret_prev_driver)
                *ret_prev_driver = TAKE_PTR(prev);
        return 0;
}

int svff_dev_bind(struct svff_ctx *ctx, const char *address, const char *driver,
                  char **ret_prev_driver, struct svff_error *err) {
        _cleanup_(dev_close) struct dev d = { .pcifd = -EBADF, .dfd = -EBADF };
        int r;

        if (!ctx)
                return -EINVAL;
        r = dev_open(ctx, address, &d, err);
        if (r < 0)
                return r;
        return bind_dev(ctx, &d, driver, ret_prev_driver, err);
}

int svff_dev_unbind(struct svff_ctx *ctx, const char *address, struct svff_error *err) {
        _cleanup_(dev_close) struct dev d = { .pcifd = -EBADF, .dfd = -EBADF };
        _cleanup_free_ char *driver = NULL;
        int r;

        if (!ctx)
                return -EINVAL;
        r = dev_open(ctx, address, &d, err);
        if (r < 0)
                return r;

        r = get_driver(&d, &driver);
        if (r < 0)
                return step_failed(&d, err, r, "reading its driver");
        if (driver) {
                r = driver_write(&d, driver, "unbind");
                if (r < 0 && !(r == -ENODEV && !dev_gone(&d)))
                        return step_failed(&d, err, r, "unbinding it");
        }

        r = set_override(&d, NULL);
        if (r < 0)
                return step_failed(&d, err, r, "clearing driver_override");
        return 0;
}

int svff_dev_restore(struct svff_ctx *ctx, const char *address, const char *orig_driver,
                     struct svff_error *err) {
        _cleanup_(dev_close) struct dev d = { .pcifd = -EBADF, .dfd = -EBADF };
        int r, k;

        if (!orig_driver)
                return svff_dev_unbind(ctx, address, err);

        if (!ctx)
                return -EINVAL;
        r = dev_open(ctx, address, &d, err);
        if (r < 0)
                return r;

        /* With sriov_drivers_autoprobe=0 a plain probe binds nothing to a
         * VF; the override is what lets it bind, so bind through it and
         * clear it afterwards. */
        r = bind_dev(ctx, &d, orig_driver, NULL, err);
        k = set_override(&d, NULL);
        if (r < 0)
                return r;
        if (k < 0)
                return step_failed(&d, err, k, "clearing driver_override");
        return 0;
}

/* Probes the device, with its PF's sriov_drivers_autoprobe on for that
 * probe when it is a VF whose PF has it off. */
static int probe_default(struct dev *d) {
        _cleanup_free_ char *pf = NULL, *path = NULL;
        bool on = true;
        int r, k;

        r = svff_sysfs_readlink_base(d->dfd, "physfn", &pf);
        if (r == -ENOENT)
                return probe(d);
        if (r < 0)
                return r;
        if (asprintf(&path, "devices/%s/sriov_drivers_autoprobe", pf) < 0)
                return -ENOMEM;
        r = svff_sysfs_read_bool(d->pcifd, path, &on);
        if (r == -ENOENT)
                return probe(d);        /* before Linux 4.12: always on */
        if (r < 0)
                return r;
        if (!on) {
                r = svff_sysfs_write(d->pcifd, path, "1");
                if (r < 0)
                        return r;
        }
        r = probe(d);
        if (!on) {
                k = svff_sysfs_write(d->pcifd, path, "0");
                if (k < 0 && r >= 0)
                        r = k;
        }
        return r;
}

int svff_dev_reprobe(struct svff_ctx *ctx, const char *address, char **ret_driver, struct svff_error *err) {
        _cleanup_(dev_close) struct dev d = { .pcifd = -EBADF, .dfd = -EBADF };
        _cleanup_free_ char *now = NULL;
        int r;

        r = svff_dev_unbind(ctx, address, err);
        if (r < 0)
                return r;
        r = dev_open(ctx, address, &d, err);
        if (r < 0)
                return r;
        r = probe_default(&d);
        if (r < 0 && dev_gone(&d))
                return step_failed(&d, err, -ENODEV, "probing its default driver");
        /* Probing an unclaimed device may fail (no driver for its id):
         * that leaves it unbound (-EBUSY, now NULL), which the caller
         * reports. */
        r = verify_driver(&d, NULL, &now);
        if (r < 0 && r != -EBUSY)
                return step_failed(&d, err, r, "reading its driver");
        if (ret_driver)
                *ret_driver = TAKE_PTR(now);
        return 0;
}

int svff_dev_get_driver(struct svff_ctx *ctx, const char *address, char **ret) {
        _cleanup_(dev_close) struct dev d = { .pcifd = -EBADF, .dfd = -EBADF };
        char *driver = NULL;
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        r = dev_open(ctx, address, &d, NULL);
        if (r < 0)
                return r;

        r = get_driver(&d, &driver);
        if (r < 0)
                return r == -ENOENT && dev_gone(&d) ? -ENODEV : r;

        *ret = driver;
        return 0;
}

int svff_bind_budget_error(struct svff_error *err, const char *pf, const char *driver, size_t n, size_t bound,
                           uint64_t base_usec, uint64_t per_vf_usec) {
        return svff_error_set(err, -ETIMEDOUT,
                              "binding the %zu VFs of PF %s to %s did not finish within %llu ms "
                              "(bind_timeout_sec %llu s + bind_timeout_per_vf_msec %llu ms x %zu VFs); "
                              "%zu were bound: if the driver is only slow, raise bind_timeout_per_vf_msec "
                              "in svff.conf, else check dmesg",
                              n, pf, driver, (unsigned long long) ((base_usec + per_vf_usec * n) / 1000),
                              (unsigned long long) (base_usec / 1000000), (unsigned long long) (per_vf_usec / 1000),
                              n, bound);
}

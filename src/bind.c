/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>
#include <string.h>
#include <time.h>

#include "bind.h"
#include "device.h"
#include "sysfs.h"

/* How long the driver link may stay absent after drivers_probe: probing
 * is synchronous, but the link appears at the very end of it, and a
 * driver with async probing returns earlier still. */
#define BIND_VERIFY_TIMEOUT_USEC (500 * USEC_PER_MSEC)

/* Driver names are a path component here: refuse anything that would
 * walk elsewhere. */
static int check_driver(const char *driver, struct svff_error *err) {
        if (!driver || driver[0] == '\0' || strchr(driver, '/') || strchr(driver, '\n') ||
            streq(driver, ".") || streq(driver, ".."))
                return svff_error_set(err, -EINVAL, "'%s' is not a driver name (e.g. vfio-pci)",
                                      strna(driver));
        return 0;
}

static int write_attr(struct svff_ctx *ctx, const char *value, const char *fmt, ...) _printf_(3, 4);
static int write_attr(struct svff_ctx *ctx, const char *value, const char *fmt, ...) {
        _cleanup_free_ char *path = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&path, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        return svff_sysfs_write(svff_ctx_get_rootfd(ctx), path, value);
}

/* Writing "" never reaches the kernel (a zero-length write stores
 * nothing); a lone newline is what clears driver_override. */
static int set_override(struct svff_ctx *ctx, const char *address, const char *driver) {
        return write_attr(ctx, driver ?: "\n", "bus/pci/devices/%s/driver_override", address);
}

static int get_driver(struct svff_ctx *ctx, const char *address, char **ret) {
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "bus/pci/devices/%s/driver", address) < 0)
                return -ENOMEM;
        r = svff_sysfs_readlink_base(svff_ctx_get_rootfd(ctx), path, ret);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int step_failed(struct svff_ctx *ctx, struct svff_error *err, int r, const char *address,
                       const char *step) {
        if ((r == -ENOENT || r == -ENODEV) && svff_dev_exists(ctx, address) == 0)
                return svff_error_set(err, -ENODEV,
                                      "PCI device '%s' disappeared while %s (hot-removed, or its PF's VFs "
                                      "were disabled); list devices and retry", address, step);
        return svff_error_set_errno(err, r, "Failed %s for PCI device '%s'", step, address);
}

/* Polls the driver link until it names driver. Returns 0 when it does,
 * -EBUSY with *ret_now set to what is bound instead (NULL: nothing). */
static int verify_driver(struct svff_ctx *ctx, const char *address, const char *driver, char **ret_now) {
        usec_t deadline = svff_now_usec() + BIND_VERIFY_TIMEOUT_USEC;
        long delay_ns = 1000 * 1000;
        int r;

        for (;;) {
                _cleanup_free_ char *now = NULL;

                r = get_driver(ctx, address, &now);
                if (r < 0)
                        return r;
                if (now && streq(now, driver))
                        return 0;
                /* Bound elsewhere is final; absent may still be probing. */
                if (now || svff_now_usec() >= deadline) {
                        *ret_now = TAKE_PTR(now);
                        return -EBUSY;
                }
                nanosleep(&(struct timespec) { .tv_nsec = delay_ns }, NULL);
                if (delay_ns < 64 * 1000 * 1000)
                        delay_ns *= 2;
        }
}

static int probe(struct svff_ctx *ctx, const char *address) {
        return svff_sysfs_write(svff_ctx_get_rootfd(ctx), "bus/pci/drivers_probe", address);
}

/* Puts address back on prev (NULL: unbound) after a failed bind, with
 * no override left behind. Best effort: returns what it managed. */
static int rollback(struct svff_ctx *ctx, const char *address, const char *prev) {
        _cleanup_free_ char *now = NULL;
        int r;

        (void) get_driver(ctx, address, &now);
        if (now && (!prev || !streq(now, prev)))
                (void) write_attr(ctx, address, "bus/pci/drivers/%s/unbind", now);
        if (prev) {
                (void) set_override(ctx, address, prev);
                (void) probe(ctx, address);
                now = mfree(now);
                r = verify_driver(ctx, address, prev, &now);
        } else
                r = 0;
        (void) set_override(ctx, address, NULL);
        return r;
}

int svff_dev_bind(struct svff_ctx *ctx, const char *address, const char *driver,
                  char **ret_prev_driver, struct svff_error *err) {
        _cleanup_free_ char *prev = NULL, *driver_dir = NULL, *now = NULL;
        char addr[SVFF_PCI_ADDR_STRLEN];
        int r, probe_r;

        if (!ctx)
                return -EINVAL;
        r = svff_dev_canonicalize(address, addr, err);
        if (r < 0)
                return r;
        r = check_driver(driver, err);
        if (r < 0)
                return r;

        r = svff_dev_exists(ctx, addr);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot look up PCI device '%s'", addr);
        if (r == 0)
                return svff_error_set(err, -ENODEV, "No PCI device '%s': check the address with 'lspci -D'",
                                      addr);

        if (asprintf(&driver_dir, "bus/pci/drivers/%s", driver) < 0)
                return -ENOMEM;
        r = svff_sysfs_exists(svff_ctx_get_rootfd(ctx), driver_dir);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot look up driver '%s'", driver);
        if (r == 0)
                return svff_error_set(err, -ENXIO,
                                      "No PCI driver '%s' is registered, so '%s' cannot be bound to it: "
                                      "load its module (modprobe %s) and retry", driver, addr, driver);

        r = get_driver(ctx, addr, &prev);
        if (r < 0)
                return step_failed(ctx, err, r, addr, "reading its driver");

        /* By address, never new_id: the override makes only this device
         * match driver, and lets a VF probe even with autoprobe off. */
        r = set_override(ctx, addr, driver);
        if (r < 0)
                return step_failed(ctx, err, r, addr, "setting driver_override");

        if (prev && streq(prev, driver))
                goto done;

        if (prev) {
                r = write_attr(ctx, addr, "bus/pci/drivers/%s/unbind", prev);
                /* ENODEV: unbound meanwhile, which is what we wanted. */
                if (r < 0 && !(r == -ENODEV && svff_dev_exists(ctx, addr) > 0)) {
                        (void) set_override(ctx, addr, NULL);
                        return step_failed(ctx, err, r, addr, "unbinding it from its driver");
                }
        }

        probe_r = probe(ctx, addr);
        if (probe_r < 0 && svff_dev_exists(ctx, addr) == 0)
                return step_failed(ctx, err, -ENODEV, addr, "probing drivers");

        /* drivers_probe says nothing reliable: the link does. */
        r = verify_driver(ctx, addr, driver, &now);
        if (r == -EBUSY) {
                int k;

                if (svff_dev_exists(ctx, addr) == 0)
                        return step_failed(ctx, err, -ENODEV, addr, "binding it");
                k = rollback(ctx, addr, prev);
                return svff_error_set(err, -EBUSY,
                                      "PCI device '%s' is %s%s after probing '%s'%s%s (check dmesg: the driver "
                                      "may have refused it); %s%s",
                                      addr, now ? "bound to " : "unbound", now ?: "", driver,
                                      probe_r < 0 ? ", which failed: " : "",
                                      probe_r < 0 ? strerror(-probe_r) : "",
                                      k >= 0 ? "it was put back on " : "putting it back on ",
                                      k >= 0 ? (prev ?: "no driver") : (prev ? "its driver failed too" : ""));
        }
        if (r < 0)
                return step_failed(ctx, err, r, addr, "verifying its driver");

done:
        if (ret_prev_driver)
                *ret_prev_driver = TAKE_PTR(prev);
        return 0;
}

int svff_dev_unbind(struct svff_ctx *ctx, const char *address, struct svff_error *err) {
        _cleanup_free_ char *driver = NULL;
        char addr[SVFF_PCI_ADDR_STRLEN];
        int r;

        if (!ctx)
                return -EINVAL;
        r = svff_dev_canonicalize(address, addr, err);
        if (r < 0)
                return r;
        r = svff_dev_exists(ctx, addr);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot look up PCI device '%s'", addr);
        if (r == 0)
                return svff_error_set(err, -ENODEV, "No PCI device '%s': check the address with 'lspci -D'",
                                      addr);

        r = get_driver(ctx, addr, &driver);
        if (r < 0)
                return step_failed(ctx, err, r, addr, "reading its driver");
        if (driver) {
                r = write_attr(ctx, addr, "bus/pci/drivers/%s/unbind", driver);
                if (r < 0 && !(r == -ENODEV && svff_dev_exists(ctx, addr) > 0))
                        return step_failed(ctx, err, r, addr, "unbinding it");
        }

        r = set_override(ctx, addr, NULL);
        if (r < 0)
                return step_failed(ctx, err, r, addr, "clearing driver_override");
        return 0;
}

int svff_dev_restore(struct svff_ctx *ctx, const char *address, const char *orig_driver,
                     struct svff_error *err) {
        char addr[SVFF_PCI_ADDR_STRLEN];
        int r, k;

        if (!orig_driver)
                return svff_dev_unbind(ctx, address, err);

        if (!ctx)
                return -EINVAL;
        r = svff_dev_canonicalize(address, addr, err);
        if (r < 0)
                return r;

        /* With sriov_drivers_autoprobe=0 a plain probe binds nothing to a
         * VF; the override is what lets it bind, so bind through it and
         * clear it afterwards. */
        r = svff_dev_bind(ctx, addr, orig_driver, NULL, err);
        k = set_override(ctx, addr, NULL);
        if (r < 0)
                return r;
        if (k < 0)
                return step_failed(ctx, err, k, addr, "clearing driver_override");
        return 0;
}

int svff_dev_get_driver(struct svff_ctx *ctx, const char *address, char **ret) {
        char addr[SVFF_PCI_ADDR_STRLEN];
        char *driver = NULL;
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        r = svff_pci_addr_canonicalize(address, addr);
        if (r < 0)
                return r;

        r = get_driver(ctx, addr, &driver);
        if (r < 0)
                return r;
        if (!driver && svff_dev_exists(ctx, addr) == 0)
                return -ENODEV;

        *ret = driver;
        return 0;
}

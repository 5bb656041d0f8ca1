/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "cause.h"
#include "device.h"
#include "pciaddr.h"
#include "sriov.h"
#include "sysfs.h"

int svff_numvfs_parse(const char *s, unsigned *ret) {
        unsigned long v;
        char *end;

        if (!s || !ret)
                return -EINVAL;
        /* Digits only: strtoul() would take "-1" (as ULONG_MAX), " 4", "+4". */
        if (s[0] < '0' || s[0] > '9')
                return -EINVAL;

        errno = 0;
        v = strtoul(s, &end, 10);
        if (*end != '\0')
                return -EINVAL;
        if (errno == ERANGE || v > UINT16_MAX)
                return -ERANGE;

        *ret = (unsigned) v;
        return 0;
}

/* Turns the errno of a step on pf into a message. A device that is gone
 * afterwards makes it -ENODEV whatever the write said. */
static int step_failed(struct svff_ctx *ctx, struct svff_error *err, int r, const char *pf,
                       const char *step) {
        if (r == -ENOENT || r == -ENODEV) {
                if (svff_dev_exists(ctx, pf) == 0)
                        return svff_error_set(err, -ENODEV,
                                              "PF '%s' disappeared while %s (hot-removed?); list devices and retry",
                                              pf, step);
        }
        {
                _cleanup_free_ char *cause = NULL;

                (void) svff_cause_describe(ctx, SVFF_CAUSE_NUMVFS, pf, r, &cause);
                if (cause)
                        return svff_error_set_errno(err, r, "Failed %s on PF '%s' (%s)", step, pf, cause);
        }
        return svff_error_set_errno(err, r, "Failed %s on PF '%s'", step, pf);
}

/* How many VFs of pf are bound to vfio-pci now: only those can be held
 * open by a VFIO user, which blocks their removal. */
static unsigned vfs_on_vfio(struct svff_ctx *ctx, const char *pf) {
        int rootfd = svff_ctx_get_rootfd(ctx);
        unsigned n = 0;

        for (unsigned i = 0; i < UINT16_MAX; i++) {
                _cleanup_free_ char *link = NULL, *vf = NULL, *drv = NULL;

                if (asprintf(&link, "bus/pci/devices/%s/virtfn%u", pf, i) < 0) {
                        link = NULL;
                        break;
                }
                if (svff_sysfs_readlink_base(rootfd, link, &vf) < 0)
                        break;
                free(link);
                if (asprintf(&link, "bus/pci/devices/%s/driver", vf) < 0) {
                        link = NULL;
                        break;
                }
                if (svff_sysfs_readlink_base(rootfd, link, &drv) >= 0 && drv && streq(drv, "vfio-pci"))
                        n++;
        }
        return n;
}

static int write_numvfs(struct svff_ctx *ctx, const char *path, const char *pf, unsigned n,
                        unsigned current, usec_t base_usec, usec_t per_vf_usec, struct svff_error *err) {
        _cleanup_free_ char *value = NULL, *step = NULL;
        /* Disabling removes current VFs, enabling creates n. */
        unsigned work = n == 0 ? current : n;
        usec_t timeout_usec = base_usec + per_vf_usec * work;
        int r;

        if (asprintf(&value, "%u", n) < 0 || asprintf(&step, "setting sriov_numvfs %u -> %u", current, n) < 0)
                return -ENOMEM;

        /* A removal blocks on a VF a VFIO user holds open, but only a VF
         * on vfio-pci can be: counted before the write, as a blocked
         * removal has already taken the links (virtfn0 first) that would
         * say so, and reading them then may block too. */
        unsigned on_vfio = n == 0 ? vfs_on_vfio(ctx, pf) : 0;

        svff_log_debug(ctx, "%s: %s (deadline %llu ms)", pf, step,
                       (unsigned long long) (timeout_usec / USEC_PER_MSEC));
        r = svff_sysfs_write_deadline(ctx, path, value, timeout_usec);
        if (r == -ETIMEDOUT) {
                /* Without a VF on vfio-pci, say so rather than send the
                 * operator looking for a holder. */
                _cleanup_free_ char *why = NULL;

                if (on_vfio > 0 && asprintf(&why, "the PF driver is slow or stuck, or one of the %u VFs on "
                                            "vfio-pci is still open by a VFIO user (QEMU); check dmesg, and "
                                            "if it is only slow raise numvfs_timeout_per_vf_msec (or "
                                            "numvfs_timeout_sec) in svff.conf", on_vfio) < 0)
                        why = NULL;
                return svff_error_set(err, -ETIMEDOUT,
                                      "%s on PF '%s' did not finish within %llu ms (numvfs_timeout_sec %llu s "
                                      "+ numvfs_timeout_per_vf_msec %llu ms x %u VFs): %s. The write goes on "
                                      "in the background",
                                      step, pf, (unsigned long long) (timeout_usec / USEC_PER_MSEC),
                                      (unsigned long long) (base_usec / USEC_PER_SEC),
                                      (unsigned long long) (per_vf_usec / USEC_PER_MSEC), work,
                                      why ?: n == 0 ? "no VF is on vfio-pci, so no VFIO user holds one: the PF "
                                                      "driver is slow or stuck; check dmesg, and if it is only "
                                                      "slow raise numvfs_timeout_per_vf_msec (or "
                                                      "numvfs_timeout_sec) in svff.conf"
                                                    : "the PF driver is slow or stuck; check dmesg, and if it is "
                                                      "only slow raise numvfs_timeout_per_vf_msec (or "
                                                      "numvfs_timeout_sec) in svff.conf");
        }
        if (r == -EBUSY) {
                _cleanup_free_ char *cause = NULL;

                (void) svff_cause_describe(ctx, SVFF_CAUSE_NUMVFS, pf, r, &cause);
                return svff_error_set(err, -EBUSY,
                                      "%s on PF '%s' was refused: VFs are enabled (changed concurrently by "
                                      "someone else?)%s%s; retry", step, pf, cause ? ": " : "", cause ?: "");
        }
        if (r == -ENOENT && svff_dev_exists(ctx, pf) > 0)
                return svff_error_set(err, -ENOENT,
                                      "%s on PF '%s' was refused: its driver is gone, cannot enable "
                                      "SR-IOV, or VFs left behind by an earlier removal of this PF still "
                                      "hold their addresses (kernel log: 'kobject_add_internal failed "
                                      "... -EEXIST'). Check the PF driver is bound and retry; stale VFs "
                                      "need the PF driver reloaded or a reboot", step, pf);
        if (r < 0)
                return step_failed(ctx, err, r, pf, step);
        return 0;
}

int svff_pf_set_numvfs(struct svff_ctx *ctx, const char *pf_address, unsigned numvfs,
                       usec_t timeout_usec, struct svff_error *err) {
        return svff_pf_set_numvfs_scaled(ctx, pf_address, numvfs, timeout_usec, 0, err);
}

int svff_pf_set_numvfs_scaled(struct svff_ctx *ctx, const char *pf_address, unsigned numvfs,
                              usec_t base_usec, usec_t per_vf_usec, struct svff_error *err) {
        _cleanup_free_ char *path_numvfs = NULL, *path_total = NULL, *path_auto = NULL,
                            *path_driver = NULL;
        char pf[SVFF_PCI_ADDR_STRLEN];
        int rootfd, r;
        uint64_t total, current, after;
        bool autoprobe;

        if (!ctx)
                return -EINVAL;
        r = svff_dev_canonicalize(pf_address, pf, err);
        if (r < 0)
                return r;
        rootfd = svff_ctx_get_rootfd(ctx);

        if (asprintf(&path_numvfs, "bus/pci/devices/%s/sriov_numvfs", pf) < 0 ||
            asprintf(&path_total, "bus/pci/devices/%s/sriov_totalvfs", pf) < 0 ||
            asprintf(&path_auto, "bus/pci/devices/%s/sriov_drivers_autoprobe", pf) < 0 ||
            asprintf(&path_driver, "bus/pci/devices/%s/driver", pf) < 0)
                return -ENOMEM;

        /* Everything that can be refused is checked before the first
         * write, so bad input leaves the PF as it was. */
        r = svff_dev_exists(ctx, pf);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot look up PCI device '%s'", pf);
        if (r == 0)
                return svff_error_set(err, -ENODEV, "No PCI device '%s': check the address with 'lspci -D'",
                                      pf);

        r = svff_sysfs_read_u64(rootfd, path_total, &total);
        if (r == -ENOENT) {
                _cleanup_free_ char *physfn = NULL;

                if (svff_sysfs_readf(rootfd, &physfn, "bus/pci/devices/%s/physfn/vendor", pf) >= 0)
                        return svff_error_set(err, -EOPNOTSUPP,
                                              "PCI device '%s' is a virtual function: set the VF count on its PF",
                                              pf);
                if (svff_dev_exists(ctx, pf) == 0)
                        return step_failed(ctx, err, -ENODEV, pf, "reading sriov_totalvfs");
                return svff_error_set(err, -EOPNOTSUPP,
                                      "PCI device '%s' does not support SR-IOV: give the address of an SR-IOV PF",
                                      pf);
        }
        if (r < 0)
                return step_failed(ctx, err, r, pf, "reading sriov_totalvfs");
        if (numvfs > total) {
                _cleanup_free_ char *limits = NULL;

                (void) svff_pf_vf_limits_describe(ctx, pf, &limits);
                return svff_error_set(err, -ERANGE,
                                      "PF '%s' supports at most %llu VFs (%s); asked for %u: "
                                      "ask for %llu or fewer",
                                      pf, (unsigned long long) total, limits ?: "sriov_totalvfs", numvfs,
                                      (unsigned long long) total);
        }

        r = svff_sysfs_read_u64(rootfd, path_numvfs, &current);
        if (r < 0)
                return step_failed(ctx, err, r, pf, "reading sriov_numvfs");

        if (current != numvfs) {
                _cleanup_free_ char *driver = NULL;

                /* The kernel answers ENOENT only after other checks, and
                 * only for the enabling write; ask first so the message
                 * can say what to do. */
                r = svff_sysfs_readlink_base(rootfd, path_driver, &driver);
                if (r == -ENOENT) {
                        if (svff_dev_exists(ctx, pf) == 0)
                                return step_failed(ctx, err, -ENODEV, pf, "reading its driver");
                        return svff_error_set(err, -ENOENT,
                                              "PF '%s' has no driver bound, and the kernel creates VFs only "
                                              "through the PF driver: load and bind it (e.g. 'modprobe <driver>') "
                                              "and retry", pf);
                }
                if (r < 0)
                        return step_failed(ctx, err, r, pf, "reading its driver");
        }

        /* Autoprobe off before any VF exists, so no host driver (or
         * NetworkManager behind it) grabs new VFs before they are bound
         * where they belong. */
        r = svff_sysfs_read_bool(rootfd, path_auto, &autoprobe);
        if (r == -ENOENT && svff_dev_exists(ctx, pf) > 0)
                autoprobe = false;  /* before Linux 4.12: nothing to turn off */
        else if (r < 0)
                return step_failed(ctx, err, r, pf, "reading sriov_drivers_autoprobe");
        if (autoprobe) {
                r = svff_sysfs_write(rootfd, path_auto, "0");
                if (r < 0)
                        return step_failed(ctx, err, r, pf, "turning sriov_drivers_autoprobe off");
        }

        if (current == numvfs)
                return 0;

        /* The kernel refuses N -> M (EBUSY): go through 0. */
        if (current != 0) {
                r = write_numvfs(ctx, path_numvfs, pf, 0, (unsigned) current, base_usec, per_vf_usec, err);
                if (r < 0)
                        return r;
        }
        if (numvfs != 0) {
                r = write_numvfs(ctx, path_numvfs, pf, numvfs, 0, base_usec, per_vf_usec, err);
                if (r < 0)
                        return r;
        }

        /* A driver may enable fewer VFs than asked and still report
         * success. */
        r = svff_sysfs_read_u64(rootfd, path_numvfs, &after);
        if (r < 0)
                return step_failed(ctx, err, r, pf, "reading sriov_numvfs back");
        if (after != numvfs)
                return svff_error_set(err, -EIO,
                                      "PF '%s' has %llu VFs after asking for %u: its driver created only part "
                                      "of them (firmware/resource limit? check dmesg). The count is left at %llu",
                                      pf, (unsigned long long) after, numvfs, (unsigned long long) after);
        return 0;
}

int svff_pf_set_autoprobe(struct svff_ctx *ctx, const char *pf_address, bool autoprobe,
                          struct svff_error *err) {
        _cleanup_free_ char *path = NULL;
        char pf[SVFF_PCI_ADDR_STRLEN];
        int r;

        if (!ctx)
                return -EINVAL;
        r = svff_dev_canonicalize(pf_address, pf, err);
        if (r < 0)
                return r;
        if (asprintf(&path, "bus/pci/devices/%s/sriov_drivers_autoprobe", pf) < 0)
                return -ENOMEM;
        r = svff_sysfs_write(svff_ctx_get_rootfd(ctx), path, autoprobe ? "1" : "0");
        if (r < 0)
                return step_failed(ctx, err, r, pf, "writing sriov_drivers_autoprobe");
        return 0;
}

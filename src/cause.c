/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cause.h"
#include "pcinames.h"
#include "sysfs.h"

struct cause {
        enum svff_cause_step step;
        int errnum;
        const char *text;
};

/* Causes seen in the field; the kernel log usually names the detail. */
static const struct cause causes[] = {
        { SVFF_CAUSE_NUMVFS, ENOSPC,
          "the PF driver found no free MSI-X or interrupt vectors for that many VFs (the kernel log "
          "names them): ask for fewer VFs, or give each VF fewer queues or vectors in the PF driver" },
        { SVFF_CAUSE_NUMVFS, ENOMEM,
          "the PF driver could not reserve resources for that many VFs: some drivers create VFs only "
          "up to a module parameter (e.g. 'max_vfs' of ixgbe or igb: reload the driver with it), "
          "others ran out of memory or of MMIO space for the VF BARs (kernel log: 'not enough MMIO "
          "resources for SR-IOV'; the firmware's SR-IOV setting or 'pci=realloc' helps)" },
        { SVFF_CAUSE_NUMVFS, EBUSY,
          "VFs are enabled or one is still held (bound to a driver or open by a VFIO user): the kernel "
          "changes the count only through 0, once no VF is in use" },
        { SVFF_CAUSE_NUMVFS, EIO,
          "the device or its firmware failed the request (the kernel log says why); a PF reset or a "
          "firmware update may be needed" },
        { SVFF_CAUSE_NUMVFS, ENODEV,
          "the PF is gone (hot-removed) or its driver was unbound meanwhile" },
        { SVFF_CAUSE_NUMVFS, EINVAL,
          "the PF driver refused that count (some drivers accept only certain counts, or fewer than "
          "sriov_totalvfs because of the firmware's setting)" },
        { SVFF_CAUSE_BIND, EBUSY,
          "the device is already bound to a driver, which still holds it" },
        { SVFF_CAUSE_BIND, ENODEV,
          "the driver does not match the device (driver_override was not taken) or the device is gone" },
        { SVFF_CAUSE_BIND, EIO,
          "the device failed to respond (the kernel log says why); it may need a reset" },
        { SVFF_CAUSE_BIND, ENOSPC,
          "no free interrupt vectors were left for the device's driver" },
        { SVFF_CAUSE_BIND, ENOMEM,
          "the driver ran out of memory while taking the device" },
        { SVFF_CAUSE_PROBE, ENOSPC,
          "the driver's probe found no free MSI-X or interrupt vectors" },
        { SVFF_CAUSE_PROBE, ENOMEM,
          "the driver's probe ran out of memory or resources" },
        { SVFF_CAUSE_PROBE, EBUSY,
          "the device is still held by another driver" },
        { SVFF_CAUSE_PROBE, EIO,
          "the device failed the driver's probe (the kernel log says why)" },
        { SVFF_CAUSE_PROBE, ENODEV,
          "no driver matched the device, or it is gone" },
        { SVFF_CAUSE_ATTACH, EBUSY,
          "the VF is in use by another domain or host driver" },
        { SVFF_CAUSE_ATTACH, ENOSPC,
          "the domain or host has no free interrupt vectors or slots for another device" },
        { SVFF_CAUSE_ATTACH, ENOMEM,
          "the host could not map the domain's memory for the device (locked memory limit?)" },
        { SVFF_CAUSE_ATTACH, EIO,
          "the device failed while being handed over (the kernel log says why)" },
        { SVFF_CAUSE_ATTACH, ENODEV,
          "the VF is gone (its PF's VFs were disabled, or the PF was removed)" },
};

const char *svff_cause(enum svff_cause_step step, int r) {
        int e = r < 0 ? -r : r;

        for (size_t i = 0; i < ELEMENTSOF(causes); i++)
                if (causes[i].step == step && causes[i].errnum == e)
                        return causes[i].text;
        return NULL;
}

int svff_pf_vf_limits(struct svff_ctx *ctx, const char *pf, unsigned *ret_sysfs_total,
                      unsigned *ret_cap_total) {
        _cleanup_free_ char *path = NULL;
        int rootfd = svff_ctx_get_rootfd(ctx);
        uint64_t total = 0;
        unsigned cap = 0;
        int r, rc;

        if (asprintf(&path, "bus/pci/devices/%s/sriov_totalvfs", pf) < 0) {
                path = NULL;
                return -ENOMEM;
        }
        r = svff_sysfs_read_u64(rootfd, path, &total);
        if (r < 0)
                total = 0;
        /* Through libpci: config space past 64 bytes needs CAP_SYS_ADMIN,
         * so an unreadable capability is "not exposed" (0). */
        {
                struct svff_sriov_cap c;

                rc = svff_pci_read_sriov_cap(ctx, pf, &c);
                if (rc >= 0)
                        cap = c.total_vfs;
        }
        if (r < 0 && rc < 0)
                return r;
        if (ret_sysfs_total)
                *ret_sysfs_total = total > UINT16_MAX ? UINT16_MAX : (unsigned) total;
        if (ret_cap_total)
                *ret_cap_total = cap;
        return 0;
}

int svff_vf_limits_phrase(unsigned total, unsigned cap, unsigned msix, char **ret) {
        _cleanup_free_ char *limit = NULL, *vectors = NULL;
        int r = 0;

        *ret = NULL;
        if (total > 0 && cap == 0)
                r = asprintf(&limit, "the PF driver allows %u VFs (sriov_totalvfs)", total);
        else if (total > 0 && cap == total)
                r = asprintf(&limit, "the PF allows %u VFs (sriov_totalvfs, as the SR-IOV capability's TotalVFs)",
                             total);
        else if (total > 0 && cap > total)
                r = asprintf(&limit, "the PF driver allows %u VFs (sriov_totalvfs) of the %u the device's "
                             "SR-IOV capability offers (TotalVFs): the driver or the firmware's setting "
                             "lowers it", total, cap);
        else if (cap > 0)
                r = asprintf(&limit, "the device's SR-IOV capability offers %u VFs (TotalVFs)", cap);
        if (r < 0) {
                limit = NULL;
                return -ENOMEM;
        }
        /* The vectors are shared: the more VFs, the fewer each gets, and
         * a driver that needs a minimum per VF refuses the count. */
        if (msix > 0 && asprintf(&vectors, "its VFs share %u MSI-X vectors (sriov_vf_total_msix)", msix) < 0) {
                vectors = NULL;
                return -ENOMEM;
        }
        if (!limit && !vectors)
                return 0;
        if (asprintf(ret, "%s%s%s", limit ?: "", limit && vectors ? "; " : "", vectors ?: "") < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

int svff_pf_vf_limits_describe(struct svff_ctx *ctx, const char *pf, char **ret) {
        _cleanup_free_ char *path = NULL;
        unsigned total = 0, cap = 0;
        uint64_t msix = 0;
        int r;

        *ret = NULL;
        r = svff_pf_vf_limits(ctx, pf, &total, &cap);
        if (r < 0)
                return 0;
        if (asprintf(&path, "bus/pci/devices/%s/sriov_vf_total_msix", pf) < 0) {
                path = NULL;
                return -ENOMEM;
        }
        if (svff_sysfs_read_u64(svff_ctx_get_rootfd(ctx), path, &msix) < 0 || msix > UINT32_MAX)
                msix = 0;
        return svff_vf_limits_phrase(total, cap, (unsigned) msix, ret);
}

/* "VF 0000:01:00.4 on 'vfio-pci', ..." for the VFs of pf that sysfs shows
 * bound to a driver (the first few), or NULL. */
static int vf_holders(struct svff_ctx *ctx, const char *pf, char **ret) {
        int rootfd = svff_ctx_get_rootfd(ctx);
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, shown = 0, held = 0;
        FILE *f;

        *ret = NULL;
        f = open_memstream(&buf, &len);
        if (!f)
                return -ENOMEM;
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
                if (svff_sysfs_readlink_base(rootfd, link, &drv) < 0 || !drv)
                        continue;
                held++;
                if (shown < 4) {
                        fprintf(f, "%sVF %s on '%s'", shown ? ", " : "held: ", vf, drv);
                        shown++;
                }
        }
        if (held > shown)
                fprintf(f, " and %zu more", held - shown);
        if (fclose(f) != 0)
                return -ENOMEM;
        if (held > 0)
                *ret = TAKE_PTR(buf);
        return 0;
}

int svff_cause_describe(struct svff_ctx *ctx, enum svff_cause_step step, const char *address, int r,
                        char **ret) {
        _cleanup_free_ char *extra = NULL, *holder = NULL, *path = NULL;
        const char *c = svff_cause(step, r);
        int k;

        *ret = NULL;
        if (step == SVFF_CAUSE_NUMVFS && (r == -ENOSPC || r == -ENOMEM || r == -EINVAL || r == -ERANGE))
                (void) svff_pf_vf_limits_describe(ctx, address, &extra);
        if (r == -EBUSY && step == SVFF_CAUSE_NUMVFS) {
                k = vf_holders(ctx, address, &extra);
                if (k < 0)
                        return k;
        } else if (r == -EBUSY) {
                if (asprintf(&path, "bus/pci/devices/%s/driver", address) < 0) {
                        path = NULL;
                        return -ENOMEM;
                }
                if (svff_sysfs_readlink_base(svff_ctx_get_rootfd(ctx), path, &holder) >= 0 && holder) {
                        free(extra);
                        if (asprintf(&extra, "held by driver '%s'", holder) < 0) {
                                extra = NULL;
                                return -ENOMEM;
                        }
                }
        }
        if (!c && !extra)
                return 0;
        k = asprintf(ret, "%s%s%s", c ?: "", c && extra ? "; " : "", extra ?: "");
        if (k < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return 0;
}

static bool dev_has(int rootfd, const char *address, const char *attr) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "bus/pci/devices/%s/%s", address, attr) < 0) {
                path = NULL;
                return false;
        }
        return svff_sysfs_exists(rootfd, path) > 0;
}

const char *svff_dev_kind(struct svff_ctx *ctx, const char *address) {
        _cleanup_free_ char *path = NULL;
        int rootfd = svff_ctx_get_rootfd(ctx);
        uint64_t class;

        if (dev_has(rootfd, address, "physfn"))
                return "VF";
        if (dev_has(rootfd, address, "sriov_totalvfs"))
                return "PF";
        if (asprintf(&path, "bus/pci/devices/%s/class", address) < 0) {
                path = NULL;
                return "PCI device";
        }
        if (svff_sysfs_read_hex(rootfd, path, &class) >= 0) {
                if ((class >> 8) == 0x0600)
                        return "host bridge";
                if ((class >> 16) == 0x06)
                        return "PCI bridge";
        }
        return "PCI device";
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <string.h>

#include "device.h"
#include "iommu.h"
#include "sysfs.h"

#define PCI_CLASS_BRIDGE_PCI 0x0604

int svff_iommu_group_of(struct svff_ctx *ctx, const char *address, int *ret) {
        _cleanup_free_ char *path = NULL, *s = NULL;
        char addr[SVFF_PCI_ADDR_STRLEN];
        char *end;
        long v;
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        r = svff_pci_addr_canonicalize(address, addr);
        if (r < 0)
                return r;

        if (asprintf(&path, "bus/pci/devices/%s/iommu_group", addr) < 0)
                return -ENOMEM;
        r = svff_sysfs_readlink_base(svff_ctx_get_rootfd(ctx), path, &s);
        if (r == -ENOENT && svff_dev_exists(ctx, addr) == 0)
                return -ENODEV;
        if (r < 0)
                return r;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end != '\0' || v < 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

int svff_iommu_group_members(struct svff_ctx *ctx, int group, char ***ret) {
        _cleanup_free_ char *path = NULL;

        if (!ctx || !ret || group < 0)
                return -EINVAL;
        if (asprintf(&path, "kernel/iommu_groups/%d/devices", group) < 0)
                return -ENOMEM;
        return svff_sysfs_list_dir(svff_ctx_get_rootfd(ctx), path, ret);
}

int svff_iommu_group_viable(struct svff_ctx *ctx, int group, char **ret_blocker,
                            struct svff_error *err) {
        return svff_iommu_group_viable_with(ctx, group, NULL, ret_blocker, err);
}

int svff_iommu_group_viable_with(struct svff_ctx *ctx, int group, const char *bound, char **ret_blocker,
                                 struct svff_error *err) {
        _cleanup_strv_free_ char **members = NULL;
        int rootfd, r;

        if (!ctx)
                return -EINVAL;
        r = svff_iommu_group_members(ctx, group, &members);
        if (r == -ENOENT)
                return svff_error_set(err, -ENOENT,
                                      "No IOMMU group %d: is the IOMMU enabled (intel_iommu=on / amd_iommu)?",
                                      group);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot list IOMMU group %d", group);

        rootfd = svff_ctx_get_rootfd(ctx);
        for (char **m = members; *m; m++) {
                _cleanup_free_ char *driver = NULL, *driver_path = NULL, *class_path = NULL;
                uint64_t class;

                if (bound && streq(*m, bound))
                        continue;
                /* Through the group's own links: they name exactly the
                 * devices the kernel put in it. */
                if (asprintf(&driver_path, "kernel/iommu_groups/%d/devices/%s/driver", group, *m) < 0 ||
                    asprintf(&class_path, "kernel/iommu_groups/%d/devices/%s/class", group, *m) < 0)
                        return -ENOMEM;

                r = svff_sysfs_readlink_base(rootfd, driver_path, &driver);
                if (r == -ENOENT) {
                        driver = NULL;
                        r = 0;
                }
                if (r < 0)
                        return svff_error_set_errno(err, r, "Cannot read the driver of '%s' in IOMMU group %d",
                                                    *m, group);
                if (!driver || streq(driver, "vfio-pci"))
                        continue;

                r = svff_sysfs_read_hex(rootfd, class_path, &class);
                if (r >= 0 && class >> 8 == PCI_CLASS_BRIDGE_PCI)
                        continue;

                {
                        _cleanup_free_ char *pf_path = NULL;

                        if (asprintf(&pf_path, "kernel/iommu_groups/%d/devices/%s/sriov_totalvfs", group, *m) < 0)
                                return -ENOMEM;
                        /* Never advise unbinding a PF: that destroys its VFs. */
                        if (svff_sysfs_exists(rootfd, pf_path) > 0)
                                svff_error_set(err, -EBUSY,
                                               "IOMMU group %d is not viable: it holds SR-IOV PF '%s' (on '%s') "
                                               "with its VFs, because the platform does not isolate them (no "
                                               "ACS); no VF of that group can go to a VM, and binding the PF "
                                               "away would destroy every VF. Use VFs of a PF behind an "
                                               "ACS-capable port ('lspci -vvv' shows Access Control Services)",
                                               group, *m, driver);
                        else
                                svff_error_set(err, -EBUSY,
                                               "IOMMU group %d is not viable: member '%s' is bound to '%s'; bind "
                                               "it to vfio-pci or unbind it (every device in a group goes to "
                                               "the same VM)", group, *m, driver);
                }
                if (ret_blocker) {
                        char *b = strdup(*m);
                        if (!b)
                                return -ENOMEM;
                        *ret_blocker = b;
                }
                return 0;
        }
        return 1;
}

char *svff_iommu_vf_unassignable(const char *vf, int vf_group, const char *pf, int pf_group) {
        char *msg;

        if (vf_group < 0 || vf_group != pf_group)
                return NULL;
        if (asprintf(&msg, "VF %s shares IOMMU group %d with its PF %s: the platform does not isolate them (no "
                     "ACS), so the VF cannot go to a VM, and binding the PF away would destroy every VF", vf,
                     vf_group, pf) < 0)
                return NULL;
        return msg;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* IOMMU groups. A group can be handed to a VM only when every member is
 * bound to vfio-pci, unbound, or a PCI bridge (which vfio tolerates). */

#include "context.h"
#include "error.h"

/* The group number of address, -ENOENT when it has none (no IOMMU). */
int svff_iommu_group_of(struct svff_ctx *ctx, const char *address, int *ret);

/* Member addresses of group, sorted. */
int svff_iommu_group_members(struct svff_ctx *ctx, int group, char ***ret);

/* Returns 1 when group is viable, 0 when not (ret_blocker, if non-NULL,
 * gets the first member that is bound to another driver, and err says
 * which driver), <0 on error (-ENOENT: no such group). */
int svff_iommu_group_viable(struct svff_ctx *ctx, int group, char **ret_blocker,
                            struct svff_error *err);
/* The same, with member bound (NULL: none) taken as on vfio-pci: a
 * device that is to be bound there first (an attach's dry run). */
int svff_iommu_group_viable_with(struct svff_ctx *ctx, int group, const char *bound, char **ret_blocker,
                                 struct svff_error *err);

/* Why a VF in group vf_group cannot go to a VM on its own when its PF is
 * in pf_group: NULL when it can (or without an IOMMU), else a message
 * (malloc'ed) saying that the platform groups the VF with its own PF, so
 * that only binding the PF away, which destroys every VF, would make the
 * group viable. */
char *svff_iommu_vf_unassignable(const char *vf, int vf_group, const char *pf, int pf_group);

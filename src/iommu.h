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

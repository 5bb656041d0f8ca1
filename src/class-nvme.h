/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The NVMe class (svff_class_nvme in the registry) with its admin
 * commands going through ops in place of libnvme's: the seam where the
 * tests put a stand-in for a PF's admin queue. userdata goes to
 * ops->open. Otherwise the class's open (class.h). */

#include "class.h"
#include "nvme-adapter.h"

int svff_class_nvme_open_with(struct svff_ctx *ctx, const struct svff_pf *pf, const struct svff_nvme_ops *ops,
                              void *userdata, struct svff_class_pf **ret, struct svff_error *err);

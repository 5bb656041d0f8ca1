/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NVMe class: each VF's secondary controller (its flexible queue and
 * interrupt resources, online state) and the namespaces attached to it,
 * through the PF's admin queue. */

#include <errno.h>
#include <string.h>

#include "class.h"

/* PCI class 01h (mass storage), subclass 08h (non-volatile memory). The
 * driver is not part of the match: an NVMe PF on another driver is
 * refused by open, by name, instead of being handed out as a bare PCI
 * function whose VFs would be dead controllers. */
static bool nvme_match(struct svff_ctx *ctx, const struct svff_pf *pf) {
        (void) ctx;
        return (pf->class >> 8) == 0x0108;
}

static int nvme_open(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_class_pf **ret,
                     struct svff_error *err) {
        (void) ctx;
        (void) ret;
        return svff_error_set(err, -EOPNOTSUPP, "NVMe class operations on %s are not implemented yet",
                              pf->address);
}

static void nvme_close(struct svff_class_pf *c) {
        (void) c;
}

const struct svff_class svff_class_nvme = {
        .name = "nvme",
        .match = nvme_match,
        .open = nvme_open,
        .close = nvme_close,
};

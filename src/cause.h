/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What the kernel's errno means for the operator. sysfs writes answer
 * with a bare errno; the same number means different things for a VF
 * count write, a bind and a probe, and "No space left on device" on
 * sriov_numvfs says nothing about interrupt vectors. One table, used by
 * every message that carries such an errno (sriov.c, bind.c), by Status
 * and by the reconf plan, so the explanation is the same everywhere. */

#include <stdbool.h>

#include "context.h"

enum svff_cause_step {
        SVFF_CAUSE_NUMVFS,      /* writing sriov_numvfs */
        SVFF_CAUSE_BIND,        /* driver_override, unbind, bind */
        SVFF_CAUSE_PROBE,       /* drivers_probe: the driver's probe() */
        SVFF_CAUSE_ATTACH,      /* handing a VF to a domain */
};

/* The likely cause of -r at step and what to do about it, as a phrase
 * ("the PF driver found no free MSI-X ... : ask for fewer VFs ..."), or
 * NULL when the table has nothing better than strerror(). Static text. */
const char *svff_cause(enum svff_cause_step step, int r);

/* The VF limits a PF shows: sriov_totalvfs (what the PF driver allows,
 * which it may set below the hardware's) and TotalVFs from the SR-IOV
 * capability in config space (what the device or its firmware offers).
 * A limit sysfs does not expose is 0. Returns 0, or -errno when neither
 * can be read. */
int svff_pf_vf_limits(struct svff_ctx *ctx, const char *pf, unsigned *ret_sysfs_total,
                      unsigned *ret_cap_total);

/* The VF limits as a phrase, from numbers already read (0: not known):
 * total sriov_totalvfs, cap the capability's TotalVFs, msix the MSI-X
 * vectors the VFs share (sriov_vf_total_msix). *ret is malloc'd, NULL
 * when nothing is known. */
int svff_vf_limits_phrase(unsigned total, unsigned cap, unsigned msix, char **ret);

/* The limits as a phrase for a message: "the PF driver allows 7 VFs
 * (sriov_totalvfs); the device's SR-IOV capability offers 8 (TotalVFs)".
 * *ret is malloc'd, NULL when the PF shows no limit. */
int svff_pf_vf_limits_describe(struct svff_ctx *ctx, const char *pf, char **ret);

/* The cause of -r at step on address (a PF for NUMVFS, the device being
 * bound otherwise) as one malloc'd phrase: svff_cause() plus what sysfs
 * shows about it, the VF limits for NUMVFS and the driver holding the
 * device for EBUSY. NULL in *ret when nothing is known. */
int svff_cause_describe(struct svff_ctx *ctx, enum svff_cause_step step, const char *address, int r,
                        char **ret);

/* What address is, for messages that must name it right: "VF", "PF"
 * (has SR-IOV), "PCI bridge", "host bridge" or "PCI device". Static
 * text; "PCI device" also when it cannot be told. */
const char *svff_dev_kind(struct svff_ctx *ctx, const char *address);

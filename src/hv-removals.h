/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <stdbool.h>
#include <stdint.h>

#include "sysfs.h"       /* usec_t */

/* The sizes of what identifies a removal; the libvirt adapter
 * (hypervisor.h) sits on top of this module and uses them too. */
#define SVFF_UUID_STRLEN 37        /* VIR_UUID_STRING_BUFLEN */
#define SVFF_ALIAS_MAX 64

/* The device removals libvirt reported (its DEVICE_REMOVED event), so
 * that a detach waits for the one it asked for instead of polling the
 * domain's XML. The event thread notes each removal; any thread waits.
 *
 *   seq = svff_hv_removals_seq(r);           before the detach request
 *   ... request the detach ...
 *   if (svff_hv_removals_wait(r, uuid, alias, &seq, until) <= 0)
 *           ... timeout, or fell behind: check the XML yourself ...
 *
 * Only the last SVFF_HV_REMOVALS_KEPT removals are kept: a waiter that
 * fell further behind is told so (-ESTALE), and must check. */
#define SVFF_HV_REMOVALS_KEPT 64

struct svff_hv_removals;

int svff_hv_removals_new(struct svff_hv_removals **ret);
struct svff_hv_removals *svff_hv_removals_free(struct svff_hv_removals *r);

void svff_hv_removals_note(struct svff_hv_removals *r, const char *uuid, const char *alias);
uint64_t svff_hv_removals_seq(struct svff_hv_removals *r);

/* Waits until a removal of alias from the domain with uuid was noted
 * after *seq (1), or until deadline (CLOCK_MONOTONIC usec; 0). -ESTALE
 * when removals after *seq are no longer kept: the device may be among
 * them. *seq moves past what was looked at. */
int svff_hv_removals_wait(struct svff_hv_removals *r, const char *uuid, const char *alias, uint64_t *seq,
                          usec_t deadline);

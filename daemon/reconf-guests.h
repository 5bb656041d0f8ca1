/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How each domain's guest will see a reconf of a PF: for every live
 * assignment, the hotplug its VF's guest address gets (read from the
 * domain's live XML, src/hypervisor.h), whether its NVMe multipath head
 * can outlive the unplug, and how long the domain is predicted to be
 * without the device. A reconf (and its dry run) reads it first, and a
 * port without hotplug refuses the reconf before anything is touched.
 * The prediction is reconf-predict.h's. */

#include <stdbool.h>
#include <stddef.h>

#include "reconf-predict.h"

struct manager;

/* guests[0..n) (taken, free()) for the items asked, in their order; n 0
 * and guests NULL when libvirt could not be asked. On the main thread. */
typedef void (*reconf_guests_done_t)(struct manager *m, struct reconf_guest *guests, size_t n, void *userdata);

/* Reads the live XML of the domain of each live item of items[0..n)
 * (borrowed, copied) on the libvirt pool, and with agent, where the
 * domain's guest agent is connected, the guest's NVMe heads through it
 * (src/guest-agent.h: read-only): once per domain, for at most
 * RECONF_GUESTS_AGENT_TIMEOUT_USEC each and RECONF_GUESTS_AGENT_BUDGET_USEC
 * for all, one domain after another, so that the dry run answers well
 * within svffctl's 30 s; a domain past the budget is not asked (its
 * readiness unknown, and the reason). 1 when started (done follows), 0
 * when there is nothing to read (no live item, or libvirt is not
 * connected: done is not called), -ENOMEM. */
int reconf_guests_start(struct manager *m, const struct svff_reconf_item *items, size_t n, bool agent,
                        reconf_guests_done_t done, void *userdata);

#define RECONF_GUESTS_AGENT_TIMEOUT_USEC (5 * USEC_PER_SEC)
#define RECONF_GUESTS_AGENT_BUDGET_USEC (15 * USEC_PER_SEC)


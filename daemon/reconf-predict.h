/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The guest view of a reconf's plan, and each live assignment's
 * predicted device downtime: pure, from the plan, each domain's live XML
 * as reconf-guests.h reads it, and svffd's own figures.
 *
 * The prediction (milliseconds, per domain): the longest quiesce of any
 * domain of the PF (the numvfs writes wait for every one: per device
 * RECONF_GUEST_ACPI_UNPLUG_MSEC with ACPI hotplug, and
 * RECONF_GUEST_NATIVE_UNPLUG_MSEC with native PCIe hotplug, where a Linux
 * guest waits 5 s after the attention button and 1 s after the power-off),
 * then RECONF_GUEST_HOST_MSEC for the numvfs writes and the binding, then
 * RECONF_GUEST_REATTACH_MSEC per device of the domain put back.
 *
 * Where svffd has carried out a reconf of the PF since it started, its
 * own figures from the last one replace these: a domain's hot-unplug and
 * re-attach per device as measured for that domain, and the host part
 * (from the last quiesce's end to the first restore's start) for the PF. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

#include "guest-agent.h"
#include "hypervisor.h"
#include "reconf.h"

#define RECONF_GUEST_ACPI_UNPLUG_MSEC 1000
#define RECONF_GUEST_NATIVE_UNPLUG_MSEC 6000
#define RECONF_GUEST_HOST_MSEC 1500
#define RECONF_GUEST_REATTACH_MSEC 500

/* What the guest agent said of the guest's NVMe heads. */
enum reconf_guest_agent {
        RECONF_GUEST_AGENT_NONE,        /* not asked: no agent connected, or no dry run of an NVMe PF */
        RECONF_GUEST_AGENT_UNANSWERED,  /* asked, no usable answer: agent_error says why */
        RECONF_GUEST_AGENT_READ,
};

/* One live assignment's domain as its live XML (and its guest agent) says. */
struct reconf_guest {
        char vf[SVFF_PCI_ADDR_STRLEN];
        char uuid[SVFF_UUID_STRLEN];
        bool running;                   /* the domain runs: its guest sees the reconf */
        enum svff_hv_hotplug hotplug;
        char port[SVFF_HV_PORT_MAX];    /* the controller of its guest address, "" unknown */
        char guest_address[SVFF_PCI_ADDR_STRLEN];   /* the record's, else the live XML's */
        enum reconf_guest_agent agent;
        /* the VF's namespace as svff recorded it, which the guest's head
         * is matched by; "" and 0: unknown, every head counts */
        char want_nqn[SVFF_GA_NQN_MAX];
        uint32_t want_nsid;
        char agent_head[SVFF_GA_HEAD_MAX];          /* the head kept the shortest, "" none */
        unsigned agent_delayed_removal_sec;         /* its delayed_removal_secs */
        char agent_error[192];
};

/* What the last reconf of a PF measured, per domain. */
struct reconf_domain_figure {
        char uuid[SVFF_UUID_STRLEN];
        uint64_t unplug_usec;           /* its hot-unplug, per device */
        uint64_t reattach_usec;         /* its re-attach, per device */
};

struct reconf_figures;

/* Records in *list (a new one: NULL) what a reconf of pf measured: host_usec (0: not measured,
 * the earlier figure stays) and domains[0..n) (each replaces that
 * domain's earlier figure). -ENOMEM, with nothing recorded. */
int reconf_figures_record(struct reconf_figures **list, const char *pf, uint64_t host_usec,
                          const struct reconf_domain_figure *domains, size_t n);
/* The figures for pf in list, or NULL. Borrowed, until the next record. */
const struct reconf_figures *reconf_figures_get(const struct reconf_figures *list, const char *pf);
/* Frees list; returns NULL. */
struct reconf_figures *reconf_figures_free(struct reconf_figures *list);

/* The guest view of each assignment of plan, from guests[0..n)
 * (matched by VF and domain UUID; an item without one is "offline" when
 * not live, else "unknown"): a new array of ReconfGuest (interface.c).
 * nvme: the PF is an NVMe controller; recent: svffd's figures for the
 * PF, or NULL. *ret_refused (optional): the index
 * in plan->items of the first one whose port has no hotplug, else -1. */
struct json_object *reconf_guests_json(const struct svff_reconf_plan *plan, const struct reconf_guest *guests,
                                       size_t n, bool nvme, const struct reconf_figures *recent, int *ret_refused);

/* The guest of plan->items[i] as guests[0..n) has it, or NULL. */
const struct reconf_guest *reconf_guests_find(const struct svff_reconf_plan *plan, size_t i,
                                              const struct reconf_guest *guests, size_t n);

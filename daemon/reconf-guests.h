/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* How each domain's guest will see a reconf of a PF: for every live
 * assignment, the hotplug its VF's guest address gets (read from the
 * domain's live XML, src/hypervisor.h), whether its NVMe multipath head
 * can outlive the unplug, and how long the domain is predicted to be
 * without the device. A reconf (and its dry run) reads it first, and a
 * port without hotplug refuses the reconf before anything is touched.
 *
 * The prediction (milliseconds, per domain): the longest quiesce of any
 * domain of the PF (the numvfs writes wait for every one: per device
 * RECONF_GUEST_ACPI_UNPLUG_MSEC with ACPI hotplug, and
 * RECONF_GUEST_NATIVE_UNPLUG_MSEC with native PCIe hotplug, where a Linux
 * guest waits 5 s after the attention button and 1 s after the power-off),
 * then RECONF_GUEST_HOST_MSEC for the numvfs writes and the binding, then
 * RECONF_GUEST_REATTACH_MSEC per device of the domain put back. */

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "hypervisor.h"
#include "reconf.h"

struct manager;

#define RECONF_GUEST_ACPI_UNPLUG_MSEC 1000
#define RECONF_GUEST_NATIVE_UNPLUG_MSEC 6000
#define RECONF_GUEST_HOST_MSEC 1500
#define RECONF_GUEST_REATTACH_MSEC 500

/* One live assignment's domain as its live XML says. */
struct reconf_guest {
        char vf[SVFF_PCI_ADDR_STRLEN];
        char uuid[SVFF_UUID_STRLEN];
        bool running;                   /* the domain runs: its guest sees the reconf */
        enum svff_hv_hotplug hotplug;
        char port[SVFF_HV_PORT_MAX];    /* the controller of its guest address, "" unknown */
        char guest_address[SVFF_PCI_ADDR_STRLEN];   /* the record's, else the live XML's */
};

/* guests[0..n) (taken, free()) for the items asked, in their order; n 0
 * and guests NULL when libvirt could not be asked. On the main thread. */
typedef void (*reconf_guests_done_t)(struct manager *m, struct reconf_guest *guests, size_t n, void *userdata);

/* Reads the live XML of the domain of each live item of items[0..n)
 * (borrowed, copied) on the libvirt pool. 1 when started (done follows),
 * 0 when there is nothing to read (no live item, or libvirt is not
 * connected: done is not called), -ENOMEM. */
int reconf_guests_start(struct manager *m, const struct svff_reconf_item *items, size_t n,
                        reconf_guests_done_t done, void *userdata);

/* The guest view of each assignment of plan, from guests[0..n)
 * (matched by VF and domain UUID; an item without one is "offline" when
 * not live, else "unknown"): a new array of ReconfGuest (interface.c).
 * nvme: the PF is an NVMe controller. *ret_refused (optional): the index
 * in plan->items of the first one whose port has no hotplug, else -1. */
struct json_object *reconf_guests_json(const struct svff_reconf_plan *plan, const struct reconf_guest *guests,
                                       size_t n, bool nvme, int *ret_refused);

/* The guest of plan->items[i] as guests[0..n) has it, or NULL. */
const struct reconf_guest *reconf_guests_find(const struct svff_reconf_plan *plan, size_t i,
                                              const struct reconf_guest *guests, size_t n);

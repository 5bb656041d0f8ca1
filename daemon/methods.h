/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Method dispatch for the varlink server: org.varlink.service and io.svff.
 * Reads (Ping, List, Status, Show, Monitor, GetInfo, GetInterfaceDescription)
 * are answered for any peer; the methods that change devices are
 * flagged in the method table, which checks the peer and svff.conf's
 * manage list before they run. */

#include "manager.h"
#include "server.h"

void methods_dispatch(struct call *call, void *userdata);

/* The List JSON of one PF (store-aware: managed, original driver,
 * assignment). */
struct json_object *json_pf(struct manager *m, const struct svff_pf *pf);

/* The metrics file's sample (metrics.h's collect callback): Status's
 * PFs with their owners, assignments, drift (without the device classes'
 * drift, which needs the devices read) and operations. */
void methods_collect_metrics(struct manager *m, struct metrics_sample *s);
/* The metrics file's look at the host (metrics_set_poller()): a fresh
 * picture, the device classes' drift and the NIC VFs' counters, kept in
 * m for methods_collect_metrics(). */
void methods_poll_metrics(struct manager *m);

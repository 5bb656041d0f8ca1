/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Drift: where the host no longer matches what the store records (PFs
 * gone, a VF count changed behind svffd's back, VFs missing or on another
 * driver, an operation interrupted by a crash). Computed from the store
 * and a snapshot, never acted on: svffd reports drift and keeps every
 * stored fact until an operator's command changes it.
 * The journal it reads is journal.h's. */

#include <json-c/json.h>

#include "manager.h"

/* A new JSON array of Drift objects (see the interface). */
struct json_object *reconcile_drift(struct manager *m);

/* A new JSON array of GoneVF objects (see the interface): each
 * assignment whose VF does not exist, outside an operation in flight;
 * with absent_pfs, also those of a recorded PF that is not present. */
struct json_object *reconcile_gone(struct manager *m, bool absent_pfs);

/* Logs every drift (start-up), as reconcile_drift() finds it: none on a
 * PF whose operation is under way. Returns how many there are. */
size_t reconcile_log(struct manager *m);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Drift: where the host no longer matches what the store records (PFs
 * gone, a VF count changed behind svffd's back, VFs missing or on another
 * driver, an operation interrupted by a crash). Computed from the store
 * and a snapshot, never acted on: svffd reports drift and keeps every
 * stored fact until an operator's command changes it.
 *
 * The journal of operations in progress lives here too: one entry per PF
 * under {"op": "operations", "pfs": {"<PF>": {...}}}, so operations on
 * different PFs can overlap. */

#include <json-c/json.h>

#include "manager.h"

/* A new JSON array of Drift objects (see the interface). */
struct json_object *reconcile_drift(struct manager *m);

/* Logs every drift (start-up). Returns how many there are. */
size_t reconcile_log(struct manager *m);

/* Journal entries, in the store document (commit to persist). entry is
 * taken. */
int journal_set(struct manager *m, const char *pf, struct json_object *entry);
void journal_clear(struct manager *m, const char *pf);
/* Whether a journal entry started at started_usec (CLOCK_REALTIME, 0:
 * unknown) was left by an earlier svffd, i.e. svffd stopped since. */
bool journal_left_by_earlier_run(struct manager *m, uint64_t started_usec);
/* The entry for pf (borrowed) or NULL. */
struct json_object *journal_get(struct manager *m, const char *pf);

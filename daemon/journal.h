/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal of operations in progress, in the store document: one
 * entry per PF under {"op": "operations", "pfs": {"<PF>": {...}}}, so
 * operations on different PFs can overlap. What an entry says is its
 * operation's business (reconf-journal.h encodes a reconf's); this only
 * keeps them. Nothing is written until the store is committed. */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "manager.h"

/* entry is taken. */
int journal_set(struct manager *m, const char *pf, struct json_object *entry);
void journal_clear(struct manager *m, const char *pf);
/* Whether a journal entry started at started_usec (CLOCK_REALTIME, 0:
 * unknown) was left by an earlier svffd, i.e. svffd stopped since. */
bool journal_left_by_earlier_run(struct manager *m, uint64_t started_usec);
/* The entry for pf (borrowed) or NULL. */
struct json_object *journal_get(struct manager *m, const char *pf);
/* Whether a journal entry's plan names vf among its assignments. */
bool journal_entry_names_vf(struct json_object *entry, const char *vf);
/* Every entry, keyed by PF (borrowed), or NULL when there is none. */
struct json_object *journal_entries(struct manager *m);
/* Whether pf's journal holds a reconf that needs libvirt, which is not
 * connected, and that svffd recovers by itself once it is
 * (reconf_recover runs on each connect): no operation runs on pf, and
 * it is no reprogram left for the operator. */
bool journal_recovery_waits(struct manager *m, const char *pf);

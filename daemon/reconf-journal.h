/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The journal entry of a reconf, encoded and decoded: a pure module (no
 * store, no I/O), so a unit test reaches every form it may meet.
 *
 *   { "op": "reconf",
 *     "phase": "quiesce" | "numvfs" | "provision" | "bind" | "rollback",
 *     "numvfs": TARGET, "started_usec": N, "plan": PLAN (src/reconf.h),
 *     "rollback": { "numvfs": COUNT, "reason": "..." | null }?,
 *     "class": { "<VF index>": CLASS-STATE, ... }?,
 *     "reprogram": { "image": PATH, "image_identity": IDENTITY?,
 *                    "image_before": IDENTITY?,
 *                    "ids": ["vvvv:dddd", ...],
 *                    "flashed": BOOL, "reason": "..." | null,
 *                    "flash_unit": UNIT? }?,
 *     "owner": "operator" | "policy:<name>"? }
 *
 * A reprogram adds the phases "remove" (the VFs are gone, the PF is being
 * taken off the bus), "flash" (the hook may be running: never resumed,
 * unless it runs in the systemd unit "flash_unit" names, whose result
 * the next start takes up), "rescan" (the hook succeeded) and "interrupted" (the flash is not known
 * to have succeeded, or the PF did not come back as the policy allows:
 * the assignments stay paused until reprogram or reconf runs again).
 * IDENTITY is which file the hook wrote ({path, dev, ino, size,
 * mtime_nsec, ctime_nsec}, src/flash-hook.h), there from the rescan on
 * when the file was the same before and after the hook ran: the store's
 * "image" of the PF drops when the journal enters "flash" and is set
 * from it when the journal says "flashed". "image_before" is the file
 * as the PF was removed, in phase "flash": a flash unit's result taken
 * up after a restart is compared with it.
 * With a policy's "verify_image": "sha256", an IDENTITY also holds
 * "sha256", its content's hash.
 *
 * "rollback" is written before the first step of a rollback; an entry in
 * phase "rollback" without it (an older svffd) goes back to the plan's
 * "from" count, the only one a rollback goes back to.
 *
 * "provision" (the VFs exist, their device-class provisioning may have
 * started) and "class" (each surviving VF's device-class state, a JSON
 * object of its class, src/class.h, kept verbatim) are later additions:
 * an entry without them reads as before.
 *
 * "owner" (a later addition too) is who owns the PF's VF count once the
 * reconf has gone through: whoever asked for it, so that a recovery
 * records the same owner as the run it completes. An entry without it
 * leaves the owner as it is. */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "reconf.h"

struct reconf_journal {
        const char *phase;              /* borrowed from the entry */
        unsigned numvfs;                /* the target count */
        uint64_t started_usec;
        bool rollback;                  /* the run was going back */
        unsigned rollback_to;
        const char *rollback_reason;    /* borrowed, may be NULL */
        struct svff_reconf_plan *plan;  /* owned */
        struct json_object *classes;    /* borrowed "class" object, or NULL */
        /* A reprogram (svffctl reprogram, reconf --reprogram): the
         * borrowed "reprogram" object, its image, whether the flash hook
         * succeeded and the PF came back, and why it was interrupted. */
        struct json_object *reprogram;
        const char *reprogram_image;
        bool reprogram_flashed;
        const char *reprogram_reason;
        const char *reprogram_flash_unit;       /* the hook's systemd unit, or NULL */
        const char *owner;              /* borrowed, may be NULL */
};

/* A new entry in phase for plan, or NULL (out of memory). */
struct json_object *reconf_journal_encode(const struct svff_reconf_plan *plan, const char *phase,
                                          uint64_t started_usec);

/* Adds the rollback record (count and reason) to e unless it has one
 * already: a recovery keeps the record it found. -ENOMEM. */
int reconf_journal_set_rollback(struct json_object *e, unsigned numvfs, const char *reason);

/* Reads e (borrowed; ret borrows its strings). -ENOENT: not a reconf
 * entry; -EBADMSG: a reconf entry svffd cannot read (the plan, or the
 * phase). ret is untouched on failure. */
int reconf_journal_decode(struct json_object *e, struct reconf_journal *ret);
void reconf_journal_done(struct reconf_journal *j);

/* Sets who owns the PF's count once the reconf went through (NULL:
 * removes it). -ENOMEM. */
int reconf_journal_set_owner(struct json_object *e, const char *owner);

/* Sets (state taken, NULL: removes) the class state of the VF at index
 * in e. -ENOMEM. */
int reconf_journal_set_class(struct json_object *e, unsigned index, struct json_object *state);
/* The class state of the VF at index journaled in j, or NULL. Borrowed. */
struct json_object *reconf_journal_get_class(const struct reconf_journal *j, unsigned index);

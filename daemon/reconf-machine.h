/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The reconf state machine on its own: it executes a plan (src/reconf.h)
 * by driving a small table of operations, and knows nothing of libvirt,
 * sysfs, the store, the event loop or svffd's manager. The real
 * operations (reconf-ops.c) run on svffd's worker pools; a unit test's
 * fake completes them synchronously or in any order.
 *
 * Phases and their safe points (each journal write is a commit op):
 *
 *   journal "quiesce" -> quiesce every attached assignment (one call per
 *   domain) -> journal "numvfs" (records "held") -> set_numvfs(0),
 *   set_numvfs(N) -> journal "provision" (the PF's new VFs) -> provision
 *   each VF -> journal "bind" (only when a VF's class state changed) ->
 *   bind each VF -> restore each survivor (one call per domain) -> the
 *   journal cleared, the records final.
 *
 *   A failure before the count changed rolls back (journal "rollback"
 *   with the count it goes back to, then restore); a refused N after the
 *   0 write rolls back to the count the reconf started from through the
 *   same numvfs, provision and bind steps. A stop (reconf_machine_stop)
 *   lets the step in flight complete, then ends at the next safe point
 *   with the journal kept: a quiesce in flight is rolled back first. A
 *   lost libvirt connection fails what is in flight and keeps the journal
 *   for the next connection.
 *
 * A reprogram (reconf_machine_set_reprogram()) is the same run with the
 * PF taken off the bus between the 0 write and the new count:
 *
 *   ... set_numvfs(0) (always, also from 0) -> journal "remove" ->
 *   remove_pf -> journal "flash" -> flash -> journal "rescan" ->
 *   rescan_wait -> check_identity -> bind_pf -> journal "numvfs"
 *   (reprogram.flashed) -> set_numvfs(N) -> provision, bind, restore
 *   as above.
 *
 *   A crash before the "flash" entry resumes; one in phase "flash"
 *   cannot (the hook may have half-written the device), unless the hook
 *   runs in a systemd unit of its own (flash_unit): then the restart
 *   takes up the unit's result. Neither can
 *   a hook that fails or passes its deadline, or a PF that does not come
 *   back as the policy allows: the journal goes to phase "interrupted",
 *   every quiesced assignment stays paused with its record, and a later
 *   reprogram (from the removal, reconf_machine_resume_reprogram()) or
 *   reconf (from the rescan, without a flash) runs it again. svff never
 *   guesses that a flash succeeded.
 *
 * Every operation is asynchronous: it returns <0 when it could not be
 * started (nothing was done, no completion follows), else it completes
 * exactly once through the reconf_machine_*_done() call it names, on
 * the machine's thread, possibly from inside the operation itself.
 *
 * The machine keeps the executed-steps log: every step that was done (a
 * rollback's with phase "rollback", a numvfs write with the value
 * written), not the plan's steps; a step that failed is not in it. */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "reconf-journal.h"
#include "reconf.h"
#include "store.h"

struct reconf_machine;

/* Where an assignment is, as the machine knows it. */
enum reconf_item_state {
        RECONF_ITEM_UNTOUCHED,          /* not quiesced (paused before, or not reached) */
        RECONF_ITEM_QUIESCED,           /* paused / detached by this reconf */
        RECONF_ITEM_QUIESCE_FAILED,
        RECONF_ITEM_RESTORED,
        RECONF_ITEM_RESTORE_FAILED,
        RECONF_ITEM_RELEASED,
        RECONF_ITEM_LOST_VF,            /* its VF does not exist after the change */
};

struct reconf_item {
        enum reconf_item_state state;
        enum svff_pause_mode mode;      /* how it was quiesced */
        char vf[SVFF_PCI_ADDR_STRLEN];  /* its VF now (same index) */
        bool unrecorded;                /* recovery found no record: nothing to write */
        char guest_address[SVFF_PCI_ADDR_STRLEN];   /* where it came back */
        int r;
        char *message;
        /* The VF's device-class state (src/class.h), verbatim: journaled
         * with the item, handed to provision, never read here. */
        struct json_object *class_state;
};

/* How the run ended, for the caller's reply (mapped to io.svff errors
 * by the caller). */
enum reconf_error {
        RECONF_OK,
        RECONF_ERR_FAILED,              /* some assignment did not come back, or a rollback */
        RECONF_ERR_TIMEOUT,             /* numvfs blocked past its deadline */
        RECONF_ERR_STORE,               /* a commit failed */
        RECONF_ERR_SHUTTING_DOWN,       /* stopped at a safe point */
        RECONF_ERR_INTERRUPTED,         /* a reprogram that cannot go on by itself */
};

/* The PF-wide operations of a reprogram. */
enum reconf_pf_op {
        RECONF_PF_REMOVE,
        RECONF_PF_FLASH,
        RECONF_PF_RESCAN,
        RECONF_PF_IDENTITY,
        RECONF_PF_BIND,
        _RECONF_PF_OP_MAX,
};

/* What an item's assignment record must say at a commit. */
enum reconf_record_action {
        RECONF_RECORD_KEEP,             /* as it is */
        RECONF_RECORD_SET,              /* state, mode (and guest_address if set) */
        RECONF_RECORD_REMOVE,           /* released */
};

struct reconf_record {
        enum reconf_record_action action;
        const char *vf;                 /* where the record belongs now */
        enum svff_assign_state state;
        enum svff_pause_mode mode;
        const char *guest_address;      /* "" or NULL: unchanged */
};

struct reconf_ops {
        /* Takes items[0..n) (all of one domain, in plan order) off their
         * domain: natively paused (mode pause, survivor, live) or
         * detached. Each completes by reconf_machine_quiesce_done(). */
        int (*quiesce)(void *userdata, const size_t *items, size_t n);
        /* Brings the PF to n VFs (through 0 when it has others). One
         * completion: reconf_machine_numvfs_done(). */
        int (*set_numvfs)(void *userdata, unsigned n);
        /* Provisions the VFs at indexes[0..n) (their addresses from
         * numvfs_done) before they are bound or returned to a domain:
         * each completes by reconf_machine_provision_done(). class_state
         * (by VF index, NULL entries) is the journaled state. */
        int (*provision)(void *userdata, const unsigned *indexes, size_t n, struct json_object *const *class_state);
        /* Binds VFs at indexes[0..n) to the plan's driver: each completes
         * by reconf_machine_bind_done(). */
        int (*bind)(void *userdata, const unsigned *indexes, size_t n);
        /* Puts items[0..n) (one domain) back by their mode: unpause
         * (native), re-attach at the recorded address (detach), or, mode
         * none (a recovery that cannot tell), re-attach or unpause the
         * device found in the domain. Each completes by
         * reconf_machine_restore_done(). */
        int (*restore)(void *userdata, const size_t *items, size_t n);
        /* Undoes what the device class set up on the VFs of the
         * released items[0..n), off their domains, before the numvfs
         * write removes them; class_state[k] (borrowed) their journaled
         * records. Optional (NULL: nothing to undo). Each completes by
         * reconf_machine_forget_done(); a failure is said in the item's
         * message, the reconf goes on. */
        int (*release_class)(void *userdata, const size_t *items, size_t n, struct json_object *const *class_state);
        /* Makes the store say what reconf_machine_record() says for every
         * item, the PF's VFs as numvfs_done reported them (when
         * reconf_machine_vfs() changed), and journal (borrowed; NULL: the
         * journal entry cleared), durably. Completes by
         * reconf_machine_commit_done(). */
        int (*commit)(void *userdata, struct json_object *journal);
        /* A reprogram's PF operations (required only for one), each
         * completing by reconf_machine_pf_done() with its op:
         * remove_pf unbinds the PF's driver and removes the PF (success
         * when it is gone already); flash runs the configured hook on
         * image; rescan_wait rescans the PF's bus and waits for the PF at
         * its address; check_identity checks its vendor:device against
         * ids (a JSON array, borrowed; NULL or empty: the one it had) and
         * that its sriov_totalvfs holds numvfs; bind_pf binds the PF's
         * own driver and sets what its class needs before VFs exist. */
        int (*remove_pf)(void *userdata);
        int (*flash)(void *userdata, const char *image);
        /* Optional, for a hook that runs outside svffd (a transient
         * systemd unit): flash_unit names the unit the next flash will
         * run in, before it is journaled (*ret NULL: the hook runs as
         * svffd's child, its result dies with svffd); flash_resume
         * takes up the result of unit, which a stopped svffd left
         * running or finished, completing as the flash. A flash that
         * goes on while svffd stops completes with -EINPROGRESS. */
        int (*flash_unit)(void *userdata, char **ret);
        int (*flash_resume)(void *userdata, const char *unit);
        int (*rescan_wait)(void *userdata);
        int (*check_identity)(void *userdata, struct json_object *ids, unsigned numvfs);
        int (*bind_pf)(void *userdata);
        /* A step done or failed (progress; optional). step is its JSON as
         * in the log (borrowed); item is -1 for PF-wide steps. */
        void (*step)(void *userdata, struct json_object *step, int item, int r, const char *message);
        /* Called at each safe point before the machine decides how to
         * go on: the caller may give its stop (reconf_machine_stop())
         * from here (optional). */
        void (*poll_stop)(void *userdata);
        /* The run ended: reconf_machine_result() and the accessors say how.
         * The machine may be freed from here. */
        void (*finished)(void *userdata);
};

/* A machine for plan (taken). journal: the decoded entry to recover from
 * (borrowed; NULL: a new reconf, journaled first). libvirt: whether
 * domain operations can be issued (false: the plan needs none, or no
 * connection). Returns NULL when out of memory (plan is freed). */
struct reconf_machine *reconf_machine_new(struct svff_reconf_plan *plan, const struct reconf_journal *journal,
                                          uint64_t started_usec, bool libvirt, const struct reconf_ops *ops,
                                          void *userdata);
struct reconf_machine *reconf_machine_free(struct reconf_machine *rm);

/* Before start: item i's device-class state (taken; NULL: none). */
void reconf_machine_set_class(struct reconf_machine *rm, size_t i, struct json_object *state);
/* Before start of a recovery: item i's record as the store has it now
 * (recorded false: gone), under vf (the VF with its index now). */
void reconf_machine_recover_item(struct reconf_machine *rm, size_t i, bool recorded, const char *vf,
                                 enum svff_assign_state state, enum svff_pause_mode mode);
/* Before start: makes the run a reprogram with image, checking the PF
 * against ids (a JSON array, reference taken; NULL: those the journal
 * recorded, else its own identity). -ENOMEM. On a recovery the
 * journal's reprogram is kept unless this is called (a new image for an
 * interrupted reprogram). */
int reconf_machine_set_reprogram(struct reconf_machine *rm, const char *image, struct json_object *ids);
/* Which file the flash hook wrote (svff_flash_image_identity(), a
 * reference taken; NULL: not known), given by the ops before they
 * complete the flash: journaled with the reprogram from the rescan on,
 * for the store's record of what the PF holds. Dropped when a flash
 * begins. */
void reconf_machine_set_image_identity(struct reconf_machine *rm, struct json_object *identity);
/* Which file the image was as the PF was removed, before the hook (a
 * reference taken; NULL: not known), given by the ops before they
 * complete the removal: journaled with the flash, so that its result,
 * taken up after a restart, is compared with the same file. Dropped
 * once the flash completes. */
void reconf_machine_set_image_before(struct reconf_machine *rm, struct json_object *identity);
struct json_object *reconf_machine_image_before(const struct reconf_machine *rm);
/* The reprogram's image, or NULL. */
const char *reconf_machine_image(const struct reconf_machine *rm);
/* Before start of a recovery of an interrupted reprogram: go on from the
 * removal (a reprogram again, flash: true) or from the rescan without a
 * flash (a reconf). */
void reconf_machine_resume_reprogram(struct reconf_machine *rm, bool flash);
/* Before start: who owns the PF's VF count once the reconf went through
 * ("operator", "policy:<name>"; NULL: the journal's, if any), journaled
 * with the plan so that a recovery records the same. -ENOMEM. */
int reconf_machine_set_owner(struct reconf_machine *rm, const char *owner);
/* That owner (NULL: none, the PF's stays as it is). */
const char *reconf_machine_owner(const struct reconf_machine *rm);
/* Whether the PF took the new count (this run or the one it recovers),
 * rather than rolling back or stopping short of it. */
bool reconf_machine_count_set(const struct reconf_machine *rm);
/* Whether the run is a reprogram, and whether it ended (or found the
 * journal) interrupted. */
bool reconf_machine_reprogram(const struct reconf_machine *rm);
/* The unit the flash runs in (ops->flash_unit), or NULL: svffd's child. */
const char *reconf_machine_flash_unit(const struct reconf_machine *rm);
bool reconf_machine_interrupted(const struct reconf_machine *rm);
/* Runs until the first operation is in flight (or to the end). */
void reconf_machine_start(struct reconf_machine *rm);

/* Inputs. stop: svffd is stopping (now: the event loop ended, start no
 * further step, keep the journal). lost_libvirt: the connection went;
 * operations in flight still complete (with errors). */
void reconf_machine_stop(struct reconf_machine *rm, bool now);
void reconf_machine_lost_libvirt(struct reconf_machine *rm);

/* Completions, in any order. message may be NULL (borrowed). */
void reconf_machine_quiesce_done(struct reconf_machine *rm, size_t item, int r, enum svff_pause_mode mode,
                                 const char *message);
/* vfs: the address of each VF by index now (vfs[k] for index k), as read
 * back after the write, also after a failure; n_vfs how many exist, or
 * -1 when they could not be read (a timeout: the write still pending). */
void reconf_machine_numvfs_done(struct reconf_machine *rm, int r, const char *const *vfs, int n_vfs,
                                const char *message);
/* state: the VF's new class state (taken; NULL: nothing provisioned). */
void reconf_machine_provision_done(struct reconf_machine *rm, unsigned index, int r, struct json_object *state,
                                   const char *message);
void reconf_machine_bind_done(struct reconf_machine *rm, unsigned index, int r, const char *message);
void reconf_machine_restore_done(struct reconf_machine *rm, size_t item, int r, const char *guest_address,
                                 const char *message);
void reconf_machine_forget_done(struct reconf_machine *rm, size_t item, int r, const char *message);
void reconf_machine_commit_done(struct reconf_machine *rm, int r, const char *message);
void reconf_machine_pf_done(struct reconf_machine *rm, enum reconf_pf_op op, int r, const char *message);
const char *reconf_pf_op_to_string(enum reconf_pf_op op);

/* Accessors (borrowed). */
const struct svff_reconf_plan *reconf_machine_plan(const struct reconf_machine *rm);
const struct reconf_item *reconf_machine_item(const struct reconf_machine *rm, size_t i);
void reconf_machine_record(const struct reconf_machine *rm, size_t i, struct reconf_record *ret);
/* The VFs numvfs_done reported (NULL before), and a counter bumped at
 * each report, so that a commit writes the VF records only when they
 * changed. */
const char *const *reconf_machine_vfs(const struct reconf_machine *rm, unsigned *ret_n, unsigned *ret_gen);
/* The executed-steps log (a JSON array). */
struct json_object *reconf_machine_log(const struct reconf_machine *rm);
/* The machine's phase now: "quiesce", "numvfs", ..., "rollback". */
const char *reconf_machine_phase(const struct reconf_machine *rm);
bool reconf_machine_rollback(const struct reconf_machine *rm);
bool reconf_machine_recovery(const struct reconf_machine *rm);
/* A recovery of a journal an earlier svffd left (not one this svffd
 * kept, e.g. after a blocked write): only then do messages say svffd
 * stopped. Set before reconf_machine_start(). */
void reconf_machine_set_after_restart(struct reconf_machine *rm, bool after_restart);
bool reconf_machine_after_restart(const struct reconf_machine *rm);
unsigned reconf_machine_rollback_to(const struct reconf_machine *rm);
unsigned reconf_machine_numvfs_now(const struct reconf_machine *rm);
/* VFs whose class state could not be provisioned. */
unsigned reconf_machine_provision_failed(const struct reconf_machine *rm);
unsigned reconf_machine_bind_failed(const struct reconf_machine *rm);
bool reconf_machine_journal_kept(const struct reconf_machine *rm);
bool reconf_machine_finished(const struct reconf_machine *rm);
/* The error and the message of the whole run (NULL when none). */
enum reconf_error reconf_machine_result(const struct reconf_machine *rm, const char **ret_message);

/* Per item, for the reply: "restored", "rolled-back", "released",
 * "untouched", "kept-paused", "quiesce-failed", "no-vf", "paused". */
const char *reconf_machine_item_outcome(const struct reconf_machine *rm, size_t i);
/* Whether item i's domain holds its VF now. */
bool reconf_machine_item_has_vf(const struct reconf_machine *rm, size_t i);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "json-util.h"
#include "reconf-machine.h"

enum kind { KIND_QUIESCE, KIND_RESTORE };

enum numvfs_stage { STAGE_ZERO, STAGE_FINAL };

enum { VF_OK, VF_PROVISION_FAILED, VF_BIND_FAILED, VF_MISSING };

typedef void (*commit_fn)(struct reconf_machine *rm, int r, const char *message);
typedef void (*phase_fn)(struct reconf_machine *rm);

struct reconf_machine {
        const struct reconf_ops *ops;
        void *userdata;
        struct svff_reconf_plan *plan;
        struct reconf_item *items;
        struct json_object *journal;    /* the entry the next commit writes */
        bool journal_cleared;           /* the next commit clears it */
        struct json_object *log;        /* steps done */
        const char *phase;
        const char *resume_phase;       /* recovery: the journal's phase */
        const char *rollback_reason;
        bool libvirt, lost_libvirt;
        bool recovery, rollback, failed, keep_journal;
        bool after_restart;             /* the journal was left by an earlier svffd */
        bool stopping, stop_now;
        bool finished;
        unsigned rollback_to;
        unsigned n_now;
        unsigned n_quiesced, n_restored;

        /* operations in flight of the phase, and the step to take once
         * none is left; submitting holds it while a phase's operations
         * are being started (they may complete at once). */
        unsigned pending;
        unsigned submitting;
        phase_fn phase_done;

        /* commits: one at a time; soft ones (a native pause recorded)
         * coalesce, a hard one waits for a soft one in flight. */
        bool commit_busy, commit_soft;
        commit_fn commit_then, commit_waiting;

        enum numvfs_stage stage;
        bool wrote_zero;
        bool count_set;                 /* the new count was written, not rolled back */
        bool class_released;            /* release_start ran (this run) */
        char **vfs;                     /* by index, n_vfs of them */
        unsigned n_vfs;
        unsigned vfs_gen;
        unsigned char *vf_failed;       /* by index: VF_PROVISION_FAILED, VF_BIND_FAILED, VF_MISSING */
        unsigned n_bind_failed, n_provision_failed, n_bound;
        char *bind_message;
        bool class_changed;

        /* a reprogram */
        bool reprogram;
        bool flashed;                   /* the hook succeeded and the PF is back, bound */
        bool interrupted;
        char *image;
        struct json_object *image_identity; /* which file it was, or NULL */
        /* which file the image was as the PF was removed, before any
         * hook ran: what a flash taken up after a restart compares the
         * file with (NULL: not known) */
        struct json_object *image_before;
        struct json_object *ids;        /* allowed identities, or NULL */
        char *flash_unit;               /* the systemd unit the hook runs in, or NULL */
        char *reprogram_reason;         /* why it was interrupted */
        const char *journal_phase;      /* recovery: the phase found (a literal) */
        const char *resume_at;          /* recovery of "interrupted": "remove" or "rescan" */

        enum reconf_error error;
        char *message;
};

/* A phase name as a literal: the journal entry it came from is rewritten
 * by the run's first commit. */
static const char *phase_literal(const char *p) {
        static const char *const phases[] = {
                "quiesce", "numvfs", "provision", "bind", "rollback", "remove", "flash", "rescan", "interrupted",
        };

        for (size_t i = 0; i < ELEMENTSOF(phases); i++)
                if (streq(p, phases[i]))
                        return phases[i];
        return "numvfs";
}

static void set_message(char **dst, const char *fmt, ...) _printf_(2, 3);
static void set_message(char **dst, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(*dst);
        *dst = s;
}

static const char *resume_what(const struct reconf_machine *rm) {
        return rm->rollback ? "the rollback finishes" : "the reconf resumes";
}

static const struct svff_reconf_step *find_step(const struct reconf_machine *rm, enum svff_reconf_phase phase,
                                                int item, enum svff_reconf_action action, unsigned numvfs) {
        for (size_t i = 0; i < rm->plan->n_steps; i++) {
                const struct svff_reconf_step *s = &rm->plan->steps[i];

                if (s->phase == phase && s->item == item &&
                    (action == _SVFF_RECONF_DO_MAX || s->action == action) &&
                    (s->action != SVFF_RECONF_DO_NUMVFS || s->numvfs == numvfs))
                        return s;
        }
        return NULL;
}

/* Tells the caller of a step done or failed, and logs a done one: in the
 * plan's words, with phase "rollback" when going back. */
static void step_report(struct reconf_machine *rm, const struct svff_reconf_step *s, const char *phase, int r,
                        const char *message) {
        struct json_object *j = svff_reconf_step_to_json(rm->plan, s);

        if (!j)
                return;
        /* A new VF's step: which VF the kernel made at that index. */
        if (s->action == SVFF_RECONF_DO_PROVISION && s->numvfs < rm->n_vfs)
                json_object_object_add(j, "vf", json_object_new_string(rm->vfs[s->numvfs]));
        if (phase)
                json_object_object_add(j, "phase", json_object_new_string(phase));
        if (rm->ops->step)
                rm->ops->step(rm->userdata, j, s->item, r, message);
        if (r >= 0 && json_object_array_add(rm->log, j) >= 0)
                return;
        json_object_put(j);
}

/* ---- commits ---- */

static void commit_issue(struct reconf_machine *rm) {
        int r;

        rm->commit_busy = true;
        rm->commit_soft = false;
        r = rm->ops->commit(rm->userdata, rm->journal_cleared ? NULL : rm->journal);
        if (r < 0)
                reconf_machine_commit_done(rm, r, "the commit could not be started");
        /* Completed at once, rm may be gone: nothing more here. */
}

/* Commits, then then(rm, r, message). Tail position only. */
static void commit_hard(struct reconf_machine *rm, commit_fn then) {
        if (rm->commit_busy) {
                rm->commit_waiting = then;
                return;
        }
        rm->commit_then = then;
        commit_issue(rm);
}

/* A record changed that should reach the disk soon, with nothing
 * waiting on it: coalesced with every other change until the commit in
 * flight (if any) completes. */
static void commit_soft(struct reconf_machine *rm) {
        if (rm->commit_busy) {
                rm->commit_soft = true;
                return;
        }
        rm->commit_then = NULL;
        commit_issue(rm);
}

void reconf_machine_commit_done(struct reconf_machine *rm, int r, const char *message) {
        commit_fn then = rm->commit_then;

        rm->commit_busy = false;
        rm->commit_then = NULL;
        if (then) {
                then(rm, r, message);
                return;
        }
        /* A soft commit ended: a failure is not fatal (the next hard
         * commit writes the same records), the waiting one goes next. */
        if (rm->commit_waiting) {
                rm->commit_then = rm->commit_waiting;
                rm->commit_waiting = NULL;
                commit_issue(rm);
        } else if (rm->commit_soft)
                commit_soft(rm);
}

static int journal_phase(struct reconf_machine *rm, const char *phase) {
        rm->phase = phase;
        return json_object_object_add(rm->journal, "phase", json_object_new_string(phase));
}

static int journal_rollback(struct reconf_machine *rm) {
        int r = reconf_journal_set_rollback(rm->journal, rm->rollback_to, rm->message);

        return r < 0 ? r : journal_phase(rm, "rollback");
}

/* ---- phases ---- */

static void finish(struct reconf_machine *rm);
static void numvfs_start(struct reconf_machine *rm);
static void provision_start(struct reconf_machine *rm);
static void bind_start(struct reconf_machine *rm);
static void restore_start(struct reconf_machine *rm);
static void reprogram_start(struct reconf_machine *rm);

static void finish_abort(struct reconf_machine *rm, enum reconf_error error, bool keep_journal, const char *fmt, ...)
        _printf_(4, 5);
static void finish_abort(struct reconf_machine *rm, enum reconf_error error, bool keep_journal, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(rm->message);
        rm->message = s;
        rm->error = error;
        rm->keep_journal = keep_journal;
        finish(rm);
}

/* Asks the caller whether a stop came since the last input (a stop
 * may be requested from inside an operation's completion). */
static void poll_stop(struct reconf_machine *rm) {
        if (rm->ops->poll_stop)
                rm->ops->poll_stop(rm->userdata);
}

static void phase_maybe_done(struct reconf_machine *rm) {
        phase_fn fn;

        if (rm->submitting > 0 || rm->pending > 0 || !rm->phase_done)
                return;
        fn = rm->phase_done;
        rm->phase_done = NULL;
        poll_stop(rm);
        fn(rm);
}

static void rollback_set(struct reconf_machine *rm) {
        rm->rollback = true;
        rm->rollback_to = rm->plan->from;
        rm->n_now = rm->plan->from;
}

static const char *errno_message(int r) {
        if (r == -ESHUTDOWN)
                return "svffd is shutting down";
        if (r == -ENOTCONN)
                return "the connection to libvirt is gone";
        return strerror(-r);
}

/* An item whose operation could not be started: never touched. A
 * quiesce not started rolls the reconf back; a restore not started keeps
 * the journal (item_unsettled). */
static void item_not_submitted(struct reconf_machine *rm, enum kind kind, size_t i, int r) {
        struct reconf_item *s = &rm->items[i];

        s->state = kind == KIND_QUIESCE ? RECONF_ITEM_QUIESCE_FAILED : RECONF_ITEM_RESTORE_FAILED;
        s->r = -ECANCELED;
        set_message(&s->message, "its %s was never started: %s", kind == KIND_QUIESCE ? "pause or detach" : "restore",
                    errno_message(r));
        if (kind == KIND_QUIESCE && !rm->message)
                set_message(&rm->message, "%s", s->message);
}

/* Starts one operation per domain for the items want() selects; every
 * item not started is marked by item_not_submitted(). */
static void submit_groups(struct reconf_machine *rm, enum kind kind, bool (*want)(struct reconf_machine *, size_t)) {
        size_t n = rm->plan->n_items;
        _cleanup_free_ bool *done = calloc(n ? n : 1, sizeof(bool));
        _cleanup_free_ size_t *idx = calloc(n ? n : 1, sizeof(size_t));
        int r = 0;

        if (!done || !idx)
                r = -ENOMEM;
        rm->submitting++;
        for (size_t i = 0; i < n; i++) {
                size_t k = 0;

                if ((done && done[i]) || !want(rm, i))
                        continue;
                if (r < 0) {
                        item_not_submitted(rm, kind, i, r);
                        continue;
                }
                for (size_t j = i; j < n; j++)
                        if (!done[j] && want(rm, j) && streq(rm->plan->items[j].a.uuid, rm->plan->items[i].a.uuid)) {
                                idx[k++] = j;
                                done[j] = true;
                        }
                if (!rm->libvirt || rm->lost_libvirt)
                        r = -ENOTCONN;
                else if (rm->stop_now)
                        r = -ESHUTDOWN;
                else {
                        rm->pending += (unsigned) k;
                        r = kind == KIND_QUIESCE ? rm->ops->quiesce(rm->userdata, idx, k)
                                                 : rm->ops->restore(rm->userdata, idx, k);
                        if (r < 0)
                                rm->pending -= (unsigned) k;
                }
                if (r < 0)
                        for (size_t j = 0; j < k; j++)
                                item_not_submitted(rm, kind, idx[j], r);
        }
        rm->submitting--;
}

/* quiesce */

static bool want_quiesce(struct reconf_machine *rm, size_t i) {
        return find_step(rm, SVFF_RECONF_PHASE_QUIESCE, (int) i, _SVFF_RECONF_DO_MAX, 0) &&
               rm->items[i].state == RECONF_ITEM_UNTOUCHED;
}

static void rollback_committed(struct reconf_machine *rm, int r, const char *message) {
        (void) message;
        if (r >= 0)
                fault_point("after-rollback-journal", 0);
        restore_start(rm);
}

/* Before the VF count changed: puts back what was taken, journaled
 * first so that a restart finishes the rollback. */
static void rollback_start(struct reconf_machine *rm) {
        rollback_set(rm);
        (void) journal_rollback(rm);
        commit_hard(rm, rollback_committed);
}

static void quiesce_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                rm->error = RECONF_ERR_STORE;
                set_message(&rm->message, "recording the paused assignments failed: %s", message ?: strerror(-r));
                rollback_start(rm);
                return;
        }
        numvfs_start(rm);
}

static void quiesce_phase_done(struct reconf_machine *rm) {
        bool any_failed = false;

        for (size_t i = 0; i < rm->plan->n_items; i++)
                if (rm->items[i].state == RECONF_ITEM_QUIESCE_FAILED)
                        any_failed = true;
        if (any_failed || rm->stopping) {
                /* Nothing was destroyed: put back what was taken. */
                if (!rm->message)
                        set_message(&rm->message, rm->stopping ? "svffd is shutting down"
                                                               : "a pause or detach failed, nothing was changed");
                rm->error = rm->stopping ? RECONF_ERR_SHUTTING_DOWN : RECONF_ERR_FAILED;
                if (rm->stop_now) {
                        /* Nothing can run any more: the journal (phase
                         * quiesce) has the next start roll back. */
                        finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true,
                                     "svffd stopped during the quiesce; the rollback runs at its next start");
                        return;
                }
                rollback_start(rm);
                return;
        }
        /* Every device is off its domain: the records say paused (the
         * commit writes them), with the guest address and alias
         * reserved, before any VF goes. */
        (void) journal_phase(rm, "numvfs");
        commit_hard(rm, quiesce_committed);
}

static void quiesce_start(struct reconf_machine *rm) {
        rm->phase = "quiesce";
        rm->phase_done = quiesce_phase_done;
        submit_groups(rm, KIND_QUIESCE, want_quiesce);
        phase_maybe_done(rm);
}

void reconf_machine_quiesce_done(struct reconf_machine *rm, size_t i, int r, enum svff_pause_mode mode,
                                 const char *message) {
        struct reconf_item *s = &rm->items[i];
        const struct svff_reconf_step *step = find_step(rm, SVFF_RECONF_PHASE_QUIESCE, (int) i, _SVFF_RECONF_DO_MAX, 0);

        s->mode = mode;
        if (r < 0) {
                s->state = RECONF_ITEM_QUIESCE_FAILED;
                s->r = r;
                set_message(&s->message, "%s", message ?: strerror(-r));
                if (!rm->message)
                        set_message(&rm->message, "%s", s->message);
        } else {
                s->state = RECONF_ITEM_QUIESCED;
                rm->n_quiesced++;
        }
        if (step)
                step_report(rm, step, NULL, r, s->message);
        if (r >= 0 && mode == SVFF_PAUSE_NATIVE)
                /* The device is still in the domain: only the record can
                 * tell a restart to unpause it. */
                commit_soft(rm);
        if (r >= 0)
                fault_point("after-detach", rm->n_quiesced);
        rm->pending--;
        phase_maybe_done(rm);
}

/* numvfs */

static void numvfs_committed(struct reconf_machine *rm, int r, const char *message) {
        poll_stop(rm);
        /* A failed commit leaves the records in memory for the next one;
         * the journal on disk still says where a restart picks up. */
        (void) message;
        if (r >= 0 && rm->rollback)
                fault_point("after-rollback-journal", 0);
        if (rm->stopping) {
                /* The numvfs phase completed and is journaled: a safe
                 * point. The next start provisions, binds and restores,
                 * as after a crash here. */
                finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true,
                             "svffd is stopping; PF %s has %u VFs now, %s at its next start", rm->plan->pf,
                             rm->n_now, resume_what(rm));
                return;
        }
        if (rm->n_now == 0) {
                restore_start(rm);
                return;
        }
        provision_start(rm);
}

static void refused_committed(struct reconf_machine *rm, int r, const char *message) {
        (void) message;
        if (r >= 0)
                fault_point("after-rollback-journal", 0);
        numvfs_start(rm);
}

/* The first index below the count with no VF (the kernel lists none at
 * virtfn<index>), or n_vfs. */
static unsigned first_missing(const struct reconf_machine *rm) {
        unsigned k;

        for (k = 0; k < rm->n_vfs; k++)
                if (rm->vf_failed[k] == VF_MISSING)
                        break;
        return k;
}

static void numvfs_phase_done(struct reconf_machine *rm, int r, const char *err) {
        _cleanup_free_ char *gap = NULL;
        unsigned missing = first_missing(rm);

        if (r >= 0 && missing < rm->n_vfs) {
                /* The count took, but not every VF is there: each index
                 * keeps the VF the kernel names for it, the missing one
                 * goes to no domain (its record stays, paused), and the
                 * reconf fails naming it. */
                if (asprintf(&gap, "PF %s has %u VFs but no VF %u: virtfn%u is missing or names a device that is "
                             "gone (was VF %u removed?)", rm->plan->pf, rm->n_vfs, missing, missing, missing) < 0)
                        gap = NULL;
                err = gap ?: "a VF of the new count is missing";
                r = -ENODEV;
        }
        if (r == -ETIMEDOUT) {
                /* The write is still pending in the kernel: nothing can be
                 * done to the PF until it ends. Whether a VF is held or
                 * the driver is only slow, the next step is the same. */
                unsigned n_paused = 0;

                for (size_t i = 0; i < rm->plan->n_items; i++)
                        if (rm->items[i].state == RECONF_ITEM_QUIESCED) {
                                n_paused++;
                                set_message(&rm->items[i].message,
                                            "the VF count change did not finish; the assignment stays paused with "
                                            "its guest address reserved");
                        }
                finish_abort(rm, RECONF_ERR_TIMEOUT, true,
                             "%s. The journal is kept%s: once sriov_numvfs shows the write ended, run "
                             "'svffctl reconf %s %u' again to %s", err,
                             n_paused > 0 ? " and the paused assignments keep their reservations" : "",
                             rm->plan->pf, rm->plan->to, rm->rollback ? "finish its rollback" : "complete it");
                return;
        }
        if (r < 0 && !rm->rollback && rm->wrote_zero &&
            (rm->n_now == 0 || (rm->recovery && rm->n_now == rm->plan->from))) {
                /* The VFs are gone and the new count was refused: back to
                 * the count the reconf started from, journaled as a
                 * rollback before the write, then every assignment put
                 * back. A recovery does the same: it writes the count
                 * wherever the crash left it, so it may also find the
                 * PF still at the old count. (A driver that created only
                 * part of the VFs accepted the write: what exists is
                 * bound and restored.) */
                set_message(&rm->message, "%s; PF %s went back to %u VFs", err, rm->plan->pf, rm->plan->from);
                rm->error = RECONF_ERR_FAILED;
                rollback_set(rm);
                (void) journal_rollback(rm);
                commit_hard(rm, refused_committed);
                return;
        }
        if ((r >= 0 || gap) && !rm->rollback)
                rm->count_set = true;
        if (r < 0 && rm->rollback) {
                /* Going back failed too: the journal stays, so the next
                 * start (or the same Reconf) tries again. */
                rm->keep_journal = true;
                set_message(&rm->message, "%s; going back to %u VFs failed too (%s), PF %s has %u VFs: the journal "
                            "is kept, run 'svffctl reconf %s %u' or restart svffd to retry the rollback",
                            rm->message ?: "the reconf failed", rm->rollback_to, err, rm->plan->pf, rm->n_now,
                            rm->plan->pf, rm->plan->to);
                rm->error = RECONF_ERR_FAILED;
                rm->failed = true;
        } else if (r < 0) {
                if (!rm->wrote_zero && rm->n_now == rm->plan->from) {
                        rollback_set(rm);
                        set_message(&rm->message, "%s; nothing was changed", err);
                } else
                        set_message(&rm->message, "%s; PF %s has %u VFs now", err, rm->plan->pf, rm->n_now);
                rm->error = RECONF_ERR_FAILED;
                rm->failed = true;
        }

        /* Each assignment's VF is the one with its index now. */
        for (size_t i = 0; i < rm->plan->n_items; i++) {
                const struct svff_reconf_item *it = &rm->plan->items[i];
                struct reconf_item *st = &rm->items[i];

                if (it->index < rm->n_now && it->index < rm->n_vfs && rm->vf_failed[it->index] == VF_MISSING) {
                        /* Its record stays where it is: no other VF is
                         * given its index. */
                        if (st->state == RECONF_ITEM_QUIESCED)
                                st->state = RECONF_ITEM_LOST_VF;
                        set_message(&st->message, "VF %u of PF %s is missing (no virtfn%u), so it was not "
                                    "returned to its domain; the assignment stays paused with its guest address "
                                    "reserved", it->index, rm->plan->pf, it->index);
                } else if (it->index < rm->n_now && it->index < rm->n_vfs)
                        snprintf(st->vf, sizeof(st->vf), "%s", rm->vfs[it->index]);
                else if (it->fate == SVFF_RECONF_SURVIVES || rm->rollback) {
                        if (st->state == RECONF_ITEM_QUIESCED || it->a.state != SVFF_ASSIGN_ATTACHED) {
                                if (st->state == RECONF_ITEM_QUIESCED)
                                        st->state = RECONF_ITEM_LOST_VF;
                                set_message(&st->message, "VF %u of PF %s does not exist (%s)", it->index,
                                            rm->plan->pf, rm->message ?: "the PF has fewer VFs");
                        }
                }
        }
        if (rm->rollback)
                (void) journal_rollback(rm);
        else
                (void) journal_phase(rm, "provision");
        commit_hard(rm, numvfs_committed);
}

static int set_vfs(struct reconf_machine *rm, const char *const *vfs, int n_vfs) {
        unsigned n = n_vfs > 0 ? (unsigned) n_vfs : 0;
        char **v = calloc(n + 1, sizeof(char *));
        unsigned char *f = calloc(n + 1, 1);

        if (!v || !f) {
                free(v);
                free(f);
                return -ENOMEM;
        }
        for (unsigned k = 0; k < n; k++) {
                if (!(v[k] = strdup(vfs[k] ?: ""))) {
                        strv_free(v);
                        free(f);
                        return -ENOMEM;
                }
                /* VF k is the one the kernel names for index k, or none:
                 * never the next one along. */
                if (!*v[k])
                        f[k] = VF_MISSING;
        }
        strv_free(rm->vfs);
        free(rm->vf_failed);
        rm->vfs = v;
        rm->vf_failed = f;
        rm->n_now = rm->n_vfs = n;
        rm->vfs_gen++;
        return 0;
}

void reconf_machine_numvfs_done(struct reconf_machine *rm, int r, const char *const *vfs, int n_vfs,
                                const char *message) {
        _cleanup_free_ char *err = strdup(message ?: (r < 0 ? strerror(-r) : ""));
        unsigned written = rm->stage == STAGE_ZERO ? 0 : rm->rollback ? rm->rollback_to : rm->plan->to;
        const struct svff_reconf_step *s;

        if (r != -ETIMEDOUT && set_vfs(rm, vfs, n_vfs) < 0) {
                r = -ENOMEM;
                free(err);
                err = strdup("out of memory");
        }
        if (r >= 0) {
                /* Logged as written: the value, and phase rollback when
                 * going back. */
                struct svff_reconf_step rb = {
                        .phase = SVFF_RECONF_PHASE_NUMVFS, .action = SVFF_RECONF_DO_NUMVFS, .item = -1,
                        .numvfs = written,
                };

                s = rm->rollback ? NULL : find_step(rm, SVFF_RECONF_PHASE_NUMVFS, -1, SVFF_RECONF_DO_NUMVFS, written);
                step_report(rm, s ?: &rb, rm->rollback ? "rollback" : NULL, 0, NULL);
        }
        if (rm->stage == STAGE_ZERO && r >= 0 && rm->reprogram && !rm->flashed && !rm->rollback) {
                /* The VFs are gone: only now may the PF leave the bus. */
                rm->wrote_zero = true;
                reprogram_start(rm);
                return;
        }
        if (rm->stage == STAGE_ZERO && r >= 0) {
                rm->wrote_zero = true;
                if (rm->plan->to > 0) {
                        /* A stop lets the phase complete: N follows 0,
                         * unless nothing may start any more. Then (or
                         * when the write cannot start) the journal, still
                         * in phase numvfs, has the next start write N: no
                         * refusal by the kernel, no rollback. */
                        poll_stop(rm);
                        if (!rm->stop_now) {
                                rm->stage = STAGE_FINAL;
                                r = rm->ops->set_numvfs(rm->userdata, rm->plan->to);
                                if (r >= 0)
                                        return;
                        } else
                                r = -ESHUTDOWN;
                        finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true, "the write of %u VFs could not start "
                                     "after the VFs were removed (%s); the reconf resumes at the next start",
                                     rm->plan->to, errno_message(r));
                        return;
                }
        }
        numvfs_phase_done(rm, r, err ?: "out of memory");
}

/* The device class's release of the VFs the new count drops, each off
 * its domain, before the numvfs write takes them: the class undoes what
 * it set up (an NVMe secondary's namespaces) while the VF still exists to
 * address. A rollback puts it back with the rest (provision, from the
 * journaled record). A release that fails does not stop the reconf, the
 * VF goes anyway: its item's message names what is left. A restart
 * releases again (the class's release is idempotent). Returns whether
 * releases were started (numvfs_start runs again once they are done). */
static void release_phase_done(struct reconf_machine *rm) {
        numvfs_start(rm);
}

static bool release_start(struct reconf_machine *rm) {
        size_t m = rm->plan->n_items ? rm->plan->n_items : 1, n = 0;
        _cleanup_free_ size_t *idx = calloc(m, sizeof(size_t));
        _cleanup_free_ struct json_object **cls = calloc(m, sizeof(struct json_object *));
        int r = -ENOMEM;

        rm->class_released = true;
        if (!rm->ops->release_class)
                return false;
        for (size_t i = 0; i < rm->plan->n_items; i++)
                if (rm->plan->items[i].fate == SVFF_RECONF_RELEASED && rm->items[i].class_state &&
                    rm->items[i].state != RECONF_ITEM_QUIESCE_FAILED && idx && cls) {
                        idx[n] = i;
                        cls[n++] = rm->items[i].class_state;
                }
        if (n == 0)
                return false;
        rm->phase_done = release_phase_done;
        rm->submitting++;
        rm->pending += n;
        if (idx && cls)
                r = rm->ops->release_class(rm->userdata, idx, n, cls);
        if (r < 0) {
                rm->pending -= n;
                for (size_t k = 0; k < n; k++)
                        set_message(&rm->items[idx[k]].message, "its device class's release was not started: %s",
                                    errno_message(r));
        }
        rm->submitting--;
        phase_maybe_done(rm);
        return true;
}

void reconf_machine_forget_done(struct reconf_machine *rm, size_t i, int r, const char *message) {
        if (i < rm->plan->n_items && r < 0)
                set_message(&rm->items[i].message, "its device class's release failed: %s",
                            message ?: strerror(-r));
        rm->pending--;
        phase_maybe_done(rm);
}

static void numvfs_start(struct reconf_machine *rm) {
        unsigned target;
        int r;
        poll_stop(rm);

        rm->phase = rm->rollback ? "rollback" : "numvfs";
        if (rm->stopping) {
                finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true, "svffd is shutting down; %s at its next start",
                             resume_what(rm));
                return;
        }
        if (!rm->rollback && !rm->class_released && release_start(rm))
                return;
        if (rm->reprogram && !rm->flashed && !rm->rollback) {
                /* 0 first, always, also when the PF has none (a write of
                 * the count it has is no change): removing or unbinding a
                 * PF with VFs enabled orphans them. */
                rm->stage = STAGE_ZERO;
                target = 0;
        } else if (rm->reprogram && rm->flashed && !rm->rollback) {
                /* Back on the bus with no VFs: the new count. */
                rm->stage = STAGE_FINAL;
                rm->wrote_zero = true;
                target = rm->plan->to;
        } else if (rm->recovery || rm->rollback) {
                /* Wherever the crash (or the failed write) left the count:
                 * to the target (back when rolling back), through 0 only
                 * when it differs. */
                rm->stage = STAGE_FINAL;
                rm->wrote_zero = true;
                target = rm->rollback ? rm->rollback_to : rm->plan->to;
        } else if (rm->plan->from > 0) {
                rm->stage = STAGE_ZERO;
                target = 0;
        } else {
                rm->stage = STAGE_FINAL;
                target = rm->plan->to;
        }
        r = rm->ops->set_numvfs(rm->userdata, target);
        if (r < 0)
                finish_abort(rm, r == -ESHUTDOWN ? RECONF_ERR_SHUTTING_DOWN : RECONF_ERR_FAILED, true,
                             "the numvfs write could not be started (%s); %s at the next start", errno_message(r),
                             resume_what(rm));
}

/* reprogram */

const char *reconf_pf_op_to_string(enum reconf_pf_op op) {
        static const char *const names[_RECONF_PF_OP_MAX] = {
                [RECONF_PF_REMOVE] = "remove_pf",
                [RECONF_PF_FLASH] = "flash",
                [RECONF_PF_RESCAN] = "rescan",
                [RECONF_PF_IDENTITY] = "check_identity",
                [RECONF_PF_BIND] = "bind_pf",
        };

        return op < _RECONF_PF_OP_MAX ? names[op] : NULL;
}

/* The journal's plan, once the run changed it (a reprogram's image). */
static int journal_plan(struct reconf_machine *rm) {
        struct json_object *p = svff_reconf_plan_to_json(rm->plan);

        if (!p)
                return -ENOMEM;
        return json_object_object_add(rm->journal, "plan", p);
}

/* The journal's "reprogram" record, as the run knows it now. */
static int journal_reprogram(struct reconf_machine *rm) {
        struct json_object *o = json_object_new_object();

        if (!o)
                return -ENOMEM;
        json_object_object_add(o, "image", json_object_new_string(rm->image));
        if (rm->image_identity)
                json_object_object_add(o, "image_identity", json_object_get(rm->image_identity));
        if (rm->image_before)
                json_object_object_add(o, "image_before", json_object_get(rm->image_before));
        json_object_object_add(o, "ids", rm->ids ? json_object_get(rm->ids) : NULL);
        json_object_object_add(o, "flashed", json_object_new_boolean(rm->flashed));
        if (rm->flash_unit)
                json_object_object_add(o, "flash_unit", json_object_new_string(rm->flash_unit));
        /* it quotes the hook's last line, whatever the hook printed */
        json_object_object_add(o, "reason", rm->reprogram_reason ? svff_json_new_text(rm->reprogram_reason) : NULL);
        return json_object_object_add(rm->journal, "reprogram", o);
}

/* The PF is off the bus, or back but not as it should be, and nothing
 * tells whether the device holds a working image: nothing more is
 * tried. The journal says so (phase "interrupted"), every assignment
 * taken off stays paused with its record, and a reprogram or a reconf of
 * the PF runs again from there. */
static void reprogram_interrupted(struct reconf_machine *rm, const char *fmt, ...) _printf_(2, 3);
static void reprogram_interrupted(struct reconf_machine *rm, const char *fmt, ...) {
        va_list ap;
        char *s = NULL;

        va_start(ap, fmt);
        if (vasprintf(&s, fmt, ap) < 0)
                s = NULL;
        va_end(ap);
        free(rm->reprogram_reason);
        rm->reprogram_reason = s;
        rm->interrupted = true;
        rm->failed = true;
        (void) journal_reprogram(rm);
        (void) journal_phase(rm, "interrupted");
        for (size_t i = 0; i < rm->plan->n_items; i++)
                if (rm->items[i].state == RECONF_ITEM_QUIESCED)
                        set_message(&rm->items[i].message, "paused with its guest address reserved: the reprogram "
                                    "of PF %s was interrupted", rm->plan->pf);
        finish_abort(rm, RECONF_ERR_INTERRUPTED, true, "reprogram interrupted: %s. The assignments stay paused "
                     "with their records; run 'svffctl reprogram %s IMAGE' or 'svffctl reconf %s %u' again",
                     strna(s), rm->plan->pf, rm->plan->pf, rm->plan->to);
}

static void pf_op_start(struct reconf_machine *rm, enum reconf_pf_op op);

static void reprogram_stop(struct reconf_machine *rm, const char *where) {
        finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true, "svffd is stopping; the reprogram of PF %s resumes %s at "
                     "its next start", rm->plan->pf, where);
}

static void remove_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                /* The disk still says "numvfs": the next start resumes. */
                finish_abort(rm, RECONF_ERR_STORE, true, "journaling the removal of PF %s failed: %s; it was not "
                             "removed", rm->plan->pf, message ?: strerror(-r));
                return;
        }
        fault_point("after-remove-journal", 0);
        pf_op_start(rm, RECONF_PF_REMOVE);
}

/* The VFs are gone (the count 0, journaled): the PF leaves the bus. */
static void reprogram_start(struct reconf_machine *rm) {
        poll_stop(rm);
        if (rm->stopping) {
                reprogram_stop(rm, "with the removal");
                return;
        }
        /* the removal tells it again */
        json_object_put(rm->image_before);
        rm->image_before = NULL;
        (void) journal_reprogram(rm);
        (void) journal_phase(rm, "remove");
        commit_hard(rm, remove_committed);
}

static void flash_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                /* Not recorded, so not run: the disk says "remove". */
                finish_abort(rm, RECONF_ERR_STORE, true, "journaling the flash of PF %s failed: %s; the hook was "
                             "not run", rm->plan->pf, message ?: strerror(-r));
                return;
        }
        fault_point("after-flash-journal", 0);
        pf_op_start(rm, RECONF_PF_FLASH);
}

static void rescan_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                /* The disk says "flash": the next start cannot know the
                 * hook succeeded, and says so. */
                finish_abort(rm, RECONF_ERR_STORE, true, "recording the flash of PF %s failed: %s",
                             rm->plan->pf, message ?: strerror(-r));
                return;
        }
        fault_point("after-flash", 0);
        poll_stop(rm);
        if (rm->stopping) {
                reprogram_stop(rm, "with the rescan");
                return;
        }
        pf_op_start(rm, RECONF_PF_RESCAN);
}

static void flashed_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                finish_abort(rm, RECONF_ERR_STORE, true, "recording PF %s back on its driver failed: %s",
                             rm->plan->pf, message ?: strerror(-r));
                return;
        }
        fault_point("after-bind-pf", 0);
        numvfs_start(rm);
}

static void rescan_resume(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                finish_abort(rm, RECONF_ERR_STORE, true, "journaling the rescan of PF %s failed: %s", rm->plan->pf,
                             message ?: strerror(-r));
                return;
        }
        pf_op_start(rm, RECONF_PF_RESCAN);
}

static void pf_op_start(struct reconf_machine *rm, enum reconf_pf_op op) {
        int r;

        rm->phase = op == RECONF_PF_REMOVE ? "remove" : op == RECONF_PF_FLASH ? "flash" : "rescan";
        if (rm->stop_now)
                r = -ESHUTDOWN;
        else
                switch (op) {
                case RECONF_PF_REMOVE:
                        r = rm->ops->remove_pf ? rm->ops->remove_pf(rm->userdata) : -EOPNOTSUPP;
                        break;
                case RECONF_PF_FLASH:
                        r = rm->ops->flash ? rm->ops->flash(rm->userdata, rm->image) : -EOPNOTSUPP;
                        break;
                case RECONF_PF_RESCAN:
                        r = rm->ops->rescan_wait ? rm->ops->rescan_wait(rm->userdata) : -EOPNOTSUPP;
                        break;
                case RECONF_PF_IDENTITY:
                        r = rm->ops->check_identity ? rm->ops->check_identity(rm->userdata, rm->ids, rm->plan->to)
                                                    : -EOPNOTSUPP;
                        break;
                case RECONF_PF_BIND:
                        r = rm->ops->bind_pf ? rm->ops->bind_pf(rm->userdata) : -EOPNOTSUPP;
                        break;
                default:
                        r = -EINVAL;
                }
        if (r >= 0)
                return;
        if (r == -ESHUTDOWN && op != RECONF_PF_FLASH) {
                /* Not started: the journal has the next start do it. */
                reprogram_stop(rm, op == RECONF_PF_REMOVE ? "with the removal" : "with the rescan");
                return;
        }
        reconf_machine_pf_done(rm, op, r, r == -ESHUTDOWN ? "svffd is stopping" : "it could not be started");
}

void reconf_machine_pf_done(struct reconf_machine *rm, enum reconf_pf_op op, int r, const char *message) {
        const char *err = message ?: (r < 0 ? strerror(-r) : NULL);
        static const enum svff_reconf_action actions[_RECONF_PF_OP_MAX] = {
                [RECONF_PF_REMOVE] = SVFF_RECONF_DO_REMOVE_PF,
                [RECONF_PF_FLASH] = SVFF_RECONF_DO_FLASH,
                [RECONF_PF_RESCAN] = SVFF_RECONF_DO_RESCAN,
                [RECONF_PF_IDENTITY] = SVFF_RECONF_DO_CHECK_IDENTITY,
                [RECONF_PF_BIND] = SVFF_RECONF_DO_BIND_PF,
        };
        struct svff_reconf_step s = {
                .phase = SVFF_RECONF_PHASE_REPROGRAM, .action = actions[op], .item = -1,
        };

        step_report(rm, &s, NULL, r, err);
        switch (op) {
        case RECONF_PF_REMOVE:
                if (r < 0) {
                        reprogram_interrupted(rm, "removing PF %s failed: %s", rm->plan->pf, strna(err));
                        return;
                }
                fault_point("after-remove-pf", 0);
                poll_stop(rm);
                if (rm->stopping) {
                        /* The disk says "remove": removing again is a no-op. */
                        reprogram_stop(rm, "with the flash");
                        return;
                }
                /* From here a crash cannot be resumed: the hook may have
                 * started, and what the device holds is unknown. Unless
                 * the hook runs in a unit of its own, named here before
                 * it starts: then the next start takes up its result. */
                json_object_put(rm->image_identity);
                rm->image_identity = NULL;
                free(rm->flash_unit);
                rm->flash_unit = NULL;
                if (rm->ops->flash_unit && rm->ops->flash_unit(rm->userdata, &rm->flash_unit) < 0)
                        rm->flash_unit = NULL;
                (void) journal_reprogram(rm);
                (void) journal_phase(rm, "flash");
                commit_hard(rm, flash_committed);
                return;
        case RECONF_PF_FLASH:
                if (r == -EINPROGRESS) {
                        /* svffd stops, the flash goes on in its unit: the
                         * journal (phase "flash", the unit's name) has the
                         * next start take up its result. */
                        reprogram_stop(rm, "taking up the result of its flash unit");
                        return;
                }
                if (r < 0) {
                        reprogram_interrupted(rm, r == -ETIMEDOUT ? "the flash hook passed its deadline (%s)"
                                                                  : "the flash hook failed (%s)", strna(err));
                        return;
                }
                /* Which file the hook flashed, if the ops could tell. */
                free(rm->flash_unit);
                rm->flash_unit = NULL;
                json_object_put(rm->image_before);
                rm->image_before = NULL;
                (void) journal_reprogram(rm);
                (void) journal_phase(rm, "rescan");
                commit_hard(rm, rescan_committed);
                return;
        case RECONF_PF_RESCAN:
                if (r < 0) {
                        reprogram_interrupted(rm, "PF %s did not come back after the rescan: %s", rm->plan->pf,
                                              strna(err));
                        return;
                }
                fault_point("after-rescan", 0);
                poll_stop(rm);
                if (rm->stopping) {
                        reprogram_stop(rm, "with the rescan");
                        return;
                }
                pf_op_start(rm, RECONF_PF_IDENTITY);
                return;
        case RECONF_PF_IDENTITY:
                if (r < 0) {
                        reprogram_interrupted(rm, "PF %s came back as the policy does not allow: %s", rm->plan->pf,
                                              strna(err));
                        return;
                }
                poll_stop(rm);
                if (rm->stopping) {
                        reprogram_stop(rm, "with the rescan");
                        return;
                }
                pf_op_start(rm, RECONF_PF_BIND);
                return;
        case RECONF_PF_BIND:
        default:
                if (r < 0) {
                        reprogram_interrupted(rm, "binding the driver of PF %s failed: %s", rm->plan->pf,
                                              strna(err));
                        return;
                }
                rm->flashed = true;
                free(rm->reprogram_reason);
                rm->reprogram_reason = NULL;
                (void) journal_reprogram(rm);
                (void) journal_phase(rm, "numvfs");
                commit_hard(rm, flashed_committed);
                return;
        }
}

/* A recovery of a reprogram: where the journal left it. Returns false
 * when the journal's phase is one a plain reconf recovers. */
static bool reprogram_recover(struct reconf_machine *rm) {
        const char *p = rm->journal_phase;

        if (rm->resume_at) {
                /* Asked to go on: what the interrupted run left is the
                 * operator's to judge (a reprogram runs the hook again; a
                 * reconf takes the device as it comes back). */
                rm->interrupted = false;
                free(rm->reprogram_reason);
                rm->reprogram_reason = NULL;
                rm->flashed = false;
                free(rm->flash_unit);
                rm->flash_unit = NULL;
                /* A flash again, or none (the device as it comes
                 * back): either way what it holds is not known yet. */
                json_object_put(rm->image_identity);
                rm->image_identity = NULL;
                json_object_put(rm->image_before);
                rm->image_before = NULL;
                (void) journal_reprogram(rm);
                if (streq(rm->resume_at, "remove")) {
                        (void) journal_phase(rm, "remove");
                        commit_hard(rm, remove_committed);
                } else {
                        (void) journal_phase(rm, "rescan");
                        commit_hard(rm, rescan_resume);
                }
                return true;
        }
        if (streq(p, "remove")) {
                (void) journal_phase(rm, "remove");
                pf_op_start(rm, RECONF_PF_REMOVE);
                return true;
        }
        if (streq(p, "flash")) {
                /* A hook in its own unit outlives svffd: its result is
                 * the unit's, taken up like a flash of this run. */
                if (rm->flash_unit && rm->ops->flash_resume) {
                        rm->phase = "flash";
                        if (rm->ops->flash_resume(rm->userdata, rm->flash_unit) >= 0)
                                return true;
                        reprogram_interrupted(rm, "svffd stopped while the flash hook ran in unit '%s', and its "
                                              "result cannot be taken up", rm->flash_unit);
                        return true;
                }
                reprogram_interrupted(rm, "svffd stopped while the flash hook ran, so the flash is not known to "
                                      "have succeeded");
                return true;
        }
        if (streq(p, "rescan")) {
                pf_op_start(rm, RECONF_PF_RESCAN);
                return true;
        }
        if (streq(p, "interrupted")) {
                _cleanup_free_ char *reason = rm->reprogram_reason ? strdup(rm->reprogram_reason) : NULL;

                reprogram_interrupted(rm, "%s", reason ?: "no reason recorded");
                return true;
        }
        /* "numvfs" before the flash: the 0 again, then the removal. */
        return false;
}

int reconf_machine_set_reprogram(struct reconf_machine *rm, const char *image, struct json_object *ids) {
        char *s = strdup(image);
        int r;

        if (!s)
                return -ENOMEM;
        /* The plan's steps say so too, in the journal as well: another
         * image than the interrupted run's is the one recovered. */
        r = svff_reconf_plan_set_reprogram(rm->plan, image, ids ?: rm->ids);
        if (r >= 0)
                r = journal_plan(rm);
        if (r < 0) {
                free(s);
                return r;
        }
        free(rm->image);
        rm->image = s;
        /* Another image, or the same one again: nothing is known of it
         * until its flash completes. */
        json_object_put(rm->image_identity);
        rm->image_identity = NULL;
        json_object_put(rm->image_before);
        rm->image_before = NULL;
        if (ids) {
                json_object_put(rm->ids);
                rm->ids = json_object_get(ids);
        }
        rm->reprogram = true;
        return journal_reprogram(rm);
}

void reconf_machine_set_image_identity(struct reconf_machine *rm, struct json_object *identity) {
        json_object_put(rm->image_identity);
        rm->image_identity = json_object_get(identity);
}

void reconf_machine_set_image_before(struct reconf_machine *rm, struct json_object *identity) {
        json_object_put(rm->image_before);
        rm->image_before = json_object_get(identity);
}

struct json_object *reconf_machine_image_before(const struct reconf_machine *rm) {
        return rm->image_before;
}

const char *reconf_machine_image(const struct reconf_machine *rm) {
        return rm->image;
}

int reconf_machine_set_owner(struct reconf_machine *rm, const char *owner) {
        return reconf_journal_set_owner(rm->journal, owner);
}

const char *reconf_machine_owner(const struct reconf_machine *rm) {
        const char *owner = NULL;

        return svff_json_get_string(rm->journal, "owner", &owner) >= 0 ? owner : NULL;
}

bool reconf_machine_count_set(const struct reconf_machine *rm) {
        return rm->count_set;
}

void reconf_machine_resume_reprogram(struct reconf_machine *rm, bool flash) {
        rm->resume_at = flash ? "remove" : "rescan";
}

const char *reconf_machine_flash_unit(const struct reconf_machine *rm) {
        return rm->flash_unit;
}

bool reconf_machine_reprogram(const struct reconf_machine *rm) {
        return rm->reprogram;
}

bool reconf_machine_interrupted(const struct reconf_machine *rm) {
        return rm->interrupted;
}

/* provision */

static struct reconf_item *item_at(struct reconf_machine *rm, unsigned index) {
        for (size_t i = 0; i < rm->plan->n_items; i++)
                if (rm->plan->items[i].index == index)
                        return &rm->items[i];
        return NULL;
}

static void provision_committed(struct reconf_machine *rm, int r, const char *message) {
        poll_stop(rm);
        (void) r;
        (void) message;
        if (rm->stopping) {
                finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true,
                             "svffd is stopping; PF %s has %u VFs now, %s at its next start", rm->plan->pf,
                             rm->n_now, resume_what(rm));
                return;
        }
        bind_start(rm);
}

static void provision_phase_done(struct reconf_machine *rm) {
        if (rm->n_provision_failed > 0) {
                if (!rm->message)
                        set_message(&rm->message, "%u VF(s) could not be provisioned: %s", rm->n_provision_failed,
                                    strna(rm->bind_message));
                rm->failed = true;
        }
        if (!rm->rollback)
                (void) journal_phase(rm, "bind");
        /* Only a class state to keep needs the disk: a restart provisions
         * again (idempotent) from phase "provision" as from "bind". */
        if (rm->class_changed) {
                rm->class_changed = false;
                commit_hard(rm, provision_committed);
                return;
        }
        provision_committed(rm, 0, NULL);
}

static void provision_start(struct reconf_machine *rm) {
        unsigned n = rm->n_vfs;
        _cleanup_free_ unsigned *idx = calloc(n ? n : 1, sizeof(unsigned));
        _cleanup_free_ struct json_object **cls = calloc(n ? n : 1, sizeof(struct json_object *));
        unsigned m = 0;
        int r = -ENOMEM;

        rm->phase = rm->rollback ? "rollback" : "provision";
        rm->phase_done = provision_phase_done;
        if (idx && cls) {
                for (unsigned k = 0; k < n; k++) {
                        struct reconf_item *it = item_at(rm, k);

                        if (rm->vf_failed[k] == VF_MISSING)
                                continue;
                        idx[m] = k;
                        cls[m++] = it ? it->class_state : NULL;
                }
                rm->submitting++;
                rm->pending += m;
                r = rm->ops->provision(rm->userdata, idx, m, cls);
                if (r < 0)
                        rm->pending -= m;
                rm->submitting--;
        }
        if (r < 0)
                for (unsigned k = 0; k < n; k++) {
                        if (rm->vf_failed[k] == VF_MISSING)
                                continue;
                        rm->vf_failed[k] = VF_PROVISION_FAILED;
                        if (rm->n_provision_failed++ == 0)
                                set_message(&rm->bind_message, "provisioning was not started: %s", errno_message(r));
                }
        phase_maybe_done(rm);
}

void reconf_machine_provision_done(struct reconf_machine *rm, unsigned index, int r, struct json_object *state,
                                   const char *message) {
        if (index < rm->n_vfs && r < 0) {
                rm->vf_failed[index] = VF_PROVISION_FAILED;
                if (rm->n_provision_failed++ == 0)
                        set_message(&rm->bind_message, "%s", message ?: strerror(-r));
                json_object_put(state);
        } else if (index < rm->n_vfs && state) {
                struct reconf_item *it = item_at(rm, index);
                struct svff_reconf_step s = {
                        .phase = SVFF_RECONF_PHASE_PROVISION, .action = SVFF_RECONF_DO_PROVISION, .item = -1,
                        .numvfs = index,
                };

                step_report(rm, &s, rm->rollback ? "rollback" : NULL, 0, NULL);
                if (it) {
                        json_object_put(it->class_state);
                        it->class_state = json_object_get(state);
                        (void) reconf_journal_set_class(rm->journal, index, json_object_get(state));
                        rm->class_changed = true;
                }
                json_object_put(state);
        } else
                json_object_put(state);
        rm->pending--;
        phase_maybe_done(rm);
}

/* bind */

static void bind_phase_done(struct reconf_machine *rm) {
        if (rm->n_bind_failed > 0 && !rm->message)
                set_message(&rm->message, "%u VF(s) could not be bound to %s: %s", rm->n_bind_failed,
                            rm->plan->driver, strna(rm->bind_message));
        if (rm->n_bound > 0) {
                /* What was bound: as many VFs as went to the driver. */
                struct svff_reconf_step b = {
                        .phase = SVFF_RECONF_PHASE_BIND, .action = SVFF_RECONF_DO_BIND, .item = -1,
                        .numvfs = rm->n_bound,
                };

                step_report(rm, &b, rm->rollback ? "rollback" : NULL, 0, NULL);
        }
        if (rm->stopping) {
                /* The bind phase completed; the journal has the next start
                 * bind again (idempotent) and restore. */
                finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true, "svffd is stopping; %s at its next start",
                             resume_what(rm));
                return;
        }
        restore_start(rm);
}

static void bind_start(struct reconf_machine *rm) {
        _cleanup_free_ unsigned *idx = calloc(rm->n_vfs ? rm->n_vfs : 1, sizeof(unsigned));
        unsigned n = 0;
        int r;

        rm->phase = rm->rollback ? "rollback" : "bind";
        rm->phase_done = bind_phase_done;
        if (!idx) {
                finish_abort(rm, RECONF_ERR_FAILED, true, "out of memory; %s at the next start", resume_what(rm));
                return;
        }
        for (unsigned k = 0; k < rm->n_vfs; k++)
                if (!rm->vf_failed[k])
                        idx[n++] = k;
        rm->n_bound = n;
        rm->submitting++;
        rm->pending += n;
        r = n > 0 ? rm->ops->bind(rm->userdata, idx, n) : 0;
        if (r < 0)
                rm->pending -= n;
        rm->submitting--;
        if (r < 0) {
                rm->phase_done = NULL;
                finish_abort(rm, r == -ESHUTDOWN ? RECONF_ERR_SHUTTING_DOWN : RECONF_ERR_FAILED, true,
                             "the binding could not be started (%s); %s at the next start", errno_message(r),
                             resume_what(rm));
                return;
        }
        phase_maybe_done(rm);
}

void reconf_machine_bind_done(struct reconf_machine *rm, unsigned index, int r, const char *message) {
        if (index < rm->n_vfs && r < 0) {
                rm->vf_failed[index] = VF_BIND_FAILED;
                rm->n_bound--;
                if (rm->n_bind_failed++ == 0 && rm->n_provision_failed == 0)
                        set_message(&rm->bind_message, "%s", message ?: strerror(-r));
        }
        rm->pending--;
        phase_maybe_done(rm);
}

/* restore */

static bool want_restore(struct reconf_machine *rm, size_t i) {
        const struct svff_reconf_item *it = &rm->plan->items[i];

        if (rm->items[i].state != RECONF_ITEM_QUIESCED || it->index >= rm->n_now)
                return false;
        /* Released ones come back only when the change did not happen. */
        return it->fate == SVFF_RECONF_SURVIVES || rm->rollback;
}

static void restore_phase_done(struct reconf_machine *rm) {
        if (rm->error == RECONF_OK && rm->n_bind_failed + rm->n_provision_failed > 0)
                rm->failed = true;
        if (!rm->rollback && !rm->failed && rm->error == RECONF_OK) {
                const struct svff_reconf_step *s = find_step(rm, SVFF_RECONF_PHASE_COMMIT, -1, SVFF_RECONF_DO_COMMIT, 0);

                if (s)
                        step_report(rm, s, NULL, 0, NULL);
        }
        /* A rollback is a failure of what was asked, except when
         * recovering: then putting everything back is the goal. */
        if (rm->rollback && rm->error == RECONF_OK && !rm->recovery)
                rm->error = RECONF_ERR_FAILED;
        finish(rm);
}

static void restore_start(struct reconf_machine *rm) {
        poll_stop(rm);
        rm->phase = rm->rollback ? "rollback" : "restore";
        if (rm->stop_now) {
                finish_abort(rm, RECONF_ERR_SHUTTING_DOWN, true,
                             "svffd stopped before the assignments were put back; %s at its next start",
                             resume_what(rm));
                return;
        }
        if (!rm->rollback && !rm->failed)
                for (size_t i = 0; i < rm->plan->n_items; i++) {
                        const struct svff_reconf_step *s;

                        if (rm->plan->items[i].fate != SVFF_RECONF_RELEASED)
                                continue;
                        rm->items[i].state = RECONF_ITEM_RELEASED;
                        s = find_step(rm, SVFF_RECONF_PHASE_RESTORE, (int) i, SVFF_RECONF_DO_FORGET, 0);
                        if (s)
                                step_report(rm, s, NULL, 0, rm->items[i].message);
                }
        /* A VF not provisioned or not on the driver goes to no domain. */
        for (size_t i = 0; i < rm->plan->n_items; i++) {
                struct reconf_item *s = &rm->items[i];

                if (want_restore(rm, i) && rm->plan->items[i].index < rm->n_vfs &&
                    rm->vf_failed[rm->plan->items[i].index]) {
                        s->state = RECONF_ITEM_RESTORE_FAILED;
                        s->r = -EBUSY;
                        if (rm->vf_failed[rm->plan->items[i].index] == VF_PROVISION_FAILED)
                                set_message(&s->message, "VF %s could not be provisioned (%s), so it was not "
                                            "returned to its domain", s->vf, strna(rm->bind_message));
                        else
                                set_message(&s->message, "VF %s is on another driver, not %s (%s), so it was not "
                                            "returned to its domain", s->vf, rm->plan->driver,
                                            strna(rm->bind_message));
                }
        }
        rm->phase_done = restore_phase_done;
        submit_groups(rm, KIND_RESTORE, want_restore);
        phase_maybe_done(rm);
}

void reconf_machine_restore_done(struct reconf_machine *rm, size_t i, int r, const char *guest_address,
                                 const char *message) {
        struct reconf_item *s = &rm->items[i];
        const struct svff_reconf_step *step = find_step(rm, SVFF_RECONF_PHASE_RESTORE, (int) i, _SVFF_RECONF_DO_MAX, 0);
        struct svff_reconf_step rb = {
                .phase = SVFF_RECONF_PHASE_RESTORE, .item = (int) i,
                .action = s->mode == SVFF_PAUSE_NATIVE ? SVFF_RECONF_DO_UNPAUSE : SVFF_RECONF_DO_REATTACH,
        };

        if (r < 0) {
                s->state = RECONF_ITEM_RESTORE_FAILED;
                s->r = r;
                set_message(&s->message, "%s", message ?: strerror(-r));
        } else {
                s->state = RECONF_ITEM_RESTORED;
                snprintf(s->guest_address, sizeof(s->guest_address), "%s", guest_address ?: "");
                rm->n_restored++;
        }
        if (step || rm->rollback)
                step_report(rm, step && !rm->rollback ? step : &rb, rm->rollback ? "rollback" : NULL, r, s->message);
        if (r >= 0)
                fault_point("after-reattach", rm->n_restored);
        rm->pending--;
        phase_maybe_done(rm);
}

/* the end */

/* Whether an assignment is off its domain although it should be back
 * and nothing definite stopped it: its restore never ran (not started,
 * svffd stopping) or was cut short by libvirt going away. */
static bool item_unsettled(const struct reconf_machine *rm, size_t i) {
        const struct svff_reconf_item *it = &rm->plan->items[i];
        const struct reconf_item *s = &rm->items[i];

        if (it->index >= rm->n_now || (it->fate != SVFF_RECONF_SURVIVES && !rm->rollback))
                return false;
        if (s->state == RECONF_ITEM_QUIESCED)
                return true;
        return s->state == RECONF_ITEM_RESTORE_FAILED &&
               (s->r == -ECANCELED || s->r == -ENOTCONN || s->r == -ESHUTDOWN);
}

static void finish_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0 && rm->error == RECONF_OK) {
                rm->error = RECONF_ERR_STORE;
                set_message(&rm->message, "recording the outcome failed: %s", message ?: strerror(-r));
        }
        rm->finished = true;
        rm->ops->finished(rm->userdata);
}

static void finish(struct reconf_machine *rm) {
        for (size_t i = 0; i < rm->plan->n_items; i++)
                if (rm->items[i].state != RECONF_ITEM_RELEASED && !reconf_machine_item_has_vf(rm, i) &&
                    rm->plan->items[i].a.state == SVFF_ASSIGN_ATTACHED)
                        rm->failed = true;
        if (rm->failed && rm->error == RECONF_OK)
                rm->error = RECONF_ERR_FAILED;

        /* The journal goes only when every assignment it covers is
         * settled: one that should be back and never was keeps it, so
         * that the next start (or libvirt connection) puts it back. */
        if (!rm->keep_journal)
                for (size_t i = 0; i < rm->plan->n_items; i++)
                        if (item_unsettled(rm, i)) {
                                rm->keep_journal = true;
                                if (rm->error == RECONF_OK)
                                        rm->error = RECONF_ERR_FAILED;
                                set_message(&rm->message, "%s; the journal is kept and %s at the next start of "
                                            "svffd or libvirt connection",
                                            rm->message ?: "not every assignment was put back", resume_what(rm));
                                break;
                        }
        for (size_t i = 0; i < rm->plan->n_items; i++) {
                struct reconf_item *s = &rm->items[i];

                if ((s->state == RECONF_ITEM_QUIESCED || s->state == RECONF_ITEM_RESTORE_FAILED ||
                     s->state == RECONF_ITEM_LOST_VF) && !s->message)
                        set_message(&s->message, "not restored: %s", rm->message ?: "the reconf stopped");
        }
        if (!rm->keep_journal) {
                fault_point("before-clear", 0);
                rm->journal_cleared = true;
        }
        commit_hard(rm, finish_committed);
}

/* ---- life cycle and inputs ---- */

struct reconf_machine *reconf_machine_new(struct svff_reconf_plan *plan, const struct reconf_journal *journal,
                                          uint64_t started_usec, bool libvirt, const struct reconf_ops *ops,
                                          void *userdata) {
        struct reconf_machine *rm = calloc(1, sizeof(*rm));

        if (!rm) {
                svff_reconf_plan_free(plan);
                return NULL;
        }
        rm->plan = plan;
        rm->ops = ops;
        rm->userdata = userdata;
        rm->libvirt = libvirt;
        rm->n_now = plan->from;
        rm->phase = journal ? phase_literal(journal->phase) : "quiesce";
        rm->items = calloc(plan->n_items ? plan->n_items : 1, sizeof(*rm->items));
        rm->log = json_object_new_array();
        rm->journal = reconf_journal_encode(plan, rm->phase, started_usec);
        if (!rm->items || !rm->log || !rm->journal)
                return reconf_machine_free(rm);
        for (size_t i = 0; i < plan->n_items; i++)
                snprintf(rm->items[i].vf, sizeof(rm->items[i].vf), "%s", plan->items[i].vf);
        if (journal) {
                rm->recovery = true;
                rm->resume_phase = streq(journal->phase, "quiesce") ? "quiesce" : "numvfs";
                rm->rollback_reason = journal->rollback_reason;
                rm->journal_phase = phase_literal(journal->phase);
                if (journal->reprogram) {
                        struct json_object *ids = NULL, *identity = NULL;

                        rm->reprogram = true;
                        rm->flashed = journal->reprogram_flashed;
                        rm->interrupted = streq(journal->phase, "interrupted");
                        rm->image = strdup(journal->reprogram_image);
                        if (journal->reprogram_reason)
                                rm->reprogram_reason = strdup(journal->reprogram_reason);
                        if (journal->reprogram_flash_unit &&
                            !(rm->flash_unit = strdup(journal->reprogram_flash_unit)))
                                return reconf_machine_free(rm);
                        if (json_object_object_get_ex(journal->reprogram, "ids", &ids) &&
                            json_object_is_type(ids, json_type_array) &&
                            json_object_deep_copy(ids, &rm->ids, NULL) < 0)
                                return reconf_machine_free(rm);
                        if (json_object_object_get_ex(journal->reprogram, "image_identity", &identity) &&
                            json_object_is_type(identity, json_type_object) &&
                            json_object_deep_copy(identity, &rm->image_identity, NULL) < 0)
                                return reconf_machine_free(rm);
                        if (json_object_object_get_ex(journal->reprogram, "image_before", &identity) &&
                            json_object_is_type(identity, json_type_object) &&
                            json_object_deep_copy(identity, &rm->image_before, NULL) < 0)
                                return reconf_machine_free(rm);
                        if (!rm->image || journal_reprogram(rm) < 0)
                                return reconf_machine_free(rm);
                        /* A plan journaled before it kept the image: its
                         * steps are the reprogram's from here. */
                        if (!plan->image && (svff_reconf_plan_set_reprogram(plan, rm->image, rm->ids) < 0 ||
                                             journal_plan(rm) < 0))
                                return reconf_machine_free(rm);
                }
                if (journal->rollback) {
                        /* The interrupted run was going back: so does this
                         * one, to the count it recorded. */
                        rollback_set(rm);
                        rm->rollback_to = journal->rollback_to;
                        rm->n_now = rm->rollback_to;
                        if (reconf_journal_set_rollback(rm->journal, rm->rollback_to, journal->rollback_reason) < 0)
                                return reconf_machine_free(rm);
                }
                if (journal->owner && reconf_journal_set_owner(rm->journal, journal->owner) < 0)
                        return reconf_machine_free(rm);
                for (size_t i = 0; i < plan->n_items; i++) {
                        struct json_object *c = reconf_journal_get_class(journal, plan->items[i].index);

                        if (c)
                                reconf_machine_set_class(rm, i, json_object_get(c));
                }
        }
        return rm;
}

struct reconf_machine *reconf_machine_free(struct reconf_machine *rm) {
        if (!rm)
                return NULL;
        for (size_t i = 0; rm->items && i < rm->plan->n_items; i++) {
                free(rm->items[i].message);
                json_object_put(rm->items[i].class_state);
        }
        free(rm->items);
        svff_reconf_plan_free(rm->plan);
        json_object_put(rm->journal);
        json_object_put(rm->log);
        strv_free(rm->vfs);
        free(rm->vf_failed);
        free(rm->bind_message);
        free(rm->image);
        free(rm->flash_unit);
        json_object_put(rm->image_identity);
        json_object_put(rm->image_before);
        json_object_put(rm->ids);
        free(rm->reprogram_reason);
        free(rm->message);
        free(rm);
        return NULL;
}

void reconf_machine_set_class(struct reconf_machine *rm, size_t i, struct json_object *state) {
        json_object_put(rm->items[i].class_state);
        rm->items[i].class_state = state;
        (void) reconf_journal_set_class(rm->journal, rm->plan->items[i].index, json_object_get(state));
}

void reconf_machine_recover_item(struct reconf_machine *rm, size_t i, bool recorded, const char *vf,
                                 enum svff_assign_state state, enum svff_pause_mode mode) {
        struct reconf_item *s = &rm->items[i];

        if (vf)
                snprintf(s->vf, sizeof(s->vf), "%s", vf);
        if (rm->plan->items[i].a.state != SVFF_ASSIGN_ATTACHED)
                return;
        if (!recorded) {
                set_message(&s->message, "the assignment is no longer recorded");
                s->state = RECONF_ITEM_RELEASED;
                s->unrecorded = true;
                return;
        }
        /* Paused ones were taken off their domain by the interrupted
         * run; one still recorded attached may have been, natively
         * paused or detached, before its record was written: its mode
         * is unknown (SVFF_PAUSE_NONE), and the restore re-attaches it
         * or, found in its domain, unpauses it. Idempotent either way. */
        s->state = RECONF_ITEM_QUIESCED;
        s->mode = state == SVFF_ASSIGN_PAUSED ? mode : SVFF_PAUSE_NONE;
}

static void aborted_committed(struct reconf_machine *rm, int r, const char *message) {
        (void) r;
        (void) message;
        rm->finished = true;
        rm->ops->finished(rm->userdata);
}

static void journal_committed(struct reconf_machine *rm, int r, const char *message) {
        if (r < 0) {
                /* Nothing was done: the journal goes from memory too (one
                 * more commit, which may fail as well). */
                rm->journal_cleared = true;
                rm->error = RECONF_ERR_STORE;
                set_message(&rm->message, "journaling the plan failed: %s; nothing was changed",
                            message ?: strerror(-r));
                commit_hard(rm, aborted_committed);
                return;
        }
        fault_point("after-journal", 0);
        quiesce_start(rm);
}

void reconf_machine_start(struct reconf_machine *rm) {
        if (!rm->recovery) {
                commit_hard(rm, journal_committed);
                return;
        }
        if (rm->reprogram && !streq(rm->resume_phase, "quiesce") && !rm->rollback && !rm->flashed &&
            reprogram_recover(rm))
                return;
        if (streq(rm->resume_phase, "quiesce")) {
                /* Nothing was destroyed yet: put everything back. */
                rollback_set(rm);
                set_message(&rm->message, rm->after_restart ? "svffd stopped before the VF count changed"
                                                            : "the reconf ended before the VF count changed");
                restore_start(rm);
                return;
        }
        /* Resuming, or the rollback's own steps: the count back (where
         * it normally still is), its VFs provisioned and bound, every
         * assignment put back. Each is idempotent. */
        if (rm->rollback)
                set_message(&rm->message, "%s a failed reconf (%s)",
                            rm->after_restart ? "svffd stopped while rolling back"
                                              : "an earlier attempt did not finish rolling back",
                            rm->rollback_reason ?: "no reason recorded");
        numvfs_start(rm);
}

void reconf_machine_stop(struct reconf_machine *rm, bool now) {
        rm->stopping = true;
        if (now)
                rm->stop_now = true;
}

void reconf_machine_lost_libvirt(struct reconf_machine *rm) {
        rm->lost_libvirt = true;
}

/* ---- accessors ---- */

const struct svff_reconf_plan *reconf_machine_plan(const struct reconf_machine *rm) {
        return rm->plan;
}

const struct reconf_item *reconf_machine_item(const struct reconf_machine *rm, size_t i) {
        return &rm->items[i];
}

void reconf_machine_record(const struct reconf_machine *rm, size_t i, struct reconf_record *ret) {
        const struct reconf_item *s = &rm->items[i];
        struct reconf_record rec = { .action = RECONF_RECORD_KEEP, .vf = s->vf };

        if (!s->unrecorded)
                switch (s->state) {
                case RECONF_ITEM_QUIESCE_FAILED:
                        /* The guest may still let go later: the record says so. */
                        if (s->r == -ETIMEDOUT) {
                                rec.action = RECONF_RECORD_SET;
                                rec.state = SVFF_ASSIGN_DETACHING;
                                rec.mode = SVFF_PAUSE_NONE;
                        }
                        break;
                case RECONF_ITEM_RESTORED:
                        rec.action = RECONF_RECORD_SET;
                        rec.state = SVFF_ASSIGN_ATTACHED;
                        rec.mode = SVFF_PAUSE_NONE;
                        rec.guest_address = s->guest_address;
                        break;
                case RECONF_ITEM_RELEASED:
                        rec.action = RECONF_RECORD_REMOVE;
                        break;
                case RECONF_ITEM_QUIESCED:
                case RECONF_ITEM_RESTORE_FAILED:
                case RECONF_ITEM_LOST_VF:
                        /* Off its domain: the record keeps the reservation. */
                        rec.action = RECONF_RECORD_SET;
                        rec.state = SVFF_ASSIGN_PAUSED;
                        rec.mode = s->mode != SVFF_PAUSE_NONE ? s->mode : SVFF_PAUSE_DETACH;
                        break;
                case RECONF_ITEM_UNTOUCHED:
                default:
                        break;
                }
        *ret = rec;
}

const char *const *reconf_machine_vfs(const struct reconf_machine *rm, unsigned *ret_n, unsigned *ret_gen) {
        if (ret_n)
                *ret_n = rm->vfs ? rm->n_vfs : 0;
        if (ret_gen)
                *ret_gen = rm->vfs_gen;
        return (const char *const *) rm->vfs;
}

struct json_object *reconf_machine_log(const struct reconf_machine *rm) {
        return rm->log;
}

const char *reconf_machine_phase(const struct reconf_machine *rm) {
        return rm->phase;
}

bool reconf_machine_rollback(const struct reconf_machine *rm) {
        return rm->rollback;
}

void reconf_machine_set_after_restart(struct reconf_machine *rm, bool after_restart) {
        rm->after_restart = after_restart;
}

bool reconf_machine_after_restart(const struct reconf_machine *rm) {
        return rm->after_restart;
}

bool reconf_machine_recovery(const struct reconf_machine *rm) {
        return rm->recovery;
}

unsigned reconf_machine_rollback_to(const struct reconf_machine *rm) {
        return rm->rollback_to;
}

unsigned reconf_machine_numvfs_now(const struct reconf_machine *rm) {
        return rm->n_now;
}

unsigned reconf_machine_provision_failed(const struct reconf_machine *rm) {
        return rm->n_provision_failed;
}

unsigned reconf_machine_bind_failed(const struct reconf_machine *rm) {
        return rm->n_bind_failed + rm->n_provision_failed;
}

bool reconf_machine_journal_kept(const struct reconf_machine *rm) {
        return !rm->journal_cleared;
}

bool reconf_machine_finished(const struct reconf_machine *rm) {
        return rm->finished;
}

enum reconf_error reconf_machine_result(const struct reconf_machine *rm, const char **ret_message) {
        if (ret_message)
                *ret_message = rm->message;
        return rm->error;
}

const char *reconf_machine_item_outcome(const struct reconf_machine *rm, size_t i) {
        const struct svff_reconf_item *it = &rm->plan->items[i];

        switch (rm->items[i].state) {
        case RECONF_ITEM_RESTORED:
                return rm->rollback ? "rolled-back" : "restored";
        case RECONF_ITEM_RELEASED:
                return "released";
        case RECONF_ITEM_UNTOUCHED:
                return it->a.state == SVFF_ASSIGN_ATTACHED ? "untouched" : "kept-paused";
        case RECONF_ITEM_QUIESCE_FAILED:
                return "quiesce-failed";
        case RECONF_ITEM_LOST_VF:
                return "no-vf";
        case RECONF_ITEM_QUIESCED:
        case RECONF_ITEM_RESTORE_FAILED:
        default:
                return "paused";
        }
}

bool reconf_machine_item_has_vf(const struct reconf_machine *rm, size_t i) {
        switch (rm->items[i].state) {
        case RECONF_ITEM_RESTORED:
                return true;
        case RECONF_ITEM_QUIESCE_FAILED:
                /* Not taken off, unless its domain is gone. */
                if (rm->items[i].r == -ENOENT)
                        return false;
                __attribute__((fallthrough));
        case RECONF_ITEM_UNTOUCHED:
                return rm->plan->items[i].a.state == SVFF_ASSIGN_ATTACHED;
        default:
                return false;
        }
}

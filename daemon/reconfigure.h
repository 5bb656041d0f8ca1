/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* io.svff.Reconf: a PF's VF count changed while the domains keep their
 * VFs, executing a plan from src/reconf.h. The sequence below is the
 * state machine's (reconf-machine.h); its operations are reconf-ops.c's;
 * this module plans, answers the dry run, replies and recovers.
 *
 *   main:    plan (from the store and a fresh snapshot); dry_run answers
 *            with it. Else journal {op: reconf, phase: quiesce, plan},
 *            commit.
 *   virt:    one job per domain (parallel across domains, serialised
 *            within one): pause (native, else detach with reservation),
 *            detach, or release each attached assignment.
 *   main:    records "held", journal phase "numvfs", commit.
 *   ops:     numvfs 0, then N; read the PF back.
 *   main:    records the new VFs, journal phase "provision", commit.
 *   ops:     provision each VF (its device class; nothing for a bare
 *            PCI function), journal phase "bind" when a class state
 *            changed, then bind every VF to the driver.
 *   virt:    unpause / re-attach each survivor at its recorded guest
 *            address and alias.
 *   main:    records "attached", drops released ones, clears the
 *            journal, commit, reply.
 *
 * Failures end in the best consistent state and the reply says, per
 * assignment, whether the domain has its VF and why not (a rollback is
 * journaled first: phase "rollback" with the count it goes back to):
 *   - a quiesce step fails: nothing was destroyed; the others are put
 *     back (rolled back);
 *   - numvfs fails before VFs were destroyed: all are put back;
 *   - the write of N is refused after the 0 write (the PF has no VF):
 *     rolled back to the count the reconf started from, every
 *     assignment put back; if going back fails too, the journal stays;
 *   - the driver creates only part of the VFs: what exists is bound and
 *     assignments whose VF exists are restored, the rest stay paused
 *     with their reservation;
 *   - a domain job cannot be submitted: a quiesce not started rolls the
 *     reconf back, a restore not started keeps the journal;
 *   - numvfs blocked past its deadline (a VF still held): the journal is
 *     kept and the assignments stay paused; the reconf resumes at the
 *     next start or with the same Reconf again;
 *   - a restore step fails: that assignment stays paused, reserved.
 *
 * The journal is cleared only once every assignment it covers is
 * settled (restored, or failed for a reason reported to the caller).
 *
 * A stop (SIGTERM) is an operation: the reconf goes on to its next
 * journaled safe point, then svffd exits. A quiesce in flight completes
 * and rolls back; a numvfs or bind phase completes and the reconf stops
 * there with its journal; a restore in flight completes. The state left
 * is the one a SIGKILL at the same step leaves after recovery. Past the
 * stop deadline, what completes journals and starts nothing.
 *
 * Crash recovery (reconf_recover, once libvirt is connected): a journal
 * in phase quiesce rolls back (re-attach, nothing was destroyed); in
 * phase rollback it finishes the rollback (numvfs back to the recorded
 * count, bind, restore every assignment); in another phase it resumes
 * (numvfs to the target, bind, restore). Every step is idempotent. Each
 * recovery is an event and listed by Status. */

#include "manager.h"
#include "params.h"
#include "reconf.h"
#include "server.h"

/* io.svff.Reconf and io.svff.Reprogram: their rows of the method table. */
extern const struct method reconf_method, reprogram_method;

/* Starts a reprogram of pf that svffd itself decided on (a policy
 * naming an image), on the current snapshot: to numvfs VFs (-1: the
 * count it has) on driver (NULL: the stored one, else the global),
 * pausing every assignment as Reprogram does. reason says why, for the
 * log; owner (may be NULL) is recorded as the owner of the PF's count
 * (see autoinit.h). 0 once started (manager_find_operation() has it
 * while it runs); else a -errno and err says why nothing was started:
 * -EBUSY something on pf is in progress, -EINVAL the image or the flash
 * hook refused. */
int reconf_reprogram_own(struct manager *m, const char *pf, const char *image, int numvfs, const char *driver,
                         const char *reason, const char *owner, struct svff_error *err);

/* Starts recovery of every journaled reconf without an operation (after
 * a crash), when libvirt is connected. Safe to call repeatedly. */
void reconf_recover(struct manager *m);

/* The target count of the reconf of pf the journal records (interrupted
 * by a crash or a blocked write), or -1. Nothing else may change such a
 * PF: recovery, or the same Reconf again, completes it. */
int reconf_journaled(struct manager *m, const char *pf);

/* Whether any VF of pf is assigned (Init refuses to change such a PF's
 * count: that is Reconf's job). */
bool reconf_pf_has_assignments(struct manager *m, const char *pf);

/* Answers call with reply (taken), a dry run's, once the PF's device
 * class has planned plan->to VFs: plan (taken) gains its provision
 * steps, reply the class's plan (class_plan), and executable false when
 * the class refuses, or (strict: an init, which refuses it too) cannot
 * plan at all. Init's dry run uses it as Reconf's. */
void reconf_dry_run_reply(struct manager *m, struct call *call, struct json_object *reply, struct svff_reconf_plan *plan,
                          bool strict);

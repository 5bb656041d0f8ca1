/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Operations that change the host, run on the "ops" worker pool:
 *
 *   Init(pf, numvfs, driver)
 *     main:   journal {op: init} for the PF, commit
 *     worker: sriov_numvfs (through 0), read the VFs back
 *     main:   record the PF's desired state and each VF with its
 *             original driver, journal phase "bind", commit
 *     worker: bind every VF by address, one progress event per VF
 *     main:   clear the journal entry, commit, reply
 *
 *   Init(pf, policy: true)
 *     the same, with the count and driver of pf's policy, which owns
 *     the count again (see autoinit.h)
 *
 *   Release(vf, force)
 *     main:   an assigned VF is refused, or with force detached first
 *             (assign_detach(), the Detach path)
 *     worker: give the VF back to its recorded original driver
 *     main:   drop the VF record, the operator owns the PF's count,
 *             commit, reply
 *
 * Every record exists in the store before the sysfs change it describes
 * could be lost track of, so a crash at any point leaves a store that
 * says what svffd was doing (see reconcile.h for how it is reported). */

#include "manager.h"
#include "params.h"
#include "server.h"

/* The typed io.svff error for a -errno from the core. */
const char *operation_error_name(int r);

/* Starts an Init of pf (numvfs VFs on driver). call may be NULL when
 * svffd itself starts it (a PF policy; reason says which): then the
 * outcome is logged and sent to Monitor subscribers only. autoprobe >= 0
 * writes sriov_drivers_autoprobe once the VFs are bound. owner, when not
 * NULL, is recorded as the owner of the PF's count with it ("operator",
 * "policy:<name>"; see autoinit.h), once the count is set. With a call,
 * every failure has been answered. -EBUSY: an operation on pf is in
 * progress. */
int operation_init_start(struct manager *m, struct call *call, const char *pf, unsigned numvfs,
                         const char *driver, int autoprobe, const char *reason, const char *owner);

/* How long an Init from `from` VFs to `to` may take at most under the
 * current config: the deadlines of the numvfs writes (through 0 when
 * the count changes) plus the binding's. */
uint64_t operation_init_budget(struct manager *m, unsigned from, unsigned to);

/* io.svff.Init and io.svff.Release: their rows of the method table. */
extern const struct method init_method, release_method;

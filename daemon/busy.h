/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The one answer to "may this request change PF pf, or a VF of it, now?",
 * asked by every method that changes the host before it starts, and by
 * its dry run, which refuses what the request would. A PF is busy for a
 * request when, in this order:
 *
 *   PF_BUSY_OPERATION  an init, release, reconf or reprogram owns it (the
 *                      operation registry);
 *   PF_BUSY_ASSIGN     an attach, detach, pause or unpause of one of its
 *                      VFs runs, or is journaled and not resolved against
 *                      libvirt yet; asked about a VF, of that VF only;
 *   PF_BUSY_JOURNAL    it has a journal no operation works on: a VF count
 *                      write that failed or passed its deadline and may
 *                      still be in the kernel, or an interrupted
 *                      reprogram. The pending write, or the request that
 *                      completes it, removes every VF of the PF, and a VF
 *                      handed out would go with them;
 *   PF_BUSY_WRITE      no operation runs on it, but a VF count write is
 *                      still in the kernel: svffd's, past its deadline,
 *                      or another process's (a read of sriov_numvfs gave
 *                      up waiting for it). The kernel holds the PF until
 *                      it ends, and a step on one of its VFs would wait
 *                      behind it.
 *
 * A request that hands a VF out (Attach, Unpause) asks all of them.
 * Detach, Pause and Release ask without PF_BUSY_JOURNAL: the request
 * that completes the journal honours what they recorded, and they are
 * the way out of a journal that cannot be completed. Init and Reconf
 * ask PF_BUSY_OPERATION, PF_BUSY_ASSIGN (of every VF of the PF) and
 * PF_BUSY_WRITE: each completes a journal of its own kind and refuses
 * another kind, and a write still in the kernel would hold its count
 * step (Reconf's, after the domains gave their VFs up) or a reprogram's
 * remove. A policy's Init asks what an Init by hand does, except at
 * start-up, and waits instead of failing: its PF is looked at again
 * every 2 s. A dry run asks what its request would. */

#include <stdbool.h>

#include "error.h"
#include "manager.h"
#include "server.h"

enum {
        PF_BUSY_OPERATION = 1 << 0,
        PF_BUSY_ASSIGN = 1 << 1,
        PF_BUSY_JOURNAL = 1 << 2,
        PF_BUSY_WRITE = 1 << 3,
        PF_BUSY_ANY = PF_BUSY_OPERATION | PF_BUSY_ASSIGN | PF_BUSY_JOURNAL | PF_BUSY_WRITE,
};

/* Whether pf is busy for a request that changes device (pf itself, or
 * one of its VFs), asking what (PF_BUSY_*): -EBUSY with err saying why
 * and what to do, else 0. err may be NULL. pf NULL: device is a VF
 * whose PF neither svff's records nor the snapshot know; a journal whose
 * plan names it gives the PF, else only PF_BUSY_ASSIGN can be asked. */
int pf_busy(struct manager *m, const char *pf, const char *device, unsigned what, struct svff_error *err);

/* pf_busy(), its refusal answered on call as io.svff.OperationInProgress
 * naming device: true when it refused. */
bool pf_busy_refuse(struct manager *m, const char *pf, const char *device, unsigned what, struct call *call);

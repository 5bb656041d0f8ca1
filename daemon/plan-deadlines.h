/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What each step of a plan may take under svffd's settings (svff.conf's
 * timeout keys), set on the plan so that its dry run shows it. A step
 * that has no deadline of its own (a class step, a re-attach, a commit)
 * is left at 0. Set again after anything that rebuilds the steps. */

#include "manager.h"
#include "reconf.h"

/* How long the rescan after a reprogram's flash waits for the PF. */
#define PLAN_RESCAN_TIMEOUT_USEC (30 * USEC_PER_SEC)
/* How long a native pause or unpause (QMP) may take. */
#define PLAN_QMP_TIMEOUT_USEC (10 * USEC_PER_SEC)

void plan_set_deadlines(const struct manager *m, struct svff_reconf_plan *p);

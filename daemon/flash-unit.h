/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The flash hook in a transient systemd service of its own, when svffd
 * runs under systemd (sd_booted() and a system bus to reach it): started
 * through org.freedesktop.systemd1.Manager.StartTransientUnit, waited
 * for on svffd's event loop (JobRemoved, then the unit's Result), never
 * blocking it. systemd, not svffd, enforces the deadline and kills the
 * unit's whole cgroup (a child that called setsid() included), the
 * hook's output goes to the journal under the unit, and the unit keeps
 * its result (Type=oneshot, RemainAfterExit=yes) past a stop of svffd,
 * which is not in its cgroup: the next start takes the result up by the
 * unit's name (flash_unit_watch()).
 *
 * Without systemd the hook runs as svffd's child
 * (svff_flash_hook_run(), src/flash-hook.h): the fallback. */

#include <stdbool.h>
#include <systemd/sd-event.h>

#include "macro.h"
#include "sysfs.h"       /* usec_t */

struct flash_unit;

/* The unit's result, once: 0 (the hook exited 0), -ETIMEDOUT (systemd
 * killed it at its deadline), -EIO (another exit status or a signal),
 * -ENOENT (no such unit loaded: its result is gone), or the error of
 * the bus or of systemd; message says which (borrowed, NULL on
 * success). */
typedef void (*flash_unit_done_fn)(void *userdata, int r, const char *message);

/* Whether the hook can run in a unit of its own: svffd runs on a host
 * booted with systemd and reaches its manager over the system bus. */
bool flash_unit_available(void);

/* A new unit name for a flash of pf (a PCI address, its characters
 * valid in unit names as they are): "svff-flash-PF-RANDOM.service",
 * never used before, so that a restart never mistakes an earlier
 * flash's unit for this one's. -ENOMEM. */
int flash_unit_name(const char *pf, char **ret);

/* Starts unit name running hook as "hook PF IMAGE DEADLINE" (DEADLINE:
 * seconds since the epoch), with SVFF_PF, SVFF_IMAGE and SVFF_DEADLINE
 * in its environment, killed with its cgroup timeout_usec after its
 * start. done is called once from the event loop, unless the unit is
 * freed before. */
int flash_unit_start(sd_event *event, const char *name, const char *hook, const char *pf, const char *image,
                     usec_t timeout_usec, flash_unit_done_fn done, void *userdata, struct flash_unit **ret);

/* Takes up the result of unit name that another svffd started: done
 * once it has one (at once when it finished), or -ENOENT when no such
 * unit is loaded. backstop_usec: how long to wait at most (the unit's
 * own deadline and more). */
int flash_unit_watch(sd_event *event, const char *name, usec_t backstop_usec, flash_unit_done_fn done,
                     void *userdata, struct flash_unit **ret);

/* Stops waiting (done is not called). The unit is left as it is:
 * running, or keeping its result for the next start. Accepts NULL. */
struct flash_unit *flash_unit_free(struct flash_unit *u);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct flash_unit *, flash_unit_free);

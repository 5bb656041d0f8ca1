/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The real operations of the reconf state machine (reconf-machine.h):
 * domain jobs (pause / detach, unpause / re-attach through libvirt and
 * QMP) on the virt pool, the numvfs writes, device-class provisioning and
 * driver binding on the ops pool, and the commit of the store and the
 * journal on the main thread. A run (struct reconf_run) owns its machine
 * and what the operations need: the connection, copies of the config.
 *
 * Completions come back to the main thread, where svffd's stop is given
 * to the machine as its stop input before each is handed on. Commits are
 * deferred to the end of the event loop iteration, so that the records
 * of every completion delivered together go to disk in one commit. */

#include <stdbool.h>
#include <libvirt/libvirt.h>

#include "manager.h"
#include "reconf-machine.h"

struct reconf_item_glue {
        char rec_vf[SVFF_PCI_ADDR_STRLEN];      /* where its record is in the store now */
};

struct reconf_run {
        struct manager *m;
        struct operation *op;
        struct reconf_machine *rm;
        struct svff_ctx *ctx;
        virConnectPtr conn;             /* NULL when the plan needs no libvirt */
        struct reconf_item_glue *items;
        unsigned vfs_gen;               /* the VF list last recorded */
        char *pause_cmd, *unpause_cmd;
        usec_t detach_timeout, numvfs_timeout, numvfs_per_vf;
        unsigned n_attaching;           /* attach calls started (fault points) */
        unsigned n_jobs[2];             /* domain jobs submitted, quiesce and restore */
        struct svff_pf *after;          /* the PF as the last numvfs write left it */
        sd_event_source *commit_source;
        /* The run ended (reconf_machine_finished()): answer, free. */
        void (*finished)(struct reconf_run *run);
};

/* A run of plan (taken; freed on failure too) from journal (borrowed,
 * NULL: a new reconf). conn: a reference taken, or NULL. -ENOMEM. */
int reconf_run_new(struct manager *m, struct svff_reconf_plan *plan, const struct reconf_journal *journal,
                   uint64_t started_usec, virConnectPtr conn, struct reconf_run **ret);
void reconf_run_free(struct reconf_run *run);

/* Recovery: tells the machine where each assignment's record is now
 * (under the plan's VF address, or that of the VF with its index now). */
void reconf_run_recover_items(struct reconf_run *run);

/* Starts the machine; svffd's stop is forwarded first. */
void reconf_run_start(struct reconf_run *run);

/* A Monitor event for the run's PF: {event, device, pf}. */
struct json_object *reconf_run_event(struct reconf_run *run, const char *name);

/* The device-class step of one VF: what it needs before it goes to the
 * driver and back to its domain. */
int reconf_provision_vf(struct svff_ctx *ctx, const char *pf, unsigned index, const char *vf,
                        struct json_object *class_state, struct json_object **ret_state, struct svff_error *err);

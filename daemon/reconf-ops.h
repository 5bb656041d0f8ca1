/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The real operations of the reconf state machine (reconf-machine.h):
 * domain jobs (pause / detach, unpause / re-attach through libvirt and
 * QMP) on the virt pool, the numvfs writes, device-class provisioning and
 * driver binding on the ops pool, and the commit of the store and the
 * journal on the main thread. A run (struct reconf_run) owns its machine
 * and what the operations need: the connection, copies of the config,
 * and the environment its executor gives it (struct reconf_env: the
 * store, the pools, and callbacks for the journal commit, progress and
 * the stop), so that it knows nothing of svffd's manager and reports up
 * only through those.
 *
 * Completions come back to the main thread, where svffd's stop is given
 * to the machine as its stop input before each is handed on. Commits are
 * deferred to the end of the event loop iteration, so that the records
 * of every completion delivered together go to disk in one commit. */

#include <stdbool.h>
#include <stdint.h>
#include <libvirt/libvirt.h>
#include <systemd/sd-event.h>

#include "context.h"
#include "device.h"
#include "hv-removals.h"
#include "reconf-machine.h"
#include "store.h"
#include "numvfs-watch.h"
#include "worker.h"

struct reconf_run;
struct pfop_job;
struct flash_unit;

/* What a run is given by its caller (the executor): the services it
 * uses, borrowed for its life, and callbacks through which it reports
 * up, each with the run's userdata. It knows no more of svffd. */
struct reconf_env {
        struct svff_ctx *ctx;
        struct svff_store *store;
        sd_event *event;
        struct worker_pool *ops_pool;   /* numvfs writes, provisioning, binding */
        struct worker_pool *virt_pool;  /* every libvirt call */
        /* where the VFs a numvfs write has made so far are counted (not
         * ops_pool, which the write holds; NULL: not counted) */
        struct worker_pool *disc_pool;
        struct svff_hv_removals *removals;
        const char *pause_cmd, *unpause_cmd;    /* copied */
        usec_t detach_timeout, numvfs_timeout, numvfs_per_vf;
        usec_t bind_timeout, bind_per_vf;       /* bind_timeout_sec, ..._per_vf_msec */
        /* A reprogram: the config's flash hook and image directory
         * (copied; NULL: none), the hook's deadline, and how long the PF
         * may take to come back after the rescan. */
        const char *flash_hook, *flash_image_dir;
        usec_t flash_timeout, rescan_timeout;
        /* The PF's policy says "verify_image": "sha256": the image's
         * identity, before and after the hook, carries its content's
         * hash (read on the ops pool), and so does the store's record. */
        bool verify_image_sha256;
        /* The PF's policy's class settings (classes_policy_settings(),
         * copied; NULL: none), for its class's PF-wide set-up (a QDMA
         * PF's qmax) once a reprogrammed PF is back on its driver. */
        struct json_object *class_policy;

        /* Whether svffd is stopping (*ret_now: the event loop ended, the
         * pools take no more jobs). */
        void (*stopping)(void *userdata, bool *ret_stop, bool *ret_now);
        /* Sets (journal taken) or, NULL, clears pf's journal entry and
         * commits the store; -errno with err filled. */
        int (*commit)(void *userdata, const char *pf, struct json_object *journal, struct svff_error *err);
        /* svffd changed pf in sysfs. */
        void (*sysfs_changed)(void *userdata, const char *pf);
        /* The phase the run is in now ("numvfs", ...), for Status. */
        void (*phase)(void *userdata, const char *phase);
        /* While a numvfs write to target is in the kernel: the VFs
         * that exist now (n), each time that changes, and the write's
         * deadline. May be NULL. */
        void (*numvfs_progress)(void *userdata, unsigned target, unsigned n, usec_t deadline);
        /* A step done or failed (reconf_ops.step). */
        void (*step)(void *userdata, struct json_object *step, int item, int r, const char *message);
        /* The run ended (reconf_machine_finished()): answer, free. */
        void (*finished)(struct reconf_run *run);

        /* Device classes (daemon/classes.h), main thread: vf's recorded
         * class record (a new reference, or NULL), and a provisioned VF's
         * new record (taken) for the store. A VF with no record gets the
         * settings of class_policy above. */
        struct json_object *(*class_record)(void *userdata, const char *vf);
        void (*class_recorded)(void *userdata, const char *vf, struct json_object *record);
};

struct reconf_item_glue {
        char rec_vf[SVFF_PCI_ADDR_STRLEN];      /* where its record is in the store now */
        /* CLOCK_MONOTONIC: when its quiesce began (0: not by this run),
         * and how long its domain was without the device, from then to
         * its restore's return (0: not restored by this run). */
        usec_t off_since_usec, off_usec;
        /* CLOCK_MONOTONIC, around its quiesce and its restore by this
         * run (0: not done by it): svffd's own figures for the next
         * prediction (reconf-predict.h). */
        usec_t quiesce_began_usec, quiesce_ended_usec, restore_began_usec, restore_ended_usec;
};

struct reconf_run {
        struct reconf_env env;
        void *userdata;
        struct reconf_machine *rm;
        virConnectPtr conn;             /* NULL when the plan needs no libvirt */
        struct reconf_item_glue *items;
        unsigned vfs_gen;               /* the VF list last recorded */
        unsigned n_attaching;           /* attach calls started (fault points) */
        unsigned n_jobs[2];             /* domain jobs submitted, quiesce and restore */
        struct svff_pf *after;          /* the PF as the last numvfs write left it */
        /* the numvfs write in the kernel: its VFs so far, its target and
         * its deadline */
        struct numvfs_watch *numvfs_watch;
        unsigned numvfs_target;
        usec_t numvfs_deadline;
        char pf_id[16];                 /* "vvvv:dddd" before the removal, "" unknown */
        sd_event_source *commit_source;
        /* A flash hook in its own systemd unit (flash-unit.h), waited
         * for on the loop: the unit, the job that completes as the
         * flash, the poll of svffd's stop, the hand-off of its end. */
        struct flash_unit *flash;
        struct pfop_job *flash_job;
        sd_event_source *flash_poll, *flash_ended;
};

/* A run of plan (taken; freed on failure too) from journal (borrowed,
 * NULL: a new reconf) in env (copied; ctx referenced, the commands
 * copied). conn: a reference taken, or NULL. -ENOMEM. */
int reconf_run_new(const struct reconf_env *env, void *userdata, struct svff_reconf_plan *plan,
                   const struct reconf_journal *journal, uint64_t started_usec, virConnectPtr conn,
                   struct reconf_run **ret);
void reconf_run_free(struct reconf_run *run);

/* Recovery: tells the machine where each assignment's record is now
 * (under the plan's VF address, or that of the VF with its index now). */
void reconf_run_recover_items(struct reconf_run *run);

/* Starts the machine; svffd's stop is forwarded first. */
void reconf_run_start(struct reconf_run *run);

/* A Monitor event for the run's PF: {event, device, pf}. */
struct json_object *reconf_run_event(struct reconf_run *run, const char *name);

/* The steps themselves, on an ops pool worker, for every executor that
 * carries out a plan's numvfs and bind steps (the machine's ops above,
 * and an init's walk of its plan): one copy of each. */

/* A plan's numvfs steps: pf's count set to n, through 0 when it differs
 * (sriov.h: everything that can refuse the count is checked before the
 * first write), each write under base + per_vf for every VF it makes or
 * removes. At the count the PF has, nothing is written. Then what
 * exists is read into *ret_after, after a failure too, but not once a
 * write passed its deadline (it may still be in the kernel); NULL when
 * it could not be read. Returns the writes' result, err filled. */
int reconf_ops_numvfs(struct svff_ctx *ctx, const char *pf, unsigned n, usec_t base, usec_t per_vf,
                      struct svff_pf **ret_after, struct svff_error *err);

/* A plan's bind step: vfs[0..n) of pf to driver, one after the other,
 * under one budget of base + per_vf × n (bind.h); a VF not tried in
 * time fails with the budget's error, which counts the VFs bound so far.
 * each() hears of every VF tried: its position, the result and, on
 * failure, the message. stop(), when given, is asked before each VF:
 * true ends the step there. Returns how many failed. */
size_t reconf_ops_bind(struct svff_ctx *ctx, const char *pf, const char *driver, const char *const *vfs, size_t n,
                       usec_t base, usec_t per_vf, bool (*stop)(void *userdata),
                       void (*each)(void *userdata, size_t k, int r, const char *message), void *userdata);

/* A plan's pause step (on the virt pool): the domain's device alias
 * paused natively, through QMP's pause_cmd, when native is true (the
 * VF is in the running domain's live definition) and QEMU offers it;
 * else the VF detached from the definitions flags names (SVFF_HV_*; 0:
 * none), its reservation kept in the record, waiting for the guest
 * until deadline. *ret_mode: SVFF_PAUSE_NATIVE once paused natively,
 * SVFF_PAUSE_DETACH once the detach is tried; left as it was when QMP
 * failed otherwise than by not offering the pause, which does not fall
 * back to a detach. Returns 0 or the failure, err filled. */
int reconf_ops_pause(virDomainPtr dom, const char *vf, const char *alias, bool native, const char *pause_cmd,
                     unsigned flags, usec_t deadline, struct svff_hv_removals *removals,
                     enum svff_pause_mode *ret_mode, struct svff_error *err);

/* A plan's unpause step of a natively paused device: QMP's unpause_cmd
 * on the domain's device alias. */
int reconf_ops_unpause_native(virDomainPtr dom, const char *unpause_cmd, const char *alias, struct svff_error *err);

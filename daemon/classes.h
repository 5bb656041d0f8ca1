/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's glue to the device classes (src/class.h): every executor runs
 * a PF's class steps through here, and nothing here knows what a class
 * does.
 *
 * Where settings come from: the member of the PF's policy named after
 * the class ("nvme": {"vq": 2, "namespace": 1}) for every VF, overlaid
 * with the settings an assignment asked for (Attach's "class").
 *
 * What is recorded (store, main thread), verbatim as the class made it:
 *   VF record:         "class": {"name": "nvme", "settings": {...}, "state": {...}}
 *   assignment record: "class": {"settings": {...}, "state": {...}}
 *
 * Threads: the *_sync functions block on the device (admin commands) and
 * run on a worker thread only; they open the PF's class, run one step
 * and close it again, holding the PF's class lock, so the steps of one
 * PF never overlap (the discovery pass and an init, say): one table of
 * locks for the process. The rest runs on the main thread. */

#include <stdbool.h>
#include <json-c/json.h>

#include "class.h"
#include "manager.h"

/* ---- worker side: one step of pf's class (blocking) ----
 *
 * Each returns 0 when pf has no class (nothing to do, *ret untouched),
 * 1 after the step, -errno with err naming the device, the figure and
 * what to do. policy is the PF's policy's class members (may be NULL),
 * as classes_policy_settings() copied them; assignments, optional, maps
 * a VF index ("3") to the settings its assignment asked for. */

/* The settings of numvfs VFs: a new array, by VF index. */
struct json_object *classes_settings_array(const struct svff_class *class, struct json_object *policy,
                                           struct json_object *assignments, unsigned numvfs);

/* classes_settings_array() loaded by class on c (svff_class_load_all()):
 * what plan and prepare are given. */
int classes_load_all(const struct svff_class *class, const struct svff_class_pf *c, struct json_object *policy,
                     struct json_object *assignments, unsigned numvfs, struct svff_class_settings ***ret,
                     struct svff_error *err);

/* The class's plan for numvfs VFs (refuses what the PF cannot
 * provide), then the PF-wide changes it lists (vf null), before numvfs:
 * an init's, the settings loaded once for both, what the plan needs
 * logged. *ret is the plan; *ret_class_name (optional) is the class's
 * name; *prepared, set in any case, says whether the PF-wide changes
 * started (a failure before them changed nothing); *ret_loaded, after
 * both, the settings as loaded, for the provision of each VF (NULL:
 * they are loaded again there). */
struct classes_loaded;
int classes_plan_prepare_sync(struct svff_ctx *ctx, const char *pf, unsigned numvfs,
                              struct json_object *policy, struct json_object *assignments, struct json_object **ret,
                              const char **ret_class_name, bool *prepared, struct classes_loaded **ret_loaded,
                              struct svff_error *err);
void classes_loaded_free(struct classes_loaded *l);
/* classes_provision_sync(), unless recorded (the VF's class record, may
 * be NULL) has the same settings and verify finds the VF as it says:
 * then *ret is a copy of it, nothing is sent to the device, and it
 * returns 2. For a VF that goes back to the domain that had it (an
 * unpause). */
int classes_ensure_sync(struct svff_ctx *ctx, const char *pf, unsigned index, struct json_object *policy,
                        struct json_object *assignment, struct json_object *recorded, struct json_object **ret,
                        struct svff_error *err);
/* classes_ensure_sync() for a VF that changes hands (an attach, a
 * detach back to the pool, an unpause): unless the VF is verified to be
 * exactly as asked already, what recorded says it holds is released
 * first (an NVMe VF's namespaces, with their scrub; a NIC VF's MAC and
 * VLAN), and provision sets exactly the settings, resetting whatever
 * else the device shows. recorded is the VF's class record. */
int classes_handover_sync(struct svff_ctx *ctx, const char *pf, unsigned index, struct json_object *policy,
                          struct json_object *assignment, struct json_object *recorded, struct json_object **ret,
                          struct svff_error *err);
/* Provision, then verify, VF index: *ret is {"name": ..., "settings":
 * ..., "state": ...}, what classes_record_vf() records. */
int classes_provision_sync(struct svff_ctx *ctx, const char *pf, unsigned index,
                           struct json_object *policy, struct json_object *assignment, struct json_object **ret,
                           struct svff_error *err);
/* Provisions VF index again as record (the VF's class record,
 * classes_vf_record(), as journaled; NULL for a VF that has none yet)
 * says it was, or else with policy's settings: a reconf's provision step
 * on its worker, after the numvfs write and before vfio-pci. tenant: the
 * VF goes back to the domain that had it, whose guest must find the
 * device it knew. *ret is the new record. */
int classes_provision_recorded_sync(struct svff_ctx *ctx, const char *pf, unsigned index,
                                    struct json_object *record, struct json_object *policy, bool tenant,
                                    struct json_object **ret, struct svff_error *err);
/* pf's class held open (the PF read, the class opened, its lock held)
 * for the steps of many VFs, so a provision phase reads the PF once and
 * not once per VF: 0 and *ret NULL when pf has no class, 1 when opened.
 * The _open variants are the _sync ones above on it (NULL: no class,
 * 0). The PF as read stays as it was at open. */
struct classes_open;
int classes_open_sync(struct svff_ctx *ctx, const char *pf, struct classes_open **ret, struct svff_error *err);
void classes_close(struct classes_open *co);
/* ensure_open: tenant, the VF stays with the domain it is assigned
 * to, whose guest must find the device it knew (as a reconf's
 * provision, classes_provision_recorded_sync()); loaded (may be NULL),
 * the VF's settings as its init's plan loaded them from the same policy
 * and assignment, used when co's class is the one they were loaded for. */
int classes_ensure_open(struct classes_open *co, unsigned index, struct json_object *policy,
                        struct json_object *assignment, struct json_object *recorded, bool tenant,
                        const struct classes_loaded *loaded, struct json_object **ret, struct svff_error *err);
int classes_provision_recorded_open(struct classes_open *co, unsigned index, struct json_object *record,
                                    struct json_object *policy, bool tenant, struct json_object **ret,
                                    struct svff_error *err);
/* Undoes what state (as recorded) says provision did. */
int classes_release_sync(struct svff_ctx *ctx, const char *pf, unsigned index,
                         struct json_object *state, struct svff_error *err);
/* {"class": name, "pf": {...}, "vfs": {...}} plus, for every VF index
 * in recorded ({"<index>": state}, may be NULL), "drift": {"<index>":
 * message} where verify found the live state differs. Never waits for
 * the PF's lock when try is set: -EBUSY. */
int classes_inspect_sync(struct svff_ctx *ctx, const char *pf, struct json_object *recorded,
                         bool try, struct json_object **ret, struct svff_error *err);

/* ---- main thread: settings and records ---- */

/* A copy of settings as recorded (an assignment's, or the merged ones
 * of a VF's record), without "state" and "tenant": svffd's own keys for
 * a reprovision until they became provision's arguments, which an
 * Attach could pass through then. A record made so must not make every
 * later load of its VF fail. NULL: out of memory. Any thread. */
struct json_object *classes_recorded_settings(struct json_object *settings);

/* A copy of the class members of pf's policy ({"nvme": {...}}), or
 * NULL when its policy has none. */
struct json_object *classes_policy_settings(struct manager *m, const char *pf);
/* {"<index>": settings} of pf's assigned VFs that asked for class
 * settings (a copy), or NULL. */
struct json_object *classes_assignment_settings(struct manager *m, const char *pf);

/* Records rec (classes_provision_sync()'s, taken; NULL drops it) in
 * vf's record and, when vf is assigned, its state in the assignment's. */
int classes_record_vf(struct manager *m, const char *vf, struct json_object *rec);
/* The recorded "class" of vf's record (borrowed) or NULL; state only. */
struct json_object *classes_vf_record(struct manager *m, const char *vf);
struct json_object *classes_vf_state(struct manager *m, const char *vf);
/* Records the settings an assignment asked for, with the state it got
 * (both taken, either may be NULL). */
int classes_record_assignment(struct manager *m, const char *vf, struct json_object *settings,
                              struct json_object *state);

/* The class's one-line description of state (malloc'ed) or NULL. */
char *classes_describe(const char *class_name, struct json_object *state);
/* The same in a few words, for list's CLASS column (malloc'ed) or NULL. */
char *classes_summarize(const char *class_name, struct json_object *state);

/* ---- main thread: a dry run's class plan ---- */

/* The class steps numvfs VFs of pf would run, for a dry-run plan (Reconf's
 * class_plan): done gets class_plan (taken), the class's plan ({"class":
 * name, "needs": ..., "steps": [{"vf", "action", "detail"}...]}), or
 * {"class": name, "refused": message} with r < 0 when the PF cannot
 * provide them, or NULL when pf has no class (or r < 0 before its class
 * was known: message says why; -EBUSY while a class step or a write of
 * the VF count holds pf). Asked on the discovery pool, as Show is: never
 * behind the ops pool's work on other PFs, never waiting for pf. */
typedef void (*classes_plan_fn)(struct manager *m, int r, const char *message, struct json_object *class_plan,
                                void *userdata);
int classes_plan_start(struct manager *m, const char *pf, unsigned numvfs, classes_plan_fn done, void *userdata);

/* ---- main thread: a PF's class and capacity, for Show ---- */

/* Reads pf's device class on the discovery pool (never waiting behind a
 * class step: -EBUSY): done gets r (0: no class, 1, or -errno with message),
 * and for r 1 device_class (taken), Show's DeviceClass: {"name",
 * "capacity": [lines], "settings": the policy's member or null,
 * "inspection": the class's inspect}. */
typedef void (*classes_show_fn)(struct manager *m, int r, const char *message, struct json_object *device_class,
                                void *userdata);
int classes_show_start(struct manager *m, const char *pf, classes_show_fn done, void *userdata);

/* ---- main thread: drift, for status ---- */

/* Inspects every PF with VFs whose class state svffd recorded (none
 * with an operation in progress, none whose class step is running) on
 * the discovery pool and compares with the records through the class's
 * verify; then fn(m, call, drift): a new reference to an array of Drift
 * objects of kind "class-drift" (taken by fn, not to be changed), NULL
 * when there was nothing to inspect. Holds a reference on call
 * meanwhile. The devices are read at most once per list_max_age_msec
 * at one store generation: callers meanwhile share the inspection
 * running, or the last one's result. */
typedef void (*classes_drift_fn)(struct manager *m, struct call *call, struct json_object *drift);
void classes_with_drift(struct manager *m, struct call *call, classes_drift_fn fn);

/* ---- main thread: NIC VFs' counters, for the metrics file ---- */

/* Reads the counters (IFLA_VF_STATS) of every VF of the NIC-class PFs
 * among pfs (an array of PF addresses, taken) on the discovery pool,
 * never waiting behind a class step (a busy PF is left out); then
 * fn(m, counters), counters {"<pf>": {"<index>": {"rx_bytes": N, ...}}}
 * (taken). -ENOMEM when it could not start (fn is not called). */
typedef void (*classes_counters_fn)(struct manager *m, struct json_object *counters);
int classes_counters_start(struct manager *m, struct json_object *pfs, classes_counters_fn fn);

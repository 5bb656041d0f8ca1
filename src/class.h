/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Device classes: what a VF of some kind of PF needs beyond its PCI
 * function (an NVMe VF's secondary controller and namespace, a NIC VF's
 * MAC and VLAN, a QDMA VF's queue budget), and what a VF disable wipes.
 *
 * A class is a table of operations matched to a PF by its PCI class code
 * and driver. Every class lives in its own file (class-nvme.c, ...), is
 * listed in the registry (class.c), and nothing outside those files knows
 * what a class does. The daemon calls these in its executors:
 *
 *   init:     load -> plan (refuse before numvfs) -> prepare -> numvfs ->
 *             provision + verify each VF -> vfio-pci
 *   attach:   provision what the assignment adds -> verify -> attach
 *   reconf:   inspect each surviving VF (journaled before numvfs 0) ->
 *             numvfs -> provision + verify each VF -> vfio-pci -> restore
 *   release:  release -> (the VF leaves svff or its domain)
 *   list, status, plan: describe, inspect (drift: live != recorded)
 *
 * Settings and state are JSON objects owned by the class: the store keeps
 * them verbatim (schema 3: "class" in VF and assignment records), so a
 * new class needs no change to the store, the journal or the daemon.
 *
 *   settings  what the policy (defaults for every VF of the PF) and the
 *             assignment ask for, merged by svff_class_settings_merge():
 *             the assignment's keys win. E.g. {"namespace": 1, "vq": 2}.
 *             That is the stored form; load turns one VF's into the
 *             class's own typed value (struct svff_class_settings),
 *             which is all plan, prepare and provision see.
 *   state     what provision did and verify read back, enough to undo it
 *             and to detect drift. E.g. {"secondary": "online",
 *             "vq": 2, "vi": 1, "namespaces": [1]}.
 *
 * Every operation is idempotent: recovery from the journal repeats the
 * step that was interrupted. Operations run on a worker thread, one PF at
 * a time; a class keeps no global state.
 *
 * Errors: -errno, and err names the VF or PF, the figure and what to do
 * (the device's own status by name where it has one). -EOPNOTSUPP: the PF
 * cannot do what was asked (no virtualization management, no such
 * attribute); -ENOSPC: not enough resources for the plan; -EINVAL: bad
 * settings, refused before anything is touched. */

#include <stdbool.h>
#include <json-c/json.h>

#include "context.h"
#include "device.h"
#include "error.h"

struct svff_class_pf;   /* one PF opened by its class (admin queue, socket) */
/* One VF's settings, loaded: checked, and resolved for that VF (a MAC
 * from a prefix, a namespace from a list). Each class defines it in
 * its own file. */
struct svff_class_settings;

struct svff_class {
        const char *name;                       /* "nvme", "nic", "qdma" */

        /* Whether this class handles pf: class code, driver, sysfs. Must
         * not touch the device. */
        bool (*match)(struct svff_ctx *ctx, const struct svff_pf *pf);

        /* Opens pf for the operations below. open and close may be NULL
         * when the class needs no handle: the operations then get c ==
         * NULL. */
        int (*open)(struct svff_ctx *ctx, const struct svff_pf *pf,
                    struct svff_class_pf **ret, struct svff_error *err);
        void (*close)(struct svff_class_pf *c);

        /* The PF's capabilities and each existing VF's live state:
         * {"pf": {...}, "vfs": {"<index>": state, ...}}. */
        int (*inspect)(struct svff_class_pf *c, const struct svff_pf *pf,
                       struct json_object **ret, struct svff_error *err);

        /* Loads one VF's settings (merged, or NULL for none) into the
         * class's typed form: every check of shape and range that needs
         * no device (unknown keys, wrong types, impossible values), and
         * what VF index's own value is. c NULL: no device is open (the
         * policy loader's check, for any VF: index is ignored, and
         * errors name no device). -EINVAL with err naming
         * the key and what it takes; *ret is freed with unload. Every
         * class has both. */
        int (*load)(const struct svff_class_pf *c, unsigned index, struct json_object *settings,
                    struct svff_class_settings **ret, struct svff_error *err);
        void (*unload)(struct svff_class_settings *s);

        /* The resources numvfs VFs with these per-VF settings need, and
         * whether the PF has them: *ret is {"steps": [{"vf": index,
         * "action": "...", "detail": "..."}...], "needs": "...", ...}.
         * -ENOSPC (or -EINVAL, -EOPNOTSUPP) with err saying e.g. "8 VFs
         * need 16 VQ and 8 VI flexible resources; the primary controller
         * has 8 VQ free" when it does not. settings holds numvfs loaded
         * values, by VF index (svff_class_load_all()). */
        int (*plan)(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                    struct svff_class_settings *const *settings, struct json_object **ret,
                    struct svff_error *err);

        /* Brings VF index to settings before it goes to vfio-pci; *ret is
         * its new state. recorded, for a class that wants_recorded_state,
         * is the state the VF's last provision returned (NULL: none), and
         * tenant says the VF goes back to the domain that had it. */
        int (*provision)(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                         const struct svff_class_settings *settings, struct json_object *recorded,
                         bool tenant, struct json_object **ret, struct svff_error *err);

        /* Reads back what provision set: 0 when the live state matches
         * state, -EUCLEAN with err naming the difference. */
        int (*verify)(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                      struct json_object *state, struct svff_error *err);

        /* Undoes provision (state as recorded): the VF leaves its domain
         * or svff. */
        int (*release)(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                       struct json_object *state, struct svff_error *err);

        /* One short line for list, status and the plan ("online 2VQ/1VI
         * ns 1"), malloc'ed; the JSON carries state itself. */
        char *(*describe)(struct json_object *state);

        /* The state in a few words for list's CLASS column ("qmax 8",
         * "online ns 1"), malloc'ed; what describe says at length is in
         * svffctl(8). May be NULL: list then shows describe's line. */
        char *(*summarize)(struct json_object *state);

        /* The PF-wide changes a plan lists with "vf": null (the NVMe
         * primary controller giving up flexible resources, say), after
         * plan and before numvfs; settings as for plan. May be NULL
         * (nothing PF-wide). Idempotent like the others; a step the plan
         * marks "disruptive" disturbs the host's own use of the PF. */
        int (*prepare)(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                       struct svff_class_settings *const *settings, struct svff_error *err);

        /* Whether a reprovision of a recreated VF (a reconf's provision
         * step) is given its recorded state (what its last provision
         * returned) as provision's recorded, to keep what it saved
         * there: a NIC VF's settings from before its assignment, which
         * release restores; an NVMe VF's identity, which its guest's
         * multipath head re-joins by. tenant is then true when the VF
         * goes back to the domain that had it (a reconf's restore, an
         * unpause), whose guest must find the device it knew; false, the
         * VF is anyone's, and what it is now counts: an attach's
         * hand-over is given the record without tenant, so what the VF
         * had just before the assignment is saved. */
        bool wants_recorded_state;

        /* What the PF holds and can still give its VFs, from inspect's
         * answer (inspection: {"pf": ..., "vfs": ...}) and the PF's
         * policy settings for the class (may be NULL): a new array of
         * short lines ("flexible VQ resources: 6 free of 16 ..."), for
         * svffctl show; NULL on -ENOMEM. May be NULL (nothing to say). */
        struct json_object *(*capacity)(struct json_object *inspection, struct json_object *settings);
};

/* The class that handles pf, or NULL (a bare PCI function). */
const struct svff_class *svff_class_find(struct svff_ctx *ctx, const struct svff_pf *pf);
const struct svff_class *svff_class_by_name(const char *name);
/* NULL-terminated, in match order. */
const struct svff_class *const *svff_class_all(void);

/* Whether settings (one VF's, or NULL) load for cls without a device:
 * cls->load with c NULL, the value dropped. For the policy loader, so
 * that a bad policy is refused before anything is touched; an attach's
 * options load with the device open, before libvirt is asked. Settings
 * that are not an object (nor NULL) are -EINVAL for every class, and any
 * settings object for none (NULL). */
int svff_class_check(const struct svff_class *cls, struct json_object *settings,
                     struct svff_error *err);

/* cls->load of each of numvfs VFs' settings (an array by VF index; a
 * missing or null entry is none) on c: *ret is a new array of numvfs
 * loaded values, freed with svff_class_unload_all(). Stops at the
 * first that does not load: its error, nothing kept. -ENOMEM. */
int svff_class_load_all(const struct svff_class *cls, const struct svff_class_pf *c, struct json_object *settings,
                        unsigned numvfs, struct svff_class_settings ***ret, struct svff_error *err);
void svff_class_unload_all(const struct svff_class *cls, struct svff_class_settings **s, unsigned numvfs);

/* Appends the formatted line to lines (a capacity's array): 0, or
 * -ENOMEM. */
int svff_class_line_add(struct json_object *lines, const char *format, ...)
        __attribute__((format(printf, 2, 3)));

/* policy (may be NULL) overlaid with assignment (may be NULL): a new
 * object (never NULL but on -ENOMEM, where errno is set); keys of the
 * assignment win, and an assignment key whose value is null removes the
 * policy's. Values are deep copies: nested objects are replaced, not
 * merged. Neither argument is changed. */
struct json_object *svff_class_settings_merge(struct json_object *policy,
                                              struct json_object *assignment);

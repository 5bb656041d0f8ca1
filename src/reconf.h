/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Reconfiguration planning: changing a PF's VF count (which the kernel
 * only does through 0, destroying every VF) while the domains keep their
 * assignments.
 *
 * The planner is pure: from the PF's current count, the assignments of
 * its VFs, the target count, the mode and force, it computes a plan:
 *
 *   - every assignment on the PF and its fate: "survives" (VF index below
 *     the target: same index, domain, guest address and alias afterwards),
 *     "released" (index too high, --force: detached for good and the
 *     record dropped), "refused" (index too high without --force), or
 *     "blocked" (still detaching: the guest has not released the VF, so
 *     numvfs 0 would hang);
 *   - every step, in order, each in a phase:
 *       quiesce    pause | detach | release one per attached assignment;
 *                                           parallel across domains,
 *                                           serialised within one
 *       numvfs     numvfs 0 (when VFs exist)
 *       reprogram  remove_pf, flash, rescan, check_identity, bind_pf
 *                                           a reprogram's, off the bus
 *       numvfs     numvfs N
 *       provision  provision                one per new VF, when the PF
 *                                           has a device class
 *       bind       bind (all N VFs to the driver)
 *       restore  unpause | reattach         one per survivor quiesced
 *                forget                     one per released assignment
 *       commit   commit                     store updated, journal cleared
 *
 * A release's plan (svff_reconf_plan_new_release) takes one VF out of
 * svff's hands, and the count stays:
 *       quiesce  release                    its assignment, with --force
 *       commit   commit                     its record dropped first
 *       release  release_class              what its device class set up
 *                restore_driver | reprobe   its driver before svff, or
 *                                           the kernel's choice
 *
 * A change of one assignment (svff_reconf_plan_new_change: attach,
 * detach, pause, unpause) keeps the count too:
 *       bind     bind                       attach: the VF back on vfio-pci
 *                                           when it is not, among its checks
 *       commit   journal                    the intent, before libvirt
 *       provision provision                 attach, unpause: the class's
 *                                           settings; detach: the pool's
 *       release  release_class              detach: the tenant's state
 *       domain   attach | detach | pause | unpause | reattach
 *       commit   commit                     the assignment as it is now
 * (detach: the domain step comes before the class steps; unpause: the
 * bind, for a re-attach, after the provision)
 *
 * A plan is executable only when nothing is refused or blocked. The
 * JSON form (svff_reconf_plan_to_json) is what the journal stores, what
 * `svffctl reconf --dry-run --json` prints and what the executor's step
 * log is compared with; from_json reads it back exactly. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <json-c/json.h>

#include "macro.h"
#include "pciaddr.h"
#include "store.h"

#define SVFF_RECONF_DRIVER_MAX 64
#define SVFF_RECONF_IMAGE_MAX 4096

enum svff_reconf_mode {
        SVFF_RECONF_PAUSE,      /* native pause where offered, else detach-with-reservation */
        SVFF_RECONF_DETACH,     /* always detach and re-attach */
};

enum svff_reconf_fate {
        SVFF_RECONF_SURVIVES,
        SVFF_RECONF_RELEASED,
        SVFF_RECONF_REFUSED,
        SVFF_RECONF_BLOCKED,
};

enum svff_reconf_phase {
        SVFF_RECONF_PHASE_QUIESCE,
        SVFF_RECONF_PHASE_NUMVFS,
        SVFF_RECONF_PHASE_REPROGRAM,
        SVFF_RECONF_PHASE_PROVISION,
        SVFF_RECONF_PHASE_BIND,
        SVFF_RECONF_PHASE_RESTORE,
        SVFF_RECONF_PHASE_COMMIT,
        SVFF_RECONF_PHASE_RELEASE,
        SVFF_RECONF_PHASE_DOMAIN,
        _SVFF_RECONF_PHASE_MAX,
};

enum svff_reconf_action {
        SVFF_RECONF_DO_PAUSE,
        SVFF_RECONF_DO_DETACH,
        SVFF_RECONF_DO_RELEASE,
        SVFF_RECONF_DO_NUMVFS,
        SVFF_RECONF_DO_BIND,
        SVFF_RECONF_DO_UNPAUSE,
        SVFF_RECONF_DO_REATTACH,
        SVFF_RECONF_DO_FORGET,
        SVFF_RECONF_DO_COMMIT,
        SVFF_RECONF_DO_REMOVE_PF,
        SVFF_RECONF_DO_FLASH,
        SVFF_RECONF_DO_RESCAN,
        SVFF_RECONF_DO_CHECK_IDENTITY,
        SVFF_RECONF_DO_BIND_PF,
        SVFF_RECONF_DO_PROVISION,
        SVFF_RECONF_DO_RELEASE_CLASS,
        SVFF_RECONF_DO_RESTORE_DRIVER,
        SVFF_RECONF_DO_REPROBE,
        SVFF_RECONF_DO_JOURNAL,
        SVFF_RECONF_DO_ATTACH,
        _SVFF_RECONF_DO_MAX,
};

/* One assignment of a VF of the PF, as recorded when planning. */
struct svff_reconf_item {
        char vf[SVFF_PCI_ADDR_STRLEN];
        unsigned index;
        struct svff_assignment a;
        enum svff_reconf_fate fate;
};

struct svff_reconf_step {
        enum svff_reconf_phase phase;
        enum svff_reconf_action action;
        int item;               /* index into items, -1 for PF-wide steps */
        unsigned numvfs;        /* numvfs: the value written; bind: how many VFs;
                                 * provision: the VF's index */
        uint64_t deadline_msec; /* what it may take, as the daemon's settings
                                 * say (svff_reconf_plan_set_deadline); 0: no
                                 * deadline of its own */
};

/* The VF a release takes out of svff's hands. */
struct svff_reconf_release {
        char vf[SVFF_PCI_ADDR_STRLEN];
        unsigned index;
        char driver[SVFF_RECONF_DRIVER_MAX];    /* its driver before svff; "": re-probed */
        bool class_state;                       /* its device class undoes what it set up */
};

/* A change of one assignment: its kind, and what it does besides the
 * domain step. */
enum svff_reconf_change_kind {
        SVFF_CHANGE_ATTACH,
        SVFF_CHANGE_DETACH,
        SVFF_CHANGE_PAUSE,
        SVFF_CHANGE_UNPAUSE,
        _SVFF_CHANGE_MAX,
};

struct svff_reconf_change {
        enum svff_reconf_change_kind kind;
        bool bind;              /* attach, unpause: the VF goes to vfio-pci first */
        bool class_state;       /* the VF's device class hands it over */
};

struct svff_reconf_plan {
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned from, to;
        enum svff_reconf_mode mode;
        bool force;
        char driver[SVFF_RECONF_DRIVER_MAX];
        bool init;                        /* an init's: no assignment touched, the count
                                           * written only when it changes */
        bool provision;                   /* the PF's device class provisions each new VF */
        char *image;                      /* a reprogram's image, NULL for a reconf */
        struct json_object *ids;          /* a reprogram's: the IDs the PF may come back as */
        struct svff_reconf_release *release;    /* a release's, NULL for any other plan */
        struct svff_reconf_change *change;      /* an assignment change's, NULL for any other */
        struct svff_reconf_item *items;   /* sorted by VF index */
        size_t n_items;
        struct svff_reconf_step *steps;
        size_t n_steps;
        unsigned n_refused, n_blocked, n_released;
};

/* What the planner is given: the PF's current count and every
 * assignment of one of its VFs (vf, index, record). Borrowed. */
struct svff_reconf_input {
        const char *pf;
        unsigned numvfs;
        const char *driver;     /* the VFs' driver afterwards, e.g. vfio-pci */
        const struct svff_reconf_item *items;   /* fate ignored */
        size_t n_items;
        bool provision;         /* the PF has a device class */
        const char *image;      /* a reprogram's image, or NULL */
        struct json_object *ids;        /* a reprogram's ["vvvv:dddd", ...], or NULL */
};

/* Plans a change of in->pf to numvfs VFs. Returns 0 and a new plan in
 * *ret (even when it refuses assignments: see svff_reconf_plan_ok), or
 * -EINVAL (bad address, driver, duplicate VF or index), -ENOMEM. */
int svff_reconf_plan_new(const struct svff_reconf_input *in, unsigned numvfs, enum svff_reconf_mode mode,
                         bool force, struct svff_reconf_plan **ret);
/* Plans an init of in->pf to numvfs VFs (in->items ignored: an init
 * takes no VF from a domain, and the method refuses one that would):
 * the writes when the count changes, each VF's provision (in->provision),
 * the bind of every VF, the commit. 0, -EINVAL, -ENOMEM. */
int svff_reconf_plan_new_init(const struct svff_reconf_input *in, unsigned numvfs, struct svff_reconf_plan **ret);
/* Plans the release of rel->vf, a VF of in->pf, which keeps its count
 * (in->numvfs; in->driver: the VF's driver now). in->items is empty, or
 * holds that VF's assignment, which the release takes from its domain
 * for good (--force: the method refuses one without). 0, -EINVAL,
 * -ENOMEM. */
int svff_reconf_plan_new_release(const struct svff_reconf_input *in, const struct svff_reconf_release *rel,
                                 struct svff_reconf_plan **ret);
/* Plans a change of the one assignment in in->items (attach: as it
 * will be recorded, its domain's UUID known) on in->pf, whose count
 * stays. Detach, pause, unpause: the assignment as recorded (pause: an
 * attached one; unpause: a paused one). 0, -EINVAL, -ENOMEM. */
int svff_reconf_plan_new_change(const struct svff_reconf_input *in, const struct svff_reconf_change *c,
                                struct svff_reconf_plan **ret);
void svff_reconf_plan_free(struct svff_reconf_plan *p);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_reconf_plan *, svff_reconf_plan_free);

/* Whether the PF's device class provisions each new VF (only known
 * from the device, so the caller says once it knows), and a reprogram's
 * image and IDs (ids: an array of strings, referenced; NULL for none):
 * the steps follow. 0, -EINVAL, -ENOMEM (p unchanged). */
int svff_reconf_plan_set_provision(struct svff_reconf_plan *p, bool provision);
int svff_reconf_plan_set_reprogram(struct svff_reconf_plan *p, const char *image, struct json_object *ids);

/* Sets what step i may take (not part of what the plan decides: the
 * settings of the daemon that runs it, shown by a dry run). */
void svff_reconf_plan_set_deadline(struct svff_reconf_plan *p, size_t i, uint64_t msec);

/* Whether the plan may be executed: nothing refused or blocked. */
bool svff_reconf_plan_ok(const struct svff_reconf_plan *p);

/* The plan's item for vf, or NULL. Borrowed. */
const struct svff_reconf_item *svff_reconf_plan_find(const struct svff_reconf_plan *p, const char *vf);

/* The definitions of item it's domain (active: running) that a reconf
 * takes its device out of and puts it back in: a survivor in a running
 * domain comes back at the same host address, so only the live device
 * goes and the persistent definition keeps it, where neither a crash
 * nor a failed re-attach can take it from; anything else as recorded (a
 * released VF leaves for good, and a domain that is not running could
 * be started while its VF does not exist). */
void svff_reconf_item_defs(const struct svff_reconf_item *it, bool active, bool *ret_live, bool *ret_config);

/* What restoring item it does to its domain's definitions, in this
 * order, given how it was quiesced (mode) and whether its VF came back
 * at another host address than it->vf (moved: a new offset or stride).
 * A moved VF's device at the old address leaves the definitions that
 * may hold it, then the VF is attached at its new address in each
 * definition the assignment has, the persistent one first, on its own:
 * no definition keeps an address another VF may have now, and a native
 * pause is not resumed, as QEMU would resume it at the old address. */
struct svff_reconf_restore {
        bool move_out_live, move_out_config;    /* the device at the old address leaves */
        bool attach_config_first;               /* the persistent definition, alone, first */
        bool attach_live, attach_config;        /* attached at the VF's address now */
        bool unpause;                           /* the native unpause, nothing attached */
};
void svff_reconf_restore_of(const struct svff_reconf_item *it, bool active, enum svff_pause_mode mode, bool moved,
                            struct svff_reconf_restore *ret);

/* JSON form:
 *   { "pf": "0000:01:00.0", "from": 4, "to": 2, "mode": "pause",
 *     "force": false, "driver": "vfio-pci", "provision": false,
 *     "image"?: "...", "ids"?: [ "10ee:903f" ],
 *     "release"?: { "vf", "index", "driver" (null: re-probed), "class_state" },
 *     "change"?: { "kind", "bind", "class_state" },
 *     "assignments": [ { "vf", "index", "fate", "domain", "uuid",
 *                        "guest_address", "alias", "live", "config",
 *                        "state", "pause_mode" } ],
 *     "steps": [ { "phase", "action", "vf"?, "domain"?, "uuid"?,
 *                  "guest_address"?, "alias"?, "numvfs"?, "index"?,
 *                  "driver"?, "deadline_msec"? } ] }
 * A plan journaled before "provision", "image" and "ids" were kept reads
 * as one without them.
 * Returns a new object or NULL (out of memory). */
struct json_object *svff_reconf_plan_to_json(const struct svff_reconf_plan *p);
/* One step as it appears in "steps" (the executor's step log uses it). */
struct json_object *svff_reconf_step_to_json(const struct svff_reconf_plan *p, const struct svff_reconf_step *s);
/* Reads the JSON form back. -EBADMSG when it is not one. */
int svff_reconf_plan_from_json(struct json_object *o, struct svff_reconf_plan **ret);
/* Whether carrying p out talks to libvirt: a step on an assignment
 * other than forgetting it. */
bool svff_reconf_plan_needs_libvirt(const struct svff_reconf_plan *p);

/* The plan for an operator: assignments with their fates, then the steps
 * numbered in order. */
void svff_reconf_plan_print(const struct svff_reconf_plan *p, FILE *f);

const char *svff_reconf_mode_to_string(enum svff_reconf_mode m);
int svff_reconf_mode_from_string(const char *s);
const char *svff_reconf_fate_to_string(enum svff_reconf_fate f);
const char *svff_reconf_phase_to_string(enum svff_reconf_phase p);
const char *svff_reconf_action_to_string(enum svff_reconf_action a);
const char *svff_reconf_change_to_string(enum svff_reconf_change_kind k);

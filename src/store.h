/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The crash-safe state store: one JSON document, STATE_DIR/store.json,
 *
 *   { "schema": 4, "generation": N,
 *     "pfs":      { "<PF>": { "numvfs": N, "vf_driver": "vfio-pci",
 *                             "owner": "operator" | "policy:<name>" } },
 *     "vfs":      { "<VF>": { "pf": "<PF>", "index": N,
 *                             "original_driver": "qdma-vf" | null,
 *                             "driver": "vfio-pci",
 *                             "class": null | { ... } } },
 *     "assignments": { "<VF>": { "uuid": "<domain UUID>", "domain": "<name>",
 *                                "guest_address": "0000:02:00.0" | null,
 *                                "alias": "ua-svff-...", "live": bool,
 *                                "config": bool,
 *                                "state": "attached"|"held"|"detaching",
 *                                         ("paused", the old spelling of
 *                                         "held", is read too),
 *                                "pause_mode": "native"|"detach"|null,
 *                                "intent": null|"attach"|"detach"|"pause"|"unpause",
 *                                "class": null | { ... } } },
 *     "journal":  null | { "op": "...", ... } }
 *
 * replaced atomically: write store.json.tmp, fsync, keep the current file
 * as store.json.prev (a hard link), rename the temp over store.json,
 * fsync the directory. A store that cannot be read exactly (truncated,
 * corrupt, wrong types, newer schema) is never overwritten: open fails
 * with a message naming the file and the way out.
 *
 * An assignment with an "intent" is a change committed before svffd
 * asked libvirt for it: the record says what it was (for "attach", what
 * was asked for), and only libvirt's view of the domain tells whether
 * the change happened. Such a VF is neither free nor settled until the
 * intent is resolved against that view.
 *
 * "class" (schema 3, optional) is what the VF's device class (class.h)
 * keeps: for a VF, e.g. {"name": "nvme", "settings": {...}, "state":
 * {...}}; for an assignment, the class settings it asked for. The store
 * keeps it verbatim and checks only that it is an object or null, so a
 * new class or a new field of one needs no change here.
 *
 * Older schemas are read as the current one and written back as it:
 * schema 1 (before intents) with every intent null, schema 2 (before
 * classes) as it is, every VF and assignment without a class, and
 * schemas 1 to 3 with a held assignment's state, which they spelled
 * "paused", as "held".
 *
 * Not thread-safe: the daemon keeps it on its main thread. */

#include <stdbool.h>
#include <stdint.h>
#include <json-c/json.h>

#include "error.h"

#define SVFF_STORE_SCHEMA 4
#define SVFF_STORE_FILE "store.json"

struct svff_store;

/* Loads STATE_DIR/store.json (an empty store at generation 0 when absent;
 * state_dir is created 0700 if missing). Never writes the file.
 *   -EBADMSG         truncated or corrupt JSON, or fields of wrong types
 *   -EPROTONOSUPPORT schema newer than SVFF_STORE_SCHEMA
 *   -errno           open/read failures */
int svff_store_open(const char *state_dir, struct svff_store **ret, struct svff_error *err);
void svff_store_free(struct svff_store *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_store *, svff_store_free);

/* Same checks, on a buffer (fuzzing, tests); *ret is the document with
 * absent sections added. */
int svff_store_parse(const char *data, size_t len, struct json_object **ret,
                     struct svff_error *err);

const char *svff_store_path(struct svff_store *s);
uint64_t svff_store_generation(struct svff_store *s);

/* Writes the document as generation+1. On failure (-ENOSPC, -EIO, ...) the
 * generation is unchanged and store.json still holds the previous,
 * valid document; no temp file is left. -EINVAL (nothing written) when
 * an edit left a record of the wrong shape, or a string (a key or a
 * value, at any depth) that is not well-formed UTF-8, which the next
 * open would refuse; err names it. One exception: if only the final fsync of the directory
 * fails, store.json already holds the new document (its durability is
 * unknown) and the generation has advanced with it. */
int svff_store_commit(struct svff_store *s, struct svff_error *err);

/* Sections of the document, borrowed (an object, never NULL); callers
 * edit them in place and then commit. */
struct json_object *svff_store_pfs(struct svff_store *s);
struct json_object *svff_store_vfs(struct svff_store *s);
struct json_object *svff_store_assignments(struct svff_store *s);

/* Typed helpers for the records above. A VF's original driver, read
 * from sysfs, is recorded made valid UTF-8 (U+FFFD for each ill-formed
 * sequence), as JSON requires. */
int svff_store_set_pf(struct svff_store *s, const char *pf, unsigned numvfs, const char *vf_driver);
int svff_store_set_vf(struct svff_store *s, const char *vf, const char *pf, unsigned index,
                      const char *original_driver, const char *driver);
/* Returns 1 and the stored original driver (borrowed, may be NULL), or 0
 * when vf has no record; -EINVAL when the record was edited into the
 * wrong shape. Either output may be NULL. */
int svff_store_get_vf(struct svff_store *s, const char *vf, const char **ret_pf,
                      const char **ret_original_driver);
void svff_store_remove_vf(struct svff_store *s, const char *vf);
/* Like svff_store_get_vf(), for PF records. */
int svff_store_get_pf(struct svff_store *s, const char *pf, unsigned *ret_numvfs,
                      const char **ret_vf_driver);
void svff_store_remove_pf(struct svff_store *s, const char *pf);
/* Who set the PF's VF count last: "operator" (an explicit init or
 * release) or "policy:<name>". Optional in the record, so stores written
 * before it existed stay valid (schema 1): get returns NULL when absent
 * or not a string, set -ENOENT when pf has no record. */
#define SVFF_PF_OWNER_OPERATOR "operator"
#define SVFF_PF_OWNER_POLICY_PREFIX "policy:"
const char *svff_store_get_pf_owner(struct svff_store *s, const char *pf);
int svff_store_set_pf_owner(struct svff_store *s, const char *pf, const char *owner);
/* The image svff last flashed to the PF, as svff_flash_image_identity()
 * gave it around the hook's run ({path, dev, ino, size, mtime_nsec,
 * ctime_nsec}; a record from before ctime_nsec loads as it is and names
 * no image svff_flash_image_same() matches),
 * borrowed; NULL when none is recorded: never flashed by svff, or a
 * flash began and did not complete. Optional in the record (schema 1).
 * set takes image (NULL drops the record's), -ENOENT when pf has no
 * record. */
struct json_object *svff_store_get_pf_image(struct svff_store *s, const char *pf);
int svff_store_set_pf_image(struct svff_store *s, const char *pf, struct json_object *image);

/* The "class" object of vf's record, borrowed (valid until the record
 * changes), or NULL when it has none. set takes ownership of cls (NULL,
 * or an object: -EINVAL otherwise, cls then freed) and keeps every other
 * field; -ENOENT when vf has no record. */
struct json_object *svff_store_get_vf_class(struct svff_store *s, const char *vf);
int svff_store_set_vf_class(struct svff_store *s, const char *vf, struct json_object *cls);

/* Assignments of VFs to domains, keyed by VF. The domain is identified
 * by UUID (names can be reused); the name is kept for display. */
enum svff_assign_state {
        SVFF_ASSIGN_ATTACHED,
        SVFF_ASSIGN_PAUSED,     /* "held": native pause, or detached with the address reserved */
        SVFF_ASSIGN_DETACHING,  /* detach asked for; the guest has not let go yet */
};

enum svff_pause_mode {
        SVFF_PAUSE_NONE,
        SVFF_PAUSE_NATIVE,      /* the QEMU device-pause command */
        SVFF_PAUSE_DETACH,      /* detach-with-reservation */
};

/* The change in flight on an assignment, journaled before libvirt is
 * asked for it. */
enum svff_assign_intent {
        SVFF_INTENT_NONE,
        SVFF_INTENT_ATTACH,
        SVFF_INTENT_DETACH,
        SVFF_INTENT_PAUSE,
        SVFF_INTENT_UNPAUSE,
};

#define SVFF_MAC_STRLEN 18

/* A NIC VF paired with a virtio-net standby for failover (libvirt's
 * <teaming>): the VF goes in as
 *
 *   <interface type='hostdev' managed='no'>
 *     <mac address='the standby's MAC'/>
 *     <driver name='vfio'/>
 *     <source><address type='pci' .../></source>
 *     <teaming type='transient' persistent='the standby's alias'/>
 *     <alias name='ua-svff-...'/>
 *   </interface>
 *
 * and the guest's net_failover driver carries the traffic over the
 * standby while the VF is unplugged. */
struct svff_failover {
        char standby[64];               /* the standby <interface>'s user alias; "" no pair */
        char mac[SVFF_MAC_STRLEN];      /* its MAC, lower case */
};

struct svff_assignment {
        char uuid[37];
        char domain[256];
        char guest_address[17]; /* "" when unknown */
        char alias[64];
        bool live, config;
        enum svff_assign_state state;
        enum svff_pause_mode pause_mode;
        enum svff_assign_intent intent;
        struct svff_failover failover;  /* recorded as "failover": {standby, mac}, or absent */
};

const char *svff_assign_state_to_string(enum svff_assign_state s);
int svff_assign_state_from_string(const char *s);  /* -EINVAL when unknown; "paused" is "held" */
const char *svff_pause_mode_to_string(enum svff_pause_mode m);  /* NULL for NONE */
int svff_pause_mode_from_string(const char *s);
const char *svff_assign_intent_to_string(enum svff_assign_intent i);  /* NULL for NONE */
int svff_assign_intent_from_string(const char *s);  /* NULL is NONE; -EINVAL when unknown */

/* Writes the record for vf (fields this version does not know are kept). */
int svff_store_set_assignment(struct svff_store *s, const char *vf, const struct svff_assignment *a);
/* 1 and *ret (optional) when vf is assigned, 0 when not, -EINVAL when the
 * record has the wrong shape (treat the VF as taken). */
int svff_store_get_assignment(struct svff_store *s, const char *vf, struct svff_assignment *ret);
void svff_store_remove_assignment(struct svff_store *s, const char *vf);
/* Like svff_store_get/set_vf_class(), for vf's assignment record. The
 * record keeps its class through svff_store_set_assignment(). */
struct json_object *svff_store_get_assignment_class(struct svff_store *s, const char *vf);
int svff_store_set_assignment_class(struct svff_store *s, const char *vf, struct json_object *cls);

/* Resolves a's intent against what libvirt shows of the VF in a's
 * domain: in_live / in_config whether its running / persistent
 * definition holds it (a domain that is gone holds nothing); alias and
 * guest_address (either may be NULL or "") as found there. a becomes
 * the settled record; returns false when that is no record at all (the
 * VF is free). Where a detach or pause was asked for and the running
 * domain still holds the device, the guest may yet let it go:
 * "detaching", never "attached". A record without an intent is left
 * as it is. */
bool svff_assignment_resolve(struct svff_assignment *a, bool in_live, bool in_config, const char *alias,
                             const char *guest_address);

/* What a domain's lifecycle does to its assignments. */
enum svff_domain_event {
        SVFF_DOMAIN_STARTED,    /* attached config assignments are live again */
        SVFF_DOMAIN_STOPPED,    /* config ones kept (live=false), live-only closed */
        SVFF_DOMAIN_UNDEFINED,  /* config side gone; not live -> released to the pool */
};

enum svff_assign_outcome {
        SVFF_ASSIGN_LIVE_AGAIN,
        SVFF_ASSIGN_KEPT,
        SVFF_ASSIGN_CLOSED,     /* removed: the domain stopped */
        SVFF_ASSIGN_RELEASED,   /* removed: the domain was undefined */
};

typedef void (*svff_assign_change_fn)(const char *vf, const struct svff_assignment *a,
                                      enum svff_assign_outcome outcome, void *userdata);

/* Applies ev for the domain uuid (name: its current name) to every
 * assignment of that domain without an intent (the change in flight
 * decides those), calling fn (optional) once per changed record. Returns how many changed (commit when >0), -ENOMEM. */
int svff_store_domain_event(struct svff_store *s, const char *uuid, const char *name,
                            enum svff_domain_event ev, svff_assign_change_fn fn, void *userdata);

/* The operation in progress, or NULL. set takes ownership of op. */
struct json_object *svff_store_journal(struct svff_store *s);
void svff_store_set_journal(struct svff_store *s, struct json_object *op);

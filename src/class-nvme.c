/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NVMe class: each VF's secondary controller (its flexible queue and
 * interrupt resources, its online state) and the namespace attached to
 * it, through the admin queue of the PF's primary controller.
 *
 * A VF whose secondary is offline, or has no queues, is a dead
 * controller to whoever gets it; VF disable takes every secondary
 * offline with nothing assigned. So every VF is provisioned, in the
 * order the controller accepts (Virtualization Management, NVMe base
 * specification; QEMU hw/nvme/ctrl.c follows it): offline if online,
 * assign VI and VQ (only while offline), online (needs 1 VI and 2 VQ at
 * least), read back, attach its namespace.
 *
 * Settings (policy and assignment, merged):
 *   "vq", "vi"          flexible queue / interrupt resources per VF;
 *                       default the per-VF maximum (VQFRSM/VIFRSM)
 *   "namespace"         NSID, or a list by VF index (null: none); never
 *                       created, only attached
 *   "primary_flexible"  let prepare shrink the primary's flexible share
 *                       (a controller reset of the PF) when the pool is
 *                       short
 *   "scrub_on_release"  "none" (default) or "format", which plan and
 *                       provision refuse for a namespace private to the
 *                       VF (SCRUB_WHY): svff formats none through the
 *                       host's controller
 * State (what provision did and verify reads back):
 *   {"scid": 1, "secondary": "online", "vq": 2, "vi": 1,
 *    "namespaces": [1], "scrub_on_release": "format", "private": [1],
 *    "subnqn": "nqn.2019-08.org.qemu:...",
 *    "ids": {"1": {"nguid": "<32 hex digits>", "eui64": "<16>"}}}
 *
 * The identity: what a guest's NVMe multipath matches a controller's
 * namespace to its head by (the subsystem NQN, the NSID, the namespace's
 * NGUID and EUI64; Linux, nvme_init_ns_head()), and the secondary
 * controller's ID. A VF that keeps its tenant through a reconf must come
 * back with all of it, or the guest's head does not take it back and the
 * guest gets another disk. So a reprovision given the VF's recorded state
 * (wants_recorded_state) keeps the recorded identity in the new state,
 * and verify compares the device with it, when the VF goes back to the
 * domain that had it (provision's tenant); for anyone else the
 * device's counts. The namespace's UUID is not among them: the
 * primary reads a namespace's UUID only when the namespace is attached to
 * it (CNS 03h), and a VF's namespace never is. */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "class.h"
#include "class-nvme.h"
#include "json-util.h"
#include "sysfs.h"
#include "utf8.h"

struct svff_class_pf {
        struct svff_ctx *ctx;
        char address[SVFF_PCI_ADDR_STRLEN];
        char *ctrl;                             /* "nvme0" */
        const struct svff_nvme_ops *ops;
        void *handle;
        uint16_t cntlid;
        uint16_t oacs;
        char *subnqn;                           /* escaped for text (device text) */
        bool oacs_virt;                         /* bit 7; QEMU 7.2 leaves it clear */
        struct svff_nvme_primary_caps caps;
};

/* One VF's settings, checked and resolved (class.h). */
struct svff_class_settings {
        int vq, vi;                             /* -1: the per-VF maximum */
        uint32_t nsid;                          /* 0: none */
        bool primary_flexible;
        bool scrub;
};

/* ---- settings ---------------------------------------------------------- */

static int get_count(struct json_object *settings, const char *key, int min, int *ret,
                     struct svff_error *err) {
        struct json_object *v;
        int64_t n;

        *ret = -1;
        if (!settings || !json_object_object_get_ex(settings, key, &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_int))
                return svff_error_set(err, -EINVAL, "NVMe setting '%s' must be a number of resources, not %s",
                                      key, json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        n = json_object_get_int64(v);
        if (n < min || n > UINT16_MAX)
                return svff_error_set(err, -EINVAL,
                                      "NVMe setting '%s' is %" PRId64 "; a secondary controller needs %d at least "
                                      "(%s) and takes at most %u",
                                      key, n, min, min == 2 ? "the admin queue and one I/O queue" : "one interrupt vector",
                                      (unsigned) UINT16_MAX);
        *ret = (int) n;
        return 0;
}

static int nsid_from_json(struct json_object *v, uint32_t *ret, struct svff_error *err) {
        int64_t n;

        if (!v) {
                *ret = 0;
                return 0;
        }
        if (!json_object_is_type(v, json_type_int))
                return svff_error_set(err, -EINVAL, "NVMe setting 'namespace' takes an NSID, a list of them or null, not %s",
                                      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        n = json_object_get_int64(v);
        if (n < 1 || n > 0xfffffffe)
                return svff_error_set(err, -EINVAL,
                                      "NVMe setting 'namespace' is %" PRId64 "; an NSID is 1 to 4294967294", n);
        *ret = (uint32_t) n;
        return 0;
}

/* "namespace": one NSID for every VF, or a list by VF index. Every
 * entry of a list is checked, and no NSID may go to two VFs, whether
 * or not pick says which VF's to take (false: a check, for no VF). */
static int namespace_load(struct json_object *v, bool pick, unsigned index, uint32_t *ret,
                          struct svff_error *err) {
        size_t n;
        int r;

        *ret = 0;
        if (!v)
                return 0;
        if (!json_object_is_type(v, json_type_array))
                return nsid_from_json(v, ret, err);

        n = json_object_array_length(v);
        for (size_t i = 0; i < n; i++) {
                uint32_t nsid;

                r = nsid_from_json(json_object_array_get_idx(v, i), &nsid, err);
                if (r < 0)
                        return r;
                if (pick && i == index)
                        *ret = nsid;
                /* a namespace goes to one VF: the second would be
                 * refused at its attach */
                for (size_t j = 0; nsid && j < i; j++) {
                        struct json_object *o = json_object_array_get_idx(v, j);

                        if (o && json_object_get_int64(o) == nsid)
                                return svff_error_set(err, -EINVAL,
                                                      "NVMe setting 'namespace' gives namespace %" PRIu32
                                                      " to VF %zu and VF %zu; svff attaches a namespace "
                                                      "to one VF's controller only",
                                                      nsid, j, i);
                }
        }
        return 0;
}

/* What needs no device is checked here, for any c; what the controller
 * allows (the per-VF maxima, the namespaces it has) is checked by plan
 * and provision, which read it. c NULL: a check for no VF, so no
 * namespace of a list is picked. */
static int nvme_load(const struct svff_class_pf *c, unsigned index, struct json_object *settings,
                     struct svff_class_settings **ret, struct svff_error *err) {
        _cleanup_free_ struct svff_class_settings *s = NULL;
        struct json_object *v;
        int r;

        if (settings && !json_object_is_type(settings, json_type_object))
                return svff_error_set(err, -EINVAL, "NVMe settings must be a JSON object, not %s",
                                      json_object_to_json_string_ext(settings, JSON_C_TO_STRING_PLAIN));
        if (settings) {
                json_object_object_foreach(settings, key, val) {
                        (void) val;
                        if (!strcmp(key, "vq") || !strcmp(key, "vi") || !strcmp(key, "namespace") ||
                            !strcmp(key, "primary_flexible") || !strcmp(key, "scrub_on_release"))
                                continue;
                        return svff_error_set(err, -EINVAL,
                                              "Unknown NVMe setting '%s': the NVMe class takes 'vq', 'vi', "
                                              "'namespace', 'primary_flexible' and 'scrub_on_release'",
                                              key);
                }
        }

        s = calloc(1, sizeof(*s));
        if (!s)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        r = get_count(settings, "vq", 2, &s->vq, err);
        if (r < 0)
                return r;
        r = get_count(settings, "vi", 1, &s->vi, err);
        if (r < 0)
                return r;

        if (settings && json_object_object_get_ex(settings, "namespace", &v)) {
                r = namespace_load(v, c != NULL, index, &s->nsid, err);
                if (r < 0)
                        return r;
        }

        if (settings && json_object_object_get_ex(settings, "primary_flexible", &v) && v) {
                if (!json_object_is_type(v, json_type_boolean))
                        return svff_error_set(err, -EINVAL, "NVMe setting 'primary_flexible' must be true or false, not %s",
                                              json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
                s->primary_flexible = json_object_get_boolean(v);
        }

        if (settings && json_object_object_get_ex(settings, "scrub_on_release", &v) && v) {
                const char *m = json_object_is_type(v, json_type_string) ? json_object_get_string(v) : NULL;

                if (m && !strcmp(m, "format"))
                        s->scrub = true;
                else if (!m || strcmp(m, "none"))
                        return svff_error_set(err, -EINVAL,
                                              "NVMe setting 'scrub_on_release' is %s; it takes \"none\" or \"format\"",
                                              json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN));
        }

        *ret = TAKE_PTR(s);
        return 0;
}

static void nvme_unload(struct svff_class_settings *s) {
        free(s);
}

/* ---- the admin queue --------------------------------------------------- */

/* err gets what failed, on which device, and the status by name. */
static int cmd_error(struct svff_class_pf *c, int r, struct svff_error *err, const char *what) {
        const char *name;

        if (r < 0)
                return svff_error_set_errno(err, r, "%s on %s (PF %s) failed", what, c->ctrl, c->address);
        name = svff_nvme_status_name(r);
        return svff_error_set(err, -EIO, "%s on %s (PF %s) failed: %s (NVMe status 0x%03x)", what, c->ctrl,
                              c->address, name ? name : "unexpected status", (unsigned) r);
}

/* The errno a failed command maps to for the caller. */
static int status_errno(int r) {
        switch (r) {
        case SVFF_NVME_SC_INVALID_NUM_RESOURCES:
        case SVFF_NVME_SC_INVALID_RESOURCE_ID:
                return -ENOSPC;
        case SVFF_NVME_SC_INVALID_CTRL_ID:
        case SVFF_NVME_SC_CTRL_LIST_INVALID:
                return -ENODEV;
        case SVFF_NVME_SC_NS_ALREADY_ATTACHED:
        case SVFF_NVME_SC_FORMAT_IN_PROGRESS:
        case SVFF_NVME_SC_NS_ATTACHMENT_LIMIT:
                return -EBUSY;
        case SVFF_NVME_SC_INVALID_NS:
                return -ENOENT;
        case SVFF_NVME_SC_INVALID_OPCODE:
                return -EOPNOTSUPP;
        case SVFF_NVME_SC_NS_WRITE_PROTECTED:
                return -EROFS;
        default:
                return r < 0 ? r : -EIO;
        }
}

static const char *status_str(int r, char buf[static 64]) {
        const char *name = r > 0 ? svff_nvme_status_name(r) : NULL;

        if (r < 0)
                snprintf(buf, 64, "%s", strerror(-r));
        else if (name)
                snprintf(buf, 64, "%s (NVMe status 0x%03x)", name, (unsigned) r);
        else
                snprintf(buf, 64, "NVMe status 0x%03x", (unsigned) r);
        return buf;
}

struct secondaries {
        struct svff_nvme_secondary e[SVFF_NVME_MAX_SECONDARIES];
        size_t n;
};

static int read_secondaries(struct svff_class_pf *c, struct secondaries *ret, struct svff_error *err) {
        int r = c->ops->secondary_list(c->handle, ret->e, ELEMENTSOF(ret->e), &ret->n);

        if (r != 0) {
                cmd_error(c, r, err, "Reading the secondary controller list (Identify CNS 15h)");
                return status_errno(r);
        }
        return 0;
}

static const struct svff_nvme_secondary *secondary_of(const struct secondaries *l, unsigned index) {
        for (size_t i = 0; i < l->n; i++)
                if (l->e[i].vfn == index + 1)
                        return &l->e[i];
        return NULL;
}

static const struct svff_nvme_secondary *secondary_by_scid(const struct secondaries *l, uint16_t scid) {
        for (size_t i = 0; i < l->n; i++)
                if (l->e[i].scid == scid)
                        return &l->e[i];
        return NULL;
}

struct ids {
        uint32_t v[SVFF_NVME_MAX_IDS];
        size_t n;
};

struct ctrls {
        uint16_t v[SVFF_NVME_MAX_IDS];
        size_t n;
};

static int read_namespaces(struct svff_class_pf *c, struct ids *ret, struct svff_error *err) {
        int r = c->ops->ns_list(c->handle, ret->v, ELEMENTSOF(ret->v), &ret->n);

        if (r != 0) {
                cmd_error(c, r, err, "Reading the namespace list (Identify CNS 10h)");
                return status_errno(r);
        }
        return 0;
}

static int read_ns_ctrls(struct svff_class_pf *c, uint32_t nsid, struct ctrls *ret, struct svff_error *err) {
        char what[96];
        int r = c->ops->ns_ctrls(c->handle, nsid, ret->v, ELEMENTSOF(ret->v), &ret->n);

        if (r != 0) {
                snprintf(what, sizeof(what), "Reading the controllers of namespace %" PRIu32 " (Identify CNS 12h)", nsid);
                cmd_error(c, r, err, what);
                return status_errno(r);
        }
        return 0;
}

static bool ctrls_has(const struct ctrls *l, uint16_t id) {
        for (size_t i = 0; i < l->n; i++)
                if (l->v[i] == id)
                        return true;
        return false;
}

static bool ids_has(const struct ids *l, uint32_t id) {
        for (size_t i = 0; i < l->n; i++)
                if (l->v[i] == id)
                        return true;
        return false;
}

static char *ids_format(const struct ids *l) {
        char *s = NULL;
        size_t len = 0;
        FILE *f = open_memstream(&s, &len);

        if (!f)
                return NULL;
        for (size_t i = 0; i < l->n; i++)
                fprintf(f, "%s%" PRIu32, i ? ", " : "", l->v[i]);
        if (l->n == 0)
                fputs("none", f);
        fclose(f);
        return s;
}

/* ---- identity ----------------------------------------------------------- */

/* SUBNQN up to its first NUL, as text: what is not printable UTF-8
 * escaped (utf8.h), so that it can be stored, compared and printed. */
static char *nqn_text(const uint8_t raw[static SVFF_NVME_NQN_SIZE]) {
        char s[SVFF_NVME_NQN_SIZE + 1];
        size_t n = strnlen((const char *) raw, SVFF_NVME_NQN_SIZE);

        memcpy(s, raw, n);
        s[n] = '\0';
        return svff_utf8_escape(s, false);
}

static void hex(const uint8_t *v, size_t n, char *ret) {
        for (size_t i = 0; i < n; i++)
                sprintf(ret + 2 * i, "%02x", v[i]);
}

/* The identifiers of namespace nsid as {"nguid": ..., "eui64": ...} in
 * *ret; NULL where the controller does not read them for a namespace
 * it does not have attached (no CNS 11h: Invalid Field). */
static int read_ns_ids(struct svff_class_pf *c, uint32_t nsid, struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = NULL;
        struct svff_nvme_ns_ids ids;
        char nguid[2 * sizeof(ids.nguid) + 1], eui64[2 * sizeof(ids.eui64) + 1], what[96];
        int r;

        *ret = NULL;
        r = c->ops->ns_ids(c->handle, nsid, &ids);
        if (r == SVFF_NVME_SC_INVALID_FIELD || r == SVFF_NVME_SC_INVALID_OPCODE)
                return 0;
        if (r != 0) {
                snprintf(what, sizeof(what), "Reading the identifiers of namespace %" PRIu32 " (Identify CNS 11h)",
                         nsid);
                cmd_error(c, r, err, what);
                return status_errno(r);
        }
        hex(ids.nguid, sizeof(ids.nguid), nguid);
        hex(ids.eui64, sizeof(ids.eui64), eui64);
        o = json_object_new_object();
        if (!o || json_object_object_add(o, "nguid", json_object_new_string(nguid)) < 0 ||
            json_object_object_add(o, "eui64", json_object_new_string(eui64)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

#define IDENTITY_WHY                                                                                            \
        "a guest's NVMe multipath head takes a controller back only with the same subsystem NQN, NSID and "     \
        "namespace identifiers, so the VF's domain would get another disk (the device's firmware or "           \
        "configuration changed?). Detach the VF and attach it again to give the domain the device as it is"

/* The recorded identity in state (the secondary controller's ID, the
 * subsystem NQN, the NGUID and EUI64 of each of nss) against the
 * device's, whose secondary controller for the VF is scid: 0, or
 * -EUCLEAN with err naming what changed. */
static int identity_check(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index, struct json_object *state,
                          uint16_t scid, const struct ids *nss, struct svff_error *err) {
        struct json_object *v, *ids;
        int r;

        if (json_object_object_get_ex(state, "scid", &v) && json_object_is_type(v, json_type_int) &&
            json_object_get_int(v) != scid)
                return svff_error_set(err, -EUCLEAN,
                                      "VF %u of PF %s: its secondary controller on %s is now %u, recorded %d: "
                                      IDENTITY_WHY,
                                      index, pf->address, c->ctrl, scid, json_object_get_int(v));

        if (json_object_object_get_ex(state, "subnqn", &v) && json_object_is_type(v, json_type_string) &&
            !streq(json_object_get_string(v), c->subnqn))
                return svff_error_set(err, -EUCLEAN,
                                      "VF %u of PF %s: the controller %s's subsystem NQN is now '%s', recorded '%s': "
                                      IDENTITY_WHY,
                                      index, pf->address, c->ctrl, c->subnqn, json_object_get_string(v));
        if (!json_object_object_get_ex(state, "ids", &ids) || !json_object_is_type(ids, json_type_object))
                return 0;
        for (size_t i = 0; i < nss->n; i++) {
                _cleanup_(json_object_putp) struct json_object *live = NULL;
                struct json_object *rec;
                char key[16];

                snprintf(key, sizeof(key), "%" PRIu32, nss->v[i]);
                if (!json_object_object_get_ex(ids, key, &rec) || !json_object_is_type(rec, json_type_object))
                        continue;
                r = read_ns_ids(c, nss->v[i], &live, err);
                if (r < 0)
                        return r;
                for (const char *const *k = (const char *const[]) { "nguid", "eui64", NULL }; *k; k++) {
                        const char *want = json_object_get_string(json_object_object_get(rec, *k));
                        const char *got = json_object_get_string(json_object_object_get(live, *k));

                        if (want && (!got || !streq(want, got)))
                                return svff_error_set(err, -EUCLEAN,
                                                      "VF %u of PF %s: namespace %" PRIu32 "'s %s is now %s, "
                                                      "recorded %s: " IDENTITY_WHY,
                                                      index, pf->address, nss->v[i],
                                                      streq(*k, "nguid") ? "NGUID" : "EUI64",
                                                      got ? got : "unreadable", want);
                }
        }
        return 0;
}

/* Adds the identity to a new state: the one keep recorded (NULL: none)
 * where it has it, else the device's; the secondary controller's ID
 * likewise. For the namespace nsid (0: none). provision has compared
 * keep with the device before its first command (identity_check()), so
 * what it copies is the device's, without reading it again. */
static int identity_add(struct svff_class_pf *c, struct json_object *state, struct json_object *keep, uint16_t scid,
                        uint32_t nsid, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *ids = NULL, *one = NULL;
        struct json_object *v;
        char key[16];
        int r;

        if (keep && json_object_object_get_ex(keep, "scid", &v) && json_object_is_type(v, json_type_int))
                json_object_object_add(state, "scid", json_object_get(v));
        else
                json_object_object_add(state, "scid", json_object_new_int(scid));
        if (keep && json_object_object_get_ex(keep, "subnqn", &v) && json_object_is_type(v, json_type_string))
                json_object_object_add(state, "subnqn", json_object_get(v));
        else
                json_object_object_add(state, "subnqn", json_object_new_string(c->subnqn));
        if (!nsid)
                return 0;

        snprintf(key, sizeof(key), "%" PRIu32, nsid);
        if (keep && json_object_object_get_ex(keep, "ids", &v) && json_object_is_type(v, json_type_object) &&
            json_object_object_get_ex(v, key, &v) && json_object_is_type(v, json_type_object))
                one = json_object_get(v);
        else {
                r = read_ns_ids(c, nsid, &one, err);
                if (r < 0)
                        return r;
                if (!one)
                        return 0;
        }
        ids = json_object_new_object();
        if (!ids || json_object_object_add(ids, key, TAKE_PTR(one)) < 0)
                return -ENOMEM;
        json_object_object_add(state, "ids", TAKE_PTR(ids));
        return 0;
}

/* ---- open --------------------------------------------------------------- */

static void nvme_close(struct svff_class_pf *c) {
        if (!c)
                return;
        if (c->handle && c->ops->close)
                c->ops->close(c->handle);
        free(c->subnqn);
        free(c->ctrl);
        svff_ctx_unref(c->ctx);
        free(c);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_class_pf *, nvme_close);

/* The PF's controller: its nvme/ directory holds one entry, "nvmeN". */
static int find_ctrl(struct svff_ctx *ctx, const char *address, char **ret, struct svff_error *err) {
        _cleanup_(strv_freep) char **l = NULL;
        _cleanup_free_ char *path = NULL;
        int r;

        if (asprintf(&path, "bus/pci/devices/%s/nvme", address) < 0)
                return -ENOMEM;
        r = svff_sysfs_list_dir(svff_ctx_get_rootfd(ctx), path, &l);
        if (r == -ENOENT || (r >= 0 && !l[0]))
                return svff_error_set(err, -ENODEV,
                                      "PF %s is on the nvme driver but has no controller under its nvme/ directory "
                                      "(it may be resetting or have failed to start): check 'dmesg' and try again",
                                      address);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot read the nvme/ directory of PF %s", address);
        for (char **i = l; *i; i++)
                if (!strncmp(*i, "nvme", 4)) {
                        *ret = strdup(*i);
                        return *ret ? 0 : -ENOMEM;
                }
        return svff_error_set(err, -ENODEV, "PF %s has no nvmeN controller under its nvme/ directory", address);
}

/* The device number sysfs gives the PF's controller ctrl (its
 * nvme/<ctrl>/dev, "MAJOR:MINOR"): 1 and *ret, 0 when it gives none, as
 * a simulated tree (--sysfs-root), whose PF is not the host's. */
static int ctrl_devnum(struct svff_ctx *ctx, const char *address, const char *ctrl, dev_t *ret) {
        _cleanup_free_ char *s = NULL;
        unsigned maj, min;
        int r;

        r = svff_sysfs_readf(svff_ctx_get_rootfd(ctx), &s, "bus/pci/devices/%s/nvme/%s/dev", address, ctrl);
        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return r;
        if (sscanf(s, "%u:%u", &maj, &min) != 2)
                return -EINVAL;
        *ret = makedev(maj, min);
        return 1;
}

/* Whether the admin queue c has open is the PF's controller now: the
 * controller under the PF's own nvme/ directory, looked up again, and
 * its device number in sysfs, against the number of the character
 * device the handle has open. A controller that goes away (a reset that
 * fails, the PF rebound or removed) frees its instance number, and with
 * it its /dev name, for the next controller to come up, a host disk's
 * maybe: the name alone says nothing. Run after the open and before
 * every batch of commands; a mismatch sends none. Where neither side has
 * a number (a stand-in for a simulated tree's controller) there is
 * nothing to tell apart. */
static int ctrl_check(struct svff_class_pf *c, struct svff_error *err) {
        _cleanup_free_ char *ctrl = NULL;
        dev_t want = 0, have = 0;
        int w, h, r;

        r = find_ctrl(c->ctx, c->address, &ctrl, err);
        if (r < 0)
                return r;
        w = ctrl_devnum(c->ctx, c->address, ctrl, &want);
        if (w < 0)
                return svff_error_set_errno(err, w, "PF %s: cannot read the device number of its controller %s",
                                            c->address, ctrl);
        h = c->ops->devnum ? c->ops->devnum(c->handle, &have) : 0;
        if (h < 0)
                return svff_error_set_errno(err, h, "PF %s: cannot tell which device /dev/%s, opened as the admin "
                                            "queue of its controller %s, is; svff sends no admin command to it",
                                            c->address, c->ctrl, ctrl);
        if (w == 0 && h != 0)
                return svff_error_set(err, -ENXIO, "PF %s: sysfs gives no device number for its controller %s, so "
                                      "/dev/%s cannot be told to be its admin queue; svff sends no admin command "
                                      "to it",
                                      c->address, ctrl, c->ctrl);
        if (w != 0 && (h == 0 || have != want))
                return svff_error_set(err, -ENXIO, "PF %s: /dev/%s (%u:%u) is not its controller %s (%u:%u in sysfs): "
                                      "the controllers were renumbered (a reset, a rebind, a hot-plug) under svff; "
                                      "svff sends no admin command to it: try again once the PF's controller is up",
                                      c->address, c->ctrl, major(have), minor(have), ctrl, major(want), minor(want));
        free(c->ctrl);
        c->ctrl = TAKE_PTR(ctrl);
        return 0;
}

#define NVME_LIVE_WAIT_USEC (20 * USEC_PER_SEC)
#define NVME_LIVE_POLL_USEC (50 * USEC_PER_MSEC)

int svff_class_nvme_open_with(struct svff_ctx *ctx, const struct svff_pf *pf, const struct svff_nvme_ops *ops,
                              void *userdata, struct svff_class_pf **ret, struct svff_error *err) {
        _cleanup_(nvme_closep) struct svff_class_pf *c = NULL;
        struct svff_nvme_ctrl_id id;
        char buf[64];
        int r;

        if (!pf->driver || strcmp(pf->driver, "nvme"))
                return svff_error_set(err, -EOPNOTSUPP,
                                      "NVMe PF %s is %s%s%s; svff sets up its VFs' secondary controllers through "
                                      "the admin queue of the host's nvme driver: bind it to nvme "
                                      "(e.g. 'driverctl set-override %s nvme') with no VFs enabled",
                                      pf->address, pf->driver ? "on driver '" : "not bound to a driver",
                                      pf->driver ? pf->driver : "", pf->driver ? "'" : "", pf->address);

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->ctx = ctx ? svff_ctx_ref(ctx) : NULL;
        c->ops = ops;
        snprintf(c->address, sizeof(c->address), "%s", pf->address);

        /* The kernel's nvme_dev_open() answers EWOULDBLOCK until the
         * controller is live: just after the PF was bound (a reprogram
         * binds it again after the rescan) it is still being reset and
         * connected, for a second or more under emulation. Each try
         * looks the controller up under the PF again: the one it waits
         * for may be replaced meanwhile, and its name taken. */
        for (usec_t until = svff_now_usec() + NVME_LIVE_WAIT_USEC;;) {
                c->ctrl = mfree(c->ctrl);
                r = find_ctrl(ctx, pf->address, &c->ctrl, err);
                if (r < 0)
                        return r;
                r = ops->open(userdata, c->ctrl, &c->handle);
                if (r != -EAGAIN || svff_now_usec() >= until)
                        break;
                (void) usleep(NVME_LIVE_POLL_USEC);
        }
        if (r == -EAGAIN) {
                c->handle = NULL;
                return svff_error_set_errno(err, r, "The controller /dev/%s of PF %s did not come up (not live after "
                                            "%d s); try again once it has", c->ctrl, pf->address,
                                            (int) (NVME_LIVE_WAIT_USEC / USEC_PER_SEC));
        }
        if (r < 0) {
                c->handle = NULL;
                return svff_error_set_errno(err, r, "Cannot open /dev/%s, the admin queue of PF %s", c->ctrl,
                                            pf->address);
        }
        r = ctrl_check(c, err);
        if (r < 0)
                return r;

        r = ops->identify_ctrl(c->handle, &id);
        if (r != 0) {
                cmd_error(c, r, err, "Identify Controller");
                return status_errno(r);
        }
        c->cntlid = id.cntlid;
        c->oacs = id.oacs;
        c->subnqn = nqn_text(id.subnqn);
        if (!c->subnqn)
                return -ENOMEM;
        c->oacs_virt = c->oacs & SVFF_NVME_OACS_VIRT_MGMT;

        /* Read in every case: it carries the per-VF maxima and the pool.
         * Where OACS bit 7 is clear, its success is the support. */
        r = ops->primary_caps(c->handle, &c->caps);
        if (r != 0) {
                if (!c->oacs_virt)
                        return svff_error_set(err, -EOPNOTSUPP,
                                              "The controller %s of PF %s has no Virtualization Management "
                                              "(OACS 0x%04x, bit 7 clear; Identify Primary Controller "
                                              "Capabilities: %s): its VFs cannot be given queues, so svff "
                                              "cannot hand them out as NVMe controllers",
                                              c->ctrl, pf->address, c->oacs, status_str(r, buf));
                cmd_error(c, r, err, "Identify Primary Controller Capabilities (CNS 14h)");
                return status_errno(r);
        }
        if (c->caps.vqfrsm < 2 || c->caps.vifrsm < 1)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "The controller %s of PF %s lets a secondary controller take at most %u VQ "
                                      "and %u VI flexible resources; one needs 2 VQ and 1 VI to come online, so "
                                      "its VFs cannot be NVMe controllers (check the device's SR-IOV "
                                      "configuration)",
                                      c->ctrl, pf->address, c->caps.vqfrsm, c->caps.vifrsm);

        *ret = TAKE_PTR(c);
        return 0;
}

static int nvme_open(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_class_pf **ret,
                     struct svff_error *err) {
        _cleanup_free_ char *ctrl = NULL;
        dev_t dev;
        int r;

        /* A controller sysfs gives no device number is not the host's
         * (a simulated tree): no /dev node in its name is even opened.
         * The one opened is checked by its number (ctrl_check()). */
        if (pf->driver && !strcmp(pf->driver, "nvme")) {
                r = find_ctrl(ctx, pf->address, &ctrl, err);
                if (r < 0)
                        return r;
                r = ctrl_devnum(ctx, pf->address, ctrl, &dev);
                if (r <= 0)
                        return svff_error_set(err, r < 0 ? r : -ENXIO, "PF %s: sysfs gives no device number for its "
                                              "controller %s, so /dev/%s cannot be told to be its admin queue",
                                              pf->address, ctrl, ctrl);
        }
        return svff_class_nvme_open_with(ctx, pf, &svff_nvme_ops_libnvme, NULL, ret, err);
}

/* PCI class 01h (mass storage), subclass 08h (non-volatile memory). The
 * driver is not part of the match: an NVMe PF on another driver is
 * refused by open, by name, instead of being handed out as a bare PCI
 * function whose VFs would be dead controllers. A PF on nvme whose
 * controller has no device number in sysfs is not the host's (a
 * simulated tree): no admin queue reaches it, and it stays a bare PCI
 * function, as a simulated NIC does. */
static bool nvme_match(struct svff_ctx *ctx, const struct svff_pf *pf) {
        _cleanup_free_ char *ctrl = NULL;
        dev_t dev;

        if ((pf->class >> 8) != 0x0108)
                return false;
#ifdef SVFF_FAULT_POINTS
        /* Test builds: the stand-in for the admin queue (daemon/classes.c)
         * is every NVMe PF's controller. */
        if (getenv("SVFF_TEST_NVME_STANDIN") && !strcmp(getenv("SVFF_TEST_NVME_STANDIN"), "1"))
                return true;
#endif
        if (!ctx || !pf->driver || strcmp(pf->driver, "nvme") || find_ctrl(ctx, pf->address, &ctrl, NULL) < 0)
                return true;    /* open says why not */
        return ctrl_devnum(ctx, pf->address, ctrl, &dev) != 0;
}

/* ---- state -------------------------------------------------------------- */

static struct json_object *u32_array(const uint32_t *v, size_t n) {
        struct json_object *a = json_object_new_array();

        for (size_t i = 0; a && i < n; i++)
                json_object_array_add(a, json_object_new_int64(v[i]));
        return a;
}

/* The live state of one secondary: list entry plus the namespaces
 * attached to it. */
static int live_state(struct svff_class_pf *c, const struct svff_nvme_secondary *sc, const struct ids *nss,
                      struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = json_object_new_object();
        uint32_t attached[SVFF_NVME_MAX_IDS];
        size_t n = 0;
        int r;

        if (!o)
                return -ENOMEM;
        for (size_t i = 0; i < nss->n; i++) {
                struct ctrls cl;

                r = read_ns_ctrls(c, nss->v[i], &cl, err);
                if (r < 0)
                        return r;
                if (ctrls_has(&cl, sc->scid))
                        attached[n++] = nss->v[i];
        }
        json_object_object_add(o, "scid", json_object_new_int(sc->scid));
        json_object_object_add(o, "secondary", json_object_new_string(sc->online ? "online" : "offline"));
        json_object_object_add(o, "vq", json_object_new_int(sc->nvq));
        json_object_object_add(o, "vi", json_object_new_int(sc->nvi));
        json_object_object_add(o, "namespaces", u32_array(attached, n));
        *ret = TAKE_PTR(o);
        return 0;
}

static struct json_object *res_json(uint32_t total, uint32_t assigned, uint16_t primary, uint16_t private_,
                                    uint16_t per_vf) {
        struct json_object *o = json_object_new_object();
        int64_t free_ = (int64_t) total - primary - assigned;

        json_object_object_add(o, "total", json_object_new_int64(total));
        json_object_object_add(o, "primary", json_object_new_int(primary));
        json_object_object_add(o, "assigned", json_object_new_int64(assigned));
        json_object_object_add(o, "free", json_object_new_int64(free_ > 0 ? free_ : 0));
        json_object_object_add(o, "per_vf_max", json_object_new_int(per_vf));
        json_object_object_add(o, "primary_private", json_object_new_int(private_));
        return o;
}

static int nvme_inspect(struct svff_class_pf *c, const struct svff_pf *pf, struct json_object **ret,
                        struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = json_object_new_object(), *p = NULL, *vfs = NULL;
        struct svff_nvme_primary_caps caps;
        _cleanup_free_ struct secondaries *l = malloc(sizeof(*l));
        _cleanup_free_ struct ids *nss = malloc(sizeof(*nss));
        int r;

        if (!o || !l || !nss)
                return -ENOMEM;
        /* the pool moves with every assignment: read it again */
        r = c->ops->primary_caps(c->handle, &caps);
        if (r != 0) {
                cmd_error(c, r, err, "Identify Primary Controller Capabilities (CNS 14h)");
                return status_errno(r);
        }
        c->caps = caps;
        r = read_secondaries(c, l, err);
        if (r < 0)
                return r;
        r = read_namespaces(c, nss, err);
        if (r < 0)
                return r;

        p = json_object_new_object();
        vfs = json_object_new_object();
        if (!p || !vfs)
                return -ENOMEM;
        json_object_object_add(p, "controller", json_object_new_string(c->ctrl));
        json_object_object_add(p, "cntlid", json_object_new_int(c->cntlid));
        json_object_object_add(p, "oacs", json_object_new_int(c->oacs));
        json_object_object_add(p, "virtualization", json_object_new_string(c->oacs_virt ? "oacs" : "cns-14h"));
        json_object_object_add(p, "vq", res_json(caps.vqfrt, caps.vqrfa, caps.vqrfap, caps.vqprt, caps.vqfrsm));
        json_object_object_add(p, "vi", res_json(caps.vifrt, caps.virfa, caps.virfap, caps.viprt, caps.vifrsm));
        json_object_object_add(p, "secondaries", json_object_new_int64(l->n));
        json_object_object_add(p, "namespaces", u32_array(nss->v, nss->n));

        for (size_t i = 0; i < l->n; i++) {
                struct json_object *st = NULL;
                char key[16];

                if (l->e[i].vfn == 0 || l->e[i].vfn > pf->numvfs)
                        continue;
                r = live_state(c, &l->e[i], nss, &st, err);
                if (r < 0)
                        return r;
                snprintf(key, sizeof(key), "%u", l->e[i].vfn - 1u);
                json_object_object_add(vfs, key, st);
        }
        json_object_object_add(o, "pf", TAKE_PTR(p));
        json_object_object_add(o, "vfs", TAKE_PTR(vfs));
        *ret = TAKE_PTR(o);
        return 0;
}

/* ---- plan --------------------------------------------------------------- */

static int state_int(struct json_object *state, const char *key);

static unsigned want(int setting, uint16_t per_vf_max) {
        return setting < 0 ? per_vf_max : (unsigned) setting;
}

static struct json_object *step(int vf, const char *action, const char *detail) {
        struct json_object *o = json_object_new_object();

        json_object_object_add(o, "vf", vf < 0 ? NULL : json_object_new_int(vf));
        json_object_object_add(o, "action", json_object_new_string(action));
        json_object_object_add(o, "detail", json_object_new_string(detail));
        return o;
}

/* Why svff formats no namespace of a VF's own (scrub_on_release
 * "format"): Format NVM runs on a controller the namespace is attached
 * to; the VF's secondary controller is reached only through the VF's own
 * driver (the guest's, or vfio-pci while svff holds the VF), and
 * attaching a guest's namespace to the host's primary controller, even
 * for the format, hands the host the guest's disk. */
#define SCRUB_WHY                                                                                               \
        "Format NVM runs only on a controller the namespace is attached to, the VF's own secondary "          \
        "controller %u, which only the VF's driver reaches (the guest's, or vfio-pci while svff holds the VF); " \
        "svff does not attach a guest's namespace to the host's controller %s to format it"

/* Whether nsid can go to VF index: it exists, neither the host's own
 * (primary) controller nor another VF's secondary has it, and scrub
 * (scrub_on_release "format") is not asked for a namespace of its own. */
static int check_namespace(struct svff_class_pf *c, const struct secondaries *l, const struct ids *nss,
                           unsigned index, uint32_t nsid, bool scrub, bool *ret_private, struct svff_error *err) {
        _cleanup_free_ struct ctrls *cl = malloc(sizeof(*cl));
        _cleanup_free_ char *known = NULL;
        const struct svff_nvme_secondary *mine = secondary_of(l, index);
        bool private_ = true;
        int r;

        if (!cl)
                return -ENOMEM;
        if (!(c->oacs & SVFF_NVME_OACS_NS_MGMT))
                return svff_error_set(err, -EOPNOTSUPP,
                                      "VF %u of PF %s: the controller %s has no Namespace Management (OACS 0x%04x, "
                                      "bit 3 clear), so svff cannot attach namespace %" PRIu32 " to a VF: leave "
                                      "'namespace' out for this PF",
                                      index, c->address, c->ctrl, c->oacs, nsid);
        if (!ids_has(nss, nsid)) {
                known = ids_format(nss);
                return svff_error_set(err, -EINVAL,
                                      "VF %u of PF %s: namespace %" PRIu32 " does not exist on %s (its namespaces: "
                                      "%s); svff attaches namespaces but creates none: name an existing one",
                                      index, c->address, nsid, c->ctrl, strna(known));
        }
        r = read_ns_ctrls(c, nsid, cl, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < cl->n; i++) {
                const struct svff_nvme_secondary *other = secondary_by_scid(l, cl->v[i]);

                if (mine && cl->v[i] == mine->scid)
                        continue;
                private_ = false;
                /* the host's own disk: a guest would share it with the
                 * host, which reads and writes it behind the guest */
                if (cl->v[i] == c->cntlid)
                        return svff_error_set(err, -EBUSY,
                                              "VF %u of PF %s: namespace %" PRIu32 " is attached to the host's own "
                                              "controller %s (controller %u, the PF's primary); svff gives a guest "
                                              "no namespace the host has: name another namespace, or detach it from "
                                              "the host first ('nvme detach-ns /dev/%s -n %" PRIu32 " -c %u') once "
                                              "the host no longer uses it",
                                              index, c->address, nsid, c->ctrl, cl->v[i], c->ctrl, nsid, cl->v[i]);
                if (other && other->vfn > 0)
                        return svff_error_set(err, -EBUSY,
                                              "VF %u of PF %s: namespace %" PRIu32 " is already attached to controller "
                                              "%u, the secondary of VF %u; detach it there (or release that VF) first, "
                                              "or name another namespace",
                                              index, c->address, nsid, cl->v[i], other->vfn - 1u);
        }
        if (scrub && private_)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "VF %u of PF %s: 'scrub_on_release' \"format\" cannot be kept for namespace "
                                      "%" PRIu32 ": " SCRUB_WHY ". Erase it from within the guest before its "
                                      "release, or set 'scrub_on_release' to \"none\"",
                                      index, c->address, nsid, mine ? mine->scid : index + 1u, c->ctrl);
        if (ret_private)
                *ret_private = private_;
        return 0;
}

static int nvme_plan(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                     struct svff_class_settings *const *settings, struct json_object **ret,
                     struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = json_object_new_object(), *steps = json_object_new_array(),
                                                       *warnings = json_object_new_array();
        _cleanup_free_ struct secondaries *l = malloc(sizeof(*l));
        _cleanup_free_ struct ids *nss = malloc(sizeof(*nss));
        _cleanup_free_ char *needs = NULL;
        uint64_t vq = 0, vi = 0, held_vq = 0, held_vi = 0, free_vq, free_vi;
        bool primary_flexible = false;
        char detail[256];
        int r;

        if (!o || !steps || !warnings || !l || !nss)
                return -ENOMEM;

        r = c->ops->primary_caps(c->handle, &c->caps);
        if (r != 0) {
                cmd_error(c, r, err, "Identify Primary Controller Capabilities (CNS 14h)");
                return status_errno(r);
        }
        r = read_secondaries(c, l, err);
        if (r < 0)
                return r;
        r = read_namespaces(c, nss, err);
        if (r < 0)
                return r;

        if (numvfs > l->n)
                return svff_error_set(err, -ERANGE,
                                      "%u VFs asked of PF %s, whose controller %s has %zu secondary controllers: "
                                      "ask for %zu VFs at most",
                                      numvfs, pf->address, c->ctrl, l->n, l->n);

        for (unsigned i = 0; i < numvfs; i++) {
                const struct svff_class_settings *s = settings[i];
                unsigned q, v;

                q = want(s->vq, c->caps.vqfrsm);
                v = want(s->vi, c->caps.vifrsm);
                if (q > c->caps.vqfrsm || v > c->caps.vifrsm)
                        return svff_error_set(err, -EINVAL,
                                              "VF %u of PF %s asks for %u VQ and %u VI flexible resources; the "
                                              "controller %s gives one secondary at most %u VQ and %u VI: lower "
                                              "'vq'/'vi' or leave them out (the per-VF maximum is the default)",
                                              i, pf->address, q, v, c->ctrl, c->caps.vqfrsm, c->caps.vifrsm);
                vq += q;
                vi += v;
                primary_flexible |= s->primary_flexible;

                snprintf(detail, sizeof(detail), "secondary controller of VFN %u: %u VI, %u VQ", i + 1, v, q);
                json_object_array_add(steps, step(i, "assign", detail));
                json_object_array_add(steps, step(i, "online", "bring the secondary online, read it back"));
                if (s->nsid) {
                        r = check_namespace(c, l, nss, i, s->nsid, s->scrub, NULL, err);
                        if (r < 0)
                                return r;
                        snprintf(detail, sizeof(detail), "attach namespace %" PRIu32, s->nsid);
                        json_object_array_add(steps, step(i, "attach-namespace", detail));
                }
        }

        /* Secondaries beyond numvfs keep what they hold (VF disable
         * takes it back from the ones that go). */
        for (size_t i = 0; i < l->n; i++)
                if (l->e[i].vfn > numvfs) {
                        held_vq += l->e[i].nvq;
                        held_vi += l->e[i].nvi;
                }
        free_vq = c->caps.vqfrt > c->caps.vqrfap + held_vq ? c->caps.vqfrt - c->caps.vqrfap - held_vq : 0;
        free_vi = c->caps.vifrt > c->caps.virfap + held_vi ? c->caps.vifrt - c->caps.virfap - held_vi : 0;

        if (asprintf(&needs, "%u VFs need %" PRIu64 " VQ and %" PRIu64 " VI flexible resources", numvfs, vq, vi) < 0)
                return -ENOMEM;

        if (vq > free_vq || vi > free_vi) {
                uint64_t pool_vq = c->caps.vqfrt > held_vq ? c->caps.vqfrt - held_vq : 0;
                uint64_t pool_vi = c->caps.vifrt > held_vi ? c->caps.vifrt - held_vi : 0;

                if (!primary_flexible || vq > pool_vq || vi > pool_vi) {
                        char have[128];

                        if (vq > free_vq && vi > free_vi)
                                snprintf(have, sizeof(have), "%" PRIu64 " VQ and %" PRIu64 " VI", free_vq, free_vi);
                        else if (vq > free_vq)
                                snprintf(have, sizeof(have), "%" PRIu64 " VQ", free_vq);
                        else
                                snprintf(have, sizeof(have), "%" PRIu64 " VI", free_vi);
                        return svff_error_set(err, -ENOSPC,
                                              "%s; the primary controller %s of PF %s has %s free: ask for fewer "
                                              "VFs or fewer resources per VF ('vq' 2 and 'vi' 1 at least)%s",
                                              needs, c->ctrl, pf->address, have,
                                              (c->caps.vqrfap || c->caps.virfap) && !primary_flexible
                                                      ? ", or let svff shrink the primary's flexible share "
                                                        "('primary_flexible': true; resets the PF's controller)"
                                                      : "");
                }
                /* prepare gives the primary what the VFs leave */
                snprintf(detail, sizeof(detail),
                         "shrink the primary controller's flexible share to %" PRIu64 " VQ and %" PRIu64
                         " VI, then reset %s (disrupts the host's own use of PF %s)",
                         pool_vq - vq, pool_vi - vi, c->ctrl, pf->address);
                struct json_object *ps = step(-1, "primary-flexible", detail);
                json_object_object_add(ps, "disruptive", json_object_new_boolean(true));
                json_object_object_add(ps, "vq", json_object_new_int64(MIN(pool_vq - vq, (uint64_t) c->caps.vqrfap)));
                json_object_object_add(ps, "vi", json_object_new_int64(MIN(pool_vi - vi, (uint64_t) c->caps.virfap)));
                json_object_array_add(steps, ps);
                json_object_array_add(warnings, json_object_new_string(detail));
                free_vq = pool_vq;
                free_vi = pool_vi;
        }

        json_object_object_add(o, "steps", TAKE_PTR(steps));
        json_object_object_add(o, "needs", json_object_new_string(needs));
        snprintf(detail, sizeof(detail), "%" PRIu64 " VQ and %" PRIu64 " VI free", free_vq, free_vi);
        json_object_object_add(o, "has", json_object_new_string(detail));
        json_object_object_add(o, "warnings", TAKE_PTR(warnings));
        *ret = TAKE_PTR(o);
        return 0;
}

static int nvme_prepare(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                        struct svff_class_settings *const *settings, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *plan = NULL;
        struct json_object *steps;
        int r;

        r = nvme_plan(c, pf, numvfs, settings, &plan, err);
        if (r < 0)
                return r;
        steps = json_object_object_get(plan, "steps");
        for (size_t i = 0; i < json_object_array_length(steps); i++) {
                struct json_object *s = json_object_array_get_idx(steps, i);
                static const struct {
                        enum svff_nvme_res res;
                        const char *key;
                } res[] = { { SVFF_NVME_RES_VQ, "vq" }, { SVFF_NVME_RES_VI, "vi" } };

                if (strcmp(json_object_get_string(json_object_object_get(s, "action")), "primary-flexible"))
                        continue;
                for (size_t k = 0; k < ELEMENTSOF(res); k++) {
                        int nr = state_int(s, res[k].key);
                        uint16_t cur = res[k].res == SVFF_NVME_RES_VQ ? c->caps.vqrfap : c->caps.virfap;
                        char what[96];

                        if (nr < 0 || nr >= cur)
                                continue;
                        r = c->ops->virt_mgmt(c->handle, SVFF_NVME_VIRT_PRIMARY_FLEX, res[k].res, c->cntlid,
                                              (uint16_t) nr);
                        if (r != 0) {
                                snprintf(what, sizeof(what), "Primary Controller Flexible Allocation of %d %s",
                                         nr, res[k].res == SVFF_NVME_RES_VQ ? "VQ" : "VI");
                                cmd_error(c, r, err, what);
                                return status_errno(r);
                        }
                }
                /* the allocation takes effect at the primary's reset */
                r = c->ops->reset(c->handle);
                if (r != 0) {
                        cmd_error(c, r, err, "Controller reset of the primary");
                        return status_errno(r);
                }
                break;
        }
        return 0;
}

/* ---- provision, verify, release ----------------------------------------- */

static int virt(struct svff_class_pf *c, unsigned index, const struct svff_nvme_secondary *sc,
                enum svff_nvme_virt_act act, enum svff_nvme_res res, uint16_t nr, struct svff_error *err) {
        char buf[64];
        int r = c->ops->virt_mgmt(c->handle, act, res, sc->scid, nr);

        if (r == 0)
                return 0;
        switch (act) {
        case SVFF_NVME_VIRT_ASSIGN:
                svff_error_set(err, status_errno(r),
                               "Assigning %u %s flexible resources to VF %u's secondary controller %u on %s (PF %s) "
                               "failed: %s%s",
                               nr, res == SVFF_NVME_RES_VQ ? "VQ" : "VI", index, sc->scid, c->ctrl, c->address,
                               status_str(r, buf),
                               r == SVFF_NVME_SC_INVALID_NUM_RESOURCES ? "; ask for no more than the per-VF maximum"
                               : r == SVFF_NVME_SC_INVALID_RESOURCE_ID ? "; the primary controller has too few free: "
                                                                         "release other VFs or ask for fewer"
                               : r == SVFF_NVME_SC_INVALID_SEC_CTRL_STATE ? "; it must be offline"
                                                                          : "");
                break;
        case SVFF_NVME_VIRT_ONLINE:
                svff_error_set(err, status_errno(r),
                               "VF %u's secondary controller %u on %s (PF %s) refused to come online with %u VQ and "
                               "%u VI: %s; check its resources with 'nvme list-secondary /dev/%s'",
                               index, sc->scid, c->ctrl, c->address, sc->nvq, sc->nvi, status_str(r, buf), c->ctrl);
                break;
        default:
                svff_error_set(err, status_errno(r),
                               "Taking VF %u's secondary controller %u on %s (PF %s) offline failed: %s", index,
                               sc->scid, c->ctrl, c->address, status_str(r, buf));
                break;
        }
        return status_errno(r);
}

/* The namespaces attached to secondary scid other than keep (0: none),
 * into *ret: what an earlier tenant of the VF, or a hand, left there. */
static int strays_of(struct svff_class_pf *c, uint16_t scid, const struct ids *keep, struct ids *ret,
                     struct svff_error *err) {
        _cleanup_free_ struct ids *nss = malloc(sizeof(*nss));
        _cleanup_free_ struct ctrls *cl = malloc(sizeof(*cl));
        int r;

        if (!nss || !cl)
                return -ENOMEM;
        ret->n = 0;
        if (!(c->oacs & SVFF_NVME_OACS_NS_MGMT))
                return 0;       /* no namespace was ever attached by command */
        r = read_namespaces(c, nss, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < nss->n; i++) {
                if (ids_has(keep, nss->v[i]))
                        continue;
                r = read_ns_ctrls(c, nss->v[i], cl, err);
                if (r < 0)
                        return r;
                if (ctrls_has(cl, scid))
                        ret->v[ret->n++] = nss->v[i];
        }
        return 0;
}

/* A VF holds exactly the namespace its settings name: every other one
 * attached to its secondary is detached, so no tenant gets the disk of
 * the one before. */
static int detach_others(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index, uint16_t scid,
                         uint32_t nsid, struct svff_error *err) {
        _cleanup_free_ struct ids *strays = malloc(sizeof(*strays));
        struct ids keep = { .n = nsid ? 1 : 0, .v = { nsid } };
        char buf[64];
        int r;

        if (!strays)
                return -ENOMEM;
        r = strays_of(c, scid, &keep, strays, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < strays->n; i++) {
                r = c->ops->ns_attach(c->handle, strays->v[i], scid, false);
                if (r != 0 && r != SVFF_NVME_SC_NS_NOT_ATTACHED)
                        return svff_error_set(err, status_errno(r),
                                              "Detaching namespace %" PRIu32 ", which VF %u's settings do not name, "
                                              "from its secondary controller %u on %s (PF %s) failed: %s; the VF "
                                              "cannot be handed over with it",
                                              strays->v[i], index, scid, c->ctrl, pf->address, status_str(r, buf));
                svff_log_debug(c->ctx, "VF %u of PF %s: detached namespace %" PRIu32 " its settings do not name",
                               index, pf->address, strays->v[i]);
        }
        return 0;
}

/* recorded (the VF's last state, or NULL) holds the identity to keep
 * when tenant: the VF goes back to the domain that had it. */
static int nvme_provision(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                          const struct svff_class_settings *s, struct json_object *recorded, bool tenant,
                          struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *state = NULL;
        _cleanup_free_ struct secondaries *l = malloc(sizeof(*l));
        _cleanup_free_ struct ids *nss = malloc(sizeof(*nss));
        struct svff_nvme_primary_caps caps;
        struct svff_nvme_secondary sc;
        const struct svff_nvme_secondary *e;
        struct json_object *keep = tenant && json_object_is_type(recorded, json_type_object) ? recorded : NULL;
        int64_t free_vq, free_vi;
        unsigned q, v;
        bool private_ = false;
        char buf[64];
        int r;

        if (!l || !nss)
                return -ENOMEM;
        /* everything that can be refused is, before the first command
         * that changes anything */
        q = want(s->vq, c->caps.vqfrsm);
        v = want(s->vi, c->caps.vifrsm);
        if (q > c->caps.vqfrsm || v > c->caps.vifrsm)
                return svff_error_set(err, -EINVAL,
                                      "VF %u of PF %s asks for %u VQ and %u VI flexible resources; the controller %s "
                                      "gives one secondary at most %u VQ and %u VI",
                                      index, pf->address, q, v, c->ctrl, c->caps.vqfrsm, c->caps.vifrsm);
        r = read_secondaries(c, l, err);
        if (r < 0)
                return r;
        e = secondary_of(l, index);
        if (!e)
                return svff_error_set(err, -ENODEV,
                                      "PF %s's controller %s lists no secondary controller for VF %u (VFN %u): "
                                      "is the VF enabled?",
                                      pf->address, c->ctrl, index, index + 1);
        sc = *e;
        if (s->nsid) {
                r = read_namespaces(c, nss, err);
                if (r < 0)
                        return r;
                r = check_namespace(c, l, nss, index, s->nsid, s->scrub, &private_, err);
                if (r < 0)
                        return r;
        }
        /* Back to the domain that had it: the device must still be the
         * one its guest knew. */
        if (keep) {
                struct ids one = { .v = { s->nsid }, .n = s->nsid ? 1 : 0 };

                r = identity_check(c, pf, index, keep, sc.scid, &one, err);
                if (r < 0)
                        return r;
        }

        /* the pool, less what this secondary gives back when it goes
         * offline */
        r = c->ops->primary_caps(c->handle, &caps);
        if (r != 0) {
                cmd_error(c, r, err, "Identify Primary Controller Capabilities (CNS 14h)");
                return status_errno(r);
        }
        free_vq = (int64_t) caps.vqfrt - caps.vqrfap - caps.vqrfa + sc.nvq;
        free_vi = (int64_t) caps.vifrt - caps.virfap - caps.virfa + sc.nvi;
        if (q > free_vq || v > free_vi)
                return svff_error_set(err, -ENOSPC,
                                      "VF %u of PF %s needs %u VQ and %u VI flexible resources; the primary controller "
                                      "%s has %" PRId64 " VQ and %" PRId64 " VI free for it: release other VFs or ask "
                                      "for fewer ('vq' 2 and 'vi' 1 at least)",
                                      index, pf->address, q, v, c->ctrl, free_vq > 0 ? free_vq : 0,
                                      free_vi > 0 ? free_vi : 0);

        /* Already what was asked: leave it be (an online changes nothing
         * but resets the controller under whoever uses it). */
        if (!(sc.online && sc.nvq == q && sc.nvi == v)) {
                if (sc.online) {
                        r = virt(c, index, &sc, SVFF_NVME_VIRT_OFFLINE, SVFF_NVME_RES_VQ, 0, err);
                        if (r < 0)
                                return r;
                        sc.online = false;
                        sc.nvq = sc.nvi = 0;
                }
                r = virt(c, index, &sc, SVFF_NVME_VIRT_ASSIGN, SVFF_NVME_RES_VI, v, err);
                if (r < 0)
                        return r;
                sc.nvi = v;
                r = virt(c, index, &sc, SVFF_NVME_VIRT_ASSIGN, SVFF_NVME_RES_VQ, q, err);
                if (r < 0)
                        return r;
                sc.nvq = q;
                r = virt(c, index, &sc, SVFF_NVME_VIRT_ONLINE, SVFF_NVME_RES_VQ, 0, err);
                if (r < 0) {
                        /* give the pool back: an offline secondary keeps
                         * what it was assigned (offline drops it to 0) */
                        (void) c->ops->virt_mgmt(c->handle, SVFF_NVME_VIRT_OFFLINE, SVFF_NVME_RES_VQ, sc.scid, 0);
                        return r;
                }

                r = read_secondaries(c, l, err);
                if (r < 0)
                        return r;
                e = secondary_of(l, index);
                if (!e || !e->online || e->nvq != q || e->nvi != v)
                        return svff_error_set(err, -EIO,
                                              "VF %u's secondary controller %u on %s (PF %s) reads %s with %u VQ and "
                                              "%u VI after going online with %u VQ and %u VI",
                                              index, sc.scid, c->ctrl, pf->address,
                                              e && e->online ? "online" : e ? "offline" : "absent", e ? e->nvq : 0,
                                              e ? e->nvi : 0, q, v);
        }

        if (s->nsid) {
                r = c->ops->ns_attach(c->handle, s->nsid, sc.scid, true);
                /* attached by an earlier, interrupted run */
                if (r != 0 && r != SVFF_NVME_SC_NS_ALREADY_ATTACHED)
                        return svff_error_set(err, status_errno(r),
                                              "Attaching namespace %" PRIu32 " to VF %u's secondary controller %u on "
                                              "%s (PF %s) failed: %s",
                                              s->nsid, index, sc.scid, c->ctrl, pf->address, status_str(r, buf));
        }
        r = detach_others(c, pf, index, sc.scid, s->nsid, err);
        if (r < 0)
                return r;

        state = json_object_new_object();
        if (!state)
                return -ENOMEM;
        json_object_object_add(state, "scid", json_object_new_int(sc.scid));
        json_object_object_add(state, "secondary", json_object_new_string("online"));
        json_object_object_add(state, "vq", json_object_new_int(q));
        json_object_object_add(state, "vi", json_object_new_int(v));
        json_object_object_add(state, "namespaces", u32_array(&s->nsid, s->nsid ? 1 : 0));
        if (s->scrub) {
                json_object_object_add(state, "scrub_on_release", json_object_new_string("format"));
                json_object_object_add(state, "private", u32_array(&s->nsid, s->nsid && private_ ? 1 : 0));
        }
        r = identity_add(c, state, keep, sc.scid, s->nsid, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(state);
        return 0;
}

static int state_u32s(struct json_object *state, const char *key, struct ids *ret) {
        struct json_object *a;

        ret->n = 0;
        if (!json_object_object_get_ex(state, key, &a) || !a)
                return 0;
        if (!json_object_is_type(a, json_type_array))
                return -EINVAL;
        for (size_t i = 0; i < json_object_array_length(a) && ret->n < ELEMENTSOF(ret->v); i++) {
                struct json_object *e = json_object_array_get_idx(a, i);
                int64_t n = e ? json_object_get_int64(e) : 0;

                if (!e || !json_object_is_type(e, json_type_int) || n < 1 || n > 0xfffffffe)
                        return -EINVAL;
                ret->v[ret->n++] = (uint32_t) n;
        }
        return 0;
}

static int state_int(struct json_object *state, const char *key) {
        struct json_object *v;

        if (!json_object_object_get_ex(state, key, &v) || !json_object_is_type(v, json_type_int))
                return -1;
        return json_object_get_int(v);
}

static int nvme_verify(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index, struct json_object *state,
                       struct svff_error *err) {
        _cleanup_free_ struct secondaries *l = malloc(sizeof(*l));
        _cleanup_free_ struct ids *want_ns = malloc(sizeof(*want_ns)), *strays = malloc(sizeof(*strays));
        const struct svff_nvme_secondary *e;
        const char *secondary;
        int vq, vi, r;

        if (!l || !want_ns || !strays)
                return -ENOMEM;
        if (!state || state_u32s(state, "namespaces", want_ns) < 0)
                return svff_error_set(err, -EINVAL, "VF %u of PF %s: the recorded NVMe state %s is not one svff wrote",
                                      index, pf->address,
                                      state ? json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN) : "null");
        r = read_secondaries(c, l, err);
        if (r < 0)
                return r;
        e = secondary_of(l, index);
        if (!e)
                return svff_error_set(err, -EUCLEAN, "VF %u of PF %s: %s lists no secondary controller for it",
                                      index, pf->address, c->ctrl);
        /* another device first: what else differs follows from that */
        r = identity_check(c, pf, index, state, e->scid, want_ns, err);
        if (r < 0)
                return r;
        secondary = json_object_get_string(json_object_object_get(state, "secondary"));
        vq = state_int(state, "vq");
        vi = state_int(state, "vi");
        if ((secondary && !strcmp(secondary, "online")) != e->online || (vq >= 0 && vq != e->nvq) ||
            (vi >= 0 && vi != e->nvi))
                return svff_error_set(err, -EUCLEAN,
                                      "VF %u of PF %s: secondary controller %u is %s with %u VQ and %u VI, recorded "
                                      "%s with %d VQ and %d VI (changed behind svff's back?); provision the VF again",
                                      index, pf->address, e->scid, e->online ? "online" : "offline", e->nvq, e->nvi,
                                      strna(secondary), vq, vi);
        for (size_t i = 0; i < want_ns->n; i++) {
                struct ctrls cl;

                r = read_ns_ctrls(c, want_ns->v[i], &cl, err);
                if (r < 0)
                        return r;
                if (!ctrls_has(&cl, e->scid))
                        return svff_error_set(err, -EUCLEAN,
                                              "VF %u of PF %s: namespace %" PRIu32 " is no longer attached to its "
                                              "secondary controller %u (detached behind svff's back?); provision the "
                                              "VF again",
                                              index, pf->address, want_ns->v[i], e->scid);
        }
        /* exactly what was recorded: one more is another tenant's disk */
        r = strays_of(c, e->scid, want_ns, strays, err);
        if (r < 0)
                return r;
        if (strays->n > 0) {
                _cleanup_free_ char *names = ids_format(strays);

                return svff_error_set(err, -EUCLEAN,
                                      "VF %u of PF %s: namespace %s is attached to its secondary controller %u but "
                                      "not recorded for it (left by an earlier tenant, or attached by hand); "
                                      "provision the VF again",
                                      index, pf->address, strna(names), e->scid);
        }
        return 0;
}

static int nvme_release(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index, struct json_object *state,
                        struct svff_error *err) {
        _cleanup_free_ struct secondaries *l = malloc(sizeof(*l));
        _cleanup_free_ struct ids *ns = malloc(sizeof(*ns)), *priv = malloc(sizeof(*priv));
        const struct svff_nvme_secondary *e;
        const char *scrub = NULL;
        char buf[64];
        int scid, r;

        if (!l || !ns || !priv)
                return -ENOMEM;
        if (state && json_object_is_type(state, json_type_object))
                scrub = json_object_get_string(json_object_object_get(state, "scrub_on_release"));
        if (!state || state_u32s(state, "namespaces", ns) < 0 || state_u32s(state, "private", priv) < 0)
                return svff_error_set(err, -EINVAL, "VF %u of PF %s: the recorded NVMe state %s is not one svff wrote",
                                      index, pf->address,
                                      state ? json_object_to_json_string_ext(state, JSON_C_TO_STRING_PLAIN) : "null");
        r = read_secondaries(c, l, err);
        if (r < 0)
                return r;
        e = secondary_of(l, index);
        scid = e ? e->scid : state_int(state, "scid");

        /* only what svff attached */
        for (size_t i = 0; scid >= 0 && i < ns->n; i++) {
                r = c->ops->ns_attach(c->handle, ns->v[i], (uint16_t) scid, false);
                if (r != 0 && r != SVFF_NVME_SC_NS_NOT_ATTACHED && r != SVFF_NVME_SC_CTRL_LIST_INVALID)
                        return svff_error_set(err, status_errno(r),
                                              "Detaching namespace %" PRIu32 " from VF %u's secondary controller %d on "
                                              "%s (PF %s) failed: %s",
                                              ns->v[i], index, scid, c->ctrl, pf->address, status_str(r, buf));
        }

        /* a VF that is gone has nothing left to take offline */
        if (e && (e->online || e->nvq || e->nvi)) {
                r = virt(c, index, e, SVFF_NVME_VIRT_OFFLINE, SVFF_NVME_RES_VQ, 0, err);
                if (r < 0)
                        return r;
        }

        /* Recorded by an svff that formatted through the host's primary
         * controller; plan and provision refuse it now. The namespace
         * left the VF above: the next tenant gets nothing of it. */
        if (scrub && !strcmp(scrub, "format") && priv->n > 0)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "VF %u of PF %s: namespace %" PRIu32 " was not formatted (scrub_on_release): "
                                      SCRUB_WHY ". It is detached from the VF and still holds the guest's data: "
                                      "erase it by hand",
                                      index, pf->address, priv->v[0], scid >= 0 ? (unsigned) scid : index + 1u,
                                      c->ctrl);
        return 0;
}

/* The secondary controller's state, its queue counts when with_queues,
 * and the namespaces: "online 2VQ/1VI ns 1,5". */
static char *state_line(struct json_object *state, bool with_queues) {
        struct ids ns;
        const char *secondary;
        char *s = NULL;
        size_t len = 0;
        FILE *f;

        if (!state || !json_object_is_type(state, json_type_object))
                return strdup("-");
        secondary = json_object_get_string(json_object_object_get(state, "secondary"));
        f = open_memstream(&s, &len);
        if (!f)
                return NULL;
        fputs(secondary ? secondary : "unknown", f);
        if (with_queues && (state_int(state, "vq") >= 0 || state_int(state, "vi") >= 0))
                fprintf(f, " %dVQ/%dVI", state_int(state, "vq"), state_int(state, "vi"));
        if (state_u32s(state, "namespaces", &ns) == 0 && ns.n > 0) {
                fputs(" ns ", f);
                for (size_t i = 0; i < ns.n; i++)
                        fprintf(f, "%s%" PRIu32, i ? "," : "", ns.v[i]);
        }
        fclose(f);
        return s;
}

static char *nvme_describe(struct json_object *state) {
        return state_line(state, true);
}

/* "online ns 1,5", or the secondary controller's state when it is not
 * online: the queue counts are in describe's line. */
static char *nvme_summarize(struct json_object *state) {
        return state_line(state, false);
}

/* One flexible resource of inspect's "pf" ("vq", "vi"). */
static int capacity_resource(struct json_object *lines, struct json_object *pf, const char *key,
                             const char *what) {
        unsigned total = 0, primary = 0, assigned = 0, free_ = 0, per_vf = 0;
        struct json_object *o;

        if (!json_object_object_get_ex(pf, key, &o) || svff_json_get_unsigned(o, "total", &total) < 0)
                return 0;
        (void) svff_json_get_unsigned(o, "primary", &primary);
        (void) svff_json_get_unsigned(o, "assigned", &assigned);
        (void) svff_json_get_unsigned(o, "free", &free_);
        (void) svff_json_get_unsigned(o, "per_vf_max", &per_vf);
        return svff_class_line_add(lines, "flexible %s resources: %u free of %u (primary controller %u, "
                                   "secondaries %u; at most %u per VF)", what, free_, total, primary,
                                   assigned, per_vf);
}

/* Appends ", id" (or "id" first) to *list: 0 or -ENOMEM. */
static int id_list_add(char **list, int id) {
        char *t;

        if (asprintf(&t, "%s%s%d", *list ?: "", *list ? ", " : "", id) < 0)
                return -ENOMEM;
        free(*list);
        *list = t;
        return 0;
}

/* Whether a VF of inspect's "vfs" has namespace nsid attached. */
static bool vf_holds(struct json_object *vfs, int nsid) {
        if (!vfs || !json_object_is_type(vfs, json_type_object))
                return false;
        json_object_object_foreach(vfs, key, st) {
                struct json_object *a;

                (void) key;
                if (!json_object_object_get_ex(st, "namespaces", &a) || !json_object_is_type(a, json_type_array))
                        continue;
                for (size_t i = 0; i < json_object_array_length(a); i++)
                        if (json_object_get_int(json_object_array_get_idx(a, i)) == nsid)
                                return true;
        }
        return false;
}

static struct json_object *nvme_capacity(struct json_object *inspection, struct json_object *settings) {
        _cleanup_(json_object_putp) struct json_object *lines = json_object_new_array();
        struct json_object *pf, *nss;
        unsigned secondaries = 0;
        const char *virt = NULL;
        int r = 0;

        (void) settings;
        if (!lines)
                return NULL;
        if (!json_object_object_get_ex(inspection, "pf", &pf))
                return TAKE_PTR(lines);
        if (svff_json_get_string(pf, "virtualization", &virt) >= 0 && virt)
                r |= svff_class_line_add(lines, "virtualization management: %s",
                                         streq(virt, "oacs") ? "yes (OACS bit 7)"
                                                             : "not in OACS; Identify CNS 14h answers");
        r |= capacity_resource(lines, pf, "vq", "VQ (queue)");
        r |= capacity_resource(lines, pf, "vi", "VI (interrupt)");
        if (svff_json_get_unsigned(pf, "secondaries", &secondaries) >= 0)
                r |= svff_class_line_add(lines, "secondary controllers: %u", secondaries);
        if (json_object_object_get_ex(pf, "namespaces", &nss) && json_object_is_type(nss, json_type_array)) {
                size_t n = json_object_array_length(nss);
                _cleanup_free_ char *ids = NULL, *on_vfs = NULL, *unused = NULL;
                struct json_object *vfs = NULL;

                (void) json_object_object_get_ex(inspection, "vfs", &vfs);
                for (size_t i = 0; i < n; i++) {
                        int nsid = json_object_get_int(json_object_array_get_idx(nss, i));

                        if (id_list_add(&ids, nsid) < 0 ||
                            id_list_add(vf_holds(vfs, nsid) ? &on_vfs : &unused, nsid) < 0)
                                return NULL;
                }
                r |= n ? svff_class_line_add(lines, "namespaces: %zu (NSID %s); on VFs: %s; on none: %s", n, ids,
                                             on_vfs ?: "none", unused ?: "none")
                       : svff_class_line_add(lines, "namespaces: none");
        }
        return r < 0 ? NULL : TAKE_PTR(lines);
}

/* ---- every batch of commands behind ctrl_check() ------------------------ */

static int checked_inspect(struct svff_class_pf *c, const struct svff_pf *pf, struct json_object **ret,
                           struct svff_error *err) {
        int r = ctrl_check(c, err);

        return r < 0 ? r : nvme_inspect(c, pf, ret, err);
}

static int checked_plan(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                        struct svff_class_settings *const *settings, struct json_object **ret,
                        struct svff_error *err) {
        int r = ctrl_check(c, err);

        return r < 0 ? r : nvme_plan(c, pf, numvfs, settings, ret, err);
}

static int checked_prepare(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                           struct svff_class_settings *const *settings, struct svff_error *err) {
        int r = ctrl_check(c, err);

        return r < 0 ? r : nvme_prepare(c, pf, numvfs, settings, err);
}

static int checked_provision(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                             const struct svff_class_settings *settings, struct json_object *recorded, bool tenant,
                             struct json_object **ret, struct svff_error *err) {
        int r = ctrl_check(c, err);

        return r < 0 ? r : nvme_provision(c, pf, index, settings, recorded, tenant, ret, err);
}

static int checked_verify(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                          struct json_object *state, struct svff_error *err) {
        int r = ctrl_check(c, err);

        return r < 0 ? r : nvme_verify(c, pf, index, state, err);
}

static int checked_release(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                           struct json_object *state, struct svff_error *err) {
        int r = ctrl_check(c, err);

        return r < 0 ? r : nvme_release(c, pf, index, state, err);
}

const struct svff_class svff_class_nvme = {
        .name = "nvme",
        .match = nvme_match,
        .open = nvme_open,
        .close = nvme_close,
        .inspect = checked_inspect,
        .load = nvme_load,
        .unload = nvme_unload,
        .plan = checked_plan,
        .provision = checked_provision,
        .verify = checked_verify,
        .release = checked_release,
        .describe = nvme_describe,
        .summarize = nvme_summarize,
        .prepare = checked_prepare,
        .capacity = nvme_capacity,
        .wants_recorded_state = true,
};

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The QDMA class (Xilinx/AMD FPGAs with the out-of-tree qdma-pf and
 * qdma-vf drivers): the device's queue budget, shared by the PF and its
 * VFs, and the PF's queue count.
 *
 * Every function starts with 0 queues. The PF's count is
 * PF/qdma/qmax, written here. A VF's is asked of the PF over the mailbox
 * by the VF's driver, i.e. by the guest with passthrough: the host only
 * keeps room for it in the budget. A VF disable (numvfs 0, so every
 * reconf) wipes the VF's queue contexts, and a guest whose device was
 * paused across the reconf still believes it has them: its qdma-vf must
 * ask again. The state says so for each VF.
 *
 * Settings (policy defaults, merged with the assignment's):
 *   "qmax"     the PF's queue count (absent: left as it is)
 *   "vf_qmax"  queues kept for each VF's driver to ask for (default 0:
 *              none kept, the driver asks for what it wants from the
 *              free queues)
 *   "budget"   the device's queues (default 2048, the QDMA IP's maximum)
 * each at most QDMA_QUEUES_MAX.
 *
 * State of a VF: {"pf_qmax": N or absent, "vf_qmax": N,
 *                 "contexts": "reset"}. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "json-util.h"
#include "sysfs.h"

#define QDMA_BUDGET_DEFAULT 2048u
/* Far above any QDMA IP's queue count, low enough that no sum of them
 * overflows. */
#define QDMA_QUEUES_MAX 65536u
#define QDMA_VENDOR 0x10ee

struct svff_class_pf {
        struct svff_ctx *ctx;
        char address[SVFF_PCI_ADDR_STRLEN];
};

/* One VF's settings, loaded. qmax and budget are PF-wide: plan and
 * prepare pick them from the VFs' (the policy's, so the same in each). */
struct svff_class_settings {
        bool has_qmax;                  /* false: leave the PF's alone */
        bool has_budget;                /* false: the default */
        unsigned qmax;
        unsigned vf_qmax;
        unsigned budget;
};

/* The PF device ids of dma_ip_drivers' pci_ids.h: 9<pf><gen><width>
 * (QDMA soft IP) and b<pf><gen><width> (hard IP), PF 0-3, the low byte
 * naming the PCIe generation and lane width. */
static bool qdma_pf_id(uint16_t vendor, uint16_t device) {
        static const uint8_t widths[] = {
                0x11, 0x12, 0x14, 0x18, 0x1f, 0x21, 0x22, 0x24, 0x28, 0x2f,
                0x31, 0x32, 0x34, 0x38, 0x3f, 0x41, 0x42, 0x44, 0x48, 0x58,
        };

        if (vendor != QDMA_VENDOR)
                return false;
        if ((device >> 12) != 0x9 && (device >> 12) != 0xb)
                return false;
        if (((device >> 8) & 0xf) > 3)
                return false;
        for (size_t i = 0; i < ELEMENTSOF(widths); i++)
                if ((device & 0xff) == widths[i])
                        return true;
        return false;
}

/* A known QDMA PF id, or any PF bound to qdma-pf: the driver's id table
 * (and any new_id a policy's bitstream needed) is the authority. */
static bool qdma_match(struct svff_ctx *ctx, const struct svff_pf *pf) {
        (void) ctx;
        return qdma_pf_id(pf->vendor_id, pf->device_id) ||
               (pf->driver && strcmp(pf->driver, "qdma-pf") == 0);
}

/* One key of the settings into s: every value a count of queues. */
static int qdma_load_key(struct svff_class_settings *s, const char *key, struct json_object *val,
                         struct svff_error *err) {
        uint64_t v;
        int r;

        if (strcmp(key, "qmax") != 0 && strcmp(key, "vf_qmax") != 0 && strcmp(key, "budget") != 0)
                return svff_error_set(err, -EINVAL,
                                      "Unknown qdma setting '%s': use 'qmax', 'vf_qmax' or 'budget'",
                                      key);
        r = svff_json_to_u64(val, &v);
        if (r == -ERANGE && json_object_get_double(val) > 0)
                r = 0, v = UINT64_MAX;  /* beyond 64 bits: out of range below */
        if (r < 0)
                return svff_error_set(err, -EINVAL,
                                      "qdma setting '%s' takes a number of queues, not '%s'",
                                      key, json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN));
        if (v > QDMA_QUEUES_MAX)
                return svff_error_set(err, -ERANGE,
                                      "qdma setting '%s' %s is out of range: at most %u queues",
                                      key, json_object_to_json_string_ext(val, JSON_C_TO_STRING_PLAIN),
                                      QDMA_QUEUES_MAX);
        if (strcmp(key, "qmax") == 0) {
                s->qmax = v;
                s->has_qmax = true;
        } else if (strcmp(key, "vf_qmax") == 0)
                s->vf_qmax = v;
        else {
                if (v == 0)
                        return svff_error_set(err, -EINVAL, "qdma setting 'budget' must be at least 1");
                s->budget = v;
                s->has_budget = true;
        }
        return 0;
}

/* Nothing in QDMA settings depends on the device or the VF: c and
 * index change nothing. */
static int qdma_load(const struct svff_class_pf *c, unsigned index, struct json_object *settings,
                     struct svff_class_settings **ret, struct svff_error *err) {
        struct svff_class_settings s = { .budget = QDMA_BUDGET_DEFAULT }, *loaded;
        int r;

        (void) c;
        (void) index;
        if (settings && !json_object_is_type(settings, json_type_object))
                return svff_error_set(err, -EINVAL, "The qdma class settings must be a JSON object");
        if (settings) {
                json_object_object_foreach(settings, key, val) {
                        r = qdma_load_key(&s, key, val, err);
                        if (r < 0)
                                return r;
                }
        }
        if (s.has_qmax && s.qmax > s.budget)
                return svff_error_set(err, -EINVAL,
                                      "qdma setting 'qmax' %u exceeds the device's budget of %u queues",
                                      s.qmax, s.budget);

        loaded = malloc(sizeof(*loaded));
        if (!loaded)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        *loaded = s;
        *ret = loaded;
        return 0;
}

static void qdma_unload(struct svff_class_settings *s) {
        free(s);
}

static int qdma_open(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_class_pf **ret,
                     struct svff_error *err) {
        struct svff_class_pf *c = calloc(1, sizeof(*c));

        if (!c)
                return svff_error_set(err, -ENOMEM, "Out of memory opening %s", pf->address);
        c->ctx = svff_ctx_ref(ctx);
        memcpy(c->address, pf->address, sizeof(c->address));
        *ret = c;
        return 0;
}

static void qdma_close(struct svff_class_pf *c) {
        if (!c)
                return;
        svff_ctx_unref(c->ctx);
        free(c);
}

/* A function's qmax: -ENOENT when its qdma/ directory is absent (not
 * bound to the qdma driver, e.g. a VF on vfio-pci). */
static int qdma_read_qmax(struct svff_class_pf *c, const char *address, unsigned *ret) {
        _cleanup_free_ char *path = NULL;
        uint64_t v;
        int r;

        if (asprintf(&path, "bus/pci/devices/%s/qdma/qmax", address) < 0)
                return -ENOMEM;
        r = svff_sysfs_read_u64(svff_ctx_get_rootfd(c->ctx), path, &v);
        if (r < 0)
                return r;
        if (v > UINT32_MAX)
                return -ERANGE;
        *ret = (unsigned) v;
        return 0;
}

/* The started queues of a function by the driver's names, as a JSON
 * array (empty when the driver lists none here). */
static int qdma_read_queues(struct svff_class_pf *c, const char *address, struct json_object **ret) {
        _cleanup_free_ char *path = NULL, *text = NULL;
        struct json_object *a;
        char *save = NULL;
        int r;

        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        if (asprintf(&path, "bus/pci/devices/%s/qdma/queues", address) < 0) {
                json_object_put(a);
                return -ENOMEM;
        }
        r = svff_sysfs_read(svff_ctx_get_rootfd(c->ctx), path, &text);
        if (r >= 0)
                for (char *t = strtok_r(text, "\n", &save); t; t = strtok_r(NULL, "\n", &save))
                        json_object_array_add(a, json_object_new_string(t));
        *ret = a;
        return 0;
}

static struct json_object *json_unsigned(unsigned v) {
        return json_object_new_int64((int64_t) v);
}

static int qdma_inspect(struct svff_class_pf *c, const struct svff_pf *pf, struct json_object **ret,
                        struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = NULL, *pfo = NULL, *vfs = NULL;
        struct json_object *queues = NULL;
        unsigned v;
        int r;

        o = json_object_new_object();
        pfo = json_object_new_object();
        vfs = json_object_new_object();
        if (!o || !pfo || !vfs)
                return svff_error_set(err, -ENOMEM, "Out of memory inspecting %s", pf->address);
        r = qdma_read_qmax(c, pf->address, &v);
        if (r < 0 && r != -ENOENT)
                return svff_error_set_errno(err, r, "Cannot read the queue count (qdma/qmax) of %s",
                                            pf->address);
        if (r >= 0)
                json_object_object_add(pfo, "qmax", json_unsigned(v));
        if (qdma_read_queues(c, pf->address, &queues) >= 0)
                json_object_object_add(pfo, "queues", queues);

        for (size_t i = 0; i < pf->n_vfs; i++) {
                struct json_object *vo = json_object_new_object();
                char key[16];

                if (!vo)
                        return svff_error_set(err, -ENOMEM, "Out of memory inspecting %s", pf->address);
                /* readable only while the host's qdma-vf drives it */
                if (qdma_read_qmax(c, pf->vfs[i].address, &v) >= 0)
                        json_object_object_add(vo, "qmax", json_unsigned(v));
                snprintf(key, sizeof(key), "%u", pf->vfs[i].index);
                json_object_object_add(vfs, key, vo);
        }
        json_object_object_add(o, "pf", TAKE_PTR(pfo));
        json_object_object_add(o, "vfs", TAKE_PTR(vfs));
        *ret = TAKE_PTR(o);
        return 0;
}

/* Adds VF index's "reserve-queues" step to a plan's steps. */
static int qdma_plan_step(struct json_object *steps, unsigned index, unsigned vf_qmax) {
        _cleanup_(json_object_putp) struct json_object *step = NULL;
        _cleanup_free_ char *detail = NULL;

        step = json_object_new_object();
        if (!step || asprintf(&detail, "%u queues kept for the guest's qdma-vf to request", vf_qmax) < 0)
                return -ENOMEM;
        json_object_object_add(step, "vf", json_unsigned(index));
        json_object_object_add(step, "action", json_object_new_string("reserve-queues"));
        json_object_object_add(step, "detail", json_object_new_string(detail));
        if (json_object_array_add(steps, step) < 0)
                return -ENOMEM;
        TAKE_PTR(step);
        return 0;
}

static int qdma_plan(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                     struct svff_class_settings *const *settings, struct json_object **ret,
                     struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = NULL, *steps = NULL;
        struct svff_class_settings pfs = { .budget = QDMA_BUDGET_DEFAULT };
        unsigned long long vf_total = 0, pf_qmax;
        _cleanup_free_ char *needs = NULL;
        unsigned live = 0;

        steps = json_object_new_array();
        if (!steps)
                return svff_error_set(err, -ENOMEM, "Out of memory planning %s", pf->address);

        /* The PF's qmax and the budget are the policy's, the same in every
         * VF's merged settings: the qmax is the first VF's that names one,
         * the budget the last's that names one (else VF 0's default). */
        for (unsigned i = 0; i < numvfs; i++) {
                const struct svff_class_settings *vs = settings[i];

                if (i == 0 || vs->has_budget)
                        pfs.budget = vs->budget;
                if (!pfs.has_qmax) {
                        pfs.has_qmax = vs->has_qmax;
                        pfs.qmax = vs->qmax;
                }
                vf_total += vs->vf_qmax;
                if (vs->vf_qmax > 0 && qdma_plan_step(steps, i, vs->vf_qmax) < 0)
                        return svff_error_set(err, -ENOMEM, "Out of memory planning %s", pf->address);
        }

        if (pfs.has_qmax)
                pf_qmax = pfs.qmax;
        else if (qdma_read_qmax(c, pf->address, &live) >= 0)
                pf_qmax = live;
        else
                pf_qmax = 0;

        if (pf_qmax + vf_total > pfs.budget)
                return svff_error_set(err, -ENOSPC,
                                      "%u VFs need %llu queues and the PF %llu: %llu in all, beyond the "
                                      "device's budget of %u queues on %s; lower 'vf_qmax' or 'qmax', "
                                      "or ask for fewer VFs",
                                      numvfs, vf_total, pf_qmax, pf_qmax + vf_total, pfs.budget, pf->address);

        o = json_object_new_object();
        if (!o || asprintf(&needs, "%llu of %u queues: PF %llu, VFs %llu", pf_qmax + vf_total,
                           pfs.budget, pf_qmax, vf_total) < 0)
                return svff_error_set(err, -ENOMEM, "Out of memory planning %s", pf->address);
        json_object_object_add(o, "steps", TAKE_PTR(steps));
        json_object_object_add(o, "needs", json_object_new_string(needs));
        if (pfs.has_qmax)
                json_object_object_add(o, "pf_qmax", json_unsigned(pfs.qmax));
        json_object_object_add(o, "budget", json_unsigned(pfs.budget));
        json_object_object_add(o, "vf_queues", json_object_new_int64((int64_t) vf_total));
        *ret = TAKE_PTR(o);
        return 0;
}

/* Sets the PF's qmax once: a second VF's provision finds it done. Busy
 * queues are named and the write is never retried: whoever runs them
 * decides when they stop. */
static int qdma_set_pf_qmax(struct svff_class_pf *c, const struct svff_pf *pf, unsigned qmax,
                            struct svff_error *err) {
        _cleanup_free_ char *path = NULL, *value = NULL;
        unsigned live;
        int r;

        r = qdma_read_qmax(c, pf->address, &live);
        if (r == -ENOENT)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "%s has no qdma/qmax: bind it to the qdma-pf driver first",
                                      pf->address);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot read the queue count (qdma/qmax) of %s",
                                            pf->address);
        if (live == qmax)
                return 0;
        if (asprintf(&path, "bus/pci/devices/%s/qdma/qmax", pf->address) < 0 ||
            asprintf(&value, "%u", qmax) < 0)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        r = svff_sysfs_write(svff_ctx_get_rootfd(c->ctx), path, value);
        if (r == -EBUSY) {
                _cleanup_(json_object_putp) struct json_object *q = NULL;
                _cleanup_free_ char *names = NULL;
                size_t n = 0;

                if (qdma_read_queues(c, pf->address, &q) >= 0)
                        n = json_object_array_length(q);
                for (size_t i = 0; i < n; i++) {
                        char *joined = NULL;
                        if (asprintf(&joined, "%s%s'%s'", names ?: "", names ? ", " : "",
                                     json_object_get_string(json_object_array_get_idx(q, i))) < 0)
                                return svff_error_set(err, -ENOMEM, "Out of memory");
                        free(names);
                        names = joined;
                }
                if (names)
                        return svff_error_set(err, -EBUSY,
                                              "Cannot change the queue count of %s from %u to %u: %zu "
                                              "queue%s active on it (%s); stop %s and run again",
                                              pf->address, live, qmax, n, n == 1 ? " is" : "s are",
                                              names, n == 1 ? "it" : "them");
                return svff_error_set(err, -EBUSY,
                                      "Cannot change the queue count of %s from %u to %u: queues are "
                                      "active on it (list them with 'dma-ctl ... q list'); stop them and "
                                      "run again",
                                      pf->address, live, qmax);
        }
        if (r == -ENOSPC || r == -EINVAL)
                return svff_error_set_errno(err, r,
                                            "The device refused %u queues for %s (qdma/qmax, now %u): "
                                            "its budget has no room",
                                            qmax, pf->address, live);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot set the queue count (qdma/qmax) of %s to %u",
                                            pf->address, qmax);
        return 0;
}

/* The PF's qmax before any VF exists (the order the driver's guide
 * gives: qmax, then numvfs). Provision sets it again, idempotently, for
 * callers that do not prepare. */
static int qdma_prepare(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                        struct svff_class_settings *const *settings, struct svff_error *err) {
        for (unsigned i = 0; i < numvfs; i++)
                if (settings[i]->has_qmax)
                        return qdma_set_pf_qmax(c, pf, settings[i]->qmax, err);
        return 0;
}

/* recorded and tenant change nothing: a VF's queues are its guest's to
 * ask for again after every enable (the state's "contexts"). */
static int qdma_provision(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                          const struct svff_class_settings *settings, struct json_object *recorded,
                          bool tenant, struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *st = NULL;
        int r;

        (void) index;
        (void) recorded;
        (void) tenant;
        if (settings->has_qmax) {
                r = qdma_set_pf_qmax(c, pf, settings->qmax, err);
                if (r < 0)
                        return r;
        }

        st = json_object_new_object();
        if (!st)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        if (settings->has_qmax)
                json_object_object_add(st, "pf_qmax", json_unsigned(settings->qmax));
        json_object_object_add(st, "vf_qmax", json_unsigned(settings->vf_qmax));
        /* a VF that was just enabled has no queue contexts: its driver,
         * the guest's, must ask for them */
        json_object_object_add(st, "contexts", json_object_new_string("reset"));
        *ret = TAKE_PTR(st);
        return 0;
}

static int qdma_verify(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                       struct json_object *state, struct svff_error *err) {
        const struct svff_vf *vf = svff_pf_vf_at(pf, index);
        unsigned want, live, vf_want, vf_live;
        int r;

        if (state && svff_json_get_unsigned(state, "pf_qmax", &want) == 0) {
                r = qdma_read_qmax(c, pf->address, &live);
                if (r < 0)
                        return svff_error_set_errno(err, r, "Cannot read the queue count (qdma/qmax) of %s",
                                                    pf->address);
                if (live != want)
                        return svff_error_set(err, -EUCLEAN,
                                              "The queue count of %s is %u, not %u as provisioned",
                                              pf->address, live, want);
        }
        /* A VF's own count is readable only while the host drives it
         * (qdma-vf by policy); its driver may ask for less than was kept,
         * never more. With nothing kept (vf_qmax 0) svff set no room
         * aside and holds the VF to no count: what its driver asked for
         * is the PF driver's to grant from its budget, not drift. */
        if (vf && state && svff_json_get_unsigned(state, "vf_qmax", &vf_want) == 0 && vf_want > 0 &&
            qdma_read_qmax(c, vf->address, &vf_live) >= 0 && vf_live > vf_want)
                return svff_error_set(err, -EUCLEAN,
                                      "VF %u of %s (%s) holds %u queues, more than the %u kept for it",
                                      index, pf->address, vf->address, vf_live, vf_want);
        return 0;
}

/* The VF's queues go back to the PF when its driver says bye over the
 * mailbox (or the VF is disabled); there is nothing for the host to
 * undo, and the PF's count is the PF's, not the VF's. */
static int qdma_release(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                        struct json_object *state, struct svff_error *err) {
        (void) c;
        (void) pf;
        (void) index;
        (void) state;
        (void) err;
        return 0;
}

static char *qdma_describe(struct json_object *state) {
        unsigned vf_qmax = 0, pf_qmax;
        const char *contexts = NULL;
        char *s = NULL, *pf = NULL;

        if (!state)
                return strdup("no queues kept");
        (void) svff_json_get_unsigned(state, "vf_qmax", &vf_qmax);
        (void) svff_json_get_string(state, "contexts", &contexts);
        if (svff_json_get_unsigned(state, "pf_qmax", &pf_qmax) == 0 && asprintf(&pf, ", PF qmax %u", pf_qmax) < 0)
                return NULL;
        if (contexts && strcmp(contexts, "reset") == 0) {
                if (asprintf(&s, "%u queues kept%s; queue contexts reset: the guest's qdma-vf must "
                             "request them again (even after a pause)", vf_qmax, pf ?: "") < 0)
                        s = NULL;
        } else if (asprintf(&s, "%u queues kept%s", vf_qmax, pf ?: "") < 0)
                s = NULL;
        free(pf);
        return s;
}

static char *qdma_summarize(struct json_object *state) {
        unsigned vf_qmax = 0;
        char *s;

        (void) svff_json_get_unsigned(state, "vf_qmax", &vf_qmax);
        return asprintf(&s, "qmax %u", vf_qmax) < 0 ? NULL : s;
}

static struct json_object *qdma_capacity(struct json_object *inspection, struct json_object *settings) {
        _cleanup_(json_object_putp) struct json_object *lines = json_object_new_array();
        struct json_object *pf = NULL, *vfs = NULL;
        unsigned qmax, pf_qmax = 0, n_read = 0, n_vfs = 0, budget = QDMA_BUDGET_DEFAULT;
        unsigned long long used;
        bool pf_read;
        int r = 0;

        if (!lines)
                return NULL;
        (void) json_object_object_get_ex(inspection, "pf", &pf);
        (void) json_object_object_get_ex(inspection, "vfs", &vfs);
        pf_read = pf && svff_json_get_unsigned(pf, "qmax", &pf_qmax) >= 0;
        if (pf_read)
                r |= svff_class_line_add(lines, "PF queues (qdma/qmax): %u", pf_qmax);
        else
                r |= svff_class_line_add(lines, "PF queues: its qdma/qmax cannot be read (is qdma-pf bound?)");
        used = pf_qmax;
        if (vfs && json_object_is_type(vfs, json_type_object)) {
                json_object_object_foreach(vfs, key, vo) {
                        (void) key;
                        n_vfs++;
                        if (svff_json_get_unsigned(vo, "qmax", &qmax) >= 0) {
                                n_read++;
                                used += qmax;
                        }
                }
        }
        if (n_vfs > 0)
                r |= svff_class_line_add(lines, "VF queues as read now: %llu, from %u of %u VFs (a VF's qdma/qmax "
                                         "reads only while the host's qdma-vf drives it)", used - pf_qmax,
                                         n_read, n_vfs);
        if (settings)
                (void) svff_json_get_unsigned(settings, "budget", &budget);
        r |= svff_class_line_add(lines, "queue budget: %u (%s), %llu free as read", budget,
                                 settings && json_object_object_get_ex(settings, "budget", NULL)
                                         ? "the policy's"
                                         : "the QDMA IP's maximum; a policy's \"budget\" sets it",
                                 used < budget ? budget - used : 0);
        return r < 0 ? NULL : TAKE_PTR(lines);
}

const struct svff_class svff_class_qdma = {
        .name = "qdma",
        .match = qdma_match,
        .open = qdma_open,
        .close = qdma_close,
        .inspect = qdma_inspect,
        .load = qdma_load,
        .unload = qdma_unload,
        .plan = qdma_plan,
        .prepare = qdma_prepare,
        .provision = qdma_provision,
        .verify = qdma_verify,
        .release = qdma_release,
        .describe = qdma_describe,
        .summarize = qdma_summarize,
        .capacity = qdma_capacity,
};

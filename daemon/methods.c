/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "allowlist.h"
#include "context.h"
#include "flash-hook.h"
#include "assign.h"
#include "autoinit.h"
#include "busy.h"
#include "classes.h"
#include "interface.h"
#include "iommu.h"
#include "json-util.h"
#include "log.h"
#include "methods.h"
#include "operations.h"
#include "params.h"
#include "sha256.h"
#include "reconcile.h"
#include "reconfigure.h"
#include "sysfs.h"

static uint64_t now(clockid_t clock) {
        struct timespec ts;

        clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* ---- org.varlink.service ---- */

static void method_get_info(struct manager *m, struct call *call, _unused_ void *params) {
        struct json_object *p, *ifaces;

        p = json_object_new_object();
        ifaces = json_object_new_array();
        json_object_array_add(ifaces, json_object_new_string("org.varlink.service"));
        json_object_array_add(ifaces, json_object_new_string(SVFF_INTERFACE));
        json_object_object_add(p, "vendor", json_object_new_string("svff"));
        json_object_object_add(p, "product", json_object_new_string("svffd"));
        json_object_object_add(p, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(p, "url", json_object_new_string(PACKAGE_URL));
        json_object_object_add(p, "interfaces", ifaces);
        call_reply(call, p);
        json_object_put(p);
}

struct description_params {
        const char *interface;
};

static const struct param description_param_table[] = {
        { "interface", PARAM_STRING, true, offsetof(struct description_params, interface), 0,
          "the name of an interface" },
        PARAM_END,
};

static void method_get_interface_description(struct manager *m, struct call *call, void *params) {
        const char *iface = ((const struct description_params *) params)->interface, *text;
        struct json_object *p;

        if (streq(iface, SVFF_INTERFACE))
                text = svff_interface_description;
        else if (streq(iface, "org.varlink.service"))
                text = varlink_service_interface_description;
        else {
                call_errorf(call, SVFF_VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", iface, NULL);
                return;
        }
        p = json_object_new_object();
        json_object_object_add(p, "description", json_object_new_string(text));
        call_reply(call, p);
        json_object_put(p);
}

/* ---- io.svff reads ---- */

static void method_ping(struct manager *m, struct call *call, _unused_ void *params) {
        call_reply(call, NULL);
}

static struct json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

static struct json_object *hex(unsigned v, int width) {
        char buf[16];

        snprintf(buf, sizeof(buf), "%0*x", width, v);
        return json_object_new_string(buf);
}

/* The VF's class record, with the class's one line for list's table.
 * A QDMA VF its host driver holds shows the queues it holds now: what
 * svff kept for it is only room its driver may ask for. */
static struct json_object *json_vf_class(struct manager *m, const struct svff_vf *vf) {
        struct json_object *rec = classes_vf_record(m, vf->address), *o, *v;
        const char *name = NULL;
        char *d, *s;

        if (!rec || svff_json_get_string(rec, "name", &name) < 0)
                return NULL;
        o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_add(o, "settings", json_object_object_get_ex(rec, "settings", &v) ? json_object_get(v)
                                                                                           : NULL);
        v = classes_vf_state(m, vf->address);
        json_object_object_add(o, "state", json_object_get(v));
        d = classes_describe(name, v);
        s = classes_summarize(name, v);
        if (streq(name, "qdma") && vf->has_qdma_qmax) {
                char *kept = d;

                if (asprintf(&d, "%u queues held by its driver %s now; %s", vf->qdma_qmax, vf->driver,
                             kept ?: "none kept") < 0)
                        d = NULL;
                free(kept);
                free(s);
                if (asprintf(&s, "qmax %u", vf->qdma_qmax) < 0)
                        s = NULL;
        }
        json_object_object_add(o, "description", str_or_null(d));
        json_object_object_add(o, "summary", str_or_null(s));
        free(d);
        free(s);
        return o;
}

static struct json_object *json_vf(struct manager *m, const struct svff_pf *pf, const struct svff_vf *vf) {
        struct json_object *o = json_object_new_object(), *rec = NULL, *assigned = NULL;
        _cleanup_free_ char *unassignable = svff_iommu_vf_unassignable(vf->address, vf->iommu_group, pf->address,
                                                                        pf->iommu_group);
        const char *orig = NULL;
        bool managed;

        if (!o)
                return NULL;
        managed = json_object_object_get_ex(svff_store_vfs(m->store), vf->address, &rec);
        if (managed)
                (void) svff_json_get_string_or_null(rec, "original_driver", &orig);
        if (json_object_object_get_ex(svff_store_assignments(m->store), vf->address, &assigned))
                assigned = json_object_get(assigned);

        json_object_object_add(o, "address", json_object_new_string(vf->address));
        json_object_object_add(o, "index", json_object_new_int64(vf->index));
        json_object_object_add(o, "driver", str_or_null(vf->driver));
        json_object_object_add(o, "driver_override", str_or_null(vf->driver_override));
        json_object_object_add(o, "iommu_group",
                               vf->iommu_group >= 0 ? json_object_new_int(vf->iommu_group) : NULL);
        json_object_object_add(o, "unassignable", str_or_null(unassignable));
        json_object_object_add(o, "recorded", json_object_new_boolean(managed));
        json_object_object_add(o, "managed", json_object_new_boolean(managed));
        json_object_object_add(o, "original_driver", str_or_null(orig));
        json_object_object_add(o, "assigned_to", assigned);
        json_object_object_add(o, "qdma_qmax", vf->has_qdma_qmax ? json_object_new_int64(vf->qdma_qmax) : NULL);
        json_object_object_add(o, "class", managed ? json_vf_class(m, vf) : NULL);
        return o;
}

/* The desired state of a PF record, as the interface types it: the
 * record's other fields (the owner) are shown on their own. */
static struct json_object *json_desired(struct manager *m, const char *pf) {
        struct json_object *rec, *o, *v;

        if (!json_object_object_get_ex(svff_store_pfs(m->store), pf, &rec))
                return NULL;
        o = json_object_new_object();
        if (!o)
                return NULL;
        if (json_object_object_get_ex(rec, "numvfs", &v))
                json_object_object_add(o, "numvfs", json_object_get(v));
        if (json_object_object_get_ex(rec, "vf_driver", &v))
                json_object_object_add(o, "vf_driver", json_object_get(v));
        return o;
}

/* The image the store says svff last flashed to the PF, and whether the
 * file at its path is still that one. An lstat, never a read: the
 * image may be large and List must not wait. */
static struct json_object *json_image(struct manager *m, const char *pf) {
        _cleanup_(json_object_putp) struct json_object *now = NULL;
        struct json_object *stored = svff_store_get_pf_image(m->store, pf), *o;
        const char *path = NULL, *sha256 = NULL;
        struct stat st;
        bool unchanged = false;

        if (!stored || svff_json_get_string(stored, "path", &path) < 0 || !path)
                return NULL;
        if (m->config.flash_image_dir &&
            svff_flash_image_stat(m->config.flash_image_dir, path, &st, NULL) >= 0 &&
            (now = svff_flash_image_identity(path, &st)))
                unchanged = svff_flash_image_same(stored, now);
        o = json_object_new_object();
        if (!o)
                return NULL;
        json_object_object_add(o, "path", json_object_new_string(path));
        json_object_object_add(o, "unchanged", json_object_new_boolean(unchanged));
        if (svff_json_get_string(stored, "sha256", &sha256) >= 0 && svff_sha256_hex_valid(sha256))
                json_object_object_add(o, "sha256", json_object_new_string(sha256));
        return o;
}

/* Why pf is its last known state rather than what sysfs says now: the
 * sriov_numvfs write in the kernel, which a read would wait for, and the
 * operation behind it; or the operation changing it, which discovery
 * leaves to it (its picture is carried over from before). NULL when pf
 * was read as it is and nothing is changing it. */
static struct json_object *json_changing(struct manager *m, const struct svff_pf *pf) {
        struct operation *op;
        char buf[512];

        if (pf->numvfs_unread_since) {
                snprintf(buf, sizeof(buf), "its sriov_numvfs has not answered a read for %llu s: another process "
                         "is changing the VF count (or the PF's driver) and the kernel holds the PF until it "
                         "ends; shown as last read",
                         (unsigned long long) ((svff_now_usec() - pf->numvfs_unread_since) / USEC_PER_SEC));
                return json_object_new_string(buf);
        }
        op = manager_find_operation(m, pf->address);
        if (!pf->numvfs_pending) {
                /* No phase: List's answer is cached until the snapshot
                 * or the store changes, and a phase changes before. An
                 * operation's start and end change the store. */
                if (!op)
                        return NULL;
                snprintf(buf, sizeof(buf), "%s in progress; shown as read %s", op->kind,
                         snapshot_cache_pf_behind(m->snapshots, pf->address) ? "before its latest step"
                                                                              : "last");
                return json_object_new_string(buf);
        }
        if (op)
                snprintf(buf, sizeof(buf), "%s in progress (phase %s): sriov_numvfs is being set to %s; shown as last "
                         "read", op->kind, op->phase, pf->numvfs_pending);
        else
                snprintf(buf, sizeof(buf), "a write of %s to sriov_numvfs %sis still in the kernel; shown as last "
                         "read", pf->numvfs_pending,
                         pf->numvfs_pending_late ? "passed its deadline (stuck writes in status) and " : "");
        return json_object_new_string(buf);
}

struct json_object *json_pf(struct manager *m, const struct svff_pf *pf) {
        struct json_object *o = json_object_new_object(), *vfs, *desired;
        const struct svff_policy *pol;
        const char *owner;
        char buf[256];

        if (!o)
                return NULL;
        desired = json_desired(m, pf->address);
        pol = svff_config_find_policy(&m->config, pf->address, pf->vendor_id, pf->device_id, pf->netdev);
        owner = manager_pf_owner(m, pf->address, pol, buf, sizeof(buf));

        json_object_object_add(o, "address", json_object_new_string(pf->address));
        json_object_object_add(o, "vendor_id", hex(pf->vendor_id, 4));
        json_object_object_add(o, "device_id", hex(pf->device_id, 4));
        json_object_object_add(o, "vendor_name", str_or_null(pf->vendor_name));
        json_object_object_add(o, "device_name", str_or_null(pf->device_name));
        json_object_object_add(o, "vendor", str_or_null(pf->vendor_name));
        json_object_object_add(o, "device", str_or_null(pf->device_name));
        json_object_object_add(o, "pci_class", hex(pf->class, 6));
        json_object_object_add(o, "class", hex(pf->class, 6));
        json_object_object_add(o, "totalvfs", json_object_new_int64(pf->totalvfs));
        json_object_object_add(o, "numvfs", json_object_new_int64(pf->numvfs));
        json_object_object_add(o, "changing", json_changing(m, pf));
        json_object_object_add(o, "vf_device_id", hex(pf->vf_device_id, 4));
        json_object_object_add(o, "driver", str_or_null(pf->driver));
        json_object_object_add(o, "autoprobe", json_object_new_boolean(pf->autoprobe));
        json_object_object_add(o, "numa_node",
                               pf->numa_node >= 0 ? json_object_new_int(pf->numa_node) : NULL);
        json_object_object_add(o, "iommu_group",
                               pf->iommu_group >= 0 ? json_object_new_int(pf->iommu_group) : NULL);
        json_object_object_add(o, "netdev", str_or_null(pf->netdev));
        json_object_object_add(o, "desired", desired);
        json_object_object_add(o, "owner", str_or_null(owner));
        json_object_object_add(o, "policy", pol ? json_object_new_string(pol->name) : NULL);
        /* Whether attach may pick this PF's VFs from the pool. */
        json_object_object_add(o, "pool", json_object_new_boolean(!pol || pol->pool));
        {
                _cleanup_free_ char *why = NULL;
                int u = svff_allowlist_check_pf(m->config.manage, m->config.manage_origin, m->ctx, pf, &why);

                json_object_object_add(o, "unmanaged", u != 0 ? json_object_new_string(why ?: "not managed") : NULL);
        }

        json_object_object_add(o, "image", json_image(m, pf->address));
        vfs = json_object_new_array_ext((int) pf->n_vfs);
        for (size_t i = 0; i < pf->n_vfs; i++)
                json_object_array_add(vfs, json_vf(m, pf, &pf->vfs[i]));
        json_object_object_add(o, "vfs", vfs);
        return o;
}

/* PFs the store records that the host does not have (removed, or not
 * back yet): each with its desired state, its VF records and their
 * assignments, all kept. */
static struct json_object *json_absent(struct manager *m) {
        struct json_object *a = json_object_new_array();
        struct snapshot *s = m->snapshot;

        json_object_object_foreach(svff_store_pfs(m->store), pf, rec) {
                struct json_object *o, *vfs;

                if (snapshot_pf(s, pf))
                        continue;
                o = json_object_new_object();
                vfs = json_object_new_array();
                json_object_object_foreach(svff_store_vfs(m->store), vf, vrec) {
                        struct json_object *v, *asg = NULL;
                        const char *vpf = NULL, *orig = NULL;

                        if (svff_json_get_string(vrec, "pf", &vpf) < 0 || !streq(vpf, pf))
                                continue;
                        (void) svff_json_get_string_or_null(vrec, "original_driver", &orig);
                        if (json_object_object_get_ex(svff_store_assignments(m->store), vf, &asg))
                                asg = json_object_get(asg);
                        v = json_object_new_object();
                        json_object_object_add(v, "address", json_object_new_string(vf));
                        json_object_object_add(v, "original_driver", str_or_null(orig));
                        json_object_object_add(v, "assigned_to", asg);
                        json_object_array_add(vfs, v);
                }
                (void) rec;
                json_object_object_add(o, "address", json_object_new_string(pf));
                json_object_object_add(o, "desired", json_desired(m, pf));
                json_object_object_add(o, "owner", str_or_null(svff_store_get_pf_owner(m->store, pf)));
                json_object_object_add(o, "vfs", vfs);
                json_object_array_add(a, o);
        }
        return a;
}

/* Of gone (reconcile_gone()), the assignments of PF pf. */
static struct json_object *json_gone(struct json_object *gone, const char *pf) {
        struct json_object *a = json_object_new_array();
        const char *of;

        for (size_t i = 0; a && gone && i < json_object_array_length(gone); i++) {
                struct json_object *g = json_object_array_get_idx(gone, i);

                if (svff_json_get_string(g, "pf", &of) >= 0 && of && streq(of, pf))
                        json_object_array_add(a, json_object_get(g));
        }
        return a;
}

/* Whether a PF in s is its last known state: what Changing says of it
 * follows the operations, which the cached reply does not. */
static bool snapshot_has_pending(const struct snapshot *s) {
        for (size_t i = 0; i < s->n_pfs; i++)
                if (svff_pf_is_unread(s->pfs[i]))
                        return true;
        return false;
}

/* List's and Show's one parameter, decoded by the dispatcher. */
struct pf_param {
        char pf[SVFF_PCI_ADDR_STRLEN];          /* "": not given */
};

static void method_list(struct manager *m, struct call *call, void *params) {
        const struct pf_param *param = params;
        struct snapshot *s = m->snapshot;
        struct json_object *p, *pfs, *gone;
        const char *filter = *param->pf ? param->pf : NULL;
        struct blob *b;
        char *msg = NULL;
        size_t len;
        bool cacheable;
        int r;

        if (s->error < 0) {
                call_errorf(call, SVFF_ERROR_OPERATION_FAILED, "device", m->config.sysfs_root,
                            "Discovering PFs failed: %s", strna(s->error_message));
                return;
        }
        cacheable = !filter && !snapshot_has_pending(s);

        /* The whole-host reply is encoded once per (snapshot, store
         * generation): under many clients, List is a memcpy. */
        if (cacheable && m->list_cache && m->list_cache_snapshot_id == snapshot_cache_id(m->snapshots) &&
            m->list_cache_generation == svff_store_generation(m->store)) {
                call_reply_blob(call, m->list_cache);
                return;
        }

        gone = reconcile_gone(m, false);
        pfs = json_object_new_array_ext((int) s->n_pfs);
        for (size_t i = 0; i < s->n_pfs; i++)
                if (!filter || streq(filter, s->pfs[i]->address)) {
                        struct json_object *o = json_pf(m, s->pfs[i]);

                        json_object_object_add(o, "gone", json_gone(gone, s->pfs[i]->address));
                        json_object_array_add(pfs, o);
                }
        json_object_put(gone);
        if (filter && json_object_array_length(pfs) == 0) {
                json_object_put(pfs);
                call_errorf(call, SVFF_ERROR_NO_SUCH_DEVICE, "device", filter,
                            "No SR-IOV PF %s under %s; 'svffctl list' shows the PFs there are.",
                            filter, m->config.sysfs_root);
                return;
        }
        p = json_object_new_object();
        json_object_object_add(p, "pfs", pfs);
        if (!filter)
                json_object_object_add(p, "absent", json_absent(m));
        r = svff_varlink_encode_reply(p, false, &msg, &len);
        json_object_put(p);
        if (r < 0) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Failed to encode the reply.");
                return;
        }
        b = blob_new(msg, len);
        if (!b) {
                free(msg);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        call_reply_blob(call, b);
        if (cacheable) {
                blob_unref(m->list_cache);
                m->list_cache = blob_ref(b);
                m->list_cache_snapshot_id = snapshot_cache_id(m->snapshots);
                m->list_cache_generation = svff_store_generation(m->store);
        }
        blob_unref(b);
}

static const struct param list_param_table[] = {
        { "pf", PARAM_ADDRESS, false, offsetof(struct pf_param, pf), 0, NULL },
        PARAM_END,
};

/* Each present PF's count and who owns it (see autoinit.h), with the
 * owning policy's last refusal. */
static struct json_object *json_owners(struct manager *m) {
        struct json_object *a = json_object_new_array();
        struct snapshot *s = m->snapshot;

        for (size_t i = 0; a && s && i < s->n_pfs; i++) {
                const struct svff_pf *pf = s->pfs[i];
                const struct svff_policy *pol;
                struct json_object *o = json_object_new_object();
                const char *owner;
                char buf[256];

                if (!o)
                        break;
                pol = svff_config_find_policy(&m->config, pf->address, pf->vendor_id, pf->device_id, pf->netdev);
                json_object_object_add(o, "pf", json_object_new_string(pf->address));
                json_object_object_add(o, "numvfs", json_object_new_int64(pf->numvfs));
                owner = manager_pf_owner(m, pf->address, pol, buf, sizeof(buf));
                json_object_object_add(o, "owner", str_or_null(owner));
                json_object_object_add(o, "policy", pol && pol->numvfs >= 0 ? json_object_new_string(pol->name)
                                                                            : NULL);
                /* Once an operator took the count over, an old refusal
                 * of the policy no longer matters. */
                json_object_object_add(o, "refused",
                                       str_or_null(owner && !streq(owner, SVFF_PF_OWNER_OPERATOR)
                                                           ? autoinit_pf_refused(m, pf->address) : NULL));
                json_object_object_add(o, "totalvfs", json_object_new_int64(pf->totalvfs));
                json_object_object_add(o, "cap_totalvfs",
                                       pf->cap_totalvfs ? json_object_new_int64(pf->cap_totalvfs) : NULL);
                json_object_object_add(o, "vf_total_msix",
                                       pf->vf_total_msix ? json_object_new_int64(pf->vf_total_msix) : NULL);
                json_object_object_add(o, "changing", json_changing(m, pf));
                json_object_array_add(a, o);
        }
        return a;
}

/* The drift reconcile sees, and each PF whose policy's Init failed: the
 * store records nothing for a count that was never set, yet the host
 * is not what the policy asks for. */
static struct json_object *status_drift(struct manager *m) {
        struct json_object *a = reconcile_drift(m);
        struct snapshot *s = m->snapshot;

        for (size_t i = 0; a && s && i < s->n_pfs; i++) {
                const struct svff_pf *pf = s->pfs[i];
                const char *failed = autoinit_pf_failed(m, pf->address);
                struct json_object *d;

                if (!failed || manager_find_operation(m, pf->address))
                        continue;
                d = json_object_new_object();
                if (!d)
                        break;
                json_object_object_add(d, "kind", json_object_new_string("policy-failed"));
                json_object_object_add(d, "device", json_object_new_string(pf->address));
                json_object_object_add(d, "expected", NULL);
                json_object_object_add(d, "actual", NULL);
                json_object_object_add(d, "pf", json_object_new_string(pf->address));
                json_object_object_add(d, "next_step", NULL);
                {
                        char msg[1400];

                        snprintf(msg, sizeof(msg), "PF %s does not have what its policy asks for, %s", pf->address,
                                 failed);
                        json_object_object_add(d, "message", json_object_new_string(msg));
                }
                json_object_array_add(a, d);
        }
        return a;
}

/* ---- the metrics file's look at the host ---- */

/* Keeps o (taken; NULL: nothing read) in *slot for the file, which
 * changes only when o differs from what it holds. */
static void metrics_keep(struct manager *m, struct json_object **slot, struct json_object *o) {
        if (m->shutting_down || !o || (*slot && json_object_equal(*slot, o))) {
                json_object_put(o);
                return;
        }
        json_object_put(*slot);
        *slot = o;
        metrics_changed(m->metrics);
}

static void metrics_class_drift_ready(struct manager *m, struct call *call, struct json_object *drift) {
        (void) call;
        /* NULL: nothing to inspect, so none */
        metrics_keep(m, &m->metrics_class_drift, drift ?: json_object_new_array());
}

static void metrics_counters_ready(struct manager *m, struct json_object *counters) {
        m->metrics_counters_running = false;
        metrics_keep(m, &m->metrics_vf_counters, counters);
}

/* The counters of the VFs of the PFs with an interface; one read at a
 * time (one slower than the poll's period is not queued again). */
static void metrics_counters_read(struct manager *m) {
        struct json_object *pfs;
        struct snapshot *s = m->snapshot;

        if (m->metrics_counters_running)
                return;
        pfs = json_object_new_array();

        for (size_t i = 0; pfs && s && i < s->n_pfs; i++)
                if (s->pfs[i]->netdev && s->pfs[i]->numvfs > 0 && (s->pfs[i]->class >> 16) == 0x02)
                        json_object_array_add(pfs, json_object_new_string(s->pfs[i]->address));
        if (!pfs || json_object_array_length(pfs) == 0) {
                json_object_put(pfs);
                metrics_counters_ready(m, json_object_new_object());
                return;
        }
        if (classes_counters_start(m, pfs, metrics_counters_ready) < 0)
                log_oom();
        else
                m->metrics_counters_running = true;
}

static void metrics_poll_snapshot_ready(struct manager *m, struct call *call, _unused_ void *userdata) {
        (void) call;
        if (m->shutting_down)
                return;
        classes_with_drift(m, NULL, metrics_class_drift_ready);
        metrics_counters_read(m);
}

/* A device class's state changes without an event (a secondary taken
 * offline with nvme-cli, a queue count written by hand), a NIC VF's
 * counters all the time, and a uevent can be missed: a picture as List
 * and Status would take (the new one, when it differs, is a change of
 * its own), the class inspection's cache shared with Status. */
void methods_poll_metrics(struct manager *m) {
        if (!m->shutting_down && m->snapshots)
                manager_with_snapshot(m, NULL, metrics_poll_snapshot_ready, NULL, NULL);
}

/* The NIC VFs' counters as last read, labelled from the picture. */
static void collect_vf_counters(struct manager *m, struct metrics_sample *s) {
        struct snapshot *snap = m->snapshot;

        if (!m->metrics_vf_counters || !snap)
                return;
        json_object_object_foreach(m->metrics_vf_counters, pfaddr, by_index) {
                const struct svff_pf *pf = snapshot_pf(snap, pfaddr);

                if (!pf || !pf->netdev)
                        continue;
                json_object_object_foreach(by_index, key, counters) {
                        uint64_t values[METRICS_VF_N] = {};
                        const struct svff_vf *vf;
                        unsigned long index;
                        char *end;

                        index = strtoul(key, &end, 10);
                        if (*end || index > UINT16_MAX || !(vf = svff_pf_vf_at(pf, (unsigned) index)))
                                continue;
                        for (size_t k = 0; k < METRICS_VF_N; k++) {
                                struct json_object *v;

                                if (json_object_object_get_ex(counters, metrics_vf_names[k].key, &v))
                                        values[k] = json_object_get_uint64(v);
                        }
                        (void) metrics_sample_add_vf(s, vf->address, pf->netdev, (unsigned) index, pf->numa_node,
                                                     values);
                }
        }
}

void methods_collect_metrics(struct manager *m, struct metrics_sample *s) {
        _cleanup_(json_object_putp) struct json_object *drift = status_drift(m);
        struct snapshot *snap = m->snapshot;
        unsigned n_ops = 0;

        for (size_t i = 0; snap && i < snap->n_pfs; i++) {
                const struct svff_pf *pf = snap->pfs[i];
                const struct svff_policy *pol;
                char buf[256];

                pol = svff_config_find_policy(&m->config, pf->address, pf->vendor_id, pf->device_id, pf->netdev);
                (void) metrics_sample_add_pf(s, pf->address, manager_pf_owner(m, pf->address, pol, buf, sizeof(buf)),
                                             pf->numvfs, pf->totalvfs);
        }
        json_object_object_foreach(svff_store_assignments(m->store), vf, rec) {
                const char *state = NULL;

                (void) vf;
                if (svff_json_get_string(rec, "state", &state) >= 0 && state)
                        (void) metrics_sample_add_assignment(s, state);
        }
        /* The device classes' drift, as last read for the file. */
        for (size_t i = 0; drift && m->metrics_class_drift &&
                           i < json_object_array_length(m->metrics_class_drift); i++)
                json_object_array_add(drift, json_object_get(json_object_array_get_idx(m->metrics_class_drift, i)));
        for (size_t i = 0; drift && i < json_object_array_length(drift); i++) {
                const char *kind = NULL;

                if (svff_json_get_string(json_object_array_get_idx(drift, i), "kind", &kind) >= 0 && kind)
                        (void) metrics_sample_add_drift(s, kind);
        }
        collect_vf_counters(m, s);
        for (struct operation *op = registry_operations(m->registry); op; op = op->next)
                n_ops++;
        metrics_sample_set_operations(s, n_ops);
        metrics_sample_set_generation(s, svff_store_generation(m->store));
}

/* Policy work that is no operation yet, as one for Status: op "policy". */
static void add_pending(const char *pf, const char *phase, uint64_t started_usec, void *userdata) {
        struct json_object *ops = userdata, *o = json_object_new_object();

        if (!o)
                return;
        json_object_object_add(o, "op", json_object_new_string("policy"));
        json_object_object_add(o, "pf", json_object_new_string(pf ?: "*"));
        json_object_object_add(o, "phase", json_object_new_string(phase));
        json_object_object_add(o, "done", json_object_new_int64(0));
        json_object_object_add(o, "total", json_object_new_int64(1));
        json_object_object_add(o, "started_usec", json_object_new_int64((int64_t) started_usec));
        json_object_array_add(ops, o);
}

static void status_reply(struct manager *m, struct call *call, struct json_object *class_drift) {
        struct json_object *p = json_object_new_object(), *store, *ops, *drift;
        struct snapshot *s = m->snapshot;
        uint64_t t = now(CLOCK_MONOTONIC);

        store = json_object_new_object();
        json_object_object_add(store, "path", json_object_new_string(svff_store_path(m->store)));
        json_object_object_add(store, "generation",
                               json_object_new_int64((int64_t) svff_store_generation(m->store)));

        ops = json_object_new_array();
        for (struct operation *op = registry_operations(m->registry); op; op = op->next) {
                struct json_object *o = json_object_new_object();

                json_object_object_add(o, "op", json_object_new_string(op->kind));
                json_object_object_add(o, "pf", json_object_new_string(op->pf));
                json_object_object_add(o, "phase", json_object_new_string(op->phase));
                json_object_object_add(o, "done", json_object_new_int64(op->done));
                json_object_object_add(o, "total", json_object_new_int64(op->total));
                json_object_object_add(o, "started_usec", json_object_new_int64((int64_t) op->started_usec));
                json_object_array_add(ops, o);
        }
        autoinit_foreach_pending(m, add_pending, ops);

        json_object_object_add(p, "version", json_object_new_string(PACKAGE_VERSION));
        json_object_object_add(p, "uptime_usec", json_object_new_int64((int64_t) (t - m->started_usec)));
        json_object_object_add(p, "sysfs_root", json_object_new_string(m->config.sysfs_root));
        json_object_object_add(p, "store", store);
        json_object_object_add(p, "operations", ops);
        drift = status_drift(m);
        for (size_t i = 0; drift && class_drift && i < json_object_array_length(class_drift); i++)
                json_object_array_add(drift, json_object_get(json_object_array_get_idx(class_drift, i)));
        json_object_put(class_drift);
        json_object_object_add(p, "drift", drift);
        json_object_object_add(p, "owners", json_owners(m));
        json_object_object_add(p, "config_error", str_or_null(m->config_error));
        json_object_object_add(p, "connections", json_object_new_int64(server_n_connections(m->server)));
        json_object_object_add(p, "stuck_writes", json_object_new_int64(svff_ctx_get_stuck_writes(m->ctx)));
        json_object_object_add(p, "snapshot_age_usec",
                               json_object_new_int64(s ? (int64_t) (t - s->taken_usec) : -1));
        json_object_object_add(p, "snapshot_max_age_usec",
                               json_object_new_int64((int64_t) m->config.list_max_age_usec));
        json_object_object_add(p, "snapshot_waits",
                               json_object_new_int64((int64_t) snapshot_cache_waits(m->snapshots)));
        {
                struct json_object *lv = json_object_new_object();

                json_object_object_add(lv, "uri", json_object_new_string(m->config.libvirt_uri));
                json_object_object_add(lv, "connected", json_object_new_boolean(manager_libvirt_connected(m)));
                json_object_object_add(p, "libvirt", lv);
        }
        json_object_object_add(p, "discovery_error", str_or_null(s && s->error < 0 ? s->error_message : NULL));
        json_object_object_add(p, "recovered", m->recovered ? json_object_get(m->recovered) : json_object_new_array());
        call_reply(call, p);
        json_object_put(p);
}

/* The device classes' drift needs the devices read, on a worker. */
static void method_status(struct manager *m, struct call *call, _unused_ void *params) {
        classes_with_drift(m, call, status_reply);
}

/* Show's PF and call through the device class's read. */
struct show_wait {
        char pf[SVFF_PCI_ADDR_STRLEN];
        struct call *call;
};

static void show_wait_free(struct show_wait *w) {
        if (!w)
                return;
        call_unref(w->call);
        free(w);
}

DEFINE_TRIVIAL_CLEANUP_FUNC(struct show_wait *, show_wait_free);

static void show_reply(struct manager *m, int r, const char *message, struct json_object *device_class,
                       void *userdata) {
        _cleanup_(show_wait_freep) struct show_wait *w = userdata;
        struct call *call = w->call;
        const char *pf = w->pf;

        (void) m;
        if (r == -EBUSY)
                call_errorf(call, SVFF_ERROR_DEVICE_BUSY, "device", pf,
                            "%s; ask again when it ends ('svffctl status' shows the operation).",
                            strna(message));
        else if (r == -ENODEV)
                call_errorf(call, SVFF_ERROR_NO_SUCH_DEVICE, "device", pf,
                            "PF %s went away while it was read: %s", strna(pf), strna(message));
        else if (r == -ENOMEM)
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
        else if (r < 0)
                call_errorf(call, SVFF_ERROR_OPERATION_FAILED, "device", pf,
                            "The device class of PF %s cannot be read: %s", strna(pf), strna(message));
        else {
                struct json_object *p = json_object_new_object();

                json_object_object_add(p, "pf", json_object_new_string(pf));
                json_object_object_add(p, "device_class", json_object_get(device_class));
                call_reply(call, p);
                json_object_put(p);
        }
        json_object_put(device_class);
}

/* The PF must be one of the host's SR-IOV PFs. */
static void method_show(struct manager *m, struct call *call, void *params) {
        const char *pf = ((const struct pf_param *) params)->pf;
        struct show_wait *w;
        int r;

        if (!manager_snapshot_pf(m, pf)) {
                call_errorf(call, SVFF_ERROR_NO_SUCH_DEVICE, "device", pf,
                            "No SR-IOV PF %s under %s; 'svffctl list' shows the PFs there are.", pf,
                            m->config.sysfs_root);
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        snprintf(w->pf, sizeof(w->pf), "%s", pf);
        w->call = call_ref(call);
        r = classes_show_start(m, w->pf, show_reply, w);
        if (r < 0) {
                if (r == -ENOMEM)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                else
                        call_errorf(call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                show_wait_free(w);
        }
}

static const struct param show_param_table[] = {
        { "pf", PARAM_ADDRESS, true, offsetof(struct pf_param, pf), 0, NULL },
        PARAM_END,
};

static void method_monitor(struct manager *m, struct call *call, _unused_ void *params) {
        struct json_object *p, *ev;

        if (!call_request(call)->more) {
                call_errorf(call, VARLINK_ERROR_EXPECTED_MORE, NULL, NULL,
                            "Monitor streams events: call it with \"more\": true.");
                return;
        }
        if (manager_subscribe(m, call) < 0) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        /* The first reply says the subscription is in place, so a client
         * can act knowing it will see what follows. */
        p = json_object_new_object();
        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("subscribed"));
        json_object_object_add(ev, "timestamp_usec", json_object_new_int64((int64_t) now(CLOCK_REALTIME)));
        json_object_object_add(p, "event", ev);
        call_notify(call, p);
        json_object_put(p);
}

/* ---- svff.conf's manage list ---- */

/* The PF of a VF: svffd's record, else the picture of the host. */
static bool pf_of_vf(struct manager *m, const char *vf, char pf[static SVFF_PCI_ADDR_STRLEN]) {
        const char *recorded = NULL;

        if (svff_store_get_vf(m->store, vf, &recorded, NULL) > 0 && recorded) {
                snprintf(pf, SVFF_PCI_ADDR_STRLEN, "%s", recorded);
                return true;
        }
        for (size_t i = 0; m->snapshot && i < m->snapshot->n_pfs; i++)
                if (svff_pf_find_vf(m->snapshot->pfs[i], vf)) {
                        snprintf(pf, SVFF_PCI_ADDR_STRLEN, "%s", m->snapshot->pfs[i]->address);
                        return true;
                }
        return false;
}

/* params[key] as a canonical address; false when absent or not one (the
 * method itself then answers InvalidParameter). */
static bool param_address(struct json_object *params, const char *key, char buf[static SVFF_PCI_ADDR_STRLEN]) {
        const char *s = NULL;

        return params && svff_json_get_string(params, key, &s) == 0 && s &&
               svff_pci_addr_canonicalize(s, buf) >= 0;
}

/* A PF known by its address only, since a count write holds its reads:
 * whether a 'manage' rule by ID or class allows it cannot be told yet,
 * and the call would wait behind the write anyway. */
static void manage_refuse_unread(struct manager *m, struct call *call, const char *pf, const char *dev) {
        log_info("Refused %s on %s: the VF count of PF %s is being written, its IDs cannot be read.",
                 call_request(call)->member, dev, pf);
        if (pf_busy_refuse(m, pf, dev, PF_BUSY_WRITE, call))
                return;
        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", dev,
                    "The VF count of PF %s is being written, and the kernel holds the PF's reads until the write "
                    "ends: svffd cannot read its IDs to check svff.conf's 'manage' yet. Try again then.", pf);
}

/* Before a method that changes the host or the store runs (Reconf's dry
 * run too: a plan for a PF svffd will not touch would mislead): true
 * when it may go on. A call that would change a PF outside the list, or
 * a VF of one, is answered NotAllowed here, once for every such method. */
static bool manage_check_call(struct manager *m, struct call *call) {
        const struct svff_varlink_call *req = call_request(call);
        _cleanup_(svff_pf_freep) struct svff_pf *loaded = NULL;
        _cleanup_(json_object_putp) struct json_object *e = NULL;
        _cleanup_free_ char *reason = NULL, *rules = NULL, *msg = NULL;
        char pf[SVFF_PCI_ADDR_STRLEN], dev[SVFF_PCI_ADDR_STRLEN];
        const struct svff_pf *p = NULL;
        int r;

        if (!m->config.manage)
                return true;
        if (param_address(req->parameters, "vf", dev)) {
                if (!pf_of_vf(m, dev, pf))
                        return true;    /* no such VF: the method says so */
        } else if (param_address(req->parameters, "pf", pf))
                snprintf(dev, sizeof(dev), "%s", pf);
        else
                return true;

        p = manager_snapshot_pf(m, pf);
        if (!p) {
                /* Newer than the picture (hot-added within list_max_age_msec):
                 * a few small reads, rarer than the call itself. This is
                 * the main loop: a count write holds the count's read for
                 * SVFF_NUMVFS_READ_TIMEOUT_USEC at most, then the PF is
                 * known by its address only. */
                if (svff_pf_load_nowait(m->ctx, pf, &loaded, NULL) < 0)
                        return true;    /* gone, or no PF: the method says so */
                p = loaded;
        }
        r = svff_allowlist_check_pf(m->config.manage, m->config.manage_origin, m->ctx, p, &reason);
        if (r == 0)
                return true;
        /* A picture of the PF taken before the write keeps its IDs, and
         * the answer stands; without them, none can be given yet. */
        if (r > 0 && svff_pf_is_unread(p) && !p->vendor_id) {
                manage_refuse_unread(m, call, pf, dev);
                return false;
        }

        rules = svff_allowlist_format(m->config.manage);
        e = json_object_new_object();
        if (r < 0 || !rules || !e ||
            asprintf(&msg, "PF %s (%04x:%04x) is not one svffd manages: svff.conf's 'manage' (%s) allows only "
                     "%s. svffd lists it read-only and changes nothing on it; add it to 'manage' (its address, "
                     "its ID or its class) and reload svffd to manage it.",
                     pf, p->vendor_id, p->device_id, m->config.manage_origin ?: "svff.conf", rules) < 0) {
                msg = NULL;
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return false;
        }
        log_info("Refused %s on %s: PF %s is %s.", req->member, dev, pf, reason);
        json_object_object_add(e, "device", json_object_new_string(dev));
        json_object_object_add(e, "rules", json_object_new_string(rules));
        json_object_object_add(e, "message", json_object_new_string(msg));
        call_error(call, SVFF_ERROR_NOT_ALLOWED, e);
        return false;
}

/* ---- dispatch ---- */

static const struct method ping_method = { "Ping", method_ping };
static const struct method list_method = {
        "List", method_list, list_param_table, sizeof(struct pf_param), NULL, METHOD_SNAPSHOT,
};
static const struct method status_method = { "Status", method_status, .flags = METHOD_SNAPSHOT };
static const struct method show_method = {
        "Show", method_show, show_param_table, sizeof(struct pf_param), NULL, METHOD_SNAPSHOT,
};
static const struct method monitor_method = { "Monitor", method_monitor };

static const struct method *const svff_methods[] = {
        &ping_method,
        &list_method,
        &status_method,
        &show_method,
        &init_method,
        &release_method,
        &monitor_method,
        &attach_method,
        &detach_method,
        &pause_method,
        &unpause_method,
        &reconf_method,
        &reprogram_method,
        &reload_method,
};

#ifdef SVFF_FAULT_POINTS
/* Test builds only: see autoinit.h. */
static const struct method *const debug_methods[] = {
        &inject_uevent_method,
};
#endif

static const struct method get_info_method = { "GetInfo", method_get_info };
static const struct method get_interface_description_method = {
        "GetInterfaceDescription", method_get_interface_description, description_param_table,
        sizeof(struct description_params),
};

static const struct method *const service_methods[] = {
        &get_info_method,
        &get_interface_description_method,
};

/* A call's method and its decoded parameters through the wait for a
 * snapshot. */
struct method_wait {
        const struct method *method;
        void *params;
};

static void method_wait_free(void *userdata) {
        struct method_wait *w = userdata;

        if (!w)
                return;
        free(w->params);
        free(w);
}

static void method_with_snapshot(struct manager *m, struct call *call, void *userdata) {
        struct method_wait *w = userdata;

        w->method->fn(m, call, w->params);
        method_wait_free(w);
}

/* The checks of its row, then the method with its parameters. */
static void method_call(struct manager *m, struct call *call, const struct method *method) {
        static const struct param none[] = { PARAM_END };
        struct method_wait *w;
        void *params;

        if (m->shutting_down && method != &ping_method) {
                call_errorf(call, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                return;
        }
        if ((method->flags & METHOD_PRIVILEGED) && !require_privileged(m, call))
                return;
        if ((method->flags & METHOD_MUTATING) && !manage_check_call(m, call))
                return;
        params = calloc(1, method->params_size ?: 1);
        if (!params) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        if (method->initial)
                memcpy(params, method->initial, method->params_size);
        if (!params_decode(call, SVFF_ERROR_INVALID_PARAMETER, method->params ?: none, params)) {
                free(params);
                return;
        }
        if (!(method->flags & METHOD_SNAPSHOT)) {
                method->fn(m, call, params);
                free(params);
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                free(params);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        *w = (struct method_wait) { .method = method, .params = params };
        manager_with_snapshot(m, call, method_with_snapshot, w, method_wait_free);
}

void methods_dispatch(struct call *call, void *userdata) {
        struct manager *m = userdata;
        const struct svff_varlink_call *req = call_request(call);
        const struct method *const *table;
        size_t n;

        log_debug("Call %s from pid %d uid %u.", req->method, (int) call_peer(call)->pid,
                  (unsigned) call_peer(call)->uid);

        if (streq(req->interface, SVFF_INTERFACE)) {
                table = svff_methods;
                n = ELEMENTSOF(svff_methods);
        } else if (streq(req->interface, "org.varlink.service")) {
                table = service_methods;
                n = ELEMENTSOF(service_methods);
#ifdef SVFF_FAULT_POINTS
        } else if (streq(req->interface, "io.svff.Debug")) {
                table = debug_methods;
                n = ELEMENTSOF(debug_methods);
#endif
        } else {
                call_errorf(call, SVFF_VARLINK_ERROR_INTERFACE_NOT_FOUND, "interface", req->interface, NULL);
                return;
        }

        for (size_t i = 0; i < n; i++)
                if (streq(req->member, table[i]->name)) {
                        method_call(m, call, table[i]);
                        return;
                }
        call_errorf(call, SVFF_VARLINK_ERROR_METHOD_NOT_FOUND, "method", req->method, NULL);
}

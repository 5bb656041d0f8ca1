/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "assign.h"
#include "bind.h"
#include "busy.h"
#include "cause.h"
#include "classes.h"
#include "fault.h"
#include "hypervisor.h"
#include "interface.h"
#include "iommu.h"
#include "journal.h"
#include "json-util.h"
#include "libvirt.h"
#include "log.h"
#include "params.h"
#include "plan-deadlines.h"
#include "reconf.h"
#include "reconf-ops.h"

#define VFIO_DRIVER "vfio-pci"

/* JOB_RECOVER resolves an intent left by an earlier svffd (no caller). */
enum job_kind { JOB_ATTACH, JOB_DETACH, JOB_PAUSE, JOB_UNPAUSE, JOB_RECOVER };

static const char *const job_names[] = {
        [JOB_ATTACH] = "attach", [JOB_DETACH] = "detach", [JOB_PAUSE] = "pause", [JOB_UNPAUSE] = "unpause",
        [JOB_RECOVER] = "recovery",
};

static const enum svff_assign_intent job_intents[] = {
        [JOB_ATTACH] = SVFF_INTENT_ATTACH, [JOB_DETACH] = SVFF_INTENT_DETACH,
        [JOB_PAUSE] = SVFF_INTENT_PAUSE, [JOB_UNPAUSE] = SVFF_INTENT_UNPAUSE,
        [JOB_RECOVER] = SVFF_INTENT_NONE,
};

/* Every change runs as: (attach only: PREPARE, the checks and the
 * domain's UUID) -> the intent committed on the main thread -> ACT on
 * libvirt -> the final record committed. A final commit that fails
 * sends the job back as UNDO. After a failure the worker reads the
 * domain's XML (the probe) so the record follows what libvirt did, not
 * what was hoped. */
enum job_phase { PHASE_PREPARE, PHASE_ACT, PHASE_UNDO };

/* What libvirt shows of the VF in the domain, by host address. */
struct probe {
        int r;                  /* <0: libvirt's view could not be read */
        bool found_live, found_config;
        struct svff_hostdev hd;
};

struct job {
        enum job_kind kind;
        struct manager *m;
        struct call *call;
        virConnectPtr conn;
        struct svff_ctx *ctx;
        char vf[SVFF_PCI_ADDR_STRLEN];
        char *domain_id;                /* attach: name or UUID; else the recorded UUID */
        unsigned flags;                 /* attach: 0 = by domain state */
        char guest_address[SVFF_PCI_ADDR_STRLEN];
        char failover[64];              /* attach: the standby's MAC or alias, "" none */
        bool may_bind;
        bool dry_run;                   /* only the plan: nothing journaled, bound or changed */
        bool would_bind;                /* dry run: the VF would be bound to vfio-pci first */
        struct json_object *assignments; /* attach: a copy, for the group check */
        struct svff_assignment rec;     /* the record before (and, attach, after) */
        struct svff_assignment prev;    /* the stored record before the change */
        struct svff_assignment intent;  /* the intent as committed */
        enum svff_assign_state prev_state;
        enum job_phase phase;
        virDomainPtr dom;               /* attach: looked up in PREPARE */
        char *pause_cmd, *unpause_cmd;
        usec_t detach_timeout;

        /* results */
        int r;
        struct svff_error err;
        const char *error;
        struct svff_domain_info info;
        enum svff_pause_mode mode;
        bool domain_gone;
        bool bound;
        struct probe probe;
        bool have_probe;
        char *store_message;            /* why the final commit failed */

        /* The VF's device class (class_pf set: it has one): the
         * settings the assignment asks for (attach, unpause), the PF's
         * policy's, the VF's class record as it was, and the record the
         * class step made. Attach and detach hand the VF over (what an
         * earlier tenant left is released and reset) after the intent
         * is journaled; unpause provisions the assignment again. */
        struct json_object *class_settings;
        struct json_object *class_policy;
        struct json_object *class_recorded;
        struct json_object *class_rec;
        char class_pf[SVFF_PCI_ADDR_STRLEN];
        unsigned class_index;
        bool class_ran;                 /* the class step touched the device */
        bool class_failed;              /* provisioning failed (for the metrics) */
        char *class_message;            /* why a detach's hand-back failed */

        /* A detach another operation asked for (assign_detach()): it
         * answers done, not a call, once, when the job ends. */
        assign_detach_fn done;
        void *done_userdata;
        int answer_r;
        const char *answer_error;
        char *answer_message;
};

static void job_free(struct job *j) {
        if (!j)
                return;
        /* Every end of a job frees it: the one place that cannot miss
         * answering the operation waiting for it. */
        if (j->done)
                j->done(j->m, j->vf, j->answer_r, j->answer_error, j->answer_message, j->done_userdata);
        free(j->answer_message);
        call_unref(j->call);
        if (j->dom)
                virDomainFree(j->dom);
        if (j->conn)
                virConnectClose(j->conn);
        svff_ctx_unref(j->ctx);
        free(j->domain_id);
        json_object_put(j->assignments);
        free(j->pause_cmd);
        free(j->unpause_cmd);
        free(j->store_message);
        json_object_put(j->class_settings);
        json_object_put(j->class_policy);
        json_object_put(j->class_rec);
        json_object_put(j->class_recorded);
        free(j->class_message);
        svff_error_free(&j->err);
        free(j);
}

static void dom_freep(virDomainPtr *d) {
        if (*d)
                virDomainFree(*d);
}

static struct json_object *assignment_json(const struct svff_assignment *a) {
        struct json_object *o = json_object_new_object();
        const char *mode = svff_pause_mode_to_string(a->pause_mode);

        if (!o)
                return NULL;
        json_object_object_add(o, "domain", json_object_new_string(a->domain));
        json_object_object_add(o, "uuid", json_object_new_string(a->uuid));
        json_object_object_add(o, "guest_address", *a->guest_address ? json_object_new_string(a->guest_address) : NULL);
        json_object_object_add(o, "alias", json_object_new_string(a->alias));
        json_object_object_add(o, "live", json_object_new_boolean(a->live));
        json_object_object_add(o, "config", json_object_new_boolean(a->config));
        json_object_object_add(o, "state", json_object_new_string(svff_assign_state_to_string(a->state)));
        json_object_object_add(o, "pause_mode", mode ? json_object_new_string(mode) : NULL);
        json_object_object_add(o, "intent", a->intent != SVFF_INTENT_NONE
                                                    ? json_object_new_string(svff_assign_intent_to_string(a->intent))
                                                    : NULL);
        if (*a->failover.standby) {
                struct json_object *fo = json_object_new_object();

                json_object_object_add(fo, "standby", json_object_new_string(a->failover.standby));
                json_object_object_add(fo, "mac", json_object_new_string(a->failover.mac));
                json_object_object_add(o, "failover", fo);
        }
        return o;
}

static void emit(struct manager *m, const char *name, const char *vf, const struct svff_assignment *a,
                 const char *mode, const char *error, const char *message) {
        struct json_object *ev = json_object_new_object();

        if (!ev)
                return;
        json_object_object_add(ev, "event", json_object_new_string(name));
        if (vf)
                json_object_object_add(ev, "device", json_object_new_string(vf));
        if (a && *a->domain)
                json_object_object_add(ev, "domain", json_object_new_string(a->domain));
        if (a && *a->uuid)
                json_object_object_add(ev, "uuid", json_object_new_string(a->uuid));
        if (a && *a->guest_address)
                json_object_object_add(ev, "guest_address", json_object_new_string(a->guest_address));
        if (mode)
                json_object_object_add(ev, "mode", json_object_new_string(mode));
        if (error)
                json_object_object_add(ev, "error", json_object_new_string(error));
        if (message)
                json_object_object_add(ev, "message", json_object_new_string(message));
        manager_emit(m, NULL, ev);
}

/* The io.svff error for a hypervisor-side -errno. */
static const char *hv_error_name(int r) {
        switch (r) {
        case -ENOENT:
                return SVFF_ERROR_NO_SUCH_DOMAIN;
        case -ENOTCONN:
                return SVFF_ERROR_HYPERVISOR_UNAVAILABLE;
        case -EEXIST:
                return SVFF_ERROR_ALREADY_ASSIGNED;
        case -ETIMEDOUT:
                return SVFF_ERROR_GUEST_NOT_RELEASED;
        default:
                return SVFF_ERROR_HYPERVISOR;
        }
}

static int fail(struct job *j, const char *error, int r, const char *fmt, ...) _printf_(4, 5);
static int fail(struct job *j, const char *error, int r, const char *fmt, ...) {
        va_list ap;

        j->error = error;
        j->r = r;
        if (fmt && !svff_error_is_set(&j->err)) {
                char *msg = NULL;

                va_start(ap, fmt);
                if (vasprintf(&msg, fmt, ap) >= 0) {
                        svff_error_set(&j->err, r, "%s", msg);
                        free(msg);
                }
                va_end(ap);
        }
        return r;
}

static int fail_hv(struct job *j, int r) {
        return fail(j, hv_error_name(r), r, NULL);
}

/* ---- worker side ---- */

static int check_vfio(struct job *j) {
        _cleanup_free_ char *drv = NULL;
        int r;

        r = svff_dev_get_driver(j->ctx, j->vf, &drv);
        if (r < 0)
                return fail(j, SVFF_ERROR_NO_SUCH_DEVICE, -ENODEV,
                            "VF %s does not exist on this host; 'svffctl list' shows the VFs there are", j->vf);
        if (drv && streq(drv, VFIO_DRIVER))
                return 0;
        if (!j->may_bind) {
                const char *kind = svff_dev_kind(j->ctx, j->vf);

                if (!streq(kind, "VF"))
                        return fail(j, SVFF_ERROR_NOT_ON_VFIO, -EBUSY,
                                    "%s is a %s, not a VF: svff assigns only the VFs of SR-IOV PFs; "
                                    "'svffctl list' shows them", j->vf, kind);
                return fail(j, SVFF_ERROR_NOT_ON_VFIO, -EBUSY,
                            "VF %s is on %s, not %s, and svff did not bind it there: bind it with "
                            "'svffctl init PF N' (driver %s) first",
                            j->vf, drv ?: "no driver", VFIO_DRIVER, VFIO_DRIVER);
        }
        /* svff recorded vfio-pci as this VF's driver: restore that. */
        if (j->dry_run) {
                j->would_bind = true;
                return 0;
        }
        r = svff_dev_bind(j->ctx, j->vf, VFIO_DRIVER, NULL, &j->err);
        if (r < 0)
                return fail(j, SVFF_ERROR_NOT_ON_VFIO, r, NULL);
        j->bound = true;
        return 0;
}

static int check_group(struct job *j) {
        _cleanup_strv_free_ char **members = NULL;
        _cleanup_free_ char *blocker = NULL;
        int group, r;

        r = svff_iommu_group_of(j->ctx, j->vf, &group);
        if (r == -ENOENT)
                return fail(j, SVFF_ERROR_GROUP_NOT_VIABLE, r,
                            "VF %s is in no IOMMU group: the IOMMU is off, so VFIO cannot assign it "
                            "(boot with intel_iommu=on or amd_iommu=on)", j->vf);
        if (r < 0)
                return fail(j, SVFF_ERROR_OPERATION_FAILED, r, "Cannot read the IOMMU group of VF %s", j->vf);
        r = svff_iommu_group_members(j->ctx, group, &members);
        if (r < 0)
                return fail(j, SVFF_ERROR_OPERATION_FAILED, r, "Cannot list IOMMU group %d of VF %s", group, j->vf);
        for (char **p = members; p && *p; p++) {
                struct json_object *rec;
                const char *uuid = NULL, *name = NULL;

                if (streq(*p, j->vf) || !json_object_object_get_ex(j->assignments, *p, &rec))
                        continue;
                (void) svff_json_get_string(rec, "uuid", &uuid);
                (void) svff_json_get_string(rec, "domain", &name);
                if (uuid && streq(uuid, j->info.uuid))
                        continue;
                return fail(j, SVFF_ERROR_GROUP_SHARED, -EBUSY,
                            "VF %s shares IOMMU group %d with %s, which is assigned to domain '%s': "
                            "one group cannot be split across domains",
                            j->vf, group, *p, name ?: strna(uuid));
        }
        /* A dry run did not bind the VF that the attach binds first. */
        r = svff_iommu_group_viable_with(j->ctx, group, j->would_bind ? j->vf : NULL, &blocker, &j->err);
        if (r < 0)
                return fail(j, SVFF_ERROR_OPERATION_FAILED, r, NULL);
        if (r == 0)
                /* the group's own words: a host driver to move, or a PF
                 * that must never be moved */
                return fail(j, SVFF_ERROR_GROUP_NOT_VIABLE, -EBUSY, NULL);
        return 0;
}

/* A guest address the domain's machine keeps for its own device:
 * libvirt puts a VF there in the persistent definition and refuses it
 * only when the domain starts. */
static int check_guest_address(struct job *j, virDomainPtr dom) {
        int r = svff_hv_guest_address_check(dom, j->info.persistent, *j->guest_address ? j->guest_address : NULL,
                                            &j->err);

        if (r == -EADDRINUSE)
                return fail(j, SVFF_ERROR_GUEST_ADDRESS_TAKEN, r, NULL);
        if (r < 0)
                return fail_hv(j, r);
        return 0;
}

/* The failover standby j names, from the definition the VF goes into
 * (the persistent one when it goes there). */
static int find_standby(struct job *j, virDomainPtr dom, unsigned flags, struct svff_failover *ret) {
        _cleanup_free_ char *xml = virDomainGetXMLDesc(dom, (flags & SVFF_HV_CONFIG) ? VIR_DOMAIN_XML_INACTIVE : 0);
        int r;

        if (!xml) {
                char what[SVFF_DOMAIN_NAME_MAX + 64];

                snprintf(what, sizeof(what), "Reading the XML of domain '%s'", j->info.name);
                return fail_hv(j, svff_hv_error_from_libvirt(&j->err, what));
        }
        r = svff_hv_find_standby_in_xml(xml, j->failover, ret);
        if (r < 0)
                return fail(j, SVFF_ERROR_OPERATION_FAILED, r, "libvirt returned XML for domain '%s' that does not "
                            "parse", j->info.name);
        if (r == 0)
                return fail(j, SVFF_ERROR_NO_SUCH_DEVICE, -ENOENT,
                            "Domain '%s' has no failover standby '%s': give the MAC or alias of one of its "
                            "<interface> elements with <teaming type='persistent'/>. Nothing was changed.",
                            j->info.name, j->failover);
        if (!*ret->standby || !*ret->mac)
                return fail(j, SVFF_ERROR_DEVICE_REFUSED, -EINVAL,
                            "The failover standby '%s' of domain '%s' has no user alias (<alias name='ua-...'/>) "
                            "or no MAC: <teaming type='transient'> names the standby by its alias; give it one. "
                            "Nothing was changed.", j->failover, j->info.name);
        return 0;
}

/* The checks and the flags, before anything is journaled: a refusal here
 * changes nothing anywhere. Fills j->rec with the assignment asked for. */
static void attach_prepare(struct job *j, virDomainPtr dom) {
        struct svff_failover fo = {};
        char alias[SVFF_ALIAS_MAX];
        unsigned flags = j->flags;

        if (check_vfio(j) < 0 || check_group(j) < 0 || check_guest_address(j, dom) < 0)
                return;
        if (flags == 0)
                flags = (j->info.active ? SVFF_HV_LIVE : 0) | (j->info.persistent ? SVFF_HV_CONFIG : 0);
        if ((flags & SVFF_HV_LIVE) && !j->info.active) {
                fail(j, SVFF_ERROR_DOMAIN_NOT_RUNNING, -EINVAL,
                     "Domain '%s' is not running: a live attach needs a running domain; start it "
                     "('virsh start %s') or attach with --config. Nothing was changed.", j->info.name,
                     j->info.name);
                return;
        }
        if ((flags & SVFF_HV_CONFIG) && !j->info.persistent) {
                fail(j, SVFF_ERROR_DOMAIN_TRANSIENT, -EINVAL,
                     "Domain '%s' is transient: it has no persistent definition for --config; attach with "
                     "--live. Nothing was changed.", j->info.name);
                return;
        }
        if (*j->failover && find_standby(j, dom, flags, &fo) < 0)
                return;
        j->flags = flags;
        (void) svff_hv_alias_for(j->vf, alias);
        j->rec = (struct svff_assignment) {
                .live = flags & SVFF_HV_LIVE,
                .config = flags & SVFF_HV_CONFIG,
                .state = SVFF_ASSIGN_ATTACHED,
        };
        snprintf(j->rec.uuid, sizeof(j->rec.uuid), "%s", j->info.uuid);
        snprintf(j->rec.domain, sizeof(j->rec.domain), "%s", j->info.name);
        snprintf(j->rec.alias, sizeof(j->rec.alias), "%s", alias);
        snprintf(j->rec.guest_address, sizeof(j->rec.guest_address), "%s", j->guest_address);
        j->rec.failover = fo;
}

/* Fails j for a class step's r (< 0), or for class settings given to a
 * VF without a class (r == 0). */
static int class_fail(struct job *j, int r) {
        j->class_failed = r < 0;
        if (r == 0)
                return fail(j, SVFF_ERROR_NO_DEVICE_CLASS, -EINVAL,
                            "VF %s has no device class (PF %s is a bare PCI function here): class settings "
                            "such as --namespace, --mac or --vlan do not apply to it; attach it without them. "
                            "Nothing was changed.", j->vf, j->class_pf);
        /* Settings the class refused are the caller's; the rest is the
         * device's. */
        return fail(j, r == -EINVAL ? SVFF_ERROR_DEVICE_REFUSED
                       : r == -EBUSY ? SVFF_ERROR_DEVICE_BUSY : SVFF_ERROR_OPERATION_FAILED, r, NULL);
}

/* The VF gets exactly the policy's settings overlaid with the
 * assignment's before libvirt hands it to the guest: whatever an
 * earlier tenant left on the device is released first (read from the
 * device, not the record). */
static void attach_class(struct job *j) {
        int r;

        if (!*j->class_pf)
                return;
        j->class_ran = true;
        r = classes_handover_sync(j->ctx, j->class_pf, j->class_index, j->class_policy, j->class_settings,
                                  j->class_recorded, &j->class_rec, &j->err);
        if (r < 0 || (r == 0 && j->class_settings))
                (void) class_fail(j, r);
}

/* A failed attach (or a detach) hands the VF back to the pool with the
 * policy's settings only; the record it made replaces the VF's. */
static void class_hand_back(struct job *j) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *rec = NULL;
        int r;

        if (!*j->class_pf)
                return;
        r = classes_handover_sync(j->ctx, j->class_pf, j->class_index, j->class_policy, NULL,
                                  j->class_rec ?: j->class_recorded, &rec, &err);
        if (r < 0) {
                free(j->class_message);
                j->class_message = strdup(svff_error_message(&err));
                return;
        }
        json_object_put(j->class_rec);
        j->class_rec = rec;
}

static void attach_act(struct job *j, virDomainPtr dom) {
        struct svff_hostdev hd;
        int r;

        r = svff_hv_attach(dom, j->vf, j->rec.alias, *j->guest_address ? j->guest_address : NULL,
                           &j->rec.failover, j->flags, &hd, &j->err);
        if (r < 0) {
                fail_hv(j, r);
                return;
        }
        if (*hd.alias)
                snprintf(j->rec.alias, sizeof(j->rec.alias), "%s", hd.alias);
        snprintf(j->rec.guest_address, sizeof(j->rec.guest_address), "%s", hd.guest_address);
}

/* The definitions the record's device is in now. */
static unsigned rec_flags(const struct job *j) {
        return (j->rec.live && j->info.active ? SVFF_HV_LIVE : 0) | (j->rec.config ? SVFF_HV_CONFIG : 0);
}

static void detach_run(struct job *j, virDomainPtr dom) {
        int r;

        r = svff_hv_detach(dom, j->vf, j->rec.alias, rec_flags(j), svff_now_usec() + j->detach_timeout,
                           hv_removals(j->m->hv), &j->err);
        if (r < 0)
                fail_hv(j, r);
}

/* Natively where QEMU offers it, else a detach with reservation: the
 * record keeps address and alias. */
static void pause_run(struct job *j, virDomainPtr dom) {
        int r;

        j->mode = SVFF_PAUSE_NONE;
        r = reconf_ops_pause(dom, j->vf, j->rec.alias, j->rec.live && j->info.active, j->pause_cmd, rec_flags(j),
                             svff_now_usec() + j->detach_timeout, hv_removals(j->m->hv), &j->mode, &j->err);
        if (r < 0 && j->mode != SVFF_PAUSE_DETACH)
                fail(j, SVFF_ERROR_HYPERVISOR, r, NULL);
        else if (r < 0)
                fail_hv(j, r);
}

static void unpause_run(struct job *j, virDomainPtr dom) {
        struct svff_hostdev hd;
        bool moved = false;
        unsigned flags;
        int r;

        /* The VF may have been made anew meanwhile (a reconf that lost
         * it, then one that brought it back): it gets its assignment's
         * class state again before the guest sees it. */
        if (*j->class_pf) {
                r = classes_ensure_sync(j->ctx, j->class_pf, j->class_index, j->class_policy, j->class_settings,
                                        j->class_recorded, &j->class_rec, &j->err);
                if (r < 0) {
                        (void) class_fail(j, r);
                        return;
                }
        }
        if (j->rec.pause_mode == SVFF_PAUSE_NATIVE && j->info.active) {
                r = svff_hv_get_hostdev_by_alias(dom, j->rec.alias, SVFF_HV_LIVE, &hd, &j->err);
                if (r < 0) {
                        fail_hv(j, r);
                        return;
                }
                moved = r > 0 && !streq(hd.source, j->vf);
        }
        if (moved) {
                /* The VF is at another host address than the device
                 * QEMU paused (a reconf or reprogram moved it: a new
                 * offset or stride): an unpause would resume that device
                 * at the old address, which may be another VF's now. The
                 * paused device goes (by its alias, from both
                 * definitions; its removal awaited at its old address)
                 * and the VF comes back at the new address, at the
                 * reserved guest address. */
                r = svff_hv_detach(dom, hd.source, j->rec.alias, rec_flags(j), svff_now_usec() + j->detach_timeout,
                                   hv_removals(j->m->hv), &j->err);
                if (r < 0) {
                        fail_hv(j, r);
                        return;
                }
                log_info("VF %s moved from %s while paused in domain '%s': re-attached at its new address, "
                         "not unpaused.", j->vf, hd.source, j->info.name);
        } else if (j->rec.pause_mode == SVFF_PAUSE_NATIVE) {
                j->mode = SVFF_PAUSE_NATIVE;
                r = reconf_ops_unpause_native(dom, j->unpause_cmd, j->rec.alias, &j->err);
                if (r < 0)
                        fail(j, SVFF_ERROR_HYPERVISOR, r, "Unpausing VF %s in domain '%s' failed", j->vf, j->info.name);
                return;
        }
        j->mode = SVFF_PAUSE_DETACH;
        flags = rec_flags(j);
        if (flags == 0) {
                fail(j, SVFF_ERROR_DOMAIN_NOT_RUNNING, -EINVAL,
                     "Domain '%s' is no longer running and VF %s was assigned live only: nothing to re-attach to; "
                     "'svffctl detach %s' ends the assignment", j->info.name, j->vf, j->vf);
                return;
        }
        if (check_vfio(j) < 0)
                return;
        r = svff_hv_attach(dom, j->vf, j->rec.alias, *j->rec.guest_address ? j->rec.guest_address : NULL,
                           &j->rec.failover, flags, &hd, &j->err);
        if (r < 0) {
                fail_hv(j, r);
                return;
        }
        if (*j->rec.guest_address && !streq(hd.guest_address, j->rec.guest_address))
                log_warning("VF %s came back at %s in domain '%s', not at the reserved %s.", j->vf,
                            hd.guest_address, j->info.name, j->rec.guest_address);
        j->rec.live = flags & SVFF_HV_LIVE;
        snprintf(j->rec.guest_address, sizeof(j->rec.guest_address), "%s", hd.guest_address);
}

/* Reads what libvirt shows of j->vf in the domain of j->intent now, both
 * definitions, by host address (the alias svff gives a VF is derived
 * from that address, so the source decides). A domain that is gone
 * holds no device. */
static void probe_run(struct job *j) {
        _cleanup_(dom_freep) virDomainPtr dom = NULL;
        struct svff_domain_info info;
        struct svff_hostdev hd;
        int r;

        j->have_probe = true;
        j->probe = (struct probe) {};
        r = svff_hv_lookup(j->conn, j->intent.uuid, &info, &dom, NULL);
        if (r == -ENOENT)
                return;
        if (r >= 0 && info.active) {
                r = svff_hv_get_hostdev(dom, j->vf, SVFF_HV_LIVE, &hd, NULL);
                if (r > 0) {
                        j->probe.found_live = true;
                        j->probe.hd = hd;
                }
        }
        if (r >= 0 && info.persistent) {
                r = svff_hv_get_hostdev(dom, j->vf, SVFF_HV_CONFIG, &hd, NULL);
                if (r > 0) {
                        j->probe.found_config = true;
                        if (!j->probe.found_live)
                                j->probe.hd = hd;
                }
        }
        if (r < 0)
                j->probe.r = r;
        else if ((j->probe.found_live || j->probe.found_config) && !streq(j->probe.hd.alias, j->intent.alias))
                log_warning("VF %s is in domain '%s' under alias '%s', not svff's '%s'.", j->vf, info.name,
                            j->probe.hd.alias, j->intent.alias);
}

/* Takes back a change whose final record could not be committed. A
 * detach is not taken back: the guest has let the device go. */
static void undo_run(struct job *j) {
        _cleanup_(dom_freep) virDomainPtr dom = TAKE_PTR(j->dom);
        enum svff_pause_mode mode = j->mode;
        int r;

        j->r = 0;
        j->error = NULL;
        svff_error_free(&j->err);
        if (j->kind == JOB_DETACH)
                return;
        if (!dom) {
                r = svff_hv_lookup(j->conn, j->intent.uuid, &j->info, &dom, &j->err);
                if (r < 0) {
                        fail_hv(j, r);
                        return;
                }
        }
        if (j->kind == JOB_ATTACH)
                detach_run(j, dom);
        else if (j->kind == JOB_PAUSE) {
                j->rec.pause_mode = mode;
                unpause_run(j, dom);
        } else if (mode == SVFF_PAUSE_NATIVE)
                pause_run(j, dom);
        else
                detach_run(j, dom);
        j->mode = mode;
}

static void job_done(void *userdata);

static void job_run(void *userdata) {
        struct job *j = userdata;
        _cleanup_(dom_freep) virDomainPtr dom = NULL;
        int r;

        if (j->kind == JOB_RECOVER)
                probe_run(j);
        else if (j->phase == PHASE_UNDO) {
                undo_run(j);
                probe_run(j);
        } else if (j->kind == JOB_ATTACH && j->phase == PHASE_ACT) {
                attach_class(j);
                if (j->r >= 0)
                        attach_act(j, j->dom);
                if (j->r < 0) {
                        probe_run(j);
                        /* Not in the domain: nothing of the attach stays
                         * on the device either. */
                        if (j->class_ran && j->have_probe && j->probe.r >= 0 && !j->probe.found_live &&
                            !j->probe.found_config)
                                class_hand_back(j);
                }
        } else {
                r = svff_hv_lookup(j->conn, j->domain_id, &j->info, &dom, &j->err);
                if (r == -ENOENT && j->kind == JOB_DETACH) {
                        /* Gone with the domain: nothing left to detach. */
                        j->domain_gone = true;
                        svff_error_free(&j->err);
                } else if (r < 0)
                        fail_hv(j, r);
                else if (j->kind == JOB_ATTACH) {
                        attach_prepare(j, dom);
                        if (j->r >= 0)
                                j->dom = TAKE_PTR(dom);
                } else if (j->kind == JOB_DETACH)
                        detach_run(j, dom);
                else if (j->kind == JOB_PAUSE)
                        pause_run(j, dom);
                else
                        unpause_run(j, dom);
                if (j->kind != JOB_ATTACH && j->r < 0)
                        probe_run(j);
                /* Out of the domain: its class state goes before the VF
                 * is back in the pool (scrub_on_release applies). */
                if (j->kind == JOB_DETACH && j->r >= 0)
                        class_hand_back(j);
        }
        if (worker_pool_post(hv_pool(j->m->hv), job_done, j) < 0)
                log_error("Lost the result of a %s of VF %s: out of memory.", job_names[j->kind], j->vf);
}

/* ---- main thread ---- */

/* The job's failure, to its call or to the operation that started it. */
static void job_error(struct job *j, int r, const char *error, struct json_object *p) {
        const char *msg = NULL;

        if (j->call) {
                call_error(j->call, error, p);
                return;
        }
        (void) svff_json_get_string(p, "message", &msg);
        j->answer_r = r < 0 ? r : -EIO;
        j->answer_error = error;
        free(j->answer_message);
        j->answer_message = msg ? strdup(msg) : NULL;
}

static void job_errorf(struct job *j, int r, const char *error, const char *key, const char *value,
                       const char *fmt, ...) _printf_(6, 7);
static void job_errorf(struct job *j, int r, const char *error, const char *key, const char *value,
                       const char *fmt, ...) {
        struct json_object *p = json_object_new_object();
        char buf[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(buf, sizeof(buf), fmt, ap);
        va_end(ap);
        if (p) {
                if (key)
                        json_object_object_add(p, key, json_object_new_string(value));
                json_object_object_add(p, "message", json_object_new_string(buf));
        }
        job_error(j, r, error, p);
        json_object_put(p);
}

static void reply_job_error(struct job *j) {
        const char *msg = svff_error_is_set(&j->err) ? svff_error_message(&j->err) : strerror(-j->r);
        struct json_object *p = json_object_new_object();
        const char *error = j->error ?: SVFF_ERROR_OPERATION_FAILED;

        if (streq(error, SVFF_ERROR_HYPERVISOR_UNAVAILABLE))
                json_object_object_add(p, "uri", json_object_new_string(hv_uri(j->m->hv)));
        else if (streq(error, SVFF_ERROR_NO_SUCH_DOMAIN))
                json_object_object_add(p, "domain", json_object_new_string(j->domain_id));
        else if (streq(error, SVFF_ERROR_INVALID_PARAMETER))
                json_object_object_add(p, "parameter", json_object_new_string("domain"));
        else
                json_object_object_add(p, "device", json_object_new_string(j->vf));
        if (streq(error, SVFF_ERROR_DOMAIN_NOT_RUNNING) || streq(error, SVFF_ERROR_DOMAIN_TRANSIENT))
                json_object_object_add(p, "domain", json_object_new_string(j->info.name));
        if (streq(error, SVFF_ERROR_GUEST_ADDRESS_TAKEN))
                json_object_object_add(p, "guest_address", json_object_new_string(j->guest_address));
        /* org.varlink.service.InvalidParameter declares no message. */
        if (streq(error, SVFF_ERROR_INVALID_PARAMETER))
                log_debug("%s: %s", error, msg);
        else
                json_object_object_add(p, "message", json_object_new_string(msg));
        job_error(j, j->r, error, p);
        json_object_put(p);
}

static void reply_store_error(struct job *j, const char *message) {
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "path", json_object_new_string(svff_store_path(j->m->store)));
        json_object_object_add(p, "message", json_object_new_string(message));
        job_error(j, -EIO, SVFF_ERROR_STORE, p);
        json_object_put(p);
}

static bool commit_or_reply(struct job *j) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

        if (manager_commit(j->m, &err) >= 0)
                return true;
        reply_store_error(j, svff_error_message(&err));
        return false;
}

static void reply_ok(struct job *j, const char *mode) {
        struct json_object *p = json_object_new_object();

        json_object_object_add(p, "vf", json_object_new_string(j->vf));
        if (mode)
                json_object_object_add(p, "mode", json_object_new_string(mode));
        json_object_object_add(p, "assignment", assignment_json(&j->rec));
        if (j->call)
                call_reply(j->call, p);
        else
                j->answer_r = 0;
        json_object_put(p);
}

static void job_finish(struct job *j) {
        hv_vf_clear_busy(j->m->hv, j->vf);
        job_free(j);
}

/* vf in the last snapshot, with its PF (ret_pf optional), or NULL. */
static const struct svff_vf *snapshot_vf(struct manager *m, const char *vf, const struct svff_pf **ret_pf) {
        for (size_t i = 0; m->snapshot && i < m->snapshot->n_pfs; i++) {
                const struct svff_vf *v = svff_pf_find_vf(m->snapshot->pfs[i], vf);

                if (v) {
                        if (ret_pf)
                                *ret_pf = m->snapshot->pfs[i];
                        return v;
                }
        }
        return NULL;
}

/* Where vf sits: its PF, its index and the PF's count, from svff's
 * records, else the last snapshot; NULL when neither has it (a VF made
 * since). The main thread reads no sysfs for it: a VF's attributes may
 * wait for its device's lock. */
static const char *vf_place(struct manager *m, const char *vf, unsigned *ret_index, unsigned *ret_numvfs) {
        const struct svff_pf *spf = NULL;
        const struct svff_vf *v;
        struct json_object *rec;
        const char *pf = NULL;

        *ret_index = *ret_numvfs = 0;
        if (svff_store_get_vf(m->store, vf, &pf, NULL) > 0 && pf) {
                rec = json_object_object_get(svff_store_vfs(m->store), vf);
                (void) svff_json_get_unsigned(rec, "index", ret_index);
                (void) svff_store_get_pf(m->store, pf, ret_numvfs, NULL);
                return pf;
        }
        v = snapshot_vf(m, vf, &spf);
        if (!v)
                return NULL;
        *ret_index = v->index;
        *ret_numvfs = spf->numvfs;
        return spf->address;
}

/* A dry run's answer: j's plan, with what its reply names; nothing was
 * journaled or changed. */
static void reply_dry_run(struct job *j, bool bind) {
        static const enum svff_reconf_change_kind kinds[] = {
                [JOB_ATTACH] = SVFF_CHANGE_ATTACH, [JOB_DETACH] = SVFF_CHANGE_DETACH,
                [JOB_PAUSE] = SVFF_CHANGE_PAUSE, [JOB_UNPAUSE] = SVFF_CHANGE_UNPAUSE,
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *plan = NULL;
        struct svff_reconf_change c = { kinds[j->kind], bind, *j->class_pf != '\0' };
        /* The assignment as the change finds it (attach: as it will be
         * recorded; a detach of a paused one: out of every definition). */
        struct svff_reconf_item it = { .a = j->rec };
        struct svff_reconf_input in = { .driver = VFIO_DRIVER, .items = &it, .n_items = 1 };
        struct json_object *p;
        int r;

        snprintf(it.vf, sizeof(it.vf), "%s", j->vf);
        in.pf = vf_place(j->m, j->vf, &it.index, &in.numvfs);
        if (!in.pf) {
                job_errorf(j, -ENODEV, SVFF_ERROR_OPERATION_FAILED, "device", j->vf,
                           "The %s of VF %s could not be planned: svffd has not seen the VF under its PF yet; ask "
                           "again in a moment ('svffctl list' shows it once seen).", job_names[j->kind], j->vf);
                return;
        }
        r = svff_reconf_plan_new_change(&in, &c, &plan);
        if (r < 0) {
                job_errorf(j, r, SVFF_ERROR_INTERNAL, "device", j->vf, "Planning the %s of VF %s failed: %s.",
                           job_names[j->kind], j->vf, strerror(-r));
                return;
        }
        p = json_object_new_object();
        if (!p) {
                job_errorf(j, -ENOMEM, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        json_object_object_add(p, "vf", json_object_new_string(j->vf));
        if (j->kind == JOB_DETACH)
                json_object_object_add(p, "domain", json_object_new_string(it.a.domain));
        else
                json_object_object_add(p, "assignment", assignment_json(&it.a));
        /* A pause's mode is the domain's QEMU's to say, when it runs. */
        if (j->kind == JOB_UNPAUSE)
                json_object_object_add(p, "mode", json_object_new_string(it.a.pause_mode == SVFF_PAUSE_NATIVE
                                                                                 ? "native" : "detach"));
        json_object_object_add(p, "dry_run", json_object_new_boolean(true));
        json_object_object_add(p, "executable", json_object_new_boolean(true));
        plan_set_deadlines(j->m, plan);
        json_object_object_add(p, "plan", svff_reconf_plan_to_json(plan));
        call_reply(j->call, p);
        json_object_put(p);
}

static int job_resubmit(struct job *j, enum job_phase phase) {
        j->phase = phase;
        return worker_pool_submit(hv_pool(j->m->hv), job_run, j);
}

static bool resolve(struct svff_assignment *a, const struct probe *p) {
        return svff_assignment_resolve(a, p->found_live, p->found_config, p->hd.alias, p->hd.guest_address);
}

/* Puts a (or no record) into the store's memory. */
static void store_put(struct manager *m, const char *vf, const struct svff_assignment *a, bool keep) {
        if (!keep)
                svff_store_remove_assignment(m->store, vf);
        else if (svff_store_set_assignment(m->store, vf, a) < 0)
                log_error("Out of memory recording VF %s.", vf);
}

/* Journals the change before libvirt is asked for it. On failure the
 * store's memory is as before, the caller answered, and false. */
static bool commit_intent(struct job *j) {
        struct manager *m = j->m;
        bool ok;
        char name[64];

        j->intent = j->kind == JOB_ATTACH ? j->rec : j->prev;
        j->intent.intent = job_intents[j->kind];
        if (svff_store_set_assignment(m->store, j->vf, &j->intent) < 0) {
                job_errorf(j, -ENOMEM, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                ok = false;
        } else
                ok = commit_or_reply(j);
        if (!ok) {
                store_put(m, j->vf, &j->prev, j->kind != JOB_ATTACH);
                return false;
        }
        snprintf(name, sizeof(name), "after-%s-intent", job_names[j->kind]);
        fault_point(name, 0);
        return true;
}

/* The final commit, where tests make the store write fail. */
static int commit_final(struct job *j, struct svff_error *err) {
        char name[64];

        snprintf(name, sizeof(name), "fail-%s-commit", job_names[j->kind]);
        if (fault_inject(name, 0))
                return svff_error_set(err, -EIO, "Failed to write store '%s': %s (injected)",
                                      svff_store_path(j->m->store), strerror(EIO));
        return manager_commit(j->m, err);
}

/* libvirt refused or failed. The probe tells where the device is; when
 * it could not be read the intent stays, and with it the VF out of the
 * pool, until recovery can. */
static void act_failed(struct job *j) {
        struct manager *m = j->m;
        const char *kind = job_names[j->kind];
        const char *mode = j->mode != SVFF_PAUSE_NONE ? svff_pause_mode_to_string(j->mode) : NULL;
        const char *msg = svff_error_is_set(&j->err) ? svff_error_message(&j->err) : strerror(-j->r);
        struct svff_assignment a = j->intent;
        bool present = j->probe.found_live || j->probe.found_config, keep;
        char ev[64];

        log_warning("%s of VF %s failed: %s", kind, j->vf, msg);
        /* What the class step left on the device is what the VF's
         * record says (the policy's again when the attach was undone). */
        if (j->class_rec)
                (void) classes_record_vf(m, j->vf, TAKE_PTR(j->class_rec));
        if (!j->have_probe || j->probe.r < 0) {
                log_warning("Cannot read domain '%s' to see where VF %s is; the %s stays journaled and the VF "
                            "stays out of the pool until svffd can.", a.domain, j->vf, kind);
                store_put(m, j->vf, &a, true);
        } else {
                /* A refused detach or pause leaves the device where it
                 * was; past the deadline the guest may still let go. */
                if ((j->kind == JOB_DETACH || j->kind == JOB_PAUSE) && j->r != -ETIMEDOUT && present) {
                        a = j->prev;
                        keep = true;
                } else
                        keep = resolve(&a, &j->probe);
                store_put(m, j->vf, &a, keep);
                if (keep)
                        j->rec = a;
                if (!commit_or_reply(j))
                        goto out;
        }
        snprintf(ev, sizeof(ev), "vf-%s-%s", kind, j->r == -ETIMEDOUT ? "pending" : "failed");
        emit(m, ev, j->vf, j->kind == JOB_ATTACH ? NULL : &j->rec, mode, j->error, msg);
        reply_job_error(j);
out:
        job_finish(j);
}

static void act_done(struct job *j) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct manager *m = j->m;
        const char *mode = j->mode != SVFF_PAUSE_NONE ? svff_pause_mode_to_string(j->mode) : NULL;
        char name[64];

        snprintf(name, sizeof(name), "after-%s-libvirt", job_names[j->kind]);
        fault_point(name, 0);
        if (j->r < 0) {
                act_failed(j);
                return;
        }

        j->rec.intent = SVFF_INTENT_NONE;
        if (j->kind == JOB_PAUSE || j->kind == JOB_UNPAUSE) {
                j->rec.state = j->kind == JOB_PAUSE ? SVFF_ASSIGN_PAUSED : SVFF_ASSIGN_ATTACHED;
                j->rec.pause_mode = j->kind == JOB_PAUSE ? j->mode : SVFF_PAUSE_NONE;
        }
        store_put(m, j->vf, &j->rec, j->kind != JOB_DETACH);
        if (j->kind == JOB_ATTACH && j->class_rec && j->class_settings) {
                struct json_object *state = NULL;

                (void) json_object_object_get_ex(j->class_rec, "state", &state);
                (void) classes_record_assignment(m, j->vf, json_object_get(j->class_settings),
                                                 json_object_get(state));
        }
        if (j->class_rec)
                (void) classes_record_vf(m, j->vf, TAKE_PTR(j->class_rec));
        if (j->kind == JOB_DETACH && j->class_message)
                log_warning("VF %s left domain '%s', but its class state could not be released: %s. The VF's "
                            "next attach releases it before anything else.", j->vf, j->rec.domain,
                            j->class_message);
        if (commit_final(j, &err) < 0) {
                j->store_message = strdup(svff_error_message(&err));
                if (j->kind != JOB_DETACH && job_resubmit(j, PHASE_UNDO) >= 0)
                        return;
                /* Not undone: the memory says what libvirt did, the disk
                 * keeps the intent, and both resolve to the same. */
                reply_store_error(j, svff_error_message(&err));
                job_finish(j);
                return;
        }

        switch (j->kind) {
        case JOB_ATTACH:
                log_info("VF %s attached to domain '%s' at %s (%s%s%s).", j->vf, j->rec.domain,
                         *j->rec.guest_address ? j->rec.guest_address : "an address libvirt chooses at start",
                         j->rec.live ? "live" : "", j->rec.live && j->rec.config ? "+" : "",
                         j->rec.config ? "config" : "");
                emit(m, "vf-attached", j->vf, &j->rec, NULL, NULL, NULL);
                reply_ok(j, NULL);
                break;
        case JOB_DETACH: {
                struct json_object *p = json_object_new_object();

                log_info("VF %s detached from domain '%s'%s.", j->vf, j->rec.domain,
                         j->domain_gone ? " (the domain no longer exists)" : "");
                emit(m, "vf-detached", j->vf, &j->rec, NULL, NULL,
                     j->domain_gone ? "the domain no longer exists" : NULL);
                json_object_object_add(p, "vf", json_object_new_string(j->vf));
                json_object_object_add(p, "domain", json_object_new_string(j->rec.domain));
                if (j->call)
                        call_reply(j->call, p);
                else
                        j->answer_r = 0;
                json_object_put(p);
                break;
        }
        default:
                log_info("VF %s in domain '%s' %s (%s).", j->vf, j->rec.domain,
                         j->kind == JOB_PAUSE ? "paused" : "unpaused", mode);
                emit(m, j->kind == JOB_PAUSE ? "vf-paused" : "vf-unpaused", j->vf, &j->rec, mode, NULL, NULL);
                reply_ok(j, mode);
                break;
        }
        job_finish(j);
}

/* The final commit failed and the change was taken back (or not). */
static void undo_done(struct job *j) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *msg = NULL;
        struct svff_assignment a = j->intent;
        const char *kind = job_names[j->kind];
        bool keep;

        if (j->probe.r < 0) {
                /* Where the device is now is unknown: the intent says so. */
                store_put(j->m, j->vf, &a, true);
                keep = true;
        } else {
                keep = resolve(&a, &j->probe);
                store_put(j->m, j->vf, &a, keep);
        }
        if (j->r >= 0)
                log_warning("The %s of VF %s was taken back: svffd could not record it.", kind, j->vf);
        else
                log_error("The %s of VF %s could not be recorded nor taken back (%s); recorded as %s.", kind, j->vf,
                          svff_error_is_set(&j->err) ? svff_error_message(&j->err) : strerror(-j->r),
                          !keep ? "free" : a.intent != SVFF_INTENT_NONE ? "unresolved" : svff_assign_state_to_string(a.state));
        /* Best effort: when the store works again, the disk says the same. */
        (void) manager_commit(j->m, &err);
        if (asprintf(&msg, "%s; the %s of VF %s %s", strna(j->store_message), kind, j->vf,
                     j->r >= 0 ? "was undone" : "could not be undone and is resolved against libvirt") < 0)
                msg = NULL;
        emit(j->m, j->kind == JOB_ATTACH ? "vf-attach-failed" : j->kind == JOB_PAUSE ? "vf-pause-failed"
                                                                                      : "vf-unpause-failed",
             j->vf, keep ? &a : NULL, NULL, SVFF_ERROR_STORE, msg);
        reply_store_error(j, msg ?: "Failed to write the store");
        job_finish(j);
}

static void recover_done(struct job *j) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_assignment a = j->intent;
        const char *intent = svff_assign_intent_to_string(j->intent.intent);
        bool keep;

        if (j->probe.r < 0) {
                log_warning("Cannot read domain '%s' yet to resolve the unfinished %s of VF %s; the VF stays out "
                            "of the pool.", a.domain, intent, j->vf);
                job_finish(j);
                return;
        }
        keep = resolve(&a, &j->probe);
        store_put(j->m, j->vf, &a, keep);
        if (manager_commit(j->m, &err) < 0)
                log_warning("Resolved the unfinished %s of VF %s in memory only; the next start resolves it again.",
                            intent, j->vf);
        log_info("Unfinished %s of VF %s in domain '%s' resolved: %s.", intent, j->vf, a.domain,
                 keep ? svff_assign_state_to_string(a.state) : "the VF is not in the domain, no assignment");
        emit(j->m, "assignment-recovered", j->vf, &a, NULL, NULL,
             keep ? svff_assign_state_to_string(a.state) : "not assigned");
        job_finish(j);
}

static void attach_prepared(struct job *j) {
        if (j->r < 0) {
                const char *msg = svff_error_is_set(&j->err) ? svff_error_message(&j->err) : strerror(-j->r);

                if (!j->dry_run) {
                        log_warning("attach of VF %s failed: %s", j->vf, msg);
                        emit(j->m, "vf-attach-failed", j->vf, NULL, NULL, j->error, msg);
                }
                reply_job_error(j);
                job_finish(j);
                return;
        }
        if (j->dry_run) {
                reply_dry_run(j, j->would_bind);
                job_finish(j);
                return;
        }
        if (!commit_intent(j)) {
                job_finish(j);
                return;
        }
        if (job_resubmit(j, PHASE_ACT) < 0) {
                store_put(j->m, j->vf, &j->prev, false);
                job_errorf(j, -ESHUTDOWN, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                job_finish(j);
        }
}

static void job_done(void *userdata) {
        struct job *j = userdata;
        struct manager *m = j->m;

        if (j->r == -ENOTCONN)
                hv_conn_failed(m->hv, j->conn);
        if (j->bound) {
                j->bound = false;
                manager_sysfs_changed(m, NULL);
        }
        if (j->class_failed) {
                j->class_failed = false;
                metrics_count_provision_failure(m->metrics);
        }

        if (j->kind == JOB_RECOVER)
                recover_done(j);
        else if (j->phase == PHASE_PREPARE)
                attach_prepared(j);
        else if (j->phase == PHASE_ACT)
                act_done(j);
        else
                undo_done(j);
}

/* Takes j; answers the call on every path. */
/* The PF svff recorded vf under, for the log's SVFF_PF= ("" if none). */
static const char *vf_pf(struct manager *m, const char *vf, char pf[static SVFF_PCI_ADDR_STRLEN]) {
        const char *p = NULL;

        pf[0] = '\0';
        if (svff_store_get_vf(m->store, vf, &p, NULL) > 0 && p)
                snprintf(pf, SVFF_PCI_ADDR_STRLEN, "%s", p);
        return pf[0] ? pf : NULL;
}

static void job_submit(struct manager *m, struct job *j) {
        char pf[SVFF_PCI_ADDR_STRLEN];
        int r;

        LOG_CONTEXT(.pf = vf_pf(m, j->vf, pf), .vf = j->vf,
                    .domain = j->rec.domain[0] ? j->rec.domain : j->domain_id,
                    .operation = job_names[j->kind]);

        r = hv_vf_set_busy(m->hv, j->vf);
        if (r < 0) {
                job_errorf(j, -EBUSY, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", j->vf,
                            "Another attach, detach, pause or unpause of VF %s is in progress; try again when it is done.",
                            j->vf);
                job_free(j);
                return;
        }
        j->conn = hv_conn_ref(m->hv, &j->err);
        if (!j->conn) {
                j->error = SVFF_ERROR_HYPERVISOR_UNAVAILABLE;
                j->r = -ENOTCONN;
                reply_job_error(j);
                job_finish(j);
                return;
        }
        /* Attach journals once PREPARE knows the domain's UUID. */
        if (j->kind != JOB_ATTACH) {
                j->prev_state = j->rec.state;
                if (!commit_intent(j)) {
                        job_finish(j);
                        return;
                }
        }
        if (job_resubmit(j, j->kind == JOB_ATTACH ? PHASE_PREPARE : PHASE_ACT) < 0) {
                if (j->kind != JOB_ATTACH)
                        store_put(m, j->vf, &j->prev, true);
                job_errorf(j, -ESHUTDOWN, SVFF_ERROR_SHUTTING_DOWN, NULL, NULL, "svffd is shutting down.");
                job_finish(j);
        }
}

static struct job *job_new(struct manager *m, struct call *call, enum job_kind kind, const char *vf) {
        struct job *j = calloc(1, sizeof(*j));

        if (!j) {
                if (call)
                        if (call)
                                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return NULL;
        }
        j->kind = kind;
        j->m = m;
        j->call = call_ref(call);
        j->ctx = svff_ctx_ref(m->ctx);
        snprintf(j->vf, sizeof(j->vf), "%s", vf);
        j->detach_timeout = m->config.detach_timeout_usec;
        j->pause_cmd = strdup(m->config.device_pause_command);
        j->unpause_cmd = strdup(m->config.device_unpause_command);
        if (!j->pause_cmd || !j->unpause_cmd) {
                job_free(j);
                if (call)
                        if (call)
                                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return NULL;
        }
        return j;
}

/* ---- Attach ---- */

/* The refusal of a change while libvirt is not connected, with the
 * reason the last connection attempt gave. */
static void reply_hv_unavailable(struct manager *m, struct call *call) {
        struct job j = { .m = m, .call = call, .error = SVFF_ERROR_HYPERVISOR_UNAVAILABLE, .r = -ENOTCONN };

        (void) hv_conn_ref(m->hv, &j.err);
        reply_job_error(&j);
        svff_error_free(&j.err);
}

/* The operation in progress on vf's PF (an init, release or reconf
 * owns its VFs' records until it ends), or NULL. */
static struct operation *vf_operation(struct manager *m, const char *vf) {
        const char *pf = NULL;

        if (svff_store_get_vf(m->store, vf, &pf, NULL) <= 0 || !pf)
                return NULL;
        return manager_find_operation(m, pf);
}

/* The PF of vf: as svff recorded it, else as the snapshot has it; NULL
 * when neither knows the VF. */
static const char *pf_of_vf(struct manager *m, const char *vf) {
        unsigned index, numvfs;

        return vf_place(m, vf, &index, &numvfs);
}

/* Whether vf may not be handed out: it is assigned (or its record cannot
 * be read), or its PF is busy for a change of it (busy.h). call
 * (optional) is answered with why. */
static bool vf_taken(struct manager *m, const char *vf, struct call *call) {
        struct svff_assignment a;
        int r = svff_store_get_assignment(m->store, vf, &a);

        if (r == 0)
                return call ? pf_busy_refuse(m, pf_of_vf(m, vf), vf, PF_BUSY_ANY, call)
                            : pf_busy(m, pf_of_vf(m, vf), vf, PF_BUSY_ANY, NULL) < 0;
        if (call) {
                if (r > 0 && a.intent != SVFF_INTENT_NONE)
                        call_errorf(call, SVFF_ERROR_ALREADY_ASSIGNED, "device", vf,
                                    "VF %s has an unfinished %s for domain '%s', which svffd resolves against libvirt; "
                                    "it counts as taken until then.", vf, svff_assign_intent_to_string(a.intent),
                                    a.domain);
                else if (r > 0)
                        call_errorf(call, SVFF_ERROR_ALREADY_ASSIGNED, "device", vf,
                                    "VF %s is already assigned to domain '%s' (%s); detach it first.", vf, a.domain,
                                    svff_assign_state_to_string(a.state));
                else
                        call_errorf(call, SVFF_ERROR_ALREADY_ASSIGNED, "device", vf,
                                    "VF %s has an assignment record svffd cannot read; it counts as taken.", vf);
        }
        return true;
}

/* Fills j's class fields for VF j->vf (its store record vrec): the PF
 * and index, the PF's policy's settings (what every tenant gets; never
 * what the VF's record says an earlier tenant had), and the VF's class
 * record. -ENOENT when svff did not set the VF up; 0 with class_pf
 * empty when the VF has no class record and none is asked for. */
static int job_class_setup(struct manager *m, struct job *j, struct json_object *vrec) {
        struct json_object *crec = classes_vf_record(m, j->vf);
        const char *pf = NULL;

        if (!crec && !j->class_settings)
                return 0;
        if (!vrec || svff_store_get_vf(m->store, j->vf, &pf, NULL) <= 0 || !pf ||
            svff_json_get_unsigned(vrec, "index", &j->class_index) < 0)
                return -ENOENT;
        if (crec && json_object_deep_copy(crec, &j->class_recorded, NULL) < 0)
                return -ENOMEM;
        snprintf(j->class_pf, sizeof(j->class_pf), "%s", pf);
        j->class_policy = classes_policy_settings(m, pf);
        return 0;
}

#define FAILOVER_WHAT                                                                                   \
        "the MAC or alias of the domain's virtio-net standby (<teaming type='persistent'/>), such as "         \
        "52:54:00:12:34:56 or ua-net0"

/* An Attach call's request, decoded once from its parameters; owned
 * (attach_request_free()) where it waits for a snapshot (attach --pf). */
struct attach_request {
        char vf[SVFF_PCI_ADDR_STRLEN];          /* "": any free VF of pf */
        char pf[SVFF_PCI_ADDR_STRLEN];
        char domain[SVFF_DOMAIN_NAME_MAX];
        bool live, config, dry_run;
        char guest_address[SVFF_PCI_ADDR_STRLEN];       /* canonical; "": libvirt's choice */
        char failover[64];
        struct json_object *class;              /* a reference; NULL: none */
};

static void attach_request_free(void *userdata) {
        struct attach_request *req = userdata;

        if (!req)
                return;
        json_object_put(req->class);
        free(req);
}

static void attach_start(struct manager *m, struct call *call, const char *vf, const struct attach_request *req) {
        const char *dup = NULL;
        int r;
        const char *drv = NULL;
        struct job *j;
        struct json_object *rec = NULL;

        if (vf_taken(m, vf, call))
                return;

        j = job_new(m, call, JOB_ATTACH, vf);
        if (!j)
                return;
        j->domain_id = strdup(req->domain);
        j->assignments = NULL;
        if (json_object_deep_copy(svff_store_assignments(m->store), &j->assignments, NULL) < 0 || !j->domain_id) {
                job_free(j);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        j->dry_run = req->dry_run;
        if (req->live || req->config)
                j->flags = (req->live ? SVFF_HV_LIVE : 0) | (req->config ? SVFF_HV_CONFIG : 0);
        snprintf(j->guest_address, sizeof(j->guest_address), "%s", req->guest_address);
        snprintf(j->failover, sizeof(j->failover), "%s", req->failover);
        /* Policy: bind to vfio-pci only a VF whose recorded driver is
         * vfio-pci (svff set it up for assignment); anything else is the
         * operator's to change. */
        if (json_object_object_get_ex(svff_store_vfs(m->store), vf, &rec) &&
            svff_json_get_string(rec, "driver", &drv) >= 0 && streq(drv, VFIO_DRIVER))
                j->may_bind = true;
        if (req->class && json_object_object_length(req->class) > 0) {
                /* The keys are snake_case; kebab-case, that of earlier
                 * releases, is still read for this one. */
                r = svff_json_snake_keys(req->class, &j->class_settings, &dup);
                if (r == -ENOTUNIQ) {
                        _cleanup_free_ char *snake = svff_json_key_snake(dup);

                        call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "class",
                                    "Parameter 'class' gives '%s' twice, as '%s' (the old spelling) and '%s'; "
                                    "give it once, as '%s'.", strna(snake), dup, strna(snake), strna(snake));
                        job_free(j);
                        return;
                }
                if (r < 0) {
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        job_free(j);
                        return;
                }
        }
        r = job_class_setup(m, j, rec);
        if (r == -ENOMEM) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                job_free(j);
                return;
        }
        if (r < 0 && j->class_settings) {
                call_errorf(call, SVFF_ERROR_NOT_MANAGED, "device", vf,
                            "VF %s was not set up by svff ('svffctl init'), so it has no device class to "
                            "provision the class settings with.", vf);
                job_free(j);
                return;
        }
        job_submit(m, j);
}

static void attach_from_pool(struct manager *m, struct call *call, void *userdata) {
        struct attach_request *req = userdata;
        struct snapshot *s = m->snapshot;
        const struct svff_pf *found;
        size_t n_taken = 0;

        found = snapshot_pf(s, req->pf);
        if (!found) {
                call_errorf(call, SVFF_ERROR_NO_SUCH_DEVICE, "device", req->pf,
                            "No SR-IOV PF %s; 'svffctl list' shows the PFs there are.", req->pf);
                goto finish;
        }
        /* Not a VF of a PF an operation is changing, nor one its kept
         * journal is about to remove. */
        if (pf_busy_refuse(m, req->pf, req->pf, PF_BUSY_OPERATION | PF_BUSY_JOURNAL | PF_BUSY_WRITE, call))
                goto finish;
        for (size_t i = 0; i < found->n_vfs; i++) {
                const struct svff_vf *vf = &found->vfs[i];

                if (!vf->driver || !streq(vf->driver, VFIO_DRIVER))
                        continue;
                if (vf_taken(m, vf->address, NULL)) {
                        n_taken++;
                        continue;
                }
                attach_start(m, call, vf->address, req);
                goto finish;
        }
        call_errorf(call, SVFF_ERROR_NO_FREE_VF, "device", req->pf,
                    "PF %s has no free VF on %s (%zu of %zu VFs taken); create more with 'svffctl init' "
                    "or detach one.", req->pf, VFIO_DRIVER, n_taken, found->n_vfs);
finish:
        attach_request_free(req);
}

/* Attach's parameters as given (params.h). */
struct attach_params {
        char vf[SVFF_PCI_ADDR_STRLEN], pf[SVFF_PCI_ADDR_STRLEN];
        const char *domain, *guest_address, *failover;
        bool live, config, dry_run;
        struct json_object *class;
};

#define AP(field) offsetof(struct attach_params, field)
static const struct param attach_param_table[] = {
        { "domain", PARAM_STRING, true, AP(domain), 0, "a libvirt domain name or UUID" },
        { "live", PARAM_BOOL, false, AP(live), 0, "true or false" },
        { "config", PARAM_BOOL, false, AP(config), 0, "true or false" },
        { "dry_run", PARAM_BOOL, false, AP(dry_run), 0, "true or false" },
        { "guest_address", PARAM_STRING_OR_NULL, false, AP(guest_address), 0, "a string such as 02:00.0" },
        { "failover", PARAM_STRING_OR_NULL, false, AP(failover), 0, FAILOVER_WHAT },
        { "class", PARAM_OBJECT_OR_NULL, false, AP(class), 0,
          "an object of device-class settings such as {\"namespace\": 1}" },
        { "vf", PARAM_ADDRESS, false, AP(vf), 0, NULL },
        { "pf", PARAM_ADDRESS, false, AP(pf), 0, NULL },
        PARAM_END,
};

static void method_attach(struct manager *m, struct call *call, void *params) {
        const struct attach_params p = *(const struct attach_params *) params;
        struct attach_request req = {}, *owned;

        if (!*p.domain || strlen(p.domain) >= sizeof(req.domain)) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "domain",
                            "Parameter 'domain' (a libvirt domain name or UUID) is required.");
                return;
        }
        if (p.failover && (!*p.failover || strlen(p.failover) >= sizeof(req.failover))) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "failover",
                            "Parameter 'failover' must be %s.", FAILOVER_WHAT);
                return;
        }
        if (!*p.vf == !*p.pf) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "vf",
                            "Give either 'vf' (that VF) or 'pf' (any free VF of it), not %s.",
                            *p.vf ? "both" : "neither");
                return;
        }
        if (p.guest_address && svff_pci_addr_canonicalize(p.guest_address, req.guest_address) < 0) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "guest_address",
                            "'%.64s' is not a guest PCI address; use BB:SS.F or DDDD:BB:SS.F.", p.guest_address);
                return;
        }
        if (!hv_connected(m->hv)) {
                reply_hv_unavailable(m, call);
                return;
        }
        snprintf(req.vf, sizeof(req.vf), "%s", p.vf);
        snprintf(req.pf, sizeof(req.pf), "%s", p.pf);
        snprintf(req.domain, sizeof(req.domain), "%s", p.domain);
        snprintf(req.failover, sizeof(req.failover), "%s", p.failover ?: "");
        req.live = p.live;
        req.config = p.config;
        req.dry_run = p.dry_run;
        req.class = p.class;
        if (*req.vf) {
                attach_start(m, call, req.vf, &req);
                return;
        }
        owned = malloc(sizeof(*owned));
        if (!owned) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        *owned = req;
        owned->class = json_object_get(req.class);
        manager_with_snapshot(m, call, attach_from_pool, owned, attach_request_free);
}

const struct method attach_method = {
        "Attach", method_attach, attach_param_table, sizeof(struct attach_params), NULL,
        METHOD_MUTATING | METHOD_PRIVILEGED,
};

/* ---- Detach, Pause, Unpause ---- */

/* The job for kind on vf and its record a; call may be NULL (an
 * operation's own detach, assign_detach()). */
static struct job *vf_job_new(struct manager *m, struct call *call, enum job_kind kind, const char *vf,
                              const struct svff_assignment *a) {
        struct job *j;

        j = job_new(m, call, kind, vf);
        if (!j)
                return NULL;
        j->rec = j->prev = *a;
        j->domain_id = strdup(a->uuid);
        if (!j->domain_id) {
                job_free(j);
                if (call)
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return NULL;
        }
        /* A paused (detached) VF is back on the host side: detaching it
         * only drops the reservation. */
        if (kind == JOB_DETACH && a->state == SVFF_ASSIGN_PAUSED && a->pause_mode == SVFF_PAUSE_DETACH)
                j->rec.live = j->rec.config = false;
        /* A reconf may leave a paused VF unbound (its bind failed): the
         * same policy as Attach lets unpause bind it again. */
        if (kind == JOB_UNPAUSE) {
                struct json_object *vrec;
                const char *drv;

                if (json_object_object_get_ex(svff_store_vfs(m->store), vf, &vrec) &&
                    svff_json_get_string(vrec, "driver", &drv) >= 0 && streq(drv, VFIO_DRIVER))
                        j->may_bind = true;
        }
        if (kind == JOB_DETACH || kind == JOB_UNPAUSE) {
                struct json_object *vrec = NULL, *acls, *settings;

                acls = svff_store_get_assignment_class(m->store, vf);
                if (kind == JOB_UNPAUSE && acls && json_object_object_get_ex(acls, "settings", &settings) &&
                    json_object_is_type(settings, json_type_object) &&
                    !(j->class_settings = classes_recorded_settings(settings))) {
                        job_free(j);
                        if (call)
                                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        return NULL;
                }
                (void) json_object_object_get_ex(svff_store_vfs(m->store), vf, &vrec);
                if (job_class_setup(m, j, vrec) == -ENOMEM) {
                        job_free(j);
                        if (call)
                                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        return NULL;
                }
        }
        return j;
}

/* Detach, Pause and Unpause: a VF, and whether only to plan. */
struct vf_params {
        char vf[SVFF_PCI_ADDR_STRLEN];
        bool dry_run;
};

static const struct param vf_param_table[] = {
        { "vf", PARAM_ADDRESS, true, offsetof(struct vf_params, vf) },
        { "dry_run", PARAM_BOOL, false, offsetof(struct vf_params, dry_run), 0, "true or false" },
        PARAM_END
};

/* What an unpause would bind: a VF svff keeps on vfio-pci, off it now. */
static bool unpause_would_bind(struct manager *m, const struct job *j) {
        const struct svff_vf *v;

        if (!j->may_bind || j->rec.pause_mode == SVFF_PAUSE_NATIVE || !(v = snapshot_vf(m, j->vf, NULL)))
                return false;
        return !v->driver || !streq(v->driver, VFIO_DRIVER);
}

static void vf_method(struct manager *m, struct call *call, enum job_kind kind, const struct vf_params *params) {
        const struct vf_params in = *params;
        struct svff_assignment a;
        const char *vf = in.vf;
        struct job *j;
        int r;

        r = svff_store_get_assignment(m->store, vf, &a);
        if (r == 0) {
                call_errorf(call, SVFF_ERROR_NOT_ASSIGNED, "device", vf,
                            "VF %s is not assigned to any domain; 'svffctl list' shows the assignments.", vf);
                return;
        }
        if (r < 0) {
                call_errorf(call, SVFF_ERROR_STORE, "path", svff_store_path(m->store),
                            "The assignment record of VF %s in '%s' has the wrong shape.", vf,
                            svff_store_path(m->store));
                return;
        }
        if (a.intent != SVFF_INTENT_NONE) {
                call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", vf,
                            "VF %s has an unfinished %s that svffd resolves against libvirt once it can read the "
                            "domain; try again then.", vf, svff_assign_intent_to_string(a.intent));
                return;
        }
        /* A dry run refuses what the change would; the change finds a
         * VF already changing when it marks it busy (job_submit()). */
        if (pf_busy_refuse(m, pf_of_vf(m, vf), vf,
                           PF_BUSY_OPERATION | PF_BUSY_WRITE | (kind == JOB_UNPAUSE ? PF_BUSY_JOURNAL : 0) |
                           (in.dry_run ? PF_BUSY_ASSIGN : 0), call))
                return;
        if (kind == JOB_PAUSE && a.state != SVFF_ASSIGN_ATTACHED) {
                call_errorf(call, SVFF_ERROR_NOT_ATTACHED, "device", vf,
                            "VF %s is %s, not attached: there is nothing to pause.", vf,
                            svff_assign_state_to_string(a.state));
                return;
        }
        if (kind == JOB_UNPAUSE && a.state != SVFF_ASSIGN_PAUSED) {
                call_errorf(call, SVFF_ERROR_NOT_PAUSED, "device", vf,
                            "VF %s is %s, not held: there is nothing to unpause.", vf,
                            svff_assign_state_to_string(a.state));
                return;
        }
        /* The change would be refused so when it starts. */
        if (in.dry_run && !hv_connected(m->hv)) {
                reply_hv_unavailable(m, call);
                return;
        }
        j = vf_job_new(m, call, kind, vf, &a);
        if (!j)
                return;
        if (in.dry_run) {
                /* The domain is looked up when the change runs. */
                reply_dry_run(j, kind == JOB_UNPAUSE && unpause_would_bind(m, j));
                job_free(j);
                return;
        }
        job_submit(m, j);
}

void assign_detach(struct manager *m, const char *vf, assign_detach_fn done, void *userdata) {
        struct svff_assignment a;
        struct job *j;
        int r;

        r = svff_store_get_assignment(m->store, vf, &a);
        if (r <= 0) {
                done(m, vf, r == 0 ? -ENOENT : r, r == 0 ? SVFF_ERROR_NOT_ASSIGNED : SVFF_ERROR_STORE,
                     r == 0 ? "the VF is not assigned to any domain" : "its assignment record has the wrong shape",
                     userdata);
                return;
        }
        if (a.intent != SVFF_INTENT_NONE) {
                done(m, vf, -EBUSY, SVFF_ERROR_OPERATION_IN_PROGRESS,
                     "it has an unfinished assignment change that svffd resolves against libvirt first", userdata);
                return;
        }
        j = vf_job_new(m, NULL, JOB_DETACH, vf, &a);
        if (!j) {
                done(m, vf, -ENOMEM, SVFF_ERROR_INTERNAL, "Out of memory", userdata);
                return;
        }
        j->done = done;
        j->done_userdata = userdata;
        j->answer_r = -ECANCELED;
        job_submit(m, j);
}

static void method_detach(struct manager *m, struct call *call, void *params) {
        vf_method(m, call, JOB_DETACH, params);
}

static void method_pause(struct manager *m, struct call *call, void *params) {
        vf_method(m, call, JOB_PAUSE, params);
}

static void method_unpause(struct manager *m, struct call *call, void *params) {
        vf_method(m, call, JOB_UNPAUSE, params);
}

const struct method detach_method = {
        "Detach", method_detach, vf_param_table, sizeof(struct vf_params), NULL, METHOD_MUTATING | METHOD_PRIVILEGED,
};

const struct method pause_method = {
        "Pause", method_pause, vf_param_table, sizeof(struct vf_params), NULL, METHOD_MUTATING | METHOD_PRIVILEGED,
};

const struct method unpause_method = {
        "Unpause", method_unpause, vf_param_table, sizeof(struct vf_params), NULL,
        METHOD_MUTATING | METHOD_PRIVILEGED,
};

/* ---- lifecycle ---- */

/* A VF back in the pool without a detach (its domain undefined, or
 * stopped with a live-only assignment): its class state goes all the
 * same, on a worker, as a detach's does. Should this fail or not start,
 * the VF's next attach releases it first. */
struct hand_back {
        struct manager *m;
        struct svff_ctx *ctx;
        char vf[SVFF_PCI_ADDR_STRLEN];
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned index;
        struct json_object *policy, *recorded, *rec;
        struct svff_error err;
        int r;
};

static void hand_back_free(struct hand_back *hb) {
        svff_ctx_unref(hb->ctx);
        json_object_put(hb->policy);
        json_object_put(hb->recorded);
        json_object_put(hb->rec);
        svff_error_free(&hb->err);
        free(hb);
}

static void hand_back_done(void *userdata) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct hand_back *hb = userdata;
        struct manager *m = hb->m;

        hv_vf_clear_busy(m->hv, hb->vf);
        if (hb->r < 0)
                log_warning("VF %s is back in the pool, but its class state could not be released: %s. The VF's "
                            "next attach releases it before anything else.", hb->vf, svff_error_message(&hb->err));
        else if (hb->rec && !json_object_object_get_ex(svff_store_assignments(m->store), hb->vf, NULL)) {
                (void) classes_record_vf(m, hb->vf, TAKE_PTR(hb->rec));
                if (manager_commit(m, &err) < 0)
                        log_warning("Recording the class state of VF %s back in the pool failed: %s", hb->vf,
                                    svff_error_message(&err));
                else
                        log_info("VF %s back in the pool: its assignment's class state released.", hb->vf);
        }
        hand_back_free(hb);
}

static void hand_back_run(void *userdata) {
        struct hand_back *hb = userdata;

        hb->r = classes_handover_sync(hb->ctx, hb->pf, hb->index, hb->policy, NULL, hb->recorded, &hb->rec,
                                      &hb->err);
        if (worker_pool_post(hv_pool(hb->m->hv), hand_back_done, hb) < 0)
                log_error("Lost the class release of VF %s: out of memory.", hb->vf);
}

static void hand_back_start(struct manager *m, const char *vf) {
        struct json_object *crec = classes_vf_record(m, vf), *vrec = NULL;
        struct hand_back *hb;
        const char *pf = NULL;

        if (!crec || svff_store_get_vf(m->store, vf, &pf, NULL) <= 0 || !pf ||
            !json_object_object_get_ex(svff_store_vfs(m->store), vf, &vrec))
                return;
        hb = calloc(1, sizeof(*hb));
        if (!hb)
                return;
        hb->m = m;
        hb->ctx = svff_ctx_ref(m->ctx);
        snprintf(hb->vf, sizeof(hb->vf), "%s", vf);
        snprintf(hb->pf, sizeof(hb->pf), "%s", pf);
        hb->policy = classes_policy_settings(m, pf);
        if (svff_json_get_unsigned(vrec, "index", &hb->index) < 0 ||
            json_object_deep_copy(crec, &hb->recorded, NULL) < 0) {
                hand_back_free(hb);
                return;
        }
        /* an attach or detach of the VF now waits for this */
        if (hv_vf_set_busy(m->hv, vf) < 0) {
                hand_back_free(hb);
                return;
        }
        if (worker_pool_submit(hv_pool(m->hv), hand_back_run, hb) < 0) {
                hv_vf_clear_busy(m->hv, vf);
                hand_back_free(hb);
        }
}

static void on_change(const char *vf, const struct svff_assignment *a, enum svff_assign_outcome o, void *userdata) {
        struct manager *m = userdata;
        char pf[SVFF_PCI_ADDR_STRLEN];
        LOG_CONTEXT(.pf = vf_pf(m, vf, pf), .vf = vf, .domain = a ? a->domain : NULL,
                    .operation = "domain-event");

        switch (o) {
        case SVFF_ASSIGN_LIVE_AGAIN:
                log_info("Domain '%s' started: VF %s is live in it again.", a->domain, vf);
                break;
        case SVFF_ASSIGN_KEPT:
                log_info("Domain '%s' changed: VF %s stays assigned (%s).", a->domain, vf,
                         a->config ? "in its definition" : "while it runs");
                emit(m, "assignment-kept", vf, a, NULL, NULL,
                     a->config ? "domain stopped; the assignment is in its definition"
                               : "domain undefined; the VF stays until the domain stops");
                break;
        case SVFF_ASSIGN_CLOSED:
                log_info("Domain '%s' stopped: its live-only assignment of VF %s is closed.", a->domain, vf);
                emit(m, "assignment-closed", vf, a, NULL, NULL, "domain stopped; the live-only assignment is closed");
                hand_back_start(m, vf);
                break;
        case SVFF_ASSIGN_RELEASED:
                log_info("Domain '%s' was undefined: VF %s is back in the pool.", a->domain, vf);
                emit(m, "vf-unassigned", vf, a, NULL, NULL, "domain undefined; the VF is back in the pool");
                hand_back_start(m, vf);
                break;
        }
}

/* A lifecycle event held back while an operation owns some of the
 * domain's assignments: applied then, it would be overwritten by the
 * operation's own records (a reconf restores what it planned), or
 * overwrite them. */
struct deferred_event {
        struct deferred_event *next;
        char uuid[SVFF_UUID_STRLEN];
        char name[SVFF_DOMAIN_NAME_MAX];
        enum svff_domain_event ev;
};

struct assign_deferred {
        struct manager *m;
        struct deferred_event *head, **tail;
};

static bool domain_has_operation(struct manager *m, const char *uuid) {
        json_object_object_foreach(svff_store_assignments(m->store), vf, rec) {
                const char *u;

                if (svff_json_get_string(rec, "uuid", &u) >= 0 && streq(u, uuid) && vf_operation(m, vf))
                        return true;
        }
        return false;
}

static void apply_domain_event(struct manager *m, const char *uuid, const char *name, enum svff_domain_event ev) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        int r;

        r = svff_store_domain_event(m->store, uuid, name, ev, on_change, m);
        if (r < 0)
                log_error("Recording what domain '%s' did failed: %s", name, strerror(-r));
        else if (r > 0 && manager_commit(m, &err) < 0)
                log_error("Recording what domain '%s' did failed: %s", name, svff_error_message(&err));
}

/* An operation ended (the registry's hook): the events held back for its
 * domains are applied now, in order of arrival; a later event of the
 * same domain never overtakes an earlier one, so the first one still
 * held (its domain has another operation) holds the rest. Once the loop
 * ended nothing is applied: the store records what it knew, and the
 * next start reads the domains again. */
static void on_operation_removed(const char *pf, void *userdata) {
        struct assign_deferred *d = userdata;
        struct manager *m = d->m;

        if (m->exiting)
                return;
        while (d->head) {
                struct deferred_event *e = d->head;

                if (domain_has_operation(m, e->uuid))
                        return;
                log_debug("Applying the held-back event of domain '%s'.", e->name);
                d->head = e->next;
                if (!d->head)
                        d->tail = &d->head;
                apply_domain_event(m, e->uuid, e->name, e->ev);
                free(e);
        }
}

static void deferred_free(void *userdata) {
        struct assign_deferred *d = userdata;

        while (d->head) {
                struct deferred_event *e = d->head;

                d->head = e->next;
                free(e);
        }
        d->m->assign_deferred = NULL;
        free(d);
}

/* Made with the first event held back; the registry owns it from then. */
static struct assign_deferred *deferred_get(struct manager *m) {
        struct assign_deferred *d = m->assign_deferred;

        if (d)
                return d;
        d = calloc(1, sizeof(*d));
        if (!d)
                return NULL;
        d->m = m;
        d->tail = &d->head;
        if (registry_add_hook(m->registry, on_operation_removed, deferred_free, d) < 0) {
                free(d);
                return NULL;
        }
        m->assign_deferred = d;
        return d;
}

void assign_domain_event(struct manager *m, const char *uuid, const char *name, int event, int detail) {
        struct assign_deferred *d;
        struct deferred_event *e;
        enum svff_domain_event ev;

        if (event == VIR_DOMAIN_EVENT_UNDEFINED)
                ev = SVFF_DOMAIN_UNDEFINED;
        else if (event == VIR_DOMAIN_EVENT_STOPPED)
                ev = SVFF_DOMAIN_STOPPED;
        else if (event == VIR_DOMAIN_EVENT_STARTED)
                ev = SVFF_DOMAIN_STARTED;
        else
                return;
        d = m->assign_deferred;
        if ((!d || !d->head) && !domain_has_operation(m, uuid)) {
                apply_domain_event(m, uuid, name, ev);
                return;
        }
        d = deferred_get(m);
        e = d ? calloc(1, sizeof(*e)) : NULL;
        if (!e) {
                log_oom();
                return;
        }
        snprintf(e->uuid, sizeof(e->uuid), "%s", uuid);
        snprintf(e->name, sizeof(e->name), "%s", name);
        e->ev = ev;
        *d->tail = e;
        d->tail = &e->next;
        log_info("Domain '%s' changed while an operation owns its assignments; recording it once that ends.", name);
}

/* ---- recovery ---- */

void assign_recover(struct manager *m) {
        _cleanup_strv_free_ char **vfs = NULL;
        size_t n = 0;

        /* Collect first: starting a job marks the VF busy, nothing else. */
        json_object_object_foreach(svff_store_assignments(m->store), key, rec) {
                struct json_object *v;
                char **nv;

                if (!json_object_object_get_ex(rec, "intent", &v) || !v || hv_vf_busy(m->hv, key))
                        continue;
                nv = realloc(vfs, (n + 2) * sizeof(char *));
                if (!nv) {
                        log_oom();
                        return;
                }
                vfs = nv;
                vfs[n] = strdup(key);
                if (!vfs[n]) {
                        log_oom();
                        return;
                }
                vfs[++n] = NULL;
        }
        for (size_t i = 0; i < n; i++) {
                struct job *j;

                j = job_new(m, NULL, JOB_RECOVER, vfs[i]);
                if (!j)
                        return;
                if (svff_store_get_assignment(m->store, vfs[i], &j->intent) <= 0 ||
                    hv_vf_set_busy(m->hv, vfs[i]) < 0) {
                        job_free(j);
                        continue;
                }
                j->conn = hv_conn_ref(m->hv, &j->err);
                if (!j->conn) {
                        job_finish(j);
                        return;
                }
                {
                        char pf[SVFF_PCI_ADDR_STRLEN];
                        LOG_CONTEXT(.pf = vf_pf(m, vfs[i], pf), .vf = vfs[i], .domain = j->intent.domain,
                                    .operation = "recover");

                        log_info("Resolving the unfinished %s of VF %s in domain '%s' against libvirt.",
                                 svff_assign_intent_to_string(j->intent.intent), vfs[i], j->intent.domain);
                        if (worker_pool_submit(hv_pool(m->hv), job_run, j) < 0) {
                                job_finish(j);
                                return;
                        }
                }
        }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>

#include "busy.h"
#include "interface.h"
#include "journal.h"
#include "json-util.h"
#include "libvirt.h"
#include "macro.h"
#include "store.h"

static const char *article(const char *word) {
        return strchr("aeiou", word[0]) ? "An" : "A";
}

static int operation_busy(struct manager *m, const char *pf, const char *device, struct svff_error *err) {
        struct operation *op = manager_find_operation(m, pf);

        if (!op)
                return 0;
        if (streq(device, pf))
                return svff_error_set(err, -EBUSY, "%s %s of PF %s is in progress (%s, %u/%u); wait for it "
                                      "('svffctl status').", article(op->kind), op->kind, pf, op->phase, op->done,
                                      op->total);
        return svff_error_set(err, -EBUSY, "%s %s of PF %s, the PF of VF %s, is in progress (%s, %u/%u); try again "
                              "when it is done ('svffctl status').", article(op->kind), op->kind, pf, device,
                              op->phase, op->done, op->total);
}

static int vf_changing(struct manager *m, const char *vf, struct svff_error *err) {
        struct svff_assignment a;

        if (hv_vf_busy(m->hv, vf))
                return svff_error_set(err, -EBUSY, "Another attach, detach, pause or unpause of VF %s is in "
                                      "progress; try again when it is done.", vf);
        if (svff_store_get_assignment(m->store, vf, &a) > 0 && a.intent != SVFF_INTENT_NONE)
                return svff_error_set(err, -EBUSY, "VF %s has an unfinished %s that svffd resolves against "
                                      "libvirt; try again then.", vf, svff_assign_intent_to_string(a.intent));
        return 0;
}

static int assign_busy(struct manager *m, const char *pf, const char *device, struct svff_error *err) {
        if (!streq(device, pf))
                return vf_changing(m, device, err);
        json_object_object_foreach(svff_store_vfs(m->store), vf, rec) {
                const char *p;
                int r;

                if (svff_json_get_string(rec, "pf", &p) < 0 || !streq(p, pf))
                        continue;
                r = vf_changing(m, vf, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int journal_busy(struct manager *m, const char *pf, struct svff_error *err) {
        struct json_object *e = journal_get(m, pf), *rp = NULL;
        const char *op = "operation";
        unsigned target = 0;

        if (!e || manager_find_operation(m, pf))
                return 0;
        (void) svff_json_get_string(e, "op", &op);
        (void) svff_json_get_unsigned(e, "numvfs", &target);
        if (journal_recovery_waits(m, pf))
                /* reconf_recover() completes it on libvirt's connection */
                return svff_error_set(err, -EBUSY, "PF %s has an interrupted %s to %u VFs whose journal is kept: "
                                      "svffd completes it or rolls it back once connected to libvirt at '%s' "
                                      "(check that libvirtd runs); its VFs go and come back then, and with them "
                                      "any VF handed out now. Retry once it has.", pf, op, target, hv_uri(m->hv));
        if (svff_json_get_object(e, "reprogram", &rp) >= 0 && rp)
                return svff_error_set(err, -EBUSY, "PF %s has an interrupted reprogram whose journal is kept: its "
                                      "VFs go when it is completed, and with them any VF handed out now. Run "
                                      "'svffctl reprogram %s IMAGE' to flash again, or 'svffctl reconf %s %u' to "
                                      "take the PF as it is, then retry.", pf, pf, pf, target);
        return svff_error_set(err, -EBUSY, "PF %s has an interrupted %s to %u VFs whose journal is kept (its VF "
                              "count write failed, or passed its deadline and may still be in the kernel): its VFs "
                              "go when it is completed, and with them any VF handed out now. Once 'stuck writes' "
                              "in 'svffctl status' is 0, run 'svffctl %s %s %u' to complete it, then retry.",
                              pf, op, target, op, pf, target);
}

static int write_busy(struct manager *m, const char *pf, const char *device, struct svff_error *err) {
        char path[128], what[64];

        if (manager_find_operation(m, pf))
                return 0;       /* its own write, which it waits for */
        snprintf(path, sizeof(path), "bus/pci/devices/%s/sriov_numvfs", pf);
        if (streq(device, pf))
                snprintf(what, sizeof(what), "a change of it");
        else
                snprintf(what, sizeof(what), "a step on VF %s", device);
        if (svff_ctx_write_pending(m->ctx, path, NULL, NULL) > 0)
                return svff_error_set(err, -EBUSY, "A VF count write of PF %s passed its deadline and is still in "
                                      "the kernel (a VF held open, or a slow PF driver): %s would wait behind it. "
                                      "Try again once 'stuck writes' in 'svffctl status' is 0.", pf, what);
        if (svff_ctx_read_stuck(m->ctx, path, NULL) > 0)
                return svff_error_set(err, -EBUSY, "Another process is writing the VF count of PF %s, and the kernel "
                                      "holds the PF until that write ends: %s would wait behind it. Try again then.",
                                      pf, what);
        return 0;
}

/* The PF whose journal names vf in its plan: an assignment whose VF is
 * gone, which neither svff's VF records nor the snapshot know. */
static const char *journal_pf_of(struct manager *m, const char *vf) {
        struct json_object *entries = journal_entries(m);

        if (!entries)
                return NULL;
        json_object_object_foreach(entries, pf, entry)
                if (journal_entry_names_vf(entry, vf))
                        return pf;
        return NULL;
}

int pf_busy(struct manager *m, const char *pf, const char *device, unsigned what, struct svff_error *err) {
        int r = 0;

        if (!pf)
                pf = journal_pf_of(m, device);
        if (!pf)
                return (what & PF_BUSY_ASSIGN) ? vf_changing(m, device, err) : 0;
        if (what & PF_BUSY_OPERATION)
                r = operation_busy(m, pf, device, err);
        if (r >= 0 && (what & PF_BUSY_ASSIGN))
                r = assign_busy(m, pf, device, err);
        if (r >= 0 && (what & PF_BUSY_JOURNAL))
                r = journal_busy(m, pf, err);
        if (r >= 0 && (what & PF_BUSY_WRITE))
                r = write_busy(m, pf, device, err);
        return r;
}

bool pf_busy_refuse(struct manager *m, const char *pf, const char *device, unsigned what, struct call *call) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;

        if (pf_busy(m, pf, device, what, &err) >= 0)
                return false;
        call_errorf(call, SVFF_ERROR_OPERATION_IN_PROGRESS, "device", device, "%s", svff_error_message(&err));
        return true;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "libvirt.h"
#include "manager.h"
#include "reconf-guests.h"

/* Whether the reconf takes item's VF out from under a running guest. */
static bool item_live(const struct svff_reconf_item *it) {
        return it->a.live && it->a.state == SVFF_ASSIGN_ATTACHED;
}

struct guests_job {
        struct manager *m;
        virConnectPtr conn;
        struct reconf_guest *g;
        size_t n;
        reconf_guests_done_t done;
        void *userdata;
};

static void guests_job_free(struct guests_job *j) {
        if (!j)
                return;
        if (j->conn)
                virConnectClose(j->conn);
        free(j->g);
        free(j);
}

static void guests_job_done(void *userdata) {
        struct guests_job *j = userdata;
        struct reconf_guest *g = TAKE_PTR(j->g);

        j->done(j->m, g, j->n, j->userdata);
        guests_job_free(j);
}

/* One domain's guest: what can be known stays, the rest is unknown (a
 * domain gone or a libvirt error is the reconf's to report). */
static void guest_read(virConnectPtr conn, struct reconf_guest *g) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_domain_info info;
        virDomainPtr dom = NULL;
        char *xml;

        g->hotplug = SVFF_HV_HOTPLUG_UNKNOWN;
        if (svff_hv_lookup_running(conn, g->uuid, &info, &dom, &err) < 0)
                return;
        g->running = info.active;
        xml = info.active ? virDomainGetXMLDesc(dom, 0) : NULL;
        virDomainFree(dom);
        if (!xml)
                return;
        if (!*g->guest_address) {
                struct svff_hostdev hd;

                if (svff_hv_find_hostdev_in_xml(xml, g->vf, &hd) > 0)
                        snprintf(g->guest_address, sizeof(g->guest_address), "%s", hd.guest_address);
        }
        if (svff_hv_hotplug_in_xml(xml, *g->guest_address ? g->guest_address : NULL, &g->hotplug, g->port) < 0)
                g->hotplug = SVFF_HV_HOTPLUG_UNKNOWN;
        free(xml);
}

static void guests_job_run(void *userdata) {
        struct guests_job *j = userdata;

        for (size_t i = 0; i < j->n; i++)
                guest_read(j->conn, &j->g[i]);
        /* Out of memory only: the waiting call is left unanswered (its
         * client's timeout ends it), as any job that cannot post. */
        if (worker_pool_post(hv_pool(j->m->hv), guests_job_done, j) < 0)
                guests_job_free(j);
}

int reconf_guests_start(struct manager *m, const struct svff_reconf_item *items, size_t n,
                        reconf_guests_done_t done, void *userdata) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct guests_job *j;
        size_t k = 0;
        int r;

        for (size_t i = 0; i < n; i++)
                if (item_live(&items[i]))
                        k++;
        if (k == 0 || !hv_connected(m->hv))
                return 0;
        j = calloc(1, sizeof(*j));
        if (!j)
                return -ENOMEM;
        j->g = calloc(k, sizeof(*j->g));
        if (!j->g) {
                free(j);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (item_live(&items[i])) {
                        struct reconf_guest *g = &j->g[j->n++];

                        snprintf(g->vf, sizeof(g->vf), "%s", items[i].vf);
                        snprintf(g->uuid, sizeof(g->uuid), "%s", items[i].a.uuid);
                        snprintf(g->guest_address, sizeof(g->guest_address), "%s", items[i].a.guest_address);
                }
        j->m = m;
        j->done = done;
        j->userdata = userdata;
        j->conn = hv_conn_ref(m->hv, &err);
        if (!j->conn) {
                guests_job_free(j);
                return 0;
        }
        r = worker_pool_submit(hv_pool(m->hv), guests_job_run, j);
        if (r < 0) {
                guests_job_free(j);
                return r;
        }
        return 1;
}

const struct reconf_guest *reconf_guests_find(const struct svff_reconf_plan *plan, size_t i,
                                              const struct reconf_guest *guests, size_t n) {
        const struct svff_reconf_item *it = &plan->items[i];

        if (!item_live(it))
                return NULL;
        for (size_t k = 0; k < n; k++)
                if (streq(guests[k].vf, it->vf) && streq(guests[k].uuid, it->a.uuid))
                        return &guests[k];
        return NULL;
}

static unsigned unplug_msec(enum svff_hv_hotplug h) {
        return h == SVFF_HV_HOTPLUG_NATIVE ? RECONF_GUEST_NATIVE_UNPLUG_MSEC : RECONF_GUEST_ACPI_UNPLUG_MSEC;
}

/* Whether item i's guest sees the reconf: live, attached, in a domain
 * not found shut off. */
static bool item_seen(const struct svff_reconf_plan *plan, size_t i, const struct reconf_guest *guests, size_t n) {
        const struct reconf_guest *g = reconf_guests_find(plan, i, guests, n);

        return item_live(&plan->items[i]) && !(g && !g->running);
}

/* Item i's domain's seen devices: how many, and their unplugs (msec). */
static unsigned domain_devices(const struct svff_reconf_plan *plan, size_t i, const struct reconf_guest *guests,
                               size_t n, unsigned *ret_unplug) {
        unsigned count = 0, unplug = 0;

        for (size_t k = 0; k < plan->n_items; k++) {
                const struct reconf_guest *g = reconf_guests_find(plan, k, guests, n);

                if (!item_seen(plan, k, guests, n) || !streq(plan->items[k].a.uuid, plan->items[i].a.uuid))
                        continue;
                count++;
                unplug += unplug_msec(g ? g->hotplug : SVFF_HV_HOTPLUG_UNKNOWN);
        }
        *ret_unplug = unplug;
        return count;
}

struct json_object *reconf_guests_json(const struct svff_reconf_plan *plan, const struct reconf_guest *guests,
                                       size_t n, bool nvme, int *ret_refused) {
        struct json_object *a = json_object_new_array();
        unsigned longest = 0;
        int refused = -1;

        if (!a)
                return NULL;
        /* The numvfs writes wait for the slowest domain's quiesce; each
         * domain's devices go one after the other. */
        for (size_t i = 0; i < plan->n_items; i++) {
                unsigned q;

                if (!item_seen(plan, i, guests, n))
                        continue;
                (void) domain_devices(plan, i, guests, n, &q);
                if (q > longest)
                        longest = q;
        }
        for (size_t i = 0; i < plan->n_items; i++) {
                const struct svff_reconf_item *it = &plan->items[i];
                const struct reconf_guest *g = reconf_guests_find(plan, i, guests, n);
                struct json_object *o = json_object_new_object();
                bool seen = item_seen(plan, i, guests, n);
                const char *ga = g && *g->guest_address ? g->guest_address : it->a.guest_address;
                unsigned predicted = 0, unplug;

                if (!o)
                        break;
                if (seen)
                        predicted = longest + RECONF_GUEST_HOST_MSEC +
                                    domain_devices(plan, i, guests, n, &unplug) * RECONF_GUEST_REATTACH_MSEC;
                json_object_object_add(o, "vf", json_object_new_string(it->vf));
                json_object_object_add(o, "domain", json_object_new_string(it->a.domain));
                json_object_object_add(o, "uuid", json_object_new_string(it->a.uuid));
                json_object_object_add(o, "guest_address", *ga ? json_object_new_string(ga) : NULL);
                json_object_object_add(o, "hotplug", json_object_new_string(
                        !seen ? "offline" : svff_hv_hotplug_to_string(g ? g->hotplug : SVFF_HV_HOTPLUG_UNKNOWN)));
                json_object_object_add(o, "port", g && *g->port ? json_object_new_string(g->port) : NULL);
                json_object_object_add(o, "nvme_head", json_object_new_boolean(seen && nvme));
                json_object_object_add(o, "failover", *it->a.failover.standby
                                                              ? json_object_new_string(it->a.failover.standby)
                                                              : NULL);
                if (seen && *it->a.failover.standby) {
                        char needs[160];

                        snprintf(needs, sizeof(needs), "virtio_net with the standby feature and net_failover, so "
                                 "that '%s' carries the traffic", it->a.failover.standby);
                        json_object_object_add(o, "guest_needs", json_object_new_string(needs));
                } else if (seen && nvme) {
                        char needs[160];

                        snprintf(needs, sizeof(needs), "Linux >= 6.16 with NVMe multipath and delayed_removal_secs "
                                 ">= %u on the namespace's head", (predicted + 999) / 1000);
                        json_object_object_add(o, "guest_needs", json_object_new_string(needs));
                } else
                        json_object_object_add(o, "guest_needs", NULL);
                json_object_object_add(o, "predicted_msec", json_object_new_int64(predicted));
                json_object_array_add(a, o);
                if (seen && g && g->hotplug == SVFF_HV_HOTPLUG_NONE && refused < 0)
                        refused = (int) i;
        }
        if (ret_refused)
                *ret_refused = refused;
        return a;
}

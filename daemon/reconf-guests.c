/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "guest-agent.h"
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
        bool agent;
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

/* The guest's NVMe head that keeps its disk the shortest, as its agent
 * reads it, before deadline (the dry run's budget for every agent). */
static void agent_read(virDomainPtr dom, struct reconf_guest *g, usec_t deadline) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ struct svff_ga_head *heads = NULL;
        usec_t now = svff_now_usec(), timeout = RECONF_GUESTS_AGENT_TIMEOUT_USEC;
        size_t n = 0;
        int r;

        g->agent = RECONF_GUEST_AGENT_UNANSWERED;
        if (now + USEC_PER_SEC > deadline) {
                snprintf(g->agent_error, sizeof(g->agent_error), "not asked: the dry run's %llu s for guest agents "
                         "went to other domains", (unsigned long long) (RECONF_GUESTS_AGENT_BUDGET_USEC / USEC_PER_SEC));
                return;
        }
        if (deadline - now < timeout)
                timeout = deadline - now;
        r = svff_ga_nvme_heads(svff_ga_libvirt_command, dom, timeout, &heads, &n, &err);
        if (r < 0) {
                snprintf(g->agent_error, sizeof(g->agent_error), "%s",
                         svff_error_is_set(&err) ? svff_error_message(&err) : strerrordesc_np(-r) ?: "unknown error");
                return;
        }
        g->agent = RECONF_GUEST_AGENT_READ;
        for (size_t i = 0; i < n; i++)
                if (i == 0 || heads[i].delayed_removal_sec < g->agent_delayed_removal_sec) {
                        snprintf(g->agent_head, sizeof(g->agent_head), "%s", heads[i].name);
                        g->agent_delayed_removal_sec = heads[i].delayed_removal_sec;
                }
}

/* One domain's guest: what can be known stays, the rest is unknown (a
 * domain gone or a libvirt error is the reconf's to report). With an
 * agent deadline (0: none), its NVMe heads too, where its guest agent
 * is connected; same: an earlier item of the same domain, whose agent's
 * answer stands for this one, or NULL. */
static void guest_read(virConnectPtr conn, struct reconf_guest *g, usec_t agent_deadline,
                       const struct reconf_guest *same) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct svff_domain_info info;
        virDomainPtr dom = NULL;
        char *xml;

        g->hotplug = SVFF_HV_HOTPLUG_UNKNOWN;
        if (svff_hv_lookup_running(conn, g->uuid, &info, &dom, &err) < 0)
                return;
        g->running = info.active;
        xml = info.active ? virDomainGetXMLDesc(dom, 0) : NULL;
        if (xml && agent_deadline && svff_ga_connected_in_xml(xml) == 1) {
                if (same && same->agent != RECONF_GUEST_AGENT_NONE) {
                        g->agent = same->agent;
                        memcpy(g->agent_head, same->agent_head, sizeof(g->agent_head));
                        g->agent_delayed_removal_sec = same->agent_delayed_removal_sec;
                        memcpy(g->agent_error, same->agent_error, sizeof(g->agent_error));
                } else
                        agent_read(dom, g, agent_deadline);
        }
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

        usec_t deadline = j->agent ? svff_now_usec() + RECONF_GUESTS_AGENT_BUDGET_USEC : 0;

        for (size_t i = 0; i < j->n; i++) {
                const struct reconf_guest *same = NULL;

                for (size_t k = 0; k < i && !same; k++)
                        if (streq(j->g[k].uuid, j->g[i].uuid))
                                same = &j->g[k];
                guest_read(j->conn, &j->g[i], deadline, same);
        }
        /* Out of memory only: the waiting call is left unanswered (its
         * client's timeout ends it), as any job that cannot post. */
        if (worker_pool_post(hv_pool(j->m->hv), guests_job_done, j) < 0)
                guests_job_free(j);
}

int reconf_guests_start(struct manager *m, const struct svff_reconf_item *items, size_t n, bool agent,
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
        j->agent = agent;
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classes.h"
#include "guest-agent.h"
#include "json-util.h"
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
        /* per item of g: its guest's heads, where its agent was asked */
        struct svff_ga_head **heads;
        size_t *n_heads;
        bool agent;
        reconf_guests_done_t done;
        void *userdata;
};

static void guests_job_free(struct guests_job *j) {
        if (!j)
                return;
        if (j->conn)
                virConnectClose(j->conn);
        for (size_t i = 0; j->heads && i < j->n; i++)
                free(j->heads[i]);
        free(j->heads);
        free(j->n_heads);
        free(j->g);
        free(j);
}

static void guests_job_done(void *userdata) {
        struct guests_job *j = userdata;
        struct reconf_guest *g = TAKE_PTR(j->g);

        j->done(j->m, g, j->n, j->userdata);
        guests_job_free(j);
}

/* Of the guest's heads[0..n), the one of g's VF that keeps its disk
 * the shortest (svff_ga_pick_head()). */
static void agent_pick(struct reconf_guest *g, const struct svff_ga_head *heads, size_t n) {
        int i = svff_ga_pick_head(heads, n, *g->want_nqn ? g->want_nqn : NULL, g->want_nsid);

        if (i < 0)
                return;
        snprintf(g->agent_head, sizeof(g->agent_head), "%s", heads[i].name);
        g->agent_delayed_removal_sec = heads[i].delayed_removal_sec;
}

/* The guest's NVMe heads, as its agent reads them, before deadline (the
 * dry run's budget for every agent): *ret (free() it) and *ret_n. */
static void agent_read(virDomainPtr dom, struct reconf_guest *g, usec_t deadline, struct svff_ga_head **ret,
                       size_t *ret_n) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        usec_t now = svff_now_usec(), timeout = RECONF_GUESTS_AGENT_TIMEOUT_USEC;
        int r;

        g->agent = RECONF_GUEST_AGENT_UNANSWERED;
        if (now + USEC_PER_SEC > deadline) {
                snprintf(g->agent_error, sizeof(g->agent_error), "not asked: the dry run's %llu s for guest agents "
                         "went to other domains", (unsigned long long) (RECONF_GUESTS_AGENT_BUDGET_USEC / USEC_PER_SEC));
                return;
        }
        if (deadline - now < timeout)
                timeout = deadline - now;
        r = svff_ga_nvme_heads(svff_ga_libvirt_command, dom, timeout, ret, ret_n, &err);
        if (r < 0) {
                snprintf(g->agent_error, sizeof(g->agent_error), "%s",
                         svff_error_is_set(&err) ? svff_error_message(&err) : strerrordesc_np(-r) ?: "unknown error");
                return;
        }
        g->agent = RECONF_GUEST_AGENT_READ;
}

/* One domain's guest: what can be known stays, the rest is unknown (a
 * domain gone or a libvirt error is the reconf's to report). With an
 * agent deadline (0: none), its NVMe heads too, where its guest agent
 * is connected, in *heads and *n_heads; same: an earlier item of the
 * same domain, whose agent's answer (same_heads[0..same_n)) stands for
 * this one, or NULL. */
static void guest_read(virConnectPtr conn, struct reconf_guest *g, usec_t agent_deadline,
                       const struct reconf_guest *same, const struct svff_ga_head *same_heads, size_t same_n,
                       struct svff_ga_head **heads, size_t *n_heads) {
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
                        memcpy(g->agent_error, same->agent_error, sizeof(g->agent_error));
                        if (g->agent == RECONF_GUEST_AGENT_READ)
                                agent_pick(g, same_heads, same_n);
                } else {
                        agent_read(dom, g, agent_deadline, heads, n_heads);
                        if (g->agent == RECONF_GUEST_AGENT_READ)
                                agent_pick(g, *heads, *n_heads);
                }
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
                size_t k;

                for (k = 0; k < i; k++)
                        if (streq(j->g[k].uuid, j->g[i].uuid))
                                break;
                if (k < i)
                        guest_read(j->conn, &j->g[i], deadline, &j->g[k], j->heads[k], j->n_heads[k], &j->heads[i],
                                   &j->n_heads[i]);
                else
                        guest_read(j->conn, &j->g[i], deadline, NULL, NULL, 0, &j->heads[i], &j->n_heads[i]);
        }
        /* Out of memory only: the waiting call is left unanswered (its
         * client's timeout ends it), as any job that cannot post. */
        if (worker_pool_post(hv_pool(j->m->hv), guests_job_done, j) < 0)
                guests_job_free(j);
}

/* The namespace svff recorded for g's VF: its class state's subsystem
 * NQN and first NSID; nothing where the NQN is not one the guest's
 * answer can hold (svff_ga_nqn_ok()). */
static void want_namespace(struct manager *m, struct reconf_guest *g) {
        struct json_object *state = classes_vf_state(m, g->vf), *v;
        const char *nqn = NULL;
        int64_t nsid;

        if (!state || svff_json_get_string(state, "subnqn", &nqn) < 0 || !nqn || !svff_ga_nqn_ok(nqn, strlen(nqn)) ||
            !json_object_object_get_ex(state, "namespaces", &v) || !json_object_is_type(v, json_type_array) ||
            json_object_array_length(v) < 1)
                return;
        nsid = json_object_get_int64(json_object_array_get_idx(v, 0));
        if (nsid < 1 || nsid > UINT32_MAX)
                return;
        snprintf(g->want_nqn, sizeof(g->want_nqn), "%s", nqn);
        g->want_nsid = (uint32_t) nsid;
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
        j->heads = calloc(k, sizeof(*j->heads));
        j->n_heads = calloc(k, sizeof(*j->n_heads));
        if (!j->g || !j->heads || !j->n_heads) {
                free(j->g);
                free(j->heads);
                free(j->n_heads);
                free(j);
                return -ENOMEM;
        }
        for (size_t i = 0; i < n; i++)
                if (item_live(&items[i])) {
                        struct reconf_guest *g = &j->g[j->n++];

                        snprintf(g->vf, sizeof(g->vf), "%s", items[i].vf);
                        snprintf(g->uuid, sizeof(g->uuid), "%s", items[i].a.uuid);
                        snprintf(g->guest_address, sizeof(g->guest_address), "%s", items[i].a.guest_address);
                        want_namespace(m, g);
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

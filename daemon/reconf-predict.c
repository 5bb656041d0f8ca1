/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "reconf-predict.h"

/* Whether the reconf takes item's VF out from under a running guest. */
static bool item_live(const struct svff_reconf_item *it) {
        return it->a.live && it->a.state == SVFF_ASSIGN_ATTACHED;
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

/* ---- svffd's own figures ---- */

struct reconf_figures {
        struct reconf_figures *next;
        char pf[SVFF_PCI_ADDR_STRLEN];
        uint64_t host_usec;
        struct reconf_domain_figure *domains;
        size_t n_domains;
};

struct reconf_figures *reconf_figures_free(struct reconf_figures *f) {
        while (f) {
                struct reconf_figures *next = f->next;

                free(f->domains);
                free(f);
                f = next;
        }
        return NULL;
}

const struct reconf_figures *reconf_figures_get(const struct reconf_figures *list, const char *pf) {
        for (const struct reconf_figures *f = list; f; f = f->next)
                if (streq(f->pf, pf))
                        return f;
        return NULL;
}

static const struct reconf_domain_figure *figures_domain(const struct reconf_figures *f, const char *uuid) {
        for (size_t i = 0; f && i < f->n_domains; i++)
                if (streq(f->domains[i].uuid, uuid))
                        return &f->domains[i];
        return NULL;
}

int reconf_figures_record(struct reconf_figures **list, const char *pf, uint64_t host_usec,
                          const struct reconf_domain_figure *domains, size_t n) {
        struct reconf_figures *f = (struct reconf_figures *) reconf_figures_get(*list, pf);

        if (!f) {
                f = calloc(1, sizeof(*f));
                if (!f)
                        return -ENOMEM;
                snprintf(f->pf, sizeof(f->pf), "%s", pf);
                f->next = *list;
                *list = f;
        }
        /* Room for every new domain first: all of it is recorded, or
         * nothing is. */
        if (n > 0) {
                struct reconf_domain_figure *d = reallocarray(f->domains, f->n_domains + n, sizeof(*d));

                if (!d)
                        return -ENOMEM;
                f->domains = d;
        }
        if (host_usec > 0)
                f->host_usec = host_usec;
        for (size_t i = 0; i < n; i++) {
                struct reconf_domain_figure *d = (struct reconf_domain_figure *) figures_domain(f, domains[i].uuid);

                if (!d)
                        d = &f->domains[f->n_domains++];
                *d = domains[i];
        }
        return 0;
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

/* Item i's domain's seen devices: how many, and their unplugs (msec,
 * one after the other): as svffd last measured one of that domain's
 * (*ret_recent set), else as the model has them. */
static unsigned domain_devices(const struct svff_reconf_plan *plan, size_t i, const struct reconf_guest *guests,
                               size_t n, const struct reconf_figures *recent, unsigned *ret_unplug,
                               bool *ret_recent) {
        const struct reconf_domain_figure *d = figures_domain(recent, plan->items[i].a.uuid);
        unsigned count = 0, unplug = 0;

        for (size_t k = 0; k < plan->n_items; k++) {
                const struct reconf_guest *g = reconf_guests_find(plan, k, guests, n);

                if (!item_seen(plan, k, guests, n) || !streq(plan->items[k].a.uuid, plan->items[i].a.uuid))
                        continue;
                count++;
                unplug += unplug_msec(g ? g->hotplug : SVFF_HV_HOTPLUG_UNKNOWN);
        }
        *ret_recent = d && d->unplug_usec > 0;
        *ret_unplug = *ret_recent ? count * (unsigned) (d->unplug_usec / 1000) : unplug;
        return count;
}

/* What the guest agent of g said of its NVMe heads, against the window
 * (seconds); g NULL: not asked. */
static void agent_json(struct json_object *o, const struct reconf_guest *g, unsigned window) {
        bool asked = g && g->agent != RECONF_GUEST_AGENT_NONE, read = asked && g->agent == RECONF_GUEST_AGENT_READ;

        json_object_object_add(o, "agent", !asked ? NULL : json_object_new_string(read ? "read" : "unanswered"));
        json_object_object_add(o, "agent_error", asked && !read ? json_object_new_string(g->agent_error) : NULL);
        json_object_object_add(o, "agent_subnqn", read && *g->want_nqn ? json_object_new_string(g->want_nqn) : NULL);
        json_object_object_add(o, "agent_nsid", read && *g->want_nqn ? json_object_new_int64(g->want_nsid) : NULL);
        json_object_object_add(o, "agent_head", read && *g->agent_head ? json_object_new_string(g->agent_head) : NULL);
        json_object_object_add(o, "agent_delayed_removal_sec",
                               read && *g->agent_head ? json_object_new_int64(g->agent_delayed_removal_sec) : NULL);
        json_object_object_add(o, "guest_ready", !read ? NULL : json_object_new_boolean(
                                       *g->agent_head && g->agent_delayed_removal_sec >= window));
}

struct json_object *reconf_guests_json(const struct svff_reconf_plan *plan, const struct reconf_guest *guests,
                                       size_t n, bool nvme, const struct reconf_figures *recent, int *ret_refused) {
        struct json_object *a = json_object_new_array();
        unsigned longest = 0, host = RECONF_GUEST_HOST_MSEC;
        bool longest_recent = false;
        int refused = -1;

        if (!a)
                return NULL;
        /* The numvfs writes wait for the slowest domain's quiesce; each
         * domain's devices go one after the other. */
        for (size_t i = 0; i < plan->n_items; i++) {
                unsigned q;
                bool r;

                if (!item_seen(plan, i, guests, n))
                        continue;
                (void) domain_devices(plan, i, guests, n, recent, &q, &r);
                if (q > longest) {
                        longest = q;
                        longest_recent = r;
                }
        }
        if (recent && recent->host_usec > 0)
                host = (unsigned) (recent->host_usec / 1000);
        for (size_t i = 0; i < plan->n_items; i++) {
                const struct svff_reconf_item *it = &plan->items[i];
                const struct reconf_guest *g = reconf_guests_find(plan, i, guests, n);
                struct json_object *o = json_object_new_object();
                bool seen = item_seen(plan, i, guests, n);
                const char *ga = g && *g->guest_address ? g->guest_address : it->a.guest_address;
                const struct reconf_domain_figure *d = figures_domain(recent, it->a.uuid);
                unsigned predicted = 0, unplug, reattach = RECONF_GUEST_REATTACH_MSEC;
                bool from_recent = false, r;

                if (!o)
                        break;
                if (d && d->reattach_usec > 0)
                        reattach = (unsigned) (d->reattach_usec / 1000);
                if (seen) {
                        predicted = longest + host + domain_devices(plan, i, guests, n, recent, &unplug, &r) * reattach;
                        from_recent = longest_recent || (recent && recent->host_usec > 0) ||
                                      (d && d->reattach_usec > 0);
                }
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
                json_object_object_add(o, "predicted_from", json_object_new_string(from_recent ? "recent" : "model"));
                agent_json(o, seen && nvme ? g : NULL, (predicted + 999) / 1000);
                json_object_array_add(a, o);
                if (seen && g && g->hotplug == SVFF_HV_HOTPLUG_NONE && refused < 0)
                        refused = (int) i;
        }
        if (ret_refused)
                *ret_refused = refused;
        return a;
}

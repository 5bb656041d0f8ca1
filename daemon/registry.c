/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "registry.h"

struct hook {
        struct hook *next;
        registry_removed_fn fn;
        void (*destroy)(void *userdata);
        void *userdata;
};

struct registry {
        struct operation *operations;
        struct hook *hooks, **hooks_tail;
};

int registry_new(struct registry **ret) {
        struct registry *r = calloc(1, sizeof(*r));

        if (!r)
                return -ENOMEM;
        r->hooks_tail = &r->hooks;
        *ret = r;
        return 0;
}

struct registry *registry_free(struct registry *r) {
        if (!r)
                return NULL;
        while (r->operations)
                registry_remove(r, r->operations);
        while (r->hooks) {
                struct hook *h = r->hooks;

                r->hooks = h->next;
                if (h->destroy)
                        h->destroy(h->userdata);
                free(h);
        }
        free(r);
        return NULL;
}

struct operation *registry_operations(struct registry *r) {
        return r->operations;
}

struct operation *registry_find(struct registry *r, const char *pf) {
        for (struct operation *op = r->operations; op; op = op->next)
                if (streq(op->pf, pf))
                        return op;
        return NULL;
}

int registry_add(struct registry *r, const char *pf, const char *kind, struct call *call,
                 struct operation **ret) {
        struct operation *op;
        struct timespec ts;

        if (registry_find(r, pf))
                return -EBUSY;
        op = calloc(1, sizeof(*op));
        if (!op)
                return -ENOMEM;
        snprintf(op->pf, sizeof(op->pf), "%s", pf);
        op->kind = kind;
        op->phase = "queued";
        clock_gettime(CLOCK_REALTIME, &ts);
        op->started_usec = (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
        op->call = call_ref(call);
        op->next = r->operations;
        r->operations = op;
        *ret = op;
        return 0;
}

void registry_remove(struct registry *r, struct operation *op) {
        char pf[SVFF_PCI_ADDR_STRLEN];

        for (struct operation **p = &r->operations; *p; p = &(*p)->next)
                if (*p == op) {
                        *p = op->next;
                        break;
                }
        memcpy(pf, op->pf, sizeof(pf));
        call_unref(op->call);
        free(op);
        for (struct hook *h = r->hooks; h; h = h->next)
                h->fn(pf, h->userdata);
}

int registry_add_hook(struct registry *r, registry_removed_fn fn, void (*destroy)(void *userdata),
                      void *userdata) {
        struct hook *h = calloc(1, sizeof(*h));

        if (!h)
                return -ENOMEM;
        h->fn = fn;
        h->destroy = destroy;
        h->userdata = userdata;
        *r->hooks_tail = h;
        r->hooks_tail = &h->next;
        return 0;
}

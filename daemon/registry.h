/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The operations in progress, one per PF at a time (init, release,
 * reconf), and who wants to know when one ends: a removal runs the hooks
 * registered here, in order, once the operation is gone (assign.c
 * applies the domain events it held back then). The registry knows
 * nothing of what an operation does. */

#include <stdbool.h>
#include <stdint.h>

#include "pciaddr.h"
#include "server.h"

struct manager;

struct operation {
        struct manager *manager;        /* the owner's, for the executors; not used here */
        struct operation *next;
        char pf[SVFF_PCI_ADDR_STRLEN];
        const char *kind;       /* "init", "release" */
        const char *phase;
        unsigned done, total;
        uint64_t started_usec;  /* CLOCK_REALTIME */
        /* The snapshot cache's change count as it began (manager.c):
         * a picture with every change before that may stand in for the
         * PF while it runs. */
        uint64_t snapshot_seq;
        struct call *call;      /* the caller (NULL: svffd's own, e.g. a policy) */
        bool startup;           /* READY=1 waits for it */
        void *data;             /* the operation's own state */
        /* Called on the main thread as it ends, before its removal:
         * message NULL on success, else why it failed. For whoever
         * started it without a caller (autoinit: Status). */
        void (*finished)(struct manager *m, const char *pf, const char *message);
};

struct registry;

/* An operation on pf was removed (it is freed already). */
typedef void (*registry_removed_fn)(const char *pf, void *userdata);

int registry_new(struct registry **ret);
/* Frees the hooks' userdata with their destroy function; the operations
 * must be removed first. Accepts NULL. */
struct registry *registry_free(struct registry *r);

/* The first operation (then op->next), or NULL. */
struct operation *registry_operations(struct registry *r);
struct operation *registry_find(struct registry *r, const char *pf);
/* -EBUSY when pf has an operation already. Takes a reference on call. */
int registry_add(struct registry *r, const char *pf, const char *kind, struct call *call,
                 struct operation **ret);
/* Unlinks and frees op, then runs the hooks. */
void registry_remove(struct registry *r, struct operation *op);

/* fn(pf, userdata) after each removal; destroy(userdata) (may be NULL)
 * when the registry is freed. */
int registry_add_hook(struct registry *r, registry_removed_fn fn, void (*destroy)(void *userdata),
                      void *userdata);

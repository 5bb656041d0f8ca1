/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A method call's parameters: checked and decoded from a table, so each
 * handler says what it takes instead of repeating the checks, and every
 * refusal reads the same (InvalidParameter naming the parameter). Also
 * the permission check the changing methods share. */

#include <stdbool.h>
#include <stddef.h>

#include "manager.h"
#include "pciaddr.h"
#include "server.h"

enum param_type {
        PARAM_ADDRESS,          /* char[SVFF_PCI_ADDR_STRLEN], canonical; JSON null counts as not given */
        PARAM_STRING,           /* const char * (borrowed from the call) */
        PARAM_STRING_OR_NULL,   /* const char *, NULL for JSON null */
        PARAM_BOOL,             /* bool; JSON null counts as not given */
        PARAM_UNSIGNED,         /* unsigned, at most .max; JSON null counts as not given */
        PARAM_OBJECT_OR_NULL,   /* struct json_object * (borrowed), NULL for JSON null */
};

struct param {
        const char *name;
        enum param_type type;
        bool required;
        size_t offset;          /* into the handler's struct of values */
        unsigned max;           /* PARAM_UNSIGNED */
        const char *what;       /* "must be ...": the message on a bad value */
};

#define PARAM_END { .name = NULL }

/* One row of the method table (methods.c), kept beside its handler:
 * the method's name, what it takes, what it may do. The dispatcher
 * checks the flags, then decodes the call's parameters into a struct of
 * params_size bytes (initial's, or zeros, where not given) and runs the
 * handler with it, once a snapshot is fresh enough for the call with
 * METHOD_SNAPSHOT; the struct is freed when the handler returns, so a
 * handler that answers later keeps a copy of what it needs. */
enum method_flags {
        /* It changes the host or the store: svff.conf's manage list
         * applies (manage_check_call()). */
        METHOD_MUTATING = 1u << 0,
        /* Only root or the admin group may call it (require_privileged()),
         * checked before its parameters. Reconf checks for itself: its
         * dry run is a read. */
        METHOD_PRIVILEGED = 1u << 1,
        /* It answers from the host as it is now: the handler runs with
         * m->snapshot fresh enough for the call (manager_with_snapshot()). */
        METHOD_SNAPSHOT = 1u << 2,
};

struct method {
        const char *name;
        void (*fn)(struct manager *m, struct call *call, void *params);
        const struct param *params;     /* ended by PARAM_END; NULL: it takes none */
        size_t params_size;             /* 0: it takes none */
        const void *initial;            /* params_size bytes, or NULL for zeros */
        unsigned flags;                 /* enum method_flags */
};

/* Decodes the call's parameters into ret as table (ended by PARAM_END)
 * says; a parameter not given leaves its field as the caller set it, and
 * one not in the table is refused. On failure answers InvalidParameter
 * (error, for org.varlink.service) and returns false. */
bool params_decode(struct call *call, const char *error, const struct param *table, void *ret);

/* Answers PermissionDenied and returns false unless the peer may change
 * devices. */
bool require_privileged(struct manager *m, struct call *call);

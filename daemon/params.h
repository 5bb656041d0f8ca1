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

/* Decodes the call's parameters into ret as table (ended by PARAM_END)
 * says; a parameter not given leaves its field as the caller set it, and
 * one not in the table is refused. On failure answers InvalidParameter
 * (error, for org.varlink.service) and returns false. */
bool params_decode(struct call *call, const char *error, const struct param *table, void *ret);

/* Whether the call's parameters only use the names in allowed (a
 * NULL-terminated list); otherwise answers InvalidParameter and returns
 * false. */
bool params_check_known(struct call *call, const char *error, const char *const *allowed);
/* Answers PermissionDenied and returns false unless the peer may change
 * devices. */
bool require_privileged(struct manager *m, struct call *call);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What svffctl's files share: the exit codes of svffctl(8), the options
 * every command sees, reading replies and printing errors. */

#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <json-c/json.h>

#include "macro.h"
#include "sysfs.h"

/* The table in svffctl(8), EXIT STATUS; tests/test-cli-exit.sh walks it. */
#define EXIT_DAEMON_ERROR 1
#define EXIT_USAGE 2
#define EXIT_UNREACHABLE 3
#define EXIT_PERMISSION 4
/* status: the host differs from svffd's records, or its last
 * configuration reload failed. */
#define EXIT_DRIFT 5
#define EXIT_INTERRUPTED 130

#define _cleanup_json_ _cleanup_(json_object_putp)

extern bool arg_json;

/* A string or integer member of o (NULL o: none), or NULL / def. */
const char *jstr(struct json_object *o, const char *key);
long long jint(struct json_object *o, const char *key, long long def);

void print_json(FILE *f, struct json_object *o);

/* An error for the operator: "svffctl: MESSAGE" on stderr, or under
 * --json one line {"error": name, "parameters": {..., "message": MESSAGE}}.
 * params (NULL for none) is borrowed. */
void cli_error(const char *name, struct json_object *params, const char *fmt, ...)
        _printf_(3, 4);

/* A usage error about command (NULL: none yet); returns EXIT_USAGE. */
int usage_error(const char *command, const char *fmt, ...) _printf_(2, 3);

/* The guest address as the operator types it: "bb:ss.f" when the PCI
 * domain is 0, else as given. buf holds at least 17 bytes. */
const char *guest_address_display(const char *a, char *buf, size_t n);

/* "s" after a count other than 1: "1 VF", "0 VFs". */
static inline const char *plural_s(long long n) {
        return n == 1 ? "" : "s";
}

/* The width output may take: the terminal's for a terminal, else
 * $COLUMNS, else 0 (no limit). */
unsigned output_width(FILE *f);

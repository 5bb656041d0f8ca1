/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* An error a caller can show to an operator: a negative errno plus a
 * sentence that names the device or parameter and says what to do.
 *
 * Fallible core functions return -errno and, when handed a non-NULL
 * struct svff_error, fill it. The first message set wins: the innermost
 * layer knows the most precise story, outer layers only add one when
 * none is there yet. */

#include <stdbool.h>

#include "macro.h"

struct svff_error {
        int code;        /* negative errno, 0 when unset */
        char *message;   /* owned, NULL when unset */
};

#define SVFF_ERROR_NULL ((struct svff_error) { 0, NULL })

/* Sets e (if non-NULL and still unset) and returns r, so that
 * "return svff_error_set(e, -ERANGE, ...);" logs nothing and reads as one
 * statement. r must be negative. */
int svff_error_set(struct svff_error *e, int r, const char *fmt, ...) _printf_(3, 4);

/* Like svff_error_set, with ": <strerror(-r)>" appended. */
int svff_error_set_errno(struct svff_error *e, int r, const char *fmt, ...) _printf_(3, 4);

bool svff_error_is_set(const struct svff_error *e);

/* The message, or strerror(-code) when only a code was set, or "" */
const char *svff_error_message(const struct svff_error *e);

/* Frees the message and resets e; accepts NULL and unset errors. */
void svff_error_free(struct svff_error *e);

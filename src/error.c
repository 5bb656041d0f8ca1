/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <stdarg.h>
#include <string.h>

#include "error.h"

static int error_setv(struct svff_error *e, int r, bool with_errno, const char *fmt, va_list ap) {
        _cleanup_free_ char *msg = NULL;

        if (!e || e->code != 0)
                return r;

        e->code = r < 0 ? r : -EIO;

        /* A message that cannot be allocated degrades to the bare code
         * (svff_error_message falls back to strerror), never to a crash. */
        if (vasprintf(&msg, fmt, ap) < 0)
                return r;

        if (with_errno) {
                char *full;

                /* %m is thread-safe in glibc, unlike strerror(). */
                errno = -e->code;
                if (asprintf(&full, "%s: %m", msg) < 0)
                        full = NULL;
                free(msg);
                msg = full;
        }

        e->message = TAKE_PTR(msg);
        return r;
}

int svff_error_set(struct svff_error *e, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        r = error_setv(e, r, false, fmt, ap);
        va_end(ap);
        return r;
}

int svff_error_set_errno(struct svff_error *e, int r, const char *fmt, ...) {
        va_list ap;

        va_start(ap, fmt);
        r = error_setv(e, r, true, fmt, ap);
        va_end(ap);
        return r;
}

bool svff_error_is_set(const struct svff_error *e) {
        return e && e->code != 0;
}

const char *svff_error_message(const struct svff_error *e) {
        const char *s;

        if (!e || e->code == 0)
                return "";
        if (e->message)
                return e->message;

        /* strerrordesc_np() returns static text and is thread-safe. */
        s = strerrordesc_np(-e->code);
        return s ?: "Unknown error";
}

void svff_error_free(struct svff_error *e) {
        if (!e)
                return;
        free(e->message);
        *e = SVFF_ERROR_NULL;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small helpers for pcisim only: the simulator must not depend on src/. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static inline void freep(void *p) {
        free(*(void **) p);
}
#define _cleanup_free_ _cleanup_(freep)

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}
#define _cleanup_close_ _cleanup_(closep)

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}
#define _cleanup_fclose_ _cleanup_(fclosep)

#define TAKE_PTR(p) ({ typeof(p) _t = (p); (p) = NULL; _t; })

static inline const char *strempty(const char *s) {
        return s ?: "";
}

static inline int streq(const char *a, const char *b) {
        return strcmp(a, b) == 0;
}

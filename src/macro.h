/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small helpers in the spirit of systemd's macro.h: scoped cleanup and
 * explicit ownership transfer. */

#include <dirent.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define _cleanup_(f) __attribute__((cleanup(f)))
#define _unused_ __attribute__((unused))
#define _printf_(a, b) __attribute__((format(printf, a, b)))
#define _pure_ __attribute__((pure))
#define _public_ __attribute__((visibility("default")))

#define ELEMENTSOF(x) (sizeof(x) / sizeof((x)[0]))
#define MIN(a, b) ((a) < (b) ? (a) : (b))
#define MAX(a, b) ((a) > (b) ? (a) : (b))

/* Hand out a pointer owned by a _cleanup_ variable. */
#define TAKE_PTR(p)                         \
        ({                                  \
                __typeof__(p) _p_ = (p);    \
                (p) = NULL;                 \
                _p_;                        \
        })

#define TAKE_FD(fd)                         \
        ({                                  \
                int _fd_ = (fd);            \
                (fd) = -EBADF;              \
                _fd_;                       \
        })

static inline void freep(void *p) {
        free(*(void **) p);
}

/* Frees p and returns NULL: "p = mfree(p);" */
static inline void *mfree(void *p) {
        free(p);
        return NULL;
}

static inline void closep(int *fd) {
        if (*fd >= 0) {
                int saved = errno;
                close(*fd);
                errno = saved;
        }
}

static inline void fclosep(FILE **f) {
        if (*f)
                fclose(*f);
}

static inline void closedirp(DIR **d) {
        if (*d)
                closedir(*d);
}

static inline void strv_free(char **l) {
        if (!l)
                return;
        for (char **i = l; *i; i++)
                free(*i);
        free(l);
}

static inline void strv_freep(char ***l) {
        strv_free(*l);
}

/* Orders two strings of an array, for qsort() and bsearch(). */
static inline int strv_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

#define _cleanup_free_ _cleanup_(freep)
#define _cleanup_close_ _cleanup_(closep)
#define _cleanup_fclose_ _cleanup_(fclosep)
#define _cleanup_closedir_ _cleanup_(closedirp)
#define _cleanup_strv_free_ _cleanup_(strv_freep)

/* Defines a cleanup function for "type *" from an unref/free function that
 * accepts NULL. */
#define DEFINE_TRIVIAL_CLEANUP_FUNC(type, func)         \
        static inline void func##p(type *p) {           \
                if (*p)                                 \
                        func(*p);                       \
        }

#define streq(a, b) (strcmp((a), (b)) == 0)
#define strneq(a, b, n) (strncmp((a), (b), (n)) == 0)

static inline const char *strna(const char *s) {
        return s ?: "n/a";
}

/* Returns a negative errno from errno, never 0 (for paths where errno
 * should be set but a library forgot). */
static inline int negative_errno(void) {
        return errno > 0 ? -errno : -EIO;
}

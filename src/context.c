/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdatomic.h>
#include <string.h>
#include <syslog.h>

#include "context.h"

struct svff_ctx {
        atomic_uint n_ref;
        int rootfd;
        char *root;               /* absolute, for libpci's sysfs.path */

        svff_log_fn log_fn;
        void *log_userdata;
        atomic_int log_priority;  /* a reload sets it while threads log */

        /* Writes left behind by svff_sysfs_write_deadline(); their threads
         * hold a reference, so the counter outlives every one of them. */
        atomic_uint stuck_writes;

        /* Deadline-bounded writes whose thread has not returned yet
         * (sysfs.c), so a reader can tell a file is being written before
         * it reads one the kernel serialises behind the write; and
         * deadline-bounded reads abandoned in the kernel, so that none
         * is started again before the last one returns. */
        pthread_mutex_t writes_lock;
        struct pending_io *writes;

        pthread_mutex_t pci_lock;
        void *pci_access;         /* struct pci_access *, lazily */
        /* Set by the one who filled pci_access (pcinames.c): the context
         * drops the handle without knowing what it is. */
        void (*pci_access_free)(void *pci_access);
        char *pci_ids_path;       /* NULL: libpci's default */
};

struct pending_io {
        struct pending_io *next;
        char *path;
        char *value;            /* a write's value; NULL for a read */
        bool late;              /* its writer gave up waiting for it */
        uint64_t since;         /* a read: when it began */
};

static void log_stderr(void *userdata, int priority, const char *file, int line,
                       const char *fn, const char *format, va_list args) {
        fprintf(stderr, "libsvff: %s: ", fn);
        vfprintf(stderr, format, args);
        fputc('\n', stderr);
}

int svff_ctx_new(const char *sysfs_root, struct svff_ctx **ret) {
        _cleanup_(svff_ctx_unrefp) struct svff_ctx *ctx = NULL;

        if (!ret)
                return -EINVAL;
        if (!sysfs_root)
                sysfs_root = "/sys";

        ctx = calloc(1, sizeof(*ctx));
        if (!ctx)
                return -ENOMEM;
        atomic_init(&ctx->n_ref, 1);
        atomic_init(&ctx->stuck_writes, 0);
        ctx->rootfd = -EBADF;
        ctx->log_fn = log_stderr;
        atomic_init(&ctx->log_priority, LOG_ERR);
        pthread_mutex_init(&ctx->pci_lock, NULL);
        pthread_mutex_init(&ctx->writes_lock, NULL);

        ctx->rootfd = open(sysfs_root, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (ctx->rootfd < 0)
                return -errno;

        /* libpci takes a path, not an fd: give it the resolved one, so a
         * relative root or a later chdir() cannot point it elsewhere. */
        ctx->root = realpath(sysfs_root, NULL);
        if (!ctx->root)
                return negative_errno();

        *ret = TAKE_PTR(ctx);
        return 0;
}

struct svff_ctx *svff_ctx_ref(struct svff_ctx *ctx) {
        if (ctx)
                atomic_fetch_add(&ctx->n_ref, 1);
        return ctx;
}

struct svff_ctx *svff_ctx_unref(struct svff_ctx *ctx) {
        if (!ctx)
                return NULL;
        if (atomic_fetch_sub(&ctx->n_ref, 1) > 1)
                return NULL;

        if (ctx->pci_access)
                ctx->pci_access_free(ctx->pci_access);
        pthread_mutex_destroy(&ctx->pci_lock);
        /* Every write thread holds a reference: none is pending here. */
        pthread_mutex_destroy(&ctx->writes_lock);
        free(ctx->pci_ids_path);
        free(ctx->root);
        closep(&ctx->rootfd);
        free(ctx);
        return NULL;
}

int svff_ctx_get_rootfd(struct svff_ctx *ctx) {
        return ctx->rootfd;
}

const char *svff_ctx_get_root(struct svff_ctx *ctx) {
        return ctx->root;
}

void svff_ctx_set_log_fn(struct svff_ctx *ctx, svff_log_fn fn, void *userdata) {
        ctx->log_fn = fn;
        ctx->log_userdata = userdata;
}

void svff_ctx_set_log_priority(struct svff_ctx *ctx, int priority) {
        atomic_store_explicit(&ctx->log_priority, priority, memory_order_relaxed);
}

int svff_ctx_get_log_priority(struct svff_ctx *ctx) {
        return atomic_load_explicit(&ctx->log_priority, memory_order_relaxed);
}

unsigned svff_ctx_get_stuck_writes(struct svff_ctx *ctx) {
        return atomic_load(&ctx->stuck_writes);
}

void svff_ctx_stuck_writes_inc(struct svff_ctx *ctx) {
        atomic_fetch_add(&ctx->stuck_writes, 1);
}

void svff_ctx_stuck_writes_dec(struct svff_ctx *ctx) {
        atomic_fetch_sub(&ctx->stuck_writes, 1);
}

/* value NULL: a read. */
static int io_begin(struct svff_ctx *ctx, const char *path, const char *value, uint64_t since) {
        struct pending_io *w = calloc(1, sizeof(*w));

        if (!w)
                return -ENOMEM;
        w->path = strdup(path);
        w->value = value ? strdup(value) : NULL;
        w->since = since;
        if (!w->path || (value && !w->value)) {
                free(w->path);
                free(w->value);
                free(w);
                return -ENOMEM;
        }
        pthread_mutex_lock(&ctx->writes_lock);
        w->next = ctx->writes;
        ctx->writes = w;
        pthread_mutex_unlock(&ctx->writes_lock);
        return 0;
}

static struct pending_io **find_io(struct svff_ctx *ctx, const char *path, bool read) {
        struct pending_io **p = &ctx->writes;

        while (*p && (!streq((*p)->path, path) || !(*p)->value != read))
                p = &(*p)->next;
        return p;
}

static void io_end(struct svff_ctx *ctx, const char *path, bool read) {
        struct pending_io **p, *w;

        pthread_mutex_lock(&ctx->writes_lock);
        p = find_io(ctx, path, read);
        w = *p;
        if (w)
                *p = w->next;
        pthread_mutex_unlock(&ctx->writes_lock);
        if (!w)
                return;
        free(w->path);
        free(w->value);
        free(w);
}

int svff_ctx_write_begin(struct svff_ctx *ctx, const char *path, const char *value) {
        return io_begin(ctx, path, value, 0);
}

void svff_ctx_write_late(struct svff_ctx *ctx, const char *path) {
        struct pending_io **p;

        pthread_mutex_lock(&ctx->writes_lock);
        p = find_io(ctx, path, false);
        if (*p)
                (*p)->late = true;
        pthread_mutex_unlock(&ctx->writes_lock);
}

void svff_ctx_write_end(struct svff_ctx *ctx, const char *path) {
        io_end(ctx, path, false);
}

int svff_ctx_read_stuck_begin(struct svff_ctx *ctx, const char *path, uint64_t since) {
        return io_begin(ctx, path, NULL, since);
}

void svff_ctx_read_stuck_end(struct svff_ctx *ctx, const char *path) {
        io_end(ctx, path, true);
}

int svff_ctx_read_stuck(struct svff_ctx *ctx, const char *path, uint64_t *ret_since) {
        struct pending_io *w;
        uint64_t since = 0;

        if (!ctx || !path)
                return -EINVAL;
        pthread_mutex_lock(&ctx->writes_lock);
        w = *find_io(ctx, path, true);
        if (w)
                since = w->since;
        pthread_mutex_unlock(&ctx->writes_lock);
        if (w && ret_since)
                *ret_since = since;
        return !!w;
}

int svff_ctx_write_pending(struct svff_ctx *ctx, const char *path, char **ret_value, bool *ret_late) {
        struct pending_io *w;
        char *value = NULL;
        bool late = false;

        if (!ctx || !path)
                return -EINVAL;
        pthread_mutex_lock(&ctx->writes_lock);
        w = *find_io(ctx, path, false);
        if (w) {
                late = w->late;
                value = ret_value ? strdup(w->value) : NULL;
        }
        pthread_mutex_unlock(&ctx->writes_lock);
        if (!w)
                return 0;
        if (ret_value && !value)
                return -ENOMEM;
        if (ret_value)
                *ret_value = value;
        if (ret_late)
                *ret_late = late;
        return 1;
}

int svff_ctx_set_pci_ids_path(struct svff_ctx *ctx, const char *path) {
        char *copy = NULL;

        if (path) {
                copy = strdup(path);
                if (!copy)
                        return -ENOMEM;
        }

        pthread_mutex_lock(&ctx->pci_lock);
        free(ctx->pci_ids_path);
        ctx->pci_ids_path = copy;
        if (ctx->pci_access)
                ctx->pci_access_free(ctx->pci_access);
        ctx->pci_access = NULL;
        pthread_mutex_unlock(&ctx->pci_lock);
        return 0;
}

void **svff_ctx_pci_acquire(struct svff_ctx *ctx, void (*free_fn)(void *pci_access),
                            const char **ret_ids_path) {
        pthread_mutex_lock(&ctx->pci_lock);
        ctx->pci_access_free = free_fn;
        if (ret_ids_path)
                *ret_ids_path = ctx->pci_ids_path;
        return &ctx->pci_access;
}

void svff_ctx_pci_release(struct svff_ctx *ctx) {
        pthread_mutex_unlock(&ctx->pci_lock);
}

void svff_ctx_log(struct svff_ctx *ctx, int priority, const char *file, int line,
                  const char *fn, const char *format, ...) {
        va_list ap;
        int saved = errno;

        if (!ctx || !ctx->log_fn || priority > svff_ctx_get_log_priority(ctx))
                return;

        va_start(ap, format);
        ctx->log_fn(ctx->log_userdata, priority, file, line, fn, format, ap);
        va_end(ap);
        errno = saved;
}

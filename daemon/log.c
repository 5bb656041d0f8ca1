/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include "config-file.h"
#include "log.h"

/* A reload sets it while worker threads log. */
static atomic_int max_level = LOG_INFO;
static bool use_journal = false;
static bool stderr_fields = false;
/* Each thread's innermost log context (log.h). */
static _Thread_local struct log_context *context = NULL;

void log_context_push(struct log_context *c) {
        c->prev = context;
        context = c;
}

void log_context_pop(struct log_context *c) {
        /* Contexts nest with blocks: the innermost goes first. */
        if (context == c)
                context = c->prev;
}

#define CONTEXT_FIELD(name)                                     \
        const char *log_context_##name(void) {                  \
                for (struct log_context *c = context; c; c = c->prev) \
                        if (c->name)                            \
                                return c->name;                 \
                return NULL;                                    \
        }
CONTEXT_FIELD(pf)
CONTEXT_FIELD(vf)
CONTEXT_FIELD(domain)
CONTEXT_FIELD(operation)

static char *strdup_or_null(const char *s) {
        return s ? strdup(s) : NULL;
}

void log_context_copy(struct log_context_copy *ret) {
        *ret = (struct log_context_copy) {
                .pf = strdup_or_null(log_context_pf()),
                .vf = strdup_or_null(log_context_vf()),
                .domain = strdup_or_null(log_context_domain()),
                .operation = strdup_or_null(log_context_operation()),
        };
}

void log_context_copy_done(struct log_context_copy *c) {
        free(c->pf);
        free(c->vf);
        free(c->domain);
        free(c->operation);
        *c = (struct log_context_copy) {};
}


/* JOURNAL_STREAM is "DEV:INO" of the stream systemd connected stderr to;
 * it only counts when stderr still is that stream (a child that
 * redirected stderr inherits the variable but not the stream). */
static bool stderr_is_journal(void) {
        const char *e = getenv("JOURNAL_STREAM");
        unsigned long long dev, ino;
        struct stat st;

        if (!e || sscanf(e, "%llu:%llu", &dev, &ino) != 2)
                return false;
        if (fstat(STDERR_FILENO, &st) < 0)
                return false;
        return st.st_dev == (dev_t) dev && st.st_ino == (ino_t) ino;
}

void log_setup(enum log_target target) {
        stderr_fields = getenv("SVFF_LOG_FIELDS") != NULL;
        switch (target) {
        case LOG_TARGET_STDERR:
                use_journal = false;
                break;
        case LOG_TARGET_JOURNAL:
                use_journal = true;
                break;
        default:
                use_journal = stderr_is_journal() ||
                              (sd_booted() > 0 && getenv("INVOCATION_ID"));
        }
}

bool log_to_journal(void) {
        return use_journal;
}

void log_set_max_level(int level) {
        if (level >= LOG_EMERG && level <= LOG_DEBUG)
                atomic_store_explicit(&max_level, level, memory_order_relaxed);
}

int log_get_max_level(void) {
        return atomic_load_explicit(&max_level, memory_order_relaxed);
}

int log_level_from_string(const char *s) {
        return svff_log_level_from_string(s);
}

const char *log_level_to_string(int level) {
        return svff_log_level_to_string(level);
}

/* Appends "NAME=VALUE" to iov (nothing for a NULL value, or without
 * memory); the text is text[*n], the caller's to free. */
static void add_field(struct iovec *iov, size_t *n, char **text, const char *name, const char *value) {
        char *t;

        if (!value || asprintf(&t, "%s=%s", name, value) < 0)
                return;
        text[*n] = t;
        iov[(*n)++] = (struct iovec) { .iov_base = t, .iov_len = strlen(t) };
}

int log_internalv(int level, int error, const char *file, int line, const char *func,
                  const char *format, va_list ap) {
        int saved = errno;
        char msg[2048];

        if ((level & LOG_PRIMASK) > log_get_max_level())
                return error < 0 ? error : 0;

        /* %m names error, not whatever errno happens to be. */
        errno = error < 0 ? -error : (error > 0 ? error : saved);
        vsnprintf(msg, sizeof(msg), format, ap);

        if (use_journal) {
                char prio[12], err[12], lineno[12];
                char *text[10] = {};
                struct iovec iov[10];
                size_t n = 0;

                snprintf(prio, sizeof(prio), "%i", level & LOG_PRIMASK);
                snprintf(err, sizeof(err), "%i", error < 0 ? -error : error);
                snprintf(lineno, sizeof(lineno), "%i", line);
                add_field(iov, &n, text, "MESSAGE", msg);
                add_field(iov, &n, text, "PRIORITY", prio);
                add_field(iov, &n, text, "ERRNO", error != 0 ? err : NULL);
                add_field(iov, &n, text, "CODE_FILE", file);
                add_field(iov, &n, text, "CODE_LINE", lineno);
                add_field(iov, &n, text, "CODE_FUNC", func);
                add_field(iov, &n, text, "SVFF_PF", log_context_pf());
                add_field(iov, &n, text, "SVFF_VF", log_context_vf());
                add_field(iov, &n, text, "SVFF_DOMAIN", log_context_domain());
                add_field(iov, &n, text, "SVFF_OPERATION", log_context_operation());
                if (n > 0 && text[0] && strncmp(text[0], "MESSAGE=", 8) == 0)
                        (void) sd_journal_sendv(iov, (int) n);
                for (size_t i = 0; i < n; i++)
                        free(text[i]);
        } else if (stderr_fields)
                /* Some of the journal's fields after the message: what
                 * the tests check the journal would get. */
                fprintf(stderr, "svffd: %s {PRIORITY=%i SVFF_PF=%s SVFF_VF=%s SVFF_DOMAIN=%s SVFF_OPERATION=%s}\n",
                        msg, level & LOG_PRIMASK, log_context_pf() ?: "", log_context_vf() ?: "",
                        log_context_domain() ?: "", log_context_operation() ?: "");
        else
                /* One fprintf per message: stderr is unbuffered, and a
                 * single write keeps lines from two threads apart. */
                fprintf(stderr, "svffd: %s\n", msg);

        errno = saved;
        return error < 0 ? error : 0;
}

int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) {
        va_list ap;
        int r;

        va_start(ap, format);
        r = log_internalv(level, error, file, line, func, format, ap);
        va_end(ap);
        return r;
}

void log_svff_callback(void *userdata, int priority, const char *file, int line,
                       const char *fn, const char *format, va_list args) {
        log_internalv(priority, 0, file, line, fn, format, args);
}

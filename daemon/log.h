/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's logging, in systemd's style: one call logs and returns,
 *
 *         return log_error_errno(r, "Failed to open '%s': %m", path);
 *
 * sets errno from r so %m names the error, and returns r (negative).
 * Messages go to the journal when svffd runs under systemd (stderr is the
 * journal stream, or INVOCATION_ID is set on a systemd-booted host), and
 * to stderr otherwise. Only the main thread may change the settings;
 * logging itself is thread-safe (one write per message). */

#include <stdarg.h>
#include <stdbool.h>
#include <syslog.h>

#include "macro.h"

enum log_target {
        LOG_TARGET_AUTO,
        LOG_TARGET_STDERR,
        LOG_TARGET_JOURNAL,
};

/* Picks the target (AUTO: journal when run by systemd). With
 * SVFF_LOG_FIELDS in the environment, each message to stderr ends with
 * the fields the journal would get ("{PRIORITY=6 SVFF_PF=... SVFF_VF=...
 * SVFF_DOMAIN=... SVFF_OPERATION=...}"), for the tests, which run
 * without a journal. */
void log_setup(enum log_target target);
bool log_to_journal(void);

void log_set_max_level(int level);
int log_get_max_level(void);
/* "err", "warning", "notice", "info", "debug" or a number 0..7. */
int log_level_from_string(const char *s);
const char *log_level_to_string(int level);

/* Logs at level with error (a negative errno or 0) as errno for %m.
 * Returns error when it is negative, -EIO-free 0 otherwise. */
int log_internal(int level, int error, const char *file, int line, const char *func,
                 const char *format, ...) _printf_(6, 7);
int log_internalv(int level, int error, const char *file, int line, const char *func,
                  const char *format, va_list ap) _printf_(6, 0);

#define log_full_errno(level, error, ...) \
        log_internal((level), (error), __FILE__, __LINE__, __func__, __VA_ARGS__)
#define log_full(level, ...) log_full_errno((level), 0, __VA_ARGS__)

#define log_debug(...)   log_full(LOG_DEBUG, __VA_ARGS__)
#define log_info(...)    log_full(LOG_INFO, __VA_ARGS__)
#define log_notice(...)  log_full(LOG_NOTICE, __VA_ARGS__)
#define log_warning(...) log_full(LOG_WARNING, __VA_ARGS__)
#define log_error(...)   log_full(LOG_ERR, __VA_ARGS__)

#define log_debug_errno(e, ...)   log_full_errno(LOG_DEBUG, (e), __VA_ARGS__)
#define log_info_errno(e, ...)    log_full_errno(LOG_INFO, (e), __VA_ARGS__)
#define log_notice_errno(e, ...)  log_full_errno(LOG_NOTICE, (e), __VA_ARGS__)
#define log_warning_errno(e, ...) log_full_errno(LOG_WARNING, (e), __VA_ARGS__)
#define log_error_errno(e, ...)   log_full_errno(LOG_ERR, (e), __VA_ARGS__)

#define log_oom() log_error_errno(-ENOMEM, "Out of memory.")

/* The device a message is about, for the journal: every message logged
 * while a context is pushed on the calling thread carries SVFF_PF=,
 * SVFF_VF=, SVFF_DOMAIN= and SVFF_OPERATION= fields for what it names,
 * so 'journalctl -u svffd SVFF_PF=0000:3b:00.0' shows one PF's history.
 * A context names what the work at hand is about; a NULL member takes
 * the enclosing context's. The strings are borrowed: they must outlive
 * the context. Push with LOG_CONTEXT(), which pops it at the end of the
 * enclosing block. */
struct log_context {
        const char *pf;
        const char *vf;
        const char *domain;
        const char *operation;
        struct log_context *prev;
};

void log_context_push(struct log_context *c);
void log_context_pop(struct log_context *c);

/* The fields the innermost contexts give (NULL: none). */
const char *log_context_pf(void);
const char *log_context_vf(void);
const char *log_context_domain(void);
const char *log_context_operation(void);

/* A copy of the calling thread's context fields, for work that goes on
 * in another thread or a later callback (the worker pools carry one
 * with each job and each posted function). Best effort: a field that
 * cannot be copied is left out. */
struct log_context_copy {
        char *pf;
        char *vf;
        char *domain;
        char *operation;
};
void log_context_copy(struct log_context_copy *ret);
void log_context_copy_done(struct log_context_copy *c);

#define LOG_CONTEXT_CONCAT_(a, b) a##b
#define LOG_CONTEXT_NAME_(n) LOG_CONTEXT_CONCAT_(log_context_, n)
/* LOG_CONTEXT(.pf = pf, .operation = "init"); */
#define LOG_CONTEXT(...)                                                        \
        _cleanup_(log_context_pop) struct log_context LOG_CONTEXT_NAME_(__LINE__) = \
                { __VA_ARGS__ };                                                \
        log_context_push(&LOG_CONTEXT_NAME_(__LINE__))

/* For libsvff's log callback (svff_ctx_set_log_fn). */
void log_svff_callback(void *userdata, int priority, const char *file, int line,
                       const char *fn, const char *format, va_list args);

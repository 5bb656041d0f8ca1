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

/* Picks the target (AUTO: journal when run by systemd). */
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

/* For libsvff's log callback (svff_ctx_set_log_fn). */
void log_svff_callback(void *userdata, int priority, const char *file, int line,
                       const char *fn, const char *format, va_list args);

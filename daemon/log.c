/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-journal.h>

#include "log.h"

static int max_level = LOG_INFO;
static bool use_journal = false;

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

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
                max_level = level;
}

int log_get_max_level(void) {
        return max_level;
}

int log_level_from_string(const char *s) {
        char *end;
        long l;

        if (!s || !*s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        errno = 0;
        l = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end || l < LOG_EMERG || l > LOG_DEBUG)
                return -EINVAL;
        return (int) l;
}

const char *log_level_to_string(int level) {
        if (level < 0 || level >= (int) ELEMENTSOF(level_names))
                return "?";
        return level_names[level];
}

int log_internalv(int level, int error, const char *file, int line, const char *func,
                  const char *format, va_list ap) {
        int saved = errno;
        char msg[2048];

        if ((level & LOG_PRIMASK) > max_level)
                return error < 0 ? error : 0;

        /* %m names error, not whatever errno happens to be. */
        errno = error < 0 ? -error : (error > 0 ? error : saved);
        vsnprintf(msg, sizeof(msg), format, ap);

        if (use_journal) {
                int prio = level & LOG_PRIMASK;

                if (error != 0)
                        sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", prio,
                                        "ERRNO=%i", error < 0 ? -error : error,
                                        "CODE_FILE=%s", file, "CODE_LINE=%i", line,
                                        "CODE_FUNC=%s", func, NULL);
                else
                        sd_journal_send("MESSAGE=%s", msg, "PRIORITY=%i", prio,
                                        "CODE_FILE=%s", file, "CODE_LINE=%i", line,
                                        "CODE_FUNC=%s", func, NULL);
        } else
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

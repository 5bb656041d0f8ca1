/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include "log.h"
#include "statedir.h"

#define STATE_LOCK_FILE "svffd.lock"

/* The pid the lock holder wrote into the lock file, or 0 when unknown
 * (it may not have written it yet). */
static pid_t lock_holder(int fd) {
        char buf[32], *end;
        ssize_t n;
        long v;

        n = pread(fd, buf, sizeof(buf) - 1, 0);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        errno = 0;
        v = strtol(buf, &end, 10);
        if (errno != 0 || end == buf || (*end != '\n' && *end != 0) || v <= 0 || v > INT32_MAX)
                return 0;
        return (pid_t) v;
}

/* A permission error from an svffd that is not root: the reason is that. */
static bool not_root(int error) {
        return (error == EACCES || error == EPERM) && geteuid() != 0;
}

static int root_needed(int r, const char *dir) {
        errno = -r;
        return log_error_errno(r, "svffd must run as root: it writes sysfs, and as uid %u it cannot write its "
                               "state directory '%s' (%m). Run it as root, or through its systemd unit.",
                               (unsigned) geteuid(), dir);
}

/* Held until svffd exits (the kernel drops it even on SIGKILL); the file
 * stays, as unlinking a lock file races with the next taker. */
int statedir_lock(const char *dir, int *ret_fd) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;
        char pid[32];
        int n;

        if (mkdir(dir, 0700) < 0 && errno != EEXIST)
                return not_root(errno) ? root_needed(-errno, dir)
                                       : log_error_errno(-errno, "Failed to create state directory '%s': %m", dir);
        if (asprintf(&path, "%s/" STATE_LOCK_FILE, dir) < 0)
                return log_oom();
        fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY, 0600);
        if (fd < 0)
                return not_root(errno) ? root_needed(-errno, dir)
                                       : log_error_errno(-errno, "Failed to open lock file '%s': %m", path);
        if (flock(fd, LOCK_EX | LOCK_NB) < 0) {
                pid_t holder;

                if (errno != EWOULDBLOCK)
                        return log_error_errno(-errno, "Failed to lock '%s': %m", path);
                holder = lock_holder(fd);
                if (holder > 0)
                        return log_error_errno(-EBUSY,
                                               "State directory '%s' is in use by another svffd (pid %d, "
                                               "lock '%s'): stop that one, or give this one its own --state-dir.",
                                               dir, (int) holder, path);
                return log_error_errno(-EBUSY,
                                       "State directory '%s' is in use by another svffd (lock '%s'): "
                                       "stop that one, or give this one its own --state-dir.",
                                       dir, path);
        }

        n = snprintf(pid, sizeof(pid), "%d\n", (int) getpid());
        if (ftruncate(fd, 0) < 0 || pwrite(fd, pid, (size_t) n, 0) != n)
                log_warning_errno(-errno, "Failed to write the pid into '%s', ignoring: %m", path);
        *ret_fd = TAKE_FD(fd);
        return 0;
}

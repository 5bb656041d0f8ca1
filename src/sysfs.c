/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdarg.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "sysfs.h"

/* Relative paths only: an absolute path would silently escape the root
 * (openat ignores the dirfd), defeating fixture and pcisim trees. */
static int check_path(const char *path) {
        if (!path || path[0] == '\0' || path[0] == '/')
                return -EINVAL;
        return 0;
}

int svff_sysfs_read(int rootfd, const char *path, char **ret) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t size = 4096, len = 0;
        int r;

        r = check_path(path);
        if (r < 0)
                return r;

        fd = openat(rootfd, path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;

        /* sysfs attributes are at most a page, but binary ones and
         * simulators may be larger: grow until EOF. A read that leaves
         * room in the buffer has returned the whole attribute (sysfs
         * serves a text attribute in one read, and a short read of a
         * regular file is its end), which spares a second read per
         * attribute just to see EOF: a tenth of a discovery's round
         * trips on FUSE. */
        buf = malloc(size);
        if (!buf)
                return -ENOMEM;
        for (;;) {
                size_t want;
                ssize_t n;

                if (len + 1 >= size) {
                        char *p;

                        size *= 2;
                        p = realloc(buf, size);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                }
                want = size - len - 1;
                n = read(fd, buf + len, want);
                if (n < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                len += (size_t) n;
                if ((size_t) n < want)
                        break;
        }
        buf[len] = '\0';
        if (len > 0 && buf[len - 1] == '\n')
                buf[--len] = '\0';

        /* Callers keep what they read (a VF's driver_override lives as
         * long as the snapshot holding it): hand out an exact copy, not
         * the page-sized read buffer, which made a snapshot of 1008 VFs
         * cost 4 MiB. The buffer goes back to malloc for the next read. */
        {
                char *exact = malloc(len + 1);

                if (!exact)
                        return -ENOMEM;
                memcpy(exact, buf, len + 1);
                *ret = exact;
        }
        return 0;
}

int svff_sysfs_readf(int rootfd, char **ret, const char *fmt, ...) {
        _cleanup_free_ char *path = NULL;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&path, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;

        return svff_sysfs_read(rootfd, path, ret);
}

/* "0x" prefix: hex, else decimal (never octal: sysfs prints "010" for
 * nothing, but a user-edited fixture might). */
static int parse_u64(const char *s, uint64_t *ret) {
        unsigned long long v;
        char *end;
        int base = 10;

        if (s[0] == '0' && (s[1] == 'x' || s[1] == 'X')) {
                base = 16;
                s += 2;
        }
        /* strtoull() would accept leading space and a sign. */
        if (!(base == 16 ? isxdigit((unsigned char) s[0]) : (s[0] >= '0' && s[0] <= '9')))
                return -EINVAL;

        errno = 0;
        v = strtoull(s, &end, base);
        if (errno == ERANGE)
                return -ERANGE;
        if (errno != 0 || *end != '\0')
                return -EINVAL;

        *ret = v;
        return 0;
}

int svff_sysfs_read_u64(int rootfd, const char *path, uint64_t *ret) {
        _cleanup_free_ char *s = NULL;
        uint64_t v;
        int r;

        r = svff_sysfs_read(rootfd, path, &s);
        if (r < 0)
                return r;
        r = parse_u64(s, &v);
        if (r < 0)
                return r;

        *ret = v;
        return 0;
}

int svff_sysfs_read_hex(int rootfd, const char *path, uint64_t *ret) {
        _cleanup_free_ char *s = NULL, *prefixed = NULL;
        const char *p;
        uint64_t v;
        int r;

        r = svff_sysfs_read(rootfd, path, &s);
        if (r < 0)
                return r;
        p = s[0] == '0' && (s[1] == 'x' || s[1] == 'X') ? s + 2 : s;
        if (asprintf(&prefixed, "0x%s", p) < 0)
                return -ENOMEM;
        r = parse_u64(prefixed, &v);
        if (r < 0)
                return r;

        *ret = v;
        return 0;
}

int svff_sysfs_read_int(int rootfd, const char *path, int *ret) {
        _cleanup_free_ char *s = NULL;
        const char *p;
        bool neg;
        uint64_t v;
        int r;

        r = svff_sysfs_read(rootfd, path, &s);
        if (r < 0)
                return r;

        neg = s[0] == '-';
        p = neg ? s + 1 : s;
        r = parse_u64(p, &v);
        if (r < 0)
                return r;
        if (neg ? v > (uint64_t) INT_MAX + 1 : v > INT_MAX)
                return -ERANGE;

        *ret = neg ? (int) -(int64_t) v : (int) v;
        return 0;
}

int svff_sysfs_read_bool(int rootfd, const char *path, bool *ret) {
        _cleanup_free_ char *s = NULL;
        int r;

        r = svff_sysfs_read(rootfd, path, &s);
        if (r < 0)
                return r;

        /* sysfs prints "%u" for flags like sriov_drivers_autoprobe; module
         * parameters print Y/N. */
        if (streq(s, "1") || streq(s, "Y") || streq(s, "y"))
                *ret = true;
        else if (streq(s, "0") || streq(s, "N") || streq(s, "n"))
                *ret = false;
        else
                return -EINVAL;
        return 0;
}

int svff_sysfs_write(int rootfd, const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        size_t len;
        ssize_t n;
        int r;

        r = check_path(path);
        if (r < 0)
                return r;
        if (!value)
                return -EINVAL;

        fd = openat(rootfd, path, O_WRONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return -errno;

        len = strlen(value);
        do
                n = write(fd, value, len);
        while (n < 0 && errno == EINTR);
        if (n < 0)
                return -errno;
        if ((size_t) n != len)
                return -EIO;

        /* FUSE may report a store error only at flush. */
        if (close(TAKE_FD(fd)) < 0 && errno != EINTR)
                return -errno;
        return 0;
}

/* One blocking read or write, shared between the caller (who may give up)
 * and the thread doing it (which cannot). Whoever drops the last
 * reference frees it; the job holds a context reference so that the
 * stuck-writes counter, the pending list and the root fd stay valid until
 * the I/O returns, even when the caller has long since unref'd the
 * context. */
struct io_job {
        pthread_mutex_t lock;
        pthread_cond_t cond;
        unsigned n_ref;     /* under lock */
        bool done;          /* under lock */
        bool abandoned;     /* under lock: the caller timed out */
        int result;

        struct svff_ctx *ctx;
        char *path;
        bool read;
        char *value;        /* a write's value; a read's result, under lock */
        usec_t started;
};

static void io_job_unref(struct io_job *j) {
        bool last;

        if (!j)
                return;

        pthread_mutex_lock(&j->lock);
        last = --j->n_ref == 0;
        pthread_mutex_unlock(&j->lock);
        if (!last)
                return;

        pthread_cond_destroy(&j->cond);
        pthread_mutex_destroy(&j->lock);
        svff_ctx_unref(j->ctx);
        free(j->path);
        free(j->value);
        free(j);
}

static void *io_job_run(void *userdata) {
        struct io_job *j = userdata;
        char *value = NULL;
        int r;

        if (j->read)
                r = svff_sysfs_read(svff_ctx_get_rootfd(j->ctx), j->path, &value);
        else {
                r = svff_sysfs_write(svff_ctx_get_rootfd(j->ctx), j->path, j->value);
                svff_ctx_write_end(j->ctx, j->path);
        }

        pthread_mutex_lock(&j->lock);
        j->done = true;
        j->result = r;
        if (j->read)
                j->value = value;
        if (j->abandoned) {
                if (j->read)
                        svff_ctx_read_stuck_end(j->ctx, j->path);
                else
                        svff_ctx_stuck_writes_dec(j->ctx);
                svff_log_debug(j->ctx, "Stuck %s of '%s' finished late: %d", j->read ? "read" : "write",
                               j->path, r);
        }
        pthread_cond_signal(&j->cond);
        pthread_mutex_unlock(&j->lock);

        io_job_unref(j);
        return NULL;
}

/* Runs j on a thread of its own and waits up to timeout_usec for it:
 * its result, or -ETIMEDOUT with the job left to finish alone and
 * recorded as stuck in the context. Takes the caller's reference. */
static int io_job_run_deadline(struct io_job *j, usec_t timeout_usec, char **ret_value) {
        struct svff_ctx *ctx = j->ctx;
        pthread_attr_t attr;
        pthread_t thread;
        struct timespec ts;
        usec_t deadline;
        int r;

        j->n_ref = 2;
        j->started = svff_now_usec();

        pthread_attr_init(&attr);
        pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
        r = -pthread_create(&thread, &attr, io_job_run, j);
        pthread_attr_destroy(&attr);
        if (r < 0) {
                if (!j->read)
                        svff_ctx_write_end(ctx, j->path);
                j->n_ref = 1;
                io_job_unref(j);
                return r;
        }

        deadline = j->started + timeout_usec;
        ts.tv_sec = (time_t) (deadline / USEC_PER_SEC);
        ts.tv_nsec = (long) (deadline % USEC_PER_SEC * 1000);

        pthread_mutex_lock(&j->lock);
        while (!j->done) {
                int k = pthread_cond_timedwait(&j->cond, &j->lock, &ts);
                if (k == ETIMEDOUT && !j->done) {
                        j->abandoned = true;
                        if (j->read)
                                (void) svff_ctx_read_stuck_begin(ctx, j->path, j->started);
                        else {
                                svff_ctx_stuck_writes_inc(ctx);
                                svff_ctx_write_late(ctx, j->path);
                        }
                        break;
                }
        }
        r = j->done ? j->result : -ETIMEDOUT;
        if (r >= 0 && ret_value)
                *ret_value = TAKE_PTR(j->value);
        pthread_mutex_unlock(&j->lock);

        if (r == -ETIMEDOUT)
                svff_log_debug(ctx, "%s '%s' still blocked after %llu ms, leaving it",
                               j->read ? "Read of" : "Write to", j->path,
                               (unsigned long long) (timeout_usec / USEC_PER_MSEC));
        io_job_unref(j);
        return r;
}

/* value NULL: a read. One reference, the caller's. */
static struct io_job *io_job_new(struct svff_ctx *ctx, const char *path, const char *value) {
        struct io_job *j = calloc(1, sizeof(*j));
        pthread_condattr_t cattr;

        if (!j)
                return NULL;
        pthread_mutex_init(&j->lock, NULL);
        pthread_condattr_init(&cattr);
        pthread_condattr_setclock(&cattr, CLOCK_MONOTONIC);
        pthread_cond_init(&j->cond, &cattr);
        pthread_condattr_destroy(&cattr);
        j->n_ref = 1;
        j->ctx = svff_ctx_ref(ctx);
        j->path = strdup(path);
        j->read = !value;
        j->value = value ? strdup(value) : NULL;
        if (!j->path || (value && !j->value)) {
                io_job_unref(j);
                return NULL;
        }
        return j;
}

int svff_sysfs_write_deadline(struct svff_ctx *ctx, const char *path, const char *value,
                              usec_t timeout_usec) {
        struct io_job *j;
        int r;

        if (!ctx)
                return -EINVAL;
        if (timeout_usec == 0)
                return svff_sysfs_write(svff_ctx_get_rootfd(ctx), path, value);

        r = check_path(path);
        if (r < 0)
                return r;
        if (!value)
                return -EINVAL;

        j = io_job_new(ctx, path, value);
        if (!j)
                return -ENOMEM;
        r = svff_ctx_write_begin(ctx, path, value);
        if (r < 0) {
                io_job_unref(j);
                return r;
        }
        return io_job_run_deadline(j, timeout_usec, NULL);
}

int svff_sysfs_read_u64_deadline(struct svff_ctx *ctx, const char *path, usec_t timeout_usec, uint64_t *ret) {
        _cleanup_free_ char *value = NULL;
        struct io_job *j;
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        r = check_path(path);
        if (r < 0)
                return r;
        r = svff_ctx_read_stuck(ctx, path, NULL);
        if (r != 0)
                return r < 0 ? r : -EBUSY;

        j = io_job_new(ctx, path, NULL);
        if (!j)
                return -ENOMEM;
        r = io_job_run_deadline(j, timeout_usec, &value);
        if (r < 0)
                return r;
        return parse_u64(value, ret);
}

int svff_sysfs_readlink(int rootfd, const char *path, char **ret) {
        _cleanup_free_ char *buf = NULL;
        size_t size = 256;
        int r;

        r = check_path(path);
        if (r < 0)
                return r;

        for (;;) {
                ssize_t n;

                buf = malloc(size);
                if (!buf)
                        return -ENOMEM;
                n = readlinkat(rootfd, path, buf, size);
                if (n < 0)
                        return -errno;
                if ((size_t) n < size) {
                        buf[n] = '\0';
                        break;
                }
                /* Possibly truncated: try again with more room. */
                buf = mfree(buf);
                size *= 2;
        }

        *ret = TAKE_PTR(buf);
        return 0;
}

int svff_sysfs_readlink_base(int rootfd, const char *path, char **ret) {
        _cleanup_free_ char *target = NULL;
        const char *base;
        char *s;
        int r;

        r = svff_sysfs_readlink(rootfd, path, &target);
        if (r < 0)
                return r;

        base = strrchr(target, '/');
        base = base ? base + 1 : target;
        if (base[0] == '\0')
                return -EINVAL;

        s = strdup(base);
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

int svff_sysfs_exists(int rootfd, const char *path) {
        struct stat st;
        int r;

        r = check_path(path);
        if (r < 0)
                return r;

        if (fstatat(rootfd, path, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return errno == ENOENT ? 0 : -errno;
        return 1;
}

int svff_sysfs_open_dir(int rootfd, const char *path) {
        int fd, r;

        r = check_path(path);
        if (r < 0)
                return r;

        fd = openat(rootfd, path, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        return fd;
}

int svff_sysfs_list_dir(int rootfd, const char *path, char ***ret) {
        _cleanup_strv_free_ char **l = NULL;
        _cleanup_closedir_ DIR *d = NULL;
        size_t n = 0, allocated = 0;
        struct dirent *de;
        int fd, r;

        r = check_path(path);
        if (r < 0)
                return r;

        fd = openat(rootfd, path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        d = fdopendir(fd);
        if (!d) {
                r = -errno;
                close(fd);
                return r;
        }

        l = calloc(1, sizeof(char *));
        if (!l)
                return -ENOMEM;
        allocated = 1;

        for (;;) {
                errno = 0;
                de = readdir(d);
                if (!de) {
                        if (errno != 0)
                                return -errno;
                        break;
                }
                if (streq(de->d_name, ".") || streq(de->d_name, ".."))
                        continue;

                if (n + 2 > allocated) {
                        char **p;

                        allocated = allocated * 2 + 2;
                        p = realloc(l, allocated * sizeof(char *));
                        if (!p)
                                return -ENOMEM;
                        l = p;
                }
                l[n] = strdup(de->d_name);
                if (!l[n])
                        return -ENOMEM;
                l[++n] = NULL;
        }

        qsort(l, n, sizeof(char *), strv_cmp);
        *ret = TAKE_PTR(l);
        return 0;
}

usec_t svff_now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (usec_t) ts.tv_sec * USEC_PER_SEC + (usec_t) ts.tv_nsec / 1000;
}

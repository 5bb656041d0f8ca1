/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flash hook runner: checks an image path without reading the
 * image, runs the configured hook under a deadline and reports how it
 * ended. */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flash-hook.h"
#include "json-util.h"
#include "macro.h"
#include "sha256.h"
#include "sysfs.h"
#include "utf8.h"

/* path_root_owned(): whether root alone can change what path names.
 * Every directory from / down and the file itself must be owned by root
 * and writable by no group or other; a directory writable by all is
 * allowed only with the sticky bit (as /tmp), where only root may rename
 * or remove root's entries. A symbolic link on the way is followed only
 * if root owns it, and the path it leads to is checked the same way.
 * Runs as root, the hook and the flash tool can do anything: any other
 * owner could rewrite them (or swap a directory on the way) between the
 * check and the run. Refusals name the offending path and its owner. */
static int path_root_owned_depth(const char *what, const char *name, const char *path, unsigned depth,
                                 struct svff_error *err);

static int node_root_owned(const char *what, const char *name, const char *node, const struct stat *st,
                           struct svff_error *err) {
        bool sticky_dir = S_ISDIR(st->st_mode) && (st->st_mode & S_ISVTX);

        if (st->st_uid != 0)
                return svff_error_set(err, -EPERM, "%s '%s' is refused: '%s' is owned by uid %u, not root, "
                                      "who runs it", what, name, node, (unsigned) st->st_uid);
        if ((st->st_mode & S_IWOTH) && !sticky_dir)
                return svff_error_set(err, -EPERM, "%s '%s' is refused: '%s' can be written by others "
                                      "(mode %04o; owner uid %u)", what, name, node,
                                      (unsigned) (st->st_mode & 07777), (unsigned) st->st_uid);
        if ((st->st_mode & S_IWGRP) && !sticky_dir)
                return svff_error_set(err, -EPERM, "%s '%s' is refused: '%s' can be written by its group "
                                      "(gid %u, mode %04o; owner uid %u)", what, name, node,
                                      (unsigned) st->st_gid, (unsigned) (st->st_mode & 07777),
                                      (unsigned) st->st_uid);
        return 0;
}

static int path_root_owned_depth(const char *what, const char *name, const char *path, unsigned depth,
                                 struct svff_error *err) {
        _cleanup_free_ char *prefix = NULL;
        size_t n = strlen(path);
        struct stat st;
        int r;

        if (depth > 16)
                return svff_error_set(err, -ELOOP, "%s '%s' is refused: too many symbolic links on the way",
                                      what, name);
        if (path[0] != '/')
                return svff_error_set(err, -EINVAL, "%s '%s' is refused: '%s' is not an absolute path", what,
                                      name, path);
        prefix = strdup(path);
        if (!prefix)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        /* "/", then each longer prefix that ends a component. */
        for (size_t i = 1; i <= n; i++) {
                if (i > 1 && i < n && path[i] != '/')
                        continue;
                if (i > 1 && path[i - 1] == '/')
                        continue;       /* "//", or a trailing '/' */
                memcpy(prefix, path, i);
                prefix[i] = '\0';
                if (lstat(prefix, &st) < 0)
                        return svff_error_set_errno(err, -errno, "%s '%s': cannot look at '%s'", what, name,
                                                    prefix);
                if (S_ISLNK(st.st_mode)) {
                        _cleanup_free_ char *target = NULL, *next = NULL;
                        ssize_t l;

                        if (st.st_uid != 0)
                                return svff_error_set(err, -EPERM, "%s '%s' is refused: '%s', a symbolic link "
                                                      "on the way, is owned by uid %u, not root", what, name,
                                                      prefix, (unsigned) st.st_uid);
                        target = malloc((size_t) st.st_size + 1);
                        if (!target)
                                return svff_error_set(err, -ENOMEM, "Out of memory");
                        l = readlink(prefix, target, (size_t) st.st_size + 1);
                        if (l < 0 || l > st.st_size)
                                return svff_error_set_errno(err, l < 0 ? -errno : -EAGAIN,
                                                            "%s '%s': cannot read the link '%s'", what, name,
                                                            prefix);
                        target[l] = '\0';
                        /* Where it leads, and the rest of the path, checked the same way. */
                        if (target[0] == '/')
                                r = asprintf(&next, "%s%s", target, path + i);
                        else
                                r = asprintf(&next, "%.*s/%s%s", (int) (strrchr(prefix, '/') - prefix), prefix,
                                             target, path + i);
                        if (r < 0)
                                return svff_error_set(err, -ENOMEM, "Out of memory");
                        return path_root_owned_depth(what, name, next, depth + 1, err);
                }
                r = node_root_owned(what, name, prefix, &st, err);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int path_root_owned(const char *what, const char *path, struct svff_error *err) {
        return path_root_owned_depth(what, path, path, 0, err);
}

/* A directory an image may come from: writable by its owner alone, and
 * that owner root or svffd, so no one else can swap what the hook reads
 * after the check. */
static int dir_trusted(int fd, const char *what, const char *image, struct svff_error *err) {
        struct stat st;

        if (fstat(fd, &st) < 0)
                return svff_error_set_errno(err, -errno, "Cannot look at '%s' on the way to image '%s'", what, image);
        if (!S_ISDIR(st.st_mode))
                return svff_error_set(err, -EINVAL, "'%s' on the way to image '%s' is not a directory", what, image);
        if ((st.st_mode & (S_IWGRP | S_IWOTH)) || (st.st_uid != 0 && st.st_uid != geteuid()))
                return svff_error_set(err, -EPERM,
                                      "Image '%s' is refused: directory '%s' can be written by others than "
                                      "root and svffd (mode %04o, owner %u), who could change the image after "
                                      "the check",
                                      image, what, (unsigned) (st.st_mode & 07777), (unsigned) st.st_uid);
        return 0;
}

/* Whether every component of the path after the root is a plain name. */
static bool path_plain(const char *p) {
        const char *c = p;

        while (*c) {
                const char *end;
                size_t n;

                while (*c == '/')
                        c++;
                if (!*c)
                        break;
                end = strchrnul(c, '/');
                n = (size_t) (end - c);
                if ((n == 1 && c[0] == '.') || (n == 2 && c[0] == '.' && c[1] == '.'))
                        return false;
                c = end;
        }
        return true;
}

int svff_flash_image_stat(const char *image_dir, const char *image, struct stat *ret, struct svff_error *err) {
        _cleanup_close_ int dfd = -EBADF;
        _cleanup_free_ char *rel = NULL;
        size_t dl;
        char *c, *slash;
        struct stat st;
        int r;

        if (!image_dir || image_dir[0] != '/')
                return svff_error_set(err, -EINVAL,
                                      "No image directory is configured ('flash_image_dir' in svff.conf): "
                                      "every image is refused");
        if (!image || image[0] != '/')
                return svff_error_set(err, -EINVAL, "Image '%s' must be an absolute path", image ?: "");
        if (!path_plain(image))
                return svff_error_set(err, -EINVAL, "Image '%s' must be named without '.' or '..' components",
                                      image);
        dl = strlen(image_dir);
        while (dl > 1 && image_dir[dl - 1] == '/')
                dl--;
        if (strncmp(image, image_dir, dl) != 0 || (image[dl] != '/' && dl > 1) || !image[dl + (dl > 1)])
                return svff_error_set(err, -EPERM, "Image '%s' is not under the image directory '%.*s' "
                                      "('flash_image_dir' in svff.conf)", image, (int) dl, image_dir);

        /* The configured directory itself may be reached through links
         * (the administrator chose it); nothing below it may. */
        dfd = open(image_dir, O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (dfd < 0)
                return svff_error_set_errno(err, -errno, "Cannot open the image directory '%s'", image_dir);
        r = dir_trusted(dfd, image_dir, image, err);
        if (r < 0)
                return r;

        rel = strdup(image + dl);
        if (!rel)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        c = rel;
        while (*c == '/')
                c++;
        while ((slash = strchr(c, '/'))) {
                int nfd;

                *slash = '\0';
                if (*c) {
                        nfd = openat(dfd, c, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
                        if (nfd < 0) {
                                r = -errno;
                                if (r == -ENOTDIR && fstatat(dfd, c, &st, AT_SYMLINK_NOFOLLOW) == 0 &&
                                    S_ISLNK(st.st_mode))
                                        r = -ELOOP;
                                if (r == -ELOOP)
                                        return svff_error_set(err, -ELOOP,
                                                              "Image '%s' is refused: '%s' on the way is a "
                                                              "symbolic link", image, c);
                                return svff_error_set_errno(err, r, "Image '%s': cannot reach directory '%s'",
                                                            image, c);
                        }
                        close(dfd);
                        dfd = nfd;
                        r = dir_trusted(dfd, c, image, err);
                        if (r < 0)
                                return r;
                }
                c = slash + 1;
                while (*c == '/')
                        c++;
        }
        if (!*c)
                return svff_error_set(err, -EINVAL, "Image '%s' names a directory, not a file", image);
        if (fstatat(dfd, c, &st, AT_SYMLINK_NOFOLLOW) < 0)
                return svff_error_set_errno(err, -errno, "Image '%s'", image);
        if (S_ISLNK(st.st_mode))
                return svff_error_set(err, -ELOOP, "Image '%s' is refused: it is a symbolic link; name the "
                                      "file itself", image);
        if (!S_ISREG(st.st_mode))
                return svff_error_set(err, -EINVAL, "Image '%s' is not a regular file", image);
        r = path_root_owned("Image", image, err);
        if (r < 0)
                return r;
        if (ret)
                *ret = st;
        return 0;
}

int svff_flash_image_check(const char *image_dir, const char *image, struct svff_error *err) {
        return svff_flash_image_stat(image_dir, image, NULL, err);
}

struct json_object *svff_flash_image_identity(const char *image, const struct stat *st) {
        struct json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        if (json_object_object_add(o, "path", json_object_new_string(image)) < 0 ||
            json_object_object_add(o, "dev", json_object_new_int64((int64_t) st->st_dev)) < 0 ||
            json_object_object_add(o, "ino", json_object_new_int64((int64_t) st->st_ino)) < 0 ||
            json_object_object_add(o, "size", json_object_new_int64((int64_t) st->st_size)) < 0 ||
            json_object_object_add(o, "mtime_nsec", json_object_new_int64(
                                           (int64_t) st->st_mtim.tv_sec * 1000000000 + st->st_mtim.tv_nsec)) < 0 ||
            json_object_object_add(o, "ctime_nsec", json_object_new_int64(
                                           (int64_t) st->st_ctim.tv_sec * 1000000000 + st->st_ctim.tv_nsec)) < 0) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

bool svff_flash_image_same(struct json_object *a, struct json_object *b) {
        /* mtime can be set back; ctime cannot. An identity recorded
         * before ctime was part of it lacks the key and so matches
         * nothing: the image is flashed again rather than trusted. */
        static const char *const keys[] = { "dev", "ino", "size", "mtime_nsec", "ctime_nsec" };
        struct json_object *va, *vb;

        if (!a || !b || !json_object_object_get_ex(a, "path", &va) || !json_object_object_get_ex(b, "path", &vb) ||
            !json_object_is_type(va, json_type_string) || !json_object_is_type(vb, json_type_string) ||
            !streq(json_object_get_string(va), json_object_get_string(vb)))
                return false;
        for (size_t i = 0; i < ELEMENTSOF(keys); i++)
                if (!json_object_object_get_ex(a, keys[i], &va) || !json_object_object_get_ex(b, keys[i], &vb) ||
                    !json_object_is_type(va, json_type_int) || !json_object_is_type(vb, json_type_int) ||
                    json_object_get_int64(va) != json_object_get_int64(vb))
                        return false;
        return true;
}

static bool same_path(struct json_object *a, struct json_object *b) {
        const char *pa = NULL, *pb = NULL;

        return a && b && svff_json_get_string(a, "path", &pa) >= 0 && svff_json_get_string(b, "path", &pb) >= 0 &&
               streq(pa, pb);
}

bool svff_flash_image_same_content(struct json_object *a, struct json_object *b) {
        const char *ha = NULL, *hb = NULL;

        return same_path(a, b) && svff_json_get_string(a, "sha256", &ha) >= 0 &&
               svff_json_get_string(b, "sha256", &hb) >= 0 && svff_sha256_hex_valid(ha) && streq(ha, hb);
}

static bool same_file_state(const struct stat *a, const struct stat *b) {
        return a->st_dev == b->st_dev && a->st_ino == b->st_ino && a->st_size == b->st_size &&
               a->st_mtim.tv_sec == b->st_mtim.tv_sec && a->st_mtim.tv_nsec == b->st_mtim.tv_nsec &&
               a->st_ctim.tv_sec == b->st_ctim.tv_sec && a->st_ctim.tv_nsec == b->st_ctim.tv_nsec;
}

int svff_flash_image_hash(const char *image_dir, const char *image, bool (*cancelled)(void *userdata),
                          void *userdata, struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = NULL;
        _cleanup_close_ int fd = -EBADF;
        char hex[SVFF_SHA256_HEX_SIZE];
        struct stat lst, st, after;
        int r;

        r = svff_flash_image_stat(image_dir, image, &lst, err);
        if (r < 0)
                return r;
        fd = open(image, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
        if (fd < 0)
                return svff_error_set_errno(err, -errno, "Cannot open image '%s'", image);
        if (fstat(fd, &st) < 0)
                return svff_error_set_errno(err, -errno, "Cannot stat image '%s'", image);
        if (!S_ISREG(st.st_mode) || st.st_dev != lst.st_dev || st.st_ino != lst.st_ino)
                return svff_error_set(err, -EAGAIN, "Image '%s' was replaced while svffd opened it", image);
        r = svff_sha256_fd(fd, image, cancelled, userdata, hex, err);
        if (r < 0)
                return r;
        if (fstat(fd, &after) < 0)
                return svff_error_set_errno(err, -errno, "Cannot stat image '%s'", image);
        if (!same_file_state(&st, &after))
                return svff_error_set(err, -EAGAIN, "Image '%s' changed while svffd read it", image);
        o = svff_flash_image_identity(image, &st);
        if (!o || json_object_object_add(o, "sha256", json_object_new_string(hex)) < 0)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        *ret = TAKE_PTR(o);
        return 0;
}

static int hook_check(const char *path, struct svff_error *err) {
        struct stat st;

        if (!path || path[0] != '/')
                return svff_error_set(err, -ENOEXEC, "No flash hook is configured ('flash_hook' in svff.conf, "
                                      "an absolute path)");
        if (stat(path, &st) < 0)
                return svff_error_set_errno(err, -errno, "Cannot run the flash hook '%s'", path);
        if (!S_ISREG(st.st_mode))
                return svff_error_set(err, -ENOEXEC, "The flash hook '%s' is not a regular file", path);
        if (st.st_mode & (S_IWGRP | S_IWOTH))
                return svff_error_set(err, -EPERM, "The flash hook '%s' can be written by group or others "
                                      "(mode %04o): refusing to run it as svffd", path,
                                      (unsigned) (st.st_mode & 07777));
        if (access(path, X_OK) < 0)
                return svff_error_set_errno(err, -errno, "The flash hook '%s' is not executable", path);
        return path_root_owned("The flash hook", path, err);
}

int svff_flash_hook_check(const char *path, struct svff_error *err) {
        return hook_check(path, err);
}

struct output {
        char line[SVFF_FLASH_LINE_MAX + 1];
        size_t len;
        bool cut;                       /* dropping the rest of a long line */
        char last[SVFF_FLASH_LINE_MAX * 3 + 1];  /* made valid: U+FFFD is 3 bytes */
        struct svff_ctx *ctx;
        const struct svff_flash_hook *hook;
        const char *pf;
};

static void output_line(struct output *o) {
        _cleanup_free_ char *line = NULL;
        size_t n = 0;

        /* The line goes into logs, messages and the store's journal, all
         * UTF-8: a vendor tool printing Latin-1 must not make them
         * unreadable. */
        if (svff_utf8_make_valid(o->line, o->len, false, &line, &n) < 0) {
                o->len = 0;
                return;
        }
        if (o->hook->output)
                o->hook->output(o->hook->userdata, line);
        else
                svff_log_debug(o->ctx, "Flash hook on %s: %s", o->pf, line);
        if (n > 0)
                memcpy(o->last, line, n + 1);
        o->len = 0;
}

static void output_feed(struct output *o, const char *buf, size_t n) {
        for (size_t i = 0; i < n; i++) {
                if (buf[i] == '\n') {
                        if (!o->cut)
                                output_line(o);
                        o->cut = false;
                        o->len = 0;
                } else if (o->cut)
                        continue;
                else if (o->len == SVFF_FLASH_LINE_MAX) {
                        output_line(o);
                        o->cut = true;
                } else
                        o->line[o->len++] = buf[i];
        }
}

/* Reads what is there without blocking; false at end of file. */
static bool output_drain(struct output *o, int fd) {
        char buf[4096];

        for (;;) {
                ssize_t n = read(fd, buf, sizeof(buf));

                if (n > 0) {
                        output_feed(o, buf, (size_t) n);
                        continue;
                }
                if (n < 0 && errno == EINTR)
                        continue;
                return n < 0 && errno == EAGAIN;
        }
}

/* Whether the hook, its process group's leader, has ended, leaving it
 * unreaped: 1 ended, 0 running, -ECHILD when something else in the
 * process reaped it. */
static int hook_ended(pid_t pid) {
        for (;;) {
                siginfo_t si = {};

                if (waitid(P_PID, (id_t) pid, &si, WEXITED | WNOHANG | WNOWAIT) == 0)
                        return si.si_pid == pid;
                if (errno != EINTR)
                        return -errno;
        }
}

/* Kills the hook's process group, then reaps its leader. The group's id
 * is the leader's pid, which cannot be reused while the leader is
 * unreaped: killing first is what makes the kill reach the hook's
 * group and no one else's. */
static int hook_kill_reap(pid_t pid, int *ret_status) {
        (void) kill(-pid, SIGKILL);
        while (waitpid(pid, ret_status, 0) < 0)
                if (errno != EINTR)
                        return -errno;
        return 0;
}

int svff_flash_hook_run(struct svff_ctx *ctx, const struct svff_flash_hook *hook, const char *pf,
                        const char *image, struct svff_error *err) {
        _cleanup_close_ int rfd = -EBADF, wfd = -EBADF;
        _cleanup_free_ char *deadline_s = NULL, *env_pf = NULL, *env_image = NULL, *env_deadline = NULL;
        _cleanup_free_ struct output *o = NULL;
        posix_spawn_file_actions_t fa;
        posix_spawnattr_t attr;
        usec_t deadline;
        bool eof = false, exited = false, killed = false;
        int pipefd[2], status = 0, r;
        pid_t pid;

        r = hook_check(hook->path, err);
        if (r < 0)
                return r;
        r = svff_flash_image_check(hook->image_dir, image, err);
        if (r < 0)
                return r;

        deadline = svff_now_usec() + hook->timeout_usec;
        if (asprintf(&deadline_s, "%lld", (long long) time(NULL) + (long long) (hook->timeout_usec / USEC_PER_SEC)) < 0 ||
            asprintf(&env_pf, "SVFF_PF=%s", pf) < 0 || asprintf(&env_image, "SVFF_IMAGE=%s", image) < 0 ||
            asprintf(&env_deadline, "SVFF_DEADLINE=%s", deadline_s) < 0)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        o = calloc(1, sizeof(*o));
        if (!o)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        o->ctx = ctx;
        o->hook = hook;
        o->pf = pf;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return svff_error_set_errno(err, -errno, "Cannot run the flash hook '%s'", hook->path);
        rfd = pipefd[0];
        wfd = pipefd[1];
        if (fcntl(rfd, F_SETFL, O_NONBLOCK) < 0)
                return svff_error_set_errno(err, -errno, "Cannot run the flash hook '%s'", hook->path);

        {
                char *const argv[] = { (char *) hook->path, (char *) pf, (char *) image, deadline_s, NULL };
                char *const envp[] = { (char *) "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin",
                                       env_pf, env_image, env_deadline, NULL };

                posix_spawn_file_actions_init(&fa);
                posix_spawnattr_init(&attr);
                /* its own group, so the deadline kills whatever it started;
                 * default signal dispositions and mask, whatever svffd's */
                posix_spawnattr_setpgroup(&attr, 0);
                {
                        sigset_t none, all;

                        sigemptyset(&none);
                        sigfillset(&all);
                        posix_spawnattr_setsigmask(&attr, &none);
                        posix_spawnattr_setsigdefault(&attr, &all);
                }
                posix_spawnattr_setflags(&attr, POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGMASK |
                                                POSIX_SPAWN_SETSIGDEF);
                posix_spawn_file_actions_addopen(&fa, 0, "/dev/null", O_RDONLY, 0);
                posix_spawn_file_actions_adddup2(&fa, wfd, 1);
                posix_spawn_file_actions_adddup2(&fa, wfd, 2);
                posix_spawn_file_actions_addclosefrom_np(&fa, 3);
                r = -posix_spawn(&pid, hook->path, &fa, &attr, argv, envp);
                posix_spawn_file_actions_destroy(&fa);
                posix_spawnattr_destroy(&attr);
        }
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot run the flash hook '%s'", hook->path);
        /* the hook's end only: EOF once the hook and its children let go */
        close(TAKE_FD(wfd));
        svff_log_debug(ctx, "Flash hook '%s' on %s with '%s' started as pid %d, deadline in %llu ms.",
                       hook->path, pf, image, (int) pid, (unsigned long long) (hook->timeout_usec / 1000));

        /* Until the hook exits or the deadline passes; its children may
         * hold the pipe past its exit, so exiting is what counts. */
        while (!exited) {
                usec_t now = svff_now_usec();
                struct pollfd p = { .fd = rfd, .events = POLLIN };
                int ms;

                if (now >= deadline) {
                        killed = true;
                        break;
                }
                ms = (int) MIN((deadline - now + 999) / 1000, 100);
                if (!eof && poll(&p, 1, ms) > 0)
                        eof = !output_drain(o, rfd);
                else if (eof)
                        (void) poll(NULL, 0, ms);
                r = hook_ended(pid);
                if (r < 0) {
                        /* Reaped behind svff's back: its group may live on.
                         * The group keeps the id taken while any member
                         * lives, so this reaches nothing but what is left
                         * of it. */
                        (void) kill(-pid, SIGKILL);
                        return svff_error_set_errno(err, r, "Lost the flash hook '%s' (pid %d); what it started "
                                                    "was killed", hook->path, (int) pid);
                }
                exited = r > 0;
        }
        /* Nothing of it may stay; what it wrote before is in the pipe. */
        r = hook_kill_reap(pid, &status);
        if (r < 0)
                return svff_error_set_errno(err, r, "Lost the flash hook '%s' (pid %d); what it started was "
                                            "killed", hook->path, (int) pid);
        if (!eof)
                (void) output_drain(o, rfd);
        if (o->len > 0)
                output_line(o);

        if (killed)
                return svff_error_set(err, -ETIMEDOUT,
                                      "The flash hook '%s' on PF %s did not finish within %llu ms and was killed "
                                      "with its children: the flash is not known to have succeeded%s%s%s",
                                      hook->path, pf, (unsigned long long) (hook->timeout_usec / USEC_PER_MSEC),
                                      o->last[0] ? "; its last line: '" : "", o->last, o->last[0] ? "'" : "");
        if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
                svff_log_debug(ctx, "Flash hook '%s' on %s succeeded.", hook->path, pf);
                return 0;
        }
        if (WIFEXITED(status))
                return svff_error_set(err, -EIO, "The flash hook '%s' on PF %s failed with exit status %d%s%s%s",
                                      hook->path, pf, WEXITSTATUS(status), o->last[0] ? "; its last line: '" : "",
                                      o->last, o->last[0] ? "'" : "");
        return svff_error_set(err, -EIO, "The flash hook '%s' on PF %s was killed by signal %s%s%s%s", hook->path,
                              pf, WIFSIGNALED(status) ? strsignal(WTERMSIG(status)) : "?",
                              o->last[0] ? "; its last line: '" : "", o->last, o->last[0] ? "'" : "");
}

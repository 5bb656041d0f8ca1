/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Runs pcisim for a test: see pcisim-util.h. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pcisim-util.h"

struct pcisim {
        char *dir;              /* temporary directory, owned */
        char *root;             /* <dir>/sys, the mountpoint */
        pid_t pid;
        pid_t owner;            /* the process that started it */
        struct pcisim *next;
};

/* Simulators still running: a failing check test exit()s without its
 * cleanup, so an atexit() handler unmounts what that process started. */
static struct pcisim *live;

static void live_remove(struct pcisim *sim) {
        for (struct pcisim **p = &live; *p; p = &(*p)->next)
                if (*p == sim) {
                        *p = sim->next;
                        return;
                }
}

static void stop_all_at_exit(void) {
        struct pcisim *sim = live, *next;

        for (; sim; sim = next) {
                next = sim->next;
                if (sim->owner == getpid())
                        pcisim_free(sim);
        }
}

#define PCISIM_MAX_ARGS 16

static void sleep_ms(unsigned ms) {
        struct timespec ts = { ms / 1000, (long) (ms % 1000) * 1000000L };
        nanosleep(&ts, NULL);
}

static char *path_join(const char *a, const char *b) {
        char *s;
        return asprintf(&s, "%s/%s", a, b) < 0 ? NULL : s;
}

static char *scenario_path(const char *scenario) {
        const char *dir = getenv("PCISIM_SCENARIOS");
        char *s;

        if (strchr(scenario, '/') || !dir)
                return strdup(scenario);
        if (asprintf(&s, "%s/%s%s", dir, scenario,
                     strlen(scenario) > 5 && strcmp(scenario + strlen(scenario) - 5, ".json") == 0 ? "" : ".json") < 0)
                return NULL;
        return s;
}

/* Reaps the child if it exited; returns its exit status or -1 while running. */
static int reap(struct pcisim *sim, bool block) {
        int status;
        pid_t p;

        if (sim->pid <= 0)
                return 0;
        p = waitpid(sim->pid, &status, block ? 0 : WNOHANG);
        if (p == 0)
                return -1;
        sim->pid = 0;
        if (p < 0)
                return 0;
        return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

static int start_argv(const char *scenario, struct pcisim **ret, const char *const *extra, size_t n_extra) {
        const char *bin = getenv("PCISIM");
        const char *tmp = getenv("TMPDIR") ?: "/tmp";
        const char *argv[PCISIM_MAX_ARGS + 8];
        char *spath = NULL;
        struct pcisim *sim;
        size_t n = 0;
        int r;

        if (!bin || access(bin, X_OK) < 0)
                return -ENOENT;
        if (access("/dev/fuse", R_OK | W_OK) < 0)
                return -EOPNOTSUPP;
        if (n_extra > PCISIM_MAX_ARGS)
                return -E2BIG;
        spath = scenario_path(scenario);
        if (!spath)
                return -ENOMEM;
        if (access(spath, R_OK) < 0) {
                r = -errno;
                free(spath);
                return r;
        }

        sim = calloc(1, sizeof(*sim));
        if (!sim || asprintf(&sim->dir, "%s/pcisim-XXXXXX", tmp) < 0) {
                free(sim);
                free(spath);
                return -ENOMEM;
        }
        if (!mkdtemp(sim->dir)) {
                r = -errno;
                goto fail;
        }
        sim->root = path_join(sim->dir, "sys");
        if (!sim->root) {
                r = -ENOMEM;
                goto fail;
        }
        if (mkdir(sim->root, 0755) < 0) {
                r = -errno;
                goto fail;
        }

        argv[n++] = bin;
        argv[n++] = "--scenario";
        argv[n++] = spath;
        argv[n++] = "--foreground";
        argv[n++] = "--remove-mountpoint";
        for (size_t i = 0; i < n_extra; i++)
                argv[n++] = extra[i];
        argv[n++] = sim->root;
        argv[n] = NULL;

        sim->owner = getpid();
        sim->pid = fork();
        if (sim->pid < 0) {
                r = -errno;
                goto fail;
        }
        if (sim->pid == 0) {
                /* Own process group: check SIGKILLs a test's group when
                 * the test ends, which would leave a dead mount behind.
                 * SIGTERM instead when the test dies: pcisim unmounts. */
                (void) setpgid(0, 0);
                if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != sim->owner)
                        _exit(1);
                execv(bin, (char *const *) argv);
                _exit(127);
        }

        /* ready when the control directory answers (10 s at most) */
        for (unsigned i = 0; i < 1000; i++) {
                char *stats = path_join(sim->root, ".pcisim/stats");
                struct stat st;
                int status;

                if (!stats) {
                        r = -ENOMEM;
                        goto fail;
                }
                r = stat(stats, &st);
                free(stats);
                if (r == 0) {
                        static bool registered;

                        if (!registered && atexit(stop_all_at_exit) == 0)
                                registered = true;
                        sim->next = live;
                        live = sim;
                        free(spath);
                        *ret = sim;
                        return 0;
                }
                status = reap(sim, false);
                if (status >= 0) {
                        r = status == 77 ? -EOPNOTSUPP : -EIO;
                        goto fail;
                }
                sleep_ms(10);
        }
        r = -ETIMEDOUT;
fail:
        free(spath);
        pcisim_free(sim);
        return r;
}

int pcisim_start(const char *scenario, struct pcisim **ret) {
        return start_argv(scenario, ret, NULL, 0);
}

int pcisim_start_args(const char *scenario, struct pcisim **ret, ...) {
        const char *extra[PCISIM_MAX_ARGS + 1];
        size_t n = 0;
        va_list ap;

        va_start(ap, ret);
        for (const char *a = va_arg(ap, const char *); a; a = va_arg(ap, const char *)) {
                if (n == PCISIM_MAX_ARGS) {
                        va_end(ap);
                        return -E2BIG;
                }
                extra[n++] = a;
        }
        va_end(ap);
        return start_argv(scenario, ret, extra, n);
}

const char *pcisim_root(struct pcisim *sim) {
        return sim->root;
}

static int write_file(const char *path, const char *value) {
        ssize_t l;
        int fd, r = 0;

        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        l = write(fd, value, strlen(value));
        if (l < 0)
                r = -errno;
        else if ((size_t) l != strlen(value))
                r = -EIO;
        close(fd);
        return r;
}

int pcisim_ctl(struct pcisim *sim, const char *fmt, ...) {
        char *cmd, *path;
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&cmd, fmt, ap);
        va_end(ap);
        if (r < 0)
                return -ENOMEM;
        path = path_join(sim->root, ".pcisim/ctl");
        r = path ? write_file(path, cmd) : -ENOMEM;
        free(path);
        free(cmd);
        return r;
}

int pcisim_write(struct pcisim *sim, const char *relpath, const char *value) {
        char *path = path_join(sim->root, relpath);
        int r = path ? write_file(path, value) : -ENOMEM;

        free(path);
        return r;
}

int pcisim_read(struct pcisim *sim, const char *relpath, char **ret) {
        char *path = path_join(sim->root, relpath), *buf = NULL;
        size_t size = 0, len = 0;
        int fd, r = 0;

        if (!path)
                return -ENOMEM;
        fd = open(path, O_RDONLY | O_CLOEXEC);
        free(path);
        if (fd < 0)
                return -errno;
        for (;;) {
                ssize_t l;

                if (size - len < 4097) {
                        char *b = realloc(buf, size + 8192);
                        if (!b) {
                                r = -ENOMEM;
                                break;
                        }
                        buf = b;
                        size += 8192;
                }
                l = read(fd, buf + len, size - len - 1);
                if (l < 0) {
                        r = -errno;
                        break;
                }
                if (l == 0)
                        break;
                len += (size_t) l;
        }
        close(fd);
        if (r < 0) {
                free(buf);
                return r;
        }
        buf[len] = '\0';
        *ret = buf;
        return (int) len;
}

int pcisim_readlink(struct pcisim *sim, const char *relpath, char **ret) {
        char *path = path_join(sim->root, relpath), buf[4096];
        ssize_t l;

        if (!path)
                return -ENOMEM;
        l = readlink(path, buf, sizeof(buf) - 1);
        free(path);
        if (l < 0)
                return -errno;
        buf[l] = '\0';
        *ret = strdup(buf);
        return *ret ? 0 : -ENOMEM;
}

static void fusermount_u(const char *root) {
        pid_t p = fork();

        if (p == 0) {
                execlp("fusermount3", "fusermount3", "-u", "-z", root, (char *) NULL);
                _exit(127);
        }
        if (p > 0)
                (void) waitpid(p, NULL, 0);
}

int pcisim_stop(struct pcisim *sim) {
        int r = 0;

        live_remove(sim);
        if (sim->pid > 0) {
                /* a writer still blocked inside the mount makes it busy: detach */
                if (umount2(sim->root, 0) < 0 && umount2(sim->root, MNT_DETACH) < 0)
                        fusermount_u(sim->root);
                for (unsigned i = 0; i < 300 && reap(sim, false) < 0; i++)
                        sleep_ms(10);
                if (sim->pid > 0) {
                        /* its worker threads may be stuck in a hold: end it */
                        kill(sim->pid, SIGKILL);
                        (void) reap(sim, true);
                        r = -ETIMEDOUT;
                }
        }
        if (sim->root && rmdir(sim->root) < 0 && errno != ENOENT)
                r = r ?: -errno;
        if (sim->dir && rmdir(sim->dir) < 0 && errno != ENOENT)
                r = r ?: -errno;
        return r;
}

void pcisim_free(struct pcisim *sim) {
        if (!sim)
                return;
        (void) pcisim_stop(sim);
        free(sim->root);
        free(sim->dir);
        free(sim);
}

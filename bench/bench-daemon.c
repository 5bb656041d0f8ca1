/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Figures for svffd and svffctl on pcisim's scale scenario (4 PFs x 252
 * VFs, all initialised):
 *   - 'svffctl list --json' wall time, p50 and p99 (target p99 <= 20 ms),
 *     with no other connection open and with 500 idle ones held by this
 *     process, in alternating blocks so that the host's noise falls on
 *     both; and the List call alone over one connection;
 *   - svffd's RSS (target <= 16 MiB);
 *   - 200 concurrent clients x 100 List calls while an init of another
 *     PF runs: errors (target 0), svffd's fd count before and after (no
 *     growth), p50/p99 per call;
 *   - 'svffctl list' by root while 1000 connections of unprivileged uids
 *     flood the socket (held, dripping bytes, or opened and closed in a
 *     loop): once from one uid, which meets the per-uid cap, and once
 *     from ten, which meet the cap on all unprivileged peers, so that
 *     root runs on its reserve;
 *   - svffd's RSS while a 252-VF init runs with 128 Monitor subscribers
 *     of one unprivileged uid that never read, beside the same init with
 *     none (target <= 64 MiB); one init's events fit in the sockets'
 *     kernel buffers, so init cycles go on with them until their
 *     backlogs in svffd are full (each stream, read at last, ends with
 *     events-dropped), and the peak of those counts too;
 *   - 'svffctl list --json' alone and while inits of another PF run back
 *     to back, p50 and p99, as a ratio (target p99 <= 1.5);
 *   - svffd's CPU per state change with and without the metrics file
 *     (metrics_textfile), in alternating blocks, as a ratio;
 *   - svffd's CPU while idle with the metrics file's look at the host
 *     every second (metrics_poll_sec 1: a picture of every PF and each
 *     QDMA VF's class state read for drift) and without the file, in
 *     alternating blocks, as a ratio.
 * svffd runs with the default per-uid and monitor backlog limits, as an
 * operator would. The unprivileged peers are forked children that drop to
 * uid 65534 (and below); the socket is made world-writable for them.
 * Prints figures and ratios; not a pass/fail test: it fails only when it
 * cannot measure (a daemon that does not come up, an init that fails, a
 * child that cannot become uid 65534). $SVFFD, $SVFFCTL,
 * $PCISIM and $PCISIM_SCENARIOS name the programs (make bench sets them). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdatomic.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <unistd.h>

#include "json-util.h"
#include "pcisim-util.h"
#include "sysfs.h"
#include "varlink.h"

extern char **environ;

static const char *const pfs[] = { "0000:10:00.0", "0000:20:00.0", "0000:30:00.0", "0000:40:00.0" };

#define CLI_RUNS 300
#define CALL_RUNS 1000
#define CLIENTS 200
#define CALLS_PER_CLIENT 100
#define IDLE_CONNECTIONS 500
#define IDLE_BLOCKS 6                 /* CLI_RUNS / IDLE_BLOCKS runs each */
#define FLOOD_CHILDREN 10
#define FLOOD_PER_CHILD 100           /* 1000 connections */
#define FLOOD_RUNS 100               /* per flood, in FLOOD_BLOCKS blocks */
#define FLOOD_BLOCKS 2
#define FLOOD_UID 65534               /* and below, one per child */
#define MONITORS 128
#define MONITOR_CYCLES 16

static char sock[256];

static int cmp_usec(const void *a, const void *b) {
        usec_t x = *(const usec_t *) a, y = *(const usec_t *) b;
        return x < y ? -1 : x > y;
}

static usec_t pct(usec_t *v, size_t n, double p) {
        size_t i;

        qsort(v, n, sizeof(*v), cmp_usec);
        i = (size_t) (p * (double) (n - 1) + 0.5);
        return v[i];
}

static long proc_status_kib(pid_t pid, const char *key) {
        char path[64], line[256];
        long v = -1;
        FILE *f;

        snprintf(path, sizeof(path), "/proc/%d/status", (int) pid);
        f = fopen(path, "re");
        if (!f)
                return -1;
        while (fgets(line, sizeof(line), f))
                if (strncmp(line, key, strlen(key)) == 0 && line[strlen(key)] == ':')
                        v = atol(line + strlen(key) + 1);
        fclose(f);
        return v;
}

static usec_t proc_cpu_usec(pid_t pid) {
        char path[64], buf[1024], *p;
        unsigned long long ut, st;
        ssize_t n;
        int fd;

        snprintf(path, sizeof(path), "/proc/%d/stat", (int) pid);
        fd = open(path, O_RDONLY | O_CLOEXEC);
        if (fd < 0)
                return 0;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n <= 0)
                return 0;
        buf[n] = 0;
        p = strrchr(buf, ')');
        /* fields after ")": state ppid pgrp session tty tpgid flags minflt
         * cminflt majflt cmajflt utime stime */
        if (!p || sscanf(p + 2, "%*c %*d %*d %*d %*d %*d %*u %*u %*u %*u %*u %llu %llu", &ut, &st) != 2)
                return 0;
        return (usec_t) (ut + st) * USEC_PER_SEC / (usec_t) sysconf(_SC_CLK_TCK);
}

static int count_fds(pid_t pid) {
        char path[64];
        struct dirent *de;
        int n = 0;
        DIR *d;

        snprintf(path, sizeof(path), "/proc/%d/fd", (int) pid);
        d = opendir(path);
        if (!d)
                return -1;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        closedir(d);
        return n;
}

static int run_cli(const char *svffctl, char *const argv[], usec_t *ret_usec) {
        posix_spawn_file_actions_t fa;
        usec_t t0 = svff_now_usec();
        int status, r;
        pid_t pid;

        posix_spawn_file_actions_init(&fa);
        posix_spawn_file_actions_addopen(&fa, STDOUT_FILENO, "/dev/null", O_WRONLY, 0);
        r = posix_spawn(&pid, svffctl, &fa, NULL, argv, environ);
        posix_spawn_file_actions_destroy(&fa);
        if (r != 0)
                return -r;
        if (waitpid(pid, &status, 0) < 0)
                return -errno;
        *ret_usec = svff_now_usec() - t0;
        return WIFEXITED(status) && WEXITSTATUS(status) == 0 ? 0 : -EIO;
}

static int call(struct svff_varlink_client *c, const char *method, struct json_object *params,
                usec_t timeout) {
        struct json_object *reply = NULL;
        char *error = NULL;
        int r;

        r = svff_varlink_client_call(c, method, params, timeout, &reply, &error);
        if (r >= 0 && error) {
                fprintf(stderr, "%s: %s %s\n", method, error, json_object_to_json_string(reply));
                r = -EIO;
        }
        free(error);
        json_object_put(reply);
        return r;
}

static int init_pf(const char *pf, unsigned n) {
        _cleanup_(svff_varlink_client_freep) struct svff_varlink_client *c = NULL;
        struct json_object *p = json_object_new_object();
        int r;

        json_object_object_add(p, "pf", json_object_new_string(pf));
        json_object_object_add(p, "numvfs", json_object_new_int64(n));
        r = svff_varlink_client_connect(sock, &c);
        if (r >= 0)
                r = call(c, "io.svff.Init", p, 0);
        json_object_put(p);
        return r;
}

struct client {
        pthread_t thread;
        usec_t lat[CALLS_PER_CLIENT];
        unsigned n, errors;
        pthread_barrier_t *start;
};

/* Sends one List and reads the reply up to its NUL without parsing the
 * JSON (checking only that it is a reply, not an error): what is timed
 * is svffd, not 200 JSON parsers sharing the host's cores. */
static int raw_list(int fd, char **buf, size_t *alloc) {
        static const char req[] = "{\"method\":\"io.svff.List\"}";
        size_t len = 0;

        if (send(fd, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t) sizeof(req))
                return -EIO;
        for (;;) {
                ssize_t n;

                if (*alloc - len < 65536) {
                        char *p = realloc(*buf, *alloc * 2 + 65536);
                        if (!p)
                                return -ENOMEM;
                        *buf = p;
                        *alloc = *alloc * 2 + 65536;
                }
                n = recv(fd, *buf + len, *alloc - len, 0);
                if (n <= 0)
                        return -ECONNRESET;
                len += (size_t) n;
                if ((*buf)[len - 1] == 0)
                        break;
        }
        return strncmp(*buf, "{\"parameters\":", 14) == 0 ? 0 : -EBADMSG;
}

static void *client_main(void *userdata) {
        struct client *cl = userdata;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        char *buf = NULL;
        size_t alloc = 0;
        int fd;

        pthread_barrier_wait(cl->start);
        if (strlen(sock) >= sizeof(sa.sun_path)) {
                cl->errors += CALLS_PER_CLIENT;
                return NULL;
        }
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0 || connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                cl->errors += CALLS_PER_CLIENT;
                if (fd >= 0)
                        close(fd);
                return NULL;
        }
        for (unsigned i = 0; i < CALLS_PER_CLIENT; i++) {
                usec_t t0 = svff_now_usec();

                if (raw_list(fd, &buf, &alloc) < 0)
                        cl->errors++;
                else
                        cl->lat[cl->n++] = svff_now_usec() - t0;
        }
        close(fd);
        free(buf);
        return NULL;
}

struct init_arg {
        const char *pf;
        unsigned n;
        int r;
        usec_t usec;
};

static void *init_main(void *userdata) {
        struct init_arg *a = userdata;
        usec_t t0 = svff_now_usec();

        a->r = init_pf(a->pf, a->n);
        a->usec = svff_now_usec() - t0;
        return NULL;
}

static long read_sysctl_long(const char *path) {
        FILE *f = fopen(path, "re");
        long v = -1;

        if (f) {
                if (fscanf(f, "%ld", &v) != 1)
                        v = -1;
                fclose(f);
        }
        return v;
}

/* Lines in a file (svffd's log), or -1. */
static long count_lines(const char *path) {
        char buf[65536];
        long n = 0;
        ssize_t k;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -1;
        while ((k = read(fd, buf, sizeof(buf))) > 0)
                for (ssize_t i = 0; i < k; i++)
                        n += buf[i] == '\n';
        close(fd);
        return n;
}

/* A connected socket to svffd, or -errno; nonblocking if asked. */
static int raw_connect(bool nonblock) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int fd;

        if (strlen(sock) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, sock, strlen(sock) + 1);
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | (nonblock ? SOCK_NONBLOCK : 0), 0);
        if (fd < 0)
                return -errno;
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0) {
                int r = -errno;

                close(fd);
                return r;
        }
        return fd;
}

/* Waits (up to 5 s) until svffd holds at least n descriptors: connect()
 * returns once the kernel queued the connection, not once svffd took it. */
static int wait_fds(pid_t pid, int n) {
        int have = count_fds(pid);

        for (int i = 0; i < 500 && have < n; i++) {
                usleep(10000);
                have = count_fds(pid);
        }
        return have;
}

struct lat_stats {
        usec_t p50, p99, max;
        size_t n;
        unsigned errors;
};

static void stats_of(usec_t *v, size_t n, unsigned errors, struct lat_stats *ret) {
        *ret = (struct lat_stats) { .n = n, .errors = errors };
        if (n == 0)
                return;
        ret->p50 = pct(v, n, 0.50);
        ret->p99 = pct(v, n, 0.99);
        ret->max = v[n - 1];
}

static void print_stats(const char *what, const struct lat_stats *st) {
        printf("  %-34s p50 %6.2f ms, p99 %6.2f ms, max %6.2f ms, runs %zu, errors %u\n", what,
               (double) st->p50 / 1000.0, (double) st->p99 / 1000.0, (double) st->max / 1000.0, st->n,
               st->errors);
}

/* Drops to uid (and gid 65534, no supplementary groups) in a forked
 * child: the peers an operator's root shares the socket with. */
static int drop_to(uid_t uid) {
        if (setgroups(0, NULL) < 0 || setresgid(65534, 65534, 65534) < 0 || setresuid(uid, uid, uid) < 0)
                return -errno;
        return 0;
}

/* ---- the flood: one child, FLOOD_PER_CHILD connections ---- */

enum { FLOOD_HOLD, FLOOD_DRIP, FLOOD_CHURN, _FLOOD_MODE_MAX };

struct flood_counts {
        unsigned long connects, connect_errors, closed_by_svffd, churned, drip_bytes;
};

struct flood_slot {
        int fd;
        usec_t next;  /* the slot's next action */
};

#define FLOOD_RETRY_USEC (100 * USEC_PER_MSEC)  /* after a refusal or failure */
#define FLOOD_DRIP_USEC (100 * USEC_PER_MSEC)   /* one byte each */
#define FLOOD_CHURN_USEC (50 * USEC_PER_MSEC)   /* open for this long, then closed */

/* Runs until stop_fd becomes readable (or hangs up), then writes its
 * counts to report_fd. Hold slots connect and stay silent; drip slots
 * send one byte of a message that never ends every FLOOD_DRIP_USEC;
 * churn slots connect, wait FLOOD_CHURN_USEC and close. A slot svffd
 * closed (a refusal at the cap) connects again after FLOOD_RETRY_USEC. */
static _Noreturn void flood_child(uid_t uid, int stop_fd, int report_fd) {
        static const char drip[] = "{\"method\":\"io.svff.List\",\"parameters\":{\"x\":\"";
        static struct flood_slot slots[FLOOD_PER_CHILD];
        static struct pollfd pfd[FLOOD_PER_CHILD + 1];
        struct flood_counts k = {};
        char buf[4096];

        if (drop_to(uid) < 0)
                _exit(2);
        for (size_t i = 0; i < FLOOD_PER_CHILD; i++)
                slots[i] = (struct flood_slot) { .fd = -1, .next = 0 };
        for (;;) {
                usec_t now = svff_now_usec();
                int timeout = 10;

                for (size_t i = 0; i < FLOOD_PER_CHILD; i++) {
                        struct flood_slot *sl = &slots[i];
                        int mode = (int) (i % _FLOOD_MODE_MAX);

                        if (now < sl->next)
                                continue;
                        if (sl->fd < 0) {
                                k.connects++;
                                sl->fd = raw_connect(true);
                                if (sl->fd < 0) {
                                        k.connect_errors++;
                                        sl->next = now + FLOOD_RETRY_USEC;
                                        continue;
                                }
                                sl->next = now + (mode == FLOOD_CHURN ? FLOOD_CHURN_USEC : FLOOD_DRIP_USEC);
                        } else if (mode == FLOOD_CHURN) {
                                close(sl->fd);
                                sl->fd = -1;
                                k.churned++;
                                sl->next = now;
                        } else if (mode == FLOOD_DRIP) {
                                /* the opening, then 'a' forever */
                                char c = k.drip_bytes < sizeof(drip) - 1 ? drip[k.drip_bytes % (sizeof(drip) - 1)] : 'a';

                                if (send(sl->fd, &c, 1, MSG_NOSIGNAL | MSG_DONTWAIT) == 1)
                                        k.drip_bytes++;
                                sl->next = now + FLOOD_DRIP_USEC;
                        } else
                                sl->next = now + FLOOD_DRIP_USEC;
                }

                for (size_t i = 0; i < FLOOD_PER_CHILD; i++)
                        pfd[i] = (struct pollfd) { .fd = slots[i].fd, .events = POLLIN };
                pfd[FLOOD_PER_CHILD] = (struct pollfd) { .fd = stop_fd, .events = POLLIN };
                if (poll(pfd, FLOOD_PER_CHILD + 1, timeout) < 0 && errno != EINTR)
                        _exit(3);
                if (pfd[FLOOD_PER_CHILD].revents)
                        break;
                now = svff_now_usec();
                for (size_t i = 0; i < FLOOD_PER_CHILD; i++) {
                        if (slots[i].fd < 0 || !pfd[i].revents)
                                continue;
                        /* svffd sends nothing unasked: this is its hang-up
                         * (or an error reply before one) */
                        if (read(slots[i].fd, buf, sizeof(buf)) > 0)
                                continue;
                        close(slots[i].fd);
                        slots[i].fd = -1;
                        k.closed_by_svffd++;
                        slots[i].next = now + FLOOD_RETRY_USEC;
                }
        }
        (void) !write(report_fd, &k, sizeof(k));
        _exit(0);
}

struct flood {
        pid_t pids[FLOOD_CHILDREN];
        int stop_fd, report_fd;
        usec_t t0;
};

static int flood_start(unsigned n_uids, struct flood *ret) {
        int stop[2], report[2];

        if (pipe2(stop, O_CLOEXEC) < 0 || pipe2(report, O_CLOEXEC) < 0)
                return -errno;
        fflush(stdout);
        for (unsigned i = 0; i < FLOOD_CHILDREN; i++) {
                pid_t p = fork();

                if (p < 0) {
                        int r = -errno;

                        /* the children forked so far stop at the hang-up */
                        close(stop[1]);
                        while (i-- > 0)
                                waitpid(ret->pids[i], NULL, 0);
                        close(stop[0]);
                        close(report[0]);
                        close(report[1]);
                        return r;
                }
                if (p == 0) {
                        close(stop[1]);
                        close(report[0]);
                        flood_child((uid_t) (FLOOD_UID - i % n_uids), stop[0], report[1]);
                }
                ret->pids[i] = p;
        }
        close(stop[0]);
        close(report[1]);
        ret->stop_fd = stop[1];
        ret->report_fd = report[0];
        ret->t0 = svff_now_usec();
        return 0;
}

/* Stops the children and sums their counts; -errno if one could not
 * flood (its uid, say). */
static int flood_stop(struct flood *f, struct flood_counts *ret, usec_t *ret_usec) {
        struct flood_counts k;
        int r = 0;

        close(f->stop_fd);
        *ret = (struct flood_counts) {};
        while (read(f->report_fd, &k, sizeof(k)) == (ssize_t) sizeof(k)) {
                ret->connects += k.connects;
                ret->connect_errors += k.connect_errors;
                ret->closed_by_svffd += k.closed_by_svffd;
                ret->churned += k.churned;
                ret->drip_bytes += k.drip_bytes;
        }
        *ret_usec = svff_now_usec() - f->t0;
        close(f->report_fd);
        for (unsigned i = 0; i < FLOOD_CHILDREN; i++) {
                int status;

                if (waitpid(f->pids[i], &status, 0) < 0 || !WIFEXITED(status) || WEXITSTATUS(status) != 0)
                        r = -EPERM;
        }
        return r;
}

/* ---- Monitor subscribers that never read ---- */

/* Opens n Monitor streams as uid and never reads them; writes how many
 * it opened, then (when stop_fd becomes readable) how many svffd had
 * hung up on, to report_fd. */
static _Noreturn void monitor_child(uid_t uid, unsigned n, int stop_fd, int report_fd) {
        static const char req[] = "{\"method\":\"io.svff.Monitor\",\"more\":true}";
        static struct pollfd pfd[MONITORS];
        unsigned opened = 0, hung_up = 0;

        if (drop_to(uid) < 0)
                _exit(2);
        for (unsigned i = 0; i < n && i < MONITORS; i++) {
                int fd = raw_connect(false);

                if (fd < 0 || send(fd, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t) sizeof(req)) {
                        if (fd >= 0)
                                close(fd);
                        continue;
                }
                pfd[opened++] = (struct pollfd) { .fd = fd, .events = POLLRDHUP };
        }
        (void) !write(report_fd, &opened, sizeof(opened));
        {
                struct pollfd s = { .fd = stop_fd, .events = POLLIN };

                while (poll(&s, 1, -1) < 0 && errno == EINTR)
                        ;
        }
        /* POLLHUP: svffd closed it; the unread events stay unread */
        (void) poll(pfd, opened, 0);
        for (unsigned i = 0; i < opened; i++)
                if (pfd[i].revents & (POLLHUP | POLLRDHUP))
                        hung_up++;
        (void) !write(report_fd, &hung_up, sizeof(hung_up));

        /* Now read what waited: a stream that fell behind ends with the
         * events-dropped reply, and svffd hangs up (up to 5 s). */
        {
                static char tail[MONITORS][32];
                static bool done[MONITORS];
                unsigned dropped = 0, left = opened;
                usec_t t0 = svff_now_usec();
                char buf[65536 + 32];

                for (unsigned i = 0; i < opened; i++)
                        pfd[i].events = POLLIN;
                while (left > 0 && svff_now_usec() - t0 < 5 * USEC_PER_SEC) {
                        if (poll(pfd, opened, 100) < 0 && errno != EINTR)
                                break;
                        for (unsigned i = 0; i < opened; i++) {
                                ssize_t k;

                                if (done[i] || !pfd[i].revents)
                                        continue;
                                memcpy(buf, tail[i], 32);
                                k = read(pfd[i].fd, buf + 32, sizeof(buf) - 32);
                                if (k <= 0) {
                                        done[i] = true;
                                        pfd[i].fd = -1;
                                        left--;
                                        continue;
                                }
                                if (memmem(buf, (size_t) k + 32, "events-dropped", 14)) {
                                        dropped++;
                                        memset(tail[i], 0, 32);
                                        /* counted once: the rest is read for the hang-up */
                                        memcpy(tail[i], "x", 1);
                                } else
                                        memcpy(tail[i], buf + k, 32);
                        }
                }
                (void) !write(report_fd, &dropped, sizeof(dropped));
                (void) !write(report_fd, &left, sizeof(left));
        }
        _exit(0);
}

struct rss_sampler {
        pthread_t thread;
        pid_t pid;
        volatile bool stop;
        long peak, last;
        unsigned samples;
};

static void *rss_main(void *userdata) {
        struct rss_sampler *s = userdata;

        while (!s->stop) {
                long v = proc_status_kib(s->pid, "VmRSS");

                if (v > s->peak)
                        s->peak = v;
                s->last = v;
                s->samples++;
                usleep(2000);
        }
        return NULL;
}

static void rss_start(struct rss_sampler *s, pid_t pid) {
        *s = (struct rss_sampler) { .pid = pid, .peak = proc_status_kib(pid, "VmRSS") };
        pthread_create(&s->thread, NULL, rss_main, s);
}

static long rss_stop(struct rss_sampler *s) {
        s->stop = true;
        pthread_join(s->thread, NULL);
        return s->peak;
}

/* Peak VmRSS (KiB) from the start of an init of pf to n VFs until
 * after_usec after it ended, and the RSS right at its end. */
static int init_sampled(pid_t pid, const char *pf, unsigned n, usec_t after_usec, long *ret_peak,
                        long *ret_at_end, usec_t *ret_usec, unsigned *ret_samples) {
        struct rss_sampler s;
        usec_t t0;
        int r;

        rss_start(&s, pid);
        t0 = svff_now_usec();
        r = init_pf(pf, n);
        *ret_usec = svff_now_usec() - t0;
        *ret_at_end = proc_status_kib(pid, "VmRSS");
        usleep(after_usec);
        rss_stop(&s);
        *ret_peak = s.peak > *ret_at_end ? s.peak : *ret_at_end;
        *ret_samples = s.samples;
        return r;
}

/* A Monitor stream that does read: what one subscriber is sent. */
struct monitor_reader {
        pthread_t thread;
        int fd;
        volatile bool stop;
        unsigned long bytes, messages;
};

static void *reader_main(void *userdata) {
        struct monitor_reader *m = userdata;
        char buf[65536];

        while (!m->stop) {
                struct pollfd p = { .fd = m->fd, .events = POLLIN };
                ssize_t k;

                if (poll(&p, 1, 20) <= 0)
                        continue;
                k = read(m->fd, buf, sizeof(buf));
                if (k <= 0)
                        break;
                m->bytes += (unsigned long) k;
                for (ssize_t i = 0; i < k; i++)
                        m->messages += buf[i] == 0;
        }
        return NULL;
}

static int reader_start(struct monitor_reader *m) {
        static const char req[] = "{\"method\":\"io.svff.Monitor\",\"more\":true}";

        *m = (struct monitor_reader) {};
        m->fd = raw_connect(false);
        if (m->fd < 0)
                return m->fd;
        if (send(m->fd, req, sizeof(req), MSG_NOSIGNAL) != (ssize_t) sizeof(req)) {
                close(m->fd);
                return -EIO;
        }
        pthread_create(&m->thread, NULL, reader_main, m);
        return 0;
}

static void reader_stop(struct monitor_reader *m) {
        m->stop = true;
        pthread_join(m->thread, NULL);
        close(m->fd);
}

/* svffctl runs (up to n, or for at most max_usec) into v. */
static size_t run_cli_n(const char *svffctl, char *const argv[], usec_t *v, size_t n, usec_t max_usec,
                        unsigned *errors) {
        usec_t t0 = svff_now_usec();
        size_t k = 0;

        for (size_t i = 0; i < n && svff_now_usec() - t0 < max_usec; i++) {
                usec_t u;

                if (run_cli(svffctl, argv, &u) < 0)
                        (*errors)++;
                else
                        v[k++] = u;
        }
        return k;
}

#define DURING_RUNS 200               /* per way, alone and during inits */
#define DURING_BLOCKS 4

struct init_cycle {
        pthread_t thread;
        const char *pf;
        atomic_bool stop;
        unsigned inits, failed;
};

/* Inits of one PF, alternating between 252 and 200 VFs (each a write of
 * 0, then of the count, then the binds), until told to stop. */
static void *init_cycle_main(void *userdata) {
        struct init_cycle *ic = userdata;

        while (!atomic_load(&ic->stop)) {
                if (init_pf(ic->pf, ic->inits % 2 ? 200 : 252) < 0)
                        ic->failed++;
                ic->inits++;
        }
        return NULL;
}

/* 'svffctl list --json' alone and while inits of pf run one after
 * another, in alternating blocks so that the host's noise falls on both:
 * the reader that never waits for another PF's write. */
static int reads_during_inits(struct pcisim *sim, const char *svffctl, const char *pf) {
        char *argv[] = { (char *) svffctl, "--socket", sock, "list", "--json", NULL };
        _cleanup_free_ usec_t *alone = calloc(DURING_RUNS, sizeof(usec_t));
        _cleanup_free_ usec_t *during = calloc(DURING_RUNS, sizeof(usec_t));
        struct lat_stats st[2];
        size_t n[2] = {};
        unsigned errors[2] = {}, inits = 0, failed = 0;

        if (!alone || !during)
                return -ENOMEM;
        /* Binds at 4 ms a VF: an init of 252 takes about a second. */
        (void) pcisim_ctl(sim, "latency probe 4000");
        for (unsigned b = 0; b < DURING_BLOCKS; b++) {
                struct init_cycle ic = { .pf = pf };
                unsigned settle_errors = 0;
                usec_t settle;
                int r;

                /* Not counted: the first call after the last block's
                 * inits reads the PF they left, which is theirs. */
                (void) run_cli_n(svffctl, argv, &settle, 1, UINT64_MAX, &settle_errors);
                n[0] += run_cli_n(svffctl, argv, alone + n[0], DURING_RUNS / DURING_BLOCKS, UINT64_MAX, &errors[0]);
                r = -pthread_create(&ic.thread, NULL, init_cycle_main, &ic);
                if (r < 0) {
                        (void) pcisim_ctl(sim, "latency probe 0");
                        return r;
                }
                usleep(100000);
                n[1] += run_cli_n(svffctl, argv, during + n[1], DURING_RUNS / DURING_BLOCKS, UINT64_MAX,
                                  &errors[1]);
                atomic_store(&ic.stop, true);
                pthread_join(ic.thread, NULL);
                inits += ic.inits;
                failed += ic.failed;
        }
        (void) pcisim_ctl(sim, "latency probe 0");
        /* The sections after this one count 1008 VFs. */
        if (init_pf(pf, 252) < 0)
                return -EIO;
        stats_of(alone, n[0], errors[0], &st[0]);
        stats_of(during, n[1], errors[1], &st[1]);
        printf("\n'svffctl list --json' (1008 VFs) alone and while inits of %s run back to back\n"
               "(252 and 200 VFs in turn, binds at 4 ms a VF; %u inits, %u failed), in %d alternating blocks:\n",
               pf, inits, failed, 2 * DURING_BLOCKS);
        print_stats("alone:", &st[0]);
        print_stats("during the inits:", &st[1]);
        printf("  during / alone: p50 %.2f, p99 %.2f (target p99 <= 1.5)\n",
               st[0].p50 ? (double) st[1].p50 / (double) st[0].p50 : 0.0,
               st[0].p99 ? (double) st[1].p99 / (double) st[0].p99 : 0.0);
        return 0;
}

#define HELD_RUNS 100                 /* per command, held and not */

struct held_write {
        pthread_t thread;
        int rootfd;
        const char *path;
        int r;
        atomic_bool done;
};

static void *held_write_main(void *userdata) {
        struct held_write *w = userdata;

        w->r = svff_sysfs_write(w->rootfd, w->path, "0");
        atomic_store(&w->done, true);
        return NULL;
}

/* 'svffctl list --json' and 'status --json', HELD_RUNS each, first as
 * they are and then while another process's write of 0 to pf's
 * sriov_numvfs is held in the kernel (its VF 0 held open, as QEMU holds
 * a VF's vfio device), which every read of the PF's count waits for. */
static int held_write_reads(struct pcisim *sim, const char *svffctl, const char *pf) {
        char *list[] = { (char *) svffctl, "--socket", sock, "list", "--json", NULL };
        char *status[] = { (char *) svffctl, "--socket", sock, "status", "--json", NULL };
        char *const *argv[] = { list, status };
        const char *name[] = { "list --json", "status --json" };
        _cleanup_free_ char *path = NULL, *link = NULL, *vf = NULL;
        _cleanup_free_ usec_t *lat = calloc(4 * HELD_RUNS, sizeof(usec_t));
        struct held_write w = { .rootfd = -1 };
        struct lat_stats st[2][2];
        unsigned errors[2][2] = {};
        bool still_held;
        int r;

        if (!lat || asprintf(&path, "bus/pci/devices/%s/sriov_numvfs", pf) < 0 ||
            asprintf(&link, "bus/pci/devices/%s/virtfn0", pf) < 0)
                return -ENOMEM;
        w.rootfd = open(pcisim_root(sim), O_PATH | O_DIRECTORY | O_CLOEXEC);
        if (w.rootfd < 0)
                return -errno;
        w.path = path;
        r = svff_sysfs_readlink_base(w.rootfd, link, &vf);
        if (r < 0)
                goto out;

        for (unsigned k = 0; k < 2; k++) {
                size_t n = run_cli_n(svffctl, argv[k], lat + k * HELD_RUNS, HELD_RUNS, UINT64_MAX, &errors[0][k]);
                stats_of(lat + k * HELD_RUNS, n, errors[0][k], &st[0][k]);
        }
        r = pcisim_ctl(sim, "hold %s", vf);
        if (r < 0)
                goto out;
        r = -pthread_create(&w.thread, NULL, held_write_main, &w);
        if (r < 0) {
                (void) pcisim_ctl(sim, "release %s", vf);
                goto out;
        }
        /* Past list_max_age_msec, so that svffd's next answer needs a
         * discovery pass that meets the write. */
        usleep(1500000);
        for (unsigned k = 0; k < 2; k++) {
                usec_t *v = lat + (2 + k) * HELD_RUNS;
                size_t n = run_cli_n(svffctl, argv[k], v, HELD_RUNS, UINT64_MAX, &errors[1][k]);

                stats_of(v, n, errors[1][k], &st[1][k]);
        }
        still_held = !atomic_load(&w.done);
        (void) pcisim_ctl(sim, "release %s", vf);
        pthread_join(w.thread, NULL);

        printf("\nReads while another process's write of 0 to %s's sriov_numvfs is held in the kernel\n"
               "(its VF %s held open; the write %s held through every call, and then returned %d):\n",
               pf, vf, still_held ? "was" : "was NOT", w.r);
        for (unsigned k = 0; k < 2; k++) {
                char what[64];

                snprintf(what, sizeof(what), "%s, nothing held:", name[k]);
                print_stats(what, &st[0][k]);
                snprintf(what, sizeof(what), "%s, the write held:", name[k]);
                print_stats(what, &st[1][k]);
                printf("  held / nothing held, %s: p50 %.2f, p99 %.2f; p99 / target (100 ms): %.2f\n", name[k],
                       st[0][k].p50 ? (double) st[1][k].p50 / (double) st[0][k].p50 : 0.0,
                       st[0][k].p99 ? (double) st[1][k].p99 / (double) st[0][k].p99 : 0.0,
                       (double) st[1][k].p99 / 100000.0);
        }
        r = 0;
out:
        close(w.rootfd);
        return r;
}

#define METRICS_BLOCKS 6              /* alternating, half with the file */
#define METRICS_CHANGES 4             /* per block */

static int write_config_poll(const char *cfg, const char *metrics, unsigned poll_sec) {
        FILE *f = fopen(cfg, "we");

        if (!f)
                return -errno;
        if (metrics)
                fprintf(f, "{ \"log_level\": \"warning\", \"metrics_textfile\": \"%s\", "
                        "\"metrics_poll_sec\": %u }\n", metrics, poll_sec);
        else
                fputs("{ \"log_level\": \"warning\" }\n", f);
        return fclose(f) == 0 ? 0 : -errno;
}

static int write_config(const char *cfg, const char *metrics) {
        return write_config_poll(cfg, metrics, 10);
}

#define POLL_BLOCKS 6                   /* alternating, half with the file */
#define POLL_BLOCK_SEC 5

/* svffd's CPU while nothing happens, with the metrics file looking at
 * the host every second and without the file, in alternating blocks of
 * one run: the poll's whole cost, 1008 VFs listed and their class state
 * (qdma/qmax of every VF the host drives) read for drift each time. */
static int poll_cost(pid_t pid, const char *cfg, const char *state) {
        usec_t cpu[2] = {};
        char metrics[300];
        int r;

        snprintf(metrics, sizeof(metrics), "%s/svff.prom", state);
        for (unsigned b = 0; b < POLL_BLOCKS; b++) {
                unsigned with = b % 2;
                usec_t c0;

                r = write_config_poll(cfg, with ? metrics : NULL, 1);
                if (r < 0)
                        return r;
                if (kill(pid, SIGHUP) < 0)
                        return -errno;
                usleep(1500000);        /* the reload, and its first write */
                c0 = proc_cpu_usec(pid);
                sleep(POLL_BLOCK_SEC);
                cpu[with] += proc_cpu_usec(pid) - c0;
        }
        printf("\nsvffd CPU while idle, 1008 VFs listed, %u s each way in %u alternating blocks:\n",
               POLL_BLOCKS / 2 * POLL_BLOCK_SEC, POLL_BLOCKS);
        printf("  without the metrics file:                   %8.2f ms CPU per second\n",
               (double) cpu[0] / (POLL_BLOCKS / 2 * POLL_BLOCK_SEC) / 1000.0);
        printf("  with it, looking at the host every second:  %8.2f ms CPU per second (per look)\n",
               (double) cpu[1] / (POLL_BLOCKS / 2 * POLL_BLOCK_SEC) / 1000.0);
        if (cpu[0])
                printf("  with / without: %.2f\n", (double) cpu[1] / (double) cpu[0]);
        else
                printf("  with / without: no ratio, svffd used no CPU (at the clock's 10 ms grain) without it\n");
        return 0;
}

/* svffd's CPU per state change with and without metrics_textfile, in
 * alternating blocks of one run (a reload switches the file on and off):
 * each change is an init of one PF between 251 and 252 VFs while 1008
 * are listed, which the metrics file reports after re-reading every PF.
 * Between changes the bench waits past the file's one-second limit, so
 * each change is written once: the dearest case. */
static int metrics_cost(pid_t pid, const char *cfg, const char *state) {
        usec_t cpu[2] = {};
        unsigned changes[2] = {}, writes = 0;
        char metrics[300];
        struct stat st;
        struct timespec last = {};
        int r;

        snprintf(metrics, sizeof(metrics), "%s/svff.prom", state);
        for (unsigned b = 0; b < METRICS_BLOCKS; b++) {
                unsigned with = b % 2;

                r = write_config(cfg, with ? metrics : NULL);
                if (r < 0)
                        return r;
                if (kill(pid, SIGHUP) < 0)
                        return -errno;
                usleep(1500000);        /* the reload, and its first write */
                for (unsigned k = 0; k < METRICS_CHANGES; k++) {
                        usec_t c0 = proc_cpu_usec(pid);

                        r = init_pf(pfs[3], k % 2 ? 252 : 251);
                        if (r < 0)
                                return r;
                        usleep(1200000);
                        cpu[with] += proc_cpu_usec(pid) - c0;
                        changes[with]++;
                        if (with && stat(metrics, &st) == 0 &&
                            (st.st_mtim.tv_sec != last.tv_sec || st.st_mtim.tv_nsec != last.tv_nsec)) {
                                writes++;
                                last = st.st_mtim;
                        }
                }
        }
        r = init_pf(pfs[3], 252);
        if (r < 0)
                return r;
        printf("\nsvffd CPU per state change (an init of %s between 251 and 252 VFs, 1008 listed),\n"
               "%u changes each, in %u alternating blocks, a reload switching metrics_textfile:\n",
               pfs[3], changes[0], METRICS_BLOCKS);
        printf("  without the metrics file: %8.2f ms CPU per change\n",
               (double) cpu[0] / changes[0] / 1000.0);
        printf("  with it:                  %8.2f ms CPU per change (the file rewritten after %u of %u)\n",
               (double) cpu[1] / changes[1] / 1000.0, writes, changes[1]);
        printf("  with / without: %.2f (%+.2f ms per change)\n",
               cpu[0] ? (double) cpu[1] / (double) cpu[0] : 0.0,
               ((double) cpu[1] / changes[1] - (double) cpu[0] / changes[0]) / 1000.0);
        return 0;
}

int main(void) {
        const char *svffd = getenv("SVFFD") ?: "daemon/svffd";
        const char *svffctl = getenv("SVFFCTL") ?: "cli/svffctl";
        _cleanup_free_ usec_t *lat = NULL, *lat_idle = NULL;
        usec_t lat_flood[2][FLOOD_RUNS];
        char state[] = "/tmp/svff-bench.XXXXXX";
        char statedir[300], cfg[300], logpath[300];
        struct svff_varlink_client *c = NULL;
        struct pcisim *sim = NULL;
        struct client *clients = NULL;
        pthread_barrier_t start;
        struct init_arg ia;
        pthread_t init_thread;
        long rss, hwm;
        int r, ret = EXIT_FAILURE, fds_before, fds_after;
        unsigned errors = 0;
        size_t n = 0;
        pid_t pid;
        FILE *f;

        r = pcisim_start("scale", &sim);
        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "FUSE unusable here: no figures\n");
                return 77;
        }
        if (r < 0) {
                fprintf(stderr, "pcisim: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        if (!mkdtemp(state))
                return EXIT_FAILURE;
        snprintf(sock, sizeof(sock), "%s/svffd.sock", state);
        snprintf(statedir, sizeof(statedir), "%s/state", state);
        snprintf(cfg, sizeof(cfg), "%s/svff.conf", state);
        f = fopen(cfg, "we");
        if (!f)
                return EXIT_FAILURE;
        /* the default limits (1024 connections, 128 per uid, 256 KiB of
         * Monitor backlog), as an operator runs it */
        fputs("{ \"log_level\": \"warning\" }\n", f);
        fclose(f);
        /* 500 idle connections beside 200 clients, and svffd inherits
         * this limit as its hard limit */
        {
                struct rlimit rl;

                if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur < rl.rlim_max) {
                        rl.rlim_cur = rl.rlim_max;
                        (void) setrlimit(RLIMIT_NOFILE, &rl);
                }
        }
        /* the unprivileged peers reach the socket through it */
        (void) chmod(state, 0755);

        {
                char *argv[] = { (char *) svffd, "--socket", sock, "--state-dir", statedir,
                                 "--sysfs-root", (char *) pcisim_root(sim), "--config", cfg, NULL };
                posix_spawn_file_actions_t fa;

                /* its warnings under the flood are counted, not printed */
                snprintf(logpath, sizeof(logpath), "%s/svffd.log", state);
                posix_spawn_file_actions_init(&fa);
                posix_spawn_file_actions_addopen(&fa, STDERR_FILENO, logpath, O_WRONLY | O_CREAT | O_TRUNC, 0644);
                r = posix_spawn(&pid, svffd, &fa, NULL, argv, environ);
                posix_spawn_file_actions_destroy(&fa);
                if (r != 0) {
                        fprintf(stderr, "spawn %s: %s\n", svffd, strerror(r));
                        return EXIT_FAILURE;
                }
        }
        for (int i = 0; i < 200 && svff_varlink_client_connect(sock, &c) < 0; i++)
                usleep(50000);
        if (!c) {
                fprintf(stderr, "svffd did not come up\n");
                goto out;
        }
        svff_varlink_client_free(c);
        c = NULL;
        (void) chmod(sock, 0666);

        printf("svffd on pcisim 'scale' (4 PFs x 252 VFs)\n\n");
        printf("RSS after start:                 %6ld KiB\n", proc_status_kib(pid, "VmRSS"));

        for (size_t i = 0; i < ELEMENTSOF(pfs); i++) {
                usec_t t0 = svff_now_usec();

                r = init_pf(pfs[i], 252);
                if (r < 0) {
                        fprintf(stderr, "init %s: %s\n", pfs[i], strerror(-r));
                        goto out;
                }
                printf("init %s 252 VFs:        %8.1f ms\n", pfs[i], (double) (svff_now_usec() - t0) / 1000.0);
        }

        /* svffctl list --json, the whole process each time: blocks
         * alternate between no other connection and IDLE_CONNECTIONS idle
         * ones held here, so that the host's noise falls on both. */
        lat = calloc(CALLS_PER_CLIENT * CLIENTS, sizeof(usec_t));
        lat_idle = calloc(CLI_RUNS, sizeof(usec_t));
        if (!lat || !lat_idle)
                goto out;
        {
                char *argv[] = { (char *) svffctl, "--socket", sock, "list", "--json", NULL };
                struct lat_stats alone, idle;
                unsigned errors_idle = 0, idle_hung_up = 0;
                size_t n_idle = 0;
                int fds_base, fds_held = 0;
                usec_t first;

                if (run_cli(svffctl, argv, &first) < 0) {
                        fprintf(stderr, "svffctl list failed\n");
                        goto out;
                }
                fds_base = count_fds(pid);
                n = 0;
                for (unsigned b = 0; b < IDLE_BLOCKS; b++) {
                        int idle_fds[IDLE_CONNECTIONS];
                        unsigned opened = 0;

                        n += run_cli_n(svffctl, argv, lat + n, CLI_RUNS / IDLE_BLOCKS, UINT64_MAX, &errors);
                        for (unsigned i = 0; i < IDLE_CONNECTIONS; i++) {
                                idle_fds[i] = raw_connect(false);
                                if (idle_fds[i] >= 0)
                                        opened++;
                        }
                        fds_held = wait_fds(pid, fds_base + (int) opened) - fds_base;
                        n_idle += run_cli_n(svffctl, argv, lat_idle + n_idle, CLI_RUNS / IDLE_BLOCKS, UINT64_MAX,
                                            &errors_idle);
                        /* still held by svffd after the block, not timed out */
                        for (unsigned i = 0; i < IDLE_CONNECTIONS; i++) {
                                struct pollfd p = { .fd = idle_fds[i], .events = POLLRDHUP };

                                if (idle_fds[i] < 0)
                                        continue;
                                if (poll(&p, 1, 0) > 0 && (p.revents & (POLLHUP | POLLRDHUP)))
                                        idle_hung_up++;
                                close(idle_fds[i]);
                        }
                        if (opened < IDLE_CONNECTIONS)
                                fprintf(stderr, "only %u of %d idle connections opened\n", opened,
                                        IDLE_CONNECTIONS);
                }
                stats_of(lat, n, errors, &alone);
                stats_of(lat_idle, n_idle, errors_idle, &idle);
                printf("\n'svffctl list --json' (1008 VFs), end to end, in %d alternating blocks:\n", 2 * IDLE_BLOCKS);
                printf("  first, right after the inits: %.2f ms\n", (double) first / 1000.0);
                print_stats("no other connection:", &alone);
                print_stats("500 idle connections open:", &idle);
                printf("  svffd's fds rose by %d with them open; it hung up on %u of them (idle timeout 60 s)\n",
                       fds_held, idle_hung_up);
                printf("  p99 / target (20 ms): %.2f alone, %.2f with 500 idle\n", (double) alone.p99 / 20000.0,
                       (double) idle.p99 / 20000.0);
                printf("  with 500 idle / alone: p50 %.2f, p99 %.2f\n",
                       alone.p50 ? (double) idle.p50 / (double) alone.p50 : 0.0,
                       alone.p99 ? (double) idle.p99 / (double) alone.p99 : 0.0);
                errors = 0;
        }

        /* The List call alone, one connection */
        r = svff_varlink_client_connect(sock, &c);
        if (r < 0)
                goto out;
        for (n = 0; n < CALL_RUNS; n++) {
                usec_t t0 = svff_now_usec();

                if (call(c, "io.svff.List", NULL, 0) < 0)
                        errors++;
                lat[n] = svff_now_usec() - t0;
        }
        svff_varlink_client_free(c);
        c = NULL;
        printf("\nio.svff.List over one connection (%d calls): p50 %.3f ms, p99 %.3f ms\n", CALL_RUNS,
               (double) pct(lat, n, 0.50) / 1000.0, (double) pct(lat, n, 0.99) / 1000.0);

        rss = proc_status_kib(pid, "VmRSS");
        printf("\nsvffd RSS: %ld KiB = %.2f MiB; ratio to target (16 MiB): %.2f\n", rss,
               (double) rss / 1024.0, (double) rss / (16.0 * 1024.0));
        /* Most of the RSS is shared library text (libvirt brings gnutls,
         * libcrypto, glib, ICU): show what is svffd's own. */
        printf("  of which anonymous (svffd's heap and stacks) %ld KiB, file-backed (libraries) %ld KiB\n",
               proc_status_kib(pid, "RssAnon"), proc_status_kib(pid, "RssFile"));

        /* 200 clients x 100 List calls while an init runs (slowed down so
         * that it overlaps the whole run). */
        fds_before = count_fds(pid);
        usec_t cpu0 = proc_cpu_usec(pid);
        (void) pcisim_ctl(sim, "latency probe 4000");
        ia = (struct init_arg) { .pf = pfs[3], .n = 200 };
        pthread_create(&init_thread, NULL, init_main, &ia);
        usleep(100000);

        clients = calloc(CLIENTS, sizeof(*clients));
        pthread_barrier_init(&start, NULL, CLIENTS + 1);
        for (unsigned i = 0; i < CLIENTS; i++) {
                clients[i].start = &start;
                pthread_attr_t attr;
                pthread_attr_init(&attr);
                pthread_attr_setstacksize(&attr, 256 * 1024);
                pthread_create(&clients[i].thread, &attr, client_main, &clients[i]);
                pthread_attr_destroy(&attr);
        }
        {
                usec_t t0, wall;
                int fds_peak;

                pthread_barrier_wait(&start);
                t0 = svff_now_usec();
                usleep(200000);
                fds_peak = count_fds(pid);
                errors = 0;
                n = 0;
                for (unsigned i = 0; i < CLIENTS; i++) {
                        pthread_join(clients[i].thread, NULL);
                        errors += clients[i].errors;
                        memcpy(lat + n, clients[i].lat, clients[i].n * sizeof(usec_t));
                        n += clients[i].n;
                }
                wall = svff_now_usec() - t0;
                pthread_join(init_thread, NULL);
                (void) pcisim_ctl(sim, "latency probe 0");
                usleep(1000000);
                fds_after = count_fds(pid);
                hwm = proc_status_kib(pid, "VmHWM");

                printf("\n%d concurrent clients x %d List calls during an init of %s (%s, %.1f s):\n", CLIENTS,
                       CALLS_PER_CLIENT, pfs[3], ia.r < 0 ? "init failed" : "init ok", (double) ia.usec / 1e6);
                printf("  calls %zu, errors %u (target 0), wall %.2f s, %.0f calls/s\n", n, errors,
                       (double) wall / 1e6, (double) n / ((double) wall / 1e6));
                {
                        usec_t p50 = pct(lat, n, 0.50), p99 = pct(lat, n, 0.99), max = lat[n - 1];

                        printf("  p50 %.2f ms, p99 %.2f ms, max %.2f ms\n", (double) p50 / 1000.0,
                               (double) p99 / 1000.0, (double) max / 1000.0);
                }
                printf("  svffd CPU %.2f s = %.3f ms per List call (clients frame replies, no JSON parsing)\n",
                       (double) (proc_cpu_usec(pid) - cpu0) / 1e6,
                       (double) (proc_cpu_usec(pid) - cpu0) / 1000.0 / (double) (n ? n : 1));
                printf("  svffd fds: before %d, during ~%d, after %d (growth %d)\n", fds_before, fds_peak,
                       fds_after, fds_after - fds_before);
                printf("  svffd peak RSS (VmHWM) %ld KiB = %.2f MiB; RSS now %ld KiB\n", hwm,
                       (double) hwm / 1024.0, proc_status_kib(pid, "VmRSS"));
        }
        /* 'svffctl list' by root while unprivileged uids flood the
         * socket: one uid meets the per-uid cap, ten meet the cap on all
         * unprivileged peers, leaving root the reserve. Blocks without
         * and with the flood alternate, so that the host's noise falls
         * on both. */
        {
                char *argv[] = { (char *) svffctl, "--socket", sock, "list", NULL };
                struct lat_stats base, fl[2];
                struct flood_counts fc[2] = {};
                usec_t fl_usec[2] = {}, cpu_during[2] = {}, cpu_after[2] = {};
                int ffds_during[2] = {}, ffds_after[2] = {};
                long log_lines[2] = {};
                unsigned errs_base = 0, errs[2] = {};
                size_t n_base = 0, n_fl[2] = {};
                int ffds0 = count_fds(pid);

                for (unsigned v = 0; v < 2; v++)
                        for (unsigned b = 0; b < FLOOD_BLOCKS; b++) {
                                unsigned n_uids = v == 0 ? 1 : FLOOD_CHILDREN;
                                struct flood fd_ = {};
                                struct flood_counts k;
                                usec_t u, c0, c1, c2;
                                long log0 = count_lines(logpath);

                                n_base += run_cli_n(svffctl, argv, lat + n_base, FLOOD_RUNS / FLOOD_BLOCKS,
                                                    30 * USEC_PER_SEC, &errs_base);
                                c0 = proc_cpu_usec(pid);
                                r = flood_start(n_uids, &fd_);
                                if (r < 0) {
                                        fprintf(stderr, "flood: %s\n", strerror(-r));
                                        goto out;
                                }
                                usleep(1000000);  /* the flood at full strength */
                                ffds_during[v] = count_fds(pid);
                                n_fl[v] += run_cli_n(svffctl, argv, lat_flood[v] + n_fl[v], FLOOD_RUNS / FLOOD_BLOCKS,
                                                     30 * USEC_PER_SEC, &errs[v]);
                                r = flood_stop(&fd_, &k, &u);
                                c1 = proc_cpu_usec(pid);
                                if (r < 0) {
                                        fprintf(stderr, "flood: a child could not run as uid %d and below\n",
                                                FLOOD_UID);
                                        goto out;
                                }
                                usleep(1000000);
                                c2 = proc_cpu_usec(pid);
                                ffds_after[v] = count_fds(pid);
                                log_lines[v] += count_lines(logpath) - log0;
                                fl_usec[v] += u;
                                cpu_during[v] += c1 - c0;
                                cpu_after[v] += c2 - c1;
                                fc[v].connects += k.connects;
                                fc[v].connect_errors += k.connect_errors;
                                fc[v].closed_by_svffd += k.closed_by_svffd;
                                fc[v].churned += k.churned;
                                fc[v].drip_bytes += k.drip_bytes;
                        }

                stats_of(lat, n_base, errs_base, &base);
                printf("\n'svffctl list' by root while %d connections of other uids flood the socket,\n"
                       "in %d alternating blocks per flood (each flood at full strength for 1 s first):\n",
                       FLOOD_CHILDREN * FLOOD_PER_CHILD, 2 * FLOOD_BLOCKS);
                printf("  (%d children x %d: a third held silent, a third dripping a byte per %llu ms, a third\n"
                       "  opened and closed every %llu ms; any that svffd closes are reopened after %llu ms)\n",
                       FLOOD_CHILDREN, FLOOD_PER_CHILD, (unsigned long long) (FLOOD_DRIP_USEC / 1000),
                       (unsigned long long) (FLOOD_CHURN_USEC / 1000), (unsigned long long) (FLOOD_RETRY_USEC / 1000));
                print_stats("no flood:", &base);
                for (unsigned v = 0; v < 2; v++) {
                        unsigned n_uids = v == 0 ? 1 : FLOOD_CHILDREN;
                        double secs = (double) fl_usec[v] / 1e6;
                        char what[64];

                        stats_of(lat_flood[v], n_fl[v], errs[v], &fl[v]);
                        snprintf(what, sizeof(what), "flood from %u uid%s:", n_uids, n_uids > 1 ? "s" : "");
                        print_stats(what, &fl[v]);
                        printf("    flood %.1f s: %lu connects (%.0f/s), %lu failed, %lu closed by svffd, %lu churned,"
                               " %lu bytes dripped\n",
                               secs, fc[v].connects, (double) fc[v].connects / secs, fc[v].connect_errors,
                               fc[v].closed_by_svffd, fc[v].churned, fc[v].drip_bytes);
                        printf("    svffd fds: before %d, 1 s into the flood %d, 1 s after it %d\n", ffds0,
                               ffds_during[v], ffds_after[v]);
                        printf("    svffd CPU: %.0f%% of a core during the flood, %.1f%% in the second after;"
                               " %ld log lines\n",
                               100.0 * (double) cpu_during[v] / (double) fl_usec[v],
                               100.0 * (double) cpu_after[v] / (1e6 * FLOOD_BLOCKS), log_lines[v]);
                        printf("    flood / no flood: p50 %.2f, p99 %.2f; max / no-flood p99 %.2f\n",
                               base.p50 ? (double) fl[v].p50 / (double) base.p50 : 0.0,
                               base.p99 ? (double) fl[v].p99 / (double) base.p99 : 0.0,
                               base.p99 ? (double) fl[v].max / (double) base.p99 : 0.0);
                }
        }

        /* svffd's RSS during a 252-VF init with MONITORS subscribers of
         * one unprivileged uid that never read, beside the same init
         * with none; then more inits with them, until svffd drops them
         * (their backlog is bounded) or MONITOR_CYCLES pass. */
        {
                struct monitor_reader rd;
                struct rss_sampler series;
                long peak0, end0, peak1, end1, rss_subs, rss_gone;
                usec_t u0, u1;
                unsigned s0, s1, opened = 0, hung_up = 0, cycles = 0, n_dropped_marker = 0, n_open_after = 0;
                int stop[2], rep[2], fds0, fds_subs, fds_end1, fds_end2;
                pid_t mp;

                r = init_pf(pfs[3], 0);
                if (r >= 0)
                        r = reader_start(&rd);
                if (r >= 0) {
                        r = init_sampled(pid, pfs[3], 252, USEC_PER_SEC, &peak0, &end0, &u0, &s0);
                        reader_stop(&rd);
                }
                if (r >= 0)
                        r = init_pf(pfs[3], 0);
                if (r < 0) {
                        fprintf(stderr, "init %s: %s\n", pfs[3], strerror(-r));
                        goto out;
                }
                if (pipe2(stop, O_CLOEXEC) < 0 || pipe2(rep, O_CLOEXEC) < 0)
                        goto out;
                usleep(100000);  /* the init's own connection closed */
                fds0 = count_fds(pid);
                fflush(stdout);
                mp = fork();
                if (mp < 0)
                        goto out;
                if (mp == 0) {
                        close(stop[1]);
                        close(rep[0]);
                        monitor_child(FLOOD_UID, MONITORS, stop[0], rep[1]);
                }
                close(stop[0]);
                close(rep[1]);
                if (read(rep[0], &opened, sizeof(opened)) != (ssize_t) sizeof(opened) || opened == 0) {
                        fprintf(stderr, "no Monitor subscriber could connect as uid %d\n", FLOOD_UID);
                        close(stop[1]);
                        waitpid(mp, NULL, 0);
                        goto out;
                }
                fds_subs = wait_fds(pid, fds0 + (int) opened) - fds0;
                usleep(200000);  /* their Monitor calls taken */
                rss_subs = proc_status_kib(pid, "VmRSS");
                r = init_sampled(pid, pfs[3], 252, USEC_PER_SEC, &peak1, &end1, &u1, &s1);
                fds_end1 = count_fds(pid) - fds0;
                rss_start(&series, pid);
                for (fds_end2 = fds_end1; r >= 0 && cycles < MONITOR_CYCLES && fds_end2 > 0; cycles++) {
                        r = init_pf(pfs[3], 0);
                        if (r >= 0)
                                r = init_pf(pfs[3], 252);
                        usleep(200000);
                        fds_end2 = count_fds(pid) - fds0;
                }
                usleep(500000);
                fds_end2 = count_fds(pid) - fds0;
                rss_stop(&series);
                close(stop[1]);
                if (read(rep[0], &hung_up, sizeof(hung_up)) != (ssize_t) sizeof(hung_up))
                        hung_up = 0;
                if (read(rep[0], &n_dropped_marker, sizeof(unsigned)) != (ssize_t) sizeof(unsigned) ||
                    read(rep[0], &n_open_after, sizeof(unsigned)) != (ssize_t) sizeof(unsigned))
                        n_dropped_marker = n_open_after = 0;
                close(rep[0]);
                waitpid(mp, NULL, 0);
                usleep(500000);
                rss_gone = proc_status_kib(pid, "VmRSS");
                if (r < 0) {
                        fprintf(stderr, "init %s: %s\n", pfs[3], strerror(-r));
                        goto out;
                }
                printf("\nsvffd RSS during an init of %s to 252 VFs (VmRSS every 2 ms, until 1 s after it):\n",
                       pfs[3]);
                printf("  one subscriber that reads is sent %lu messages, %.1f KiB (a socket's send buffer,\n"
                       "  net.core.wmem_default, is %ld KiB: what does not fit there waits in svffd)\n",
                       rd.messages, (double) rd.bytes / 1024.0, read_sysctl_long("/proc/sys/net/core/wmem_default") / 1024);
                printf("  no subscriber:            peak %6.2f MiB, at the init's end %6.2f MiB (init %.2f s, %u samples)\n",
                       (double) peak0 / 1024.0, (double) end0 / 1024.0, (double) u0 / 1e6, s0);
                printf("  %d Monitor subscribers of uid %d that never read (%u connected, %d held by svffd),\n"
                       "  %.2f MiB before the init:\n",
                       MONITORS, FLOOD_UID, opened, fds_subs, (double) rss_subs / 1024.0);
                printf("                            peak %6.2f MiB, at the init's end %6.2f MiB (init %.2f s, %u samples)\n",
                       (double) peak1 / 1024.0, (double) end1 / 1024.0, (double) u1 / 1e6, s1);
                printf("    svffd held %d of them 1 s after the init\n", fds_end1);
                printf("  peak / target (64 MiB): %.2f; with subscribers / without: %.2f (%+.2f MiB)\n",
                       (double) peak1 / (64.0 * 1024.0), peak0 ? (double) peak1 / (double) peak0 : 0.0,
                       (double) (peak1 - peak0) / 1024.0);
                printf("  then %u more cycles 252 -> 0 -> 252 with them (%d, or until svffd hung up on all):\n",
                       cycles, MONITOR_CYCLES);
                printf("                            peak %6.2f MiB (%u samples); svffd held %d of them at the end,"
                       " had hung up on %u\n",
                       (double) series.peak / 1024.0, series.samples, fds_end2, hung_up);
                printf("    peak / target (64 MiB): %.2f; with subscribers / without: %.2f (%+.2f MiB)\n",
                       (double) series.peak / (64.0 * 1024.0), peak0 ? (double) series.peak / (double) peak0 : 0.0,
                       (double) (series.peak - peak0) / 1024.0);
                printf("    once read, %u of the %u streams ended with events-dropped (their backlog full),"
                       " %u still open after 5 s\n",
                       n_dropped_marker, opened, n_open_after);
                printf("    %.2f MiB once all had closed\n", (double) rss_gone / 1024.0);
        }
        r = reads_during_inits(sim, svffctl, pfs[2]);
        if (r < 0) {
                fprintf(stderr, "reads during inits: %s\n", strerror(-r));
                goto out;
        }
        r = metrics_cost(pid, cfg, state);
        if (r < 0) {
                fprintf(stderr, "metrics cost: %s\n", strerror(-r));
                goto out;
        }
        r = poll_cost(pid, cfg, state);
        if (r < 0) {
                fprintf(stderr, "metrics poll cost: %s\n", strerror(-r));
                goto out;
        }
        /* Last: it leaves the PF with no VFs. */
        r = held_write_reads(sim, svffctl, pfs[0]);
        if (r < 0) {
                fprintf(stderr, "reads during a held write: %s\n", strerror(-r));
                goto out;
        }
        ret = EXIT_SUCCESS;

out:
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
        free(clients);
        pcisim_free(sim);
        {
                char cmd[400];
                snprintf(cmd, sizeof(cmd), "rm -rf '%s'", state);
                (void) !system(cmd);
        }
        return ret;
}

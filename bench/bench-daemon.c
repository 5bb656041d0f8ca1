/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Figures for svffd and svffctl on pcisim's scale scenario (4 PFs x 252
 * VFs, all initialised):
 *   - 'svffctl list --json' wall time, p50 and p99 (target p99 <= 20 ms),
 *     and the List call alone over one connection;
 *   - svffd's RSS (target <= 16 MiB);
 *   - 200 concurrent clients x 100 List calls while an init of another
 *     PF runs: errors (target 0), svffd's fd count before and after (no
 *     growth), p50/p99 per call.
 * Prints figures and ratios; not a pass/fail test. $SVFFD, $SVFFCTL,
 * $PCISIM and $PCISIM_SCENARIOS name the programs (make bench sets them). */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
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

int main(void) {
        const char *svffd = getenv("SVFFD") ?: "daemon/svffd";
        const char *svffctl = getenv("SVFFCTL") ?: "cli/svffctl";
        _cleanup_free_ usec_t *lat = NULL;
        char state[] = "/tmp/svff-bench.XXXXXX";
        char statedir[300], cfg[300];
        struct svff_varlink_client *c = NULL;
        struct pcisim *sim = NULL;
        struct client *clients = NULL;
        pthread_barrier_t start;
        struct init_arg ia;
        pthread_t init_thread;
        long rss, hwm;
        int r, fds_before, fds_after, fds_idle;
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
        fputs("{ \"log-level\": \"warning\", \"limits\": { \"max-connections\": 1024, "
              "\"max-connections-per-uid\": 512 } }\n", f);
        fclose(f);

        {
                char *argv[] = { (char *) svffd, "--socket", sock, "--state-dir", statedir,
                                 "--sysfs-root", (char *) pcisim_root(sim), "--config", cfg, NULL };
                r = posix_spawn(&pid, svffd, NULL, NULL, argv, environ);
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

        /* svffctl list --json, the whole process each time */
        lat = calloc(CALLS_PER_CLIENT * CLIENTS, sizeof(usec_t));
        {
                char *argv[] = { (char *) svffctl, "--socket", sock, "list", "--json", NULL };
                usec_t first;

                if (run_cli(svffctl, argv, &first) < 0) {
                        fprintf(stderr, "svffctl list failed\n");
                        goto out;
                }
                for (n = 0; n < CLI_RUNS; n++)
                        if (run_cli(svffctl, argv, &lat[n]) < 0)
                                errors++;
                printf("\n'svffctl list --json' (%d runs, 1008 VFs):\n", CLI_RUNS);
                printf("  first, right after the inits: %.2f ms\n", (double) first / 1000.0);
                {
                        usec_t p50 = pct(lat, n, 0.50), p99 = pct(lat, n, 0.99), max = lat[n - 1];

                        printf("  p50 %.2f ms, p99 %.2f ms, max %.2f ms, errors %u\n", (double) p50 / 1000.0,
                               (double) p99 / 1000.0, (double) max / 1000.0, errors);
                        printf("  p99 / target (20 ms): %.2f\n", (double) p99 / 20000.0);
                }
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
        fds_idle = count_fds(pid);
        (void) fds_idle;

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
        return 0;
}

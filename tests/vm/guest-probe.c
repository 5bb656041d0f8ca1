/* guest-probe: the VM tier's workload inside a nested Linux guest. It
 * either writes a pattern to a block device with O_DIRECT, reads each
 * block back and verifies it, or pings an address at a steady rate and
 * counts the replies; it reports what the guest saw as timestamped lines
 * on stdout (the guest's /init sends them over its second serial port):
 *
 *   guest-probe [-b BLOCKS] [-o FIRST] [-s STALL_MS] DEVICE
 *   guest-probe -p IPV4 [-i INTERVAL_MS] [-s STALL_MS]
 *
 * On a DEVICE, it cycles over BLOCKS (default 256) 4 KiB blocks of DEVICE
 * from block FIRST (default 0; e.g. past a filesystem on the same device),
 * each pass with a new generation number in every block, until SIGTERM or
 * SIGINT; then it reads back every block it wrote and prints the summary.
 * SIGUSR1 prints the figures so far. Every line starts with "probe
 * t=SECONDS" (CLOCK_BOOTTIME, the clock of the guest's /proc/uptime):
 *
 *   probe t=T start dev=DEVICE blocks=N first=FIRST bs=4096
 *   probe t=T error op=write|read block=K errno=NAME    an I/O that failed
 *   probe t=T mismatch block=K                          a read-back differs
 *   probe t=T gone                                      DEVICE's node vanished
 *   probe t=T back                                      ... and is there again
 *   probe t=T stall S from=T0                           S s without an I/O
 *                                                       completing (>= STALL_MS)
 *   probe t=T status|end ios=N errors=E mismatches=M max_stall=S
 *         max_stall_from=T0 vanished=V verified=K bad=B
 *
 * After an error the device is closed and opened again by its path every
 * 0.1 s (a head that went away and came back is a new device). A block
 * whose last write failed may hold that write or the one before: the final
 * verification accepts either. verified and bad are only in the end line.
 *
 * With -p, it sends an ICMP echo request to IPV4 every INTERVAL_MS
 * (default 10) until SIGTERM or SIGINT, then waits two seconds for the
 * last replies. A request without a reply is lost; a request the kernel
 * refuses to send (no route while the interface is gone) is lost too, and
 * counted as an error. A reply more than a second after its request is
 * late: under nested TCG the guest's own vCPU, busy with a hotplug, can
 * hold replies that the network delivered. max_send_gap is the longest
 * time between two requests, which should be INTERVAL_MS: longer, the
 * probe itself was not scheduled (it then goes on, owing nothing).
 *
 *   probe t=T start ping=IPV4 interval_ms=I
 *   probe t=T error op=send errno=NAME       the first refused send of a run
 *   probe t=T stall S from=T0                S s without a reply (>= STALL_MS)
 *   probe t=T status|end sent=N received=R lost=L late=K errors=E
 *         max_gap=S max_gap_from=T0 max_send_gap=S
 *
 * A status line counts as lost the requests older than a second without
 * a reply so far.
 * Exits 0 after the end line, 1 if DEVICE cannot be opened or the socket
 * made at the start, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netinet/in.h>
#include <netinet/ip.h>
#include <netinet/ip_icmp.h>
#include <arpa/inet.h>
#include <poll.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#define BS 4096
#define MAGIC UINT64_C(0x53564646505242) /* "SVFFPRB" */

static volatile sig_atomic_t stop, report;

static void on_signal(int sig) {
        if (sig == SIGUSR1)
                report = 1;
        else
                stop = 1;
}

static double now(void) {
        struct timespec ts;

        clock_gettime(CLOCK_BOOTTIME, &ts);
        return (double) ts.tv_sec + (double) ts.tv_nsec / 1e9;
}

/* One line, one write(2): lines from the probe and the guest's shell do not
 * interleave on the serial port. */
static void say(const char *fmt, ...) {
        char line[512];
        int n = snprintf(line, sizeof(line), "probe t=%.3f ", now());
        va_list ap;

        va_start(ap, fmt);
        n += vsnprintf(line + n, sizeof(line) - (size_t) n - 1, fmt, ap);
        va_end(ap);
        if (n > (int) sizeof(line) - 2)
                n = (int) sizeof(line) - 2;
        line[n++] = '\n';
        (void) !write(STDOUT_FILENO, line, (size_t) n);
}

static uint64_t mix(uint64_t x) {
        x += UINT64_C(0x9e3779b97f4a7c15);
        x = (x ^ (x >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
        x = (x ^ (x >> 27)) * UINT64_C(0x94d049bb133111eb);
        return x ^ (x >> 31);
}

/* Block K of generation GEN: a header and words no other block or
 * generation has. */
static void fill(uint64_t *buf, uint64_t k, uint64_t gen) {
        buf[0] = MAGIC;
        buf[1] = k;
        buf[2] = gen;
        for (size_t i = 3; i < BS / sizeof(uint64_t); i++)
                buf[i] = mix((k << 40) ^ (gen << 20) ^ i);
}

struct probe {
        const char *dev;
        int fd;
        uint64_t blocks, first, ios, errors, mismatches, vanished;
        uint64_t *done;    /* per block: the generation last written, 0 none */
        uint64_t *pending; /* per block: a generation whose write failed */
        double last_ok, max_stall, max_stall_from, stall_ms;
        bool gone;
};

static void figures(struct probe *p, const char *what, const char *extra) {
        say("%s ios=%" PRIu64 " errors=%" PRIu64 " mismatches=%" PRIu64 " max_stall=%.3f max_stall_from=%.3f "
            "vanished=%" PRIu64 "%s",
            what, p->ios, p->errors, p->mismatches, p->max_stall, p->max_stall_from, p->vanished, extra);
}

static void completed(struct probe *p) {
        double t = now(), gap = t - p->last_ok;

        p->ios++;
        if (gap > p->max_stall) {
                p->max_stall = gap;
                p->max_stall_from = p->last_ok;
        }
        if (gap * 1000.0 >= p->stall_ms)
                say("stall %.3f from=%.3f", gap, p->last_ok);
        p->last_ok = t;
}

static void nap(void) {
        struct timespec ts = { .tv_nsec = 100 * 1000 * 1000 };

        nanosleep(&ts, NULL);
}

/* Opens the device again after an error, noting whether its node went
 * away meanwhile; returns false if asked to stop first. */
static bool reopen(struct probe *p) {
        struct stat st;

        if (p->fd >= 0)
                close(p->fd);
        p->fd = -1;
        while (!stop) {
                if (report) {
                        report = 0;
                        figures(p, "status", "");
                }
                if (stat(p->dev, &st) < 0) {
                        if (!p->gone) {
                                p->gone = true;
                                p->vanished++;
                                say("gone");
                        }
                } else {
                        p->fd = open(p->dev, O_RDWR | O_DIRECT | O_CLOEXEC);
                        if (p->fd >= 0) {
                                if (p->gone)
                                        say("back");
                                p->gone = false;
                                return true;
                        }
                }
                nap();
        }
        return false;
}

static void failed(struct probe *p, const char *op, uint64_t k, int err) {
        p->errors++;
        say("error op=%s block=%" PRIu64 " errno=%s", op, k, strerrorname_np(err) ?: "?");
        nap();
        (void) reopen(p);
}

static bool matches(const uint64_t *got, uint64_t *want, uint64_t k, uint64_t gen) {
        if (gen == 0)
                return false;
        fill(want, k, gen);
        return memcmp(got, want, BS) == 0;
}

/* Reads back every block written; a block whose last write failed may
 * hold either generation. */
static void verify(struct probe *p, uint64_t *buf, uint64_t *want, uint64_t *ret_ok, uint64_t *ret_bad) {
        uint64_t ok = 0, bad = 0;

        if (p->fd < 0)
                p->fd = open(p->dev, O_RDONLY | O_DIRECT | O_CLOEXEC);
        for (uint64_t k = 0; k < p->blocks; k++) {
                if (p->done[k] == 0 && p->pending[k] == 0)
                        continue;
                if (p->fd < 0 || pread(p->fd, buf, BS, (off_t) ((p->first + k) * BS)) != BS ||
                    !(matches(buf, want, k, p->done[k]) || matches(buf, want, k, p->pending[k]))) {
                        bad++;
                        continue;
                }
                ok++;
        }
        *ret_ok = ok;
        *ret_bad = bad;
}

/* ---- ping ---- */

#define PING_MAX (1u << 22) /* requests a run can hold: 11 h at 10 ms */

struct ping {
        struct sockaddr_in to;
        int fd;
        uint16_t id;
        uint32_t sent, received, late, errors;
        double *at;   /* per request: when it was sent */
        uint8_t *got; /* per request: its reply came in time */
        double last_reply, max_gap, max_gap_from, stall_ms, last_send, max_send_gap;
        double stopped; /* when sending stopped, 0 before */
        bool refusing;
};

static uint16_t cksum(const void *data, size_t len) {
        const uint8_t *b = data;
        uint32_t sum = 0;

        for (size_t i = 0; i + 1 < len; i += 2)
                sum += (uint32_t) (b[i] << 8 | b[i + 1]);
        if (len & 1)
                sum += (uint32_t) b[len - 1] << 8;
        while (sum >> 16)
                sum = (sum & 0xffff) + (sum >> 16);
        return htons((uint16_t) ~sum);
}

/* Requests older than a second without their reply. */
static uint32_t ping_lost(const struct ping *g, double t) {
        uint32_t lost = 0;

        for (uint32_t k = 0; k < g->sent; k++)
                if (!g->got[k] && t - g->at[k] > 1.0)
                        lost++;
        return lost;
}

static void ping_figures(struct ping *g, const char *what) {
        double t = now(), gap = (g->stopped > 0 ? g->stopped : t) - g->last_reply;

        /* the gap still open counts too, up to the last request: a run
         * that ends without replies */
        if (gap > g->max_gap) {
                g->max_gap = gap;
                g->max_gap_from = g->last_reply;
        }
        say("%s sent=%" PRIu32 " received=%" PRIu32 " lost=%" PRIu32 " late=%" PRIu32 " errors=%" PRIu32
            " max_gap=%.3f max_gap_from=%.3f max_send_gap=%.3f",
            what, g->sent, g->received, ping_lost(g, t), g->late, g->errors, g->max_gap,
            g->max_gap_from, g->max_send_gap);
}

static void ping_send(struct ping *g) {
        struct {
                struct icmphdr h;
                uint32_t k;
        } req = { .h = { .type = ICMP_ECHO, .un.echo = { .id = htons(g->id), .sequence = htons((uint16_t) g->sent) } },
                  .k = g->sent };

        if (g->sent >= PING_MAX)
                return;
        req.h.checksum = cksum(&req, sizeof(req));
        g->at[g->sent] = now();
        if (g->sent > 0 && g->at[g->sent] - g->last_send > g->max_send_gap)
                g->max_send_gap = g->at[g->sent] - g->last_send;
        g->last_send = g->at[g->sent];
        if (sendto(g->fd, &req, sizeof(req), 0, (const struct sockaddr *) &g->to, sizeof(g->to)) < 0) {
                g->errors++;
                if (!g->refusing)
                        say("error op=send errno=%s", strerrorname_np(errno) ?: "?");
                g->refusing = true;
        } else
                g->refusing = false;
        g->sent++;
}

static void ping_receive(struct ping *g) {
        uint8_t buf[256];
        ssize_t n;

        while ((n = recv(g->fd, buf, sizeof(buf), MSG_DONTWAIT)) > 0) {
                struct iphdr ip;
                struct icmphdr h;
                size_t hl;
                uint32_t k;
                double t = now(), gap;

                if ((size_t) n < sizeof(ip))
                        continue;
                memcpy(&ip, buf, sizeof(ip));   /* buf has no alignment of its own */
                hl = (size_t) ip.ihl * 4;
                if ((size_t) n < hl + sizeof(h) + sizeof(k) || ip.saddr != g->to.sin_addr.s_addr)
                        continue;
                memcpy(&h, buf + hl, sizeof(h));
                memcpy(&k, buf + hl + sizeof(h), sizeof(k));
                if (h.type != ICMP_ECHOREPLY || ntohs(h.un.echo.id) != g->id || k >= g->sent || g->got[k])
                        continue;
                g->got[k] = 1;
                g->received++;
                if (t - g->at[k] > 1.0)
                        g->late++;
                gap = t - g->last_reply;
                if (gap > g->max_gap) {
                        g->max_gap = gap;
                        g->max_gap_from = g->last_reply;
                }
                if (gap * 1000.0 >= g->stall_ms)
                        say("stall %.3f from=%.3f", gap, g->last_reply);
                g->last_reply = t;
        }
}

/* Waits for replies until T (the clock of now()). */
static void ping_wait(struct ping *g, double t) {
        double left;

        while (!stop && (left = t - now()) > 0) {
                struct pollfd pfd = { .fd = g->fd, .events = POLLIN };

                if (poll(&pfd, 1, (int) (left * 1000.0) + 1) > 0)
                        ping_receive(g);
                if (report) {
                        report = 0;
                        ping_figures(g, "status");
                }
        }
}

static int ping_run(const char *addr, double interval_ms, double stall_ms) {
        struct ping g = { .to = { .sin_family = AF_INET }, .fd = -1, .id = (uint16_t) getpid(), .stall_ms = stall_ms };
        double next;

        if (inet_pton(AF_INET, addr, &g.to.sin_addr) != 1) {
                fprintf(stderr, "guest-probe: '%s' is no IPv4 address\n", addr);
                return 2;
        }
        g.at = calloc(PING_MAX, sizeof(*g.at));
        g.got = calloc(PING_MAX, sizeof(*g.got));
        if (!g.at || !g.got) {
                fprintf(stderr, "guest-probe: out of memory\n");
                return 1;
        }
        g.fd = socket(AF_INET, SOCK_RAW | SOCK_CLOEXEC, IPPROTO_ICMP);
        if (g.fd < 0) {
                fprintf(stderr, "guest-probe: cannot open a raw ICMP socket: %m\n");
                return 1;
        }
        say("start ping=%s interval_ms=%.0f", addr, interval_ms);
        g.last_reply = next = now();
        while (!stop) {
                ping_send(&g);
                /* a probe that was not scheduled sends on, as ping(8)
                 * does, and owes nothing */
                next += interval_ms / 1000.0;
                if (next < now())
                        next = now();
                ping_wait(&g, next);
        }
        /* the last requests' replies: every request is then older than a second */
        g.stopped = now();
        stop = 0;
        ping_wait(&g, now() + 2.0);
        stop = 1;
        ping_figures(&g, "end");
        return 0;
}

/* ---- block device ---- */

int main(int argc, char **argv) {
        struct probe p = { .fd = -1, .blocks = 256, .stall_ms = 1000 };
        struct sigaction sa = { .sa_handler = on_signal };
        uint64_t *buf = NULL, *want = NULL, verified, bad;
        const char *ping_to = NULL;
        double interval_ms = 10;
        char extra[96];
        int c;

        while ((c = getopt(argc, argv, "b:o:s:p:i:")) != -1) {
                char *end;

                errno = 0;
                if (c == 'b') {
                        unsigned long long v = strtoull(optarg, &end, 10);
                        if (errno != 0 || *end != '\0' || v == 0 || v > (1u << 20))
                                goto usage;
                        p.blocks = v;
                } else if (c == 'o') {
                        unsigned long long v = strtoull(optarg, &end, 10);
                        if (errno != 0 || *end != '\0' || v > (UINT64_C(1) << 40))
                                goto usage;
                        p.first = v;
                } else if (c == 's') {
                        unsigned long v = strtoul(optarg, &end, 10);
                        if (errno != 0 || *end != '\0' || v == 0 || v > 3600000)
                                goto usage;
                        p.stall_ms = (double) v;
                } else if (c == 'p')
                        ping_to = optarg;
                else if (c == 'i') {
                        unsigned long v = strtoul(optarg, &end, 10);
                        if (errno != 0 || *end != '\0' || v == 0 || v > 60000)
                                goto usage;
                        interval_ms = (double) v;
                } else
                        goto usage;
        }
        if (ping_to) {
                if (optind != argc)
                        goto usage;
                sigaction(SIGTERM, &sa, NULL);
                sigaction(SIGINT, &sa, NULL);
                sigaction(SIGUSR1, &sa, NULL);
                return ping_run(ping_to, interval_ms, p.stall_ms);
        }
        if (optind != argc - 1)
                goto usage;
        p.dev = argv[optind];

        sigaction(SIGTERM, &sa, NULL);
        sigaction(SIGINT, &sa, NULL);
        sigaction(SIGUSR1, &sa, NULL);
        p.done = calloc(p.blocks, sizeof(*p.done));
        p.pending = calloc(p.blocks, sizeof(*p.pending));
        if (!p.done || !p.pending || posix_memalign((void **) &buf, BS, BS) != 0 ||
            posix_memalign((void **) &want, BS, BS) != 0) {
                fprintf(stderr, "guest-probe: out of memory\n");
                return 1;
        }
        p.fd = open(p.dev, O_RDWR | O_DIRECT | O_CLOEXEC);
        if (p.fd < 0) {
                fprintf(stderr, "guest-probe: cannot open '%s': %m\n", p.dev);
                return 1;
        }
        say("start dev=%s blocks=%" PRIu64 " first=%" PRIu64 " bs=%d", p.dev, p.blocks, p.first, BS);
        p.last_ok = now();

        for (uint64_t i = 0; !stop; i++) {
                uint64_t k = i % p.blocks, gen = i / p.blocks + 1;
                ssize_t n;

                if (report) {
                        report = 0;
                        figures(&p, "status", "");
                }
                fill(buf, k, gen);
                n = pwrite(p.fd, buf, BS, (off_t) ((p.first + k) * BS));
                if (n != BS) {
                        p.pending[k] = gen;
                        failed(&p, "write", k, n < 0 ? errno : EIO);
                        continue;
                }
                p.done[k] = gen;
                p.pending[k] = 0;
                completed(&p);
                n = pread(p.fd, buf, BS, (off_t) ((p.first + k) * BS));
                if (n != BS) {
                        failed(&p, "read", k, n < 0 ? errno : EIO);
                        continue;
                }
                completed(&p);
                if (!matches(buf, want, k, gen)) {
                        p.mismatches++;
                        say("mismatch block=%" PRIu64, k);
                }
        }

        verify(&p, buf, want, &verified, &bad);
        snprintf(extra, sizeof(extra), " verified=%" PRIu64 " bad=%" PRIu64, verified, bad);
        figures(&p, "end", extra);
        return 0;

usage:
        fprintf(stderr, "usage: guest-probe [-b BLOCKS] [-o FIRST] [-s STALL_MS] DEVICE\n"
                        "       guest-probe -p IPV4 [-i INTERVAL_MS] [-s STALL_MS]\n");
        return 2;
}

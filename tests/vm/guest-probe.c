/* guest-probe: the VM tier's workload inside a nested Linux guest. It
 * writes a pattern to a block device with O_DIRECT, reads each block back
 * and verifies it, and reports what the guest saw as timestamped lines
 * on stdout (the guest's /init sends them over its second serial port):
 *
 *   guest-probe [-b BLOCKS] [-o FIRST] [-s STALL_MS] DEVICE
 *
 * It cycles over BLOCKS (default 256) 4 KiB blocks of DEVICE from block
 * FIRST (default 0; e.g. past a filesystem on the same device),
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
 * Exits 0 after the end line, 1 if DEVICE cannot be opened at the start,
 * 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
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

int main(int argc, char **argv) {
        struct probe p = { .fd = -1, .blocks = 256, .stall_ms = 1000 };
        struct sigaction sa = { .sa_handler = on_signal };
        uint64_t *buf = NULL, *want = NULL, verified, bad;
        char extra[96];
        int c;

        while ((c = getopt(argc, argv, "b:o:s:")) != -1) {
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
                } else
                        goto usage;
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
        fprintf(stderr, "usage: guest-probe [-b BLOCKS] [-o FIRST] [-s STALL_MS] DEVICE\n");
        return 2;
}

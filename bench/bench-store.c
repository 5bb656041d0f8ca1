/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Store commit time with 1008 VF records (4 PFs x 252 VFs, the scale
 * scenario), fsyncs included, on the disk holding DIR (default "."):
 *
 *   bench-store [DIR] [COMMITS]
 *
 * Prints p50/p99/max against the 5 ms target, plus load time and the
 * document size. Not a test: figures depend on the disk. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "error.h"
#include "macro.h"
#include "store.h"

#define N_PF 4
#define N_VF 252
#define TARGET_MS 5.0

static double now_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int cmp_double(const void *a, const void *b) {
        double x = *(const double *) a, y = *(const double *) b;
        return x < y ? -1 : x > y;
}

static double pct(const double *sorted, size_t n, double p) {
        size_t i = (size_t) (p / 100.0 * (double) (n - 1) + 0.5);
        return sorted[i < n ? i : n - 1];
}

static void cleanup_dir(const char *dir) {
        static const char *const names[] = { "store.json", "store.json.prev", "store.json.tmp",
                                             "store.json.prev.tmp" };

        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                _cleanup_free_ char *p = NULL;
                if (asprintf(&p, "%s/%s", dir, names[i]) >= 0)
                        (void) unlink(p);
        }
        (void) rmdir(dir);
}

int main(int argc, char *argv[]) {
        const char *parent = argc > 1 ? argv[1] : ".";
        unsigned commits = argc > 2 ? (unsigned) strtoul(argv[2], NULL, 10) : 200;
        _cleanup_free_ char *dir = NULL, *store_path = NULL;
        _cleanup_free_ double *t = NULL;
        struct svff_store *s = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct stat st;
        double t0, load_ms;
        int r;

        if (commits == 0)
                commits = 1;
        if (asprintf(&dir, "%s/bench-store.XXXXXX", parent) < 0 || !mkdtemp(dir)) {
                fprintf(stderr, "Failed to create a directory in '%s': %m\n", parent);
                return EXIT_FAILURE;
        }
        t = calloc(commits, sizeof(double));
        if (!t)
                return EXIT_FAILURE;

        r = svff_store_open(dir, &s, &err);
        if (r < 0) {
                fprintf(stderr, "%s\n", svff_error_message(&err));
                return EXIT_FAILURE;
        }
        for (unsigned p = 0; p < N_PF; p++) {
                char pf[32];

                snprintf(pf, sizeof(pf), "0000:%02x:00.0", 0x81 + p);
                svff_store_set_pf(s, pf, N_VF, "vfio-pci");
                for (unsigned v = 0; v < N_VF; v++) {
                        unsigned rid = v + 1;  /* offset 1, stride 1 */
                        char vf[32];

                        snprintf(vf, sizeof(vf), "0000:%02x:%02x.%u", 0x81 + p + rid / 256,
                                 (rid % 256) >> 3, rid & 7);
                        svff_store_set_vf(s, vf, pf, v, "qdma-vf", "vfio-pci");
                }
        }

        for (unsigned i = 0; i < commits; i++) {
                /* a small edit per commit, as the daemon makes */
                svff_store_set_pf(s, "0000:81:00.0", N_VF - (i & 1), "vfio-pci");
                t0 = now_ms();
                r = svff_store_commit(s, &err);
                t[i] = now_ms() - t0;
                if (r < 0) {
                        fprintf(stderr, "%s\n", svff_error_message(&err));
                        svff_store_free(s);
                        cleanup_dir(dir);
                        return EXIT_FAILURE;
                }
        }
        svff_store_free(s);

        t0 = now_ms();
        r = svff_store_open(dir, &s, &err);
        load_ms = now_ms() - t0;
        if (r < 0) {
                fprintf(stderr, "%s\n", svff_error_message(&err));
                cleanup_dir(dir);
                return EXIT_FAILURE;
        }
        svff_store_free(s);

        if (asprintf(&store_path, "%s/store.json", dir) < 0 || stat(store_path, &st) < 0)
                st.st_size = 0;
        cleanup_dir(dir);

        qsort(t, commits, sizeof(double), cmp_double);
        printf("store commit, %d VF records, %u commits, document %lld bytes, on '%s':\n", N_PF * N_VF,
               commits, (long long) st.st_size, parent);
        printf("  p50 %.3f ms  p99 %.3f ms  max %.3f ms  (target p99 <= %.0f ms: %.2fx of target)\n",
               pct(t, commits, 50), pct(t, commits, 99), t[commits - 1], TARGET_MS,
               pct(t, commits, 99) / TARGET_MS);
        printf("store load: %.3f ms\n", load_ms);
        return EXIT_SUCCESS;
}

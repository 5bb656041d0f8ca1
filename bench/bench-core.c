/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Figures for the core on pcisim's scale scenario (4 PFs x 252 VFs, no
 * injected latency): the CPU cost of a full discovery, and the wall
 * time and FUSE operations per VF of creating 252 VFs and binding them
 * all to vfio-pci. Prints a table; not a pass/fail test. */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>

#include "bind.h"
#include "device.h"
#include "pcisim-util.h"
#include "sriov.h"
#include "sysfs.h"

static const char *const pfs[] = { "0000:10:00.0", "0000:20:00.0", "0000:30:00.0", "0000:40:00.0" };

/* The first run loads pci.ids and meets every inode for the first time;
 * the others show the steady state. Medians, as the host may be busy. */
#define DISCOVERY_RUNS 7

static int cmp_usec(const void *a, const void *b) {
        usec_t x = *(const usec_t *) a, y = *(const usec_t *) b;
        return x < y ? -1 : x > y;
}

static usec_t median(const usec_t *v, size_t n) {
        usec_t tmp[DISCOVERY_RUNS];

        memcpy(tmp, v, n * sizeof(*v));
        qsort(tmp, n, sizeof(*tmp), cmp_usec);
        return tmp[n / 2];
}

static usec_t tv_usec(const struct timeval *tv) {
        return (usec_t) tv->tv_sec * USEC_PER_SEC + (usec_t) tv->tv_usec;
}

/* CPU time of this process (every thread), and its user part. */
static usec_t cpu_usec(usec_t *ret_user) {
        struct rusage ru;

        getrusage(RUSAGE_SELF, &ru);
        if (ret_user)
                *ret_user = tv_usec(&ru.ru_utime);
        return tv_usec(&ru.ru_utime) + tv_usec(&ru.ru_stime);
}

static long long fuse_ops(struct pcisim *sim) {
        _cleanup_free_ char *stats = NULL;
        const char *p;

        if (pcisim_read(sim, ".pcisim/stats", &stats) < 0)
                return -1;
        p = strstr(stats, "total ");
        return p ? atoll(p + 6) : -1;
}

static int fail(const char *what, int r, const struct svff_error *err) {
        fprintf(stderr, "%s failed: %s (%s)\n", what, strerror(-r), svff_error_message(err));
        return EXIT_FAILURE;
}

int main(void) {
        _cleanup_(svff_ctx_unrefp) struct svff_ctx *ctx = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_pf **list = NULL;
        struct pcisim *sim = NULL;
        usec_t t0, c0, u0, u1, disc_cpu[DISCOVERY_RUNS], disc_user[DISCOVERY_RUNS], disc_wall[DISCOVERY_RUNS], numvfs_wall, bind_wall;
        long long ops0, ops_numvfs, ops_bind, ops_disc = 0;
        size_t n = 0, n_vfs = 0;
        int r;

        r = pcisim_start("scale", &sim);
        if (r < 0) {
                fprintf(stderr, "pcisim: %s (set PCISIM and PCISIM_SCENARIOS)\n", strerror(-r));
                return r == -EOPNOTSUPP ? 77 : EXIT_FAILURE;
        }
        r = svff_ctx_new(pcisim_root(sim), &ctx);
        if (r < 0)
                return fail("svff_ctx_new", r, &err);
        pcisim_ctl(sim, "latency-profile none");

        /* numvfs 0 -> 252 on one PF, then every VF to vfio-pci. */
        pcisim_ctl(sim, "reset-stats");
        ops0 = fuse_ops(sim);
        t0 = svff_now_usec();
        r = svff_pf_set_numvfs(ctx, pfs[0], 252, 60 * USEC_PER_SEC, &err);
        if (r < 0)
                return fail("svff_pf_set_numvfs", r, &err);
        numvfs_wall = svff_now_usec() - t0;
        ops_numvfs = fuse_ops(sim) - ops0;

        {
                _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;

                r = svff_pf_load(ctx, pfs[0], &pf, &err);
                if (r < 0)
                        return fail("svff_pf_load", r, &err);
                ops0 = fuse_ops(sim);
                t0 = svff_now_usec();
                for (size_t i = 0; i < pf->n_vfs; i++) {
                        r = svff_dev_bind(ctx, pf->vfs[i].address, "vfio-pci", NULL, &err);
                        if (r < 0)
                                return fail("svff_dev_bind", r, &err);
                }
                bind_wall = svff_now_usec() - t0;
                ops_bind = fuse_ops(sim) - ops0;
        }

        for (size_t i = 1; i < ELEMENTSOF(pfs); i++) {
                r = svff_pf_set_numvfs(ctx, pfs[i], 252, 60 * USEC_PER_SEC, &err);
                if (r < 0)
                        return fail("svff_pf_set_numvfs", r, &err);
        }

        for (int k = 0; k < DISCOVERY_RUNS; k++) {
                ops0 = fuse_ops(sim);
                c0 = cpu_usec(&u0);
                t0 = svff_now_usec();
                r = svff_pf_list(ctx, &list, &n, &err);
                if (r < 0)
                        return fail("svff_pf_list", r, &err);
                disc_wall[k] = svff_now_usec() - t0;
                disc_cpu[k] = cpu_usec(&u1) - c0;
                disc_user[k] = u1 - u0;
                ops_disc = fuse_ops(sim) - ops0;
                n_vfs = 0;
                for (size_t i = 0; i < n; i++)
                        n_vfs += list[i]->n_vfs;
                svff_pf_list_free(list, n);
        }

        printf("svff core on pcisim 'scale' (4 PFs x 252 VFs, no injected latency)\n\n");
        printf("%-44s %12s %12s %14s\n", "operation", "wall ms", "CPU ms", "FUSE ops/VF");
        printf("%-44s %12.1f %12.1f %14.1f\n", "discovery, cold (svff_pf_list, names, VFs)",
               disc_wall[0] / 1000.0, disc_cpu[0] / 1000.0, ops_disc / (double) (n_vfs ?: 1));
        printf("%-44s %12.1f %12.1f %14s\n", "discovery, warm (median of 6)",
               median(disc_wall + 1, DISCOVERY_RUNS - 1) / 1000.0,
               median(disc_cpu + 1, DISCOVERY_RUNS - 1) / 1000.0, "same");
        printf("%-44s %12s %12.1f %14s\n", "  of which user (cold; warm median)", "-",
               disc_user[0] / 1000.0, "-");
        printf("%-44s %12s %12.1f %14s\n", "", "", median(disc_user + 1, DISCOVERY_RUNS - 1) / 1000.0, "");
        printf("%-44s %12.1f %12s %14.1f\n", "numvfs 0 -> 252 (one PF)", numvfs_wall / 1000.0, "-",
               ops_numvfs / 252.0);
        printf("%-44s %12.1f %12s %14.1f\n", "bind 252 VFs to vfio-pci", bind_wall / 1000.0, "-",
               ops_bind / 252.0);
        printf("%-44s %12.1f %12s %14.1f\n", "numvfs 0 -> 252 + bind all", (numvfs_wall + bind_wall) / 1000.0,
               "-", (ops_numvfs + ops_bind) / 252.0);
        printf("\ndiscovered %zu PFs, %zu VFs; target: discovery CPU <= 100 ms\n", n, n_vfs);

        pcisim_free(sim);
        return EXIT_SUCCESS;
}

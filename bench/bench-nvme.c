/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The NVMe class's cost per VF against the stand-in for a PF's admin
 * queue (tests/nvme-standin.c, a model of QEMU's controller): plan +
 * provision + verify + release for 4, 8 and 127 VFs (127: a full
 * Secondary Controller List), each VF with a namespace of its own. It
 * prints, side by side, the CPU time per VF of each step and of the
 * whole against the 1 ms target (the stand-in's own work included, so an
 * upper bound), and the admin commands per VF.
 *
 *   bench-nvme [ROUNDS] */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "class.h"
#include "class-nvme.h"
#include "json-util.h"
#include "nvme-standin.h"

#define TARGET_MS 1.0
#define PF "0000:05:00.0"

enum { PLAN, PROVISION, VERIFY, RELEASE, _STEP_MAX };
static const char *const step_name[_STEP_MAX] = { "plan", "provision", "verify", "release" };

/* Counts the commands the class sends, then hands them to the stand-in. */
struct counter {
        void *handle;
        unsigned long reads, writes;
};

static struct counter counter;
static const struct svff_class *nvme;

static int c_open(void *userdata, const char *ctrl, void **ret) {
        int r = nvme_standin_ops.open(userdata, ctrl, &counter.handle);

        *ret = &counter;
        return r;
}

static void c_close(void *handle) {
        nvme_standin_ops.close(counter.handle);
}

static int c_devnum(void *handle, dev_t *ret) {
        return nvme_standin_ops.devnum(counter.handle, ret);
}

static int c_identify_ctrl(void *handle, struct svff_nvme_ctrl_id *ret) {
        counter.reads++;
        return nvme_standin_ops.identify_ctrl(counter.handle, ret);
}

static int c_primary_caps(void *handle, struct svff_nvme_primary_caps *ret) {
        counter.reads++;
        return nvme_standin_ops.primary_caps(counter.handle, ret);
}

static int c_secondary_list(void *handle, struct svff_nvme_secondary *ret, size_t max, size_t *ret_n) {
        counter.reads++;
        return nvme_standin_ops.secondary_list(counter.handle, ret, max, ret_n);
}

static int c_virt_mgmt(void *handle, enum svff_nvme_virt_act act, enum svff_nvme_res res, uint16_t cntlid,
                       uint16_t nr) {
        counter.writes++;
        return nvme_standin_ops.virt_mgmt(counter.handle, act, res, cntlid, nr);
}

static int c_ns_attach(void *handle, uint32_t nsid, uint16_t cntlid, bool attach) {
        counter.writes++;
        return nvme_standin_ops.ns_attach(counter.handle, nsid, cntlid, attach);
}

static int c_ns_list(void *handle, uint32_t *ret, size_t max, size_t *ret_n) {
        counter.reads++;
        return nvme_standin_ops.ns_list(counter.handle, ret, max, ret_n);
}

static int c_ns_ids(void *handle, uint32_t nsid, struct svff_nvme_ns_ids *ret) {
        counter.reads++;
        return nvme_standin_ops.ns_ids(counter.handle, nsid, ret);
}

static int c_ns_ctrls(void *handle, uint32_t nsid, uint16_t *ret, size_t max, size_t *ret_n) {
        counter.reads++;
        return nvme_standin_ops.ns_ctrls(counter.handle, nsid, ret, max, ret_n);
}

static int c_format(void *handle, uint32_t nsid) {
        counter.writes++;
        return nvme_standin_ops.format(counter.handle, nsid);
}

static int c_reset(void *handle) {
        counter.writes++;
        return nvme_standin_ops.reset(counter.handle);
}

static const struct svff_nvme_ops counting_ops = {
        .open = c_open,
        .close = c_close,
        .devnum = c_devnum,
        .identify_ctrl = c_identify_ctrl,
        .primary_caps = c_primary_caps,
        .secondary_list = c_secondary_list,
        .virt_mgmt = c_virt_mgmt,
        .ns_attach = c_ns_attach,
        .ns_list = c_ns_list,
        .ns_ids = c_ns_ids,
        .ns_ctrls = c_ns_ctrls,
        .format = c_format,
        .reset = c_reset,
};

static double cpu_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

/* The stand-in logs every command for the tests; a bench run would grow
 * that log without end. */
static void drop_log(struct nvme_standin *st) {
        free(st->log);
        st->log = NULL;
}

struct result {
        unsigned numvfs;
        unsigned long vfs;                      /* VF steps run: numvfs * rounds */
        double ms[_STEP_MAX];
        unsigned long reads[_STEP_MAX], writes[_STEP_MAX];
};

/* A controller with numvfs secondaries (QEMU's per-VF maxima, 2 VQ and 1
 * VI, and a pool that fits them all) and one detached namespace per VF,
 * its VFs enabled. */
static void model(struct nvme_standin *st, unsigned numvfs) {
        nvme_standin_init_qemu(st);
        st->n_sec = numvfs;
        for (unsigned i = 0; i < numvfs; i++)
                st->sec[i] = (struct svff_nvme_secondary) { .scid = i + 1, .vfn = i + 1 };
        st->caps.vqfrt = 2 * numvfs;
        st->caps.vifrt = numvfs;
        st->n_ns = numvfs;
        for (unsigned i = 0; i < numvfs; i++)
                st->ns[i] = (struct standin_ns) { .nsid = i + 1 };
        nvme_standin_set_numvfs(st, numvfs);
}

static void account(struct result *res, int step, double t0) {
        res->ms[step] += cpu_ms() - t0;
        res->reads[step] += counter.reads;
        res->writes[step] += counter.writes;
        counter.reads = counter.writes = 0;
}

static int run(struct svff_ctx *ctx, unsigned numvfs, unsigned rounds, struct result *res) {
        _cleanup_free_ struct nvme_standin *st = calloc(1, sizeof(*st));
        _cleanup_(json_object_putp) struct json_object *settings = json_object_new_array();
        struct json_object **states = calloc(numvfs, sizeof(*states));
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_class_pf *c = NULL;
        struct svff_pf pf = {
                .address = PF, .class = 0x010802, .driver = (char *) "nvme",
                .totalvfs = numvfs, .numvfs = numvfs,
        };
        int r = 0;

        if (!st || !settings || !states) {
                free(states);
                return -ENOMEM;
        }
        model(st, numvfs);
        for (unsigned i = 0; i < numvfs; i++) {
                struct json_object *s = json_object_new_object();

                json_object_object_add(s, "namespace", json_object_new_int(i + 1));
                json_object_array_add(settings, s);
        }

        r = svff_class_nvme_open_with(ctx, &pf, &counting_ops, st, &c, &err);
        if (r < 0) {
                fprintf(stderr, "bench-nvme: %s\n", svff_error_message(&err));
                goto out;
        }
        *res = (struct result) { .numvfs = numvfs };
        counter.reads = counter.writes = 0;

        /* Each step is timed with the load of its settings, as the
         * daemon runs it: plan with every VF's, provision with one. */
        for (unsigned k = 0; k < rounds; k++) {
                _cleanup_(json_object_putp) struct json_object *plan = NULL;
                struct svff_class_settings **loaded = NULL;
                const char *what = "plan";
                unsigned i = 0;
                double t0;

                t0 = cpu_ms();
                r = svff_class_load_all(nvme, c, settings, numvfs, &loaded, &err);
                if (r >= 0)
                        r = nvme->plan(c, &pf, numvfs, loaded, &plan, &err);
                svff_class_unload_all(nvme, loaded, numvfs);
                account(res, PLAN, t0);
                drop_log(st);
                if (r < 0)
                        goto fail;

                for (i = 0; i < numvfs; i++) {
                        struct svff_class_settings *s = NULL;

                        what = "provision";
                        t0 = cpu_ms();
                        r = nvme->load(c, i, json_object_array_get_idx(settings, i), &s, &err);
                        if (r >= 0) {
                                r = nvme->provision(c, &pf, i, s, NULL, false, &states[i], &err);
                                nvme->unload(s);
                        }
                        account(res, PROVISION, t0);
                        if (r < 0)
                                goto fail;
                        what = "verify";
                        t0 = cpu_ms();
                        r = nvme->verify(c, &pf, i, states[i], &err);
                        account(res, VERIFY, t0);
                        drop_log(st);
                        if (r < 0)
                                goto fail;
                }
                for (i = 0; i < numvfs; i++) {
                        what = "release";
                        t0 = cpu_ms();
                        r = nvme->release(c, &pf, i, states[i], &err);
                        account(res, RELEASE, t0);
                        drop_log(st);
                        json_object_put(states[i]);
                        states[i] = NULL;
                        if (r < 0)
                                goto fail;
                }
                res->vfs += numvfs;
                continue;
        fail:
                fprintf(stderr, "bench-nvme: %u VFs, %s of VF %u: %s\n", numvfs, what, i, svff_error_message(&err));
                goto out;
        }
out:
        for (unsigned i = 0; i < numvfs; i++)
                json_object_put(states[i]);
        free(states);
        nvme->close(c);
        drop_log(st);
        return r;
}

static double total_ms(const struct result *res) {
        double t = 0;

        for (int s = 0; s < _STEP_MAX; s++)
                t += res->ms[s];
        return t / res->vfs;
}

static void print(const struct result *res, size_t n) {
        printf("CPU ms per VF       ");
        for (size_t i = 0; i < n; i++)
                printf("  %9u VFs", res[i].numvfs);
        printf("\n");
        for (int s = 0; s < _STEP_MAX; s++) {
                printf("  %-18s", step_name[s]);
                for (size_t i = 0; i < n; i++)
                        printf("  %13.4f", res[i].ms[s] / res[i].vfs);
                printf("\n");
        }
        printf("  %-18s", "all four");
        for (size_t i = 0; i < n; i++)
                printf("  %13.4f", total_ms(&res[i]));
        printf("\n  %-18s", "/ 1 ms target");
        for (size_t i = 0; i < n; i++)
                printf("  %12.1f%%", 100 * total_ms(&res[i]) / TARGET_MS);
        printf("\n  %-18s", "");
        for (size_t i = 0; i < n; i++)
                printf("  %13s", total_ms(&res[i]) <= TARGET_MS ? "ok" : "OVER");

        printf("\nadmin commands per VF (writes + reads)\n");
        for (int s = 0; s < _STEP_MAX; s++) {
                printf("  %-18s", step_name[s]);
                for (size_t i = 0; i < n; i++)
                        printf("  %6.2f + %4.2f", (double) res[i].writes[s] / res[i].vfs,
                               (double) res[i].reads[s] / res[i].vfs);
                printf("\n");
        }
        printf("  %-18s", "all four");
        for (size_t i = 0; i < n; i++) {
                unsigned long w = 0, rd = 0;

                for (int s = 0; s < _STEP_MAX; s++) {
                        w += res[i].writes[s];
                        rd += res[i].reads[s];
                }
                printf("  %6.2f + %4.2f", (double) w / res[i].vfs, (double) rd / res[i].vfs);
        }
        printf("\n");
}

/* The PF's sysfs side the class reads: its nvme/nvme0 directory. */
static int make_root(char *root) {
        static const char *const dirs[] = {
                "/bus", "/bus/pci", "/bus/pci/devices", "/bus/pci/devices/" PF,
                "/bus/pci/devices/" PF "/nvme", "/bus/pci/devices/" PF "/nvme/nvme0",
        };
        char path[256];

        if (!mkdtemp(root))
                return -errno;
        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
                if (mkdir(path, 0755) < 0)
                        return -errno;
        }
        return 0;
}

static void remove_root(const char *root) {
        static const char *const dirs[] = {
                "/bus/pci/devices/" PF "/nvme/nvme0", "/bus/pci/devices/" PF "/nvme", "/bus/pci/devices/" PF,
                "/bus/pci/devices", "/bus/pci", "/bus", "",
        };
        char path[256];

        for (size_t i = 0; i < ELEMENTSOF(dirs); i++) {
                snprintf(path, sizeof(path), "%s%s", root, dirs[i]);
                (void) rmdir(path);
        }
}

int main(int argc, char **argv) {
        static const unsigned counts[] = { 4, 8, 127 };
        _cleanup_(svff_ctx_unrefp) struct svff_ctx *ctx = NULL;
        unsigned rounds = argc > 1 ? (unsigned) atoi(argv[1]) : 50;
        struct result res[ELEMENTSOF(counts)];
        char root[] = "/tmp/bench-nvme-XXXXXX";
        bool ok = true;
        int r;

        if (rounds < 1)
                rounds = 1;
        nvme = svff_class_by_name("nvme");
        if (!nvme)
                return EXIT_FAILURE;
        r = make_root(root);
        if (r >= 0)
                r = svff_ctx_new(root, &ctx);
        if (r < 0) {
                fprintf(stderr, "bench-nvme: cannot set up a sysfs tree in %s: %s\n", root, strerror(-r));
                remove_root(root);
                return EXIT_FAILURE;
        }
        printf("# the NVMe class against the stand-in for a PF's admin queue (tests/nvme-standin.c),\n"
               "# each VF with a namespace of its own; %u x about 127 VFs per count\n",
               rounds);
        for (size_t i = 0; i < ELEMENTSOF(counts); i++) {
                /* the same number of VF steps for every count */
                r = run(ctx, counts[i], rounds * (127 / counts[i]), &res[i]);
                if (r < 0)
                        break;
                ok = ok && total_ms(&res[i]) <= TARGET_MS;
        }
        remove_root(root);
        if (r < 0)
                return EXIT_FAILURE;
        print(res, ELEMENTSOF(counts));
        return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

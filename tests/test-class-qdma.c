/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The QDMA class on pcisim: the PF's qmax set by policy, a plan the
 * device's queue budget refuses, and active queues refusing a qmax
 * change by name, with no second try. */

#include <check.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "device.h"
#include "json-util.h"
#include "pcisim-util.h"
#include "sysfs.h"

#define QDMA_PF "0000:01:00.0"
#define QDMA_VF0 "0000:01:00.4"        /* offset 4, stride 1 */

extern const struct svff_class svff_class_qdma;
static const struct svff_class *cls = &svff_class_qdma;

static struct pcisim *sim;
static struct svff_ctx *ctx;
static struct svff_pf *pf;
static struct svff_class_pf *cpf;
static struct json_object *kept;        /* objects a test makes inline, dropped at teardown */

static void reload(void) {
        struct svff_error err = SVFF_ERROR_NULL;

        svff_pf_free(pf);
        pf = NULL;
        ck_assert_msg(svff_pf_load(ctx, QDMA_PF, &pf, &err) == 0, "%s", svff_error_message(&err));
}

static void setup(void) {
        struct svff_error err = SVFF_ERROR_NULL;
        int r = pcisim_start("qdma", &sim);

        ck_assert_msg(r >= 0, "pcisim_start: %s", strerror(-r));
        ck_assert_int_eq(svff_ctx_new(pcisim_root(sim), &ctx), 0);
        reload();
        ck_assert_int_eq(cls->open(ctx, pf, &cpf, &err), 0);
}

static void teardown(void) {
        cls->close(cpf);
        cpf = NULL;
        svff_pf_free(pf);
        pf = NULL;
        ctx = svff_ctx_unref(ctx);
        pcisim_free(sim);
        sim = NULL;
        json_object_put(kept);
        kept = NULL;
}

static unsigned pf_qmax(void) {
        uint64_t v = 0;

        ck_assert_int_eq(svff_sysfs_read_u64(svff_ctx_get_rootfd(ctx),
                                             "bus/pci/devices/" QDMA_PF "/qdma/qmax", &v), 0);
        return (unsigned) v;
}

static unsigned writes(void) {
        _cleanup_free_ char *s = NULL;
        const char *w;
        int r = pcisim_read(sim, ".pcisim/stats", &s);

        ck_assert_int_ge(r, 0);
        w = strstr(s, "write ");
        ck_assert_ptr_nonnull(w);
        return (unsigned) strtoul(w + 6, NULL, 10);
}


static struct json_object *keep(struct json_object *o) {
        if (!kept)
                kept = json_object_new_array();
        json_object_array_add(kept, o);         /* kept owns it, the caller borrows */
        return o;
}

static struct json_object *settings(const char *text) {
        struct json_object *o = json_tokener_parse(text);

        ck_assert_ptr_nonnull(o);
        return o;
}

/* numvfs copies of one VF's settings, as the executor hands plan(). */
static struct json_object *per_vf(unsigned numvfs, const char *text) {
        struct json_object *a = json_object_new_array();

        for (unsigned i = 0; i < numvfs; i++)
                json_object_array_add(a, settings(text));
        return a;
}

static void assert_error(int r, const struct svff_error *err, int code, const char *needle) {
        ck_assert_msg(r == code, "returned %d (%s), expected %d; message: %s", r, strerror(-r), code,
                      svff_error_message(err));
        ck_assert_msg(strstr(svff_error_message(err), needle), "message '%s' lacks '%s'",
                      svff_error_message(err), needle);
}

/* Loads every VF's settings, which must load, and plans with them. */
static int plan_vfs(unsigned numvfs, struct json_object *array, struct json_object **ret,
                    struct svff_error *err) {
        struct svff_class_settings **loaded = NULL;
        int r;

        r = svff_class_load_all(cls, cpf, array, numvfs, &loaded, err);
        ck_assert_msg(r == 0, "load: %s", svff_error_message(err));
        r = cls->plan(cpf, pf, numvfs, loaded, ret, err);
        svff_class_unload_all(cls, loaded, numvfs);
        return r;
}

/* Loads VF index's settings, which must load, and provisions it as an
 * init does: no recorded state. */
static int provision_vf(unsigned index, struct json_object *json, struct json_object **ret,
                        struct svff_error *err) {
        struct svff_class_settings *s = NULL;
        int r;

        r = cls->load(cpf, index, json, &s, err);
        ck_assert_msg(r == 0, "load: %s", svff_error_message(err));
        r = cls->provision(cpf, pf, index, s, NULL, false, ret, err);
        cls->unload(s);
        return r;
}

/* Whether array's settings for numvfs VFs fail to load with code and
 * needle, keeping nothing. */
static void assert_load_error(unsigned numvfs, struct json_object *array, int code, const char *needle) {
        struct svff_class_settings **loaded = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        assert_error(svff_class_load_all(cls, cpf, array, numvfs, &loaded, &err), &err, code, needle);
        ck_assert_ptr_null(loaded);
        svff_error_free(&err);
}

START_TEST(test_match) {
        struct svff_pf other = { .vendor_id = 0x10ee, .device_id = 0x913f };

        ck_assert(cls->match(ctx, pf));
        ck_assert_ptr_eq(svff_class_find(ctx, pf), cls);
        ck_assert_ptr_eq(svff_class_by_name("qdma"), cls);
        ck_assert(cls->match(ctx, &other));
        other.device_id = 0xb348;
        ck_assert(cls->match(ctx, &other));
        other.device_id = 0xa03f;               /* a VF id */
        ck_assert(!cls->match(ctx, &other));
        other.device_id = 0x1234;
        ck_assert(!cls->match(ctx, &other));
        other.driver = (char *) "qdma-pf";      /* a bitstream with its own id */
        ck_assert(cls->match(ctx, &other));
        other = (struct svff_pf) { .vendor_id = 0x8086, .device_id = 0x903f, .driver = (char *) "igb" };
        ck_assert(!cls->match(ctx, &other));
}
END_TEST

/* A VF the host drives (qdma-vf by policy): its driver asked the PF for
 * 8 queues when it probed. With none kept for it (vf_qmax 0, the
 * default) that count is the driver's own, and no drift; with 4 kept it
 * outgrew what was set aside. Read from the device: pcisim's VF
 * qdma/qmax. */
START_TEST(test_vf_on_host_driver) {
        _cleanup_(json_object_putp) struct json_object *none = NULL, *four = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        uint64_t v = 0;

        ck_assert_int_eq(pcisim_write(sim, "bus/pci/devices/" QDMA_PF "/sriov_numvfs", "2"), 0);
        reload();
        ck_assert_str_eq(svff_pf_vf_at(pf, 0)->driver, "qdma-vf");
        ck_assert_int_eq(svff_sysfs_read_u64(svff_ctx_get_rootfd(ctx), "bus/pci/devices/" QDMA_VF0 "/qdma/qmax", &v), 0);
        ck_assert_uint_eq(v, 8);

        ck_assert_int_eq(provision_vf(0, keep(settings("{}")), &none, &err), 0);
        ck_assert_int_eq(cls->verify(cpf, pf, 0, none, &err), 0);

        ck_assert_int_eq(provision_vf(0, keep(settings("{\"vf_qmax\": 4}")), &four, &err), 0);
        assert_error(cls->verify(cpf, pf, 0, four, &err), &err, -EUCLEAN, "holds 8 queues, more than the 4 kept");
        svff_error_free(&err);
}
END_TEST

/* The policy's qmax reaches the PF; the VF's state says its queues must
 * be asked for again, and verify sees the PF's count drift. */
START_TEST(test_qmax_by_policy) {
        _cleanup_(json_object_putp) struct json_object *s = settings("{\"qmax\": 256, \"vf_qmax\": 8}");
        _cleanup_(json_object_putp) struct json_object *st = NULL, *st2 = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *line = NULL;
        unsigned before;

        ck_assert_int_eq(pcisim_write(sim, "bus/pci/devices/" QDMA_PF "/sriov_numvfs", "2"), 0);
        reload();
        ck_assert_uint_eq(pf_qmax(), 512);
        ck_assert_int_eq(provision_vf(0, s, &st, &err), 0);
        ck_assert_uint_eq(pf_qmax(), 256);
        ck_assert_str_eq(json_object_to_json_string_ext(st, JSON_C_TO_STRING_PLAIN),
                         "{\"pf_qmax\":256,\"vf_qmax\":8,\"contexts\":\"reset\"}");
        ck_assert_int_eq(cls->verify(cpf, pf, 0, st, &err), 0);

        /* the second VF finds the PF done: no write */
        ck_assert_int_eq(pcisim_ctl(sim, "reset-stats"), 0);
        before = writes();
        ck_assert_int_eq(provision_vf(1, s, &st2, &err), 0);
        ck_assert_uint_eq(writes(), before);

        line = cls->describe(st);
        ck_assert_ptr_nonnull(line);
        ck_assert_msg(strstr(line, "8 queues kept") && strstr(line, "request them again"), "%s", line);
        free(line);
        line = cls->summarize(st);
        ck_assert_str_eq(line, "qmax 8");

        ck_assert_int_eq(pcisim_write(sim, "bus/pci/devices/" QDMA_PF "/qdma/qmax", "300"), 0);
        assert_error(cls->verify(cpf, pf, 0, st, &err), &err, -EUCLEAN, "is 300, not 256");
        svff_error_free(&err);

        /* no qmax in the policy: the PF's is left alone */
        json_object_put(st2);
        st2 = NULL;
        ck_assert_int_eq(provision_vf(1, keep(settings("{\"vf_qmax\": 4}")), &st2, &err), 0);
        ck_assert_uint_eq(pf_qmax(), 300);
        ck_assert(!json_object_object_get_ex(st2, "pf_qmax", NULL));
}
END_TEST

START_TEST(test_budget_refusal) {
        _cleanup_(json_object_putp) struct json_object *big = per_vf(252, "{\"qmax\": 512, \"vf_qmax\": 8}");
        _cleanup_(json_object_putp) struct json_object *small = per_vf(4, "{\"qmax\": 512, \"vf_qmax\": 8}");
        _cleanup_(json_object_putp) struct json_object *own = per_vf(4, "{\"vf_qmax\": 600, \"budget\": 4096}");
        _cleanup_(json_object_putp) struct json_object *plan = NULL, *plan2 = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        const char *needs = NULL;

        assert_error(plan_vfs(252, big, &plan, &err), &err, -ENOSPC,
                     "252 VFs need 2016 queues and the PF 512: 2528 in all, beyond the device's budget of 2048");
        ck_assert_ptr_null(plan);
        svff_error_free(&err);
        ck_assert_uint_eq(pf_qmax(), 512);      /* refused before anything is touched */

        ck_assert_int_eq(plan_vfs(4, small, &plan, &err), 0);
        ck_assert_int_eq(svff_json_get_string(plan, "needs", &needs), 0);
        ck_assert_str_eq(needs, "544 of 2048 queues: PF 512, VFs 32");
        ck_assert_int_eq(json_object_array_length(json_object_object_get(plan, "steps")), 4);

        /* a policy without qmax counts the PF's live count; its own budget */
        ck_assert_int_eq(plan_vfs(4, own, &plan2, &err), 0);
        ck_assert_int_eq(svff_json_get_string(plan2, "needs", &needs), 0);
        ck_assert_str_eq(needs, "2912 of 4096 queues: PF 512, VFs 2400");

        /* bad settings are the load's to refuse, before plan */
        assert_load_error(1, keep(per_vf(1, "{\"vf_qmax\": -1}")), -EINVAL, "'vf_qmax' takes a number of queues");
        assert_load_error(1, keep(per_vf(1, "{\"queues\": 4}")), -EINVAL, "Unknown qdma setting 'queues'");
        assert_load_error(1, keep(per_vf(1, "{\"qmax\": 3000}")), -EINVAL, "exceeds the device's budget of 2048");
        assert_load_error(1, keep(per_vf(1, "[]")), -EINVAL, "The qdma class settings must be a JSON object");
        assert_error(svff_class_check(cls, keep(settings("{\"budget\": 0}")), &err), &err, -EINVAL,
                     "'budget' must be at least 1");
        svff_error_free(&err);
        ck_assert_int_eq(svff_class_check(cls, keep(settings("{\"budget\": 4096, \"qmax\": 3000}")), &err), 0);
}
END_TEST

/* A count beyond what svff accepts is refused by name, never read as
 * "leave the PF's qmax alone". */
START_TEST(test_out_of_range) {
        struct svff_error err = SVFF_ERROR_NULL;
        static const char *const bad[] = {
                "{\"qmax\": 3000000000, \"budget\": 4294967295}",
                "{\"qmax\": 2147483648, \"budget\": 4294967295}",
                "{\"budget\": 4294967296}",
                "{\"budget\": 65537}",
                "{\"vf_qmax\": 18446744073709551615}",
        };
        static const char *const names[] = { "'qmax' 3000000000", "'qmax' 2147483648", "'budget' 4294967296",
                                             "'budget' 65537", "'vf_qmax' 18446744073709551615" };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct svff_class_settings *s = NULL;

                assert_error(svff_class_check(cls, keep(settings(bad[i])), &err), &err, -ERANGE, names[i]);
                ck_assert_msg(strstr(svff_error_message(&err), "at most 65536"), "%s", svff_error_message(&err));
                svff_error_free(&err);
                assert_load_error(1, keep(per_vf(1, bad[i])), -ERANGE, names[i]);
                /* what provision loads, for one VF on the open PF */
                assert_error(cls->load(cpf, 0, keep(settings(bad[i])), &s, &err), &err, -ERANGE, names[i]);
                ck_assert_ptr_null(s);
                svff_error_free(&err);
        }
        ck_assert_uint_eq(pf_qmax(), 512);
        ck_assert_int_eq(svff_class_check(cls, keep(settings("{\"budget\": 65536, \"qmax\": 65536}")), &err), 0);
}
END_TEST

/* prepare sets the PF's qmax before numvfs, from the first VF whose
 * loaded settings name one; none named leaves it alone. */
START_TEST(test_prepare) {
        _cleanup_(json_object_putp) struct json_object *mixed =
                settings("[{\"vf_qmax\": 2}, {\"qmax\": 256}, {\"qmax\": 128}]");
        _cleanup_(json_object_putp) struct json_object *bare = per_vf(3, "{\"vf_qmax\": 2}");
        struct svff_class_settings **loaded = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        unsigned before;

        ck_assert_int_eq(svff_class_load_all(cls, cpf, bare, 3, &loaded, &err), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "reset-stats"), 0);
        before = writes();
        ck_assert_int_eq(cls->prepare(cpf, pf, 3, loaded, &err), 0);
        ck_assert_uint_eq(writes(), before);
        ck_assert_uint_eq(pf_qmax(), 512);
        svff_class_unload_all(cls, loaded, 3);

        ck_assert_int_eq(svff_class_load_all(cls, cpf, mixed, 3, &loaded, &err), 0);
        ck_assert_int_eq(cls->prepare(cpf, pf, 3, loaded, &err), 0);
        ck_assert_uint_eq(pf_qmax(), 256);
        svff_class_unload_all(cls, loaded, 3);
}
END_TEST

/* A started queue keeps qmax: EBUSY naming it, one write and no more. */
START_TEST(test_active_queues) {
        _cleanup_(json_object_putp) struct json_object *s = settings("{\"qmax\": 128}");
        _cleanup_(json_object_putp) struct json_object *same = settings("{\"qmax\": 512}");
        _cleanup_(json_object_putp) struct json_object *st = NULL, *inspect = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *q = NULL;
        unsigned before;

        ck_assert_int_eq(pcisim_ctl(sim, "queue-start " QDMA_PF " 3"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start " QDMA_PF " 9 ST"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "reset-stats"), 0);
        before = writes();
        assert_error(provision_vf(0, s, &st, &err), &err, -EBUSY,
                     "2 queues are active on it ('qdma01000-MM-3', 'qdma01000-ST-9')");
        ck_assert_msg(strstr(svff_error_message(&err), "from 512 to 128"), "%s", svff_error_message(&err));
        svff_error_free(&err);
        ck_assert_uint_eq(writes(), before + 1);
        ck_assert_uint_eq(pf_qmax(), 512);
        ck_assert_ptr_null(st);

        /* the count the policy wants already: nothing to write, no EBUSY */
        ck_assert_int_eq(provision_vf(0, same, &st, &err), 0);

        ck_assert_int_eq(cls->inspect(cpf, pf, &inspect, &err), 0);
        ck_assert(json_object_object_get_ex(json_object_object_get(inspect, "pf"), "queues", &q));
        ck_assert_int_eq(json_object_array_length(q), 2);

        ck_assert_int_eq(pcisim_ctl(sim, "queue-stop " QDMA_PF " 3"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-stop " QDMA_PF " 9"), 0);
        json_object_put(st);
        st = NULL;
        ck_assert_int_eq(provision_vf(0, s, &st, &err), 0);
        ck_assert_uint_eq(pf_qmax(), 128);
}
END_TEST

/* The budget as the device enforces it: a qmax the device refuses is
 * reported with the figures. */
START_TEST(test_device_refuses) {
        _cleanup_(json_object_putp) struct json_object *s = settings("{\"qmax\": 2048}");
        _cleanup_(json_object_putp) struct json_object *st = NULL, *inspect = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(pcisim_write(sim, "bus/pci/devices/" QDMA_PF "/sriov_numvfs", "2"), 0);
        reload();
        assert_error(provision_vf(0, s, &st, &err), &err, -ENOSPC,
                     "refused 2048 queues for " QDMA_PF " (qdma/qmax, now 512)");
        svff_error_free(&err);

        ck_assert_int_eq(cls->inspect(cpf, pf, &inspect, &err), 0);
        ck_assert_str_eq(json_object_to_json_string_ext(inspect, JSON_C_TO_STRING_PLAIN),
                         "{\"pf\":{\"qmax\":512,\"queues\":[]},\"vfs\":{\"0\":{\"qmax\":8},\"1\":{\"qmax\":8}}}");
}
END_TEST

int main(void) {
        Suite *s = suite_create("class-qdma");
        TCase *tc = tcase_create("pcisim");
        struct pcisim *probe;
        SRunner *sr;
        int failed, r;

        r = pcisim_start("qdma", &probe);
        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "SKIP: FUSE is not usable here (no /dev/fuse or no permission to mount)\n");
                return 77;
        }
        if (r < 0) {
                fprintf(stderr, "pcisim failed to start: %s\n", strerror(-r));
                return EXIT_FAILURE;
        }
        pcisim_free(probe);

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 120);
        tcase_add_test(tc, test_match);
        tcase_add_test(tc, test_qmax_by_policy);
        tcase_add_test(tc, test_vf_on_host_driver);
        tcase_add_test(tc, test_budget_refusal);
        tcase_add_test(tc, test_out_of_range);
        tcase_add_test(tc, test_prepare);
        tcase_add_test(tc, test_active_queues);
        tcase_add_test(tc, test_device_refuses);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

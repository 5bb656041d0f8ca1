/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The class registry and the settings merge every class shares. */

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "class.h"
#include "json-util.h"

static struct json_object *json(const char *s) {
        struct json_object *v = NULL;

        ck_assert_int_eq(svff_json_parse(s, strlen(s), 16, &v, NULL), 0);
        return v;
}

static void assert_json_eq(struct json_object *v, const char *want) {
        _cleanup_(json_object_putp) struct json_object *w = json(want);

        ck_assert_msg(json_object_equal(v, w), "got %s, want %s",
                      json_object_to_json_string_ext(v, JSON_C_TO_STRING_PLAIN), want);
}

START_TEST(test_registry) {
        const struct svff_class *const *all = svff_class_all();
        size_t n = 0;

        ck_assert_ptr_nonnull(all);
        /* NVMe is the first class, and every class has a distinct name
         * that by_name finds, and the operations the executors call. */
        ck_assert_ptr_nonnull(all[0]);
        ck_assert_str_eq(all[0]->name, "nvme");
        for (; all[n]; n++) {
                ck_assert_ptr_nonnull(all[n]->name);
                ck_assert_ptr_nonnull(all[n]->match);
                ck_assert_ptr_eq(svff_class_by_name(all[n]->name), all[n]);
                ck_assert_msg(!all[n]->open == !all[n]->close, "%s: open without close", all[n]->name);
                for (size_t m = 0; m < n; m++)
                        ck_assert_str_ne(all[m]->name, all[n]->name);
        }
        ck_assert_ptr_null(svff_class_by_name("no-such-class"));
        ck_assert_ptr_null(svff_class_by_name(""));
        ck_assert_ptr_null(svff_class_by_name(NULL));
}
END_TEST

START_TEST(test_find) {
        struct svff_pf nvme = { .address = "0000:00:04.0", .class = 0x010802, .driver = (char *) "nvme" };
        struct svff_pf other_nvm = { .address = "0000:00:05.0", .class = 0x010800 };
        struct svff_pf sata = { .address = "0000:00:1f.2", .class = 0x010601, .driver = (char *) "ahci" };
        struct svff_pf bridge = { .address = "0000:00:00.0", .class = 0x060000 };

        /* match looks at the class code only, never the device: no ctx */
        ck_assert_ptr_eq(svff_class_find(NULL, &nvme), svff_class_by_name("nvme"));
        /* an NVMe PF on another driver (or none) is still NVMe: open
         * refuses it by name rather than svff handing out dead VFs */
        ck_assert_ptr_eq(svff_class_find(NULL, &other_nvm), svff_class_by_name("nvme"));
        ck_assert_ptr_null(svff_class_find(NULL, &sata));
        ck_assert_ptr_null(svff_class_find(NULL, &bridge));
        ck_assert_ptr_null(svff_class_find(NULL, NULL));
}
END_TEST

START_TEST(test_merge) {
        _cleanup_(json_object_putp) struct json_object *policy =
                json("{\"vq\": 2, \"vi\": 1, \"namespace\": 1, \"nested\": {\"a\": 1, \"b\": 2}}");
        _cleanup_(json_object_putp) struct json_object *assign =
                json("{\"namespace\": 3, \"vi\": null, \"nested\": {\"a\": 5}, \"new\": [1, 2]}");
        _cleanup_(json_object_putp) struct json_object *policy_copy = json_object_get(policy);
        _cleanup_free_ char *before_p = strdup(json_object_to_json_string_ext(policy, JSON_C_TO_STRING_PLAIN));
        _cleanup_free_ char *before_a = strdup(json_object_to_json_string_ext(assign, JSON_C_TO_STRING_PLAIN));
        struct json_object *m;

        /* the assignment's keys win, null removes, objects are replaced
         * whole */
        m = svff_class_settings_merge(policy, assign);
        ck_assert_ptr_nonnull(m);
        assert_json_eq(m, "{\"vq\": 2, \"namespace\": 3, \"nested\": {\"a\": 5}, \"new\": [1, 2]}");

        /* deep copies: editing the result leaves the inputs alone */
        json_object_object_add(json_object_object_get(m, "nested"), "c", json_object_new_int(9));
        json_object_array_add(json_object_object_get(m, "new"), json_object_new_int(3));
        ck_assert_str_eq(json_object_to_json_string_ext(policy, JSON_C_TO_STRING_PLAIN), before_p);
        ck_assert_str_eq(json_object_to_json_string_ext(assign, JSON_C_TO_STRING_PLAIN), before_a);
        json_object_put(m);

        /* either side may be absent */
        m = svff_class_settings_merge(NULL, NULL);
        assert_json_eq(m, "{}");
        json_object_put(m);
        m = svff_class_settings_merge(policy, NULL);
        assert_json_eq(m, before_p);
        ck_assert_ptr_ne(m, policy);
        json_object_put(m);
        m = svff_class_settings_merge(NULL, assign);
        assert_json_eq(m, "{\"namespace\": 3, \"nested\": {\"a\": 5}, \"new\": [1, 2]}");
        json_object_put(m);
}
END_TEST

START_TEST(test_check) {
        const struct svff_class *nvme = svff_class_by_name("nvme");
        _cleanup_(json_object_putp) struct json_object *arr = json("[1]");
        struct svff_error err = SVFF_ERROR_NULL;

        /* a settings value that is not an object is refused for any
         * class, naming what was given */
        ck_assert_int_eq(svff_class_check(nvme, arr, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "[1]"));
        svff_error_free(&err);
        ck_assert_int_eq(svff_class_check(NULL, arr, &err), -EINVAL);
        svff_error_free(&err);
        ck_assert_int_eq(svff_class_check(NULL, NULL, &err), 0);
        ck_assert_int_eq(svff_class_check(nvme, NULL, &err), 0);
        ck_assert(!svff_error_is_set(&err));
}
END_TEST

/* A class that records what load was given, refuses a "bad" key and
 * counts what is loaded and not yet unloaded: what load_all keeps. */
struct svff_class_settings {
        unsigned index;
        struct json_object *settings;   /* borrowed from the test */
};

static unsigned fake_loads, fake_live;

static int fake_load(const struct svff_class_pf *c, unsigned index, struct json_object *settings,
                     struct svff_class_settings **ret, struct svff_error *err) {
        struct svff_class_settings *s;

        (void) c;
        fake_loads++;
        if (settings && json_object_object_get_ex(settings, "bad", NULL))
                return svff_error_set(err, -EINVAL, "VF %u has a bad setting", index);
        s = calloc(1, sizeof(*s));
        ck_assert_ptr_nonnull(s);
        s->index = index;
        s->settings = settings;
        fake_live++;
        *ret = s;
        return 0;
}

static void fake_unload(struct svff_class_settings *s) {
        if (!s)
                return;
        ck_assert_uint_gt(fake_live, 0);
        fake_live--;
        free(s);
}

static const struct svff_class fake_class = {
        .name = "fake",
        .load = fake_load,
        .unload = fake_unload,
};

START_TEST(test_load_all) {
        _cleanup_(json_object_putp) struct json_object *object = json("{\"vq\": 2}");
        _cleanup_(json_object_putp) struct json_object *shorter = json("[{\"a\": 1}, null]");
        _cleanup_(json_object_putp) struct json_object *third_bad = json("[{}, {}, {\"bad\": true}, {}]");
        _cleanup_(json_object_putp) struct json_object *nvme_bad = json("[{\"vq\": 2}, {\"vq\": 1}]");
        const struct svff_class *nvme = svff_class_by_name("nvme");
        struct svff_class_settings **a = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        /* one object for all VFs is not an array of them: refused by name */
        ck_assert_int_eq(svff_class_load_all(&fake_class, NULL, object, 2, &a, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "fake class takes one settings object per VF"));
        ck_assert_ptr_null(a);
        ck_assert_uint_eq(fake_loads, 0);
        svff_error_free(&err);

        /* a short array: the VFs past its end, and a null entry, load
         * none; every index gets its own value */
        ck_assert_int_eq(svff_class_load_all(&fake_class, NULL, shorter, 4, &a, &err), 0);
        ck_assert_ptr_nonnull(a);
        ck_assert_uint_eq(fake_live, 4);
        for (unsigned i = 0; i < 4; i++) {
                ck_assert_ptr_nonnull(a[i]);
                ck_assert_uint_eq(a[i]->index, i);
                ck_assert_ptr_eq(a[i]->settings, i == 0 ? json_object_array_get_idx(shorter, 0) : NULL);
        }
        svff_class_unload_all(&fake_class, a, 4);
        ck_assert_uint_eq(fake_live, 0);
        a = NULL;

        /* no settings at all: none for every VF */
        ck_assert_int_eq(svff_class_load_all(&fake_class, NULL, NULL, 2, &a, &err), 0);
        ck_assert(a[0] && !a[0]->settings && a[1] && !a[1]->settings);
        svff_class_unload_all(&fake_class, a, 2);
        ck_assert_uint_eq(fake_live, 0);
        a = NULL;

        /* VF 2's error stops the load there, and what 0 and 1 loaded is
         * unloaded: nothing kept, *ret untouched */
        fake_loads = 0;
        ck_assert_int_eq(svff_class_load_all(&fake_class, NULL, third_bad, 4, &a, &err), -EINVAL);
        ck_assert_str_eq(svff_error_message(&err), "VF 2 has a bad setting");
        ck_assert_uint_eq(fake_loads, 3);
        ck_assert_uint_eq(fake_live, 0);
        ck_assert_ptr_null(a);
        svff_error_free(&err);

        /* zero VFs and a NULL array are fine */
        ck_assert_int_eq(svff_class_load_all(&fake_class, NULL, NULL, 0, &a, &err), 0);
        svff_class_unload_all(&fake_class, a, 0);
        a = NULL;
        svff_class_unload_all(&fake_class, NULL, 3);

        /* a real class's refusal comes back as it is */
        ck_assert_int_eq(svff_class_load_all(nvme, NULL, nvme_bad, 2, &a, &err), -EINVAL);
        ck_assert_msg(strstr(svff_error_message(&err), "NVMe setting 'vq' is 1"), "%s", svff_error_message(&err));
        ck_assert_ptr_null(a);
        svff_error_free(&err);
        ck_assert_int_eq(svff_class_load_all(nvme, NULL, nvme_bad, 1, &a, &err), 0);
        ck_assert(a[0]);
        svff_class_unload_all(nvme, a, 1);
}
END_TEST

static Suite *class_suite(void) {
        Suite *s = suite_create("class");
        TCase *tc = tcase_create("registry");

        tcase_add_test(tc, test_registry);
        tcase_add_test(tc, test_find);
        tcase_add_test(tc, test_merge);
        tcase_add_test(tc, test_check);
        tcase_add_test(tc, test_load_all);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(class_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}

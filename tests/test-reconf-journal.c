/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/reconf-journal.c: every form of a reconf journal entry svffd
 * may find at start-up, written by itself or by an older svffd. */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "reconf-journal.h"

#define PF "0000:01:00.0"

static struct svff_reconf_plan *plan_4_to_6(void) {
        struct svff_reconf_item items[2] = {};
        struct svff_reconf_input in = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = items, .n_items = 2 };
        struct svff_reconf_plan *p = NULL;

        for (unsigned i = 0; i < 2; i++) {
                items[i].index = i;
                snprintf(items[i].vf, sizeof(items[i].vf), "0000:01:00.%u", i + 4);
                snprintf(items[i].a.domain, sizeof(items[i].a.domain), "vm%u", i + 1);
                snprintf(items[i].a.uuid, sizeof(items[i].a.uuid), "aabdcc34-98f7-4a6f-9b4d-eb9cc0016ff%u", i);
                snprintf(items[i].a.alias, sizeof(items[i].a.alias), "ua-svff-%u", i);
                snprintf(items[i].a.guest_address, sizeof(items[i].a.guest_address), "0000:0%u:00.0", i + 5);
                items[i].a.config = true;
                items[i].a.state = SVFF_ASSIGN_ATTACHED;
        }
        ck_assert_int_eq(svff_reconf_plan_new(&in, 6, SVFF_RECONF_PAUSE, false, &p), 0);
        return p;
}

/* Encoded, then read back through its text form, as the store does. */
static struct json_object *reparse(struct json_object *e) {
        struct json_object *o = json_tokener_parse(json_object_to_json_string(e));

        ck_assert_ptr_nonnull(o);
        json_object_put(e);
        return o;
}

START_TEST(test_round_trip) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        struct json_object *e = reparse(reconf_journal_encode(p, "numvfs", 1234));
        struct reconf_journal j = {};

        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_str_eq(j.phase, "numvfs");
        ck_assert_uint_eq(j.numvfs, 6);
        ck_assert_uint_eq(j.started_usec, 1234);
        ck_assert(!j.rollback);
        ck_assert_str_eq(j.plan->pf, PF);
        ck_assert_uint_eq(j.plan->from, 4);
        ck_assert_uint_eq(j.plan->to, 6);
        ck_assert_uint_eq(j.plan->n_items, 2);
        ck_assert_uint_eq(j.plan->n_steps, p->n_steps);
        reconf_journal_done(&j);
        ck_assert_ptr_null(j.plan);
        json_object_put(e);
}
END_TEST

START_TEST(test_provision_and_class) {
        /* The later additions: phase provision, and each VF's class state
         * kept verbatim by VF index; an entry without them reads as before. */
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        struct json_object *e = reconf_journal_encode(p, "provision", 1), *st = json_object_new_object(), *c;
        struct reconf_journal j = {};

        json_object_object_add(st, "secondary", json_object_new_string("online"));
        ck_assert_int_eq(reconf_journal_set_class(e, 1, st), 0);
        ck_assert_int_eq(reconf_journal_set_class(e, 3, NULL), 0);
        e = reparse(e);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_str_eq(j.phase, "provision");
        c = reconf_journal_get_class(&j, 1);
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN), "{\"secondary\":\"online\"}");
        ck_assert_ptr_null(reconf_journal_get_class(&j, 0));
        reconf_journal_done(&j);
        /* Removed again: the entry has no state for VF 1 any more. */
        ck_assert_int_eq(reconf_journal_set_class(e, 1, NULL), 0);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_ptr_null(reconf_journal_get_class(&j, 1));
        reconf_journal_done(&j);
        json_object_put(e);

        e = reparse(reconf_journal_encode(p, "bind", 1));
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_ptr_null(j.classes);
        ck_assert_ptr_null(reconf_journal_get_class(&j, 1));
        reconf_journal_done(&j);
        json_object_put(e);
}
END_TEST

START_TEST(test_rollback_record) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        struct json_object *e = reconf_journal_encode(p, "bind", 1);
        struct reconf_journal j = {};

        ck_assert_int_eq(reconf_journal_set_rollback(e, 4, "sriov_numvfs 0 -> 6: ENOMEM"), 0);
        /* A recovery keeps the record it found. */
        ck_assert_int_eq(reconf_journal_set_rollback(e, 0, "other"), 0);
        e = reparse(e);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert(j.rollback);
        ck_assert_uint_eq(j.rollback_to, 4);
        ck_assert_str_eq(j.rollback_reason, "sriov_numvfs 0 -> 6: ENOMEM");
        reconf_journal_done(&j);
        json_object_put(e);

        /* Without a reason. */
        e = reconf_journal_encode(p, "rollback", 1);
        ck_assert_int_eq(reconf_journal_set_rollback(e, 4, NULL), 0);
        e = reparse(e);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert(j.rollback);
        ck_assert_ptr_null(j.rollback_reason);
        reconf_journal_done(&j);
        json_object_put(e);

        /* A reason quoting text from outside: valid UTF-8 in the record,
         * as the store's loader requires. */
        e = reconf_journal_encode(p, "rollback", 1);
        ck_assert_int_eq(reconf_journal_set_rollback(e, 4, "hook: caf\xe9 \xff"), 0);
        e = reparse(e);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_str_eq(j.rollback_reason, "hook: caf\xef\xbf\xbd \xef\xbf\xbd");
        reconf_journal_done(&j);
        json_object_put(e);
}
END_TEST

START_TEST(test_owner) {
        /* Who owns the count once the reconf goes through: read back as
         * written; an entry of an older svffd has none. */
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        struct json_object *e = reparse(reconf_journal_encode(p, "numvfs", 1));
        struct reconf_journal j = {};

        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_ptr_null(j.owner);
        reconf_journal_done(&j);
        ck_assert_int_eq(reconf_journal_set_owner(e, "policy:fpga"), 0);
        ck_assert_int_eq(reconf_journal_set_owner(e, "operator"), 0);
        e = reparse(e);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_str_eq(j.owner, "operator");
        reconf_journal_done(&j);
        ck_assert_int_eq(reconf_journal_set_owner(e, NULL), 0);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_ptr_null(j.owner);
        reconf_journal_done(&j);
        json_object_put(e);
}
END_TEST

START_TEST(test_rollback_from_older_svffd) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        struct json_object *e = reparse(reconf_journal_encode(p, "rollback", 1));
        struct reconf_journal j = {};

        /* Phase rollback, no record: back to where the reconf started. */
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert(j.rollback);
        ck_assert_uint_eq(j.rollback_to, 4);
        reconf_journal_done(&j);
        json_object_put(e);
}
END_TEST

START_TEST(test_not_reconf) {
        struct json_object *e = json_tokener_parse("{\"op\": \"init\", \"phase\": \"numvfs\"}");
        struct reconf_journal j = { .phase = "untouched" };

        ck_assert_int_eq(reconf_journal_decode(e, &j), -ENOENT);
        ck_assert_int_eq(reconf_journal_decode(NULL, &j), -ENOENT);
        ck_assert_str_eq(j.phase, "untouched");
        json_object_put(e);
}
END_TEST

START_TEST(test_reprogram_record) {
        /* A reprogram's phases and its record: each phase of its own
         * needs the record, the record needs its image. */
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        static const char *const phases[] = { "remove", "flash", "rescan", "interrupted" };
        struct reconf_journal j = {};

        for (size_t i = 0; i < ELEMENTSOF(phases); i++) {
                struct json_object *e = reparse(reconf_journal_encode(p, phases[i], 1));

                ck_assert_int_eq(reconf_journal_decode(e, &j), -EBADMSG);
                json_object_object_add(e, "reprogram", json_tokener_parse(
                        "{\"image\": \"/images/a.bit\", \"ids\": [\"10ee:903f\"], \"flashed\": false, "
                        "\"reason\": \"the flash hook failed\"}"));
                e = reparse(e);
                ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
                ck_assert_str_eq(j.phase, phases[i]);
                ck_assert_ptr_nonnull(j.reprogram);
                ck_assert_str_eq(j.reprogram_image, "/images/a.bit");
                ck_assert(!j.reprogram_flashed);
                ck_assert_str_eq(j.reprogram_reason, "the flash hook failed");
                reconf_journal_done(&j);
                /* No image: not a reprogram svffd can go on with. */
                json_object_object_del(json_object_object_get(e, "reprogram"), "image");
                ck_assert_int_eq(reconf_journal_decode(e, &j), -EBADMSG);
                json_object_put(e);
        }
        /* A reconf's own phase with a flashed reprogram: the new count next. */
        {
                struct json_object *e = reconf_journal_encode(p, "numvfs", 1);

                json_object_object_add(e, "reprogram", json_tokener_parse(
                        "{\"image\": \"/images/a.bit\", \"flashed\": true, \"reason\": null}"));
                e = reparse(e);
                ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
                ck_assert(j.reprogram_flashed);
                ck_assert_ptr_null(j.reprogram_reason);
                reconf_journal_done(&j);
                json_object_put(e);
        }
}
END_TEST

/* Each key broken in turn: never a half-read entry. */
START_TEST(test_unreadable) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan_4_to_6();
        static const struct {
                const char *key;
                const char *value;      /* JSON; NULL removes the key */
        } bad[] = {
                { "phase", "\"restore-ish\"" },
                { "phase", NULL },
                { "numvfs", "\"six\"" },
                { "numvfs", "5" },      /* not the plan's target */
                { "plan", "{\"pf\": 1}" },
                { "plan", NULL },
                { "rollback", "{\"numvfs\": \"four\"}" },
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                struct json_object *e = reconf_journal_encode(p, "quiesce", 1);
                struct reconf_journal j = {};

                json_object_object_del(e, bad[i].key);
                if (bad[i].value)
                        json_object_object_add(e, bad[i].key, json_tokener_parse(bad[i].value));
                e = reparse(e);
                ck_assert_msg(reconf_journal_decode(e, &j) == -EBADMSG, "%s = %s was read", bad[i].key,
                              bad[i].value ?: "(none)");
                ck_assert_ptr_null(j.plan);
                json_object_put(e);
        }
}
END_TEST

static Suite *reconf_journal_suite(void) {
        Suite *s = suite_create("reconf-journal");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_round_trip);
        tcase_add_test(tc, test_provision_and_class);
        tcase_add_test(tc, test_rollback_record);
        tcase_add_test(tc, test_owner);
        tcase_add_test(tc, test_rollback_from_older_svffd);
        tcase_add_test(tc, test_not_reconf);
        tcase_add_test(tc, test_unreadable);
        tcase_add_test(tc, test_reprogram_record);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(reconf_journal_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The guest view of a reconf's plan and its predicted device downtime:
 * the model's figures until svffd has measured a reconf of the PF, its
 * own figures from then on, per domain. */

#include <check.h>
#include <stdio.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "reconf-predict.h"

#define PF "0000:01:00.0"
#define U1 "11111111-1111-1111-1111-111111111111"
#define U2 "22222222-2222-2222-2222-222222222222"

static struct svff_reconf_item item(unsigned index, const char *domain, const char *uuid) {
        struct svff_reconf_item it = { .index = index };

        snprintf(it.vf, sizeof(it.vf), "0000:01:00.%u", index + 4);
        snprintf(it.a.domain, sizeof(it.a.domain), "%s", domain);
        snprintf(it.a.uuid, sizeof(it.a.uuid), "%s", uuid);
        snprintf(it.a.guest_address, sizeof(it.a.guest_address), "0000:0%u:00.0", index + 1);
        it.a.live = it.a.config = true;
        it.a.state = SVFF_ASSIGN_ATTACHED;
        return it;
}

static struct reconf_guest guest(const struct svff_reconf_item *it, enum svff_hv_hotplug h) {
        struct reconf_guest g = { .running = true, .hotplug = h };

        snprintf(g.vf, sizeof(g.vf), "%s", it->vf);
        snprintf(g.uuid, sizeof(g.uuid), "%s", it->a.uuid);
        snprintf(g.guest_address, sizeof(g.guest_address), "%s", it->a.guest_address);
        return g;
}

/* vm1 has VFs 0 and 1 (ACPI hotplug), vm2 VF 2 (native). */
struct fixture {
        struct svff_reconf_item items[3];
        struct reconf_guest guests[3];
        struct svff_reconf_plan *plan;
};

static void fixture_init(struct fixture *f) {
        struct svff_reconf_input in = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = f->items, .n_items = 3 };

        f->items[0] = item(0, "vm1", U1);
        f->items[1] = item(1, "vm1", U1);
        f->items[2] = item(2, "vm2", U2);
        f->guests[0] = guest(&f->items[0], SVFF_HV_HOTPLUG_ACPI);
        f->guests[1] = guest(&f->items[1], SVFF_HV_HOTPLUG_ACPI);
        f->guests[2] = guest(&f->items[2], SVFF_HV_HOTPLUG_NATIVE);
        f->plan = NULL;
        ck_assert_int_eq(svff_reconf_plan_new(&in, 4, SVFF_RECONF_PAUSE, false, &f->plan), 0);
}

/* "predicted_msec/predicted_from" of each guest, in the plan's order. */
static char *predictions(const struct fixture *f, const struct reconf_figures *recent) {
        _cleanup_(json_object_putp) struct json_object *a =
                reconf_guests_json(f->plan, f->guests, 3, false, recent, NULL);
        char *s = strdup("");

        ck_assert_ptr_nonnull(a);
        for (size_t i = 0; i < json_object_array_length(a); i++) {
                struct json_object *o = json_object_array_get_idx(a, i);
                char *n = NULL;

                ck_assert_int_ge(asprintf(&n, "%s%s%s/%s", s, i ? " " : "",
                                          json_object_get_string(json_object_object_get(o, "predicted_msec")),
                                          json_object_get_string(json_object_object_get(o, "predicted_from"))), 0);
                free(s);
                s = n;
        }
        return s;
}

/* What each guest's agent said, against its window: vm1's VFs 8.5 s
 * (9 s rounded up), vm2's 8 s. VF 0's guest read 9 s on nvme0n1: ready;
 * VF 1's read 8 s: not; VF 2's did not answer. Not asked, or not an NVMe
 * PF: no agent fields. */
START_TEST(test_agent) {
        _cleanup_(json_object_putp) struct json_object *a = NULL, *b = NULL;
        struct fixture f;
        struct json_object *o;

        fixture_init(&f);
        f.guests[0].agent = f.guests[1].agent = RECONF_GUEST_AGENT_READ;
        snprintf(f.guests[0].agent_head, sizeof(f.guests[0].agent_head), "nvme0n1");
        f.guests[0].agent_delayed_removal_sec = 9;
        snprintf(f.guests[0].want_nqn, sizeof(f.guests[0].want_nqn), "nqn.2019-08.org.qemu:svffnvme0");
        f.guests[0].want_nsid = 1;
        snprintf(f.guests[1].agent_head, sizeof(f.guests[1].agent_head), "nvme1n1");
        f.guests[1].agent_delayed_removal_sec = 8;
        f.guests[2].agent = RECONF_GUEST_AGENT_UNANSWERED;
        snprintf(f.guests[2].agent_error, sizeof(f.guests[2].agent_error), "the agent is not connected");

        a = reconf_guests_json(f.plan, f.guests, 3, true, NULL, NULL);
        o = json_object_array_get_idx(a, 0);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "agent")), "read");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "agent_head")), "nvme0n1");
        ck_assert_int_eq(json_object_get_int(json_object_object_get(o, "agent_delayed_removal_sec")), 9);
        ck_assert(json_object_get_boolean(json_object_object_get(o, "guest_ready")));
        /* the namespace its head was found by */
        ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "agent_subnqn")),
                         "nqn.2019-08.org.qemu:svffnvme0");
        ck_assert_int_eq(json_object_get_int(json_object_object_get(o, "agent_nsid")), 1);
        o = json_object_array_get_idx(a, 1);
        ck_assert_ptr_null(json_object_object_get(o, "agent_subnqn"));
        ck_assert(!json_object_get_boolean(json_object_object_get(o, "guest_ready")));
        ck_assert_ptr_nonnull(json_object_object_get(o, "guest_ready"));
        o = json_object_array_get_idx(a, 2);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "agent")), "unanswered");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(o, "agent_error")), "the agent is not connected");
        ck_assert_ptr_null(json_object_object_get(o, "guest_ready"));

        /* a read with no head: not ready */
        f.guests[0].agent_head[0] = 0;
        b = reconf_guests_json(f.plan, f.guests, 3, false, NULL, NULL);
        o = json_object_array_get_idx(b, 0);
        ck_assert_ptr_null(json_object_object_get(o, "agent"));
        json_object_put(b);
        b = reconf_guests_json(f.plan, f.guests, 3, true, NULL, NULL);
        o = json_object_array_get_idx(b, 0);
        ck_assert_ptr_null(json_object_object_get(o, "agent_head"));
        ck_assert(!json_object_get_boolean(json_object_object_get(o, "guest_ready")));
        ck_assert_ptr_nonnull(json_object_object_get(o, "guest_ready"));
        svff_reconf_plan_free(f.plan);
}
END_TEST

START_TEST(test_model_until_measured) {
        struct fixture f;
        _cleanup_free_ char *s = NULL;

        fixture_init(&f);
        /* vm2's native unplug (6 s) is the longest: every domain waits
         * for it, then 1.5 s of host, then 0.5 s per own device. */
        s = predictions(&f, NULL);
        ck_assert_str_eq(s, "8500/model 8500/model 8000/model");
        svff_reconf_plan_free(f.plan);
}
END_TEST

START_TEST(test_recent_figures) {
        struct reconf_figures *list = NULL;
        struct fixture f;
        char *s;
        struct reconf_domain_figure vm1 = { .uuid = U1, .unplug_usec = 900000, .reattach_usec = 300000 };
        struct reconf_domain_figure vm2 = { .uuid = U2, .unplug_usec = 2100000, .reattach_usec = 400000 };

        fixture_init(&f);
        /* Another PF's figures do not count. */
        ck_assert_int_eq(reconf_figures_record(&list, "0000:02:00.0", 4000000, &vm1, 1), 0);
        ck_assert_ptr_null(reconf_figures_get(list, PF));
        s = predictions(&f, reconf_figures_get(list, PF));
        ck_assert_str_eq(s, "8500/model 8500/model 8000/model");
        free(s);

        /* vm1 measured: its unplug and re-attach per device are its
         * own; vm2 is still the model's (6 s, the longest), the host
         * part measured. */
        ck_assert_int_eq(reconf_figures_record(&list, PF, 2500000, &vm1, 1), 0);
        s = predictions(&f, reconf_figures_get(list, PF));
        ck_assert_str_eq(s, "9100/recent 9100/recent 9000/recent");
        free(s);

        /* vm2 measured too: its 2.1 s is now the longest quiesce (vm1's
         * two devices take 1.8 s). A later reconf without a host figure
         * (no guest saw it) keeps 2.5 s. */
        ck_assert_int_eq(reconf_figures_record(&list, PF, 0, &vm2, 1), 0);
        s = predictions(&f, reconf_figures_get(list, PF));
        ck_assert_str_eq(s, "5200/recent 5200/recent 5000/recent");
        free(s);

        /* A domain measured again replaces its figure: vm1's 1.8 s is
         * the longest now. */
        vm2.unplug_usec = 700000;
        ck_assert_int_eq(reconf_figures_record(&list, PF, 1000000, &vm2, 1), 0);
        s = predictions(&f, reconf_figures_get(list, PF));
        ck_assert_str_eq(s, "3400/recent 3400/recent 3200/recent");
        free(s);

        list = reconf_figures_free(list);
        ck_assert_ptr_null(list);
        svff_reconf_plan_free(f.plan);
}
END_TEST

START_TEST(test_offline_not_predicted) {
        struct reconf_figures *list = NULL;
        struct reconf_domain_figure vm1 = { .uuid = U1, .unplug_usec = 900000, .reattach_usec = 300000 };
        struct fixture f;
        _cleanup_free_ char *s = NULL;

        fixture_init(&f);
        ck_assert_int_eq(reconf_figures_record(&list, PF, 2500000, &vm1, 1), 0);
        f.guests[2].running = false;
        /* vm2 is shut off: no guest of it sees the reconf, nor waits. */
        s = predictions(&f, reconf_figures_get(list, PF));
        ck_assert_str_eq(s, "4900/recent 4900/recent 0/model");
        reconf_figures_free(list);
        svff_reconf_plan_free(f.plan);
}
END_TEST

static Suite *suite(void) {
        Suite *s = suite_create("reconf-predict");
        TCase *tc = tcase_create("core");

        tcase_add_test(tc, test_model_until_measured);
        tcase_add_test(tc, test_agent);
        tcase_add_test(tc, test_recent_figures);
        tcase_add_test(tc, test_offline_not_predicted);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? 1 : 0;
}

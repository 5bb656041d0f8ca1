/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "reconf.h"

#define PF "0000:01:00.0"

static struct svff_reconf_item item(const char *vf, unsigned index, const char *domain, const char *uuid,
                                    enum svff_assign_state state) {
        struct svff_reconf_item it = { .index = index };

        snprintf(it.vf, sizeof(it.vf), "%s", vf);
        snprintf(it.a.domain, sizeof(it.a.domain), "%s", domain);
        snprintf(it.a.uuid, sizeof(it.a.uuid), "%s", uuid);
        snprintf(it.a.guest_address, sizeof(it.a.guest_address), "0000:0%u:00.0", index + 5);
        snprintf(it.a.alias, sizeof(it.a.alias), "ua-svff-%u", index);
        it.a.config = true;
        it.a.state = state;
        if (state == SVFF_ASSIGN_PAUSED)
                it.a.pause_mode = SVFF_PAUSE_DETACH;
        return it;
}

#define U1 "11111111-1111-1111-1111-111111111111"
#define U2 "22222222-2222-2222-2222-222222222222"

static struct svff_reconf_plan *plan(const struct svff_reconf_item *items, size_t n, unsigned from, unsigned to,
                                     enum svff_reconf_mode mode, bool force) {
        struct svff_reconf_input in = { .pf = PF, .numvfs = from, .driver = "vfio-pci", .items = items, .n_items = n };
        struct svff_reconf_plan *p = NULL;

        ck_assert_int_eq(svff_reconf_plan_new(&in, to, mode, force, &p), 0);
        ck_assert_ptr_nonnull(p);
        return p;
}

/* "phase/action[/vf]" per step, joined by spaces. */
static char *steps_string(const struct svff_reconf_plan *p) {
        char *s = strdup("");

        for (size_t i = 0; i < p->n_steps; i++) {
                const struct svff_reconf_step *st = &p->steps[i];
                char *n = NULL;

                ck_assert_int_ge(asprintf(&n, "%s%s%s/%s", s, i ? " " : "", svff_reconf_phase_to_string(st->phase),
                                          svff_reconf_action_to_string(st->action)), 0);
                free(s);
                s = n;
                if (st->item >= 0) {
                        ck_assert_int_ge(asprintf(&n, "%s/%u", s, p->items[st->item].index), 0);
                        free(s);
                        s = n;
                }
                if (st->action == SVFF_RECONF_DO_NUMVFS || st->action == SVFF_RECONF_DO_PROVISION ||
                    st->phase == SVFF_RECONF_PHASE_RELEASE) {
                        ck_assert_int_ge(asprintf(&n, "%s=%u", s, st->numvfs), 0);
                        free(s);
                        s = n;
                }
        }
        return s;
}

/* p through JSON and back gives the same JSON, which it returns. */
static char *roundtrip(const struct svff_reconf_plan *p) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *q = NULL;
        _cleanup_(json_object_putp) struct json_object *j = svff_reconf_plan_to_json(p), *k = NULL;
        _cleanup_free_ char *b = NULL;
        char *a = NULL;

        ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
        k = svff_reconf_plan_to_json(q);
        ck_assert_int_eq(svff_json_format(j, JSON_C_TO_STRING_PLAIN, &a, NULL), 0);
        ck_assert_int_eq(svff_json_format(k, JSON_C_TO_STRING_PLAIN, &b, NULL), 0);
        ck_assert_str_eq(a, b);
        return a;
}

/* What svff_reconf_plan_print() prints for p. */
static char *printed(const struct svff_reconf_plan *p) {
        char *buf = NULL;
        size_t n = 0;
        FILE *f = open_memstream(&buf, &n);

        ck_assert_ptr_nonnull(f);
        svff_reconf_plan_print(p, f);
        fclose(f);
        return buf;
}

START_TEST(test_up_keeps_everything) {
        struct svff_reconf_item in[] = {
                item("0000:01:00.5", 1, "vm2", U2, SVFF_ASSIGN_ATTACHED),
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan(in, 2, 2, 4, SVFF_RECONF_PAUSE, false);
        _cleanup_free_ char *s = steps_string(p);

        ck_assert(svff_reconf_plan_ok(p));
        ck_assert_uint_eq(p->n_items, 2);
        ck_assert_str_eq(p->items[0].vf, "0000:01:00.4");  /* sorted by index */
        ck_assert_int_eq(p->items[0].fate, SVFF_RECONF_SURVIVES);
        ck_assert_int_eq(p->items[1].fate, SVFF_RECONF_SURVIVES);
        ck_assert_str_eq(s, "quiesce/pause/0 quiesce/pause/1 numvfs/numvfs=0 numvfs/numvfs=4 bind/bind "
                            "restore/unpause/0 restore/unpause/1 commit/commit");
}
END_TEST

START_TEST(test_down_refused_without_force) {
        struct svff_reconf_item in[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
                item("0000:01:00.7", 3, "vm2", U2, SVFF_ASSIGN_ATTACHED),
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan(in, 2, 4, 2, SVFF_RECONF_PAUSE, false);

        ck_assert(!svff_reconf_plan_ok(p));
        ck_assert_uint_eq(p->n_refused, 1);
        ck_assert_int_eq(p->items[0].fate, SVFF_RECONF_SURVIVES);
        ck_assert_int_eq(p->items[1].fate, SVFF_RECONF_REFUSED);
        ck_assert_uint_eq(p->n_steps, 0);
}
END_TEST

START_TEST(test_down_force_releases) {
        struct svff_reconf_item in[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
                item("0000:01:00.7", 3, "vm2", U2, SVFF_ASSIGN_ATTACHED),
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan(in, 2, 4, 2, SVFF_RECONF_DETACH, true);
        _cleanup_free_ char *s = steps_string(p);

        ck_assert(svff_reconf_plan_ok(p));
        ck_assert_uint_eq(p->n_released, 1);
        ck_assert_int_eq(p->items[1].fate, SVFF_RECONF_RELEASED);
        ck_assert_str_eq(s, "quiesce/detach/0 quiesce/release/3 numvfs/numvfs=0 numvfs/numvfs=2 bind/bind "
                            "restore/reattach/0 restore/forget/3 commit/commit");
}
END_TEST

START_TEST(test_to_zero_and_from_zero) {
        struct svff_reconf_item in[] = { item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED) };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan(in, 1, 4, 0, SVFF_RECONF_PAUSE, true);
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *q = plan(NULL, 0, 0, 3, SVFF_RECONF_PAUSE, false);
        _cleanup_free_ char *s = steps_string(p), *t = steps_string(q);

        ck_assert_str_eq(s, "quiesce/release/0 numvfs/numvfs=0 restore/forget/0 commit/commit");
        ck_assert_str_eq(t, "numvfs/numvfs=3 bind/bind commit/commit");
}
END_TEST

START_TEST(test_paused_and_detaching) {
        struct svff_reconf_item in[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_PAUSED),
                item("0000:01:00.5", 1, "vm2", U2, SVFF_ASSIGN_ATTACHED),
        };
        struct svff_reconf_item blk[] = { item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_DETACHING) };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan(in, 2, 2, 2, SVFF_RECONF_PAUSE, false);
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *b = plan(blk, 1, 2, 2, SVFF_RECONF_PAUSE, true);
        _cleanup_free_ char *s = steps_string(p);

        /* A paused VF keeps its reservation; nothing to do for it. */
        ck_assert_str_eq(s, "quiesce/pause/1 numvfs/numvfs=0 numvfs/numvfs=2 bind/bind restore/unpause/1 commit/commit");
        /* --force does not override a guest that holds the VF. */
        ck_assert(!svff_reconf_plan_ok(b));
        ck_assert_uint_eq(b->n_blocked, 1);
}
END_TEST

START_TEST(test_json_roundtrip) {
        struct svff_reconf_item in[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
                item("0000:01:00.6", 2, "vm1", U1, SVFF_ASSIGN_PAUSED),
                item("0000:01:00.7", 3, "vm2", U2, SVFF_ASSIGN_ATTACHED),
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *q = NULL;
        _cleanup_(json_object_putp) struct json_object *j = NULL, *k = NULL;
        _cleanup_free_ char *a = NULL, *b = NULL;

        /* A failover pair goes through the journal with its assignment. */
        in[0].a.failover = (struct svff_failover) { .standby = "ua-net0", .mac = "52:54:00:ab:cd:ef" };
        p = plan(in, 3, 4, 3, SVFF_RECONF_DETACH, true);
        j = svff_reconf_plan_to_json(p);
        ck_assert_ptr_nonnull(j);
        ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
        k = svff_reconf_plan_to_json(q);
        ck_assert_int_eq(svff_json_format(j, JSON_C_TO_STRING_PLAIN, &a, NULL), 0);
        ck_assert_int_eq(svff_json_format(k, JSON_C_TO_STRING_PLAIN, &b, NULL), 0);
        ck_assert_str_eq(a, b);
        ck_assert_uint_eq(q->n_steps, p->n_steps);
        ck_assert_str_eq(q->items[1].a.guest_address, "0000:07:00.0");
        ck_assert_int_eq(q->items[1].a.pause_mode, SVFF_PAUSE_DETACH);
        ck_assert_str_eq(q->items[0].a.failover.standby, "ua-net0");
        ck_assert_str_eq(q->items[0].a.failover.mac, "52:54:00:ab:cd:ef");
        ck_assert_str_eq(q->items[1].a.failover.standby, "");
        ck_assert(strstr(a, "\"action\":\"release\",\"vf\":\"0000:01:00.7\""));
}
END_TEST

START_TEST(test_json_bad) {
        static const char *const bad[] = {
                "[]",
                "{}",
                "{\"pf\":\"0000:01:00.0\",\"from\":1,\"to\":1,\"mode\":\"sideways\",\"force\":false,"
                "\"driver\":\"vfio-pci\",\"assignments\":[]}",
                "{\"pf\":\"0000:01:00.0\",\"from\":1,\"to\":1,\"mode\":\"pause\",\"force\":false,"
                "\"driver\":\"../x\",\"assignments\":[]}",
                "{\"pf\":\"0000:01:00.0\",\"from\":1,\"to\":1,\"mode\":\"pause\",\"force\":false,"
                "\"driver\":\"vfio-pci\",\"assignments\":[{\"vf\":\"x\"}]}",
        };

        for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                _cleanup_(json_object_putp) struct json_object *o = json_tokener_parse(bad[i]);
                struct svff_reconf_plan *p = NULL;

                ck_assert_ptr_nonnull(o);
                ck_assert_int_eq(svff_reconf_plan_from_json(o, &p), -EBADMSG);
                ck_assert_ptr_null(p);
        }
}
END_TEST

START_TEST(test_bad_input) {
        struct svff_reconf_item dup[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
                item("0000:01:00.5", 0, "vm2", U2, SVFF_ASSIGN_ATTACHED),
        };
        struct svff_reconf_input in = { .pf = "nope", .numvfs = 1, .driver = "vfio-pci" };
        struct svff_reconf_plan *p = NULL;

        ck_assert_int_eq(svff_reconf_plan_new(&in, 1, SVFF_RECONF_PAUSE, false, &p), -EINVAL);
        in.pf = PF;
        in.driver = "a/b";
        ck_assert_int_eq(svff_reconf_plan_new(&in, 1, SVFF_RECONF_PAUSE, false, &p), -EINVAL);
        in.driver = "vfio-pci";
        in.items = dup;
        in.n_items = 2;
        ck_assert_int_eq(svff_reconf_plan_new(&in, 1, SVFF_RECONF_PAUSE, false, &p), -EINVAL);
        ck_assert_ptr_null(p);
}
END_TEST

START_TEST(test_print) {
        struct svff_reconf_item in[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
                item("0000:01:00.7", 3, "vm2", U2, SVFF_ASSIGN_ATTACHED),
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = plan(in, 2, 4, 2, SVFF_RECONF_PAUSE, false);
        char *buf = printed(p);

        ck_assert(strstr(buf, "REFUSED"));
        ck_assert(strstr(buf, "Not executable"));
        free(buf);
}
END_TEST

START_TEST(test_reprogram_and_provision) {
        /* The plan names every step the run takes: the reprogram's PF
         * steps between the two writes, and a classed PF's provision of
         * each new VF before any is bound. */
        struct svff_reconf_item in[] = {
                item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED),
        };
        _cleanup_(json_object_putp) struct json_object *ids = json_tokener_parse("[\"10ee:903f\",\"10ee:913f\"]");
        struct svff_reconf_input input = {
                .pf = PF, .numvfs = 2, .driver = "vfio-pci", .items = in, .n_items = 1, .provision = true,
                .image = "good.bit", .ids = ids,
        };
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *q = NULL;
        _cleanup_(json_object_putp) struct json_object *j = NULL, *k = NULL, *old = NULL;
        _cleanup_free_ char *s = NULL, *a = NULL, *b = NULL, *buf = NULL;

        ck_assert_int_eq(svff_reconf_plan_new(&input, 3, SVFF_RECONF_PAUSE, false, &p), 0);
        s = steps_string(p);
        ck_assert_str_eq(s, "quiesce/pause/0 numvfs/numvfs=0 reprogram/remove_pf reprogram/flash reprogram/rescan "
                            "reprogram/check_identity reprogram/bind_pf numvfs/numvfs=3 provision/provision=0 "
                            "provision/provision=1 provision/provision=2 bind/bind restore/unpause/0 commit/commit");

        /* Through the journal and back, as a recovery reads it. */
        j = svff_reconf_plan_to_json(p);
        ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
        k = svff_reconf_plan_to_json(q);
        ck_assert_int_eq(svff_json_format(j, JSON_C_TO_STRING_PLAIN, &a, NULL), 0);
        ck_assert_int_eq(svff_json_format(k, JSON_C_TO_STRING_PLAIN, &b, NULL), 0);
        ck_assert_str_eq(a, b);
        ck_assert(strstr(a, "{\"phase\":\"provision\",\"action\":\"provision\",\"index\":2}"));
        ck_assert(strstr(a, "\"image\":\"good.bit\",\"ids\":[\"10ee:903f\",\"10ee:913f\"]"));

        /* A plan journaled before these were kept: a plain reconf's
         * steps, until the run says it reprograms. */
        old = svff_json_copy(j);
        json_object_object_del(old, "provision");
        json_object_object_del(old, "image");
        json_object_object_del(old, "ids");
        svff_reconf_plan_free(TAKE_PTR(q));
        ck_assert_int_eq(svff_reconf_plan_from_json(old, &q), 0);
        free(s);
        s = steps_string(q);
        ck_assert_str_eq(s, "quiesce/pause/0 numvfs/numvfs=0 numvfs/numvfs=3 bind/bind restore/unpause/0 "
                            "commit/commit");
        ck_assert_int_eq(svff_reconf_plan_set_reprogram(q, "good.bit", ids), 0);
        ck_assert_uint_eq(q->n_steps, p->n_steps - 3);
        ck_assert_int_eq(svff_reconf_plan_set_provision(q, true), 0);
        ck_assert_uint_eq(q->n_steps, p->n_steps);

        /* IDs that are not vendor:device, and an empty image, are no plan. */
        json_object_object_add(old, "image", json_object_new_string("good.bit"));
        json_object_object_add(old, "ids", json_tokener_parse("[\"10ee\"]"));
        svff_reconf_plan_free(TAKE_PTR(q));
        ck_assert_int_eq(svff_reconf_plan_from_json(old, &q), -EBADMSG);
        json_object_object_add(old, "image", json_object_new_string(""));
        json_object_object_add(old, "ids", NULL);
        ck_assert_int_eq(svff_reconf_plan_from_json(old, &q), -EBADMSG);
        ck_assert_ptr_null(q);

        /* The operator reads the same steps, the provisions on one line. */
        buf = printed(p);
        ck_assert(strstr(buf, "Reprogram PF 0000:01:00.0 with 'good.bit': 2 -> 3 VFs"));
        ck_assert(strstr(buf, "   3. [reprogram] remove PF 0000:01:00.0 from the bus\n"));
        ck_assert(strstr(buf, "   4. [reprogram] run the flash hook on 'good.bit'\n"));
        ck_assert(strstr(buf, "   6. [reprogram] check the PF is one of 10ee:903f 10ee:913f with at least 3 VFs\n"));
        ck_assert(strstr(buf, "  9-11. [provision] set up VFs 0-2 with the PF's device class"));
        ck_assert(strstr(buf, "  12. [bind] bind the 3 VFs to vfio-pci\n"));
}
END_TEST

START_TEST(test_init) {
        /* An init's plan: the writes only when the count changes, every
         * VF's provision on a classed PF, the bind, the commit; never an
         * assignment's step. */
        struct svff_reconf_item in[] = { item("0000:01:00.4", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED) };
        struct svff_reconf_input input = { .pf = PF, .numvfs = 0, .driver = "vfio-pci", .items = in, .n_items = 1,
                                           .provision = true };
        static const struct { unsigned from, to; const char *steps; } cases[] = {
                { 0, 2, "numvfs/numvfs=2 provision/provision=0 provision/provision=1 bind/bind commit/commit" },
                { 2, 2, "provision/provision=0 provision/provision=1 bind/bind commit/commit" },
                { 4, 2, "numvfs/numvfs=0 numvfs/numvfs=2 provision/provision=0 provision/provision=1 bind/bind "
                        "commit/commit" },
                { 2, 0, "numvfs/numvfs=0 commit/commit" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL, *q = NULL;
                _cleanup_(json_object_putp) struct json_object *j = NULL;
                _cleanup_free_ char *s = NULL, *t = NULL;

                input.numvfs = cases[i].from;
                ck_assert_int_eq(svff_reconf_plan_new_init(&input, cases[i].to, &p), 0);
                ck_assert(p->init);
                ck_assert_uint_eq(p->n_items, 0);
                s = steps_string(p);
                ck_assert_str_eq(s, cases[i].steps);
                j = svff_reconf_plan_to_json(p);
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
                t = steps_string(q);
                ck_assert_str_eq(t, s);
        }
        /* An init flashes nothing. */
        input.image = "good.bit";
        {
                struct svff_reconf_plan *p = NULL;

                ck_assert_int_eq(svff_reconf_plan_new_init(&input, 2, &p), -EINVAL);
                ck_assert_ptr_null(p);
        }
}
END_TEST

START_TEST(test_release) {
        /* A release's plan: off its domain with --force, the record
         * dropped before the VF is touched, the class's state undone,
         * then the driver it had or the kernel's choice. */
        struct svff_reconf_item in[] = { item("0000:01:00.5", 1, "vm1", U1, SVFF_ASSIGN_ATTACHED) };
        static const struct {
                bool assigned, class_state;
                const char *driver, *steps;
        } cases[] = {
                { false, false, "ixgbevf", "commit/commit release/restore_driver=1" },
                { false, true, "", "commit/commit release/release_class=1 release/reprobe=1" },
                { true, true, "nvme", "quiesce/release/1 commit/commit release/release_class=1 "
                                      "release/restore_driver=1" },
        };
        /* One still detaching (its detach timed out) is released too:
         * the release detaches it again first. */
        {
                struct svff_reconf_item d = item("0000:01:00.5", 1, "vm1", U1, SVFF_ASSIGN_DETACHING);
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = &d,
                                                   .n_items = 1 };
                struct svff_reconf_release rel = { .vf = "0000:01:00.5", .index = 1 };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_free_ char *s = NULL;

                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), 0);
                s = steps_string(p);
                ck_assert_str_eq(s, "quiesce/release/1 commit/commit release/reprobe=1");
        }

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = in,
                                                   .n_items = cases[i].assigned };
                struct svff_reconf_release rel = { .vf = "0000:01:00.5", .index = 1,
                                                   .class_state = cases[i].class_state };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_free_ char *s = NULL, *a = NULL;

                snprintf(rel.driver, sizeof(rel.driver), "%s", cases[i].driver);
                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), 0);
                ck_assert_uint_eq(p->from, 4);
                ck_assert_uint_eq(p->to, 4);
                ck_assert(p->force == cases[i].assigned);
                ck_assert(svff_reconf_plan_ok(p));
                s = steps_string(p);
                ck_assert_str_eq(s, cases[i].steps);
                ck_assert(svff_reconf_plan_needs_libvirt(p) == cases[i].assigned);

                /* Through JSON and back, the steps with their VF. */
                a = roundtrip(p);
                ck_assert(strstr(a, "{\"phase\":\"release\",\"action\":"));
                ck_assert(strstr(a, "\"vf\":\"0000:01:00.5\",\"index\":1"));
                if (!*cases[i].driver)
                        ck_assert(strstr(a, "\"release\":{\"vf\":\"0000:01:00.5\",\"index\":1,\"driver\":null,"));
        }

        /* What is no release: another VF's assignment, a count change, a
         * flash, a driver that is no name. */
        {
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = in,
                                                   .n_items = 1 };
                struct svff_reconf_release rel = { .vf = "0000:01:00.4", .index = 0, .driver = "ixgbevf" };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_(json_object_putp) struct json_object *j = NULL;

                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), -EINVAL);
                input.image = "good.bit";
                input.n_items = 0;
                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), -EINVAL);
                input.image = NULL;
                snprintf(rel.driver, sizeof(rel.driver), "bad drv");
                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), -EINVAL);
                ck_assert_ptr_null(p);

                snprintf(rel.driver, sizeof(rel.driver), "ixgbevf");
                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), 0);
                j = svff_reconf_plan_to_json(p);
                svff_reconf_plan_free(TAKE_PTR(p));
                json_object_object_add(j, "to", json_object_new_int64(2));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                json_object_object_add(j, "to", json_object_new_int64(4));
                json_object_object_add(j, "image", json_object_new_string("good.bit"));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                json_object_object_del(j, "image");
                /* force says whether it releases an assignment */
                json_object_object_add(j, "force", json_object_new_boolean(true));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                json_object_object_add(j, "force", json_object_new_boolean(false));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), 0);
                svff_reconf_plan_free(TAKE_PTR(p));
                json_object_object_add(j, "mode", json_object_new_string("pause"));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                ck_assert_ptr_null(p);
        }

        /* The operator's words. */
        {
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = in,
                                                   .n_items = 1 };
                struct svff_reconf_release rel = { .vf = "0000:01:00.5", .index = 1, .class_state = true };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_free_ char *buf = NULL;

                ck_assert_int_eq(svff_reconf_plan_new_release(&input, &rel, &p), 0);
                buf = printed(p);
                ck_assert(strstr(buf, "Release VF 0000:01:00.5 (VF 1 of PF 0000:01:00.0, which keeps its 4 VFs): "
                                      "re-probed: the kernel's choice of driver.\n"));
                ck_assert(strstr(buf, "RELEASED (--force): detached for good, the VF stays\n"));
                ck_assert(strstr(buf, "   1. [quiesce] detach VF 0000:01:00.5 from domain 'vm1' for good (--force)\n"));
                ck_assert(strstr(buf, "   2. [commit] drop the VF's record; the operator owns PF 0000:01:00.0's count\n"));
                ck_assert(strstr(buf, "   3. [release] undo what the PF's device class set up on VF 1"));
                ck_assert(strstr(buf, "   4. [release] clear VF 0000:01:00.5's driver_override and re-probe it\n"));
                ck_assert(!strstr(buf, "Quiesce steps run in parallel"));
        }
}
END_TEST

START_TEST(test_change) {
        /* A change of one assignment: journaled first, the VF set up
         * before the domain gets it, handed back once it let it go. */
        static const struct {
                enum svff_reconf_change_kind kind;
                enum svff_assign_state state;
                enum svff_pause_mode mode;
                bool bind, class_state;
                const char *steps;
        } cases[] = {
                { SVFF_CHANGE_ATTACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, true, true,
                  "bind/bind/1 commit/journal/1 provision/provision/1=1 domain/attach/1 commit/commit/1" },
                { SVFF_CHANGE_ATTACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, false,
                  "commit/journal/1 domain/attach/1 commit/commit/1" },
                { SVFF_CHANGE_DETACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, true,
                  "commit/journal/1 domain/detach/1 release/release_class/1=1 provision/provision/1=1 "
                  "commit/commit/1" },
                { SVFF_CHANGE_DETACH, SVFF_ASSIGN_DETACHING, SVFF_PAUSE_NONE, false, false,
                  "commit/journal/1 domain/detach/1 commit/commit/1" },
                { SVFF_CHANGE_PAUSE, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, true,
                  "commit/journal/1 domain/pause/1 commit/commit/1" },
                { SVFF_CHANGE_UNPAUSE, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH, true, true,
                  "commit/journal/1 provision/provision/1=1 bind/bind/1 domain/reattach/1 commit/commit/1" },
                { SVFF_CHANGE_UNPAUSE, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_NATIVE, false, false,
                  "commit/journal/1 domain/unpause/1 commit/commit/1" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct svff_reconf_item it = item("0000:01:00.5", 1, "vm1", U1, cases[i].state);
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = &it,
                                                   .n_items = 1 };
                struct svff_reconf_change c = { cases[i].kind, cases[i].bind, cases[i].class_state };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_free_ char *s = NULL, *a = NULL;

                it.a.pause_mode = cases[i].mode;
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), 0);
                ck_assert_uint_eq(p->from, 4);
                ck_assert_uint_eq(p->to, 4);
                s = steps_string(p);
                ck_assert_str_eq(s, cases[i].steps);
                ck_assert(svff_reconf_plan_needs_libvirt(p));
                a = roundtrip(p);
                ck_assert(strstr(a, "\"change\":{\"kind\":\""));
        }

        /* A pause of a paused assignment, an unpause of an attached one,
         * two assignments, a bind on a detach: no change plan. */
        {
                struct svff_reconf_item its[] = {
                        item("0000:01:00.5", 1, "vm1", U1, SVFF_ASSIGN_PAUSED),
                        item("0000:01:00.6", 2, "vm2", U2, SVFF_ASSIGN_ATTACHED),
                };
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = its,
                                                   .n_items = 1 };
                struct svff_reconf_change c = { SVFF_CHANGE_PAUSE, false, false };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_(json_object_putp) struct json_object *j = NULL;

                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), -EINVAL);
                input.items = &its[1];
                c.kind = SVFF_CHANGE_UNPAUSE;
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), -EINVAL);
                input.items = its;
                input.n_items = 2;
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), -EINVAL);
                input.items = &its[1];
                input.n_items = 1;
                c = (struct svff_reconf_change) { SVFF_CHANGE_DETACH, true, false };
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), -EINVAL);
                ck_assert_ptr_null(p);

                c.bind = false;
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), 0);
                j = svff_reconf_plan_to_json(p);
                svff_reconf_plan_free(TAKE_PTR(p));
                json_object_object_add(j, "change", json_tokener_parse("{\"kind\":\"pause\",\"bind\":false,"
                                                                       "\"class_state\":false}"));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                json_object_object_add(j, "change", json_tokener_parse("{\"kind\":\"hold\",\"bind\":false,"
                                                                       "\"class_state\":false}"));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                json_object_object_add(j, "change", json_tokener_parse("{\"kind\":\"detach\",\"bind\":false,"
                                                                       "\"class_state\":false}"));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), 0);
                svff_reconf_plan_free(TAKE_PTR(p));
                json_object_object_add(j, "force", json_object_new_boolean(true));
                ck_assert_int_eq(svff_reconf_plan_from_json(j, &p), -EBADMSG);
                ck_assert_ptr_null(p);
        }

        /* The operator's words. */
        {
                struct svff_reconf_item it = item("0000:01:00.5", 1, "vm1", U1, SVFF_ASSIGN_ATTACHED);
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = &it,
                                                   .n_items = 1 };
                struct svff_reconf_change c = { SVFF_CHANGE_DETACH, false, true };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_free_ char *buf = NULL;

                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), 0);
                /* What a step may take, as the daemon sets it: printed,
                 * and read back with the plan. */
                svff_reconf_plan_set_deadline(p, 1, 5000);
                svff_reconf_plan_set_deadline(p, 99, 1);
                {
                        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *q = NULL;
                        _cleanup_(json_object_putp) struct json_object *j = svff_reconf_plan_to_json(p);

                        ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
                        ck_assert_uint_eq(q->steps[1].deadline_msec, 5000);
                        ck_assert_uint_eq(q->steps[0].deadline_msec, 0);
                        /* steps that are not the plan's: none read, also
                         * when only a later one differs */
                        json_object_object_add(json_object_array_get_idx(json_object_object_get(j, "steps"), 4),
                                               "action", json_object_new_string("journal"));
                        svff_reconf_plan_free(TAKE_PTR(q));
                        ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
                        ck_assert_uint_eq(q->steps[1].deadline_msec, 0);
                        json_object_array_del_idx(json_object_object_get(j, "steps"), 0, 1);
                        svff_reconf_plan_free(TAKE_PTR(q));
                        ck_assert_int_eq(svff_reconf_plan_from_json(j, &q), 0);
                        ck_assert_uint_eq(q->steps[1].deadline_msec, 0);
                }
                buf = printed(p);
                ck_assert(strstr(buf, "and wait for the guest to let it go (deadline 5 s)\n"));
                ck_assert(strstr(buf, "Detach VF 0000:01:00.5 (VF 1 of PF 0000:01:00.0) from domain 'vm1' (" U1
                                      ") for good: its persistent definition, and the assignment ends.\n"));
                ck_assert(strstr(buf, "   1. [commit] journal the detach of VF 0000:01:00.5 in the store"));
                ck_assert(strstr(buf, "   2. [domain] detach VF 0000:01:00.5 from domain 'vm1' and wait"));
                ck_assert(strstr(buf, "   3. [release] undo what the PF's device class set up on VF 1"));
                ck_assert(strstr(buf, "   4. [provision] set up VF 1 with the policy's settings only"));
                ck_assert(strstr(buf, "   5. [commit] record the assignment as it is now: none\n"));
                ck_assert(!strstr(buf, "Assignments"));
        }

        /* A native unpause binds nothing; a detach of a VF paused by a
         * detach only drops its reservation. */
        {
                struct svff_reconf_item it = item("0000:01:00.5", 1, "vm1", U1, SVFF_ASSIGN_PAUSED);
                struct svff_reconf_input input = { .pf = PF, .numvfs = 4, .driver = "vfio-pci", .items = &it,
                                                   .n_items = 1 };
                struct svff_reconf_change c = { SVFF_CHANGE_UNPAUSE, true, false };
                _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
                _cleanup_free_ char *buf = NULL;

                it.a.pause_mode = SVFF_PAUSE_NATIVE;
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), -EINVAL);
                it.a.pause_mode = SVFF_PAUSE_DETACH;
                it.a.live = it.a.config = false;
                c = (struct svff_reconf_change) { SVFF_CHANGE_DETACH, false, false };
                ck_assert_int_eq(svff_reconf_plan_new_change(&input, &c, &p), 0);
                buf = printed(p);
                ck_assert(strstr(buf, "for good: its reserved guest address (it is paused, out of the domain), and "
                                      "the assignment ends.\n"));
                ck_assert(strstr(buf, "   2. [domain] drop VF 0000:01:00.5's reserved guest address in domain 'vm1'"));
        }
}
END_TEST

/* "Llive Cconfig Fconfig-first Aattach-live Battach-config U(unpause)"
 * of a restore, e.g. "L C F A B" or "U". */
static const char *restore_string(const struct svff_reconf_item *it, bool active, enum svff_pause_mode mode,
                                  bool moved) {
        static char buf[32];
        struct svff_reconf_restore r;

        svff_reconf_restore_of(it, active, mode, moved, &r);
        snprintf(buf, sizeof(buf), "%s%s%s%s%s%s", r.move_out_live ? "L " : "", r.move_out_config ? "C " : "",
                 r.attach_config_first ? "F " : "", r.attach_live ? "A " : "", r.attach_config ? "B " : "",
                 r.unpause ? "U " : "");
        return buf;
}

START_TEST(test_restore_moved) {
        /* A VF that came back at another host address (a new offset or
         * stride): no definition keeps the old address, and a native
         * pause is not resumed there. */
        struct svff_reconf_item it = item("0000:01:00.1", 0, "vm1", U1, SVFF_ASSIGN_ATTACHED);

        it.a.live = true;
        /* Not moved, running: the live device only (the persistent
         * definition keeps it), or the native unpause. */
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_DETACH, false), "A ");
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_NATIVE, false), "U ");
        /* Moved, running: out of both definitions at the old address,
         * then in the persistent one first and the live one; a native
         * pause the same way, not unpaused. */
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_DETACH, true), "L C F A B ");
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_NATIVE, true), "L C F A B ");
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_NONE, true), "L C F A B ");
        /* A domain that is not running: its persistent definition. */
        ck_assert_str_eq(restore_string(&it, false, SVFF_PAUSE_DETACH, false), "B ");
        ck_assert_str_eq(restore_string(&it, false, SVFF_PAUSE_DETACH, true), "C B ");
        /* Live only, running: nothing persistent to move. */
        it.a.config = false;
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_DETACH, true), "L A ");
        /* Config only in a running domain. */
        it.a.config = true;
        it.a.live = false;
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_DETACH, false), "B ");
        ck_assert_str_eq(restore_string(&it, true, SVFF_PAUSE_DETACH, true), "C B ");
}
END_TEST

static Suite *reconf_suite(void) {
        Suite *s = suite_create("reconf");
        TCase *tc = tcase_create("plan");

        tcase_add_test(tc, test_up_keeps_everything);
        tcase_add_test(tc, test_down_refused_without_force);
        tcase_add_test(tc, test_down_force_releases);
        tcase_add_test(tc, test_to_zero_and_from_zero);
        tcase_add_test(tc, test_paused_and_detaching);
        tcase_add_test(tc, test_json_roundtrip);
        tcase_add_test(tc, test_json_bad);
        tcase_add_test(tc, test_bad_input);
        tcase_add_test(tc, test_print);
        tcase_add_test(tc, test_reprogram_and_provision);
        tcase_add_test(tc, test_init);
        tcase_add_test(tc, test_release);
        tcase_add_test(tc, test_change);
        tcase_add_test(tc, test_restore_moved);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(reconf_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

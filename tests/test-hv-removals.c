/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <check.h>
#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include "hv-removals.h"

#define U1 "8f7c1a52-0d5e-4a53-9e0e-1f2b3c4d5e6f"
#define U2 "0b9a8c7d-6e5f-4a3b-8c2d-1e0f9a8b7c6d"

static struct svff_hv_removals *r;

static void setup(void) {
        ck_assert_int_eq(svff_hv_removals_new(&r), 0);
}

static void teardown(void) {
        r = svff_hv_removals_free(r);
}

static usec_t in_msec(unsigned ms) {
        return svff_now_usec() + ms * 1000ULL;
}

START_TEST(test_noted_before_wait) {
        uint64_t seq = svff_hv_removals_seq(r);

        svff_hv_removals_note(r, U1, "ua-svff-0000-01-00-1");
        ck_assert_int_eq(svff_hv_removals_wait(r, U1, "ua-svff-0000-01-00-1", &seq, in_msec(1000)), 1);
        ck_assert_uint_eq(seq, svff_hv_removals_seq(r));
        /* Seen once: the same removal does not end a second wait. */
        ck_assert_int_eq(svff_hv_removals_wait(r, U1, "ua-svff-0000-01-00-1", &seq, in_msec(20)), 0);
}
END_TEST

START_TEST(test_other_devices_do_not_end_the_wait) {
        uint64_t seq = svff_hv_removals_seq(r);
        usec_t t0 = svff_now_usec();

        svff_hv_removals_note(r, U2, "ua-svff-0000-01-00-1");   /* same alias, other domain */
        svff_hv_removals_note(r, U1, "ua-svff-0000-01-00-2");   /* same domain, other alias */
        ck_assert_int_eq(svff_hv_removals_wait(r, U1, "ua-svff-0000-01-00-1", &seq, in_msec(50)), 0);
        ck_assert_uint_ge(svff_now_usec() - t0, 50 * 1000ULL);
}
END_TEST

START_TEST(test_removals_before_seq_do_not_count) {
        uint64_t seq;

        svff_hv_removals_note(r, U1, "ua-a");
        seq = svff_hv_removals_seq(r);
        ck_assert_int_eq(svff_hv_removals_wait(r, U1, "ua-a", &seq, in_msec(20)), 0);
}
END_TEST

START_TEST(test_overflow_wakes_the_waiter) {
        uint64_t seq = svff_hv_removals_seq(r);

        /* More removals than are kept: the waiter's may have been among
         * those dropped, so it is told to check for itself. */
        for (unsigned i = 0; i <= SVFF_HV_REMOVALS_KEPT; i++)
                svff_hv_removals_note(r, U2, "ua-other");
        ck_assert_int_eq(svff_hv_removals_wait(r, U1, "ua-a", &seq, in_msec(1000)), -ESTALE);
        ck_assert_uint_eq(seq, svff_hv_removals_seq(r));
}
END_TEST

static void *note_later(void *userdata) {
        usleep(50 * 1000);
        svff_hv_removals_note(r, U2, "ua-unrelated");
        usleep(50 * 1000);
        svff_hv_removals_note(r, U1, userdata);
        return NULL;
}

START_TEST(test_woken_by_another_thread) {
        uint64_t seq = svff_hv_removals_seq(r);
        usec_t t0 = svff_now_usec();
        pthread_t t;

        ck_assert_int_eq(pthread_create(&t, NULL, note_later, (void *) "ua-b"), 0);
        ck_assert_int_eq(svff_hv_removals_wait(r, U1, "ua-b", &seq, in_msec(10000)), 1);
        /* Woken by the event, not by the deadline. */
        ck_assert_uint_lt(svff_now_usec() - t0, 5000 * 1000ULL);
        ck_assert_uint_ge(svff_now_usec() - t0, 100 * 1000ULL);
        pthread_join(t, NULL);
}
END_TEST

int main(void) {
        Suite *s = suite_create("hv-removals");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_noted_before_wait);
        tcase_add_test(tc, test_other_devices_do_not_end_the_wait);
        tcase_add_test(tc, test_removals_before_seq_do_not_count);
        tcase_add_test(tc, test_overflow_wakes_the_waiter);
        tcase_add_test(tc, test_woken_by_another_thread);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"

START_TEST(test_first_wins) {
        struct svff_error e = SVFF_ERROR_NULL;

        ck_assert(!svff_error_is_set(&e));
        ck_assert_str_eq(svff_error_message(&e), "");
        ck_assert_int_eq(svff_error_set(&e, -ERANGE, "PF '%s' supports %u VFs", "0000:03:00.0", 4), -ERANGE);
        ck_assert(svff_error_is_set(&e));
        ck_assert_int_eq(e.code, -ERANGE);
        ck_assert_str_eq(svff_error_message(&e), "PF '0000:03:00.0' supports 4 VFs");

        /* The outer layer's message does not replace the inner one, but the
         * return value is still the outer one's r. */
        ck_assert_int_eq(svff_error_set(&e, -EIO, "outer"), -EIO);
        ck_assert_int_eq(e.code, -ERANGE);
        ck_assert_str_eq(svff_error_message(&e), "PF '0000:03:00.0' supports 4 VFs");

        svff_error_free(&e);
        ck_assert(!svff_error_is_set(&e));
        ck_assert_ptr_null(e.message);
        ck_assert_int_eq(svff_error_set(&e, -EIO, "again"), -EIO);
        ck_assert_str_eq(svff_error_message(&e), "again");
        svff_error_free(&e);
}
END_TEST

START_TEST(test_errno_suffix) {
        struct svff_error e = SVFF_ERROR_NULL;

        errno = 0;
        ck_assert_int_eq(svff_error_set_errno(&e, -ENOENT, "Cannot open '%s'", "x"), -ENOENT);
        ck_assert_str_eq(svff_error_message(&e), "Cannot open 'x': No such file or directory");
        svff_error_free(&e);
}
END_TEST

START_TEST(test_null_and_code_only) {
        struct svff_error e = { .code = -EBUSY };

        ck_assert_int_eq(svff_error_set(NULL, -EINVAL, "nobody listens"), -EINVAL);
        ck_assert(!svff_error_is_set(NULL));
        ck_assert_str_eq(svff_error_message(NULL), "");
        svff_error_free(NULL);

        ck_assert_str_eq(svff_error_message(&e), strerror(EBUSY));
        svff_error_free(&e);
        ck_assert_int_eq(e.code, 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("error");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_test(tc, test_first_wins);
        tcase_add_test(tc, test_errno_suffix);
        tcase_add_test(tc, test_null_and_code_only);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

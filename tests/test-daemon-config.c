/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* daemon/config.c: defaults, a valid file, and each kind of bad file
 * refused with the file, the key (or line) named and the running
 * settings left untouched. */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <unistd.h>

#include "daemon/config.h"
#include "daemon/log.h"

static char dir[] = "/tmp/svff-config-test.XXXXXX";
static char path[256];

static void write_file(const char *text) {
        FILE *f = fopen(path, "we");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(path, sizeof(path), "%s/svff.conf", dir);
}

static void teardown(void) {
        unlink(path);
        rmdir(dir);
        strcpy(dir, "/tmp/svff-config-test.XXXXXX");
}

START_TEST(test_defaults) {
        struct config c;

        ck_assert_int_eq(config_init(&c), 0);
        ck_assert_str_eq(c.sysfs_root, "/sys");
        ck_assert_str_eq(c.vf_driver, "vfio-pci");
        ck_assert_ptr_null(c.admin_group);
        ck_assert_int_eq(c.log_level, LOG_INFO);
        ck_assert_uint_eq(c.limits.max_connections, 1024);
        config_done(&c);
}
END_TEST

START_TEST(test_valid) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct config c;

        write_file("{ \"state-dir\": \"/srv/svff\", \"admin-group\": \"svff\", \"log-level\": \"debug\",\n"
                   "  \"vf-driver\": \"vfio-pci\", \"numvfs-timeout-sec\": 5, \"workers\": 3,\n"
                   "  \"limits\": { \"max-connections\": 10, \"idle-timeout-sec\": 2 } }\n\n");
        ck_assert_int_eq(config_init(&c), 0);
        ck_assert_int_eq(config_load_file(&c, path, &err), 0);
        ck_assert_str_eq(c.state_dir, "/srv/svff");
        ck_assert_str_eq(c.admin_group, "svff");
        ck_assert_int_eq(c.log_level, LOG_DEBUG);
        ck_assert_uint_eq(c.numvfs_timeout_usec, 5000000);
        ck_assert_uint_eq(c.workers, 3);
        ck_assert_uint_eq(c.limits.max_connections, 10);
        ck_assert_uint_eq(c.limits.idle_timeout_usec, 2000000);
        ck_assert_str_eq(c.sysfs_root, "/sys");  /* untouched default */
        config_done(&c);
}
END_TEST

/* Each bad file: refused, message naming the file and what, cfg intact. */
static const struct {
        const char *text;
        const char *needle;
} bad[] = {
        { "{ \"sockett\": \"/run/x\" }", "unknown key 'sockett'" },
        { "{ \"limits\": { \"max-conections\": 3 } }", "unknown key 'limits.max-conections'" },
        { "{ \"workers\": \"two\" }", "'workers' must be an integer" },
        { "{ \"workers\": 0 }", "'workers' must be between 1 and 64" },
        { "{ \"workers\": 99999999999999999999999 }", "'workers' must be between" },
        { "{ \"limits\": { \"max-connections\": -1 } }", "'limits.max-connections' must be between" },
        { "{ \"log-level\": \"chatty\" }", "'log-level' must be one of" },
        { "{ \"socket\": \"\" }", "'socket' must be a non-empty string" },
        { "{ \"admin-group\": 7 }", "'admin-group' must be a non-empty string or null" },
        { "[ 1, 2 ]", "top level must be a JSON object" },
        { "{\n  \"workers\": 2,\n  \"socket\" \"/x\"\n}", ":3:" },
        { "{ \"workers\": 2 } trailing", "trailing text" },
        { "{ \"workers\": 2", "unexpected end of file" },
};

START_TEST(test_bad) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct config c;
        int r;

        write_file(bad[_i].text);
        ck_assert_int_eq(config_init(&c), 0);
        r = config_load_file(&c, path, &err);
        ck_assert_int_lt(r, 0);
        ck_assert_msg(strstr(svff_error_message(&err), path), "no file in '%s'", svff_error_message(&err));
        ck_assert_msg(strstr(svff_error_message(&err), bad[_i].needle), "'%s' lacks '%s'",
                      svff_error_message(&err), bad[_i].needle);
        ck_assert_uint_eq(c.workers, 2);
        ck_assert_str_eq(c.socket, SVFFD_SOCKET_DEFAULT);
        svff_error_free(&err);
        config_done(&c);
}
END_TEST

START_TEST(test_log_levels) {
        ck_assert_int_eq(log_level_from_string("debug"), LOG_DEBUG);
        ck_assert_int_eq(log_level_from_string("warn"), LOG_WARNING);
        ck_assert_int_eq(log_level_from_string("3"), LOG_ERR);
        /* an empty or partly numeric level is a mistake, not "emerg" */
        ck_assert_int_lt(log_level_from_string(""), 0);
        ck_assert_int_lt(log_level_from_string("3x"), 0);
        ck_assert_int_lt(log_level_from_string("8"), 0);
        ck_assert_int_lt(log_level_from_string("-1"), 0);
}
END_TEST

START_TEST(test_missing) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct config c;

        ck_assert_int_eq(config_init(&c), 0);
        ck_assert_int_eq(config_load_file(&c, "/nonexistent/svff.conf", &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "/nonexistent/svff.conf"));
        svff_error_free(&err);
        config_done(&c);
}
END_TEST

int main(void) {
        Suite *s = suite_create("daemon-config");
        TCase *tc = tcase_create("config");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_defaults);
        tcase_add_test(tc, test_valid);
        tcase_add_loop_test(tc, test_bad, 0, (int) (sizeof(bad) / sizeof(bad[0])));
        tcase_add_test(tc, test_missing);
        tcase_add_test(tc, test_log_levels);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

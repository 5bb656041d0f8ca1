/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* src/config-file.c: defaults, a valid file, drop-ins in lexical order,
 * PF policies and their matching, an empty file and /dev/null, and each
 * kind of bad file refused with the file, the key and the line named and
 * the running settings left untouched. */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <syslog.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>

#include "config-file.h"
#include "json-util.h"

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
        struct svff_config c;

        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_str_eq(c.sysfs_root, "/sys");
        ck_assert_str_eq(c.vf_driver, "vfio-pci");
        ck_assert_ptr_null(c.admin_group);
        ck_assert_int_eq(c.log_level, LOG_INFO);
        ck_assert_str_eq(c.device_pause_command, "x-svff-device-pause");
        /* A reconf's detach waits longer than a plain detach. */
        ck_assert_uint_eq(c.detach_timeout_usec, 10000000ULL);
        ck_assert_uint_eq(c.reconf_detach_timeout_usec, 30000000ULL);
        ck_assert_uint_eq(c.n_policies, 0);
        ck_assert_uint_eq(c.limits.max_connections, 1024);
        svff_config_done(&c);
}
END_TEST

START_TEST(test_valid) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;

        write_file("{ \"state_dir\": \"/srv/svff\", \"admin_group\": \"svff\", \"log_level\": \"debug\",\n"
                   "  \"vf_driver\": \"vfio-pci\", \"numvfs_timeout_sec\": 5, \"workers\": 3,\n"
                   "  \"reconf_detach_timeout_sec\": 45,\n"
                   "  \"limits\": { \"max_connections\": 10, \"idle_timeout_sec\": 2,\n"
                   "              \"monitor_backlog_bytes\": 16384 } }\n\n");
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_int_eq(svff_config_load_file(&c, path, &err), 0);
        ck_assert_str_eq(c.state_dir, "/srv/svff");
        ck_assert_str_eq(c.admin_group, "svff");
        ck_assert_int_eq(c.log_level, LOG_DEBUG);
        ck_assert_uint_eq(c.numvfs_timeout_usec, 5000000);
        /* Deadlines scale with the VF count: base + per VF x n. */
        ck_assert_uint_eq(svff_config_numvfs_timeout(&c, 252), 5000000 + 252 * 200000ULL);
        ck_assert_uint_eq(svff_config_bind_timeout(&c, 4), 10000000 + 4 * 1000000ULL);
        ck_assert_uint_eq(c.workers, 3);
        ck_assert_uint_eq(c.reconf_detach_timeout_usec, 45000000ULL);
        ck_assert_uint_eq(c.detach_timeout_usec, 10000000ULL);
        ck_assert_uint_eq(c.limits.max_connections, 10);
        ck_assert_uint_eq(c.limits.idle_timeout_usec, 2000000);
        ck_assert_uint_eq(c.limits.monitor_backlog, 16384);
        ck_assert_str_eq(c.sysfs_root, "/sys");  /* untouched default */
        svff_config_done(&c);
}
END_TEST

/* Each bad file: refused, message naming the file and what, cfg intact. */
static const struct {
        const char *text;
        const char *needle;
} bad[] = {
        { "{ \"sockett\": \"/run/x\" }", ":1: key 'sockett' is unknown" },
        /* a key in the old spelling is named as the file writes it too */
        { "{ \"vf-drvier\": 1 }", ":1: key 'vf_drvier' (written 'vf-drvier') is unknown" },
        { "{ \"policies\": { \"my-p\": { \"match\": { \"id\": \"10ee:903f\" },\n  \"vf-driver\": \"../x\" } } }",
          ":2: key 'policies.my-p.vf_driver' (written 'vf-driver') must be a driver name" },
        { "{\n \"limits\": {\n  \"max_conections\": 3 } }", ":3: key 'limits.max_conections' is unknown" },
        { "{ \"workers\": \"two\" }", "key 'workers' must be an integer" },
        { "{ \"workers\": 0 }", "key 'workers' must be between 1 and 64" },
        { "{ \"reconf_detach_timeout_sec\": 0 }", "key 'reconf_detach_timeout_sec' must be between 1 and 3600" },
        { "{ \"libvirt_workers\": 0 }", "key 'libvirt_workers' must be between 1 and 256" },
        { "{ \"workers\": 99999999999999999999999 }", "'workers' must be between" },
        { "{ \"limits\": { \"max_connections\": -1 } }", "'limits.max_connections' must be between" },
        { "{ \"limits\": { \"monitor_backlog_bytes\": 100 } }", "'limits.monitor_backlog_bytes' must be between" },
        { "{ \"log_level\": \"chatty\" }", "'log_level' must be one of" },
        { "{ \"socket\": \"\" }", "'socket' must be a non-empty string" },
        { "{ \"admin_group\": 7 }", "'admin_group' must be a non-empty string or null" },
        { "{ \"vf_driver\": \"../x\" }", "'vf_driver' must be a driver name" },
        { "[ 1, 2 ]", "top level must be a JSON object" },
        { "{\n  \"workers\": 2,\n  \"socket\" \"/x\"\n}",
          ":3: key 'socket' is not followed by ':': svff.conf is JSON, write \"socket\": value" },
        { "{ \"workers\": 2, \"numvfs\" = 4 }",
          ":1: key 'numvfs' is not followed by ':': svff.conf is JSON, write \"numvfs\": value" },
        { "{ \"workers\": 2 } trailing", "trailing text" },
        { "{ \"workers\": 2", "unexpected end of file" },
        /* policies */
        { "{ \"policies\": [] }", "key 'policies' must be an object of named policies" },
        { "{ \"policies\": {\n \"a\": {\n  \"numvfs\": 4 } } }", ":2: key 'policies.a' needs a 'match'" },
        { "{ \"policies\": { \"a\": {\n \"match\": { \"id\": \"10ee\" } } } }",
          ":2: key 'policies.a.match.id' must be VENDOR:DEVICE" },
        { "{ \"policies\": { \"a\": { \"match\": { \"address\": \"zz\" } } } }",
          "key 'policies.a.match.address' must be a PCI address" },
        { "{ \"policies\": { \"a\": { \"match\": { \"interface\": \"a/b\" } } } }",
          "key 'policies.a.match.interface' must be a network interface name" },
        { "{ \"policies\": { \"a\": { \"match\": { \"id\": \"10ee:903f\", \"interface\": \"x\" } } } }",
          "key 'policies.a.match' must hold exactly one" },
        { "{ \"policies\": { \"a\": { \"match\": { \"slot\": \"1\" } } } }",
          "key 'policies.a.match.slot' is unknown" },
        { "{ \"policies\": {\n\"a\": { \"match\": { \"id\": \"10ee:903f\" },\n\n \"numvfs\": 70000 } } }",
          ":4: key 'policies.a.numvfs' must be between 0 and 65535" },
        { "{ \"policies\": { \"a\": { \"match\": { \"id\": \"10ee:903f\" }, \"autoprobe\": 1 } } }",
          "key 'policies.a.autoprobe' must be true or false" },
        { "{ \"policies\": { \"a\": { \"match\": { \"id\": \"10ee:903f\" }, \"pool\": \"yes\" } } }",
          "key 'policies.a.pool' must be true or false" },
        { "{ \"policies\": { \"a\": { \"match\": { \"id\": \"10ee:903f\" }, \"numfs\": 2 } } }",
          "key 'policies.a.numfs' is unknown" },
        /* policy names: a documented set, nothing a terminal acts on,
         * shown escaped in the message itself */
        { "{ \"policies\": {\n \"\": { \"match\": { \"id\": \"10ee:903f\" } } } }", ":2: a policy's name is empty" },
        { "{ \"policies\": { \"a\\u001b[31m\": { \"match\": { \"id\": \"10ee:903f\" } } } }",
          "key 'policies.a\\x1b[31m' is not a policy name: use 1 to 64 letters, digits, '-', '_', '.', ':' or '@'" },
        { "{ \"policies\": { \"x\\u0007\\n\": { \"match\": { \"id\": \"10ee:903f\" } } } }",
          "key 'policies.x\\x07\\x0a' is not a policy name" },
        { "{ \"policies\": { \"\\u202egpf\": { \"match\": { \"id\": \"10ee:903f\" } } } }",
          "key 'policies.\\u202egpf' is not a policy name" },
        { "{ \"policies\": { \"a b\": null } }", "key 'policies.a b' is not a policy name" },
        { "{ \"policies\": { \"aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa\": null } }",
          "is not a policy name" },
        /* any other key is escaped too */
        { "{ \"work\\u001bers\": 1 }", "key 'work\\x1bers' is unknown" },
        /* The strict parser the rest of svff uses: no trailing comma, no
         * key twice (json-c would keep the last one silently). */
        { "{\n  \"workers\": 2,\n}",
          ":3: a comma before '}' (after key 'workers'): JSON allows no trailing comma, remove it" },
        { "{ \"workers\": 2, \"manage\": [\"10ee:903f\",\n ] }",
          ":2: a comma before ']' (after key 'manage'): JSON allows no trailing comma, remove it" },
        { "{\n  \"workers\": 2,\n  \"workers\": 3\n}", ":3: key 'workers' is given twice" },
        { "{ \"policies\": { \"a\": { \"match\": { \"id\": \"10ee:903f\" },\n  \"numvfs\": 1, \"numvfs\": 2 } } }",
          ":2: key 'policies.a.numvfs' is given twice" },
        /* A top-level key is found at its own line, not at a nested key
         * of the same name above it. */
        { "{ \"policies\": { \"a\": { \"match\": { \"id\": \"10ee:903f\" },\n  \"vf_driver\": \"vfio-pci\" } },\n\n"
          "  \"vf_driver\": \"no/slash\" }",
          ":4: key 'vf_driver'" },
        { "{ \"workers\": 2 /* open", "comment is not closed" },
        /* manage and the flash hook */
        { "{ \"manage\": \"some\" }", "key 'manage' must be \"all\" or a list of rules" },
        { "{\n \"manage\": [\"10ee:903f\", \"class:gpu\"] }", ":2: key 'manage' item 1: No device class 'gpu'" },
        { "{ \"manage\": [\"10ee:903\"] }", "key 'manage' item 0: Manage rule '10ee:903' is none of" },
        { "{ \"manage\": [7] }", "key 'manage' item 0 must be a string" },
        { "{ \"flash_hook\": \"flash.sh\" }", "key 'flash_hook' must be an absolute path or null" },
        { "{ \"flash_image_dir\": 3 }", "key 'flash_image_dir' must be an absolute path or null" },
        { "{ \"flash_timeout_sec\": 0 }", "key 'flash_timeout_sec' must be between 1 and 86400" },
        { "{ \"metrics_poll_sec\": 0 }", "key 'metrics_poll_sec' must be between 1 and 3600" },
        { "{ \"metrics_textfile\": \"svff.prom\" }", "key 'metrics_textfile' must be an absolute path or null" },
        { "{ \"workers\": 2 } x", "trailing text" },
};

START_TEST(test_bad) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        int r;

        write_file(bad[_i].text);
        ck_assert_int_eq(svff_config_init(&c), 0);
        r = svff_config_load_file(&c, path, &err);
        ck_assert_int_lt(r, 0);
        ck_assert_msg(strstr(svff_error_message(&err), path), "no file in '%s'", svff_error_message(&err));
        ck_assert_msg(strstr(svff_error_message(&err), bad[_i].needle), "'%s' lacks '%s'",
                      svff_error_message(&err), bad[_i].needle);
        ck_assert_uint_eq(c.workers, 2);
        ck_assert_str_eq(c.socket, SVFFD_SOCKET_DEFAULT);
        svff_error_free(&err);
        svff_config_done(&c);
}
END_TEST

/* Comments are blanked before the strict parse, but not inside strings:
 * "qemu:///system" keeps its slashes. */
START_TEST(test_comments) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;

        write_file("// leading\n{ /* inline */ \"libvirt_uri\": \"qemu:///system\", // trailing\n"
                   "  \"workers\": 3 }\n// end\n");
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_msg(svff_config_load_file(&c, path, &err) == 0, "%s", svff_error_message(&err));
        ck_assert_str_eq(c.libvirt_uri, "qemu:///system");
        ck_assert_uint_eq(c.workers, 3);
        svff_config_done(&c);
}
END_TEST

START_TEST(test_log_levels) {
        ck_assert_int_eq(svff_log_level_from_string("debug"), LOG_DEBUG);
        ck_assert_int_eq(svff_log_level_from_string("warn"), LOG_WARNING);
        ck_assert_int_eq(svff_log_level_from_string("3"), LOG_ERR);
        /* an empty or partly numeric level is a mistake, not "emerg" */
        ck_assert_int_lt(svff_log_level_from_string(""), 0);
        ck_assert_int_lt(svff_log_level_from_string("3x"), 0);
        ck_assert_int_lt(svff_log_level_from_string("8"), 0);
        ck_assert_int_lt(svff_log_level_from_string("-1"), 0);
        ck_assert_int_lt(svff_log_level_from_string("+"), 0);
}
END_TEST

START_TEST(test_missing) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;

        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_int_eq(svff_config_load_file(&c, "/nonexistent/svff.conf", &err), -ENOENT);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "/nonexistent/svff.conf"));
        svff_error_free(&err);
        svff_config_done(&c);
}
END_TEST

/* Every problem of a file is named, not just the first. */
START_TEST(test_all_errors) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;

        write_file("{\n  \"workers\": 0,\n  \"typo\": 1,\n  \"log_level\": \"x\"\n}\n");
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_int_lt(svff_config_load_file(&c, path, &err), 0);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), ":2: key 'workers'"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), ":3: key 'typo' is unknown"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), ":4: key 'log_level'"));
        svff_error_free(&err);
        svff_config_done(&c);
}
END_TEST

/* An empty file, whitespace, comments only and /dev/null set nothing. */
START_TEST(test_empty) {
        static const char *const texts[] = { "", "\n  \n", "{}", "// nothing\n{ /* here */ }\n" };
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;

        ck_assert_int_eq(svff_config_init(&c), 0);
        for (size_t i = 0; i < ELEMENTSOF(texts); i++) {
                write_file(texts[i]);
                ck_assert_int_eq(svff_config_load_file(&c, path, &err), 0);
        }
        ck_assert_int_eq(svff_config_load(&c, "/dev/null", false, &err), 0);
        ck_assert_str_eq(c.socket, SVFFD_SOCKET_DEFAULT);
        ck_assert_uint_eq(c.workers, 2);
        /* Other devices are still refused. */
        ck_assert_int_eq(svff_config_load_file(&c, "/dev/zero", &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "not a regular file"));
        svff_error_free(&err);
        svff_config_done(&c);
}
END_TEST

static void write_at(const char *name, const char *text) {
        char p[512];
        FILE *f;

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        f = fopen(p, "we");
        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        fclose(f);
}

static void rm_at(const char *name) {
        char p[512];

        snprintf(p, sizeof(p), "%s/%s", dir, name);
        (void) unlink(p);
}

/* Drop-ins in lexical order, later wins; policies replaced or dropped by
 * name; non-.conf and hidden files ignored. */
START_TEST(test_dropins) {
        struct svff_error err = SVFF_ERROR_NULL;
        const struct svff_policy *p;
        struct svff_config c;
        char d[512];

        write_file("{ \"workers\": 3, \"policies\": {\n"
                   "  \"fpga\": { \"match\": { \"id\": \"10ee:903f\" }, \"numvfs\": 4 },\n"
                   "  \"nic\": { \"match\": { \"interface\": \"ens1f0\" }, \"numvfs\": 2 },\n"
                   "  \"old\": { \"match\": { \"id\": \"8086:1521\" } } } }\n");
        snprintf(d, sizeof(d), "%s.d", path);
        ck_assert_int_eq(mkdir(d, 0755), 0);
        write_at("svff.conf.d/20-b.conf", "{ \"workers\": 5, \"policies\": { \"old\": null } }");
        write_at("svff.conf.d/10-a.conf", "{ \"workers\": 4, \"log_level\": \"debug\", \"policies\": {"
                 " \"fpga\": { \"match\": { \"id\": \"10ee:903f\" }, \"numvfs\": 8, \"pool\": false },"
                 " \"one\": { \"match\": { \"address\": \"0000:01:00.0\" }, \"numvfs\": 1,"
                 " \"vf_driver\": \"qdma-vf\", \"autoprobe\": true } } }");
        write_at("svff.conf.d/30-c.conf.bak", "{ \"workers\": 9 }");
        write_at("svff.conf.d/.40-d.conf", "{ \"workers\": 9 }");

        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_int_eq(svff_config_load(&c, path, false, &err), 0);
        ck_assert_uint_eq(c.workers, 5);
        ck_assert_int_eq(c.log_level, LOG_DEBUG);
        ck_assert_uint_eq(c.n_policies, 3);

        p = svff_config_find_policy(&c, "0000:02:00.0", 0x10ee, 0x903f, NULL);
        ck_assert_ptr_nonnull(p);
        ck_assert_str_eq(p->name, "fpga");
        ck_assert_int_eq(p->numvfs, 8);
        ck_assert(!p->pool);
        ck_assert_int_eq(p->autoprobe, -1);
        ck_assert_ptr_nonnull(strstr(p->origin, "10-a.conf:1"));
        /* The address wins over the id. */
        p = svff_config_find_policy(&c, "0000:01:00.0", 0x10ee, 0x903f, NULL);
        ck_assert_str_eq(p->name, "one");
        ck_assert_str_eq(p->vf_driver, "qdma-vf");
        ck_assert_int_eq(p->autoprobe, 1);
        /* The interface wins over the id. */
        p = svff_config_find_policy(&c, "0000:03:00.0", 0x10ee, 0x903f, "ens1f0");
        ck_assert_str_eq(p->name, "nic");
        ck_assert_ptr_null(svff_config_find_policy(&c, "0000:03:00.0", 0x8086, 0x1521, "eth9"));

        /* A bad drop-in: named, and nothing applied. */
        write_at("svff.conf.d/15-bad.conf", "{\n\"workers\": 1,\n\"policies\": { \"x\": 3 } }");
        svff_config_done(&c);
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_int_eq(svff_config_load(&c, path, false, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "15-bad.conf:3: key 'policies.x' must be an object"));
        ck_assert_uint_eq(c.workers, 2);
        ck_assert_uint_eq(c.n_policies, 0);
        svff_error_free(&err);

        /* A missing main file is fine only when asked; drop-ins still apply. */
        rm_at("svff.conf.d/15-bad.conf");
        unlink(path);
        ck_assert_int_eq(svff_config_load(&c, path, false, &err), -ENOENT);
        svff_error_free(&err);
        ck_assert_int_eq(svff_config_load(&c, path, true, &err), 0);
        ck_assert_uint_eq(c.workers, 5);
        svff_config_done(&c);

        rm_at("svff.conf.d/10-a.conf");
        rm_at("svff.conf.d/20-b.conf");
        rm_at("svff.conf.d/30-c.conf.bak");
        rm_at("svff.conf.d/.40-d.conf");
        ck_assert_int_eq(rmdir(d), 0);
}
END_TEST

/* manage: "all" by default and in the file; a list is kept as given,
 * with where it was set; the flash hook's paths and deadline. */
START_TEST(test_manage) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_(json_object_putp) struct json_object *j = NULL;
        struct svff_config c, d;

        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_ptr_null(c.manage);
        ck_assert_ptr_null(c.flash_hook);
        ck_assert_ptr_null(c.metrics_textfile);
        ck_assert_uint_eq(c.flash_timeout_usec, 600000000ULL);
        j = svff_config_to_json(&c);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(j, "manage")), "all");
        json_object_put(j);

        write_file("{\n  \"manage\": [\"10ee:903f\", \"03:00.0\", \"class:qdma\"],\n"
                   "  \"flash_hook\": \"/usr/libexec/flash\", \"flash_image_dir\": \"/srv/images\",\n"
                   "  \"flash_timeout_sec\": 30, \"metrics_textfile\": \"/var/lib/node-exporter/svff.prom\",\n"
                   "  \"metrics_poll_sec\": 2 }");
        ck_assert_int_eq(svff_config_load_file(&c, path, &err), 0);
        ck_assert_ptr_nonnull(c.manage);
        ck_assert_str_eq(c.manage[0], "10ee:903f");
        ck_assert_str_eq(c.manage[1], "03:00.0");
        ck_assert_str_eq(c.manage[2], "class:qdma");
        ck_assert_ptr_null(c.manage[3]);
        ck_assert_msg(strstr(c.manage_origin, "svff.conf:2"), "%s", c.manage_origin);
        ck_assert_str_eq(c.flash_hook, "/usr/libexec/flash");
        ck_assert_str_eq(c.flash_image_dir, "/srv/images");
        ck_assert_uint_eq(c.flash_timeout_usec, 30000000ULL);
        ck_assert_str_eq(c.metrics_textfile, "/var/lib/node-exporter/svff.prom");
        ck_assert_uint_eq(c.metrics_poll_usec, 2000000ULL);
        j = svff_config_to_json(&c);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(j, "metrics_textfile")),
                         "/var/lib/node-exporter/svff.prom");
        ck_assert_str_eq(json_object_to_json_string_ext(json_object_object_get(j, "manage"), JSON_C_TO_STRING_PLAIN),
                         "[\"10ee:903f\",\"03:00.0\",\"class:qdma\"]");

        ck_assert_int_eq(svff_config_copy(&c, &d), 0);
        svff_config_done(&c);
        ck_assert_str_eq(d.manage[2], "class:qdma");
        ck_assert_str_eq(d.flash_image_dir, "/srv/images");
        ck_assert_str_eq(d.metrics_textfile, "/var/lib/node-exporter/svff.prom");

        /* a later file puts "all" back; [] manages nothing */
        write_file("{ \"manage\": \"all\", \"flash_hook\": null }");
        ck_assert_int_eq(svff_config_load_file(&d, path, &err), 0);
        ck_assert_ptr_null(d.manage);
        ck_assert_ptr_null(d.flash_hook);
        write_file("{ \"manage\": [] }");
        ck_assert_int_eq(svff_config_load_file(&d, path, &err), 0);
        ck_assert_ptr_nonnull(d.manage);
        ck_assert_ptr_null(d.manage[0]);
        svff_config_done(&d);
}
END_TEST

/* A copy owns its policies. */
START_TEST(test_copy) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config a, b;

        write_file("{ \"policies\": { \"p\": { \"match\": { \"interface\": \"eth0\" }, \"numvfs\": 3 } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_eq(svff_config_load_file(&a, path, &err), 0);
        ck_assert_int_eq(svff_config_copy(&a, &b), 0);
        svff_config_done(&a);
        ck_assert_uint_eq(b.n_policies, 1);
        ck_assert_str_eq(b.policies[0].interface, "eth0");
        ck_assert_int_eq(b.policies[0].numvfs, 3);
        svff_config_done(&b);
}
END_TEST

/* A policy member named after a device class: an object the class
 * checks at load (an unknown setting is an error naming it), kept through
 * a copy and written back by svff_config_to_json(); another name is
 * still an unknown key. */
START_TEST(test_class_member) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config a, b;
        struct json_object *o, *pol, *v;

        write_file("{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" },\n"
                   "  \"nvme\": { \"vq\": 2, \"namespace\": [1, 2] } } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_eq(svff_config_load_file(&a, path, &err), 0);
        ck_assert_ptr_nonnull(a.policies[0].classes);
        ck_assert(json_object_object_get_ex(a.policies[0].classes, "nvme", &v));
        ck_assert_int_eq(json_object_get_int(json_object_object_get(v, "vq")), 2);
        ck_assert_int_eq(svff_config_copy(&a, &b), 0);
        svff_config_done(&a);
        ck_assert(json_object_object_get_ex(b.policies[0].classes, "nvme", &v));
        o = svff_config_to_json(&b);
        ck_assert(json_object_object_get_ex(json_object_object_get(o, "policies"), "p", &pol));
        ck_assert(json_object_object_get_ex(pol, "nvme", &v));
        ck_assert_int_eq(json_object_array_length(json_object_object_get(v, "namespace")), 2);
        json_object_put(o);
        svff_config_done(&b);

        static const struct { const char *text, *needle; } bad_class[] = {
                { "{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" }, \"nvme\": 5 } } }",
                  "policies.p.nvme' must be an object" },
                { "{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" }, \"nvme\": { \"bogus\": 1 } } } }",
                  "bogus" },
                { "{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" }, \"nvme\": { \"vq\": 1 } } } }",
                  "vq" },
                { "{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" }, \"nvmx\": { } } } }",
                  "policies.p.nvmx' is unknown" },
        };
        for (size_t i = 0; i < sizeof(bad_class) / sizeof(bad_class[0]); i++) {
                write_file(bad_class[i].text);
                ck_assert_int_eq(svff_config_init(&a), 0);
                ck_assert_int_lt(svff_config_load_file(&a, path, &err), 0);
                ck_assert_msg(strstr(svff_error_message(&err), bad_class[i].needle), "'%s' lacks '%s'",
                              svff_error_message(&err), bad_class[i].needle);
                ck_assert_uint_eq(a.n_policies, 0);
                svff_error_free(&err);
                svff_config_done(&a);
        }
}
END_TEST

START_TEST(test_reprogram_ids) {
        /* Normalised, copied with the policy; anything but ids refused. */
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config a, b;

        write_file("{ \"policies\": { \"fpga\": { \"match\": { \"address\": \"0000:01:00.0\" },"
                   " \"reprogram_ids\": [\"10EE:913F\", \"10ee:903f\"] } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_eq(svff_config_load_file(&a, path, &err), 0);
        ck_assert_int_eq(svff_config_copy(&a, &b), 0);
        svff_config_done(&a);
        ck_assert_ptr_nonnull(b.policies[0].reprogram_ids);
        ck_assert_str_eq(json_object_to_json_string_ext(b.policies[0].reprogram_ids, JSON_C_TO_STRING_PLAIN),
                         "[\"10ee:913f\",\"10ee:903f\"]");
        svff_config_done(&b);

        write_file("{ \"policies\": { \"fpga\": { \"match\": { \"address\": \"0000:01:00.0\" },"
                   " \"reprogram_ids\": [\"10ee\"] } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_lt(svff_config_load_file(&a, path, &err), 0);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "reprogram_ids"));
        svff_error_free(&err);
        svff_config_done(&a);
}
END_TEST

START_TEST(test_policy_image) {
        /* An absolute path, copied with the policy; a relative one refused
         * by name. Whether it is under flash_image_dir is checked when the
         * policy applies: the file may come and go. */
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config a, b;

        write_file("{ \"policies\": { \"fpga\": { \"match\": { \"address\": \"0000:01:00.0\" },"
                   " \"numvfs\": 4, \"image\": \"/var/lib/svff/images/a.bit\" } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_eq(svff_config_load_file(&a, path, &err), 0);
        ck_assert_int_eq(svff_config_copy(&a, &b), 0);
        svff_config_done(&a);
        ck_assert_str_eq(b.policies[0].image, "/var/lib/svff/images/a.bit");
        svff_config_done(&b);

        write_file("{ \"policies\": { \"fpga\": { \"match\": { \"address\": \"0000:01:00.0\" },"
                   " \"image\": \"a.bit\" } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_lt(svff_config_load_file(&a, path, &err), 0);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "policies.fpga.image"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "absolute path"));
        svff_error_free(&err);
        svff_config_done(&a);
}
END_TEST

START_TEST(test_policy_verify_image) {
        /* "sha256" alone, copied with the policy; anything else, or no
         * image to verify, refused by name. */
        static const struct {
                const char *keys, *error;
        } refused[] = {
                { "\"image\": \"/i/a.bit\", \"verify_image\": \"md5\"",
                  "key 'policies.fpga.verify_image' must be \"sha256\"" },
                { "\"image\": \"/i/a.bit\", \"verify_image\": true",
                  "key 'policies.fpga.verify_image' must be \"sha256\"" },
                { "\"verify_image\": \"sha256\"", "has 'verify_image' but no 'image' to verify" },
        };
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config a, b;

        write_file("{ \"policies\": { \"fpga\": { \"match\": { \"address\": \"0000:01:00.0\" },"
                   " \"image\": \"/i/a.bit\", \"verify_image\": \"sha256\" },"
                   " \"other\": { \"match\": { \"address\": \"0000:02:00.0\" }, \"image\": \"/i/b.bit\" } } }");
        ck_assert_int_eq(svff_config_init(&a), 0);
        ck_assert_int_eq(svff_config_load_file(&a, path, &err), 0);
        ck_assert_int_eq(svff_config_copy(&a, &b), 0);
        svff_config_done(&a);
        ck_assert_str_eq(b.policies[0].name, "fpga");
        ck_assert(b.policies[0].verify_sha256);
        ck_assert(!b.policies[1].verify_sha256);
        svff_config_done(&b);

        for (size_t i = 0; i < ELEMENTSOF(refused); i++) {
                char text[512];

                snprintf(text, sizeof(text), "{ \"policies\": { \"fpga\": { \"match\": "
                         "{ \"address\": \"0000:01:00.0\" }, %s } } }", refused[i].keys);
                write_file(text);
                ck_assert_int_eq(svff_config_init(&a), 0);
                ck_assert_int_lt(svff_config_load_file(&a, path, &err), 0);
                ck_assert_msg(strstr(svff_error_message(&err), refused[i].error), "case %zu: %s", i,
                              svff_error_message(&err));
                svff_error_free(&err);
                svff_config_done(&a);
        }
}
END_TEST

/* The longest policy name, and every kind of character a name may hold. */
START_TEST(test_policy_names) {
        static const char *const names[] = {
                "fpga", "my-fpga_2", "rack.3:slot@a", "0",
                "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
        };
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;

        ck_assert_uint_eq(strlen(names[4]), 64);
        for (size_t i = 0; i < ELEMENTSOF(names); i++) {
                char text[256];

                snprintf(text, sizeof(text), "{ \"policies\": { \"%s\": { \"match\": { \"id\": \"10ee:903f\" } } } }",
                         names[i]);
                write_file(text);
                ck_assert_int_eq(svff_config_init(&c), 0);
                ck_assert_msg(svff_config_load_file(&c, path, &err) == 0, "%s", svff_error_message(&err));
                ck_assert_uint_eq(c.n_policies, 1);
                ck_assert_str_eq(c.policies[0].name, names[i]);
                svff_config_done(&c);
        }
}
END_TEST

/* snake_case is the spelling; kebab-case, that of earlier releases, is
 * read as its snake twin with a warning naming both, at the key's line;
 * both in one object are refused; policy names are taken as written. */
START_TEST(test_spellings) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        struct json_object *o, *v;

        write_file("{ \"numvfs_timeout_sec\": 7, \"policies\": { \"my-fpga\": {\n"
                   "  \"match\": { \"id\": \"1b36:0010\" }, \"vf_driver\": \"vfio-pci\",\n"
                   "  \"nvme\": { \"vq\": 2, \"scrub_on_release\": \"format\" } } } }");
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_msg(svff_config_load_file(&c, path, &err) == 0, "%s", svff_error_message(&err));
        ck_assert_ptr_null(c.warnings);
        ck_assert_uint_eq(c.numvfs_timeout_usec, 7000000ULL);
        ck_assert_str_eq(c.policies[0].name, "my-fpga");
        svff_config_done(&c);

        write_file("{\n  \"numvfs-timeout-sec\": 7,\n  \"limits\": { \"max-connections\": 9 },\n"
                   "  \"policies\": { \"my-fpga\": {\n"
                   "    \"match\": { \"id\": \"1b36:0010\" }, \"vf-driver\": \"qdma-vf\",\n"
                   "    \"nvme\": { \"vq\": 2,\n"
                   "      \"scrub-on-release\": \"format\" } } } }");
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_msg(svff_config_load_file(&c, path, &err) == 0, "%s", svff_error_message(&err));
        ck_assert_uint_eq(c.numvfs_timeout_usec, 7000000ULL);
        ck_assert_uint_eq(c.limits.max_connections, 9);
        ck_assert_uint_eq(c.n_policies, 1);
        ck_assert_str_eq(c.policies[0].name, "my-fpga");
        ck_assert_str_eq(c.policies[0].vf_driver, "qdma-vf");
        ck_assert(json_object_object_get_ex(c.policies[0].classes, "nvme", &v));
        ck_assert(json_object_object_get_ex(v, "scrub_on_release", NULL));
        ck_assert(!json_object_object_get_ex(v, "scrub-on-release", NULL));
        ck_assert_ptr_nonnull(c.warnings);
        ck_assert_msg(strstr(c.warnings, "svff.conf:2: 'numvfs-timeout-sec' is the old spelling of "
                                         "'numvfs_timeout_sec'; it is still read for this release"),
                      "%s", c.warnings);
        ck_assert_msg(strstr(c.warnings, ":3: 'max-connections' is the old spelling of 'max_connections'"), "%s",
                      c.warnings);
        ck_assert_msg(strstr(c.warnings, ":5: 'vf-driver' is the old spelling of 'vf_driver'"), "%s", c.warnings);
        ck_assert_msg(strstr(c.warnings, ":7: 'scrub-on-release' is the old spelling of 'scrub_on_release'"),
                      "%s", c.warnings);
        ck_assert_msg(!strstr(c.warnings, "my-fpga"), "%s", c.warnings);
        /* what is written back is the new spelling */
        o = svff_config_to_json(&c);
        ck_assert(json_object_object_get_ex(o, "numvfs_timeout_sec", NULL));
        ck_assert(!json_object_object_get_ex(o, "numvfs-timeout-sec", NULL));
        ck_assert(json_object_object_get_ex(json_object_object_get(o, "policies"), "my-fpga", &v));
        ck_assert(json_object_object_get_ex(v, "vf_driver", NULL));
        json_object_put(o);
        svff_config_done(&c);

        static const struct { const char *text, *needle; } both[] = {
                { "{ \"vf_driver\": \"vfio-pci\",\n  \"vf-driver\": \"vfio-pci\" }",
                  ":1: key 'vf_driver' is given twice, as 'vf-driver' (the old spelling) and 'vf_driver'" },
                { "{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" },\n"
                  "  \"reprogram-ids\": [], \"reprogram_ids\": [] } } }",
                  ":2: key 'policies.p.reprogram_ids' is given twice, as 'reprogram-ids'" },
                { "{ \"policies\": { \"p\": { \"match\": { \"id\": \"1b36:0010\" },\n"
                  "  \"nvme\": { \"scrub_on_release\": \"none\", \"scrub-on-release\": \"format\" } } } }",
                  "key 'policies.p.nvme.scrub_on_release' is given twice" },
        };
        for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++) {
                write_file(both[i].text);
                ck_assert_int_eq(svff_config_init(&c), 0);
                ck_assert_int_eq(svff_config_load_file(&c, path, &err), -EINVAL);
                ck_assert_msg(strstr(svff_error_message(&err), both[i].needle), "'%s' lacks '%s'",
                              svff_error_message(&err), both[i].needle);
                svff_error_free(&err);
                svff_config_done(&c);
        }
}
END_TEST

/* The reader takes any bytes: a NUL byte or a sequence that is not
 * UTF-8 is refused by file, line and column (in characters), before
 * anything else looks at the text. A NUL after a comment once sent the
 * comment blanking past the end of the copy it worked on. */
static const struct {
        const char *text;
        size_t len;
        const char *needle;
} bad_bytes[] = {
#define T(s, needle) { s, sizeof(s) - 1, needle }
        T("{ \"workers\": 2 } // x\0yyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyyy\n",
          ":1:22: a NUL byte"),
        T("{\n  \"workers\": 2,\n\0 \"socket\": \"/x\" }", ":3:1: a NUL byte"),
        T("{ \"workers\": 2 }\n/* a\0b */\n", ":2:5: a NUL byte"),
        T("{ \"admin_group\": \"gr\xff\" }", ":1:21: byte 0xff is not UTF-8"),
        /* the column counts characters, not bytes */
        T("{\n \"admin_group\": \"\xc3\xa9\xc3\xa9\xe9t\xc3\xa9\" }", ":2:20: byte 0xe9 is not UTF-8"),
        /* overlong, a surrogate, past U+10FFFF, cut short at the end */
        T("{ \"admin_group\": \"\xc0\xaf\" }", ":1:19: byte 0xc0 is not UTF-8"),
        T("// \xed\xa0\x80\n{}", ":1:4: byte 0xed is not UTF-8"),
        T("{} // \xf4\x90\x80\x80", ":1:7: byte 0xf4 is not UTF-8"),
        T("{} // \xe2\x82", ":1:7: byte 0xe2 is not UTF-8"),
#undef T
};

static void write_bytes(const char *p, const char *data, size_t len) {
        FILE *f = fopen(p, "we");

        ck_assert_ptr_nonnull(f);
        ck_assert_uint_eq(fwrite(data, 1, len, f), len);
        fclose(f);
}

START_TEST(test_bytes) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        char d[512], dropin[600];

        /* the file itself */
        write_bytes(path, bad_bytes[_i].text, bad_bytes[_i].len);
        ck_assert_int_eq(svff_config_init(&c), 0);
        ck_assert_int_eq(svff_config_load_file(&c, path, &err), -EINVAL);
        ck_assert_msg(strstr(svff_error_message(&err), path) &&
                      strstr(svff_error_message(&err), bad_bytes[_i].needle), "'%s' lacks '%s'",
                      svff_error_message(&err), bad_bytes[_i].needle);
        ck_assert_uint_eq(c.workers, 2);
        svff_error_free(&err);

        /* a drop-in, named as such */
        write_file("{ \"workers\": 3 }\n");
        snprintf(d, sizeof(d), "%s.d", path);
        snprintf(dropin, sizeof(dropin), "%s/50-bytes.conf", d);
        ck_assert_int_eq(mkdir(d, 0755), 0);
        write_bytes(dropin, bad_bytes[_i].text, bad_bytes[_i].len);
        ck_assert_int_eq(svff_config_load(&c, path, false, &err), -EINVAL);
        ck_assert_msg(strstr(svff_error_message(&err), "50-bytes.conf") &&
                      strstr(svff_error_message(&err), bad_bytes[_i].needle), "'%s' lacks '%s'",
                      svff_error_message(&err), bad_bytes[_i].needle);
        ck_assert_uint_eq(c.workers, 2);
        svff_error_free(&err);
        svff_config_done(&c);
        ck_assert_int_eq(unlink(dropin), 0);
        ck_assert_int_eq(rmdir(d), 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("config");
        TCase *tc = tcase_create("config");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_defaults);
        tcase_add_test(tc, test_valid);
        tcase_add_loop_test(tc, test_bad, 0, (int) (sizeof(bad) / sizeof(bad[0])));
        tcase_add_test(tc, test_missing);
        tcase_add_test(tc, test_log_levels);
        tcase_add_test(tc, test_comments);
        tcase_add_test(tc, test_all_errors);
        tcase_add_test(tc, test_empty);
        tcase_add_test(tc, test_dropins);
        tcase_add_test(tc, test_copy);
        tcase_add_test(tc, test_manage);
        tcase_add_test(tc, test_class_member);
        tcase_add_test(tc, test_reprogram_ids);
        tcase_add_test(tc, test_policy_image);
        tcase_add_test(tc, test_policy_verify_image);
        tcase_add_test(tc, test_spellings);
        tcase_add_test(tc, test_policy_names);
        tcase_add_loop_test(tc, test_bytes, 0, (int) (sizeof(bad_bytes) / sizeof(bad_bytes[0])));
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "json-util.h"
#include "macro.h"
#include "store.h"
#include "store-util.h"

static char *tmpdir;
static char *statedir;

static void setup(void) {
        char t[] = "/tmp/test-store.XXXXXX";

        ck_assert_ptr_nonnull(mkdtemp(t));
        tmpdir = strdup(t);
        ck_assert_int_ge(asprintf(&statedir, "%s/state", tmpdir), 0);
}

static void teardown(void) {
        rm_rf_flat(statedir);
        rmdir(tmpdir);
        free(statedir);
        free(tmpdir);
}

static struct svff_store *open_ok(void) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_store *s = NULL;
        int r;

        r = svff_store_open(statedir, &s, &err);
        ck_assert_msg(r == 0, "open: %d %s", r, svff_error_message(&err));
        svff_error_free(&err);
        return s;
}

static void commit_ok(struct svff_store *s) {
        struct svff_error err = SVFF_ERROR_NULL;
        int r;

        r = svff_store_commit(s, &err);
        ck_assert_msg(r == 0, "commit: %d %s", r, svff_error_message(&err));
        svff_error_free(&err);
}

START_TEST(test_empty) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_free_ char *names = NULL, *path = NULL;
        struct stat st;

        s = open_ok();
        ck_assert_uint_eq(svff_store_generation(s), 0);
        ck_assert_int_ge(asprintf(&path, "%s/store.json", statedir), 0);
        ck_assert_str_eq(svff_store_path(s), path);
        ck_assert_int_eq(json_object_object_length(svff_store_pfs(s)), 0);
        ck_assert_int_eq(json_object_object_length(svff_store_vfs(s)), 0);
        ck_assert_int_eq(json_object_object_length(svff_store_assignments(s)), 0);
        ck_assert_ptr_null(svff_store_journal(s));

        /* the directory was made private, and nothing written into it */
        ck_assert_int_eq(stat(statedir, &st), 0);
        ck_assert_uint_eq(st.st_mode & 07777, 0700);
        names = list_dir(statedir);
        ck_assert_str_eq(names, "");
}
END_TEST

START_TEST(test_roundtrip) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_free_ char *names = NULL;
        const char *pf = NULL, *orig = "x", *drv = NULL;
        unsigned n = 0;

        s = open_ok();
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 4, "vfio-pci"), 0);
        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.1", "0000:03:00.0", 0, "qdma-vf", "vfio-pci"), 0);
        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.2", "0000:03:00.0", 1, NULL, "vfio-pci"), 0);
        /* a field this version does not know survives a rewrite */
        json_object_object_add(json_object_object_get(svff_store_vfs(s), "0000:03:00.2"), "note",
                               json_object_new_string("kept"));
        json_object_object_add(svff_store_assignments(s), "0000:03:00.1", json_object_new_object());
        svff_store_set_journal(s, json_tokener_parse("{\"op\":\"init\",\"pf\":\"0000:03:00.0\"}"));
        commit_ok(s);
        ck_assert_uint_eq(svff_store_generation(s), 1);
        svff_store_free(TAKE_PTR(s));

        names = list_dir(statedir);
        ck_assert_str_eq(names, "store.json");

        s = open_ok();
        ck_assert_uint_eq(svff_store_generation(s), 1);
        ck_assert_int_eq(svff_store_get_pf(s, "0000:03:00.0", &n, &drv), 1);
        ck_assert_uint_eq(n, 4);
        ck_assert_str_eq(drv, "vfio-pci");
        ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.1", &pf, &orig), 1);
        ck_assert_str_eq(pf, "0000:03:00.0");
        ck_assert_str_eq(orig, "qdma-vf");
        ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.2", NULL, &orig), 1);
        ck_assert_ptr_null(orig);
        ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.3", &pf, &orig), 0);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(
                                 json_object_object_get(svff_store_vfs(s), "0000:03:00.2"), "note")),
                         "kept");
        ck_assert_ptr_nonnull(json_object_object_get(svff_store_assignments(s), "0000:03:00.1"));
        ck_assert_str_eq(json_object_get_string(json_object_object_get(svff_store_journal(s), "op")), "init");

        /* updates, removals */
        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.2", "0000:03:00.0", 1, "nvme", "vfio-pci"), 0);
        svff_store_remove_vf(s, "0000:03:00.1");
        svff_store_remove_pf(s, "0000:03:00.0");
        svff_store_set_journal(s, NULL);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));

        s = open_ok();
        ck_assert_uint_eq(svff_store_generation(s), 2);
        ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.1", &pf, &orig), 0);
        ck_assert_int_eq(svff_store_get_pf(s, "0000:03:00.0", &n, &drv), 0);
        ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.2", &pf, &orig), 1);
        ck_assert_str_eq(orig, "nvme");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(
                                 json_object_object_get(svff_store_vfs(s), "0000:03:00.2"), "note")),
                         "kept");
        ck_assert_ptr_null(svff_store_journal(s));

        ck_assert_int_eq(svff_store_set_vf(s, "", "0000:03:00.0", 1, NULL, "vfio-pci"), -EINVAL);
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 1, NULL), -EINVAL);
}
END_TEST

static uint64_t file_generation(const char *name) {
        _cleanup_free_ char *data = NULL;
        _cleanup_(json_object_putp) struct json_object *doc = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        uint64_t g;
        size_t len;

        data = read_file(statedir, name, &len);
        ck_assert_ptr_nonnull(data);
        ck_assert_int_eq(svff_store_parse(data, len, &doc, &err), 0);
        ck_assert_int_eq(svff_json_get_u64(doc, "generation", &g), 0);
        return g;
}

/* The PF owner is optional: a record without one (an older store) reads
 * as unknown, and set_pf keeps it. */
START_TEST(test_pf_owner) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        unsigned n = 0;

        s = open_ok();
        ck_assert_int_eq(svff_store_set_pf_owner(s, "0000:03:00.0", SVFF_PF_OWNER_OPERATOR), -ENOENT);
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 4, "vfio-pci"), 0);
        ck_assert_ptr_null(svff_store_get_pf_owner(s, "0000:03:00.0"));
        ck_assert_ptr_null(svff_store_get_pf_owner(s, "0000:04:00.0"));
        ck_assert_int_eq(svff_store_set_pf_owner(s, "0000:03:00.0", "policy:fpga"), 0);
        ck_assert_int_eq(svff_store_set_pf_owner(s, "0000:03:00.0", ""), -EINVAL);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));

        s = open_ok();
        ck_assert_str_eq(svff_store_get_pf_owner(s, "0000:03:00.0"), "policy:fpga");
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 2, "vfio-pci"), 0);
        ck_assert_str_eq(svff_store_get_pf_owner(s, "0000:03:00.0"), "policy:fpga");
        ck_assert_int_eq(svff_store_set_pf_owner(s, "0000:03:00.0", SVFF_PF_OWNER_OPERATOR), 0);
        ck_assert_int_eq(svff_store_get_pf(s, "0000:03:00.0", &n, NULL), 1);
        ck_assert_uint_eq(n, 2);
        ck_assert_str_eq(svff_store_get_pf_owner(s, "0000:03:00.0"), "operator");
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));

        /* A store written before owners existed, and one where the field
         * is not a string: both open, the owner reads as unknown. */
        {
                static const char old[] = "{\"schema\":1,\"generation\":3,\"pfs\":{\"0000:03:00.0\":"
                                          "{\"numvfs\":2,\"vf_driver\":\"vfio-pci\",\"owner\":7}}}";

                write_file(statedir, "store.json", old, sizeof(old) - 1);
        }
        s = open_ok();
        ck_assert_int_eq(svff_store_get_pf(s, "0000:03:00.0", &n, NULL), 1);
        ck_assert_ptr_null(svff_store_get_pf_owner(s, "0000:03:00.0"));
}
END_TEST

/* The image svff last flashed to a PF: kept beside the record's other
 * fields, dropped on request, optional when read. */
START_TEST(test_pf_image) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        struct json_object *img;

        s = open_ok();
        img = json_tokener_parse("{\"path\":\"/images/a.bit\",\"dev\":1,\"ino\":2,\"size\":3,\"mtime_nsec\":4}");
        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", json_object_get(img)), -ENOENT);
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 4, "vfio-pci"), 0);
        ck_assert_ptr_null(svff_store_get_pf_image(s, "0000:03:00.0"));
        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", json_object_new_array()), -EINVAL);
        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", json_object_get(img)), 0);
        ck_assert_int_eq(svff_store_set_pf_owner(s, "0000:03:00.0", "policy:fpga"), 0);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));

        s = open_ok();
        ck_assert(json_object_equal(svff_store_get_pf_image(s, "0000:03:00.0"), img));
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 2, "vfio-pci"), 0);
        ck_assert(json_object_equal(svff_store_get_pf_image(s, "0000:03:00.0"), img));
        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", NULL), 0);
        ck_assert_ptr_null(svff_store_get_pf_image(s, "0000:03:00.0"));
        ck_assert_str_eq(svff_store_get_pf_owner(s, "0000:03:00.0"), "policy:fpga");
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert_ptr_null(svff_store_get_pf_image(s, "0000:03:00.0"));
        json_object_put(img);

        /* A content hash (policy "verify_image": "sha256") is kept as
         * written; one that is not 64 lower-case hex digits is never
         * written, as the loader would refuse it. */
        img = json_tokener_parse("{\"path\":\"/images/a.bit\",\"sha256\":"
                                 "\"e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855\"}");
        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", json_object_get(img)), 0);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert(json_object_equal(svff_store_get_pf_image(s, "0000:03:00.0"), img));
        json_object_put(img);
        {
                static const char *const bad[] = {
                        "\"E3B0C44298FC1C149AFBF4C8996FB92427AE41E4649B934CA495991B7852B855\"",
                        "\"e3b0c442\"", "42", "null",
                };

                for (size_t i = 0; i < ELEMENTSOF(bad); i++) {
                        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
                        char text[256];

                        snprintf(text, sizeof(text), "{\"path\":\"/images/a.bit\",\"sha256\":%s}", bad[i]);
                        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", json_tokener_parse(text)), 0);
                        ck_assert_int_eq(svff_store_commit(s, &err), -EINVAL);
                        ck_assert_msg(strstr(svff_error_message(&err), "'pfs.0000:03:00.0.image.sha256' is not a "
                                             "SHA-256 digest"), "%s", svff_error_message(&err));
                }
        }
}
END_TEST

START_TEST(test_generations) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;

        s = open_ok();
        for (unsigned i = 1; i <= 5; i++) {
                ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", i, "vfio-pci"), 0);
                commit_ok(s);
                ck_assert_uint_eq(svff_store_generation(s), i);
                ck_assert_uint_eq(file_generation("store.json"), i);
                if (i > 1)
                        ck_assert_uint_eq(file_generation("store.json.prev"), i - 1);
                else
                        ck_assert_ptr_null(read_file(statedir, "store.json.prev", NULL));

                _cleanup_free_ char *names = list_dir(statedir);
                ck_assert_str_eq(names, i > 1 ? "store.json store.json.prev" : "store.json");
        }

        /* the previous generation holds the previous content */
        _cleanup_(json_object_putp) struct json_object *prev = NULL;
        _cleanup_free_ char *data = NULL;
        size_t len;
        unsigned n;
        data = read_file(statedir, "store.json.prev", &len);
        ck_assert_int_eq(svff_store_parse(data, len, &prev, NULL), 0);
        ck_assert_int_eq(svff_json_get_unsigned(json_object_object_get(json_object_object_get(prev, "pfs"),
                                                                       "0000:03:00.0"),
                                                "numvfs", &n),
                         0);
        ck_assert_uint_eq(n, 4);

        /* stale temp files from a crash are replaced, not tripped over */
        write_file(statedir, "store.json.tmp", "junk", 4);
        write_file(statedir, "store.json.prev.tmp", "junk", 4);
        commit_ok(s);
        _cleanup_free_ char *names = list_dir(statedir);
        ck_assert_str_eq(names, "store.json store.json.prev");
        ck_assert_uint_eq(file_generation("store.json.prev"), 5);
}
END_TEST

START_TEST(test_commit_refuses_bad_edit) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *before = NULL, *after = NULL;

        s = open_ok();
        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.1", "0000:03:00.0", 0, NULL, "vfio-pci"), 0);
        commit_ok(s);
        before = read_file(statedir, "store.json", NULL);

        json_object_object_add(json_object_object_get(svff_store_vfs(s), "0000:03:00.1"), "index",
                               json_object_new_string("zero"));
        ck_assert_int_eq(svff_store_commit(s, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "vfs.0000:03:00.1.index"));
        svff_error_free(&err);
        ck_assert_uint_eq(svff_store_generation(s), 1);
        after = read_file(statedir, "store.json", NULL);
        ck_assert_str_eq(before, after);
        _cleanup_free_ char *names = list_dir(statedir);
        ck_assert_str_eq(names, "store.json");
}
END_TEST

/* The writer never writes what the loader would refuse: every string
 * field of every record, a key of a record and one deep in class state,
 * each given the worst a device, a hook or a file could put there (a
 * Latin-1 byte, a byte that starts nothing, an overlong form, a
 * surrogate, a code point past U+10FFFF, a character cut short), is
 * refused by its path, with the file as it was; the same fields with
 * valid text (U+FFFD included) are written and read back. */
static const char *const string_fields[] = {
        "pfs.0000:03:00.0.vf_driver",
        "pfs.0000:03:00.0.owner",
        "pfs.0000:03:00.0.image.path",
        "vfs.0000:03:00.1.pf",
        "vfs.0000:03:00.1.original_driver",
        "vfs.0000:03:00.1.driver",
        "vfs.0000:03:00.1.class.name",
        "vfs.0000:03:00.1.class.state.secondary",
        "assignments.0000:03:00.1.uuid",
        "assignments.0000:03:00.1.domain",
        "assignments.0000:03:00.1.guest_address",
        "assignments.0000:03:00.1.alias",
        "assignments.0000:03:00.1.state",
        "assignments.0000:03:00.1.pause_mode",
        "assignments.0000:03:00.1.class.mac",
        "journal.op",
        "journal.pfs.0000:03:00.0.phase",
        "journal.pfs.0000:03:00.0.reprogram.reason",
        "journal.pfs.0000:03:00.0.rollback.reason",
};

static const char *const worst[] = {
        "caf\xe9", "\xff", "\x80", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80", "flash failed: \xe2\x82",
};

/* The parent object of the dotted path in s's document (keys hold no
 * dot but the PCI addresses, which are matched whole), and in *ret_key
 * its last key. */
static struct json_object *field_parent(struct svff_store *s, const char *path, const char **ret_key) {
        static const char *const addrs[] = { "0000:03:00.0", "0000:03:00.1" };
        struct json_object *o;
        const char *p = strchr(path, '.') + 1;

        if (strncmp(path, "pfs.", 4) == 0)
                o = svff_store_pfs(s);
        else if (strncmp(path, "vfs.", 4) == 0)
                o = svff_store_vfs(s);
        else if (strncmp(path, "assignments.", 12) == 0)
                o = svff_store_assignments(s);
        else
                o = svff_store_journal(s);
        for (;;) {
                const char *dot = NULL;
                char key[64];

                for (size_t i = 0; i < ELEMENTSOF(addrs); i++)
                        if (strncmp(p, addrs[i], strlen(addrs[i])) == 0)
                                dot = p[strlen(addrs[i])] == '.' ? p + strlen(addrs[i]) : NULL;
                if (!dot)
                        dot = strchr(p, '.');
                if (!dot) {
                        *ret_key = p;
                        return o;
                }
                snprintf(key, sizeof(key), "%.*s", (int) (dot - p), p);
                ck_assert_msg(json_object_object_get_ex(o, key, &o), "no '%s' in '%s'", key, path);
                p = dot + 1;
        }
}

START_TEST(test_commit_refuses_not_utf8) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_free_ char *before = NULL;
        struct svff_assignment a = {
                .uuid = "6a1b8e1c-0000-4000-8000-000000000001",
                .domain = "vm1",
                .guest_address = "0000:05:00.0",
                .alias = "ua-svff-0000-03-00-1",
                .live = true,
                .state = SVFF_ASSIGN_PAUSED,
                .pause_mode = SVFF_PAUSE_DETACH,
        };

        s = open_ok();
        ck_assert_int_eq(svff_store_set_pf(s, "0000:03:00.0", 2, "vfio-pci"), 0);
        ck_assert_int_eq(svff_store_set_pf_owner(s, "0000:03:00.0", "policy:fpga"), 0);
        ck_assert_int_eq(svff_store_set_pf_image(s, "0000:03:00.0", json_tokener_parse("{\"path\":\"/i/a.bit\"}")), 0);
        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.1", "0000:03:00.0", 0, "qdma-vf", "vfio-pci"), 0);
        ck_assert_int_eq(svff_store_set_vf_class(s, "0000:03:00.1", json_tokener_parse(
                "{\"name\":\"nvme\",\"settings\":{},\"state\":{\"secondary\":\"online\"}}")), 0);
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &a), 0);
        ck_assert_int_eq(svff_store_set_assignment_class(s, "0000:03:00.1",
                                                         json_tokener_parse("{\"mac\":\"52:54:00:00:00:01\"}")), 0);
        svff_store_set_journal(s, json_tokener_parse(
                "{\"op\":\"reconf\",\"pfs\":{\"0000:03:00.0\":{\"phase\":\"interrupted\","
                "\"reprogram\":{\"reason\":\"flash failed\"},\"rollback\":{\"reason\":\"refused\"}}}}"));
        commit_ok(s);
        before = read_file(statedir, "store.json", NULL);

        for (size_t f = 0; f < ELEMENTSOF(string_fields); f++) {
                const char *key;
                struct json_object *parent = field_parent(s, string_fields[f], &key);
                struct json_object *was = NULL;

                ck_assert_msg(json_object_object_get_ex(parent, key, &was) && json_object_is_type(was, json_type_string),
                              "'%s' is no string field", string_fields[f]);
                was = json_object_get(was);
                for (size_t w = 0; w < ELEMENTSOF(worst); w++) {
                        struct svff_error err = SVFF_ERROR_NULL;
                        _cleanup_free_ char *after = NULL;

                        json_object_object_add(parent, key, json_object_new_string(worst[w]));
                        ck_assert_msg(svff_store_commit(s, &err) == -EINVAL, "%s = worst[%zu] was written",
                                      string_fields[f], w);
                        ck_assert_msg(strstr(svff_error_message(&err), string_fields[f]) &&
                                      strstr(svff_error_message(&err), "Refusing to write store"),
                                      "%s = worst[%zu]: '%s'", string_fields[f], w, svff_error_message(&err));
                        svff_error_free(&err);
                        ck_assert_uint_eq(svff_store_generation(s), 1);
                        after = read_file(statedir, "store.json", NULL);
                        ck_assert_str_eq(before, after);
                }
                json_object_object_add(parent, key, was);
        }

        /* keys: a record's, and one deep in a class's state */
        {
                struct svff_error err = SVFF_ERROR_NULL;
                const char *x;
                struct json_object *st = field_parent(s, "vfs.0000:03:00.1.class.state.x", &x);

                json_object_object_add(st, "caf\xe9", json_object_new_int(1));
                ck_assert_int_eq(svff_store_commit(s, &err), -EINVAL);
                ck_assert_msg(strstr(svff_error_message(&err), "'vfs.0000:03:00.1.class.state.caf"), "%s",
                              svff_error_message(&err));
                svff_error_free(&err);
                json_object_object_del(st, "caf\xe9");
                json_object_object_add(svff_store_pfs(s), "\xff", json_object_new_object());
                ck_assert_int_eq(svff_store_commit(s, &err), -EINVAL);
                svff_error_free(&err);
                json_object_object_del(svff_store_pfs(s), "\xff");
        }

        /* a driver's name from sysfs is recorded valid */
        {
                const char *orig = NULL;

                ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.1", "0000:03:00.0", 0, "qdma\xe9vf", "vfio-pci"), 0);
                commit_ok(s);
                ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.1", NULL, &orig), 1);
                ck_assert_str_eq(orig, "qdma\xef\xbf\xbdvf");
        }

        /* valid text from outside, U+FFFD included, is written and read back */
        {
                const char *key;
                struct json_object *parent = field_parent(s, "journal.pfs.0000:03:00.0.reprogram.reason", &key);

                json_object_object_add(parent, key, json_object_new_string("caf\xef\xbf\xbd \xe2\x82\xac \xf0\x9f\x94\xa5"));
                commit_ok(s);
                svff_store_free(TAKE_PTR(s));
                s = open_ok();
                parent = field_parent(s, "journal.pfs.0000:03:00.0.reprogram.reason", &key);
                ck_assert_str_eq(json_object_get_string(json_object_object_get(parent, key)),
                                 "caf\xef\xbf\xbd \xe2\x82\xac \xf0\x9f\x94\xa5");
        }
}
END_TEST

/* Writes data as the store, tries to open it, and checks the refusal:
 * the errno, a message naming the file and the way out, and the file
 * (and the directory) exactly as they were. */
static void expect_refusal(const char *data, size_t len, int error, const char *needle) {
        _cleanup_free_ char *path = NULL, *after = NULL, *names = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_store *s = (struct svff_store *) 0x1;
        size_t after_len;
        int r;

        ck_assert_int_eq(mkdir(statedir, 0700) < 0 && errno != EEXIST, 0);
        write_file(statedir, "store.json", data, len);
        ck_assert_int_ge(asprintf(&path, "%s/store.json", statedir), 0);

        r = svff_store_open(statedir, &s, &err);
        ck_assert_msg(r == error, "'%.*s': expected %d, got %d (%s)", (int) len, data, error, r,
                      svff_error_message(&err));
        ck_assert_ptr_eq(s, (struct svff_store *) 0x1);
        ck_assert_msg(strstr(svff_error_message(&err), path), "message does not name the file: %s",
                      svff_error_message(&err));
        ck_assert_msg(strstr(svff_error_message(&err), "move the file aside"),
                      "message gives no way out: %s", svff_error_message(&err));
        if (needle)
                ck_assert_msg(strstr(svff_error_message(&err), needle), "'%s' not in: %s", needle,
                              svff_error_message(&err));
        svff_error_free(&err);

        after = read_file(statedir, "store.json", &after_len);
        ck_assert_ptr_nonnull(after);
        ck_assert_uint_eq(after_len, len);
        ck_assert(memcmp(after, data, len) == 0);
        names = list_dir(statedir);
        ck_assert_str_eq(names, "store.json");
}

#define REFUSE(s, e, needle) expect_refusal(s, sizeof(s) - 1, e, needle)

static const char valid[] =
        "{\"schema\":1,\"generation\":3,"
        "\"pfs\":{\"0000:03:00.0\":{\"numvfs\":2,\"vf_driver\":\"vfio-pci\"}},"
        "\"vfs\":{\"0000:03:00.1\":{\"pf\":\"0000:03:00.0\",\"index\":0,\"original_driver\":null,\"driver\":\"vfio-pci\"},"
        "\"0000:03:00.2\":{\"pf\":\"0000:03:00.0\",\"index\":1,\"original_driver\":\"qdma-vf\",\"driver\":\"vfio-pci\"}},"
        "\"assignments\":{},\"journal\":null}\n";

START_TEST(test_refuse_truncated) {
        /* every proper prefix of a valid store is refused */
        for (size_t n = 0; n < sizeof(valid) - 2; n++)
                expect_refusal(valid, n, -EBADMSG, n == 0 ? "empty" : NULL);

        /* and the whole one loads */
        write_file(statedir, "store.json", valid, sizeof(valid) - 1);
        _cleanup_(svff_store_freep) struct svff_store *s = open_ok();
        ck_assert_uint_eq(svff_store_generation(s), 3);
}
END_TEST

START_TEST(test_refuse_bitflips) {
        char buf[sizeof(valid)];

        /* a byte with the high bit set is never valid there: outside
         * strings it is not JSON, inside it breaks UTF-8 */
        for (size_t i = 0; i < sizeof(valid) - 1; i++) {
                memcpy(buf, valid, sizeof(valid));
                buf[i] ^= (char) 0x80;
                expect_refusal(buf, sizeof(valid) - 1, -EBADMSG, NULL);
        }

        /* flips that keep the JSON well-formed but break a type */
        REFUSE("{\"schema\":1,\"generation\":3,\"pfs\":{\"0000:03:00.0\":{\"numvfs\":2,\"vf_driver\":\"vfio-pci\"}},"
               "\"vfs\":{\"0000:03:00.1\":{\"pf\":\"0000:03:00.0\",\"index\":0,\"original_driver\":null,\"driver\":\"vfio-pci\"}},"
               "\"assignments\":{},\"journal\":nulm}",
               -EBADMSG, NULL);
        REFUSE("{\"schema\":1,\"generation\":3,\"pfs\":{\"0000:03:00.0\":{\"numvfs\":2,\"vf_driver\":\"vfio-pci\"}},"
               "\"vfs\":{\"0000:03:00.1\":{\"pf\":\"0000:03:00.0\",\"index\":\"\",\"original_driver\":null,\"driver\":\"vfio-pci\"}},"
               "\"assignments\":{},\"journal\":null}",
               -EBADMSG, "vfs.0000:03:00.1.index");
}
END_TEST

START_TEST(test_refuse_types) {
        REFUSE("[]", -EBADMSG, "not a JSON object");
        REFUSE("null", -EBADMSG, NULL);
        REFUSE("\"store\"", -EBADMSG, NULL);
        REFUSE("{}", -EBADMSG, "schema");
        REFUSE("{\"schema\":\"1\",\"generation\":0}", -EBADMSG, "schema");
        REFUSE("{\"schema\":0,\"generation\":0}", -EBADMSG, "schema");
        REFUSE("{\"schema\":-1,\"generation\":0}", -EBADMSG, "schema");
        REFUSE("{\"schema\":1.0,\"generation\":0}", -EBADMSG, "schema");
        REFUSE("{\"schema\":1}", -EBADMSG, "generation");
        REFUSE("{\"schema\":1,\"generation\":-1}", -EBADMSG, "generation");
        REFUSE("{\"schema\":1,\"generation\":1.5}", -EBADMSG, "generation");
        REFUSE("{\"schema\":1,\"generation\":18446744073709551616}", -EBADMSG, "generation");
        REFUSE("{\"schema\":1,\"generation\":null}", -EBADMSG, "generation");
        /* fields svffd does not know are written back as read: json-c
         * would have clamped these, and NaN does not round-trip */
        REFUSE("{\"schema\":1,\"generation\":0,\"assignments\":{\"a\":{\"x\":18446744073709551616}}}",
               -EBADMSG, "out of the 64-bit range");
        REFUSE("{\"schema\":1,\"generation\":0,\"later\":[-9223372036854775809]}", -EBADMSG,
               "out of the 64-bit range");
        REFUSE("{\"schema\":1,\"generation\":0,\"later\":{\"o\":[NaN,3]}}", -EBADMSG, "NaN");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":[]}", -EBADMSG, "pfs");
        REFUSE("{\"schema\":1,\"generation\":0,\"vfs\":null}", -EBADMSG, "vfs");
        REFUSE("{\"schema\":1,\"generation\":0,\"assignments\":1}", -EBADMSG, "assignments");
        REFUSE("{\"schema\":1,\"generation\":0,\"assignments\":{\"a\":1}}", -EBADMSG, "assignments.a");
        /* an intent this version cannot resolve is refused, not guessed at */
        REFUSE("{\"schema\":2,\"generation\":0,\"assignments\":{\"a\":{\"intent\":\"reboot\"}}}", -EBADMSG,
               "assignments.a.intent");
        REFUSE("{\"schema\":3,\"generation\":0,\"assignments\":{\"a\":{\"class\":[]}}}", -EBADMSG,
               "'assignments.a.class' is neither null nor an object");
        REFUSE("{\"schema\":3,\"generation\":0,\"vfs\":{\"v\":{\"pf\":\"p\",\"index\":0,\"original_driver\":null,"
               "\"driver\":\"vfio-pci\",\"class\":\"nvme\"}}}",
               -EBADMSG, "'vfs.v.class' is neither null nor an object");
        REFUSE("{\"schema\":2,\"generation\":0,\"assignments\":{\"a\":{\"intent\":1}}}", -EBADMSG,
               "assignments.a.intent");
        REFUSE("{\"schema\":1,\"generation\":0,\"journal\":[]}", -EBADMSG, "journal");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":{\"p\":{\"numvfs\":-1,\"vf_driver\":\"x\"}}}", -EBADMSG,
               "pfs.p.numvfs");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":{\"p\":{\"numvfs\":4294967296,\"vf_driver\":\"x\"}}}",
               -EBADMSG, "pfs.p.numvfs");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":{\"p\":{\"numvfs\":1}}}", -EBADMSG, "pfs.p.vf_driver");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":{\"p\":[]}}", -EBADMSG, "pfs.p");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":{\"p\":{\"numvfs\":1,\"vf_driver\":\"x\",\"image\":\"/a.bit\"}}}",
               -EBADMSG, "'pfs.p.image' is not an image record");
        REFUSE("{\"schema\":1,\"generation\":0,\"pfs\":{\"p\":{\"numvfs\":1,\"vf_driver\":\"x\",\"image\":{\"ino\":1}}}}",
               -EBADMSG, "'pfs.p.image' is not an image record");
        REFUSE("{\"schema\":1,\"generation\":0,\"vfs\":{\"v\":{\"pf\":\"p\",\"index\":0,\"original_driver\":5,"
               "\"driver\":\"vfio-pci\"}}}",
               -EBADMSG, "vfs.v.original_driver");
        REFUSE("{\"schema\":1,\"generation\":0,\"vfs\":{\"v\":{\"pf\":\"p\",\"index\":0,\"original_driver\":null,"
               "\"driver\":\"vfio\\u0000pci\"}}}",
               -EBADMSG, "vfs.v.driver");
        REFUSE("{\"schema\":1,\"generation\":0,\"vfs\":{\"v\":{\"pf\":\"p\",\"original_driver\":null,"
               "\"driver\":\"vfio-pci\"}}}",
               -EBADMSG, "vfs.v.index");
        /* syntax json-c would take but JSON does not */
        REFUSE("{\"schema\":1,\"generation\":0,}", -EBADMSG, NULL);
        REFUSE("{\"schema\":1,\"generation\":0} /* c */", -EBADMSG, NULL);
        REFUSE("{\"schema\":1,\"generation\":0}\n{}", -EBADMSG, NULL);
        REFUSE("{\"schema\":1,\"generation\":0}\0", -EBADMSG, NULL);
}
END_TEST

START_TEST(test_refuse_newer) {
        _cleanup_free_ char *path = NULL, *expected = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_store *s = NULL;

        REFUSE("{\"schema\":7,\"generation\":\"whatever a newer svffd writes\",\"pfs\":[]}", -EPROTONOSUPPORT,
               "has schema 7, newer than this svffd supports (4)");
        REFUSE("{\"schema\":5}", -EPROTONOSUPPORT, "run a newer svffd");

        ck_assert_int_ge(asprintf(&path, "%s/store.json", statedir), 0);
        ck_assert_int_eq(svff_store_open(statedir, &s, &err), -EPROTONOSUPPORT);
        ck_assert_int_ge(asprintf(&expected,
                                  "Store '%s' has schema 5, newer than this svffd supports (4). "
                                  "Refusing to start so as not to overwrite it: run a newer svffd, or move the file aside.",
                                  path),
                         0);
        ck_assert_str_eq(svff_error_message(&err), expected);
        svff_error_free(&err);
}
END_TEST

START_TEST(test_refuse_message) {
        _cleanup_free_ char *path = NULL, *expected = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_store *s = NULL;

        REFUSE("{\"schema\":1,", -EBADMSG, ".prev");
        ck_assert_int_ge(asprintf(&path, "%s/store.json", statedir), 0);
        ck_assert_int_eq(svff_store_open(statedir, &s, &err), -EBADMSG);
        ck_assert_int_ge(asprintf(&expected,
                                  "Store '%s' is truncated or corrupt (unexpected end of data). "
                                  "Refusing to start so as not to overwrite it: restore '%s.prev' or move the file aside.",
                                  path, path),
                         0);
        ck_assert_str_eq(svff_error_message(&err), expected);
        svff_error_free(&err);
}
END_TEST

START_TEST(test_not_regular) {
        _cleanup_free_ char *p = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_store *s = NULL;

        ck_assert_int_eq(mkdir(statedir, 0700), 0);
        ck_assert_int_ge(asprintf(&p, "%s/store.json", statedir), 0);
        ck_assert_int_eq(mkdir(p, 0700), 0);
        ck_assert_int_eq(svff_store_open(statedir, &s, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), p));
        svff_error_free(&err);
        rmdir(p);
}
END_TEST

START_TEST(test_parse_buffer) {
        struct json_object *doc = (struct json_object *) 0x1;
        struct svff_error err = SVFF_ERROR_NULL;

        ck_assert_int_eq(svff_store_parse("{\"schema\":1,\"generation\":0}", 27, &doc, &err), 0);
        /* absent sections are added */
        ck_assert(json_object_is_type(json_object_object_get(doc, "vfs"), json_type_object));
        json_object_put(doc);

        doc = (struct json_object *) 0x1;
        ck_assert_int_eq(svff_store_parse("{\"schema\":9}", 12, &doc, &err), -EPROTONOSUPPORT);
        ck_assert_ptr_eq(doc, (struct json_object *) 0x1);
        svff_error_free(&err);
        ck_assert_int_eq(svff_store_parse("{", 1, &doc, NULL), -EBADMSG);
        ck_assert_int_eq(svff_store_parse(NULL, 0, &doc, NULL), -EBADMSG);
}
END_TEST

/* A store as svffd wrote it before intents (schema 1), and before it
 * spelled a held assignment's state "held". */
static const char v1_store[] =
        "{\"schema\":1,\"generation\":7,"
        "\"pfs\":{\"0000:03:00.0\":{\"numvfs\":2,\"vf_driver\":\"vfio-pci\"}},"
        "\"vfs\":{\"0000:03:00.1\":{\"pf\":\"0000:03:00.0\",\"index\":0,\"original_driver\":null,\"driver\":\"vfio-pci\"}},"
        "\"assignments\":{\"0000:03:00.1\":{\"uuid\":\"6a1b8e1c-0000-4000-8000-000000000001\",\"domain\":\"vm1\","
        "\"guest_address\":\"0000:05:00.0\",\"alias\":\"ua-svff-0000-03-00-1\",\"live\":false,\"config\":true,"
        "\"state\":\"paused\",\"pause_mode\":\"detach\",\"note\":\"kept\"}},"
        "\"journal\":null}\n";

START_TEST(test_migrate_v1) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_(json_object_putp) struct json_object *disk = NULL;
        _cleanup_free_ char *data = NULL;
        struct json_object *rec, *v;
        struct svff_assignment a;
        size_t len;

        ck_assert_int_eq(mkdir(statedir, 0700), 0);
        write_file(statedir, "store.json", v1_store, sizeof(v1_store) - 1);
        s = open_ok();
        ck_assert_uint_eq(svff_store_generation(s), 7);
        /* a schema 1 record reads as one with no change in flight */
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &a), 1);
        ck_assert_int_eq(a.intent, SVFF_INTENT_NONE);
        ck_assert_int_eq(a.state, SVFF_ASSIGN_PAUSED);
        ck_assert_int_eq(a.pause_mode, SVFF_PAUSE_DETACH);
        ck_assert_str_eq(a.guest_address, "0000:05:00.0");
        ck_assert(!a.live && a.config);

        /* opening alone writes nothing: the file is still schema 1 */
        data = read_file(statedir, "store.json", &len);
        ck_assert_uint_eq(len, sizeof(v1_store) - 1);
        ck_assert(memcmp(data, v1_store, len) == 0);
        free(TAKE_PTR(data));

        /* the first commit writes the current schema, every record with
         * its intent */
        commit_ok(s);
        data = read_file(statedir, "store.json", &len);
        ck_assert_ptr_nonnull(data);
        disk = json_tokener_parse(data);
        ck_assert_ptr_nonnull(disk);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(disk, "schema")), SVFF_STORE_SCHEMA);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(disk, "generation")), 8);
        rec = json_object_object_get(json_object_object_get(disk, "assignments"), "0000:03:00.1");
        ck_assert(json_object_object_get_ex(rec, "intent", &v));
        ck_assert_ptr_null(v);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(rec, "note")), "kept");
        /* the old spelling of the state is written as the new one */
        ck_assert_str_eq(json_object_get_string(json_object_object_get(rec, "state")), "held");

        /* and reads back the same */
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &a), 1);
        ck_assert_int_eq(a.intent, SVFF_INTENT_NONE);
        ck_assert_int_eq(a.state, SVFF_ASSIGN_PAUSED);
}
END_TEST

/* A schema 2 store (before classes): the records of test_migrate_v1's
 * store with their intents, as svffd wrote them before classes. */
static const char v2_store[] =
        "{\"schema\":2,\"generation\":9,"
        "\"pfs\":{\"0000:03:00.0\":{\"numvfs\":2,\"vf_driver\":\"vfio-pci\",\"owner\":\"operator\"}},"
        "\"vfs\":{\"0000:03:00.1\":{\"pf\":\"0000:03:00.0\",\"index\":0,\"original_driver\":null,\"driver\":\"vfio-pci\"}},"
        "\"assignments\":{\"0000:03:00.1\":{\"uuid\":\"6a1b8e1c-0000-4000-8000-000000000001\",\"domain\":\"vm1\","
        "\"guest_address\":\"0000:05:00.0\",\"alias\":\"ua-svff-0000-03-00-1\",\"live\":true,\"config\":true,"
        "\"state\":\"attached\",\"pause_mode\":null,\"intent\":null}},"
        "\"journal\":null}\n";

START_TEST(test_migrate_v2) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_(json_object_putp) struct json_object *disk = NULL;
        _cleanup_free_ char *data = NULL;
        struct svff_assignment a;
        const char *pf;
        size_t len;

        ck_assert_int_eq(mkdir(statedir, 0700), 0);
        write_file(statedir, "store.json", v2_store, sizeof(v2_store) - 1);
        s = open_ok();
        ck_assert_uint_eq(svff_store_generation(s), 9);
        /* every record reads as before, without a class */
        ck_assert_int_eq(svff_store_get_vf(s, "0000:03:00.1", &pf, NULL), 1);
        ck_assert_str_eq(pf, "0000:03:00.0");
        ck_assert_ptr_null(svff_store_get_vf_class(s, "0000:03:00.1"));
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &a), 1);
        ck_assert_int_eq(a.state, SVFF_ASSIGN_ATTACHED);
        ck_assert(a.live && a.config);
        ck_assert_ptr_null(svff_store_get_assignment_class(s, "0000:03:00.1"));

        /* opening writes nothing; the first commit writes the current
         * schema with the records as they were */
        data = read_file(statedir, "store.json", &len);
        ck_assert_uint_eq(len, sizeof(v2_store) - 1);
        ck_assert(memcmp(data, v2_store, len) == 0);
        free(TAKE_PTR(data));
        commit_ok(s);
        data = read_file(statedir, "store.json", &len);
        disk = json_tokener_parse(data);
        ck_assert_ptr_nonnull(disk);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(disk, "schema")), SVFF_STORE_SCHEMA);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(
                                 json_object_object_get(json_object_object_get(disk, "pfs"), "0000:03:00.0"), "owner")),
                         "operator");
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &a), 1);
        ck_assert_str_eq(a.guest_address, "0000:05:00.0");
}
END_TEST

START_TEST(test_class) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        static const char vf_class[] =
                "{\"name\":\"nvme\",\"settings\":{\"namespace\":1,\"vq\":2},"
                "\"state\":{\"scid\":1,\"secondary\":\"online\",\"vq\":2,\"vi\":1,\"namespaces\":[1],"
                "\"future\":{\"deep\":[true,null,\"x\"]}}}";
        struct svff_assignment a = {
                .uuid = "6a1b8e1c-0000-4000-8000-000000000001",
                .domain = "vm1",
                .alias = "ua-svff-0000-03-00-1",
                .live = true,
                .state = SVFF_ASSIGN_ATTACHED,
        };
        struct json_object *c;

        s = open_ok();
        /* no record, no class */
        ck_assert_ptr_null(svff_store_get_vf_class(s, "0000:03:00.1"));
        ck_assert_int_eq(svff_store_set_vf_class(s, "0000:03:00.1", json_tokener_parse("{}")), -ENOENT);
        ck_assert_int_eq(svff_store_set_assignment_class(s, "0000:03:00.1", NULL), -ENOENT);

        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.1", "0000:03:00.0", 0, NULL, "vfio-pci"), 0);
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &a), 0);
        /* only objects */
        ck_assert_int_eq(svff_store_set_vf_class(s, "0000:03:00.1", json_object_new_array()), -EINVAL);
        ck_assert_int_eq(svff_store_set_vf_class(s, "0000:03:00.1", json_tokener_parse(vf_class)), 0);
        ck_assert_int_eq(svff_store_set_assignment_class(s, "0000:03:00.1", json_tokener_parse("{\"namespace\":3}")),
                         0);

        /* the typed setters keep it */
        ck_assert_int_eq(svff_store_set_vf(s, "0000:03:00.1", "0000:03:00.0", 0, NULL, "vfio-pci"), 0);
        a.state = SVFF_ASSIGN_PAUSED;
        a.pause_mode = SVFF_PAUSE_DETACH;
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &a), 0);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));

        /* and a reopened store holds it verbatim */
        s = open_ok();
        c = svff_store_get_vf_class(s, "0000:03:00.1");
        ck_assert_ptr_nonnull(c);
        {
                _cleanup_(json_object_putp) struct json_object *want = json_tokener_parse(vf_class);

                ck_assert(json_object_equal(c, want));
        }
        c = svff_store_get_assignment_class(s, "0000:03:00.1");
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(c, "namespace")), 3);

        /* NULL clears it: null in the record, no class to the getter */
        ck_assert_int_eq(svff_store_set_vf_class(s, "0000:03:00.1", NULL), 0);
        ck_assert_ptr_null(svff_store_get_vf_class(s, "0000:03:00.1"));
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert_ptr_null(svff_store_get_vf_class(s, "0000:03:00.1"));
        ck_assert_ptr_nonnull(svff_store_get_assignment_class(s, "0000:03:00.1"));
}
END_TEST

/* A store of the release before class keys were snake_case: its
 * recorded class settings and state (VF and assignment records, and the
 * reconf journal) read with snake_case keys, which the classes look for,
 * and the next commit writes them so; what is not a key stays. */
static const char kebab_store[] =
        "{\"schema\":3,\"generation\":4,"
        "\"pfs\":{\"0000:03:00.0\":{\"numvfs\":2,\"vf_driver\":\"vfio-pci\"}},"
        "\"vfs\":{\"0000:03:00.1\":{\"pf\":\"0000:03:00.0\",\"index\":0,\"original_driver\":null,"
        "\"driver\":\"vfio-pci\",\"class\":{\"name\":\"qdma\",\"settings\":{\"vf-qmax\":8},"
        "\"state\":{\"pf-qmax\":64,\"vf-qmax\":8,\"owner\":{\"connection-id\":\"my-wired-1\"}}}}},"
        "\"assignments\":{\"0000:03:00.1\":{\"uuid\":\"6a1b8e1c-0000-4000-8000-000000000001\",\"domain\":\"vm-1\","
        "\"guest_address\":null,\"alias\":\"ua-svff-0000-03-00-1\",\"live\":true,\"config\":false,"
        "\"state\":\"attached\",\"pause_mode\":null,\"intent\":null,"
        "\"class\":{\"max-tx-rate\":100,\"link-state\":\"auto\"}}},"
        "\"journal\":null}\n";

START_TEST(test_class_old_spelling) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_(json_object_putp) struct json_object *disk = NULL;
        _cleanup_free_ char *data = NULL;
        struct json_object *c, *v;
        size_t len;

        ck_assert_int_eq(mkdir(statedir, 0700), 0);
        write_file(statedir, "store.json", kebab_store, sizeof(kebab_store) - 1);
        s = open_ok();
        c = svff_store_get_vf_class(s, "0000:03:00.1");
        ck_assert_ptr_nonnull(c);
        ck_assert_str_eq(json_object_to_json_string_ext(c, JSON_C_TO_STRING_PLAIN),
                         "{\"name\":\"qdma\",\"settings\":{\"vf_qmax\":8},"
                         "\"state\":{\"pf_qmax\":64,\"vf_qmax\":8,\"owner\":{\"connection_id\":\"my-wired-1\"}}}");
        c = svff_store_get_assignment_class(s, "0000:03:00.1");
        ck_assert_ptr_nonnull(c);
        ck_assert_int_eq(json_object_get_int(json_object_object_get(c, "max_tx_rate")), 100);
        ck_assert_str_eq(json_object_get_string(json_object_object_get(c, "link_state")), "auto");
        ck_assert(!json_object_object_get_ex(c, "max-tx-rate", NULL));

        commit_ok(s);
        data = read_file(statedir, "store.json", &len);
        ck_assert_ptr_null(strstr(data, "-qmax"));
        ck_assert_ptr_null(strstr(data, "max-tx-rate"));
        disk = json_tokener_parse(data);
        ck_assert_ptr_nonnull(disk);
        v = json_object_object_get(json_object_object_get(disk, "assignments"), "0000:03:00.1");
        ck_assert_str_eq(json_object_get_string(json_object_object_get(v, "domain")), "vm-1");
        ck_assert(json_object_object_get_ex(json_object_object_get(v, "class"), "max_tx_rate", NULL));
}
END_TEST

/* A failover pair is recorded with its assignment, and goes with it. */
START_TEST(test_failover) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        struct svff_assignment a = {
                .uuid = "6a1b8e1c-0000-4000-8000-000000000001", .domain = "vm1",
                .alias = "ua-svff-0000-03-00-1", .config = true, .state = SVFF_ASSIGN_ATTACHED,
                .failover = { .standby = "ua-net0", .mac = "52:54:00:ab:cd:ef" },
        }, b;

        s = open_ok();
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &a), 0);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &b), 1);
        ck_assert_str_eq(b.failover.standby, "ua-net0");
        ck_assert_str_eq(b.failover.mac, "52:54:00:ab:cd:ef");
        /* Written without one: the record has none. */
        b.failover = (struct svff_failover) {};
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &b), 0);
        ck_assert(!json_object_object_get_ex(json_object_object_get(svff_store_assignments(s), "0000:03:00.1"),
                                             "failover", NULL));
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &b), 1);
        ck_assert_str_eq(b.failover.standby, "");
}
END_TEST

START_TEST(test_intent) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        struct svff_assignment a = {
                .uuid = "6a1b8e1c-0000-4000-8000-000000000001", .domain = "vm1",
                .alias = "ua-svff-0000-03-00-1", .config = true, .state = SVFF_ASSIGN_ATTACHED,
                .intent = SVFF_INTENT_ATTACH,
        }, b;

        for (int i = SVFF_INTENT_NONE; i <= SVFF_INTENT_UNPAUSE; i++)
                ck_assert_int_eq(svff_assign_intent_from_string(svff_assign_intent_to_string(i)), i);
        ck_assert_int_eq(svff_assign_intent_from_string("reboot"), -EINVAL);

        s = open_ok();
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &a), 0);
        commit_ok(s);
        svff_store_free(TAKE_PTR(s));
        s = open_ok();
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &b), 1);
        ck_assert_int_eq(b.intent, SVFF_INTENT_ATTACH);

        /* a lifecycle event leaves a record with a change in flight alone */
        ck_assert_int_eq(svff_store_domain_event(s, a.uuid, "vm1", SVFF_DOMAIN_UNDEFINED, NULL, NULL), 0);
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", &b), 1);
        b.intent = SVFF_INTENT_NONE;
        ck_assert_int_eq(svff_store_set_assignment(s, "0000:03:00.1", &b), 0);
        ck_assert_int_eq(svff_store_domain_event(s, a.uuid, "vm1", SVFF_DOMAIN_UNDEFINED, NULL, NULL), 1);
        ck_assert_int_eq(svff_store_get_assignment(s, "0000:03:00.1", NULL), 0);

}
END_TEST

/* Every intent against every view libvirt can give of the VF. */
START_TEST(test_resolve) {
        static const struct {
                enum svff_assign_intent intent;
                enum svff_assign_state state;   /* as journaled */
                enum svff_pause_mode mode;
                bool in_live, in_config;
                bool keep;                      /* a record remains */
                enum svff_assign_state want_state;
                enum svff_pause_mode want_mode;
        } cases[] = {
                /* attach: where libvirt has it, or nothing */
                { SVFF_INTENT_ATTACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, false, false, 0, 0 },
                { SVFF_INTENT_ATTACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, true, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                { SVFF_INTENT_ATTACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, true, false, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                { SVFF_INTENT_ATTACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, true, true, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                /* detach: gone is done; still running with it may yet go */
                { SVFF_INTENT_DETACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, false, false, 0, 0 },
                { SVFF_INTENT_DETACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, true, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                { SVFF_INTENT_DETACH, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, true, true, true, SVFF_ASSIGN_DETACHING, SVFF_PAUSE_NONE },
                { SVFF_INTENT_DETACH, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH, false, false, false, 0, 0 },
                { SVFF_INTENT_DETACH, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_NATIVE, false, true, true, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_NATIVE },
                /* pause: gone is paused by detach, the reservation kept */
                { SVFF_INTENT_PAUSE, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, false, true, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH },
                { SVFF_INTENT_PAUSE, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, false, true, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                { SVFF_INTENT_PAUSE, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE, true, false, true, SVFF_ASSIGN_DETACHING, SVFF_PAUSE_DETACH },
                /* unpause: there is attached, gone is still paused */
                { SVFF_INTENT_UNPAUSE, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH, false, false, true, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH },
                { SVFF_INTENT_UNPAUSE, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH, false, true, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                { SVFF_INTENT_UNPAUSE, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_NATIVE, true, false, true, SVFF_ASSIGN_ATTACHED, SVFF_PAUSE_NONE },
                /* settled: untouched */
                { SVFF_INTENT_NONE, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH, true, true, true, SVFF_ASSIGN_PAUSED, SVFF_PAUSE_DETACH },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct svff_assignment a = {
                        .uuid = "6a1b8e1c-0000-4000-8000-000000000001", .domain = "vm1",
                        .alias = "ua-svff-0000-03-00-1", .guest_address = "0000:05:00.0",
                        .live = true, .config = true,
                        .state = cases[i].state, .pause_mode = cases[i].mode, .intent = cases[i].intent,
                };
                bool keep, present = cases[i].in_live || cases[i].in_config;

                keep = svff_assignment_resolve(&a, cases[i].in_live, cases[i].in_config, present ? "ua-found" : NULL,
                                               present ? "0000:06:00.0" : NULL);
                ck_assert_msg(keep == cases[i].keep, "case %zu: keep %d", i, keep);
                ck_assert_int_eq(a.intent, SVFF_INTENT_NONE);
                if (!keep)
                        continue;
                ck_assert_msg(a.state == cases[i].want_state, "case %zu: state %s", i,
                              svff_assign_state_to_string(a.state));
                ck_assert_msg(a.pause_mode == cases[i].want_mode, "case %zu: mode %d", i, a.pause_mode);
                if (cases[i].intent != SVFF_INTENT_NONE && present) {
                        /* the record says which definitions hold it */
                        ck_assert_msg(a.live == cases[i].in_live && a.config == cases[i].in_config, "case %zu", i);
                }
                if ((cases[i].intent == SVFF_INTENT_ATTACH || cases[i].intent == SVFF_INTENT_UNPAUSE) && present) {
                        ck_assert_str_eq(a.alias, "ua-found");
                        ck_assert_str_eq(a.guest_address, "0000:06:00.0");
                } else
                        ck_assert_str_eq(a.guest_address, "0000:05:00.0");
        }
}
END_TEST

static Suite *store_suite(void) {
        Suite *s = suite_create("store");
        TCase *tc = tcase_create("store");

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_empty);
        tcase_add_test(tc, test_roundtrip);
        tcase_add_test(tc, test_pf_owner);
        tcase_add_test(tc, test_pf_image);
        tcase_add_test(tc, test_generations);
        tcase_add_test(tc, test_commit_refuses_bad_edit);
        tcase_add_test(tc, test_commit_refuses_not_utf8);
        tcase_add_test(tc, test_refuse_truncated);
        tcase_add_test(tc, test_refuse_bitflips);
        tcase_add_test(tc, test_refuse_types);
        tcase_add_test(tc, test_refuse_newer);
        tcase_add_test(tc, test_refuse_message);
        tcase_add_test(tc, test_not_regular);
        tcase_add_test(tc, test_parse_buffer);
        tcase_add_test(tc, test_migrate_v1);
        tcase_add_test(tc, test_migrate_v2);
        tcase_add_test(tc, test_class);
        tcase_add_test(tc, test_class_old_spelling);
        tcase_add_test(tc, test_intent);
        tcase_add_test(tc, test_failover);
        tcase_add_test(tc, test_resolve);
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        SRunner *sr = srunner_create(store_suite());
        int failed;

        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}

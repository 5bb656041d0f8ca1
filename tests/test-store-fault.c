/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Store commits on a full disk: a small tmpfs, filled up, in a private
 * mount namespace so nothing outlives the test even if it crashes. */

#include <check.h>
#include <errno.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <unistd.h>

#include "error.h"
#include "json-util.h"
#include "macro.h"
#include "store.h"
#include "store-util.h"

#define EXIT_SKIP 77

static char mnt[] = "/tmp/test-store-fault.XXXXXX";
static char *statedir;

static void fill_vfs(struct svff_store *s, unsigned n) {
        for (unsigned i = 0; i < n; i++) {
                char vf[32];

                snprintf(vf, sizeof(vf), "0000:%02x:%02x.%u", 0x10 + i / 256, (i / 8) % 32, i % 8);
                ck_assert_int_eq(svff_store_set_vf(s, vf, "0000:03:00.0", i, "qdma-vf", "vfio-pci"), 0);
        }
}

/* Fills the file system, then frees 'slack' bytes. Returns the fd of
 * the filler, so the caller can give the space back. */
static int fill_disk(size_t slack) {
        _cleanup_free_ char *path = NULL;
        static char block[4096];
        off_t size = 0;
        int fd;

        ck_assert_int_ge(asprintf(&path, "%s/filler", mnt), 0);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        for (;;) {
                ssize_t k = write(fd, block, sizeof(block));
                if (k < 0) {
                        ck_assert_int_eq(errno, ENOSPC);
                        break;
                }
                size += k;
        }
        ck_assert_int_eq(ftruncate(fd, size > (off_t) slack ? size - (off_t) slack : 0), 0);
        return fd;
}

static void free_disk(int fd) {
        _cleanup_free_ char *path = NULL;

        ck_assert_int_ge(asprintf(&path, "%s/filler", mnt), 0);
        close(fd);
        ck_assert_int_eq(unlink(path), 0);
}

static uint64_t file_generation(const char *name) {
        _cleanup_free_ char *data = NULL;
        _cleanup_(json_object_putp) struct json_object *doc = NULL;
        uint64_t g;
        size_t len;

        data = read_file(statedir, name, &len);
        ck_assert_ptr_nonnull(data);
        ck_assert_int_eq(svff_store_parse(data, len, &doc, NULL), 0);
        ck_assert_int_eq(svff_json_get_u64(doc, "generation", &g), 0);
        return g;
}

START_TEST(test_enospc) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *before = NULL, *after = NULL, *prev_before = NULL, *prev_after = NULL,
                            *names = NULL;
        size_t before_len, after_len;
        int filler;

        ck_assert_int_eq(svff_store_open(statedir, &s, &err), 0);
        fill_vfs(s, 4);
        ck_assert_int_eq(svff_store_commit(s, &err), 0);
        before = read_file(statedir, "store.json", &before_len);

        /* 8 KiB left, a document of about 40 KiB to write */
        filler = fill_disk(8192);
        fill_vfs(s, 200);
        ck_assert_int_eq(svff_store_commit(s, &err), -ENOSPC);
        ck_assert_msg(strstr(svff_error_message(&err), "store.json.tmp"), "%s", svff_error_message(&err));
        svff_error_free(&err);

        ck_assert_uint_eq(svff_store_generation(s), 1);
        after = read_file(statedir, "store.json", &after_len);
        ck_assert_uint_eq(after_len, before_len);
        ck_assert(memcmp(before, after, before_len) == 0);
        names = list_dir(statedir);
        ck_assert_str_eq(names, "store.json");  /* no temp file left */

        /* the store on disk still loads, as generation 1 */
        {
                _cleanup_(svff_store_freep) struct svff_store *t = NULL;
                ck_assert_int_eq(svff_store_open(statedir, &t, NULL), 0);
                ck_assert_uint_eq(svff_store_generation(t), 1);
                ck_assert_int_eq(json_object_object_length(svff_store_vfs(t)), 4);
        }

        /* with room again, the same edits commit as generation 2 */
        free_disk(filler);
        ck_assert_int_eq(svff_store_commit(s, &err), 0);
        ck_assert_uint_eq(svff_store_generation(s), 2);
        ck_assert_uint_eq(file_generation("store.json"), 2);
        ck_assert_uint_eq(file_generation("store.json.prev"), 1);

        /* a failure with a previous generation around leaves both alone */
        prev_before = read_file(statedir, "store.json.prev", NULL);
        free(before);
        before = read_file(statedir, "store.json", &before_len);
        filler = fill_disk(4096);
        fill_vfs(s, 400);
        ck_assert_int_eq(svff_store_commit(s, &err), -ENOSPC);
        svff_error_free(&err);
        ck_assert_uint_eq(svff_store_generation(s), 2);
        free(after);
        after = read_file(statedir, "store.json", &after_len);
        ck_assert_uint_eq(after_len, before_len);
        ck_assert(memcmp(before, after, before_len) == 0);
        prev_after = read_file(statedir, "store.json.prev", NULL);
        ck_assert_str_eq(prev_before, prev_after);
        free(names);
        names = list_dir(statedir);
        ck_assert_str_eq(names, "store.json store.json.prev");
        free_disk(filler);

        /* and the generation written next is 3, not 4 */
        svff_store_free(TAKE_PTR(s));
        ck_assert_int_eq(svff_store_open(statedir, &s, NULL), 0);
        fill_vfs(s, 100);
        ck_assert_int_eq(svff_store_commit(s, NULL), 0);
        ck_assert_uint_eq(file_generation("store.json"), 3);
}
END_TEST

int main(void) {
        SRunner *sr;
        int failed;

        if (unshare(CLONE_NEWNS) < 0) {
                printf("SKIP: cannot make a mount namespace for the small tmpfs: %m\n");
                return EXIT_SKIP;
        }
        /* the type is ignored for a propagation change; "none" keeps valgrind quiet */
        if (mount("none", "/", "none", MS_REC | MS_PRIVATE, NULL) < 0) {
                printf("SKIP: cannot make mounts private: %m\n");
                return EXIT_SKIP;
        }
        if (!mkdtemp(mnt)) {
                printf("mkdtemp: %m\n");
                return EXIT_FAILURE;
        }
        if (mount("tmpfs", mnt, "tmpfs", MS_NOSUID | MS_NODEV, "size=64k,mode=0700") < 0) {
                int r = errno;
                rmdir(mnt);
                errno = r;
                if (r == EPERM) {
                        printf("SKIP: mounting a small tmpfs is not permitted here: %m\n");
                        return EXIT_SKIP;
                }
                printf("mount tmpfs on '%s': %m\n", mnt);
                return EXIT_FAILURE;
        }
        if (asprintf(&statedir, "%s/state", mnt) < 0)
                return EXIT_FAILURE;

        Suite *s = suite_create("store-fault");
        TCase *tc = tcase_create("enospc");
        tcase_add_test(tc, test_enospc);
        tcase_set_timeout(tc, 60);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);

        (void) umount2(mnt, MNT_DETACH);
        (void) rmdir(mnt);
        free(statedir);
        return failed == 0 ? 0 : 1;
}

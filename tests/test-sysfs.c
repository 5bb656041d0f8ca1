/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "context.h"
#include "fixture-util.h"
#include "sysfs.h"

static char *root;
static struct svff_ctx *ctx;
static int rootfd;

static void setup(void) {
        root = fixture_new();
        fixture_file(root, "a/text", "hello\n\n");
        fixture_file(root, "a/hex", "0x10ee\n");
        fixture_file(root, "a/barehex", "903f\n");
        fixture_file(root, "a/dec", "252\n");
        fixture_file(root, "a/neg", "-1\n");
        fixture_file(root, "a/big", "18446744073709551616\n");
        fixture_file(root, "a/garbage", "12abc\n");
        fixture_file(root, "a/space", " 12\n");
        fixture_file(root, "a/one", "1\n");
        fixture_file(root, "a/zero", "0\n");
        fixture_file(root, "a/empty", "");
        fixture_file(root, "a/w", "");
        fixture_link(root, "a/driver", "../../bus/pci/drivers/vfio-pci");
        fixture_mkdir(root, "a/dir/c");
        fixture_mkdir(root, "a/dir/a");
        fixture_mkdir(root, "a/dir/b");
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
        rootfd = svff_ctx_get_rootfd(ctx);
}

static void teardown(void) {
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

START_TEST(test_read) {
        _cleanup_free_ char *s = NULL;
        char *untouched = (char *) "x";

        ck_assert_int_eq(svff_sysfs_read(rootfd, "a/text", &s), 0);
        ck_assert_str_eq(s, "hello\n");  /* only one newline stripped */
        s = mfree(s);
        ck_assert_int_eq(svff_sysfs_read(rootfd, "a/empty", &s), 0);
        ck_assert_str_eq(s, "");
        s = mfree(s);
        ck_assert_int_eq(svff_sysfs_readf(rootfd, &s, "a/%s", "dec"), 0);
        ck_assert_str_eq(s, "252");

        s = mfree(s);

        /* larger than the first buffer, and exactly filling it */
        for (size_t n = 4094; n <= 4096 * 3 + 1; n += n < 4097 ? 1 : 4096) {
                _cleanup_free_ char *big = malloc(n + 1), *path = NULL;

                ck_assert_ptr_nonnull(big);
                memset(big, 'z', n);
                big[n] = 0;
                ck_assert_int_ge(asprintf(&path, "a/big%zu", n), 0);
                fixture_file(root, path, big);
                ck_assert_int_eq(svff_sysfs_read(rootfd, path, &s), 0);
                ck_assert_uint_eq(strlen(s), n);
                s = mfree(s);
        }

        ck_assert_int_eq(svff_sysfs_read(rootfd, "a/missing", &untouched), -ENOENT);
        ck_assert_str_eq(untouched, "x");
        /* Absolute paths would escape the root. */
        ck_assert_int_eq(svff_sysfs_read(rootfd, "/etc/hostname", &untouched), -EINVAL);
        ck_assert_int_eq(svff_sysfs_read(rootfd, "", &untouched), -EINVAL);
        ck_assert_int_eq(svff_sysfs_write(rootfd, "/tmp/x", "1"), -EINVAL);
}
END_TEST

START_TEST(test_numbers) {
        uint64_t u = 7;
        int i = 7;
        bool b;

        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/hex", &u), 0);
        ck_assert_uint_eq(u, 0x10ee);
        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/dec", &u), 0);
        ck_assert_uint_eq(u, 252);
        ck_assert_int_eq(svff_sysfs_read_hex(rootfd, "a/barehex", &u), 0);
        ck_assert_uint_eq(u, 0x903f);
        ck_assert_int_eq(svff_sysfs_read_hex(rootfd, "a/hex", &u), 0);
        ck_assert_uint_eq(u, 0x10ee);

        u = 7;
        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/neg", &u), -EINVAL);
        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/big", &u), -ERANGE);
        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/garbage", &u), -EINVAL);
        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/space", &u), -EINVAL);
        ck_assert_int_eq(svff_sysfs_read_u64(rootfd, "a/empty", &u), -EINVAL);
        ck_assert_uint_eq(u, 7);

        ck_assert_int_eq(svff_sysfs_read_int(rootfd, "a/neg", &i), 0);
        ck_assert_int_eq(i, -1);
        ck_assert_int_eq(svff_sysfs_read_int(rootfd, "a/big", &i), -ERANGE);
        ck_assert_int_eq(i, -1);

        ck_assert_int_eq(svff_sysfs_read_bool(rootfd, "a/one", &b), 0);
        ck_assert(b);
        ck_assert_int_eq(svff_sysfs_read_bool(rootfd, "a/zero", &b), 0);
        ck_assert(!b);
        ck_assert_int_eq(svff_sysfs_read_bool(rootfd, "a/dec", &b), -EINVAL);
}
END_TEST

START_TEST(test_write_links_dirs) {
        _cleanup_free_ char *s = NULL;
        _cleanup_strv_free_ char **l = NULL;

        ck_assert_int_eq(svff_sysfs_write(rootfd, "a/w", "vfio-pci"), 0);
        ck_assert_int_eq(svff_sysfs_read(rootfd, "a/w", &s), 0);
        ck_assert_str_eq(s, "vfio-pci");
        s = mfree(s);
        ck_assert_int_eq(svff_sysfs_write(rootfd, "a/nodir/w", "1"), -ENOENT);

        ck_assert_int_eq(svff_sysfs_readlink_base(rootfd, "a/driver", &s), 0);
        ck_assert_str_eq(s, "vfio-pci");
        ck_assert_int_eq(svff_sysfs_readlink_base(rootfd, "a/nolink", &s), -ENOENT);
        ck_assert_int_eq(svff_sysfs_readlink_base(rootfd, "a/text", &s), -EINVAL);

        /* A dangling link exists: the link, not its target, is asked about. */
        ck_assert_int_eq(svff_sysfs_exists(rootfd, "a/driver"), 1);
        ck_assert_int_eq(svff_sysfs_exists(rootfd, "a/text"), 1);
        ck_assert_int_eq(svff_sysfs_exists(rootfd, "a/nope"), 0);

        ck_assert_int_eq(svff_sysfs_list_dir(rootfd, "a/dir", &l), 0);
        ck_assert_ptr_nonnull(l[2]);
        ck_assert_str_eq(l[0], "a");
        ck_assert_str_eq(l[1], "b");
        ck_assert_str_eq(l[2], "c");
        ck_assert_ptr_null(l[3]);
        ck_assert_int_eq(svff_sysfs_list_dir(rootfd, "a/text", &l), -ENOTDIR);

        {
                _cleanup_close_ int fd = svff_sysfs_open_dir(rootfd, "a");
                ck_assert_int_ge(fd, 0);
                s = mfree(s);
                ck_assert_int_eq(svff_sysfs_read(fd, "dec", &s), 0);
                ck_assert_str_eq(s, "252");
                ck_assert_int_eq(svff_sysfs_open_dir(rootfd, "a/text"), -ENOTDIR);
        }
}
END_TEST

START_TEST(test_deadline_completes) {
        _cleanup_free_ char *s = NULL;

        ck_assert_int_eq(svff_sysfs_write_deadline(ctx, "a/w", "4", 5 * USEC_PER_SEC), 0);
        ck_assert_int_eq(svff_sysfs_read(rootfd, "a/w", &s), 0);
        ck_assert_str_eq(s, "4");
        ck_assert_int_eq(svff_sysfs_write_deadline(ctx, "a/nodir/w", "4", 5 * USEC_PER_SEC), -ENOENT);
        ck_assert_int_eq(svff_sysfs_write_deadline(ctx, "a/w", "5", 0), 0);
        ck_assert_uint_eq(svff_ctx_get_stuck_writes(ctx), 0);
}
END_TEST

/* Reads what a blocked FIFO writer eventually writes: opening the read
 * side is what lets its open() return. */
static void drain_fifo(const char *path, const char *expect) {
        _cleanup_close_ int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
        usec_t deadline = svff_now_usec() + 5 * USEC_PER_SEC;
        char buf[16];
        size_t len = 0;

        ck_assert_int_ge(fd, 0);
        while (svff_now_usec() < deadline) {
                ssize_t n = read(fd, buf + len, sizeof(buf) - 1 - len);
                if (n > 0) {
                        len += (size_t) n;
                        buf[len] = '\0';
                        /* Writers blocked together finish in any order. */
                        if (len == strlen(expect) && strspn(buf, expect) == len)
                                return;
                }
                nanosleep(&(struct timespec) { .tv_nsec = 1000 * 1000 }, NULL);
        }
        ck_abort_msg("FIFO writer never wrote '%s'", expect);
}

START_TEST(test_deadline_fifo) {
        _cleanup_free_ char *fifo = NULL;
        usec_t start, elapsed, deadline;

        ck_assert_int_ge(asprintf(&fifo, "%s/a/fifo", root), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);

        /* No reader: open(O_WRONLY) blocks, like a numvfs=0 write while
         * QEMU holds a VF. */
        start = svff_now_usec();
        ck_assert_int_eq(svff_sysfs_write_deadline(ctx, "a/fifo", "0", 200 * USEC_PER_MSEC), -ETIMEDOUT);
        elapsed = svff_now_usec() - start;
        ck_assert_uint_ge(elapsed, 200 * USEC_PER_MSEC);
        ck_assert_uint_lt(elapsed, 2 * USEC_PER_SEC);
        ck_assert_uint_eq(svff_ctx_get_stuck_writes(ctx), 1);

        ck_assert_int_eq(svff_sysfs_write_deadline(ctx, "a/fifo", "1", 50 * USEC_PER_MSEC), -ETIMEDOUT);
        ck_assert_uint_eq(svff_ctx_get_stuck_writes(ctx), 2);

        drain_fifo(fifo, "01");
        deadline = svff_now_usec() + 5 * USEC_PER_SEC;
        while (svff_ctx_get_stuck_writes(ctx) > 0 && svff_now_usec() < deadline)
                nanosleep(&(struct timespec) { .tv_nsec = 1000 * 1000 }, NULL);
        ck_assert_uint_eq(svff_ctx_get_stuck_writes(ctx), 0);
}
END_TEST

/* Writes value into the FIFO at path once its reader is there. */
static void feed_fifo(const char *path, const char *value) {
        _cleanup_close_ int fd = -EBADF;
        usec_t deadline = svff_now_usec() + 5 * USEC_PER_SEC;

        /* O_NONBLOCK: ENXIO until the reader has opened its side. */
        while ((fd = open(path, O_WRONLY | O_NONBLOCK | O_CLOEXEC)) < 0 && errno == ENXIO &&
               svff_now_usec() < deadline)
                nanosleep(&(struct timespec) { .tv_nsec = 1000 * 1000 }, NULL);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, value, strlen(value)), (ssize_t) strlen(value));
}

START_TEST(test_read_deadline) {
        _cleanup_free_ char *fifo = NULL;
        uint64_t v = 0, since = 0;
        usec_t start, elapsed, deadline;

        ck_assert_int_ge(asprintf(&fifo, "%s/a/fifo", root), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);

        ck_assert_int_eq(svff_sysfs_read_u64_deadline(ctx, "a/dec", 5 * USEC_PER_SEC, &v), 0);
        ck_assert_uint_eq(v, 252);
        ck_assert_int_eq(svff_sysfs_read_u64_deadline(ctx, "a/text", 5 * USEC_PER_SEC, &v), -EINVAL);
        ck_assert_int_eq(svff_sysfs_read_u64_deadline(ctx, "a/none", 5 * USEC_PER_SEC, &v), -ENOENT);
        ck_assert_int_eq(svff_ctx_read_stuck(ctx, "a/fifo", NULL), 0);

        /* No writer: open(O_RDONLY) blocks, as reading sriov_numvfs does
         * while another process's write to it is in the kernel. */
        start = svff_now_usec();
        ck_assert_int_eq(svff_sysfs_read_u64_deadline(ctx, "a/fifo", 100 * USEC_PER_MSEC, &v), -ETIMEDOUT);
        elapsed = svff_now_usec() - start;
        ck_assert_uint_ge(elapsed, 100 * USEC_PER_MSEC);
        ck_assert_uint_lt(elapsed, 2 * USEC_PER_SEC);
        ck_assert_int_eq(svff_ctx_read_stuck(ctx, "a/fifo", &since), 1);
        ck_assert_uint_ge(since, start);
        ck_assert_uint_le(since, start + elapsed);
        /* No second reader piles up behind the first: busy at once. */
        start = svff_now_usec();
        ck_assert_int_eq(svff_sysfs_read_u64_deadline(ctx, "a/fifo", 5 * USEC_PER_SEC, &v), -EBUSY);
        ck_assert_uint_lt(svff_now_usec() - start, USEC_PER_SEC);
        /* A write of the same path is no read. */
        ck_assert_int_eq(svff_ctx_write_pending(ctx, "a/fifo", NULL, NULL), 0);

        feed_fifo(fifo, "3\n");
        deadline = svff_now_usec() + 5 * USEC_PER_SEC;
        while (svff_ctx_read_stuck(ctx, "a/fifo", NULL) > 0 && svff_now_usec() < deadline)
                nanosleep(&(struct timespec) { .tv_nsec = 1000 * 1000 }, NULL);
        ck_assert_int_eq(svff_ctx_read_stuck(ctx, "a/fifo", NULL), 0);
}
END_TEST

START_TEST(test_deadline_outlives_ctx) {
        _cleanup_free_ char *fifo = NULL;

        ck_assert_int_ge(asprintf(&fifo, "%s/a/fifo", root), 0);
        ck_assert_int_eq(mkfifo(fifo, 0600), 0);

        ck_assert_int_eq(svff_sysfs_write_deadline(ctx, "a/fifo", "7", 20 * USEC_PER_MSEC), -ETIMEDOUT);
        /* The caller lets go of everything; the writer thread must not
         * touch freed memory when it finally gets through (ASan). */
        ctx = svff_ctx_unref(ctx);
        drain_fifo(fifo, "7");
        nanosleep(&(struct timespec) { .tv_nsec = 100 * 1000 * 1000 }, NULL);
}
END_TEST

START_TEST(test_ctx) {
        struct svff_ctx *c = (struct svff_ctx *) 0x1;

        ck_assert_int_eq(svff_ctx_new("/nonexistent-svff-root", &c), -ENOENT);
        ck_assert_ptr_eq(c, (struct svff_ctx *) 0x1);
        ck_assert_str_eq(svff_ctx_get_root(ctx), root);
        ck_assert_ptr_eq(svff_ctx_ref(ctx), ctx);
        ck_assert_ptr_null(svff_ctx_unref(ctx));
        ck_assert_ptr_null(svff_ctx_unref(NULL));
}
END_TEST

int main(void) {
        Suite *s = suite_create("sysfs");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_read);
        tcase_add_test(tc, test_numbers);
        tcase_add_test(tc, test_write_links_dirs);
        tcase_add_test(tc, test_deadline_completes);
        tcase_add_test(tc, test_deadline_fifo);
        tcase_add_test(tc, test_read_deadline);
        tcase_add_test(tc, test_deadline_outlives_ctx);
        tcase_add_test(tc, test_ctx);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

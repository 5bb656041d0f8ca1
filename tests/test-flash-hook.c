/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The flash hook runner with small hook scripts: success (its arguments,
 * environment and output), failure, a hook past its deadline (killed
 * with its children), a hook reaped behind the runner's back (its
 * group killed all the same), and images refused by path: outside the
 * directory, through a symbolic link, with "..", not a regular file, in
 * a directory others can write; hooks and images only root can change
 * (owner, the directories on the way, symbolic links).
 *
 * kill(), waitpid() and waitid() are wrapped here to see the order the
 * runner calls them in: a process group is killed only while its
 * leader is unreaped, so its id cannot have been reused. */

#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "flash-hook.h"
#include "json-util.h"
#include "sysfs.h"

#define PF "0000:01:00.0"

static char dir[] = "/tmp/svff-flash-test.XXXXXX";
static char images[256], image[300], hookp[300];
static char *lines;             /* the hook's output, one a line */
static struct svff_ctx *ctx;

/* Pids this process reaped, and kills of their groups after that. */
static pid_t reaped[64];
static unsigned n_reaped, late_group_kills;

static void note_reaped(pid_t pid) {
        if (pid > 0 && n_reaped < ELEMENTSOF(reaped))
                reaped[n_reaped++] = pid;
}

int kill(pid_t pid, int sig) {
        for (unsigned i = 0; pid < -1 && i < n_reaped; i++)
                if (reaped[i] == -pid)
                        late_group_kills++;
        return (int) syscall(SYS_kill, pid, sig);
}

pid_t waitpid(pid_t pid, int *status, int options) {
        pid_t r = (pid_t) syscall(SYS_wait4, pid, status, options, NULL);

        note_reaped(r);
        return r;
}

int waitid(idtype_t idtype, id_t id, siginfo_t *info, int options) {
        int r = (int) syscall(SYS_waitid, idtype, id, info, options, NULL);

        if (r == 0 && !(options & WNOWAIT))
                note_reaped(info->si_pid);
        return r;
}

static void collect(void *userdata, const char *line) {
        char *j = NULL;

        (void) userdata;
        ck_assert_int_ge(asprintf(&j, "%s%s\n", lines ?: "", line), 0);
        free(lines);
        lines = j;
}

static int read_text(const char *path, char **ret) {
        char buf[4096];
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        close(fd);
        if (n < 0)
                return -EIO;
        buf[n] = '\0';
        *ret = strdup(buf);
        return 0;
}

static void write_file(const char *path, const char *text, mode_t mode) {
        FILE *f = fopen(path, "we");

        ck_assert_ptr_nonnull(f);
        fputs(text, f);
        ck_assert_int_eq(fclose(f), 0);
        ck_assert_int_eq(chmod(path, mode), 0);
}

static void hook_script(const char *body) {
        char *text = NULL;

        ck_assert_int_ge(asprintf(&text, "#!/bin/sh\n%s\n", body), 0);
        write_file(hookp, text, 0755);
        free(text);
}

static void setup(void) {
        ck_assert_ptr_nonnull(mkdtemp(dir));
        snprintf(images, sizeof(images), "%s/images", dir);
        snprintf(image, sizeof(image), "%s/fpga.bit", images);
        snprintf(hookp, sizeof(hookp), "%s/flash", dir);
        ck_assert_int_eq(mkdir(images, 0755), 0);
        write_file(image, "bitstream\n", 0644);
        ck_assert_int_eq(svff_ctx_new("/", &ctx), 0);
}

static void teardown(void) {
        char *cmd = NULL;

        ck_assert_int_ge(asprintf(&cmd, "rm -rf '%s'", dir), 0);
        ck_assert_int_eq(system(cmd), 0);
        free(cmd);
        strcpy(dir, "/tmp/svff-flash-test.XXXXXX");
        lines = mfree(lines);
        ctx = svff_ctx_unref(ctx);
}

static int run(const char *img, uint64_t timeout_usec, struct svff_error *err) {
        struct svff_flash_hook h = {
                .path = hookp,
                .image_dir = images,
                .timeout_usec = timeout_usec,
                .output = collect,
        };

        return svff_flash_hook_run(ctx, &h, PF, img, err);
}

static void assert_error(int r, const struct svff_error *err, int code, const char *needle) {
        ck_assert_msg(r == code, "returned %d (%s), expected %d; message: %s", r, strerror(-r), code,
                      svff_error_message(err));
        ck_assert_msg(strstr(svff_error_message(err), needle), "message '%s' lacks '%s'",
                      svff_error_message(err), needle);
}

/* The pid the hook wrote to pidfile is gone: reaped by init or a
 * zombie at most, never still running. */
static void assert_gone(const char *pidfile) {
        char *s = NULL, *st = NULL, stat_path[64];
        long child;

        ck_assert_int_eq(read_text(pidfile, &s), 0);
        child = strtol(s, NULL, 10);
        free(s);
        ck_assert_int_gt(child, 1);
        snprintf(stat_path, sizeof(stat_path), "/proc/%ld/stat", child);
        for (int i = 0; i < 100 && read_text(stat_path, &st) == 0 && !strstr(st, ") Z "); i++) {
                st = mfree(st);
                usleep(20000);
        }
        st = mfree(st);
        ck_assert_msg(read_text(stat_path, &st) < 0 || strstr(st, ") Z "), "the hook's child %ld outlived it: %s",
                      child, st);
        free(st);
}

START_TEST(test_success) {
        struct svff_error err = SVFF_ERROR_NULL;
        long long deadline = 0;
        char *want = NULL, *d;
        time_t t0 = time(NULL);

        hook_script("echo \"args $1 $2\"\necho \"env $SVFF_PF $SVFF_IMAGE\"\necho \"deadline $3 $SVFF_DEADLINE\"\n"
                    "echo to-stderr >&2\nread x && echo \"stdin '$x'\"\nprintf 'no newline'");
        ck_assert_msg(run(image, 20 * USEC_PER_SEC, &err) == 0, "%s", svff_error_message(&err));
        ck_assert_int_ge(asprintf(&want, "args %s %s\nenv %s %s\n", PF, image, PF, image), 0);
        ck_assert_msg(strncmp(lines, want, strlen(want)) == 0, "output:\n%s", lines);
        free(want);
        d = strstr(lines, "deadline ");
        ck_assert_ptr_nonnull(d);
        ck_assert_int_eq(sscanf(d, "deadline %lld", &deadline), 1);
        /* seconds since the epoch, 20 s on; the same in the environment */
        ck_assert_int_ge(deadline, (long long) t0 + 19);
        ck_assert_int_le(deadline, (long long) time(NULL) + 21);
        ck_assert_int_ge(asprintf(&want, "deadline %lld %lld\n", deadline, deadline), 0);
        ck_assert_msg(strstr(lines, want), "output:\n%s", lines);
        free(want);
        ck_assert_msg(strstr(lines, "to-stderr\n"), "stderr not logged:\n%s", lines);
        ck_assert_msg(!strstr(lines, "stdin"), "stdin was not /dev/null:\n%s", lines);
        ck_assert_msg(strstr(lines, "no newline\n"), "last partial line lost:\n%s", lines);
}
END_TEST

START_TEST(test_failure) {
        struct svff_error err = SVFF_ERROR_NULL;

        hook_script("echo writing\necho 'JTAG chain not found' >&2\nexit 3");
        assert_error(run(image, 20 * USEC_PER_SEC, &err), &err, -EIO,
                     "failed with exit status 3; its last line: 'JTAG chain not found'");
        svff_error_free(&err);

        hook_script("kill -TERM $$");
        assert_error(run(image, 20 * USEC_PER_SEC, &err), &err, -EIO, "was killed by signal");
        svff_error_free(&err);
}
END_TEST

/* What the hook prints goes into logs, messages and the store's journal,
 * all UTF-8: a Latin-1 line, or a byte that is no text at all, arrives
 * with U+FFFD for each bad sequence. */
START_TEST(test_output_not_utf8) {
        struct svff_error err = SVFF_ERROR_NULL;

        hook_script("printf 'caf\\351 ok\\n\\342\\202\\254 \\342\\202\\n'\nprintf '\\377\\n'\nexit 1");
        assert_error(run(image, 20 * USEC_PER_SEC, &err), &err, -EIO,
                     "failed with exit status 1; its last line: '\xef\xbf\xbd'");
        ck_assert_msg(lines && streq(lines, "caf\xef\xbf\xbd ok\n\xe2\x82\xac \xef\xbf\xbd\n\xef\xbf\xbd\n"),
                      "output: %s", strna(lines));
        svff_error_free(&err);
}
END_TEST

/* Past its deadline the hook is killed, and what it started with it. */
START_TEST(test_timeout) {
        struct svff_error err = SVFF_ERROR_NULL;
        char pidfile[320], *cmd = NULL;
        uint64_t t0;
        int r;

        snprintf(pidfile, sizeof(pidfile), "%s/child.pid", dir);
        ck_assert_int_ge(asprintf(&cmd, "sleep 600 &\necho $! > '%s'\necho flashing\nsleep 600", pidfile), 0);
        hook_script(cmd);
        free(cmd);
        t0 = svff_now_usec();
        r = run(image, 500 * USEC_PER_MSEC, &err);
        assert_error(r, &err, -ETIMEDOUT, "did not finish within 500 ms and was killed with its children");
        ck_assert_msg(strstr(svff_error_message(&err), "its last line: 'flashing'"), "%s", svff_error_message(&err));
        ck_assert_uint_ge(svff_now_usec() - t0, 500 * USEC_PER_MSEC);
        ck_assert_uint_lt(svff_now_usec() - t0, 5 * USEC_PER_SEC);
        svff_error_free(&err);

        assert_gone(pidfile);
        ck_assert_msg(late_group_kills == 0, "the hook's group was killed after its leader was reaped");

        /* A hook that exits at once leaves no child behind either. */
        ck_assert_int_ge(asprintf(&cmd, "sleep 600 &\necho $! > '%s'\nexit 0", pidfile), 0);
        hook_script(cmd);
        free(cmd);
        ck_assert_int_eq(run(image, 20 * USEC_PER_SEC, &err), 0);
        ck_assert_uint_lt(svff_now_usec() - t0, 10 * USEC_PER_SEC);
        assert_gone(pidfile);
        ck_assert_msg(late_group_kills == 0, "the hook's group was killed after its leader was reaped");
}
END_TEST

/* Something else in the process reaped the hook (here: SIGCHLD
 * ignored, so the kernel does): the runner says so, and what the hook
 * started does not outlive it. */
START_TEST(test_lost_hook) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct sigaction ign = { .sa_handler = SIG_IGN }, old;
        char pidfile[320], *cmd = NULL;
        int r;

        snprintf(pidfile, sizeof(pidfile), "%s/child.pid", dir);
        ck_assert_int_ge(asprintf(&cmd, "sleep 600 &\necho $! > '%s'\nexit 0", pidfile), 0);
        hook_script(cmd);
        free(cmd);
        ck_assert_int_eq(sigaction(SIGCHLD, &ign, &old), 0);
        r = run(image, 20 * USEC_PER_SEC, &err);
        ck_assert_int_eq(sigaction(SIGCHLD, &old, NULL), 0);
        assert_error(r, &err, -ECHILD, "Lost the flash hook");
        svff_error_free(&err);
        assert_gone(pidfile);
}
END_TEST

START_TEST(test_image_paths) {
        struct svff_error err = SVFF_ERROR_NULL;
        char p[400], q[400];

        hook_script("echo ran");

        /* outside the directory, and a sibling whose name starts the same */
        snprintf(p, sizeof(p), "%s/fpga.bit", dir);
        write_file(p, "x", 0644);
        assert_error(run(p, USEC_PER_SEC, &err), &err, -EPERM, "is not under the image directory");
        svff_error_free(&err);
        snprintf(p, sizeof(p), "%s-other/fpga.bit", images);
        assert_error(run(p, USEC_PER_SEC, &err), &err, -EPERM, "is not under the image directory");
        svff_error_free(&err);
        snprintf(p, sizeof(p), "%s/../fpga.bit", images);
        assert_error(run(p, USEC_PER_SEC, &err), &err, -EINVAL, "without '.' or '..'");
        svff_error_free(&err);
        assert_error(run("images/fpga.bit", USEC_PER_SEC, &err), &err, -EINVAL, "must be an absolute path");
        svff_error_free(&err);

        /* a symbolic link: the image itself, or a directory on the way */
        snprintf(p, sizeof(p), "%s/link.bit", images);
        ck_assert_int_eq(symlink(image, p), 0);
        assert_error(run(p, USEC_PER_SEC, &err), &err, -ELOOP, "is a symbolic link");
        svff_error_free(&err);
        snprintf(p, sizeof(p), "%s/real", images);
        ck_assert_int_eq(mkdir(p, 0755), 0);
        snprintf(q, sizeof(q), "%s/real/a.bit", images);
        write_file(q, "x", 0644);
        ck_assert_int_eq(run(q, 5 * USEC_PER_SEC, &err), 0);    /* a subdirectory is fine */
        snprintf(q, sizeof(q), "%s/sub", images);
        ck_assert_int_eq(symlink("real", q), 0);
        snprintf(q, sizeof(q), "%s/sub/a.bit", images);
        assert_error(run(q, USEC_PER_SEC, &err), &err, -ELOOP, "'sub' on the way is a symbolic link");
        svff_error_free(&err);

        /* not a regular file, missing */
        assert_error(run(p, USEC_PER_SEC, &err), &err, -EINVAL, "is not a regular file");
        svff_error_free(&err);
        snprintf(q, sizeof(q), "%s/missing.bit", images);
        assert_error(run(q, USEC_PER_SEC, &err), &err, -ENOENT, "missing.bit");
        svff_error_free(&err);

        /* a directory others can write: the image could change after the check */
        ck_assert_int_eq(chmod(p, 0777), 0);
        snprintf(q, sizeof(q), "%s/real/a.bit", images);
        assert_error(run(q, USEC_PER_SEC, &err), &err, -EPERM, "can be written by others");
        svff_error_free(&err);

        /* nothing ran for any refused image */
        ck_assert_msg(lines && strcmp(lines, "ran\n") == 0, "output: %s", lines ?: "(none)");
}
END_TEST

/* Which file an image is: the same file unchanged matches, one touched,
 * rewritten or put in its place does not, and a partial record matches
 * nothing. */
START_TEST(test_image_identity) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *a, *b, *c, *d;
        struct timespec times[2] = { { .tv_nsec = UTIME_OMIT }, { .tv_sec = 1000000000, .tv_nsec = 5 } };
        struct stat st;
        char p[400];

        ck_assert_int_eq(svff_flash_image_stat(images, image, &st, &err), 0);
        a = svff_flash_image_identity(image, &st);
        ck_assert_ptr_nonnull(a);
        ck_assert_int_eq(svff_flash_image_stat(images, image, &st, &err), 0);
        b = svff_flash_image_identity(image, &st);
        ck_assert(svff_flash_image_same(a, b));
        ck_assert(!svff_flash_image_same(a, NULL));

        /* touched */
        ck_assert_int_eq(utimensat(AT_FDCWD, image, times, 0), 0);
        ck_assert_int_eq(svff_flash_image_stat(images, image, &st, &err), 0);
        c = svff_flash_image_identity(image, &st);
        ck_assert(!svff_flash_image_same(a, c));

        /* another file put in its place, with the same time */
        snprintf(p, sizeof(p), "%s/new.bit", images);
        write_file(p, "x", 0644);
        ck_assert_int_eq(utimensat(AT_FDCWD, p, times, 0), 0);
        ck_assert_int_eq(rename(p, image), 0);
        ck_assert_int_eq(svff_flash_image_stat(images, image, &st, &err), 0);
        d = svff_flash_image_identity(image, &st);
        ck_assert(!svff_flash_image_same(c, d));

        /* rewritten in place, same size, its mtime put back: only the
         * ctime, which no one can set, tells */
        {
                struct timespec keep[2] = { st.st_atim, st.st_mtim };
                struct stat st2;
                struct json_object *e;
                int fd;

                ck_assert_int_eq(usleep(20000), 0);
                fd = open(image, O_WRONLY | O_CLOEXEC);
                ck_assert_int_ge(fd, 0);
                ck_assert_int_eq(pwrite(fd, "y", 1, 0), 1);
                ck_assert_int_eq(close(fd), 0);
                ck_assert_int_eq(utimensat(AT_FDCWD, image, keep, 0), 0);
                ck_assert_int_eq(svff_flash_image_stat(images, image, &st2, &err), 0);
                ck_assert_int_eq(st2.st_ino, st.st_ino);
                ck_assert_int_eq(st2.st_size, st.st_size);
                ck_assert(st2.st_mtim.tv_sec == st.st_mtim.tv_sec && st2.st_mtim.tv_nsec == st.st_mtim.tv_nsec);
                e = svff_flash_image_identity(image, &st2);
                ck_assert_ptr_nonnull(e);
                ck_assert_msg(!svff_flash_image_same(d, e), "a rewrite in place was taken for the same image: %s",
                              json_object_to_json_string(e));
                json_object_put(e);
        }

        /* an identity recorded before the ctime was part of it is
         * another image: flashed again rather than trusted */
        {
                struct json_object *old = NULL;

                ck_assert_int_eq(json_object_deep_copy(a, &old, NULL), 0);
                json_object_object_del(old, "ctime_nsec");
                ck_assert(!svff_flash_image_same(old, a));
                ck_assert(!svff_flash_image_same(a, old));
                json_object_put(old);
        }

        /* the same file under another name is another image */
        json_object_object_add(b, "path", json_object_new_string(p));
        ck_assert(!svff_flash_image_same(a, b));
        json_object_object_add(b, "path", json_object_new_string(image));
        ck_assert(svff_flash_image_same(a, b));
        json_object_object_del(b, "ino");
        ck_assert(!svff_flash_image_same(a, b));
        ck_assert(!svff_flash_image_same(b, b));

        /* a refused image has no identity */
        ck_assert_int_eq(svff_flash_image_stat(images, "/nonexistent/x.bit", &st, &err), -EPERM);
        svff_error_free(&err);
        json_object_put(a);
        json_object_put(b);
        json_object_put(c);
        json_object_put(d);
}
END_TEST

static bool cancel_at_once(void *userdata) {
        (void) userdata;
        return true;
}

/* The identity with the content's hash: the metadata as without it, the
 * hash of the bytes; the same bytes in another file have the same
 * content and not the same metadata; a link is refused as ever. */
START_TEST(test_image_hash) {
        static const char abc[] = "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad";
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *a = NULL, *b = NULL, *plain;
        const char *sha = NULL;
        struct stat st;
        char p[400];

        write_file(image, "abc", 0644);
        ck_assert_int_eq(svff_flash_image_hash(images, image, NULL, NULL, &a, &err), 0);
        ck_assert_int_eq(svff_json_get_string(a, "sha256", &sha), 0);
        ck_assert_str_eq(sha, abc);
        ck_assert_int_eq(svff_flash_image_stat(images, image, &st, &err), 0);
        plain = svff_flash_image_identity(image, &st);
        ck_assert(svff_flash_image_same(a, plain));
        ck_assert(!svff_flash_image_same_content(a, plain));    /* no hash in plain */
        ck_assert(svff_flash_image_same_content(a, a));

        snprintf(p, sizeof(p), "%s/copy.bit", images);
        write_file(p, "abc", 0644);
        ck_assert_int_eq(rename(p, image), 0);
        ck_assert_int_eq(svff_flash_image_hash(images, image, NULL, NULL, &b, &err), 0);
        ck_assert(!svff_flash_image_same(a, b));
        ck_assert(svff_flash_image_same_content(a, b));
        json_object_object_add(b, "path", json_object_new_string(p));
        ck_assert(!svff_flash_image_same_content(a, b));
        json_object_put(b);
        b = NULL;

        write_file(image, "abd", 0644);
        ck_assert_int_eq(svff_flash_image_hash(images, image, NULL, NULL, &b, &err), 0);
        ck_assert(!svff_flash_image_same_content(a, b));
        json_object_put(b);
        b = NULL;

        ck_assert_int_eq(svff_flash_image_hash(images, image, cancel_at_once, NULL, &b, &err), -ECANCELED);
        ck_assert_ptr_null(b);
        svff_error_free(&err);

        snprintf(p, sizeof(p), "%s/link.bit", images);
        ck_assert_int_eq(symlink(image, p), 0);
        ck_assert_int_eq(svff_flash_image_hash(images, p, NULL, NULL, &b, &err), -ELOOP);
        ck_assert_ptr_null(b);
        ck_assert_msg(strstr(svff_error_message(&err), "symbolic link"), "%s", svff_error_message(&err));

        json_object_put(a);
        json_object_put(plain);
}
END_TEST

START_TEST(test_hook_checks) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_flash_hook h = { .path = "flash", .image_dir = images, .timeout_usec = USEC_PER_SEC };

        assert_error(svff_flash_hook_run(ctx, &h, PF, image, &err), &err, -ENOEXEC, "No flash hook is configured");
        svff_error_free(&err);
        hook_script("exit 0");
        h.path = hookp;
        ck_assert_int_eq(chmod(hookp, 0644), 0);
        {
                int r = svff_flash_hook_run(ctx, &h, PF, image, &err);
                /* even root needs an x bit */
                ck_assert_msg(r == -EACCES, "returned %d: %s", r, svff_error_message(&err));
        }
        svff_error_free(&err);
        ck_assert_int_eq(chmod(hookp, 0777), 0);
        assert_error(svff_flash_hook_run(ctx, &h, PF, image, &err), &err, -EPERM, "can be written by group or others");
        svff_error_free(&err);
        ck_assert_int_eq(chmod(hookp, 0755), 0);
        h.image_dir = NULL;
        assert_error(svff_flash_hook_run(ctx, &h, PF, image, &err), &err, -EINVAL, "No image directory");
        svff_error_free(&err);
}
END_TEST

/* Root alone may be able to change the hook and the image, which run or
 * are read as root: owner, the directories on the way, symbolic links. */
START_TEST(test_owner_checks) {
        struct svff_error err = SVFF_ERROR_NULL;
        char sub[400], subhook[450], link[400], linkhook[450], msg[1024];

        hook_script("exit 0");
        ck_assert_int_eq(run(image, USEC_PER_SEC, &err), 0);
        svff_error_free(&err);

        /* Owned by another user: refused by name and owner, in the check
         * a dry run makes and in the run. */
        ck_assert_int_eq(chown(hookp, 65534, 0), 0);
        snprintf(msg, sizeof(msg), "'%s' is owned by uid 65534, not root", hookp);
        assert_error(svff_flash_hook_check(hookp, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        assert_error(run(image, USEC_PER_SEC, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        ck_assert_ptr_null(lines);      /* it never ran */
        ck_assert_int_eq(chown(hookp, 0, 0), 0);
        ck_assert_int_eq(svff_flash_hook_check(hookp, &err), 0);

        /* Rewritten in place by a user given the file: each run checks. */
        ck_assert_int_eq(run(image, USEC_PER_SEC, &err), 0);
        ck_assert_int_eq(chown(hookp, 65534, 65534), 0);
        assert_error(run(image, USEC_PER_SEC, &err), &err, -EPERM, "owned by uid 65534");
        svff_error_free(&err);
        ck_assert_int_eq(chown(hookp, 0, 0), 0);

        /* A directory on the way that others can write (not sticky), or
         * that another user owns. */
        snprintf(sub, sizeof(sub), "%s/hooks", dir);
        snprintf(subhook, sizeof(subhook), "%s/flash", sub);
        ck_assert_int_eq(mkdir(sub, 0755), 0);
        write_file(subhook, "#!/bin/sh\nexit 0\n", 0755);
        ck_assert_int_eq(svff_flash_hook_check(subhook, &err), 0);
        ck_assert_int_eq(chmod(sub, 0777), 0);
        snprintf(msg, sizeof(msg), "'%s' can be written by others (mode 0777; owner uid 0)", sub);
        assert_error(svff_flash_hook_check(subhook, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        ck_assert_int_eq(chmod(sub, 0775), 0);
        assert_error(svff_flash_hook_check(subhook, &err), &err, -EPERM, "can be written by its group");
        svff_error_free(&err);
        /* Sticky and writable by all, as /tmp: only root may swap root's entries. */
        ck_assert_int_eq(chmod(sub, 01777), 0);
        ck_assert_int_eq(svff_flash_hook_check(subhook, &err), 0);
        ck_assert_int_eq(chmod(sub, 0755), 0);
        ck_assert_int_eq(chown(sub, 65534, 0), 0);
        snprintf(msg, sizeof(msg), "'%s' is owned by uid 65534", sub);
        assert_error(svff_flash_hook_check(subhook, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        ck_assert_int_eq(chown(sub, 0, 0), 0);

        /* A symbolic link on the way: another user's is refused; root's
         * is followed, and where it leads is checked the same way. */
        snprintf(link, sizeof(link), "%s/current", dir);
        snprintf(linkhook, sizeof(linkhook), "%s/flash", link);
        ck_assert_int_eq(symlink("hooks", link), 0);
        ck_assert_int_eq(svff_flash_hook_check(linkhook, &err), 0);
        ck_assert_int_eq(lchown(link, 65534, 65534), 0);
        snprintf(msg, sizeof(msg), "'%s', a symbolic link on the way, is owned by uid 65534", link);
        assert_error(svff_flash_hook_check(linkhook, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        ck_assert_int_eq(lchown(link, 0, 0), 0);
        ck_assert_int_eq(chmod(sub, 0777), 0);
        assert_error(svff_flash_hook_check(linkhook, &err), &err, -EPERM, "can be written by others");
        svff_error_free(&err);
        ck_assert_int_eq(chmod(sub, 0755), 0);

        /* An image another user owns is not flashed. */
        ck_assert_int_eq(chown(image, 65534, 0), 0);
        snprintf(msg, sizeof(msg), "Image '%s' is refused: '%s' is owned by uid 65534", image, image);
        assert_error(svff_flash_image_check(images, image, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        assert_error(run(image, USEC_PER_SEC, &err), &err, -EPERM, msg);
        svff_error_free(&err);
        ck_assert_int_eq(chown(image, 0, 0), 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("flash-hook");
        TCase *tc = tcase_create("hook");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_success);
        tcase_add_test(tc, test_failure);
        tcase_add_test(tc, test_output_not_utf8);
        tcase_add_test(tc, test_timeout);
        tcase_add_test(tc, test_lost_hook);
        tcase_add_test(tc, test_image_paths);
        tcase_add_test(tc, test_hook_checks);
        tcase_add_test(tc, test_owner_checks);
        tcase_add_test(tc, test_image_identity);
        tcase_add_test(tc, test_image_hash);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

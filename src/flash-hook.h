/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The flash hook: the executable svff.conf names ("flash_hook", never
 * given over the socket) that writes a new image to a PF that svffd has
 * taken off the bus, for the reprogram flow. Under systemd svffd runs
 * the hook in a transient unit of its own (daemon/flash-unit.h) after
 * the checks below; svff_flash_hook_run() is the fallback without it.
 *
 * svffd never reads an image. It only checks the path the caller gave:
 * absolute, under the configured image directory, no "." or ".."
 * component, every directory on the way reached without following a
 * symbolic link (O_PATH|O_NOFOLLOW) and writable by no one but its owner
 * (root or svffd), and the image itself a regular file (fstatat with
 * AT_SYMLINK_NOFOLLOW). The hook reads it.
 *
 * The hook runs as hook PF IMAGE DEADLINE (DEADLINE: seconds since the
 * epoch, CLOCK_REALTIME), with the same in SVFF_PF, SVFF_IMAGE and
 * SVFF_DEADLINE, a minimal PATH, stdin on /dev/null and stdout and stderr
 * on one pipe, each line of which goes to the output callback. It runs in
 * a process group of its own, killed with SIGKILL (children included) at
 * the deadline, and killed too once the hook itself has exited, so no
 * child of it outlives the flash. The group is killed before the hook is
 * reaped, while its pid (the group's id) cannot be reused. Only exit status 0 is success: svff
 * never guesses that a flash succeeded. */

#include <json-c/json.h>
#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>

#include "context.h"
#include "error.h"

/* One line of the hook's output, without its newline (at most
 * SVFF_FLASH_LINE_MAX bytes read; a longer line is cut), made valid
 * UTF-8: every ill-formed sequence U+FFFD. */
typedef void (*svff_flash_output_fn)(void *userdata, const char *line);

#define SVFF_FLASH_LINE_MAX 1024

struct svff_flash_hook {
        const char *path;               /* absolute path of the executable */
        const char *image_dir;          /* images must be under it */
        uint64_t timeout_usec;          /* from the start of the run */
        svff_flash_output_fn output;    /* NULL: the context's debug log */
        void *userdata;
};

/* Checks image against image_dir as above, touching neither beyond
 * O_PATH opens of the directories and an lstat of the image.
 *   -EINVAL    not absolute, a "." or ".." component, no image_dir, or
 *              not a regular file
 *   -EPERM     outside image_dir, or a directory on the way writable by
 *              others
 *   -ELOOP     a symbolic link on the way or the image itself
 *   -ENOENT    missing
 * err names the image and the rule. */
int svff_flash_image_check(const char *image_dir, const char *image, struct svff_error *err);
/* The same, with the image's lstat in ret (may be NULL). */
int svff_flash_image_stat(const char *image_dir, const char *image, struct stat *ret, struct svff_error *err);

/* Which file an image is, without reading it: {path, dev, ino, size,
 * mtime_nsec, ctime_nsec} from its lstat, as the store records the
 * image last flashed to a PF. A file replaced, rewritten or touched is
 * another image, even with its mtime put back (the ctime changes with
 * any write or utimensat, and no one can set it). NULL: out of memory. */
struct json_object *svff_flash_image_identity(const char *image, const struct stat *st);
/* Whether two identities name the same image, unchanged. An identity
 * missing a key (one recorded before ctime_nsec was part of it) matches
 * nothing. */
bool svff_flash_image_same(struct json_object *a, struct json_object *b);

/* The identity above with "sha256", the SHA-256 of the image's content
 * (lower-case hex), read through an O_NOFOLLOW open of the file the
 * checks of svff_flash_image_stat() passed. cancelled(userdata) (may be
 * NULL) is asked between reads. Reads the whole file: a worker's job.
 *   -EAGAIN     the file was replaced or changed while it was read
 *   -ECANCELED  cancelled
 *   as svff_flash_image_stat(), or -errno from open() or read()
 * err names the image. */
int svff_flash_image_hash(const char *image_dir, const char *image, bool (*cancelled)(void *userdata),
                          void *userdata, struct json_object **ret, struct svff_error *err);
/* Whether two identities name the same path with the same content: both
 * carry a valid "sha256" and it is the same. Metadata is not compared. */
bool svff_flash_image_same_content(struct json_object *a, struct json_object *b);

/* Checks the image, then runs the hook on pf and waits for it.
 *   0          exit status 0
 *   -EIO       another exit status, or killed by a signal: err says which,
 *              with the hook's last line of output
 *   -ETIMEDOUT the deadline passed: the hook and its children are killed
 *   -ECHILD    something else in the process reaped the hook: what it
 *              started is killed all the same
 *   -ENOEXEC / -ENOENT / -EACCES / -EPERM   the hook cannot be run (not
 *              an absolute path to an executable regular file, or writable
 *              by group or others)
 * and the errors of svff_flash_image_check(). Blocks: call it from a
 * worker thread. The hook is waited for by its pid, so SIGCHLD must not
 * be ignored and nothing else in the process may reap every child
 * (waitpid(-1)). */
int svff_flash_hook_run(struct svff_ctx *ctx, const struct svff_flash_hook *hook, const char *pf,
                        const char *image, struct svff_error *err);

/* The checks svff_flash_hook_run() makes of the hook before it runs it,
 * for a caller that must refuse before anything is touched (a reprogram
 * and its dry run): an absolute path to an executable regular file,
 * and root alone able to change it: the file and every directory on its
 * path owned by root and writable by no group or other (a sticky
 * directory such as /tmp excepted), every symbolic link on the way owned
 * by root and where it leads checked the same way. Images must pass the
 * same ownership check (svff_flash_image_check()).
 *   -EPERM     another owner, or writable by others: err names the path
 *              and its owner */
int svff_flash_hook_check(const char *path, struct svff_error *err);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The library context: the sysfs root every access is relative to, the
 * libpci handle for names and capabilities, and the log callback.
 *
 * There is no global state in libsvff; everything hangs off a context.
 * A context may be used from several threads as long as each call is
 * self-contained (all calls are, except svff_ctx_set_*). */

#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>

#include "macro.h"

struct svff_ctx;

typedef void (*svff_log_fn)(void *userdata, int priority, const char *file, int line,
                            const char *fn, const char *format, va_list args);

/* Opens the sysfs tree at sysfs_root ("/sys" when NULL) as a directory fd
 * (O_PATH|O_DIRECTORY|O_CLOEXEC). Returns -ENOENT/-ENOTDIR/-EACCES from
 * open(). libpci is set up lazily, on the first name lookup. */
int svff_ctx_new(const char *sysfs_root, struct svff_ctx **ret);
struct svff_ctx *svff_ctx_ref(struct svff_ctx *ctx);
struct svff_ctx *svff_ctx_unref(struct svff_ctx *ctx);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_ctx *, svff_ctx_unref);

/* Borrowed: valid for the life of ctx. */
int svff_ctx_get_rootfd(struct svff_ctx *ctx);
const char *svff_ctx_get_root(struct svff_ctx *ctx);

/* priority is syslog's (LOG_ERR ... LOG_DEBUG); messages above the
 * threshold are dropped. The library logs at LOG_DEBUG only. */
void svff_ctx_set_log_fn(struct svff_ctx *ctx, svff_log_fn fn, void *userdata);
void svff_ctx_set_log_priority(struct svff_ctx *ctx, int priority);
int svff_ctx_get_log_priority(struct svff_ctx *ctx);

/* Number of deadline-bounded sysfs writes that timed out and are still
 * blocked in the kernel (see svff_sysfs_write_deadline()). */
unsigned svff_ctx_get_stuck_writes(struct svff_ctx *ctx);

/* Whether a deadline-bounded write of this context to path (relative to
 * the root, e.g. "bus/pci/devices/0000:01:00.0/sriov_numvfs") has not
 * returned yet: 1, with the value written (ret_value, the caller's to
 * free) and whether its writer gave up waiting for it (ret_late, a
 * stuck write); 0 when none is; -ENOMEM. Both outputs are optional. */
int svff_ctx_write_pending(struct svff_ctx *ctx, const char *path, char **ret_value, bool *ret_late);

/* Whether a deadline-bounded read of path by this context gave up waiting
 * and the read has not returned from the kernel yet (a write by another
 * process holds it): 1, with when it began (ret_since, CLOCK_MONOTONIC
 * usec, optional); 0 when none is. */
int svff_ctx_read_stuck(struct svff_ctx *ctx, const char *path, uint64_t *ret_since);

/* Use path instead of libpci's compiled-in pci.ids (tests; hosts with
 * their own copy). Drops a libpci handle already set up, so it takes
 * effect at the next lookup. -ENOMEM. */
int svff_ctx_set_pci_ids_path(struct svff_ctx *ctx, const char *path);

void svff_ctx_log(struct svff_ctx *ctx, int priority, const char *file, int line,
                  const char *fn, const char *format, ...) _printf_(6, 7);

#define svff_log_debug(ctx, ...) \
        svff_ctx_log((ctx), 7 /* LOG_DEBUG */, __FILE__, __LINE__, __func__, __VA_ARGS__)

/* Internal, for the library's own modules. */

/* The libpci handle slot (NULL until pcinames.c sets it up) and the ids
 * path, under the context's libpci lock: libpci handles are not
 * thread-safe. Every acquire is paired with a release. free_fn is how
 * the context drops what the slot holds (it cannot know libpci: the
 * context sits below pcinames.c). */
void **svff_ctx_pci_acquire(struct svff_ctx *ctx, void (*free_fn)(void *pci_access),
                            const char **ret_ids_path);
void svff_ctx_pci_release(struct svff_ctx *ctx);

/* The stuck-writes counter behind svff_ctx_get_stuck_writes() (sysfs.c). */
void svff_ctx_stuck_writes_inc(struct svff_ctx *ctx);
void svff_ctx_stuck_writes_dec(struct svff_ctx *ctx);

/* The writes behind svff_ctx_write_pending() (sysfs.c): begin before the
 * write starts (-ENOMEM), late once its writer stops waiting, end when
 * the write returns. */
int svff_ctx_write_begin(struct svff_ctx *ctx, const char *path, const char *value);
void svff_ctx_write_late(struct svff_ctx *ctx, const char *path);
void svff_ctx_write_end(struct svff_ctx *ctx, const char *path);

/* The reads behind svff_ctx_read_stuck() (sysfs.c): begin when a reader
 * gives up on one (-ENOMEM), end when the read returns. */
int svff_ctx_read_stuck_begin(struct svff_ctx *ctx, const char *path, uint64_t since);
void svff_ctx_read_stuck_end(struct svff_ctx *ctx, const char *path);

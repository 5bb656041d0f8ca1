/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Sysfs access relative to a directory fd, so the same code runs on /sys,
 * on a fixture tree and on a pcisim mount. Paths are relative
 * ("bus/pci/devices/0000:03:00.0/sriov_numvfs"); absolute paths are
 * refused with -EINVAL.
 *
 * Errors are the -errno of the failing syscall, untranslated: callers
 * turn them into messages because only they know which device and
 * operation the path stands for. */

#include <stdbool.h>
#include <stdint.h>

#include "context.h"

typedef uint64_t usec_t;
#define USEC_PER_MSEC ((usec_t) 1000)
#define USEC_PER_SEC ((usec_t) 1000000)

/* Reads a whole attribute; one trailing newline is stripped.
 * *ret is malloc'd. */
int svff_sysfs_read(int rootfd, const char *path, char **ret);

/* Formatted path variants: the path is built with asprintf(). */
int svff_sysfs_readf(int rootfd, char **ret, const char *fmt, ...) _printf_(3, 4);

/* Parses an attribute as an unsigned/signed integer (base auto-detected:
 * "0x" hex, else decimal). -EINVAL on garbage, -ERANGE on overflow. */
int svff_sysfs_read_u64(int rootfd, const char *path, uint64_t *ret);
int svff_sysfs_read_int(int rootfd, const char *path, int *ret);
/* Hex with or without "0x": sriov_vf_device prints "%x", vendor "0x%04x". */
int svff_sysfs_read_hex(int rootfd, const char *path, uint64_t *ret);
int svff_sysfs_read_bool(int rootfd, const char *path, bool *ret);

/* Writes value in one write(2) (sysfs takes one store per write).
 * Returns the -errno of open or write; a short write is -EIO. */
int svff_sysfs_write(int rootfd, const char *path, const char *value);

/* Like svff_sysfs_write(), bounded by a deadline. Writes that can block
 * in the kernel (sriov_numvfs=0 while a VF is open by QEMU) cannot be
 * interrupted, so the write runs on a short-lived thread of its own; when
 * timeout_usec passes first this returns -ETIMEDOUT and the thread is left
 * to finish the write on its own, counted by svff_ctx_get_stuck_writes()
 * until it does. timeout_usec == 0 means no deadline (plain write). */
int svff_sysfs_write_deadline(struct svff_ctx *ctx, const char *path, const char *value,
                              usec_t timeout_usec);

/* Like svff_sysfs_read_u64(), bounded by a deadline, for attributes a write
 * by another process can hold in the kernel (reading sriov_numvfs waits
 * for any store to it). The read runs on a thread of its own; when
 * timeout_usec passes first this returns -ETIMEDOUT, and the thread is
 * left to finish the read, recorded by svff_ctx_read_stuck() until it
 * does. While one is, another read of path returns -EBUSY at once. */
int svff_sysfs_read_u64_deadline(struct svff_ctx *ctx, const char *path, usec_t timeout_usec, uint64_t *ret);

/* A symlink's target as stored ("../../../bus/pci/drivers/vfio-pci"). */
int svff_sysfs_readlink(int rootfd, const char *path, char **ret);

/* The last path component of a symlink's target, e.g. "vfio-pci" for a
 * device's "driver" link, "12" for "iommu_group". -ENOENT when absent. */
int svff_sysfs_readlink_base(int rootfd, const char *path, char **ret);

/* Whether path exists (faccessat F_OK without following the last link).
 * Returns 1, 0, or -errno for errors other than ENOENT. */
int svff_sysfs_exists(int rootfd, const char *path);

/* Opens path as a directory (O_PATH|O_DIRECTORY|O_CLOEXEC, following
 * links) and returns the fd, which the caller owns. Every function here
 * takes such an fd in place of rootfd, so a device's attributes can be
 * read relative to its own directory: one path walk instead of one per
 * attribute. */
int svff_sysfs_open_dir(int rootfd, const char *path);

/* Directory entries of path, sorted, excluding "." and "..";
 * a NULL-terminated strv (free with strv_free). */
int svff_sysfs_list_dir(int rootfd, const char *path, char ***ret);

usec_t svff_now_usec(void);  /* CLOCK_MONOTONIC */

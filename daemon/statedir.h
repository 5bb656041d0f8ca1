/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The state directory's lock: one svffd per store, as a second one
 * would overwrite the first's commits. */

/* Creates dir (0700) if needed and flock()s its svffd.lock, writing our
 * pid into it; *ret_fd holds the lock until svffd exits (the kernel drops
 * it even on SIGKILL). -EBUSY, logged naming the other svffd's pid, when
 * another holds it. */
int statedir_lock(const char *dir, int *ret_fd);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The libudev monitor: PCI add, bind and remove events, handed to
 * autoinit_handle_uevent(). Only when sysfs-root is /sys: libudev reads
 * the real /sys and cannot watch a simulated tree (tests inject their
 * events instead, see autoinit.h). Listens to udevd's events when udevd
 * runs (after its rules), else to the kernel's. */

#include "manager.h"

struct udev_watch;

/* Returns 0 with *ret NULL when there is nothing to watch. */
int udev_watch_new(struct manager *m, struct udev_watch **ret);
struct udev_watch *udev_watch_free(struct udev_watch *w);

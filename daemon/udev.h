/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The libudev monitor: PCI add, bind and remove events of PFs, handed to
 * the callback it is given (svffd passes them to auto-init). Only when
 * sysfs_root is /sys: libudev reads the real /sys and cannot watch a
 * simulated tree (tests inject their events instead, see autoinit.h).
 * Listens to udevd's events when udevd runs (after its rules), else to
 * the kernel's. */

#include <systemd/sd-event.h>

struct udev_watch;

/* action is "add", "bind" or "remove"; address the PF's sysfs name. */
typedef void (*udev_pf_fn)(const char *action, const char *address, void *userdata);

/* Returns 0 with *ret NULL when there is nothing to watch. */
int udev_watch_new(sd_event *event, const char *sysfs_root, udev_pf_fn fn, void *userdata,
                   struct udev_watch **ret);
struct udev_watch *udev_watch_free(struct udev_watch *w);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <libudev.h>

#include "log.h"
#include "udev.h"

struct udev_watch {
        udev_pf_fn fn;
        void *userdata;
        struct udev *udev;
        struct udev_monitor *monitor;
        sd_event_source *io;
};

struct udev_watch *udev_watch_free(struct udev_watch *w) {
        if (!w)
                return NULL;
        sd_event_source_disable_unref(w->io);
        udev_monitor_unref(w->monitor);
        udev_unref(w->udev);
        free(w);
        return NULL;
}

static int on_uevent(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct udev_watch *w = userdata;

        /* Drain: one wakeup may carry a burst (VF creation). */
        for (;;) {
                struct udev_device *d = udev_monitor_receive_device(w->monitor);
                const char *action, *name;

                if (!d)
                        break;
                action = udev_device_get_action(d);
                name = udev_device_get_sysname(d);
                /* Only PFs matter on add and bind: VFs come and go with
                 * every init, and have no sriov_totalvfs. On remove the
                 * attributes are gone; the handler knows its PFs. */
                if (action && name &&
                    (streq(action, "remove") ||
                     ((streq(action, "add") || streq(action, "bind")) &&
                      udev_device_get_sysattr_value(d, "sriov_totalvfs"))))
                        w->fn(action, name, w->userdata);
                udev_device_unref(d);
        }
        return 0;
}

int udev_watch_new(sd_event *event, const char *sysfs_root, udev_pf_fn fn, void *userdata,
                   struct udev_watch **ret) {
        struct udev_watch *w;
        const char *source;
        int r;

        if (!streq(sysfs_root, "/sys")) {
                log_debug("sysfs_root is '%s', not /sys: no udev monitor.", sysfs_root);
                *ret = NULL;
                return 0;
        }
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        w->fn = fn;
        w->userdata = userdata;
        w->udev = udev_new();
        if (!w->udev) {
                r = -errno ?: -ENOMEM;
                goto fail;
        }
        /* udevd's events come after its rules ran (drivers loaded,
         * names set); without udevd only the kernel's exist. */
        source = access("/run/udev/control", F_OK) == 0 ? "udev" : "kernel";
        w->monitor = udev_monitor_new_from_netlink(w->udev, source);
        if (!w->monitor) {
                r = -errno ?: -ENOMEM;
                goto fail;
        }
        r = udev_monitor_filter_add_match_subsystem_devtype(w->monitor, "pci", NULL);
        if (r >= 0)
                r = udev_monitor_enable_receiving(w->monitor);
        if (r >= 0)
                r = sd_event_add_io(event, &w->io, udev_monitor_get_fd(w->monitor), EPOLLIN,
                                    on_uevent, w);
        if (r < 0)
                goto fail;
        log_debug("Watching PCI uevents from %s.", source);
        *ret = w;
        return 0;
fail:
        udev_watch_free(w);
        return r;
}

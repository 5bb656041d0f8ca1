/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's settings: built-in defaults, then the config file (JSON, read
 * with json-c), then the command line. SIGHUP re-reads the file; the
 * settings marked "restart" only take effect at the next start.
 *
 *   {
 *     "socket": "/run/svff/svffd.sock",          (restart)
 *     "state-dir": "/var/lib/svff",              (restart)
 *     "sysfs-root": "/sys",                      (restart)
 *     "libvirt-uri": "qemu:///system",
 *     "log-level": "info",
 *     "admin-group": "svff",
 *     "vf-driver": "vfio-pci",
 *     "numvfs-timeout-sec": 30,
 *     "list-max-age-msec": 1000,
 *     "workers": 2,                              (restart)
 *     "detach-timeout-sec": 10,
 *     "qmp-pause-command": "x-svff-device-pause",
 *     "qmp-unpause-command": "x-svff-device-unpause",
 *     "limits": { "max-connections": 1024, "max-connections-per-uid": 128,
 *                 "max-message-bytes": 262144, "idle-timeout-sec": 60 }
 *   }
 *
 * Unknown keys and values of the wrong type are errors naming the file
 * and the key: a typo must not silently leave a default in place. */

#include <stdbool.h>
#include <stdint.h>

#include "error.h"
#include "server.h"

/* Fixed, not relative to the install prefix: svffctl, the units and the
 * operator's scripts all meet at these paths. */
#define SVFFD_SOCKET_DEFAULT "/run/svff/svffd.sock"
#define SVFFD_STATE_DIR_DEFAULT "/var/lib/svff"
#define SVFFD_CONFIG_DEFAULT "/etc/svff/svff.conf"

struct config {
        char *socket;
        char *state_dir;
        char *sysfs_root;
        char *libvirt_uri;
        int log_level;
        char *admin_group;      /* NULL: root only */
        char *vf_driver;
        uint64_t numvfs_timeout_usec;
        uint64_t list_max_age_usec;
        unsigned workers;
        uint64_t detach_timeout_usec;   /* how long detach waits for the guest */
        /* The QMP commands of QEMU's device pause (SVFF's QEMU patch;
         * stock QEMU has none: pause then detaches with reservation). */
        char *qmp_pause_command;
        char *qmp_unpause_command;
        struct server_limits limits;
};

/* Fills cfg with the built-in defaults. */
int config_init(struct config *cfg);
void config_done(struct config *cfg);

/* Applies the file at path over cfg. A missing file is -ENOENT with cfg
 * untouched (the caller decides whether that matters); every other
 * failure leaves cfg untouched too and fills err with file, key and, for
 * syntax errors, line. */
int config_load_file(struct config *cfg, const char *path, struct svff_error *err);

/* Copies every field (strings duplicated). */
int config_copy(const struct config *from, struct config *to);

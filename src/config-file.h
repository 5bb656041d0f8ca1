/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

#include <sys/types.h>

/* svff's settings: built-in defaults, then the config file, then its
 * drop-ins (FILE.d/ *.conf in lexical order, later wins), then svffd's
 * command line. Each file is one JSON object, read with json-c. svffd
 * re-reads them on SIGHUP; the settings marked "restart" only take
 * effect at the next start. Shared by svffd and 'svffctl config check'.
 *
 *   {
 *     "socket": "/run/svff/svffd.sock",          (restart)
 *     "state_dir": "/var/lib/svff",              (restart)
 *     "sysfs_root": "/sys",                      (restart)
 *     "libvirt_uri": "qemu:///system",
 *     "log_level": "info",
 *     "admin_group": "svff",
 *     "vf_driver": "vfio-pci",
 *     "numvfs_timeout_sec": 30,                  base of a numvfs write's deadline,
 *     "numvfs_timeout_per_vf_msec": 200,         plus this per VF created or removed
 *     "bind_timeout_sec": 10,                    base of the deadline to bind a PF's VFs,
 *     "bind_timeout_per_vf_msec": 1000,          plus this per VF
 *     "detach_timeout_sec": 10,
 *     "reconf_detach_timeout_sec": 30,           a reconf's unplug of each assigned VF
 *     "qmp_timeout_sec": 5,
 *     "device_pause_command": "x-svff-device-pause",
 *     "device_unpause_command": "x-svff-device-unpause",
 *     "settle_msec": 500,
 *     "list_max_age_msec": 1000,
 *     "workers": 2,                              (restart)
 *     "libvirt_workers": 16,                     (restart)
 *     "limits": { "max_connections": 1024, "max_connections_per_uid": 128,
 *                 "max_message_bytes": 262144, "idle_timeout_sec": 60,
 *                 "monitor_backlog_bytes": 262144 },
 *     "manage": "all",                           or a list of rules (allowlist.h):
 *                                                ["10ee:903f", "0000:3b:00.0", "class:qdma"];
 *                                                other PFs are listed read-only
 *     "flash_hook": "/usr/libexec/svff/flash",   run to reprogram a PF (flash-hook.h);
 *     "flash_image_dir": "/var/lib/svff/images", null: none. Images must be under here
 *     "flash_timeout_sec": 600,
 *     "metrics_textfile": "/var/lib/prometheus/node-exporter/svff.prom",
 *                                                metrics for node_exporter's textfile
 *                                                collector (metrics.h); null: none
 *     "metrics_poll_sec": 10,                    its look at the host (drift of every kind)
 *     "policies": {
 *       "NAME": { "match": { "address": "0000:3b:00.0" }      one of these
 *                 "match": { "id": "10ee:903f" }
 *                 "match": { "interface": "ens1f0" },
 *                 "numvfs": 4, "vf_driver": "vfio-pci",
 *                 "autoprobe": false, "pool": true,
 *                 "nvme": { "vq": 2, "vi": 1, "namespace": 1 } },  per class
 *       "OTHER": null                                        drops OTHER
 *     }
 *   }
 *
 * Policies are named so that a drop-in can replace or drop one; the
 * most specific match wins (address, then interface, then id). A member
 * named after a device class (src/class.h) holds that class's settings
 * for every VF of the PF: an object, whose content the class checks
 * when it plans.
 *
 * Unknown keys and values of the wrong type are errors naming the file,
 * the key and its line: a typo must not silently leave a default in
 * place. An empty file (or /dev/null) sets nothing. A file is UTF-8
 * text: a NUL byte or a byte that is not UTF-8 is an error naming the
 * file, the line and the column. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "pciaddr.h"

struct json_object;

/* Fixed, not relative to the install prefix: svffctl, the units and the
 * operator's scripts all meet at these paths (the units' RuntimeDirectory=
 * and StateDirectory= put them there). */
#define SVFFD_SOCKET_DEFAULT "/run/svff/svffd.sock"
#define SVFFD_STATE_DIR_DEFAULT "/var/lib/svff"
/* The config follows configure's --sysconfdir, where 'make install' puts
 * the example and the drop-in directory: --sysconfdir=/etc gives
 * /etc/svff/svff.conf. */
#ifndef SYSCONFDIR
#define SYSCONFDIR "/etc"
#endif
#define SVFFD_CONFIG_DEFAULT SYSCONFDIR "/svff/svff.conf"

struct svff_config_limits {
        size_t max_message;
        unsigned max_connections;
        unsigned max_connections_per_uid;
        uint64_t idle_timeout_usec;
        size_t monitor_backlog;         /* bytes a Monitor stream may lag by */
};

enum svff_policy_match {
        SVFF_POLICY_MATCH_ADDRESS,
        SVFF_POLICY_MATCH_INTERFACE,
        SVFF_POLICY_MATCH_ID,
};

struct svff_policy {
        char *name;
        char *origin;           /* "FILE:LINE" that defined it */
        enum svff_policy_match match;
        char address[SVFF_PCI_ADDR_STRLEN];
        char *interface;
        unsigned vendor_id, device_id;
        int numvfs;             /* -1: leave the count alone */
        char *vf_driver;        /* NULL: the global vf_driver */
        int autoprobe;          /* -1: leave alone, else 0/1 */
        bool pool;              /* VFs join the pool attach picks from */
        struct json_object *classes; /* {"<class>": settings}, or NULL */
        /* The identities ("vvvv:dddd", lower case) a reprogram of the PF
         * may leave it with, a JSON array; NULL: only the one it has. */
        struct json_object *reprogram_ids;
        /* The image the PF must hold (an absolute path under
         * flash_image_dir), flashed by the policy's init unless the store
         * says svff last flashed this very file to it; NULL: none. */
        char *image;
        /* "verify_image": "sha256": the image is compared by its
         * content's SHA-256, not by its metadata. */
        bool verify_sha256;
};

struct svff_config {
        char *socket;
        char *state_dir;
        char *sysfs_root;
        char *libvirt_uri;
        int log_level;
        char *admin_group;      /* NULL: root only */
        char *vf_driver;
        /* Deadlines scale with the work: base + per VF x VFs. */
        uint64_t numvfs_timeout_usec;
        uint64_t numvfs_timeout_per_vf_usec;
        uint64_t bind_timeout_usec;
        uint64_t bind_timeout_per_vf_usec;
        uint64_t detach_timeout_usec;
        /* A reconf's detach: a guest busy on the device it loses takes
         * longer to let go than an idle one a plain detach expects. */
        uint64_t reconf_detach_timeout_usec;
        uint64_t qmp_timeout_usec;
        /* QMP commands of QEMU's device pause (the SVFF QEMU patch; stock
         * QEMU has none, and pause then detaches with reservation). */
        char *device_pause_command;
        char *device_unpause_command;
        uint64_t settle_usec;   /* quiet time after a PF appears */
        uint64_t list_max_age_usec;
        unsigned workers;               /* threads for blocking sysfs work */
        unsigned libvirt_workers;       /* threads for libvirt calls: attaches and detaches in flight */
        struct svff_config_limits limits;
        struct svff_policy *policies;
        size_t n_policies;
        /* The PFs svffd manages: NULL for all, else the rules
         * (allowlist.h), NULL-terminated; manage_origin is "FILE:LINE". */
        char **manage;
        char *manage_origin;
        /* Reprogramming: the hook, the directory images must be under,
         * and the hook's deadline. NULL: none configured. */
        char *flash_hook;
        char *flash_image_dir;
        uint64_t flash_timeout_usec;
        /* The metrics file svffd writes (an absolute path), or NULL, and
         * how often svffd looks at the host for it unasked. */
        char *metrics_textfile;
        uint64_t metrics_poll_usec;
        /* What the last load read but warns about (keys in the spelling
         * of earlier releases), one "FILE:LINE: ..." a line, or NULL. */
        char *warnings;
};

/* Fills cfg with the built-in defaults. */
int svff_config_init(struct svff_config *cfg);
void svff_config_done(struct svff_config *cfg);
/* Copies every field (strings and policies duplicated). */
int svff_config_copy(const struct svff_config *from, struct svff_config *to);

/* Applies the file at path over cfg. A missing file is -ENOENT with cfg
 * untouched (the caller decides whether that matters); every other
 * failure leaves cfg untouched too and fills err with one line per
 * problem, each "FILE:LINE: key 'K' ..." (the line where the key is, or
 * where the parser stopped). */
int svff_config_load_file(struct svff_config *cfg, const char *path, struct svff_error *err);

/* The same for data[0, len), the text of a file called name (for
 * messages), as if read from it: fuzzing, tests. */
int svff_config_load_data(struct svff_config *cfg, const char *name, const char *data, size_t len,
                          struct svff_error *err);

/* Applies path, then every PATH.d/ *.conf in lexical order. A missing
 * path is -ENOENT unless missing_ok; a missing drop-in directory is
 * fine. On failure cfg is untouched and err names every bad file. */
int svff_config_load(struct svff_config *cfg, const char *path, bool missing_ok,
                     struct svff_error *err);

/* cfg as an svff.conf would write it (every key, defaults included,
 * snake_case as in the file; each policy with where it was defined):
 * what svffd runs with after the file and its drop-ins. A new
 * reference, or NULL on out of memory. */
struct json_object *svff_config_to_json(const struct svff_config *cfg);

/* Appends one line to *warnings (NULL: none yet), as config loads give
 * them. -ENOMEM. */
int svff_warnings_add(char **warnings, const char *fmt, ...) _printf_(2, 3);

/* The gid of cfg's admin_group: 1 and *ret (may be NULL), 0 when none is
 * set, -ENOENT when there is no such group, other -errno when the lookup
 * failed. */
int svff_config_admin_gid(const struct svff_config *cfg, gid_t *ret);

/* What a loaded configuration asks of this host that the host does not
 * have, for 'svffctl config check' (svffd itself reports each when it
 * uses the setting): an admin_group that is no group, a vf_driver (the
 * global one or a policy's) that no PCI driver under sysfs_root is
 * registered as, a libvirt_uri that is not the QEMU driver's, and a
 * policy whose match another one earlier in the files repeats, so that
 * it never applies. One line per warning appended to *warnings
 * (allocated; unchanged when there is none). -ENOMEM only. */
int svff_config_host_warnings(const struct svff_config *cfg, char **warnings);

/* The policy for a PF (borrowed from cfg) or NULL. netdev may be NULL. */
const struct svff_policy *svff_config_find_policy(const struct svff_config *cfg,
                                                  const char *address, unsigned vendor_id,
                                                  unsigned device_id, const char *netdev);

/* The deadline of a numvfs write that creates or removes n VFs, and of
 * binding n VFs: the base plus the per-VF budget times n. */
uint64_t svff_config_numvfs_timeout(const struct svff_config *cfg, unsigned n);
uint64_t svff_config_bind_timeout(const struct svff_config *cfg, unsigned n);

/* "err", "warning", "notice", "info", "debug" <-> LOG_*; -EINVAL. */
int svff_log_level_from_string(const char *s);
const char *svff_log_level_to_string(int level);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Where svffd's settings come from: the built-in defaults, the config
 * file with its drop-ins, then the command line, which wins over the file
 * on reload too. Reading is pure (no running state is touched); the
 * manager installs what was read. */

#include <stdbool.h>
#include <sys/types.h>

#include "config-file.h"
#include "error.h"
#include "server.h"

/* What the command line set. NULL / -1 when not given. */
struct cmdline {
        char *config_path;
        bool config_path_given;
        char *socket;
        char *state_dir;
        char *sysfs_root;
        char *libvirt_uri;
        int log_level;
};

void cmdline_done(struct cmdline *c);

/* The config file svffd reads. */
const char *settings_path(const struct cmdline *c);
/* Defaults + file + command line into ret (a missing file at the
 * default place is fine). */
int settings_read(const struct cmdline *c, struct svff_config *ret, struct svff_error *err);
/* A reload's new settings: those used to set up what runs (socket,
 * state_dir, sysfs_root, the pool sizes) need a restart, so next keeps
 * running's (logged). -ENOMEM. */
int settings_keep_restart_only(const struct svff_config *running, struct svff_config *next);
/* The admin group's id; false (logged) when there is none or it is not
 * found. */
bool settings_admin_gid(const struct svff_config *c, gid_t *ret);
/* The server's limits from c (and the built-in rest). */
void settings_server_limits(const struct svff_config *c, gid_t admin_gid, bool have_admin_gid,
                            struct server_limits *ret);

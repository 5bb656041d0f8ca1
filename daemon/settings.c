/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "settings.h"

void cmdline_done(struct cmdline *c) {
        free(c->config_path);
        free(c->socket);
        free(c->state_dir);
        free(c->sysfs_root);
        free(c->libvirt_uri);
}

static int replace(char **slot, const char *v) {
        char *n;

        if (!v)
                return 0;
        n = strdup(v);
        if (!n)
                return -ENOMEM;
        free(*slot);
        *slot = n;
        return 0;
}

static int apply_cmdline(const struct cmdline *cl, struct svff_config *c) {
        if (replace(&c->socket, cl->socket) < 0 ||
            replace(&c->state_dir, cl->state_dir) < 0 ||
            replace(&c->sysfs_root, cl->sysfs_root) < 0 ||
            replace(&c->libvirt_uri, cl->libvirt_uri) < 0)
                return -ENOMEM;
        if (cl->log_level >= 0)
                c->log_level = cl->log_level;
        return 0;
}

const char *settings_path(const struct cmdline *c) {
        return c->config_path ?: SVFFD_CONFIG_DEFAULT;
}

int settings_read(const struct cmdline *cl, struct svff_config *ret, struct svff_error *err) {
        struct svff_config c;
        int r;

        r = svff_config_init(&c);
        if (r < 0)
                return r;
        /* No config file at the default place: the defaults (and the
         * drop-ins, if any). */
        r = svff_config_load(&c, settings_path(cl), !cl->config_path_given, err);
        if (r >= 0 && c.warnings) {
                _cleanup_free_ char *w = strdup(c.warnings);
                char *save = NULL;

                for (char *line = w ? strtok_r(w, "\n", &save) : NULL; line; line = strtok_r(NULL, "\n", &save))
                        log_warning("%s", line);
        }
        if (r >= 0)
                r = apply_cmdline(cl, &c);
        if (r < 0) {
                svff_config_done(&c);
                return r;
        }
        *ret = c;
        return 0;
}

int settings_keep_restart_only(const struct svff_config *running, struct svff_config *c) {
#define KEEP(field, name)                                                                  \
        if (!streq(c->field, running->field)) {                                            \
                log_notice("Changing '%s' from '%s' to '%s' needs a restart, keeping '%s'.", \
                           name, running->field, c->field, running->field);                 \
                free(c->field);                                                            \
                c->field = strdup(running->field);                                         \
        }
        KEEP(socket, "socket");
        KEEP(state_dir, "state_dir");
        KEEP(sysfs_root, "sysfs_root");
#undef KEEP
        if (!c->socket || !c->state_dir || !c->sysfs_root)
                return -ENOMEM;
        c->workers = running->workers;
        c->libvirt_workers = running->libvirt_workers;
        return 0;
}

bool settings_admin_gid(const struct svff_config *c, gid_t *ret) {
        int r = svff_config_admin_gid(c, ret);

        if (r > 0)
                return true;
        if (r < 0)
                log_warning_errno(r, "Admin group '%s' not found, only root may change devices: %m", c->admin_group);
        return false;
}

void settings_server_limits(const struct svff_config *c, gid_t admin_gid, bool have_admin_gid,
                            struct server_limits *ret) {
        *ret = SERVER_LIMITS_DEFAULT;
        ret->max_message = c->limits.max_message;
        ret->max_connections = c->limits.max_connections;
        ret->max_connections_per_uid = c->limits.max_connections_per_uid;
        ret->idle_timeout_usec = c->limits.idle_timeout_usec;
        ret->admin_gid = admin_gid;
        ret->have_admin_gid = have_admin_gid;
}

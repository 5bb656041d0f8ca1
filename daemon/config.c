/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <syslog.h>
#include <json-c/json.h>

#include "config.h"
#include "log.h"

#define CONFIG_FILE_MAX (1024 * 1024)

int config_init(struct config *cfg) {
        *cfg = (struct config) {
                .socket = strdup(SVFFD_SOCKET_DEFAULT),
                .state_dir = strdup(SVFFD_STATE_DIR_DEFAULT),
                .sysfs_root = strdup("/sys"),
                .libvirt_uri = strdup("qemu:///system"),
                .log_level = LOG_INFO,
                .admin_group = NULL,
                .vf_driver = strdup("vfio-pci"),
                .numvfs_timeout_usec = 30 * 1000000ULL,
                .list_max_age_usec = 1000 * 1000ULL,
                .workers = 2,
                .detach_timeout_usec = 10 * 1000000ULL,
                .qmp_pause_command = strdup("x-svff-device-pause"),
                .qmp_unpause_command = strdup("x-svff-device-unpause"),
                .limits = SERVER_LIMITS_DEFAULT,
        };
        if (!cfg->socket || !cfg->state_dir || !cfg->sysfs_root || !cfg->libvirt_uri ||
            !cfg->vf_driver || !cfg->qmp_pause_command || !cfg->qmp_unpause_command) {
                config_done(cfg);
                return -ENOMEM;
        }
        return 0;
}

void config_done(struct config *cfg) {
        free(cfg->socket);
        free(cfg->state_dir);
        free(cfg->sysfs_root);
        free(cfg->libvirt_uri);
        free(cfg->admin_group);
        free(cfg->vf_driver);
        free(cfg->qmp_pause_command);
        free(cfg->qmp_unpause_command);
        *cfg = (struct config) {};
}

static int dup_or_null(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

int config_copy(const struct config *from, struct config *to) {
        struct config c = *from;
        int r = 0;

        c.socket = c.state_dir = c.sysfs_root = c.libvirt_uri = c.admin_group = c.vf_driver = NULL;
        c.qmp_pause_command = c.qmp_unpause_command = NULL;
        if (dup_or_null(from->socket, &c.socket) < 0 ||
            dup_or_null(from->state_dir, &c.state_dir) < 0 ||
            dup_or_null(from->sysfs_root, &c.sysfs_root) < 0 ||
            dup_or_null(from->libvirt_uri, &c.libvirt_uri) < 0 ||
            dup_or_null(from->admin_group, &c.admin_group) < 0 ||
            dup_or_null(from->vf_driver, &c.vf_driver) < 0 ||
            dup_or_null(from->qmp_pause_command, &c.qmp_pause_command) < 0 ||
            dup_or_null(from->qmp_unpause_command, &c.qmp_unpause_command) < 0)
                r = -ENOMEM;
        if (r < 0) {
                config_done(&c);
                return r;
        }
        *to = c;
        return 0;
}

/* Line of byte offset off in data (1-based). */
static unsigned line_of(const char *data, size_t off) {
        unsigned line = 1;

        for (size_t i = 0; i < off && data[i]; i++)
                if (data[i] == '\n')
                        line++;
        return line;
}

static int get_string(struct json_object *v, const char *path, const char *key, char **slot,
                      bool nullable, struct svff_error *err) {
        char *s;

        if (nullable && !v) {
                free(*slot);
                *slot = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0 ||
            json_object_get_string_len(v) > PATH_MAX)
                return svff_error_set(err, -EINVAL, "%s: key '%s' must be a non-empty string%s",
                                      path, key, nullable ? " or null" : "");
        s = strdup(json_object_get_string(v));
        if (!s)
                return -ENOMEM;
        free(*slot);
        *slot = s;
        return 0;
}

static int get_uint(struct json_object *v, const char *path, const char *key, uint64_t min,
                    uint64_t max, uint64_t *ret, struct svff_error *err) {
        int64_t i;

        if (!json_object_is_type(v, json_type_int))
                return svff_error_set(err, -EINVAL, "%s: key '%s' must be an integer", path, key);
        i = json_object_get_int64(v);
        /* json-c saturates out-of-range numbers at INT64_MIN/MAX (and
         * UINT64_MAX); those fail the range check below too. */
        if (i < 0 || (uint64_t) i < min || (uint64_t) i > max ||
            json_object_get_uint64(v) > max)
                return svff_error_set(err, -ERANGE,
                                      "%s: key '%s' must be between %llu and %llu", path, key,
                                      (unsigned long long) min, (unsigned long long) max);
        *ret = (uint64_t) i;
        return 0;
}

static int apply_limits(struct config *c, struct json_object *o, const char *path,
                        struct svff_error *err) {
        uint64_t v;
        int r;

        if (!json_object_is_type(o, json_type_object))
                return svff_error_set(err, -EINVAL, "%s: key 'limits' must be an object", path);

        json_object_object_foreach(o, key, val) {
                if (streq(key, "max-connections")) {
                        r = get_uint(val, path, "limits.max-connections", 1, 65536, &v, err);
                        c->limits.max_connections = (unsigned) v;
                } else if (streq(key, "max-connections-per-uid")) {
                        r = get_uint(val, path, "limits.max-connections-per-uid", 1, 65536, &v, err);
                        c->limits.max_connections_per_uid = (unsigned) v;
                } else if (streq(key, "max-message-bytes")) {
                        r = get_uint(val, path, "limits.max-message-bytes", 1024, 64 * 1024 * 1024, &v, err);
                        c->limits.max_message = (size_t) v;
                } else if (streq(key, "idle-timeout-sec")) {
                        r = get_uint(val, path, "limits.idle-timeout-sec", 0, 86400, &v, err);
                        c->limits.idle_timeout_usec = v * 1000000ULL;
                } else if (streq(key, "idle-timeout-msec")) {
                        r = get_uint(val, path, "limits.idle-timeout-msec", 0, 86400000, &v, err);
                        c->limits.idle_timeout_usec = v * 1000ULL;
                } else
                        r = svff_error_set(err, -EINVAL, "%s: unknown key 'limits.%s'", path, key);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int apply(struct config *c, struct json_object *root, const char *path,
                 struct svff_error *err) {
        uint64_t v;
        int r;

        if (!json_object_is_type(root, json_type_object))
                return svff_error_set(err, -EINVAL, "%s: the top level must be a JSON object", path);

        json_object_object_foreach(root, key, val) {
                if (streq(key, "socket"))
                        r = get_string(val, path, key, &c->socket, false, err);
                else if (streq(key, "state-dir"))
                        r = get_string(val, path, key, &c->state_dir, false, err);
                else if (streq(key, "sysfs-root"))
                        r = get_string(val, path, key, &c->sysfs_root, false, err);
                else if (streq(key, "libvirt-uri"))
                        r = get_string(val, path, key, &c->libvirt_uri, false, err);
                else if (streq(key, "admin-group"))
                        r = get_string(val, path, key, &c->admin_group, true, err);
                else if (streq(key, "vf-driver"))
                        r = get_string(val, path, key, &c->vf_driver, false, err);
                else if (streq(key, "log-level")) {
                        int l = json_object_is_type(val, json_type_string)
                                        ? log_level_from_string(json_object_get_string(val))
                                        : -EINVAL;
                        r = l < 0 ? svff_error_set(err, -EINVAL,
                                                   "%s: key 'log-level' must be one of err, warning, notice, info, debug",
                                                   path)
                                  : 0;
                        if (l >= 0)
                                c->log_level = l;
                } else if (streq(key, "numvfs-timeout-sec")) {
                        r = get_uint(val, path, key, 1, 3600, &v, err);
                        c->numvfs_timeout_usec = v * 1000000ULL;
                } else if (streq(key, "list-max-age-msec")) {
                        r = get_uint(val, path, key, 0, 3600000, &v, err);
                        c->list_max_age_usec = v * 1000ULL;
                } else if (streq(key, "workers")) {
                        r = get_uint(val, path, key, 1, 64, &v, err);
                        c->workers = (unsigned) v;
                } else if (streq(key, "detach-timeout-sec")) {
                        r = get_uint(val, path, key, 1, 3600, &v, err);
                        c->detach_timeout_usec = v * 1000000ULL;
                } else if (streq(key, "qmp-pause-command"))
                        r = get_string(val, path, key, &c->qmp_pause_command, false, err);
                else if (streq(key, "qmp-unpause-command"))
                        r = get_string(val, path, key, &c->qmp_unpause_command, false, err);
                else if (streq(key, "limits"))
                        r = apply_limits(c, val, path, err);
                else
                        r = svff_error_set(err, -EINVAL, "%s: unknown key '%s'", path, key);
                if (r < 0)
                        return r;
        }
        return 0;
}

int config_load_file(struct config *cfg, const char *path, struct svff_error *err) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        struct json_tokener *tok;
        struct json_object *root;
        struct config c;
        struct stat st;
        size_t len = 0;
        int r;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return svff_error_set_errno(err, -errno, "Failed to open config file '%s'", path);
        if (fstat(fd, &st) < 0)
                return svff_error_set_errno(err, -errno, "Failed to stat config file '%s'", path);
        if (!S_ISREG(st.st_mode))
                return svff_error_set(err, -EINVAL, "%s: not a regular file", path);
        if (st.st_size > CONFIG_FILE_MAX)
                return svff_error_set(err, -EFBIG, "%s: larger than %d bytes", path, CONFIG_FILE_MAX);

        data = malloc((size_t) st.st_size + 1);
        if (!data)
                return -ENOMEM;
        while (len < (size_t) st.st_size) {
                ssize_t n = read(fd, data + len, (size_t) st.st_size - len);
                if (n < 0)
                        return svff_error_set_errno(err, -errno, "Failed to read config file '%s'", path);
                if (n == 0)
                        break;
                len += (size_t) n;
        }
        data[len] = 0;

        tok = json_tokener_new_ex(16);
        if (!tok)
                return -ENOMEM;
        root = json_tokener_parse_ex(tok, data, (int) len);
        if (!root || json_tokener_get_parse_end(tok) < len) {
                size_t off = json_tokener_get_parse_end(tok);
                enum json_tokener_error e = json_tokener_get_error(tok);

                /* Whitespace after the document is fine. */
                if (root && strspn(data + off, " \t\r\n") == len - off)
                        goto parsed;
                json_object_put(root);
                json_tokener_free(tok);
                return svff_error_set(err, -EINVAL, "%s:%u: %s", path, line_of(data, off),
                                      e == json_tokener_success ? "trailing text after the JSON object"
                                                                : e == json_tokener_continue ? "unexpected end of file"
                                                                                             : json_tokener_error_desc(e));
        }
parsed:
        json_tokener_free(tok);

        r = config_copy(cfg, &c);
        if (r < 0) {
                json_object_put(root);
                return r;
        }
        r = apply(&c, root, path, err);
        json_object_put(root);
        if (r < 0) {
                config_done(&c);
                return r;
        }
        config_done(cfg);
        *cfg = c;
        return 0;
}

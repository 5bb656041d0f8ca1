/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <grp.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <syslog.h>
#include <unistd.h>
#include <json-c/json.h>

#include "allowlist.h"
#include "class.h"
#include "config-file.h"
#include "json-util.h"
#include "utf8.h"
#include "varlink.h"

#define CONFIG_FILE_MAX (1024 * 1024)
#define CONFIG_DROPINS_MAX 256
#define POLICIES_MAX 1024
#define POLICY_NAME_MAX 64
#define DRIVER_NAME_MAX 64
#define IFNAME_MAX 15

static const char *const level_names[] = {
        [LOG_EMERG] = "emerg", [LOG_ALERT] = "alert", [LOG_CRIT] = "crit",
        [LOG_ERR] = "err", [LOG_WARNING] = "warning", [LOG_NOTICE] = "notice",
        [LOG_INFO] = "info", [LOG_DEBUG] = "debug",
};

int svff_log_level_from_string(const char *s) {
        char *end;
        long l;

        if (!s || !*s)
                return -EINVAL;
        for (size_t i = 0; i < ELEMENTSOF(level_names); i++)
                if (streq(s, level_names[i]))
                        return (int) i;
        if (streq(s, "error"))
                return LOG_ERR;
        if (streq(s, "warn"))
                return LOG_WARNING;
        errno = 0;
        l = strtol(s, &end, 10);
        if (errno != 0 || end == s || *end || l < LOG_EMERG || l > LOG_DEBUG)
                return -EINVAL;
        return (int) l;
}

const char *svff_log_level_to_string(int level) {
        if (level < 0 || level >= (int) ELEMENTSOF(level_names))
                return "?";
        return level_names[level];
}

int svff_config_init(struct svff_config *cfg) {
        *cfg = (struct svff_config) {
                .socket = strdup(SVFFD_SOCKET_DEFAULT),
                .state_dir = strdup(SVFFD_STATE_DIR_DEFAULT),
                .sysfs_root = strdup("/sys"),
                .libvirt_uri = strdup("qemu:///system"),
                .log_level = LOG_INFO,
                .admin_group = NULL,
                .vf_driver = strdup("vfio-pci"),
                .numvfs_timeout_usec = 30 * 1000000ULL,
                .numvfs_timeout_per_vf_usec = 200 * 1000ULL,
                .bind_timeout_usec = 10 * 1000000ULL,
                .bind_timeout_per_vf_usec = 1000 * 1000ULL,
                .detach_timeout_usec = 10 * 1000000ULL,
                .reconf_detach_timeout_usec = 30 * 1000000ULL,
                .qmp_timeout_usec = 5 * 1000000ULL,
                .device_pause_command = strdup("x-svff-device-pause"),
                .device_unpause_command = strdup("x-svff-device-unpause"),
                .settle_usec = 500 * 1000ULL,
                .list_max_age_usec = 1000 * 1000ULL,
                .workers = 2,
                .libvirt_workers = 16,
                .flash_timeout_usec = 600 * 1000000ULL,
                .metrics_poll_usec = 10 * 1000000ULL,
                .limits = {
                        .max_message = SVFF_VARLINK_MESSAGE_MAX,
                        .max_connections = 1024,
                        .max_connections_per_uid = 128,
                        .idle_timeout_usec = 60 * 1000000ULL,
                        .monitor_backlog = 256 * 1024,
                },
        };
        if (!cfg->socket || !cfg->state_dir || !cfg->sysfs_root || !cfg->libvirt_uri ||
            !cfg->vf_driver || !cfg->device_pause_command || !cfg->device_unpause_command) {
                svff_config_done(cfg);
                return -ENOMEM;
        }
        return 0;
}

static void policy_done(struct svff_policy *p) {
        free(p->name);
        free(p->origin);
        free(p->interface);
        free(p->vf_driver);
        json_object_put(p->classes);
        json_object_put(p->reprogram_ids);
        free(p->image);
        *p = (struct svff_policy) {};
}

void svff_config_done(struct svff_config *cfg) {
        free(cfg->socket);
        free(cfg->state_dir);
        free(cfg->sysfs_root);
        free(cfg->libvirt_uri);
        free(cfg->admin_group);
        free(cfg->vf_driver);
        free(cfg->device_pause_command);
        free(cfg->device_unpause_command);
        for (size_t i = 0; i < cfg->n_policies; i++)
                policy_done(&cfg->policies[i]);
        free(cfg->policies);
        strv_free(cfg->manage);
        free(cfg->manage_origin);
        free(cfg->flash_hook);
        free(cfg->flash_image_dir);
        free(cfg->metrics_textfile);
        free(cfg->warnings);
        *cfg = (struct svff_config) {};
}

static int dup_or_null(const char *s, char **ret) {
        if (!s) {
                *ret = NULL;
                return 0;
        }
        *ret = strdup(s);
        return *ret ? 0 : -ENOMEM;
}

/* NULL stays NULL ("all"); an empty list stays empty. */
static int strv_copy(char *const *from, char ***ret) {
        size_t n = 0;
        char **l;

        *ret = NULL;
        if (!from)
                return 0;
        while (from[n])
                n++;
        l = calloc(n + 1, sizeof(*l));
        if (!l)
                return -ENOMEM;
        for (size_t i = 0; i < n; i++)
                if (!(l[i] = strdup(from[i]))) {
                        strv_free(l);
                        return -ENOMEM;
                }
        *ret = l;
        return 0;
}

static int policy_copy(const struct svff_policy *from, struct svff_policy *to) {
        struct svff_policy p = *from;

        p.name = p.origin = p.interface = p.vf_driver = p.image = NULL;
        p.classes = p.reprogram_ids = NULL;
        if (dup_or_null(from->name, &p.name) < 0 || dup_or_null(from->origin, &p.origin) < 0 ||
            (from->reprogram_ids && json_object_deep_copy(from->reprogram_ids, &p.reprogram_ids, NULL) < 0) ||
            dup_or_null(from->interface, &p.interface) < 0 ||
            dup_or_null(from->vf_driver, &p.vf_driver) < 0 || dup_or_null(from->image, &p.image) < 0 ||
            (from->classes && json_object_deep_copy(from->classes, &p.classes, NULL) < 0)) {
                policy_done(&p);
                return -ENOMEM;
        }
        *to = p;
        return 0;
}

int svff_config_copy(const struct svff_config *from, struct svff_config *to) {
        struct svff_config c = *from;
        int r = 0;

        c.socket = c.state_dir = c.sysfs_root = c.libvirt_uri = c.admin_group = c.vf_driver =
                c.device_pause_command = c.device_unpause_command = NULL;
        c.policies = NULL;
        c.n_policies = 0;
        c.manage = NULL;
        c.manage_origin = c.flash_hook = c.flash_image_dir = c.metrics_textfile = c.warnings = NULL;
        if (strv_copy(from->manage, &c.manage) < 0 ||
            dup_or_null(from->warnings, &c.warnings) < 0 ||
            dup_or_null(from->manage_origin, &c.manage_origin) < 0 ||
            dup_or_null(from->flash_hook, &c.flash_hook) < 0 ||
            dup_or_null(from->flash_image_dir, &c.flash_image_dir) < 0 ||
            dup_or_null(from->metrics_textfile, &c.metrics_textfile) < 0)
                r = -ENOMEM;
        if (r < 0 || dup_or_null(from->socket, &c.socket) < 0 ||
            dup_or_null(from->state_dir, &c.state_dir) < 0 ||
            dup_or_null(from->sysfs_root, &c.sysfs_root) < 0 ||
            dup_or_null(from->libvirt_uri, &c.libvirt_uri) < 0 ||
            dup_or_null(from->admin_group, &c.admin_group) < 0 ||
            dup_or_null(from->vf_driver, &c.vf_driver) < 0 ||
            dup_or_null(from->device_pause_command, &c.device_pause_command) < 0 ||
            dup_or_null(from->device_unpause_command, &c.device_unpause_command) < 0)
                r = -ENOMEM;
        if (r >= 0 && from->n_policies > 0) {
                c.policies = calloc(from->n_policies, sizeof(*c.policies));
                if (!c.policies)
                        r = -ENOMEM;
                for (size_t i = 0; r >= 0 && i < from->n_policies; i++) {
                        r = policy_copy(&from->policies[i], &c.policies[i]);
                        if (r >= 0)
                                c.n_policies++;
                }
        }
        if (r < 0) {
                svff_config_done(&c);
                return r;
        }
        *to = c;
        return 0;
}

/* ---- one file ---- */

/* A file being applied: its text (to find a key's line), the path of
 * keys being looked at, and every problem found so far. */
struct key_pos {
        char *path;             /* "policies.fpga.numvfs" */
        size_t offset;
        char *written;          /* the key as the file spells it, if not so */
};

struct parser {
        const char *path;
        const char *data;
        const char *keys[8];
        size_t depth;
        char *errors;           /* one problem per line */
        char *warnings;         /* the same, for what is read all the same */
        int first_r;
        struct key_pos *positions;  /* every key of the file, in order */
        size_t n_positions;
};

/* Whether the members of the object at path[0..depth) are keys of
 * svff.conf, spelled snake_case (their kebab-case spelling of earlier
 * releases is read with a warning), rather than names the operator
 * chose: the policies' names, which are taken as written. */
static bool keys_are_ours(const char *const *path, size_t depth) {
        return !(depth == 1 && streq(path[0], "policies"));
}

/* Line of byte offset off in data (1-based). */
static unsigned line_of(const char *data, size_t off) {
        unsigned line = 1;

        for (size_t i = 0; i < off && data[i]; i++)
                if (data[i] == '\n')
                        line++;
        return line;
}

/* The line of the innermost key of p->keys: the positions come from
 * svff_json_scan_keys() over the same text, so a top-level key is not
 * confused with a nested one of the same name, nor with text in a
 * string. */
static const struct key_pos *key_pos(struct parser *p) {
        char name[1024];
        size_t len = 0;

        for (size_t i = 0; i < p->depth && len < sizeof(name); i++)
                len += (size_t) snprintf(name + len, sizeof(name) - len, "%s%s", i ? "." : "", p->keys[i]);
        if (p->depth == 0)
                return NULL;
        for (size_t i = 0; i < p->n_positions; i++)
                if (streq(p->positions[i].path, name))
                        return &p->positions[i];
        return NULL;
}

static unsigned key_line(struct parser *p) {
        const struct key_pos *k = key_pos(p);

        return k ? line_of(p->data, k->offset) : 1;
}

/* The key's path for a message, each name as a terminal may show it
 * (a key is any JSON string: control characters are escaped). */
static void key_name(struct parser *p, char *buf, size_t size) {
        size_t len = 0;

        buf[0] = 0;
        for (size_t i = 0; i < p->depth && len < size; i++) {
                _cleanup_free_ char *k = svff_utf8_escape(p->keys[i], false);

                len += (size_t) snprintf(buf + len, size - len, "%s%s", i ? "." : "", k ?: "?");
        }
}

/* column 0: the line only */
static int add_error_at(struct parser *p, int r, unsigned line, unsigned column, const char *msg) {
        char col[16] = "";
        char *n;

        if (column > 0)
                snprintf(col, sizeof(col), "%u:", column);
        if (asprintf(&n, "%s%s%s:%u:%s %s", p->errors ?: "", p->errors ? "\n" : "", p->path, line, col,
                     msg) < 0)
                return -ENOMEM;
        free(p->errors);
        p->errors = n;
        if (p->first_r == 0)
                p->first_r = r;
        return r;
}

static int add_error(struct parser *p, int r, unsigned line, const char *msg) {
        return add_error_at(p, r, line, 0, msg);
}

static int add_warning(struct parser *p, unsigned line, const char *fmt, ...) _printf_(3, 4);
static int add_warning(struct parser *p, unsigned line, const char *fmt, ...) {
        char what[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        return svff_warnings_add(&p->warnings, "%s:%u: %s", p->path, line, what);
}

/* Records "FILE:LINE: key 'K' <problem>" for the key being looked at. */
static int key_error(struct parser *p, int r, const char *fmt, ...) _printf_(3, 4);
static int key_error(struct parser *p, int r, const char *fmt, ...) {
        char key[256], what[512], msg[1024];
        va_list ap;

        va_start(ap, fmt);
        vsnprintf(what, sizeof(what), fmt, ap);
        va_end(ap);
        key_name(p, key, sizeof(key));
        /* a key in the old spelling: the operator looks for what they wrote */
        if (key_pos(p) && key_pos(p)->written) {
                _cleanup_free_ char *w = svff_utf8_escape(key_pos(p)->written, false);

                snprintf(msg, sizeof(msg), "key '%s' (written '%s') %s", key, w ?: "?", what);
        } else
                snprintf(msg, sizeof(msg), "key '%s' %s", key, what);
        return add_error(p, r, key_line(p), msg);
}

static int push(struct parser *p, const char *key) {
        if (p->depth >= ELEMENTSOF(p->keys))
                return -E2BIG;
        p->keys[p->depth++] = key;
        return 0;
}

static void pop(struct parser *p) {
        p->depth--;
}

static int get_string(struct parser *p, struct json_object *v, char **slot, bool nullable,
                      size_t max) {
        char *s;

        if (nullable && !v) {
                free(*slot);
                *slot = NULL;
                return 0;
        }
        if (!json_object_is_type(v, json_type_string) || json_object_get_string_len(v) == 0 ||
            (size_t) json_object_get_string_len(v) > max)
                return key_error(p, -EINVAL, "must be a non-empty string%s%s",
                                 max < PATH_MAX ? " (short)" : "", nullable ? " or null" : "");
        s = strdup(json_object_get_string(v));
        if (!s)
                return -ENOMEM;
        free(*slot);
        *slot = s;
        return 0;
}

static int get_uint(struct parser *p, struct json_object *v, uint64_t min, uint64_t max,
                    uint64_t *ret) {
        int64_t i;

        if (!json_object_is_type(v, json_type_int))
                return key_error(p, -EINVAL, "must be an integer");
        i = json_object_get_int64(v);
        /* json-c saturates out-of-range numbers at INT64_MIN/MAX (and
         * UINT64_MAX); those fail the range check below too. */
        if (i < 0 || (uint64_t) i < min || (uint64_t) i > max || json_object_get_uint64(v) > max)
                return key_error(p, -ERANGE, "must be between %llu and %llu",
                                 (unsigned long long) min, (unsigned long long) max);
        *ret = (uint64_t) i;
        return 0;
}

static int get_bool(struct parser *p, struct json_object *v, bool *ret) {
        if (!json_object_is_type(v, json_type_boolean))
                return key_error(p, -EINVAL, "must be true or false");
        *ret = json_object_get_boolean(v);
        return 0;
}

static bool driver_name_valid(const char *d) {
        size_t n = strlen(d);

        if (n == 0 || n > DRIVER_NAME_MAX || streq(d, ".") || streq(d, ".."))
                return false;
        return strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

static int get_driver(struct parser *p, struct json_object *v, char **slot) {
        int r = get_string(p, v, slot, false, DRIVER_NAME_MAX);

        if (r < 0)
                return r;
        if (!driver_name_valid(*slot))
                return key_error(p, -EINVAL, "must be a driver name such as vfio-pci");
        return 0;
}

static int parse_id(const char *s, unsigned *ret_vendor, unsigned *ret_device) {
        const char *hex = "0123456789abcdefABCDEF";

        if (strlen(s) != 9 || s[4] != ':' || strspn(s, hex) != 4 || strspn(s + 5, hex) != 4)
                return -EINVAL;
        *ret_vendor = (unsigned) strtoul(s, NULL, 16);
        *ret_device = (unsigned) strtoul(s + 5, NULL, 16);
        return 0;
}

/* Parses the value of one key, which is pushed already. */
typedef int (*key_parser_t)(struct parser *p, const char *key, struct json_object *val, void *userdata);

/* Hands every key of the object o to parse_key, with the key pushed so
 * that problems name it. A problem with one key does not stop the
 * others: every problem is recorded, the first returned (-ENOMEM at
 * once). not_object is the problem when o is no object (NULL: the
 * caller checked). */
static int parse_keys(struct parser *p, struct json_object *o, const char *not_object,
                      key_parser_t parse_key, void *userdata) {
        int r = 0;

        if (not_object && !json_object_is_type(o, json_type_object))
                return key_error(p, -EINVAL, "%s", not_object);

        json_object_object_foreach(o, key, val) {
                int k;

                if (push(p, key) < 0)
                        return -E2BIG;
                k = parse_key(p, key, val, userdata);
                pop(p);
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r == 0)
                        r = k;
        }
        return r;
}

static int parse_match_key(struct parser *p, const char *key, struct json_object *val, void *userdata) {
        struct svff_policy *pol = userdata;
        int k;

        if (!json_object_is_type(val, json_type_string))
                k = key_error(p, -EINVAL, "must be a string");
        else if (streq(key, "address")) {
                pol->match = SVFF_POLICY_MATCH_ADDRESS;
                k = svff_pci_addr_canonicalize(json_object_get_string(val), pol->address);
                if (k < 0)
                        k = key_error(p, -EINVAL, "must be a PCI address such as 0000:3b:00.0");
        } else if (streq(key, "id")) {
                pol->match = SVFF_POLICY_MATCH_ID;
                k = parse_id(json_object_get_string(val), &pol->vendor_id, &pol->device_id);
                if (k < 0)
                        k = key_error(p, -EINVAL, "must be VENDOR:DEVICE in hex, such as 10ee:903f");
        } else if (streq(key, "interface")) {
                const char *ifn = json_object_get_string(val);

                pol->match = SVFF_POLICY_MATCH_INTERFACE;
                k = 0;
                if (*ifn == 0 || strlen(ifn) > IFNAME_MAX || strpbrk(ifn, "/: \t\n") ||
                    streq(ifn, ".") || streq(ifn, ".."))
                        k = key_error(p, -EINVAL, "must be a network interface name");
                else if (!(pol->interface = strdup(ifn)))
                        k = -ENOMEM;
        } else
                k = key_error(p, -EINVAL, "is unknown: match on 'address', 'id' or 'interface'");
        return k;
}

static int parse_match(struct parser *p, struct json_object *o, struct svff_policy *pol) {
        int r;

        r = parse_keys(p, o, "must be an object with one of 'address', 'id', 'interface'", parse_match_key, pol);
        if (r < 0)
                return r;
        if (json_object_object_length(o) != 1)
                return key_error(p, -EINVAL, "must hold exactly one of 'address', 'id', 'interface'");
        return 0;
}

/* "reprogram_ids": ["vvvv:dddd", ...], kept normalised (lower case, four
 * digits) so that the identity check compares strings. */
static int get_id_list(struct parser *p, struct json_object *val, struct json_object **ret) {
        _cleanup_(json_object_putp) struct json_object *a = NULL;
        size_t n;

        if (!json_object_is_type(val, json_type_array))
                return key_error(p, -EINVAL, "must be an array of \"vendor:device\" ids");
        a = json_object_new_array();
        if (!a)
                return -ENOMEM;
        n = json_object_array_length(val);
        for (size_t i = 0; i < n; i++) {
                struct json_object *e = json_object_array_get_idx(val, i);
                unsigned v, d;
                char id[16];

                if (!json_object_is_type(e, json_type_string) || parse_id(json_object_get_string(e), &v, &d) < 0)
                        return key_error(p, -EINVAL, "must be an array of \"vendor:device\" ids (e.g. \"10ee:903f\")");
                snprintf(id, sizeof(id), "%04x:%04x", v, d);
                if (json_object_array_add(a, json_object_new_string(id)) < 0)
                        return -ENOMEM;
        }
        json_object_put(*ret);
        *ret = TAKE_PTR(a);
        return 0;
}

static int get_abs_path(struct parser *p, struct json_object *v, char **slot);

static int parse_policy_key(struct parser *p, const char *key, struct json_object *val, void *userdata) {
        struct svff_policy *pol = userdata;
        uint64_t v;
        bool b = false;
        int k;

        if (streq(key, "match"))
                k = parse_match(p, val, pol);
        else if (streq(key, "numvfs")) {
                k = get_uint(p, val, 0, 65535, &v);
                if (k >= 0)
                        pol->numvfs = (int) v;
        } else if (streq(key, "vf_driver"))
                k = get_driver(p, val, &pol->vf_driver);
        else if (streq(key, "autoprobe")) {
                k = get_bool(p, val, &b);
                if (k >= 0)
                        pol->autoprobe = b;
        } else if (streq(key, "pool"))
                k = get_bool(p, val, &pol->pool);
        else if (streq(key, "reprogram_ids"))
                k = get_id_list(p, val, &pol->reprogram_ids);
        else if (streq(key, "image"))
                /* Checked against flash_image_dir when it is applied:
                 * the file may come and go. */
                k = get_abs_path(p, val, &pol->image);
        else if (streq(key, "verify_image")) {
                if (!json_object_is_type(val, json_type_string) || !streq(json_object_get_string(val), "sha256"))
                        k = key_error(p, -EINVAL, "must be \"sha256\" (the image is compared by its content), or "
                                      "left out (by its path and metadata)");
                else {
                        pol->verify_sha256 = true;
                        k = 0;
                }
        } else if (svff_class_by_name(key)) {
                struct json_object *copy = NULL;

                /* The class checks the content without the device (and
                 * again against it when it plans), so a typo is a config
                 * error and not a refused init. */
                _cleanup_(svff_error_free) struct svff_error cerr = SVFF_ERROR_NULL;

                if (!json_object_is_type(val, json_type_object))
                        k = key_error(p, -EINVAL, "must be an object of '%s' settings", key);
                else if (svff_class_check(svff_class_by_name(key), val, &cerr) < 0)
                        k = key_error(p, -EINVAL, "is refused: %s", svff_error_message(&cerr));
                else if ((!pol->classes && !(pol->classes = json_object_new_object())) ||
                         json_object_deep_copy(val, &copy, NULL) < 0 ||
                         json_object_object_add(pol->classes, key, copy) < 0)
                        k = -ENOMEM;
                else
                        k = 0;
        } else
                k = key_error(p, -EINVAL, "is unknown (a policy has match, numvfs, vf_driver, autoprobe, pool, "
                              "reprogram_ids, image, verify_image, or settings named after a device class)");
        return k;
}

static int parse_policy(struct parser *p, const char *name, struct json_object *o,
                        struct svff_policy *ret) {
        struct svff_policy pol = { .numvfs = -1, .autoprobe = -1, .pool = true };
        int r;

        r = parse_keys(p, o, "must be an object (or null to drop the policy)", parse_policy_key, &pol);
        if (r >= 0 && !json_object_object_get_ex(o, "match", NULL))
                r = key_error(p, -EINVAL, "needs a 'match'");
        if (r >= 0 && pol.verify_sha256 && !pol.image)
                r = key_error(p, -EINVAL, "has 'verify_image' but no 'image' to verify");
        if (r >= 0) {
                char origin[PATH_MAX + 16];

                snprintf(origin, sizeof(origin), "%s:%u", p->path, key_line(p));
                pol.name = strdup(name);
                pol.origin = strdup(origin);
                if (!pol.name || !pol.origin)
                        r = -ENOMEM;
        }
        if (r < 0) {
                policy_done(&pol);
                return r;
        }
        *ret = pol;
        return 0;
}

static void drop_policy(struct svff_config *c, const char *name) {
        for (size_t i = 0; i < c->n_policies; i++)
                if (streq(c->policies[i].name, name)) {
                        policy_done(&c->policies[i]);
                        memmove(&c->policies[i], &c->policies[i + 1],
                                (c->n_policies - i - 1) * sizeof(*c->policies));
                        c->n_policies--;
                        return;
                }
}

/* Replaces or adds pol (taken), keeping the array sorted by name so that
 * ties between equally specific policies break the same way each time. */
static int put_policy(struct svff_config *c, struct svff_policy *pol) {
        struct svff_policy *n;
        size_t i;

        drop_policy(c, pol->name);
        if (c->n_policies >= POLICIES_MAX)
                return -E2BIG;
        n = realloc(c->policies, (c->n_policies + 1) * sizeof(*n));
        if (!n)
                return -ENOMEM;
        c->policies = n;
        for (i = 0; i < c->n_policies && strcmp(n[i].name, pol->name) < 0; i++)
                ;
        memmove(&n[i + 1], &n[i], (c->n_policies - i) * sizeof(*n));
        n[i] = *pol;
        *pol = (struct svff_policy) {};
        c->n_policies++;
        return 0;
}

/* A policy's name is shown by svffctl, in logs and in the store's owner
 * ("policy:NAME"): 1 to POLICY_NAME_MAX letters, digits and "-_.:@", so
 * that it can neither act on a terminal nor read as something else. */
static bool policy_name_valid(const char *name) {
        size_t n = strlen(name);

        return n > 0 && n <= POLICY_NAME_MAX &&
               strspn(name, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_.:@") == n;
}

/* One named policy: null drops it. */
static int apply_policy(struct parser *p, const char *name, struct json_object *val, void *userdata) {
        struct svff_config *c = userdata;
        struct svff_policy pol;
        int k;

        if (!policy_name_valid(name)) {
                char msg[128];

                if (*name)
                        return key_error(p, -EINVAL, "is not a policy name: use 1 to %d letters, digits, "
                                         "'-', '_', '.', ':' or '@'", POLICY_NAME_MAX);
                snprintf(msg, sizeof(msg), "a policy's name is empty: name it with 1 to %d letters, digits, "
                         "'-', '_', '.', ':' or '@'", POLICY_NAME_MAX);
                return add_error(p, -EINVAL, key_line(p), msg);
        }
        if (!val) {
                drop_policy(c, name);
                return 0;
        }
        k = parse_policy(p, name, val, &pol);
        if (k < 0)
                return k;
        k = put_policy(c, &pol);
        if (k < 0) {
                policy_done(&pol);
                if (k == -E2BIG)
                        k = key_error(p, k, "is one policy too many (at most %d)", POLICIES_MAX);
        }
        return k;
}

static int apply_policies(struct parser *p, struct svff_config *c, struct json_object *o) {
        return parse_keys(p, o, "must be an object of named policies", apply_policy, c);
}

static int apply_limit(struct parser *p, const char *key, struct json_object *val, void *userdata) {
        struct svff_config *c = userdata;
        uint64_t v;
        int k;

        if (streq(key, "max_connections")) {
                k = get_uint(p, val, 1, 65536, &v);
                if (k >= 0)
                        c->limits.max_connections = (unsigned) v;
        } else if (streq(key, "max_connections_per_uid")) {
                k = get_uint(p, val, 1, 65536, &v);
                if (k >= 0)
                        c->limits.max_connections_per_uid = (unsigned) v;
        } else if (streq(key, "max_message_bytes")) {
                k = get_uint(p, val, 1024, 64 * 1024 * 1024, &v);
                if (k >= 0)
                        c->limits.max_message = (size_t) v;
        } else if (streq(key, "idle_timeout_sec")) {
                k = get_uint(p, val, 0, 86400, &v);
                if (k >= 0)
                        c->limits.idle_timeout_usec = v * 1000000ULL;
        } else if (streq(key, "idle_timeout_msec")) {
                k = get_uint(p, val, 0, 86400000, &v);
                if (k >= 0)
                        c->limits.idle_timeout_usec = v * 1000ULL;
        } else if (streq(key, "monitor_backlog_bytes")) {
                /* past 4 MiB the server's cap on any peer's output
                 * (max_output) would cut the stream first, with no marker */
                k = get_uint(p, val, 4096, 4 * 1024 * 1024, &v);
                if (k >= 0)
                        c->limits.monitor_backlog = (size_t) v;
        } else
                k = key_error(p, -EINVAL, "is unknown");
        return k;
}

static int apply_limits(struct parser *p, struct svff_config *c, struct json_object *o) {
        return parse_keys(p, o, "must be an object", apply_limit, c);
}

/* A duration key: NAME-sec (or NAME-msec) in [min, max] seconds. */
static int get_usec(struct parser *p, struct json_object *v, uint64_t unit_usec, uint64_t min,
                    uint64_t max, uint64_t *ret) {
        uint64_t x;
        int r = get_uint(p, v, min, max, &x);

        if (r >= 0)
                *ret = x * unit_usec;
        return r;
}

/* "all", or a list of rules (allowlist.h reads them). */
static int apply_manage(struct parser *p, struct svff_config *c, struct json_object *v) {
        struct svff_error err = SVFF_ERROR_NULL;
        char origin[PATH_MAX + 16], **l = NULL;
        int k;

        k = svff_allowlist_from_json(v, &l, &err);
        if (k < 0) {
                if (k != -ENOMEM)
                        k = key_error(p, k, "%s", svff_error_message(&err));
                svff_error_free(&err);
                return k;
        }
        snprintf(origin, sizeof(origin), "%s:%u", p->path, key_line(p));
        free(c->manage_origin);
        if (!(c->manage_origin = strdup(origin))) {
                strv_free(l);
                return -ENOMEM;
        }
        strv_free(c->manage);
        c->manage = l;
        return 0;
}

/* An absolute path, or null for none. */
static int get_abs_path(struct parser *p, struct json_object *v, char **slot) {
        if (v && !(json_object_is_type(v, json_type_string) && json_object_get_string(v)[0] == '/'))
                return key_error(p, -EINVAL, "must be an absolute path or null");
        return get_string(p, v, slot, true, PATH_MAX);
}

static int apply_setting(struct parser *p, const char *key, struct json_object *val, void *userdata) {
        struct svff_config *c = userdata;
        uint64_t v;
        int k;

        if (streq(key, "socket"))
                k = get_string(p, val, &c->socket, false, PATH_MAX);
        else if (streq(key, "state_dir"))
                k = get_string(p, val, &c->state_dir, false, PATH_MAX);
        else if (streq(key, "sysfs_root"))
                k = get_string(p, val, &c->sysfs_root, false, PATH_MAX);
        else if (streq(key, "libvirt_uri"))
                k = get_string(p, val, &c->libvirt_uri, false, PATH_MAX);
        else if (streq(key, "admin_group"))
                k = get_string(p, val, &c->admin_group, true, PATH_MAX);
        else if (streq(key, "vf_driver"))
                k = get_driver(p, val, &c->vf_driver);
        else if (streq(key, "device_pause_command"))
                k = get_string(p, val, &c->device_pause_command, false, 128);
        else if (streq(key, "device_unpause_command"))
                k = get_string(p, val, &c->device_unpause_command, false, 128);
        else if (streq(key, "log_level")) {
                int l = json_object_is_type(val, json_type_string)
                                ? svff_log_level_from_string(json_object_get_string(val))
                                : -EINVAL;
                k = l < 0 ? key_error(p, -EINVAL, "must be one of err, warning, notice, info, debug")
                          : 0;
                if (l >= 0)
                        c->log_level = l;
        } else if (streq(key, "numvfs_timeout_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 3600, &c->numvfs_timeout_usec);
        else if (streq(key, "numvfs_timeout_per_vf_msec"))
                k = get_usec(p, val, 1000ULL, 0, 60000, &c->numvfs_timeout_per_vf_usec);
        else if (streq(key, "bind_timeout_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 3600, &c->bind_timeout_usec);
        else if (streq(key, "bind_timeout_per_vf_msec"))
                k = get_usec(p, val, 1000ULL, 0, 60000, &c->bind_timeout_per_vf_usec);
        else if (streq(key, "detach_timeout_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 3600, &c->detach_timeout_usec);
        else if (streq(key, "reconf_detach_timeout_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 3600, &c->reconf_detach_timeout_usec);
        else if (streq(key, "qmp_timeout_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 600, &c->qmp_timeout_usec);
        else if (streq(key, "settle_msec"))
                k = get_usec(p, val, 1000ULL, 0, 60000, &c->settle_usec);
        else if (streq(key, "list_max_age_msec"))
                k = get_usec(p, val, 1000ULL, 0, 3600000, &c->list_max_age_usec);
        else if (streq(key, "workers")) {
                k = get_uint(p, val, 1, 64, &v);
                if (k >= 0)
                        c->workers = (unsigned) v;
        } else if (streq(key, "libvirt_workers")) {
                k = get_uint(p, val, 1, 256, &v);
                if (k >= 0)
                        c->libvirt_workers = (unsigned) v;
        } else if (streq(key, "limits"))
                k = apply_limits(p, c, val);
        else if (streq(key, "policies"))
                k = apply_policies(p, c, val);
        else if (streq(key, "manage"))
                k = apply_manage(p, c, val);
        else if (streq(key, "flash_hook"))
                k = get_abs_path(p, val, &c->flash_hook);
        else if (streq(key, "flash_image_dir"))
                k = get_abs_path(p, val, &c->flash_image_dir);
        else if (streq(key, "flash_timeout_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 86400, &c->flash_timeout_usec);
        else if (streq(key, "metrics_textfile"))
                k = get_abs_path(p, val, &c->metrics_textfile);
        else if (streq(key, "metrics_poll_sec"))
                k = get_usec(p, val, 1000000ULL, 1, 3600, &c->metrics_poll_usec);
        else
                k = key_error(p, -EINVAL, "is unknown");
        return k;
}

static int apply(struct parser *p, struct svff_config *c, struct json_object *root) {
        if (!json_object_is_type(root, json_type_object))
                return add_error(p, -EINVAL, 1, "the top level must be a JSON object");
        return parse_keys(p, root, NULL, apply_setting, c);
}

static bool is_dev_null(const struct stat *st) {
        return S_ISCHR(st->st_mode) && major(st->st_rdev) == 1 && minor(st->st_rdev) == 3;
}

/* Reads path into *ret (NUL-terminated). */
static int read_file(const char *path, char **ret, size_t *ret_len, struct svff_error *err) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t len = 0;

        fd = open(path, O_RDONLY | O_CLOEXEC | O_NOCTTY);
        if (fd < 0)
                return svff_error_set_errno(err, -errno, "Failed to open config file '%s'", path);
        if (fstat(fd, &st) < 0)
                return svff_error_set_errno(err, -errno, "Failed to stat config file '%s'", path);
        /* /dev/null is the usual way to say "no settings". */
        if (!S_ISREG(st.st_mode) && !is_dev_null(&st))
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
        *ret = TAKE_PTR(data);
        *ret_len = len;
        return 0;
}

/* Blanks out // and slash-star comments (outside strings), keeping every
 * newline, so the strict parser sees plain JSON and offsets still give
 * the file's lines. Returns false for a comment left open. */
static bool blank_comments(char *t, size_t len) {
        char quote = 0;         /* in a string: its quote (json-c takes ' too) */

        for (size_t i = 0; i < len; i++) {
                if (quote) {
                        if (t[i] == '\\' && i + 1 < len)
                                i++;
                        else if (t[i] == quote)
                                quote = 0;
                        continue;
                }
                if (t[i] == '"' || t[i] == '\'')
                        quote = t[i];
                else if (t[i] == '/' && i + 1 < len && t[i + 1] == '/') {
                        for (; i < len && t[i] != '\n'; i++)
                                t[i] = ' ';
                } else if (t[i] == '/' && i + 1 < len && t[i + 1] == '*') {
                        size_t j;

                        for (j = i + 2; j + 1 < len && !(t[j] == '*' && t[j + 1] == '/'); j++)
                                ;
                        if (j + 1 >= len)
                                return false;
                        for (; i <= j + 1; i++)
                                if (t[i] != '\n')
                                        t[i] = ' ';
                        i--;
                }
        }
        return true;
}

static int record_key(const char *const *path, size_t depth, const char *key, size_t offset, void *userdata) {
        struct parser *p = userdata;
        struct key_pos *n;
        char *name = NULL;
        size_t len = 0;
        FILE *f;

        /* Positions are looked up by the snake_case names the keys are
         * parsed under, whichever spelling the file uses. */
        f = open_memstream(&name, &len);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i <= depth; i++) {
                const char *k = i < depth ? path[i] : key;
                bool ours = keys_are_ours(path, i);

                for (; *k; k++)
                        fputc(ours && *k == '-' ? '_' : *k, f);
                if (i < depth)
                        fputc('.', f);
        }
        if (fclose(f) != 0) {
                free(name);
                return -ENOMEM;
        }
        n = realloc(p->positions, (p->n_positions + 1) * sizeof(*n));
        if (!n) {
                free(name);
                return -ENOMEM;
        }
        p->positions = n;
        p->positions[p->n_positions] = (struct key_pos) { .path = name, .offset = offset };
        if (keys_are_ours(path, depth) && strchr(key, '-') &&
            !(p->positions[p->n_positions].written = strdup(key))) {
                free(name);
                return -ENOMEM;
        }
        p->n_positions++;
        return 0;
}

static void parser_done(struct parser *p) {
        for (size_t i = 0; i < p->n_positions; i++) {
                free(p->positions[i].path);
                free(p->positions[i].written);
        }
        free(p->positions);
        p->positions = NULL;
        p->n_positions = 0;
}

/* svff.conf is UTF-8 text: the first NUL byte or byte that is not
 * UTF-8 is refused by line and column (in characters), before anything
 * else reads the text. */
static int check_bytes(struct parser *p, const char *data, size_t len) {
        size_t off = 0, bad;
        unsigned column = 1;
        bool cut;
        char msg[64];

        while (off < len) {
                size_t k = svff_utf8_sequence(data + off, len - off, &bad, &cut);

                if (k == 0 || data[off] == 0)
                        break;
                column = data[off] == '\n' ? 1 : column + 1;
                off += k;
        }
        if (off == len)
                return 0;
        if (data[off] == 0)
                snprintf(msg, sizeof(msg), "a NUL byte: the file must be UTF-8 text");
        else
                snprintf(msg, sizeof(msg), "byte 0x%02x is not UTF-8: the file must be UTF-8 text",
                         (unsigned char) data[off]);
        return add_error_at(p, -EINVAL, line_of(data, off), column, msg);
}

static size_t skip_space_back(const char *text, size_t i) {
        while (i > 0 && strchr(" \t\r\n", text[i - 1]))
                i--;
        return i;
}

/* The string that ends (its closing quote) just before end, or NULL. */
static char *string_before(const char *text, size_t end) {
        size_t start;

        if (end == 0 || text[end - 1] != '"')
                return NULL;
        start = end - 1;
        while (start > 0 && !(text[start - 1] == '"' && (start < 2 || text[start - 2] != '\\')))
                start--;
        return start > 0 ? strndup(text + start, end - 1 - start) : NULL;
}

/* The key of the member a syntax error at off comes after, for the
 * message: the last string before off that a ':' follows, or the
 * string right before off (comments are blanked already). A hint, never
 * used for anything but the message; NULL when there is none. */
static char *key_before(const char *text, size_t off) {
        char *k = string_before(text, skip_space_back(text, off));

        for (size_t i = off; !k && i-- > 0;)
                if (text[i] == ':')
                        k = string_before(text, skip_space_back(text, i));
        return k;
}

/* A syntax error as an operator reads it, naming the key it comes after:
 * "key = value" and a trailing comma are the usual ones. */
static int syntax_error(struct parser *p, const char *data, const char *text, size_t len, size_t off,
                        const char *reason) {
        _cleanup_free_ char *key = key_before(text, off), *k = NULL;
        size_t prev;
        char msg[512];

        k = key ? svff_utf8_escape(key, false) : NULL;
        prev = skip_space_back(text, off);
        if (off < len && text[off] != ':' && prev > 0 && text[prev - 1] == '"' && k &&
            strstr(strna(reason), "separator"))
                snprintf(msg, sizeof(msg), "key '%s' is not followed by ':': svff.conf is JSON, write \"%s\": "
                         "value", k, k);
        else if (off < len && (text[off] == '}' || text[off] == ']') && prev > 0 && text[prev - 1] == ',')
                snprintf(msg, sizeof(msg), "a comma before '%c'%s%s%s: JSON allows no trailing comma, remove it",
                         text[off], k ? " (after key '" : "", k ?: "", k ? "')" : "");
        else
                snprintf(msg, sizeof(msg), "%s%s%s%s", reason ?: "not JSON", k ? " (after key '" : "", k ?: "",
                         k ? "')" : "");
        return add_error(p, -EINVAL, line_of(data, off), msg);
}

/* Parses data into *ret; NULL for a file with nothing but whitespace and
 * comments. The strict parser every other JSON of svff goes through
 * (svff_json_parse()), after the comments svff.conf allows: trailing
 * commas and the like are errors, and so is a key given twice in one
 * object, which json-c would settle silently by keeping the last. */
static int parse_json(struct parser *p, const char *data, size_t len, struct json_object **ret) {
        _cleanup_free_ char *text = NULL;
        struct json_object *root = NULL;
        const char *reason = NULL;
        size_t off = 0;
        int r;

        text = malloc(len + 1);
        if (!text)
                return -ENOMEM;
        memcpy(text, data, len);
        text[len] = 0;
        if (!blank_comments(text, len))
                return add_error(p, -EINVAL, line_of(data, len), "a comment is not closed");
        if (strspn(text, " \t\r\n") == len) {
                *ret = NULL;
                return 0;
        }
        r = svff_json_parse_at(text, len, 16, &root, &reason, &off);
        if (r == -ENOMEM)
                return r;
        if (r < 0) {
                struct json_object *prefix = NULL;

                /* Say it as an operator reads it: the file ends early, or
                 * a complete object is followed by more. */
                if (off >= len || strspn(text + off, " \t\r\n") == len - off)
                        reason = "unexpected end of file";
                else if (off > 0 && svff_json_parse(text, off, 16, &prefix, NULL) >= 0) {
                        json_object_put(prefix);
                        return add_error(p, -EINVAL, line_of(data, off), "trailing text after the JSON object");
                }
                return syntax_error(p, data, text, len, off, reason);
        }
        r = svff_json_scan_keys(text, len, record_key, p, &off);
        if (r == -ENOTUNIQ) {
                _cleanup_free_ char *name = NULL;

                for (size_t i = 0; i < p->n_positions; i++)
                        if (p->positions[i].offset == off) {
                                free(name);
                                name = svff_utf8_escape(p->positions[i].path, false);
                        }
                json_object_put(root);
                {
                        char msg[1200];

                        snprintf(msg, sizeof(msg), "key '%s' is given twice (the first would be ignored)", name ?: "?");
                        return add_error(p, -EINVAL, line_of(data, off), msg);
                }
        }
        if (r < 0) {
                json_object_put(root);
                return r == -E2BIG ? add_error(p, -EINVAL, 1, "nested too deeply") : r;
        }
        if (!root)
                return add_error(p, -EINVAL, 1, "the top level must be a JSON object");
        *ret = root;
        return 0;
}

/* A copy of the object o (a new reference in *ret) with svff's keys in
 * snake_case, so that the parsers below and the device classes know one
 * spelling. A kebab-case key is the spelling of earlier releases: read,
 * with a warning naming both. Both spellings of one key in one object
 * are a problem (which one is meant is anyone's guess), recorded and the
 * old one dropped, so that the rest is still checked. */
static int snake_keys(struct parser *p, struct json_object *o, struct json_object **ret) {
        _cleanup_(json_object_putp) struct json_object *n = json_object_new_object();
        int r = 0;

        if (!n)
                return -ENOMEM;
        json_object_object_foreach(o, key, val) {
                _cleanup_free_ char *name = keys_are_ours(p->keys, p->depth) ? svff_json_key_snake(key) : strdup(key);
                struct json_object *v = NULL;
                int k = 0;

                if (!name)
                        return -ENOMEM;
                if (push(p, name) < 0)
                        return add_error(p, -EINVAL, 1, "nested too deeply");
                if (!streq(name, key)) {
                        _cleanup_free_ char *ek = svff_utf8_escape(key, false), *en = svff_utf8_escape(name, false);
                        char full[256], msg[1024];

                        if (!ek || !en)
                                return -ENOMEM;
                        if (json_object_object_get_ex(o, name, NULL)) {
                                key_name(p, full, sizeof(full));
                                snprintf(msg, sizeof(msg), "key '%s' is given twice, as '%s' (the old spelling) and "
                                         "'%s': keep '%s'", full, ek, en, en);
                                k = add_error(p, -EINVAL, key_line(p), msg);
                        } else
                                k = add_warning(p, key_line(p), "'%s' is the old spelling of '%s'; it is still read "
                                                "for this release", ek, en);
                }
                if (k >= 0 && json_object_is_type(val, json_type_object))
                        k = snake_keys(p, val, &v);
                else if (k >= 0)
                        v = json_object_get(val);
                pop(p);
                /* a value with a problem inside is kept, for the rest of
                 * it to be checked */
                if ((k >= 0 || v) && json_object_object_add(n, name, v) < 0) {
                        json_object_put(v);
                        k = -ENOMEM;
                }
                if (k == -ENOMEM)
                        return k;
                if (k < 0 && r == 0)
                        r = k;
        }
        *ret = TAKE_PTR(n);
        return r;
}

/* Applies one file over c (partly, when it fails: callers work on a
 * copy). Problems are appended to *errors, warnings to c->warnings. */
static int apply_data(struct svff_config *c, const char *path, const char *data, size_t len,
                      char **errors) {
        struct parser p = { .path = path };
        struct json_object *root = NULL;
        int r;

        p.data = data;
        p.errors = *errors;
        p.warnings = c->warnings;
        r = check_bytes(&p, data, len);
        if (r >= 0)
                r = parse_json(&p, data, len, &root);
        if (r >= 0 && root && json_object_is_type(root, json_type_object)) {
                struct json_object *snake = NULL;

                r = snake_keys(&p, root, &snake);
                json_object_put(root);
                root = snake;
        }
        if (r != -ENOMEM && root) {
                int k = apply(&p, c, root);

                if (r >= 0)
                        r = k;
        }
        json_object_put(root);
        parser_done(&p);
        *errors = p.errors;
        c->warnings = p.warnings;
        return r;
}

static int apply_file(struct svff_config *c, const char *path, char **errors,
                      struct svff_error *err) {
        _cleanup_free_ char *data = NULL;
        size_t len = 0;
        int r;

        r = read_file(path, &data, &len, err);
        if (r < 0)
                return r;
        return apply_data(c, path, data, len, errors);
}

static int finish(int r, char *errors, struct svff_error *err) {
        if (r < 0 && errors)
                svff_error_set(err, r, "%s", errors);
        free(errors);
        return r;
}

int svff_config_load_file(struct svff_config *cfg, const char *path, struct svff_error *err) {
        struct svff_config c;
        char *errors = NULL;
        int r;

        r = svff_config_copy(cfg, &c);
        if (r < 0)
                return r;
        c.warnings = mfree(c.warnings);
        r = apply_file(&c, path, &errors, err);
        if (r < 0) {
                svff_config_done(&c);
                return finish(r, errors, err);
        }
        svff_config_done(cfg);
        *cfg = c;
        return finish(0, errors, err);
}

int svff_config_load_data(struct svff_config *cfg, const char *name, const char *data, size_t len,
                          struct svff_error *err) {
        struct svff_config c;
        char *errors = NULL;
        int r;

        if (!cfg || !name || (!data && len > 0))
                return svff_error_set(err, -EINVAL, "Invalid arguments to svff_config_load_data()");
        if (len > CONFIG_FILE_MAX)
                return svff_error_set(err, -EFBIG, "%s: larger than %d bytes", name, CONFIG_FILE_MAX);
        r = svff_config_copy(cfg, &c);
        if (r < 0)
                return r;
        c.warnings = mfree(c.warnings);
        r = apply_data(&c, name, data ?: "", len, &errors);
        if (r < 0) {
                svff_config_done(&c);
                return finish(r, errors, err);
        }
        svff_config_done(cfg);
        *cfg = c;
        return finish(0, errors, err);
}

/* The *.conf names in dir, sorted; an empty list when dir is missing. */
static int list_dropins(const char *dir, char ***ret, size_t *ret_n, struct svff_error *err) {
        _cleanup_closedir_ DIR *d = NULL;
        char **l = NULL;
        size_t n = 0;
        struct dirent *de;

        d = opendir(dir);
        if (!d) {
                if (errno == ENOENT || errno == ENOTDIR) {
                        *ret = NULL;
                        *ret_n = 0;
                        return 0;
                }
                return svff_error_set_errno(err, -errno, "Failed to open drop-in directory '%s'", dir);
        }
        while ((errno = 0, de = readdir(d))) {
                size_t len = strlen(de->d_name);
                char **nl;

                /* Hidden files are editors' and package managers' leftovers. */
                if (de->d_name[0] == '.' || len <= 5 || !streq(de->d_name + len - 5, ".conf"))
                        continue;
                if (n >= CONFIG_DROPINS_MAX) {
                        strv_free(l);
                        return svff_error_set(err, -E2BIG, "%s: more than %d drop-ins", dir,
                                              CONFIG_DROPINS_MAX);
                }
                nl = realloc(l, (n + 2) * sizeof(char *));
                if (!nl) {
                        strv_free(l);
                        return -ENOMEM;
                }
                l = nl;
                if (asprintf(&l[n], "%s/%s", dir, de->d_name) < 0) {
                        l[n] = NULL;
                        strv_free(l);
                        return -ENOMEM;
                }
                l[++n] = NULL;
        }
        if (errno != 0) {
                strv_free(l);
                return svff_error_set_errno(err, -errno, "Failed to read drop-in directory '%s'", dir);
        }
        if (n > 0)
                qsort(l, n, sizeof(char *), strv_cmp);
        *ret = l;
        *ret_n = n;
        return 0;
}

int svff_config_load(struct svff_config *cfg, const char *path, bool missing_ok,
                     struct svff_error *err) {
        _cleanup_strv_free_ char **dropins = NULL;
        _cleanup_free_ char *dir = NULL;
        struct svff_config c;
        char *errors = NULL;
        size_t n = 0;
        int r, first = 0;

        r = svff_config_copy(cfg, &c);
        if (r < 0)
                return r;
        c.warnings = mfree(c.warnings);

        r = apply_file(&c, path, &errors, err);
        if (r == -ENOENT && missing_ok) {
                svff_error_free(err);
                r = 0;
        }
        if (r < 0) {
                /* Keep going: 'config check' names every problem. */
                if (r == -ENOMEM)
                        goto fail;
                first = r;
                if (!errors) {
                        errors = strdup(svff_error_message(err));
                        svff_error_free(err);
                }
        }

        if (asprintf(&dir, "%s.d", path) < 0) {
                r = -ENOMEM;
                goto fail;
        }
        r = list_dropins(dir, &dropins, &n, err);
        if (r < 0)
                goto fail;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(svff_error_free) struct svff_error e = SVFF_ERROR_NULL;

                r = apply_file(&c, dropins[i], &errors, &e);
                if (r == -ENOMEM)
                        goto fail;
                if (r < 0 && first == 0)
                        first = r;
                if (r < 0 && svff_error_is_set(&e)) {
                        char *nm;

                        if (asprintf(&nm, "%s%s%s", errors ?: "", errors ? "\n" : "",
                                     svff_error_message(&e)) < 0) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        free(errors);
                        errors = nm;
                }
        }
        r = first;
        if (r < 0)
                goto fail;
        svff_config_done(cfg);
        *cfg = c;
        return finish(0, errors, err);
fail:
        svff_config_done(&c);
        return finish(r, errors, err);
}

/* ---- policies ---- */

static struct json_object *str_or_null(const char *s) {
        return s ? json_object_new_string(s) : NULL;
}

struct json_object *svff_config_to_json(const struct svff_config *cfg) {
        struct json_object *o = json_object_new_object(), *limits, *pols;

        if (!o)
                return NULL;
#define ADD(k, v) json_object_object_add(o, k, v)
#define MSEC(u) json_object_new_int64((int64_t) ((u) / 1000ULL))
#define SEC(u) json_object_new_int64((int64_t) ((u) / 1000000ULL))
        ADD("socket", str_or_null(cfg->socket));
        ADD("state_dir", str_or_null(cfg->state_dir));
        ADD("sysfs_root", str_or_null(cfg->sysfs_root));
        ADD("libvirt_uri", str_or_null(cfg->libvirt_uri));
        ADD("log_level", str_or_null(svff_log_level_to_string(cfg->log_level)));
        ADD("admin_group", str_or_null(cfg->admin_group));
        ADD("vf_driver", str_or_null(cfg->vf_driver));
        ADD("numvfs_timeout_sec", SEC(cfg->numvfs_timeout_usec));
        ADD("numvfs_timeout_per_vf_msec", MSEC(cfg->numvfs_timeout_per_vf_usec));
        ADD("bind_timeout_sec", SEC(cfg->bind_timeout_usec));
        ADD("bind_timeout_per_vf_msec", MSEC(cfg->bind_timeout_per_vf_usec));
        ADD("detach_timeout_sec", SEC(cfg->detach_timeout_usec));
        ADD("reconf_detach_timeout_sec", SEC(cfg->reconf_detach_timeout_usec));
        ADD("qmp_timeout_sec", SEC(cfg->qmp_timeout_usec));
        ADD("device_pause_command", str_or_null(cfg->device_pause_command));
        ADD("device_unpause_command", str_or_null(cfg->device_unpause_command));
        ADD("settle_msec", MSEC(cfg->settle_usec));
        ADD("list_max_age_msec", MSEC(cfg->list_max_age_usec));
        ADD("workers", json_object_new_int64(cfg->workers));
        ADD("libvirt_workers", json_object_new_int64(cfg->libvirt_workers));
        limits = json_object_new_object();
        if (limits) {
                json_object_object_add(limits, "max_connections", json_object_new_int64(cfg->limits.max_connections));
                json_object_object_add(limits, "max_connections_per_uid",
                                       json_object_new_int64(cfg->limits.max_connections_per_uid));
                json_object_object_add(limits, "max_message_bytes",
                                       json_object_new_int64((int64_t) cfg->limits.max_message));
                json_object_object_add(limits, "idle_timeout_sec", SEC(cfg->limits.idle_timeout_usec));
                json_object_object_add(limits, "monitor_backlog_bytes",
                                       json_object_new_int64((int64_t) cfg->limits.monitor_backlog));
        }
        ADD("limits", limits);
        pols = json_object_new_object();
        for (size_t i = 0; pols && i < cfg->n_policies; i++) {
                const struct svff_policy *pol = &cfg->policies[i];
                struct json_object *po = json_object_new_object(), *m = json_object_new_object();
                char id[16];

                if (!po || !m) {
                        json_object_put(po);
                        json_object_put(m);
                        break;
                }
                switch (pol->match) {
                case SVFF_POLICY_MATCH_ADDRESS:
                        json_object_object_add(m, "address", json_object_new_string(pol->address));
                        break;
                case SVFF_POLICY_MATCH_INTERFACE:
                        json_object_object_add(m, "interface", str_or_null(pol->interface));
                        break;
                case SVFF_POLICY_MATCH_ID:
                        snprintf(id, sizeof(id), "%04x:%04x", pol->vendor_id, pol->device_id);
                        json_object_object_add(m, "id", json_object_new_string(id));
                        break;
                }
                json_object_object_add(po, "match", m);
                if (pol->numvfs >= 0)
                        json_object_object_add(po, "numvfs", json_object_new_int64(pol->numvfs));
                if (pol->vf_driver)
                        json_object_object_add(po, "vf_driver", json_object_new_string(pol->vf_driver));
                if (pol->autoprobe >= 0)
                        json_object_object_add(po, "autoprobe", json_object_new_boolean(pol->autoprobe));
                json_object_object_add(po, "pool", json_object_new_boolean(pol->pool));
                if (pol->reprogram_ids)
                        json_object_object_add(po, "reprogram_ids", json_object_get(pol->reprogram_ids));
                if (pol->image)
                        json_object_object_add(po, "image", json_object_new_string(pol->image));
                if (pol->verify_sha256)
                        json_object_object_add(po, "verify_image", json_object_new_string("sha256"));
                if (pol->classes) {
                        json_object_object_foreach(pol->classes, cname, csettings)
                                json_object_object_add(po, cname, json_object_get(csettings));
                }
                json_object_object_add(po, "origin", str_or_null(pol->origin));
                json_object_object_add(pols, pol->name, po);
        }
        ADD("policies", pols);
        if (cfg->manage) {
                struct json_object *a = json_object_new_array();

                for (size_t i = 0; a && cfg->manage[i]; i++)
                        json_object_array_add(a, json_object_new_string(cfg->manage[i]));
                ADD("manage", a);
        } else
                ADD("manage", json_object_new_string("all"));
        ADD("flash_hook", str_or_null(cfg->flash_hook));
        ADD("flash_image_dir", str_or_null(cfg->flash_image_dir));
        ADD("flash_timeout_sec", SEC(cfg->flash_timeout_usec));
        ADD("metrics_textfile", str_or_null(cfg->metrics_textfile));
        ADD("metrics_poll_sec", SEC(cfg->metrics_poll_usec));
#undef ADD
#undef MSEC
#undef SEC
        return o;
}

uint64_t svff_config_numvfs_timeout(const struct svff_config *cfg, unsigned n) {
        return cfg->numvfs_timeout_usec + cfg->numvfs_timeout_per_vf_usec * n;
}

uint64_t svff_config_bind_timeout(const struct svff_config *cfg, unsigned n) {
        return cfg->bind_timeout_usec + cfg->bind_timeout_per_vf_usec * n;
}

const struct svff_policy *svff_config_find_policy(const struct svff_config *cfg,
                                                  const char *address, unsigned vendor_id,
                                                  unsigned device_id, const char *netdev) {
        const struct svff_policy *best = NULL;

        /* Most specific first: an address names one device, an interface
         * name one device on this host, an id a model. */
        for (size_t i = 0; i < cfg->n_policies; i++) {
                const struct svff_policy *p = &cfg->policies[i];
                bool hit = false;

                switch (p->match) {
                case SVFF_POLICY_MATCH_ADDRESS:
                        hit = streq(p->address, address);
                        break;
                case SVFF_POLICY_MATCH_INTERFACE:
                        hit = netdev && streq(p->interface, netdev);
                        break;
                case SVFF_POLICY_MATCH_ID:
                        hit = p->vendor_id == vendor_id && p->device_id == device_id;
                        break;
                }
                if (hit && (!best || p->match < best->match))
                        best = p;
        }
        return best;
}

int svff_warnings_add(char **warnings, const char *fmt, ...) {
        _cleanup_free_ char *line = NULL;
        va_list ap;
        char *n;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&line, fmt, ap);
        va_end(ap);
        if (r < 0 || asprintf(&n, "%s%s%s", *warnings ?: "", *warnings ? "\n" : "", line) < 0)
                return -ENOMEM;
        free(*warnings);
        *warnings = n;
        return 0;
}

int svff_config_admin_gid(const struct svff_config *cfg, gid_t *ret) {
        _cleanup_free_ char *buf = NULL;
        struct group grp, *res = NULL;
        size_t size = 16384;
        int r;

        if (!cfg->admin_group)
                return 0;
        /* A group with many members does not fit a fixed buffer: ERANGE
         * asks for a bigger one. */
        for (;;) {
                char *b = realloc(buf, size);

                if (!b)
                        return -ENOMEM;
                buf = b;
                r = getgrnam_r(cfg->admin_group, &grp, buf, size, &res);
                if (r != ERANGE || size >= 16u * 1024u * 1024u)
                        break;
                size *= 2;
        }
        if (r != 0)
                return -r;
        if (!res)
                return -ENOENT;
        if (ret)
                *ret = res->gr_gid;
        return 1;
}

static bool driver_registered(const struct svff_config *cfg, const char *driver) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "%s/bus/pci/drivers/%s", cfg->sysfs_root, driver) < 0)
                return true;
        return access(path, F_OK) == 0;
}

static bool same_match(const struct svff_policy *a, const struct svff_policy *b) {
        if (a->match != b->match)
                return false;
        switch (a->match) {
        case SVFF_POLICY_MATCH_ADDRESS:
                return streq(a->address, b->address);
        case SVFF_POLICY_MATCH_INTERFACE:
                return a->interface && b->interface && streq(a->interface, b->interface);
        case SVFF_POLICY_MATCH_ID:
                return a->vendor_id == b->vendor_id && a->device_id == b->device_id;
        }
        return false;
}

int svff_config_host_warnings(const struct svff_config *cfg, char **warnings) {
        const char *uri = cfg->libvirt_uri;
        int r = 0;

        if (svff_config_admin_gid(cfg, NULL) == -ENOENT) {
                _cleanup_free_ char *g = svff_utf8_escape(cfg->admin_group, false);

                r = svff_warnings_add(warnings, "key 'admin_group': no group '%s' on this host: svffd lets only root change "
                         "devices until it exists (groupadd %s)", strna(g), strna(g));
        }
        if (r >= 0 && cfg->vf_driver && !driver_registered(cfg, cfg->vf_driver))
                r = svff_warnings_add(warnings, "key 'vf_driver': no PCI driver '%s' is registered under %s/bus/pci/drivers: "
                         "init refuses until its module is loaded (modprobe %s)", cfg->vf_driver, cfg->sysfs_root,
                         cfg->vf_driver);
        if (r >= 0 && uri && strncmp(uri, "qemu:///", 8) != 0 && strncmp(uri, "qemu+", 5) != 0 &&
            strncmp(uri, "test:///", 8) != 0) {
                _cleanup_free_ char *u = svff_utf8_escape(uri, false);

                r = svff_warnings_add(warnings, "key 'libvirt_uri': '%s' is not a URI of libvirt's QEMU driver (qemu:///system, "
                         "qemu:///session or qemu:///embed?root=DIR): svffd assigns VFs through it", strna(u));
        }
        for (size_t i = 0; r >= 0 && i < cfg->n_policies; i++) {
                const struct svff_policy *p = &cfg->policies[i];
                _cleanup_free_ char *name = svff_utf8_escape(p->name, false);

                if (p->vf_driver && !driver_registered(cfg, p->vf_driver))
                        r = svff_warnings_add(warnings, "%s: policy '%s': no PCI driver '%s' is registered under "
                                 "%s/bus/pci/drivers: the policy fails until its module is loaded (modprobe %s)",
                                 strna(p->origin), strna(name), p->vf_driver, cfg->sysfs_root, p->vf_driver);
                for (size_t j = 0; r >= 0 && j < i; j++)
                        if (same_match(&cfg->policies[j], p)) {
                                _cleanup_free_ char *first = svff_utf8_escape(cfg->policies[j].name, false);

                                r = svff_warnings_add(warnings, "%s: policy '%s' matches exactly what policy '%s' (%s) matches, "
                                         "which comes first: '%s' never applies; merge the two or remove one",
                                         strna(p->origin), strna(name), strna(first),
                                         strna(cfg->policies[j].origin), strna(name));
                                break;
                        }
        }
        return r;
}

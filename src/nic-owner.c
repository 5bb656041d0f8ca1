/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <json-c/json.h>
#include <systemd/sd-bus.h>

#include "error.h"
#include "json-util.h"
#include "nic-owner.h"

/* Another tool's file: far above any keyfile, unit or operator state. */
#define OTHER_FILE_MAX (64 * 1024)

void svff_nic_owner_free(struct svff_nic_owner *o) {
        if (!o)
                return;
        free(o->owner);
        free(o->file);
        free(o->detail);
        free(o->connection_id);
        free(o->connection_uuid);
        free(o);
}

/* Reads another tool's file, full its path and shown what messages name
 * (the host's spelling), without trusting what is there: opened
 * non-blocking (a FIFO answers at once), not through a symbolic link
 * when nofollow, only a regular file, at most OTHER_FILE_MAX bytes.
 * 1 with its text (NUL-terminated) and length, 0 when it is missing,
 * else a refusal naming it: -ELOOP a link (nofollow), -EINVAL not a
 * regular file, -EFBIG too large, or the errno of the open or read. */
static int read_other_file(const char *full, const char *shown, bool nofollow, char **ret, size_t *ret_len,
                           struct svff_error *err) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        struct stat st;
        size_t n = 0;

        fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK | (nofollow ? O_NOFOLLOW : 0));
        if (fd < 0) {
                if (errno == ENOENT)
                        return 0;
                if (errno == ELOOP && nofollow)
                        return svff_error_set(err, -ELOOP, "'%s' is a symbolic link: svff reads only the file "
                                              "itself there; remove it or put the file in its place", shown);
                return svff_error_set_errno(err, -errno, "Cannot read '%s'", shown);
        }
        if (fstat(fd, &st) < 0)
                return svff_error_set_errno(err, -errno, "Cannot read '%s'", shown);
        if (!S_ISREG(st.st_mode))
                return svff_error_set(err, -EINVAL, "'%s' is not a regular file: svff reads only regular files "
                                      "there; remove it", shown);
        if (st.st_size > OTHER_FILE_MAX)
                return svff_error_set(err, -EFBIG, "'%s' is larger than %u KiB (%lld bytes): svff does not read "
                                      "it; remove it or make it smaller", shown, OTHER_FILE_MAX / 1024,
                                      (long long) st.st_size);
        buf = malloc(OTHER_FILE_MAX + 2);
        if (!buf)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        /* it may grow after the fstat: the cap holds for what is read */
        while (n <= OTHER_FILE_MAX) {
                ssize_t k = read(fd, buf + n, OTHER_FILE_MAX + 1 - n);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return svff_error_set_errno(err, -errno, "Cannot read '%s'", shown);
                if (k == 0)
                        break;
                n += (size_t) k;
        }
        if (n > OTHER_FILE_MAX)
                return svff_error_set(err, -EFBIG, "'%s' is larger than %u KiB: svff does not read it; remove "
                                      "it or make it smaller", shown, OTHER_FILE_MAX / 1024);
        buf[n] = 0;
        *ret = TAKE_PTR(buf);
        *ret_len = n;
        return 1;
}

/* What one keyfile or unit file says about the interface. */
struct ini_scan {
        const char *ifname;
        const char *path_match;         /* "pci-0000:05:00.0" or NULL */
        bool networkd;
        bool matched;                   /* its [Match] / interface-name names ifname */
        bool any_match_key;             /* it has a match key at all */
        char *detail;                   /* first SR-IOV setting seen */
};

static char *strip(char *s) {
        char *e;

        while (isspace((unsigned char) *s))
                s++;
        e = s + strlen(s);
        while (e > s && isspace((unsigned char) e[-1]))
                *--e = 0;
        return s;
}

/* networkd's match lists: space-separated globs, "!" negating the list. */
static bool glob_list_matches(const char *list, const char *value) {
        _cleanup_free_ char *copy = strdup(list);
        bool invert = false, hit = false;
        char *save = NULL;

        if (!copy || !value)
                return false;
        char *s = copy;
        if (*s == '!') {
                invert = true;
                s++;
        }
        for (char *w = strtok_r(s, " \t", &save); w; w = strtok_r(NULL, " \t", &save))
                if (fnmatch(w, value, 0) == 0)
                        hit = true;
        return invert ? !hit : hit;
}

_printf_(2, 3)
static int set_detail(struct ini_scan *sc, const char *fmt, ...) {
        va_list ap;
        int n;

        if (sc->detail)
                return 0;
        va_start(ap, fmt);
        n = vasprintf(&sc->detail, fmt, ap);
        va_end(ap);
        if (n < 0) {
                sc->detail = NULL;
                return -ENOMEM;
        }
        return 0;
}

static int ini_scan_text(const char *text, size_t len, struct ini_scan *sc) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char section[64] = "";
        size_t cap = 0;
        int r;

        if (len == 0)
                return 0;
        f = fmemopen((void *) text, len, "r");
        if (!f)
                return -errno;
        while (getline(&line, &cap, f) >= 0) {
                char *l = strip(line), *eq, *key, *val;

                if (!*l || *l == '#' || *l == ';')
                        continue;
                if (*l == '[') {
                        char *e = strchr(l, ']');
                        if (e) {
                                *e = 0;
                                snprintf(section, sizeof(section), "%s", l + 1);
                                /* A section is the setting: [sriov] in a
                                 * keyfile, [SR-IOV] in networkd's files. */
                                if ((!sc->networkd && streq(section, "sriov")) ||
                                    (sc->networkd && streq(section, "SR-IOV"))) {
                                        r = set_detail(sc, "[%s]%s", section, "");
                                        if (r < 0)
                                                return r;
                                }
                        }
                        continue;
                }
                eq = strchr(l, '=');
                if (!eq)
                        continue;
                *eq = 0;
                key = strip(l);
                val = strip(eq + 1);

                if (!sc->networkd) {
                        if (streq(section, "connection") && streq(key, "interface-name")) {
                                sc->any_match_key = true;
                                if (streq(val, sc->ifname))
                                        sc->matched = true;
                        } else if (streq(section, "sriov") && (streq(key, "total-vfs") || !sc->detail)) {
                                free(sc->detail);
                                sc->detail = NULL;
                                r = set_detail(sc, "sriov.%s=%s", key, val);
                                if (r < 0)
                                        return r;
                        }
                        continue;
                }

                if (streq(section, "Match")) {
                        if (streq(key, "Name") || streq(key, "OriginalName")) {
                                sc->any_match_key = true;
                                if (glob_list_matches(val, sc->ifname))
                                        sc->matched = true;
                        } else if (streq(key, "Path")) {
                                sc->any_match_key = true;
                                if (sc->path_match && glob_list_matches(val, sc->path_match))
                                        sc->matched = true;
                        }
                } else if (streq(section, "Link") && streq(key, "SR-IOVVirtualFunctions")) {
                        free(sc->detail);
                        sc->detail = NULL;
                        r = set_detail(sc, "%s=%s", key, val);
                        if (r < 0)
                                return r;
                }
        }
        return 0;
}

static int owner_new(const char *owner, const char *file, char **detail, struct svff_nic_owner **ret) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = calloc(1, sizeof(*o));

        if (!o)
                return -ENOMEM;
        o->owner = strdup(owner);
        o->file = strdup(file);
        if (!o->owner || !o->file)
                return -ENOMEM;
        o->detail = TAKE_PTR(*detail);
        *ret = TAKE_PTR(o);
        return 1;
}

static bool has_suffix(const char *s, const char *suffix) {
        size_t a = strlen(s), b = strlen(suffix);
        return a >= b && streq(s + a - b, suffix);
}

static int name_cmp(const void *a, const void *b) {
        return strcmp(*(char *const *) a, *(char *const *) b);
}

/* One directory's regular files (or links to them) ending in suffix
 * (NULL: any), sorted, names[] grown. Missing directories are empty. */
static int list_dir(const char *dir, const char *suffix, char ***names, size_t *n) {
        _cleanup_closedir_ DIR *d = opendir(dir);
        struct dirent *de;

        if (!d)
                return 0;
        while ((de = readdir(d))) {
                char **nn;
                bool dup = false;

                if (de->d_name[0] == '.' || (suffix && !has_suffix(de->d_name, suffix)))
                        continue;
                /* An earlier directory's file of this name hides this one. */
                for (size_t i = 0; i < *n; i++)
                        if (streq((*names)[i] + strlen((*names)[i]) - strlen(de->d_name), de->d_name) &&
                            (*names)[i][strlen((*names)[i]) - strlen(de->d_name) - 1] == '/')
                                dup = true;
                if (dup)
                        continue;
                nn = realloc(*names, (*n + 2) * sizeof(char *));
                if (!nn)
                        return -ENOMEM;
                *names = nn;
                if (asprintf(&(*names)[*n], "%s/%s", dir, de->d_name) < 0)
                        return -ENOMEM;
                (*names)[++*n] = NULL;
        }
        return 0;
}

/* path is root-relative and what messages name. */
static int scan_one(const char *root, const char *path, struct ini_scan *sc, struct svff_error *err) {
        _cleanup_free_ char *full = NULL, *text = NULL;
        char target[16];
        size_t len;
        ssize_t l;
        int r;

        if (asprintf(&full, "%s%s", streq(root, "/") ? "" : root, path) < 0)
                return -ENOMEM;
        /* A link to /dev/null masks the name (networkd's rule). */
        l = readlink(full, target, sizeof(target) - 1);
        if (l > 0) {
                target[l] = 0;
                if (streq(target, "/dev/null"))
                        return 0;
        }
        /* Both read their directories through links, so svff does too:
         * what the link reaches must be a regular file all the same. */
        r = read_other_file(full, path, false, &text, &len, err);
        if (r <= 0)
                return r;
        return ini_scan_text(text, len, sc);
}

static int scan_dirs(const char *root, const char *const *dirs, const char *suffix, bool networkd,
                     const char *owner, const char *ifname, const char *path_match,
                     struct svff_nic_owner **ret, struct svff_error *err) {
        _cleanup_strv_free_ char **names = NULL;
        size_t n = 0;
        int r;

        for (size_t i = 0; dirs[i]; i++) {
                _cleanup_free_ char *full = NULL;
                size_t before = n;

                if (asprintf(&full, "%s%s", streq(root, "/") ? "" : root, dirs[i]) < 0)
                        return -ENOMEM;
                r = list_dir(full, suffix, &names, &n);
                if (r < 0)
                        return r;
                /* Back to the host's spelling of the path. */
                for (size_t j = before; j < n; j++) {
                        char *s;
                        if (asprintf(&s, "%s%s", dirs[i], names[j] + strlen(full)) < 0)
                                return -ENOMEM;
                        free(names[j]);
                        names[j] = s;
                }
        }
        if (n > 1)
                qsort(names, n, sizeof(char *), name_cmp);

        for (size_t i = 0; i < n; i++) {
                struct ini_scan sc = {
                        .ifname = ifname,
                        .path_match = path_match,
                        .networkd = networkd,
                };

                r = scan_one(root, names[i], &sc, err);
                if (r < 0) {
                        free(sc.detail);
                        return r;
                }
                if (sc.matched && sc.detail) {
                        r = owner_new(owner, names[i], &sc.detail, ret);
                        free(sc.detail);
                        return r;
                }
                free(sc.detail);
        }
        return 0;
}

/* ---- NetworkManager over D-Bus ------------------------------------------ */

#define NM_SERVICE "org.freedesktop.NetworkManager"
#define NM_PATH "/org/freedesktop/NetworkManager"
#define NM_IFACE "org.freedesktop.NetworkManager"
/* NetworkManager answers in milliseconds; a stuck one must not hold up a
 * plan or a status for D-Bus's default 25 s per call. */
#define NM_TIMEOUT_USEC (3ULL * 1000000ULL)
/* A device's connections are a handful; bound what a bus peer can make
 * svff read. */
#define NM_MAX_CONNECTIONS 64

static int nm_call(sd_bus *bus, const char *path, const char *iface, const char *member,
                   sd_bus_message **ret, const char *types, ...) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        va_list ap;
        int r;

        r = sd_bus_message_new_method_call(bus, &m, NM_SERVICE, path, iface, member);
        if (r < 0)
                return r;
        /* where NetworkManager is not running, it is not the owner:
         * never start it to ask */
        r = sd_bus_message_set_auto_start(m, false);
        if (r < 0)
                return r;
        if (types) {
                va_start(ap, types);
                r = sd_bus_message_appendv(m, types, ap);
                va_end(ap);
                if (r < 0)
                        return r;
        }
        return sd_bus_call(bus, m, NM_TIMEOUT_USEC, NULL, ret);
}

/* Properties.Get of a property of D-Bus type type: "o" (an object path)
 * or "s" (a string). */
static int nm_get(sd_bus *bus, const char *path, const char *iface, const char *property, const char *type,
                  char **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const char *v;
        int r;

        r = nm_call(bus, path, "org.freedesktop.DBus.Properties", "Get", &reply, "ss", iface, property);
        if (r < 0)
                return r;
        r = sd_bus_message_read(reply, "v", type, &v);
        if (r < 0)
                return r;
        *ret = strdup(v);
        return *ret ? 0 : -ENOMEM;
}

static int nm_get_path(sd_bus *bus, const char *path, const char *iface, const char *property, char **ret) {
        return nm_get(bus, path, iface, property, "o", ret);
}

static int nm_get_string(sd_bus *bus, const char *path, const char *iface, const char *property, char **ret) {
        return nm_get(bus, path, iface, property, "s", ret);
}

static int strv_push_unique(char ***l, size_t *n, const char *s) {
        char **nl;

        for (size_t i = 0; i < *n; i++)
                if (streq((*l)[i], s))
                        return 0;
        if (*n >= NM_MAX_CONNECTIONS)
                return 0;
        nl = realloc(*l, (*n + 2) * sizeof(char *));
        if (!nl)
                return -ENOMEM;
        *l = nl;
        nl[*n] = strdup(s);
        if (!nl[*n])
                return -ENOMEM;
        nl[++*n] = NULL;
        return 0;
}

/* The settings connections that can act on the device: the active
 * one's first. -ENOMEM, or 0 with what could be read. */
static int nm_device_connections(sd_bus *bus, const char *device, char ***ret, size_t *ret_n) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_free_ char *active = NULL, *settings = NULL;
        const char *p;
        int r;

        if (nm_get_path(bus, device, NM_IFACE ".Device", "ActiveConnection", &active) == 0 && !streq(active, "/") &&
            nm_get_path(bus, active, NM_IFACE ".Connection.Active", "Connection", &settings) == 0 &&
            !streq(settings, "/")) {
                r = strv_push_unique(ret, ret_n, settings);
                if (r < 0)
                        return r;
        }

        r = nm_call(bus, device, "org.freedesktop.DBus.Properties", "Get", &reply, "ss", NM_IFACE ".Device",
                    "AvailableConnections");
        if (r < 0)
                return 0;
        if (sd_bus_message_enter_container(reply, 'v', "ao") <= 0 ||
            sd_bus_message_enter_container(reply, 'a', "o") <= 0)
                return 0;
        while (sd_bus_message_read(reply, "o", &p) > 0) {
                r = strv_push_unique(ret, ret_n, p);
                if (r < 0)
                        return r;
        }
        return 0;
}

struct nm_settings {
        char *id, *uuid;
        bool sriov;
        bool has_total_vfs;
        uint32_t total_vfs;
};

static void nm_settings_done(struct nm_settings *s) {
        free(s->id);
        free(s->uuid);
}

/* The value of one a{sv} entry into *ret when it is a string, else
 * skipped. */
static int read_variant_string(sd_bus_message *m, char **ret) {
        const char *contents, *v;
        int r;

        r = sd_bus_message_peek_type(m, NULL, &contents);
        if (r < 0)
                return r;
        if (!streq(contents, "s"))
                return sd_bus_message_skip(m, "v");
        r = sd_bus_message_read(m, "v", "s", &v);
        if (r < 0)
                return r;
        free(*ret);
        *ret = strdup(v);
        return *ret ? 0 : -ENOMEM;
}

/* GetSettings' a{sa{sv}}: connection.id, connection.uuid, and whether
 * there is an "sriov" setting (and its total-vfs). */
static int nm_parse_settings(sd_bus_message *m, struct nm_settings *ret) {
        int r;

        r = sd_bus_message_enter_container(m, 'a', "{sa{sv}}");
        if (r <= 0)
                return r < 0 ? r : -EBADMSG;
        while ((r = sd_bus_message_enter_container(m, 'e', "sa{sv}")) > 0) {
                const char *group;

                r = sd_bus_message_read(m, "s", &group);
                if (r < 0)
                        return r;
                if (streq(group, "sriov"))
                        ret->sriov = true;
                r = sd_bus_message_enter_container(m, 'a', "{sv}");
                if (r < 0)
                        return r;
                while ((r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                        const char *key, *contents;

                        r = sd_bus_message_read(m, "s", &key);
                        if (r < 0)
                                return r;
                        if (streq(group, "connection") && streq(key, "id"))
                                r = read_variant_string(m, &ret->id);
                        else if (streq(group, "connection") && streq(key, "uuid"))
                                r = read_variant_string(m, &ret->uuid);
                        else if (streq(group, "sriov") && streq(key, "total-vfs") &&
                                 sd_bus_message_peek_type(m, NULL, &contents) > 0 && streq(contents, "u")) {
                                r = sd_bus_message_read(m, "v", "u", &ret->total_vfs);
                                ret->has_total_vfs = r >= 0;
                        } else
                                r = sd_bus_message_skip(m, "v");
                        if (r < 0)
                                return r;
                        r = sd_bus_message_exit_container(m);
                        if (r < 0)
                                return r;
                }
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
                r = sd_bus_message_exit_container(m);
                if (r < 0)
                        return r;
        }
        if (r < 0)
                return r;
        return sd_bus_message_exit_container(m);
}

static int nm_owner_new(sd_bus *bus, const char *path, struct nm_settings *s, struct svff_nic_owner **ret) {
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *o = calloc(1, sizeof(*o));
        _cleanup_free_ char *filename = NULL;
        int r;

        if (!o)
                return -ENOMEM;
        /* the keyfile (or ifcfg file) behind it, when it has one: an
         * in-memory connection has "" */
        if (nm_get_string(bus, path, NM_IFACE ".Settings.Connection", "Filename", &filename) == -ENOMEM)
                return -ENOMEM;
        o->owner = strdup("NetworkManager");
        o->connection_id = strdup(s->id ?: "");
        o->connection_uuid = strdup(s->uuid ?: "");
        if (!o->owner || !o->connection_id || !o->connection_uuid)
                return -ENOMEM;
        if (asprintf(&o->file, "connection '%s', UUID %s%s%s", o->connection_id, o->connection_uuid,
                     filename && *filename ? ", in " : "", filename ?: "") < 0) {
                o->file = NULL;
                return -ENOMEM;
        }
        r = s->has_total_vfs ? asprintf(&o->detail, "sriov.total-vfs=%" PRIu32, s->total_vfs)
                             : asprintf(&o->detail, "[sriov]");
        if (r < 0) {
                o->detail = NULL;
                return -ENOMEM;
        }
        *ret = TAKE_PTR(o);
        return 1;
}

int svff_nic_owner_find_nm(struct sd_bus *bus, const char *ifname, struct svff_nic_owner **ret) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        _cleanup_strv_free_ char **conns = NULL;
        _cleanup_free_ char *device = NULL;
        const char *p;
        size_t n = 0;
        int has_owner = 0, r;

        if (!bus || !ifname)
                return 0;
        r = sd_bus_call_method(bus, "org.freedesktop.DBus", "/org/freedesktop/DBus", "org.freedesktop.DBus",
                               "NameHasOwner", NULL, &reply, "s", NM_SERVICE);
        if (r < 0 || sd_bus_message_read(reply, "b", &has_owner) < 0 || !has_owner)
                return 0;
        reply = sd_bus_message_unref(reply);

        /* a device NetworkManager does not know is not its to manage */
        r = nm_call(bus, NM_PATH, NM_IFACE, "GetDeviceByIpIface", &reply, "s", ifname);
        if (r < 0 || sd_bus_message_read(reply, "o", &p) < 0)
                return 0;
        device = strdup(p);
        if (!device)
                return -ENOMEM;

        r = nm_device_connections(bus, device, &conns, &n);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++) {
                _cleanup_(sd_bus_message_unrefp) sd_bus_message *settings = NULL;
                struct nm_settings s = {};

                /* one it will not show us is skipped, like an unreadable
                 * file */
                if (nm_call(bus, conns[i], NM_IFACE ".Settings.Connection", "GetSettings", &settings, NULL) < 0)
                        continue;
                r = nm_parse_settings(settings, &s);
                if (r == -ENOMEM) {
                        nm_settings_done(&s);
                        return r;
                }
                if (r >= 0 && s.sriov) {
                        r = nm_owner_new(bus, conns[i], &s, ret);
                        nm_settings_done(&s);
                        return r;
                }
                nm_settings_done(&s);
        }
        return 0;
}

/* ---- the Kubernetes SR-IOV network operator ------------------------------ */

/* Its config daemon keeps what it applied to each PF it manages in
 * etc/sriov-operator/pci/<PCI address>, a JSON object (numVfs, the VFs'
 * groups...), and removes the file when no policy selects the PF. */
static int scan_sriov_operator(const char *root, const char *pci_address, struct svff_nic_owner **ret,
                               struct svff_error *err) {
        _cleanup_free_ char *file = NULL, *path = NULL, *detail = NULL, *text = NULL;
        _cleanup_(json_object_putp) struct json_object *applied = NULL;
        int64_t numvfs;
        size_t len;
        int r;

        if (!pci_address)
                return 0;
        if (asprintf(&file, "/etc/sriov-operator/pci/%s", pci_address) < 0 ||
            asprintf(&path, "%s%s", streq(root, "/") ? "" : root, file) < 0)
                return -ENOMEM;
        /* the operator writes the file itself: a link is not its */
        r = read_other_file(path, file, true, &text, &len, err);
        if (r <= 0)
                return r;
        applied = json_tokener_parse(text);
        if (applied && svff_json_get_i64(applied, "numVfs", &numvfs) >= 0) {
                if (asprintf(&detail, "numVfs=%" PRId64, numvfs) < 0)
                        return -ENOMEM;
        } else if (!(detail = strdup("its applied state")))
                return -ENOMEM;
        return owner_new("the Kubernetes SR-IOV network operator", file, &detail, ret);
}

/* ---- all of them ---------------------------------------------------------- */

int svff_nic_owner_find_with(struct sd_bus *bus, const char *root, const char *ifname,
                             const char *pci_address, struct svff_nic_owner **ret, struct svff_error *err) {
        static const char *const nm_dirs[] = {
                "/etc/NetworkManager/system-connections",
                "/run/NetworkManager/system-connections",
                NULL,
        };
        /* networkd's order of precedence. */
        static const char *const networkd_dirs[] = {
                "/etc/systemd/network",
                "/run/systemd/network",
                "/usr/lib/systemd/network",
                NULL,
        };
        _cleanup_free_ char *path_match = NULL;
        int r;

        if (!root || !*root)
                root = "/";
        r = svff_nic_owner_find_nm(bus, ifname, ret);
        if (r != 0)
                return r;
        if (pci_address && asprintf(&path_match, "pci-%s", pci_address) < 0)
                return -ENOMEM;

        r = scan_sriov_operator(root, pci_address, ret, err);
        if (r != 0)
                return r;
        r = scan_dirs(root, nm_dirs, NULL, false, "NetworkManager", ifname, NULL, ret, err);
        if (r != 0)
                return r;
        r = scan_dirs(root, networkd_dirs, ".link", true, "systemd-networkd", ifname, path_match, ret, err);
        if (r != 0)
                return r;
        return scan_dirs(root, networkd_dirs, ".network", true, "systemd-networkd", ifname, path_match,
                         ret, err);
}

int svff_nic_owner_find(const char *root, const char *ifname, const char *pci_address,
                        struct svff_nic_owner **ret, struct svff_error *err) {
        _cleanup_(sd_bus_flush_close_unrefp) sd_bus *bus = NULL;

        /* The system bus's NetworkManager manages the host's devices, not
         * a scratch tree's; no system bus is no NetworkManager. */
        if ((!root || !*root || streq(root, "/")) && sd_bus_open_system(&bus) < 0)
                bus = NULL;
        return svff_nic_owner_find_with(bus, root, ifname, pci_address, ret, err);
}

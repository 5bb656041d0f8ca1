/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "nic-owner.h"

void svff_nic_owner_free(struct svff_nic_owner *o) {
        if (!o)
                return;
        free(o->owner);
        free(o->file);
        free(o->detail);
        free(o);
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

static int ini_scan_file(int fd, struct ini_scan *sc) {
        _cleanup_fclose_ FILE *f = NULL;
        _cleanup_free_ char *line = NULL;
        char section[64] = "";
        size_t cap = 0;
        int r;

        f = fdopen(fd, "re");
        if (!f) {
                close(fd);
                return -errno;
        }
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

/* path is root-relative; file_shown what the message names. */
static int scan_one(const char *root, const char *path, struct ini_scan *sc) {
        _cleanup_free_ char *full = NULL;
        char target[16];
        ssize_t l;
        int fd;

        if (asprintf(&full, "%s%s", streq(root, "/") ? "" : root, path) < 0)
                return -ENOMEM;
        /* A link to /dev/null masks the name (networkd's rule). */
        l = readlink(full, target, sizeof(target) - 1);
        if (l > 0) {
                target[l] = 0;
                if (streq(target, "/dev/null"))
                        return 0;
        }
        fd = open(full, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NONBLOCK);
        if (fd < 0)
                return 0;
        struct stat st;
        if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
                close(fd);
                return 0;
        }
        return ini_scan_file(fd, sc);
}

static int scan_dirs(const char *root, const char *const *dirs, const char *suffix, bool networkd,
                     const char *owner, const char *ifname, const char *path_match,
                     struct svff_nic_owner **ret) {
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

                r = scan_one(root, names[i], &sc);
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

int svff_nic_owner_find(const char *root, const char *ifname, const char *pci_address,
                        struct svff_nic_owner **ret) {
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
        if (pci_address && asprintf(&path_match, "pci-%s", pci_address) < 0)
                return -ENOMEM;

        r = scan_dirs(root, nm_dirs, NULL, false, "NetworkManager", ifname, NULL, ret);
        if (r != 0)
                return r;
        r = scan_dirs(root, networkd_dirs, ".link", true, "systemd-networkd", ifname, path_match, ret);
        if (r != 0)
                return r;
        return scan_dirs(root, networkd_dirs, ".network", true, "systemd-networkd", ifname, path_match,
                         ret);
}

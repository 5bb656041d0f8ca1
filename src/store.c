/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "sha256.h"
#include "store.h"
#include "utf8.h"

#define STORE_TMP SVFF_STORE_FILE ".tmp"
#define STORE_PREV SVFF_STORE_FILE ".prev"
#define STORE_PREV_TMP SVFF_STORE_FILE ".prev.tmp"

/* Far above 252 VFs x 4 PFs (about 150 KiB), low enough that a runaway
 * file cannot make the daemon allocate without bound. */
#define STORE_SIZE_MAX (64u * 1024u * 1024u)
/* Records and later the journal's plan nest a few levels; this leaves
 * room without letting a hostile file recurse json-c deeply. */
#define STORE_DEPTH_MAX 32

struct svff_store {
        int dirfd;  /* O_DIRECTORY, readable: fsync(2) needs more than O_PATH */
        char *path; /* STATE_DIR/store.json, for messages */
        struct json_object *doc;
        uint64_t generation;
};

static const char *const sections[] = { "pfs", "vfs", "assignments" };

static int detail(char **ret, const char *fmt, ...) _printf_(2, 3);
static int detail(char **ret, const char *fmt, ...) {
        va_list ap;
        int r;

        va_start(ap, fmt);
        r = vasprintf(ret, fmt, ap);
        va_end(ap);
        if (r < 0) {
                *ret = NULL;
                return -ENOMEM;
        }
        return -EBADMSG;
}

static const char *type_word(int r) {
        return r == -ENOENT ? "missing" : r == -ERANGE ? "out of range" : "of the wrong type";
}

static int check_pf(const char *key, struct json_object *rec, char **ret_detail) {
        struct json_object *v;
        const char *s;
        unsigned u;
        int r;

        if (!json_object_is_type(rec, json_type_object))
                return detail(ret_detail, "'pfs.%s' is not an object", key);
        r = svff_json_get_unsigned(rec, "numvfs", &u);
        if (r < 0)
                return detail(ret_detail, "'pfs.%s.numvfs' is %s", key, type_word(r));
        r = svff_json_get_string(rec, "vf_driver", &s);
        if (r < 0)
                return detail(ret_detail, "'pfs.%s.vf_driver' is %s", key, type_word(r));
        r = svff_json_get_object(rec, "image", &v);
        if (r == -ENOENT)
                return 0;
        if (r < 0 || (v && svff_json_get_string(v, "path", &s) < 0))
                return detail(ret_detail, "'pfs.%s.image' is not an image record", key);
        /* an image flashed for a policy that compares content */
        if (v && json_object_object_get_ex(v, "sha256", NULL) &&
            (svff_json_get_string(v, "sha256", &s) < 0 || !svff_sha256_hex_valid(s)))
                return detail(ret_detail, "'pfs.%s.image.sha256' is not a SHA-256 digest in hex", key);
        return 0;
}

/* "class" belongs to the device class: only its kind is the store's. */
static int class_check(struct json_object *rec) {
        struct json_object *v;

        if (!json_object_object_get_ex(rec, "class", &v) || !v)
                return 0;
        return json_object_is_type(v, json_type_object) ? 0 : -EINVAL;
}

static int check_vf(const char *key, struct json_object *rec, char **ret_detail) {
        const char *s;
        unsigned u;
        int r;

        if (!json_object_is_type(rec, json_type_object))
                return detail(ret_detail, "'vfs.%s' is not an object", key);
        r = svff_json_get_string(rec, "pf", &s);
        if (r < 0)
                return detail(ret_detail, "'vfs.%s.pf' is %s", key, type_word(r));
        r = svff_json_get_unsigned(rec, "index", &u);
        if (r < 0)
                return detail(ret_detail, "'vfs.%s.index' is %s", key, type_word(r));
        r = svff_json_get_string_or_null(rec, "original_driver", &s);
        if (r < 0)
                return detail(ret_detail, "'vfs.%s.original_driver' is %s", key, type_word(r));
        r = svff_json_get_string(rec, "driver", &s);
        if (r < 0)
                return detail(ret_detail, "'vfs.%s.driver' is %s", key, type_word(r));
        if (class_check(rec) < 0)
                return detail(ret_detail, "'vfs.%s.class' is neither null nor an object", key);
        return 0;
}

static int intent_check(struct json_object *rec) {
        struct json_object *v;

        if (!json_object_object_get_ex(rec, "intent", &v) || !v)
                return 0;
        if (!json_object_is_type(v, json_type_string))
                return -EINVAL;
        return svff_assign_intent_from_string(json_object_get_string(v)) < 0 ? -EINVAL : 0;
}

/* Only the shape the recovery of intents depends on: a record with an
 * intent it cannot read would be resolved wrongly or not at all. */
static int check_assignment(const char *key, struct json_object *rec, char **ret_detail) {
        if (!json_object_is_type(rec, json_type_object))
                return detail(ret_detail, "'assignments.%s' is not an object", key);
        if (intent_check(rec) < 0)
                return detail(ret_detail, "'assignments.%s.intent' is not null or a known change", key);
        if (class_check(rec) < 0)
                return detail(ret_detail, "'assignments.%s.class' is neither null nor an object", key);
        return 0;
}

/* Checks everything but the schema, which the caller has checked first
 * (a newer schema may legitimately look different). Returns -EBADMSG and
 * a malloc'd description of the first problem, or -ENOMEM. */
static int validate(struct json_object *doc, char **ret_detail) {
        struct json_object *v;
        uint64_t g;
        int r;

        r = svff_json_get_u64(doc, "generation", &g);
        if (r < 0)
                return detail(ret_detail, "'generation' is %s", type_word(r));

        for (size_t i = 0; i < ELEMENTSOF(sections); i++) {
                if (!json_object_object_get_ex(doc, sections[i], &v))
                        continue;  /* absent is empty: no fact lost */
                if (!json_object_is_type(v, json_type_object))
                        return detail(ret_detail, "'%s' is not an object", sections[i]);

                json_object_object_foreach(v, key, rec) {
                        if (i == 0)
                                r = check_pf(key, rec, ret_detail);
                        else if (i == 1)
                                r = check_vf(key, rec, ret_detail);
                        else
                                r = check_assignment(key, rec, ret_detail);
                        if (r < 0)
                                return r;
                }
        }

        if (json_object_object_get_ex(doc, "journal", &v) && v &&
            !json_object_is_type(v, json_type_object))
                return detail(ret_detail, "'journal' is neither null nor an object");

        /* Fields this version does not know are written back as read:
         * one json-c clamped would be written back changed. */
        if (svff_json_has_clamped_int(doc))
                return detail(ret_detail, "a number is out of the 64-bit range");

        return 0;
}

/* Adds the sections a valid document may lack, so accessors never return
 * NULL. Only touches memory. */
static int complete(struct json_object *doc) {
        for (size_t i = 0; i < ELEMENTSOF(sections); i++) {
                struct json_object *o;

                if (json_object_object_get_ex(doc, sections[i], NULL))
                        continue;
                o = json_object_new_object();
                if (!o)
                        return -ENOMEM;
                if (json_object_object_add(doc, sections[i], o) < 0) {
                        json_object_put(o);
                        return -ENOMEM;
                }
        }
        if (!json_object_object_get_ex(doc, "journal", NULL) &&
            json_object_object_add(doc, "journal", NULL) < 0)
                return -ENOMEM;
        return 0;
}

static int set_held(struct json_object *rec) {
        struct json_object *v = json_object_new_string("held");

        if (!v || json_object_object_add(rec, "state", v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Brings a valid document of an older schema to SVFF_STORE_SCHEMA in
 * memory; the next commit writes it. 1 -> 2: every assignment gets an
 * explicit null intent (absent already reads as none). 2 -> 3: nothing
 * but the number (an absent class is no class). 3 -> 4: a held
 * assignment's state, spelled "paused" before, is "held" (an older
 * svffd then refuses the store by its schema instead of misreading the
 * state). */
static int migrate(struct json_object *doc, uint64_t schema) {
        struct json_object *v, *st;

        if (schema >= SVFF_STORE_SCHEMA)
                return 0;
        if (json_object_object_get_ex(doc, "assignments", &v)) {
                json_object_object_foreach(v, key, rec) {
                        (void) key;
                        if (schema < 2 && !json_object_object_get_ex(rec, "intent", NULL) &&
                            json_object_object_add(rec, "intent", NULL) < 0)
                                return -ENOMEM;
                        if (schema < 4 && json_object_object_get_ex(rec, "state", &st) &&
                            json_object_is_type(st, json_type_string) &&
                            streq(json_object_get_string(st), "paused") && set_held(rec) < 0)
                                return -ENOMEM;
                }
        }
        v = json_object_new_int(SVFF_STORE_SCHEMA);
        if (!v)
                return -ENOMEM;
        if (json_object_object_add(doc, "schema", v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* Device classes' recorded settings and state ("class" objects, in VF
 * and assignment records and in the journal) with snake_case keys: a
 * store of an earlier release has kebab-case ones, which the classes
 * read no longer. The next commit writes them back so. */
static int snake_classes(struct json_object *v) {
        if (json_object_is_type(v, json_type_array)) {
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        int r = snake_classes(json_object_array_get_idx(v, i));

                        if (r < 0)
                                return r;
                }
                return 0;
        }
        if (!json_object_is_type(v, json_type_object))
                return 0;
        json_object_object_foreach(v, key, val) {
                struct json_object *n = NULL;
                int r;

                if (!streq(key, "class") || !json_object_is_type(val, json_type_object)) {
                        r = snake_classes(val);
                        if (r < 0)
                                return r;
                        continue;
                }
                r = svff_json_snake_keys(val, &n, NULL);
                /* both spellings: no release wrote that; left as it is */
                if (r == -ENOTUNIQ)
                        continue;
                if (r < 0)
                        return r;
                /* replaces the value in place, which the walk allows */
                if (json_object_object_add(v, key, n) < 0) {
                        json_object_put(n);
                        return -ENOMEM;
                }
        }
        return 0;
}

#define RECOVERY "Refusing to start so as not to overwrite it: restore '%s.prev' or move the file aside."

/* path NULL: a buffer, messages without the recovery advice. */
static int store_parse(const char *path, const char *data, size_t len, struct json_object **ret,
                       uint64_t *ret_generation, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *doc = NULL;
        _cleanup_free_ char *why = NULL;
        const char *reason = NULL;
        const char *name = path ?: "(buffer)";
        uint64_t schema, generation = 0;
        int r;

        r = svff_json_parse(data, len, STORE_DEPTH_MAX, &doc, &reason);
        if (r == -ENOMEM)
                return svff_error_set(err, r, "Out of memory parsing store '%s'", name);
        if (r < 0) {
                if (len == 0)
                        reason = "empty file";
                if (path)
                        return svff_error_set(err, -EBADMSG,
                                              "Store '%s' is truncated or corrupt (%s). " RECOVERY,
                                              path, reason, path);
                return svff_error_set(err, -EBADMSG, "Store is truncated or corrupt (%s)", reason);
        }

        if (!json_object_is_type(doc, json_type_object))
                r = detail(&why, "not a JSON object");
        else {
                r = svff_json_get_u64(doc, "schema", &schema);
                if (r < 0)
                        r = detail(&why, "'schema' is %s", type_word(r));
                else if (schema > SVFF_STORE_SCHEMA) {
                        if (path)
                                return svff_error_set(err, -EPROTONOSUPPORT,
                                                      "Store '%s' has schema %" PRIu64 ", newer than this svffd supports (%d). "
                                                      "Refusing to start so as not to overwrite it: run a newer svffd, or move the file aside.",
                                                      path, schema, SVFF_STORE_SCHEMA);
                        return svff_error_set(err, -EPROTONOSUPPORT,
                                              "Store has schema %" PRIu64 ", newer than supported (%d)",
                                              schema, SVFF_STORE_SCHEMA);
                } else if (schema < 1)
                        r = detail(&why, "'schema' is 0");
                else
                        r = validate(doc, &why);
        }
        if (r == -ENOMEM || (r < 0 && !why))
                return svff_error_set(err, -ENOMEM, "Out of memory checking store '%s'", name);
        if (r < 0) {
                if (path)
                        return svff_error_set(err, -EBADMSG, "Store '%s' is corrupt: %s. " RECOVERY,
                                              path, why, path);
                return svff_error_set(err, -EBADMSG, "Store is corrupt: %s", why);
        }

        r = complete(doc);
        if (r < 0)
                return svff_error_set(err, r, "Out of memory loading store '%s'", name);
        r = migrate(doc, schema);
        if (r >= 0)
                r = snake_classes(doc);
        if (r < 0)
                return svff_error_set(err, r, "Out of memory migrating store '%s'", name);

        (void) svff_json_get_u64(doc, "generation", &generation);
        *ret = TAKE_PTR(doc);
        if (ret_generation)
                *ret_generation = generation;
        return 0;
}

int svff_store_parse(const char *data, size_t len, struct json_object **ret,
                     struct svff_error *err) {
        if ((!data && len > 0) || !ret)
                return svff_error_set(err, -EINVAL, "Invalid arguments to svff_store_parse()");
        return store_parse(NULL, data, len, ret, NULL, err);
}

static struct json_object *empty_doc(void) {
        _cleanup_(json_object_putp) struct json_object *doc = json_object_new_object();

        if (!doc)
                return NULL;
        if (json_object_object_add(doc, "schema", json_object_new_int(SVFF_STORE_SCHEMA)) < 0 ||
            json_object_object_add(doc, "generation", json_object_new_int64(0)) < 0 ||
            complete(doc) < 0)
                return NULL;
        return TAKE_PTR(doc);
}

static int read_all(int fd, char **ret, size_t *ret_len) {
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        for (;;) {
                ssize_t k;

                if (alloc - len < 4096) {
                        size_t a = alloc ? alloc * 2 : 65536;
                        char *p;

                        if (a > STORE_SIZE_MAX + 1)
                                a = STORE_SIZE_MAX + 1;
                        if (a <= len)
                                return -EFBIG;
                        p = realloc(buf, a);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                        alloc = a;
                }

                k = read(fd, buf + len, alloc - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
                if (len > STORE_SIZE_MAX)
                        return -EFBIG;
        }

        *ret = TAKE_PTR(buf);
        *ret_len = len;
        return 0;
}

int svff_store_open(const char *state_dir, struct svff_store **ret, struct svff_error *err) {
        _cleanup_(svff_store_freep) struct svff_store *s = NULL;
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *data = NULL;
        struct stat st;
        size_t len = 0;
        int r;

        if (!state_dir || !ret)
                return svff_error_set(err, -EINVAL, "Invalid arguments to svff_store_open()");

        s = calloc(1, sizeof(*s));
        if (!s)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        s->dirfd = -EBADF;
        if (asprintf(&s->path, "%s/%s", state_dir, SVFF_STORE_FILE) < 0) {
                s->path = NULL;
                return svff_error_set(err, -ENOMEM, "Out of memory");
        }

        if (mkdir(state_dir, 0700) < 0 && errno != EEXIST)
                return svff_error_set_errno(err, -errno, "Failed to create state directory '%s'",
                                            state_dir);
        s->dirfd = open(state_dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (s->dirfd < 0)
                return svff_error_set_errno(err, -errno, "Failed to open state directory '%s'",
                                            state_dir);

        /* O_NONBLOCK: opening a FIFO would wait for a writer, a device
         * could do anything; only a regular file is read (S_ISREG below).
         * O_NOFOLLOW: a symlink would be replaced by the first commit. */
        fd = openat(s->dirfd, SVFF_STORE_FILE, O_RDONLY | O_CLOEXEC | O_NOCTTY | O_NOFOLLOW | O_NONBLOCK);
        if (fd < 0) {
                if (errno == ELOOP)
                        return svff_error_set(err, -ELOOP,
                                              "Store '%s' is a symbolic link, not a regular file: move it aside",
                                              s->path);
                if (errno != ENOENT)
                        return svff_error_set_errno(err, -errno, "Failed to open store '%s'", s->path);
                s->doc = empty_doc();
                if (!s->doc)
                        return svff_error_set(err, -ENOMEM, "Out of memory");
                *ret = TAKE_PTR(s);
                return 0;
        }

        if (fstat(fd, &st) < 0)
                return svff_error_set_errno(err, -errno, "Failed to stat store '%s'", s->path);
        if (!S_ISREG(st.st_mode))
                return svff_error_set(err, -EINVAL,
                                      "Store '%s' is not a regular file (%s): move it aside", s->path,
                                      S_ISFIFO(st.st_mode) ? "a FIFO" :
                                      S_ISDIR(st.st_mode) ? "a directory" :
                                      S_ISSOCK(st.st_mode) ? "a socket" :
                                      S_ISCHR(st.st_mode) || S_ISBLK(st.st_mode) ? "a device" : "not a file");
        /* regular files never block; reads need no EAGAIN handling */
        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
                return svff_error_set_errno(err, -errno, "Failed to read store '%s'", s->path);

        r = read_all(fd, &data, &len);
        if (r == -EFBIG)
                return svff_error_set(err, -EBADMSG,
                                      "Store '%s' is larger than %u MiB, so it is not one this svffd wrote. " RECOVERY,
                                      s->path, STORE_SIZE_MAX / 1024 / 1024, s->path);
        if (r < 0)
                return svff_error_set_errno(err, r, "Failed to read store '%s'", s->path);

        r = store_parse(s->path, data, len, &s->doc, &s->generation, err);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(s);
        return 0;
}

void svff_store_free(struct svff_store *s) {
        if (!s)
                return;
        if (s->dirfd >= 0)
                close(s->dirfd);
        free(s->path);
        if (s->doc)
                json_object_put(s->doc);
        free(s);
}

const char *svff_store_path(struct svff_store *s) {
        return s ? s->path : NULL;
}

uint64_t svff_store_generation(struct svff_store *s) {
        return s ? s->generation : 0;
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k = write(fd, p, n);

                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -EIO;
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

static int unlink_if_exists(int dirfd, const char *name) {
        if (unlinkat(dirfd, name, 0) < 0 && errno != ENOENT)
                return -errno;
        return 0;
}

/* Writes data to STORE_TMP and makes it durable. On failure no temp file
 * is left behind. */
static int write_temp(struct svff_store *s, const char *data, size_t len, struct svff_error *err) {
        _cleanup_close_ int fd = -EBADF;
        int r;

        /* a temp file left by a crash: ours to replace */
        r = unlink_if_exists(s->dirfd, STORE_TMP);
        if (r < 0)
                return svff_error_set_errno(err, r, "Failed to remove stale '%s.tmp'", s->path);

        fd = openat(s->dirfd, STORE_TMP, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC | O_NOFOLLOW, 0600);
        if (fd < 0)
                return svff_error_set_errno(err, -errno, "Failed to create '%s.tmp'", s->path);

        r = write_all(fd, data, len);
        if (r < 0) {
                svff_error_set_errno(err, r, "Failed to write '%s.tmp'", s->path);
                goto fail;
        }
        if (fsync(fd) < 0) {
                r = svff_error_set_errno(err, -errno, "Failed to flush '%s.tmp' to disk", s->path);
                goto fail;
        }
        /* errors of delayed writes may only show here */
        if (close(TAKE_FD(fd)) < 0) {
                r = svff_error_set_errno(err, -errno, "Failed to close '%s.tmp'", s->path);
                goto fail;
        }
        return 0;

fail:
        (void) unlinkat(s->dirfd, STORE_TMP, 0);
        return r;
}

/* store.json -> store.json.prev, replacing an old prev atomically: a
 * crash in between leaves either the old or the new prev, never none. */
static int keep_previous(struct svff_store *s, struct svff_error *err) {
        int r;

        r = unlink_if_exists(s->dirfd, STORE_PREV_TMP);
        if (r < 0)
                return svff_error_set_errno(err, r, "Failed to remove stale '%s.prev.tmp'", s->path);

        if (linkat(s->dirfd, SVFF_STORE_FILE, s->dirfd, STORE_PREV_TMP, 0) < 0) {
                if (errno == ENOENT)
                        return 0;  /* first commit: nothing to keep */
                return svff_error_set_errno(err, -errno, "Failed to link '%s' to '%s.prev.tmp'",
                                            s->path, s->path);
        }
        if (renameat(s->dirfd, STORE_PREV_TMP, s->dirfd, STORE_PREV) < 0) {
                r = svff_error_set_errno(err, -errno, "Failed to rename '%s.prev.tmp' to '%s.prev'",
                                         s->path, s->path);
                (void) unlinkat(s->dirfd, STORE_PREV_TMP, 0);
                return r;
        }
        return 0;
}

static int set_generation(struct json_object *doc, uint64_t g) {
        struct json_object *v = json_object_new_uint64(g);

        if (!v)
                return -ENOMEM;
        if (json_object_object_add(doc, "generation", v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* A path of keys being built, for a message. */
struct key_path {
        char *p;
        size_t len, alloc;
};

static bool key_path_push(struct key_path *k, const char *fmt, ...) _printf_(2, 3);
static bool key_path_push(struct key_path *k, const char *fmt, ...) {
        _cleanup_free_ char *part = NULL;
        va_list ap;
        size_t n;
        int r;

        va_start(ap, fmt);
        r = vasprintf(&part, fmt, ap);
        va_end(ap);
        if (r < 0)
                return false;
        n = (size_t) r;
        if (k->len + n + 1 > k->alloc) {
                size_t a = (k->len + n + 1) * 2;
                char *np = realloc(k->p, a);

                if (!np)
                        return false;
                k->p = np;
                k->alloc = a;
        }
        memcpy(k->p + k->len, part, n + 1);
        k->len += n;
        return true;
}

/* The first string (a key or a value) at any depth of v that is not
 * UTF-8, its path ("journal.pfs.0000:01:00.0.reprogram.reason", "[2]"
 * for an array element) in k: 1; 0 when there is none; -ENOMEM. */
static int find_bad_string(struct json_object *v, struct key_path *k) {
        size_t n, at = k->len;
        int r;

        switch (json_object_get_type(v)) {
        case json_type_string:
                n = (size_t) json_object_get_string_len(v);
                return svff_utf8_valid_length(json_object_get_string(v), n) != n;
        case json_type_object: {
                /* braces: the macro declares, which no label may precede */
                json_object_object_foreach(v, key, val) {
                        if (!key_path_push(k, "%s%s", at > 0 ? "." : "", key))
                                return -ENOMEM;
                        if (svff_utf8_valid_length(key, strlen(key)) != strlen(key))
                                return 1;
                        r = find_bad_string(val, k);
                        if (r != 0)
                                return r;
                        k->len = at;
                        k->p[at] = 0;
                }
                return 0;
        }
        case json_type_array:
                for (size_t i = 0; i < json_object_array_length(v); i++) {
                        if (!key_path_push(k, "[%zu]", i))
                                return -ENOMEM;
                        r = find_bad_string(json_object_array_get_idx(v, i), k);
                        if (r != 0)
                                return r;
                        k->len = at;
                        k->p[at] = 0;
                }
                return 0;
        default:
                return 0;
        }
}

/* Whether every key and string of doc is well-formed UTF-8 (RFC 3629),
 * as the next svff_store_open() insists: 0; else -EBADMSG and a malloc'd
 * description of why not in *ret_detail, or -ENOMEM. Stricter than
 * json-c's check (it takes overlong forms and surrogates): other readers
 * of the file are not as lenient. A walk, not a second parse of the
 * serialised text, so a commit costs one serialisation. */
static int strings_valid(struct json_object *doc, char **ret_detail) {
        struct key_path k = {};
        int r;

        r = find_bad_string(doc, &k);
        if (r > 0)
                r = detail(ret_detail, "'%s' is not valid UTF-8", k.p ?: "");
        free(k.p);
        return r;
}

static int commit_doc(struct svff_store *s, uint64_t generation, struct svff_error *err) {
        _cleanup_free_ char *why = NULL;
        const char *text;
        size_t len;
        int r;

        r = set_generation(s->doc, generation);
        if (r < 0)
                return svff_error_set(err, r, "Out of memory");

        /* Never write what the next start would refuse to load. */
        r = validate(s->doc, &why);
        if (r >= 0)
                r = strings_valid(s->doc, &why);
        if (r < 0) {
                if (!why)
                        return svff_error_set(err, -ENOMEM, "Out of memory");
                return svff_error_set(err, -EINVAL, "Refusing to write store '%s': %s", s->path, why);
        }

        text = json_object_to_json_string_length(s->doc,
                                                 JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                 &len);
        if (!text)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        /* Nor what the loader would refuse for its text: a string that is
         * not UTF-8 (text from outside that was not made valid first),
         * a number or a depth it does not take. */

        /* json-c's buffer ends in a NUL; the file ends in a newline */
        {
                _cleanup_free_ char *buf = malloc(len + 1);

                if (!buf)
                        return svff_error_set(err, -ENOMEM, "Out of memory");
                memcpy(buf, text, len);
                buf[len] = '\n';
                r = write_temp(s, buf, len + 1, err);
                if (r < 0)
                        return r;
        }

        r = keep_previous(s, err);
        if (r < 0) {
                (void) unlinkat(s->dirfd, STORE_TMP, 0);
                return r;
        }

        if (renameat(s->dirfd, STORE_TMP, s->dirfd, SVFF_STORE_FILE) < 0) {
                r = svff_error_set_errno(err, -errno, "Failed to rename '%s.tmp' to '%s'", s->path, s->path);
                (void) unlinkat(s->dirfd, STORE_TMP, 0);
                return r;
        }
        s->generation = generation;

        /* The new document is in place; this makes the rename durable.
         * If it fails the file already holds the new generation, so the
         * generation stays advanced (see store.h). */
        if (fsync(s->dirfd) < 0)
                return svff_error_set_errno(err, -errno, "Failed to flush the directory of '%s' to disk",
                                            s->path);
        return 0;
}

int svff_store_commit(struct svff_store *s, struct svff_error *err) {
        uint64_t g;
        int r;

        if (!s)
                return svff_error_set(err, -EINVAL, "Invalid arguments to svff_store_commit()");

        r = commit_doc(s, s->generation + 1, err);
        /* keep the document's field in step with what is on disk */
        if (r < 0 && (svff_json_get_u64(s->doc, "generation", &g) < 0 || g != s->generation))
                (void) set_generation(s->doc, s->generation);
        return r;
}

static struct json_object *section(struct svff_store *s, const char *name) {
        struct json_object *o = NULL;

        if (!s)
                return NULL;
        (void) json_object_object_get_ex(s->doc, name, &o);
        return o;
}

struct json_object *svff_store_pfs(struct svff_store *s) {
        return section(s, "pfs");
}

struct json_object *svff_store_vfs(struct svff_store *s) {
        return section(s, "vfs");
}

struct json_object *svff_store_assignments(struct svff_store *s) {
        return section(s, "assignments");
}

/* The record for key in sec, created empty when absent. Existing records
 * are updated in place so fields this version does not know survive. */
static struct json_object *record(struct json_object *sec, const char *key) {
        struct json_object *rec;

        if (json_object_object_get_ex(sec, key, &rec) && json_object_is_type(rec, json_type_object))
                return rec;
        rec = json_object_new_object();
        if (!rec)
                return NULL;
        if (json_object_object_add(sec, key, rec) < 0) {
                json_object_put(rec);
                return NULL;
        }
        return rec;
}

/* Sets key to v, taking v; a NULL v from a failed constructor is -ENOMEM
 * unless null was meant (want_null). */
static int put(struct json_object *rec, const char *key, struct json_object *v, bool want_null) {
        if (!v && !want_null)
                return -ENOMEM;
        if (json_object_object_add(rec, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

int svff_store_set_pf(struct svff_store *s, const char *pf, unsigned numvfs, const char *vf_driver) {
        struct json_object *rec;
        int r;

        if (!s || !pf || !*pf || !vf_driver)
                return -EINVAL;

        rec = record(svff_store_pfs(s), pf);
        if (!rec)
                return -ENOMEM;
        r = put(rec, "numvfs", json_object_new_int64(numvfs), false);
        if (r < 0)
                return r;
        return put(rec, "vf_driver", json_object_new_string(vf_driver), false);
}

int svff_store_get_pf(struct svff_store *s, const char *pf, unsigned *ret_numvfs,
                      const char **ret_vf_driver) {
        struct json_object *rec;
        const char *driver;
        unsigned n;

        if (!s || !pf)
                return -EINVAL;
        if (!json_object_object_get_ex(svff_store_pfs(s), pf, &rec))
                return 0;
        if (svff_json_get_unsigned(rec, "numvfs", &n) < 0 ||
            svff_json_get_string(rec, "vf_driver", &driver) < 0)
                return -EINVAL;
        if (ret_numvfs)
                *ret_numvfs = n;
        if (ret_vf_driver)
                *ret_vf_driver = driver;
        return 1;
}

void svff_store_remove_pf(struct svff_store *s, const char *pf) {
        if (s && pf)
                json_object_object_del(svff_store_pfs(s), pf);
}

const char *svff_store_get_pf_owner(struct svff_store *s, const char *pf) {
        struct json_object *rec, *v;

        if (!s || !pf || !json_object_object_get_ex(svff_store_pfs(s), pf, &rec) ||
            !json_object_object_get_ex(rec, "owner", &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

int svff_store_set_pf_owner(struct svff_store *s, const char *pf, const char *owner) {
        struct json_object *rec;

        if (!s || !pf || !owner || !*owner)
                return -EINVAL;
        if (!json_object_object_get_ex(svff_store_pfs(s), pf, &rec) || !json_object_is_type(rec, json_type_object))
                return -ENOENT;
        return put(rec, "owner", json_object_new_string(owner), false);
}

struct json_object *svff_store_get_pf_image(struct svff_store *s, const char *pf) {
        struct json_object *rec, *v;

        if (!s || !pf || !json_object_object_get_ex(svff_store_pfs(s), pf, &rec) ||
            !json_object_object_get_ex(rec, "image", &v) || !json_object_is_type(v, json_type_object))
                return NULL;
        return v;
}

int svff_store_set_pf_image(struct svff_store *s, const char *pf, struct json_object *image) {
        struct json_object *rec;

        if (!s || !pf || (image && !json_object_is_type(image, json_type_object))) {
                json_object_put(image);
                return -EINVAL;
        }
        if (!json_object_object_get_ex(svff_store_pfs(s), pf, &rec) || !json_object_is_type(rec, json_type_object)) {
                json_object_put(image);
                return -ENOENT;
        }
        if (!image) {
                json_object_object_del(rec, "image");
                return 0;
        }
        return put(rec, "image", image, false);
}

int svff_store_set_vf(struct svff_store *s, const char *vf, const char *pf, unsigned index,
                      const char *original_driver, const char *driver) {
        struct json_object *rec;
        int r;

        if (!s || !vf || !*vf || !pf || !driver)
                return -EINVAL;

        rec = record(svff_store_vfs(s), vf);
        if (!rec)
                return -ENOMEM;
        r = put(rec, "pf", json_object_new_string(pf), false);
        if (r >= 0)
                r = put(rec, "index", json_object_new_int64(index), false);
        /* as sysfs names it: text from a device, which JSON cannot hold
         * unless it is UTF-8 */
        if (r >= 0)
                r = put(rec, "original_driver", original_driver ? svff_json_new_text(original_driver) : NULL,
                        !original_driver);
        if (r >= 0)
                r = put(rec, "driver", json_object_new_string(driver), false);
        return r;
}

int svff_store_get_vf(struct svff_store *s, const char *vf, const char **ret_pf,
                      const char **ret_original_driver) {
        struct json_object *rec;
        const char *pf, *orig;

        if (!s || !vf)
                return -EINVAL;
        if (!json_object_object_get_ex(svff_store_vfs(s), vf, &rec))
                return 0;
        if (svff_json_get_string(rec, "pf", &pf) < 0 ||
            svff_json_get_string_or_null(rec, "original_driver", &orig) < 0)
                return -EINVAL;
        if (ret_pf)
                *ret_pf = pf;
        if (ret_original_driver)
                *ret_original_driver = orig;
        return 1;
}

static struct json_object *get_class(struct json_object *sec, const char *key) {
        struct json_object *rec, *v;

        if (!key || !json_object_object_get_ex(sec, key, &rec) || !json_object_is_type(rec, json_type_object) ||
            !json_object_object_get_ex(rec, "class", &v) || !json_object_is_type(v, json_type_object))
                return NULL;
        return v;
}

static int set_class(struct json_object *sec, const char *key, struct json_object *cls) {
        struct json_object *rec;

        if (!sec || !key || (cls && !json_object_is_type(cls, json_type_object))) {
                json_object_put(cls);
                return -EINVAL;
        }
        if (!json_object_object_get_ex(sec, key, &rec) || !json_object_is_type(rec, json_type_object)) {
                json_object_put(cls);
                return -ENOENT;
        }
        return put(rec, "class", cls, true);
}

struct json_object *svff_store_get_vf_class(struct svff_store *s, const char *vf) {
        return get_class(svff_store_vfs(s), vf);
}

int svff_store_set_vf_class(struct svff_store *s, const char *vf, struct json_object *cls) {
        return set_class(svff_store_vfs(s), vf, cls);
}

struct json_object *svff_store_get_assignment_class(struct svff_store *s, const char *vf) {
        return get_class(svff_store_assignments(s), vf);
}

int svff_store_set_assignment_class(struct svff_store *s, const char *vf, struct json_object *cls) {
        return set_class(svff_store_assignments(s), vf, cls);
}

void svff_store_remove_vf(struct svff_store *s, const char *vf) {
        if (s && vf)
                json_object_object_del(svff_store_vfs(s), vf);
}

struct json_object *svff_store_journal(struct svff_store *s) {
        return section(s, "journal");
}

void svff_store_set_journal(struct svff_store *s, struct json_object *op) {
        if (!s) {
                if (op)
                        json_object_put(op);
                return;
        }
        /* replacing an existing key cannot fail in json-c; a new key can
         * only fail on allocation, and then op must not leak */
        if (json_object_object_add(s->doc, "journal", op) < 0 && op)
                json_object_put(op);
}

static const char *const assign_states[] = {
        [SVFF_ASSIGN_ATTACHED] = "attached",
        [SVFF_ASSIGN_PAUSED] = "held",
        [SVFF_ASSIGN_DETACHING] = "detaching",
};

static const char *const pause_modes[] = {
        [SVFF_PAUSE_NONE] = NULL,
        [SVFF_PAUSE_NATIVE] = "native",
        [SVFF_PAUSE_DETACH] = "detach",
};

static const char *const intents[] = {
        [SVFF_INTENT_NONE] = NULL,
        [SVFF_INTENT_ATTACH] = "attach",
        [SVFF_INTENT_DETACH] = "detach",
        [SVFF_INTENT_PAUSE] = "pause",
        [SVFF_INTENT_UNPAUSE] = "unpause",
};

const char *svff_assign_intent_to_string(enum svff_assign_intent i) {
        return (size_t) i < ELEMENTSOF(intents) ? intents[i] : NULL;
}

int svff_assign_intent_from_string(const char *str) {
        if (!str)
                return SVFF_INTENT_NONE;
        for (size_t i = 1; i < ELEMENTSOF(intents); i++)
                if (streq(str, intents[i]))
                        return (int) i;
        return -EINVAL;
}

const char *svff_assign_state_to_string(enum svff_assign_state st) {
        return (size_t) st < ELEMENTSOF(assign_states) ? assign_states[st] : NULL;
}

int svff_assign_state_from_string(const char *str) {
        for (size_t i = 0; str && i < ELEMENTSOF(assign_states); i++)
                if (streq(str, assign_states[i]))
                        return (int) i;
        /* The old spelling of "held", in stores and journals written
         * before the rename: read for a release, never written. */
        if (str && streq(str, "paused"))
                return SVFF_ASSIGN_PAUSED;
        return -EINVAL;
}

const char *svff_pause_mode_to_string(enum svff_pause_mode m) {
        return (size_t) m < ELEMENTSOF(pause_modes) ? pause_modes[m] : NULL;
}

int svff_pause_mode_from_string(const char *str) {
        if (!str)
                return SVFF_PAUSE_NONE;
        for (size_t i = 1; i < ELEMENTSOF(pause_modes); i++)
                if (streq(str, pause_modes[i]))
                        return (int) i;
        return -EINVAL;
}

int svff_store_set_assignment(struct svff_store *s, const char *vf, const struct svff_assignment *a) {
        const char *mode, *intent;
        struct json_object *rec;
        int r;

        if (!s || !vf || !*vf || !a || !*a->uuid || !svff_assign_state_to_string(a->state) ||
            (a->intent != SVFF_INTENT_NONE && !svff_assign_intent_to_string(a->intent)))
                return -EINVAL;
        rec = record(svff_store_assignments(s), vf);
        if (!rec)
                return -ENOMEM;
        mode = svff_pause_mode_to_string(a->pause_mode);
        intent = svff_assign_intent_to_string(a->intent);
        r = put(rec, "uuid", json_object_new_string(a->uuid), false);
        if (r >= 0)
                r = put(rec, "domain", json_object_new_string(a->domain), false);
        if (r >= 0)
                r = put(rec, "guest_address",
                        *a->guest_address ? json_object_new_string(a->guest_address) : NULL,
                        !*a->guest_address);
        if (r >= 0)
                r = put(rec, "alias", json_object_new_string(a->alias), false);
        if (r >= 0)
                r = put(rec, "live", json_object_new_boolean(a->live), false);
        if (r >= 0)
                r = put(rec, "config", json_object_new_boolean(a->config), false);
        if (r >= 0)
                r = put(rec, "state", json_object_new_string(svff_assign_state_to_string(a->state)), false);
        if (r >= 0)
                r = put(rec, "pause_mode", mode ? json_object_new_string(mode) : NULL, !mode);
        if (r >= 0)
                r = put(rec, "intent", intent ? json_object_new_string(intent) : NULL, !intent);
        if (r >= 0 && *a->failover.standby) {
                struct json_object *fo = json_object_new_object();

                r = fo ? put(fo, "standby", json_object_new_string(a->failover.standby), false) : -ENOMEM;
                if (r >= 0)
                        r = put(fo, "mac", json_object_new_string(a->failover.mac), false);
                if (r >= 0)
                        r = put(rec, "failover", fo, false);
                else
                        json_object_put(fo);
        } else if (r >= 0)
                json_object_object_del(rec, "failover");
        return r;
}

static int copy_field(struct json_object *rec, const char *key, bool nullable, char *buf, size_t n) {
        const char *v = NULL;
        int r;

        r = nullable ? svff_json_get_string_or_null(rec, key, &v) : svff_json_get_string(rec, key, &v);
        if (r < 0 || (v && strlen(v) >= n))
                return -EINVAL;
        snprintf(buf, n, "%s", v ?: "");
        return 0;
}

int svff_store_get_assignment(struct svff_store *s, const char *vf, struct svff_assignment *ret) {
        struct svff_assignment a = {};
        struct json_object *rec;
        const char *st, *mode = NULL, *intent = NULL;
        struct json_object *iv;
        int state, pm, in;

        if (!s || !vf)
                return -EINVAL;
        if (!json_object_object_get_ex(svff_store_assignments(s), vf, &rec))
                return 0;
        if (copy_field(rec, "uuid", false, a.uuid, sizeof(a.uuid)) < 0 ||
            copy_field(rec, "domain", false, a.domain, sizeof(a.domain)) < 0 ||
            copy_field(rec, "guest_address", true, a.guest_address, sizeof(a.guest_address)) < 0 ||
            copy_field(rec, "alias", false, a.alias, sizeof(a.alias)) < 0 ||
            svff_json_get_bool(rec, "live", &a.live) < 0 ||
            svff_json_get_bool(rec, "config", &a.config) < 0 ||
            svff_json_get_string(rec, "state", &st) < 0 ||
            svff_json_get_string_or_null(rec, "pause_mode", &mode) < 0)
                return -EINVAL;
        /* absent (a record written before intents) is none */
        if (json_object_object_get_ex(rec, "intent", &iv) && iv) {
                if (!json_object_is_type(iv, json_type_string))
                        return -EINVAL;
                intent = json_object_get_string(iv);
        }
        /* absent: a plain hostdev */
        if (json_object_object_get_ex(rec, "failover", &iv) && iv &&
            (copy_field(iv, "standby", false, a.failover.standby, sizeof(a.failover.standby)) < 0 ||
             copy_field(iv, "mac", false, a.failover.mac, sizeof(a.failover.mac)) < 0))
                return -EINVAL;
        state = svff_assign_state_from_string(st);
        pm = svff_pause_mode_from_string(mode);
        in = svff_assign_intent_from_string(intent);
        if (state < 0 || pm < 0 || in < 0)
                return -EINVAL;
        a.state = (enum svff_assign_state) state;
        a.pause_mode = (enum svff_pause_mode) pm;
        a.intent = (enum svff_assign_intent) in;
        if (ret)
                *ret = a;
        return 1;
}

void svff_store_remove_assignment(struct svff_store *s, const char *vf) {
        if (s && vf)
                json_object_object_del(svff_store_assignments(s), vf);
}

bool svff_assignment_resolve(struct svff_assignment *a, bool in_live, bool in_config, const char *alias,
                             const char *guest_address) {
        enum svff_assign_intent in = a->intent;
        bool present = in_live || in_config;

        a->intent = SVFF_INTENT_NONE;
        switch (in) {
        case SVFF_INTENT_NONE:
                return true;
        case SVFF_INTENT_ATTACH:
        case SVFF_INTENT_UNPAUSE:
                if (!present) {
                        if (in == SVFF_INTENT_ATTACH)
                                return false;
                        a->state = SVFF_ASSIGN_PAUSED;  /* still detached, address reserved */
                        return true;
                }
                a->state = SVFF_ASSIGN_ATTACHED;
                a->pause_mode = SVFF_PAUSE_NONE;
                a->live = in_live;
                a->config = in_config;
                if (alias && *alias)
                        snprintf(a->alias, sizeof(a->alias), "%s", alias);
                if (guest_address && *guest_address)
                        snprintf(a->guest_address, sizeof(a->guest_address), "%s", guest_address);
                return true;
        case SVFF_INTENT_DETACH:
        case SVFF_INTENT_PAUSE:
                if (!present) {
                        if (in == SVFF_INTENT_DETACH)
                                return false;
                        /* detached with the reservation: live and config
                         * say where it goes back */
                        a->state = SVFF_ASSIGN_PAUSED;
                        a->pause_mode = SVFF_PAUSE_DETACH;
                        return true;
                }
                if (in_live) {
                        a->state = SVFF_ASSIGN_DETACHING;
                        if (in == SVFF_INTENT_PAUSE)
                                a->pause_mode = SVFF_PAUSE_DETACH;
                }
                a->live = in_live;
                a->config = in_config;
                return true;
        }
        return true;
}

int svff_store_domain_event(struct svff_store *s, const char *uuid, const char *name,
                            enum svff_domain_event ev, svff_assign_change_fn fn, void *userdata) {
        _cleanup_strv_free_ char **vfs = NULL;
        size_t n = 0;
        int changed = 0;

        if (!s || !uuid)
                return -EINVAL;
        /* Collect first: the loop below edits the section. */
        json_object_object_foreach(svff_store_assignments(s), key, rec) {
                const char *u;
                char **nv;

                if (svff_json_get_string(rec, "uuid", &u) < 0 || !streq(u, uuid))
                        continue;
                nv = realloc(vfs, (n + 2) * sizeof(char *));
                if (!nv)
                        return -ENOMEM;
                vfs = nv;
                vfs[n] = strdup(key);
                if (!vfs[n])
                        return -ENOMEM;
                vfs[++n] = NULL;
        }

        for (size_t i = 0; i < n; i++) {
                struct svff_assignment a;
                enum svff_assign_outcome o;

                if (svff_store_get_assignment(s, vfs[i], &a) <= 0 || a.intent != SVFF_INTENT_NONE)
                        continue;
                if (name)
                        snprintf(a.domain, sizeof(a.domain), "%s", name);
                if (ev == SVFF_DOMAIN_STARTED) {
                        if (!a.config || a.state != SVFF_ASSIGN_ATTACHED || a.live)
                                continue;
                        a.live = true;
                        o = SVFF_ASSIGN_LIVE_AGAIN;
                } else {
                        if (ev == SVFF_DOMAIN_UNDEFINED)
                                a.config = false;
                        else
                                a.live = false;
                        o = a.config || a.live ? SVFF_ASSIGN_KEPT
                            : ev == SVFF_DOMAIN_UNDEFINED ? SVFF_ASSIGN_RELEASED : SVFF_ASSIGN_CLOSED;
                }
                if (o == SVFF_ASSIGN_CLOSED || o == SVFF_ASSIGN_RELEASED)
                        svff_store_remove_assignment(s, vfs[i]);
                else if (svff_store_set_assignment(s, vfs[i], &a) < 0)
                        return -ENOMEM;
                changed++;
                if (fn)
                        fn(vfs[i], &a, o, userdata);
        }
        return changed;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "utf8.h"

static inline void json_tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

static bool is_json_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

static bool is_clamped_int(struct json_object *v);
static bool int_clamped(struct json_object *v);

/* Calls fn on every number in v (recursion bounded by the parser's
 * nesting limit); true as soon as fn does. */
static bool any_number(struct json_object *v, bool (*fn)(struct json_object *v)) {
        switch (json_object_get_type(v)) {
        case json_type_int:
        case json_type_double:
                return fn(v);
        case json_type_array:
                for (size_t i = 0, n = json_object_array_length(v); i < n; i++)
                        if (any_number(json_object_array_get_idx(v, i), fn))
                                return true;
                return false;
        case json_type_object: {
                json_object_object_foreach(v, key, val) {
                        (void) key;
                        if (any_number(val, fn))
                                return true;
                }
                return false;
        }
        default:
                return false;
        }
}

static bool is_nonfinite(struct json_object *v) {
        return json_object_is_type(v, json_type_double) && !isfinite(json_object_get_double(v));
}

bool svff_json_has_clamped_int(struct json_object *v) {
        return any_number(v, is_clamped_int);
}

int svff_json_parse(const char *data, size_t len, int depth_max, struct json_object **ret,
                    const char **ret_error) {
        return svff_json_parse_at(data, len, depth_max, ret, ret_error, NULL);
}

int svff_json_parse_at(const char *data, size_t len, int depth_max, struct json_object **ret,
                       const char **ret_error, size_t *ret_offset) {
        size_t at = 0;
        _cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
        struct json_object *v;
        const char *reason;

        if (!data) {
                if (len > 0)
                        return -EINVAL;
                data = "";
        }

        if (memchr(data, 0, len)) {
                at = (size_t) ((const char *) memchr(data, 0, len) - data);
                reason = "Message contains a NUL byte";
                goto bad;
        }

        if (len > INT_MAX) {
                reason = "JSON text too large";
                goto bad;
        }

        tok = json_tokener_new_ex(depth_max);
        if (!tok)
                return -ENOMEM;
        json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);

        v = json_tokener_parse_ex(tok, data, (int) len);
        at = json_tokener_get_parse_end(tok);
        if (!v && json_tokener_get_error(tok) == json_tokener_continue) {
                /* a top-level scalar ("123") only ends at a delimiter:
                 * feed the terminator; incomplete containers stay errors
                 * (at the end of the text) */
                v = json_tokener_parse_ex(tok, "", 1);
                at = len;
        }
        else if (v && json_tokener_get_parse_end(tok) < len) {
                /* json-c's strict mode already refuses trailing bytes;
                 * this keeps us honest should that ever change */
                for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
                        if (!is_json_space(data[i])) {
                                json_object_put(v);
                                at = i;
                                reason = "Trailing data after the JSON value";
                                goto bad;
                        }
        }

        if (!v) {
                enum json_tokener_error e = json_tokener_get_error(tok);

                /* "null" parses to NULL with success */
                if (e == json_tokener_success) {
                        *ret = NULL;
                        return 0;
                }
                reason = e == json_tokener_error_depth ? "JSON nested too deeply"
                                                       : e == json_tokener_continue ? "unexpected end of file"
                                                                                    : json_tokener_error_desc(e);
                goto bad;
        }

        /* json-c's strict mode takes NaN and Infinity, which JSON does not
         * have, and makes numbers beyond a double's range infinite: none
         * of them survives a round trip (NaN != NaN), so refuse them. */
        if (any_number(v, is_nonfinite)) {
                json_object_put(v);
                reason = "Number is NaN, Infinity or beyond a double's range";
                goto bad;
        }

        *ret = v;
        return 0;

bad:
        if (ret_error)
                *ret_error = reason;
        if (ret_offset)
                *ret_offset = at;
        return -EBADMSG;
}

/* ---- key positions and duplicates ---- */

struct scan_key {
        const char *text;       /* into the document, not NUL-terminated */
        size_t len;
        size_t offset;
};

struct scan_level {
        bool object;
        char *key;              /* the member being read (NUL-terminated), "[]" in an array */
        struct scan_key *keys;
        size_t n_keys, cap;
};

static int cmp_scan_key(const void *a, const void *b) {
        const struct scan_key *x = a, *y = b;
        int c;

        c = MIN(x->len, y->len) > 0 ? memcmp(x->text, y->text, MIN(x->len, y->len)) : 0;
        if (c != 0)
                return c;
        if (x->len != y->len)
                return x->len < y->len ? -1 : 1;
        return x->offset < y->offset ? -1 : x->offset > y->offset;
}

/* The second occurrence of a key given twice in l, or SIZE_MAX. */
static size_t level_duplicate(struct scan_level *l) {
        size_t dup = SIZE_MAX;

        if (l->n_keys < 2)
                return dup;
        qsort(l->keys, l->n_keys, sizeof(*l->keys), cmp_scan_key);
        for (size_t i = 1; i < l->n_keys; i++)
                if (l->keys[i].len == l->keys[i - 1].len &&
                    (l->keys[i].len == 0 || memcmp(l->keys[i].text, l->keys[i - 1].text, l->keys[i].len) == 0))
                        dup = MIN(dup, l->keys[i].offset);
        return dup;
}

int svff_json_scan_keys(const char *data, size_t len, svff_json_key_fn fn, void *userdata,
                        size_t *ret_dup_offset) {
        struct scan_level levels[64] = {};
        const char *path[ELEMENTSOF(levels)];
        size_t depth = 0;
        int r = 0;

        for (size_t i = 0; i < len && r >= 0; i++) {
                char c = data[i];

                if (c == '{' || c == '[') {
                        if (depth >= ELEMENTSOF(levels)) {
                                r = -E2BIG;
                                break;
                        }
                        levels[depth].object = c == '{';
                        levels[depth].n_keys = 0;
                        free(levels[depth].key);
                        levels[depth].key = c == '[' ? strdup("[]") : NULL;
                        if (c == '[' && !levels[depth].key) {
                                r = -ENOMEM;
                                break;
                        }
                        path[depth] = levels[depth].key;
                        depth++;
                } else if (c == '}' || c == ']') {
                        if (depth == 0)
                                break;
                        depth--;
                        if (levels[depth].object) {
                                size_t dup = level_duplicate(&levels[depth]);

                                if (dup != SIZE_MAX) {
                                        if (ret_dup_offset)
                                                *ret_dup_offset = dup;
                                        r = -ENOTUNIQ;
                                }
                        }
                } else if (c == '"' || c == '\'') {
                        /* json-c's strict mode lets single quotes through */
                        size_t start = i, j = i + 1, k;

                        while (j < len && data[j] != c)
                                j += data[j] == '\\' ? 2 : 1;
                        if (j >= len)
                                break;
                        i = j;
                        for (k = j + 1; k < len && is_json_space(data[k]); k++)
                                ;
                        if (depth > 0 && levels[depth - 1].object && k < len && data[k] == ':') {
                                struct scan_level *l = &levels[depth - 1];

                                if (l->n_keys == l->cap) {
                                        size_t cap = l->cap ? l->cap * 2 : 16;
                                        struct scan_key *n = realloc(l->keys, cap * sizeof(*n));

                                        if (!n) {
                                                r = -ENOMEM;
                                                break;
                                        }
                                        l->keys = n;
                                        l->cap = cap;
                                }
                                l->keys[l->n_keys++] = (struct scan_key) {
                                        .text = data + start + 1, .len = j - start - 1, .offset = start,
                                };
                                free(l->key);
                                l->key = strndup(data + start + 1, j - start - 1);
                                if (!l->key) {
                                        r = -ENOMEM;
                                        break;
                                }
                                path[depth - 1] = l->key;
                                if (fn)
                                        r = fn(path, depth - 1, l->key, start, userdata);
                        }
                }
        }
        for (size_t i = 0; i < ELEMENTSOF(levels); i++) {
                free(levels[i].key);
                free(levels[i].keys);
        }
        return r;
}

/* json-c parses an integer literal beyond the 64-bit range as the end of
 * the range it passed (strtoll/strtoull's clamping), without an error:
 * those two values cannot be told from an overflow, so they count as one. */
static bool is_clamped_int(struct json_object *v) {
        if (!json_object_is_type(v, json_type_int))
                return false;
        return int_clamped(v);
}

static bool int_clamped(struct json_object *v) {
        int64_t i = json_object_get_int64(v);

        /* json_object_get_int64() gives INT64_MAX for values stored as
         * uint64 above it */
        return i == INT64_MIN || (i == INT64_MAX && json_object_get_uint64(v) == UINT64_MAX);
}

/* 0 when v is an integer literal json-c did not clamp, else why the
 * value is no integer here: a non-integer number of a magnitude no
 * 64-bit integer holds is -ERANGE (no caller can tell it from an
 * overflow), any other type -EINVAL. */
static int int_check(struct json_object *v) {
        switch (json_object_get_type(v)) {
        case json_type_int:
                return int_clamped(v) ? -ERANGE : 0;
        case json_type_double: {
                double d = json_object_get_double(v);
                return !isnan(d) && fabs(d) >= 0x1p63 ? -ERANGE : -EINVAL;
        }
        default:
                return -EINVAL;
        }
}

int svff_json_to_i64(struct json_object *v, int64_t *ret) {
        int64_t i;
        int r;

        r = int_check(v);
        if (r < 0)
                return r;
        i = json_object_get_int64(v);
        if (i == INT64_MAX && json_object_get_uint64(v) > (uint64_t) INT64_MAX)
                return -ERANGE;
        *ret = i;
        return 0;
}

int svff_json_to_u64(struct json_object *v, uint64_t *ret) {
        int r;

        r = int_check(v);
        if (r < 0)
                return r;
        if (json_object_get_int64(v) < 0)
                return -ERANGE;
        *ret = json_object_get_uint64(v);
        return 0;
}

int svff_json_to_unsigned(struct json_object *v, unsigned *ret) {
        uint64_t u;
        int r;

        r = svff_json_to_u64(v, &u);
        if (r < 0)
                return r;
        if (u > UINT_MAX)
                return -ERANGE;
        *ret = (unsigned) u;
        return 0;
}

bool svff_json_is_clean_string(struct json_object *v) {
        return json_object_is_type(v, json_type_string) &&
               strlen(json_object_get_string(v)) == (size_t) json_object_get_string_len(v);
}

static bool is_boolean(struct json_object *v) {
        return json_object_is_type(v, json_type_boolean);
}

static bool is_object(struct json_object *v) {
        return json_object_is_type(v, json_type_object);
}

/* The one lookup behind the getters: the field key of obj (borrowed),
 * checked with valid when given (a JSON null passes as NULL when
 * null_ok). *ret is untouched on failure. */
static int get_field(struct json_object *obj, const char *key, bool (*valid)(struct json_object *v),
                     bool null_ok, struct json_object **ret) {
        struct json_object *v;

        if (!is_object(obj) || !key)
                return -EINVAL;
        if (!json_object_object_get_ex(obj, key, &v))
                return -ENOENT;
        if (valid && !(null_ok && !v) && !valid(v))
                return -EINVAL;
        *ret = v;
        return 0;
}

/* The integer getters: any JSON type is looked up, the conversion
 * refuses the wrong ones with -EINVAL. */
#define DEFINE_JSON_GET_INT(name, type)                                                 \
        int svff_json_get_##name(struct json_object *obj, const char *key, type *ret) { \
                struct json_object *v;                                                  \
                int r;                                                                  \
                                                                                        \
                r = get_field(obj, key, NULL, false, &v);                               \
                if (r < 0)                                                              \
                        return r;                                                       \
                return svff_json_to_##name(v, ret);                                     \
        }

DEFINE_JSON_GET_INT(u64, uint64_t)
DEFINE_JSON_GET_INT(i64, int64_t)
DEFINE_JSON_GET_INT(unsigned, unsigned)

int svff_json_get_bool(struct json_object *obj, const char *key, bool *ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, is_boolean, false, &v);
        if (r < 0)
                return r;
        *ret = json_object_get_boolean(v);
        return 0;
}

static int get_string(struct json_object *obj, const char *key, bool null_ok, const char **ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, svff_json_is_clean_string, null_ok, &v);
        if (r < 0)
                return r;
        *ret = v ? json_object_get_string(v) : NULL;
        return 0;
}

int svff_json_get_string(struct json_object *obj, const char *key, const char **ret) {
        return get_string(obj, key, false, ret);
}

int svff_json_get_string_or_null(struct json_object *obj, const char *key, const char **ret) {
        return get_string(obj, key, true, ret);
}

int svff_json_get_object(struct json_object *obj, const char *key, struct json_object **ret) {
        return get_field(obj, key, is_object, false, ret);
}

int svff_json_format(struct json_object *v, int flags, char **ret, size_t *ret_len) {
        const char *s;
        size_t n;
        char *copy;

        s = json_object_to_json_string_length(v, flags | JSON_C_TO_STRING_NOSLASHESCAPE, &n);
        if (!s)
                return -ENOMEM;
        copy = malloc(n + 1);
        if (!copy)
                return -ENOMEM;
        memcpy(copy, s, n + 1);
        *ret = copy;
        if (ret_len)
                *ret_len = n;
        return 0;
}

struct json_object *svff_json_copy(struct json_object *o) {
        struct json_object *c = NULL;

        if (!o || json_object_deep_copy(o, &c, NULL) < 0)
                return NULL;
        return c;
}

struct json_object *svff_json_new_text(const char *s) {
        _cleanup_free_ char *v = svff_utf8_dup_valid(s);

        return v ? json_object_new_string(v) : NULL;
}

char *svff_json_key_snake(const char *key) {
        char *s = strdup(key);

        for (char *c = s; c && *c; c++)
                if (*c == '-')
                        *c = '_';
        return s;
}

int svff_json_snake_keys(struct json_object *v, struct json_object **ret, const char **ret_key) {
        struct json_object *n;
        int r;

        if (json_object_is_type(v, json_type_array)) {
                size_t len = json_object_array_length(v);

                n = json_object_new_array_ext((int) len);
                if (!n)
                        return -ENOMEM;
                for (size_t i = 0; i < len; i++) {
                        struct json_object *e = NULL;

                        r = svff_json_snake_keys(json_object_array_get_idx(v, i), &e, ret_key);
                        if (r >= 0 && json_object_array_add(n, e) < 0) {
                                json_object_put(e);
                                r = -ENOMEM;
                        }
                        if (r < 0) {
                                json_object_put(n);
                                return r;
                        }
                }
                *ret = n;
                return 0;
        }
        if (!json_object_is_type(v, json_type_object)) {
                *ret = json_object_get(v);
                return 0;
        }
        n = json_object_new_object();
        if (!n)
                return -ENOMEM;
        json_object_object_foreach(v, key, val) {
                _cleanup_free_ char *snake = svff_json_key_snake(key);
                struct json_object *e = NULL;

                if (!snake) {
                        json_object_put(n);
                        return -ENOMEM;
                }
                /* The two spellings of one key: which one is meant is
                 * anyone's guess. */
                if (!streq(snake, key) && json_object_object_get_ex(v, snake, NULL)) {
                        if (ret_key)
                                *ret_key = key;
                        json_object_put(n);
                        return -ENOTUNIQ;
                }
                r = svff_json_snake_keys(val, &e, ret_key);
                if (r >= 0 && json_object_object_add(n, snake, e) < 0) {
                        json_object_put(e);
                        r = -ENOMEM;
                }
                if (r < 0) {
                        json_object_put(n);
                        return r;
                }
        }
        *ret = n;
        return 0;
}

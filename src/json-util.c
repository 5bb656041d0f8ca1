/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"

static inline void json_tokener_freep(struct json_tokener **t) {
        if (*t)
                json_tokener_free(*t);
}

static bool is_digit(char c) {
        return c >= '0' && c <= '9';
}

static bool is_json_space(char c) {
        return c == ' ' || c == '\t' || c == '\n' || c == '\r';
}

/* Whether the integer literal p[0, n) ("-"? digits) lies outside
 * [INT64_MIN, UINT64_MAX]. */
static bool int_literal_overflows(const char *p, size_t n) {
        bool neg = p[0] == '-';
        const char *limit = neg ? "9223372036854775808" : "18446744073709551615";
        size_t limit_len = strlen(limit);

        if (neg) {
                p++;
                n--;
        }
        /* strict JSON has no leading zeros, but be exact anyway */
        while (n > 1 && *p == '0') {
                p++;
                n--;
        }
        if (n != limit_len)
                return n > limit_len;
        return memcmp(p, limit, n) > 0;
}

/* Calls fn for each integer literal in data that json-c would clamp and
 * returns how many there are. The scan is lexical, which is exact for
 * strict JSON (outside strings there are only structure, literals and
 * numbers). It also refuses what json-c's strict mode lets through but
 * RFC 8259 does not: single-quoted keys, NaN and Infinity. Other invalid
 * input is left to the tokener. */
static int scan(const char *data, size_t len, void (*fn)(size_t end, void *userdata),
                void *userdata) {
        static const char *const literals[] = { "true", "false", "null" };
        bool in_string = false;
        int n = 0;

        for (size_t i = 0; i < len;) {
                char c = data[i];

                if (in_string) {
                        if (c == '\\')
                                i += 2;
                        else {
                                if (c == '"')
                                        in_string = false;
                                i++;
                        }
                        continue;
                }

                if (c == '"') {
                        in_string = true;
                        i++;
                        continue;
                }

                if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
                        size_t j = i;
                        bool known = false;

                        while (j < len && ((data[j] >= 'a' && data[j] <= 'z') ||
                                           (data[j] >= 'A' && data[j] <= 'Z')))
                                j++;
                        for (size_t k = 0; k < ELEMENTSOF(literals); k++)
                                if (j - i == strlen(literals[k]) && memcmp(data + i, literals[k], j - i) == 0)
                                        known = true;
                        if (!known)
                                return -EBADMSG;
                        i = j;
                        continue;
                }

                if (c == '\'')
                        return -EBADMSG;

                if (c != '-' && !is_digit(c)) {
                        i++;
                        continue;
                }

                size_t j = i;
                bool integer = true, digits = false;
                for (; j < len; j++) {
                        char d = data[j];
                        if (is_digit(d))
                                digits = true;
                        else if (d == '.' || d == 'e' || d == 'E' || d == '+' || (d == '-' && j > i))
                                integer = false;
                        else if (d != '-')
                                break;
                }
                if (integer && digits && int_literal_overflows(data + i, j - i)) {
                        if (fn)
                                fn(j, userdata);
                        if (n == INT_MAX)
                                return -EBADMSG;
                        n++;
                }
                i = j;
        }

        return n;
}

struct widen {
        const char *data;
        char *out;
        size_t copied;  /* bytes of data copied so far */
        size_t out_len;
};

static void widen_one(size_t end, void *userdata) {
        struct widen *w = userdata;

        memcpy(w->out + w->out_len, w->data + w->copied, end - w->copied);
        w->out_len += end - w->copied;
        /* a fraction makes json-c keep the literal as a double */
        memcpy(w->out + w->out_len, ".0", 2);
        w->out_len += 2;
        w->copied = end;
}

int svff_json_parse(const char *data, size_t len, int depth_max, struct json_object **ret,
                    const char **ret_error) {
        _cleanup_(json_tokener_freep) struct json_tokener *tok = NULL;
        _cleanup_free_ char *widened = NULL;
        struct json_object *v;
        const char *reason;
        size_t n;
        int r;

        if (!data) {
                if (len > 0)
                        return -EINVAL;
                data = "";
        }

        if (memchr(data, 0, len)) {
                reason = "Message contains a NUL byte";
                goto bad;
        }

        r = scan(data, len, NULL, NULL);
        if (r < 0) {
                reason = "Not strict JSON";
                goto bad;
        }
        n = (size_t) r;
        if (n > 0) {
                struct widen w = { .data = data };

                if (n > (SIZE_MAX - len) / 2)
                        return -ENOMEM;
                w.out = malloc(len + 2 * n);
                if (!w.out)
                        return -ENOMEM;
                (void) scan(data, len, widen_one, &w);
                memcpy(w.out + w.out_len, data + w.copied, len - w.copied);
                len = w.out_len + len - w.copied;
                data = widened = w.out;
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
        if (!v && json_tokener_get_error(tok) == json_tokener_continue)
                /* a top-level scalar ("123") only ends at a delimiter:
                 * feed the terminator; incomplete containers stay errors */
                v = json_tokener_parse_ex(tok, "", 1);
        else if (v && json_tokener_get_parse_end(tok) < len) {
                /* json-c's strict mode already refuses trailing bytes;
                 * this keeps us honest should that ever change */
                for (size_t i = json_tokener_get_parse_end(tok); i < len; i++)
                        if (!is_json_space(data[i])) {
                                json_object_put(v);
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
                                                       : json_tokener_error_desc(e);
                goto bad;
        }

        *ret = v;
        return 0;

bad:
        if (ret_error)
                *ret_error = reason;
        return -EBADMSG;
}

int svff_json_to_i64(struct json_object *v, int64_t *ret) {
        int64_t i;

        switch (json_object_get_type(v)) {
        case json_type_int:
                i = json_object_get_int64(v);
                /* json-c returns INT64_MAX for values stored as uint64 */
                if (i == INT64_MAX && json_object_get_uint64(v) > (uint64_t) INT64_MAX)
                        return -ERANGE;
                *ret = i;
                return 0;
        case json_type_double: {
                double d = json_object_get_double(v);
                return !isnan(d) && fabs(d) >= 0x1p63 ? -ERANGE : -EINVAL;
        }
        default:
                return -EINVAL;
        }
}

int svff_json_to_u64(struct json_object *v, uint64_t *ret) {
        switch (json_object_get_type(v)) {
        case json_type_int:
                if (json_object_get_int64(v) < 0)
                        return -ERANGE;
                *ret = json_object_get_uint64(v);
                return 0;
        case json_type_double: {
                double d = json_object_get_double(v);
                return !isnan(d) && fabs(d) >= 0x1p63 ? -ERANGE : -EINVAL;
        }
        default:
                return -EINVAL;
        }
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

static int get_field(struct json_object *obj, const char *key, struct json_object **ret) {
        if (!json_object_is_type(obj, json_type_object) || !key)
                return -EINVAL;
        if (!json_object_object_get_ex(obj, key, ret))
                return -ENOENT;
        return 0;
}

int svff_json_get_u64(struct json_object *obj, const char *key, uint64_t *ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        return svff_json_to_u64(v, ret);
}

int svff_json_get_i64(struct json_object *obj, const char *key, int64_t *ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        return svff_json_to_i64(v, ret);
}

int svff_json_get_unsigned(struct json_object *obj, const char *key, unsigned *ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        return svff_json_to_unsigned(v, ret);
}

int svff_json_get_bool(struct json_object *obj, const char *key, bool *ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        if (!json_object_is_type(v, json_type_boolean))
                return -EINVAL;
        *ret = json_object_get_boolean(v);
        return 0;
}

int svff_json_get_string(struct json_object *obj, const char *key, const char **ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        if (!svff_json_is_clean_string(v))
                return -EINVAL;
        *ret = json_object_get_string(v);
        return 0;
}

int svff_json_get_string_or_null(struct json_object *obj, const char *key, const char **ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        if (!v) {
                *ret = NULL;
                return 0;
        }
        if (!svff_json_is_clean_string(v))
                return -EINVAL;
        *ret = json_object_get_string(v);
        return 0;
}

int svff_json_get_object(struct json_object *obj, const char *key, struct json_object **ret) {
        struct json_object *v;
        int r;

        r = get_field(obj, key, &v);
        if (r < 0)
                return r;
        if (!json_object_is_type(v, json_type_object))
                return -EINVAL;
        *ret = v;
        return 0;
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

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Strict JSON parsing and typed field access on top of json-c, shared by
 * the varlink codec, the store and the daemon's parameter checks.
 *
 * json-c (0.16) parses an integer literal outside the 64-bit range as
 * INT64_MIN or UINT64_MAX without telling anyone, so 18446744073709551616
 * would read as 18446744073709551615. The integer getters below report
 * those two values as -ERANGE, which lets a caller name the offending
 * parameter; no svff field needs either. (json-c 0.17 and later refuse
 * such literals in strict mode: svff_json_parse() then fails.) */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <json-c/json.h>

static inline void json_object_putp(struct json_object **o) {
        if (*o)
                json_object_put(*o);
}

/* Parses exactly one JSON value from data[0, len) with json-c's strict
 * mode (no comments, no trailing commas, no leading zeros; it does let
 * single-quoted keys through), no NaN, Infinity or number beyond a
 * double's range (json-c takes those; they do not survive a round
 * trip), valid UTF-8, nesting at most depth_max levels
 * (json-c's counting: depth_max empty containers, or a scalar inside
 * depth_max - 1 containers), nothing but whitespace after the value and
 * no NUL byte anywhere.
 * Returns 0 and a new reference in *ret (NULL for a top-level "null"),
 * -EBADMSG for anything else
 * (*ret_error, if non-NULL, then gets a static reason), -ENOMEM. */
int svff_json_parse(const char *data, size_t len, int depth_max, struct json_object **ret,
                    const char **ret_error);

/* The same, and on -EBADMSG *ret_offset (if non-NULL) gets the byte
 * offset where parsing stopped, for a line number. */
int svff_json_parse_at(const char *data, size_t len, int depth_max, struct json_object **ret,
                       const char **ret_error, size_t *ret_offset);

/* Walks a text svff_json_parse() accepted and calls fn(path, depth, key,
 * offset, userdata) for every member of every object, in document order:
 * path[0..depth) are the keys of the enclosing members ("[]" for an
 * array element), key the member's own (raw, between its quotes), offset
 * where its opening quote is. json-c keeps no positions and takes the
 * last of duplicate keys silently; this gives both. A key given twice in
 * one object is -ENOTUNIQ with *ret_dup_offset at its second
 * occurrence; fn's negative return stops the walk and is returned. At
 * most 64 levels (-E2BIG); O(n log n) in the keys of one object. */
typedef int (*svff_json_key_fn)(const char *const *path, size_t depth, const char *key, size_t offset,
                                void *userdata);
int svff_json_scan_keys(const char *data, size_t len, svff_json_key_fn fn, void *userdata,
                        size_t *ret_dup_offset);

/* Whether v holds, at any depth, an integer json-c may have clamped
 * (INT64_MIN or UINT64_MAX, see above): for documents written back as
 * read, where a clamped value would silently change a stored fact. */
bool svff_json_has_clamped_int(struct json_object *v);

/* Value conversions. An integer literal is required: -EINVAL for other
 * types (including null and non-integer numbers such as 1.5 or 1e3),
 * -ERANGE when the literal does not fit the target type (negative for
 * the unsigned ones, beyond 64 bits, or above UINT_MAX for unsigned),
 * including INT64_MIN and UINT64_MAX themselves (see above).
 * Non-integer numbers of magnitude 2^63 or more (and Infinity) are
 * -ERANGE too: no caller can tell them from an overflow. */
int svff_json_to_u64(struct json_object *v, uint64_t *ret);
int svff_json_to_i64(struct json_object *v, int64_t *ret);
int svff_json_to_unsigned(struct json_object *v, unsigned *ret);

/* Field getters: obj must be an object. -ENOENT when key is absent,
 * -EINVAL when obj is not an object or the field has the wrong type,
 * -ERANGE as above. *ret is untouched on failure. Strings are borrowed
 * from obj and never contain a NUL byte (a "\u0000" escape is -EINVAL). */
int svff_json_get_u64(struct json_object *obj, const char *key, uint64_t *ret);
int svff_json_get_i64(struct json_object *obj, const char *key, int64_t *ret);
int svff_json_get_unsigned(struct json_object *obj, const char *key, unsigned *ret);
int svff_json_get_bool(struct json_object *obj, const char *key, bool *ret);
int svff_json_get_string(struct json_object *obj, const char *key, const char **ret);
/* Like svff_json_get_string(), but JSON null yields *ret = NULL. */
int svff_json_get_string_or_null(struct json_object *obj, const char *key, const char **ret);
/* The field as an object (borrowed). */
int svff_json_get_object(struct json_object *obj, const char *key, struct json_object **ret);

/* Whether v is a JSON string without embedded NUL bytes. */
bool svff_json_is_clean_string(struct json_object *v);

/* Serialises v with json-c's JSON_C_TO_STRING_* flags (plus "/" left
 * unescaped) into a malloc'd string; *ret_len (if non-NULL) counts the
 * bytes without the NUL. */
int svff_json_format(struct json_object *v, int flags, char **ret, size_t *ret_len);

/* A JSON string of text svff did not compose (a hook's output, a device's
 * strings, or a message quoting them), made valid UTF-8, every
 * ill-formed sequence U+FFFD (utf8.h): what the store's loader and a
 * varlink peer take. NULL for NULL or out of memory. */
struct json_object *svff_json_new_text(const char *s);

/* A deep copy of o (a new reference), or NULL for NULL or out of memory. */
struct json_object *svff_json_copy(struct json_object *o);

/* svff's JSON keys are snake_case, in svff.conf as over varlink and in
 * the store; earlier releases spelled the keys of svff.conf, of device
 * class settings and of recorded class state in kebab-case, and those
 * are still read for one release. */

/* key with every '-' made '_' (malloc'ed), or NULL on out of memory. */
char *svff_json_key_snake(const char *key);

/* A copy of v, a new reference in *ret, with every object key at any
 * depth in snake_case. An object that gives both spellings of one key
 * is -ENOTUNIQ, with *ret_key (if non-NULL) its kebab spelling,
 * borrowed from v; -ENOMEM. For settings and state whose keys are all
 * svff's own: never for objects keyed by names users choose. */
int svff_json_snake_keys(struct json_object *v, struct json_object **ret, const char **ret_key);

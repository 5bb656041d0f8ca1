/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <poll.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "json-util.h"
#include "macro.h"
#include "utf8.h"
#include "varlink.h"

/* Buffers grown for one big message are given back once drained, so an
 * idle connection does not pin a quarter megabyte. */
#define FRAMER_KEEP_ALLOC (64u * 1024u)
#define NAME_MAX_LEN 255u

static size_t framer_max(const struct svff_varlink_framer *f) {
        return f->max > 0 ? f->max : SVFF_VARLINK_MESSAGE_MAX;
}

int svff_varlink_framer_feed(struct svff_varlink_framer *f, const void *data, size_t n) {
        const char *nul;

        if (!f || (!data && n > 0))
                return -EINVAL;
        if (n == 0)
                return 0;

        /* Move what is left to the front before growing: consumed messages
         * are only skipped over by _next() to keep pipelined input linear. */
        if (f->start > 0 && f->alloc - f->len < n) {
                memmove(f->buf, f->buf + f->start, f->len - f->start);
                f->len -= f->start;
                f->start = 0;
        }

        if (n > SIZE_MAX - f->len)
                return -ENOMEM;
        if (f->len + n > f->alloc) {
                size_t a = f->alloc > 0 ? f->alloc : 4096;
                char *p;

                while (a < f->len + n)
                        a = a > SIZE_MAX / 2 ? f->len + n : a * 2;
                p = realloc(f->buf, a);
                if (!p)
                        return -ENOMEM;
                f->buf = p;
                f->alloc = a;
        }

        memcpy(f->buf + f->len, data, n);
        f->len += n;

        /* Only the new bytes are searched, so feeding a message byte by byte
         * stays linear. */
        nul = memrchr(data, 0, n);
        if (nul)
                f->tail = n - (size_t) (nul - (const char *) data) - 1;
        else
                f->tail += n;

        return f->tail > framer_max(f) ? -EMSGSIZE : 0;
}

int svff_varlink_framer_next(struct svff_varlink_framer *f, char **ret, size_t *ret_len) {
        size_t avail, mlen;
        const char *nul;
        char *m;

        if (!f || !ret)
                return -EINVAL;

        avail = f->len - f->start;
        if (f->scanned < avail)
                nul = memchr(f->buf + f->start + f->scanned, 0, avail - f->scanned);
        else
                nul = NULL;
        if (!nul) {
                f->scanned = avail;
                return avail > framer_max(f) ? -EMSGSIZE : 0;
        }

        mlen = (size_t) (nul - (f->buf + f->start));
        if (mlen > framer_max(f)) {
                f->scanned = mlen;
                return -EMSGSIZE;
        }

        m = malloc(mlen + 1);
        if (!m)
                return -ENOMEM;
        memcpy(m, f->buf + f->start, mlen + 1);

        f->start += mlen + 1;
        f->scanned = 0;
        if (f->start == f->len) {
                f->start = f->len = 0;
                if (f->alloc > FRAMER_KEEP_ALLOC) {
                        free(f->buf);
                        f->buf = NULL;
                        f->alloc = 0;
                }
        }

        *ret = m;
        if (ret_len)
                *ret_len = mlen;
        return 1;
}

void svff_varlink_framer_done(struct svff_varlink_framer *f) {
        if (!f)
                return;
        free(f->buf);
        *f = (struct svff_varlink_framer) { .max = f->max };
}

static bool ascii_alpha(char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z');
}

static bool ascii_alnum(char c) {
        return ascii_alpha(c) || (c >= '0' && c <= '9');
}

/* varlink interface names: [A-Za-z](-*[A-Za-z0-9])*(\.[A-Za-z0-9](-*[A-Za-z0-9])*)+ */
static bool interface_name_valid(const char *s, size_t n) {
        size_t dots = 0;

        if (n == 0 || n > NAME_MAX_LEN || !ascii_alpha(s[0]))
                return false;

        for (size_t i = 0; i < n; i++) {
                char c = s[i];

                if (c == '.') {
                        /* each label starts with an alphanumeric */
                        if (i + 1 >= n || !ascii_alnum(s[i + 1]))
                                return false;
                        dots++;
                } else if (c == '-') {
                        /* and dashes must be followed by an alphanumeric */
                        if (i + 1 >= n || s[i + 1] == '.')
                                return false;
                } else if (!ascii_alnum(c))
                        return false;
        }

        return dots > 0;
}

/* [A-Z][A-Za-z0-9]* */
static bool member_name_valid(const char *s) {
        if (!(s[0] >= 'A' && s[0] <= 'Z'))
                return false;
        for (const char *p = s + 1; *p; p++)
                if (!ascii_alnum(*p))
                        return false;
        return true;
}

/* "iface.Member": returns the length of the interface part, or 0. */
static size_t qualified_name_split(const char *name) {
        const char *dot;
        size_t n = strlen(name);

        if (n > NAME_MAX_LEN)
                return 0;
        dot = strrchr(name, '.');
        if (!dot || !member_name_valid(dot + 1) || !interface_name_valid(name, (size_t) (dot - name)))
                return 0;
        return (size_t) (dot - name);
}

int svff_varlink_call_parse(const char *msg, size_t len, struct svff_varlink_call *ret,
                            const char **ret_error) {
        _cleanup_(json_object_putp) struct json_object *v = NULL;
        _cleanup_free_ char *method = NULL, *interface = NULL;
        struct json_object *parameters = NULL;
        const char *reason = NULL;
        bool more = false, oneway = false;
        size_t ilen;
        int r;

        if (!msg || !ret)
                return -EINVAL;

        r = svff_json_parse(msg, len, SVFF_VARLINK_DEPTH_MAX, &v, &reason);
        if (r == -EBADMSG)
                goto fail;
        if (r < 0)
                return r;
        if (!json_object_is_type(v, json_type_object)) {
                r = -EBADMSG;
                reason = "Message is not a JSON object";
                goto fail;
        }

        r = -EPROTO;
        json_object_object_foreach(v, key, value) {
                if (streq(key, "method")) {
                        if (!svff_json_is_clean_string(value)) {
                                reason = "'method' is not a string";
                                goto fail;
                        }
                        ilen = qualified_name_split(json_object_get_string(value));
                        if (ilen == 0) {
                                reason = "'method' is not a valid 'interface.Method' name";
                                goto fail;
                        }
                        free(method);
                        method = strdup(json_object_get_string(value));
                        free(interface);
                        interface = method ? strndup(method, ilen) : NULL;
                        if (!interface)
                                return -ENOMEM;
                } else if (streq(key, "parameters")) {
                        /* null is what some clients send for "none" */
                        if (value && !json_object_is_type(value, json_type_object)) {
                                reason = "'parameters' is not an object";
                                goto fail;
                        }
                        parameters = value;
                } else if (streq(key, "more") || streq(key, "oneway")) {
                        /* ?bool in the method-call spec: null is false */
                        if (!value)
                                continue;
                        if (!json_object_is_type(value, json_type_boolean)) {
                                reason = key[0] == 'm' ? "'more' is not a boolean"
                                                       : "'oneway' is not a boolean";
                                goto fail;
                        }
                        *(key[0] == 'm' ? &more : &oneway) = json_object_get_boolean(value);
                } else if (streq(key, "upgrade")) {
                        if (!value)
                                continue;
                        if (!json_object_is_type(value, json_type_boolean)) {
                                reason = "'upgrade' is not a boolean";
                                goto fail;
                        }
                        if (json_object_get_boolean(value)) {
                                reason = "Connection upgrades are not supported";
                                goto fail;
                        }
                } else if (json_object_is_type(value, json_type_object) &&
                           interface_name_valid(key, strlen(key))) {
                        /* The method-call spec lets local vendor-specific
                         * extensions ride along, nested in an object named
                         * in reverse-domain notation: none is used here. */
                        continue;
                } else {
                        reason = "Unknown field in call";
                        goto fail;
                }
        }

        if (!method) {
                reason = "'method' missing";
                goto fail;
        }
        if (more && oneway) {
                reason = "'more' and 'oneway' are mutually exclusive";
                goto fail;
        }

        if (parameters)
                json_object_get(parameters);
        else {
                parameters = json_object_new_object();
                if (!parameters)
                        return -ENOMEM;
        }

        *ret = (struct svff_varlink_call) {
                .method = TAKE_PTR(method),
                .interface = TAKE_PTR(interface),
                .parameters = parameters,
                .more = more,
                .oneway = oneway,
        };
        ret->member = ret->method + strlen(ret->interface) + 1;
        return 0;

fail:
        if (ret_error)
                *ret_error = reason;
        return r;
}

void svff_varlink_call_done(struct svff_varlink_call *c) {
        if (!c)
                return;
        free(c->method);
        free(c->interface);
        if (c->parameters)
                json_object_put(c->parameters);
        *c = (struct svff_varlink_call) {};
}

/* Makes *s (n bytes, NUL-terminated) valid UTF-8, as JSON text must be
 * and as peers check: svffd puts strings into messages that it did not
 * compose in full (parameters cut with "%.64s", sysfs contents). A
 * character cut short is dropped, so the text reads as cut at the
 * character before; any other invalid sequence becomes U+FFFD. JSON
 * outside strings is ASCII, so this can work on the encoded text. */
static int utf8_make_valid(char **s, size_t *n) {
        char *out;
        int r;

        /* the common case: nothing to change, no copy */
        if (svff_utf8_valid_length(*s, *n) == *n)
                return 0;
        r = svff_utf8_make_valid(*s, *n, true, &out, n);
        if (r < 0)
                return r;
        free(*s);
        *s = out;
        return 0;
}

/* Adds parameters (borrowed; NULL: {}) to msg and serialises it with the
 * terminating NUL, as valid UTF-8; -EMSGSIZE over max bytes. */
static int encode(struct json_object *msg, struct json_object *parameters, size_t max,
                  char **ret, size_t *ret_len) {
        _cleanup_free_ char *s = NULL;
        size_t n;
        int r;

        if (parameters && !json_object_is_type(parameters, json_type_object))
                return -EINVAL;

        if (parameters)
                json_object_get(parameters);
        else {
                parameters = json_object_new_object();
                if (!parameters)
                        return -ENOMEM;
        }
        if (json_object_object_add(msg, "parameters", parameters) < 0) {
                json_object_put(parameters);
                return -ENOMEM;
        }

        r = svff_json_format(msg, JSON_C_TO_STRING_PLAIN, &s, &n);
        if (r < 0)
                return r;
        r = utf8_make_valid(&s, &n);
        if (r < 0)
                return r;
        /* the peer would refuse it; better to fail where the bug is */
        if (n > max)
                return -EMSGSIZE;

        *ret = TAKE_PTR(s);
        *ret_len = n + 1;
        return 0;
}

static int add_bool(struct json_object *o, const char *key, bool b) {
        return json_object_object_add(o, key, json_object_new_boolean(b)) < 0 ? -ENOMEM : 0;
}

static int add_string(struct json_object *o, const char *key, const char *s) {
        struct json_object *v = json_object_new_string(s);

        if (!v)
                return -ENOMEM;
        return json_object_object_add(o, key, v) < 0 ? -ENOMEM : 0;
}

int svff_varlink_encode_call(const char *method, struct json_object *parameters, bool more,
                             bool oneway, char **ret, size_t *ret_len) {
        _cleanup_(json_object_putp) struct json_object *m = NULL;
        int r;

        if (!method || !ret || !ret_len || qualified_name_split(method) == 0 || (more && oneway))
                return -EINVAL;

        m = json_object_new_object();
        if (!m)
                return -ENOMEM;
        r = add_string(m, "method", method);
        if (r >= 0 && more)
                r = add_bool(m, "more", true);
        if (r >= 0 && oneway)
                r = add_bool(m, "oneway", true);
        if (r < 0)
                return r;

        return encode(m, parameters, SVFF_VARLINK_MESSAGE_MAX, ret, ret_len);
}

int svff_varlink_encode_reply(struct json_object *parameters, bool continues, char **ret,
                              size_t *ret_len) {
        _cleanup_(json_object_putp) struct json_object *m = NULL;
        int r;

        if (!ret || !ret_len)
                return -EINVAL;

        m = json_object_new_object();
        if (!m)
                return -ENOMEM;
        if (continues) {
                r = add_bool(m, "continues", true);
                if (r < 0)
                        return r;
        }

        return encode(m, parameters, SVFF_VARLINK_REPLY_MAX, ret, ret_len);
}

int svff_varlink_encode_error(const char *error, struct json_object *parameters, char **ret,
                              size_t *ret_len) {
        _cleanup_(json_object_putp) struct json_object *m = NULL;
        int r;

        if (!error || !ret || !ret_len || qualified_name_split(error) == 0)
                return -EINVAL;

        m = json_object_new_object();
        if (!m)
                return -ENOMEM;
        r = add_string(m, "error", error);
        if (r < 0)
                return r;

        return encode(m, parameters, SVFF_VARLINK_REPLY_MAX, ret, ret_len);
}

/* ---- client ---- */

struct svff_varlink_client {
        int fd;
        struct svff_varlink_framer framer;
};

int svff_varlink_client_new_fd(int fd, struct svff_varlink_client **ret) {
        struct svff_varlink_client *c;

        if (fd < 0 || !ret)
                return -EINVAL;

        c = calloc(1, sizeof(*c));
        if (!c)
                return -ENOMEM;
        c->fd = fd;
        c->framer.max = SVFF_VARLINK_REPLY_MAX;
        *ret = c;
        return 0;
}

void svff_varlink_client_set_max_message(struct svff_varlink_client *c, size_t max) {
        if (c)
                c->framer.max = max > 0 ? max : SVFF_VARLINK_REPLY_MAX;
}

/* connect(2) interrupted by a signal goes on in the background: wait for
 * it and fetch its result rather than retrying, which would fail with
 * EALREADY. */
static int connect_finish(int fd) {
        struct pollfd p = { .fd = fd, .events = POLLOUT };
        socklen_t sl;
        int err;

        for (;;) {
                if (poll(&p, 1, -1) >= 0)
                        break;
                if (errno != EINTR)
                        return -errno;
        }
        sl = sizeof(err);
        if (getsockopt(fd, SOL_SOCKET, SO_ERROR, &err, &sl) < 0)
                return -errno;
        return -err;
}

int svff_varlink_client_connect(const char *socket_path, struct svff_varlink_client **ret) {
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        _cleanup_close_ int fd = -EBADF;
        socklen_t salen;
        size_t n;
        int r;

        if (!socket_path || !ret)
                return -EINVAL;

        n = strlen(socket_path);
        if (n == 0)
                return -EINVAL;
        if (n >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        memcpy(sa.sun_path, socket_path, n);
        /* "@name" is the abstract namespace, as in systemd's tools */
        if (socket_path[0] == '@') {
                sa.sun_path[0] = 0;
                salen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n);
        } else
                salen = (socklen_t) (offsetof(struct sockaddr_un, sun_path) + n + 1);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (fd < 0)
                return -errno;

        if (connect(fd, (struct sockaddr *) &sa, salen) < 0) {
                if (errno != EINTR)
                        return -errno;
                r = connect_finish(fd);
                if (r < 0)
                        return r;
        }

        r = svff_varlink_client_new_fd(fd, ret);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        return 0;
}

void svff_varlink_client_free(struct svff_varlink_client *c) {
        if (!c)
                return;
        if (c->fd >= 0)
                close(c->fd);
        svff_varlink_framer_done(&c->framer);
        free(c);
}

static int write_all(int fd, const char *p, size_t n) {
        while (n > 0) {
                ssize_t k;

                /* MSG_NOSIGNAL: a daemon that went away is an error to
                 * report, not a SIGPIPE that kills the CLI */
                k = send(fd, p, n, MSG_NOSIGNAL);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        if (errno == EAGAIN) {
                                struct pollfd pf = { .fd = fd, .events = POLLOUT };
                                if (poll(&pf, 1, -1) < 0 && errno != EINTR)
                                        return -errno;
                                continue;
                        }
                        return -errno;
                }
                p += k;
                n -= (size_t) k;
        }
        return 0;
}

int svff_varlink_client_send(struct svff_varlink_client *c, const char *method,
                             struct json_object *parameters, bool more, bool oneway) {
        _cleanup_free_ char *m = NULL;
        size_t n;
        int r;

        if (!c)
                return -EINVAL;

        r = svff_varlink_encode_call(method, parameters, more, oneway, &m, &n);
        if (r < 0)
                return r;
        return write_all(c->fd, m, n);
}

/* Decodes a reply: {"parameters":{...}} with "continues" and "error"
 * optional; other fields are ignored for forward compatibility. */
static int reply_parse(const char *msg, size_t len, struct json_object **ret_parameters,
                       char **ret_error, bool *ret_continues) {
        _cleanup_(json_object_putp) struct json_object *v = NULL;
        _cleanup_free_ char *error = NULL;
        struct json_object *parameters = NULL, *e;
        bool continues = false;
        int r;

        r = svff_json_parse(msg, len, SVFF_VARLINK_DEPTH_MAX, &v, NULL);
        if (r < 0)
                return r;
        if (!json_object_is_type(v, json_type_object))
                return -EBADMSG;

        if (json_object_object_get_ex(v, "parameters", &parameters) && parameters &&
            !json_object_is_type(parameters, json_type_object))
                return -EBADMSG;

        r = svff_json_get_bool(v, "continues", &continues);
        if (r < 0 && r != -ENOENT)
                return -EBADMSG;

        if (json_object_object_get_ex(v, "error", &e)) {
                if (!svff_json_is_clean_string(e) || qualified_name_split(json_object_get_string(e)) == 0)
                        return -EBADMSG;
                error = strdup(json_object_get_string(e));
                if (!error)
                        return -ENOMEM;
        }

        if (parameters)
                json_object_get(parameters);
        else {
                parameters = json_object_new_object();
                if (!parameters)
                        return -ENOMEM;
        }

        *ret_parameters = parameters;
        *ret_error = TAKE_PTR(error);
        *ret_continues = continues;
        return 0;
}

int svff_varlink_client_read(struct svff_varlink_client *c, usec_t timeout_usec,
                             struct json_object **ret_parameters, char **ret_error,
                             bool *ret_continues) {
        usec_t deadline = timeout_usec > 0 ? svff_now_usec() + timeout_usec : 0;
        struct json_object *parameters;
        char *error;
        bool continues;
        int r;

        if (!c || !ret_parameters || !ret_error || !ret_continues)
                return -EINVAL;

        for (;;) {
                _cleanup_free_ char *m = NULL;
                struct pollfd p = { .fd = c->fd, .events = POLLIN };
                char buf[16384];
                size_t mlen;
                ssize_t k;
                int ms = -1;

                r = svff_varlink_framer_next(&c->framer, &m, &mlen);
                if (r < 0)
                        return r;
                if (r > 0) {
                        r = reply_parse(m, mlen, &parameters, &error, &continues);
                        if (r < 0)
                                return r;
                        *ret_parameters = parameters;
                        *ret_error = error;
                        *ret_continues = continues;
                        return 0;
                }

                if (deadline > 0) {
                        usec_t now = svff_now_usec();

                        if (now >= deadline)
                                return -ETIMEDOUT;
                        /* round up: a 0 ms poll would spin */
                        usec_t left = (deadline - now + USEC_PER_MSEC - 1) / USEC_PER_MSEC;
                        ms = left > INT32_MAX ? INT32_MAX : (int) left;
                }

                r = poll(&p, 1, ms);
                if (r < 0) {
                        if (errno == EINTR)
                                continue;
                        return -errno;
                }
                if (r == 0)
                        continue;  /* the deadline check above reports it */

                k = recv(c->fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (k < 0) {
                        if (errno == EINTR || errno == EAGAIN)
                                continue;
                        return -errno;
                }
                if (k == 0)
                        return -ECONNRESET;

                r = svff_varlink_framer_feed(&c->framer, buf, (size_t) k);
                if (r < 0)
                        return r;
        }
}

int svff_varlink_client_call(struct svff_varlink_client *c, const char *method,
                             struct json_object *parameters, usec_t timeout_usec,
                             struct json_object **ret_parameters, char **ret_error) {
        _cleanup_(json_object_putp) struct json_object *p = NULL;
        char *error = NULL;
        bool continues;
        int r;

        if (!ret_parameters || !ret_error)
                return -EINVAL;

        r = svff_varlink_client_send(c, method, parameters, false, false);
        if (r < 0)
                return r;
        r = svff_varlink_client_read(c, timeout_usec, &p, &error, &continues);
        if (r < 0)
                return r;
        if (continues) {
                /* a single call must get a single reply */
                free(error);
                return -EBADMSG;
        }

        *ret_parameters = TAKE_PTR(p);
        *ret_error = error;
        return 0;
}

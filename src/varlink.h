/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The varlink wire codec (https://varlink.org): one JSON object per
 * message, each terminated by a NUL byte, over an AF_UNIX stream.
 *
 *   call:  {"method":"io.svff.List","parameters":{...},"more":true}
 *   reply: {"parameters":{...},"continues":true}
 *   error: {"error":"io.svff.NoSuchDevice","parameters":{...}}
 *
 * This file knows the framing and the message shapes, nothing about
 * sockets policy or methods: the daemon's server and the CLI's client
 * both use it. JSON is parsed by json-c, with a nesting limit. */

#include <stdbool.h>
#include <stddef.h>
#include <json-c/json.h>

#include "sysfs.h"  /* usec_t */

/* Calls are small, and a server holds what a client sends it: the cap on
 * calls (and on what a server accepts) stays low. Replies grow with the
 * host (a List of 1008 VFs is ~170 KiB, ~170 bytes per VF), so they get
 * their own cap: what a client accepts by default, and the largest reply
 * the encoder makes (~98000 VFs' worth). */
#define SVFF_VARLINK_MESSAGE_MAX (256u * 1024u)        /* bytes, NUL excluded */
#define SVFF_VARLINK_REPLY_MAX (16u * 1024u * 1024u)   /* bytes, NUL excluded */
#define SVFF_VARLINK_DEPTH_MAX 16

/* org.varlink.service standard errors */
#define SVFF_VARLINK_ERROR_INTERFACE_NOT_FOUND "org.varlink.service.InterfaceNotFound"
#define SVFF_VARLINK_ERROR_METHOD_NOT_FOUND "org.varlink.service.MethodNotFound"
#define SVFF_VARLINK_ERROR_METHOD_NOT_IMPLEMENTED "org.varlink.service.MethodNotImplemented"
#define SVFF_VARLINK_ERROR_INVALID_PARAMETER "org.varlink.service.InvalidParameter"
/* Framing errors, sent before the daemon drops the connection. */
#define SVFF_VARLINK_ERROR_PROTOCOL "io.svff.ProtocolError"

/* Splits a byte stream into NUL-terminated messages. */
struct svff_varlink_framer {
        char *buf;
        size_t len;     /* end of the buffered bytes in buf */
        size_t alloc;
        size_t max;     /* message cap, SVFF_VARLINK_MESSAGE_MAX when 0 */
        /* private: zero-initialise with the rest */
        size_t start;   /* first byte not yet taken out by _next() */
        size_t scanned; /* bytes after start known to hold no NUL */
        size_t tail;    /* length of the unterminated message at the end */
};

/* Appends n bytes. -EMSGSIZE when the buffered, unterminated message
 * already exceeds max (the connection should be dropped after an error
 * reply), -ENOMEM. */
int svff_varlink_framer_feed(struct svff_varlink_framer *f, const void *data, size_t n);
/* Takes the next complete message out of the buffer: returns 1 and a
 * malloc'd NUL-terminated copy (without the terminator) in *ret, 0 when
 * no complete message is buffered, -EMSGSIZE for a message over max. */
int svff_varlink_framer_next(struct svff_varlink_framer *f, char **ret, size_t *ret_len);
void svff_varlink_framer_done(struct svff_varlink_framer *f);

struct svff_varlink_call {
        char *method;                 /* "io.svff.List" */
        char *interface;              /* "io.svff" (method minus its last component) */
        const char *member;           /* points into method: "List" */
        struct json_object *parameters; /* an object, never NULL */
        bool more;
        bool oneway;
};

/* Decodes one call message. On failure returns
 *   -EBADMSG  not valid JSON, not an object, nested deeper than the limit,
 *             or embedded NUL;
 *   -EPROTO   "method" missing/not a string/not "iface.Member",
 *             "parameters" not an object (null counts as {}),
 *             "more"/"oneway" not booleans, or both set, "upgrade": true,
 *             or an unknown field;
 * and *ret_error (if non-NULL) gets a static human reason. Integer
 * parameters beyond 64 bits reach the caller as values that the
 * json-util.h getters report as -ERANGE. *ret is untouched on failure;
 * on success it owns its fields (release with svff_varlink_call_done). */
int svff_varlink_call_parse(const char *msg, size_t len, struct svff_varlink_call *ret,
                            const char **ret_error);
void svff_varlink_call_done(struct svff_varlink_call *c);

/* Encoders: *ret is malloc'd and includes the trailing NUL, *ret_len counts
 * it. parameters is borrowed (NULL: an empty object). -EMSGSIZE for a call
 * over SVFF_VARLINK_MESSAGE_MAX or a reply or error over
 * SVFF_VARLINK_REPLY_MAX: the peer would refuse it. */
int svff_varlink_encode_call(const char *method, struct json_object *parameters, bool more,
                             bool oneway, char **ret, size_t *ret_len);
int svff_varlink_encode_reply(struct json_object *parameters, bool continues, char **ret,
                              size_t *ret_len);
int svff_varlink_encode_error(const char *error, struct json_object *parameters, char **ret,
                              size_t *ret_len);

/* A blocking client: connect, send calls, read replies in order. */
struct svff_varlink_client;

/* socket_path "@name" is in the abstract namespace. */
int svff_varlink_client_connect(const char *socket_path, struct svff_varlink_client **ret);
/* Wraps an already connected stream socket; takes ownership of fd. */
int svff_varlink_client_new_fd(int fd, struct svff_varlink_client **ret);
void svff_varlink_client_free(struct svff_varlink_client *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_varlink_client *, svff_varlink_client_free);

/* The largest reply the client accepts (bytes, NUL excluded); 0 restores
 * the default, SVFF_VARLINK_REPLY_MAX. A bigger reply makes
 * svff_varlink_client_read() fail with -EMSGSIZE. */
void svff_varlink_client_set_max_message(struct svff_varlink_client *c, size_t max);

int svff_varlink_client_send(struct svff_varlink_client *c, const char *method,
                             struct json_object *parameters, bool more, bool oneway);

/* Reads the next reply, waiting up to timeout_usec (0: forever).
 * Success: *ret_parameters (owned by the caller, never NULL), *ret_error
 * (malloc'd error name or NULL), *ret_continues. -ETIMEDOUT, -ECONNRESET
 * (peer closed), -EBADMSG (malformed reply), -EMSGSIZE (reply over the
 * cap). Outputs are untouched on failure. */
int svff_varlink_client_read(struct svff_varlink_client *c, usec_t timeout_usec,
                             struct json_object **ret_parameters, char **ret_error,
                             bool *ret_continues);

/* send + read for single-reply calls; a reply with "continues" is
 * -EBADMSG. */
int svff_varlink_client_call(struct svff_varlink_client *c, const char *method,
                             struct json_object *parameters, usec_t timeout_usec,
                             struct json_object **ret_parameters, char **ret_error);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The varlink server: listening socket(s), connections and calls, on the
 * sd-event loop (main thread only).
 *
 * Calls on one connection are taken strictly one at a time, in order:
 * the next message is not even parsed until the current call has sent
 * its final reply. That answers pipelined calls in order, lets a slow
 * call hold back only its own connection, and bounds what a connection
 * can make svffd hold: one call, one read buffer, one write buffer.
 *
 * Limits (struct server_limits): message size, connections in total and
 * per non-root uid, the idle timeout, and the read/write buffers.
 *
 * Protecting root: part of max_connections (SERVER_RESERVED_CONNECTIONS)
 * is kept for privileged peers (uid 0 and the admin group), so that a
 * flood of other peers never locks them out; connections are also kept
 * within what the file descriptor limit allows, so accept() does not run
 * out of descriptors first. When it does anyway (EMFILE, ENFILE), the
 * server stops accepting for a back-off period rather than retrying at
 * once. The idle timeout counts complete messages, in either direction:
 * a peer that drips bytes, or reads its replies a byte at a time, is
 * still idle. */

#include <stdbool.h>
#include <stddef.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <systemd/sd-event.h>
#include <json-c/json.h>

#include "macro.h"
#include "varlink.h"

struct server_limits {
        size_t max_message;               /* bytes, NUL excluded */
        unsigned max_connections;
        unsigned max_connections_per_uid; /* for uids other than 0 */
        uint64_t idle_timeout_usec;       /* 0: none */
        size_t max_output;                /* queued bytes to one peer before
                                           * it counts as not reading */
        /* Peers for whom the reserve is kept: uid 0 always, and members
         * of admin_gid when have_admin_gid. */
        gid_t admin_gid;
        bool have_admin_gid;
};

/* Connections kept for privileged peers: an eighth of max_connections,
 * at least 1 and at most 32 (32 of the default 1024). */
#define SERVER_RESERVED_CONNECTIONS(max) ((max) / 8 < 1 ? 1u : (max) / 8 > 32 ? 32u : (max) / 8)
/* Descriptors kept free beside the connections, for what svffd opens
 * itself (sysfs, the store, libvirt, workers). */
#define SERVER_FD_HEADROOM 64u
/* How long accepting pauses after accept() ran out of descriptors. */
#define SERVER_ACCEPT_BACKOFF_USEC (250 * 1000ULL)

#define SERVER_LIMITS_DEFAULT                                         \
        ((struct server_limits) {                                    \
                .max_message = SVFF_VARLINK_MESSAGE_MAX,            \
                .max_connections = 1024,                            \
                .max_connections_per_uid = 128,                     \
                .idle_timeout_usec = 60 * 1000000ULL,              \
                .max_output = 4u * 1024u * 1024u,                  \
        })

struct server;
struct call;

/* Called for every well-formed call. The handler answers with
 * call_reply()/call_error() now or later (take a call_ref() to answer
 * later). */
typedef void (*server_dispatch_fn)(struct call *call, void *userdata);

int server_new(sd_event *event, const struct server_limits *limits,
               server_dispatch_fn dispatch, void *userdata, struct server **ret);
struct server *server_free(struct server *s);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct server *, server_free);

/* Adopts an already listening socket (socket activation). Takes fd. */
int server_add_listen_fd(struct server *s, int fd);
/* Binds and listens on path (removing a stale socket first), mode applied
 * to the socket file. */
int server_listen_path(struct server *s, const char *path, mode_t mode);

void server_set_limits(struct server *s, const struct server_limits *limits);
/* Raises the soft RLIMIT_NOFILE to the hard one (connections are
 * descriptors): 1 raised, 0 already there, -errno. */
int server_raise_fd_limit(void);
unsigned server_n_connections(struct server *s);
/* Stops accepting new connections (shutdown). */
void server_stop_listening(struct server *s);

/* A call: the decoded request (borrowed), the caller's credentials. */
struct call *call_ref(struct call *c);
struct call *call_unref(struct call *c);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct call *, call_unref);

const struct svff_varlink_call *call_request(struct call *c);
const struct ucred *call_peer(struct call *c);
/* Whether the caller is uid 0 or has gid as primary or supplementary
 * group (as the kernel reported at connect time, SO_PEERGROUPS). */
bool call_peer_is_privileged(struct call *c, gid_t admin_gid, bool have_admin_gid);
/* False once the peer went away; replies are then dropped. */
bool call_is_connected(struct call *c);

/* Final reply; parameters borrowed (NULL: {}). */
int call_reply(struct call *c, struct json_object *parameters);
/* A reply with "continues": true; only for calls made with "more". */
int call_notify(struct call *c, struct json_object *parameters);
/* An encoded message shared by many peers without copies: data is a
 * malloc'd message as svff_varlink_encode_reply() makes it (NUL
 * included), taken by blob_new(). Refcounted. */
struct blob;
struct blob *blob_new(char *data, size_t len);
struct blob *blob_ref(struct blob *b);
void blob_unref(struct blob *b);
const char *blob_data(const struct blob *b);
size_t blob_size(const struct blob *b);

/* A final reply already encoded (lets a handler answer many callers
 * with one encoding); b is borrowed. */
int call_reply_blob(struct call *c, struct blob *b);
/* Final error reply; parameters borrowed (NULL: {}). */
int call_error(struct call *c, const char *error, struct json_object *parameters);
/* Error with parameters {"<key>": value, "message": message}; either may
 * be NULL. */
int call_errorf(struct call *c, const char *error, const char *key, const char *value,
                const char *format, ...) _printf_(5, 6);

/* Run when the peer goes away while the call is still open (a Monitor
 * subscription, an Init whose caller stopped listening). */
typedef void (*call_disconnect_fn)(struct call *c, void *userdata);
void call_set_disconnect_handler(struct call *c, call_disconnect_fn fn, void *userdata);

/* A streaming call's backlog bound. Once more than max bytes wait for the
 * peer, call_notify() and call_notify_blob() drop what they are given and
 * count it (-ENOBUFS). When the peer has read what was waiting, fn runs
 * with the count; it should end the call (call_reply() or call_error()),
 * and the connection is closed once that is written. A peer that reads
 * nothing meets the idle timeout instead. */
typedef void (*call_overflow_fn)(struct call *c, uint64_t n_dropped, void *userdata);
void call_set_backlog(struct call *c, size_t max, call_overflow_fn fn, void *userdata);
/* call_notify() with an encoded message (svff_varlink_encode_reply() with
 * continues), shared between many calls; b is borrowed. */
int call_notify_blob(struct call *c, struct blob *b);

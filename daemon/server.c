/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "log.h"
#include "server.h"

/* Stop reading from a peer once this much unparsed input is buffered;
 * reading resumes as calls are taken out. */
#define READ_BUFFER_MAX(s) ((s)->limits.max_message * 2 + 4096)
/* Take the next call only while less than this is waiting to be written. */
#define WRITE_WATERMARK (256u * 1024u)
/* Calls taken per connection per loop iteration, so one pipelining peer
 * cannot starve the others. */
#define CALLS_PER_ITERATION 64
#define PEER_GROUPS_MAX 65536
/* Warnings a flood could repeat (refused connections, accept failures)
 * are logged at most this often, with a count of what was not logged. */
#define FLOOD_LOG_INTERVAL_USEC (10 * 1000000ULL)

/* A warning logged at most once per FLOOD_LOG_INTERVAL_USEC. */
struct flood_log {
        uint64_t last_usec;
        unsigned suppressed;
};

struct connection;

struct blob {
        unsigned n_ref;
        size_t len;
        char *data;
};

/* Bytes queued for a peer: whole encoded messages, shared where many
 * peers get the same one (a List reply is encoded once, not copied per
 * connection). */
struct segment {
        struct segment *next;
        struct blob *blob;
        size_t off;
};

struct call {
        unsigned n_ref;
        struct connection *conn;          /* NULL once the peer is gone */
        struct svff_varlink_call req;
        bool done;                        /* final reply sent */
        call_disconnect_fn on_disconnect;
        void *on_disconnect_userdata;

        size_t max_backlog;               /* 0: only max_output applies */
        uint64_t n_dropped;               /* replies dropped over max_backlog */
        call_overflow_fn on_overflow;
        void *on_overflow_userdata;
};

struct connection {
        struct server *server;
        struct connection *prev, *next;
        int fd;
        sd_event_source *io;
        sd_event_source *timer;
        sd_event_source *defer;

        struct ucred peer;
        gid_t *groups;
        size_t n_groups;
        bool privileged;                  /* counts against the reserve */

        struct svff_varlink_framer in;
        size_t in_pending;                /* bytes buffered, not yet taken */
        bool read_eof;
        bool too_big;                     /* oversized input seen */
        bool closing;                     /* flush, then close */

        struct segment *out, *out_tail;
        size_t out_pending;               /* bytes not yet written */

        struct call *current;
};

struct server {
        sd_event *event;
        struct server_limits limits;
        server_dispatch_fn dispatch;
        void *userdata;

        sd_event_source **listen;
        size_t n_listen;
        bool listening;

        struct connection *connections;
        unsigned n_connections;
        unsigned n_unprivileged;
        unsigned max_connections;         /* limits', within the fd limit */

        /* accept() ran out of descriptors: paused until the timer fires */
        sd_event_source *backoff;
        bool accept_paused;
        struct flood_log log_accept, log_refused;

        /* The socket file server_listen_path() made, removed at the end
         * if it is still that one (not one a later svffd bound). */
        char *bound_path;
        dev_t bound_dev;
        ino_t bound_ino;
};

static void connection_free(struct connection *c);
static void connection_update_events(struct connection *c);
static void connection_schedule(struct connection *c);

static uint64_t now_usec(void) {
        struct timespec ts;

        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

/* ---- calls ---- */

struct call *call_ref(struct call *c) {
        if (c)
                c->n_ref++;
        return c;
}

struct call *call_unref(struct call *c) {
        if (!c || --c->n_ref > 0)
                return NULL;
        svff_varlink_call_done(&c->req);
        free(c);
        return NULL;
}

const struct svff_varlink_call *call_request(struct call *c) {
        return &c->req;
}

static const struct ucred nobody = { .pid = 0, .uid = (uid_t) -1, .gid = (gid_t) -1 };

const struct ucred *call_peer(struct call *c) {
        return c->conn ? &c->conn->peer : &nobody;
}

bool call_peer_is_privileged(struct call *c, gid_t admin_gid, bool have_admin_gid) {
        struct connection *conn = c->conn;

        if (!conn)
                return false;
        if (conn->peer.uid == 0)
                return true;
        if (!have_admin_gid)
                return false;
        if (conn->peer.gid == admin_gid)
                return true;
        for (size_t i = 0; i < conn->n_groups; i++)
                if (conn->groups[i] == admin_gid)
                        return true;
        return false;
}

bool call_is_connected(struct call *c) {
        return c->conn && !c->conn->closing;
}

void call_set_disconnect_handler(struct call *c, call_disconnect_fn fn, void *userdata) {
        c->on_disconnect = fn;
        c->on_disconnect_userdata = userdata;
}

void call_set_backlog(struct call *c, size_t max, call_overflow_fn fn, void *userdata) {
        c->max_backlog = max;
        c->on_overflow = fn;
        c->on_overflow_userdata = userdata;
}

/* True when a warning may be logged now; *ret_suppressed: how many were
 * not since the last one. */
static bool flood_log_ready(struct flood_log *l, unsigned *ret_suppressed) {
        uint64_t t = now_usec();

        if (l->last_usec != 0 && t - l->last_usec < FLOOD_LOG_INTERVAL_USEC) {
                l->suppressed++;
                return false;
        }
        *ret_suppressed = l->suppressed;
        l->suppressed = 0;
        l->last_usec = t;
        return true;
}

struct blob *blob_new(char *data, size_t len) {
        struct blob *b = malloc(sizeof(*b));

        if (!b)
                return NULL;
        b->n_ref = 1;
        b->len = len;
        b->data = data;
        return b;
}

struct blob *blob_ref(struct blob *b) {
        if (b)
                b->n_ref++;
        return b;
}

void blob_unref(struct blob *b) {
        if (!b || --b->n_ref > 0)
                return;
        free(b->data);
        free(b);
}

const char *blob_data(const struct blob *b) {
        return b->data;
}

size_t blob_size(const struct blob *b) {
        return b->len;
}

static void connection_touch(struct connection *c);

static int connection_queue(struct connection *c, struct blob *b) {
        struct segment *seg = malloc(sizeof(*seg));

        if (!seg)
                return -ENOMEM;
        seg->next = NULL;
        seg->blob = blob_ref(b);
        seg->off = 0;
        if (c->out_tail)
                c->out_tail->next = seg;
        else
                c->out = seg;
        c->out_tail = seg;
        /* The peer has its whole idle timeout to take what is now waiting
         * for it: a timer already due in this loop iteration must not find
         * a message queued before its EPOLLOUT was dispatched and take
         * the peer for one that does not read. */
        if (c->out_pending == 0)
                connection_touch(c);
        c->out_pending += b->len;
        return 0;
}

static void connection_drop_output(struct connection *c) {
        while (c->out) {
                struct segment *seg = c->out;

                c->out = seg->next;
                blob_unref(seg->blob);
                free(seg);
        }
        c->out_tail = NULL;
        c->out_pending = 0;
}

/* Queues one encoded message for the call's peer. A peer that lets more
 * than max_output pile up is not reading: it is dropped. */
static int call_send(struct call *call, struct blob *b, bool final) {
        struct connection *c = call->conn;
        int r;

        if (call->done)
                return -EALREADY;
        if (final)
                call->done = true;
        if (!c || c->closing)
                goto finish;
        if (call->req.oneway)
                goto finish;

        /* A stream whose peer fell behind: drop and count. Once one reply
         * is dropped, so is every later one, so that the peer sees the
         * gap (the overflow handler's reply) where it is. */
        if (!final && call->max_backlog > 0 &&
            (call->n_dropped > 0 ||
             (c->out_pending > 0 && c->out_pending + b->len > call->max_backlog))) {
                if (call->n_dropped++ == 0)
                        log_debug("Client pid %d uid %u fell more than %zu bytes behind its stream, dropping replies.",
                                  (int) c->peer.pid, (unsigned) c->peer.uid, call->max_backlog);
                return -ENOBUFS;
        }

        /* One message always fits (the encoder bounds it): a List reply
         * may outgrow max_output on a host with many VFs. */
        if (c->out_pending > 0 && c->out_pending + b->len > c->server->limits.max_output) {
                log_warning("Client pid %d uid %u does not read its replies, disconnecting.",
                            (int) c->peer.pid, (unsigned) c->peer.uid);
                c->closing = true;
                connection_drop_output(c);
                connection_schedule(c);
                goto finish;
        }
        r = connection_queue(c, b);
        if (r < 0) {
                c->closing = true;
                connection_schedule(c);
                return r;
        }
        connection_update_events(c);
finish:
        if (final && c && c->current == call) {
                c->current = NULL;
                connection_schedule(c);
                call_unref(call);  /* the connection's reference */
        }
        return 0;
}

/* Wraps a freshly encoded message (taken) and sends it. */
static int call_send_msg(struct call *call, char *msg, size_t len, bool final) {
        struct blob *b = blob_new(msg, len);
        int r;

        if (!b) {
                free(msg);
                return -ENOMEM;
        }
        r = call_send(call, b, final);
        blob_unref(b);
        return r;
}

int call_reply_blob(struct call *c, struct blob *b) {
        return call_send(c, b, true);
}

int call_reply(struct call *c, struct json_object *parameters) {
        char *msg = NULL;
        size_t len;
        int r;

        r = svff_varlink_encode_reply(parameters, false, &msg, &len);
        if (r < 0)
                return call_error(c, "io.svff.InternalError", NULL);
        return call_send_msg(c, msg, len, true);
}

int call_notify_blob(struct call *c, struct blob *b) {
        if (!c->req.more)
                return -EINVAL;
        return call_send(c, b, false);
}

int call_notify(struct call *c, struct json_object *parameters) {
        char *msg = NULL;
        size_t len;
        int r;

        if (!c->req.more)
                return -EINVAL;
        r = svff_varlink_encode_reply(parameters, true, &msg, &len);
        if (r < 0)
                return r;
        return call_send_msg(c, msg, len, false);
}

int call_error(struct call *c, const char *error, struct json_object *parameters) {
        char *msg = NULL;
        size_t len;
        int r;

        r = svff_varlink_encode_error(error, parameters, &msg, &len);
        if (r < 0) {
                /* Still end the call, or the connection stalls forever. */
                static const char fallback[] = "{\"error\":\"io.svff.InternalError\",\"parameters\":{}}";
                msg = strdup(fallback);
                if (!msg) {
                        c->done = true;
                        if (c->conn)
                                c->conn->closing = true;
                        return -ENOMEM;
                }
                len = sizeof(fallback);
        }
        return call_send_msg(c, msg, len, true);
}

int call_errorf(struct call *c, const char *error, const char *key, const char *value,
                const char *format, ...) {
        struct json_object *p = json_object_new_object();
        char buf[1024];
        va_list ap;
        int r;

        if (!p)
                return call_error(c, error, NULL);
        if (key)
                json_object_object_add(p, key, value ? json_object_new_string(value) : NULL);
        if (format) {
                va_start(ap, format);
                vsnprintf(buf, sizeof(buf), format, ap);
                va_end(ap);
                /* org.varlink.service's errors declare no message. */
                if (strneq(error, "org.varlink.service.", strlen("org.varlink.service.")))
                        log_debug("%s: %s", error, buf);
                else
                        json_object_object_add(p, "message", json_object_new_string(buf));
        }
        r = call_error(c, error, p);
        json_object_put(p);
        return r;
}

/* ---- connections ---- */

static int connection_send_protocol_error(struct connection *c, const char *reason) {
        struct json_object *p;
        struct blob *b;
        char *msg = NULL;
        size_t len;
        int r;

        p = json_object_new_object();
        if (!p)
                return -ENOMEM;
        json_object_object_add(p, "reason", json_object_new_string(reason));
        json_object_object_add(p, "message", json_object_new_string(reason));
        r = svff_varlink_encode_error(SVFF_VARLINK_ERROR_PROTOCOL, p, &msg, &len);
        json_object_put(p);
        if (r < 0)
                return r;
        b = blob_new(msg, len);
        if (!b) {
                free(msg);
                return -ENOMEM;
        }
        r = connection_queue(c, b);
        blob_unref(b);
        return r;
}

static void connection_update_events(struct connection *c) {
        uint32_t ev = 0;

        if (!c->closing && !c->read_eof && !c->too_big &&
            c->in_pending < READ_BUFFER_MAX(c->server))
                ev |= EPOLLIN;
        if (c->out_pending > 0)
                ev |= EPOLLOUT;
        (void) sd_event_source_set_io_events(c->io, ev);
}

/* Re-arms the idle timeout: at accept, for each complete message taken
 * from the peer or written to it, and when output starts waiting. Bytes
 * alone do not count, or a peer dripping one a second would hold its
 * connection forever. */
static void connection_touch(struct connection *c) {
        if (c->server->limits.idle_timeout_usec == 0) {
                (void) sd_event_source_set_enabled(c->timer, SD_EVENT_OFF);
                return;
        }
        (void) sd_event_source_set_time(c->timer, now_usec() + c->server->limits.idle_timeout_usec);
        (void) sd_event_source_set_enabled(c->timer, SD_EVENT_ONESHOT);
}

static void connection_schedule(struct connection *c) {
        (void) sd_event_source_set_enabled(c->defer, SD_EVENT_ONESHOT);
}

/* Writes what can be written now. Returns <0 when the peer is gone. */
static int connection_flush(struct connection *c) {
        while (c->out) {
                struct iovec iov[16];
                struct msghdr mh = { .msg_iov = iov };
                struct segment *seg = c->out;
                ssize_t n;

                for (; seg && mh.msg_iovlen < ELEMENTSOF(iov); seg = seg->next)
                        iov[mh.msg_iovlen++] = (struct iovec) {
                                .iov_base = seg->blob->data + seg->off,
                                .iov_len = seg->blob->len - seg->off,
                        };
                n = sendmsg(c->fd, &mh, MSG_DONTWAIT | MSG_NOSIGNAL);
                if (n < 0) {
                        if (errno == EAGAIN || errno == EINTR)
                                break;
                        return -errno;
                }
                c->out_pending -= (size_t) n;
                while (n > 0) {
                        seg = c->out;
                        if ((size_t) n < seg->blob->len - seg->off) {
                                seg->off += (size_t) n;
                                break;
                        }
                        n -= (ssize_t) (seg->blob->len - seg->off);
                        c->out = seg->next;
                        if (!c->out)
                                c->out_tail = NULL;
                        blob_unref(seg->blob);
                        free(seg);
                        connection_touch(c);
                }
        }
        return 0;
}

static void connection_dispatch(struct connection *c, char *msg, size_t len) {
        struct call *call;
        const char *reason = NULL;
        int r;

        call = calloc(1, sizeof(*call));
        if (!call) {
                c->closing = true;
                return;
        }
        call->n_ref = 1;  /* the connection's */
        call->conn = c;

        r = svff_varlink_call_parse(msg, len, &call->req, &reason);
        if (r < 0) {
                free(call);
                log_debug("Malformed call from pid %d: %s", (int) c->peer.pid, strna(reason));
                if (connection_send_protocol_error(c, reason ?: "malformed message") < 0)
                        c->closing = true;
                return;
        }

        /* The extra reference keeps the call valid for the handler even
         * when it answers at once (which drops the connection's). */
        c->current = call;
        call_ref(call);
        c->server->dispatch(call, c->server->userdata);
        call_unref(call);
}

/* A stream's peer read what was waiting after replies were dropped: the
 * handler tells it how many (and ends the call), then the connection is
 * closed, as call_set_backlog() promises. */
static void connection_overflow(struct connection *c) {
        _cleanup_(call_unrefp) struct call *call = call_ref(c->current);
        call_overflow_fn fn = call->on_overflow;

        call->on_overflow = NULL;
        log_debug("Client pid %d uid %u caught up after %" PRIu64 " dropped replies, disconnecting.",
                  (int) c->peer.pid, (unsigned) c->peer.uid, call->n_dropped);
        if (fn)
                fn(call, call->n_dropped, call->on_overflow_userdata);
        c->closing = true;
        connection_schedule(c);
}

/* Takes calls while the previous one is answered and the peer keeps up. */
static void connection_process(struct connection *c) {
        bool drained = false;
        unsigned n = 0;
        int r;

        while (!c->closing && !c->current && c->out_pending < WRITE_WATERMARK) {
                _cleanup_free_ char *msg = NULL;
                size_t len;

                if (n++ >= CALLS_PER_ITERATION) {
                        connection_schedule(c);
                        break;
                }

                r = svff_varlink_framer_next(&c->in, &msg, &len);
                if (r == -EMSGSIZE || (r == 0 && c->too_big)) {
                        log_debug("Message from pid %d exceeds %zu bytes, disconnecting.",
                                  (int) c->peer.pid, c->server->limits.max_message);
                        (void) connection_send_protocol_error(c, "message too large");
                        c->closing = true;
                        break;
                }
                if (r < 0) {
                        c->closing = true;
                        break;
                }
                if (r == 0) {
                        drained = true;
                        break;
                }
                c->in_pending -= len + 1;
                connection_touch(c);
                connection_dispatch(c, msg, len);
        }

        /* The peer closed its side: what it sent is answered, and an
         * unterminated tail can never complete. */
        if (c->read_eof && drained && !c->current)
                c->closing = true;

        if (connection_flush(c) < 0) {
                connection_free(c);
                return;
        }
        if (c->current && c->current->n_dropped > 0 && c->out_pending == 0 && !c->closing) {
                connection_overflow(c);
                if (connection_flush(c) < 0) {
                        connection_free(c);
                        return;
                }
        }
        if (c->closing && c->out_pending == 0) {
                connection_free(c);
                return;
        }
        connection_update_events(c);
}

static int on_defer(sd_event_source *s, void *userdata) {
        connection_process(userdata);
        return 0;
}

static int on_io(sd_event_source *s, int fd, uint32_t revents, void *userdata) {
        struct connection *c = userdata;

        if (revents & EPOLLIN) {
                char buf[65536];
                ssize_t n;

                n = recv(fd, buf, sizeof(buf), MSG_DONTWAIT);
                if (n < 0 && errno != EAGAIN && errno != EINTR) {
                        connection_free(c);
                        return 0;
                }
                if (n == 0)
                        c->read_eof = true;
                if (n > 0) {
                        int r = svff_varlink_framer_feed(&c->in, buf, (size_t) n);

                        c->in_pending += (size_t) n;
                        if (r == -EMSGSIZE)
                                c->too_big = true;
                        else if (r < 0) {
                                connection_free(c);
                                return 0;
                        }
                }
        } else if (revents & (EPOLLHUP | EPOLLERR) && !(revents & EPOLLOUT)) {
                connection_free(c);
                return 0;
        }

        connection_process(c);
        return 0;
}

static int on_idle(sd_event_source *s, uint64_t usec, void *userdata) {
        struct connection *c = userdata;

        /* A call in progress (an Init, a Monitor stream) keeps the
         * connection; a peer that neither sends, nor completes a message,
         * nor reads what it is sent does not. */
        if (c->current && c->out_pending == 0) {
                connection_touch(c);
                return 0;
        }
        /* Output waits, but the peer has read all the kernel holds for
         * it: only the loop has not written the rest yet (a busy
         * iteration), which says nothing about the peer. */
        if (c->out_pending > 0) {
                int unread = 0;

                if (ioctl(c->fd, SIOCOUTQ, &unread) >= 0 && unread == 0) {
                        if (connection_flush(c) < 0) {
                                connection_free(c);
                                return 0;
                        }
                        connection_update_events(c);
                        connection_touch(c);
                        return 0;
                }
        }
        log_debug("Connection from pid %d idle for too long, closing.", (int) c->peer.pid);
        connection_free(c);
        return 0;
}

static void server_update_listening(struct server *s) {
        bool on = s->listening && !s->accept_paused && s->n_connections < s->max_connections;

        for (size_t i = 0; i < s->n_listen; i++)
                (void) sd_event_source_set_enabled(s->listen[i], on ? SD_EVENT_ON : SD_EVENT_OFF);
}

static void connection_free(struct connection *c) {
        struct server *s;

        if (!c)
                return;
        s = c->server;

        if (c->current) {
                struct call *call = c->current;

                c->current = NULL;
                call->conn = NULL;
                if (call->on_disconnect && !call->done)
                        call->on_disconnect(call, call->on_disconnect_userdata);
                call_unref(call);
        }

        if (c->prev)
                c->prev->next = c->next;
        else
                s->connections = c->next;
        if (c->next)
                c->next->prev = c->prev;
        s->n_connections--;
        if (!c->privileged)
                s->n_unprivileged--;

        sd_event_source_disable_unref(c->io);
        sd_event_source_disable_unref(c->timer);
        sd_event_source_disable_unref(c->defer);
        if (c->fd >= 0)
                close(c->fd);
        svff_varlink_framer_done(&c->in);
        connection_drop_output(c);
        free(c->groups);
        free(c);

        server_update_listening(s);
}

static int connection_read_groups(struct connection *c) {
        socklen_t len = 64 * sizeof(gid_t);

        for (;;) {
                gid_t *g = realloc(c->groups, len);

                if (!g)
                        return -ENOMEM;
                c->groups = g;
                if (getsockopt(c->fd, SOL_SOCKET, SO_PEERGROUPS, c->groups, &len) >= 0) {
                        c->n_groups = len / sizeof(gid_t);
                        return 0;
                }
                if (errno != ERANGE || len > PEER_GROUPS_MAX * sizeof(gid_t))
                        return -errno;
                /* len now holds the size needed. */
        }
}

static unsigned server_count_uid(struct server *s, uid_t uid) {
        unsigned n = 0;

        for (struct connection *c = s->connections; c; c = c->next)
                if (c->peer.uid == uid)
                        n++;
        return n;
}

static bool connection_is_privileged(struct server *s, struct connection *c) {
        if (c->peer.uid == 0)
                return true;
        if (!s->limits.have_admin_gid)
                return false;
        if (c->peer.gid == s->limits.admin_gid)
                return true;
        for (size_t i = 0; i < c->n_groups; i++)
                if (c->groups[i] == s->limits.admin_gid)
                        return true;
        return false;
}

/* What unprivileged peers may hold together: the rest is the reserve. */
static unsigned server_shared_connections(struct server *s) {
        unsigned max = s->max_connections;

        if (max <= 1)
                return max;
        return max - MIN(SERVER_RESERVED_CONNECTIONS(max), max - 1);
}

static int on_backoff(sd_event_source *src, uint64_t usec, void *userdata) {
        struct server *s = userdata;

        s->accept_paused = false;
        server_update_listening(s);
        return 0;
}

/* accept() ran out of descriptors (or memory): retrying at once would
 * fail again and spin, so the listening sockets rest for a while. */
static void server_pause_accept(struct server *s, int error) {
        unsigned suppressed = 0;
        int r = 0;

        if (!s->backoff) {
                r = sd_event_add_time(s->event, &s->backoff, CLOCK_MONOTONIC, UINT64_MAX, 0,
                                      on_backoff, s);
                if (r >= 0)
                        (void) sd_event_source_set_description(s->backoff, "varlink-accept-backoff");
        }
        if (r >= 0)
                r = sd_event_source_set_time(s->backoff, now_usec() + SERVER_ACCEPT_BACKOFF_USEC);
        if (r >= 0)
                r = sd_event_source_set_enabled(s->backoff, SD_EVENT_ONESHOT);
        if (r < 0) {
                /* Without the timer nothing would resume accepting. */
                log_error_errno(r, "Failed to arm the accept back-off timer: %m");
                return;
        }
        s->accept_paused = true;
        server_update_listening(s);

        if (flood_log_ready(&s->log_accept, &suppressed))
                log_warning_errno(error, "Failed to accept connection, pausing accepting for %llu ms "
                                  "(%u more times since the last message): %m",
                                  SERVER_ACCEPT_BACKOFF_USEC / 1000, suppressed);
}

static void server_refuse(struct server *s, struct connection *c, const char *why) {
        unsigned suppressed = 0;

        if (flood_log_ready(&s->log_refused, &suppressed))
                log_warning("Refusing a connection from pid %d uid %u: %s "
                            "(%u more refused since the last message).",
                            (int) c->peer.pid, (unsigned) c->peer.uid, why, suppressed);
        close(c->fd);
        free(c->groups);
        free(c);
}

static int on_accept(sd_event_source *src, int fd, uint32_t revents, void *userdata) {
        struct server *s = userdata;
        _cleanup_close_ int cfd = -EBADF;
        struct connection *c;
        socklen_t len;
        int r;

        cfd = accept4(fd, NULL, NULL, SOCK_NONBLOCK | SOCK_CLOEXEC);
        if (cfd < 0) {
                unsigned suppressed = 0;

                r = -errno;
                if (r == -EMFILE || r == -ENFILE || r == -ENOBUFS || r == -ENOMEM)
                        server_pause_accept(s, r);
                else if (r != -EAGAIN && r != -EINTR && r != -ECONNABORTED &&
                         flood_log_ready(&s->log_accept, &suppressed))
                        log_warning_errno(r, "Failed to accept connection, ignoring "
                                          "(%u more times since the last message): %m", suppressed);
                return 0;
        }

        c = calloc(1, sizeof(*c));
        if (!c)
                return log_error_errno(-ENOMEM, "Failed to allocate connection: %m"), 0;
        c->fd = TAKE_FD(cfd);
        c->server = s;
        c->in.max = s->limits.max_message;

        len = sizeof(c->peer);
        if (getsockopt(c->fd, SOL_SOCKET, SO_PEERCRED, &c->peer, &len) < 0) {
                log_warning_errno(-errno, "Failed to read peer credentials, refusing connection: %m");
                close(c->fd);
                free(c);
                return 0;
        }
        r = connection_read_groups(c);
        if (r < 0)
                log_debug_errno(r, "Failed to read peer groups of pid %d, ignoring: %m",
                                (int) c->peer.pid);

        /* Refused at once rather than left in the backlog: whoever queues
         * behind them (root) would wait too. */
        c->privileged = connection_is_privileged(s, c);
        if (!c->privileged && s->n_unprivileged >= server_shared_connections(s)) {
                server_refuse(s, c, "the connections open to unprivileged peers are all taken");
                return 0;
        }
        if (c->peer.uid != 0 && server_count_uid(s, c->peer.uid) >= s->limits.max_connections_per_uid) {
                server_refuse(s, c, "too many connections from this uid");
                return 0;
        }

        c->next = s->connections;
        if (c->next)
                c->next->prev = c;
        s->connections = c;
        s->n_connections++;
        if (!c->privileged)
                s->n_unprivileged++;

        r = sd_event_add_io(s->event, &c->io, c->fd, EPOLLIN, on_io, c);
        if (r >= 0)
                r = sd_event_add_time(s->event, &c->timer, CLOCK_MONOTONIC, UINT64_MAX, 0,
                                      on_idle, c);
        if (r >= 0)
                r = sd_event_add_defer(s->event, &c->defer, on_defer, c);
        if (r < 0) {
                log_error_errno(r, "Failed to set up connection: %m");
                connection_free(c);
                return 0;
        }
        (void) sd_event_source_set_enabled(c->defer, SD_EVENT_OFF);
        (void) sd_event_source_set_description(c->io, "varlink-connection");
        connection_touch(c);

        server_update_listening(s);
        return 0;
}

/* Open descriptors, or -errno. */
static int count_open_fds(void) {
        _cleanup_closedir_ DIR *d = opendir("/proc/self/fd");
        struct dirent *de;
        int n = 0;

        if (!d)
                return -errno;
        while ((de = readdir(d)))
                if (de->d_name[0] != '.')
                        n++;
        return n - 1;  /* d's own */
}

/* max_connections, lowered to what the fd limit leaves room for: past
 * it accept() fails for everyone, root included, while below it the
 * reserve for privileged peers holds. */
static void server_update_max(struct server *s) {
        unsigned max = s->limits.max_connections;
        struct rlimit rl;
        int open_fds;

        if (getrlimit(RLIMIT_NOFILE, &rl) >= 0 && rl.rlim_cur != RLIM_INFINITY) {
                uint64_t others, budget;

                open_fds = count_open_fds();
                /* unknown: assume what svffd opens at start with room to spare */
                others = open_fds >= 0 ? (uint64_t) open_fds : 64;
                others = others > s->n_connections ? others - s->n_connections : 0;
                others += SERVER_FD_HEADROOM;
                budget = (uint64_t) rl.rlim_cur > others ? (uint64_t) rl.rlim_cur - others : 1;
                if (budget < max) {
                        if (max != s->max_connections)
                                log_notice("The file descriptor limit (%llu) leaves room for %" PRIu64
                                           " connections, fewer than max_connections (%u).",
                                           (unsigned long long) rl.rlim_cur, budget, max);
                        max = (unsigned) budget;
                }
        }
        s->max_connections = max;
}

int server_raise_fd_limit(void) {
        struct rlimit rl;

        if (getrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        if (rl.rlim_cur == rl.rlim_max)
                return 0;
        rl.rlim_cur = rl.rlim_max;
        if (setrlimit(RLIMIT_NOFILE, &rl) < 0)
                return -errno;
        return 1;
}

/* ---- server ---- */

int server_new(sd_event *event, const struct server_limits *limits,
               server_dispatch_fn dispatch, void *userdata, struct server **ret) {
        struct server *s = calloc(1, sizeof(*s));

        if (!s)
                return -ENOMEM;
        s->event = sd_event_ref(event);
        s->limits = *limits;
        s->dispatch = dispatch;
        s->userdata = userdata;
        s->listening = true;
        server_update_max(s);
        *ret = s;
        return 0;
}

struct server *server_free(struct server *s) {
        if (!s)
                return NULL;
        /* What was queued last (the shutdown event to Monitor clients)
         * goes out if the socket takes it now: never a wait. */
        for (struct connection *c = s->connections; c; c = c->next)
                (void) connection_flush(c);
        while (s->connections)
                connection_free(s->connections);
        for (size_t i = 0; i < s->n_listen; i++) {
                int fd = sd_event_source_get_io_fd(s->listen[i]);

                sd_event_source_disable_unref(s->listen[i]);
                close(fd);
        }
        free(s->listen);
        if (s->bound_path) {
                struct stat st;

                if (lstat(s->bound_path, &st) >= 0 && S_ISSOCK(st.st_mode) && st.st_dev == s->bound_dev &&
                    st.st_ino == s->bound_ino)
                        (void) unlink(s->bound_path);
                free(s->bound_path);
        }
        sd_event_source_disable_unref(s->backoff);
        sd_event_unref(s->event);
        free(s);
        return NULL;
}

int server_add_listen_fd(struct server *s, int fd) {
        sd_event_source **l;
        int r;

        l = realloc(s->listen, (s->n_listen + 1) * sizeof(*l));
        if (!l)
                return -ENOMEM;
        s->listen = l;

        if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) < 0)
                return -errno;
        r = sd_event_add_io(s->event, &s->listen[s->n_listen], fd, EPOLLIN, on_accept, s);
        if (r < 0)
                return r;
        (void) sd_event_source_set_description(s->listen[s->n_listen], "varlink-listen");
        s->n_listen++;
        server_update_listening(s);
        return 0;
}

int server_listen_path(struct server *s, const char *path, mode_t mode) {
        _cleanup_close_ int fd = -EBADF;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        int r;

        if (strlen(path) >= sizeof(sa.sun_path))
                return -ENAMETOOLONG;
        strcpy(sa.sun_path, path);

        /* A socket someone still accepts on is not stale: taking it over
         * would leave that daemon serving no one. */
        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        /* EAGAIN: a full backlog, so alive too */
        if (connect(fd, (struct sockaddr *) &sa, sizeof(sa)) >= 0 || errno == EAGAIN)
                return -EADDRINUSE;
        closep(&fd);

        fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
        if (fd < 0)
                return -errno;
        (void) unlink(path);
        if (bind(fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return -errno;
        if (chmod(path, mode) < 0)
                return -errno;
        if (listen(fd, SOMAXCONN) < 0)
                return -errno;

        r = server_add_listen_fd(s, fd);
        if (r < 0)
                return r;
        TAKE_FD(fd);
        {
                struct stat st;

                if (!s->bound_path && lstat(path, &st) >= 0) {
                        s->bound_path = strdup(path);
                        s->bound_dev = st.st_dev;
                        s->bound_ino = st.st_ino;
                }
        }
        return 0;
}

void server_set_limits(struct server *s, const struct server_limits *limits) {
        s->limits = *limits;
        s->n_unprivileged = 0;
        for (struct connection *c = s->connections; c; c = c->next) {
                c->in.max = limits->max_message;
                /* the admin group may have changed */
                c->privileged = connection_is_privileged(s, c);
                if (!c->privileged)
                        s->n_unprivileged++;
        }
        server_update_max(s);
        server_update_listening(s);
}

unsigned server_n_connections(struct server *s) {
        return s->n_connections;
}

void server_stop_listening(struct server *s) {
        s->listening = false;
        server_update_listening(s);
}

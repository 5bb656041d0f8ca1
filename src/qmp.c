/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>
#include <libvirt/libvirt-qemu.h>
#include <libvirt/virterror.h>

#include "json-util.h"
#include "qmp.h"

/* QEMU's replies are small; query-qmp-schema is the largest (~200 KiB).
 * Anything bigger is not a QMP peer we want to buffer. */
#define QMP_MESSAGE_MAX (4u * 1024u * 1024u)
/* Events nobody asked for are kept up to this count, oldest dropped. */
#define QMP_EVENTS_MAX 256u
#define QMP_DEPTH_MAX 64

struct svff_qmp {
        int fd;                 /* direct; -EBADF for libvirt */
        virDomainPtr dom;       /* libvirt */
        char *buf;
        size_t len, alloc;
        struct json_object *greeting_version;
        struct json_object **events;
        size_t n_events;
        unsigned long long next_id;
};

void svff_qmp_free(struct svff_qmp *q) {
        if (!q)
                return;
        if (q->fd >= 0)
                close(q->fd);
        if (q->dom)
                virDomainFree(q->dom);
        free(q->buf);
        json_object_put(q->greeting_version);
        for (size_t i = 0; i < q->n_events; i++)
                json_object_put(q->events[i]);
        free(q->events);
        free(q);
}

static struct svff_qmp *qmp_alloc(void) {
        struct svff_qmp *q = calloc(1, sizeof(*q));

        if (q)
                q->fd = -EBADF;
        return q;
}

struct json_object *svff_qmp_version(struct svff_qmp *q) {
        return q ? q->greeting_version : NULL;
}

static int error_to_errno(const char *class) {
        if (!class)
                return -EINVAL;
        if (streq(class, "CommandNotFound"))
                return -EOPNOTSUPP;
        if (streq(class, "DeviceNotFound") || streq(class, "DeviceNotActive"))
                return -ENODEV;
        return -EINVAL;
}

/* Reads one message within deadline: a new reference in *ret. */
static int read_message(struct svff_qmp *q, usec_t deadline, struct json_object **ret, struct svff_error *err) {
        for (;;) {
                char *nl = q->len > 0 ? memchr(q->buf, '\n', q->len) : NULL;

                if (nl) {
                        size_t n = (size_t) (nl - q->buf) + 1, l = n - 1;
                        struct json_object *o = NULL;
                        const char *why = NULL;
                        int r;

                        if (l > 0 && q->buf[l - 1] == '\r')
                                l--;
                        r = l == 0 ? -EAGAIN : svff_json_parse(q->buf, l, QMP_DEPTH_MAX, &o, &why);
                        memmove(q->buf, q->buf + n, q->len - n);
                        q->len -= n;
                        if (r == -EAGAIN)
                                continue;
                        if (r < 0 || !json_object_is_type(o, json_type_object)) {
                                json_object_put(o);
                                return svff_error_set(err, -EBADMSG, "QMP peer sent a message that is not a JSON object (%s)",
                                                      why ?: "wrong type");
                        }
                        *ret = o;
                        return 0;
                }
                if (q->len >= QMP_MESSAGE_MAX)
                        return svff_error_set(err, -EMSGSIZE, "QMP message longer than %u bytes", QMP_MESSAGE_MAX);
                if (q->alloc - q->len < 4096) {
                        size_t na = q->alloc ? q->alloc * 2 : 8192;
                        char *nb;

                        if (na > QMP_MESSAGE_MAX + 4096)
                                na = QMP_MESSAGE_MAX + 4096;
                        nb = realloc(q->buf, na);
                        if (!nb)
                                return svff_error_set(err, -ENOMEM, "Out of memory reading QMP");
                        q->buf = nb;
                        q->alloc = na;
                }

                {
                        usec_t now = svff_now_usec();
                        struct pollfd p = { .fd = q->fd, .events = POLLIN };
                        ssize_t k;
                        int pr, ms;

                        if (now >= deadline)
                                return svff_error_set(err, -ETIMEDOUT, "QEMU did not answer in time");
                        ms = (int) ((deadline - now + 999) / 1000);
                        pr = poll(&p, 1, ms);
                        if (pr < 0 && errno == EINTR)
                                continue;
                        if (pr < 0)
                                return svff_error_set_errno(err, -errno, "Waiting for QEMU");
                        if (pr == 0)
                                continue;
                        k = read(q->fd, q->buf + q->len, q->alloc - q->len);
                        if (k < 0 && (errno == EINTR || errno == EAGAIN))
                                continue;
                        if (k < 0)
                                return svff_error_set_errno(err, errno == ECONNRESET ? -ECONNRESET : -errno,
                                                            "Reading from QEMU's monitor");
                        if (k == 0)
                                return svff_error_set(err, -ECONNRESET,
                                                      "QEMU closed its monitor (it exited or was killed)");
                        q->len += (size_t) k;
                }
        }
}

static int queue_event(struct svff_qmp *q, struct json_object *ev) {
        if (q->n_events >= QMP_EVENTS_MAX) {
                json_object_put(q->events[0]);
                memmove(q->events, q->events + 1, (q->n_events - 1) * sizeof(*q->events));
                q->n_events--;
        }
        if (!q->events) {
                q->events = calloc(QMP_EVENTS_MAX, sizeof(*q->events));
                if (!q->events) {
                        json_object_put(ev);
                        return -ENOMEM;
                }
        }
        q->events[q->n_events++] = ev;
        return 0;
}

static int write_all(int fd, const char *s, size_t n, struct svff_error *err) {
        while (n > 0) {
                ssize_t k = send(fd, s, n, MSG_NOSIGNAL);

                if (k < 0 && errno == EINTR)
                        continue;
                if (k < 0)
                        return svff_error_set_errno(err, errno == EPIPE ? -ECONNRESET : -errno,
                                                    "Writing to QEMU's monitor");
                s += k;
                n -= (size_t) k;
        }
        return 0;
}

/* The return value of reply, or its error mapped. */
static int reply_result(struct json_object *reply, const char *command, struct json_object **ret_return,
                        struct svff_error *err) {
        struct json_object *e, *v;

        if (json_object_object_get_ex(reply, "error", &e)) {
                const char *class = NULL, *desc = NULL;

                (void) svff_json_get_string(e, "class", &class);
                (void) svff_json_get_string(e, "desc", &desc);
                return svff_error_set(err, error_to_errno(class), "QEMU refused '%s': %s (%s)", command,
                                      desc ?: "no description", class ?: "no class");
        }
        if (!json_object_object_get_ex(reply, "return", &v))
                return svff_error_set(err, -EBADMSG, "QEMU's reply to '%s' has neither return nor error", command);
        if (ret_return)
                *ret_return = json_object_get(v);
        return 0;
}

static int execute_direct(struct svff_qmp *q, const char *command, struct json_object *arguments,
                          usec_t timeout, struct json_object **ret_return, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *msg = json_object_new_object();
        _cleanup_free_ char *s = NULL;
        usec_t deadline = svff_now_usec() + timeout;
        char id[32];
        size_t n;
        int r;

        if (!msg)
                return -ENOMEM;
        snprintf(id, sizeof(id), "svff-%llu", ++q->next_id);
        json_object_object_add(msg, "execute", json_object_new_string(command));
        if (arguments)
                json_object_object_add(msg, "arguments", json_object_get(arguments));
        json_object_object_add(msg, "id", json_object_new_string(id));
        r = svff_json_format(msg, JSON_C_TO_STRING_PLAIN, &s, &n);
        if (r < 0)
                return svff_error_set(err, r, "Cannot encode QMP command '%s'", command);
        r = write_all(q->fd, s, n, err);
        if (r >= 0)
                r = write_all(q->fd, "\r\n", 2, err);
        if (r < 0)
                return r;

        for (;;) {
                _cleanup_(json_object_putp) struct json_object *m = NULL;
                const char *got;

                r = read_message(q, deadline, &m, err);
                if (r < 0)
                        return r;
                if (json_object_object_get_ex(m, "event", NULL)) {
                        r = queue_event(q, TAKE_PTR(m));
                        if (r < 0)
                                return svff_error_set(err, r, "Out of memory queueing a QMP event");
                        continue;
                }
                /* Replies to commands that timed out earlier carry other
                 * ids: skip them. */
                if (svff_json_get_string(m, "id", &got) < 0 || !streq(got, id))
                        continue;
                return reply_result(m, command, ret_return, err);
        }
}

static int execute_libvirt(struct svff_qmp *q, const char *command, struct json_object *arguments,
                           struct json_object **ret_return, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *msg = json_object_new_object(), *reply = NULL;
        _cleanup_free_ char *s = NULL, *result = NULL;
        int r;

        if (!msg)
                return -ENOMEM;
        json_object_object_add(msg, "execute", json_object_new_string(command));
        if (arguments)
                json_object_object_add(msg, "arguments", json_object_get(arguments));
        r = svff_json_format(msg, JSON_C_TO_STRING_PLAIN, &s, NULL);
        if (r < 0)
                return svff_error_set(err, r, "Cannot encode QMP command '%s'", command);
        if (virDomainQemuMonitorCommand(q->dom, s, &result, 0) < 0) {
                virErrorPtr e = virGetLastError();

                return svff_error_set(err, e && (e->code == VIR_ERR_OPERATION_INVALID) ? -EINVAL : -EIO,
                                      "QMP '%s' through libvirt for domain '%s': %s", command,
                                      strna(virDomainGetName(q->dom)), e && e->message ? e->message : "failed");
        }
        r = svff_json_parse(result, strlen(result), QMP_DEPTH_MAX, &reply, NULL);
        if (r < 0 || !json_object_is_type(reply, json_type_object))
                return svff_error_set(err, -EBADMSG, "libvirt returned a QMP reply that is not a JSON object");
        return reply_result(reply, command, ret_return, err);
}

int svff_qmp_execute(struct svff_qmp *q, const char *command, struct json_object *arguments,
                     usec_t timeout, struct json_object **ret_return, struct svff_error *err) {
        if (!q || !command)
                return -EINVAL;
        if (q->dom)
                return execute_libvirt(q, command, arguments, ret_return, err);
        return execute_direct(q, command, arguments, timeout, ret_return, err);
}

int svff_qmp_connect(const char *path, usec_t timeout, struct svff_qmp **ret, struct svff_error *err) {
        _cleanup_(svff_qmp_freep) struct svff_qmp *q = NULL;
        _cleanup_(json_object_putp) struct json_object *greeting = NULL;
        struct sockaddr_un sa = { .sun_family = AF_UNIX };
        struct json_object *qmp, *ver;
        usec_t deadline = svff_now_usec() + timeout;
        int r;

        if (!path || strlen(path) >= sizeof(sa.sun_path))
                return svff_error_set(err, -EINVAL, "QMP socket path '%s' is too long", strna(path));
        q = qmp_alloc();
        if (!q)
                return -ENOMEM;
        q->fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
        if (q->fd < 0)
                return svff_error_set_errno(err, -errno, "Cannot create a socket for QMP");
        memcpy(sa.sun_path, path, strlen(path));
        if (connect(q->fd, (struct sockaddr *) &sa, sizeof(sa)) < 0)
                return svff_error_set_errno(err, -errno, "Cannot connect to QMP socket '%s'", path);

        r = read_message(q, deadline, &greeting, err);
        if (r < 0)
                return r;
        if (!json_object_object_get_ex(greeting, "QMP", &qmp))
                return svff_error_set(err, -EPROTO, "'%s' did not greet with QMP", path);
        if (json_object_object_get_ex(qmp, "version", &ver) &&
            json_object_object_get_ex(ver, "qemu", &ver))
                q->greeting_version = json_object_get(ver);

        r = execute_direct(q, "qmp_capabilities", NULL, deadline > svff_now_usec() ? deadline - svff_now_usec() : 0,
                           NULL, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(q);
        return 0;
}

int svff_qmp_new_libvirt(virDomainPtr dom, struct svff_qmp **ret) {
        struct svff_qmp *q;

        if (!dom || !ret)
                return -EINVAL;
        q = qmp_alloc();
        if (!q)
                return -ENOMEM;
        if (virDomainRef(dom) < 0) {
                free(q);
                return -EINVAL;
        }
        q->dom = dom;
        *ret = q;
        return 0;
}

int svff_qmp_has_command(struct svff_qmp *q, const char *command, usec_t timeout, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *list = NULL;
        int r;

        r = svff_qmp_execute(q, "query-commands", NULL, timeout, &list, err);
        if (r < 0)
                return r;
        if (!json_object_is_type(list, json_type_array))
                return svff_error_set(err, -EBADMSG, "query-commands did not return a list");
        for (size_t i = 0; i < json_object_array_length(list); i++) {
                const char *name;

                if (svff_json_get_string(json_object_array_get_idx(list, i), "name", &name) >= 0 &&
                    streq(name, command))
                        return 1;
        }
        return 0;
}

int svff_qmp_next_event(struct svff_qmp *q, usec_t timeout, struct json_object **ret, struct svff_error *err) {
        usec_t deadline = svff_now_usec() + timeout;

        if (!q || !ret)
                return -EINVAL;
        if (q->dom)
                return svff_error_set(err, -EOPNOTSUPP, "QMP events are not available through libvirt's passthrough");
        if (q->n_events > 0) {
                *ret = q->events[0];
                memmove(q->events, q->events + 1, (q->n_events - 1) * sizeof(*q->events));
                q->n_events--;
                return 0;
        }
        for (;;) {
                _cleanup_(json_object_putp) struct json_object *m = NULL;
                int r = read_message(q, deadline, &m, err);

                if (r < 0)
                        return r;
                if (json_object_object_get_ex(m, "event", NULL)) {
                        *ret = TAKE_PTR(m);
                        return 0;
                }
                /* a late reply to a command that timed out: drop it */
        }
}

static bool event_matches(struct json_object *ev, const char *name, const char *key, const char *value) {
        struct json_object *data;
        const char *n, *v;

        if (svff_json_get_string(ev, "event", &n) < 0 || !streq(n, name))
                return false;
        if (!key)
                return true;
        return json_object_object_get_ex(ev, "data", &data) && svff_json_get_string(data, key, &v) >= 0 &&
               streq(v, value);
}

int svff_qmp_wait_event(struct svff_qmp *q, const char *name, const char *key, const char *value,
                        usec_t timeout, struct json_object **ret, struct svff_error *err) {
        usec_t deadline = svff_now_usec() + timeout;

        if (!q || !name || (key && !value))
                return -EINVAL;
        if (q->dom)
                return svff_error_set(err, -EOPNOTSUPP, "QMP events are not available through libvirt's passthrough");
        for (size_t i = 0; i < q->n_events; i++)
                if (event_matches(q->events[i], name, key, value)) {
                        struct json_object *ev = q->events[i];

                        memmove(q->events + i, q->events + i + 1, (q->n_events - i - 1) * sizeof(*q->events));
                        q->n_events--;
                        if (ret)
                                *ret = ev;
                        else
                                json_object_put(ev);
                        return 0;
                }
        for (;;) {
                _cleanup_(json_object_putp) struct json_object *m = NULL;
                int r = read_message(q, deadline, &m, err);

                if (r == -ETIMEDOUT) {
                        svff_error_free(err);
                        return svff_error_set(err, r, "No %s event within the deadline", name);
                }
                if (r < 0)
                        return r;
                if (!json_object_object_get_ex(m, "event", NULL))
                        continue;
                if (event_matches(m, name, key, value)) {
                        if (ret)
                                *ret = TAKE_PTR(m);
                        return 0;
                }
                r = queue_event(q, TAKE_PTR(m));
                if (r < 0)
                        return r;
        }
}

int svff_qmp_device_pause(struct svff_qmp *q, const char *command, const char *device_id, usec_t timeout,
                          struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *args = NULL;
        int r;

        if (!q || !command || !device_id)
                return -EINVAL;
        args = json_object_new_object();
        if (!args)
                return -ENOMEM;
        json_object_object_add(args, "id", json_object_new_string(device_id));
        /* Asked straight away: a QEMU without it answers CommandNotFound,
         * which costs less than fetching query-commands' long list first. */
        r = svff_qmp_execute(q, command, args, timeout, NULL, err);
        if (r == -EOPNOTSUPP) {
                svff_error_free(err);
                return svff_error_set(err, r, "QEMU does not offer '%s'", command);
        }
        return r;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <time.h>

#include "log.h"
#include "monitor.h"

struct monitor {
        struct call **subscribers;
        size_t n_subscribers, alloc_subscribers;
        size_t backlog;
};

static uint64_t now_realtime(void) {
        struct timespec ts;

        clock_gettime(CLOCK_REALTIME, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000;
}

int monitor_new(struct monitor **ret) {
        struct monitor *b = calloc(1, sizeof(*b));

        if (!b)
                return -ENOMEM;
        *ret = b;
        return 0;
}

struct monitor *monitor_free(struct monitor *b) {
        if (!b)
                return NULL;
        for (size_t i = 0; i < b->n_subscribers; i++) {
                call_set_disconnect_handler(b->subscribers[i], NULL, NULL);
                call_unref(b->subscribers[i]);
        }
        free(b->subscribers);
        free(b);
        return NULL;
}

void monitor_set_backlog(struct monitor *b, size_t bytes) {
        b->backlog = bytes;
}

static bool forget(struct monitor *b, struct call *call) {
        for (size_t i = 0; i < b->n_subscribers; i++)
                if (b->subscribers[i] == call) {
                        b->subscribers[i] = b->subscribers[--b->n_subscribers];
                        return true;
                }
        return false;
}

static void subscriber_gone(struct call *call, void *userdata) {
        if (forget(userdata, call))
                call_unref(call);
}

/* A subscriber fell behind by more than monitor_backlog_bytes and then
 * read what was waiting: it gets one last event saying how many it
 * missed (so it knows to re-read the state with List), then the server
 * hangs up. */
static void subscriber_overflow(struct call *call, uint64_t n_dropped, void *userdata) {
        struct monitor *b = userdata;
        struct json_object *p, *ev;
        bool found;

        log_info("Monitor client pid %d uid %u fell behind, %" PRIu64 " events dropped; ending its stream.",
                 (int) call_peer(call)->pid, (unsigned) call_peer(call)->uid, n_dropped);
        call_set_disconnect_handler(call, NULL, NULL);
        found = forget(b, call);

        p = json_object_new_object();
        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("events-dropped"));
        json_object_object_add(ev, "timestamp_usec", json_object_new_int64((int64_t) now_realtime()));
        json_object_object_add(ev, "dropped", json_object_new_int64((int64_t) MIN(n_dropped, (uint64_t) INT64_MAX)));
        json_object_object_add(p, "event", ev);
        (void) call_reply(call, p);
        json_object_put(p);
        if (found)
                call_unref(call);  /* the subscribers' reference */
}

int monitor_subscribe(struct monitor *b, struct call *call) {
        if (b->n_subscribers == b->alloc_subscribers) {
                size_t a = b->alloc_subscribers ? b->alloc_subscribers * 2 : 8;
                struct call **n = realloc(b->subscribers, a * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                b->subscribers = n;
                b->alloc_subscribers = a;
        }
        b->subscribers[b->n_subscribers++] = call_ref(call);
        call_set_disconnect_handler(call, subscriber_gone, b);
        call_set_backlog(call, b->backlog, subscriber_overflow, b);
        return 0;
}

void monitor_emit(struct monitor *b, struct call *also, struct json_object *event) {
        struct json_object *wrap;
        struct blob *blob = NULL;
        char *msg = NULL;
        size_t len;

        if (!event)
                return;
        json_object_object_add(event, "timestamp_usec", json_object_new_int64((int64_t) now_realtime()));
        wrap = json_object_new_object();
        if (!wrap) {
                json_object_put(event);
                return;
        }
        json_object_object_add(wrap, "event", event);

        /* Encoded once, queued to every subscriber without a copy: what
         * lagging subscribers hold is one copy of the events they lag by,
         * not one each. */
        if (svff_varlink_encode_reply(wrap, true, &msg, &len) >= 0) {
                blob = blob_new(msg, len);
                if (!blob)
                        free(msg);
        }
        if (blob) {
                for (size_t i = 0; b && i < b->n_subscribers; i++)
                        (void) call_notify_blob(b->subscribers[i], blob);
                if (also && call_request(also)->more && call_is_connected(also))
                        (void) call_notify_blob(also, blob);
                blob_unref(blob);
        } else
                log_warning("Failed to encode a '%s' event, not sending it.",
                            json_object_get_string(json_object_object_get(event, "event")));
        json_object_put(wrap);
}

void monitor_end(struct monitor *b) {
        struct json_object *p, *ev;

        p = json_object_new_object();
        ev = json_object_new_object();
        json_object_object_add(ev, "event", json_object_new_string("shutdown"));
        json_object_object_add(ev, "timestamp_usec", json_object_new_int64((int64_t) now_realtime()));
        json_object_object_add(p, "event", ev);
        while (b->n_subscribers > 0) {
                struct call *c = b->subscribers[--b->n_subscribers];

                call_set_disconnect_handler(c, NULL, NULL);
                (void) call_reply(c, p);
                call_unref(c);
        }
        json_object_put(p);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <libvirt/virterror.h>

#include "hv-removals.h"
#include "hypervisor.h"
#include "libvirt.h"
#include "log.h"

#define BACKOFF_MIN_USEC (250 * 1000ULL)
#define BACKOFF_MAX_USEC (10 * 1000000ULL)
#define BUSY_MAX 4096u  /* VF operations in flight, bounded by the VFs there are */

struct hv {
        sd_event *event;
        struct hv_callbacks cb;
        void *userdata;
        char *uri;
        struct worker_pool *pool;

        pthread_t event_thread;
        bool event_thread_started;
        atomic_bool stop;
        int wake_timer;

        virConnectPtr conn;             /* NULL while disconnected */
        int lifecycle_id, removed_id;
        struct svff_hv_removals *removals;
        bool connecting;
        bool stopping;
        char *last_error;               /* why the last connect failed */
        usec_t backoff;
        sd_event_source *reconnect;

        char **busy;
        size_t n_busy;
};

struct worker_pool *hv_pool(struct hv *h) {
        return h->pool;
}

struct svff_hv_removals *hv_removals(struct hv *h) {
        return h->removals;
}

const char *hv_uri(struct hv *h) {
        return h->uri;
}

bool hv_connected(struct hv *h) {
        return h && h->conn;
}

/* ---- the event thread ---- */

static void *event_thread(void *userdata) {
        struct hv *h = userdata;

        while (!atomic_load(&h->stop))
                if (virEventRunDefaultImpl() < 0)
                        break;
        return NULL;
}

static void wake_cb(int timer, void *opaque) {
        virEventRemoveTimeout(timer);
}

/* libvirt prints every error to stderr unless told otherwise; svffd
 * reports them itself, with context. */
static void quiet_error(void *userdata, virErrorPtr e) {
}

/* ---- callbacks (event thread) -> main thread ---- */

struct lifecycle {
        struct hv *h;
        char uuid[SVFF_UUID_STRLEN];
        char name[SVFF_DOMAIN_NAME_MAX];
        int event, detail;
};

static void lifecycle_main(void *userdata) {
        struct lifecycle *l = userdata;

        if (!l->h->stopping && l->h->cb.domain_event)
                l->h->cb.domain_event(l->uuid, l->name, l->event, l->detail, l->h->userdata);
        free(l);
}

static int on_lifecycle(virConnectPtr conn, virDomainPtr dom, int event, int detail, void *opaque) {
        struct hv *h = opaque;
        struct lifecycle *l = calloc(1, sizeof(*l));

        if (!l)
                return 0;
        l->h = h;
        if (virDomainGetUUIDString(dom, l->uuid) < 0) {
                free(l);
                return 0;
        }
        snprintf(l->name, sizeof(l->name), "%s", strna(virDomainGetName(dom)));
        l->event = event;
        l->detail = detail;
        if (worker_pool_post(h->pool, lifecycle_main, l) < 0)
                free(l);
        return 0;
}

/* Straight from the event thread: waiting detaches need no main loop. */
static void on_device_removed(virConnectPtr conn, virDomainPtr dom, const char *alias, void *opaque) {
        struct hv *h = opaque;
        char uuid[SVFF_UUID_STRLEN];

        if (alias && virDomainGetUUIDString(dom, uuid) >= 0)
                svff_hv_removals_note(h->removals, uuid, alias);
}

/* Drops what connecting registered on conn. */
static void deregister(virConnectPtr conn, int *lifecycle_id, int *removed_id) {
        if (*lifecycle_id >= 0)
                (void) virConnectDomainEventDeregisterAny(conn, *lifecycle_id);
        if (*removed_id >= 0)
                (void) virConnectDomainEventDeregisterAny(conn, *removed_id);
        *lifecycle_id = *removed_id = -1;
}

struct closed {
        struct hv *h;
        virConnectPtr conn;     /* identity only, never dereferenced */
        int reason;
};

static void schedule_reconnect(struct hv *h);
static void on_close(virConnectPtr conn, int reason, void *opaque);

static void close_old_run(void *userdata) {
        virConnectPtr conn = userdata;

        /* A dead connection closes at once; a live one (a call failed for
         * another reason) is dropped the same way. libvirt unregisters a
         * close callback only when named: NULL matches none. */
        (void) virConnectUnregisterCloseCallback(conn, on_close);
        virConnectClose(conn);
}

static void lost(struct hv *h, const char *why) {
        virConnectPtr old = TAKE_PTR(h->conn);

        if (!old)
                return;
        log_warning("Lost the libvirt connection to '%s' (%s); reconnecting.", h->uri, why);
        free(h->last_error);
        h->last_error = strdup(why);
        deregister(old, &h->lifecycle_id, &h->removed_id);
        if (worker_pool_submit(h->pool, close_old_run, old) < 0)
                virConnectClose(old);

        if (h->cb.disconnected)
                h->cb.disconnected(why, h->userdata);
        h->backoff = BACKOFF_MIN_USEC;
        schedule_reconnect(h);
}

static void closed_main(void *userdata) {
        struct closed *c = userdata;

        if (!c->h->stopping && c->conn == c->h->conn)
                lost(c->h, c->reason == VIR_CONNECT_CLOSE_REASON_EOF ? "libvirtd closed the connection"
                           : c->reason == VIR_CONNECT_CLOSE_REASON_KEEPALIVE ? "libvirtd stopped answering keepalives"
                           : "the connection was closed");
        free(c);
}

static void on_close(virConnectPtr conn, int reason, void *opaque) {
        struct hv *h = opaque;
        struct closed *c = calloc(1, sizeof(*c));

        if (!c)
                return;
        *c = (struct closed) { .h = h, .conn = conn, .reason = reason };
        if (worker_pool_post(h->pool, closed_main, c) < 0)
                free(c);
}

void hv_conn_failed(struct hv *h, virConnectPtr conn) {
        if (h->conn && h->conn == conn)
                lost(h, "a call failed because libvirtd went away");
}

/* ---- connecting (pool) ---- */

struct connect_job {
        struct hv *h;
        char *uri;
        virConnectPtr conn;
        int lifecycle_id, removed_id;
        int r;
        struct svff_error err;
};

static void connect_done(void *userdata) {
        struct connect_job *j = userdata;
        struct hv *h = j->h;

        h->connecting = false;
        if (h->stopping) {
                if (j->conn) {
                        deregister(j->conn, &j->lifecycle_id, &j->removed_id);
                        (void) virConnectUnregisterCloseCallback(j->conn, on_close);
                        virConnectClose(j->conn);
                }
        } else if (j->r < 0) {
                const char *msg = svff_error_message(&j->err);

                if (!h->last_error || !streq(h->last_error, msg))
                        log_warning("%s; retrying in the background.", msg);
                free(h->last_error);
                h->last_error = strdup(msg);
                schedule_reconnect(h);
        } else {
                h->conn = j->conn;
                h->lifecycle_id = j->lifecycle_id;
                h->removed_id = j->removed_id;
                h->backoff = 0;
                free(h->last_error);
                h->last_error = NULL;
                log_info("Connected to libvirt at '%s'.", h->uri);
                if (h->cb.connected)
                        h->cb.connected(h->uri, h->userdata);
        }
        svff_error_free(&j->err);
        free(j->uri);
        free(j);
}

static void connect_run_and_post(void *userdata) {
        struct connect_job *j = userdata;

        j->lifecycle_id = j->removed_id = -1;
        j->r = svff_hv_open(j->uri, &j->conn, &j->err);
        if (j->r >= 0) {
                (void) virConnectRegisterCloseCallback(j->conn, on_close, j->h, NULL);
                (void) virConnectSetKeepAlive(j->conn, 5, 3);
                j->lifecycle_id = virConnectDomainEventRegisterAny(j->conn, NULL, VIR_DOMAIN_EVENT_ID_LIFECYCLE,
                                                                   VIR_DOMAIN_EVENT_CALLBACK(on_lifecycle),
                                                                   j->h, NULL);
                j->removed_id = virConnectDomainEventRegisterAny(j->conn, NULL, VIR_DOMAIN_EVENT_ID_DEVICE_REMOVED,
                                                                 VIR_DOMAIN_EVENT_CALLBACK(on_device_removed),
                                                                 j->h, NULL);
        }
        if (worker_pool_post(j->h->pool, connect_done, j) < 0 && j->conn)
                virConnectClose(j->conn);
}

static void start_connect(struct hv *h) {
        struct connect_job *j;

        if (h->connecting || h->conn || h->stopping)
                return;
        j = calloc(1, sizeof(*j));
        if (!j || !(j->uri = strdup(h->uri))) {
                free(j);
                schedule_reconnect(h);
                return;
        }
        j->h = h;
        h->connecting = true;
        if (worker_pool_submit(h->pool, connect_run_and_post, j) < 0) {
                h->connecting = false;
                free(j->uri);
                free(j);
        }
}

static int on_reconnect(sd_event_source *s, uint64_t usec, void *userdata) {
        struct hv *h = userdata;

        h->reconnect = sd_event_source_unref(h->reconnect);
        start_connect(h);
        return 0;
}

static void schedule_reconnect(struct hv *h) {
        int r;

        if (h->stopping || h->reconnect)
                return;
        h->backoff = h->backoff ? h->backoff * 2 : BACKOFF_MIN_USEC;
        if (h->backoff > BACKOFF_MAX_USEC)
                h->backoff = BACKOFF_MAX_USEC;
        r = sd_event_add_time_relative(h->event, &h->reconnect, CLOCK_MONOTONIC, h->backoff, 0,
                                       on_reconnect, h);
        if (r < 0)
                log_error_errno(r, "Failed to schedule a libvirt reconnect: %m");
}

virConnectPtr hv_conn_ref(struct hv *h, struct svff_error *err) {
        if (!h->conn) {
                svff_error_set(err, -ENOTCONN, "libvirt at '%s' is not reachable (%s); svffd keeps reconnecting, "
                               "try again once it is back",
                               h->uri, h->last_error ?: "connecting");
                return NULL;
        }
        if (virConnectRef(h->conn) < 0) {
                svff_error_set(err, -ENOTCONN, "libvirt at '%s' is not reachable", h->uri);
                return NULL;
        }
        return h->conn;
}

/* ---- busy VFs ---- */

bool hv_vf_busy(struct hv *h, const char *vf) {
        for (size_t i = 0; i < h->n_busy; i++)
                if (streq(h->busy[i], vf))
                        return true;
        return false;
}

int hv_vf_set_busy(struct hv *h, const char *vf) {
        char **n;

        if (hv_vf_busy(h, vf))
                return -EBUSY;
        if (h->n_busy >= BUSY_MAX)
                return -EBUSY;
        n = realloc(h->busy, (h->n_busy + 1) * sizeof(char *));
        if (!n)
                return -ENOMEM;
        h->busy = n;
        h->busy[h->n_busy] = strdup(vf);
        if (!h->busy[h->n_busy])
                return -ENOMEM;
        h->n_busy++;
        return 0;
}

void hv_vf_clear_busy(struct hv *h, const char *vf) {
        for (size_t i = 0; i < h->n_busy; i++)
                if (streq(h->busy[i], vf)) {
                        free(h->busy[i]);
                        h->busy[i] = h->busy[--h->n_busy];
                        return;
                }
}

/* ---- life cycle ---- */

int hv_new(sd_event *event, const char *uri, unsigned n_threads, const struct hv_callbacks *cb, void *userdata,
           struct hv **ret) {
        static atomic_bool registered = false;  /* libvirt's event impl is process-wide by design */
        struct hv *h;
        int r;

        if (!atomic_exchange(&registered, true)) {
                svff_hv_init();
                virSetErrorFunc(NULL, quiet_error);
                if (virInitialize() < 0 || virEventRegisterDefaultImpl() < 0)
                        return log_error_errno(-EIO, "Failed to set up libvirt's event loop: %s",
                                               strna(virGetLastErrorMessage()));
        }
        h = calloc(1, sizeof(*h));
        if (!h)
                return log_oom();
        h->event = sd_event_ref(event);
        if (cb)
                h->cb = *cb;
        h->userdata = userdata;
        h->lifecycle_id = h->removed_id = -1;
        h->wake_timer = -1;
        h->uri = strdup(uri);
        if (!h->uri || svff_hv_removals_new(&h->removals) < 0) {
                free(h->uri);
                sd_event_unref(h->event);
                free(h);
                return log_oom();
        }
        r = worker_pool_new(event, "virt", n_threads, &h->pool);
        if (r < 0) {
                hv_free(h);
                return log_error_errno(r, "Failed to start the libvirt worker threads: %m");
        }
        r = -pthread_create(&h->event_thread, NULL, event_thread, h);
        if (r < 0) {
                hv_free(h);
                return log_error_errno(r, "Failed to start the libvirt event thread: %m");
        }
        (void) pthread_setname_np(h->event_thread, "svffd-virtev");
        h->event_thread_started = true;
        start_connect(h);
        *ret = h;
        return 0;
}

void hv_free(struct hv *h) {
        if (!h)
                return;
        h->stopping = true;
        h->reconnect = sd_event_source_disable_unref(h->reconnect);

        /* No more callbacks posting to the pool... */
        if (h->conn) {
                deregister(h->conn, &h->lifecycle_id, &h->removed_id);
                (void) virConnectUnregisterCloseCallback(h->conn, on_close);
        }
        /* ...then let running jobs finish: they may need the event loop
         * (the embedded QEMU driver talks to QEMU through it). */
        worker_pool_stop(h->pool);
        if (h->conn)
                virConnectClose(TAKE_PTR(h->conn));

        if (h->event_thread_started) {
                atomic_store(&h->stop, true);
                h->wake_timer = virEventAddTimeout(0, wake_cb, NULL, NULL);
                pthread_join(h->event_thread, NULL);
        }
        /* Only now: a callback already running on the event thread may
         * have posted to the pool until the thread ended. What it posted
         * sees h->stopping and does nothing. */
        worker_pool_free(h->pool);
        h->pool = NULL;
        for (size_t i = 0; i < h->n_busy; i++)
                free(h->busy[i]);
        free(h->busy);
        svff_hv_removals_free(h->removals);
        free(h->last_error);
        free(h->uri);
        sd_event_unref(h->event);
        free(h);
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's link to libvirt: libvirt's event loop on a dedicated thread,
 * the connection (opened, and re-opened with backoff when it drops),
 * domain lifecycle events, and the "libvirt" worker pool on which every
 * libvirt call runs.
 *
 * Threads: the main thread owns struct hv. The libvirt event thread
 * only runs virEventRunDefaultImpl() and libvirt's callbacks, which
 * copy what they got and post it to the main thread. Jobs on the pool
 * get their own reference to the connection (hv_conn_ref()) and never
 * touch main-thread objects. No libvirt call runs on the main thread
 * while serving, so a slow libvirtd never delays List or Status. */

#include <stdbool.h>
#include <libvirt/libvirt.h>
#include <systemd/sd-event.h>

#include "error.h"
#include "worker.h"

struct hv;

/* What hv reports, on the main thread. It knows nothing of what svffd
 * does with it: the one who creates it says (svffd.c). Any may be NULL. */
struct hv_callbacks {
        /* A domain lifecycle event (VIR_DOMAIN_EVENT_*). */
        void (*domain_event)(const char *uuid, const char *name, int event, int detail, void *userdata);
        /* Connected (at start, or again after a loss). */
        void (*connected)(const char *uri, void *userdata);
        /* The connection was lost; hv reconnects with backoff. */
        void (*disconnected)(const char *why, void *userdata);
};

/* Registers libvirt's event implementation (process-wide), starts the
 * event thread and the pool, and starts connecting to uri. Call after
 * signals are blocked (the threads inherit the mask). cb is copied. */
int hv_new(sd_event *event, const char *uri, unsigned n_threads, const struct hv_callbacks *cb, void *userdata,
           struct hv **ret);
/* Lets running jobs finish (their results are delivered), closes the
 * connection, stops the event thread. Accepts NULL. */
void hv_free(struct hv *h);

struct worker_pool *hv_pool(struct hv *h);
/* Device removals libvirt reported, for svff_hv_detach() to wait on. */
struct svff_hv_removals *hv_removals(struct hv *h);
const char *hv_uri(struct hv *h);
bool hv_connected(struct hv *h);

/* A new reference to the connection for a job (main thread), or NULL and
 * err set to -ENOTCONN with why libvirt is unreachable. */
virConnectPtr hv_conn_ref(struct hv *h, struct svff_error *err);

/* A job's call on conn failed with -ENOTCONN (main thread): treat the
 * connection as lost, unless it was replaced already. */
void hv_conn_failed(struct hv *h, virConnectPtr conn);

/* VFs with an attach, detach, pause or unpause in flight: one at a time
 * per VF. set returns -EBUSY when vf is busy already. */
bool hv_vf_busy(struct hv *h, const char *vf);
int hv_vf_set_busy(struct hv *h, const char *vf);
void hv_vf_clear_busy(struct hv *h, const char *vf);

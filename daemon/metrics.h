/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's metrics as a file for node_exporter's textfile collector
 * (metrics_textfile in svff.conf): the Prometheus text format, written
 * atomically (temp file, fsync, rename) after each state change, at most
 * once a second. No server: node_exporter serves the file.
 *
 * The owner (struct manager, opaque here) says what changed
 * (metrics_changed, metrics_snapshot_changed). When the file is due, the
 * refresh callback it gave gets a snapshot fresh enough (svffd's own
 * sysfs changes read back) and calls metrics_write, which has the collect
 * callback fill a sample with the running state. What only the writer
 * accumulates (the reconf durations, the provision failures) is kept
 * here. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

#include "snapshot.h"

struct manager;
struct metrics;
struct metrics_sample;

/* Fills s (metrics_sample_*) from the owner's state; main thread. */
typedef void (*metrics_collect_fn)(struct manager *m, struct metrics_sample *s);
/* The file is due: call metrics_write once the state is fresh enough. */
typedef void (*metrics_refresh_fn)(struct manager *m);

int metrics_new(sd_event *event, struct manager *owner, metrics_refresh_fn refresh, struct metrics **ret);
/* Writes a last file saying svffd is down (svff_up 0), when one was
 * written. Accepts NULL. */
struct metrics *metrics_free(struct metrics *mt);

/* Nothing is written before there is a collector. */
void metrics_set_collector(struct metrics *mt, metrics_collect_fn collect);
/* What no event announces (a device class's state, a missed uevent):
 * while there is a file, poll is called every period (0: never), for the
 * owner to look and call metrics_changed() when something changed. A new
 * period counts from now. */
typedef void (*metrics_poll_fn)(struct manager *m);
void metrics_set_poller(struct metrics *mt, metrics_poll_fn poll);
void metrics_set_poll_period(struct metrics *mt, uint64_t usec);
/* The file to write (copied), or NULL for none (the default); a new
 * path is written at once. -ENOMEM. */
int metrics_set_path(struct metrics *mt, const char *path);

/* Something svffd reports changed: the file is written again within a
 * second. Accepts NULL. */
void metrics_changed(struct metrics *mt);
/* The current snapshot was replaced by s, which the collect callback
 * reads from now on: a change when what the file reports of it (PFs,
 * counts, VF drivers) differs. A pass with nothing new (a List's, the
 * poll's), or one that comes while the file is due (the one the refresh
 * waits for), writes nothing more. */
void metrics_snapshot_changed(struct metrics *mt, const struct snapshot *s);
/* Writes the file now (the refresh callback's answer). Accepts NULL. */
void metrics_write(struct metrics *mt);
/* A reconf (or reprogram) ended after usec. Accepts NULL. */
void metrics_observe_reconf(struct metrics *mt, uint64_t usec);
/* One assignment's time without its device through a reconf (a running
 * domain's, as the reply gives it in device_off_msec). */
void metrics_observe_downtime(struct metrics *mt, uint64_t usec);
/* A VF's device class could not be provisioned. Accepts NULL. */
void metrics_count_provision_failure(struct metrics *mt);

/* For the collect callback: -ENOMEM. owner may be NULL. */
int metrics_sample_add_pf(struct metrics_sample *s, const char *pf, const char *owner, unsigned numvfs,
                          unsigned totalvfs);
/* A NIC VF's counters (IFLA_VF_STATS), by the names and labels of
 * sriov-network-metrics-exporter: key is the counter's key in the NIC
 * class's inspection ("counters"). */
enum {
        METRICS_VF_RX_BYTES,
        METRICS_VF_TX_BYTES,
        METRICS_VF_RX_PACKETS,
        METRICS_VF_TX_PACKETS,
        METRICS_VF_RX_DROPPED,
        METRICS_VF_TX_DROPPED,
        METRICS_VF_N,
};
struct metrics_vf_name {
        const char *name, *key, *help;
};
extern const struct metrics_vf_name metrics_vf_names[METRICS_VF_N];
/* vf (pciAddr), its PF's interface pf, its index, the PF's NUMA node (-1:
 * none) and its counters, by METRICS_VF_*. */
int metrics_sample_add_vf(struct metrics_sample *s, const char *vf, const char *pf, unsigned index, int numa_node,
                          const uint64_t values[static METRICS_VF_N]);
/* One more assignment in state, one more drift of kind. */
int metrics_sample_add_assignment(struct metrics_sample *s, const char *state);
int metrics_sample_add_drift(struct metrics_sample *s, const char *kind);
void metrics_sample_set_operations(struct metrics_sample *s, unsigned n);
void metrics_sample_set_generation(struct metrics_sample *s, uint64_t generation);

/* Writes the text of s (and mt's own) to f: for tests and the writer. */
int metrics_format(struct metrics *mt, const struct metrics_sample *s, bool up, FILE *f);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* svffd's metrics as a file for node_exporter's textfile collector
 * (metrics_textfile in svff.conf): the Prometheus text format, written
 * atomically (temp file, fsync, rename) after each state change, at most
 * once a second. No server: node_exporter serves the file.
 *
 * The owner (struct manager, opaque here) says what changed
 * (metrics_changed) and, when the file is due, fills a sample with the
 * running state through the collect callback it gave. What only the
 * writer accumulates (the reconf durations, the provision failures) is
 * kept here. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <systemd/sd-event.h>

struct manager;
struct metrics;
struct metrics_sample;

/* Fills s (metrics_sample_*) from the owner's state; main thread. */
typedef void (*metrics_collect_fn)(struct manager *m, struct metrics_sample *s);

int metrics_new(sd_event *event, struct metrics **ret);
/* Writes a last file saying svffd is down (svff_up 0), when one was
 * written. Accepts NULL. */
struct metrics *metrics_free(struct metrics *mt);

void metrics_set_collector(struct metrics *mt, metrics_collect_fn collect, struct manager *owner);
/* The file to write (copied), or NULL for none (the default); a new
 * path is written at once. -ENOMEM. */
int metrics_set_path(struct metrics *mt, const char *path);

/* Something svffd reports changed: the file is written again within a
 * second. Accepts NULL. */
void metrics_changed(struct metrics *mt);
/* A reconf (or reprogram) ended after usec. Accepts NULL. */
void metrics_observe_reconf(struct metrics *mt, uint64_t usec);
/* A VF's device class could not be provisioned. Accepts NULL. */
void metrics_count_provision_failure(struct metrics *mt);

/* For the collect callback: -ENOMEM. owner may be NULL. */
int metrics_sample_add_pf(struct metrics_sample *s, const char *pf, const char *owner, unsigned numvfs,
                          unsigned totalvfs);
/* One more assignment in state, one more drift of kind. */
int metrics_sample_add_assignment(struct metrics_sample *s, const char *state);
int metrics_sample_add_drift(struct metrics_sample *s, const char *kind);
void metrics_sample_set_operations(struct metrics_sample *s, unsigned n);
void metrics_sample_set_generation(struct metrics_sample *s, uint64_t generation);

/* Writes the text of s (and mt's own) to f: for tests and the writer. */
int metrics_format(struct metrics *mt, const struct metrics_sample *s, bool up, FILE *f);

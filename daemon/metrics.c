/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

#include "config.h"
#include "log.h"
#include "macro.h"
#include "metrics.h"

/* Written at most this often: a reconf of many VFs changes state many
 * times a second. */
#define METRICS_INTERVAL_USEC (1000 * 1000ULL)

/* svff_reconf_duration_seconds: from a quick reconf of an idle PF to
 * one that detaches and re-attaches many domains. */
static const double reconf_buckets[] = { 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300 };

/* Always reported, 0 when there are none, so that a rule sees 0 rather
 * than no series. Others met are reported too. */
static const char *const assignment_states[] = { "attached", "held", "detaching" };
static const char *const drift_kinds[] = {
        "pf-missing", "numvfs-changed", "vf-missing", "driver-changed",
        "assignment-without-vf", "policy-failed", "interrupted", "class-drift",
};

struct count {
        char *label;
        uint64_t n;
};

const struct metrics_vf_name metrics_vf_names[METRICS_VF_N] = {
        [METRICS_VF_RX_BYTES] = { "sriov_vf_rx_bytes", "rx_bytes", "Bytes a NIC VF received, as its PF driver counts them." },
        [METRICS_VF_TX_BYTES] = { "sriov_vf_tx_bytes", "tx_bytes", "Bytes a NIC VF sent, as its PF driver counts them." },
        [METRICS_VF_RX_PACKETS] = { "sriov_vf_rx_packets", "rx_packets", "Packets a NIC VF received." },
        [METRICS_VF_TX_PACKETS] = { "sriov_vf_tx_packets", "tx_packets", "Packets a NIC VF sent." },
        [METRICS_VF_RX_DROPPED] = { "sriov_vf_rx_dropped", "rx_dropped", "Packets dropped on a NIC VF's receive." },
        [METRICS_VF_TX_DROPPED] = { "sriov_vf_tx_dropped", "tx_dropped", "Packets dropped on a NIC VF's send." },
};

struct metrics_pf {
        char *pf;
        char *owner;
        unsigned numvfs, totalvfs;
};

/* A NIC VF's counters, labelled as sriov-network-metrics-exporter's. */
struct metrics_vf {
        char *vf, *pf;                  /* pciAddr, pf (its PF's interface) */
        unsigned index;
        int numa_node;                  /* -1: none */
        uint64_t values[METRICS_VF_N];
};

struct metrics_sample {
        struct metrics_pf *pfs;
        size_t n_pfs;
        struct metrics_vf *vfs;
        size_t n_vfs;
        struct count *assignments, *drift;
        size_t n_assignments, n_drift;
        unsigned operations;
        uint64_t generation;
};

/* A Prometheus histogram over reconf_buckets (seconds). */
struct histogram {
        uint64_t buckets[ELEMENTSOF(reconf_buckets)];
        uint64_t count;
        double sum;
};

static void histogram_observe(struct histogram *h, uint64_t usec) {
        double sec = (double) usec / 1e6;

        for (size_t i = 0; i < ELEMENTSOF(reconf_buckets); i++)
                if (sec <= reconf_buckets[i]) {
                        h->buckets[i]++;
                        break;
                }
        h->count++;
        h->sum += sec;
}

struct metrics {
        sd_event *event;
        sd_event_source *timer;
        char *path;
        metrics_collect_fn collect;
        metrics_refresh_fn refresh;
        struct manager *owner;
        uint64_t last_write_usec;       /* CLOCK_MONOTONIC; 0: never */
        bool refreshing;                /* the refresh callback has not written yet */
        bool changed_meanwhile;         /* a change came while refreshing */
        uint64_t snapshot_digest;
        bool written;
        int last_error;                 /* of the last write, logged once */

        metrics_poll_fn poll;
        uint64_t poll_usec;             /* 0: none */
        sd_event_source *poll_timer;

        struct histogram reconf;        /* svff_reconf_duration_seconds */
        struct histogram downtime;      /* svff_domain_device_downtime_seconds */
        uint64_t provision_failures;
};

static uint64_t now(clockid_t clock) {
        struct timespec ts;

        (void) clock_gettime(clock, &ts);
        return (uint64_t) ts.tv_sec * 1000000ULL + (uint64_t) ts.tv_nsec / 1000ULL;
}

static void sample_done(struct metrics_sample *s) {
        for (size_t i = 0; i < s->n_pfs; i++) {
                free(s->pfs[i].pf);
                free(s->pfs[i].owner);
        }
        free(s->pfs);
        for (size_t i = 0; i < s->n_vfs; i++) {
                free(s->vfs[i].vf);
                free(s->vfs[i].pf);
        }
        free(s->vfs);
        for (size_t i = 0; i < s->n_assignments; i++)
                free(s->assignments[i].label);
        free(s->assignments);
        for (size_t i = 0; i < s->n_drift; i++)
                free(s->drift[i].label);
        free(s->drift);
        *s = (struct metrics_sample) {};
}

int metrics_sample_add_pf(struct metrics_sample *s, const char *pf, const char *owner, unsigned numvfs,
                          unsigned totalvfs) {
        struct metrics_pf *a = realloc(s->pfs, (s->n_pfs + 1) * sizeof(*a));
        struct metrics_pf p = { .numvfs = numvfs, .totalvfs = totalvfs };

        if (!a)
                return -ENOMEM;
        s->pfs = a;
        p.pf = strdup(pf);
        p.owner = strdup(owner ?: "");
        if (!p.pf || !p.owner) {
                free(p.pf);
                free(p.owner);
                return -ENOMEM;
        }
        s->pfs[s->n_pfs++] = p;
        return 0;
}

static int count_add(struct count **counts, size_t *n, const char *label, uint64_t by) {
        struct count *a;

        for (size_t i = 0; i < *n; i++)
                if (streq((*counts)[i].label, label)) {
                        (*counts)[i].n += by;
                        return 0;
                }
        a = realloc(*counts, (*n + 1) * sizeof(*a));
        if (!a)
                return -ENOMEM;
        *counts = a;
        a[*n] = (struct count) { .label = strdup(label), .n = by };
        if (!a[*n].label)
                return -ENOMEM;
        (*n)++;
        return 0;
}

int metrics_sample_add_vf(struct metrics_sample *s, const char *vf, const char *pf, unsigned index, int numa_node,
                          const uint64_t values[static METRICS_VF_N]) {
        struct metrics_vf *a = realloc(s->vfs, (s->n_vfs + 1) * sizeof(*a));
        struct metrics_vf v = { .index = index, .numa_node = numa_node };

        if (!a)
                return -ENOMEM;
        s->vfs = a;
        v.vf = strdup(vf);
        v.pf = strdup(pf);
        if (!v.vf || !v.pf) {
                free(v.vf);
                free(v.pf);
                return -ENOMEM;
        }
        memcpy(v.values, values, sizeof(v.values));
        s->vfs[s->n_vfs++] = v;
        return 0;
}

int metrics_sample_add_assignment(struct metrics_sample *s, const char *state) {
        return count_add(&s->assignments, &s->n_assignments, state, 1);
}

int metrics_sample_add_drift(struct metrics_sample *s, const char *kind) {
        return count_add(&s->drift, &s->n_drift, kind, 1);
}

void metrics_sample_set_operations(struct metrics_sample *s, unsigned n) {
        s->operations = n;
}

void metrics_sample_set_generation(struct metrics_sample *s, uint64_t generation) {
        s->generation = generation;
}

/* A label value as the text format wants it: backslash, double quote
 * and line feed escaped. */
static void put_label(FILE *f, const char *v) {
        for (; *v; v++)
                switch (*v) {
                case '\\':
                        fputs("\\\\", f);
                        break;
                case '"':
                        fputs("\\\"", f);
                        break;
                case '\n':
                        fputs("\\n", f);
                        break;
                default:
                        fputc(*v, f);
                }
}

static void put_head(FILE *f, const char *name, const char *type, const char *help) {
        fprintf(f, "# HELP %s %s\n# TYPE %s %s\n", name, help, name, type);
}

static void put_histogram(FILE *f, const char *name, const char *help, const struct histogram *h) {
        uint64_t cum = 0;

        put_head(f, name, "histogram", help);
        for (size_t i = 0; i < ELEMENTSOF(reconf_buckets); i++) {
                cum += h->buckets[i];
                fprintf(f, "%s_bucket{le=\"%g\"} %" PRIu64 "\n", name, reconf_buckets[i], cum);
        }
        fprintf(f, "%s_bucket{le=\"+Inf\"} %" PRIu64 "\n", name, h->count);
        fprintf(f, "%s_sum %.6f\n", name, h->sum);
        fprintf(f, "%s_count %" PRIu64 "\n", name, h->count);
}

static void put_counts(FILE *f, const char *name, const char *label, const char *const *always, size_t n_always,
                       const struct count *c, size_t n) {
        for (size_t i = 0; i < n_always; i++) {
                uint64_t v = 0;

                for (size_t k = 0; k < n; k++)
                        if (streq(c[k].label, always[i]))
                                v = c[k].n;
                fprintf(f, "%s{%s=\"%s\"} %" PRIu64 "\n", name, label, always[i], v);
        }
        for (size_t k = 0; k < n; k++) {
                bool known = false;

                for (size_t i = 0; i < n_always; i++)
                        known = known || streq(c[k].label, always[i]);
                if (known)
                        continue;
                fprintf(f, "%s{%s=\"", name, label);
                put_label(f, c[k].label);
                fprintf(f, "\"} %" PRIu64 "\n", c[k].n);
        }
}

int metrics_format(struct metrics *mt, const struct metrics_sample *s, bool up, FILE *f) {
        put_head(f, "svff_up", "gauge", "Whether svffd is running (1) or stopped (0), with its version.");
        fprintf(f, "svff_up{version=\"");
        put_label(f, PACKAGE_VERSION);
        fprintf(f, "\"} %d\n", up ? 1 : 0);
        if (!up)
                return fflush(f) == 0 ? 0 : -errno;

        put_head(f, "svff_pf_vfs", "gauge", "VFs a PF has now (sriov_numvfs).");
        for (size_t i = 0; i < s->n_pfs; i++) {
                fputs("svff_pf_vfs{pf=\"", f);
                put_label(f, s->pfs[i].pf);
                fputs("\",owner=\"", f);
                put_label(f, s->pfs[i].owner);
                fprintf(f, "\"} %u\n", s->pfs[i].numvfs);
        }
        put_head(f, "svff_pf_totalvfs", "gauge", "VFs a PF can have (sriov_totalvfs).");
        for (size_t i = 0; i < s->n_pfs; i++) {
                fputs("svff_pf_totalvfs{pf=\"", f);
                put_label(f, s->pfs[i].pf);
                fputs("\",owner=\"", f);
                put_label(f, s->pfs[i].owner);
                fprintf(f, "\"} %u\n", s->pfs[i].totalvfs);
        }
        put_head(f, "svff_assignments", "gauge", "VF assignments to domains in the store, by state.");
        put_counts(f, "svff_assignments", "state", assignment_states, ELEMENTSOF(assignment_states),
                   s->assignments, s->n_assignments);
        put_head(f, "svff_drift", "gauge",
                 "Differences between the store and the host, by kind.");
        put_counts(f, "svff_drift", "kind", drift_kinds, ELEMENTSOF(drift_kinds), s->drift, s->n_drift);
        put_head(f, "svff_operation_in_progress", "gauge", "Operations (init, release, reconf, ...) running.");
        fprintf(f, "svff_operation_in_progress %u\n", s->operations);
        put_head(f, "svff_store_generation", "gauge", "Generation of the store, one more per commit.");
        fprintf(f, "svff_store_generation %" PRIu64 "\n", s->generation);
        put_head(f, "svff_class_provision_failures_total", "counter",
                 "VFs whose device-class state could not be provisioned since svffd started.");
        fprintf(f, "svff_class_provision_failures_total %" PRIu64 "\n", mt->provision_failures);
        for (size_t k = 0; k < METRICS_VF_N && s->n_vfs > 0; k++) {
                put_head(f, metrics_vf_names[k].name, "gauge", metrics_vf_names[k].help);
                for (size_t i = 0; i < s->n_vfs; i++) {
                        const struct metrics_vf *v = &s->vfs[i];

                        fprintf(f, "%s{pciAddr=\"", metrics_vf_names[k].name);
                        put_label(f, v->vf);
                        fputs("\",pf=\"", f);
                        put_label(f, v->pf);
                        fprintf(f, "\",vf=\"%u\",numa_node=\"", v->index);
                        if (v->numa_node >= 0)
                                fprintf(f, "%d", v->numa_node);
                        fprintf(f, "\"} %" PRIu64 "\n", v->values[k]);
                }
        }
        put_histogram(f, "svff_reconf_duration_seconds", "Duration of reconfs and reprograms.", &mt->reconf);
        put_histogram(f, "svff_domain_device_downtime_seconds",
                      "How long a running domain was without its VF through a reconf or reprogram, per "
                      "assignment.", &mt->downtime);
        return fflush(f) == 0 && !ferror(f) ? 0 : -EIO;
}

/* path.tmp, fsync, rename: node_exporter reads only *.prom, and never
 * a half-written file. */
static int write_file(struct metrics *mt, bool up) {
        _cleanup_(sample_done) struct metrics_sample s = {};
        _cleanup_free_ char *tmp = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        int fd, r;

        if (up && mt->collect)
                mt->collect(mt->owner, &s);
        if (asprintf(&tmp, "%s.tmp", mt->path) < 0)
                return -ENOMEM;
        fd = open(tmp, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0644);
        if (fd < 0)
                return -errno;
        /* 0644 whatever the umask (svffd.service's is 0027): node_exporter
         * reads the file as a user of its own. */
        if (fchmod(fd, 0644) < 0) {
                r = -errno;
                close(fd);
                (void) unlink(tmp);
                return r;
        }
        f = fdopen(fd, "w");
        if (!f) {
                r = -errno;
                close(fd);
                (void) unlink(tmp);
                return r;
        }
        r = metrics_format(mt, &s, up, f);
        if (r >= 0 && fsync(fileno(f)) < 0)
                r = -errno;
        if (r >= 0 && rename(tmp, mt->path) < 0)
                r = -errno;
        if (r < 0)
                (void) unlink(tmp);
        return r;
}

static void log_write_failure(const struct metrics *mt, int r) {
        /* The one failure an operator of the shipped unit meets first. */
        log_warning_errno(r, "Failed to write metrics file '%s' (metrics_textfile), ignoring: %m%s", mt->path,
                          r == -EROFS ? " (svffd.service lets svffd write only under "
                                        "/var/lib/prometheus/node-exporter, and only if it existed as svffd "
                                        "started: restart svffd; for another directory, add it with "
                                        "ReadWritePaths= in a drop-in first)" : "");
}

void metrics_write(struct metrics *mt) {
        int r;

        if (!mt)
                return;
        mt->refreshing = false;
        if (!mt->path)
                return;
        if (mt->last_write_usec == 0)
                mt->last_write_usec = now(CLOCK_MONOTONIC);
        r = write_file(mt, true);
        if (r < 0 && r != mt->last_error)
                log_write_failure(mt, r);
        else if (r >= 0 && mt->last_error < 0)
                log_info("Metrics file '%s' written again.", mt->path);
        mt->last_error = r < 0 ? r : 0;
        mt->written = mt->written || r >= 0;
        if (mt->changed_meanwhile) {
                mt->changed_meanwhile = false;
                metrics_changed(mt);
        }
}

static int on_timer(sd_event_source *s, uint64_t usec, void *userdata) {
        struct metrics *mt = userdata;

        (void) s;
        (void) usec;
        if (!mt->path)
                return 0;
        mt->last_write_usec = now(CLOCK_MONOTONIC);
        if (mt->refresh) {
                mt->refreshing = true;
                mt->refresh(mt->owner);
        } else
                metrics_write(mt);
        return 0;
}

int metrics_new(sd_event *event, struct manager *owner, metrics_refresh_fn refresh, struct metrics **ret) {
        struct metrics *mt = calloc(1, sizeof(*mt));

        if (!mt)
                return -ENOMEM;
        mt->event = sd_event_ref(event);
        mt->owner = owner;
        mt->refresh = refresh;
        *ret = mt;
        return 0;
}

struct metrics *metrics_free(struct metrics *mt) {
        if (!mt)
                return NULL;
        if (mt->path && mt->written) {
                int r = write_file(mt, false);

                if (r < 0)
                        log_write_failure(mt, r);
        }
        sd_event_source_disable_unref(mt->timer);
        sd_event_source_disable_unref(mt->poll_timer);
        sd_event_unref(mt->event);
        free(mt->path);
        free(mt);
        return NULL;
}

void metrics_set_collector(struct metrics *mt, metrics_collect_fn collect) {
        mt->collect = collect;
}

static int on_poll(sd_event_source *s, uint64_t usec, void *userdata) {
        struct metrics *mt = userdata;

        (void) usec;
        if (mt->poll && mt->path)
                mt->poll(mt->owner);
        if (sd_event_source_set_time_relative(s, mt->poll_usec) >= 0)
                (void) sd_event_source_set_enabled(s, SD_EVENT_ONESHOT);
        return 0;
}

/* The poll timer runs while there is a file, a poller and a period. */
static void poll_arm(struct metrics *mt) {
        if (!mt->path || !mt->poll || mt->poll_usec == 0) {
                mt->poll_timer = sd_event_source_disable_unref(mt->poll_timer);
                return;
        }
        if (mt->poll_timer) {
                if (sd_event_source_set_time_relative(mt->poll_timer, mt->poll_usec) >= 0)
                        (void) sd_event_source_set_enabled(mt->poll_timer, SD_EVENT_ONESHOT);
                return;
        }
        if (sd_event_add_time_relative(mt->event, &mt->poll_timer, CLOCK_MONOTONIC, mt->poll_usec, mt->poll_usec / 10,
                                       on_poll, mt) < 0)
                log_warning("Cannot arm the metrics file's look at the host (metrics_poll_sec): it follows "
                            "svffd's own changes and uevents only.");
}

void metrics_set_poller(struct metrics *mt, metrics_poll_fn poll) {
        mt->poll = poll;
        poll_arm(mt);
}

void metrics_set_poll_period(struct metrics *mt, uint64_t usec) {
        if (!mt)
                return;
        mt->poll_usec = usec;
        poll_arm(mt);
}

int metrics_set_path(struct metrics *mt, const char *path) {
        char *p = NULL;

        if (path && mt->path && streq(path, mt->path))
                return 0;
        if (path && !(p = strdup(path)))
                return -ENOMEM;
        free(mt->path);
        mt->path = p;
        mt->written = false;
        mt->last_error = 0;
        poll_arm(mt);
        metrics_changed(mt);
        return 0;
}

void metrics_changed(struct metrics *mt) {
        uint64_t at;
        int r;

        if (!mt || !mt->path || !mt->collect)
                return;
        if (mt->refreshing) {
                mt->changed_meanwhile = true;
                return;
        }
        if (mt->timer && sd_event_source_get_enabled(mt->timer, NULL) > 0)
                return;         /* due already: it will see this change */
        at = mt->last_write_usec > 0 ? mt->last_write_usec + METRICS_INTERVAL_USEC : 0;
        if (at < now(CLOCK_MONOTONIC))
                at = now(CLOCK_MONOTONIC);
        if (mt->timer) {
                r = sd_event_source_set_time(mt->timer, at);
                if (r >= 0)
                        r = sd_event_source_set_enabled(mt->timer, SD_EVENT_ONESHOT);
        } else
                r = sd_event_add_time(mt->event, &mt->timer, CLOCK_MONOTONIC, at, 0, on_timer, mt);
        if (r < 0)
                log_warning_errno(r, "Failed to schedule writing metrics file '%s', ignoring: %m", mt->path);
}

/* FNV-1a, over what the file reports of a snapshot. */
static uint64_t digest_add(uint64_t h, const void *p, size_t n) {
        const unsigned char *b = p;

        for (size_t i = 0; i < n; i++)
                h = (h ^ b[i]) * 0x100000001b3ULL;
        return h;
}

static uint64_t digest_str(uint64_t h, const char *s) {
        return digest_add(h, s ?: "", strlen(s ?: "") + 1);
}

void metrics_snapshot_changed(struct metrics *mt, const struct snapshot *s) {
        uint64_t h = 0xcbf29ce484222325ULL;

        if (!mt || !s)
                return;
        for (size_t i = 0; i < s->n_pfs; i++) {
                const struct svff_pf *pf = s->pfs[i];

                h = digest_str(h, pf->address);
                h = digest_add(h, &pf->numvfs, sizeof(pf->numvfs));
                h = digest_add(h, &pf->totalvfs, sizeof(pf->totalvfs));
                for (size_t k = 0; k < pf->n_vfs; k++) {
                        h = digest_str(h, pf->vfs[k].address);
                        h = digest_str(h, pf->vfs[k].driver);
                }
        }
        h = digest_add(h, &s->error, sizeof(s->error));
        if (h == mt->snapshot_digest)
                return;
        mt->snapshot_digest = h;
        /* While refreshing, the write to come reports s (the owner's
         * current snapshot already): most often the very pass the
         * refresh waits for, which is no change of its own to write a
         * second later. */
        if (!mt->refreshing)
                metrics_changed(mt);
}

void metrics_observe_reconf(struct metrics *mt, uint64_t usec) {
        if (!mt)
                return;
        histogram_observe(&mt->reconf, usec);
        metrics_changed(mt);
}

void metrics_observe_downtime(struct metrics *mt, uint64_t usec) {
        if (!mt)
                return;
        histogram_observe(&mt->downtime, usec);
        metrics_changed(mt);
}

void metrics_count_provision_failure(struct metrics *mt) {
        if (!mt)
                return;
        mt->provision_failures++;
        metrics_changed(mt);
}

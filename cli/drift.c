/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* svffd reports drift per device: after a failed reconf of a 252-VF PF
 * that is 252 lines, each with its own advice, and the advice of one
 * drift can contradict another's (restore the old count, complete the
 * reconf). The summary groups them per PF and kind, and gives each PF
 * the one next step that comes first. */

#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "drift.h"

/* Which drift's next step wins for a PF: an interrupted operation first
 * (completing it settles the count and the VFs), then what needs the
 * operator's decision, then the count, then single VFs. */
static const char *const kind_order[] = {
        "interrupted", "policy-failed", "assignment-without-vf", "pf-missing", "numvfs-changed",
        "driver-changed", "vf-missing", "class-drift",
};

static size_t kind_rank(const char *kind) {
        for (size_t i = 0; i < ELEMENTSOF(kind_order); i++)
                if (kind && streq(kind, kind_order[i]))
                        return i;
        return ELEMENTSOF(kind_order);
}

/* A drift's PF: its pf (svffd since it said so), else the device. */
static const char *drift_pf(struct json_object *d) {
        return jstr(d, "pf") ?: strna(jstr(d, "device"));
}

static bool same(const char *a, const char *b) {
        return a == b || (a && b && streq(a, b));
}

/* The message without its next step: svffd ends it with "; NEXT". */
static char *what_only(struct json_object *d) {
        const char *m = strna(jstr(d, "message")), *n = jstr(d, "next_step");
        size_t lm = strlen(m), ln = n ? strlen(n) : 0;

        if (n && lm > ln + 2 && streq(m + lm - ln, n) && strncmp(m + lm - ln - 2, "; ", 2) == 0)
                return strndup(m, lm - ln - 2);
        return strdup(m);
}

/* A group this small is listed, each with its own words (a domain that
 * lacks its VF is named); a larger one is only counted. */
#define GROUP_LISTED_MAX 3

/* One summary line for the group of count drifts that begins at d. */
static void print_group(FILE *f, const char *pf, struct json_object *d, size_t count) {
        const char *kind = strna(jstr(d, "kind")), *want = jstr(d, "expected"), *have = jstr(d, "actual");
        _cleanup_free_ char *what = NULL;

        fprintf(f, "  %s: %s: ", pf, kind);
        if (streq(kind, "driver-changed") && jstr(d, "domain"))
                fprintf(f, "%zu VF%s of domain '%s' %s%s (expected %s): the domain cannot start with %s\n", count,
                        count == 1 ? "" : "s", jstr(d, "domain"), have ? "on " : "unbound", have ?: "", strna(want),
                        count == 1 ? "it" : "them");
        else if (streq(kind, "driver-changed")) {
                if (have)
                        fprintf(f, "%zu VF%s on %s (expected %s)\n", count, count == 1 ? "" : "s", have, strna(want));
                else
                        fprintf(f, "%zu VF%s unbound (expected %s)\n", count, count == 1 ? "" : "s", strna(want));
        } else if (streq(kind, "vf-missing"))
                fprintf(f, "%zu VF%s recorded but not present (the records are kept)\n", count,
                        count == 1 ? "" : "s");
        else if (streq(kind, "class-drift"))
                fprintf(f, "%zu VF%s differ%s from what %s device class set up\n", count, count == 1 ? "" : "s",
                        count == 1 ? "s" : "", count == 1 ? "its" : "their");
        else if (streq(kind, "assignment-without-vf"))
                fprintf(f, "%zu assigned VF%s that do%s not exist\n", count, count == 1 ? "" : "s",
                        count == 1 ? "es" : "");
        else if (streq(kind, "numvfs-changed") && want && have)
                fprintf(f, "%s VF%s, svff recorded %s\n", have, streq(have, "1") ? "" : "s", want);
        else {
                what = what_only(d);
                fprintf(f, "%s%s\n", strna(what), count > 1 ? " (and more; -v lists them)" : "");
        }
}

/* The kinds about VFs, counted per PF; the others are one per PF. A
 * class drift about the PF itself (its class state unreadable) is no
 * VF's: it has its own line. */
static bool is_counted(const char *kind) {
        return kind && (streq(kind, "driver-changed") || streq(kind, "vf-missing") ||
                        streq(kind, "assignment-without-vf") || streq(kind, "class-drift"));
}

static bool is_counted_drift(struct json_object *d) {
        const char *kind = jstr(d, "kind");

        if (kind && streq(kind, "class-drift") && same(jstr(d, "device"), jstr(d, "pf")))
                return false;
        return is_counted(kind);
}

/* Whether drift b belongs to the group of a: the same PF and kind, and
 * for a driver change the same drivers. */
static bool same_group(struct json_object *a, struct json_object *b) {
        const char *kind = jstr(a, "kind");

        if (!same(kind, jstr(b, "kind")) || !streq(drift_pf(a), drift_pf(b)))
                return false;
        if (kind && streq(kind, "driver-changed"))
                return same(jstr(a, "expected"), jstr(b, "expected")) && same(jstr(a, "actual"), jstr(b, "actual")) &&
                       same(jstr(a, "domain"), jstr(b, "domain"));
        return is_counted_drift(a) && is_counted_drift(b);
}

static void print_members(FILE *f, struct json_object *drift, const size_t *members, size_t count) {
        if (count > GROUP_LISTED_MAX)
                return;
        for (size_t k = 0; k < count; k++) {
                _cleanup_free_ char *what = what_only(json_object_array_get_idx(drift, members[k]));

                fprintf(f, "      %s\n", strna(what));
        }
}

void drift_print(FILE *f, struct json_object *drift, bool verbose) {
        size_t n = drift ? json_object_array_length(drift) : 0;
        _cleanup_free_ size_t *members = NULL;
        bool *done;

        if (n == 0) {
                fprintf(f, "Drift:        none\n");
                return;
        }
        if (verbose) {
                fprintf(f, "\nDrift (the host differs from what svff recorded):\n");
                for (size_t i = 0; i < n; i++) {
                        struct json_object *d = json_object_array_get_idx(drift, i);

                        fprintf(f, "  %-15s %s\n", strna(jstr(d, "kind")), strna(jstr(d, "message")));
                }
                return;
        }

        fprintf(f, "\nDrift (the host differs from what svff recorded; -v lists each device):\n");
        done = calloc(n, sizeof(bool));
        members = calloc(n, sizeof(size_t));
        if (!done || !members) {
                free(done);
                return;
        }
        /* PFs in the order svffd reported them first. */
        for (size_t p = 0; p < n; p++) {
                const char *pf = drift_pf(json_object_array_get_idx(drift, p));
                struct json_object *next = NULL;
                size_t next_rank = SIZE_MAX, n_next = 0;
                bool seen = false;

                for (size_t q = 0; q < p && !seen; q++)
                        seen = streq(drift_pf(json_object_array_get_idx(drift, q)), pf);
                if (seen)
                        continue;

                for (size_t i = p; i < n; i++) {
                        struct json_object *d = json_object_array_get_idx(drift, i);
                        size_t count = 1;

                        if (done[i] || !streq(drift_pf(d), pf))
                                continue;
                        done[i] = true;
                        members[0] = i;
                        for (size_t k = i + 1; k < n; k++)
                                if (!done[k] && same_group(d, json_object_array_get_idx(drift, k))) {
                                        done[k] = true;
                                        members[count++] = k;
                                }
                        print_group(f, pf, d, count);
                        if (is_counted_drift(d))
                                print_members(f, drift, members, count);
                        if (jstr(d, "next_step") && kind_rank(jstr(d, "kind")) < next_rank) {
                                next = d;
                                next_rank = kind_rank(jstr(d, "kind"));
                                /* the others' steps: "the same" only when
                                 * they are not this very command */
                                n_next = 1;
                                for (size_t k = 1; k < count; k++)
                                        if (!same(jstr(json_object_array_get_idx(drift, members[k]), "next_step"),
                                                  jstr(d, "next_step")))
                                                n_next = count;
                        }
                }
                if (next)
                        fprintf(f, "  %s: next step: %s%s.\n", pf, jstr(next, "next_step"),
                                n_next > 1 ? " (and the same for the others; -v lists them)" : "");
        }
        free(done);
}

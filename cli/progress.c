/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "progress.h"

void progress_init(struct progress *p, const char *op, const char *pf) {
        *p = (struct progress) {
                .kind = arg_json ? PROGRESS_JSON : isatty(STDERR_FILENO) ? PROGRESS_TERMINAL : PROGRESS_LINES,
                .op = op,
                .pf = pf,
                .unit = "VF",
                .started = svff_now_usec(),
        };
        p->series_started = p->started;
        snprintf(p->phase, sizeof(p->phase), "start");
        p->width = output_width(stderr) ?: 80;
}

static void format_seconds(usec_t u, char *buf, size_t n) {
        unsigned long long s = (u + USEC_PER_SEC / 2) / USEC_PER_SEC;

        if (s >= 3600)
                snprintf(buf, n, "%lluh%02llum", s / 3600, s % 3600 / 60);
        else if (s >= 60)
                snprintf(buf, n, "%llum%02llus", s / 60, s % 60);
        else
                snprintf(buf, n, "%llus", s);
}

static void draw(struct progress *p) {
        static const char spinner[] = "|/-\\";
        usec_t now = svff_now_usec();
        char line[512], elapsed[32], eta[48] = "";
        size_t n = 0, max;

        format_seconds(now - p->started, elapsed, sizeof(elapsed));
        if (p->done > p->series_done && p->total > p->done) {
                double rate = (double) (p->done - p->series_done) / (double) (now - p->series_started);
                char s[32];

                format_seconds((usec_t) ((double) (p->total - p->done) / rate), s, sizeof(s));
                snprintf(eta, sizeof(eta), " ETA %s", s);
        }
        n = (size_t) snprintf(line, sizeof(line), "%s %s %c %s ", p->op, strna(p->pf), spinner[p->spin++ % 4],
                              p->phase);
        if (p->total > 0 && n < sizeof(line)) {
                char bar[21];
                long long fill = p->done * 20 / p->total;

                for (int i = 0; i < 20; i++)
                        bar[i] = i < fill ? '#' : '.';
                bar[20] = 0;
                n += (size_t) snprintf(line + n, sizeof(line) - n, "%lld/%lld %s%s [%s] %lld%% ", p->done,
                                       p->total, p->unit, plural_s(p->total), bar, p->done * 100 / p->total);
        }
        if (n < sizeof(line))
                n += (size_t) snprintf(line + n, sizeof(line) - n, "%s%s%s%s", elapsed, eta,
                                       *p->action ? "  " : "", p->action);
        /* A line longer than the terminal wraps, and "\r" would then
         * redraw only its last part. */
        max = p->width > 1 ? p->width - 1 : 79;
        if (max >= sizeof(line))
                max = sizeof(line) - 1;
        if (n > max)
                line[max] = 0;
        fprintf(stderr, "\r\033[K%s", line);
        fflush(stderr);
        p->drawn = true;
}

void progress_clear(struct progress *p) {
        if (p->kind == PROGRESS_TERMINAL && p->drawn) {
                fputs("\r\033[K", stderr);
                fflush(stderr);
                p->drawn = false;
        }
}

void progress_tick(struct progress *p) {
        if (p->kind == PROGRESS_TERMINAL)
                draw(p);
}

/* The phase an event belongs to: svffd's "phase" when it names one, else
 * what the event means for an init. */
static const char *event_phase(struct json_object *ev, const char *name) {
        if (jstr(ev, "phase"))
                return jstr(ev, "phase");
        if (streq(name, "init-started") || streq(name, "numvfs-progress"))
                return "numvfs";
        if (streq(name, "numvfs-set") || streq(name, "vf-bound") || streq(name, "vf-bind-failed"))
                return "bind";
        if (streq(name, "reconf-started"))
                return "plan";
        if (strstr(name, "-done") || strstr(name, "-failed") || strstr(name, "-recovered"))
                return "end";
        return NULL;
}

static void describe(struct progress *p, struct json_object *ev, const char *name) {
        const char *who = jstr(ev, "domain") ?: jstr(ev, "device");

        if (streq(name, "init-started"))
                snprintf(p->action, sizeof(p->action), "writing %lld to sriov_numvfs", jint(ev, "total", 0));
        else if (streq(name, "numvfs-progress") && jint(ev, "vfs", -1) >= 0 && jint(ev, "numvfs", 0) == 0)
                /* a reconf's: its counts are steps, the VFs are apart */
                snprintf(p->action, sizeof(p->action), "writing 0 to sriov_numvfs: %lld left, deadline %llds",
                         jint(ev, "vfs", 0), jint(ev, "deadline_msec", 0) / 1000);
        else if (streq(name, "numvfs-progress") && jint(ev, "vfs", -1) >= 0)
                snprintf(p->action, sizeof(p->action), "writing %lld to sriov_numvfs: %lld so far, deadline %llds",
                         jint(ev, "numvfs", 0), jint(ev, "vfs", 0), jint(ev, "deadline_msec", 0) / 1000);
        else if (streq(name, "numvfs-progress"))
                snprintf(p->action, sizeof(p->action), "writing %lld to sriov_numvfs: %lld so far, deadline %llds",
                         jint(ev, "total", 0), jint(ev, "done", 0), jint(ev, "deadline_msec", 0) / 1000);
        else if (streq(name, "numvfs-set"))
                snprintf(p->action, sizeof(p->action), "binding the VFs");
        else if (streq(name, "vf-bound") || streq(name, "vf-bind-failed"))
                snprintf(p->action, sizeof(p->action), "%s %s", streq(name, "vf-bound") ? "bound" : "failed",
                         strna(jstr(ev, "device")));
        else if (streq(name, "reconf-started"))
                snprintf(p->action, sizeof(p->action), "%lld steps planned", jint(ev, "total", 0));
        else if (!jstr(ev, "action"))
                return;
        else if (streq(jstr(ev, "action"), "numvfs"))
                snprintf(p->action, sizeof(p->action), "wrote %lld to sriov_numvfs", jint(ev, "numvfs", 0));
        else if (streq(jstr(ev, "action"), "bind"))
                snprintf(p->action, sizeof(p->action), "bound %lld VF%s to %s", jint(ev, "numvfs", 0),
                         plural_s(jint(ev, "numvfs", 0)), strna(jstr(ev, "driver")));
        else if (streq(jstr(ev, "action"), "commit"))
                snprintf(p->action, sizeof(p->action), "recorded the new count");
        else
                snprintf(p->action, sizeof(p->action), "%s%s %s", jstr(ev, "action"),
                         streq(name, "reconf-step-failed") ? " failed:" : "", strna(who));
}

void progress_event(struct progress *p, struct json_object *ev) {
        const char *name = jstr(ev, "event"), *phase;
        bool failed, new_phase;

        if (p->kind == PROGRESS_JSON) {
                print_json(stdout, ev);
                fflush(stdout);
                return;
        }
        if (!name)
                return;
        failed = strstr(name, "-failed") != NULL;
        phase = event_phase(ev, name);
        new_phase = phase && !streq(phase, p->phase);
        if (phase)
                snprintf(p->phase, sizeof(p->phase), "%s", phase);
        if (strncmp(name, "reconf-", 7) == 0)
                p->unit = "step";
        if (jint(ev, "total", -1) >= 0)
                p->total = jint(ev, "total", 0);
        if (jint(ev, "done", -1) >= 0 || streq(name, "init-started") || streq(name, "numvfs-set"))
                p->done = jint(ev, "done", 0);
        /* The counts start again (the bind after the numvfs write): the
         * ETA is for what is being counted now. */
        if (p->done < p->series_done || (new_phase && p->done == 0)) {
                p->series_started = svff_now_usec();
                p->series_done = p->done;
        }
        describe(p, ev, name);

        if (p->kind == PROGRESS_TERMINAL) {
                if (failed && !streq(name, "init-failed") && !streq(name, "reconf-failed")) {
                        progress_clear(p);
                        fprintf(stderr, "%s %s: %s %s: %s\n", p->op, strna(p->pf), name,
                                jstr(ev, "device") ?: "", jstr(ev, "message") ?: jstr(ev, "error") ?: "");
                }
                draw(p);
                return;
        }
        if ((new_phase && !streq(phase, "end")) || (failed && !streq(name, "init-failed") &&
                                                    !streq(name, "reconf-failed"))) {
                char elapsed[32];

                format_seconds(svff_now_usec() - p->started, elapsed, sizeof(elapsed));
                fprintf(stderr, "%s %s: phase %s: %s", p->op, strna(p->pf), p->phase, failed ? name : p->action);
                if (failed && (jstr(ev, "message") || jstr(ev, "error")))
                        fprintf(stderr, ": %s", jstr(ev, "message") ?: jstr(ev, "error"));
                if (p->total > 0)
                        fprintf(stderr, " (%lld/%lld %s%s, %s)\n", p->done, p->total, p->unit,
                                plural_s(p->total), elapsed);
                else
                        fprintf(stderr, " (%s)\n", elapsed);
        }
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <systemd/sd-bus.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-id128.h>

#include "flash-unit.h"
#include "log.h"
#include "sysfs.h"

#define SYSTEMD_PRIVATE "/run/systemd/private"
#define SYSTEMD_SERVICE "org.freedesktop.systemd1"
#define SYSTEMD_PATH "/org/freedesktop/systemd1"
#define SYSTEMD_MANAGER "org.freedesktop.systemd1.Manager"
/* How long after the unit's deadline svffd stops waiting for systemd to
 * say how it ended: systemd kills it at the deadline itself. */
#define BACKSTOP_USEC (60 * USEC_PER_SEC)

struct flash_unit {
        sd_bus *bus;
        bool direct;                    /* systemd's private socket, not the system bus */
        char *name, *path;
        sd_bus_slot *job_removed, *call;
        sd_event_source *backstop;
        bool job_done;                  /* JobRemoved seen while a query was in flight */
        flash_unit_done_fn done;
        void *userdata;
};

struct flash_unit *flash_unit_free(struct flash_unit *u) {
        if (!u)
                return NULL;
        sd_bus_slot_unref(u->job_removed);
        sd_bus_slot_unref(u->call);
        sd_event_source_disable_unref(u->backstop);
        if (u->bus) {
                sd_bus_detach_event(u->bus);
                sd_bus_flush_close_unref(u->bus);
        }
        free(u->name);
        free(u->path);
        free(u);
        return NULL;
}

/* systemd's private socket first (root only, what systemctl uses: no
 * D-Bus daemon needed, every signal sent to it), else the system bus.
 * Both connect without waiting for an answer. */
static int bus_open(sd_bus **ret, bool *ret_direct) {
        sd_bus *b = NULL;
        int r;

        if (geteuid() == 0 && access(SYSTEMD_PRIVATE, F_OK) >= 0) {
                r = sd_bus_new(&b);
                if (r < 0)
                        return r;
                r = sd_bus_set_address(b, "unix:path=" SYSTEMD_PRIVATE);
                if (r >= 0)
                        r = sd_bus_start(b);
                if (r >= 0) {
                        *ret = b;
                        *ret_direct = true;
                        return 0;
                }
                sd_bus_unref(b);
                b = NULL;
        }
        r = sd_bus_open_system(&b);
        if (r < 0)
                return r;
        *ret = b;
        *ret_direct = false;
        return 0;
}

bool flash_unit_available(void) {
        sd_bus *b = NULL;
        bool direct;

        if (sd_booted() <= 0 || bus_open(&b, &direct) < 0)
                return false;
        sd_bus_close_unref(b);
        return true;
}

int flash_unit_name(const char *pf, char **ret) {
        sd_id128_t id;
        char *s;
        int r;

        r = sd_id128_randomize(&id);
        if (r < 0)
                return r;
        /* A PCI address is hex digits, ':' and '.': all valid in unit
         * names, so the name shows the PF as it is. */
        if (asprintf(&s, "svff-flash-%s-%.16s.service", pf, SD_ID128_TO_STRING(id)) < 0)
                return -ENOMEM;
        *ret = s;
        return 0;
}

static void finish(struct flash_unit *u, int r, const char *message) {
        flash_unit_done_fn done = u->done;

        if (!done)
                return;
        u->done = NULL;
        u->job_removed = sd_bus_slot_unref(u->job_removed);
        u->backstop = sd_event_source_disable_unref(u->backstop);
        /* The result is svffd's now: the unit goes (stopped when it
         * stayed active after its success, its failure forgotten), its
         * journal stays. Nothing waits for the answers. */
        (void) sd_bus_call_method_async(u->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                        r == 0 ? "StopUnit" : "ResetFailedUnit", NULL, NULL,
                                        r == 0 ? "ss" : "s", u->name, "replace");
        done(u->userdata, r, message);
}

static void finish_bus_error(struct flash_unit *u, const sd_bus_error *e, const char *what) {
        char msg[512];

        snprintf(msg, sizeof(msg), "%s flash unit '%s' failed: %s", what, u->name, e->message ?: e->name);
        finish(u, sd_bus_error_get_errno(e) ? -sd_bus_error_get_errno(e) : -EIO, msg);
}

static int query(struct flash_unit *u);

/* The service's properties, once the job ended: how the hook ended. */
static int on_service_props(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct flash_unit *u = userdata;
        _cleanup_free_ char *result = NULL;
        int32_t status = 0, code = 0;
        char msg[512];
        int r;

        u->call = sd_bus_slot_unref(u->call);
        if (sd_bus_message_is_method_error(m, NULL)) {
                finish_bus_error(u, sd_bus_message_get_error(m), "Reading the result of");
                return 0;
        }
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *k, *s;

                r = sd_bus_message_read(m, "s", &k);
                if (r < 0)
                        break;
                if (streq(k, "Result")) {
                        r = sd_bus_message_read(m, "v", "s", &s);
                        if (r >= 0 && !(result = strdup(s)))
                                r = -ENOMEM;
                } else if (streq(k, "ExecMainStatus"))
                        r = sd_bus_message_read(m, "v", "i", &status);
                else if (streq(k, "ExecMainCode"))
                        r = sd_bus_message_read(m, "v", "i", &code);
                else
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r < 0 || !result) {
                snprintf(msg, sizeof(msg), "Cannot read the result of flash unit '%s': %s", u->name,
                         r < 0 ? strerror(-r) : "no Result");
                finish(u, r < 0 ? r : -EBADMSG, msg);
                return 0;
        }
        if (streq(result, "success")) {
                finish(u, 0, NULL);
                return 0;
        }
        if (streq(result, "timeout")) {
                snprintf(msg, sizeof(msg), "The flash hook did not finish within its deadline: systemd killed flash "
                         "unit '%s' with every process in it ('journalctl -u %s' shows its output); the flash is "
                         "not known to have succeeded", u->name, u->name);
                finish(u, -ETIMEDOUT, msg);
                return 0;
        }
        /* ExecMainCode is a siginfo si_code: CLD_EXITED, else a signal. */
        if (code == CLD_EXITED)
                snprintf(msg, sizeof(msg), "The flash hook in unit '%s' failed with exit status %d ('journalctl -u "
                         "%s' shows its output)", u->name, status, u->name);
        else
                snprintf(msg, sizeof(msg), "The flash hook in unit '%s' ended with result '%s'%s%s ('journalctl "
                         "-u %s' shows its output)", u->name, result, code ? ", signal " : "",
                         code ? strsignal(status) : "", u->name);
        finish(u, -EIO, msg);
        return 0;
}

/* The unit's state: still running (wait for its job to end), gone (its
 * result with it), or ended (read how). */
static int on_unit_props(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct flash_unit *u = userdata;
        _cleanup_free_ char *load = NULL, *active = NULL;
        char msg[512];
        int r;

        u->call = sd_bus_slot_unref(u->call);
        if (sd_bus_message_is_method_error(m, NULL)) {
                finish_bus_error(u, sd_bus_message_get_error(m), "Looking up");
                return 0;
        }
        r = sd_bus_message_enter_container(m, 'a', "{sv}");
        while (r >= 0 && (r = sd_bus_message_enter_container(m, 'e', "sv")) > 0) {
                const char *k, *s;
                char **dst = NULL;

                r = sd_bus_message_read(m, "s", &k);
                if (r < 0)
                        break;
                if (streq(k, "LoadState"))
                        dst = &load;
                else if (streq(k, "ActiveState"))
                        dst = &active;
                if (dst) {
                        r = sd_bus_message_read(m, "v", "s", &s);
                        if (r >= 0 && !(*dst = strdup(s)))
                                r = -ENOMEM;
                } else
                        r = sd_bus_message_skip(m, "v");
                if (r >= 0)
                        r = sd_bus_message_exit_container(m);
        }
        if (r < 0 || !load || !active) {
                snprintf(msg, sizeof(msg), "Cannot read the state of flash unit '%s': %s", u->name,
                         r < 0 ? strerror(-r) : "no LoadState or ActiveState");
                finish(u, r < 0 ? r : -EBADMSG, msg);
                return 0;
        }
        if (!streq(load, "loaded")) {
                snprintf(msg, sizeof(msg), "Flash unit '%s' is %s: what the hook did is not known", u->name,
                         streq(load, "not-found") ? "gone" : load);
                finish(u, -ENOENT, msg);
                return 0;
        }
        if (streq(active, "activating") || streq(active, "deactivating") || streq(active, "reloading")) {
                /* Its job's JobRemoved comes later, or came while this
                 * was asked. */
                if (u->job_done) {
                        u->job_done = false;
                        return query(u);
                }
                log_debug("Flash unit '%s' is %s: waiting for it.", u->name, active);
                return 0;
        }
        if (streq(active, "inactive")) {
                /* Stopped by someone before its result was taken up. */
                snprintf(msg, sizeof(msg), "Flash unit '%s' was stopped: what the hook did is not known", u->name);
                finish(u, -ESTALE, msg);
                return 0;
        }
        r = sd_bus_call_method_async(u->bus, &u->call, SYSTEMD_SERVICE, u->path, "org.freedesktop.DBus.Properties",
                                     "GetAll", on_service_props, u, "s", "org.freedesktop.systemd1.Service");
        if (r < 0)
                finish(u, r, "Cannot ask systemd for the flash unit's result");
        return 0;
}

static int query(struct flash_unit *u) {
        int r;

        if (u->call) {
                /* Asked already: ask again once that answers. */
                u->job_done = true;
                return 0;
        }
        r = sd_bus_call_method_async(u->bus, &u->call, SYSTEMD_SERVICE, u->path, "org.freedesktop.DBus.Properties",
                                     "GetAll", on_unit_props, u, "s", "org.freedesktop.systemd1.Unit");
        if (r < 0)
                finish(u, r, "Cannot ask systemd for the flash unit's state");
        return 0;
}

static int on_job_removed(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct flash_unit *u = userdata;
        const char *job, *unit, *result;
        uint32_t id;

        if (sd_bus_message_read(m, "uoss", &id, &job, &unit, &result) < 0 || !streq(unit, u->name))
                return 0;
        log_debug("Flash unit '%s': job %u %s.", u->name, id, result);
        return query(u);
}

static int on_started(sd_bus_message *m, void *userdata, sd_bus_error *ret_error) {
        struct flash_unit *u = userdata;

        u->call = sd_bus_slot_unref(u->call);
        if (sd_bus_message_is_method_error(m, NULL))
                finish_bus_error(u, sd_bus_message_get_error(m), "Starting");
        else if (u->job_done) {
                /* Its job ended before the answer came. */
                u->job_done = false;
                return query(u);
        }
        return 0;
}

static int on_backstop(sd_event_source *s, uint64_t usec, void *userdata) {
        struct flash_unit *u = userdata;
        char msg[512];

        snprintf(msg, sizeof(msg), "systemd did not say how flash unit '%s' ended, long past its deadline: the "
                 "flash is not known to have succeeded", u->name);
        finish(u, -ETIMEDOUT, msg);
        return 0;
}

/* A connection on event, JobRemoved watched for name (subscribed
 * before anything is asked, so no end is missed), the backstop armed. */
static int unit_new(sd_event *event, const char *name, usec_t backstop_usec, flash_unit_done_fn done,
                    void *userdata, struct flash_unit **ret) {
        _cleanup_(flash_unit_freep) struct flash_unit *u = calloc(1, sizeof(*u));
        int r;

        if (!u)
                return -ENOMEM;
        u->done = done;
        u->userdata = userdata;
        u->name = strdup(name);
        if (!u->name)
                return -ENOMEM;
        r = sd_bus_path_encode(SYSTEMD_PATH "/unit", name, &u->path);
        if (r < 0)
                return r;
        r = bus_open(&u->bus, &u->direct);
        if (r < 0)
                return r;
        r = sd_bus_attach_event(u->bus, event, SD_EVENT_PRIORITY_NORMAL);
        if (r < 0)
                return r;
        /* On the private socket messages carry no sender, and only
         * systemd is at the other end. */
        r = sd_bus_match_signal_async(u->bus, &u->job_removed, u->direct ? NULL : SYSTEMD_SERVICE, SYSTEMD_PATH,
                                      SYSTEMD_MANAGER, "JobRemoved", on_job_removed, NULL, u);
        if (r < 0)
                return r;
        /* On the system bus systemd sends its signals only to
         * subscribers. */
        r = sd_bus_call_method_async(u->bus, NULL, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER, "Subscribe", NULL,
                                     NULL, "");
        if (r < 0)
                return r;
        r = sd_event_add_time_relative(event, &u->backstop, CLOCK_MONOTONIC, backstop_usec, USEC_PER_SEC,
                                       on_backstop, u);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(u);
        return 0;
}

int flash_unit_start(sd_event *event, const char *name, const char *hook, const char *pf, const char *image,
                     usec_t timeout_usec, flash_unit_done_fn done, void *userdata, struct flash_unit **ret) {
        _cleanup_(flash_unit_freep) struct flash_unit *u = NULL;
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *m = NULL;
        _cleanup_free_ char *deadline = NULL, *env_pf = NULL, *env_image = NULL, *env_deadline = NULL,
                            *description = NULL, *scratch = NULL;
        int r;

        r = unit_new(event, name, timeout_usec + BACKSTOP_USEC, done, userdata, &u);
        if (r < 0)
                return r;
        if (asprintf(&deadline, "%lld", (long long) time(NULL) + (long long) (timeout_usec / USEC_PER_SEC)) < 0 ||
            asprintf(&env_pf, "SVFF_PF=%s", pf) < 0 || asprintf(&env_image, "SVFF_IMAGE=%s", image) < 0 ||
            asprintf(&env_deadline, "SVFF_DEADLINE=%s", deadline) < 0 ||
            asprintf(&description, "svff flash hook for PF %s", pf) < 0 ||
            !(scratch = strndup(name, strlen(name) - strlen(".service"))))
                return -ENOMEM;

        r = sd_bus_message_new_method_call(u->bus, &m, SYSTEMD_SERVICE, SYSTEMD_PATH, SYSTEMD_MANAGER,
                                           "StartTransientUnit");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "ss", name, "fail");
        if (r < 0)
                return r;
        /* The unit's own properties: nothing of svffd's sandbox (systemd
         * starts it, not svffd), its own deadline and budget.
         * Type=oneshot with RemainAfterExit=yes: the hook's end ends the
         * start job, and the unit keeps its result, "active" on success,
         * "failed" otherwise, for a restarted svffd to take up.
         * TimeoutStartSec= is a oneshot's deadline (RuntimeMaxSec= counts
         * only once a service is up); KillMode=control-group and SIGKILL
         * end everything the hook started, a child that called setsid()
         * included, at once, as svffd's fallback does.
         * Devices stay open (no DevicePolicy=): a vendor flash tool
         * reaches the card through nodes svffd cannot name in advance
         * (its management PF, a JTAG cable on USB, its own driver's
         * nodes), and the PF being flashed is off the bus, with no node
         * to allow. RuntimeDirectory= is its writable scratch space
         * ($RUNTIME_DIRECTORY), removed when the unit goes. */
        r = sd_bus_message_append(m, "a(sv)", 11,
                                  "Description", "s", description,
                                  "Type", "s", "oneshot",
                                  "RemainAfterExit", "b", 1,
                                  "ExecStart", "a(sasb)", 1, hook, 4, hook, pf, image, deadline, 0,
                                  "TimeoutStartUSec", "t", (uint64_t) timeout_usec,
                                  "KillMode", "s", "control-group",
                                  "KillSignal", "i", (int32_t) SIGKILL,
                                  "Environment", "as", 4,
                                  "PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", env_pf,
                                  env_image, env_deadline,
                                  "RuntimeDirectory", "as", 1, scratch,
                                  "StandardOutput", "s", "journal",
                                  "StandardError", "s", "journal");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "a(sa(sv))", 0);
        if (r < 0)
                return r;
        r = sd_bus_call_async(u->bus, &u->call, m, on_started, u, 0);
        if (r < 0)
                return r;
        log_info("Flash hook '%s' for PF %s with '%s' runs in unit '%s', deadline in %llu s.", hook, pf, image, name,
                 (unsigned long long) (timeout_usec / USEC_PER_SEC));
        *ret = TAKE_PTR(u);
        return 0;
}

int flash_unit_watch(sd_event *event, const char *name, usec_t backstop_usec, flash_unit_done_fn done,
                     void *userdata, struct flash_unit **ret) {
        _cleanup_(flash_unit_freep) struct flash_unit *u = NULL;
        int r;

        r = unit_new(event, name, backstop_usec + BACKSTOP_USEC, done, userdata, &u);
        if (r < 0)
                return r;
        r = query(u);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(u);
        return 0;
}

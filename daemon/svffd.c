/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* svffd: the SR-IOV virtual function manager daemon. */

#include <errno.h>
#include <getopt.h>
#include <malloc.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <systemd/sd-daemon.h>
#include <systemd/sd-event.h>

#include "assign.h"
#include "autoinit.h"
#include "config-file.h"
#include "fault.h"
#include "libvirt.h"
#include "log.h"
#include "manager.h"
#include "methods.h"
#include "reconcile.h"
#include "reconfigure.h"
#include "udev.h"

static void help(void) {
        printf("Usage: svffd [OPTIONS]\n"
               "\n"
               "Manages SR-IOV virtual functions and serves svffctl over varlink.\n"
               "\n"
               "  -h --help               Show this help\n"
               "     --version            Show the version\n"
               "     --socket=PATH        Listen on PATH (default %s)\n"
               "     --state-dir=DIR      Keep the store in DIR (default %s)\n"
               "     --sysfs-root=DIR     Read sysfs under DIR (default /sys)\n"
               "     --config=FILE        Read settings from FILE (default %s)\n"
               "     --libvirt-uri=URI    libvirt connection (default qemu:///system)\n"
               "     --log-level=LEVEL    err, warning, notice, info or debug\n"
               "\n"
               "Command-line options win over the config file. Under socket activation\n"
               "the socket passed by systemd is used and --socket is ignored.\n",
               SVFFD_SOCKET_DEFAULT, SVFFD_STATE_DIR_DEFAULT, SVFFD_CONFIG_DEFAULT);
}

static int set_str(char **slot, const char *v) {
        free(*slot);
        *slot = strdup(v);
        return *slot ? 0 : -ENOMEM;
}

/* Returns >0 to run, 0 to exit successfully, <0 on usage errors. */
static int parse_argv(int argc, char *argv[], struct cmdline *c) {
        enum {
                ARG_VERSION = 0x100,
                ARG_SOCKET,
                ARG_STATE_DIR,
                ARG_SYSFS_ROOT,
                ARG_CONFIG,
                ARG_LIBVIRT_URI,
                ARG_LOG_LEVEL,
        };
        static const struct option options[] = {
                { "help", no_argument, NULL, 'h' },
                { "version", no_argument, NULL, ARG_VERSION },
                { "socket", required_argument, NULL, ARG_SOCKET },
                { "state-dir", required_argument, NULL, ARG_STATE_DIR },
                { "sysfs-root", required_argument, NULL, ARG_SYSFS_ROOT },
                { "config", required_argument, NULL, ARG_CONFIG },
                { "libvirt-uri", required_argument, NULL, ARG_LIBVIRT_URI },
                { "log-level", required_argument, NULL, ARG_LOG_LEVEL },
                {}
        };
        int o, r = 0;

        while ((o = getopt_long(argc, argv, "h", options, NULL)) >= 0) {
                switch (o) {
                case 'h':
                        help();
                        return 0;
                case ARG_VERSION:
                        /* Build features, in systemd's +/- style. */
                        printf("svffd %s\n%cFAULT-POINTS\n", PACKAGE_VERSION,
#ifdef SVFF_FAULT_POINTS
                               '+'
#else
                               '-'
#endif
                        );
                        return 0;
                case ARG_SOCKET:
                        r = set_str(&c->socket, optarg);
                        break;
                case ARG_STATE_DIR:
                        r = set_str(&c->state_dir, optarg);
                        break;
                case ARG_SYSFS_ROOT:
                        r = set_str(&c->sysfs_root, optarg);
                        break;
                case ARG_CONFIG:
                        r = set_str(&c->config_path, optarg);
                        c->config_path_given = true;
                        break;
                case ARG_LIBVIRT_URI:
                        r = set_str(&c->libvirt_uri, optarg);
                        break;
                case ARG_LOG_LEVEL:
                        c->log_level = log_level_from_string(optarg);
                        if (c->log_level < 0)
                                return log_error_errno(-EINVAL,
                                                       "Invalid --log-level '%s': use err, warning, notice, info or debug.",
                                                       optarg);
                        break;
                default:
                        return -EINVAL;
                }
                if (r < 0)
                        return log_oom();
        }
        if (optind < argc)
                return log_error_errno(-EINVAL, "svffd takes no arguments ('%s'); see --help.", argv[optind]);
        return 1;
}

static int on_sigterm(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct manager *m = userdata;

        log_info("Received %s, shutting down.", si->ssi_signo == SIGINT ? "SIGINT" : "SIGTERM");
        manager_begin_shutdown(m);
        return 0;
}

static void stop_at_fault_point(void *userdata) {
        struct manager *m = userdata;

        log_info("Received SIGTERM (fault point), shutting down.");
        manager_begin_shutdown(m);
}

static int on_sighup(sd_event_source *s, const struct signalfd_siginfo *si, void *userdata) {
        struct manager *m = userdata;

        (void) autoinit_reload_config(m);
        return 0;
}

/* What the lower layers report, and who acts on it: they know nothing of
 * the executors, which sit above them. */

static void on_domain_event(const char *uuid, const char *name, int event, int detail, void *userdata) {
        assign_domain_event(userdata, uuid, name, event, detail);
}

static void emit_libvirt(struct manager *m, const char *kind, const char *message) {
        struct json_object *ev = json_object_new_object();

        if (ev) {
                json_object_object_add(ev, "event", json_object_new_string(kind));
                json_object_object_add(ev, "message", json_object_new_string(message));
        }
        manager_emit(m, NULL, ev);
}

static void on_libvirt_connected(const char *uri, void *userdata) {
        struct manager *m = userdata;

        emit_libvirt(m, "libvirt-connected", uri);
        /* Assignment changes a crash left half done, then the reconfs:
         * both need libvirt to finish. */
        assign_recover(m);
        reconf_recover(m);
}

static void on_libvirt_disconnected(const char *why, void *userdata) {
        emit_libvirt(userdata, "libvirt-disconnected", why);
}

static const struct hv_callbacks hv_callbacks = {
        .domain_event = on_domain_event,
        .connected = on_libvirt_connected,
        .disconnected = on_libvirt_disconnected,
};

static void on_pf_uevent(const char *action, const char *address, void *userdata) {
        autoinit_handle_uevent(userdata, action, address);
}

/* The manager with what svffd.c made on top of it, in reverse order. */
static void svffd_freep(struct manager **mp) {
        struct manager *m = *mp;

        if (!m)
                return;
        m->udev = udev_watch_free(m->udev);
        m->autoinit = autoinit_free(m->autoinit);
        manager_free(m);
}

/* The socket from systemd (FileDescriptorName=varlink, or the only one
 * passed), or one we bind ourselves. */
static int setup_listening(struct manager *m) {
        char **names = NULL;
        int n, r, used = 0;

        n = sd_listen_fds_with_names(true, &names);
        if (n < 0)
                return log_error_errno(n, "Failed to read the sockets passed by systemd: %m");

        for (int i = 0; i < n; i++) {
                int fd = SD_LISTEN_FDS_START + i;

                if (n > 1 && names && names[i] && !streq(names[i], "varlink") &&
                    !streq(names[i], "unknown")) {
                        log_warning("Ignoring passed socket '%s' (fd %d).", names[i], fd);
                        close(fd);
                        continue;
                }
                if (sd_is_socket_unix(fd, SOCK_STREAM, 1, NULL, 0) <= 0) {
                        log_warning("Passed fd %d is not a listening AF_UNIX stream socket, ignoring.", fd);
                        close(fd);
                        continue;
                }
                r = server_add_listen_fd(m->server, fd);
                if (r < 0)
                        return log_error_errno(r, "Failed to listen on passed fd %d: %m", fd);
                used++;
        }
        strv_free(names);
        if (used > 0) {
                log_debug("Using %d socket(s) passed by systemd.", used);
                return 0;
        }

        /* Make the directory (not its parents: those are the system's). */
        {
                _cleanup_free_ char *dir = strdup(m->config.socket);
                char *slash;

                if (!dir)
                        return log_oom();
                slash = strrchr(dir, '/');
                if (slash && slash != dir) {
                        *slash = 0;
                        if (mkdir(dir, 0755) < 0 && errno != EEXIST)
                                return log_error_errno(-errno, "Failed to create '%s': %m", dir);
                }
        }
        r = server_listen_path(m->server, m->config.socket, 0660);
        if (r == -EADDRINUSE)
                return log_error_errno(r, "Socket '%s' is in use by a running daemon: stop it, or give this "
                                       "one its own --socket.", m->config.socket);
        if (r < 0)
                return log_error_errno(r, "Failed to listen on '%s': %m", m->config.socket);
        return 0;
}

static int run(int argc, char *argv[]) {
        _cleanup_(sd_event_unrefp) sd_event *event = NULL;
        _cleanup_(svffd_freep) struct manager *m = NULL;
        struct cmdline cmdline = { .log_level = -1 };
        size_t n_drift;
        unsigned n_started;
        int r;

        log_setup(LOG_TARGET_AUTO);

        /* Every client is a descriptor: the soft limit systemd leaves
         * (1024) would cap connections below max_connections. */
        r = server_raise_fd_limit();
        if (r < 0)
                log_warning_errno(r, "Failed to raise the file descriptor limit, ignoring: %m");

        /* svffd is small but handles bursts of large messages (a List of
         * a thousand VFs is ~170 KiB, encoded once and shared). Fixed
         * mmap threshold and two arenas hand those back to the kernel
         * instead of letting glibc keep a high-water mark per thread. */
        (void) mallopt(M_MMAP_THRESHOLD, 64 * 1024);
        (void) mallopt(M_ARENA_MAX, 2);

        r = parse_argv(argc, argv, &cmdline);
        if (r <= 0) {
                cmdline_done(&cmdline);
                return r;
        }

        r = sd_event_default(&event);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the event loop: %m");
        r = manager_new(event, &cmdline, &m);
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the manager: %m");

        r = manager_load_config(m);
        if (r < 0)
                return r;
        manager_apply_config(m);

        r = svff_ctx_new(m->config.sysfs_root, &m->ctx);
        if (r < 0)
                return log_error_errno(r, "Failed to open sysfs root '%s': %m", m->config.sysfs_root);
        svff_ctx_set_log_fn(m->ctx, log_svff_callback, NULL);
        svff_ctx_set_log_priority(m->ctx, m->config.log_level);

        /* A store that cannot be read exactly stops us here, untouched. */
        r = manager_open_store(m);
        if (r < 0)
                return r;

        r = sd_event_set_watchdog(event, true);
        if (r < 0)
                log_warning_errno(r, "Failed to enable the watchdog, ignoring: %m");

        {
                sigset_t mask;

                sigemptyset(&mask);
                sigaddset(&mask, SIGTERM);
                sigaddset(&mask, SIGINT);
                sigaddset(&mask, SIGHUP);
                if (sigprocmask(SIG_BLOCK, &mask, NULL) < 0)
                        return log_error_errno(-errno, "Failed to block signals: %m");
        }
        r = sd_event_add_signal(event, NULL, SIGTERM, on_sigterm, m);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGINT, on_sigterm, m);
        if (r >= 0)
                r = sd_event_add_signal(event, NULL, SIGHUP, on_sighup, m);
        if (r < 0)
                return log_error_errno(r, "Failed to set up signal handling: %m");
        fault_set_stop(stop_at_fault_point, m);

        /* Threads start after the signals are blocked, so they inherit
         * the mask and the main thread gets every signal. libvirt first:
         * manager_free() goes in reverse, so the ops pool's last results
         * still find it. It connects in the background: svffd serves
         * without it and assignment calls say libvirt is unreachable
         * until it is back. */
        r = hv_new(event, m->config.libvirt_uri, m->config.libvirt_workers, &hv_callbacks, m, &m->hv);
        if (r < 0)
                return r;
        r = worker_pool_new(event, "ops", m->config.workers, &m->ops_pool);
        if (r >= 0)
                r = manager_start_discovery(m);
        if (r < 0)
                return log_error_errno(r, "Failed to start worker threads: %m");

        /* Start-up reconcile: a picture of the host, compared with the
         * store once the policies' inits have started (below). */
        r = manager_snapshot_now(m);
        if (r < 0)
                log_warning("Continuing without a picture of the PFs; List will retry.");

        {
                struct server_limits limits;

                manager_server_limits(m, &limits);
                r = server_new(event, &limits, methods_dispatch, m, &m->server);
        }
        if (r < 0)
                return log_error_errno(r, "Failed to allocate the varlink server: %m");
        r = setup_listening(m);
        if (r < 0)
                return r;

        /* PF policies (and the bindings stored assignments need) before
         * READY=1: units ordered after svffd, libvirt's among them, find
         * the VFs in place. The udev monitor covers PFs that come later. */
        r = autoinit_new(m, &m->autoinit);
        if (r < 0)
                return log_error_errno(r, "Failed to set up auto-init: %m");
        r = udev_watch_new(event, m->config.sysfs_root, on_pf_uevent, m, &m->udev);
        if (r < 0)
                log_warning_errno(r, "Failed to watch PCI uevents, PFs that appear later need 'svffctl init': %m");
        n_started = autoinit_startup(m);

        m->serving = true;
        metrics_set_collector(m->metrics, methods_collect_metrics);
        metrics_set_poller(m->metrics, methods_poll_metrics);
        metrics_changed(m->metrics);
        /* Reconfs a crash interrupted: those that need libvirt start
         * once it is connected. */
        reconf_recover(m);
        /* Once svffd's own repairs are under way, the policies' inits
         * and the interrupted reconfs: at boot every VF recorded is
         * missing until its PF's init makes it again, and that drift,
         * with next steps that would have the operator do what svffd is
         * doing, is no news. Drift on the PFs they leave shows in status
         * (policy-failed, interrupted). */
        n_drift = reconcile_log(m);
        log_info("svffd %s serving; store '%s' generation %llu, %zu PF(s) under '%s', %zu drift(s), %u policy init(s).",
                 PACKAGE_VERSION, svff_store_path(m->store),
                 (unsigned long long) svff_store_generation(m->store),
                 m->snapshot ? m->snapshot->n_pfs : 0, m->config.sysfs_root, n_drift, n_started);
        manager_notify_ready(m);

        r = sd_event_loop(event);
        if (r < 0)
                return log_error_errno(r, "Event loop failed: %m");
        return 0;
}

int main(int argc, char *argv[]) {
        int r = run(argc, argv);

        return r < 0 ? EXIT_FAILURE : EXIT_SUCCESS;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A stand-in for NetworkManager on a private bus: see nm-standin.h. */

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <systemd/sd-bus.h>
#include <unistd.h>

#include "macro.h"
#include "nm-standin.h"

#define NM "/org/freedesktop/NetworkManager"
#define NM_IFACE "org.freedesktop.NetworkManager"

char *nm_standin_bus_start(const char *dir, pid_t *ret_pid) {
        _cleanup_free_ char *conf = NULL, *arg = NULL;
        char buf[512];
        size_t n = 0;
        int pipefd[2];
        FILE *f;
        pid_t pid;

        if (asprintf(&conf, "%s/bus.conf", dir) < 0 || asprintf(&arg, "--config-file=%s", conf) < 0)
                return NULL;
        f = fopen(conf, "we");
        if (!f)
                return NULL;
        /* no <servicedir>: nothing is started by bus activation */
        fprintf(f,
                "<!DOCTYPE busconfig PUBLIC \"-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN\"\n"
                " \"http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd\">\n"
                "<busconfig>\n"
                "  <type>session</type>\n"
                "  <listen>unix:path=%s/bus</listen>\n"
                "  <auth>EXTERNAL</auth>\n"
                "  <policy context=\"default\">\n"
                "    <allow send_destination=\"*\" eavesdrop=\"true\"/>\n"
                "    <allow eavesdrop=\"true\"/>\n"
                "    <allow own=\"*\"/>\n"
                "  </policy>\n"
                "</busconfig>\n",
                dir);
        if (fclose(f) != 0)
                return NULL;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return NULL;
        pid = fork();
        if (pid < 0)
                return NULL;
        if (pid == 0) {
                (void) prctl(PR_SET_PDEATHSIG, SIGKILL);
                dup2(pipefd[1], STDOUT_FILENO);
                execlp("dbus-daemon", "dbus-daemon", arg, "--nofork", "--nopidfile", "--print-address=1",
                       (char *) NULL);
                _exit(127);
        }
        close(pipefd[1]);
        /* the address comes once it listens */
        while (n < sizeof(buf) - 1) {
                ssize_t l = read(pipefd[0], buf + n, sizeof(buf) - 1 - n);

                if (l <= 0)
                        break;
                n += l;
                if (memchr(buf, '\n', n))
                        break;
        }
        close(pipefd[0]);
        buf[n] = 0;
        if (!strchr(buf, '\n')) {
                kill(pid, SIGKILL);
                waitpid(pid, NULL, 0);
                return NULL;
        }
        *strchr(buf, '\n') = 0;
        *ret_pid = pid;
        return strdup(buf);
}

/* One object: which device or connection of nm it is. */
struct obj {
        const struct nm_standin *nm;
        size_t index;
};

static int get_device_by_ip_iface(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        const struct nm_standin *nm = userdata;
        const char *iface;
        char path[128];
        int r;

        r = sd_bus_message_read(m, "s", &iface);
        if (r < 0)
                return r;
        for (size_t i = 0; i < nm->n_devices; i++)
                if (streq(nm->devices[i].iface, iface)) {
                        snprintf(path, sizeof(path), NM "/Devices/%zu", i + 1);
                        return sd_bus_reply_method_return(m, "o", path);
                }
        return sd_bus_error_set(error, NM_IFACE ".UnknownDevice", "No device found for the requested iface.");
}

static int dev_interface(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct obj *o = userdata;

        return sd_bus_message_append(reply, "s", o->nm->devices[o->index].iface);
}

static int dev_active(sd_bus *bus, const char *path, const char *interface, const char *property,
                      sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct obj *o = userdata;
        char p[128] = "/";

        if (o->nm->devices[o->index].active >= 0)
                snprintf(p, sizeof(p), NM "/ActiveConnection/%zu", o->index + 1);
        return sd_bus_message_append(reply, "o", p);
}

static int dev_available(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct obj *o = userdata;
        const int *a = o->nm->devices[o->index].available;
        int r;

        r = sd_bus_message_open_container(reply, 'a', "o");
        if (r < 0)
                return r;
        for (size_t i = 0; i < ELEMENTSOF(o->nm->devices[o->index].available) && a[i] >= 0; i++) {
                char p[128];

                snprintf(p, sizeof(p), NM "/Settings/%d", a[i] + 1);
                r = sd_bus_message_append(reply, "o", p);
                if (r < 0)
                        return r;
        }
        return sd_bus_message_close_container(reply);
}

/* The active connection of device o->index. */
static int active_connection(sd_bus *bus, const char *path, const char *interface, const char *property,
                             sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct obj *o = userdata;
        char p[128];

        snprintf(p, sizeof(p), NM "/Settings/%d", o->nm->devices[o->index].active + 1);
        return sd_bus_message_append(reply, "o", p);
}

static int active_string(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct obj *o = userdata;
        const struct nm_standin_connection *c = &o->nm->connections[o->nm->devices[o->index].active];

        return sd_bus_message_append(reply, "s", streq(property, "Id") ? c->id : c->uuid);
}

static int conn_filename(sd_bus *bus, const char *path, const char *interface, const char *property,
                         sd_bus_message *reply, void *userdata, sd_bus_error *error) {
        const struct obj *o = userdata;

        return sd_bus_message_append(reply, "s", o->nm->connections[o->index].filename ?: "");
}

static int append_setting(sd_bus_message *m, const char *key, const char *type, ...) {
        va_list ap;
        int r;

        r = sd_bus_message_open_container(m, 'e', "sv");
        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", key);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(m, 'v', type);
        if (r < 0)
                return r;
        va_start(ap, type);
        r = sd_bus_message_appendv(m, type, ap);
        va_end(ap);
        if (r < 0)
                return r;
        r = sd_bus_message_close_container(m);
        if (r < 0)
                return r;
        return sd_bus_message_close_container(m);
}

static int open_group(sd_bus_message *m, const char *group) {
        int r = sd_bus_message_open_container(m, 'e', "sa{sv}");

        if (r < 0)
                return r;
        r = sd_bus_message_append(m, "s", group);
        if (r < 0)
                return r;
        return sd_bus_message_open_container(m, 'a', "{sv}");
}

static int close_group(sd_bus_message *m) {
        int r = sd_bus_message_close_container(m);

        return r < 0 ? r : sd_bus_message_close_container(m);
}

/* As NetworkManager sends them: every setting the connection has, with
 * values of many types, secrets left out. */
static int get_settings(sd_bus_message *m, void *userdata, sd_bus_error *error) {
        _cleanup_(sd_bus_message_unrefp) sd_bus_message *reply = NULL;
        const struct obj *o = userdata;
        const struct nm_standin_connection *c = &o->nm->connections[o->index];
        static const uint8_t mac[] = { 0x52, 0x54, 0x00, 0x12, 0x34, 0x56 };
        int r;

        r = sd_bus_message_new_method_return(m, &reply);
        if (r < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'a', "{sa{sv}}");
        if (r < 0)
                return r;
        if ((r = open_group(reply, "connection")) < 0 || (r = append_setting(reply, "autoconnect", "b", 1)) < 0 ||
            (r = append_setting(reply, "id", "s", c->id)) < 0 ||
            (r = append_setting(reply, "interface-name", "s", "eth0")) < 0 ||
            (r = append_setting(reply, "timestamp", "t", (uint64_t) 1764590000)) < 0 ||
            (r = append_setting(reply, "type", "s", "802-3-ethernet")) < 0 ||
            (r = append_setting(reply, "uuid", "s", c->uuid)) < 0 || (r = close_group(reply)) < 0)
                return r;
        if ((r = open_group(reply, "802-3-ethernet")) < 0)
                return r;
        r = sd_bus_message_open_container(reply, 'e', "sv");
        if (r >= 0)
                r = sd_bus_message_append(reply, "s", "mac-address");
        if (r >= 0)
                r = sd_bus_message_open_container(reply, 'v', "ay");
        if (r >= 0)
                r = sd_bus_message_append_array(reply, 'y', mac, sizeof(mac));
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r >= 0)
                r = sd_bus_message_close_container(reply);
        if (r < 0 || (r = append_setting(reply, "mtu", "u", 1500)) < 0 || (r = close_group(reply)) < 0)
                return r;
        if (c->total_vfs != -1) {
                if ((r = open_group(reply, "sriov")) < 0 || (r = append_setting(reply, "autoprobe-drivers", "i", -1)) < 0)
                        return r;
                if (c->total_vfs >= 0 && (r = append_setting(reply, "total-vfs", "u", (uint32_t) c->total_vfs)) < 0)
                        return r;
                if ((r = close_group(reply)) < 0)
                        return r;
        }
        r = sd_bus_message_close_container(reply);
        if (r < 0)
                return r;
        return sd_bus_send(NULL, reply, NULL);
}

static const sd_bus_vtable manager_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetDeviceByIpIface", "s", "o", get_device_by_ip_iface, 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable device_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Interface", "s", dev_interface, 0, 0),
        SD_BUS_PROPERTY("ActiveConnection", "o", dev_active, 0, 0),
        SD_BUS_PROPERTY("AvailableConnections", "ao", dev_available, 0, 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable active_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_PROPERTY("Connection", "o", active_connection, 0, 0),
        SD_BUS_PROPERTY("Id", "s", active_string, 0, 0),
        SD_BUS_PROPERTY("Uuid", "s", active_string, 0, 0),
        SD_BUS_VTABLE_END,
};

static const sd_bus_vtable connection_vtable[] = {
        SD_BUS_VTABLE_START(0),
        SD_BUS_METHOD("GetSettings", "", "a{sa{sv}}", get_settings, 0),
        SD_BUS_PROPERTY("Filename", "s", conn_filename, 0, 0),
        SD_BUS_VTABLE_END,
};

static int serve(const char *address, const struct nm_standin *nm, int ready_fd) {
        sd_bus *bus = NULL;
        struct obj *devs = calloc(nm->n_devices + 1, sizeof(*devs));
        struct obj *conns = calloc(nm->n_connections + 1, sizeof(*conns));
        char path[128];
        int r;

        if (!devs || !conns)
                return -ENOMEM;
        r = sd_bus_new(&bus);
        if (r < 0)
                return r;
        r = sd_bus_set_address(bus, address);
        if (r >= 0)
                r = sd_bus_set_bus_client(bus, true);
        if (r >= 0)
                r = sd_bus_start(bus);
        if (r >= 0)
                r = sd_bus_add_object_vtable(bus, NULL, NM, NM_IFACE, manager_vtable, (void *) nm);
        for (size_t i = 0; r >= 0 && i < nm->n_devices; i++) {
                devs[i] = (struct obj) { nm, i };
                snprintf(path, sizeof(path), NM "/Devices/%zu", i + 1);
                r = sd_bus_add_object_vtable(bus, NULL, path, NM_IFACE ".Device", device_vtable, &devs[i]);
                if (r >= 0 && nm->devices[i].active >= 0) {
                        snprintf(path, sizeof(path), NM "/ActiveConnection/%zu", i + 1);
                        r = sd_bus_add_object_vtable(bus, NULL, path, NM_IFACE ".Connection.Active", active_vtable,
                                                     &devs[i]);
                }
        }
        for (size_t i = 0; r >= 0 && i < nm->n_connections; i++) {
                conns[i] = (struct obj) { nm, i };
                snprintf(path, sizeof(path), NM "/Settings/%zu", i + 1);
                r = sd_bus_add_object_vtable(bus, NULL, path, NM_IFACE ".Settings.Connection", connection_vtable,
                                             &conns[i]);
        }
        if (r >= 0)
                r = sd_bus_request_name(bus, "org.freedesktop.NetworkManager", 0);
        if (r < 0)
                return r;
        if (write(ready_fd, "1", 1) != 1)
                return -errno;
        close(ready_fd);
        for (;;) {
                r = sd_bus_process(bus, NULL);
                if (r < 0)
                        return r;
                if (r > 0)
                        continue;
                r = sd_bus_wait(bus, UINT64_MAX);
                if (r < 0)
                        return r;
        }
}

pid_t nm_standin_start(const char *address, const struct nm_standin *nm) {
        int pipefd[2];
        char c;
        pid_t pid;

        if (pipe2(pipefd, O_CLOEXEC) < 0)
                return -1;
        pid = fork();
        if (pid < 0)
                return -1;
        if (pid == 0) {
                int r;

                /* not the test framework's handlers: check's SIGTERM
                 * handler signals the whole process group */
                signal(SIGTERM, SIG_DFL);
                signal(SIGINT, SIG_DFL);
                signal(SIGALRM, SIG_DFL);
                (void) prctl(PR_SET_PDEATHSIG, SIGTERM);
                close(pipefd[0]);
                r = serve(address, nm, pipefd[1]);
                fprintf(stderr, "NetworkManager stand-in: %s\n", strerror(-r));
                _exit(EXIT_FAILURE);
        }
        close(pipefd[1]);
        if (read(pipefd[0], &c, 1) != 1) {
                close(pipefd[0]);
                waitpid(pid, NULL, 0);
                return -1;
        }
        close(pipefd[0]);
        return pid;
}

void nm_standin_stop(pid_t pid) {
        if (pid <= 0)
                return;
        kill(pid, SIGTERM);
        waitpid(pid, NULL, 0);
}

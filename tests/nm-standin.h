/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A stand-in for NetworkManager on a private D-Bus bus, for tests where
 * no NetworkManager can run: it owns org.freedesktop.NetworkManager and
 * answers the part of NetworkManager's D-Bus API (its introspection data,
 * org.freedesktop.NetworkManager*.xml) that svff reads:
 *
 *   /org/freedesktop/NetworkManager          GetDeviceByIpIface(s) -> o, or
 *                                            ...NetworkManager.UnknownDevice
 *   .../Devices/N         .Device            Interface, ActiveConnection (o,
 *                                            "/" when none), AvailableConnections
 *   .../ActiveConnection/N .Connection.Active Connection, Id, Uuid
 *   .../Settings/N        .Settings.Connection GetSettings() -> a{sa{sv}},
 *                                            Filename ("" in memory)
 *
 * Also a private dbus-daemon to put it on. Both run as child processes
 * that die with the test. */

#include <stdbool.h>
#include <sys/types.h>

struct nm_standin_connection {
        const char *id, *uuid;
        const char *filename;           /* NULL: in memory, "" */
        int total_vfs;                  /* -1: no "sriov" setting; -2: one without total-vfs */
};

struct nm_standin_device {
        const char *iface;
        int active;                     /* index of its active connection's settings, -1: none */
        int available[8];               /* indices into the connections, -1 ends */
};

struct nm_standin {
        const struct nm_standin_connection *connections;
        size_t n_connections;
        const struct nm_standin_device *devices;
        size_t n_devices;
};

/* A private dbus-daemon (session type, listening in dir): its address,
 * malloc'ed, and *ret_pid. NULL when dbus-daemon cannot run. */
char *nm_standin_bus_start(const char *dir, pid_t *ret_pid);

/* Serves nm on the bus at address from a child process; returns once it
 * owns the name (its pid), or -1. */
pid_t nm_standin_start(const char *address, const struct nm_standin *nm);

/* SIGTERM and reap. */
void nm_standin_stop(pid_t pid);

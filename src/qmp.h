/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* QMP, QEMU's JSON monitor protocol, behind one small interface with two
 * transports:
 *
 *   - direct: a Unix socket to a QEMU that libvirt does not manage
 *     (greeting, qmp_capabilities, commands with ids, asynchronous
 *     events queued until asked for);
 *   - libvirt: virDomainQemuMonitorCommand() for a libvirt domain (libvirt
 *     owns the monitor; events are not available through it).
 *
 * QMP errors map to -errno, the message carries QEMU's "desc":
 *   CommandNotFound -> -EOPNOTSUPP, DeviceNotFound/DeviceNotActive ->
 *   -ENODEV, GenericError and others -> -EINVAL; a connection closed by
 *   QEMU -> -ECONNRESET; a deadline passed -> -ETIMEDOUT.
 *
 * One object is used by one thread at a time. */

#include <stdbool.h>
#include <libvirt/libvirt.h>
#include <json-c/json.h>

#include "error.h"
#include "sysfs.h"

struct svff_qmp;

/* The greeting and capability negotiation must complete within timeout. */
int svff_qmp_connect(const char *path, usec_t timeout, struct svff_qmp **ret, struct svff_error *err);

/* The passthrough for a libvirt domain; takes its own reference on dom. */
int svff_qmp_new_libvirt(virDomainPtr dom, struct svff_qmp **ret);

void svff_qmp_free(struct svff_qmp *q);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_qmp *, svff_qmp_free);

/* QEMU's version from the greeting ({"major","minor","micro"}; borrowed,
 * NULL for the libvirt transport). */
struct json_object *svff_qmp_version(struct svff_qmp *q);

/* Runs command with arguments (borrowed, may be NULL) and waits up to
 * timeout for its reply; events arriving meanwhile are queued. On
 * success *ret_return (optional) gets a new reference to "return". */
int svff_qmp_execute(struct svff_qmp *q, const char *command, struct json_object *arguments,
                     usec_t timeout, struct json_object **ret_return, struct svff_error *err);

/* Whether QEMU offers command (query-commands): 1 yes, 0 no, <0 error. */
int svff_qmp_has_command(struct svff_qmp *q, const char *command, usec_t timeout,
                         struct svff_error *err);

/* The next event (queued first, then from the socket) within timeout:
 * a new reference in *ret. -ETIMEDOUT, -ECONNRESET, -EOPNOTSUPP for
 * the libvirt transport. */
int svff_qmp_next_event(struct svff_qmp *q, usec_t timeout, struct json_object **ret,
                        struct svff_error *err);

/* Waits for event name whose data[key] is the string value (key NULL:
 * any); other events stay queued, in order. */
int svff_qmp_wait_event(struct svff_qmp *q, const char *name, const char *key, const char *value,
                        usec_t timeout, struct json_object **ret, struct svff_error *err);

/* Native device pause: runs command (the configured device-pause or
 * -unpause command) with {"id": device_id}; -EOPNOTSUPP, with nothing
 * done, when QEMU does not offer it (its CommandNotFound). */
int svff_qmp_device_pause(struct svff_qmp *q, const char *command, const char *device_id,
                          usec_t timeout, struct svff_error *err);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The Monitor event bus: the clients that called io.svff.Monitor, and
 * the events svffd sends them. Each event is encoded once and queued to
 * every subscriber without a copy; a subscriber that falls behind by more
 * than the backlog gets one "events-dropped" event and is hung up on. */

#include <stddef.h>
#include <json-c/json.h>

#include "server.h"

struct monitor;

int monitor_new(struct monitor **ret);
/* Drops the subscribers (their calls outlive the bus). Accepts NULL. */
struct monitor *monitor_free(struct monitor *b);

/* Bytes a subscriber may lag by (monitor_backlog_bytes); for new
 * subscribers. */
void monitor_set_backlog(struct monitor *b, size_t bytes);

int monitor_subscribe(struct monitor *b, struct call *call);
/* Sends event (taken) to every subscriber, and to also (may be NULL) when
 * it is connected and asked for "more". Adds "timestamp_usec". b may be
 * NULL (the bus is gone at exit; also still gets it). */
void monitor_emit(struct monitor *b, struct call *also, struct json_object *event);
/* Ends every stream with a "shutdown" event. */
void monitor_end(struct monitor *b);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Method dispatch for the varlink server: org.varlink.service and io.svff.
 * Reads (Ping, List, Status, Monitor, GetInfo, GetInterfaceDescription)
 * are answered for any peer; Init and Release check the peer first. */

#include "manager.h"
#include "server.h"

void methods_dispatch(struct call *call, void *userdata);

/* Shared by the handlers (methods.c, operations.c). */

/* Whether the call's parameters only use the names in allowed (a
 * NULL-terminated list); otherwise answers InvalidParameter and returns
 * false. */
bool params_check_known(struct call *call, const char *error, const char *const *allowed);
/* Reads a PCI address parameter in canonical form; answers
 * InvalidParameter and returns false on failure. */
bool params_get_address(struct call *call, const char *name, char buf[static SVFF_PCI_ADDR_STRLEN]);
/* Answers PermissionDenied and returns false unless the peer may change
 * devices. */
bool require_privileged(struct manager *m, struct call *call);

/* The List JSON of one PF (store-aware: managed, original driver,
 * assignment). */
struct json_object *json_pf(struct manager *m, const struct svff_pf *pf);

/* io.svff.Init and io.svff.Release (operations.c). */
void method_init(struct manager *m, struct call *call);
void method_release(struct manager *m, struct call *call);

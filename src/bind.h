/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Binding a device to a driver by address, never by id (new_id would bind
 * every device with that vendor:device):
 *   driver_override=<driver> -> unbind from the current driver ->
 *   drivers_probe -> verify the "driver" link, since drivers_probe
 *   reports success whether or not anything bound. */

#include "context.h"
#include "error.h"

/* Binds address to driver. When ret_prev_driver is non-NULL it receives
 * the driver bound before (NULL when unbound) so it can be restored.
 * Binding to the driver already bound is a no-op that still sets the
 * override (so a later re-probe keeps it).
 *   -EINVAL bad address, -ENODEV no such device or it vanished,
 *   -ENXIO  no driver called driver exists (module not loaded?),
 *   -EBUSY  the device stayed unbound or on another driver after probing. */
int svff_dev_bind(struct svff_ctx *ctx, const char *address, const char *driver,
                  char **ret_prev_driver, struct svff_error *err);

/* Unbinds address from whatever driver it has and clears driver_override.
 * Unbound already is success. */
int svff_dev_unbind(struct svff_ctx *ctx, const char *address, struct svff_error *err);

/* Gives address back to orig_driver (NULL: leave it unbound) and clears
 * driver_override, so the device ends as it was before svff touched it. */
int svff_dev_restore(struct svff_ctx *ctx, const char *address, const char *orig_driver,
                     struct svff_error *err);

/* The driver bound to address, NULL (and 0) when unbound. */
int svff_dev_get_driver(struct svff_ctx *ctx, const char *address, char **ret);

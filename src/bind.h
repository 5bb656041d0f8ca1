/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Binding a device to a driver by address, never by id (new_id would bind
 * every device with that vendor:device):
 *   driver_override=<driver> -> unbind from the current driver ->
 *   drivers_probe -> verify the "driver" link, since drivers_probe
 *   reports success whether or not anything bound. */

#include <stddef.h>
#include <stdint.h>

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

/* Hands address to the driver the kernel picks for it, as driverctl's
 * unset-override does: unbinds it, clears driver_override and probes.
 * A VF probes even when its PF's sriov_drivers_autoprobe is off (svff
 * turns it off so that new VFs stay unbound): it is turned on for this
 * one probe and off again. *ret_driver (may be NULL) receives the
 * driver that took it, NULL when none did (no driver for its id is
 * loaded), which is not an error. */
int svff_dev_reprobe(struct svff_ctx *ctx, const char *address, char **ret_driver, struct svff_error *err);

/* The driver bound to address, NULL (and 0) when unbound. */
int svff_dev_get_driver(struct svff_ctx *ctx, const char *address, char **ret);

/* A PF's VFs are bound one after the other under one budget that grows
 * with their count, base_usec + per_vf_usec x n (svff.conf's
 * bind_timeout_sec and bind_timeout_per_vf_msec): a driver whose probe
 * hangs must not stall the PF for ever, and 252 VFs need more time than
 * 4. Returns -ETIMEDOUT with err naming the PF, the budget, how many
 * were bound and the key to raise, for each VF not tried in time. */
int svff_bind_budget_error(struct svff_error *err, const char *pf, const char *driver, size_t n, size_t bound,
                           uint64_t base_usec, uint64_t per_vf_usec);

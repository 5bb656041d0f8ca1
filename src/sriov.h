/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Changing a PF's VF count, the way the kernel allows it:
 *   1. sriov_drivers_autoprobe=0, so no host driver grabs new VFs;
 *   2. sriov_numvfs=0 first when the count is non-zero and changes
 *      (the kernel refuses N -> M with EBUSY);
 *   3. sriov_numvfs=N;
 *   4. read back: a driver may create fewer VFs than asked and still
 *      report success.
 * Each write is bounded by timeout_usec (see svff_sysfs_write_deadline):
 * disabling VFs blocks while one is open by a VFIO user. */

#include "context.h"
#include "error.h"
#include "sysfs.h"

#define SVFF_NUMVFS_TIMEOUT_DEFAULT (30 * USEC_PER_SEC)

/* Errors (err names the PF and what to do):
 *   -EINVAL     bad address
 *   -ENODEV     no such device, or it vanished during the change
 *   -EOPNOTSUPP no SR-IOV capability
 *   -ERANGE     numvfs > sriov_totalvfs
 *   -ENOENT     the PF has no driver (the kernel's answer, checked first)
 *   -ETIMEDOUT  a write did not finish in time (a VF is still held)
 *   -EIO        fewer VFs than asked exist afterwards (partial creation);
 *               the count is left as the kernel made it and is named in err
 *   other       the kernel's errno for the write
 * Setting the current count again is a no-op that still turns autoprobe
 * off. */
int svff_pf_set_numvfs(struct svff_ctx *ctx, const char *pf_address, unsigned numvfs,
                       usec_t timeout_usec, struct svff_error *err);

/* The same, with a deadline that scales with the work: each write may
 * take base_usec plus per_vf_usec for every VF it creates or removes
 * (creating 252 VFs takes far longer than creating 4). A timeout's
 * message names both budgets by their svff.conf keys
 * (numvfs_timeout_sec, numvfs_timeout_per_vf_msec), so the operator
 * knows what to raise. */
int svff_pf_set_numvfs_scaled(struct svff_ctx *ctx, const char *pf_address, unsigned numvfs,
                              usec_t base_usec, usec_t per_vf_usec, struct svff_error *err);

/* Writes sriov_drivers_autoprobe: whether VFs created from now on probe
 * their default driver. svff_pf_set_numvfs() turns it off; a PF policy
 * may want it back on afterwards. */
int svff_pf_set_autoprobe(struct svff_ctx *ctx, const char *pf_address, bool autoprobe,
                          struct svff_error *err);

/* Parses a user-supplied VF count ("4"). -EINVAL for non-numeric, negative,
 * empty or trailing text; -ERANGE above 65535. */
int svff_numvfs_parse(const char *s, unsigned *ret);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The NIC class: a VF's admin settings in its PF driver (MAC, VLAN with
 * QoS and protocol, tx rates, spoof checking, trust, link state, RSS
 * query), set over rtnetlink after every numvfs write and before the VF
 * goes to vfio-pci. See class-nic.c for the settings and the state. */

#include "class.h"
#include "netlink-vf.h"

extern const struct svff_class svff_class_nic;

/* open() over nl (owned from here on, freed even on failure) with NIC
 * owners looked up under config_root: for the unit tests' stand-in and
 * scratch configuration trees. */
int svff_class_nic_open_with(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_nl *nl,
                             const char *config_root, struct svff_class_pf **ret,
                             struct svff_error *err);

/* open() over nl (owned from here on, freed even on failure) with NIC
 * owners looked up beside the context's sysfs tree, as open() does: for
 * the daemon's stand-in in test builds. */
int svff_class_nic_open_beside(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_nl *nl,
                               struct svff_class_pf **ret, struct svff_error *err);

/* The handle's rtnetlink message counts (the bench and the tests). */
void svff_class_nic_get_stats(struct svff_class_pf *c, struct svff_nl_stats *ret);

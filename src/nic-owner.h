/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Who else manages a NIC PF's VFs: a second manager that sets the VF
 * count or the VFs' settings fights svff (NetworkManager enforces a
 * connection's sriov.total-vfs on activation and resets it on
 * deactivation; systemd-networkd applies SR-IOVVirtualFunctions= and
 * [SR-IOV] sections when the link appears).
 *
 * Read from their configuration files under root ("/" on a host, a
 * scratch tree in tests), so no running NetworkManager or networkd is
 * needed:
 *   NetworkManager  keyfile connections in etc/NetworkManager/system-
 *                   connections and run/NetworkManager/system-connections
 *                   with interface-name=IFNAME and a [sriov] section
 *   networkd        .link files ([Match] OriginalName=/Name=/Path=) with
 *                   SR-IOVVirtualFunctions= or [SR-IOV], .network files
 *                   ([Match] Name=/Path=) with [SR-IOV], in etc/, run/ and
 *                   usr/lib/systemd/network, a file in an earlier one
 *                   hiding one of the same name later (and a link to
 *                   /dev/null masking it), as networkd reads them. */

#include "macro.h"

struct svff_nic_owner {
        char *owner;            /* "NetworkManager", "systemd-networkd" */
        char *file;             /* absolute, as seen on the host */
        char *detail;           /* "sriov.total-vfs=4", "SR-IOVVirtualFunctions=4" */
};

/* The first manager configured for ifname (PCI address pci_address, may
 * be NULL): 1 and *ret, 0 when none (*ret untouched), -ENOMEM. Files that
 * cannot be read are skipped. */
int svff_nic_owner_find(const char *root, const char *ifname, const char *pci_address,
                        struct svff_nic_owner **ret);
void svff_nic_owner_free(struct svff_nic_owner *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_nic_owner *, svff_nic_owner_free);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Who else manages a NIC PF's VFs: a second manager that sets the VF
 * count or the VFs' settings fights svff (NetworkManager enforces a
 * connection's sriov.total-vfs on activation and resets it on
 * deactivation; systemd-networkd applies SR-IOVVirtualFunctions= and
 * [SR-IOV] sections when the link appears).
 *
 * NetworkManager is asked first, live over D-Bus where it runs (see
 * svff_nic_owner_find_nm()): it knows connections from every settings
 * plugin, in memory or in files. Then, and where it does not run, the
 * configuration files under root ("/" on a host, a scratch tree in
 * tests), so no running NetworkManager or networkd is needed:
 *   NetworkManager  keyfile connections in etc/NetworkManager/system-
 *                   connections and run/NetworkManager/system-connections
 *                   with interface-name=IFNAME and a [sriov] section
 *   networkd        .link files ([Match] OriginalName=/Name=/Path=) with
 *                   SR-IOVVirtualFunctions= or [SR-IOV], .network files
 *                   ([Match] Name=/Path=) with [SR-IOV], in etc/, run/ and
 *                   usr/lib/systemd/network, a file in an earlier one
 *                   hiding one of the same name later (and a link to
 *                   /dev/null masking it), as networkd reads them
 *   the Kubernetes  etc/sriov-operator/pci/<PCI address>, where its
 *   SR-IOV network  config daemon keeps what it applied to the PF
 *   operator        (JSON, numVfs named)
 * The operator's file is looked at first: it names the PF itself.
 *
 * Those files are other tools', so none is trusted: each is opened
 * non-blocking and must be a regular file of at most 64 KiB, and the
 * operator's must not be a symbolic link (keyfiles and networkd files
 * may be, as those tools read them through links). Anything else there
 * (a FIFO, a link to a device, a huge file) is refused by name rather
 * than read or skipped. */

#include "error.h"
#include "macro.h"

struct sd_bus;

struct svff_nic_owner {
        char *owner;            /* "NetworkManager", "systemd-networkd", "the Kubernetes SR-IOV network operator" */
        /* Where the setting lives, for messages: a file, absolute as seen
         * on the host, or the connection NetworkManager reported live,
         * "connection 'pf0', UUID ...", and its file when it has one */
        char *file;
        char *detail;           /* "sriov.total-vfs=4", "SR-IOVVirtualFunctions=4", "numVfs=4" */
        /* the connection NetworkManager reported; NULL from files */
        char *connection_id;
        char *connection_uuid;
};

/* The first manager configured for ifname (PCI address pci_address, may
 * be NULL): 1 and *ret, 0 when none (*ret untouched), -ENOMEM, or a file
 * refused as above (err names it and says what to do): -EINVAL not a
 * regular file, -ELOOP the operator's file a link, -EFBIG larger than
 * 64 KiB, or why it could not be opened or read. With root "/" (the
 * host), NetworkManager on the system bus is asked first; a scratch root
 * has none. */
int svff_nic_owner_find(const char *root, const char *ifname, const char *pci_address,
                        struct svff_nic_owner **ret, struct svff_error *err);
/* The same with NetworkManager asked on bus (borrowed; NULL: not asked). */
int svff_nic_owner_find_with(struct sd_bus *bus, const char *root, const char *ifname,
                             const char *pci_address, struct svff_nic_owner **ret, struct svff_error *err);

/* NetworkManager's live view of ifname, over bus (borrowed): its device
 * (GetDeviceByIpIface), the settings connection of its active connection,
 * then its available connections, the first whose settings (GetSettings)
 * carry an "sriov" setting: 1 and *ret naming that connection, 0 when
 * none. No NetworkManager on the bus, a device it does not know, and
 * replies that fail or time out are 0 too (the files then decide);
 * -ENOMEM. Never starts NetworkManager by bus activation. */
int svff_nic_owner_find_nm(struct sd_bus *bus, const char *ifname, struct svff_nic_owner **ret);
void svff_nic_owner_free(struct svff_nic_owner *o);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_nic_owner *, svff_nic_owner_free);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The libvirt adapter: the one place that talks to libvirt for VF
 * assignment and maps its errors to -errno plus an operator's sentence.
 *
 * A VF reaches a domain as
 *
 *   <hostdev mode='subsystem' type='pci' managed='no'>
 *     <driver name='vfio'/>
 *     <source><address domain='0x0000' bus='0x01' slot='0x00' function='0x4'/></source>
 *     <alias name='ua-svff-0000-01-00-4'/>
 *     <address type='pci' domain='0x0000' bus='0x02' slot='0x00' function='0x0'/>  (optional)
 *   </hostdev>
 *
 * managed='no' because svffd binds the VF to vfio-pci itself and must
 * not have libvirt rebind it to the host driver on detach. The alias is
 * a libvirt "user alias" (it must start with "ua-" and use only
 * [A-Za-z0-9_-]); libvirt passes it to QEMU as the device id, which is
 * how the QMP pause command names the device.
 *
 * Error mapping (svff_hv_error_from_libvirt()):
 *   -ENOENT      no such domain
 *   -ENOTCONN    the connection is closed or libvirtd went away
 *   -EOPNOTSUPP  the driver or host cannot do it (e.g. no VFIO for LIVE)
 *   -EEXIST      the device is already there
 *   -ENODEV      the device is not in the domain
 *   -EINVAL      the request is invalid for the domain's state
 *   -ETIMEDOUT   libvirt timed out
 *   -EIO         anything else
 *
 * Thread-safety: libvirt connections are thread-safe and its errors
 * thread-local, so every function here may be called from any thread;
 * they block, so svffd calls them on worker threads only. */

#include <stdbool.h>
#include <libvirt/libvirt.h>

#include "error.h"
#include "hv-removals.h"   /* SVFF_UUID_STRLEN, SVFF_ALIAS_MAX */
#include "pciaddr.h"
#include "store.h"   /* struct svff_failover */
#include "sysfs.h"

#define SVFF_DOMAIN_NAME_MAX 256

/* Bits for svff_hv_attach()/detach(): which definitions to change. */
enum {
        SVFF_HV_LIVE = 1 << 0,
        SVFF_HV_CONFIG = 1 << 1,
};

struct svff_domain_info {
        char uuid[SVFF_UUID_STRLEN];
        char name[SVFF_DOMAIN_NAME_MAX];
        bool active;
        bool persistent;
};

/* A hostdev as found in a domain's XML. */
struct svff_hostdev {
        char source[SVFF_PCI_ADDR_STRLEN];        /* the host VF */
        char alias[SVFF_ALIAS_MAX];                /* "" when none */
        char guest_address[SVFF_PCI_ADDR_STRLEN]; /* "" when none assigned yet */
};

/* The user alias svff gives vf: "ua-svff-0000-01-00-4". -EINVAL unless
 * vf is a canonical PCI address. */
int svff_hv_alias_for(const char *vf, char buf[static SVFF_ALIAS_MAX]);

/* The <hostdev> element for vf (canonical address), with alias and, when
 * guest_address is non-NULL, the guest PCI address. Built with libxml2, so
 * every value is escaped as XML requires. Returns a malloc'd string in
 * *ret; -EINVAL for a malformed address or alias, -ENOMEM. */
int svff_hv_hostdev_xml(const char *vf, const char *alias, const char *guest_address, char **ret);
/* The same, or with fo (a standby named, not NULL) the <interface
 * type='hostdev'> above: -EINVAL also for a malformed MAC or alias. */
int svff_hv_device_xml(const char *vf, const char *alias, const char *guest_address,
                       const struct svff_failover *fo, char **ret);

/* The failover standby key names in a domain XML document: the
 * <interface> with <teaming type='persistent'/> whose MAC (any case) or
 * alias is key. 1 and *ret filled (standby "" when it has no user
 * alias, which teaming needs), 0 when there is none, -EBADMSG when the
 * document is not XML. */
int svff_hv_find_standby_in_xml(const char *xml, const char *key, struct svff_failover *ret);

/* Looks for the PCI hostdev whose source is vf in a domain XML document.
 * Returns 1 and fills *ret, 0 when absent, -EBADMSG when the document is
 * not XML. An <interface type='hostdev'> (a failover pair's VF) counts. */
int svff_hv_find_hostdev_in_xml(const char *xml, const char *vf, struct svff_hostdev *ret);

/* The same for the PCI hostdev whose alias is alias (another host
 * address than the one its alias was made from, after its VF moved):
 * 1 and *ret, 0 when absent, -EBADMSG, -EINVAL for an empty alias. */
int svff_hv_find_hostdev_by_alias_in_xml(const char *xml, const char *alias, struct svff_hostdev *ret);

/* The machine type of a domain XML document (/domain/os/type/@machine):
 * 1 and *ret (malloc'd), 0 when it names none, -EBADMSG when the
 * document is not XML, -ENOMEM. */
int svff_hv_machine_in_xml(const char *xml, char **ret);

/* What the guest's machine type keeps at guest_address, so a VF cannot
 * go there ("the host bridge": slot 0 of bus 0 on QEMU's pc and q35
 * machines, where libvirt refuses the device only when the domain
 * starts), or NULL. */
const char *svff_hv_guest_slot_owner(const char *machine, const char *guest_address);

/* How a domain's guest sees a device at a guest address unplugged and
 * plugged again (a reconf's detach and re-attach). */
enum svff_hv_hotplug {
        SVFF_HV_HOTPLUG_UNKNOWN,        /* the XML does not say (no address, no such bus) */
        SVFF_HV_HOTPLUG_ACPI,           /* ACPI PCI hotplug: the q35 and pc default */
        SVFF_HV_HOTPLUG_NATIVE,         /* native PCIe (or SHPC) hotplug: the guest's attention button */
        SVFF_HV_HOTPLUG_NONE,           /* none: the port's hotplug is off, or no ACPI on a bus only ACPI serves */
        _SVFF_HV_HOTPLUG_MAX,
};

const char *svff_hv_hotplug_to_string(enum svff_hv_hotplug h);

#define SVFF_HV_PORT_MAX 96

/* The hotplug a device at guest_address gets in a domain XML document:
 * from the PCI controller whose index is the address's bus (its model,
 * its <target hotplug='off'/>), whether the domain has <acpi/>, and
 * whether ACPI hotplug of bridges is off (<features><pci>
 * <acpi-bridge-hotplug state='off'/>, or the
 * ...acpi-pci-hotplug-with-bridge-support=off global in
 * <qemu:commandline>). ret_port (optional) names that controller
 * ("pcie-root-port index 5"), "" when unknown. 0 on success,
 * -EBADMSG when the document is not XML, -EINVAL. */
int svff_hv_hotplug_in_xml(const char *xml, const char *guest_address, enum svff_hv_hotplug *ret,
                           char ret_port[static SVFF_HV_PORT_MAX]);

/* Checks guest_address (NULL: none asked, 0) against dom's machine type,
 * read from its persistent definition when persistent, else the live
 * one: -EADDRINUSE with a message naming the address, what holds it and
 * the machine; libvirt's errors as svff_hv_error_from_libvirt(). */
int svff_hv_guest_address_check(virDomainPtr dom, bool persistent, const char *guest_address,
                                struct svff_error *err);

/* Stores the message and -errno for libvirt's last error on this thread
 * (what, e.g. "Attaching VF 0000:01:00.4 to 'vm1'", is prefixed) in err
 * and returns the -errno. */
int svff_hv_error_from_libvirt(struct svff_error *err, const char *what);

/* Once per process, before threads call any svff_hv_ function. */
void svff_hv_init(void);

/* Opens uri (read-write). -ENOTCONN with libvirt's message when it
 * cannot. The caller owns the connection (virConnectClose). Event
 * callbacks need an event implementation registered before this. */
int svff_hv_open(const char *uri, virConnectPtr *ret, struct svff_error *err);

/* Looks a domain up by UUID (when id parses as one) or name. -ENOENT
 * with "No domain 'x'" when there is none. *ret_dom (optional) gets a
 * reference the caller frees with virDomainFree. */
int svff_hv_lookup(virConnectPtr conn, const char *id, struct svff_domain_info *ret_info,
                   virDomainPtr *ret_dom, struct svff_error *err);
/* The same with one round trip fewer, for callers that only need to know
 * whether the domain runs: ret_info->persistent is always false. */
int svff_hv_lookup_running(virConnectPtr conn, const char *id, struct svff_domain_info *ret_info,
                           virDomainPtr *ret_dom, struct svff_error *err);

/* The hostdev for vf in dom's live (flags has SVFF_HV_LIVE) or
 * persistent definition: 1 found, 0 absent, <0 error. */
int svff_hv_get_hostdev(virDomainPtr dom, const char *vf, unsigned flags, struct svff_hostdev *ret,
                        struct svff_error *err);

/* The same, for the hostdev whose alias is alias. */
int svff_hv_get_hostdev_by_alias(virDomainPtr dom, const char *alias, unsigned flags, struct svff_hostdev *ret,
                                 struct svff_error *err);

/* Attaches vf to dom with alias, at guest_address when non-NULL, in the
 * definitions named by flags, and fills *ret (optional): without a
 * guest address, by reading the device back (live XML when LIVE, else
 * the persistent one) for the address libvirt chose. fo (NULL: none, or
 * its standby ""): as the failover pair's VF. LIVE and CONFIG go
 * in one libvirt call, which changes the persistent definition only when
 * the live change succeeded; refused because the persistent definition
 * already holds the device, the live one is attached alone. */
int svff_hv_attach(virDomainPtr dom, const char *vf, const char *alias, const char *guest_address,
                   const struct svff_failover *fo, unsigned flags, struct svff_hostdev *ret,
                   struct svff_error *err);

/* Asks libvirt to remove vf from dom (flags as for attach) and, for LIVE,
 * waits until the device is gone from the live XML (libvirt drops it
 * when QEMU reports DEVICE_DELETED) or deadline (CLOCK_MONOTONIC usec,
 * 0: do not wait) passes: then -ETIMEDOUT, "the guest has not released
 * it". A device already absent counts as detached. With alias (the
 * user alias svff recorded, "ua-...") and removals (fed from libvirt's
 * DEVICE_REMOVED events, see hv-removals.h), both definitions are asked
 * by alias with no read of the XML before, which does not block
 * libvirtd, and the wait ends on the event. Otherwise the device's XML
 * is read, the request waits in libvirtd, and the live XML is polled. */
struct svff_hv_removals;
int svff_hv_detach(virDomainPtr dom, const char *vf, const char *alias, unsigned flags, usec_t deadline,
                   struct svff_hv_removals *removals, struct svff_error *err);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <libvirt/virterror.h>
#include <libxml/parser.h>
#include <libxml/tree.h>
#include <libxml/xpath.h>

#include "hv-removals.h"
#include "hypervisor.h"

/* Domain XML from libvirt is bounded by what libvirt accepts; this only
 * guards the parser against a runaway document. */
#define DOMAIN_XML_MAX (16u * 1024u * 1024u)

static void xml_doc_freep(xmlDocPtr *d) {
        if (*d)
                xmlFreeDoc(*d);
}

static void xml_xpath_ctx_freep(xmlXPathContextPtr *c) {
        if (*c)
                xmlXPathFreeContext(*c);
}

static void xml_xpath_obj_freep(xmlXPathObjectPtr *o) {
        if (*o)
                xmlXPathFreeObject(*o);
}

static void xml_buffer_freep(xmlBufferPtr *b) {
        if (*b)
                xmlBufferFree(*b);
}

static void xml_freep(xmlChar **s) {
        if (*s)
                xmlFree(*s);
}

static void dom_freep(virDomainPtr *d) {
        if (*d)
                virDomainFree(*d);
}

int svff_hv_alias_for(const char *vf, char buf[static SVFF_ALIAS_MAX]) {
        char canon[SVFF_PCI_ADDR_STRLEN];
        int r;

        r = svff_pci_addr_canonicalize(vf, canon);
        if (r < 0)
                return r;
        for (char *p = canon; *p; p++)
                if (*p == ':' || *p == '.')
                        *p = '-';
        snprintf(buf, SVFF_ALIAS_MAX, "ua-svff-%s", canon);
        return 0;
}

static bool alias_valid(const char *a) {
        size_t n = strlen(a);

        return n > 3 && n < SVFF_ALIAS_MAX && strneq(a, "ua-", 3) &&
               strspn(a, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-") == n;
}

static int add_pci_address(xmlNodePtr parent, const struct svff_pci_addr *a, bool typed) {
        xmlNodePtr n = xmlNewChild(parent, NULL, BAD_CAST "address", NULL);
        char v[16];

        if (!n)
                return -ENOMEM;
        if (typed && !xmlNewProp(n, BAD_CAST "type", BAD_CAST "pci"))
                return -ENOMEM;
        snprintf(v, sizeof(v), "0x%04x", a->domain);
        if (!xmlNewProp(n, BAD_CAST "domain", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof(v), "0x%02x", a->bus);
        if (!xmlNewProp(n, BAD_CAST "bus", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof(v), "0x%02x", a->slot);
        if (!xmlNewProp(n, BAD_CAST "slot", BAD_CAST v))
                return -ENOMEM;
        snprintf(v, sizeof(v), "0x%x", a->func);
        if (!xmlNewProp(n, BAD_CAST "function", BAD_CAST v))
                return -ENOMEM;
        return 0;
}

/* "52:54:00:aa:bb:cc", any case. */
static bool mac_valid(const char *m) {
        if (strlen(m) != SVFF_MAC_STRLEN - 1)
                return false;
        for (size_t i = 0; i < SVFF_MAC_STRLEN - 1; i++)
                if (i % 3 == 2 ? m[i] != ':' : !strchr("0123456789abcdefABCDEF", m[i]))
                        return false;
        return true;
}

int svff_hv_hostdev_xml(const char *vf, const char *alias, const char *guest_address, char **ret) {
        return svff_hv_device_xml(vf, alias, guest_address, NULL, ret);
}

int svff_hv_device_xml(const char *vf, const char *alias, const char *guest_address,
                       const struct svff_failover *fo, char **ret) {
        _cleanup_(xml_doc_freep) xmlDocPtr doc = NULL;
        _cleanup_(xml_buffer_freep) xmlBufferPtr buf = NULL;
        struct svff_pci_addr src, guest;
        xmlNodePtr root, n;
        char *s;
        int r;

        if (!vf || !alias || !ret || svff_pci_addr_parse(vf, &src) < 0 || !alias_valid(alias))
                return -EINVAL;
        if (guest_address && svff_pci_addr_parse(guest_address, &guest) < 0)
                return -EINVAL;
        if (fo && !*fo->standby)
                fo = NULL;
        if (fo && (!alias_valid(fo->standby) || !mac_valid(fo->mac)))
                return -EINVAL;

        doc = xmlNewDoc(BAD_CAST "1.0");
        root = doc ? xmlNewNode(NULL, BAD_CAST (fo ? "interface" : "hostdev")) : NULL;
        if (!root)
                return -ENOMEM;
        xmlDocSetRootElement(doc, root);
        if ((!fo && !xmlNewProp(root, BAD_CAST "mode", BAD_CAST "subsystem")) ||
            !xmlNewProp(root, BAD_CAST "type", BAD_CAST (fo ? "hostdev" : "pci")) ||
            !xmlNewProp(root, BAD_CAST "managed", BAD_CAST "no"))
                return -ENOMEM;
        if (fo) {
                n = xmlNewChild(root, NULL, BAD_CAST "mac", NULL);
                if (!n || !xmlNewProp(n, BAD_CAST "address", BAD_CAST fo->mac))
                        return -ENOMEM;
        }
        n = xmlNewChild(root, NULL, BAD_CAST "driver", NULL);
        if (!n || !xmlNewProp(n, BAD_CAST "name", BAD_CAST "vfio"))
                return -ENOMEM;
        n = xmlNewChild(root, NULL, BAD_CAST "source", NULL);
        if (!n)
                return -ENOMEM;
        /* An interface's source address is typed, a hostdev's not. */
        r = add_pci_address(n, &src, fo != NULL);
        if (r < 0)
                return r;
        if (fo) {
                n = xmlNewChild(root, NULL, BAD_CAST "teaming", NULL);
                if (!n || !xmlNewProp(n, BAD_CAST "type", BAD_CAST "transient") ||
                    !xmlNewProp(n, BAD_CAST "persistent", BAD_CAST fo->standby))
                        return -ENOMEM;
        }
        n = xmlNewChild(root, NULL, BAD_CAST "alias", NULL);
        if (!n || !xmlNewProp(n, BAD_CAST "name", BAD_CAST alias))
                return -ENOMEM;
        if (guest_address) {
                r = add_pci_address(root, &guest, true);
                if (r < 0)
                        return r;
        }

        buf = xmlBufferCreate();
        if (!buf || xmlNodeDump(buf, doc, root, 0, 0) < 0)
                return -ENOMEM;
        s = strdup((const char *) xmlBufferContent(buf));
        if (!s)
                return -ENOMEM;
        *ret = s;
        return 0;
}

/* Reads a libvirt <address domain= bus= slot= function=/> element. */
static int parse_pci_address(xmlNodePtr n, char buf[static SVFF_PCI_ADDR_STRLEN]) {
        static const char *const attrs[] = { "domain", "bus", "slot", "function" };
        unsigned long v[4];

        for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
                _cleanup_(xml_freep) xmlChar *s = xmlGetProp(n, BAD_CAST attrs[i]);
                char *end;

                if (!s)
                        return -ENOENT;
                errno = 0;
                v[i] = strtoul((const char *) s, &end, 0);
                if (errno || end == (char *) s || *end)
                        return -EBADMSG;
        }
        if (v[0] > UINT32_MAX || v[1] > 0xff || v[2] > 0x1f || v[3] > 7)
                return -EBADMSG;
        svff_pci_addr_format(&(struct svff_pci_addr) { .domain = (uint32_t) v[0], .bus = (uint8_t) v[1],
                                                        .slot = (uint8_t) v[2], .func = (uint8_t) v[3] },
                             buf);
        return 0;
}

static xmlNodePtr child(xmlNodePtr n, const char *name) {
        for (xmlNodePtr c = n ? n->children : NULL; c; c = c->next)
                if (c->type == XML_ELEMENT_NODE && xmlStrEqual(c->name, BAD_CAST name))
                        return c;
        return NULL;
}

/* A domain's XML as libvirt gives it, parsed with a size bound and no
 * network, entities or DTD (libvirt's XML needs none). */
static bool prop_is(xmlNodePtr n, const char *name, const char *value) {
        _cleanup_(xml_freep) xmlChar *v = n ? xmlGetProp(n, BAD_CAST name) : NULL;

        return v && xmlStrEqual(v, BAD_CAST value);
}

static int domain_xml_read(const char *xml, xmlDocPtr *ret) {
        size_t len = strlen(xml);

        if (len > DOMAIN_XML_MAX)
                return -EBADMSG;
        *ret = xmlReadMemory(xml, (int) len, "domain.xml", NULL,
                             XML_PARSE_NONET | XML_PARSE_NOERROR | XML_PARSE_NOWARNING);
        return *ret ? 0 : -EBADMSG;
}

/* The PCI hostdev whose source is vf (canonical) or, vf NULL, whose
 * alias is alias. */
static int find_hostdev(const char *xml, const char *want, const char *alias, struct svff_hostdev *ret) {
        _cleanup_(xml_doc_freep) xmlDocPtr doc = NULL;
        _cleanup_(xml_xpath_ctx_freep) xmlXPathContextPtr xp = NULL;
        _cleanup_(xml_xpath_obj_freep) xmlXPathObjectPtr res = NULL;
        int r;

        r = domain_xml_read(xml, &doc);
        if (r < 0)
                return r;
        xp = xmlXPathNewContext(doc);
        if (!xp)
                return -ENOMEM;
        res = xmlXPathEvalExpression(BAD_CAST "/domain/devices/hostdev[@type='pci'] | "
                                              "/domain/devices/interface[@type='hostdev']", xp);
        if (!res)
                return -ENOMEM;
        if (!res->nodesetval)
                return 0;

        for (int i = 0; i < res->nodesetval->nodeNr; i++) {
                xmlNodePtr h = res->nodesetval->nodeTab[i], a;
                struct svff_hostdev hd = {};

                a = child(child(h, "source"), "address");
                if (!a || parse_pci_address(a, hd.source) < 0 || (want && !streq(hd.source, want)))
                        continue;
                a = child(h, "alias");
                if (a) {
                        _cleanup_(xml_freep) xmlChar *name = xmlGetProp(a, BAD_CAST "name");

                        if (name)
                                snprintf(hd.alias, sizeof(hd.alias), "%s", (const char *) name);
                }
                if (!want && !streq(hd.alias, alias))
                        continue;
                a = child(h, "address");
                if (a) {
                        _cleanup_(xml_freep) xmlChar *type = xmlGetProp(a, BAD_CAST "type");

                        if (type && xmlStrEqual(type, BAD_CAST "pci"))
                                (void) parse_pci_address(a, hd.guest_address);
                }
                *ret = hd;
                return 1;
        }
        return 0;
}

int svff_hv_find_hostdev_in_xml(const char *xml, const char *vf, struct svff_hostdev *ret) {
        char want[SVFF_PCI_ADDR_STRLEN];

        if (!xml || !vf || !ret || svff_pci_addr_canonicalize(vf, want) < 0)
                return -EINVAL;
        return find_hostdev(xml, want, NULL, ret);
}

int svff_hv_find_hostdev_by_alias_in_xml(const char *xml, const char *alias, struct svff_hostdev *ret) {
        if (!xml || !alias || !*alias || !ret)
                return -EINVAL;
        return find_hostdev(xml, NULL, alias, ret);
}

int svff_hv_find_standby_in_xml(const char *xml, const char *key, struct svff_failover *ret) {
        _cleanup_(xml_doc_freep) xmlDocPtr doc = NULL;
        xmlNodePtr devices;
        int r;

        if (!xml || !key || !ret)
                return -EINVAL;
        r = domain_xml_read(xml, &doc);
        if (r < 0)
                return r;
        devices = child(xmlDocGetRootElement(doc), "devices");
        for (xmlNodePtr d = devices ? devices->children : NULL; d; d = d->next) {
                _cleanup_(xml_freep) xmlChar *mac = NULL, *alias = NULL;
                struct svff_failover fo = {};

                if (d->type != XML_ELEMENT_NODE || !xmlStrEqual(d->name, BAD_CAST "interface") ||
                    !prop_is(child(d, "teaming"), "type", "persistent"))
                        continue;
                mac = child(d, "mac") ? xmlGetProp(child(d, "mac"), BAD_CAST "address") : NULL;
                alias = child(d, "alias") ? xmlGetProp(child(d, "alias"), BAD_CAST "name") : NULL;
                if (!(mac && strcasecmp((const char *) mac, key) == 0) && !(alias && streq((const char *) alias, key)))
                        continue;
                if (alias && alias_valid((const char *) alias))
                        snprintf(fo.standby, sizeof(fo.standby), "%s", (const char *) alias);
                if (mac && mac_valid((const char *) mac))
                        for (size_t i = 0; i < SVFF_MAC_STRLEN - 1; i++)
                                fo.mac[i] = (char) tolower((unsigned char) mac[i]);
                *ret = fo;
                return 1;
        }
        return 0;
}

int svff_hv_machine_in_xml(const char *xml, char **ret) {
        _cleanup_(xml_doc_freep) xmlDocPtr doc = NULL;
        _cleanup_(xml_freep) xmlChar *machine = NULL;
        xmlNodePtr type;
        int r;
        char *m;

        if (!xml || !ret)
                return -EINVAL;
        r = domain_xml_read(xml, &doc);
        if (r < 0)
                return r;
        type = child(child(xmlDocGetRootElement(doc), "os"), "type");
        machine = type ? xmlGetProp(type, BAD_CAST "machine") : NULL;
        if (!machine)
                return 0;
        m = strdup((const char *) machine);
        if (!m)
                return -ENOMEM;
        *ret = m;
        return 1;
}

const char *svff_hv_hotplug_to_string(enum svff_hv_hotplug h) {
        static const char *const names[_SVFF_HV_HOTPLUG_MAX] = {
                [SVFF_HV_HOTPLUG_UNKNOWN] = "unknown",
                [SVFF_HV_HOTPLUG_ACPI] = "acpi",
                [SVFF_HV_HOTPLUG_NATIVE] = "native",
                [SVFF_HV_HOTPLUG_NONE] = "none",
        };

        return h >= 0 && h < _SVFF_HV_HOTPLUG_MAX ? names[h] : NULL;
}

/* Whether the domain turns ACPI hotplug of bridges (q35's root ports)
 * off, so that the guest's own PCIe hotplug serves them. */
static bool acpi_bridge_hotplug_off(xmlNodePtr root) {
        static const char opt[] = "acpi-pci-hotplug-with-bridge-support=off";
        xmlNodePtr cmd = child(root, "commandline");

        if (prop_is(child(child(child(root, "features"), "pci"), "acpi-bridge-hotplug"), "state", "off"))
                return true;
        for (xmlNodePtr a = cmd ? cmd->children : NULL; a; a = a->next) {
                _cleanup_(xml_freep) xmlChar *v = NULL;
                size_t len;

                if (a->type != XML_ELEMENT_NODE || !xmlStrEqual(a->name, BAD_CAST "arg"))
                        continue;
                v = xmlGetProp(a, BAD_CAST "value");
                len = v ? strlen((const char *) v) : 0;
                if (len >= strlen(opt) && streq((const char *) v + len - strlen(opt), opt))
                        return true;
        }
        return false;
}

int svff_hv_hotplug_in_xml(const char *xml, const char *guest_address, enum svff_hv_hotplug *ret,
                           char ret_port[static SVFF_HV_PORT_MAX]) {
        _cleanup_(xml_doc_freep) xmlDocPtr doc = NULL;
        _cleanup_(xml_freep) xmlChar *model = NULL;
        xmlNodePtr root, devices, ctl = NULL;
        struct svff_pci_addr a;
        char port[SVFF_HV_PORT_MAX] = "";
        enum svff_hv_hotplug h;
        bool acpi;
        int r;

        if (!xml || !ret)
                return -EINVAL;
        r = domain_xml_read(xml, &doc);
        if (r < 0)
                return r;
        root = xmlDocGetRootElement(doc);
        if (!guest_address || svff_pci_addr_parse(guest_address, &a) < 0 || a.domain != 0) {
                *ret = SVFF_HV_HOTPLUG_UNKNOWN;
                if (ret_port)
                        ret_port[0] = '\0';
                return 0;
        }
        /* A device's bus is the index of the PCI controller that
         * provides it. */
        devices = child(root, "devices");
        for (xmlNodePtr d = devices ? devices->children : NULL; d; d = d->next) {
                _cleanup_(xml_freep) xmlChar *idx = NULL;
                char want[16];

                if (d->type != XML_ELEMENT_NODE || !xmlStrEqual(d->name, BAD_CAST "controller") ||
                    !prop_is(d, "type", "pci"))
                        continue;
                idx = xmlGetProp(d, BAD_CAST "index");
                snprintf(want, sizeof(want), "%u", a.bus);
                if (idx && streq((const char *) idx, want)) {
                        ctl = d;
                        break;
                }
        }
        if (!ctl) {
                *ret = SVFF_HV_HOTPLUG_UNKNOWN;
                if (ret_port)
                        ret_port[0] = '\0';
                return 0;
        }
        model = xmlGetProp(ctl, BAD_CAST "model");
        snprintf(port, sizeof(port), "%s index %u", model ? (const char *) model : "controller", a.bus);
        acpi = child(child(root, "features"), "acpi") != NULL;
        if (prop_is(child(ctl, "target"), "hotplug", "off") || prop_is(ctl, "hotplug", "off"))
                h = SVFF_HV_HOTPLUG_NONE;
        else if (!model)
                h = SVFF_HV_HOTPLUG_UNKNOWN;
        else if (streq((const char *) model, "pcie-root"))
                /* q35's integrated endpoints: no slot of it is hotpluggable. */
                h = SVFF_HV_HOTPLUG_NONE;
        else if (streq((const char *) model, "pci-root"))
                /* pc's root bus: ACPI hotplug only. */
                h = acpi ? SVFF_HV_HOTPLUG_ACPI : SVFF_HV_HOTPLUG_NONE;
        else if (streq((const char *) model, "pcie-root-port") ||
                 streq((const char *) model, "pcie-switch-downstream-port") ||
                 streq((const char *) model, "pci-bridge") || streq((const char *) model, "pcie-to-pci-bridge"))
                /* A slot with its own hotplug controller: ACPI takes it
                 * over unless the domain has no ACPI or turns that off. */
                h = acpi && !acpi_bridge_hotplug_off(root) ? SVFF_HV_HOTPLUG_ACPI : SVFF_HV_HOTPLUG_NATIVE;
        else
                h = SVFF_HV_HOTPLUG_UNKNOWN;
        *ret = h;
        if (ret_port)
                memcpy(ret_port, port, sizeof(port));
        return 0;
}

/* QEMU's PC machines, i440FX and Q35, under their aliases and their
 * versioned names. */
static bool machine_is_pc(const char *machine) {
        return streq(machine, "pc") || streq(machine, "q35") || strncmp(machine, "pc-i440fx-", 10) == 0 ||
               strncmp(machine, "pc-q35-", 7) == 0;
}

const char *svff_hv_guest_slot_owner(const char *machine, const char *guest_address) {
        struct svff_pci_addr a;

        if (!machine || !guest_address || svff_pci_addr_parse(guest_address, &a) < 0)
                return NULL;
        if (machine_is_pc(machine) && a.domain == 0 && a.bus == 0 && a.slot == 0)
                return "the host bridge";
        return NULL;
}

int svff_hv_guest_address_check(virDomainPtr dom, bool persistent, const char *guest_address,
                                struct svff_error *err) {
        _cleanup_free_ char *xml = NULL, *machine = NULL;
        const char *owner;
        int r;

        if (!guest_address)
                return 0;
        xml = virDomainGetXMLDesc(dom, persistent ? VIR_DOMAIN_XML_INACTIVE : 0);
        if (!xml) {
                char what[SVFF_DOMAIN_NAME_MAX + 64];

                snprintf(what, sizeof(what), "Reading the XML of domain '%s'", strna(virDomainGetName(dom)));
                return svff_hv_error_from_libvirt(err, what);
        }
        r = svff_hv_machine_in_xml(xml, &machine);
        if (r == -EBADMSG)
                return svff_error_set(err, r, "libvirt returned XML for domain '%s' that does not parse",
                                      strna(virDomainGetName(dom)));
        if (r < 0)
                return svff_error_set_errno(err, r, "Reading the machine type of domain '%s'",
                                            strna(virDomainGetName(dom)));
        owner = svff_hv_guest_slot_owner(machine, guest_address);
        if (owner)
                return svff_error_set(err, -EADDRINUSE,
                                      "Guest address '%s' is the slot of %s on domain '%s' (machine '%s'): "
                                      "choose another slot, or leave the guest address out and let libvirt "
                                      "choose one", guest_address, owner, strna(virDomainGetName(dom)),
                                      machine);
        return 0;
}

int svff_hv_error_from_libvirt(struct svff_error *err, const char *what) {
        virErrorPtr e = virGetLastError();
        int r;

        if (!e)
                return svff_error_set(err, -EIO, "%s failed (libvirt gave no reason)", what);

        switch (e->code) {
        case VIR_ERR_NO_DOMAIN:
                r = -ENOENT;
                break;
        case VIR_ERR_NO_CONNECT:
        case VIR_ERR_INVALID_CONN:
        case VIR_ERR_RPC:
        case VIR_ERR_AUTH_FAILED:
        case VIR_ERR_AUTH_UNAVAILABLE:
        case VIR_ERR_AUTH_CANCELLED:
                r = -ENOTCONN;
                break;
        case VIR_ERR_SYSTEM_ERROR:
                /* A dropped socket shows as a system error on the RPC
                 * domain; elsewhere it is the host's (e.g. no VFIO). */
                r = e->domain == VIR_FROM_RPC || e->domain == VIR_FROM_REMOTE ? -ENOTCONN : -EOPNOTSUPP;
                break;
        case VIR_ERR_NO_SUPPORT:
        case VIR_ERR_ARGUMENT_UNSUPPORTED:
        case VIR_ERR_CONFIG_UNSUPPORTED:
                r = -EOPNOTSUPP;
                break;
        case VIR_ERR_OPERATION_INVALID:
        case VIR_ERR_INVALID_ARG:
        case VIR_ERR_XML_ERROR:
        case VIR_ERR_XML_DETAIL:
                r = -EINVAL;
                break;
        case VIR_ERR_DEVICE_MISSING:
                r = -ENODEV;
                break;
        case VIR_ERR_OPERATION_TIMEOUT:
        case VIR_ERR_AGENT_UNRESPONSIVE:
                r = -ETIMEDOUT;
                break;
        case VIR_ERR_OPERATION_FAILED:
                /* libvirt reports a duplicate device this way. */
                r = e->message && strstr(e->message, "already") ? -EEXIST : -EIO;
                break;
        default:
                r = -EIO;
        }
        if (r == -EIO && e->domain == VIR_FROM_RPC)
                r = -ENOTCONN;
        if (r == -ENOTCONN)
                return svff_error_set(err, r, "%s: the connection to libvirt was lost (%s); nothing was changed, "
                                      "retry once it is back", what, e->message ?: "no reason given");
        return svff_error_set(err, r, "%s: %s", what, e->message ?: "libvirt gave no reason");
}

void svff_hv_init(void) {
        /* libxml2 sets up its globals (mutexes, dictionaries) on first
         * use, and not safely when threads race to it: a daemon's first
         * reconf builds several hostdevs at once. */
        xmlInitParser();
}

int svff_hv_open(const char *uri, virConnectPtr *ret, struct svff_error *err) {
        virConnectPtr c;
        char what[512];

        c = virConnectOpen(uri);
        if (!c) {
                snprintf(what, sizeof(what), "Cannot connect to libvirt at '%s'", uri ?: "(default)");
                (void) svff_hv_error_from_libvirt(NULL, what);
                {
                        virErrorPtr e = virGetLastError();

                        return svff_error_set(err, -ENOTCONN, "%s: %s", what,
                                              e && e->message ? e->message : "no reason given");
                }
        }
        *ret = c;
        return 0;
}

/* The handle a lookup returns carries the domain's ID, -1 unless it
 * runs: that answers "active" as of the lookup, with no round trip.
 * Persistence costs one; only asked when wanted. */
static int info_of(virDomainPtr dom, bool want_persistent, struct svff_domain_info *ret, struct svff_error *err) {
        struct svff_domain_info info = {};
        const char *name;
        int p = 0;

        if (virDomainGetUUIDString(dom, info.uuid) < 0)
                return svff_hv_error_from_libvirt(err, "Reading a domain's UUID");
        name = virDomainGetName(dom);
        snprintf(info.name, sizeof(info.name), "%s", name ?: "");
        if (want_persistent)
                p = virDomainIsPersistent(dom);
        if (p < 0) {
                char what[SVFF_DOMAIN_NAME_MAX + 64];

                snprintf(what, sizeof(what), "Reading the state of domain '%s'", info.name);
                return svff_hv_error_from_libvirt(err, what);
        }
        info.active = virDomainGetID(dom) != (unsigned) -1;
        info.persistent = p > 0;
        *ret = info;
        return 0;
}

static bool looks_like_uuid(const char *s) {
        static const char hexd[] = "0123456789abcdefABCDEF";

        if (strlen(s) != 36)
                return false;
        for (size_t i = 0; i < 36; i++) {
                if (i == 8 || i == 13 || i == 18 || i == 23) {
                        if (s[i] != '-')
                                return false;
                } else if (!strchr(hexd, s[i]))
                        return false;
        }
        return true;
}

static int lookup(virConnectPtr conn, const char *id, bool want_persistent, struct svff_domain_info *ret_info,
                  virDomainPtr *ret_dom, struct svff_error *err) {
        _cleanup_(dom_freep) virDomainPtr dom = NULL;
        struct svff_domain_info info;
        int r;

        if (!conn || !id || !*id)
                return svff_error_set(err, -EINVAL, "No domain given");

        if (looks_like_uuid(id))
                dom = virDomainLookupByUUIDString(conn, id);
        if (!dom)
                dom = virDomainLookupByName(conn, id);
        if (!dom) {
                char what[SVFF_DOMAIN_NAME_MAX + 64];

                snprintf(what, sizeof(what), "Looking up domain '%.*s'", SVFF_DOMAIN_NAME_MAX, id);
                r = svff_hv_error_from_libvirt(NULL, what);
                if (r == -ENOENT)
                        return svff_error_set(err, -ENOENT,
                                              "No domain '%.*s' in libvirt; 'virsh list --all' shows the domains there are",
                                              SVFF_DOMAIN_NAME_MAX, id);
                return svff_hv_error_from_libvirt(err, what);
        }
        r = info_of(dom, want_persistent, &info, err);
        if (r < 0)
                return r;
        if (ret_info)
                *ret_info = info;
        if (ret_dom)
                *ret_dom = TAKE_PTR(dom);
        return 0;
}

int svff_hv_lookup(virConnectPtr conn, const char *id, struct svff_domain_info *ret_info,
                   virDomainPtr *ret_dom, struct svff_error *err) {
        return lookup(conn, id, true, ret_info, ret_dom, err);
}

int svff_hv_lookup_running(virConnectPtr conn, const char *id, struct svff_domain_info *ret_info,
                           virDomainPtr *ret_dom, struct svff_error *err) {
        return lookup(conn, id, false, ret_info, ret_dom, err);
}

/* The hostdev by source vf or, vf NULL, by alias. */
static int get_hostdev(virDomainPtr dom, const char *vf, const char *alias, unsigned flags, struct svff_hostdev *ret,
                       struct svff_error *err) {
        _cleanup_free_ char *xml = NULL;
        int r;

        xml = virDomainGetXMLDesc(dom, (flags & SVFF_HV_LIVE) ? 0 : VIR_DOMAIN_XML_INACTIVE);
        if (!xml) {
                char what[SVFF_DOMAIN_NAME_MAX + 64];

                snprintf(what, sizeof(what), "Reading the XML of domain '%s'", strna(virDomainGetName(dom)));
                return svff_hv_error_from_libvirt(err, what);
        }
        r = vf ? svff_hv_find_hostdev_in_xml(xml, vf, ret) : svff_hv_find_hostdev_by_alias_in_xml(xml, alias, ret);
        if (r == -EBADMSG)
                return svff_error_set(err, r, "libvirt returned XML for domain '%s' that does not parse",
                                      strna(virDomainGetName(dom)));
        return r;
}

int svff_hv_get_hostdev(virDomainPtr dom, const char *vf, unsigned flags, struct svff_hostdev *ret,
                        struct svff_error *err) {
        return get_hostdev(dom, vf, NULL, flags, ret, err);
}

int svff_hv_get_hostdev_by_alias(virDomainPtr dom, const char *alias, unsigned flags, struct svff_hostdev *ret,
                                 struct svff_error *err) {
        if (!alias || !*alias)
                return svff_error_set(err, -EINVAL, "No device alias given");
        return get_hostdev(dom, NULL, alias, flags, ret, err);
}

static unsigned vir_flags(unsigned flags) {
        return ((flags & SVFF_HV_LIVE) ? VIR_DOMAIN_AFFECT_LIVE : 0) |
               ((flags & SVFF_HV_CONFIG) ? VIR_DOMAIN_AFFECT_CONFIG : 0);
}

int svff_hv_attach(virDomainPtr dom, const char *vf, const char *alias, const char *guest_address,
                   const struct svff_failover *fo, unsigned flags, struct svff_hostdev *ret,
                   struct svff_error *err) {
        _cleanup_free_ char *xml = NULL;
        struct svff_hostdev hd;
        char what[SVFF_DOMAIN_NAME_MAX + 128];
        int r;

        if (!(flags & (SVFF_HV_LIVE | SVFF_HV_CONFIG)))
                return svff_error_set(err, -EINVAL, "Attaching VF %s: neither live nor config requested", vf);
        r = svff_hv_device_xml(vf, alias, guest_address, fo, &xml);
        if (r < 0)
                return svff_error_set(err, r, "Cannot describe VF %s (alias '%s', guest address '%s'%s%s) for "
                                      "libvirt", vf, alias, strna(guest_address), fo && *fo->standby ?
                                      ", failover standby " : "", fo && *fo->standby ? fo->standby : "");

        snprintf(what, sizeof(what), "Attaching VF %s to domain '%s' (%s%s%s)", vf,
                 strna(virDomainGetName(dom)), (flags & SVFF_HV_LIVE) ? "live" : "",
                 (flags & SVFF_HV_LIVE) && (flags & SVFF_HV_CONFIG) ? "+" : "",
                 (flags & SVFF_HV_CONFIG) ? "config" : "");
        /* One call for both: libvirt applies the config change only when
         * the live one succeeded, so nothing is left half-attached. */
        if (virDomainAttachDeviceFlags(dom, xml, vir_flags(flags)) < 0) {
                r = svff_hv_error_from_libvirt(err, what);
                /* A persistent definition may still hold the device: a
                 * reconf takes only the live one away. Then only the live
                 * one is missing. Asked only after libvirt refused. */
                if (!(flags & SVFF_HV_LIVE) || !(flags & SVFF_HV_CONFIG) ||
                    svff_hv_get_hostdev(dom, vf, SVFF_HV_CONFIG, &hd, NULL) <= 0 || !streq(hd.alias, alias))
                        return r;
                svff_error_free(err);
                flags = SVFF_HV_LIVE;
                if (virDomainAttachDeviceFlags(dom, xml, vir_flags(flags)) < 0)
                        return svff_hv_error_from_libvirt(err, what);
        }

        if (guest_address) {
                /* At a given address libvirt places the device exactly
                 * there or refuses it: nothing to read back. */
                hd = (struct svff_hostdev) {};
                (void) svff_pci_addr_canonicalize(vf, hd.source);
                (void) svff_pci_addr_canonicalize(guest_address, hd.guest_address);
                snprintf(hd.alias, sizeof(hd.alias), "%s", alias);
        } else {
                r = svff_hv_get_hostdev(dom, vf, flags & SVFF_HV_LIVE ? SVFF_HV_LIVE : SVFF_HV_CONFIG, &hd, err);
                if (r < 0)
                        return r;
                if (r == 0)
                        return svff_error_set(err, -EIO,
                                              "%s: libvirt accepted it but the device is not in the domain's XML",
                                              what);
        }
        if (ret)
                *ret = hd;
        return 0;
}

/* Waits until the device with alias is gone from dom's live XML: until
 * libvirt reports its removal (when removals is given; the XML is read
 * at least every second, should an event be lost), or on a growing poll
 * of the XML. */
static int wait_removed(virDomainPtr dom, const char *vf, const char *uuid, const char *alias,
                        struct svff_hv_removals *removals, uint64_t seq, usec_t deadline, const char *what,
                        struct svff_error *err) {
        usec_t wait = 10 * USEC_PER_MSEC;

        for (;;) {
                struct svff_hostdev hd;
                usec_t now = svff_now_usec();
                int r;

                if (removals) {
                        /* libvirt reports a removal once the device has
                         * left the live definition: seen, it is gone. */
                        if (svff_hv_removals_wait(removals, uuid, alias, &seq,
                                                  MIN(deadline, now + USEC_PER_SEC)) > 0)
                                return 0;
                } else {
                        struct timespec ts;

                        if (wait > deadline - MIN(deadline, now))
                                wait = deadline - MIN(deadline, now);
                        ts = (struct timespec) { .tv_sec = (time_t) (wait / USEC_PER_SEC),
                                                 .tv_nsec = (long) (wait % USEC_PER_SEC) * 1000 };
                        nanosleep(&ts, NULL);
                        if (wait < 200 * USEC_PER_MSEC)
                                wait *= 2;
                }
                r = svff_hv_get_hostdev(dom, vf, SVFF_HV_LIVE, &hd, err);
                if (r <= 0)
                        return r;
                if (svff_now_usec() >= deadline)
                        return svff_error_set(err, -ETIMEDOUT,
                                              "%s: the guest has not released the device; it stays 'detaching' "
                                              "until the guest lets go (run detach again to re-check)", what);
        }
}

/* The detach of a device with a known user alias: by alias, for both
 * definitions, with no read of the domain's XML before; a definition
 * without it answers DEVICE_MISSING, which is detached. 1: done (or
 * waiting is all that is left), 0: the driver cannot, use the XML path. */
static int detach_by_alias(virDomainPtr dom, const char *vf, const char *alias, unsigned flags, usec_t deadline,
                           struct svff_hv_removals *removals, const char *what, struct svff_error *err) {
        char uuid[SVFF_UUID_STRLEN];
        bool waiting = false, asked = false;
        uint64_t seq;
        int code, r;

        if (virDomainGetUUIDString(dom, uuid) < 0)
                return svff_hv_error_from_libvirt(err, what);
        seq = svff_hv_removals_seq(removals);
        for (unsigned f = SVFF_HV_LIVE; f <= SVFF_HV_CONFIG; f <<= 1) {
                if (!(flags & f))
                        continue;
                if (virDomainDetachDeviceAlias(dom, alias, vir_flags(f)) >= 0) {
                        waiting = waiting || f == SVFF_HV_LIVE;
                        asked = true;
                        continue;
                }
                code = virGetLastErrorCode();
                if (code == VIR_ERR_DEVICE_MISSING)
                        continue;
                if (code == VIR_ERR_NO_SUPPORT && !asked)
                        return 0;
                r = svff_hv_error_from_libvirt(err, what);
                /* Callers ask for LIVE when they saw the domain running;
                 * one that stopped since has no live device to detach. */
                if (f == SVFF_HV_LIVE && code == VIR_ERR_OPERATION_INVALID && virDomainIsActive(dom) == 0) {
                        svff_error_free(err);
                        continue;
                }
                return r;
        }
        if (!waiting || deadline == 0)
                return 1;
        return wait_removed(dom, vf, uuid, alias, removals, seq, deadline, what, err) ?: 1;
}

int svff_hv_detach(virDomainPtr dom, const char *vf, const char *alias, unsigned flags, usec_t deadline,
                   struct svff_hv_removals *removals, struct svff_error *err) {
        _cleanup_free_ char *xml = NULL;
        struct svff_hostdev hd;
        char what[SVFF_DOMAIN_NAME_MAX + 128];
        unsigned todo = 0;
        int r;

        snprintf(what, sizeof(what), "Detaching VF %s from domain '%s'", vf, strna(virDomainGetName(dom)));

        if (alias && strneq(alias, "ua-", 3) && removals) {
                r = detach_by_alias(dom, vf, alias, flags, deadline, removals, what, err);
                if (r != 0)
                        return r < 0 ? r : 0;
        }

        /* No user alias, or a driver without detach by alias: ask with
         * the device's XML, in the call that waits in libvirtd (up to 5 s)
         * for the guest, and poll for the removal after it.
         *
         * Only ask for what is there: libvirt refuses to detach a device
         * a definition lacks, and absent already means detached. */
        for (unsigned f = SVFF_HV_LIVE; f <= SVFF_HV_CONFIG; f <<= 1) {
                if (!(flags & f))
                        continue;
                if (f == SVFF_HV_LIVE && virDomainIsActive(dom) != 1)
                        continue;
                r = svff_hv_get_hostdev(dom, vf, f, &hd, err);
                if (r < 0)
                        return r;
                if (r > 0)
                        todo |= f;
        }
        if (todo == 0)
                return 0;

        /* The XML libvirt itself reported, so alias and addresses match
         * exactly what it looks for. */
        r = svff_hv_hostdev_xml(vf, *hd.alias ? hd.alias : "ua-svff", NULL, &xml);
        if (r < 0)
                return svff_error_set(err, r, "%s: cannot describe the device", what);
        if (virDomainDetachDeviceFlags(dom, xml, vir_flags(todo)) < 0)
                return svff_hv_error_from_libvirt(err, what);
        if (!(todo & SVFF_HV_LIVE) || deadline == 0)
                return 0;

        /* libvirt removes the device from the live XML once QEMU reports
         * DEVICE_DELETED, i.e. once the guest let go. */
        return wait_removed(dom, vf, NULL, NULL, NULL, 0, deadline, what, err);
}

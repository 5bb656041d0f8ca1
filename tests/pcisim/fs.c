/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * FUSE glue: the tree is computed from the model on every request (no
 * caching anywhere: entry, attribute and negative timeouts are 0 and every
 * file is direct_io), so what a reader sees is what the model holds now.
 *
 *   devices/pci<dddd>:00/<BDF>/{attributes, driver, iommu_group, subsystem,
 *                               virtfn<i>, physfn, net/, qdma/, nvme/}
 *   bus/pci/{devices/<BDF>, drivers/<name>/, drivers_probe, drivers_autoprobe, rescan}
 *   kernel/iommu_groups/<N>/{devices/<BDF>, type}
 *   class/pci_bus/<dddd:bb>/rescan  (every bus a device is or was on)
 *   .pcisim/{ctl, stats, vfio/<N>}
 */
#define FUSE_USE_VERSION 35

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <fuse.h>

#include "macro.h"
#include "model.h"

enum node_kind {
        K_ROOT, K_DEVICES, K_DOMAIN, K_DEVICE, K_NET, K_NETIF, K_QDMA, K_NVME, K_NVMECTRL,
        K_BUS, K_BUS_PCI, K_BUS_DEVICES, K_DRIVERS, K_DRIVER,
        K_KERNEL, K_GROUPS, K_GROUP, K_GROUP_DEVICES, K_SIM, K_VFIO,
        K_MODULE, K_MODULE_VFIO, K_MODULE_PARAMS, K_CLASS, K_CLASS_PCI_BUS, K_PCI_BUS,
        K_FILE, K_LINK,
};

enum link_kind { L_BUS_DEV, L_DRIVER, L_GROUP, L_SUBSYSTEM, L_VIRTFN, L_PHYSFN, L_DRV_DEV, L_GROUP_DEV };

struct attr;

struct node {
        enum node_kind kind;
        enum link_kind link;
        const struct attr *attr;
        struct sim_dev *dev;
        struct sim_driver *drv;
        unsigned group;
        unsigned domain;
        unsigned bus;           /* K_PCI_BUS */
};

struct attr {
        const char *name;
        mode_t mode;
        bool (*visible)(const struct sim_dev *dev);
        int (*show)(struct sim *sim, const struct node *n, char **ret, size_t *ret_len);
        int (*store)(struct sim *sim, const struct node *n, const char *buf, size_t len);
        bool binary;
};

static time_t start_time;

static struct sim *get_sim(void) {
        return fuse_get_context()->private_data;
}

/* capable(CAP_SYS_ADMIN) of the process behind the current request, from
 * its effective set. An unprivileged pcisim is its owner's machine: the
 * owner plays root there. */
static bool caller_is_admin(void) {
        const struct fuse_context *ctx = fuse_get_context();
        _cleanup_fclose_ FILE *f = NULL;
        char path[64], line[256];
        unsigned long long caps;

        if (getuid() != 0)
                return ctx->uid == getuid();
        snprintf(path, sizeof(path), "/proc/%d/status", (int) ctx->pid);
        f = fopen(path, "re");
        if (!f)
                return ctx->uid == 0;
        while (fgets(line, sizeof(line), f))
                if (sscanf(line, "CapEff: %llx", &caps) == 1)
                        return caps & (1ULL << 21);     /* CAP_SYS_ADMIN */
        return ctx->uid == 0;
}

static int emit(char **ret, size_t *ret_len, const char *fmt, ...) __attribute__((format(printf, 3, 4)));
static int emit(char **ret, size_t *ret_len, const char *fmt, ...) {
        va_list ap;
        int n;

        va_start(ap, fmt);
        n = vasprintf(ret, fmt, ap);
        va_end(ap);
        if (n < 0)
                return -ENOMEM;
        *ret_len = (size_t) n;
        return 0;
}

/* ---- device attributes ---- */

static bool is_pf(const struct sim_dev *d) { return d->is_pf; }
static bool is_pcie(const struct sim_dev *d) { return d->pcie; }
static bool has_vf_msix(const struct sim_dev *d) { return d->is_pf && d->vf_total_msix > 0; }
/* pci_dev_hp_attrs_are_visible(): VFs have no remove or rescan */
static bool not_vf(const struct sim_dev *d) { return !d->pf; }

#define SHOW(fn, fmt, expr)                                                             \
        static int fn(struct sim *sim, const struct node *n, char **ret, size_t *len) { \
                const struct sim_dev *d = n->dev;                                       \
                (void) d;                                                               \
                return emit(ret, len, fmt, expr);                                       \
        }

SHOW(show_vendor, "0x%04x\n", d->vendor)
SHOW(show_device, "0x%04x\n", d->device)
SHOW(show_subvendor, "0x%04x\n", d->subvendor)
SHOW(show_subdevice, "0x%04x\n", d->subdevice)
SHOW(show_class, "0x%06x\n", d->class)
SHOW(show_revision, "0x%02x\n", d->revision)
SHOW(show_numa, "%d\n", d->numa_node)
SHOW(show_enable, "%u\n", d->enable_cnt)
SHOW(show_irq, "%d\n", d->pf ? 0 : 16 + (d->devfn & 7))
SHOW(show_override, "%s\n", d->driver_override ?: "(null)")
SHOW(show_totalvfs, "%u\n", d->totalvfs)
SHOW(show_vf_total_msix, "%u\n", d->vf_total_msix)
SHOW(show_offset, "%u\n", d->offset)
SHOW(show_stride, "%u\n", d->stride)
SHOW(show_vf_device, "%x\n", d->vf_device)
SHOW(show_autoprobe, "%u\n", d->drivers_autoprobe)
SHOW(show_qmax, "%u\n", d->qmax)
SHOW(show_mac, "%s\n", d->mac)
SHOW(show_operstate, "%s\n", "up")
SHOW(show_nvme_state, "%s\n", "live")

static int show_modalias(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        const struct sim_dev *d = n->dev;
        return emit(ret, len, "pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X\n",
                    d->vendor, d->device, d->subvendor, d->subdevice,
                    (d->class >> 16) & 0xffu, (d->class >> 8) & 0xffu, d->class & 0xffu);
}

static int show_uevent(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        const struct sim_dev *d = n->dev;
        _cleanup_free_ char *drv = NULL;

        if (d->driver && asprintf(&drv, "DRIVER=%s\n", d->driver->name) < 0)
                return -ENOMEM;
        return emit(ret, len,
                    "%sPCI_CLASS=%X\nPCI_ID=%04X:%04X\nPCI_SUBSYS_ID=%04X:%04X\nPCI_SLOT_NAME=%s\n"
                    "MODALIAS=pci:v%08Xd%08Xsv%08Xsd%08Xbc%02Xsc%02Xi%02X\n",
                    strempty(drv), d->class, d->vendor, d->device, d->subvendor, d->subdevice, d->name,
                    d->vendor, d->device, d->subvendor, d->subdevice,
                    (d->class >> 16) & 0xffu, (d->class >> 8) & 0xffu, d->class & 0xffu);
}

/* resource_show(): one line per resource, PCI_BRIDGE_RESOURCES lines. */
static int show_resource(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        static const char line[] = "0x0000000000000000 0x0000000000000000 0x0000000000000000\n";
        const size_t l = sizeof(line) - 1, count = 13;
        char *b = malloc(l * count + 1);

        if (!b)
                return -ENOMEM;
        for (size_t i = 0; i < count; i++)
                memcpy(b + i * l, line, l);
        b[l * count] = '\0';
        *ret = b;
        *len = l * count;
        return 0;
}

static int show_config(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        uint8_t *b = malloc(SIM_CONFIG_SIZE);

        if (!b)
                return -ENOMEM;
        *len = sim_dev_config(n->dev, b);
        *ret = (char *) b;
        return 0;
}

static int show_numvfs(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        uint16_t v;
        int r = sim_show_numvfs(sim, n->dev, &v);

        return r < 0 ? r : emit(ret, len, "%u\n", v);
}

static int store_numvfs(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_numvfs(sim, n->dev, buf);
}
static int store_autoprobe(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_autoprobe(sim, n->dev, buf);
}
static int store_override(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_driver_override(sim, n->dev, buf, len);
}
static int store_remove(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_remove(sim, n->dev, buf);
}
static int store_dev_rescan(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_rescan(sim, n->dev, buf);
}
static int store_enable(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_enable(sim, n->dev, buf, caller_is_admin());
}
static int store_reset(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_reset(sim, n->dev, buf);
}
static int store_qmax(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_qmax(sim, n->dev, buf);
}
/* Config writes are accepted and dropped: nothing in svff writes config. */
static int store_config(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return 0;
}

static int store_numa(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_numa_node(sim, n->dev, buf, caller_is_admin());
}

static const struct attr device_attrs[] = {
        { "vendor", 0444, NULL, show_vendor },
        { "device", 0444, NULL, show_device },
        { "subsystem_vendor", 0444, NULL, show_subvendor },
        { "subsystem_device", 0444, NULL, show_subdevice },
        { "class", 0444, NULL, show_class },
        { "revision", 0444, NULL, show_revision },
        { "irq", 0444, NULL, show_irq },
        { "numa_node", 0644, NULL, show_numa, store_numa },
        { "enable", 0644, NULL, show_enable, store_enable },
        { "config", 0644, NULL, show_config, store_config, true },
        { "resource", 0444, NULL, show_resource },
        { "modalias", 0444, NULL, show_modalias },
        { "uevent", 0644, NULL, show_uevent, store_config },
        { "driver_override", 0644, NULL, show_override, store_override },
        { "remove", 0220, not_vf, NULL, store_remove },
        { "rescan", 0200, not_vf, NULL, store_dev_rescan },
        { "reset", 0200, is_pcie, NULL, store_reset },
        { "sriov_totalvfs", 0444, is_pf, show_totalvfs },
        { "sriov_numvfs", 0644, is_pf, show_numvfs, store_numvfs },
        { "sriov_offset", 0444, is_pf, show_offset },
        { "sriov_stride", 0444, is_pf, show_stride },
        { "sriov_vf_device", 0444, is_pf, show_vf_device },
        { "sriov_drivers_autoprobe", 0644, is_pf, show_autoprobe, store_autoprobe },
        { "sriov_vf_total_msix", 0444, has_vf_msix, show_vf_total_msix },
};

static int show_qdma_queues(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        return sim_qdma_format_queues(n->dev, ret, len);
}

/* "queues" stands in for the driver's queue list (dma-ctl ... q list, over
 * netlink), so that a caller can name the queues that keep qmax busy. */
static const struct attr qdma_attrs[] = {
        { "qmax", 0644, NULL, show_qmax, store_qmax },
        { "queues", 0444, NULL, show_qdma_queues },
};
static const struct attr netif_attrs[] = {
        { "address", 0444, NULL, show_mac },
        { "operstate", 0444, NULL, show_operstate },
};
static const struct attr nvme_attrs[] = { { "state", 0444, NULL, show_nvme_state } };

/* ---- driver, bus, group and control files ---- */

static int store_bind(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_bind(sim, n->drv, buf);
}
static int store_unbind(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_unbind(sim, n->drv, buf);
}
static int store_new_id(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_new_id(sim, n->drv, buf);
}
static int store_remove_id(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_remove_id(sim, n->drv, buf);
}
static int store_drivers_probe(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_drivers_probe(sim, buf);
}
static int store_rescan(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_rescan(sim, NULL, buf);
}
static int store_pci_bus_rescan(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_bus_rescan(sim, n->domain, n->bus, buf);
}
static int store_bus_autoprobe(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_bus_autoprobe(sim, buf);
}
static int show_bus_autoprobe(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        return emit(ret, len, "%d\n", sim->bus_drivers_autoprobe);
}
/* param_get_bool() */
static int show_vfio_enable_sriov(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        return emit(ret, len, "%c\n", sim->vfio_enable_sriov ? 'Y' : 'N');
}
static int store_vfio_enable_sriov(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_store_vfio_enable_sriov(sim, buf);
}
static int show_group_type(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        return emit(ret, len, "DMA\n");
}
static int store_ctl(struct sim *sim, const struct node *n, const char *buf, size_t len) {
        return sim_control(sim, buf);
}
static int show_stats(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        int r = sim_stats_format(sim, ret);
        if (r >= 0)
                *len = strlen(*ret);
        return r;
}
static int show_empty(struct sim *sim, const struct node *n, char **ret, size_t *len) {
        return emit(ret, len, "%s", "");
}

static const struct attr driver_attrs[] = {
        { "bind", 0200, NULL, NULL, store_bind },
        { "unbind", 0200, NULL, NULL, store_unbind },
        { "new_id", 0200, NULL, NULL, store_new_id },
        { "remove_id", 0200, NULL, NULL, store_remove_id },
};
static const struct attr bus_attrs[] = {
        { "drivers_probe", 0200, NULL, NULL, store_drivers_probe },
        { "drivers_autoprobe", 0644, NULL, show_bus_autoprobe, store_bus_autoprobe },
        { "rescan", 0200, NULL, NULL, store_rescan },
};
static const struct attr pci_bus_attrs[] = {
        { "rescan", 0200, NULL, NULL, store_pci_bus_rescan },
};
static const struct attr group_attrs[] = { { "type", 0444, NULL, show_group_type } };
static const struct attr vfio_param_attrs[] = {
        { "enable_sriov", 0644, NULL, show_vfio_enable_sriov, store_vfio_enable_sriov },
};
static const struct attr ctl_attr = { "ctl", 0200, NULL, NULL, store_ctl };
static const struct attr stats_attr = { "stats", 0444, NULL, show_stats };
static const struct attr vfio_attr = { "vfio", 0600, NULL, show_empty };

/* ---- the tree ---- */

/* Called for each child; returns > 0 to stop the walk. */
typedef int (*child_fn)(const char *name, const struct node *child, void *userdata);

static bool bound_to_real_driver(const struct sim_dev *d) {
        return d->driver && !streq(d->driver->name, "vfio-pci");
}

static bool has_net(const struct sim_dev *d) {
        return d->kind == SIM_KIND_NIC && d->ifname && bound_to_real_driver(d);
}

static unsigned nvme_index(struct sim *sim, const struct sim_dev *d) {
        unsigned n = 0;

        for (size_t i = 0; i < sim->n_present && sim->present[i] != d; i++)
                if (sim->present[i]->kind == SIM_KIND_NVME && bound_to_real_driver(sim->present[i]))
                        n++;
        return n;
}

static int walk_attrs(const struct attr *a, size_t n, const struct node *parent, child_fn fn, void *ud) {
        for (size_t i = 0; i < n; i++) {
                struct node c = *parent;

                if (a[i].visible && !(parent->dev && a[i].visible(parent->dev)))
                        continue;
                c.kind = K_FILE;
                c.attr = &a[i];
                if (fn(a[i].name, &c, ud) > 0)
                        return 1;
        }
        return 0;
}

#define CHILD(nm, ...) do {                                             \
                struct node _c = { __VA_ARGS__ };                       \
                if (fn((nm), &_c, ud) > 0)                              \
                        return 1;                                       \
        } while (0)

static int walk_device(struct sim *sim, const struct node *p, child_fn fn, void *ud) {
        struct sim_dev *d = p->dev;
        char name[32];

        if (walk_attrs(device_attrs, ELEMENTSOF(device_attrs), p, fn, ud))
                return 1;
        if (has_net(d))
                CHILD("net", .kind = K_NET, .dev = d);
        if (d->kind == SIM_KIND_QDMA && bound_to_real_driver(d))
                CHILD("qdma", .kind = K_QDMA, .dev = d);
        if (d->kind == SIM_KIND_NVME && bound_to_real_driver(d))
                CHILD("nvme", .kind = K_NVME, .dev = d);
        if (d->driver && !d->unbinding)
                CHILD("driver", .kind = K_LINK, .link = L_DRIVER, .dev = d);
        CHILD("iommu_group", .kind = K_LINK, .link = L_GROUP, .dev = d);
        CHILD("subsystem", .kind = K_LINK, .link = L_SUBSYSTEM, .dev = d);
        if (d->pf && !d->unlinked)
                CHILD("physfn", .kind = K_LINK, .link = L_PHYSFN, .dev = d);
        /* pci_iov_add_virtfn() links each VF as it is added, before
         * sriov_numvfs says so: while an enable runs, past numvfs, the
         * VFs present are linked (never orphans of a removed PF, which
         * the enable refuses to run over). */
        for (unsigned i = 0; d->is_pf && d->vfs && i < d->totalvfs; i++) {
                bool linked = i < d->numvfs ? d->vfs[i].present || d->vfs[i].dangling
                                            : d->enabling && d->vfs[i].present;

                if (!linked || d->vfs[i].unlinked)
                        continue;
                snprintf(name, sizeof(name), "virtfn%u", i);
                CHILD(name, .kind = K_LINK, .link = L_VIRTFN, .dev = &d->vfs[i]);
        }
        return 0;
}

static int walk(struct sim *sim, const struct node *p, child_fn fn, void *ud) {
        char name[32];

        switch (p->kind) {
        case K_ROOT:
                CHILD("devices", .kind = K_DEVICES);
                CHILD("bus", .kind = K_BUS);
                CHILD("kernel", .kind = K_KERNEL);
                CHILD("module", .kind = K_MODULE);
                CHILD("class", .kind = K_CLASS);
                CHILD(".pcisim", .kind = K_SIM);
                return 0;
        case K_CLASS:
                CHILD("pci_bus", .kind = K_CLASS_PCI_BUS);
                return 0;
        case K_CLASS_PCI_BUS:
                /* A bus stays while its bridge does: a removed device's
                 * bus is still there to be rescanned. VFs sit on their
                 * PF's buses. */
                for (size_t i = 0; i < sim->n_devs; i++) {
                        const struct sim_dev *d = sim->devs[i];
                        bool seen = false;

                        if (d->unplugged)
                                continue;
                        for (size_t k = 0; k < i && !seen; k++)
                                seen = !sim->devs[k]->unplugged && sim->devs[k]->domain == d->domain &&
                                       sim->devs[k]->bus == d->bus;
                        if (seen)
                                continue;
                        snprintf(name, sizeof(name), "%04x:%02x", d->domain, d->bus);
                        CHILD(name, .kind = K_PCI_BUS, .domain = d->domain, .bus = d->bus);
                }
                return 0;
        case K_PCI_BUS:
                return walk_attrs(pci_bus_attrs, ELEMENTSOF(pci_bus_attrs), p, fn, ud);
        case K_DEVICES:
                for (size_t i = 0; i < sim->n_present; i++) {
                        unsigned dom = sim->present[i]->domain;
                        if (i > 0 && sim->present[i - 1]->domain == dom)
                                continue;       /* sorted: one entry per domain */
                        snprintf(name, sizeof(name), "pci%04x:00", dom);
                        CHILD(name, .kind = K_DOMAIN, .domain = dom);
                }
                return 0;
        case K_DOMAIN:
                for (size_t i = 0; i < sim->n_present; i++)
                        if (sim->present[i]->domain == p->domain)
                                CHILD(sim->present[i]->name, .kind = K_DEVICE, .dev = sim->present[i]);
                return 0;
        case K_DEVICE:
                return walk_device(sim, p, fn, ud);
        case K_NET:
                CHILD(p->dev->ifname, .kind = K_NETIF, .dev = p->dev);
                return 0;
        case K_NETIF:
                return walk_attrs(netif_attrs, ELEMENTSOF(netif_attrs), p, fn, ud);
        case K_QDMA:
                return walk_attrs(qdma_attrs, ELEMENTSOF(qdma_attrs), p, fn, ud);
        case K_NVME:
                snprintf(name, sizeof(name), "nvme%u", nvme_index(sim, p->dev));
                CHILD(name, .kind = K_NVMECTRL, .dev = p->dev);
                return 0;
        case K_NVMECTRL:
                return walk_attrs(nvme_attrs, ELEMENTSOF(nvme_attrs), p, fn, ud);
        case K_BUS:
                CHILD("pci", .kind = K_BUS_PCI);
                return 0;
        case K_BUS_PCI:
                CHILD("devices", .kind = K_BUS_DEVICES);
                CHILD("drivers", .kind = K_DRIVERS);
                return walk_attrs(bus_attrs, ELEMENTSOF(bus_attrs), p, fn, ud);
        case K_BUS_DEVICES:
                for (size_t i = 0; i < sim->n_present; i++)
                        CHILD(sim->present[i]->name, .kind = K_LINK, .link = L_BUS_DEV, .dev = sim->present[i]);
                return 0;
        case K_DRIVERS:
                for (size_t i = 0; i < sim->n_drivers; i++)
                        CHILD(sim->drivers[i]->name, .kind = K_DRIVER, .drv = sim->drivers[i]);
                return 0;
        case K_DRIVER:
                if (walk_attrs(driver_attrs, ELEMENTSOF(driver_attrs), p, fn, ud))
                        return 1;
                for (size_t i = 0; i < sim->n_present; i++)
                        if (sim->present[i]->driver == p->drv && !sim->present[i]->unbinding)
                                CHILD(sim->present[i]->name, .kind = K_LINK, .link = L_DRV_DEV,
                                      .dev = sim->present[i], .drv = p->drv);
                return 0;
        case K_KERNEL:
                CHILD("iommu_groups", .kind = K_GROUPS);
                return 0;
        case K_GROUPS:
                for (size_t g = 0; g < sim->n_groups; g++) {
                        if (sim->group_refs[g] == 0)
                                continue;
                        snprintf(name, sizeof(name), "%zu", g);
                        CHILD(name, .kind = K_GROUP, .group = (unsigned) g);
                }
                return 0;
        case K_GROUP:
                CHILD("devices", .kind = K_GROUP_DEVICES, .group = p->group);
                return walk_attrs(group_attrs, ELEMENTSOF(group_attrs), p, fn, ud);
        case K_GROUP_DEVICES:
                for (size_t i = 0; i < sim->n_present; i++)
                        if (sim->present[i]->group == p->group)
                                CHILD(sim->present[i]->name, .kind = K_LINK, .link = L_GROUP_DEV,
                                      .dev = sim->present[i]);
                return 0;
        case K_MODULE:
                CHILD("vfio_pci", .kind = K_MODULE_VFIO);
                return 0;
        case K_MODULE_VFIO:
                CHILD("parameters", .kind = K_MODULE_PARAMS);
                return 0;
        case K_MODULE_PARAMS:
                return walk_attrs(vfio_param_attrs, ELEMENTSOF(vfio_param_attrs), p, fn, ud);
        case K_SIM:
                CHILD("ctl", .kind = K_FILE, .attr = &ctl_attr);
                CHILD("stats", .kind = K_FILE, .attr = &stats_attr);
                CHILD("vfio", .kind = K_VFIO);
                return 0;
        case K_VFIO:
                for (size_t g = 0; g < sim->n_groups; g++) {
                        if (sim->group_refs[g] == 0 || !sim_group_vfio(sim, (unsigned) g))
                                continue;
                        snprintf(name, sizeof(name), "%zu", g);
                        CHILD(name, .kind = K_FILE, .attr = &vfio_attr, .group = (unsigned) g);
                }
                return 0;
        case K_FILE:
        case K_LINK:
                break;
        }
        return -ENOTDIR;
}

struct lookup {
        const char *name;
        struct node *ret;
};

static int lookup_cb(const char *name, const struct node *child, void *ud) {
        struct lookup *l = ud;

        if (!streq(name, l->name))
                return 0;
        *l->ret = *child;
        return 1;
}

static int resolve(struct sim *sim, const char *path, struct node *ret) {
        _cleanup_free_ char *copy = strdup(path);
        struct node n = { .kind = K_ROOT };
        char *save = NULL;

        if (!copy)
                return -ENOMEM;
        for (char *c = strtok_r(copy, "/", &save); c; c = strtok_r(NULL, "/", &save)) {
                struct node child;
                struct lookup l = { c, &child };
                int r;

                if (n.kind == K_FILE || n.kind == K_LINK)
                        return -ENOTDIR;
                r = walk(sim, &n, lookup_cb, &l);
                if (r < 0)
                        return r;
                if (r == 0)
                        return -ENOENT;
                n = child;
        }
        *ret = n;
        return 0;
}

static char *link_target(const struct node *n) {
        const struct sim_dev *d = n->dev;
        char *s = NULL;
        int r = -1;

        switch (n->link) {
        case L_BUS_DEV:
                r = asprintf(&s, "../../../devices/pci%04x:00/%s", d->domain, d->name);
                break;
        case L_DRIVER:
                r = asprintf(&s, "../../../bus/pci/drivers/%s", d->driver ? d->driver->name : "");
                break;
        case L_GROUP:
                r = asprintf(&s, "../../../kernel/iommu_groups/%u", d->group);
                break;
        case L_SUBSYSTEM:
                r = asprintf(&s, "../../../bus/pci");
                break;
        case L_VIRTFN:
        case L_PHYSFN:
                r = asprintf(&s, "../%s", n->link == L_PHYSFN ? d->pf->name : d->name);
                break;
        case L_DRV_DEV:
        case L_GROUP_DEV:
                r = asprintf(&s, "../../../../devices/pci%04x:00/%s", d->domain, d->name);
                break;
        }
        return r < 0 ? NULL : s;
}

/* ---- FUSE operations ---- */

static void count(struct sim *sim, const char *path, enum sim_stat s) {
        /* the control directory is not part of the simulated sysfs */
        if (strncmp(path, "/.pcisim", 8) == 0)
                return;
        __atomic_add_fetch(&sim->stats[s], 1, __ATOMIC_RELAXED);
}

static int with_node(const char *path, enum sim_stat s, struct node *n) {
        struct sim *sim = get_sim();

        count(sim, path, s);
        return resolve(sim, path, n);
}

static void *op_init(struct fuse_conn_info *conn, struct fuse_config *cfg) {
        cfg->entry_timeout = 0;
        cfg->attr_timeout = 0;
        cfg->negative_timeout = 0;
        cfg->direct_io = 1;
        cfg->use_ino = 0;
        return get_sim();
}

static int op_getattr(const char *path, struct stat *st, struct fuse_file_info *fi) {
        struct sim *sim = get_sim();
        struct node n;
        int r;

        pthread_mutex_lock(&sim->lock);
        r = with_node(path, SIM_STAT_GETATTR, &n);
        if (r >= 0 && n.kind == K_LINK && strncmp(path, "/bus/pci/devices/", 17) == 0 && !strchr(path + 17, '/'))
                r = sim_fault_check(sim, path + 17, SIM_FAULT_BUS_LINK, true);
        if (r >= 0) {
                memset(st, 0, sizeof(*st));
                st->st_atime = st->st_mtime = st->st_ctime = start_time;
                st->st_nlink = 1;
                if (n.kind == K_LINK) {
                        _cleanup_free_ char *t = link_target(&n);
                        st->st_mode = S_IFLNK | 0777;
                        st->st_size = t ? (off_t) strlen(t) : 0;
                } else if (n.kind == K_FILE) {
                        st->st_mode = S_IFREG | n.attr->mode;
                        st->st_size = SIM_PAGE_SIZE;
                        if (n.attr->binary)
                                st->st_size = n.dev->pcie ? SIM_CONFIG_SIZE : 256;
                        else if (n.attr == &vfio_attr)
                                st->st_size = 0;
                } else {
                        st->st_mode = S_IFDIR | 0755;
                        st->st_nlink = 2;
                }
        }
        pthread_mutex_unlock(&sim->lock);
        return r;
}

static int op_readlink(const char *path, char *buf, size_t size) {
        struct sim *sim = get_sim();
        _cleanup_free_ char *t = NULL;
        struct node n;
        int r;

        pthread_mutex_lock(&sim->lock);
        r = with_node(path, SIM_STAT_READLINK, &n);
        if (r >= 0 && n.kind != K_LINK)
                r = -EINVAL;
        if (r >= 0 && !(t = link_target(&n)))
                r = -ENOMEM;
        pthread_mutex_unlock(&sim->lock);
        if (r < 0)
                return r;
        if (size == 0)
                return -EINVAL;
        snprintf(buf, size, "%s", t);
        return 0;
}

struct fill {
        void *buf;
        fuse_fill_dir_t filler;
};

static int fill_cb(const char *name, const struct node *child, void *ud) {
        struct fill *f = ud;
        return f->filler(f->buf, name, NULL, 0, 0) ? 1 : 0;
}

static int op_readdir(const char *path, void *buf, fuse_fill_dir_t filler, off_t off,
                      struct fuse_file_info *fi, enum fuse_readdir_flags flags) {
        struct sim *sim = get_sim();
        struct fill f = { buf, filler };
        struct node n;
        int r;

        pthread_mutex_lock(&sim->lock);
        r = with_node(path, SIM_STAT_READDIR, &n);
        if (r >= 0 && (n.kind == K_FILE || n.kind == K_LINK))
                r = -ENOTDIR;
        if (r >= 0) {
                filler(buf, ".", NULL, 0, 0);
                filler(buf, "..", NULL, 0, 0);
                r = walk(sim, &n, fill_cb, &f);
                r = r < 0 ? r : 0;
        }
        pthread_mutex_unlock(&sim->lock);
        return r;
}

/* kernfs_fop_open(): even root gets EACCES for a direction the file lacks. */
static int op_open(const char *path, struct fuse_file_info *fi) {
        struct sim *sim = get_sim();
        int acc = fi->flags & O_ACCMODE;
        struct node n;
        int r;

        pthread_mutex_lock(&sim->lock);
        r = with_node(path, SIM_STAT_OPEN, &n);
        if (r >= 0 && n.kind != K_FILE)
                r = -EISDIR;
        if (r >= 0 && acc != O_WRONLY && (!(n.attr->mode & 0444) || !n.attr->show))
                r = -EACCES;
        if (r >= 0 && acc != O_RDONLY && (!(n.attr->mode & 0222) || !n.attr->store))
                r = -EACCES;
        pthread_mutex_unlock(&sim->lock);
        fi->direct_io = 1;
        /* pci_read_config(): file_ns_capable(filp, CAP_SYS_ADMIN), i.e. the
         * opener's privilege decides how much of config a read shows. */
        fi->fh = r >= 0 && n.attr->show == show_config && caller_is_admin();
        return r;
}

static int op_read(const char *path, char *buf, size_t size, off_t off, struct fuse_file_info *fi) {
        struct sim *sim = get_sim();
        _cleanup_free_ char *content = NULL;
        size_t len = 0;
        struct node n;
        int r;

        pthread_mutex_lock(&sim->lock);
        r = with_node(path, SIM_STAT_READ, &n);
        if (r == -ENOENT)
                r = -ENODEV;            /* kernfs: the node went away under an open file */
        if (r >= 0 && (n.kind != K_FILE || !n.attr->show))
                r = -EIO;
        if (r >= 0 && n.dev)
                r = sim_fault_check(sim, n.dev->name, n.attr->name, true);
        if (r >= 0)
                r = n.attr->show(sim, &n, &content, &len);
        pthread_mutex_unlock(&sim->lock);
        if (r < 0)
                return r;
        /* without CAP_SYS_ADMIN only the standard header (64 bytes) */
        if (n.attr->show == show_config && !fi->fh && len > 64)
                len = 64;
        if (off < 0 || (size_t) off >= len)
                return 0;
        if (size > len - (size_t) off)
                size = len - (size_t) off;
        memcpy(buf, content + off, size);
        return (int) size;
}

static const char *fault_target(const struct node *n) {
        if (n->attr == &ctl_attr)
                return NULL;
        if (n->dev)
                return n->dev->name;
        if (n->drv)
                return n->drv->name;
        return "pci";
}

static int op_write(const char *path, const char *data, size_t size, off_t off, struct fuse_file_info *fi) {
        struct sim *sim = get_sim();
        _cleanup_free_ char *buf = NULL;
        size_t len = size < SIM_PAGE_SIZE ? size : SIM_PAGE_SIZE;      /* kernfs caps a write */
        const char *target;
        struct node n;
        int r;

        buf = malloc(len + 1);
        if (!buf)
                return -ENOMEM;
        memcpy(buf, data, len);
        buf[len] = '\0';

        pthread_mutex_lock(&sim->lock);
        r = with_node(path, SIM_STAT_WRITE, &n);
        if (r == -ENOENT)
                r = -ENODEV;
        if (r >= 0 && (n.kind != K_FILE || !n.attr->store))
                r = -EIO;
        if (r >= 0 && (target = fault_target(&n)))
                r = sim_fault_check(sim, target, n.attr->name, false);
        if (r >= 0)
                r = n.attr->store(sim, &n, buf, len);
        pthread_mutex_unlock(&sim->lock);
        if (r < 0)
                return r;
        return n.attr->binary ? (int) size : (int) len;
}

/* "echo 1 > attr" truncates first; sysfs ignores that. */
static int op_truncate(const char *path, off_t size, struct fuse_file_info *fi) {
        struct sim *sim = get_sim();
        struct node n;
        int r;

        pthread_mutex_lock(&sim->lock);
        count(sim, path, SIM_STAT_OTHER);
        r = resolve(sim, path, &n);
        if (r >= 0 && n.kind != K_FILE)
                r = -EISDIR;
        if (r >= 0 && !(n.attr->mode & 0222))
                r = -EACCES;
        pthread_mutex_unlock(&sim->lock);
        return r;
}

static const struct fuse_operations ops = {
        .init = op_init,
        .getattr = op_getattr,
        .readlink = op_readlink,
        .readdir = op_readdir,
        .open = op_open,
        .read = op_read,
        .write = op_write,
        .truncate = op_truncate,
};

int sim_fs_run(struct sim *sim, const char *mountpoint, bool foreground, int argc, char **argv) {
        struct fuse_args args = FUSE_ARGS_INIT(0, NULL);
        struct fuse_loop_config cfg = { .clone_fd = 0, .max_idle_threads = 16 };
        struct fuse *fuse;
        int r;

        start_time = time(NULL);
        if (fuse_opt_add_arg(&args, "pcisim") < 0 ||
            fuse_opt_add_arg(&args, "-o") < 0 ||
            fuse_opt_add_arg(&args, getuid() == 0 ? "fsname=pcisim,subtype=pcisim,allow_other"
                                                  : "fsname=pcisim,subtype=pcisim") < 0)
                return -ENOMEM;
        for (int i = 0; i < argc; i++)
                if (fuse_opt_add_arg(&args, argv[i]) < 0)
                        return -ENOMEM;

        fuse = fuse_new(&args, &ops, sizeof(ops), sim);
        fuse_opt_free_args(&args);
        if (!fuse)
                return -EINVAL;
        if (fuse_mount(fuse, mountpoint) != 0) {
                fuse_destroy(fuse);
                return -EOPNOTSUPP;
        }
        /* the mount exists now: a daemonizing parent returns to a usable tree */
        if (fuse_daemonize(foreground) != 0) {
                r = -errno;
                goto out;
        }
        if (fuse_set_signal_handlers(fuse_get_session(fuse)) != 0) {
                r = -EIO;
                goto out;
        }
        r = fuse_loop_mt(fuse, &cfg) == 0 ? 0 : -EIO;
        fuse_remove_signal_handlers(fuse_get_session(fuse));
out:
        fuse_unmount(fuse);
        fuse_destroy(fuse);
        return r;
}

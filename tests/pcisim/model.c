/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pcisim's device/driver model: what the kernel's PCI core does when user
 * space writes its sysfs attributes. Each store function cites the kernel
 * function it mirrors; keep the order of checks identical, callers (and the
 * tests of svff) depend on the exact errno.
 */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "macro.h"
#include "model.h"

static const char *const latency_names[_SIM_LAT_MAX] = {
        [SIM_LAT_VF_ENABLE] = "vf_enable",
        [SIM_LAT_VF_DISABLE] = "vf_disable",
        [SIM_LAT_SRIOV_ENABLE] = "sriov_enable",
        [SIM_LAT_SRIOV_DISABLE] = "sriov_disable",
        [SIM_LAT_BIND] = "bind",
        [SIM_LAT_UNBIND] = "unbind",
        [SIM_LAT_PROBE] = "probe",
        [SIM_LAT_REMOVE] = "remove",
        [SIM_LAT_RESCAN] = "rescan",
};

static const char *const stat_names[_SIM_STAT_MAX] = {
        [SIM_STAT_GETATTR] = "getattr",
        [SIM_STAT_READDIR] = "readdir",
        [SIM_STAT_OPEN] = "open",
        [SIM_STAT_READ] = "read",
        [SIM_STAT_WRITE] = "write",
        [SIM_STAT_READLINK] = "readlink",
        [SIM_STAT_OTHER] = "other",
};

const char *sim_latency_to_string(enum sim_latency l) {
        return l < _SIM_LAT_MAX ? latency_names[l] : NULL;
}

int sim_latency_from_string(const char *s) {
        for (size_t i = 0; i < _SIM_LAT_MAX; i++)
                if (streq(latency_names[i], s))
                        return (int) i;
        return -EINVAL;
}

const char *sim_stat_to_string(enum sim_stat s) {
        return s < _SIM_STAT_MAX ? stat_names[s] : NULL;
}

int sim_new(struct sim **ret) {
        struct sim *sim = calloc(1, sizeof(*sim));
        if (!sim)
                return -ENOMEM;
        pthread_mutex_init(&sim->lock, NULL);
        pthread_cond_init(&sim->cond, NULL);
        sim->bus_drivers_autoprobe = true;
        sim->numa_nodes = 1;
        *ret = sim;
        return 0;
}

static void sim_dev_free_fields(struct sim_dev *dev) {
        free(dev->driver_override);
        free(dev->ifname);
        free(dev->mac);
        free(dev->qactive);
}

void sim_free(struct sim *sim) {
        if (!sim)
                return;
        for (size_t i = 0; i < sim->n_devs; i++) {
                struct sim_dev *dev = sim->devs[i];
                for (unsigned j = 0; dev->vfs && j < dev->totalvfs; j++) {
                        free(dev->vfs[j].driver_override);
                        free(dev->vfs[j].qactive);
                }
                free(dev->vfs);
                sim_dev_free_fields(dev);
                free(dev);
        }
        for (size_t i = 0; i < sim->n_drivers; i++) {
                free(sim->drivers[i]->name);
                free(sim->drivers[i]->ids);
                free(sim->drivers[i]->dyn_ids);
                free(sim->drivers[i]);
        }
        for (size_t i = 0; i < sim->n_faults; i++) {
                free(sim->faults[i].target);
                free(sim->faults[i].attr);
                free(sim->faults[i].vanish);
        }
        free(sim->faults);
        free(sim->devs);
        free(sim->present);
        free(sim->drivers);
        free(sim->group_refs);
        pthread_cond_destroy(&sim->cond);
        pthread_mutex_destroy(&sim->lock);
        free(sim);
}

/* ---- parsers: lib/kstrtox.c and lib/string.c semantics ---- */

int sim_kstrtoull(const char *s, unsigned base, unsigned long long *ret) {
        unsigned long long v = 0;
        bool overflow = false;
        size_t n = 0;

        if (*s == '+')
                s++;
        if (base == 0) {
                if (s[0] == '0')
                        base = tolower((unsigned char) s[1]) == 'x' && isxdigit((unsigned char) s[2]) ? 16 : 8;
                else
                        base = 10;
        }
        if (base == 16 && s[0] == '0' && tolower((unsigned char) s[1]) == 'x')
                s += 2;

        for (;; s++, n++) {
                unsigned c = tolower((unsigned char) *s), d;

                if (c >= '0' && c <= '9')
                        d = c - '0';
                else if (c >= 'a' && c <= 'f')
                        d = c - 'a' + 10;
                else
                        break;
                if (d >= base)
                        break;
                if (v > (ULLONG_MAX - d) / base)
                        overflow = true;
                v = v * base + d;
        }
        if (overflow)
                return -ERANGE;
        if (n == 0)
                return -EINVAL;
        if (*s == '\n')
                s++;
        if (*s)
                return -EINVAL;
        *ret = v;
        return 0;
}

/* kstrtoint(): a '-' may precede the digits, but not a '+' after it. */
int sim_kstrtoint(const char *s, unsigned base, int *ret) {
        unsigned long long v;
        bool neg = s[0] == '-';
        int r;

        if (neg && s[1] == '+')
                return -EINVAL;
        r = sim_kstrtoull(s + neg, base, &v);
        if (r < 0)
                return r;
        if (v > (neg ? (unsigned long long) INT_MAX + 1 : (unsigned long long) INT_MAX))
                return -ERANGE;
        *ret = neg ? (int) -(long long) v : (int) v;
        return 0;
}

int sim_kstrtobool(const char *s, bool *ret) {
        switch (s[0]) {
        case 'y': case 'Y': case 't': case 'T': case '1':
                *ret = true;
                return 0;
        case 'n': case 'N': case 'f': case 'F': case '0':
                *ret = false;
                return 0;
        case 'o': case 'O':
                switch (s[1]) {
                case 'n': case 'N':
                        *ret = true;
                        return 0;
                case 'f': case 'F':
                        *ret = false;
                        return 0;
                }
                break;
        }
        return -EINVAL;
}

/* Equal, allowing a single trailing newline on either side. */
bool sim_sysfs_streq(const char *a, const char *b) {
        while (*a && *a == *b) {
                a++;
                b++;
        }
        if (*a == *b)
                return true;
        if (*a == '\0' && b[0] == '\n' && b[1] == '\0')
                return true;
        if (*b == '\0' && a[0] == '\n' && a[1] == '\0')
                return true;
        return false;
}

/* ---- locking and waiting ---- */

void sim_dev_lock(struct sim *sim, struct sim_dev *dev) {
        while (dev->locked)
                pthread_cond_wait(&sim->cond, &sim->lock);
        dev->locked = true;
}

void sim_dev_unlock(struct sim *sim, struct sim_dev *dev) {
        dev->locked = false;
        pthread_cond_broadcast(&sim->cond);
}

/* Injected latency: the model lock is dropped so other requests proceed. */
static void sim_sleep(struct sim *sim, enum sim_latency op) {
        unsigned long us = sim->latency_us[op];
        struct timespec ts;

        if (us == 0)
                return;
        ts.tv_sec = us / 1000000;
        ts.tv_nsec = (long) (us % 1000000) * 1000;
        pthread_mutex_unlock(&sim->lock);
        while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
                ;
        pthread_mutex_lock(&sim->lock);
}

/* ---- drivers ---- */

struct sim_driver *sim_driver_get(struct sim *sim, const char *name) {
        for (size_t i = 0; i < sim->n_drivers; i++)
                if (sim_sysfs_streq(sim->drivers[i]->name, name))
                        return sim->drivers[i];
        return NULL;
}

int sim_driver_add(struct sim *sim, const char *name, bool sriov, struct sim_driver **ret) {
        struct sim_driver *drv, **a;

        drv = sim_driver_get(sim, name);
        if (drv) {
                drv->sriov = drv->sriov || sriov;
                goto out;
        }
        if (!*name || strchr(name, '/'))
                return -EINVAL;
        a = reallocarray(sim->drivers, sim->n_drivers + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        sim->drivers = a;
        drv = calloc(1, sizeof(*drv));
        if (!drv)
                return -ENOMEM;
        drv->name = strdup(name);
        if (!drv->name) {
                free(drv);
                return -ENOMEM;
        }
        drv->sriov = sriov;
        sim->drivers[sim->n_drivers++] = drv;
out:
        if (ret)
                *ret = drv;
        return 0;
}

static int id_add(struct sim_id **ids, size_t *n, const struct sim_id *id) {
        struct sim_id *a = reallocarray(*ids, *n + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        a[(*n)++] = *id;
        *ids = a;
        return 0;
}

int sim_driver_add_id(struct sim_driver *drv, uint32_t vendor, uint32_t device) {
        struct sim_id id = { vendor, device, SIM_ANY_ID, SIM_ANY_ID };

        for (size_t i = 0; i < drv->n_ids; i++)
                if (drv->ids[i].vendor == vendor && drv->ids[i].device == device)
                        return 0;
        return id_add(&drv->ids, &drv->n_ids, &id);
}

static bool id_match(const struct sim_id *id, const struct sim_dev *dev) {
        return (id->vendor == SIM_ANY_ID || id->vendor == dev->vendor) &&
               (id->device == SIM_ANY_ID || id->device == dev->device) &&
               (id->subvendor == SIM_ANY_ID || id->subvendor == dev->subvendor) &&
               (id->subdevice == SIM_ANY_ID || id->subdevice == dev->subdevice);
}

static bool ids_match(const struct sim_driver *drv, const struct sim_dev *dev) {
        for (size_t i = 0; i < drv->n_dyn_ids; i++)
                if (id_match(&drv->dyn_ids[i], dev))
                        return true;
        for (size_t i = 0; i < drv->n_ids; i++)
                if (id_match(&drv->ids[i], dev))
                        return true;
        return false;
}

/* pci_match_device(): driver_override excludes every other driver. */
static bool driver_match(const struct sim_driver *drv, const struct sim_dev *dev) {
        if (dev->driver_override)
                return streq(dev->driver_override, drv->name);
        return ids_match(drv, dev);
}

/* pci_device_can_probe(): VFs probe only with autoprobe or an override. */
static bool can_probe(const struct sim_dev *dev) {
        return !dev->pf || dev->driver_override || dev->pf->drivers_autoprobe;
}

static bool is_vfio(const struct sim_driver *drv) {
        return drv && streq(drv->name, "vfio-pci");
}

/* ---- QDMA (Xilinx dma_ip_drivers: driver/src/qdma_mod.c, the resource
 * manager in libqdma/qdma_access/qdma_resource_mgmt.c) ---- */

static struct sim_dev *qdma_device(struct sim_dev *dev) {
        return dev->pf ?: dev;
}

/* Queues given out on the whole device: the PF's and every VF's. */
static unsigned long long qdma_used(const struct sim_dev *pf) {
        unsigned long long n = pf->qmax;

        /* every slot: VFs being enabled are present before numvfs says so */
        for (unsigned i = 0; pf->vfs && i < pf->totalvfs; i++)
                if (pf->vfs[i].present)
                        n += pf->vfs[i].qmax;
        return n;
}

static void qdma_queues_clear(struct sim_dev *dev) {
        free(dev->qactive);
        dev->qactive = NULL;
        dev->n_qactive = 0;
}

/* A function's qmax: EBUSY while any of its queues is started (the
 * driver refuses to move the queue base under a live context), ENOSPC
 * when the device's budget has no room (pcisim's errno: the driver's
 * resource manager fails the request, the errno is its choice). */
int sim_qdma_set_qmax(struct sim *sim, struct sim_dev *dev, unsigned long long v) {
        struct sim_dev *pf = qdma_device(dev);

        if (v > UINT_MAX)
                return -EINVAL;
        if (dev->kind != SIM_KIND_QDMA)
                return -EOPNOTSUPP;
        if (dev->n_qactive > 0)
                return -EBUSY;
        if (qdma_used(pf) - dev->qmax + v > pf->qbudget)
                return -ENOSPC;
        dev->qmax = (unsigned) v;
        return 0;
}

int sim_qdma_queue(struct sim *sim, struct sim_dev *dev, unsigned qid, bool st, bool start) {
        unsigned key = qid | (st ? SIM_QUEUE_ST : 0);
        size_t i;

        if (dev->kind != SIM_KIND_QDMA || !dev->present)
                return -ENODEV;
        if (qid >= dev->qmax || qid >= SIM_QUEUE_ST)
                return -EINVAL;
        for (i = 0; i < dev->n_qactive; i++)
                if ((dev->qactive[i] & ~SIM_QUEUE_ST) == qid)
                        break;
        if (!start) {
                if (i == dev->n_qactive)
                        return -ENOENT;
                memmove(dev->qactive + i, dev->qactive + i + 1, (dev->n_qactive - i - 1) * sizeof(unsigned));
                dev->n_qactive--;
                return 0;
        }
        if (i < dev->n_qactive)
                return -EEXIST;
        unsigned *a = reallocarray(dev->qactive, dev->n_qactive + 1, sizeof(unsigned));
        if (!a)
                return -ENOMEM;
        dev->qactive = a;
        dev->qactive[dev->n_qactive++] = key;
        return 0;
}

/* dma-ctl's names: qdma<bbddf> for a PF, qdmavf<bbddf> for a VF, then the
 * mode and the queue's index in the function. */
int sim_qdma_format_queues(const struct sim_dev *dev, char **ret, size_t *ret_len) {
        char *buf = NULL;
        size_t size = 0;
        FILE *f = open_memstream(&buf, &size);

        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < dev->n_qactive; i++)
                fprintf(f, "%s%02x%02x%x-%s-%u\n", dev->pf ? "qdmavf" : "qdma", dev->bus,
                        dev->devfn >> 3, dev->devfn & 7u,
                        dev->qactive[i] & SIM_QUEUE_ST ? "ST" : "MM", dev->qactive[i] & ~SIM_QUEUE_ST);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        *ret_len = size;
        return 0;
}

/* A QDMA VF's driver asks the PF for its queues when it probes (the host's
 * qdma-vf here; with passthrough the guest's, through ctl "qmax"): granted
 * if the budget has room, else the VF stays at 0, as the driver logs and
 * goes on. */
static void qdma_vf_probe(struct sim *sim, struct sim_dev *vf) {
        if (vf->kind == SIM_KIND_QDMA && vf->pf && !is_vfio(vf->driver))
                (void) sim_qdma_set_qmax(sim, vf, vf->pf->vf_qmax);
}

/* The driver's remove(): its queues stop; a VF's say "bye" over the
 * mailbox and the PF takes its queues back. */
static void qdma_release(struct sim_dev *dev) {
        if (dev->kind != SIM_KIND_QDMA)
                return;
        qdma_queues_clear(dev);
        if (dev->pf)
                dev->qmax = 0;
}

/* __driver_probe_device() + really_probe(). */
static int driver_probe(struct sim *sim, struct sim_driver *drv, struct sim_dev *dev) {
        if (!dev->present)
                return -ENODEV;
        if (dev->driver)
                return -EBUSY;
        if (!can_probe(dev))
                return -ENODEV;         /* pci_device_probe() rejects it */
        /* vfio_pci_core_register_device(): "Cannot bind to PF with SR-IOV
         * enabled"; really_probe() passes the probe's error on to bind. */
        if (is_vfio(drv) && dev->is_pf && dev->numvfs > 0)
                return -EBUSY;
        dev->driver = drv;
        if (!is_vfio(drv))
                dev->enable_cnt++;      /* real drivers pci_enable_device() in probe */
        qdma_vf_probe(sim, dev);
        return 0;
}

/* device_attach(): the first matching driver that accepts the device. */
static int device_attach(struct sim *sim, struct sim_dev *dev) {
        if (dev->driver)
                return 1;
        for (size_t i = 0; i < sim->n_drivers; i++) {
                struct sim_driver *drv = sim->drivers[i];

                if (!driver_match(drv, dev))
                        continue;
                if (driver_probe(sim, drv, dev) == 0) {
                        sim_sleep(sim, SIM_LAT_PROBE);
                        return 1;
                }
        }
        return 0;
}

/* ---- devices ---- */

static uint32_t dev_key(const struct sim_dev *dev) {
        return (uint32_t) dev->domain << 16 | (uint32_t) dev->bus << 8 | dev->devfn;
}

void sim_dev_set_name(struct sim_dev *dev) {
        snprintf(dev->name, sizeof(dev->name), "%04x:%02x:%02x.%u",
                 dev->domain, dev->bus, dev->devfn >> 3, dev->devfn & 7u);
}

struct sim_dev *sim_dev_find(struct sim *sim, const char *name) {
        for (size_t i = 0; i < sim->n_present; i++)
                if (sim_sysfs_streq(sim->present[i]->name, name))
                        return sim->present[i];
        return NULL;
}

static int group_alloc(struct sim *sim, unsigned *ret) {
        size_t g;

        for (g = 0; g < sim->n_groups; g++)
                if (sim->group_refs[g] == 0)
                        break;
        if (g == sim->n_groups) {
                unsigned *a = reallocarray(sim->group_refs, g + 1, sizeof(*a));
                if (!a)
                        return -ENOMEM;
                sim->group_refs = a;
                sim->n_groups = g + 1;
        }
        sim->group_refs[g] = 1;
        *ret = (unsigned) g;
        return 0;
}

/* Make a device visible (device_add() + pci_bus_add_device()). */
static int dev_add(struct sim *sim, struct sim_dev *dev) {
        struct sim_dev **a;
        size_t i;
        int r;

        if (sim_dev_find(sim, dev->name))
                return -EEXIST;
        a = reallocarray(sim->present, sim->n_present + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        sim->present = a;

        if (dev->pf && dev->pf->shared_group) {
                dev->group = dev->pf->group;
                sim->group_refs[dev->group]++;
        } else {
                r = group_alloc(sim, &dev->group);
                if (r < 0)
                        return r;
        }

        for (i = 0; i < sim->n_present; i++)
                if (dev_key(sim->present[i]) > dev_key(dev))
                        break;
        memmove(sim->present + i + 1, sim->present + i, (sim->n_present - i) * sizeof(*a));
        sim->present[i] = dev;
        sim->n_present++;
        dev->present = true;
        pthread_cond_broadcast(&sim->cond);

        /* pci_bus_add_device() attaches regardless of the bus's drivers_autoprobe */
        device_attach(sim, dev);
        return 0;
}

static void sriov_disable(struct sim *sim, struct sim_dev *pf);

/* device_release_driver(): blocks while the device is held open, like
 * vfio-pci's remove() waiting for the user to close the device. */
static void device_release_driver(struct sim *sim, struct sim_dev *dev) {
        /* __device_release_driver(): driver_sysfs_remove() takes the
         * driver links away before the driver's remove() runs, and blocks */
        dev->unbinding = dev->driver != NULL;
        while (dev->held)
                pthread_cond_wait(&sim->cond, &sim->lock);
        if (!dev->driver)
                return;
        /* Only a driver whose remove() disables SR-IOV takes the VFs with
         * it (igb_remove(), vfio_pci_core_unregister_device()). Others
         * (nvme) leave them: pci_device_remove() -> pci_iov_remove() only
         * warns "driver left SR-IOV enabled after remove", sriov_numvfs
         * still reads N, and with no driver a write of it is ENOENT. */
        if (dev->is_pf && dev->numvfs > 0 && dev->driver->remove_disables_sriov)
                sriov_disable(sim, dev);
        if (!is_vfio(dev->driver) && dev->enable_cnt > 0)
                dev->enable_cnt--;
        qdma_release(dev);
        dev->driver = NULL;
        dev->unbinding = false;
        pthread_cond_broadcast(&sim->cond);
        sim_sleep(sim, SIM_LAT_UNBIND);
}

/* pci_stop_and_remove_bus_device(); the caller holds the device lock.
 * The VFs of a PF are its siblings on the bus, not its children: unless
 * the driver's remove() disabled SR-IOV they stay, orphaned, holding
 * their addresses (and their physfn link dangles until a rescan brings
 * a PF back at the same address). */
static void dev_del(struct sim *sim, struct sim_dev *dev) {
        size_t i;

        if (!dev->present)
                return;
        device_release_driver(sim, dev);
        for (i = 0; i < sim->n_present; i++)
                if (sim->present[i] == dev)
                        break;
        if (i < sim->n_present) {
                memmove(sim->present + i, sim->present + i + 1, (sim->n_present - i - 1) * sizeof(*sim->present));
                sim->n_present--;
        }
        if (dev->group < sim->n_groups && sim->group_refs[dev->group] > 0)
                sim->group_refs[dev->group]--;
        dev->present = false;
        dev->held = false;
        pthread_cond_broadcast(&sim->cond);
}

/* A fresh pci_dev for a (re)scanned device: per-device state is reset. */
static int dev_plug(struct sim *sim, struct sim_dev *dev) {
        free(dev->driver_override);
        dev->driver_override = NULL;
        dev->driver = NULL;
        dev->enable_cnt = 0;
        dev->held = false;
        dev->numvfs = 0;
        dev->cfg_numvfs = 0;
        dev->cfg_vf_enable = false;
        dev->drivers_autoprobe = true;
        dev->partial = -1;
        dev->drop_vf = -1;
        dev->qmax = dev->qmax_initial;
        qdma_queues_clear(dev);
        return dev_add(sim, dev);
}

int sim_dev_register(struct sim *sim, struct sim_dev *dev) {
        struct sim_dev **a;
        int r;

        sim_dev_set_name(dev);
        for (size_t i = 0; i < sim->n_devs; i++)
                if (streq(sim->devs[i]->name, dev->name) && !sim->devs[i]->unplugged)
                        return -EEXIST;
        if (dev->is_pf) {
                /* every VF's routing ID must fit (virtfn_bus() check) */
                uint32_t last = (uint32_t) dev->bus << 8 | dev->devfn;
                if (dev->totalvfs > 0)
                        last += dev->offset + (uint32_t) (dev->totalvfs - 1) * dev->stride;
                if (last > 0xffff || (dev->totalvfs > 0 && dev->offset == 0) ||
                    (dev->totalvfs > 1 && dev->stride == 0))
                        return -ERANGE;
                dev->vfs = calloc(dev->totalvfs ?: 1, sizeof(*dev->vfs));
                dev->vf_slots = dev->totalvfs;
                if (!dev->vfs)
                        return -ENOMEM;
        }
        a = reallocarray(sim->devs, sim->n_devs + 1, sizeof(*a));
        if (!a)
                return -ENOMEM;
        sim->devs = a;
        sim->devs[sim->n_devs++] = dev;
        r = dev_plug(sim, dev);
        if (r < 0) {
                dev->unplugged = true;
                return r;
        }
        return 0;
}

bool sim_group_vfio(struct sim *sim, unsigned group) {
        for (size_t i = 0; i < sim->n_present; i++)
                if (sim->present[i]->group == group && is_vfio(sim->present[i]->driver))
                        return true;
        return false;
}

/* ---- SR-IOV (drivers/pci/iov.c) ---- */

static int vf_add(struct sim *sim, struct sim_dev *pf, unsigned i) {
        struct sim_dev *vf = &pf->vfs[i];
        uint32_t rid = ((uint32_t) pf->bus << 8 | pf->devfn) + pf->offset + i * pf->stride;

        free(vf->driver_override);
        free(vf->qactive);
        *vf = (struct sim_dev) {
                .domain = pf->domain,
                .bus = (uint8_t) (rid >> 8),
                .devfn = (uint8_t) rid,
                .vendor = pf->vendor,
                .device = pf->vf_device,
                .subvendor = pf->subvendor,
                .subdevice = pf->subdevice,
                .class = pf->class,
                .revision = pf->revision,
                .numa_node = pf->numa_node,
                .pcie = true,
                .kind = pf->kind,
                .qmax = 0,              /* every function starts with no queues */
                .pf = pf,
                .vf_index = i,
                .partial = -1,
                .drop_vf = -1,
        };
        sim_dev_set_name(vf);
        /* vfio_pci_bus_notifier(): a PF on vfio-pci (enable_sriov) captures
         * its new VFs for vfio-pci before they probe. */
        if (is_vfio(pf->driver) && !(vf->driver_override = strdup("vfio-pci")))
                return -ENOMEM;
        return dev_add(sim, vf);
}

/* sriov_disable() -> sriov_del_vfs(): VF 0 first; the PF's device lock is
 * held. pci_iov_remove_virtfn() drops the virtfn<i> and physfn links
 * before it removes the VF, so a VF held open shows without them while
 * the VFs after it are all still there. */
static void sriov_disable(struct sim *sim, struct sim_dev *pf) {
        for (unsigned i = 0; i < pf->numvfs; i++) {
                struct sim_dev *vf = &pf->vfs[i];

                if (!vf->present)
                        continue;
                vf->unlinked = true;
                sim_dev_lock(sim, vf);
                dev_del(sim, vf);
                sim_dev_unlock(sim, vf);
                sim_sleep(sim, SIM_LAT_VF_DISABLE);
        }
        pf->cfg_vf_enable = false;
        pf->cfg_numvfs = 0;
        sim_sleep(sim, SIM_LAT_SRIOV_DISABLE);
        pf->numvfs = 0;
        pthread_cond_broadcast(&sim->cond);
}

/* sriov_enable(): NumVFs and VF Enable first, then VFs appear one by one. */
static void sriov_enable(struct sim *sim, struct sim_dev *pf, uint16_t n) {
        if (pf->partial >= 0) {
                if (pf->partial < n)
                        n = (uint16_t) pf->partial;     /* the "driver" enables fewer */
                pf->partial = -1;
        }
        pf->cfg_numvfs = n;
        pf->cfg_vf_enable = n > 0;
        pf->enabling = true;
        sim_sleep(sim, SIM_LAT_SRIOV_ENABLE);
        for (unsigned i = 0; i < n; i++) {
                sim_sleep(sim, SIM_LAT_VF_ENABLE);
                (void) vf_add(sim, pf, i);
        }
        if (pf->drop_vf >= 0 && pf->drop_vf < n && pf->vfs[pf->drop_vf].present) {
                /* ctl drop-vf: that VF alone surprise-removed, its
                 * virtfn link gone with it or left dangling */
                struct sim_dev *vf = &pf->vfs[pf->drop_vf];

                sim_dev_lock(sim, vf);
                dev_del(sim, vf);
                vf->unplugged = true;
                vf->dangling = pf->drop_dangling;
                vf->unlinked = !pf->drop_dangling;
                sim_dev_unlock(sim, vf);
        }
        pf->drop_vf = -1;
        pf->numvfs = n;
        pf->enabling = false;
        pthread_cond_broadcast(&sim->cond);
}

/* Whether any of the first n VF addresses of pf is taken by a present
 * device: VFs left behind when an earlier instance of pf was removed. */
static bool vfs_orphaned(struct sim *sim, const struct sim_dev *pf, uint16_t n) {
        for (unsigned i = 0; i < n; i++) {
                uint32_t rid = ((uint32_t) pf->bus << 8 | pf->devfn) + pf->offset + i * pf->stride;

                for (size_t j = 0; j < sim->n_present; j++) {
                        const struct sim_dev *d = sim->present[j];

                        if (d->domain == pf->domain && ((uint32_t) d->bus << 8 | d->devfn) == rid)
                                return true;
                }
        }
        return false;
}

/* The PF driver's sriov_configure(), the PF's device lock held. */
static int sriov_configure(struct sim *sim, struct sim_dev *pf, uint16_t n) {
        if (is_vfio(pf->driver) && !sim->vfio_enable_sriov)
                return -ENOENT;         /* vfio_pci_sriov_configure() */
        if (n == 0) {
                sriov_disable(sim, pf);
                return 0;
        }
        if (pf->next_offset) {
                /* pci_iov_set_numvfs(): offset and stride read again */
                pf->offset = pf->next_offset;
                pf->stride = pf->next_stride;
                pf->next_offset = pf->next_stride = 0;
        }
        if (vfs_orphaned(sim, pf, n)) {
                /* pci_iov_add_virtfn(): device_add() of a VF whose name an
                 * orphan still holds fails ("sysfs: cannot create duplicate
                 * filename"), then pci_iov_sysfs_link() gives ENOENT. The
                 * real kernel was seen to BUG later: count it. */
                sim->kernel_breaks++;
                return -ENOENT;
        }
        sriov_enable(sim, pf, n);
        return 0;
}

/* sriov_numvfs_store() */
int sim_store_numvfs(struct sim *sim, struct sim_dev *pf, const char *buf) {
        unsigned long long v;
        int r = 0;

        if (sim_kstrtoull(buf, 0, &v) < 0 || v > UINT16_MAX)
                return -EINVAL;
        if (v > pf->totalvfs)
                return -ERANGE;

        sim_dev_lock(sim, pf);
        if (!pf->present)
                r = -ENODEV;
        else if (v == pf->numvfs)
                r = 0;
        else if (!pf->driver || !pf->driver->sriov)
                r = -ENOENT;
        else if (v == 0)
                r = sriov_configure(sim, pf, 0);
        else if (pf->numvfs > 0)
                r = -EBUSY;
        else
                r = sriov_configure(sim, pf, (uint16_t) v);
        sim_dev_unlock(sim, pf);
        return r;
}

/* sriov_numvfs_show() serialises with the store through the device lock. */
int sim_show_numvfs(struct sim *sim, struct sim_dev *pf, uint16_t *ret) {
        sim_dev_lock(sim, pf);
        *ret = pf->numvfs;
        sim_dev_unlock(sim, pf);
        return pf->present ? 0 : -ENODEV;
}

int sim_store_autoprobe(struct sim *sim, struct sim_dev *pf, const char *buf) {
        bool b;

        if (sim_kstrtobool(buf, &b) < 0)
                return -EINVAL;
        pf->drivers_autoprobe = b;
        return 0;
}

/* driver_set_override() */
int sim_store_driver_override(struct sim *sim, struct sim_dev *dev, const char *buf, size_t len) {
        const char *nl;
        char *new;

        if (len >= SIM_PAGE_SIZE - 1)
                return -EINVAL;
        len = strlen(buf);
        nl = memchr(buf, '\n', len);
        if (nl)
                len = (size_t) (nl - buf);
        if (len == 0) {
                free(dev->driver_override);
                dev->driver_override = NULL;
                return 0;
        }
        new = strndup(buf, len);
        if (!new)
                return -ENOMEM;
        free(dev->driver_override);
        dev->driver_override = new;
        return 0;
}

int sim_dev_remove(struct sim *sim, struct sim_dev *dev, bool unplug) {
        sim_dev_lock(sim, dev);
        if (!dev->present) {
                sim_dev_unlock(sim, dev);
                return -ENODEV;
        }
        sim_sleep(sim, SIM_LAT_REMOVE);
        /* A surprise removal takes the slot's whole bus, VFs included, in
         * reverse order (pciehp_unconfigure_device()); writing remove
         * takes the PF alone. */
        for (unsigned i = dev->is_pf && unplug ? dev->totalvfs : 0; i-- > 0;) {
                struct sim_dev *vf = &dev->vfs[i];

                if (!vf->present)
                        continue;       /* orphans of an earlier remove go too */
                vf->unlinked = true;
                sim_dev_lock(sim, vf);
                dev_del(sim, vf);
                vf->unplugged = true;
                sim_dev_unlock(sim, vf);
        }
        dev_del(sim, dev);
        if (unplug || dev->pf)
                dev->unplugged = true;  /* VFs never come back through a rescan */
        sim_dev_unlock(sim, dev);
        return 0;
}

/* remove_store() */
int sim_store_remove(struct sim *sim, struct sim_dev *dev, const char *buf) {
        unsigned long long v;

        if (sim_kstrtoull(buf, 0, &v) < 0)
                return -EINVAL;
        if (v)
                (void) sim_dev_remove(sim, dev, false);
        return 0;
}

/* enable_store(): a bound driver owns the enable count. */
int sim_store_enable(struct sim *sim, struct sim_dev *dev, const char *buf, bool admin) {
        unsigned long long v;
        int r = 0;

        if (!admin)
                return -EPERM;
        if (sim_kstrtoull(buf, 0, &v) < 0)
                return -EINVAL;
        sim_dev_lock(sim, dev);
        if (dev->driver)
                r = -EBUSY;
        else if (v)
                dev->enable_cnt++;
        else if (dev->enable_cnt > 0)
                dev->enable_cnt--;
        else
                r = -EIO;
        sim_dev_unlock(sim, dev);
        return r;
}

/* numa_node_store(): NUMA_NO_NODE or an online node. */
int sim_store_numa_node(struct sim *sim, struct sim_dev *dev, const char *buf, bool admin) {
        int node;

        if (!admin)
                return -EPERM;
        if (sim_kstrtoint(buf, 0, &node) < 0)
                return -EINVAL;
        if (node < -1 || (node >= 0 && (unsigned) node >= sim->numa_nodes))
                return -EINVAL;
        dev->numa_node = node;
        return 0;
}

/* vfio-pci's enable_sriov parameter: param_set_bool(), i.e. kstrtobool(). */
int sim_store_vfio_enable_sriov(struct sim *sim, const char *buf) {
        bool b;

        if (sim_kstrtobool(buf, &b) < 0)
                return -EINVAL;
        sim->vfio_enable_sriov = b;
        return 0;
}

/* reset_store(): every simulated device has FLR. */
int sim_store_reset(struct sim *sim, struct sim_dev *dev, const char *buf) {
        unsigned long long v;

        if (sim_kstrtoull(buf, 0, &v) < 0 || v != 1)
                return -EINVAL;
        return 0;
}

int sim_store_qmax(struct sim *sim, struct sim_dev *dev, const char *buf) {
        unsigned long long v;

        if (sim_kstrtoull(buf, 0, &v) < 0 || v > UINT_MAX)
                return -EINVAL;
        return sim_qdma_set_qmax(sim, dev, v);
}

/* bind_store() (5.13+): ENODEV no device or no match, EBUSY already bound,
 * and a probe rejecting the device (a VF without autoprobe) is ENODEV. */
int sim_store_bind(struct sim *sim, struct sim_driver *drv, const char *buf) {
        struct sim_dev *dev = sim_dev_find(sim, buf);
        int r;

        if (!dev || !driver_match(drv, dev))
                return -ENODEV;
        sim_dev_lock(sim, dev);
        r = driver_probe(sim, drv, dev);
        if (r == 0)
                sim_sleep(sim, SIM_LAT_BIND);
        sim_dev_unlock(sim, dev);
        return r;
}

/* unbind_store() */
int sim_store_unbind(struct sim *sim, struct sim_driver *drv, const char *buf) {
        struct sim_dev *dev = sim_dev_find(sim, buf);

        if (!dev || dev->driver != drv)
                return -ENODEV;
        sim_dev_lock(sim, dev);
        if (dev->driver == drv)
                device_release_driver(sim, dev);
        sim_dev_unlock(sim, dev);
        return 0;
}

/* drivers_probe_store(): success whether or not a driver bound. */
int sim_store_drivers_probe(struct sim *sim, const char *buf) {
        struct sim_dev *dev = sim_dev_find(sim, buf);

        if (!dev)
                return -ENODEV;
        sim_dev_lock(sim, dev);
        if (dev->present && !dev->driver)
                device_attach(sim, dev);
        sim_dev_unlock(sim, dev);
        return 0;
}

static int parse_ids(const char *buf, struct sim_id *id) {
        int n;

        *id = (struct sim_id) { 0, 0, SIM_ANY_ID, SIM_ANY_ID };
        n = sscanf(buf, "%x %x %x %x", &id->vendor, &id->device, &id->subvendor, &id->subdevice);
        return n < 2 ? -EINVAL : 0;
}

/* new_id_store(): EEXIST if the id already matches; then driver_attach()
 * probes every unbound matching device. */
int sim_store_new_id(struct sim *sim, struct sim_driver *drv, const char *buf) {
        _cleanup_free_ struct sim_dev **snap = NULL;
        struct sim_dev pseudo = {};
        struct sim_id id;
        size_t n;
        int r;

        r = parse_ids(buf, &id);
        if (r < 0)
                return r;
        pseudo.vendor = (uint16_t) id.vendor;
        pseudo.device = (uint16_t) id.device;
        pseudo.subvendor = (uint16_t) id.subvendor;
        pseudo.subdevice = (uint16_t) id.subdevice;
        if (ids_match(drv, &pseudo))
                return -EEXIST;
        r = id_add(&drv->dyn_ids, &drv->n_dyn_ids, &id);
        if (r < 0)
                return r;

        /* snapshot: the present list may change while we wait for locks */
        n = sim->n_present;
        snap = calloc(n ?: 1, sizeof(*snap));
        if (!snap)
                return -ENOMEM;
        memcpy(snap, sim->present, n * sizeof(*snap));
        for (size_t i = 0; i < n; i++) {
                struct sim_dev *dev = snap[i];

                if (!driver_match(drv, dev) || dev->driver)
                        continue;
                sim_dev_lock(sim, dev);
                if (driver_probe(sim, drv, dev) == 0)
                        sim_sleep(sim, SIM_LAT_PROBE);
                sim_dev_unlock(sim, dev);
        }
        return 0;
}

/* remove_id_store() */
int sim_store_remove_id(struct sim *sim, struct sim_driver *drv, const char *buf) {
        struct sim_id id;
        int r;

        r = parse_ids(buf, &id);
        if (r < 0)
                return r;
        for (size_t i = 0; i < drv->n_dyn_ids; i++) {
                struct sim_id *d = &drv->dyn_ids[i];

                if (d->vendor == id.vendor && d->device == id.device &&
                    (id.subvendor == SIM_ANY_ID || d->subvendor == id.subvendor) &&
                    (id.subdevice == SIM_ANY_ID || d->subdevice == id.subdevice)) {
                        memmove(d, d + 1, (drv->n_dyn_ids - i - 1) * sizeof(*d));
                        drv->n_dyn_ids--;
                        return 0;
                }
        }
        return -ENODEV;
}

/* rescan_store() on the bus, or dev_rescan_store() -> pci_rescan_bus() of
 * the device's own bus (the tree is flat: no bus below another): removed
 * (not unplugged) devices come back with fresh state; VFs never do (they
 * exist only through SR-IOV). */
static int rescan(struct sim *sim, int domain, int bus, const char *buf) {
        unsigned long long v;

        if (sim_kstrtoull(buf, 0, &v) < 0)
                return -EINVAL;
        if (!v)
                return 0;
        sim_sleep(sim, SIM_LAT_RESCAN);
        for (size_t i = 0; i < sim->n_devs; i++) {
                struct sim_dev *dev = sim->devs[i];

                if (dev->present || dev->unplugged || dev->locked)
                        continue;
                if (bus >= 0 && (dev->domain != domain || dev->bus != bus))
                        continue;
                (void) dev_plug(sim, dev);
        }
        return 0;
}

int sim_store_rescan(struct sim *sim, const struct sim_dev *on_bus, const char *buf) {
        return on_bus ? rescan(sim, on_bus->domain, on_bus->bus, buf) : rescan(sim, -1, -1, buf);
}

int sim_store_bus_rescan(struct sim *sim, unsigned domain, unsigned bus, const char *buf) {
        return rescan(sim, (int) domain, (int) bus, buf);
}

/* drivers_autoprobe_store(): only a leading '0' turns it off; anything
 * else (even "n" or a bare newline) turns it on, and nothing fails. */
int sim_store_bus_autoprobe(struct sim *sim, const char *buf) {
        sim->bus_drivers_autoprobe = buf[0] != '0';
        return 0;
}

int sim_dev_hold(struct sim *sim, struct sim_dev *dev, bool hold) {
        dev->held = hold;
        pthread_cond_broadcast(&sim->cond);
        return 0;
}

int sim_fault_check(struct sim *sim, const char *target, const char *attr, bool on_read) {
        for (size_t i = 0; i < sim->n_faults; i++) {
                struct sim_fault *f = &sim->faults[i];

                if (f->count == 0 || f->on_read != on_read || !streq(f->attr, attr) ||
                    !(streq(f->target, "*") || streq(f->target, target)))
                        continue;
                if (f->count > 0)
                        f->count--;
                if (f->vanish) {
                        struct sim_dev *dev = sim_dev_find(sim, f->vanish);

                        if (dev)
                                (void) sim_dev_remove(sim, dev, false);
                }
                return -f->error;
        }
        return 0;
}

/* ---- config space ---- */

static void put16(uint8_t *b, size_t off, uint16_t v) {
        b[off] = (uint8_t) v;
        b[off + 1] = (uint8_t) (v >> 8);
}

static void put32(uint8_t *b, size_t off, uint32_t v) {
        put16(b, off, (uint16_t) v);
        put16(b, off + 2, (uint16_t) (v >> 16));
}

#define CAP_PCIE 0x40
#define EXT_SRIOV 0x100

size_t sim_dev_config(const struct sim_dev *dev, uint8_t *b) {
        memset(b, 0, SIM_CONFIG_SIZE);
        put16(b, 0x00, dev->vendor);
        put16(b, 0x02, dev->device);
        put16(b, 0x04, dev->enable_cnt > 0 ? 0x0006 : 0x0000);  /* MEM + bus master */
        b[0x08] = dev->revision;
        b[0x09] = (uint8_t) dev->class;
        b[0x0a] = (uint8_t) (dev->class >> 8);
        b[0x0b] = (uint8_t) (dev->class >> 16);
        b[0x0e] = 0x00;                                 /* header type 0 */
        put16(b, 0x2c, dev->subvendor);
        put16(b, 0x2e, dev->subdevice);
        b[0x3d] = dev->pf ? 0 : 1;                      /* VFs have no INTx */
        if (!dev->pcie)
                return 256;

        put16(b, 0x06, 0x0010);                         /* status: capability list */
        b[0x34] = CAP_PCIE;
        b[CAP_PCIE + 0] = 0x10;                         /* PCI Express */
        b[CAP_PCIE + 1] = 0x00;                         /* last capability */
        put16(b, CAP_PCIE + 0x02, 0x0002);              /* v2, endpoint */
        put32(b, CAP_PCIE + 0x04, 0x10008021);          /* DevCap: FLR, RBE, 256B, ext tag */
        put16(b, CAP_PCIE + 0x08, 0x2010);              /* DevCtl: MaxReadReq 512, RlxdOrd */
        put32(b, CAP_PCIE + 0x0c, 0x00400083);          /* LnkCap: 8GT/s x8 */
        put16(b, CAP_PCIE + 0x12, 0x0083);              /* LnkSta: 8GT/s x8 */
        put32(b, CAP_PCIE + 0x24, 0x00000010);          /* DevCap2: completion timeout disable */

        if (!dev->is_pf)
                return SIM_CONFIG_SIZE;
        put32(b, EXT_SRIOV + 0x00, 0x00010010);         /* SR-IOV, v1, last */
        put32(b, EXT_SRIOV + 0x04, 0x00000000);         /* SR-IOV Capabilities */
        put16(b, EXT_SRIOV + 0x08, dev->cfg_vf_enable ? 0x0009 : 0x0000);  /* VFE + VF MSE */
        put16(b, EXT_SRIOV + 0x0a, 0x0000);             /* Status */
        put16(b, EXT_SRIOV + 0x0c, dev->totalvfs);      /* InitialVFs */
        put16(b, EXT_SRIOV + 0x0e, dev->cap_totalvfs ?: dev->totalvfs);      /* TotalVFs */
        put16(b, EXT_SRIOV + 0x10, dev->cfg_numvfs);    /* NumVFs */
        b[EXT_SRIOV + 0x12] = dev->devfn & 7u;          /* Function Dependency Link */
        put16(b, EXT_SRIOV + 0x14, dev->offset);
        put16(b, EXT_SRIOV + 0x16, dev->stride);
        put16(b, EXT_SRIOV + 0x1a, dev->vf_device);
        put32(b, EXT_SRIOV + 0x1c, 0x00000553);         /* Supported Page Sizes */
        put32(b, EXT_SRIOV + 0x20, 0x00000001);         /* System Page Size: 4k */
        return SIM_CONFIG_SIZE;
}

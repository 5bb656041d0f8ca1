/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * The device/driver model of pcisim and the semantics of the kernel's PCI
 * sysfs attributes (drivers/pci/iov.c, pci-sysfs.c, pci-driver.c,
 * drivers/base/bus.c, dd.c).
 *
 * Locking: one model lock (sim->lock) protects everything below. Functions
 * named sim_* expect it held unless stated otherwise. Operations that take
 * time (injected latency) or block (a held VF) drop the model lock while
 * they wait, so other FUSE requests keep being served; they keep the
 * affected device's "device lock" (sim_dev_lock()) like the kernel does, so
 * concurrent operations on the same device serialise. Devices are never
 * freed while the simulator runs (a removed device is only marked absent),
 * so pointers stay valid across such waits.
 */

#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#define SIM_PAGE_SIZE 4096
#define SIM_CONFIG_SIZE 4096
#define SIM_ANY_ID 0xffffffffu
#define SIM_QUEUE_ST 0x80000000u
#define SIM_MAX_NUMNODES 1024           /* MAX_NUMNODES of a CONFIG_NODES_SHIFT=10 kernel */

struct sim_id {
        uint32_t vendor, device, subvendor, subdevice;
};

struct sim_driver {
        char *name;
        struct sim_id *ids;             /* static id table */
        size_t n_ids;
        struct sim_id *dyn_ids;         /* new_id */
        size_t n_dyn_ids;
        bool sriov;                     /* has sriov_configure() */
        bool remove_disables_sriov;     /* its remove() disables SR-IOV (igb, vfio-pci) */
};

enum sim_kind {
        SIM_KIND_NONE,
        SIM_KIND_QDMA,                  /* qdma/qmax when bound */
        SIM_KIND_NVME,                  /* nvme/nvme<N>/ when bound */
        SIM_KIND_NIC,                   /* net/<ifname>/ when bound (PF) */
};

struct sim_dev {
        uint16_t domain;
        uint8_t bus, devfn;
        char name[sizeof("dddd:bb:dd.f")];     /* fixed format, fixed size */
        uint16_t vendor, device, subvendor, subdevice;
        uint32_t class;
        uint8_t revision;
        int numa_node;
        bool pcie;
        enum sim_kind kind;
        char *ifname, *mac;
        /* QDMA: the function's queue count, and its started queues (qid,
         * SIM_QUEUE_ST for a streaming queue). qmax counts against the
         * PF's qbudget, shared by the PF and its VFs. */
        unsigned qmax, qmax_initial;
        unsigned *qactive;
        size_t n_qactive;

        bool present;                   /* visible in the tree */
        bool unplugged;                 /* gone for good: rescan won't find it */
        bool locked;                    /* device_lock() held by some thread */
        bool held;                      /* "opened by QEMU": blocks removal */
        bool unlinked;                  /* VF: virtfn/physfn links gone, removal under way */
        bool dangling;                  /* VF: removed, its virtfn link left naming it */
        bool unbinding;                 /* driver links gone, the driver's remove() under way */
        struct sim_driver *driver;
        char *driver_override;
        unsigned group;
        unsigned enable_cnt;

        /* PF */
        bool is_pf;
        uint16_t totalvfs, numvfs, offset, stride, vf_device;
        uint16_t cap_totalvfs;          /* TotalVFs in config space (firmware's) */
        unsigned vf_total_msix;         /* sriov_vf_total_msix, 0: not shown */
        bool drivers_autoprobe;
        bool shared_group;              /* PF and VFs in one IOMMU group */
        int partial;                    /* next enable creates this many VFs, -1: off */
        bool enabling;                  /* sriov_enable() is adding VFs, numvfs not set yet */
        uint16_t next_offset, next_stride; /* from the next enable on (ctl layout), 0: as is */
        int drop_vf;                    /* next enable loses this VF, -1: off */
        bool drop_dangling;             /* ... and leaves its virtfn link */
        bool cfg_vf_enable;             /* SR-IOV Control VF Enable + VF MSE */
        uint16_t cfg_numvfs;            /* SR-IOV NumVFs register */
        unsigned vf_qmax;               /* what a VF driver asks for at probe */
        unsigned qbudget;               /* the device's queues, PF and VFs */
        struct sim_dev *vfs;            /* vf_slots slots, reused */
        uint16_t vf_slots;              /* totalvfs at registration: the most a reprogram gives */

        /* VF */
        struct sim_dev *pf;
        unsigned vf_index;
};

/* The attribute name of a fault on the lookup of bus/pci/devices/<BDF>
 * ("hide"): no attribute has it. */
#define SIM_FAULT_BUS_LINK "(bus link)"

struct sim_fault {
        char *target;                   /* BDF, driver name, "pci" or "*" */
        char *attr;
        int error;                      /* positive errno */
        int count;                      /* remaining, < 0: unlimited */
        char *vanish;                   /* BDF removed when it fires, or NULL */
        bool on_read;                   /* fires on reads (fail-read, vanish-read), else writes */
};

enum sim_latency {
        SIM_LAT_VF_ENABLE,              /* per VF created */
        SIM_LAT_VF_DISABLE,             /* per VF destroyed */
        SIM_LAT_SRIOV_ENABLE,           /* once per enable */
        SIM_LAT_SRIOV_DISABLE,          /* once per disable (the kernel's ssleep(1)) */
        SIM_LAT_BIND,
        SIM_LAT_UNBIND,
        SIM_LAT_PROBE,
        SIM_LAT_REMOVE,
        SIM_LAT_RESCAN,
        _SIM_LAT_MAX,
};

enum sim_stat {
        SIM_STAT_GETATTR,
        SIM_STAT_READDIR,
        SIM_STAT_OPEN,
        SIM_STAT_READ,
        SIM_STAT_WRITE,
        SIM_STAT_READLINK,
        SIM_STAT_OTHER,
        _SIM_STAT_MAX,
};

struct sim {
        pthread_mutex_t lock;
        pthread_cond_t cond;            /* any device lock, hold or state change */

        struct sim_dev **devs;          /* PFs and plain devices, incl. absent ones */
        size_t n_devs;
        struct sim_dev **present;       /* present devices, sorted by address */
        size_t n_present;
        struct sim_driver **drivers;    /* registration order = probe order */
        size_t n_drivers;
        unsigned *group_refs;           /* members per IOMMU group number */
        size_t n_groups;

        bool bus_drivers_autoprobe;
        bool vfio_enable_sriov;         /* vfio-pci's enable_sriov module parameter */
        unsigned numa_nodes;            /* nodes 0..numa_nodes-1 are online */
        uint64_t kernel_breaks;         /* writes the real kernel fails with a warning or BUG */
        struct sim_fault *faults;
        size_t n_faults;
        unsigned long latency_us[_SIM_LAT_MAX];
        uint64_t stats[_SIM_STAT_MAX];  /* updated with atomics, no lock */
};

/* model.c */
int sim_new(struct sim **ret);
void sim_free(struct sim *sim);
const char *sim_latency_to_string(enum sim_latency l);
int sim_latency_from_string(const char *s);
const char *sim_stat_to_string(enum sim_stat s);

struct sim_driver *sim_driver_get(struct sim *sim, const char *name);
int sim_driver_add(struct sim *sim, const char *name, bool sriov, struct sim_driver **ret);
int sim_driver_add_id(struct sim_driver *drv, uint32_t vendor, uint32_t device);

/* Takes ownership of dev (allocated with calloc) and makes it present. */
int sim_dev_register(struct sim *sim, struct sim_dev *dev);
struct sim_dev *sim_dev_find(struct sim *sim, const char *name);
void sim_dev_set_name(struct sim_dev *dev);
void sim_dev_lock(struct sim *sim, struct sim_dev *dev);
void sim_dev_unlock(struct sim *sim, struct sim_dev *dev);
bool sim_group_vfio(struct sim *sim, unsigned group);

/* Attribute semantics: buf is NUL-terminated, len bytes (<= SIM_PAGE_SIZE).
 * admin: the writer has CAP_SYS_ADMIN (the kernel's capable() check).
 * Return 0 or -errno. */
int sim_store_numvfs(struct sim *sim, struct sim_dev *pf, const char *buf);
int sim_show_numvfs(struct sim *sim, struct sim_dev *pf, uint16_t *ret);
int sim_store_autoprobe(struct sim *sim, struct sim_dev *pf, const char *buf);
int sim_store_driver_override(struct sim *sim, struct sim_dev *dev, const char *buf, size_t len);
int sim_store_remove(struct sim *sim, struct sim_dev *dev, const char *buf);
int sim_store_enable(struct sim *sim, struct sim_dev *dev, const char *buf, bool admin);
int sim_store_numa_node(struct sim *sim, struct sim_dev *dev, const char *buf, bool admin);
int sim_store_vfio_enable_sriov(struct sim *sim, const char *buf);
int sim_store_reset(struct sim *sim, struct sim_dev *dev, const char *buf);
int sim_store_bind(struct sim *sim, struct sim_driver *drv, const char *buf);
int sim_store_unbind(struct sim *sim, struct sim_driver *drv, const char *buf);
int sim_store_new_id(struct sim *sim, struct sim_driver *drv, const char *buf);
int sim_store_remove_id(struct sim *sim, struct sim_driver *drv, const char *buf);
int sim_store_drivers_probe(struct sim *sim, const char *buf);
/* on_bus: a device whose bus alone is rescanned (its rescan), or NULL. */
int sim_store_rescan(struct sim *sim, const struct sim_dev *on_bus, const char *buf);
/* class/pci_bus/<dddd:bb>/rescan: rescan_store() of one bus, the one
 * below a bridge (pci_rescan_bus_bridge_resize() when it is empty). */
int sim_store_bus_rescan(struct sim *sim, unsigned domain, unsigned bus, const char *buf);
int sim_store_bus_autoprobe(struct sim *sim, const char *buf);
int sim_store_qmax(struct sim *sim, struct sim_dev *dev, const char *buf);
/* QDMA: sets qmax as a driver would (a VF's over the mailbox, asked by
 * the guest's qdma-vf), and starts or stops one queue (ctl). */
int sim_qdma_set_qmax(struct sim *sim, struct sim_dev *dev, unsigned long long v);
int sim_qdma_queue(struct sim *sim, struct sim_dev *dev, unsigned qid, bool st, bool start);
/* The started queues by the driver's names, one a line; malloc'ed. */
int sim_qdma_format_queues(const struct sim_dev *dev, char **ret, size_t *ret_len);

/* Hot-unplug (ctl "remove"/"unplug"), hold/release. */
int sim_dev_remove(struct sim *sim, struct sim_dev *dev, bool unplug);
int sim_dev_hold(struct sim *sim, struct sim_dev *dev, bool hold);

/* Fills SIM_CONFIG_SIZE bytes; returns the config size the kernel shows. */
size_t sim_dev_config(const struct sim_dev *dev, uint8_t *buf);

/* Fault injection: returns -errno when a fault fires for target/attr. */
int sim_fault_check(struct sim *sim, const char *target, const char *attr, bool on_read);

/* Parsers with the kernel's semantics. */
int sim_kstrtoull(const char *s, unsigned base, unsigned long long *ret);
int sim_kstrtobool(const char *s, bool *ret);
int sim_kstrtoint(const char *s, unsigned base, int *ret);
bool sim_sysfs_streq(const char *a, const char *b);

/* scenario.c */
int sim_scenario_load(struct sim *sim, const char *path);
/* Adds one device described by a JSON object given as text (ctl "add-pf"). */
int sim_scenario_add_device_json(struct sim *sim, const char *text);

/* control.c */
int sim_control(struct sim *sim, const char *cmd);
int sim_stats_format(struct sim *sim, char **ret);
int sim_latency_profile(struct sim *sim, const char *name);

/* fs.c */
int sim_fs_run(struct sim *sim, const char *mountpoint, bool foreground, int argc, char **argv);

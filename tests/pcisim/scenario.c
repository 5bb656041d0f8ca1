/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scenario files (JSON, parsed with json-c). Schema:
 *
 * {
 *   "numa_nodes": 2,                           online nodes 0..N-1; default:
 *                                              enough for every numa_node below
 *   "drivers": [                               optional, probe order
 *     { "name": "igb", "ids": ["8086:1521"], "sriov": true,
 *       "remove_disables_sriov": true }        its remove() disables SR-IOV
 *   ],                                         (default: the VFs stay, as nvme)
 *   "devices": [
 *     {
 *       "address": "0000:03:00.0",             required ("03:00.0" = domain 0)
 *       "vendor": "0x8086", "device": "0x1521", required
 *       "class": "0x020000", "revision": 1,    default 0xff0000, 0
 *       "subsystem_vendor": .., "subsystem_device": ..   default vendor, 0
 *       "numa_node": 0,                        default -1
 *       "pcie": true,                          false: legacy 256-byte config
 *       "driver": "igb" | null,                adds this id to that driver
 *       "totalvfs": 7,                         present: the device is a PF
 *       "cap_totalvfs": 8,                     TotalVFs in config space when
 *                                              the driver's sriov_totalvfs is lower
 *       "vf_total_msix": 64,                   sriov_vf_total_msix (else absent)
 *       "offset": 128, "stride": 4,            First VF Offset, VF Stride
 *       "vf_device": "0x1520",                 default: device
 *       "vf_driver": "igbvf",                  adds vf_device to that driver
 *       "iommu": "per-vf" | "shared",          shared: PF and VFs in one group
 *       "kind": "nic" | "nvme" | "qdma",       class-specific extras:
 *       "ifname": "enp3s0f0", "mac": "..",     nic: net/<ifname>/ on the PF
 *       "qmax": 512, "vf_qmax": 8,             qdma: qdma/qmax of the PF, and what a
 *                                              VF's driver asks for at probe
 *       "qdma_budget": 2048                    qdma: queues of the PF and its VFs
 *     }
 *   ]
 * }
 *
 * Numbers may be JSON integers or strings in C notation ("0x8086", "128").
 * A driver named by "driver" is an SR-IOV (PF) driver when the device is a
 * PF. "vfio-pci" always exists, with an empty id table, after the others;
 * it has sriov_configure() (refusing unless its enable_sriov parameter is
 * set) and disables SR-IOV when it lets a PF go.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "macro.h"
#include "model.h"

static void json_putp(json_object **o) {
        if (*o)
                json_object_put(*o);
}
#define _cleanup_json_ _cleanup_(json_putp)

static int get_num(json_object *obj, const char *key, unsigned long long max,
                   unsigned long long def, unsigned long long *ret) {
        json_object *v;
        unsigned long long n;

        if (!json_object_object_get_ex(obj, key, &v) || json_object_is_type(v, json_type_null)) {
                *ret = def;
                return 0;
        }
        if (json_object_is_type(v, json_type_int)) {
                int64_t i = json_object_get_int64(v);
                if (i < 0)
                        return -ERANGE;
                n = (unsigned long long) i;
        } else if (json_object_is_type(v, json_type_string)) {
                if (sim_kstrtoull(json_object_get_string(v), 0, &n) < 0)
                        return -EINVAL;
        } else
                return -EINVAL;
        if (n > max)
                return -ERANGE;
        *ret = n;
        return 0;
}

/* NULL when absent or JSON null. */
static const char *get_str(json_object *obj, const char *key) {
        json_object *v;

        if (!json_object_object_get_ex(obj, key, &v) || !json_object_is_type(v, json_type_string))
                return NULL;
        return json_object_get_string(v);
}

static int parse_address(const char *s, struct sim_dev *dev) {
        unsigned d = 0, b, s_, f;
        int n = -1;

        if (sscanf(s, "%x:%x:%x.%u%n", &d, &b, &s_, &f, &n) != 4 || (size_t) n != strlen(s)) {
                d = 0;
                n = -1;
                if (sscanf(s, "%x:%x.%u%n", &b, &s_, &f, &n) != 3 || (size_t) n != strlen(s))
                        return -EINVAL;
        }
        if (d > 0xffff || b > 0xff || s_ > 0x1f || f > 7)
                return -EINVAL;
        dev->domain = (uint16_t) d;
        dev->bus = (uint8_t) b;
        dev->devfn = (uint8_t) (s_ << 3 | f);
        return 0;
}

static int add_driver(struct sim *sim, json_object *o) {
        struct sim_driver *drv;
        json_object *ids, *sriov, *disables;
        const char *name = get_str(o, "name");
        int r;

        if (!name)
                return -EINVAL;
        r = sim_driver_add(sim, name, json_object_object_get_ex(o, "sriov", &sriov) &&
                                      json_object_get_boolean(sriov), &drv);
        if (r < 0)
                return r;
        if (json_object_object_get_ex(o, "remove_disables_sriov", &disables))
                drv->remove_disables_sriov = json_object_get_boolean(disables);
        if (!json_object_object_get_ex(o, "ids", &ids))
                return 0;
        if (!json_object_is_type(ids, json_type_array))
                return -EINVAL;
        for (size_t i = 0; i < json_object_array_length(ids); i++) {
                const char *s = json_object_get_string(json_object_array_get_idx(ids, i));
                unsigned v, d;
                int n = -1;

                if (!s || sscanf(s, "%x:%x%n", &v, &d, &n) != 2 || (size_t) n != strlen(s))
                        return -EINVAL;
                r = sim_driver_add_id(drv, v, d);
                if (r < 0)
                        return r;
        }
        return 0;
}

/* Registers the drivers a device entry names, before any device probes. */
static int add_device_drivers(struct sim *sim, json_object *o) {
        unsigned long long vendor, device, vf_device, totalvfs;
        struct sim_driver *drv;
        const char *name;
        int r;

        if (get_num(o, "vendor", 0xffff, 0x10000, &vendor) < 0 || vendor > 0xffff ||
            get_num(o, "device", 0xffff, 0x10000, &device) < 0 || device > 0xffff ||
            get_num(o, "totalvfs", 0xffff, 0, &totalvfs) < 0 ||
            get_num(o, "vf_device", 0xffff, device, &vf_device) < 0)
                return -EINVAL;

        name = get_str(o, "driver");
        if (name) {
                r = sim_driver_add(sim, name, totalvfs > 0, &drv);
                if (r < 0)
                        return r;
                r = sim_driver_add_id(drv, (uint32_t) vendor, (uint32_t) device);
                if (r < 0)
                        return r;
        }
        name = get_str(o, "vf_driver");
        if (name) {
                r = sim_driver_add(sim, name, false, &drv);
                if (r < 0)
                        return r;
                r = sim_driver_add_id(drv, (uint32_t) vendor, (uint32_t) vf_device);
                if (r < 0)
                        return r;
        }
        return 0;
}

static int add_device(struct sim *sim, json_object *o) {
        unsigned long long v[16];
        struct sim_dev *dev;
        const char *s;
        json_object *pcie;
        int r;

        dev = calloc(1, sizeof(*dev));
        if (!dev)
                return -ENOMEM;
        s = get_str(o, "address");
        if (!s || parse_address(s, dev) < 0)
                goto einval;
        if (get_num(o, "vendor", 0xffff, 0x10000, &v[0]) < 0 || v[0] > 0xffff ||
            get_num(o, "device", 0xffff, 0x10000, &v[1]) < 0 || v[1] > 0xffff ||
            get_num(o, "class", 0xffffff, 0xff0000, &v[2]) < 0 ||
            get_num(o, "revision", 0xff, 0, &v[3]) < 0 ||
            get_num(o, "subsystem_vendor", 0xffff, v[0], &v[4]) < 0 ||
            get_num(o, "subsystem_device", 0xffff, 0, &v[5]) < 0 ||
            get_num(o, "totalvfs", 0xffff, 0, &v[6]) < 0 ||
            get_num(o, "offset", 0xffff, 1, &v[7]) < 0 ||
            get_num(o, "stride", 0xffff, 1, &v[8]) < 0 ||
            get_num(o, "vf_device", 0xffff, v[1], &v[9]) < 0 ||
            get_num(o, "qmax", 0xffffffff, 512, &v[10]) < 0 ||
            get_num(o, "vf_qmax", 0xffffffff, 8, &v[11]) < 0 ||
            get_num(o, "qdma_budget", 0xffffffff, 2048, &v[12]) < 0 ||
            get_num(o, "cap_totalvfs", 0xffff, 0, &v[13]) < 0 ||
            get_num(o, "vf_total_msix", 0xffffffff, 0, &v[14]) < 0)
                goto einval;
        dev->vendor = (uint16_t) v[0];
        dev->device = (uint16_t) v[1];
        dev->class = (uint32_t) v[2];
        dev->revision = (uint8_t) v[3];
        dev->subvendor = (uint16_t) v[4];
        dev->subdevice = (uint16_t) v[5];
        dev->is_pf = json_object_object_get_ex(o, "totalvfs", NULL);
        dev->totalvfs = (uint16_t) v[6];
        dev->cap_totalvfs = (uint16_t) v[13];
        dev->vf_total_msix = (unsigned) v[14];
        dev->offset = (uint16_t) v[7];
        dev->stride = (uint16_t) v[8];
        dev->vf_device = (uint16_t) v[9];
        dev->qmax = dev->qmax_initial = (unsigned) v[10];
        dev->vf_qmax = (unsigned) v[11];
        dev->qbudget = (unsigned) v[12];

        {
                json_object *numa;
                dev->numa_node = json_object_object_get_ex(o, "numa_node", &numa) ?
                                 json_object_get_int(numa) : -1;
                if (dev->numa_node < -1 || dev->numa_node >= SIM_MAX_NUMNODES)
                        goto einval;
                /* a device sits on an online node */
                if (dev->numa_node >= (int) sim->numa_nodes)
                        sim->numa_nodes = (unsigned) dev->numa_node + 1;
        }
        dev->pcie = !json_object_object_get_ex(o, "pcie", &pcie) || json_object_get_boolean(pcie);
        if (!dev->pcie && dev->is_pf)
                goto einval;            /* SR-IOV lives in extended config space */

        s = get_str(o, "iommu");
        if (s && streq(s, "shared"))
                dev->shared_group = true;
        else if (s && !streq(s, "per-vf"))
                goto einval;

        s = get_str(o, "kind");
        if (!s)
                dev->kind = SIM_KIND_NONE;
        else if (streq(s, "qdma"))
                dev->kind = SIM_KIND_QDMA;
        else if (streq(s, "nvme"))
                dev->kind = SIM_KIND_NVME;
        else if (streq(s, "nic"))
                dev->kind = SIM_KIND_NIC;
        else
                goto einval;
        s = get_str(o, "ifname");
        if (s) {
                if (!*s || strchr(s, '/'))
                        goto einval;
                dev->ifname = strdup(s);
        }
        s = get_str(o, "mac");
        dev->mac = strdup(s ?: "02:00:00:00:00:01");
        if ((get_str(o, "ifname") && !dev->ifname) || !dev->mac) {
                r = -ENOMEM;
                goto fail;
        }

        r = add_device_drivers(sim, o);
        if (r < 0)
                goto fail;
        r = sim_dev_register(sim, dev);
        if (r < 0 && !dev->unplugged)
                goto fail;              /* not registered: still ours */
        return r;
einval:
        r = -EINVAL;
fail:
        free(dev->ifname);
        free(dev->mac);
        free(dev);
        return r;
}

int sim_scenario_load(struct sim *sim, const char *path) {
        _cleanup_json_ json_object *root = NULL;
        json_object *drivers, *devices;
        struct sim_driver *vfio;
        unsigned long long nodes;
        int r;

        root = json_object_from_file(path);
        if (!root || !json_object_is_type(root, json_type_object)) {
                fprintf(stderr, "pcisim: cannot parse scenario '%s': %s\n", path, json_util_get_last_err() ?: "not an object");
                return -EINVAL;
        }
        if (get_num(root, "numa_nodes", SIM_MAX_NUMNODES, 1, &nodes) < 0 || nodes == 0)
                return -EINVAL;
        sim->numa_nodes = (unsigned) nodes;
        if (json_object_object_get_ex(root, "drivers", &drivers)) {
                if (!json_object_is_type(drivers, json_type_array))
                        return -EINVAL;
                for (size_t i = 0; i < json_object_array_length(drivers); i++) {
                        r = add_driver(sim, json_object_array_get_idx(drivers, i));
                        if (r < 0) {
                                fprintf(stderr, "pcisim: '%s': bad driver #%zu\n", path, i);
                                return r;
                        }
                }
        }
        if (!json_object_object_get_ex(root, "devices", &devices) ||
            !json_object_is_type(devices, json_type_array))
                return -EINVAL;
        /* All drivers exist before the first device probes, vfio-pci last. */
        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                r = add_device_drivers(sim, json_object_array_get_idx(devices, i));
                if (r < 0) {
                        fprintf(stderr, "pcisim: '%s': bad device #%zu\n", path, i);
                        return r;
                }
        }
        r = sim_driver_add(sim, "vfio-pci", true, &vfio);
        if (r < 0)
                return r;
        vfio->remove_disables_sriov = true;     /* vfio_pci_core_unregister_device() */
        for (size_t i = 0; i < json_object_array_length(devices); i++) {
                r = add_device(sim, json_object_array_get_idx(devices, i));
                if (r < 0) {
                        fprintf(stderr, "pcisim: '%s': bad device #%zu: %s\n", path, i, strerror(-r));
                        return r;
                }
        }
        return 0;
}

int sim_scenario_add_device_json(struct sim *sim, const char *text) {
        _cleanup_json_ json_object *o = NULL;

        o = json_tokener_parse(text);
        if (!o || !json_object_is_type(o, json_type_object))
                return -EINVAL;
        return add_device(sim, o);
}

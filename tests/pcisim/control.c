/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The control channel, MOUNTPOINT/.pcisim/ctl: one command per write(2),
 * words separated by spaces; a bad command fails the write with EINVAL.
 *
 *   fail <BDF|driver|pci|*> <attribute> <errno> [count|always]
 *                          next write(s) to that attribute fail with errno
 *                          (name like EIO or a number); count defaults to 1.
 *                          Targets: a device for device attributes, a driver
 *                          name for bind/unbind/new_id/remove_id, "pci" for
 *                          drivers_probe/rescan/drivers_autoprobe.
 *   vanish <BDF> <target> <attribute>
 *                          the next write to that attribute (targets as for
 *                          fail) finds BDF surprise-removed an instant
 *                          before it: BDF goes as with "remove" and the
 *                          write fails ENODEV. Makes "the device vanished
 *                          between two steps" a certainty, not a race.
 *   fail-read <BDF|*> <attribute> <errno> [count|always]
 *   vanish-read <BDF> <BDF|*> <attribute>
 *                          the same for reads of a device attribute: a
 *                          show() that fails, or a device removed while a
 *                          reader walks the tree (between listing it and
 *                          reading its attributes).
 *   hide <BDF> [count|always]
 *                          the next count FUSE lookups of bus/pci/devices/<BDF>
 *                          answer ENOENT while the device stays: its
 *                          address seen free for an instant, as between
 *                          a VF's removal and its re-creation when the
 *                          count goes through 0 and back
 *   clear-faults
 *   partial <PF> <n>       the next VF enable creates at most n VFs and
 *                          still succeeds; sriov_numvfs then reads n
 *   drop-vf <PF> <i> [dangling]
 *                          the next VF enable loses VF i once it is added,
 *                          as a surprise removal of that VF alone: its
 *                          virtfn<i> link goes with it, or, with
 *                          "dangling", stays and names a device that is no
 *                          more; the other VFs stay, sriov_numvfs reads the
 *                          count written
 *   layout <PF> offset=N stride=N
 *                          from the next VF enable on, the PF's VFs are at
 *                          that First VF Offset and VF Stride (a device
 *                          whose offset depends on NumVFs: the kernel reads
 *                          both again when NumVFs is written); ERANGE for a
 *                          routing ID past the bus range
 *   hold <BDF>             the device is "open" (vfio-pci opened by QEMU):
 *                          removing it (disabling its PF's VFs, removing or
 *                          unbinding it) blocks until ...
 *   release <BDF>
 *   latency <op> <usec>    op: vf_enable vf_disable sriov_enable
 *                          sriov_disable bind unbind probe remove rescan
 *   latency-profile <name> "svff-paper" or "none"
 *   add-pf <json object>   hot-add a device (scenario device schema)
 *   remove <BDF>           like writing 1 to its remove attribute (a bus
 *                          rescan brings it back; a PF's VFs stay behind)
 *   unplug <BDF>           surprise removal: rescan does not bring it back;
 *                          a PF's VFs go with it
 *   reset-stats
 *   qmax <BDF> <n>         a QDMA function's driver sets its qmax, with the
 *                          rules of the sysfs store (EBUSY while a queue is
 *                          started, ENOSPC past the device's budget): for a
 *                          VF on vfio-pci, the guest's qdma-vf asking over
 *                          the mailbox
 *   queue-start <BDF> <qid> [MM|ST]   a queue of that function is started
 *   queue-stop <BDF> <qid>            (EINVAL: qid >= qmax)
 *   reprogram <BDF> <device> <totalvfs> [driver] [offset=N] [stride=N]
 *                          a flash hook wrote a new image to a removed PF:
 *                          the next rescan brings it back with that device
 *                          id and sriov_totalvfs (at most the scenario's),
 *                          and driver (default: none) takes the new id;
 *                          with offset or stride, its VFs have another
 *                          First VF Offset or VF Stride (ERANGE: a routing
 *                          ID past the bus range).
 *                          EBUSY while the PF is on the bus: a real image
 *                          takes effect only through a remove and rescan.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model.h"

static const struct {
        const char *name;
        int error;
} errno_names[] = {
        { "EPERM", EPERM }, { "ENOENT", ENOENT }, { "EINTR", EINTR }, { "EIO", EIO },
        { "ENXIO", ENXIO }, { "E2BIG", E2BIG }, { "EAGAIN", EAGAIN }, { "ENOMEM", ENOMEM },
        { "EACCES", EACCES }, { "EBUSY", EBUSY }, { "EEXIST", EEXIST }, { "ENODEV", ENODEV },
        { "EINVAL", EINVAL }, { "ENOSPC", ENOSPC }, { "ENOTTY", ENOTTY }, { "ERANGE", ERANGE },
        { "ENOSYS", ENOSYS }, { "EOPNOTSUPP", EOPNOTSUPP }, { "ETIMEDOUT", ETIMEDOUT },
        { "ENOTSUP", ENOTSUP }, { "ESHUTDOWN", ESHUTDOWN }, { "EPROTO", EPROTO },
};

static int parse_errno(const char *s) {
        unsigned long long n;

        for (size_t i = 0; i < ELEMENTSOF(errno_names); i++)
                if (streq(errno_names[i].name, s))
                        return errno_names[i].error;
        if (sim_kstrtoull(s, 10, &n) < 0 || n == 0 || n > 4095)
                return -EINVAL;
        return (int) n;
}

int sim_latency_profile(struct sim *sim, const char *name) {
        static const unsigned long paper[_SIM_LAT_MAX] = {
                /* SVFF paper, 1 VF: rescan 138 ms; changing the VF count
                 * 1256 ms, split as the kernel spends it: disabling sleeps
                 * 1 s in sriov_disable(), enabling waits 100 ms after VF
                 * Enable, the rest is per-VF device setup and teardown. */
                [SIM_LAT_SRIOV_DISABLE] = 1000000,
                [SIM_LAT_VF_DISABLE] = 20000,
                [SIM_LAT_SRIOV_ENABLE] = 100000,
                [SIM_LAT_VF_ENABLE] = 136000,
                [SIM_LAT_RESCAN] = 138000,
        };

        if (streq(name, "svff-paper"))
                memcpy(sim->latency_us, paper, sizeof(paper));
        else if (streq(name, "none"))
                memset(sim->latency_us, 0, sizeof(sim->latency_us));
        else
                return -EINVAL;
        return 0;
}

static int add_fault(struct sim *sim, char **w, size_t n) {
        struct sim_fault f = {}, *a;
        unsigned long long c = 1;
        bool vanish = streq(w[0], "vanish") || streq(w[0], "vanish-read");
        bool on_read = streq(w[0], "fail-read") || streq(w[0], "vanish-read");

        if (n < 4 || n > (vanish ? 4 : 5))
                return -EINVAL;
        if (vanish) {
                /* vanish <BDF> <target> <attr>: shift to fail's word order */
                if (!sim_dev_find(sim, w[1]))
                        return -ENODEV;
                f.vanish = strdup(w[1]);
                if (!f.vanish)
                        return -ENOMEM;
                w++;
                f.error = ENODEV;
        } else
                f.error = parse_errno(w[3]);
        if (f.error < 0)
                return -EINVAL;
        if (!vanish && n == 5) {
                if (streq(w[4], "always"))
                        c = (unsigned long long) -1;
                else if (sim_kstrtoull(w[4], 10, &c) < 0 || c == 0 || c > INT32_MAX)
                        return -EINVAL;
        }
        f.count = c == (unsigned long long) -1 ? -1 : (int) c;
        f.on_read = on_read;
        a = reallocarray(sim->faults, sim->n_faults + 1, sizeof(*a));
        if (!a) {
                free(f.vanish);
                return -ENOMEM;
        }
        sim->faults = a;
        f.target = strdup(w[1]);
        f.attr = strdup(w[2]);
        if (!f.target || !f.attr) {
                free(f.target);
                free(f.attr);
                free(f.vanish);
                return -ENOMEM;
        }
        sim->faults[sim->n_faults++] = f;
        return 0;
}

static void clear_faults(struct sim *sim) {
        for (size_t i = 0; i < sim->n_faults; i++) {
                free(sim->faults[i].target);
                free(sim->faults[i].attr);
                free(sim->faults[i].vanish);
        }
        free(sim->faults);
        sim->faults = NULL;
        sim->n_faults = 0;
}

int sim_control(struct sim *sim, const char *cmd) {
        _cleanup_free_ char *copy = NULL;
        char *w[8], *save = NULL, *t;
        size_t n = 0;
        struct sim_dev *dev;
        unsigned long long v;

        /* add-pf takes the rest of the line verbatim: JSON has spaces */
        if (strncmp(cmd, "add-pf ", 7) == 0)
                return sim_scenario_add_device_json(sim, cmd + 7);

        copy = strdup(cmd);
        if (!copy)
                return -ENOMEM;
        for (t = strtok_r(copy, " \t\n", &save); t; t = strtok_r(NULL, " \t\n", &save)) {
                if (n == ELEMENTSOF(w))
                        return -EINVAL;
                w[n++] = t;
        }
        if (n == 0)
                return -EINVAL;

        if (streq(w[0], "fail") || streq(w[0], "vanish") || streq(w[0], "fail-read") ||
            streq(w[0], "vanish-read"))
                return add_fault(sim, w, n);
        if (streq(w[0], "hide") && (n == 2 || n == 3)) {
                /* fail-read's word order, on the pseudo-attribute the
                 * bus link's lookup checks */
                char *f[] = { (char *) "fail-read", w[1], (char *) SIM_FAULT_BUS_LINK, (char *) "ENOENT",
                              n == 3 ? w[2] : NULL };

                if (!sim_dev_find(sim, w[1]))
                        return -ENODEV;
                return add_fault(sim, f, n + 2);
        }
        if (streq(w[0], "clear-faults") && n == 1) {
                clear_faults(sim);
                return 0;
        }
        if (streq(w[0], "reset-stats") && n == 1) {
                for (size_t i = 0; i < _SIM_STAT_MAX; i++)
                        __atomic_store_n(&sim->stats[i], 0, __ATOMIC_RELAXED);
                return 0;
        }
        if (streq(w[0], "latency") && n == 3) {
                int op = sim_latency_from_string(w[1]);
                if (op < 0 || sim_kstrtoull(w[2], 10, &v) < 0 || v > 600ULL * 1000000)
                        return -EINVAL;
                sim->latency_us[op] = (unsigned long) v;
                return 0;
        }
        if (streq(w[0], "latency-profile") && n == 2)
                return sim_latency_profile(sim, w[1]);

        if (n < 2)
                return -EINVAL;
        dev = sim_dev_find(sim, w[1]);
        if (streq(w[0], "partial") && n == 3) {
                if (!dev || !dev->is_pf)
                        return -ENODEV;
                if (sim_kstrtoull(w[2], 10, &v) < 0 || v > dev->totalvfs)
                        return -EINVAL;
                dev->partial = (int) v;
                return 0;
        }
        if (streq(w[0], "drop-vf") && (n == 3 || (n == 4 && streq(w[3], "dangling")))) {
                if (!dev || !dev->is_pf)
                        return -ENODEV;
                if (sim_kstrtoull(w[2], 10, &v) < 0 || v >= dev->totalvfs)
                        return -EINVAL;
                dev->drop_vf = (int) v;
                dev->drop_dangling = n == 4;
                return 0;
        }
        if (streq(w[0], "layout") && n == 4 && strncmp(w[2], "offset=", 7) == 0 &&
            strncmp(w[3], "stride=", 7) == 0) {
                unsigned long long offset, stride;
                uint32_t last;

                if (!dev || !dev->is_pf)
                        return -ENODEV;
                if (sim_kstrtoull(w[2] + 7, 0, &offset) < 0 || offset > 0xffff ||
                    sim_kstrtoull(w[3] + 7, 0, &stride) < 0 || stride > 0xffff)
                        return -EINVAL;
                last = ((uint32_t) dev->bus << 8 | dev->devfn) + (uint32_t) offset;
                if (dev->totalvfs > 0)
                        last += (uint32_t) (dev->totalvfs - 1) * (uint32_t) stride;
                if (last > 0xffff || offset == 0 || (dev->totalvfs > 1 && stride == 0))
                        return -ERANGE;
                dev->next_offset = (uint16_t) offset;
                dev->next_stride = (uint16_t) stride;
                return 0;
        }
        if (streq(w[0], "qmax") && n == 3) {
                if (!dev)
                        return -ENODEV;
                if (sim_kstrtoull(w[2], 10, &v) < 0)
                        return -EINVAL;
                return sim_qdma_set_qmax(sim, dev, v);
        }
        if ((streq(w[0], "queue-start") && (n == 3 || n == 4)) ||
            (streq(w[0], "queue-stop") && n == 3)) {
                bool st = n == 4 && streq(w[3], "ST");

                if (n == 4 && !st && !streq(w[3], "MM"))
                        return -EINVAL;
                if (!dev)
                        return -ENODEV;
                if (sim_kstrtoull(w[2], 10, &v) < 0 || v > UINT32_MAX)
                        return -EINVAL;
                return sim_qdma_queue(sim, dev, (unsigned) v, st, streq(w[0], "queue-start"));
        }
        if (streq(w[0], "reprogram") && n >= 4 && n <= 7) {
                unsigned long long device, total, offset, stride;
                struct sim_driver *drv = NULL;
                uint32_t last;

                if (dev)
                        return -EBUSY;  /* on the bus */
                /* A removed device is in no lookup of present ones. */
                for (size_t i = 0; i < sim->n_devs && !dev; i++)
                        if (!sim->devs[i]->present && !sim->devs[i]->unplugged &&
                            sim_sysfs_streq(sim->devs[i]->name, w[1]))
                                dev = sim->devs[i];
                if (!dev || !dev->is_pf)
                        return -ENODEV;
                if (sim_kstrtoull(w[2], 16, &device) < 0 || device > 0xffff ||
                    sim_kstrtoull(w[3], 10, &total) < 0 || total > dev->vf_slots)
                        return -EINVAL;
                offset = dev->offset;
                stride = dev->stride;
                for (size_t k = 4; k < n; k++) {
                        if (strncmp(w[k], "offset=", 7) == 0) {
                                if (sim_kstrtoull(w[k] + 7, 0, &offset) < 0 || offset > 0xffff)
                                        return -EINVAL;
                        } else if (strncmp(w[k], "stride=", 7) == 0) {
                                if (sim_kstrtoull(w[k] + 7, 0, &stride) < 0 || stride > 0xffff)
                                        return -EINVAL;
                        } else if (drv || !(drv = sim_driver_get(sim, w[k])))
                                return drv ? -EINVAL : -ENOENT;
                }
                /* every VF's routing ID must fit, as at registration */
                last = (uint32_t) dev->bus << 8 | dev->devfn;
                if (total > 0)
                        last += (uint32_t) offset + (uint32_t) (total - 1) * (uint32_t) stride;
                if (last > 0xffff || (total > 0 && offset == 0) || (total > 1 && stride == 0))
                        return -ERANGE;
                if (drv) {
                        int r = sim_driver_add_id(drv, dev->vendor, (uint32_t) device);
                        if (r < 0)
                                return r;
                }
                dev->device = (uint16_t) device;
                dev->totalvfs = (uint16_t) total;
                dev->offset = (uint16_t) offset;
                dev->stride = (uint16_t) stride;
                dev->cap_totalvfs = 0;  /* the config space follows the image */
                return 0;
        }
        if (n != 2)
                return -EINVAL;
        if (streq(w[0], "hold") || streq(w[0], "release"))
                return dev ? sim_dev_hold(sim, dev, streq(w[0], "hold")) : -ENODEV;
        if (streq(w[0], "remove") || streq(w[0], "unplug"))
                return dev ? sim_dev_remove(sim, dev, streq(w[0], "unplug")) : -ENODEV;
        return -EINVAL;
}

int sim_stats_format(struct sim *sim, char **ret) {
        char *buf = NULL;
        size_t size = 0;
        uint64_t total = 0;
        FILE *f;

        f = open_memstream(&buf, &size);
        if (!f)
                return -ENOMEM;
        for (size_t i = 0; i < _SIM_STAT_MAX; i++) {
                uint64_t v = __atomic_load_n(&sim->stats[i], __ATOMIC_RELAXED);
                fprintf(f, "%s %llu\n", sim_stat_to_string(i), (unsigned long long) v);
                total += v;
        }
        fprintf(f, "total %llu\n", (unsigned long long) total);
        /* not a request count: writes the real kernel breaks on */
        fprintf(f, "kernel_breaks %llu\n", (unsigned long long) sim->kernel_breaks);
        if (fclose(f) != 0) {
                free(buf);
                return -ENOMEM;
        }
        *ret = buf;
        return 0;
}

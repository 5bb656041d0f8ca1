/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <limits.h>
#include <string.h>

#include "device.h"
#include "pcinames.h"
#include "sysfs.h"

int svff_dev_canonicalize(const char *address, char buf[static SVFF_PCI_ADDR_STRLEN],
                          struct svff_error *err) {
        if (svff_pci_addr_canonicalize(address, buf) < 0)
                return svff_error_set(err, -EINVAL,
                                      "'%s' is not a PCI address: expected dddd:bb:ss.f, e.g. 0000:03:00.0 "
                                      "(see 'lspci -D')", strna(address));
        return 0;
}

int svff_dev_exists(struct svff_ctx *ctx, const char *address) {
        _cleanup_free_ char *path = NULL;

        if (asprintf(&path, "bus/pci/devices/%s", address) < 0)
                return -ENOMEM;
        return svff_sysfs_exists(svff_ctx_get_rootfd(ctx), path);
}

/* Canonicalizes a user-supplied address into canonical and opens the
 * device directory; -ENODEV with a message when absent. */
static int dev_open(struct svff_ctx *ctx, const char *address, char canonical[static SVFF_PCI_ADDR_STRLEN],
                    struct svff_error *err) {
        _cleanup_free_ char *path = NULL;
        int fd, r;

        r = svff_dev_canonicalize(address, canonical, err);
        if (r < 0)
                return r;
        if (asprintf(&path, "bus/pci/devices/%s", canonical) < 0)
                return -ENOMEM;
        fd = svff_sysfs_open_dir(svff_ctx_get_rootfd(ctx), path);
        if (fd == -ENOENT || fd == -ENOTDIR)
                return svff_error_set(err, -ENODEV,
                                      "No PCI device '%s': check the address with 'lspci -D'", canonical);
        if (fd < 0)
                return svff_error_set_errno(err, fd, "Cannot open PCI device '%s'", canonical);
        return fd;
}

/* A mandatory attribute of a device that existed a moment ago is gone:
 * the device was removed (hot-unplug, or its PF's VFs were disabled). */
static int vanished(struct svff_error *err, int r, const char *address, const char *what) {
        if (r == -ENOENT || r == -ENODEV)
                return svff_error_set(err, -ENODEV,
                                      "PCI device '%s' disappeared while reading %s "
                                      "(hot-removed, or its VFs were disabled); list devices again and retry",
                                      address, what);
        return svff_error_set_errno(err, r, "Failed to read %s of PCI device '%s'", what, address);
}

/* Whether failure r reading the device at address means it is gone:
 * removed while being read (hot-unplug, or its PF's VFs being disabled)
 * rather than unreadable. */
static bool dev_gone(struct svff_ctx *ctx, const char *address, int r) {
        return (r == -ENOENT || r == -ENODEV) && svff_dev_exists(ctx, address) == 0;
}

/* Optional link: NULL (and 0) when absent. */
static int read_link_opt(int dfd, const char *name, char **ret) {
        int r;

        r = svff_sysfs_readlink_base(dfd, name, ret);
        if (r == -ENOENT) {
                *ret = NULL;
                return 0;
        }
        return r;
}

static int read_iommu_group(int dfd, int *ret) {
        _cleanup_free_ char *s = NULL;
        char *end;
        long v;
        int r;

        r = svff_sysfs_readlink_base(dfd, "iommu_group", &s);
        if (r == -ENOENT) {
                *ret = -1;
                return 0;
        }
        if (r < 0)
                return r;

        errno = 0;
        v = strtol(s, &end, 10);
        if (errno != 0 || *end != '\0' || end == s || v < 0 || v > INT32_MAX)
                return -EINVAL;
        *ret = (int) v;
        return 0;
}

static int vf_read(int vfd, struct svff_vf *vf) {
        _cleanup_free_ char *driver = NULL, *override = NULL;
        int r, group, qmax;

        r = read_link_opt(vfd, "driver", &driver);
        if (r < 0)
                return r;

        r = svff_sysfs_read(vfd, "driver_override", &override);
        if (r == -ENOENT)
                override = NULL;  /* kernels before 3.16 */
        else if (r < 0)
                return r;
        /* The kernel prints "(null)" for an unset override. */
        if (override && (override[0] == '\0' || streq(override, "(null)")))
                override = mfree(override);

        r = read_iommu_group(vfd, &group);
        if (r < 0)
                return r;

        /* Only a host driver of a QDMA VF has it; vfio-pci never does. */
        vf->has_qdma_qmax = driver && !streq(driver, "vfio-pci") &&
                            svff_sysfs_read_int(vfd, "qdma/qmax", &qmax) >= 0 && qmax >= 0;
        vf->qdma_qmax = vf->has_qdma_qmax ? (unsigned) qmax : 0;
        vf->driver = TAKE_PTR(driver);
        vf->driver_override = TAKE_PTR(override);
        vf->iommu_group = group;
        return 0;
}

void svff_vf_done(struct svff_vf *vf) {
        if (!vf)
                return;
        free(vf->driver);
        free(vf->driver_override);
        vf->driver = vf->driver_override = NULL;
}

void svff_pf_free(struct svff_pf *pf) {
        if (!pf)
                return;
        for (size_t i = 0; i < pf->n_vfs; i++)
                svff_vf_done(&pf->vfs[i]);
        free(pf->vfs);
        free(pf->vendor_name);
        free(pf->device_name);
        free(pf->driver);
        free(pf->netdev);
        free(pf->numvfs_pending);
        free(pf);
}

void svff_pf_list_free(struct svff_pf **pfs, size_t n) {
        if (!pfs)
                return;
        for (size_t i = 0; i < n; i++)
                svff_pf_free(pfs[i]);
        free(pfs);
}

/* Reads virtfn<K> for every K below numvfs: VF K is the one its link
 * names, never the K-th one found. The kernel numbers the links densely,
 * so an index without a VF (its link absent, or naming a device that is
 * gone) is recorded in vf_missing, not closed up: a caller acting on the
 * VFs must refuse it, and one only showing them may leave it out, as a
 * read an instant later (the VFs being disabled) would. */
static int pf_read_vfs(struct svff_ctx *ctx, struct svff_pf *pf, int dfd, struct svff_error *err) {
        size_t allocated = 0;

        pf->vf_missing = UINT_MAX;
        for (unsigned i = 0; i < pf->numvfs && i < pf->totalvfs; i++) {
                _cleanup_free_ char *link = NULL, *target = NULL;
                _cleanup_close_ int vfd = -EBADF;
                struct svff_vf vf = { .index = i };
                const char *addr;
                bool gone;
                int r;

                if (asprintf(&link, "virtfn%u", i) < 0)
                        return -ENOMEM;

                r = svff_sysfs_readlink(dfd, link, &target);
                if (r == -ENOENT) {
                        svff_log_debug(ctx, "PF '%s' has %u VFs but no %s", pf->address, pf->numvfs, link);
                        if (pf->vf_missing == UINT_MAX)
                                pf->vf_missing = i;
                        continue;
                }
                if (r < 0)
                        return vanished(err, r, pf->address, link);
                addr = strrchr(target, '/');
                addr = addr ? addr + 1 : target;
                if (svff_pci_addr_canonicalize(addr, vf.address) < 0)
                        return svff_error_set(err, -EIO, "Link %s of '%s' points to '%s', not a PCI address",
                                              link, pf->address, target);

                /* The target is relative to the PF's directory: opening it
                 * directly skips resolving the link a second time. */
                vfd = target[0] == '/' ? -EINVAL : svff_sysfs_open_dir(dfd, target);
                r = vfd < 0 ? vfd : vf_read(vfd, &vf);
                gone = dev_gone(ctx, vf.address, r);
                if ((r == -ENOENT || r == -ENODEV) && !gone) {
                        /* The device read is gone, yet its address is
                         * there: another one took it (the count went
                         * through 0 and back while the pass ran). Read
                         * that one; a device still answering so is an
                         * error below. */
                        svff_log_debug(ctx, "VF '%s' of '%s' answered %s while present, reading it again",
                                       vf.address, pf->address, r == -ENOENT ? "ENOENT" : "ENODEV");
                        closep(&vfd);
                        vfd = svff_sysfs_open_dir(dfd, target);
                        r = vfd < 0 ? vfd : vf_read(vfd, &vf);
                        gone = dev_gone(ctx, vf.address, r);
                }
                /* Once found gone, a device is gone for this pass: its
                 * address may be taken again an instant later. */
                if (gone) {
                        svff_log_debug(ctx, "VF '%s' of '%s' vanished during discovery, ignoring", vf.address,
                                       pf->address);
                        if (pf->vf_missing == UINT_MAX)
                                pf->vf_missing = i;
                        continue;
                }
                if (vfd < 0)
                        return vanished(err, vfd, vf.address, "its attributes");
                if (r < 0)
                        return vanished(err, r, vf.address, "driver, driver_override and iommu_group");

                if (pf->n_vfs >= allocated) {
                        struct svff_vf *p;

                        allocated = allocated ? allocated * 2 : 8;
                        p = realloc(pf->vfs, allocated * sizeof(*p));
                        if (!p) {
                                svff_vf_done(&vf);
                                return -ENOMEM;
                        }
                        pf->vfs = p;
                }
                pf->vfs[pf->n_vfs++] = vf;
        }
        return 0;
}

/* Why a device has no sriov_totalvfs: -EOPNOTSUPP either way, but the
 * capability tells "not an SR-IOV device" from "SR-IOV the kernel could
 * not enable", and the operator's fix differs. */
static int no_sriov(struct svff_ctx *ctx, const char *address, struct svff_error *err) {
        struct svff_sriov_cap cap;

        if (svff_pci_read_sriov_cap(ctx, address, &cap) >= 0)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "PCI device '%s' has an SR-IOV capability (%u VFs) but the kernel did not "
                                      "enable SR-IOV on it: VF BARs may be unassigned (check dmesg; try booting "
                                      "with pci=realloc)", address, cap.total_vfs);
        return svff_error_set(err, -EOPNOTSUPP,
                              "PCI device '%s' does not support SR-IOV: give the address of an SR-IOV PF", address);
}

/* A numeric attribute of a PF and the field of struct svff_pf it fills:
 * a uint16_t, or a 32-bit unsigned. */
struct pf_number {
        const char *name;
        bool hex;
        bool absent_ok;         /* -ENOENT for the caller, without a message */
        size_t offset;
        size_t size;
};

#define PF_NUMBER(_name, _hex, _field, ...)                                             \
        { .name = _name, .hex = _hex, .offset = offsetof(struct svff_pf, _field),       \
          .size = sizeof(((struct svff_pf *) NULL)->_field), __VA_ARGS__ }

_Static_assert(sizeof(unsigned) == sizeof(uint32_t), "PF counts are stored as uint32_t");

/* Without sriov_totalvfs a device is no PF we can manage. */
static const struct pf_number pf_ids[] = {
        PF_NUMBER("sriov_totalvfs", false, totalvfs, .absent_ok = true),
        PF_NUMBER("vendor", true, vendor_id),
        PF_NUMBER("device", true, device_id),
        PF_NUMBER("class", true, class),
};

/* sriov_offset, sriov_stride and sriov_vf_device appeared in Linux 4.18;
 * older kernels only have the capability itself. */
static const struct pf_number pf_vf_layout[] = {
        PF_NUMBER("sriov_offset", false, offset, .absent_ok = true),
        PF_NUMBER("sriov_stride", false, stride),
        PF_NUMBER("sriov_vf_device", true, vf_device_id),
};

/* Fills pf from numbers[0, n), in order. Any failure but an allowed
 * absence means the device vanished, and err says so. */
static int pf_read_numbers(struct svff_pf *pf, int dfd, const struct pf_number *numbers, size_t n,
                           struct svff_error *err) {
        for (size_t i = 0; i < n; i++) {
                const struct pf_number *num = &numbers[i];
                void *field = (uint8_t *) pf + num->offset;
                uint64_t v;
                int r;

                r = num->hex ? svff_sysfs_read_hex(dfd, num->name, &v) : svff_sysfs_read_u64(dfd, num->name, &v);
                if (r == -ENOENT && num->absent_ok)
                        return r;
                if (r < 0)
                        return vanished(err, r, pf->address, num->name);
                if (num->size == sizeof(uint16_t))
                        *(uint16_t *) field = (uint16_t) v;
                else
                        *(uint32_t *) field = (uint32_t) v;
        }
        return 0;
}

/* A PF known by its address only, while a write of its count is in the
 * kernel; NULL out of memory. */
static struct svff_pf *pf_stand_in(const char *address) {
        struct svff_pf *pf = calloc(1, sizeof(*pf));

        if (!pf)
                return NULL;
        memcpy(pf->address, address, SVFF_PCI_ADDR_STRLEN);
        pf->numa_node = pf->iommu_group = -1;
        pf->vf_missing = UINT_MAX;
        return pf;
}

/* A PF whose sriov_numvfs this context is writing, as far as it can be
 * known without waiting for the write: its address and the write. 0 and
 * *ret NULL when no write is pending. */
static int pf_load_pending(struct svff_ctx *ctx, const char *address, struct svff_pf **ret) {
        _cleanup_free_ char *path = NULL, *value = NULL;
        struct svff_pf *pf;
        bool late = false;
        int r;

        *ret = NULL;
        if (asprintf(&path, "bus/pci/devices/%s/sriov_numvfs", address) < 0)
                return -ENOMEM;
        r = svff_ctx_write_pending(ctx, path, &value, &late);
        if (r <= 0)
                return r;
        pf = pf_stand_in(address);
        if (!pf)
                return -ENOMEM;
        pf->numvfs_pending = TAKE_PTR(value);
        pf->numvfs_pending_late = late;
        svff_log_debug(ctx, "PF '%s' has a write of %s to sriov_numvfs pending%s, not reading it", address,
                       pf->numvfs_pending, late ? " past its deadline" : "");
        *ret = pf;
        return 0;
}

/* A PF's count, which a write by another process holds in the kernel.
 * Under nowait the read has a deadline: past it, or while an earlier
 * read is still held, *ret is the PF with only its address and
 * numvfs_unread_since. 0 with *ret NULL and *numvfs set when read. */
static int pf_read_numvfs(struct svff_ctx *ctx, const char *address, int dfd, bool nowait, unsigned *numvfs,
                          struct svff_pf **ret) {
        _cleanup_free_ char *path = NULL;
        uint64_t v, since = 0;
        struct svff_pf *pf;
        int r;

        *ret = NULL;
        if (!nowait)
                r = svff_sysfs_read_u64(dfd, "sriov_numvfs", &v);
        else {
                if (asprintf(&path, "bus/pci/devices/%s/sriov_numvfs", address) < 0)
                        return -ENOMEM;
                r = svff_sysfs_read_u64_deadline(ctx, path, SVFF_NUMVFS_READ_TIMEOUT_USEC, &v);
        }
        if (r >= 0) {
                *numvfs = (unsigned) v;
                return 0;
        }
        if (r != -ETIMEDOUT && r != -EBUSY)
                return r;
        if (svff_ctx_read_stuck(ctx, path, &since) <= 0)
                since = svff_now_usec();  /* ended just now: the next pass reads it */
        pf = pf_stand_in(address);
        if (!pf)
                return -ENOMEM;
        pf->numvfs_unread_since = since;
        svff_log_debug(ctx, "PF '%s': sriov_numvfs has not answered for %llu ms, not reading the PF", address,
                       (unsigned long long) ((svff_now_usec() - since) / USEC_PER_MSEC));
        *ret = pf;
        return 0;
}

static int pf_load_at(struct svff_ctx *ctx, const char *address, int dfd, bool nowait, struct svff_pf **ret,
                      struct svff_error *err) {
        _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
        _cleanup_free_ char *physfn = NULL;
        _cleanup_strv_free_ char **net = NULL;
        int r;

        if (nowait) {
                r = pf_load_pending(ctx, address, &pf);
                if (r < 0)
                        return r;
                if (pf) {
                        *ret = TAKE_PTR(pf);
                        return 0;
                }
        }

        r = read_link_opt(dfd, "physfn", &physfn);
        if (r < 0)
                return vanished(err, r, address, "physfn");
        if (physfn)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "PCI device '%s' is a virtual function of '%s': give the PF's address",
                                      address, physfn);

        pf = calloc(1, sizeof(*pf));
        if (!pf)
                return -ENOMEM;
        memcpy(pf->address, address, SVFF_PCI_ADDR_STRLEN);

        r = pf_read_numbers(pf, dfd, pf_ids, ELEMENTSOF(pf_ids), err);
        if (r == -ENOENT)
                return no_sriov(ctx, address, err);
        if (r < 0)
                return r;
        {
                struct svff_pf *unread;

                r = pf_read_numvfs(ctx, address, dfd, nowait, &pf->numvfs, &unread);
                if (r == -ENOMEM)
                        return r;
                if (r < 0)
                        return vanished(err, r, address, "sriov_numvfs");
                if (unread) {
                        *ret = unread;
                        return 0;
                }
        }

        r = pf_read_numbers(pf, dfd, pf_vf_layout, ELEMENTSOF(pf_vf_layout), err);
        if (r == -ENOENT) {
                struct svff_sriov_cap cap;

                r = svff_pci_read_sriov_cap(ctx, address, &cap);
                if (r < 0)
                        return vanished(err, r, address, "the SR-IOV capability");
                pf->offset = cap.offset;
                pf->stride = cap.stride;
                pf->vf_device_id = cap.vf_device;
        } else if (r < 0)
                return r;

        r = read_link_opt(dfd, "driver", &pf->driver);
        if (r < 0)
                return vanished(err, r, address, "driver");

        r = svff_sysfs_read_bool(dfd, "sriov_drivers_autoprobe", &pf->autoprobe);
        if (r == -ENOENT)
                pf->autoprobe = true;  /* before Linux 4.12 VFs always probed */
        else if (r < 0)
                return vanished(err, r, address, "sriov_drivers_autoprobe");

        r = svff_sysfs_read_int(dfd, "numa_node", &pf->numa_node);
        if (r == -ENOENT)
                pf->numa_node = -1;
        else if (r < 0)
                return vanished(err, r, address, "numa_node");

        r = read_iommu_group(dfd, &pf->iommu_group);
        if (r < 0)
                return vanished(err, r, address, "iommu_group");

        r = svff_sysfs_list_dir(dfd, "net", &net);
        if (r >= 0 && net[0]) {
                pf->netdev = strdup(net[0]);
                if (!pf->netdev)
                        return -ENOMEM;
        } else if (r < 0 && r != -ENOENT)
                return vanished(err, r, address, "net/");

        /* The limits behind totalvfs, for status: what the device (its
         * firmware) offers, and the MSI-X vectors its VFs share where
         * the driver says (sriov_vf_total_msix, Linux 5.12). Config
         * space past 64 bytes needs CAP_SYS_ADMIN: unread is 0. */
        {
                struct svff_sriov_cap cap;
                uint64_t msix;

                if (svff_pci_read_sriov_cap(ctx, address, &cap) >= 0)
                        pf->cap_totalvfs = cap.total_vfs;
                if (svff_sysfs_read_u64(dfd, "sriov_vf_total_msix", &msix) >= 0 && msix <= UINT32_MAX)
                        pf->vf_total_msix = (unsigned) msix;
        }

        /* Names are for display: a missing pci.ids is not a failure. */
        r = svff_pci_names(ctx, pf->vendor_id, pf->device_id, &pf->vendor_name, &pf->device_name);
        if (r < 0)
                svff_log_debug(ctx, "No names for '%s', ignoring: %d", address, r);

        r = pf_read_vfs(ctx, pf, dfd, err);
        if (r < 0)
                return r;

        *ret = TAKE_PTR(pf);
        return 0;
}

static int pf_load(struct svff_ctx *ctx, const char *address, bool nowait, struct svff_pf **ret,
                   struct svff_error *err) {
        char canonical[SVFF_PCI_ADDR_STRLEN];
        _cleanup_close_ int dfd = -EBADF;

        if (!ctx || !ret)
                return -EINVAL;
        dfd = dev_open(ctx, address, canonical, err);
        if (dfd < 0)
                return dfd;

        return pf_load_at(ctx, canonical, dfd, nowait, ret, err);
}

int svff_pf_load(struct svff_ctx *ctx, const char *address, struct svff_pf **ret,
                 struct svff_error *err) {
        return pf_load(ctx, address, false, ret, err);
}

int svff_pf_load_nowait(struct svff_ctx *ctx, const char *address, struct svff_pf **ret,
                        struct svff_error *err) {
        return pf_load(ctx, address, true, ret, err);
}

static int cmp_vf_address(const void *key, const void *elem) {
        return strcmp(key, ((const struct svff_vf *) elem)->address);
}

/* Whether address is a VF of a PF loaded already. The kernel gives VFs
 * higher routing IDs than their PF, so in sorted order a PF comes before
 * its VFs, and skipping them here saves the per-device probe below
 * (about six lookups each on an uncached FUSE tree). */
static bool is_known_vf(struct svff_pf **pfs, size_t n, const char *address) {
        for (size_t i = 0; i < n; i++)
                if (pfs[i]->n_vfs > 0 &&
                    bsearch(address, pfs[i]->vfs, pfs[i]->n_vfs, sizeof(struct svff_vf), cmp_vf_address))
                        return true;
        return false;
}

static int pf_list(struct svff_ctx *ctx, bool nowait, char *const *skip, struct svff_pf ***ret, size_t *ret_n,
                   struct svff_error *err) {
        size_t n_skip = 0;
        _cleanup_strv_free_ char **names = NULL;
        _cleanup_close_ int devfd = -EBADF;
        struct svff_pf **pfs = NULL;
        size_t n = 0, allocated = 0;
        int r;

        if (!ctx || !ret || !ret_n)
                return -EINVAL;
        while (skip && skip[n_skip])
                n_skip++;

        devfd = svff_sysfs_open_dir(svff_ctx_get_rootfd(ctx), "bus/pci/devices");
        if (devfd < 0)
                return svff_error_set_errno(err, devfd, "Cannot open '%s/bus/pci/devices'",
                                            svff_ctx_get_root(ctx));
        r = svff_sysfs_list_dir(devfd, ".", &names);
        if (r < 0)
                return svff_error_set_errno(err, r, "Cannot list '%s/bus/pci/devices'",
                                            svff_ctx_get_root(ctx));

        for (char **name = names; *name; name++) {
                _cleanup_(svff_pf_freep) struct svff_pf *pf = NULL;
                _cleanup_free_ char *total = NULL;
                _cleanup_close_ int dfd = -EBADF;
                char canonical[SVFF_PCI_ADDR_STRLEN];
                const char *key = canonical;    /* for bsearch() in skip */

                if (svff_pci_addr_canonicalize(*name, canonical) < 0)
                        continue;
                if (is_known_vf(pfs, n, canonical) ||
                    (n_skip > 0 && bsearch(&key, skip, n_skip, sizeof(char *), strv_cmp)))
                        continue;
                if (asprintf(&total, "%s/sriov_totalvfs", *name) < 0) {
                        r = -ENOMEM;
                        goto fail;
                }
                /* Cheap pre-check: most devices are not PFs. */
                if (svff_sysfs_exists(devfd, total) <= 0)
                        continue;

                dfd = svff_sysfs_open_dir(devfd, *name);
                if (dfd == -ENOENT || dfd == -ENODEV) {
                        svff_log_debug(ctx, "'%s' vanished during discovery, ignoring", *name);
                        continue;
                }
                if (dfd < 0) {
                        r = svff_error_set_errno(err, dfd, "Cannot open PCI device '%s'", *name);
                        goto fail;
                }

                r = pf_load_at(ctx, canonical, dfd, nowait, &pf, err);
                if (r < 0) {
                        if (r == -EOPNOTSUPP) {
                                /* A VF, or SR-IOV the kernel did not enable:
                                 * not a PF we can manage. */
                                svff_error_free(err);
                                continue;
                        }
                        if (dev_gone(ctx, canonical, r)) {
                                /* Removed after it was listed: not part of
                                 * this pass, as it will not be of the next. */
                                svff_log_debug(ctx, "'%s' vanished during discovery, ignoring: %s", canonical,
                                               svff_error_message(err));
                                svff_error_free(err);
                                continue;
                        }
                        goto fail;
                }

                if (n >= allocated) {
                        struct svff_pf **p;

                        allocated = allocated ? allocated * 2 : 4;
                        p = realloc(pfs, allocated * sizeof(*p));
                        if (!p) {
                                r = -ENOMEM;
                                goto fail;
                        }
                        pfs = p;
                }
                pfs[n++] = TAKE_PTR(pf);
        }

        *ret = pfs;
        *ret_n = n;
        return 0;

fail:
        svff_pf_list_free(pfs, n);
        return r;
}

int svff_pf_list(struct svff_ctx *ctx, struct svff_pf ***ret, size_t *ret_n,
                 struct svff_error *err) {
        return pf_list(ctx, false, NULL, ret, ret_n, err);
}

int svff_pf_list_nowait(struct svff_ctx *ctx, char *const *skip, struct svff_pf ***ret, size_t *ret_n,
                        struct svff_error *err) {
        return pf_list(ctx, true, skip, ret, ret_n, err);
}

/* The index i with virtfn<i> -> address: computed from the routing IDs,
 * then confirmed by the link, falling back to a scan for odd layouts. */
static int vf_find_index(int pffd, const char *pf_address, const char *address, unsigned *ret) {
        struct svff_pci_addr pf, vf;
        uint64_t offset, stride, total;
        unsigned guess = UINT32_MAX;
        int r;

        r = svff_sysfs_read_u64(pffd, "sriov_totalvfs", &total);
        if (r < 0)
                return r;
        if (svff_pci_addr_parse(pf_address, &pf) >= 0 && svff_pci_addr_parse(address, &vf) >= 0 &&
            svff_sysfs_read_u64(pffd, "sriov_offset", &offset) >= 0 &&
            svff_sysfs_read_u64(pffd, "sriov_stride", &stride) >= 0 && stride > 0) {
                long d = (long) svff_pci_addr_rid(&vf) - (long) svff_pci_addr_rid(&pf) - (long) offset;
                if (d >= 0 && d % (long) stride == 0)
                        guess = (unsigned) (d / (long) stride);
        }

        for (unsigned k = 0; k <= total; k++) {
                _cleanup_free_ char *link = NULL, *target = NULL;
                unsigned i = k == 0 ? guess : k - 1;

                if (i == UINT32_MAX || (k > 0 && i == guess))
                        continue;
                if (asprintf(&link, "virtfn%u", i) < 0)
                        return -ENOMEM;
                if (svff_sysfs_readlink_base(pffd, link, &target) < 0)
                        continue;
                if (streq(target, address)) {
                        *ret = i;
                        return 0;
                }
        }
        return -ENOENT;
}

int svff_vf_load(struct svff_ctx *ctx, const char *address, struct svff_vf *ret,
                 char ret_pf_address[static SVFF_PCI_ADDR_STRLEN], struct svff_error *err) {
        char canonical[SVFF_PCI_ADDR_STRLEN], pf_canonical[SVFF_PCI_ADDR_STRLEN];
        _cleanup_close_ int dfd = -EBADF, pffd = -EBADF;
        _cleanup_free_ char *physfn = NULL;
        struct svff_vf vf = {};
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        dfd = dev_open(ctx, address, canonical, err);
        if (dfd < 0)
                return dfd;

        r = read_link_opt(dfd, "physfn", &physfn);
        if (r < 0)
                return vanished(err, r, canonical, "physfn");
        if (!physfn)
                return svff_error_set(err, -EOPNOTSUPP,
                                      "PCI device '%s' is not a virtual function: give the address of a VF",
                                      canonical);
        if (svff_pci_addr_canonicalize(physfn, pf_canonical) < 0)
                return svff_error_set(err, -EIO, "physfn of '%s' points to '%s', not a PCI address",
                                      canonical, physfn);

        pffd = svff_sysfs_open_dir(dfd, "physfn");
        if (pffd < 0)
                return vanished(err, pffd, pf_canonical, "its attributes");
        r = vf_find_index(pffd, pf_canonical, canonical, &vf.index);
        if (r < 0)
                return vanished(err, r, canonical, "its virtfn link on the PF");

        memcpy(vf.address, canonical, SVFF_PCI_ADDR_STRLEN);
        r = vf_read(dfd, &vf);
        if (r < 0)
                return vanished(err, r, canonical, "driver, driver_override and iommu_group");

        *ret = vf;
        if (ret_pf_address)
                memcpy(ret_pf_address, pf_canonical, SVFF_PCI_ADDR_STRLEN);
        return 0;
}

const struct svff_vf *svff_pf_vf_at(const struct svff_pf *pf, unsigned index) {
        if (!pf)
                return NULL;
        for (size_t i = 0; i < pf->n_vfs && pf->vfs[i].index <= index; i++)
                if (pf->vfs[i].index == index)
                        return &pf->vfs[i];
        return NULL;
}

const struct svff_vf *svff_pf_find_vf(const struct svff_pf *pf, const char *address) {
        char canonical[SVFF_PCI_ADDR_STRLEN];

        if (!pf || svff_pci_addr_canonicalize(address, canonical) < 0)
                return NULL;
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (streq(pf->vfs[i].address, canonical))
                        return &pf->vfs[i];
        return NULL;
}

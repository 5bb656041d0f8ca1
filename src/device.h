/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Discovery: the PCI/SR-IOV model read from sysfs.
 *
 * A PF is any device under bus/pci/devices with sriov_totalvfs. Its VFs
 * are found through its virtfn<i> links (not by address arithmetic: the
 * links are what the kernel created). Everything is a snapshot: nothing
 * here caches or watches. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "context.h"
#include "error.h"
#include "pciaddr.h"

struct svff_vf {
        unsigned index;                          /* virtfn<index> */
        char address[SVFF_PCI_ADDR_STRLEN];
        char *driver;                            /* NULL when unbound */
        char *driver_override;                   /* NULL when "(null)" */
        int iommu_group;                         /* -1 without IOMMU */
        /* qdma/qmax: the queues a QDMA VF's driver on the host asked the
         * PF for, read now. A VF on vfio-pci has no such file: a guest's
         * count is not readable from the host. */
        bool has_qdma_qmax;
        unsigned qdma_qmax;
};

struct svff_pf {
        char address[SVFF_PCI_ADDR_STRLEN];
        uint16_t vendor_id;
        uint16_t device_id;
        uint32_t class;                          /* 0xccsspp */
        char *vendor_name;                       /* from pci.ids via libpci */
        char *device_name;
        unsigned totalvfs;                       /* sriov_totalvfs: the PF driver's limit */
        unsigned cap_totalvfs;                   /* TotalVFs of the SR-IOV capability, 0: unread */
        unsigned vf_total_msix;                  /* sriov_vf_total_msix, 0: not shown */
        unsigned numvfs;
        unsigned offset;
        unsigned stride;
        uint16_t vf_device_id;
        char *driver;                            /* NULL when unbound */
        bool autoprobe;                          /* sriov_drivers_autoprobe */
        int numa_node;                           /* -1 when none */
        int iommu_group;                         /* -1 without IOMMU */
        char *netdev;                            /* first net/ entry or NULL */

        struct svff_vf *vfs;                     /* n_vfs entries, ascending index */
        size_t n_vfs;
        unsigned vf_missing;                     /* the first index below numvfs with no VF
                                                  * (virtfn<i> absent or dangling); UINT_MAX: none */
        char *numvfs_pending;                    /* the _nowait loads: the value a write of this
                                                  * context is putting into sriov_numvfs, and
                                                  * then only the address is read; else NULL */
        bool numvfs_pending_late;                /* ...a write its writer gave up waiting for */
        uint64_t numvfs_unread_since;            /* the _nowait loads: when a read of sriov_numvfs
                                                  * began that has not answered within its
                                                  * deadline (a write by another process holds
                                                  * it), and then only the address is read; else 0 */
};

/* Whether pf is no more than its address: a _nowait load of a PF whose
 * count is being written. */
static inline bool svff_pf_is_unread(const struct svff_pf *pf) {
        return pf->numvfs_pending || pf->numvfs_unread_since;
}

/* Loads the PF at address (any accepted spelling; stored canonical).
 *   -EINVAL     not a PCI address
 *   -ENODEV     no such device (or it disappeared while being read)
 *   -EOPNOTSUPP the device has no SR-IOV capability (or is itself a VF)
 * err names the device and says what to do. VF i is the device virtfn<i>
 * names, for i below numvfs; an index with no VF (the link absent, or
 * naming a device that is gone: removed, or its PF's VFs being
 * disabled) is left out of vfs and the first such is vf_missing. */
int svff_pf_load(struct svff_ctx *ctx, const char *address, struct svff_pf **ret,
                 struct svff_error *err);
/* Like svff_pf_load(), but never waits for a sriov_numvfs write: the
 * kernel serialises reads of the PF's sriov_numvfs (and its config space)
 * behind the write. A write of ctx (svff_ctx_write_pending()) is not
 * waited for at all: such a PF is returned with its address and
 * numvfs_pending set, nothing else read. Any other write (another
 * process's) is waited for up to SVFF_NUMVFS_READ_TIMEOUT_USEC, then the
 * PF is returned with its address and numvfs_unread_since set. */
#define SVFF_NUMVFS_READ_TIMEOUT_USEC (100 * 1000ULL)
int svff_pf_load_nowait(struct svff_ctx *ctx, const char *address, struct svff_pf **ret,
                        struct svff_error *err);
void svff_pf_free(struct svff_pf *pf);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_pf *, svff_pf_free);

/* Every SR-IOV PF on the host, sorted by address. A device that
 * disappears during the pass is left out (logged at debug level); any
 * other failure to read one fails the pass. */
int svff_pf_list(struct svff_ctx *ctx, struct svff_pf ***ret, size_t *ret_n,
                 struct svff_error *err);
/* The same, each PF loaded as svff_pf_load_nowait() does, and none of
 * the devices in skip (sorted by strcmp(), NULL-terminated; may be NULL)
 * read: the caller knows them already. */
int svff_pf_list_nowait(struct svff_ctx *ctx, char *const *skip, struct svff_pf ***ret, size_t *ret_n,
                        struct svff_error *err);
void svff_pf_list_free(struct svff_pf **pfs, size_t n);

/* Loads one VF by address. ret_pf_address (optional) receives its PF.
 *   -EINVAL not a PCI address, -ENODEV no such device,
 *   -EOPNOTSUPP the device is not a VF. */
int svff_vf_load(struct svff_ctx *ctx, const char *address, struct svff_vf *ret,
                 char ret_pf_address[static SVFF_PCI_ADDR_STRLEN], struct svff_error *err);
/* Frees the strings inside vf (not vf itself). */
void svff_vf_done(struct svff_vf *vf);

/* Canonicalizes a user-supplied address into buf. -EINVAL, with err
 * naming the input and the expected form. */
int svff_dev_canonicalize(const char *address, char buf[static SVFF_PCI_ADDR_STRLEN],
                          struct svff_error *err);

/* Whether bus/pci/devices/<canonical address> exists: 1, 0 or -errno.
 * Used to tell "the device vanished" (-ENODEV) from other failures. */
int svff_dev_exists(struct svff_ctx *ctx, const char *address);

/* Looks up the VF of pf with that index (virtfn<index>); NULL when
 * absent. Borrowed. */
const struct svff_vf *svff_pf_vf_at(const struct svff_pf *pf, unsigned index);

/* Looks up a VF of pf by address; NULL when absent. Borrowed. */
const struct svff_vf *svff_pf_find_vf(const struct svff_pf *pf, const char *address);

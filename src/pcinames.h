/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The libpci adapter: vendor/device names from pci.ids and SR-IOV
 * capability decoding from the device's config space, read through
 * libpci's linux-sysfs backend pointed at the context's root with its
 * "sysfs.path" parameter. libpci's default error callback exit()s; ours
 * only logs, and failures come back as -errno. */

#include <stdint.h>

#include "context.h"

/* The SR-IOV extended capability (PCIe r5.0 9.3.3), as libpci reads it. */
struct svff_sriov_cap {
        uint16_t initial_vfs;
        uint16_t total_vfs;
        uint16_t num_vfs;
        uint16_t offset;
        uint16_t stride;
        uint16_t vf_device;
        bool vf_enable;
};

/* Names for vendor (and device, when ret_device != NULL). Unknown ids
 * give libpci's fallbacks ("Device 903f"); never fails for a known
 * vendor. Strings are malloc'd. -ENOMEM, or -EIO when libpci cannot be
 * initialised. */
int svff_pci_names(struct svff_ctx *ctx, uint16_t vendor, uint16_t device,
                   char **ret_vendor, char **ret_device);

/* Reads the SR-IOV capability of address. -ENODEV when libpci cannot find
 * the device, -EOPNOTSUPP when it has no SR-IOV capability. */
int svff_pci_read_sriov_cap(struct svff_ctx *ctx, const char *address, struct svff_sriov_cap *ret);

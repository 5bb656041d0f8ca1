/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Small sysfs trees built in code in a temporary directory, so unit
 * tests never write to the (possibly read-only) source tree. The shape
 * follows the kernel's: devices under devices/pci0000:00, links under
 * bus/pci/devices, drivers under bus/pci/drivers, IOMMU groups under
 * kernel/iommu_groups. All functions abort the test on failure. */

#include <stdbool.h>
#include <stdint.h>

/* A new empty tree; returns its malloc'd root path. */
char *fixture_new(void);
/* Removes the tree and frees root. */
void fixture_free(char *root);

void fixture_file(const char *root, const char *path, const char *content);
void fixture_link(const char *root, const char *path, const char *target);
void fixture_mkdir(const char *root, const char *path);

/* A device with vendor, device, class, numa_node, driver_override and a
 * 4096-byte config space (with a PCIe capability, and an SR-IOV extended
 * capability when total_vfs > 0). */
void fixture_device(const char *root, const char *addr, uint16_t vendor, uint16_t device,
                    uint32_t class, uint16_t sriov_total_vfs);

/* Turns addr into a PF with numvfs VFs (virtfn/physfn links) of vf_device. */
void fixture_pf(const char *root, const char *addr, uint16_t vendor, unsigned totalvfs,
                unsigned numvfs, unsigned offset, unsigned stride, uint16_t vf_device);

void fixture_driver(const char *root, const char *name);
void fixture_bind(const char *root, const char *addr, const char *driver);
void fixture_group(const char *root, const char *addr, int group);

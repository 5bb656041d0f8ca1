/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* PCI addresses ("0000:03:00.1") and routing IDs. */

#include <stdbool.h>
#include <stdint.h>

/* "dddd:bb:ss.f" plus NUL, with room for the 32-bit domains VMD uses
 * ("10000:00:00.0"): the format is fixed, so a fixed buffer is exact. */
#define SVFF_PCI_ADDR_STRLEN 17

struct svff_pci_addr {
        uint32_t domain;  /* 16 bits on most hosts; VMD uses 32 */
        uint8_t bus;
        uint8_t slot;     /* 0..31 */
        uint8_t func;     /* 0..7 */
};

/* Accepts "dddd:bb:ss.f" (4 to 8 domain digits) and the short "bb:ss.f"
 * (domain 0), hex digits in either case, slot <= 1f, function <= 7,
 * nothing else (no whitespace, no trailing text).
 * Returns -EINVAL for anything else; *ret untouched on failure. */
int svff_pci_addr_parse(const char *s, struct svff_pci_addr *ret);

/* Canonical lower-case "dddd:bb:ss.f". buf must hold SVFF_PCI_ADDR_STRLEN. */
char *svff_pci_addr_format(const struct svff_pci_addr *a, char buf[static SVFF_PCI_ADDR_STRLEN]);

/* Parses and re-formats in canonical form (so "3:0.0"-like input is
 * refused, "03:00.0" becomes "0000:03:00.0"). */
int svff_pci_addr_canonicalize(const char *s, char buf[static SVFF_PCI_ADDR_STRLEN]);

static inline uint16_t svff_pci_addr_rid(const struct svff_pci_addr *a) {
        return (uint16_t) (a->bus << 8 | a->slot << 3 | a->func);
}

/* The address of VF index vf (0-based) of pf: RID = pf + offset + vf*stride.
 * Returns -ERANGE when the RID leaves the 16-bit space. */
int svff_pci_addr_vf(const struct svff_pci_addr *pf, unsigned offset, unsigned stride,
                     unsigned vf, struct svff_pci_addr *ret);

bool svff_pci_addr_equal(const struct svff_pci_addr *a, const struct svff_pci_addr *b);

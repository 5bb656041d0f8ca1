/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "macro.h"
#include "pciaddr.h"

/* Reads exactly n hex digits (min..max when max > min) at *p. Hand-rolled
 * because strtoul() accepts signs, spaces and "0x", which an address
 * must not contain. */
static int parse_hex(const char **p, unsigned min, unsigned max, uint32_t *ret) {
        uint32_t v = 0;
        unsigned n = 0;

        while (n < max && isxdigit((unsigned char) (*p)[n])) {
                char c = (char) tolower((unsigned char) (*p)[n]);
                v = v << 4 | (uint32_t) (c <= '9' ? c - '0' : c - 'a' + 10);
                n++;
        }
        if (n < min || isxdigit((unsigned char) (*p)[n]))
                return -EINVAL;
        *p += n;
        *ret = v;
        return 0;
}

int svff_pci_addr_parse(const char *s, struct svff_pci_addr *ret) {
        uint32_t domain = 0, bus, slot, func;
        const char *p = s;
        const char *colon1, *colon2;

        if (!s || !ret)
                return -EINVAL;

        colon1 = strchr(s, ':');
        if (!colon1)
                return -EINVAL;
        colon2 = strchr(colon1 + 1, ':');

        if (colon2) {
                if (parse_hex(&p, 4, 8, &domain) < 0 || *p++ != ':')
                        return -EINVAL;
        }
        if (parse_hex(&p, 2, 2, &bus) < 0 || *p++ != ':')
                return -EINVAL;
        if (parse_hex(&p, 2, 2, &slot) < 0 || *p++ != '.')
                return -EINVAL;
        if (parse_hex(&p, 1, 1, &func) < 0 || *p != '\0')
                return -EINVAL;
        if (slot > 0x1f || func > 7)
                return -EINVAL;

        *ret = (struct svff_pci_addr) {
                .domain = domain,
                .bus = (uint8_t) bus,
                .slot = (uint8_t) slot,
                .func = (uint8_t) func,
        };
        return 0;
}

char *svff_pci_addr_format(const struct svff_pci_addr *a, char buf[static SVFF_PCI_ADDR_STRLEN]) {
        snprintf(buf, SVFF_PCI_ADDR_STRLEN, "%04x:%02x:%02x.%x",
                 (unsigned) a->domain, a->bus, a->slot, a->func);
        return buf;
}

int svff_pci_addr_canonicalize(const char *s, char buf[static SVFF_PCI_ADDR_STRLEN]) {
        struct svff_pci_addr a;
        int r;

        r = svff_pci_addr_parse(s, &a);
        if (r < 0)
                return r;
        svff_pci_addr_format(&a, buf);
        return 0;
}

int svff_pci_addr_vf(const struct svff_pci_addr *pf, unsigned offset, unsigned stride,
                     unsigned vf, struct svff_pci_addr *ret) {
        uint64_t rid;

        rid = (uint64_t) svff_pci_addr_rid(pf) + offset + (uint64_t) vf * stride;
        if (rid > 0xffff)
                return -ERANGE;

        *ret = (struct svff_pci_addr) {
                .domain = pf->domain,
                .bus = (uint8_t) (rid >> 8),
                .slot = (uint8_t) ((rid >> 3) & 0x1f),
                .func = (uint8_t) (rid & 0x7),
        };
        return 0;
}

bool svff_pci_addr_equal(const struct svff_pci_addr *a, const struct svff_pci_addr *b) {
        return a->domain == b->domain && a->bus == b->bus && a->slot == b->slot &&
               a->func == b->func;
}

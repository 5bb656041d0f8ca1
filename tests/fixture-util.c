/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <check.h>
#include <fcntl.h>
#include <ftw.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "fixture-util.h"
#include "macro.h"
#include "pciaddr.h"

static char *join(const char *root, const char *path) {
        char *p;

        ck_assert_int_ge(asprintf(&p, "%s/%s", root, path), 0);
        return p;
}

static void mkdir_parents(const char *path) {
        _cleanup_free_ char *p = strdup(path);

        ck_assert_ptr_nonnull(p);
        for (char *s = strchr(p + 1, '/'); s; s = strchr(s + 1, '/')) {
                *s = '\0';
                if (mkdir(p, 0755) < 0)
                        ck_assert_int_eq(errno, EEXIST);
                *s = '/';
        }
}

char *fixture_new(void) {
        const char *tmp = getenv("TMPDIR") ?: "/tmp";
        char *root;

        ck_assert_int_ge(asprintf(&root, "%s/svff-fixture-XXXXXX", tmp), 0);
        ck_assert_ptr_nonnull(mkdtemp(root));
        return root;
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw) {
        return remove(path);
}

void fixture_free(char *root) {
        if (!root)
                return;
        nftw(root, rm_one, 16, FTW_DEPTH | FTW_PHYS);
        free(root);
}

static void write_bytes(const char *root, const char *path, const void *data, size_t len) {
        _cleanup_free_ char *p = join(root, path);
        _cleanup_close_ int fd = -EBADF;

        mkdir_parents(p);
        fd = open(p, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, data, len), (ssize_t) len);
}

void fixture_file(const char *root, const char *path, const char *content) {
        write_bytes(root, path, content, strlen(content));
}

void fixture_link(const char *root, const char *path, const char *target) {
        _cleanup_free_ char *p = join(root, path);

        mkdir_parents(p);
        unlink(p);
        ck_assert_int_eq(symlink(target, p), 0);
}

void fixture_mkdir(const char *root, const char *path) {
        _cleanup_free_ char *p = join(root, path);

        mkdir_parents(p);
        if (mkdir(p, 0755) < 0)
                ck_assert_int_eq(errno, EEXIST);
}

static void fmt_file(const char *root, const char *dev, const char *attr, const char *content) {
        _cleanup_free_ char *p = NULL;

        ck_assert_int_ge(asprintf(&p, "devices/pci0000:00/%s/%s", dev, attr), 0);
        fixture_file(root, p, content);
}

static void put16(uint8_t *c, unsigned pos, uint16_t v) {
        c[pos] = (uint8_t) v;
        c[pos + 1] = (uint8_t) (v >> 8);
}

static void put32(uint8_t *c, unsigned pos, uint32_t v) {
        put16(c, pos, (uint16_t) v);
        put16(c, pos + 2, (uint16_t) (v >> 16));
}

void fixture_device(const char *root, const char *addr, uint16_t vendor, uint16_t device,
                    uint32_t class, uint16_t sriov_total_vfs) {
        _cleanup_free_ char *link = NULL, *target = NULL, *s = NULL;
        uint8_t config[4096] = {};

        ck_assert_int_ge(asprintf(&s, "0x%04x\n", vendor), 0);
        fmt_file(root, addr, "vendor", s);
        s = mfree(s);
        ck_assert_int_ge(asprintf(&s, "0x%04x\n", device), 0);
        fmt_file(root, addr, "device", s);
        s = mfree(s);
        ck_assert_int_ge(asprintf(&s, "0x%06x\n", class), 0);
        fmt_file(root, addr, "class", s);
        fmt_file(root, addr, "numa_node", "-1\n");
        fmt_file(root, addr, "driver_override", "(null)\n");

        /* Type 0 header, capability list -> PCIe capability at 0x40. */
        put16(config, 0x00, vendor);
        put16(config, 0x02, device);
        put16(config, 0x06, 0x0010);
        put32(config, 0x08, class << 8);
        config[0x34] = 0x40;
        config[0x40] = 0x10;  /* PCI_CAP_ID_EXP */
        config[0x41] = 0x00;
        put16(config, 0x42, 0x0002);
        if (sriov_total_vfs > 0) {
                put32(config, 0x100, 0x0010 | 1u << 16);   /* SR-IOV, v1, last */
                put16(config, 0x100 + 0x0c, sriov_total_vfs);  /* initial */
                put16(config, 0x100 + 0x0e, sriov_total_vfs);  /* total */
                put16(config, 0x100 + 0x14, 4);               /* offset */
                put16(config, 0x100 + 0x16, 1);               /* stride */
                put16(config, 0x100 + 0x1a, (uint16_t) (device + 1));
        }
        ck_assert_int_ge(asprintf(&target, "devices/pci0000:00/%s/config", addr), 0);
        write_bytes(root, target, config, sizeof(config));

        target = mfree(target);
        ck_assert_int_ge(asprintf(&link, "bus/pci/devices/%s", addr), 0);
        ck_assert_int_ge(asprintf(&target, "../../../devices/pci0000:00/%s", addr), 0);
        fixture_link(root, link, target);
}

void fixture_pf(const char *root, const char *addr, uint16_t vendor, unsigned totalvfs,
                unsigned numvfs, unsigned offset, unsigned stride, uint16_t vf_device) {
        struct svff_pci_addr pf;
        _cleanup_free_ char *s = NULL;

        ck_assert_int_eq(svff_pci_addr_parse(addr, &pf), 0);

#define SETF(attr, ...)                                                 \
        do {                                                            \
                s = mfree(s);                                           \
                ck_assert_int_ge(asprintf(&s, __VA_ARGS__), 0);         \
                fmt_file(root, addr, attr, s);                          \
        } while (0)
        SETF("sriov_totalvfs", "%u\n", totalvfs);
        SETF("sriov_numvfs", "%u\n", numvfs);
        SETF("sriov_offset", "%u\n", offset);
        SETF("sriov_stride", "%u\n", stride);
        SETF("sriov_vf_device", "%x\n", vf_device);
        SETF("sriov_drivers_autoprobe", "1\n");
#undef SETF

        for (unsigned i = 0; i < numvfs; i++) {
                struct svff_pci_addr vf;
                char vfs[SVFF_PCI_ADDR_STRLEN];
                _cleanup_free_ char *link = NULL, *target = NULL;

                ck_assert_int_eq(svff_pci_addr_vf(&pf, offset, stride, i, &vf), 0);
                svff_pci_addr_format(&vf, vfs);
                fixture_device(root, vfs, vendor, vf_device, 0x020000, 0);

                ck_assert_int_ge(asprintf(&link, "devices/pci0000:00/%s/virtfn%u", addr, i), 0);
                ck_assert_int_ge(asprintf(&target, "../%s", vfs), 0);
                fixture_link(root, link, target);
                link = mfree(link);
                target = mfree(target);
                ck_assert_int_ge(asprintf(&link, "devices/pci0000:00/%s/physfn", vfs), 0);
                ck_assert_int_ge(asprintf(&target, "../%s", addr), 0);
                fixture_link(root, link, target);
        }
}

void fixture_driver(const char *root, const char *name) {
        _cleanup_free_ char *p = NULL;

        ck_assert_int_ge(asprintf(&p, "bus/pci/drivers/%s/bind", name), 0);
        fixture_file(root, p, "");
        p = mfree(p);
        ck_assert_int_ge(asprintf(&p, "bus/pci/drivers/%s/unbind", name), 0);
        fixture_file(root, p, "");
}

void fixture_bind(const char *root, const char *addr, const char *driver) {
        _cleanup_free_ char *link = NULL, *target = NULL;

        fixture_driver(root, driver);
        ck_assert_int_ge(asprintf(&link, "devices/pci0000:00/%s/driver", addr), 0);
        ck_assert_int_ge(asprintf(&target, "../../../bus/pci/drivers/%s", driver), 0);
        fixture_link(root, link, target);
}

void fixture_group(const char *root, const char *addr, int group) {
        _cleanup_free_ char *link = NULL, *target = NULL;

        ck_assert_int_ge(asprintf(&link, "devices/pci0000:00/%s/iommu_group", addr), 0);
        ck_assert_int_ge(asprintf(&target, "../../../kernel/iommu_groups/%d", group), 0);
        fixture_link(root, link, target);
        link = mfree(link);
        target = mfree(target);
        ck_assert_int_ge(asprintf(&link, "kernel/iommu_groups/%d/devices/%s", group, addr), 0);
        ck_assert_int_ge(asprintf(&target, "../../../../devices/pci0000:00/%s", addr), 0);
        fixture_link(root, link, target);
}

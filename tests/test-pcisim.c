/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pcisim behaves like the kernel's PCI sysfs: one test per rule, asserting
 * the exact errno or link target (see tests/pcisim/README.md).
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pcisim-util.h"

#define DEV "devices/pci0000:00/"
#define NIC_PF DEV "0000:03:00.0"
#define BUSDEV "bus/pci/devices/"

#define ELEMENTSOF(a) (sizeof(a) / sizeof((a)[0]))

static struct pcisim *sim;

static void start(const char *scenario) {
        int r = pcisim_start(scenario, &sim);
        ck_assert_msg(r == 0, "pcisim_start('%s'): %s", scenario, strerror(-r));
}

static void stop(void) {
        pcisim_free(sim);
        sim = NULL;
}

static int wr(const char *rel, const char *v) {
        return pcisim_write(sim, rel, v);
}

static char *rd(const char *rel) {
        char *s = NULL;
        int r = pcisim_read(sim, rel, &s);
        ck_assert_msg(r >= 0, "read '%s': %s", rel, strerror(-r));
        return s;
}

#define assert_read(rel, expected) do {                         \
                char *_s = rd(rel);                             \
                ck_assert_str_eq(_s, expected);                 \
                free(_s);                                       \
        } while (0)

#define assert_link(rel, expected) do {                         \
                char *_t = NULL;                                \
                int _r = pcisim_readlink(sim, rel, &_t);        \
                ck_assert_msg(_r == 0, "readlink '%s': %s", rel, strerror(-_r)); \
                ck_assert_str_eq(_t, expected);                 \
                free(_t);                                       \
        } while (0)

static bool exists(const char *rel) {
        char *p;
        struct stat st;
        bool b;

        ck_assert_int_ge(asprintf(&p, "%s/%s", pcisim_root(sim), rel), 0);
        b = lstat(p, &st) == 0;
        free(p);
        return b;
}

/* realpath() relative to the root, "" for the root itself. */
static char *resolved(const char *rel) {
        char *p, *r;
        size_t l = strlen(pcisim_root(sim));

        ck_assert_int_ge(asprintf(&p, "%s/%s", pcisim_root(sim), rel), 0);
        r = realpath(p, NULL);
        ck_assert_msg(r, "realpath '%s': %m", p);
        free(p);
        ck_assert(strncmp(r, pcisim_root(sim), l) == 0);
        memmove(r, r + l + (r[l] == '/'), strlen(r + l + (r[l] == '/')) + 1);
        return r;
}

#define assert_resolves(rel, expected) do {                     \
                char *_r = resolved(rel);                       \
                ck_assert_str_eq(_r, expected);                 \
                free(_r);                                       \
        } while (0)

static uint64_t now_ms(void) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        return (uint64_t) ts.tv_sec * 1000 + (uint64_t) ts.tv_nsec / 1000000;
}

static size_t read_config(const char *dev, uint8_t *buf) {
        char *p;
        ssize_t l;
        int fd;

        ck_assert_int_ge(asprintf(&p, "%s/" BUSDEV "%s/config", pcisim_root(sim), dev), 0);
        fd = open(p, O_RDONLY | O_CLOEXEC);
        free(p);
        ck_assert_int_ge(fd, 0);
        l = pread(fd, buf, 4096, 0);
        close(fd);
        ck_assert_int_ge(l, 0);
        return (size_t) l;
}

static unsigned cfg16(const uint8_t *b, size_t off) {
        return b[off] | (unsigned) b[off + 1] << 8;
}

static unsigned cfg32(const uint8_t *b, size_t off) {
        return cfg16(b, off) | cfg16(b, off + 2) << 16;
}

/* ---- tree ---- */

START_TEST(test_tree) {
        start("nic");
        assert_link(BUSDEV "0000:03:00.0", "../../../devices/pci0000:00/0000:03:00.0");
        assert_link(NIC_PF "/driver", "../../../bus/pci/drivers/igb");
        assert_link(NIC_PF "/iommu_group", "../../../kernel/iommu_groups/1");
        assert_link("bus/pci/drivers/igb/0000:03:00.0", "../../../../devices/pci0000:00/0000:03:00.0");
        assert_link("kernel/iommu_groups/1/devices/0000:03:00.0", "../../../../devices/pci0000:00/0000:03:00.0");
        assert_resolves(BUSDEV "0000:03:00.0", NIC_PF);
        assert_resolves(BUSDEV "0000:03:00.0/driver", "bus/pci/drivers/igb");
        assert_resolves(BUSDEV "0000:03:00.0/iommu_group", "kernel/iommu_groups/1");
        assert_resolves("bus/pci/drivers/igb/0000:03:00.0", NIC_PF);
        assert_resolves("kernel/iommu_groups/1/devices/0000:03:00.0", NIC_PF);
        assert_resolves(BUSDEV "0000:03:00.0/subsystem", "bus/pci");

        assert_read(NIC_PF "/vendor", "0x8086\n");
        assert_read(NIC_PF "/device", "0x1521\n");
        assert_read(NIC_PF "/subsystem_vendor", "0x8086\n");
        assert_read(NIC_PF "/subsystem_device", "0x0001\n");
        assert_read(NIC_PF "/class", "0x020000\n");
        assert_read(NIC_PF "/revision", "0x01\n");
        assert_read(NIC_PF "/numa_node", "0\n");
        assert_read(NIC_PF "/driver_override", "(null)\n");
        assert_read(NIC_PF "/sriov_totalvfs", "7\n");
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        assert_read(NIC_PF "/sriov_offset", "128\n");
        assert_read(NIC_PF "/sriov_stride", "4\n");
        assert_read(NIC_PF "/sriov_vf_device", "1520\n");
        assert_read(NIC_PF "/sriov_drivers_autoprobe", "1\n");
        assert_read(NIC_PF "/net/enp3s0f0/address", "a0:36:9f:00:00:01\n");
        assert_read("bus/pci/drivers_autoprobe", "1\n");
        /* a device without SR-IOV */
        ck_assert(exists(DEV "0000:00:00.0/vendor"));
        ck_assert(!exists(DEV "0000:00:00.0/sriov_totalvfs"));
        ck_assert(exists("bus/pci/drivers/vfio-pci/bind"));
        ck_assert(!exists(DEV "0000:00:00.0/driver"));
        stop();
}
END_TEST

START_TEST(test_access_modes) {
        char *big;

        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/vendor", "1"), -EACCES);
        ck_assert_int_eq(wr(NIC_PF "/sriov_totalvfs", "1"), -EACCES);
        ck_assert_int_eq(pcisim_read(sim, "bus/pci/drivers/igb/bind", &big), -EACCES);
        ck_assert_int_eq(pcisim_read(sim, NIC_PF "/remove", &big), -EACCES);
        ck_assert_int_eq(pcisim_read(sim, "bus/pci/rescan", &big), -EACCES);

        /* driver_override: longer than PAGE_SIZE - 2 is EINVAL */
        big = malloc(5000);
        ck_assert_ptr_nonnull(big);
        memset(big, 'a', 4999);
        big[4999] = '\0';
        ck_assert_int_eq(wr(NIC_PF "/driver_override", big), -EINVAL);
        big[4095] = '\0';
        ck_assert_int_eq(wr(NIC_PF "/driver_override", big), -EINVAL);
        big[4094] = '\0';
        ck_assert_int_eq(wr(NIC_PF "/driver_override", big), 0);
        free(big);
        ck_assert_int_eq(wr(NIC_PF "/driver_override", "\n"), 0);
        assert_read(NIC_PF "/driver_override", "(null)\n");
        stop();
}
END_TEST

/* ---- sriov_numvfs, rule by rule in the kernel's order ---- */

START_TEST(test_numvfs_einval) {
        static const char *const bad[] = { "x", "-1", "\n", " 1", "1x", "1\n\n", "70000", "0x", "+-1" };

        start("nic");
        for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
                ck_assert_msg(wr(NIC_PF "/sriov_numvfs", bad[i]) == -EINVAL, "'%s' accepted", bad[i]);
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        /* base 0, like kstrtou16(buf, 0): hex, a trailing newline, a plus */
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0x2\n"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "2\n");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "+0"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        stop();
}
END_TEST

START_TEST(test_numvfs_order) {
        start("mixed");
        /* 0000:05:00.0 has no driver: EINVAL and ERANGE still come first */
        ck_assert_int_eq(wr(DEV "0000:05:00.0/sriov_numvfs", "zz"), -EINVAL);
        ck_assert_int_eq(wr(DEV "0000:05:00.0/sriov_numvfs", "64"), -ERANGE);
        /* equal to the current value: success without a driver */
        ck_assert_int_eq(wr(DEV "0000:05:00.0/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr(DEV "0000:05:00.0/sriov_numvfs", "63"), -ENOENT);
        ck_assert_int_eq(wr(DEV "0000:03:00.0/sriov_numvfs", "8"), -ERANGE);
        stop();
}
END_TEST

START_TEST(test_numvfs_enoent_driver_without_sriov) {
        start("nic");
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "1"), -ENOENT);
        ck_assert_int_eq(wr(NIC_PF "/driver_override", "vfio-pci"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:00.0"), 0);
        assert_link(NIC_PF "/driver", "../../../bus/pci/drivers/vfio-pci");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "1"), -ENOENT);
        stop();
}
END_TEST

START_TEST(test_numvfs_ebusy_and_disable) {
        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert(exists(BUSDEV "0000:03:10.4"));
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), -EBUSY);
        assert_read(NIC_PF "/sriov_numvfs", "2\n");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert(exists("bus/pci/drivers/igbvf/0000:03:10.0"));
        ck_assert(exists("kernel/iommu_groups/2/devices/0000:03:10.0"));

        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        ck_assert(!exists(BUSDEV "0000:03:10.4"));
        ck_assert(!exists(DEV "0000:03:10.0"));
        ck_assert(!exists(NIC_PF "/virtfn0"));
        ck_assert(!exists(NIC_PF "/virtfn1"));
        ck_assert(!exists("bus/pci/drivers/igbvf/0000:03:10.0"));
        ck_assert(!exists("kernel/iommu_groups/2"));
        ck_assert(!exists("kernel/iommu_groups/3"));
        /* and through 0 to a new count */
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "7"), 0);
        ck_assert(exists(NIC_PF "/virtfn6"));
        stop();
}
END_TEST

/* ---- routing IDs and links ---- */

START_TEST(test_routing_ids) {
        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "7"), 0);
        /* RID 0x0300 + 0x80 + i * 4 */
        assert_link(NIC_PF "/virtfn0", "../0000:03:10.0");
        assert_link(NIC_PF "/virtfn1", "../0000:03:10.4");
        assert_link(NIC_PF "/virtfn2", "../0000:03:11.0");
        assert_link(NIC_PF "/virtfn6", "../0000:03:13.0");
        assert_link(DEV "0000:03:13.0/physfn", "../0000:03:00.0");
        assert_resolves(NIC_PF "/virtfn6", DEV "0000:03:13.0");
        assert_resolves(BUSDEV "0000:03:13.0/physfn", NIC_PF);
        assert_read(DEV "0000:03:13.0/device", "0x1520\n");
        assert_read(DEV "0000:03:13.0/vendor", "0x8086\n");
        ck_assert(!exists(DEV "0000:03:13.0/sriov_numvfs"));
        ck_assert(!exists(DEV "0000:03:13.0/remove"));       /* VFs cannot be removed */
        ck_assert(exists(NIC_PF "/remove"));
        ck_assert(!exists(NIC_PF "/physfn"));
        stop();

        /* crossing a bus: PF 02:1f.0 (RID 0x02f8), offset 4, stride 1 */
        start("qdma");
        ck_assert_int_eq(pcisim_ctl(sim, "add-pf {\"address\": \"0000:02:1f.0\", \"vendor\": \"0x10ee\", "
                                         "\"device\": \"0x903f\", \"class\": \"0x120000\", \"driver\": \"qdma-pf\", "
                                         "\"totalvfs\": 8, \"offset\": 4, \"stride\": 1, \"vf_device\": \"0xa03f\"}"), 0);
        ck_assert_int_eq(wr(DEV "0000:02:1f.0/sriov_numvfs", "8"), 0);
        assert_link(DEV "0000:02:1f.0/virtfn0", "../0000:02:1f.4");
        assert_link(DEV "0000:02:1f.0/virtfn3", "../0000:02:1f.7");
        assert_link(DEV "0000:02:1f.0/virtfn4", "../0000:03:00.0");
        assert_link(DEV "0000:02:1f.0/virtfn7", "../0000:03:00.3");
        assert_link(BUSDEV "0000:03:00.3/physfn", "../0000:02:1f.0");
        assert_resolves(BUSDEV "0000:03:00.3/physfn", DEV "0000:02:1f.0");
        stop();
}
END_TEST

START_TEST(test_autoprobe) {
        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_drivers_autoprobe", "maybe"), -EINVAL);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        assert_link(DEV "0000:03:10.0/driver", "../../../bus/pci/drivers/igbvf");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_drivers_autoprobe", "0\n"), 0);
        assert_read(NIC_PF "/sriov_drivers_autoprobe", "0\n");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert(exists(DEV "0000:03:10.0"));
        ck_assert(!exists(DEV "0000:03:10.0/driver"));
        ck_assert(!exists(DEV "0000:03:10.4/driver"));
        /* without autoprobe or an override, even an explicit bind fails */
        ck_assert_int_eq(wr("bus/pci/drivers/igbvf/bind", "0000:03:10.0"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:10.0"), 0);
        ck_assert(!exists(DEV "0000:03:10.0/driver"));
        stop();
}
END_TEST

START_TEST(test_override_and_probe) {
        char *group, *vfio;

        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_drivers_autoprobe", "0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(wr(DEV "0000:03:10.4/driver_override", "vfio-pci\n"), 0);
        assert_read(DEV "0000:03:10.4/driver_override", "vfio-pci\n");
        /* takes effect at the next probe only */
        ck_assert(!exists(DEV "0000:03:10.4/driver"));
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:10.4"), 0);
        assert_link(DEV "0000:03:10.4/driver", "../../../bus/pci/drivers/vfio-pci");
        ck_assert(exists("bus/pci/drivers/vfio-pci/0000:03:10.4"));
        /* the vfio group node appears */
        ck_assert_int_eq(pcisim_readlink(sim, DEV "0000:03:10.4/iommu_group", &group), 0);
        ck_assert_int_ge(asprintf(&vfio, ".pcisim/vfio/%s", strrchr(group, '/') + 1), 0);
        ck_assert(exists(vfio));
        /* the other VF is untouched */
        ck_assert(!exists(DEV "0000:03:10.0/driver"));
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/unbind", "0000:03:10.4"), 0);
        ck_assert(!exists(vfio));
        free(group);
        free(vfio);
        /* an override excludes the id table; clearing it restores matching */
        ck_assert_int_eq(wr(DEV "0000:03:10.4/driver_override", "igb"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/igbvf/bind", "0000:03:10.4"), -ENODEV);
        /* FUSE never delivers a 0-byte write: clear with a newline */
        ck_assert_int_eq(wr(DEV "0000:03:10.4/driver_override", "\n"), 0);
        assert_read(DEV "0000:03:10.4/driver_override", "(null)\n");
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:99:00.0"), -ENODEV);
        stop();
}
END_TEST

START_TEST(test_bind_unbind) {
        start("nic");
        ck_assert_int_eq(wr("bus/pci/drivers/igb/bind", "0000:09:00.0"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/drivers/igbvf/bind", "0000:03:00.0"), -ENODEV);  /* no match */
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/bind", "0000:03:00.0"), -ENODEV); /* empty table */
        ck_assert_int_eq(wr("bus/pci/drivers/igb/bind", "0000:03:00.0"), -EBUSY);     /* bound: 5.13+ */
        ck_assert_int_eq(wr("bus/pci/drivers/igbvf/unbind", "0000:03:00.0"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:09:00.0"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0\n"), 0);
        ck_assert(!exists(NIC_PF "/driver"));
        ck_assert(!exists(NIC_PF "/net"));
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/drivers/igb/bind", "0000:03:00.0\n"), 0);
        assert_link(NIC_PF "/driver", "../../../bus/pci/drivers/igb");
        ck_assert(exists(NIC_PF "/net/enp3s0f0"));
        /* unbinding the PF driver disables its VFs, like igb_remove() */
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        stop();
}
END_TEST

START_TEST(test_new_id) {
        start("scale");
        ck_assert_int_eq(wr("bus/pci/drivers/qdma-pf/unbind", "0000:10:00.0"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/qdma-pf/unbind", "0000:30:00.0"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/new_id", "10ee"), -EINVAL);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/new_id", "10ee 903f"), 0);
        /* every unbound matching device, not just one */
        assert_link(DEV "0000:10:00.0/driver", "../../../bus/pci/drivers/vfio-pci");
        assert_link(DEV "0000:30:00.0/driver", "../../../bus/pci/drivers/vfio-pci");
        assert_link(DEV "0000:20:00.0/driver", "../../../bus/pci/drivers/qdma-pf");
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/new_id", "10ee 903f"), -EEXIST);
        ck_assert_int_eq(wr("bus/pci/drivers/qdma-pf/new_id", "10ee 903f"), -EEXIST);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/remove_id", "10ee 903f"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/remove_id", "10ee 903f"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/remove_id", "x"), -EINVAL);
        /* removing the id does not unbind */
        ck_assert(exists(DEV "0000:10:00.0/driver"));
        stop();
}
END_TEST

START_TEST(test_remove_rescan) {
        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_drivers_autoprobe", "0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(wr(NIC_PF "/driver_override", "igb"), 0);
        ck_assert_int_eq(wr(NIC_PF "/remove", "x"), -EINVAL);
        ck_assert_int_eq(wr(NIC_PF "/remove", "0"), 0);
        ck_assert(exists(NIC_PF));
        ck_assert_int_eq(wr(NIC_PF "/remove", "1"), 0);
        ck_assert(!exists(BUSDEV "0000:03:00.0"));
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        ck_assert(!exists("bus/pci/drivers/igb/0000:03:00.0"));
        ck_assert(!exists("kernel/iommu_groups/1"));
        ck_assert(exists(BUSDEV "0000:00:00.0"));

        ck_assert_int_eq(wr("bus/pci/rescan", "x"), -EINVAL);
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        ck_assert(exists(BUSDEV "0000:03:00.0"));
        /* a new pci_dev: fresh state, drivers probed */
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        assert_read(NIC_PF "/sriov_drivers_autoprobe", "1\n");
        assert_read(NIC_PF "/driver_override", "(null)\n");
        assert_link(NIC_PF "/driver", "../../../bus/pci/drivers/igb");
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        stop();
}
END_TEST

/* A new image with another First VF Offset and VF Stride (ctl
 * reprogram on the removed PF): after the rescan its VFs come at other
 * host addresses. */
START_TEST(test_reprogram_moves_vfs) {
        start("qdma");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "2"), 0);
        assert_link(DEV "0000:01:00.0/virtfn1", "../0000:01:00.5");
        ck_assert_int_eq(pcisim_ctl(sim, "reprogram 0000:01:00.0 903f 8 offset=8 stride=2"), -EBUSY);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/remove", "1"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "reprogram 0000:01:00.0 903f 8 offset=0"), -ERANGE);
        ck_assert_int_eq(pcisim_ctl(sim, "reprogram 0000:01:00.0 903f 8 stride=0"), -ERANGE);
        ck_assert_int_eq(pcisim_ctl(sim, "reprogram 0000:01:00.0 903f 8 offset=0xff00"), -ERANGE);
        ck_assert_int_eq(pcisim_ctl(sim, "reprogram 0000:01:00.0 903f 8 offset=x"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "reprogram 0000:01:00.0 903f 8 offset=8 stride=2"), 0);
        ck_assert(!exists(BUSDEV "0000:01:00.0"));
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        assert_read(DEV "0000:01:00.0/sriov_offset", "8\n");
        assert_read(DEV "0000:01:00.0/sriov_stride", "2\n");
        assert_read(DEV "0000:01:00.0/sriov_totalvfs", "8\n");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "2"), 0);
        /* RID 0x0100 + 8 + i * 2 */
        assert_link(DEV "0000:01:00.0/virtfn0", "../0000:01:01.0");
        assert_link(DEV "0000:01:00.0/virtfn1", "../0000:01:01.2");
        assert_link(DEV "0000:01:01.2/physfn", "../0000:01:00.0");
        ck_assert(!exists(BUSDEV "0000:01:00.5"));

        /* ctl layout: from the next enable on, as a device whose offset
         * depends on NumVFs */
        ck_assert_int_eq(pcisim_ctl(sim, "layout 0000:01:00.0 offset=0 stride=1"), -ERANGE);
        ck_assert_int_eq(pcisim_ctl(sim, "layout 0000:01:00.0 offset=0xff00 stride=1"), -ERANGE);
        ck_assert_int_eq(pcisim_ctl(sim, "layout 0000:01:00.0 offset=16 stride=1"), 0);
        assert_link(DEV "0000:01:00.0/virtfn1", "../0000:01:01.2");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "2"), 0);
        assert_read(DEV "0000:01:00.0/sriov_offset", "16\n");
        assert_link(DEV "0000:01:00.0/virtfn1", "../0000:01:02.1");
        stop();
}
END_TEST

START_TEST(test_iommu_groups) {
        char *pf_group, *vf_group;

        start("mixed");
        /* per-vf: NVMe at 00:04.0 */
        ck_assert_int_eq(wr(DEV "0000:00:04.0/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(pcisim_readlink(sim, DEV "0000:00:04.0/iommu_group", &pf_group), 0);
        ck_assert_int_eq(pcisim_readlink(sim, DEV "0000:00:04.1/iommu_group", &vf_group), 0);
        ck_assert_str_ne(pf_group, vf_group);
        free(pf_group);
        free(vf_group);

        /* shared: the I350 at 03:00.0 and its VFs in one group */
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(pcisim_readlink(sim, NIC_PF "/iommu_group", &pf_group), 0);
        assert_link(DEV "0000:03:10.0/iommu_group", pf_group);
        assert_link(DEV "0000:03:10.4/iommu_group", pf_group);
        {
                char *g, *p;
                ck_assert_int_ge(asprintf(&g, "kernel/iommu_groups/%s/devices/", strrchr(pf_group, '/') + 1), 0);
                ck_assert_int_ge(asprintf(&p, "%s0000:03:10.4", g), 0);
                assert_resolves(p, DEV "0000:03:10.4");
                free(p);
                ck_assert_int_ge(asprintf(&p, "%s0000:03:00.0", g), 0);
                assert_resolves(p, NIC_PF);
                free(p);
                free(g);
        }
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), 0);
        assert_link(NIC_PF "/iommu_group", pf_group);
        free(pf_group);
        stop();
}
END_TEST

START_TEST(test_config) {
        uint8_t b[4096];

        start("nic");
        ck_assert_int_eq(read_config("0000:03:00.0", b), 4096);
        ck_assert_uint_eq(cfg16(b, 0), 0x8086);
        ck_assert_uint_eq(cfg16(b, 2), 0x1521);
        ck_assert_uint_eq(b[8], 0x01);
        ck_assert_uint_eq(cfg32(b, 8) >> 8, 0x020000);
        ck_assert_uint_eq(cfg16(b, 0x2c), 0x8086);
        ck_assert_uint_eq(cfg16(b, 0x2e), 0x0001);
        ck_assert(cfg16(b, 6) & 0x10);
        ck_assert_uint_eq(b[b[0x34]], 0x10);                    /* PCI Express */
        ck_assert_uint_eq(cfg32(b, 0x100), 0x00010010);         /* SR-IOV v1, last */
        ck_assert_uint_eq(cfg16(b, 0x108), 0);                  /* VF Enable off */
        ck_assert_uint_eq(cfg16(b, 0x10c), 7);
        ck_assert_uint_eq(cfg16(b, 0x10e), 7);
        ck_assert_uint_eq(cfg16(b, 0x110), 0);
        ck_assert_uint_eq(cfg16(b, 0x114), 0x80);
        ck_assert_uint_eq(cfg16(b, 0x116), 4);
        ck_assert_uint_eq(cfg16(b, 0x11a), 0x1520);
        ck_assert_uint_eq(cfg32(b, 0x11c), 0x553);
        ck_assert_uint_eq(cfg32(b, 0x120), 1);

        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), 0);
        read_config("0000:03:00.0", b);
        ck_assert_uint_eq(cfg16(b, 0x108), 0x0009);             /* VF Enable + VF MSE */
        ck_assert_uint_eq(cfg16(b, 0x110), 3);

        ck_assert_int_eq(read_config("0000:03:10.4", b), 4096);
        ck_assert_uint_eq(cfg16(b, 2), 0x1520);
        ck_assert_uint_eq(cfg32(b, 0x100), 0);                  /* no SR-IOV in a VF */
        ck_assert_int_eq(read_config("0000:00:00.0", b), 256);  /* conventional PCI */
        stop();
}
END_TEST

/* ---- faults ---- */

START_TEST(test_fault_fail) {
        start("nic");
        ck_assert_int_eq(pcisim_ctl(sim, "fail 0000:03:00.0 sriov_numvfs EIO"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "1"), -EIO);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "1"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "fail * unbind 16 2"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), -EBUSY);
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), -EBUSY);
        ck_assert_int_eq(pcisim_ctl(sim, "fail pci drivers_probe ETIMEDOUT always"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:00.0"), -ETIMEDOUT);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:00.0"), -ETIMEDOUT);
        ck_assert_int_eq(pcisim_ctl(sim, "clear-faults"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:00.0"), 0);
        /* bad commands fail the write */
        ck_assert_int_eq(pcisim_ctl(sim, "fail 0000:03:00.0 sriov_numvfs EWHATEVER"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "fail 0000:03:00.0"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "frobnicate"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "latency warp 10"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "hold 0000:77:00.0"), -ENODEV);
        ck_assert_int_eq(pcisim_ctl(sim, "add-pf {not json"), -EINVAL);
        stop();
}
END_TEST

/* Read faults: a device attribute's show fails, or the device is gone by
 * the time it is read; writes and reads do not share faults. */
START_TEST(test_fault_read) {
        char *s = NULL;

        start("nic");
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read 0000:03:00.0 vendor EIO"), 0);
        ck_assert_int_eq(pcisim_read(sim, NIC_PF "/vendor", &s), -EIO);
        assert_read(NIC_PF "/vendor", "0x8086\n");
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read * sriov_numvfs EIO always"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(pcisim_read(sim, NIC_PF "/sriov_numvfs", &s), -EIO);
        ck_assert_int_eq(pcisim_read(sim, NIC_PF "/sriov_numvfs", &s), -EIO);
        ck_assert_int_eq(pcisim_ctl(sim, "fail 0000:03:00.0 vendor EIO"), 0);
        assert_read(NIC_PF "/vendor", "0x8086\n");
        ck_assert_int_eq(pcisim_ctl(sim, "clear-faults"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "2\n");

        /* VF 1 goes just before its driver_override is read: the read
         * fails as under an open kernfs file, VF 0 stays. */
        ck_assert_int_eq(pcisim_ctl(sim, "vanish-read 0000:03:10.4 0000:03:10.4 driver_override"), 0);
        assert_read(DEV "0000:03:10.0/driver_override", "(null)\n");
        ck_assert_int_eq(pcisim_read(sim, DEV "0000:03:10.4/driver_override", &s), -ENODEV);
        ck_assert(!exists(BUSDEV "0000:03:10.4"));
        ck_assert(!exists(NIC_PF "/virtfn1"));
        ck_assert(exists(BUSDEV "0000:03:10.0"));
        ck_assert_ptr_null(s);

        ck_assert_int_eq(pcisim_ctl(sim, "vanish-read 0000:77:00.0 * vendor"), -ENODEV);
        ck_assert_int_eq(pcisim_ctl(sim, "vanish-read 0000:03:00.0 * vendor 2"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "fail-read 0000:03:00.0 vendor"), -EINVAL);
        stop();
}
END_TEST

START_TEST(test_fault_partial) {
        uint8_t b[4096];

        start("nic");
        ck_assert_int_eq(pcisim_ctl(sim, "partial 0000:03:00.0 2"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "5"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "2\n");
        ck_assert(exists(NIC_PF "/virtfn1"));
        ck_assert(!exists(NIC_PF "/virtfn2"));
        read_config("0000:03:00.0", b);
        ck_assert_uint_eq(cfg16(b, 0x110), 2);
        /* one shot */
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "5"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "5\n");
        stop();
}
END_TEST

struct writer {
        const char *rel;
        const char *value;
        volatile int done;
        int r;
};

static void *writer_thread(void *p) {
        struct writer *w = p;
        w->r = wr(w->rel, w->value);
        w->done = 1;
        return NULL;
}

static bool wait_done(struct writer *w, unsigned ms) {
        for (unsigned i = 0; i < ms / 10 && !w->done; i++)
                usleep(10000);
        return w->done;
}

START_TEST(test_fault_hold) {
        struct writer w = { NIC_PF "/sriov_numvfs", "0" };
        pthread_t t;
        uint64_t t0;

        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "hold 0000:03:10.4"), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, writer_thread, &w), 0);
        ck_assert(!wait_done(&w, 300));
        /* other requests are served meanwhile, promptly */
        t0 = now_ms();
        assert_read(NIC_PF "/vendor", "0x8086\n");
        assert_read(NIC_PF "/sriov_totalvfs", "7\n");
        /* VF 0 first (sriov_del_vfs()): it is gone, the held VF 1 has
         * lost its links, VF 2 waits its turn */
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        ck_assert(exists(BUSDEV "0000:03:10.4"));
        ck_assert(!exists(NIC_PF "/virtfn1"));
        ck_assert(!exists(DEV "0000:03:10.4/physfn"));
        ck_assert(exists(BUSDEV "0000:03:11.0"));
        ck_assert(exists(NIC_PF "/virtfn2"));
        ck_assert_uint_lt(now_ms() - t0, 200);
        ck_assert(!w.done);
        ck_assert_int_eq(pcisim_ctl(sim, "release 0000:03:10.4"), 0);
        ck_assert(wait_done(&w, 3000));
        pthread_join(t, NULL);
        ck_assert_int_eq(w.r, 0);
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        ck_assert(!exists(BUSDEV "0000:03:10.4"));

        /* removing a held VF's PF blocks too */
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "1"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "hold 0000:03:10.0"), 0);
        w = (struct writer) { NIC_PF "/remove", "1" };
        ck_assert_int_eq(pthread_create(&t, NULL, writer_thread, &w), 0);
        ck_assert(!wait_done(&w, 300));
        ck_assert_int_eq(pcisim_ctl(sim, "release 0000:03:10.0"), 0);
        ck_assert(wait_done(&w, 3000));
        pthread_join(t, NULL);
        ck_assert_int_eq(w.r, 0);
        ck_assert(!exists(BUSDEV "0000:03:00.0"));
        stop();
}
END_TEST

START_TEST(test_hotplug) {
        start("nic");
        ck_assert_int_eq(pcisim_ctl(sim, "add-pf {\"address\": \"0000:06:00.0\", \"vendor\": \"0x1b36\", "
                                         "\"device\": \"0x0010\", \"class\": \"0x010802\", \"driver\": \"nvme\", "
                                         "\"totalvfs\": 4, \"offset\": 1, \"stride\": 1}"), 0);
        assert_link(DEV "0000:06:00.0/driver", "../../../bus/pci/drivers/nvme");
        ck_assert(exists(DEV "0000:06:00.0/sriov_numvfs"));
        ck_assert_int_eq(pcisim_ctl(sim, "add-pf {\"address\": \"0000:06:00.0\", \"vendor\": 1, \"device\": 2}"), -EEXIST);
        ck_assert_int_eq(wr(DEV "0000:06:00.0/sriov_numvfs", "4"), 0);
        assert_link(DEV "0000:06:00.4/physfn", "../0000:06:00.0");
        /* remove: a rescan finds it again; like writing remove, its VFs
         * stay behind (nvme leaves SR-IOV on) */
        ck_assert_int_eq(pcisim_ctl(sim, "remove 0000:06:00.0"), 0);
        ck_assert(!exists(BUSDEV "0000:06:00.0"));
        ck_assert(exists(BUSDEV "0000:06:00.1"));
        ck_assert_int_eq(pcisim_ctl(sim, "remove 0000:06:00.0"), -ENODEV);
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        ck_assert(exists(BUSDEV "0000:06:00.0"));
        /* unplug: it does not, and a surprise removal takes the VFs too */
        ck_assert_int_eq(pcisim_ctl(sim, "unplug 0000:06:00.0"), 0);
        ck_assert(!exists(BUSDEV "0000:06:00.1"));
        ck_assert(!exists(BUSDEV "0000:06:00.4"));
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        ck_assert(!exists(BUSDEV "0000:06:00.0"));
        stop();
}
END_TEST

/* ---- PFs with VFs enabled, and the other rules the real kernel showed
 * (tests/vm/scenarios/06-conformance compares each with the kernel) ---- */

#define NVME_PF DEV "0000:00:04.0"

static unsigned long long stat_value(const char *name) {
        char *s = rd(".pcisim/stats"), *key, *p;
        unsigned long long v;

        ck_assert_int_ge(asprintf(&key, "\n%s ", name), 0);
        p = strstr(s, key);
        ck_assert_msg(p, "no '%s' in .pcisim/stats", name);
        ck_assert_int_eq(sscanf(p + strlen(key), "%llu", &v), 1);
        free(key);
        free(s);
        return v;
}

/* nvme_remove() leaves SR-IOV on (pci_iov_remove() only warns): the VFs
 * and the count stay, and with no driver the count cannot change. */
START_TEST(test_unbind_keeps_vfs) {
        start("nvme");
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/nvme/unbind", "0000:00:04.0"), 0);
        ck_assert(!exists(NVME_PF "/driver"));
        assert_read(NVME_PF "/sriov_numvfs", "2\n");
        assert_link(NVME_PF "/virtfn1", "../0000:00:04.2");
        assert_link(DEV "0000:00:04.2/driver", "../../../bus/pci/drivers/nvme");
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "0"), -ENOENT);
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "1"), -ENOENT);
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "2"), 0);         /* equal: no driver needed */
        ck_assert_int_eq(wr("bus/pci/drivers/nvme/bind", "0000:00:04.0"), 0);
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "0"), 0);
        ck_assert(!exists(BUSDEV "0000:00:04.1"));
        stop();
}
END_TEST

/* remove of such a PF orphans its VFs; after a rescan they still hold the
 * new PF's VF addresses, and enabling VFs over them is where the real
 * kernel breaks (ENOENT, a duplicate-sysfs warning, a BUG seen later). */
START_TEST(test_remove_orphans_vfs) {
        start("nvme");
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(wr(NVME_PF "/remove", "1"), 0);
        ck_assert(!exists(BUSDEV "0000:00:04.0"));
        ck_assert(exists(BUSDEV "0000:00:04.1"));
        assert_link(DEV "0000:00:04.2/driver", "../../../bus/pci/drivers/nvme");
        assert_link(DEV "0000:00:04.1/physfn", "../0000:00:04.0");
        ck_assert(!exists(DEV "0000:00:04.1/physfn/vendor"));  /* dangling */

        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        assert_read(NVME_PF "/sriov_numvfs", "0\n");
        ck_assert(!exists(NVME_PF "/virtfn0"));
        ck_assert(exists(BUSDEV "0000:00:04.1"));
        assert_read(DEV "0000:00:04.1/physfn/vendor", "0x1b36\n");
        ck_assert_uint_eq(stat_value("kernel_breaks"), 0);
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "2"), -ENOENT);
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "1"), -ENOENT);
        ck_assert_uint_eq(stat_value("kernel_breaks"), 2);
        assert_read(NVME_PF "/sriov_numvfs", "0\n");
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "0"), 0);
        stop();
}
END_TEST

/* vfio_pci_core_register_device(): "Cannot bind to PF with SR-IOV
 * enabled" is the probe's EBUSY; drivers_probe still succeeds. */
START_TEST(test_vfio_refuses_pf_with_vfs) {
        start("nvme");
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/nvme/unbind", "0000:00:04.0"), 0);
        ck_assert_int_eq(wr(NVME_PF "/driver_override", "vfio-pci"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/bind", "0000:00:04.0"), -EBUSY);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:00:04.0"), 0);
        ck_assert(!exists(NVME_PF "/driver"));
        assert_read(NVME_PF "/sriov_numvfs", "2\n");
        /* with its VFs off it binds */
        ck_assert_int_eq(wr(NVME_PF "/driver_override", "\n"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/nvme/bind", "0000:00:04.0"), 0);
        ck_assert_int_eq(wr(NVME_PF "/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/nvme/unbind", "0000:00:04.0"), 0);
        ck_assert_int_eq(wr(NVME_PF "/driver_override", "vfio-pci"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/bind", "0000:00:04.0"), 0);
        assert_link(NVME_PF "/driver", "../../../bus/pci/drivers/vfio-pci");
        stop();
}
END_TEST

/* sriov_del_vfs() removes VF 0 first, and pci_iov_remove_virtfn() drops
 * its links before blocking on it: with VF 0 held, every VF is shown. */
START_TEST(test_disable_vf0_first) {
        struct writer w = { NIC_PF "/sriov_numvfs", "0" };
        pthread_t t;

        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "hold 0000:03:10.0"), 0);
        ck_assert_int_eq(pthread_create(&t, NULL, writer_thread, &w), 0);
        ck_assert(!wait_done(&w, 300));
        ck_assert(exists(BUSDEV "0000:03:10.0"));
        ck_assert(exists(BUSDEV "0000:03:10.4"));
        ck_assert(exists(BUSDEV "0000:03:11.0"));
        ck_assert(!exists(NIC_PF "/virtfn0"));
        ck_assert(!exists(DEV "0000:03:10.0/physfn"));
        /* driver_sysfs_remove() runs before the blocked remove() */
        ck_assert(!exists(DEV "0000:03:10.0/driver"));
        ck_assert(!exists("bus/pci/drivers/igbvf/0000:03:10.0"));
        assert_link(NIC_PF "/virtfn1", "../0000:03:10.4");
        assert_link(NIC_PF "/virtfn2", "../0000:03:11.0");
        assert_link(DEV "0000:03:11.0/physfn", "../0000:03:00.0");
        ck_assert_int_eq(pcisim_ctl(sim, "release 0000:03:10.0"), 0);
        ck_assert(wait_done(&w, 3000));
        pthread_join(t, NULL);
        ck_assert_int_eq(w.r, 0);
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        ck_assert(!exists(BUSDEV "0000:03:11.0"));
        stop();
}
END_TEST

/* drivers_autoprobe_store(): a leading '0' turns it off, anything else
 * on, and no value is refused. */
START_TEST(test_bus_drivers_autoprobe) {
        static const struct {
                const char *in, *out;
        } cases[] = {
                { "0", "0\n" }, { "n", "1\n" }, { "0", "0\n" }, { "off", "1\n" }, { "0x1", "0\n" },
                { "x", "1\n" }, { "00", "0\n" }, { "\n", "1\n" }, { "0\n", "0\n" }, { "1", "1\n" },
        };

        start("nic");
        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                ck_assert_msg(wr("bus/pci/drivers_autoprobe", cases[i].in) == 0, "'%s' refused", cases[i].in);
                assert_read("bus/pci/drivers_autoprobe", cases[i].out);
        }
        stop();
}
END_TEST

/* enable_store(): the number is parsed first, then a bound driver owns
 * the count (EBUSY); unbound, 0 below the count is EIO. */
START_TEST(test_enable_busy) {
        start("nic");
        assert_read(NIC_PF "/enable", "1\n");
        ck_assert_int_eq(wr(NIC_PF "/enable", "x"), -EINVAL);
        ck_assert_int_eq(wr(NIC_PF "/enable", "0"), -EBUSY);
        ck_assert_int_eq(wr(NIC_PF "/enable", "1"), -EBUSY);
        assert_read(NIC_PF "/enable", "1\n");
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), 0);
        assert_read(NIC_PF "/enable", "0\n");
        ck_assert_int_eq(wr(NIC_PF "/enable", "1"), 0);
        assert_read(NIC_PF "/enable", "1\n");
        ck_assert_int_eq(wr(NIC_PF "/enable", "0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/enable", "0"), -EIO);
        assert_read(NIC_PF "/enable", "0\n");
        stop();
}
END_TEST

static int drop_sys_admin(void) {
        struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
        d[CAP_SYS_ADMIN / 32].permitted &= ~(1u << (CAP_SYS_ADMIN % 32));
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

struct unprivileged {
        ssize_t opened_privileged, opened_unprivileged;
        int drop, enable, numa;
};

/* Without CAP_SYS_ADMIN: pci_read_config() shows 64 bytes of config (the
 * opener's privilege counts, file_ns_capable()), and enable_store() and
 * numa_node_store() refuse with EPERM. */
START_TEST(test_unprivileged) {
        struct unprivileged u = {};
        int fds[2], status;
        char *path;
        pid_t pid;

        start("nic");
        if (getuid() != 0) {
                fprintf(stderr, "not root: pcisim's owner plays root, no unprivileged reader to test\n");
                stop();
                return;
        }
        ck_assert_int_ge(asprintf(&path, "%s/" BUSDEV "0000:03:00.0/config", pcisim_root(sim)), 0);
        ck_assert_int_eq(pipe(fds), 0);
        pid = fork();
        ck_assert_int_ge(pid, 0);
        if (pid == 0) {
                uint8_t b[4096];
                int fd1 = open(path, O_RDONLY | O_CLOEXEC), fd2;

                u.drop = drop_sys_admin();
                fd2 = open(path, O_RDONLY | O_CLOEXEC);
                u.opened_privileged = fd1 < 0 ? -errno : pread(fd1, b, sizeof(b), 0);
                u.opened_unprivileged = fd2 < 0 ? -errno : pread(fd2, b, sizeof(b), 0);
                u.enable = wr(NIC_PF "/enable", "1");
                u.numa = wr(NIC_PF "/numa_node", "0");
                _exit(write(fds[1], &u, sizeof(u)) == sizeof(u) ? 0 : 1);
        }
        close(fds[1]);
        ck_assert_int_eq(read(fds[0], &u, sizeof(u)), sizeof(u));
        close(fds[0]);
        ck_assert_int_eq(waitpid(pid, &status, 0), pid);
        ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
        ck_assert_int_eq(u.drop, 0);
        ck_assert_int_eq(u.opened_privileged, 4096);
        ck_assert_int_eq(u.opened_unprivileged, 64);
        ck_assert_int_eq(u.enable, -EPERM);
        ck_assert_int_eq(u.numa, -EPERM);
        /* the size does not depend on who asks */
        {
                struct stat st;
                ck_assert_int_eq(stat(path, &st), 0);
                ck_assert_int_eq(st.st_size, 4096);
        }
        free(path);
        stop();
}
END_TEST

/* numa_node_store(): kstrtoint(), then NUMA_NO_NODE or an online node. */
START_TEST(test_numa_node) {
        static const char *const bad[] = { "1", "-2", "-+1", "x", "64", "1024", "\n" };

        start("nic");           /* one device on node 0: only node 0 is online */
        for (size_t i = 0; i < ELEMENTSOF(bad); i++)
                ck_assert_msg(wr(NIC_PF "/numa_node", bad[i]) == -EINVAL, "'%s' accepted", bad[i]);
        assert_read(NIC_PF "/numa_node", "0\n");
        ck_assert_int_eq(wr(NIC_PF "/numa_node", "-1"), 0);
        assert_read(NIC_PF "/numa_node", "-1\n");
        ck_assert_int_eq(wr(NIC_PF "/numa_node", "+0x0\n"), 0);
        assert_read(NIC_PF "/numa_node", "0\n");
        /* a device on node 1 brings node 1 online */
        ck_assert_int_eq(pcisim_ctl(sim, "add-pf {\"address\": \"0000:07:00.0\", \"vendor\": \"0x8086\", "
                                         "\"device\": \"0x10d3\", \"numa_node\": 1}"), 0);
        ck_assert_int_eq(wr(NIC_PF "/numa_node", "1"), 0);
        assert_read(NIC_PF "/numa_node", "1\n");
        ck_assert_int_eq(wr(NIC_PF "/numa_node", "2"), -EINVAL);
        stop();
}
END_TEST

/* dev_rescan_store() -> pci_rescan_bus(pdev->bus): that bus only. */
START_TEST(test_device_rescan_own_bus) {
        start("mixed");
        ck_assert_int_eq(wr(DEV "0000:00:04.0/remove", "1"), 0);
        ck_assert_int_eq(wr(NIC_PF "/remove", "1"), 0);
        ck_assert_int_eq(wr(DEV "0000:00:00.0/rescan", "x"), -EINVAL);
        ck_assert_int_eq(wr(DEV "0000:00:00.0/rescan", "0"), 0);
        ck_assert(!exists(BUSDEV "0000:00:04.0"));
        ck_assert_int_eq(wr(DEV "0000:00:00.0/rescan", "1"), 0);
        ck_assert(exists(BUSDEV "0000:00:04.0"));
        ck_assert(!exists(BUSDEV "0000:03:00.0"));
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        ck_assert(exists(BUSDEV "0000:03:00.0"));
        stop();
}
END_TEST

/* vfio-pci has sriov_configure(); it is ENOENT only while its
 * enable_sriov parameter is off (the default). On, VFs come, captured for
 * vfio-pci (vfio_pci_bus_notifier()), and go when it lets the PF go. */
START_TEST(test_vfio_enable_sriov) {
        start("nic");
        assert_read("module/vfio_pci/parameters/enable_sriov", "N\n");
        ck_assert_int_eq(wr("bus/pci/drivers/igb/unbind", "0000:03:00.0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/driver_override", "vfio-pci"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers_probe", "0000:03:00.0"), 0);
        assert_link(NIC_PF "/driver", "../../../bus/pci/drivers/vfio-pci");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), -ENOENT);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), 0);

        ck_assert_int_eq(wr("module/vfio_pci/parameters/enable_sriov", "maybe"), -EINVAL);
        ck_assert_int_eq(wr("module/vfio_pci/parameters/enable_sriov", "y"), 0);
        assert_read("module/vfio_pci/parameters/enable_sriov", "Y\n");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        assert_read(DEV "0000:03:10.4/driver_override", "vfio-pci\n");
        assert_link(DEV "0000:03:10.4/driver", "../../../bus/pci/drivers/vfio-pci");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), -EBUSY);
        /* the parameter counts when sriov_configure() is called: after EBUSY */
        ck_assert_int_eq(wr("module/vfio_pci/parameters/enable_sriov", "0"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), -EBUSY);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), -ENOENT);
        ck_assert_int_eq(wr("module/vfio_pci/parameters/enable_sriov", "1"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/vfio-pci/unbind", "0000:03:00.0"), 0);
        assert_read(NIC_PF "/sriov_numvfs", "0\n");
        ck_assert(!exists(BUSDEV "0000:03:10.0"));
        stop();
}
END_TEST

START_TEST(test_stats) {
        char *s, *p;
        unsigned long long v;

        start("nic");
        ck_assert_int_eq(pcisim_ctl(sim, "reset-stats"), 0);
        assert_read(NIC_PF "/vendor", "0x8086\n");
        s = rd(".pcisim/stats");
        p = strstr(s, "\nread ");
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(sscanf(p, "\nread %llu", &v), 1);
        ck_assert_uint_ge(v, 1);
        p = strstr(s, "\nopen ");
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(sscanf(p, "\nopen %llu", &v), 1);
        ck_assert_uint_eq(v, 1);
        p = strstr(s, "\ntotal ");
        ck_assert_ptr_nonnull(p);
        ck_assert_int_eq(sscanf(p, "\ntotal %llu", &v), 1);
        ck_assert_uint_ge(v, 3);
        ck_assert(strncmp(s, "getattr ", 8) == 0);
        free(s);
        ck_assert_int_eq(pcisim_ctl(sim, "reset-stats"), 0);
        s = rd(".pcisim/stats");
        ck_assert_ptr_nonnull(strstr(s, "\ntotal 0\n"));        /* the control dir is not counted */
        free(s);
        stop();
}
END_TEST

START_TEST(test_latency) {
        uint64_t t0;

        start("nic");
        ck_assert_int_eq(pcisim_ctl(sim, "latency vf_enable 100000"), 0);
        t0 = now_ms();
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "3"), 0);
        ck_assert_uint_ge(now_ms() - t0, 300);
        ck_assert_int_eq(pcisim_ctl(sim, "latency vf_enable 0"), 0);
        stop();

        ck_assert_int_eq(pcisim_start_args("nic", &sim, "--latency-profile", "svff-paper", NULL), 0);
        t0 = now_ms();
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        ck_assert_uint_ge(now_ms() - t0, 138);
        t0 = now_ms();
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "1"), 0);
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "0"), 0);
        ck_assert_uint_ge(now_ms() - t0, 1256);
        stop();
}
END_TEST

START_TEST(test_device_classes) {
        start("qdma");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "252"), 0);
        assert_read(DEV "0000:01:00.0/qdma/qmax", "512\n");
        /* each qdma-vf asks for 8 at probe: (2048 - 512) / 8 = 192 VFs get
         * them, the budget is spent for the other 60 */
        assert_read(DEV "0000:01:00.4/qdma/qmax", "8\n");
        assert_read(DEV "0000:01:18.3/qdma/qmax", "8\n");
        assert_read(DEV "0000:01:18.4/qdma/qmax", "0\n");
        assert_read(DEV "0000:01:1f.7/qdma/qmax", "0\n");
        assert_link(DEV "0000:01:1f.7/driver", "../../../bus/pci/drivers/qdma-vf");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "513"), -ENOSPC);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "256"), 0);
        assert_read(DEV "0000:01:00.0/qdma/qmax", "256\n");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "lots"), -EINVAL);
        ck_assert_int_eq(wr("bus/pci/drivers/qdma-vf/unbind", "0000:01:1f.7"), 0);
        ck_assert(!exists(DEV "0000:01:1f.7/qdma"));
        stop();

        start("nvme");
        ck_assert(exists(DEV "0000:00:04.0/nvme/nvme0/state"));
        stop();
}
END_TEST

START_TEST(test_lspci) {
        char *cmd, line[1024];
        bool pf = false, vf = false, cap = false, counts = false, geometry = false, drv = false;
        FILE *f;

        start("nic");
        ck_assert_int_eq(wr(NIC_PF "/sriov_numvfs", "2"), 0);
        ck_assert_int_ge(asprintf(&cmd, "lspci -A linux-sysfs -O sysfs.path=%s/bus/pci -nn -vv 2>&1",
                                  pcisim_root(sim)), 0);
        f = popen(cmd, "r");
        ck_assert_ptr_nonnull(f);
        while (fgets(line, sizeof(line), f)) {
                pf = pf || strstr(line, "03:00.0 Ethernet controller [0200]: Intel Corporation I350 Gigabit Network Connection [8086:1521] (rev 01)");
                vf = vf || strstr(line, "03:10.4 Ethernet controller [0200]: Intel Corporation I350 Ethernet Controller Virtual Function [8086:1520]");
                cap = cap || strstr(line, "Capabilities: [100 v1] Single Root I/O Virtualization (SR-IOV)");
                counts = counts || strstr(line, "Initial VFs: 7, Total VFs: 7, Number of VFs: 2, Function Dependency Link: 00");
                geometry = geometry || strstr(line, "VF offset: 128, stride: 4, Device ID: 1520");
                drv = drv || strstr(line, "Kernel driver in use: igbvf");
        }
        ck_assert_int_eq(pclose(f), 0);
        free(cmd);
        ck_assert(pf);
        ck_assert(vf);
        ck_assert(cap);
        ck_assert(counts);
        ck_assert(geometry);
        ck_assert(drv);
        stop();
}
END_TEST

static bool have_lspci(void) {
        return system("lspci --version >/dev/null 2>&1") == 0;
}

/* The device's queue budget is shared by the PF and its VFs; a VF's
 * queues are what its driver asked for (the guest's, over the mailbox,
 * for a VF on vfio-pci: ctl "qmax"), and a VF disable wipes them. */
START_TEST(test_qdma_budget) {
        start("qdma");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_drivers_autoprobe", "0"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "4"), 0);
        ck_assert(!exists(DEV "0000:01:00.4/qdma"));
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:01:00.4 8"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:01:00.5 1529"), -ENOSPC);
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:01:00.5 1528"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "513"), -ENOSPC);
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:01:00.5 0"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "2040"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:00:00.0 8"), -EOPNOTSUPP);
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:01:00.4 x"), -EINVAL);

        /* a VF driver that finds no room probes with 0 queues */
        ck_assert_int_eq(wr(DEV "0000:01:00.6/driver_override", "qdma-vf"), 0);
        ck_assert_int_eq(wr("bus/pci/drivers/qdma-vf/bind", "0000:01:00.6"), 0);
        assert_read(DEV "0000:01:00.6/qdma/qmax", "0\n");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "512"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.6/qdma/qmax", "16"), 0);
        assert_read(DEV "0000:01:00.6/qdma/qmax", "16\n");
        /* unbinding says bye: the PF takes the VF's queues back */
        ck_assert_int_eq(wr("bus/pci/drivers/qdma-vf/unbind", "0000:01:00.6"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.6 0"), -EINVAL);

        /* numvfs 0 -> 4: every VF's queues are gone */
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.4 7"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "0"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "4"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.4 0"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "qmax 0000:01:00.4 1536"), 0);
        stop();
}
END_TEST

/* qmax cannot change while a queue of that function is started: EBUSY,
 * and "queues" names them as dma-ctl does. */
START_TEST(test_qdma_active_queues) {
        start("qdma");
        assert_read(DEV "0000:01:00.0/qdma/queues", "");
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.0 3"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.0 3"), -EEXIST);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.0 17 ST"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.0 512"), -EINVAL);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.0 1 XX"), -EINVAL);
        assert_read(DEV "0000:01:00.0/qdma/queues", "qdma01000-MM-3\nqdma01000-ST-17\n");
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "64"), -EBUSY);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "512"), -EBUSY);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-stop 0000:01:00.0 3"), 0);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-stop 0000:01:00.0 3"), -ENOENT);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "64"), -EBUSY);
        ck_assert_int_eq(pcisim_ctl(sim, "queue-stop 0000:01:00.0 17"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "64"), 0);

        /* a VF's queues hold only the VF's qmax */
        ck_assert_int_eq(wr(DEV "0000:01:00.0/sriov_numvfs", "1"), 0);
        assert_read(DEV "0000:01:00.4/qdma/qmax", "8\n");
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.4 0"), 0);
        assert_read(DEV "0000:01:00.4/qdma/queues", "qdmavf01004-MM-0\n");
        ck_assert_int_eq(wr(DEV "0000:01:00.4/qdma/qmax", "4"), -EBUSY);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/qdma/qmax", "32"), 0);

        /* a rescanned PF is a fresh device: its queues stopped, qmax as scanned */
        ck_assert_int_eq(pcisim_ctl(sim, "queue-start 0000:01:00.0 1"), 0);
        ck_assert_int_eq(wr(DEV "0000:01:00.0/remove", "1"), 0);
        ck_assert_int_eq(wr("bus/pci/rescan", "1"), 0);
        assert_read(DEV "0000:01:00.0/qdma/queues", "");
        assert_read(DEV "0000:01:00.0/qdma/qmax", "512\n");
        stop();
}
END_TEST

static Suite *pcisim_suite(void) {
        Suite *s = suite_create("pcisim");
        TCase *tc = tcase_create("sysfs");

        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_tree);
        tcase_add_test(tc, test_access_modes);
        tcase_add_test(tc, test_numvfs_einval);
        tcase_add_test(tc, test_numvfs_order);
        tcase_add_test(tc, test_numvfs_enoent_driver_without_sriov);
        tcase_add_test(tc, test_numvfs_ebusy_and_disable);
        tcase_add_test(tc, test_routing_ids);
        tcase_add_test(tc, test_autoprobe);
        tcase_add_test(tc, test_override_and_probe);
        tcase_add_test(tc, test_bind_unbind);
        tcase_add_test(tc, test_new_id);
        tcase_add_test(tc, test_remove_rescan);
        tcase_add_test(tc, test_iommu_groups);
        tcase_add_test(tc, test_config);
        tcase_add_test(tc, test_fault_fail);
        tcase_add_test(tc, test_fault_read);
        tcase_add_test(tc, test_fault_partial);
        tcase_add_test(tc, test_fault_hold);
        tcase_add_test(tc, test_hotplug);
        tcase_add_test(tc, test_unbind_keeps_vfs);
        tcase_add_test(tc, test_remove_orphans_vfs);
        tcase_add_test(tc, test_vfio_refuses_pf_with_vfs);
        tcase_add_test(tc, test_disable_vf0_first);
        tcase_add_test(tc, test_bus_drivers_autoprobe);
        tcase_add_test(tc, test_enable_busy);
        tcase_add_test(tc, test_unprivileged);
        tcase_add_test(tc, test_numa_node);
        tcase_add_test(tc, test_device_rescan_own_bus);
        tcase_add_test(tc, test_vfio_enable_sriov);
        tcase_add_test(tc, test_stats);
        tcase_add_test(tc, test_latency);
        tcase_add_test(tc, test_device_classes);
        tcase_add_test(tc, test_qdma_budget);
        tcase_add_test(tc, test_qdma_active_queues);
        tcase_add_test(tc, test_reprogram_moves_vfs);
        if (have_lspci())
                tcase_add_test(tc, test_lspci);
        else
                fprintf(stderr, "lspci not found: not checking fidelity against libpci\n");
        suite_add_tcase(s, tc);
        return s;
}

int main(void) {
        struct pcisim *probe = NULL;
        SRunner *sr;
        int r, failed;

        r = pcisim_start("nic", &probe);
        if (r == -EOPNOTSUPP || r == -ENOENT) {
                printf("skipping: %s\n", r == -ENOENT ? "$PCISIM is not set or not executable"
                                                      : "FUSE is not usable here (no /dev/fuse or mount denied)");
                return 77;
        }
        if (r < 0) {
                fprintf(stderr, "pcisim_start: %s\n", strerror(-r));
                return 1;
        }
        pcisim_free(probe);

        sr = srunner_create(pcisim_suite());
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? 0 : 1;
}

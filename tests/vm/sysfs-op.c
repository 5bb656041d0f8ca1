/* sysfs-op: one sysfs operation, its result printed as the conformance
 * transcript wants it. A shell's "echo > file" loses the errno of the
 * write; this keeps it exact.
 *
 *   sysfs-op write PATH VALUE   one write(2) of VALUE plus a newline, as
 *                               echo does; prints OK or the errno name
 *   sysfs-op read PATH          prints the first line, or the errno name
 *   sysfs-op link PATH          prints the target relative to the link's
 *                               directory, both resolved (absolute and
 *                               relative links that reach the same place
 *                               print the same), or the errno name
 *   sysfs-op exists PATH        prints yes or no (lstat)
 *   sysfs-op size PATH          prints st_size (stat), or the errno name
 *   sysfs-op mode PATH          prints the permission bits in octal (lstat)
 *   sysfs-op count PATH         prints how many bytes reading PATH to its end
 *                               gives, or the errno name
 *   sysfs-op hold GROUP BDF     opens VFIO device BDF through the group node
 *                               GROUP (/dev/vfio/N) as QEMU does, prints OK
 *                               (or the errno name and exits) and keeps it
 *                               open until killed: removing the device then
 *                               blocks in the kernel
 *
 * -u before the operation drops CAP_SYS_ADMIN first (effective and
 * permitted), as an unprivileged caller.
 *
 * Exits 0 whenever the operation was attempted, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/capability.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char *errno_name(int e) {
        const char *n = strerrorname_np(e);
        return n ? n : "EUNKNOWN";
}

static int op_write(const char *path, const char *value) {
        size_t len = strlen(value);
        char *buf = malloc(len + 2);
        int fd, r = 0;
        ssize_t n;

        if (!buf)
                return -ENOMEM;
        memcpy(buf, value, len);
        buf[len++] = '\n';
        fd = open(path, O_WRONLY | O_CLOEXEC);
        if (fd < 0) {
                r = -errno;
                goto out;
        }
        n = write(fd, buf, len);
        if (n < 0)
                r = -errno;
        else if ((size_t) n != len)
                r = -EIO;
        /* sysfs reports errors at write(); close may still fail on FUSE. */
        if (close(fd) < 0 && r == 0)
                r = -errno;
out:
        free(buf);
        if (r < 0)
                return r;
        puts("OK");
        return 0;
}

static int op_read(const char *path) {
        char buf[4096];
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        n = read(fd, buf, sizeof(buf) - 1);
        if (n < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        buf[n] = '\0';
        buf[strcspn(buf, "\n")] = '\0';
        puts(buf);
        return 0;
}

/* Prints TARGET relative to DIR; both absolute, canonical paths. */
static void print_relative(const char *dir, const char *target) {
        size_t common = 0, i;
        bool first = true;

        if (strcmp(dir, "/") == 0)
                dir = "";
        /* Longest common prefix ending at a component boundary. */
        for (i = 0; dir[i] && dir[i] == target[i]; i++)
                if (dir[i] == '/')
                        common = i;
        if (!dir[i] && (target[i] == '/' || !target[i]))
                common = i;
        /* One ".." per component of DIR past the common prefix. */
        for (i = common; dir[i]; i++)
                if (dir[i] == '/') {
                        fputs(first ? ".." : "/..", stdout);
                        first = false;
                }
        if (target[common]) {
                if (!first)
                        putchar('/');
                fputs(target + common + 1, stdout);
        } else if (first)
                putchar('.');
        putchar('\n');
}

static int op_link(const char *path) {
        char raw[PATH_MAX], dir[PATH_MAX], target[PATH_MAX], parent[PATH_MAX];
        ssize_t n = readlink(path, raw, sizeof(raw) - 1);
        char *slash;

        if (n < 0)
                return -errno;
        raw[n] = '\0';
        if ((size_t) snprintf(parent, sizeof(parent), "%s", path) >= sizeof(parent))
                return -ENAMETOOLONG;
        slash = strrchr(parent, '/');
        if (slash == parent)
                slash[1] = '\0';
        else if (slash)
                *slash = '\0';
        else
                strcpy(parent, ".");
        if (!realpath(parent, dir) || !realpath(path, target))
                return -errno;
        print_relative(dir, target);
        if (raw[0] == '/') {
                /* The kernel's links are always relative: say so. */
                fputs("  (absolute link)\n", stdout);
        }
        return 0;
}

static int op_count(const char *path) {
        char buf[4096];
        long long total = 0;
        ssize_t n;
        int fd = open(path, O_RDONLY | O_CLOEXEC);

        if (fd < 0)
                return -errno;
        while ((n = read(fd, buf, sizeof(buf))) > 0)
                total += n;
        if (n < 0) {
                int r = -errno;
                close(fd);
                return r;
        }
        close(fd);
        printf("%lld\n", total);
        return 0;
}

/* What QEMU does to own a VFIO device: container, group, IOMMU, device fd. */
static int op_hold(const char *group_path, const char *bdf) {
        struct vfio_group_status status = { .argsz = sizeof(status) };
        int container, group, device;

        container = open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC);
        if (container < 0)
                return -errno;
        if (ioctl(container, VFIO_GET_API_VERSION) != VFIO_API_VERSION)
                return -EPROTO;
        group = open(group_path, O_RDWR | O_CLOEXEC);
        if (group < 0)
                return -errno;
        if (ioctl(group, VFIO_GROUP_GET_STATUS, &status) < 0)
                return -errno;
        if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE))
                return -EBUSY;
        if (ioctl(group, VFIO_GROUP_SET_CONTAINER, &container) < 0)
                return -errno;
        if (ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) < 0 &&
            ioctl(container, VFIO_SET_IOMMU, VFIO_TYPE1_IOMMU) < 0)
                return -errno;
        device = ioctl(group, VFIO_GROUP_GET_DEVICE_FD, bdf);
        if (device < 0)
                return -errno;
        puts("OK");
        fflush(stdout);
        for (;;)
                pause();
}

static int drop_sys_admin(void) {
        struct __user_cap_header_struct h = { _LINUX_CAPABILITY_VERSION_3, 0 };
        struct __user_cap_data_struct d[2];

        if (syscall(SYS_capget, &h, d) < 0)
                return -errno;
        d[CAP_SYS_ADMIN / 32].effective &= ~(1u << (CAP_SYS_ADMIN % 32));
        d[CAP_SYS_ADMIN / 32].permitted &= ~(1u << (CAP_SYS_ADMIN % 32));
        return syscall(SYS_capset, &h, d) < 0 ? -errno : 0;
}

int main(int argc, char **argv) {
        int r;

        if (argc > 1 && strcmp(argv[1], "-u") == 0) {
                r = drop_sys_admin();
                if (r < 0) {
                        fprintf(stderr, "sysfs-op: cannot drop CAP_SYS_ADMIN: %s\n", strerror(-r));
                        return 2;
                }
                argv++;
                argc--;
        }
        if (argc == 4 && strcmp(argv[1], "write") == 0)
                r = op_write(argv[2], argv[3]);
        else if (argc == 3 && strcmp(argv[1], "read") == 0)
                r = op_read(argv[2]);
        else if (argc == 3 && strcmp(argv[1], "link") == 0)
                r = op_link(argv[2]);
        else if (argc == 3 && strcmp(argv[1], "exists") == 0) {
                struct stat st;
                puts(lstat(argv[2], &st) == 0 ? "yes" : "no");
                r = 0;
        } else if (argc == 3 && strcmp(argv[1], "mode") == 0) {
                struct stat st;
                r = lstat(argv[2], &st) < 0 ? -errno : 0;
                if (r == 0)
                        printf("%04o\n", (unsigned) (st.st_mode & 07777));
        } else if (argc == 3 && strcmp(argv[1], "size") == 0) {
                struct stat st;
                r = stat(argv[2], &st) < 0 ? -errno : 0;
                if (r == 0)
                        printf("%lld\n", (long long) st.st_size);
        } else if (argc == 3 && strcmp(argv[1], "count") == 0)
                r = op_count(argv[2]);
        else if (argc == 4 && strcmp(argv[1], "hold") == 0)
                r = op_hold(argv[2], argv[3]);
        else {
                fprintf(stderr, "usage: sysfs-op [-u] write PATH VALUE | read PATH | link PATH | exists PATH | "
                                "size PATH | mode PATH | count PATH | hold GROUP BDF\n");
                return 2;
        }
        if (r < 0)
                puts(errno_name(-r));
        return 0;
}

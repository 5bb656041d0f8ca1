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
 *
 * Exits 0 whenever the operation was attempted, 2 on bad usage. */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
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

int main(int argc, char **argv) {
        int r;

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
        } else {
                fprintf(stderr, "usage: sysfs-op write PATH VALUE | read PATH | link PATH | exists PATH | size PATH | mode PATH\n");
                return 2;
        }
        if (r < 0)
                puts(errno_name(-r));
        return 0;
}

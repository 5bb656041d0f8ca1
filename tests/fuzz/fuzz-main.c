/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Runs a libFuzzer harness over files without libFuzzer, so the seed
 * corpora (and any crash reproducer) run under gcc, valgrind and
 * 'make check'. Arguments are files or directories; without any, the
 * corpus named at build time is read from $top_srcdir/tests/fuzz. */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int run_file(int dirfd, const char *name, const char *shown) {
        _cleanup_close_ int fd = -EBADF;
        _cleanup_free_ char *buf = NULL;
        size_t len = 0, alloc = 0;

        fd = openat(dirfd, name, O_RDONLY | O_CLOEXEC);
        if (fd < 0) {
                fprintf(stderr, "Failed to open '%s': %m\n", shown);
                return -errno;
        }
        for (;;) {
                ssize_t k;

                if (len == alloc) {
                        char *p = realloc(buf, alloc = alloc ? alloc * 2 : 4096);
                        if (!p)
                                return -ENOMEM;
                        buf = p;
                }
                k = read(fd, buf + len, alloc - len);
                if (k < 0) {
                        if (errno == EINTR)
                                continue;
                        fprintf(stderr, "Failed to read '%s': %m\n", shown);
                        return -errno;
                }
                if (k == 0)
                        break;
                len += (size_t) k;
        }

        /* an exact-size copy, so ASan/valgrind see reads past the end */
        _cleanup_free_ uint8_t *exact = malloc(len ? len : 1);
        if (!exact)
                return -ENOMEM;
        memcpy(exact, buf, len);
        LLVMFuzzerTestOneInput(exact, len);
        return 0;
}

static int run_path(const char *path, unsigned *n) {
        _cleanup_closedir_ DIR *d = NULL;
        struct stat st;
        int r;

        if (stat(path, &st) < 0) {
                fprintf(stderr, "Failed to stat '%s': %m\n", path);
                return -errno;
        }
        if (!S_ISDIR(st.st_mode)) {
                r = run_file(AT_FDCWD, path, path);
                if (r >= 0)
                        (*n)++;
                return r;
        }

        d = opendir(path);
        if (!d) {
                fprintf(stderr, "Failed to open '%s': %m\n", path);
                return -errno;
        }
        for (struct dirent *de; (de = readdir(d));) {
                _cleanup_free_ char *shown = NULL;

                if (de->d_name[0] == '.')
                        continue;
                if (asprintf(&shown, "%s/%s", path, de->d_name) < 0)
                        return -ENOMEM;
                r = run_file(dirfd(d), de->d_name, shown);
                if (r < 0)
                        return r;
                (*n)++;
        }
        return 0;
}

int main(int argc, char *argv[]) {
        _cleanup_free_ char *def = NULL;
        unsigned n = 0;

        if (argc < 2) {
                const char *top = getenv("top_srcdir") ?: ".";

                if (asprintf(&def, "%s/tests/fuzz/%s", top, FUZZ_CORPUS) < 0)
                        return EXIT_FAILURE;
                if (run_path(def, &n) < 0)
                        return EXIT_FAILURE;
        }
        for (int i = 1; i < argc; i++)
                if (run_path(argv[i], &n) < 0)
                        return EXIT_FAILURE;

        if (n == 0) {
                fprintf(stderr, "No inputs found.\n");
                return EXIT_FAILURE;
        }
        printf("%u inputs ran without a finding\n", n);
        return EXIT_SUCCESS;
}

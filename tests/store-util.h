/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Helpers shared by the store tests: whole-file read/write and directory
 * listing, so each test can assert what is on disk byte for byte. */

#include <check.h>
#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "macro.h"

static inline char *read_file(const char *dir, const char *name, size_t *ret_len) {
        _cleanup_free_ char *path = NULL;
        _cleanup_fclose_ FILE *f = NULL;
        char *buf;
        long n;

        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
        f = fopen(path, "re");
        if (!f)
                return NULL;
        ck_assert_int_eq(fseek(f, 0, SEEK_END), 0);
        n = ftell(f);
        ck_assert_int_ge(n, 0);
        rewind(f);
        buf = malloc((size_t) n + 1);
        ck_assert_ptr_nonnull(buf);
        ck_assert_uint_eq(fread(buf, 1, (size_t) n, f), (size_t) n);
        buf[n] = 0;
        if (ret_len)
                *ret_len = (size_t) n;
        return buf;
}

static inline void write_file(const char *dir, const char *name, const void *data, size_t len) {
        _cleanup_free_ char *path = NULL;
        _cleanup_close_ int fd = -EBADF;

        ck_assert_int_ge(asprintf(&path, "%s/%s", dir, name), 0);
        fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
        ck_assert_int_ge(fd, 0);
        ck_assert_int_eq(write(fd, data, len), (ssize_t) len);
}

/* Names in dir, sorted and joined with spaces ("" when empty). */
static inline char *list_dir(const char *dir) {
        struct dirent **names;
        char *s = NULL;
        size_t len = 0;
        _cleanup_fclose_ FILE *f = open_memstream(&s, &len);
        int n;

        ck_assert_ptr_nonnull(f);
        n = scandir(dir, &names, NULL, alphasort);
        ck_assert_int_ge(n, 0);
        for (int i = 0; i < n; i++) {
                if (names[i]->d_name[0] != '.' || (strcmp(names[i]->d_name, ".") != 0 &&
                                                   strcmp(names[i]->d_name, "..") != 0))
                        fprintf(f, "%s%s", len > 0 || ftell(f) > 0 ? " " : "", names[i]->d_name);
                free(names[i]);
        }
        free(names);
        fclose(TAKE_PTR(f));
        return s;
}

static inline void rm_rf_flat(const char *dir) {
        struct dirent **names;
        int n = scandir(dir, &names, NULL, alphasort);

        for (int i = 0; i < n; i++) {
                if (strcmp(names[i]->d_name, ".") != 0 && strcmp(names[i]->d_name, "..") != 0) {
                        _cleanup_free_ char *p = NULL;
                        ck_assert_int_ge(asprintf(&p, "%s/%s", dir, names[i]->d_name), 0);
                        (void) unlink(p);
                }
                free(names[i]);
        }
        if (n >= 0)
                free(names);
        (void) rmdir(dir);
}

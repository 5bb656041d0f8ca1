/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* SHA-256 (FIPS 180-4), for a flash image's content identity: a policy
 * with "verify_image": "sha256" compares the image by its bytes, not
 * its metadata. None of svff's libraries offers a hash, so it is here,
 * small and checked against the standard's test vectors. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "error.h"

#define SVFF_SHA256_SIZE 32
/* 64 lower-case hex digits and a NUL */
#define SVFF_SHA256_HEX_SIZE (2 * SVFF_SHA256_SIZE + 1)

struct svff_sha256 {
        uint32_t h[8];
        uint64_t length;                /* bytes hashed so far */
        uint8_t block[64];
        size_t fill;                    /* bytes waiting in block */
};

void svff_sha256_init(struct svff_sha256 *c);
void svff_sha256_update(struct svff_sha256 *c, const void *data, size_t n);
void svff_sha256_final(struct svff_sha256 *c, uint8_t ret[SVFF_SHA256_SIZE]);

/* The digest of data[0, n) in lower-case hex. */
void svff_sha256_hex(const void *data, size_t n, char ret[SVFF_SHA256_HEX_SIZE]);

/* Whether s is a digest as svff_sha256_hex() writes it. */
bool svff_sha256_hex_valid(const char *s);

/* Hashes what fd reads until its end, in lower-case hex, checking
 * cancelled(userdata) (may be NULL) between reads: -ECANCELED when it
 * says so, -errno from read(). err names what: label (e.g. the image's
 * path). */
int svff_sha256_fd(int fd, const char *label, bool (*cancelled)(void *userdata), void *userdata,
                   char ret[SVFF_SHA256_HEX_SIZE], struct svff_error *err);

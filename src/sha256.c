/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <string.h>
#include <unistd.h>

#include "macro.h"
#include "sha256.h"

/* FIPS 180-4 4.2.2: the first 32 bits of the fractional parts of the
 * cube roots of the first 64 primes. */
static const uint32_t K[64] = {
        0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
        0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
        0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
        0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
        0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
        0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
        0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
        0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
};

static uint32_t rotr(uint32_t x, unsigned n) {
        return (x >> n) | (x << (32 - n));
}

static void compress(uint32_t h[8], const uint8_t block[64]) {
        uint32_t w[64], a, b, c, d, e, f, g, k;

        for (unsigned t = 0; t < 16; t++)
                w[t] = (uint32_t) block[4 * t] << 24 | (uint32_t) block[4 * t + 1] << 16 |
                       (uint32_t) block[4 * t + 2] << 8 | block[4 * t + 3];
        for (unsigned t = 16; t < 64; t++) {
                uint32_t s0 = rotr(w[t - 15], 7) ^ rotr(w[t - 15], 18) ^ (w[t - 15] >> 3);
                uint32_t s1 = rotr(w[t - 2], 17) ^ rotr(w[t - 2], 19) ^ (w[t - 2] >> 10);

                w[t] = w[t - 16] + s0 + w[t - 7] + s1;
        }
        a = h[0], b = h[1], c = h[2], d = h[3], e = h[4], f = h[5], g = h[6], k = h[7];
        for (unsigned t = 0; t < 64; t++) {
                uint32_t t1 = k + (rotr(e, 6) ^ rotr(e, 11) ^ rotr(e, 25)) + ((e & f) ^ (~e & g)) + K[t] + w[t];
                uint32_t t2 = (rotr(a, 2) ^ rotr(a, 13) ^ rotr(a, 22)) + ((a & b) ^ (a & c) ^ (b & c));

                k = g, g = f, f = e, e = d + t1, d = c, c = b, b = a, a = t1 + t2;
        }
        h[0] += a, h[1] += b, h[2] += c, h[3] += d, h[4] += e, h[5] += f, h[6] += g, h[7] += k;
}

void svff_sha256_init(struct svff_sha256 *c) {
        /* 5.3.3: the fractional parts of the square roots of the first 8 primes */
        static const uint32_t h0[8] = {
                0x6a09e667, 0xbb67ae85, 0x3c6ef372, 0xa54ff53a, 0x510e527f, 0x9b05688c, 0x1f83d9ab, 0x5be0cd19,
        };

        memcpy(c->h, h0, sizeof(h0));
        c->length = 0;
        c->fill = 0;
}

void svff_sha256_update(struct svff_sha256 *c, const void *data, size_t n) {
        const uint8_t *p = data;

        c->length += n;
        if (c->fill > 0) {
                size_t k = MIN(n, sizeof(c->block) - c->fill);

                memcpy(c->block + c->fill, p, k);
                c->fill += k;
                p += k;
                n -= k;
                if (c->fill < sizeof(c->block))
                        return;
                compress(c->h, c->block);
                c->fill = 0;
        }
        for (; n >= sizeof(c->block); p += sizeof(c->block), n -= sizeof(c->block))
                compress(c->h, p);
        memcpy(c->block, p, n);
        c->fill = n;
}

void svff_sha256_final(struct svff_sha256 *c, uint8_t ret[SVFF_SHA256_SIZE]) {
        uint64_t bits = c->length * 8;

        /* 5.1.1: a 1 bit, zeros up to 56 bytes into a block, the length */
        c->block[c->fill++] = 0x80;
        if (c->fill > 56) {
                memset(c->block + c->fill, 0, sizeof(c->block) - c->fill);
                compress(c->h, c->block);
                c->fill = 0;
        }
        memset(c->block + c->fill, 0, 56 - c->fill);
        for (unsigned i = 0; i < 8; i++)
                c->block[56 + i] = (uint8_t) (bits >> (56 - 8 * i));
        compress(c->h, c->block);
        for (unsigned i = 0; i < 8; i++) {
                ret[4 * i] = (uint8_t) (c->h[i] >> 24);
                ret[4 * i + 1] = (uint8_t) (c->h[i] >> 16);
                ret[4 * i + 2] = (uint8_t) (c->h[i] >> 8);
                ret[4 * i + 3] = (uint8_t) c->h[i];
        }
}

static void to_hex(const uint8_t d[SVFF_SHA256_SIZE], char ret[SVFF_SHA256_HEX_SIZE]) {
        static const char digits[] = "0123456789abcdef";

        for (size_t i = 0; i < SVFF_SHA256_SIZE; i++) {
                ret[2 * i] = digits[d[i] >> 4];
                ret[2 * i + 1] = digits[d[i] & 15];
        }
        ret[2 * SVFF_SHA256_SIZE] = '\0';
}

void svff_sha256_hex(const void *data, size_t n, char ret[SVFF_SHA256_HEX_SIZE]) {
        struct svff_sha256 c;
        uint8_t d[SVFF_SHA256_SIZE];

        svff_sha256_init(&c);
        svff_sha256_update(&c, data, n);
        svff_sha256_final(&c, d);
        to_hex(d, ret);
}

bool svff_sha256_hex_valid(const char *s) {
        if (!s || strlen(s) != 2 * SVFF_SHA256_SIZE)
                return false;
        for (; *s; s++)
                if (!((*s >= '0' && *s <= '9') || (*s >= 'a' && *s <= 'f')))
                        return false;
        return true;
}

int svff_sha256_fd(int fd, const char *label, bool (*cancelled)(void *userdata), void *userdata,
                   char ret[SVFF_SHA256_HEX_SIZE], struct svff_error *err) {
        struct svff_sha256 c;
        uint8_t buf[64 * 1024], d[SVFF_SHA256_SIZE];

        svff_sha256_init(&c);
        for (;;) {
                ssize_t n;

                if (cancelled && cancelled(userdata))
                        return svff_error_set(err, -ECANCELED, "Reading '%s' was cancelled: svffd is stopping",
                                              label);
                n = read(fd, buf, sizeof(buf));
                if (n < 0 && errno == EINTR)
                        continue;
                if (n < 0)
                        return svff_error_set_errno(err, -errno, "Cannot read '%s'", label);
                if (n == 0)
                        break;
                svff_sha256_update(&c, buf, (size_t) n);
        }
        svff_sha256_final(&c, d);
        to_hex(d, ret);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

size_t svff_utf8_sequence(const char *str, size_t n, size_t *ret_bad, bool *ret_cut) {
        const unsigned char *s = (const unsigned char *) str;
        unsigned char lo = 0x80, hi = 0xbf;
        size_t need, i;

        if (s[0] < 0x80)
                return 1;
        if (s[0] >= 0xc2 && s[0] <= 0xdf)
                need = 1;
        else if (s[0] >= 0xe0 && s[0] <= 0xef) {
                need = 2;
                if (s[0] == 0xe0)
                        lo = 0xa0;      /* overlong */
                else if (s[0] == 0xed)
                        hi = 0x9f;      /* surrogates */
        } else if (s[0] >= 0xf0 && s[0] <= 0xf4) {
                need = 3;
                if (s[0] == 0xf0)
                        lo = 0x90;      /* overlong */
                else if (s[0] == 0xf4)
                        hi = 0x8f;      /* past U+10FFFF */
        } else {
                *ret_bad = 1;
                *ret_cut = false;
                return 0;
        }

        for (i = 1; i <= need; i++) {
                if (i >= n || s[i] < 0x80 || s[i] > 0xbf) {
                        /* interrupted: what a byte-counted cut leaves */
                        *ret_bad = i;
                        *ret_cut = true;
                        return 0;
                }
                if (s[i] < lo || s[i] > hi) {
                        *ret_bad = i;
                        *ret_cut = false;
                        return 0;
                }
                lo = 0x80;
                hi = 0xbf;
        }
        return need + 1;
}

size_t svff_utf8_valid_length(const char *s, size_t n) {
        size_t i = 0, bad;
        bool cut;

        for (size_t k; i < n && (k = svff_utf8_sequence(s + i, n - i, &bad, &cut)) > 0;)
                i += k;
        return i;
}

int svff_utf8_make_valid(const char *s, size_t n, bool drop_cut, char **ret, size_t *ret_len) {
        size_t i = 0, o = 0, bad;
        char *out;
        bool cut;

        /* at most one U+FFFD (3 bytes) per input byte */
        if (n > (SIZE_MAX - 1) / 3)
                return -ENOMEM;
        out = malloc(n * 3 + 1);
        if (!out)
                return -ENOMEM;
        while (i < n) {
                size_t k = svff_utf8_sequence(s + i, n - i, &bad, &cut);

                if (k > 0) {
                        memcpy(out + o, s + i, k);
                        o += k;
                        i += k;
                        continue;
                }
                if (!cut || !drop_cut) {
                        memcpy(out + o, "\xef\xbf\xbd", 3);
                        o += 3;
                }
                i += bad;
        }
        out[o] = 0;
        *ret = out;
        if (ret_len)
                *ret_len = o;
        return 0;
}

char *svff_utf8_dup_valid(const char *s) {
        char *v;

        if (!s || svff_utf8_make_valid(s, strlen(s), false, &v, NULL) < 0)
                return NULL;
        return v;
}

static uint32_t code_point(const unsigned char *s, size_t k) {
        switch (k) {
        case 1:
                return s[0];
        case 2:
                return (uint32_t) (s[0] & 0x1f) << 6 | (s[1] & 0x3f);
        case 3:
                return (uint32_t) (s[0] & 0x0f) << 12 | (uint32_t) (s[1] & 0x3f) << 6 | (s[2] & 0x3f);
        default:
                return (uint32_t) (s[0] & 0x07) << 18 | (uint32_t) (s[1] & 0x3f) << 12 |
                       (uint32_t) (s[2] & 0x3f) << 6 | (s[3] & 0x3f);
        }
}

/* Characters a terminal acts on, or that make text read otherwise than
 * it is: C1 controls, the Arabic letter mark, the directional marks,
 * line and paragraph separators, embeddings and overrides, isolates. */
static bool escaped_char(uint32_t c) {
        return (c >= 0x80 && c <= 0x9f) || c == 0x061c || c == 0x200e || c == 0x200f ||
               (c >= 0x2028 && c <= 0x202e) || (c >= 0x2066 && c <= 0x2069);
}

char *svff_utf8_escape(const char *str, bool keep_newline) {
        const unsigned char *s = (const unsigned char *) str;
        size_t n, i = 0, o = 0, bad;
        char *out;
        bool cut;

        if (!str)
                return NULL;
        n = strlen(str);
        /* at most "\xNN" per byte, "\uNNNN" per 2-byte character */
        if (n > (SIZE_MAX - 1) / 4)
                return NULL;
        out = malloc(n * 4 + 1);
        if (!out)
                return NULL;
        while (i < n) {
                size_t k = svff_utf8_sequence(str + i, n - i, &bad, &cut);
                uint32_t c;

                if (k == 0) {
                        for (size_t j = 0; j < bad; j++)
                                o += (size_t) sprintf(out + o, "\\x%02x", s[i + j]);
                        i += bad;
                        continue;
                }
                c = code_point(s + i, k);
                if ((c < 0x20 && !(c == '\n' && keep_newline)) || c == 0x7f)
                        o += (size_t) sprintf(out + o, "\\x%02x", c);
                else if (escaped_char(c))
                        o += (size_t) sprintf(out + o, "\\u%04x", c);
                else {
                        memcpy(out + o, s + i, k);
                        o += k;
                }
                i += k;
        }
        out[o] = 0;
        return out;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The daemon's input path on arbitrary bytes: framing (in chunk sizes
 * picked by the input), call decoding, the typed getters a method handler
 * uses, and re-encoding. Invariants beyond "no crash": a decoded call
 * re-encodes and decodes to the same call. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "macro.h"
#include "varlink.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_call(const char *msg, size_t len) {
        struct svff_varlink_call c = {}, d = {};
        const char *why = NULL;
        char *enc, *enc2;
        size_t enc_len, enc2_len;
        int r;

        r = svff_varlink_call_parse(msg, len, &c, &why);
        if (r < 0) {
                if ((r != -EBADMSG && r != -EPROTO) || !why)
                        abort();
                return;
        }

        if (strlen(c.interface) + 1 + strlen(c.member) != strlen(c.method) ||
            !json_object_is_type(c.parameters, json_type_object) || (c.more && c.oneway))
                abort();

        /* what a method handler would do with the parameters */
        json_object_object_foreach(c.parameters, key, value) {
                uint64_t u;
                int64_t i;
                unsigned x;
                const char *s;
                bool b;

                (void) svff_json_to_u64(value, &u);
                (void) svff_json_to_i64(value, &i);
                (void) svff_json_to_unsigned(value, &x);
                (void) svff_json_get_string_or_null(c.parameters, key, &s);
                (void) svff_json_get_bool(c.parameters, key, &b);
        }

        r = svff_varlink_encode_call(c.method, c.parameters, c.more, c.oneway, &enc, &enc_len);
        if (r == -EMSGSIZE) {
                svff_varlink_call_done(&c);
                return;
        }
        if (r < 0 || enc_len == 0 || enc[enc_len - 1] != 0)
                abort();
        r = svff_varlink_call_parse(enc, enc_len - 1, &d, NULL);
        if (r < 0 || strcmp(c.method, d.method) != 0 || c.more != d.more || c.oneway != d.oneway)
                abort();
        /* The encoder replaces invalid UTF-8 (U+FFFD), so the parameters
         * come back equal only when they were valid; either way what
         * came back encodes to the very same bytes. */
        r = svff_varlink_encode_call(d.method, d.parameters, d.more, d.oneway, &enc2, &enc2_len);
        if (r < 0 || enc2_len != enc_len || memcmp(enc, enc2, enc_len) != 0)
                abort();

        free(enc2);
        free(enc);
        svff_varlink_call_done(&d);
        svff_varlink_call_done(&c);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        struct svff_varlink_framer f = { .max = 4096 };
        size_t chunk, off = 0;
        int r = 0;

        /* the whole input as one message, NULs and all */
        check_call((const char *) data, size);

        if (size == 0)
                return 0;
        chunk = data[0] % 17 + 1;

        while (off < size && r >= 0) {
                size_t n = size - off < chunk ? size - off : chunk;
                char *m;
                size_t mlen;

                r = svff_varlink_framer_feed(&f, data + off, n);
                off += n;
                /* after -EMSGSIZE the daemon still answers what came before */
                for (;;) {
                        int k = svff_varlink_framer_next(&f, &m, &mlen);
                        if (k <= 0) {
                                if (k < 0)
                                        r = k;
                                break;
                        }
                        if (mlen > 4096 || strlen(m) != mlen)
                                abort();
                        check_call(m, mlen);
                        free(m);
                }
        }

        svff_varlink_framer_done(&f);
        return 0;
}

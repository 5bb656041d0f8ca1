/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* Store loading on arbitrary bytes. Beyond "no crash": a document that
 * loads serialises to one that loads again, identically, since the
 * daemon writes back what it read. */

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "error.h"
#include "json-util.h"
#include "store.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(json_object_putp) struct json_object *doc = NULL, *again = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        const char *text;
        size_t len;
        int r;

        r = svff_store_parse((const char *) data, size, &doc, &err);
        if (r < 0) {
                if (r != -EBADMSG && r != -EPROTONOSUPPORT && r != -ENOMEM)
                        abort();
                if (!svff_error_is_set(&err))
                        abort();
                svff_error_free(&err);
                return 0;
        }

        text = json_object_to_json_string_length(doc, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE,
                                                 &len);
        if (!text)
                abort();
        r = svff_store_parse(text, len, &again, &err);
        if (r < 0 || !json_object_equal(doc, again))
                abort();
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The config reader on arbitrary bytes, as svffd reads svff.conf and its
 * drop-ins (and 'svffctl config check' does). Beyond "no crash": a file
 * that is refused says why, and one that is taken gives settings that
 * can be shown. */

#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config-file.h"
#include "error.h"
#include "json-util.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
        _cleanup_(json_object_putp) struct json_object *shown = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_config c;
        int r;

        if (svff_config_init(&c) < 0)
                return 0;
        r = svff_config_load_data(&c, "fuzz.conf", (const char *) data, size, &err);
        if (r < 0) {
                if (r != -ENOMEM && (!svff_error_is_set(&err) || !strstr(svff_error_message(&err), "fuzz.conf")))
                        abort();
                svff_error_free(&err);
                svff_config_done(&c);
                return 0;
        }
        svff_error_free(&err);
        shown = svff_config_to_json(&c);
        if (!shown)
                abort();
        svff_config_done(&c);
        return 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The NIC class's cost per VF against the stand-in for a PF driver's
 * rtnetlink (tests/nl-fake.c): provision + verify of all seven
 * attributes on a 7-VF PF (read back) and a 252-VF PF (verified by the
 * ack), CPU time per VF (the stand-in's own decoding included, so an
 * upper bound) against the 0.5 ms target, and the rtnetlink messages per
 * VF: one set and no dump.
 *
 *   bench-nic [ROUNDS] */

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "class-nic.h"
#include "json-util.h"
#include "nl-fake.h"

#define TARGET_MS 0.5

static double cpu_ms(void) {
        struct timespec ts;

        clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
        return (double) ts.tv_sec * 1e3 + (double) ts.tv_nsec / 1e6;
}

static int run(struct svff_ctx *ctx, unsigned numvfs, unsigned rounds, bool *ok) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_class_pf *c = NULL;
        struct svff_nl_stats st;
        struct svff_pf pf = {
                .class = 0x020000, .netdev = (char *) "eth0", .driver = (char *) "igb", .numvfs = numvfs,
        };
        struct nl_fake *f = nl_fake_new("eth0", numvfs);
        unsigned n = 0;
        double t0, t;
        int r;

        strcpy(pf.address, "0000:05:00.0");
        r = svff_class_nic_open_with(ctx, &pf, nl_fake_open(f), "/nonexistent", &c, &err);
        if (r < 0) {
                fprintf(stderr, "bench-nic: %s\n", svff_error_message(&err));
                return r;
        }
        t0 = cpu_ms();
        for (unsigned k = 0; k < rounds; k++) {
                /* A VF disable between rounds: every round sets all seven. */
                nl_fake_reset(f, numvfs);
                for (unsigned i = 0; i < numvfs; i++, n++) {
                        _cleanup_(json_object_putp) struct json_object *s = NULL, *state = NULL;
                        struct svff_class_settings *loaded = NULL;
                        char text[256];

                        snprintf(text, sizeof(text),
                                 "{\"mac_prefix\": \"02:53:00:00\", \"vlan\": %u, \"qos\": 3, \"trust\": true,"
                                 " \"spoofchk\": false, \"link_state\": \"enable\", \"rss_query\": true,"
                                 " \"max_tx_rate\": 900}", 100 + i);
                        s = json_tokener_parse(text);
                        /* The load is the daemon's per-VF cost too: timed. */
                        r = svff_class_nic.load(c, i, s, &loaded, &err);
                        if (r >= 0) {
                                r = svff_class_nic.provision(c, &pf, i, loaded, NULL, false, &state, &err);
                                svff_class_nic.unload(loaded);
                        }
                        if (r >= 0)
                                r = svff_class_nic.verify(c, &pf, i, state, &err);
                        if (r < 0) {
                                fprintf(stderr, "bench-nic: VF %u: %s\n", i, svff_error_message(&err));
                                svff_class_nic.close(c);
                                nl_fake_free(f);
                                return r;
                        }
                }
        }
        t = (cpu_ms() - t0) / n;
        svff_class_nic_get_stats(c, &st);
        printf("%3u VFs: %.4f ms CPU per VF (provision + verify, 7 attributes; target <= %.1f ms) %s\n",
               numvfs, t, TARGET_MS, t <= TARGET_MS ? "ok" : "OVER");
        printf("         per VF: %.2f set, %.2f get of the PF, %.2f dumps (%s)\n",
               (double) st.sets / n, (double) st.gets / n, (double) st.dumps / n,
               svff_nl_vf_list_readable(numvfs) ? "read back" : "verified by the ack");
        *ok = *ok && t <= TARGET_MS && st.sets == n && st.dumps == 0;
        svff_class_nic.close(c);
        nl_fake_free(f);
        return 0;
}

int main(int argc, char **argv) {
        _cleanup_(svff_ctx_unrefp) struct svff_ctx *ctx = NULL;
        unsigned rounds = argc > 1 ? (unsigned) atoi(argv[1]) : 20;
        bool ok = true;

        if (svff_ctx_new("/", &ctx) < 0)
                return EXIT_FAILURE;
        if (run(ctx, 7, rounds * 36, &ok) < 0 || run(ctx, 252, rounds, &ok) < 0)
                return EXIT_FAILURE;
        return ok ? EXIT_SUCCESS : EXIT_FAILURE;
}

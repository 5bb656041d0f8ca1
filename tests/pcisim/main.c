/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * pcisim: a FUSE filesystem that behaves like the kernel's PCI sysfs.
 *
 *   pcisim --scenario FILE [-f|--foreground] [--latency-profile svff-paper]
 *          [-d] [--remove-mountpoint] MOUNTPOINT
 *
 * MOUNTPOINT plays /sys. --remove-mountpoint: rmdir it and its parent
 * directory (if then empty) after unmounting. Without -f pcisim daemonizes once the mount is
 * ready. Exit status 77: FUSE is not usable here (tests skip on it).
 */
#include <errno.h>
#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "macro.h"
#include "model.h"

static void help(void) {
        printf("Usage: pcisim --scenario FILE [-f|--foreground] [--latency-profile NAME] [-d] MOUNTPOINT\n"
               "Simulates the kernel's PCI sysfs under MOUNTPOINT (which plays /sys).\n"
               "Control: MOUNTPOINT/.pcisim/ctl, counters: MOUNTPOINT/.pcisim/stats.\n");
}

int main(int argc, char **argv) {
        static const struct option options[] = {
                { "scenario", required_argument, NULL, 's' },
                { "foreground", no_argument, NULL, 'f' },
                { "latency-profile", required_argument, NULL, 'L' },
                { "debug", no_argument, NULL, 'd' },
                { "remove-mountpoint", no_argument, NULL, 'R' },
                { "help", no_argument, NULL, 'h' },
                {}
        };
        const char *scenario = NULL, *profile = NULL;
        bool foreground = false, debug = false, remove_mountpoint = false;
        char *fuse_argv[1] = { (char *) "-d" };
        struct sim *sim;
        int c, r;

        while ((c = getopt_long(argc, argv, "s:fdh", options, NULL)) >= 0)
                switch (c) {
                case 's':
                        scenario = optarg;
                        break;
                case 'f':
                        foreground = true;
                        break;
                case 'L':
                        profile = optarg;
                        break;
                case 'd':
                        debug = foreground = true;
                        break;
                case 'R':
                        remove_mountpoint = true;
                        break;
                case 'h':
                        help();
                        return 0;
                default:
                        return 2;
                }
        if (!scenario || optind != argc - 1) {
                help();
                return 2;
        }

        r = sim_new(&sim);
        if (r < 0)
                return 1;
        if (profile && sim_latency_profile(sim, profile) < 0) {
                fprintf(stderr, "pcisim: unknown latency profile '%s'\n", profile);
                sim_free(sim);
                return 2;
        }
        r = sim_scenario_load(sim, scenario);
        if (r < 0) {
                fprintf(stderr, "pcisim: failed to load scenario '%s': %s\n", scenario, strerror(-r));
                sim_free(sim);
                return 1;
        }
        r = sim_fs_run(sim, argv[optind], foreground, debug ? 1 : 0, fuse_argv);
        sim_free(sim);
        if (remove_mountpoint && r != -EOPNOTSUPP) {
                /* a test killed mid-way cannot clean up its temporary dir */
                _cleanup_free_ char *parent = strdup(argv[optind]);
                char *slash = parent ? strrchr(parent, '/') : NULL;

                if (rmdir(argv[optind]) == 0 && slash && slash != parent) {
                        *slash = '\0';
                        (void) rmdir(parent);
                }
        }
        if (r == -EOPNOTSUPP) {
                fprintf(stderr, "pcisim: cannot mount FUSE filesystem on '%s'\n", argv[optind]);
                return 77;
        }
        return r < 0 ? 1 : 0;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/*
 * Run pcisim (a FUSE filesystem behaving like the kernel's PCI sysfs) from a
 * test. The binary comes from $PCISIM, scenarios from $PCISIM_SCENARIOS
 * (both set by the Makefile's AM_TESTS_ENVIRONMENT).
 *
 *     struct pcisim *sim;
 *     int r = pcisim_start("nic", &sim);
 *     if (r == -EOPNOTSUPP) { puts("FUSE unusable: skipping"); return 77; }
 *     ... openat(AT_FDCWD, pcisim_root(sim), ...) is your /sys ...
 *     pcisim_ctl(sim, "hold %s", "0000:03:10.0");
 *     pcisim_free(sim);
 *
 * All functions return 0 (or a count) on success, -errno on failure.
 */

#include <stdarg.h>

struct pcisim;

/* Mounts a fresh simulator in a new temporary directory and waits until it
 * answers. scenario: a path, or a name under $PCISIM_SCENARIOS (".json"
 * optional). -EOPNOTSUPP: FUSE cannot be used here (skip the test). */
int pcisim_start(const char *scenario, struct pcisim **ret);
/* Same, with extra pcisim options (e.g. "--latency-profile", "svff-paper"),
 * NULL-terminated. */
int pcisim_start_args(const char *scenario, struct pcisim **ret, ...);

/* The mountpoint: what the code under test uses as "/sys". Borrowed. */
const char *pcisim_root(struct pcisim *sim);

/* One command on MOUNTPOINT/.pcisim/ctl; returns -errno of the write. */
int pcisim_ctl(struct pcisim *sim, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Helpers on paths relative to the root. */
int pcisim_write(struct pcisim *sim, const char *relpath, const char *value);
/* Reads the whole file; the trailing newline is kept. Caller frees *ret. */
int pcisim_read(struct pcisim *sim, const char *relpath, char **ret);
/* readlink(2); caller frees *ret. */
int pcisim_readlink(struct pcisim *sim, const char *relpath, char **ret);

/* Unmounts, reaps pcisim and removes the temporary directory. */
int pcisim_stop(struct pcisim *sim);
/* pcisim_stop() + free; accepts NULL. */
void pcisim_free(struct pcisim *sim);

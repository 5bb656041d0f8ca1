/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* What a running guest's NVMe multipath heads keep through a reconf,
 * read through the domain's QEMU guest agent: each head's
 * delayed_removal_secs (Linux >= 6.16), which decides whether the guest
 * keeps its block device while the VF is away.
 *
 * Read-only: one guest-exec of /bin/sh that lists
 * /sys/block/nvme*\/delayed_removal_secs with their values, each head's
 * NSID and its subsystem's NQN, then guest-exec-status until it has
 * exited. Nothing is written in the guest. Its output is the guest's
 * text: each line is checked (a head's name, nvme<N>n<N>, decimal
 * counts, an NQN of printable ASCII, spaces included: Linux pads the
 * serial and model in one it makes up), and every other line is
 * dropped. */

#include <stddef.h>
#include <stdint.h>

#include "error.h"
#include "sysfs.h"

#define SVFF_GA_HEAD_MAX 32
#define SVFF_GA_HEADS_MAX 64
#define SVFF_GA_NQN_MAX 224                     /* an NQN is at most 223 bytes */

struct svff_ga_head {
        char name[SVFF_GA_HEAD_MAX];            /* nvme0n1 */
        unsigned delayed_removal_sec;
        uint32_t nsid;                          /* 0: not read */
        char subnqn[SVFF_GA_NQN_MAX];           /* its subsystem's; "": not read */
};

/* Runs one agent command (a JSON text) and gives its reply (a JSON text,
 * malloc'ed) within timeout_sec: virDomainQemuAgentCommand() for a
 * libvirt domain, a stand-in in the unit tests. */
typedef int (*svff_ga_command_fn)(void *userdata, const char *command, int timeout_sec, char **ret_reply,
                                  struct svff_error *err);

/* Whether the domain's live XML has the guest agent's channel
 * (org.qemu.guest_agent.0) with an agent connected to it: 1, 0, or
 * -EINVAL for XML that does not parse. */
int svff_ga_connected_in_xml(const char *xml);

/* The guest's NVMe heads with delayed_removal_secs, at most
 * SVFF_GA_HEADS_MAX, in the guest's order, within timeout: *ret (free()
 * it; NULL when there is none) and *ret_n. -ETIMEDOUT when the command
 * did not end in time, -EPROTO for a reply that is not the agent's,
 * -EIO when the shell failed, or the command function's error. */
int svff_ga_nvme_heads(svff_ga_command_fn command, void *userdata, usec_t timeout, struct svff_ga_head **ret,
                       size_t *ret_n, struct svff_error *err);

/* Whether s[0, n) is an NQN the guest's answer can hold: 1 to 223
 * bytes of printable ASCII, spaces included. */
bool svff_ga_nqn_ok(const char *s, size_t n);

/* Of heads[0..n), the index of the one that keeps its disk the
 * shortest: among the heads of namespace nsid of the subsystem subnqn,
 * or among all with subnqn NULL (the namespace unknown); -1 for none. */
int svff_ga_pick_head(const struct svff_ga_head *heads, size_t n, const char *subnqn, uint32_t nsid);

/* The transport for a libvirt domain (a virDomainPtr as userdata). */
int svff_ga_libvirt_command(void *dom, const char *command, int timeout_sec, char **ret_reply,
                            struct svff_error *err);

/* RFC 4648 base64 (padding required, no line breaks), as the agent's
 * out-data: a malloc'ed buffer with a NUL after its *ret_len bytes.
 * -EINVAL for anything else. */
int svff_base64_decode(const char *in, char **ret, size_t *ret_len);

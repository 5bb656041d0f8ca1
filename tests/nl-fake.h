/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A stand-in for a PF driver behind rtnetlink, for the unit tests of
 * netlink-vf.c and the NIC class: no real SR-IOV NIC runs on the build
 * host (the VM tier has one). It sits at the svff_nl_ops adapter, decodes
 * the real request bytes with libmnl, keeps each VF's settings the way
 * the kernel's do_setvfinfo() applies them (in attribute order, stopping
 * at the first refusal), and answers with real NLMSG_ERROR and
 * RTM_NEWLINK messages. Each VF of a link reply carries the kernel's
 * counters (IFLA_VF_STATS) unless the request asks for
 * RTEXT_FILTER_SKIP_STATS, as rtnl_fill_vfinfo() does: with them the VF
 * list outgrows netlink's 64 KiB attribute at about 220 VFs, without them
 * at about 340. A list that outgrows it is cut short, as the kernel's
 * would be unusable. */

#include <stdbool.h>
#include <stddef.h>

#include "netlink-vf.h"

struct nl_fake {
        char ifname[16];
        unsigned numvfs;
        struct svff_nl_vf *vfs;          /* the driver's live settings */

        /* Refusals, by SVFF_NL_VF_* bit index (0 = accept). */
        int refuse[7];
        const char *refuse_msg[7];       /* extended-ack text, or NULL */
        bool refuse_zero_mac;
        bool refuse_min_rate;            /* like igb: -EINVAL, "min_tx_rate" */
        int fail_set;                    /* > 0: the n-th set (counting all) fails -EIO */

        /* What was received. */
        unsigned sets, gets, dumps, other;
        char log[4096];                  /* one letter a message: S set, G get, D dump */
        unsigned set_attrs;              /* 1 << IFLA_VF_* of the last set */
        struct svff_nl_vf last_set;      /* decoded, mask = what it carried */
        char last_ifname[16];
        bool last_had_ack_flag;
        unsigned last_ext_mask;
        unsigned last_listed;            /* VFs in the last link reply's list */

        /* Replies waiting to be read. */
        struct nl_fake_msg {
                void *buf;
                size_t len;
        } *queue;
        size_t n_queue;
};

/* A PF called ifname with numvfs VFs at the drivers' defaults (no MAC, no
 * VLAN, spoof checking on, trust off, link auto, no rate limit). */
struct nl_fake *nl_fake_new(const char *ifname, unsigned numvfs);
void nl_fake_free(struct nl_fake *f);
/* numvfs 0 -> n: every VF back to the defaults, as a VF disable does. */
void nl_fake_reset(struct nl_fake *f, unsigned numvfs);
/* A handle whose socket is f (borrowed: f outlives it). */
struct svff_nl *nl_fake_open(struct nl_fake *f);
/* A message svff's code would not send, straight to f (its reply queued). */
int nl_fake_send(struct nl_fake *f, const void *buf, size_t len);

/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A NIC VF's admin settings in its PF driver, over rtnetlink (libmnl).
 *
 * One VF is set with one RTM_SETLINK on the PF: IFLA_VFINFO_LIST ->
 * IFLA_VF_INFO -> {IFLA_VF_MAC, IFLA_VF_VLAN_LIST, IFLA_VF_RATE,
 * IFLA_VF_SPOOFCHK, IFLA_VF_LINK_STATE, IFLA_VF_RSS_QUERY_EN,
 * IFLA_VF_TRUST}, acknowledged. The kernel applies them in that order and
 * stops at the first the driver refuses, so a refused message may have
 * applied a prefix of its attributes.
 *
 * Reading goes through RTM_GETLINK of the PF (never a dump of every link)
 * with IFLA_EXT_MASK = RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS, into a
 * buffer sized to the reply (MSG_PEEK | MSG_TRUNC). That reply carries the
 * whole VF list in one attribute, whose 16-bit length overflows at about
 * 220 VFs with statistics (about 100 bytes a VF), and at about 340
 * without them, which is why they are left out: a 252-VF PF is read
 * whole. Above SVFF_NL_VF_LIST_MAX VFs callers verify a set by its
 * acknowledgement instead (svff_nl_vf_list_readable()), and a list that
 * holds fewer VFs than the link reports is refused, never taken for the
 * whole.
 *
 * The socket sits behind struct svff_nl_ops so tests can put a stand-in
 * for the PF driver there; the messages themselves are always built and
 * parsed here. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "error.h"
#include "macro.h"

/* Above this many VFs the PF's VF list is not read back (see above):
 * the most an SR-IOV device here has (QDMA's 252) and a few more, with
 * room to spare below the overflow without statistics. */
#define SVFF_NL_VF_LIST_MAX 256
/* The same with the VFs' counters (svff_nl_vf_get_all_counters()). */
#define SVFF_NL_VF_COUNTERS_LIST_MAX 200

/* Which fields of struct svff_nl_vf are meant (set) or were reported (get). */
enum {
        SVFF_NL_VF_MAC        = 1u << 0,
        SVFF_NL_VF_VLAN       = 1u << 1,    /* vlan, qos, vlan_proto */
        SVFF_NL_VF_RATE       = 1u << 2,    /* min_tx_rate, max_tx_rate */
        SVFF_NL_VF_SPOOFCHK   = 1u << 3,
        SVFF_NL_VF_LINK_STATE = 1u << 4,
        SVFF_NL_VF_RSS_QUERY  = 1u << 5,
        SVFF_NL_VF_TRUST      = 1u << 6,
        SVFF_NL_VF_ALL        = (1u << 7) - 1,
        /* Read only, never set: the counters (IFLA_VF_STATS). */
        SVFF_NL_VF_COUNTERS   = 1u << 7,
};

/* Link states, as IFLA_VF_LINK_STATE_*. */
enum {
        SVFF_NL_LINK_AUTO = 0,
        SVFF_NL_LINK_ENABLE = 1,
        SVFF_NL_LINK_DISABLE = 2,
};

#define SVFF_NL_PROTO_8021Q  0x8100
#define SVFF_NL_PROTO_8021AD 0x88a8

struct svff_nl_vf {
        unsigned index;
        unsigned mask;                  /* SVFF_NL_VF_* */
        uint8_t mac[6];
        uint16_t vlan;                  /* 0-4095, 0: none */
        uint8_t qos;                    /* 0-7 */
        uint16_t vlan_proto;            /* SVFF_NL_PROTO_*, host order */
        uint32_t min_tx_rate;           /* Mbps, 0: no limit */
        uint32_t max_tx_rate;
        bool spoofchk;
        bool trust;
        bool rss_query;
        uint32_t link_state;            /* SVFF_NL_LINK_* */
        /* With SVFF_NL_VF_MAC and an all-zero mac: clear the MAC on
         * purpose (a VF handed to its next tenant), which drivers take
         * as "none". Without it an all-zero MAC is refused unsent. */
        bool clear_mac;
        /* The kernel's counters of the VF, as its PF driver keeps them
         * (zeros from a driver without ndo_get_vf_stats, igb's case). */
        struct svff_nl_vf_counters {
                uint64_t rx_packets, tx_packets, rx_bytes, tx_bytes;
                uint64_t broadcast, multicast, rx_dropped, tx_dropped;
        } counters;
};

/* The socket, or a stand-in. send() hands over one request; recv() is
 * recv(2) on a netlink socket, MSG_PEEK | MSG_TRUNC included (the length
 * of the next datagram, which stays queued). Both return -errno on
 * failure. free() (may be NULL) releases userdata. */
struct svff_nl_ops {
        int (*send)(void *userdata, const void *buf, size_t len);
        ssize_t (*recv)(void *userdata, void *buf, size_t len, int flags);
        void (*free)(void *userdata);
};

/* Messages sent, by kind: the per-VF budget is one set and no dump. */
struct svff_nl_stats {
        unsigned sets;          /* RTM_SETLINK */
        unsigned gets;          /* RTM_GETLINK of one link */
        unsigned dumps;         /* RTM_GETLINK with NLM_F_DUMP: never sent */
};

struct svff_nl;

/* How long a request waits for the kernel's reply (-EAGAIN after). */
#define SVFF_NL_REPLY_TIMEOUT_SEC 10

/* An rtnetlink socket (NETLINK_ROUTE, close-on-exec, extended acks,
 * replies awaited at most SVFF_NL_REPLY_TIMEOUT_SEC). */
int svff_nl_open(struct svff_nl **ret);
/* The same over ops (owned from here on, userdata freed with the handle
 * even on failure). */
int svff_nl_new(const struct svff_nl_ops *ops, void *userdata, struct svff_nl **ret);
struct svff_nl *svff_nl_free(struct svff_nl *nl);
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_nl *, svff_nl_free);

void svff_nl_get_stats(const struct svff_nl *nl, struct svff_nl_stats *ret);

/* Whether a PF with numvfs VFs can have its VF list read back. */
static inline bool svff_nl_vf_list_readable(unsigned numvfs) {
        return numvfs <= SVFF_NL_VF_LIST_MAX;
}

/* Sets the fields in vf->mask of VF vf->index of the link ifname with one
 * acknowledged RTM_SETLINK. An all-zero MAC is refused here (-EINVAL)
 * before anything is sent. The kernel's errno is returned as is; err
 * names the link, the VF and the kernel's extended-ack text when there is
 * one. */
int svff_nl_vf_set(struct svff_nl *nl, const char *ifname, const struct svff_nl_vf *vf,
                   struct svff_error *err);

/* Reads every VF of ifname with one RTM_GETLINK: *ret (malloc'ed, by
 * position in the kernel's list), *ret_n entries. -EMSGSIZE when the
 * link reports more VFs (IFLA_NUM_VF) than its list holds: the list
 * overflowed. */
int svff_nl_vf_get_all(struct svff_nl *nl, const char *ifname, struct svff_nl_vf **ret,
                       size_t *ret_n, struct svff_error *err);

/* svff_nl_vf_get_all() with each VF's counters (SVFF_NL_VF_COUNTERS):
 * the list holds about 100 more bytes a VF, and outgrows its attribute
 * at about 220 VFs (svff_nl_vf_counters_readable()). */
int svff_nl_vf_get_all_counters(struct svff_nl *nl, const char *ifname, struct svff_nl_vf **ret,
                                size_t *ret_n, struct svff_error *err);
static inline bool svff_nl_vf_counters_readable(unsigned numvfs) {
        return numvfs <= SVFF_NL_VF_COUNTERS_LIST_MAX;
}

/* The same, keeping VF index only: -ENOENT when the list lacks it. */
int svff_nl_vf_get(struct svff_nl *nl, const char *ifname, unsigned index, struct svff_nl_vf *ret,
                   struct svff_error *err);

/* Encodes the RTM_SETLINK request into buf (at least
 * SVFF_NL_VF_SET_BUFSIZE bytes): its length, or -EINVAL. For tests and
 * the bench. */
#define SVFF_NL_VF_SET_BUFSIZE 512
int svff_nl_vf_set_encode(void *buf, size_t size, uint32_t seq, const char *ifname,
                          const struct svff_nl_vf *vf);

/* "02:00:00:00:00:01" <-> bytes: -EINVAL for anything else. */
int svff_nl_mac_parse(const char *s, uint8_t ret[static 6]);
void svff_nl_mac_format(const uint8_t mac[static 6], char buf[static 18]);
static inline bool svff_nl_mac_is_zero(const uint8_t mac[static 6]) {
        return !(mac[0] | mac[1] | mac[2] | mac[3] | mac[4] | mac[5]);
}
static inline bool svff_nl_mac_is_multicast(const uint8_t mac[static 6]) {
        return mac[0] & 1;
}

/* "mac", "vlan", ... for one SVFF_NL_VF_* bit: the NIC class setting it
 * comes from, as messages name it. */
const char *svff_nl_vf_field_name(unsigned bit);

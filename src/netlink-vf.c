/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <arpa/inet.h>
#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <time.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "netlink-vf.h"

#ifndef NETLINK_EXT_ACK
#define NETLINK_EXT_ACK 11
#endif
#ifndef NETLINK_CAP_ACK
#define NETLINK_CAP_ACK 10
#endif

struct svff_nl {
        struct svff_nl_ops ops;
        void *userdata;
        uint32_t seq;
        struct svff_nl_stats stats;
};

/* The real socket: libmnl's, behind the same ops as a stand-in. */
static int sock_send(void *userdata, const void *buf, size_t len) {
        ssize_t n = mnl_socket_sendto(userdata, buf, len);

        if (n < 0)
                return -errno;
        return (size_t) n == len ? 0 : -EIO;
}

static ssize_t sock_recv(void *userdata, void *buf, size_t len, int flags) {
        ssize_t n = recv(mnl_socket_get_fd(userdata), buf, len, flags);

        return n < 0 ? -errno : n;
}

static void sock_free(void *userdata) {
        mnl_socket_close(userdata);
}

static const struct svff_nl_ops sock_ops = {
        .send = sock_send,
        .recv = sock_recv,
        .free = sock_free,
};

int svff_nl_new(const struct svff_nl_ops *ops, void *userdata, struct svff_nl **ret) {
        struct svff_nl *nl;

        nl = calloc(1, sizeof(*nl));
        if (!nl) {
                if (ops->free)
                        ops->free(userdata);
                return -ENOMEM;
        }
        nl->ops = *ops;
        nl->userdata = userdata;
        /* Replies are matched by sequence; a fresh start keeps a late
         * reply to an earlier handle's request from matching. */
        nl->seq = (uint32_t) time(NULL);
        *ret = nl;
        return 0;
}

int svff_nl_open(struct svff_nl **ret) {
        struct mnl_socket *s;
        int one = 1;

        s = mnl_socket_open2(NETLINK_ROUTE, SOCK_CLOEXEC);
        if (!s)
                return -errno;
        if (mnl_socket_bind(s, 0, MNL_SOCKET_AUTOPID) < 0) {
                int r = -errno;
                mnl_socket_close(s);
                return r;
        }
        /* The kernel's reason for a refusal ("VF min_tx_rate ..."), and
         * errors without a copy of the request. Old kernels lack them:
         * the errno alone is still right. */
        (void) mnl_socket_setsockopt(s, NETLINK_EXT_ACK, &one, sizeof(one));
        (void) mnl_socket_setsockopt(s, NETLINK_CAP_ACK, &one, sizeof(one));
        /* A driver that never answers holds a worker, not svffd: the
         * call fails with EAGAIN and a late reply is skipped by its
         * sequence number. */
        struct timeval tv = { .tv_sec = SVFF_NL_REPLY_TIMEOUT_SEC };
        if (setsockopt(mnl_socket_get_fd(s), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof(tv)) < 0) {
                int r = -errno;
                mnl_socket_close(s);
                return r;
        }
        return svff_nl_new(&sock_ops, s, ret);
}

struct svff_nl *svff_nl_free(struct svff_nl *nl) {
        if (!nl)
                return NULL;
        if (nl->ops.free)
                nl->ops.free(nl->userdata);
        free(nl);
        return NULL;
}

void svff_nl_get_stats(const struct svff_nl *nl, struct svff_nl_stats *ret) {
        *ret = nl->stats;
}

const char *svff_nl_vf_field_name(unsigned bit) {
        switch (bit) {
        case SVFF_NL_VF_MAC: return "mac";
        case SVFF_NL_VF_VLAN: return "vlan";
        case SVFF_NL_VF_RATE: return "tx-rate";
        case SVFF_NL_VF_SPOOFCHK: return "spoofchk";
        case SVFF_NL_VF_LINK_STATE: return "link_state";
        case SVFF_NL_VF_RSS_QUERY: return "rss_query";
        case SVFF_NL_VF_TRUST: return "trust";
        default: return "?";
        }
}

int svff_nl_mac_parse(const char *s, uint8_t ret[static 6]) {
        uint8_t mac[6];

        for (unsigned i = 0; i < 6; i++) {
                int hi, lo;

                if (!s[0] || !s[1])
                        return -EINVAL;
                hi = s[0] >= '0' && s[0] <= '9' ? s[0] - '0' :
                     (s[0] | 0x20) >= 'a' && (s[0] | 0x20) <= 'f' ? (s[0] | 0x20) - 'a' + 10 : -1;
                lo = s[1] >= '0' && s[1] <= '9' ? s[1] - '0' :
                     (s[1] | 0x20) >= 'a' && (s[1] | 0x20) <= 'f' ? (s[1] | 0x20) - 'a' + 10 : -1;
                if (hi < 0 || lo < 0)
                        return -EINVAL;
                mac[i] = (uint8_t) (hi << 4 | lo);
                s += 2;
                if (i < 5) {
                        if (*s != ':')
                                return -EINVAL;
                        s++;
                }
        }
        if (*s)
                return -EINVAL;
        memcpy(ret, mac, 6);
        return 0;
}

void svff_nl_mac_format(const uint8_t mac[static 6], char buf[static 18]) {
        snprintf(buf, 18, "%02x:%02x:%02x:%02x:%02x:%02x",
                 mac[0], mac[1], mac[2], mac[3], mac[4], mac[5]);
}

static struct nlmsghdr *put_link_header(void *buf, uint16_t type, uint16_t flags, uint32_t seq,
                                        const char *ifname) {
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
        struct ifinfomsg *ifi;

        nlh->nlmsg_type = type;
        nlh->nlmsg_flags = NLM_F_REQUEST | flags;
        nlh->nlmsg_seq = seq;
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_family = AF_UNSPEC;
        /* By name: the kernel looks the PF up itself, so no index can go
         * stale between a lookup and the request. */
        mnl_attr_put_strz(nlh, IFLA_IFNAME, ifname);
        return nlh;
}

int svff_nl_vf_set_encode(void *buf, size_t size, uint32_t seq, const char *ifname,
                          const struct svff_nl_vf *vf) {
        struct nlattr *list, *info;
        struct nlmsghdr *nlh;
        uint32_t idx = vf->index;

        if (size < SVFF_NL_VF_SET_BUFSIZE || !ifname || strlen(ifname) >= IFNAMSIZ)
                return -EINVAL;
        if ((vf->mask & SVFF_NL_VF_MAC) && svff_nl_mac_is_zero(vf->mac) && !vf->clear_mac)
                return -EINVAL;

        memset(buf, 0, SVFF_NL_VF_SET_BUFSIZE);
        nlh = put_link_header(buf, RTM_SETLINK, NLM_F_ACK, seq, ifname);
        list = mnl_attr_nest_start(nlh, IFLA_VFINFO_LIST);
        info = mnl_attr_nest_start(nlh, IFLA_VF_INFO);

        if (vf->mask & SVFF_NL_VF_MAC) {
                struct ifla_vf_mac m = { .vf = idx };
                memcpy(m.mac, vf->mac, 6);
                mnl_attr_put(nlh, IFLA_VF_MAC, sizeof(m), &m);
        }
        if (vf->mask & SVFF_NL_VF_VLAN) {
                /* The list form carries the protocol (802.1ad); the kernel
                 * takes it for 802.1Q as well. */
                struct ifla_vf_vlan_info v = {
                        .vf = idx,
                        .vlan = vf->vlan,
                        .qos = vf->qos,
                        .vlan_proto = htons(vf->vlan_proto ?: SVFF_NL_PROTO_8021Q),
                };
                struct nlattr *vl = mnl_attr_nest_start(nlh, IFLA_VF_VLAN_LIST);
                mnl_attr_put(nlh, IFLA_VF_VLAN_INFO, sizeof(v), &v);
                mnl_attr_nest_end(nlh, vl);
        }
        if (vf->mask & SVFF_NL_VF_RATE) {
                struct ifla_vf_rate r = {
                        .vf = idx,
                        .min_tx_rate = vf->min_tx_rate,
                        .max_tx_rate = vf->max_tx_rate,
                };
                mnl_attr_put(nlh, IFLA_VF_RATE, sizeof(r), &r);
        }
        if (vf->mask & SVFF_NL_VF_SPOOFCHK) {
                struct ifla_vf_spoofchk s = { .vf = idx, .setting = vf->spoofchk };
                mnl_attr_put(nlh, IFLA_VF_SPOOFCHK, sizeof(s), &s);
        }
        if (vf->mask & SVFF_NL_VF_LINK_STATE) {
                struct ifla_vf_link_state l = { .vf = idx, .link_state = vf->link_state };
                mnl_attr_put(nlh, IFLA_VF_LINK_STATE, sizeof(l), &l);
        }
        if (vf->mask & SVFF_NL_VF_RSS_QUERY) {
                struct ifla_vf_rss_query_en q = { .vf = idx, .setting = vf->rss_query };
                mnl_attr_put(nlh, IFLA_VF_RSS_QUERY_EN, sizeof(q), &q);
        }
        if (vf->mask & SVFF_NL_VF_TRUST) {
                struct ifla_vf_trust t = { .vf = idx, .setting = vf->trust };
                mnl_attr_put(nlh, IFLA_VF_TRUST, sizeof(t), &t);
        }

        mnl_attr_nest_end(nlh, info);
        mnl_attr_nest_end(nlh, list);
        return (int) nlh->nlmsg_len;
}

/* Receives one datagram into a buffer of its own size. */
static int nl_recv(struct svff_nl *nl, void **ret, size_t *ret_len) {
        _cleanup_free_ void *buf = NULL;
        ssize_t n, m;

        for (;;) {
                n = nl->ops.recv(nl->userdata, NULL, 0, MSG_PEEK | MSG_TRUNC);
                if (n != -EINTR)
                        break;
        }
        if (n < 0)
                return (int) n;
        if (n == 0)
                return -EPIPE;
        buf = malloc((size_t) n);
        if (!buf)
                return -ENOMEM;
        m = nl->ops.recv(nl->userdata, buf, (size_t) n, 0);
        if (m < 0)
                return (int) m;
        if (m != n)
                return -EIO;
        *ret = TAKE_PTR(buf);
        *ret_len = (size_t) n;
        return 0;
}

static int extack_cb(const struct nlattr *a, void *data) {
        if (mnl_attr_get_type(a) == NLMSGERR_ATTR_MSG &&
            mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
                *(const char **) data = mnl_attr_get_str(a);
        return MNL_CB_OK;
}

/* The errno of an NLMSG_ERROR, and the kernel's text in *ret_msg (borrowed
 * from nlh) when it sent one. */
static int nl_error(const struct nlmsghdr *nlh, const char **ret_msg) {
        const struct nlmsgerr *e = mnl_nlmsg_get_payload(nlh);
        size_t off;

        *ret_msg = NULL;
        if (mnl_nlmsg_get_payload_len(nlh) < sizeof(*e))
                return -EBADMSG;
        if (e->error < 0 && (nlh->nlmsg_flags & NLM_F_ACK_TLVS)) {
                off = sizeof(*e);
                if (!(nlh->nlmsg_flags & NLM_F_CAPPED))
                        off += mnl_nlmsg_get_payload_len(&e->msg);
                if (mnl_nlmsg_get_payload_len(nlh) > off)
                        (void) mnl_attr_parse_payload((const char *) e + MNL_ALIGN(off),
                                                      mnl_nlmsg_get_payload_len(nlh) - MNL_ALIGN(off),
                                                      extack_cb, ret_msg);
        }
        return e->error > 0 ? -EPROTO : e->error;
}

/* Waits for the reply to seq: the ack (0), an error (-errno, err set), or
 * with want_link the RTM_NEWLINK, handed out in *ret_buf. Replies to
 * other sequence numbers are left behind. */
static int nl_reply(struct svff_nl *nl, uint32_t seq, bool want_link, const char *what,
                    void **ret_buf, const struct nlmsghdr **ret_nlh, struct svff_error *err) {
        for (;;) {
                _cleanup_free_ void *buf = NULL;
                size_t size = 0;
                int r, len;

                r = nl_recv(nl, &buf, &size);
                if (r < 0)
                        return svff_error_set_errno(err, r, "%s: no reply from rtnetlink", what);
                if (size > INT32_MAX)
                        return svff_error_set(err, -EMSGSIZE, "%s: reply too large", what);

                len = (int) size;
                for (const struct nlmsghdr *nlh = buf; mnl_nlmsg_ok(nlh, len);
                     nlh = mnl_nlmsg_next(nlh, &len)) {
                        if (nlh->nlmsg_seq != seq)
                                continue;
                        if (nlh->nlmsg_type == NLMSG_ERROR) {
                                const char *msg;

                                r = nl_error(nlh, &msg);
                                if (r == 0 && !want_link)
                                        return 0;
                                if (r == 0)
                                        continue;
                                if (msg)
                                        return svff_error_set_errno(err, r, "%s: %s", what, msg);
                                return svff_error_set_errno(err, r, "%s", what);
                        }
                        if (want_link && nlh->nlmsg_type == RTM_NEWLINK) {
                                *ret_nlh = nlh;
                                *ret_buf = TAKE_PTR(buf);
                                return 0;
                        }
                }
        }
}

int svff_nl_vf_set(struct svff_nl *nl, const char *ifname, const struct svff_nl_vf *vf,
                   struct svff_error *err) {
        char buf[SVFF_NL_VF_SET_BUFSIZE], what[96];
        uint32_t seq = ++nl->seq;
        int len, r;

        snprintf(what, sizeof(what), "VF %u of '%s'", vf->index, ifname);
        if ((vf->mask & SVFF_NL_VF_MAC) && svff_nl_mac_is_zero(vf->mac) && !vf->clear_mac)
                return svff_error_set(err, -EINVAL, "%s: refusing to write the all-zero MAC "
                                      "(drivers refuse it or take it as 'none')", what);
        len = svff_nl_vf_set_encode(buf, sizeof(buf), seq, ifname, vf);
        if (len < 0)
                return svff_error_set(err, len, "%s: not a link name", what);

        r = nl->ops.send(nl->userdata, buf, (size_t) len);
        if (r < 0)
                return svff_error_set_errno(err, r, "%s: cannot send to rtnetlink", what);
        nl->stats.sets++;
        return nl_reply(nl, seq, false, what, NULL, NULL, err);
}

struct vf_parse {
        struct svff_nl_vf *vfs;
        size_t n;
        size_t cap;
};

static void counters_parse(const struct nlattr *stats, struct svff_nl_vf_counters *c) {
        const struct nlattr *a;

        mnl_attr_for_each_nested(a, stats) {
                uint64_t *field = NULL;

                if (mnl_attr_validate(a, MNL_TYPE_U64) < 0)
                        continue;
                switch (mnl_attr_get_type(a)) {
                case IFLA_VF_STATS_RX_PACKETS: field = &c->rx_packets; break;
                case IFLA_VF_STATS_TX_PACKETS: field = &c->tx_packets; break;
                case IFLA_VF_STATS_RX_BYTES:   field = &c->rx_bytes; break;
                case IFLA_VF_STATS_TX_BYTES:   field = &c->tx_bytes; break;
                case IFLA_VF_STATS_BROADCAST:  field = &c->broadcast; break;
                case IFLA_VF_STATS_MULTICAST:  field = &c->multicast; break;
                case IFLA_VF_STATS_RX_DROPPED: field = &c->rx_dropped; break;
                case IFLA_VF_STATS_TX_DROPPED: field = &c->tx_dropped; break;
                }
                if (field)
                        *field = mnl_attr_get_u64(a);
        }
}

static void vf_info_parse(const struct nlattr *info, struct svff_nl_vf *vf) {
        const struct nlattr *a;

        memset(vf, 0, sizeof(*vf));
        mnl_attr_for_each_nested(a, info) {
                const void *p = mnl_attr_get_payload(a);
                size_t l = mnl_attr_get_payload_len(a);

                switch (mnl_attr_get_type(a)) {
                case IFLA_VF_MAC:
                        if (l >= sizeof(struct ifla_vf_mac)) {
                                const struct ifla_vf_mac *m = p;
                                vf->index = m->vf;
                                memcpy(vf->mac, m->mac, 6);
                                vf->mask |= SVFF_NL_VF_MAC;
                        }
                        break;
                case IFLA_VF_VLAN:
                        /* The list below wins: it carries the protocol. */
                        if (l >= sizeof(struct ifla_vf_vlan) && !(vf->mask & SVFF_NL_VF_VLAN)) {
                                const struct ifla_vf_vlan *v = p;
                                vf->vlan = (uint16_t) v->vlan;
                                vf->qos = (uint8_t) v->qos;
                                vf->vlan_proto = SVFF_NL_PROTO_8021Q;
                                vf->mask |= SVFF_NL_VF_VLAN;
                        }
                        break;
                case IFLA_VF_VLAN_LIST: {
                        const struct nlattr *vi;
                        mnl_attr_for_each_nested(vi, a) {
                                if (mnl_attr_get_type(vi) != IFLA_VF_VLAN_INFO ||
                                    mnl_attr_get_payload_len(vi) < sizeof(struct ifla_vf_vlan_info))
                                        continue;
                                const struct ifla_vf_vlan_info *v = mnl_attr_get_payload(vi);
                                vf->vlan = (uint16_t) v->vlan;
                                vf->qos = (uint8_t) v->qos;
                                vf->vlan_proto = ntohs(v->vlan_proto);
                                vf->mask |= SVFF_NL_VF_VLAN;
                                break;  /* one VLAN per VF today */
                        }
                        break;
                }
                case IFLA_VF_RATE:
                        if (l >= sizeof(struct ifla_vf_rate)) {
                                const struct ifla_vf_rate *r = p;
                                vf->min_tx_rate = r->min_tx_rate;
                                vf->max_tx_rate = r->max_tx_rate;
                                vf->mask |= SVFF_NL_VF_RATE;
                        }
                        break;
                /* The kernel reports (u32) -1 where the driver keeps no such
                 * setting: then the bit stays clear. */
                case IFLA_VF_SPOOFCHK:
                        if (l >= sizeof(struct ifla_vf_spoofchk)) {
                                const struct ifla_vf_spoofchk *s = p;
                                if (s->setting != (uint32_t) -1) {
                                        vf->spoofchk = s->setting;
                                        vf->mask |= SVFF_NL_VF_SPOOFCHK;
                                }
                        }
                        break;
                case IFLA_VF_LINK_STATE:
                        if (l >= sizeof(struct ifla_vf_link_state)) {
                                vf->link_state = ((const struct ifla_vf_link_state *) p)->link_state;
                                vf->mask |= SVFF_NL_VF_LINK_STATE;
                        }
                        break;
                case IFLA_VF_RSS_QUERY_EN:
                        if (l >= sizeof(struct ifla_vf_rss_query_en)) {
                                const struct ifla_vf_rss_query_en *q = p;
                                if (q->setting != (uint32_t) -1) {
                                        vf->rss_query = q->setting;
                                        vf->mask |= SVFF_NL_VF_RSS_QUERY;
                                }
                        }
                        break;
                case IFLA_VF_TRUST:
                        if (l >= sizeof(struct ifla_vf_trust)) {
                                const struct ifla_vf_trust *t = p;
                                if (t->setting != (uint32_t) -1) {
                                        vf->trust = t->setting;
                                        vf->mask |= SVFF_NL_VF_TRUST;
                                }
                        }
                        break;
                case IFLA_VF_STATS:
                        counters_parse(a, &vf->counters);
                        vf->mask |= SVFF_NL_VF_COUNTERS;
                        break;
                }
        }
}

struct link_parse {
        const struct nlattr *list;
        uint32_t num_vf;
        bool has_num_vf;
};

static int link_attr_cb(const struct nlattr *a, void *data) {
        struct link_parse *p = data;

        switch (mnl_attr_get_type(a)) {
        case IFLA_NUM_VF:
                if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0) {
                        p->num_vf = mnl_attr_get_u32(a);
                        p->has_num_vf = true;
                }
                break;
        case IFLA_VFINFO_LIST:
                p->list = a;
                break;
        }
        return MNL_CB_OK;
}

static int get_all(struct svff_nl *nl, const char *ifname, bool counters, struct svff_nl_vf **ret,
                   size_t *ret_n, struct svff_error *err) {
        char req[256], what[64];
        _cleanup_free_ void *reply = NULL;
        _cleanup_free_ struct svff_nl_vf *vfs = NULL;
        const struct nlmsghdr *link = NULL;
        struct link_parse p = {};
        const struct nlattr *info;
        struct nlmsghdr *nlh;
        uint32_t seq = ++nl->seq;
        size_t n = 0;
        int r;

        snprintf(what, sizeof(what), "the VFs of '%s'", ifname);
        if (!ifname || strlen(ifname) >= IFNAMSIZ)
                return svff_error_set(err, -EINVAL, "'%s' is not a link name", strna(ifname));

        memset(req, 0, sizeof(req));
        nlh = put_link_header(req, RTM_GETLINK, 0, seq, ifname);
        mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_VF | (counters ? 0 : RTEXT_FILTER_SKIP_STATS));
        r = nl->ops.send(nl->userdata, nlh, nlh->nlmsg_len);
        if (r < 0)
                return svff_error_set_errno(err, r, "%s: cannot send to rtnetlink", what);
        nl->stats.gets++;

        r = nl_reply(nl, seq, true, what, &reply, &link, err);
        if (r < 0)
                return r;
        if (mnl_attr_parse(link, sizeof(struct ifinfomsg), link_attr_cb, &p) < 0)
                return svff_error_set(err, -EBADMSG, "%s: malformed reply", what);

        if (p.list) {
                size_t cap = 0;

                mnl_attr_for_each_nested(info, p.list)
                        if (mnl_attr_get_type(info) == IFLA_VF_INFO)
                                cap++;
                vfs = calloc(cap ?: 1, sizeof(*vfs));
                if (!vfs)
                        return -ENOMEM;
                mnl_attr_for_each_nested(info, p.list)
                        if (mnl_attr_get_type(info) == IFLA_VF_INFO)
                                vf_info_parse(info, &vfs[n++]);
        }
        if (p.has_num_vf && p.num_vf > n)
                return svff_error_set(err, -EMSGSIZE,
                                      "%s: the link has %u VFs, its VF list holds %zu: the list "
                                      "outgrew netlink's 64 KiB attribute; verify each VF by its "
                                      "acknowledgement instead", what, p.num_vf, n);

        *ret = TAKE_PTR(vfs);
        *ret_n = n;
        return 0;
}

int svff_nl_vf_get_all(struct svff_nl *nl, const char *ifname, struct svff_nl_vf **ret,
                       size_t *ret_n, struct svff_error *err) {
        return get_all(nl, ifname, false, ret, ret_n, err);
}

int svff_nl_vf_get_all_counters(struct svff_nl *nl, const char *ifname, struct svff_nl_vf **ret,
                                size_t *ret_n, struct svff_error *err) {
        return get_all(nl, ifname, true, ret, ret_n, err);
}

int svff_nl_vf_get(struct svff_nl *nl, const char *ifname, unsigned index, struct svff_nl_vf *ret,
                   struct svff_error *err) {
        _cleanup_free_ struct svff_nl_vf *vfs = NULL;
        size_t n;
        int r;

        r = svff_nl_vf_get_all(nl, ifname, &vfs, &n, err);
        if (r < 0)
                return r;
        for (size_t i = 0; i < n; i++)
                if (vfs[i].index == index && (vfs[i].mask & SVFF_NL_VF_MAC)) {
                        *ret = vfs[i];
                        return 0;
                }
        return svff_error_set(err, -ENOENT, "'%s' reports no VF %u", ifname, index);
}

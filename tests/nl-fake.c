/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The stand-in for a PF driver's rtnetlink (see nl-fake.h). */

#include <arpa/inet.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <libmnl/libmnl.h>
#include <linux/if_link.h>
#include <linux/netlink.h>
#include <linux/rtnetlink.h>

#include "nl-fake.h"

static void vf_defaults(struct svff_nl_vf *vf, unsigned index) {
        memset(vf, 0, sizeof(*vf));
        vf->index = index;
        vf->mask = SVFF_NL_VF_ALL;
        vf->vlan_proto = SVFF_NL_PROTO_8021Q;
        vf->spoofchk = true;
}

void nl_fake_reset(struct nl_fake *f, unsigned numvfs) {
        free(f->vfs);
        f->numvfs = numvfs;
        f->vfs = calloc(numvfs ?: 1, sizeof(*f->vfs));
        if (!f->vfs)
                abort();
        for (unsigned i = 0; i < numvfs; i++)
                vf_defaults(&f->vfs[i], i);
}

struct nl_fake *nl_fake_new(const char *ifname, unsigned numvfs) {
        struct nl_fake *f = calloc(1, sizeof(*f));

        if (!f)
                abort();
        snprintf(f->ifname, sizeof(f->ifname), "%s", ifname);
        nl_fake_reset(f, numvfs);
        return f;
}

void nl_fake_free(struct nl_fake *f) {
        if (!f)
                return;
        for (size_t i = 0; i < f->n_queue; i++)
                free(f->queue[i].buf);
        free(f->queue);
        free(f->vfs);
        free(f);
}

static void enqueue(struct nl_fake *f, struct nlmsghdr *nlh) {
        void *copy = malloc(nlh->nlmsg_len);

        if (!copy)
                abort();
        memcpy(copy, nlh, nlh->nlmsg_len);
        f->queue = realloc(f->queue, (f->n_queue + 1) * sizeof(*f->queue));
        if (!f->queue)
                abort();
        f->queue[f->n_queue++] = (struct nl_fake_msg) { copy, nlh->nlmsg_len };
}

static void reply_error(struct nl_fake *f, const struct nlmsghdr *req, int error, const char *msg) {
        char buf[1024] = {};
        struct nlmsghdr *nlh = mnl_nlmsg_put_header(buf);
        struct nlmsgerr *e;

        nlh->nlmsg_type = NLMSG_ERROR;
        nlh->nlmsg_seq = req->nlmsg_seq;
        nlh->nlmsg_flags = NLM_F_CAPPED;
        e = mnl_nlmsg_put_extra_header(nlh, sizeof(*e));
        e->error = error;
        e->msg = *req;
        if (error && msg) {
                nlh->nlmsg_flags |= NLM_F_ACK_TLVS;
                mnl_attr_put_strz(nlh, NLMSGERR_ATTR_MSG, msg);
        }
        enqueue(f, nlh);
}

struct req {
        const char *ifname;
        const struct nlattr *list;
        uint32_t ext_mask;
};

static int req_cb(const struct nlattr *a, void *data) {
        struct req *r = data;

        switch (mnl_attr_get_type(a)) {
        case IFLA_IFNAME:
                if (mnl_attr_validate(a, MNL_TYPE_NUL_STRING) >= 0)
                        r->ifname = mnl_attr_get_str(a);
                break;
        case IFLA_VFINFO_LIST:
                r->list = a;
                break;
        case IFLA_EXT_MASK:
                if (mnl_attr_validate(a, MNL_TYPE_U32) >= 0)
                        r->ext_mask = mnl_attr_get_u32(a);
                break;
        }
        return MNL_CB_OK;
}

static int bit_index(unsigned bit) {
        return __builtin_ctz(bit);
}

/* do_setvfinfo(): each attribute names its VF; applied in order, the
 * first refusal ends the message (what came before stays applied). */
static int apply(struct nl_fake *f, const struct nlattr *info, const char **ret_msg) {
        const struct nlattr *a;
        struct svff_nl_vf d = {};

        f->set_attrs = 0;
        mnl_attr_for_each_nested(a, info) {
                unsigned type = mnl_attr_get_type(a), bit = 0;
                const void *p = mnl_attr_get_payload(a);
                uint32_t vfn;

                f->set_attrs |= 1u << type;
                switch (type) {
                case IFLA_VF_MAC: {
                        const struct ifla_vf_mac *m = p;
                        vfn = m->vf;
                        bit = SVFF_NL_VF_MAC;
                        memcpy(d.mac, m->mac, 6);
                        break;
                }
                case IFLA_VF_VLAN_LIST: {
                        const struct nlattr *vi;
                        const struct ifla_vf_vlan_info *v = NULL;
                        mnl_attr_for_each_nested(vi, a)
                                if (mnl_attr_get_type(vi) == IFLA_VF_VLAN_INFO)
                                        v = mnl_attr_get_payload(vi);
                        if (!v)
                                return -EINVAL;
                        vfn = v->vf;
                        bit = SVFF_NL_VF_VLAN;
                        d.vlan = (uint16_t) v->vlan;
                        d.qos = (uint8_t) v->qos;
                        d.vlan_proto = ntohs(v->vlan_proto);
                        if (d.vlan > 4095 || d.qos > 7)
                                return -EINVAL;
                        if (d.vlan_proto != SVFF_NL_PROTO_8021Q && d.vlan_proto != SVFF_NL_PROTO_8021AD)
                                return -EPROTONOSUPPORT;
                        break;
                }
                case IFLA_VF_RATE: {
                        const struct ifla_vf_rate *r = p;
                        vfn = r->vf;
                        bit = SVFF_NL_VF_RATE;
                        d.min_tx_rate = r->min_tx_rate;
                        d.max_tx_rate = r->max_tx_rate;
                        if (f->refuse_min_rate && d.min_tx_rate) {
                                *ret_msg = "min_tx_rate is not supported by this device";
                                return -EINVAL;
                        }
                        break;
                }
                case IFLA_VF_SPOOFCHK:
                        vfn = ((const struct ifla_vf_spoofchk *) p)->vf;
                        bit = SVFF_NL_VF_SPOOFCHK;
                        d.spoofchk = ((const struct ifla_vf_spoofchk *) p)->setting;
                        break;
                case IFLA_VF_LINK_STATE:
                        vfn = ((const struct ifla_vf_link_state *) p)->vf;
                        bit = SVFF_NL_VF_LINK_STATE;
                        d.link_state = ((const struct ifla_vf_link_state *) p)->link_state;
                        break;
                case IFLA_VF_RSS_QUERY_EN:
                        vfn = ((const struct ifla_vf_rss_query_en *) p)->vf;
                        bit = SVFF_NL_VF_RSS_QUERY;
                        d.rss_query = ((const struct ifla_vf_rss_query_en *) p)->setting;
                        break;
                case IFLA_VF_TRUST:
                        vfn = ((const struct ifla_vf_trust *) p)->vf;
                        bit = SVFF_NL_VF_TRUST;
                        d.trust = ((const struct ifla_vf_trust *) p)->setting;
                        break;
                default:
                        /* IFLA_VF_VLAN alone, and what svff never sends. */
                        f->other++;
                        return -EINVAL;
                }
                if (vfn >= f->numvfs)
                        return -EINVAL;

                d.index = vfn;
                d.mask |= bit;
                f->last_set = d;
                if (f->refuse[bit_index(bit)]) {
                        *ret_msg = f->refuse_msg[bit_index(bit)];
                        return f->refuse[bit_index(bit)];
                }

                struct svff_nl_vf *vf = &f->vfs[vfn];
                switch (bit) {
                case SVFF_NL_VF_MAC:
                        if (f->refuse_zero_mac && !(d.mac[0] | d.mac[1] | d.mac[2] | d.mac[3] | d.mac[4] | d.mac[5]))
                                return -EINVAL;
                        if (d.mac[0] & 1)
                                return -EINVAL;
                        memcpy(vf->mac, d.mac, 6);
                        break;
                case SVFF_NL_VF_VLAN:
                        vf->vlan = d.vlan;
                        vf->qos = d.qos;
                        vf->vlan_proto = d.vlan_proto;
                        break;
                case SVFF_NL_VF_RATE:
                        vf->min_tx_rate = d.min_tx_rate;
                        vf->max_tx_rate = d.max_tx_rate;
                        break;
                case SVFF_NL_VF_SPOOFCHK: vf->spoofchk = d.spoofchk; break;
                case SVFF_NL_VF_LINK_STATE: vf->link_state = d.link_state; break;
                case SVFF_NL_VF_RSS_QUERY: vf->rss_query = d.rss_query; break;
                case SVFF_NL_VF_TRUST: vf->trust = d.trust; break;
                }
        }
        return 0;
}

/* The kernel's per-VF counters (rtnl_fill_vfinfo()), left out only when
 * the request asks for RTEXT_FILTER_SKIP_STATS: 100 bytes a VF, which is
 * what makes the list outgrow its attribute at about 220 VFs. */
static void put_vf_stats(struct nlmsghdr *nlh, const struct svff_nl_vf *vf) {
        static const uint16_t types[] = { IFLA_VF_STATS_RX_PACKETS, IFLA_VF_STATS_TX_PACKETS,
                                          IFLA_VF_STATS_RX_BYTES, IFLA_VF_STATS_TX_BYTES,
                                          IFLA_VF_STATS_BROADCAST, IFLA_VF_STATS_MULTICAST,
                                          IFLA_VF_STATS_RX_DROPPED, IFLA_VF_STATS_TX_DROPPED };
        struct nlattr *st = mnl_attr_nest_start(nlh, IFLA_VF_STATS);

        for (size_t i = 0; i < sizeof(types) / sizeof(types[0]); i++)
                mnl_attr_put_u64(nlh, types[i], (uint64_t) vf->index * 1000 + i);
        mnl_attr_nest_end(nlh, st);
}

static void put_vf(struct nlmsghdr *nlh, const struct svff_nl_vf *vf, bool stats) {
        struct ifla_vf_mac m = { .vf = vf->index };
        struct ifla_vf_vlan v = { .vf = vf->index, .vlan = vf->vlan, .qos = vf->qos };
        struct ifla_vf_vlan_info vi = { .vf = vf->index, .vlan = vf->vlan, .qos = vf->qos,
                                        .vlan_proto = htons(vf->vlan_proto) };
        struct ifla_vf_rate r = { .vf = vf->index, .min_tx_rate = vf->min_tx_rate,
                                  .max_tx_rate = vf->max_tx_rate };
        struct ifla_vf_tx_rate tx = { .vf = vf->index, .rate = vf->max_tx_rate };
        struct ifla_vf_spoofchk s = { .vf = vf->index, .setting = vf->spoofchk };
        struct ifla_vf_link_state l = { .vf = vf->index, .link_state = vf->link_state };
        struct ifla_vf_rss_query_en q = { .vf = vf->index, .setting = vf->rss_query };
        struct ifla_vf_trust t = { .vf = vf->index, .setting = vf->trust };
        struct ifla_vf_broadcast b;
        struct nlattr *info, *vl;

        memset(&b, 0xff, sizeof(b));
        memcpy(m.mac, vf->mac, 6);
        info = mnl_attr_nest_start(nlh, IFLA_VF_INFO);
        mnl_attr_put(nlh, IFLA_VF_MAC, sizeof(m), &m);
        mnl_attr_put(nlh, IFLA_VF_BROADCAST, sizeof(b), &b);
        mnl_attr_put(nlh, IFLA_VF_VLAN, sizeof(v), &v);
        vl = mnl_attr_nest_start(nlh, IFLA_VF_VLAN_LIST);
        mnl_attr_put(nlh, IFLA_VF_VLAN_INFO, sizeof(vi), &vi);
        mnl_attr_nest_end(nlh, vl);
        mnl_attr_put(nlh, IFLA_VF_TX_RATE, sizeof(tx), &tx);
        mnl_attr_put(nlh, IFLA_VF_RATE, sizeof(r), &r);
        mnl_attr_put(nlh, IFLA_VF_SPOOFCHK, sizeof(s), &s);
        mnl_attr_put(nlh, IFLA_VF_LINK_STATE, sizeof(l), &l);
        mnl_attr_put(nlh, IFLA_VF_RSS_QUERY_EN, sizeof(q), &q);
        mnl_attr_put(nlh, IFLA_VF_TRUST, sizeof(t), &t);
        if (stats)
                put_vf_stats(nlh, vf);
        mnl_attr_nest_end(nlh, info);
}

static void reply_link(struct nl_fake *f, const struct nlmsghdr *req, uint32_t ext_mask) {
        size_t size = 4096 + (size_t) f->numvfs * 1024;
        void *buf = calloc(1, size);
        struct nlmsghdr *nlh;
        struct ifinfomsg *ifi;

        if (!buf)
                abort();
        nlh = mnl_nlmsg_put_header(buf);
        nlh->nlmsg_type = RTM_NEWLINK;
        nlh->nlmsg_seq = req->nlmsg_seq;
        ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
        ifi->ifi_index = 2;
        mnl_attr_put_strz(nlh, IFLA_IFNAME, f->ifname);
        if (ext_mask & RTEXT_FILTER_VF) {
                struct nlattr *list;

                mnl_attr_put_u32(nlh, IFLA_NUM_VF, f->numvfs);
                list = mnl_attr_nest_start(nlh, IFLA_VFINFO_LIST);
                f->last_listed = 0;
                for (unsigned i = 0; i < f->numvfs; i++) {
                        size_t before = nlh->nlmsg_len;

                        put_vf(nlh, &f->vfs[i], !(ext_mask & RTEXT_FILTER_SKIP_STATS));
                        /* nla_len is 16 bits: the kernel's list cannot hold
                         * this VF. Leave it out, as a reader can only tell
                         * from IFLA_NUM_VF. */
                        if ((char *) mnl_nlmsg_get_payload_tail(nlh) - (char *) list > 0xffff) {
                                nlh->nlmsg_len = (uint32_t) before;
                                break;
                        }
                        f->last_listed++;
                }
                mnl_attr_nest_end(nlh, list);
        }
        enqueue(f, nlh);
        free(buf);
}

static int fake_send(void *userdata, const void *buf, size_t len) {
        struct nl_fake *f = userdata;
        const struct nlmsghdr *nlh = buf;
        struct req r = {};

        if (!mnl_nlmsg_ok(nlh, (int) len) || nlh->nlmsg_len != len)
                abort();        /* svff sent a malformed message */
        if (mnl_attr_parse(nlh, sizeof(struct ifinfomsg), req_cb, &r) < 0)
                abort();
        snprintf(f->last_ifname, sizeof(f->last_ifname), "%s", r.ifname ?: "");
        f->last_had_ack_flag = nlh->nlmsg_flags & NLM_F_ACK;
        f->last_ext_mask = r.ext_mask;

        if (strlen(f->log) + 1 < sizeof(f->log))
                strcat(f->log, nlh->nlmsg_type == RTM_SETLINK ? "S" :
                               nlh->nlmsg_type != RTM_GETLINK ? "?" :
                               nlh->nlmsg_flags & NLM_F_DUMP ? "D" : "G");
        switch (nlh->nlmsg_type) {
        case RTM_SETLINK: {
                const char *msg = NULL;
                const struct nlattr *info;
                int e = 0;

                f->sets++;
                if (!r.ifname || strcmp(r.ifname, f->ifname) != 0) {
                        reply_error(f, nlh, -ENODEV, NULL);
                        return 0;
                }
                if (f->fail_set > 0 && (int) f->sets == f->fail_set) {
                        reply_error(f, nlh, -EIO, "injected failure");
                        return 0;
                }
                if (r.list)
                        mnl_attr_for_each_nested(info, r.list) {
                                if (mnl_attr_get_type(info) != IFLA_VF_INFO)
                                        continue;
                                e = apply(f, info, &msg);
                                if (e < 0)
                                        break;
                        }
                reply_error(f, nlh, e, msg);
                return 0;
        }
        case RTM_GETLINK:
                if (nlh->nlmsg_flags & NLM_F_DUMP) {
                        f->dumps++;
                        reply_error(f, nlh, -EOPNOTSUPP, "the stand-in refuses dumps");
                        return 0;
                }
                f->gets++;
                if (!r.ifname || strcmp(r.ifname, f->ifname) != 0) {
                        reply_error(f, nlh, -ENODEV, NULL);
                        return 0;
                }
                reply_link(f, nlh, r.ext_mask);
                return 0;
        default:
                f->other++;
                reply_error(f, nlh, -EOPNOTSUPP, NULL);
                return 0;
        }
}

static ssize_t fake_recv(void *userdata, void *buf, size_t len, int flags) {
        struct nl_fake *f = userdata;
        struct nl_fake_msg m;

        if (f->n_queue == 0)
                return -EAGAIN;
        m = f->queue[0];
        if (flags & MSG_PEEK)
                return (flags & MSG_TRUNC) ? (ssize_t) m.len : -EINVAL;
        memcpy(buf, m.buf, MIN(len, m.len));
        free(m.buf);
        memmove(f->queue, f->queue + 1, (f->n_queue - 1) * sizeof(*f->queue));
        f->n_queue--;
        return (flags & MSG_TRUNC) ? (ssize_t) m.len : (ssize_t) MIN(len, m.len);
}

static const struct svff_nl_ops fake_ops = {
        .send = fake_send,
        .recv = fake_recv,
};

int nl_fake_send(struct nl_fake *f, const void *buf, size_t len) {
        return fake_send(f, buf, len);
}

struct svff_nl *nl_fake_open(struct nl_fake *f) {
        struct svff_nl *nl;

        if (svff_nl_new(&fake_ops, f, &nl) < 0)
                abort();
        return nl;
}

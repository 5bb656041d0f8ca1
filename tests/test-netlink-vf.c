/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* netlink-vf against the stand-in for a PF driver's rtnetlink (nl-fake):
 * every attribute is encoded, decoded back by libmnl on the other side,
 * read back through RTM_GETLINK, and refusals come back with their errno
 * and the kernel's text. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <linux/if_link.h>
#include <linux/rtnetlink.h>
#include <libmnl/libmnl.h>
#include <sys/socket.h>

#include "netlink-vf.h"
#include "nl-fake.h"

static struct nl_fake *f;
static struct svff_nl *nl;

static void setup(void) {
        f = nl_fake_new("eth0", 4);
        nl = nl_fake_open(f);
}

static void teardown(void) {
        nl = svff_nl_free(nl);
        nl_fake_free(f);
        f = NULL;
}

START_TEST(test_mac_parse) {
        uint8_t mac[6];
        char buf[18];

        ck_assert_int_eq(svff_nl_mac_parse("02:00:0A:bc:00:01", mac), 0);
        svff_nl_mac_format(mac, buf);
        ck_assert_str_eq(buf, "02:00:0a:bc:00:01");
        ck_assert(!svff_nl_mac_is_multicast(mac));
        ck_assert_int_eq(svff_nl_mac_parse("03:00:00:00:00:01", mac), 0);
        ck_assert(svff_nl_mac_is_multicast(mac));
        ck_assert_int_eq(svff_nl_mac_parse("02:00:00:00:00", mac), -EINVAL);
        ck_assert_int_eq(svff_nl_mac_parse("02:00:00:00:00:01:", mac), -EINVAL);
        ck_assert_int_eq(svff_nl_mac_parse("02-00-00-00-00-01", mac), -EINVAL);
        ck_assert_int_eq(svff_nl_mac_parse("2:0:0:0:0:1", mac), -EINVAL);
        ck_assert_int_eq(svff_nl_mac_parse("g2:00:00:00:00:01", mac), -EINVAL);
        ck_assert_int_eq(svff_nl_mac_parse("", mac), -EINVAL);
        ck_assert_int_eq(svff_nl_mac_parse("00:00:00:00:00:00", mac), 0);
        ck_assert(svff_nl_mac_is_zero(mac));
}
END_TEST

/* Each attribute alone: exactly its IFLA_VF_* type is on the wire, with
 * the VF index and value, and the request is an acknowledged SETLINK of
 * the PF by name. */
START_TEST(test_encode_each_attribute) {
        static const struct {
                unsigned bit;
                unsigned type;
        } attrs[] = {
                { SVFF_NL_VF_MAC, IFLA_VF_MAC },
                { SVFF_NL_VF_VLAN, IFLA_VF_VLAN_LIST },
                { SVFF_NL_VF_RATE, IFLA_VF_RATE },
                { SVFF_NL_VF_SPOOFCHK, IFLA_VF_SPOOFCHK },
                { SVFF_NL_VF_LINK_STATE, IFLA_VF_LINK_STATE },
                { SVFF_NL_VF_RSS_QUERY, IFLA_VF_RSS_QUERY_EN },
                { SVFF_NL_VF_TRUST, IFLA_VF_TRUST },
        };
        struct svff_nl_vf vf = {
                .index = 2,
                .mac = { 0x02, 0, 0, 0, 0, 0x03 },
                .vlan = 100, .qos = 5, .vlan_proto = SVFF_NL_PROTO_8021AD,
                .min_tx_rate = 10, .max_tx_rate = 900,
                .spoofchk = false, .trust = true, .rss_query = true,
                .link_state = SVFF_NL_LINK_DISABLE,
        };

        for (size_t i = 0; i < ELEMENTSOF(attrs); i++) {
                struct svff_error err = SVFF_ERROR_NULL;

                vf.mask = attrs[i].bit;
                ck_assert_int_eq(svff_nl_vf_set(nl, "eth0", &vf, &err), 0);
                ck_assert_uint_eq(f->set_attrs, 1u << attrs[i].type);
                ck_assert_uint_eq(f->last_set.index, 2);
                ck_assert_uint_eq(f->last_set.mask, attrs[i].bit);
                ck_assert_str_eq(f->last_ifname, "eth0");
                ck_assert(f->last_had_ack_flag);
        }
        ck_assert_uint_eq(f->sets, ELEMENTSOF(attrs));
        ck_assert_uint_eq(f->gets + f->dumps + f->other, 0);

        /* The values, as the driver took them. */
        const struct svff_nl_vf *d = &f->vfs[2];
        ck_assert_mem_eq(d->mac, vf.mac, 6);
        ck_assert_uint_eq(d->vlan, 100);
        ck_assert_uint_eq(d->qos, 5);
        ck_assert_uint_eq(d->vlan_proto, SVFF_NL_PROTO_8021AD);
        ck_assert_uint_eq(d->min_tx_rate, 10);
        ck_assert_uint_eq(d->max_tx_rate, 900);
        ck_assert(!d->spoofchk);
        ck_assert(d->trust);
        ck_assert(d->rss_query);
        ck_assert_uint_eq(d->link_state, SVFF_NL_LINK_DISABLE);
        /* The others untouched. */
        ck_assert(svff_nl_mac_is_zero(f->vfs[1].mac));
        ck_assert(f->vfs[1].spoofchk);
}
END_TEST

/* All seven in one message, decoded back through RTM_GETLINK. */
START_TEST(test_set_all_get_back) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_nl_vf vf = {
                .index = 1, .mask = SVFF_NL_VF_ALL,
                .mac = { 0x02, 0x53, 0, 0, 0, 0x01 },
                .vlan = 4095, .qos = 7, .vlan_proto = SVFF_NL_PROTO_8021Q,
                .max_tx_rate = 1000, .trust = true, .link_state = SVFF_NL_LINK_ENABLE,
        }, got;
        struct svff_nl_stats st;

        ck_assert_int_eq(svff_nl_vf_set(nl, "eth0", &vf, &err), 0);
        ck_assert_uint_eq(f->set_attrs, 1u << IFLA_VF_MAC | 1u << IFLA_VF_VLAN_LIST | 1u << IFLA_VF_RATE |
                          1u << IFLA_VF_SPOOFCHK | 1u << IFLA_VF_LINK_STATE |
                          1u << IFLA_VF_RSS_QUERY_EN | 1u << IFLA_VF_TRUST);

        ck_assert_int_eq(svff_nl_vf_get(nl, "eth0", 1, &got, &err), 0);
        ck_assert_uint_eq(f->last_ext_mask, RTEXT_FILTER_VF | RTEXT_FILTER_SKIP_STATS);
        ck_assert(!f->last_had_ack_flag);
        ck_assert_uint_eq(got.mask, SVFF_NL_VF_ALL);
        ck_assert_uint_eq(got.index, 1);
        ck_assert_mem_eq(got.mac, vf.mac, 6);
        ck_assert_uint_eq(got.vlan, 4095);
        ck_assert_uint_eq(got.qos, 7);
        ck_assert_uint_eq(got.vlan_proto, SVFF_NL_PROTO_8021Q);
        ck_assert_uint_eq(got.max_tx_rate, 1000);
        ck_assert_uint_eq(got.min_tx_rate, 0);
        ck_assert(!got.spoofchk);
        ck_assert(got.trust);
        ck_assert(!got.rss_query);
        ck_assert_uint_eq(got.link_state, SVFF_NL_LINK_ENABLE);

        svff_nl_get_stats(nl, &st);
        ck_assert_uint_eq(st.sets, 1);
        ck_assert_uint_eq(st.gets, 1);
        ck_assert_uint_eq(st.dumps, 0);
        ck_assert_uint_eq(f->dumps, 0);

        ck_assert_int_eq(svff_nl_vf_get(nl, "eth0", 9, &got, &err), -ENOENT);
        svff_error_free(&err);
}
END_TEST

START_TEST(test_zero_mac_never_sent) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_nl_vf vf = { .index = 0, .mask = SVFF_NL_VF_MAC | SVFF_NL_VF_TRUST, .trust = true };

        ck_assert_int_eq(svff_nl_vf_set(nl, "eth0", &vf, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "all-zero MAC"));
        ck_assert_uint_eq(f->sets, 0);
        ck_assert(!f->vfs[0].trust);
        svff_error_free(&err);
}
END_TEST

/* The driver's refusal: its errno and the extended ack's text, and what
 * the kernel applied before it stays applied. */
START_TEST(test_refusal_errno_and_text) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_nl_vf vf = {
                .index = 3, .mask = SVFF_NL_VF_MAC | SVFF_NL_VF_RATE | SVFF_NL_VF_TRUST,
                .mac = { 0x02, 0, 0, 0, 0, 0x09 }, .min_tx_rate = 100, .max_tx_rate = 500, .trust = true,
        };

        f->refuse_min_rate = true;
        ck_assert_int_eq(svff_nl_vf_set(nl, "eth0", &vf, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "VF 3 of 'eth0'"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "min_tx_rate is not supported"));
        ck_assert_uint_eq(f->vfs[3].mac[5], 0x09);
        ck_assert(!f->vfs[3].trust);
        svff_error_free(&err);

        vf.mask = SVFF_NL_VF_LINK_STATE;
        f->refuse[__builtin_ctz(SVFF_NL_VF_LINK_STATE)] = -EOPNOTSUPP;
        ck_assert_int_eq(svff_nl_vf_set(nl, "eth0", &vf, &err), -EOPNOTSUPP);
        ck_assert_int_eq(err.code, -EOPNOTSUPP);
        svff_error_free(&err);

        vf.mask = SVFF_NL_VF_TRUST;
        ck_assert_int_eq(svff_nl_vf_set(nl, "eth1", &vf, &err), -ENODEV);
        svff_error_free(&err);
}
END_TEST

/* The reply buffer follows the message: a 256-VF PF's reply is far over
 * any fixed socket buffer, and is read whole. */
START_TEST(test_large_reply_sized_by_peek) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ struct svff_nl_vf *vfs = NULL;
        size_t n;

        nl_fake_reset(f, SVFF_NL_VF_LIST_MAX);
        f->vfs[199].trust = true;
        ck_assert_int_eq(svff_nl_vf_get_all(nl, "eth0", &vfs, &n, &err), 0);
        ck_assert_uint_eq(n, SVFF_NL_VF_LIST_MAX);
        ck_assert_uint_eq(vfs[199].index, 199);
        ck_assert(vfs[199].trust);
        ck_assert(!vfs[198].trust);
}
END_TEST

/* 400 VFs: the list outgrows its attribute even without statistics, and
 * the reader says so instead of taking a truncated list for the whole. */
START_TEST(test_overflowing_list_refused) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ struct svff_nl_vf *vfs = NULL;
        size_t n = 0;

        nl_fake_reset(f, 400);
        ck_assert(!svff_nl_vf_list_readable(400));
        ck_assert(svff_nl_vf_list_readable(252));
        ck_assert_int_eq(svff_nl_vf_get_all(nl, "eth0", &vfs, &n, &err), -EMSGSIZE);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "has 400 VFs"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "acknowledgement"));
        svff_error_free(&err);

        /* A set still works at any index. */
        struct svff_nl_vf vf = { .index = 399, .mask = SVFF_NL_VF_TRUST, .trust = true };
        ck_assert_int_eq(svff_nl_vf_set(nl, "eth0", &vf, &err), 0);
        ck_assert(f->vfs[399].trust);
}
END_TEST

/* A 252-VF PF (QDMA's count, a large NIC's): the list holds every VF
 * because svff asks the kernel to leave the counters out; with them it
 * outgrows its attribute at about 220 VFs, as the kernel's does. */
START_TEST(test_252_vfs_read_without_stats) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ struct svff_nl_vf *vfs = NULL;
        size_t n = 0;

        nl_fake_reset(f, 252);
        f->vfs[251].trust = true;
        f->vfs[250].vlan = 7;
        ck_assert(svff_nl_vf_list_readable(252));
        ck_assert_int_eq(svff_nl_vf_get_all(nl, "eth0", &vfs, &n, &err), 0);
        ck_assert_uint_eq(f->last_ext_mask & RTEXT_FILTER_SKIP_STATS, RTEXT_FILTER_SKIP_STATS);
        ck_assert_uint_eq(n, 252);
        ck_assert_uint_eq(vfs[251].index, 251);
        ck_assert(vfs[251].trust);
        ck_assert_uint_eq(vfs[250].vlan, 7);

        /* The same request with the counters: the kernel's list is cut
         * short between 200 and 252 VFs. */
        {
                char req[256];
                struct nlmsghdr *nlh = mnl_nlmsg_put_header(req);
                struct ifinfomsg *ifi;

                nlh->nlmsg_type = RTM_GETLINK;
                nlh->nlmsg_flags = NLM_F_REQUEST;
                nlh->nlmsg_seq = 4242;
                ifi = mnl_nlmsg_put_extra_header(nlh, sizeof(*ifi));
                ifi->ifi_family = AF_UNSPEC;
                mnl_attr_put_strz(nlh, IFLA_IFNAME, "eth0");
                mnl_attr_put_u32(nlh, IFLA_EXT_MASK, RTEXT_FILTER_VF);
                ck_assert_int_ge(nl_fake_send(f, nlh, nlh->nlmsg_len), 0);
                ck_assert_uint_gt(f->last_listed, 200);
                ck_assert_uint_lt(f->last_listed, 252);
        }
}
END_TEST

/* The counters (IFLA_VF_STATS) of as many VFs as the list holds with
 * them, each to its VF (the stand-in's VF k counts k * 1000 + the
 * counter's position in the kernel's nest); above that the read is
 * refused, never taken for the whole. */
START_TEST(test_counters) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ struct svff_nl_vf *vfs = NULL, *plain = NULL;
        size_t n = 0;

        nl_fake_reset(f, SVFF_NL_VF_COUNTERS_LIST_MAX);
        ck_assert(svff_nl_vf_counters_readable(SVFF_NL_VF_COUNTERS_LIST_MAX));
        ck_assert(!svff_nl_vf_counters_readable(252));
        ck_assert_int_eq(svff_nl_vf_get_all_counters(nl, "eth0", &vfs, &n, &err), 0);
        ck_assert_uint_eq(f->last_ext_mask, RTEXT_FILTER_VF);
        ck_assert_uint_eq(n, SVFF_NL_VF_COUNTERS_LIST_MAX);
        for (size_t i = 0; i < n; i += 37) {
                const struct svff_nl_vf_counters *c = &vfs[i].counters;

                ck_assert_uint_eq(vfs[i].index, i);
                ck_assert_uint_eq(vfs[i].mask & SVFF_NL_VF_COUNTERS, SVFF_NL_VF_COUNTERS);
                ck_assert_uint_eq(c->rx_packets, i * 1000 + 0);
                ck_assert_uint_eq(c->tx_packets, i * 1000 + 1);
                ck_assert_uint_eq(c->rx_bytes, i * 1000 + 2);
                ck_assert_uint_eq(c->tx_bytes, i * 1000 + 3);
                ck_assert_uint_eq(c->broadcast, i * 1000 + 4);
                ck_assert_uint_eq(c->multicast, i * 1000 + 5);
                ck_assert_uint_eq(c->rx_dropped, i * 1000 + 6);
                ck_assert_uint_eq(c->tx_dropped, i * 1000 + 7);
        }
        ck_assert_int_eq(svff_nl_vf_get_all(nl, "eth0", &plain, &n, &err), 0);
        ck_assert_uint_eq(plain[5].mask & SVFF_NL_VF_COUNTERS, 0);
        ck_assert_uint_eq(plain[5].counters.rx_bytes, 0);

        free(vfs);
        vfs = NULL;
        nl_fake_reset(f, 252);
        ck_assert_int_eq(svff_nl_vf_get_all_counters(nl, "eth0", &vfs, &n, &err), -EMSGSIZE);
        svff_error_free(&err);
}
END_TEST

/* The real rtnetlink, on the loopback link: the kernel parses the same
 * bytes. lo has no VFs, and no driver hook to set one, so the kernel
 * answers EOPNOTSUPP (a malformed message would be EINVAL), and a link
 * that does not exist ENODEV. */
START_TEST(test_real_kernel_loopback) {
        _cleanup_(svff_nl_freep) struct svff_nl *real = NULL;
        _cleanup_free_ struct svff_nl_vf *vfs = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_nl_vf vf = { .index = 0, .mask = SVFF_NL_VF_ALL, .mac = { 0x02, 0, 0, 0, 0, 1 },
                                 .vlan = 5 };
        size_t n = 99;
        int r;

        r = svff_nl_open(&real);
        if (r < 0) {
                fprintf(stderr, "skipping the real-kernel case: no rtnetlink socket: %s\n", strerror(-r));
                return;
        }
        ck_assert_int_eq(svff_nl_vf_get_all(real, "lo", &vfs, &n, &err), 0);
        ck_assert_uint_eq(n, 0);
        r = svff_nl_vf_set(real, "lo", &vf, &err);
        ck_assert_msg(r == -EOPNOTSUPP || r == -EPERM, "set on lo: %d %s", r, svff_error_message(&err));
        svff_error_free(&err);
        ck_assert_int_eq(svff_nl_vf_get_all(real, "svff-no-such0", &vfs, &n, &err), -ENODEV);
        svff_error_free(&err);
}
END_TEST

int main(void) {
        Suite *s = suite_create("netlink-vf");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_add_test(tc, test_mac_parse);
        tcase_add_test(tc, test_encode_each_attribute);
        tcase_add_test(tc, test_set_all_get_back);
        tcase_add_test(tc, test_zero_mac_never_sent);
        tcase_add_test(tc, test_refusal_errno_and_text);
        tcase_add_test(tc, test_large_reply_sized_by_peek);
        tcase_add_test(tc, test_overflowing_list_refused);
        tcase_add_test(tc, test_252_vfs_read_without_stats);
        tcase_add_test(tc, test_counters);
        tcase_add_test(tc, test_real_kernel_loopback);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

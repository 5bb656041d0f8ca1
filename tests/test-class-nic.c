/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NIC class against the stand-in for a PF driver's rtnetlink
 * (nl-fake; no SR-IOV NIC on the build host, the VM tier has igb): the
 * order of its messages, validation before any, a partial failure,
 * re-provision, a reconf's wipe, release, a 252-VF PF read and set
 * whole without any whole-PF dump, and a 300-VF one verified by each
 * set's acknowledgement. */

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "class-nic.h"
#include "fixture-util.h"
#include "json-util.h"
#include "nl-fake.h"

static char *root;
static struct svff_ctx *ctx;
static struct nl_fake *f;
static struct svff_class_pf *c;
static struct svff_pf pf;

static void open_pf(unsigned numvfs) {
        struct svff_error err = SVFF_ERROR_NULL;

        if (c)
                svff_class_nic.close(c);
        c = NULL;
        nl_fake_free(f);
        f = nl_fake_new("eth0", numvfs);
        pf.numvfs = numvfs;
        ck_assert_int_eq(svff_class_nic_open_with(ctx, &pf, nl_fake_open(f), root, &c, &err), 0);
}

static void setup(void) {
        root = fixture_new();
        ck_assert_int_eq(svff_ctx_new(root, &ctx), 0);
        memset(&pf, 0, sizeof(pf));
        strcpy(pf.address, "0000:05:00.0");
        pf.class = 0x020000;
        pf.netdev = (char *) "eth0";
        pf.driver = (char *) "igb";
        open_pf(4);
}

static void teardown(void) {
        if (c)
                svff_class_nic.close(c);
        c = NULL;
        nl_fake_free(f);
        f = NULL;
        ctx = svff_ctx_unref(ctx);
        fixture_free(root);
        root = NULL;
}

static struct json_object *J(const char *text) {
        struct json_object *o = json_tokener_parse(text);
        ck_assert_ptr_nonnull(o);
        return o;
}

static const char *S(struct json_object *o, const char *key) {
        const char *s = NULL;
        if (svff_json_get_string(o, key, &s) < 0)
                return "(absent)";
        return s;
}

static void log_reset(void) {
        f->log[0] = 0;
}

/* Loads settings (JSON text, or NULL) for VF index and provisions it
 * with recorded (a reprovision's recorded state, or NULL): r of
 * whichever failed, *ret the state. */
static int provision_r(unsigned index, const char *settings, struct json_object *recorded, bool tenant,
                       struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *s = settings ? J(settings) : NULL;
        struct svff_class_settings *loaded = NULL;
        int r;

        *ret = NULL;
        r = svff_class_nic.load(c, index, s, &loaded, err);
        if (r < 0)
                return r;
        ck_assert_ptr_nonnull(loaded);
        r = svff_class_nic.provision(c, &pf, index, loaded, recorded, tenant, ret, err);
        svff_class_nic.unload(loaded);
        return r;
}

static struct json_object *reprovision(unsigned index, const char *settings, struct json_object *recorded) {
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *st = NULL;
        int r;

        r = provision_r(index, settings, recorded, false, &st, &err);
        ck_assert_msg(r == 0, "provision VF %u: %s", index, svff_error_message(&err));
        return st;
}

static struct json_object *provision(unsigned index, const char *settings) {
        return reprovision(index, settings, NULL);
}

static int reprovision_fails(unsigned index, const char *settings, struct json_object *recorded,
                             struct svff_error *err) {
        struct json_object *st = NULL;
        int r = provision_r(index, settings, recorded, false, &st, err);

        ck_assert_int_lt(r, 0);
        ck_assert_ptr_null(st);
        return r;
}

static int provision_fails(unsigned index, const char *settings, struct svff_error *err) {
        return reprovision_fails(index, settings, NULL, err);
}

/* Loads settings (a JSON array by VF index, or NULL) and plans numvfs
 * VFs with them. */
static int plan_vfs(unsigned numvfs, struct json_object *settings, struct json_object **ret,
                    struct svff_error *err) {
        struct svff_class_settings **loaded = NULL;
        int r;

        r = svff_class_load_all(&svff_class_nic, c, settings, numvfs, &loaded, err);
        if (r < 0)
                return r;
        r = svff_class_nic.plan(c, &pf, numvfs, loaded, ret, err);
        svff_class_unload_all(&svff_class_nic, loaded, numvfs);
        return r;
}

/* A NIC PF is class 02 with an interface rtnetlink can reach: the
 * loopback link stands in for one here (every network namespace has
 * it); a simulated tree's interface name is no link at all. */
START_TEST(test_match) {
        struct svff_pf p = pf;

        p.netdev = (char *) "lo";
        ck_assert(svff_class_nic.match(ctx, &p));
        ck_assert_ptr_eq(svff_class_find(ctx, &p), &svff_class_nic);
        ck_assert_ptr_eq(svff_class_by_name("nic"), &svff_class_nic);
        p.class = 0x010802;     /* NVMe */
        ck_assert(!svff_class_nic.match(ctx, &p));
        p.class = 0x020000;
        p.netdev = NULL;        /* no driver bound, or not a netdev */
        ck_assert(!svff_class_nic.match(ctx, &p));
        p.netdev = (char *) "svff-sim0";
        ck_assert(!svff_class_nic.match(ctx, &p));
        ck_assert_ptr_null(svff_class_find(ctx, &p));
        /* The same name, but sysfs's ifindex is another link's. */
        p.netdev = (char *) "lo";
        fixture_file(root, "bus/pci/devices/0000:05:00.0/net/lo/ifindex", "9999\n");
        ck_assert(!svff_class_nic.match(ctx, &p));
        ck_assert_str_eq(svff_class_nic.name, "nic");
}
END_TEST

/* One read, one set, one read to verify: the settings reach the driver
 * before the VF would go to vfio-pci, and nothing is dumped. */
START_TEST(test_provision_order_and_count) {
        _cleanup_(json_object_putp) struct json_object *st = NULL;
        _cleanup_free_ char *d = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct svff_nl_stats n;

        log_reset();
        st = provision(1, "{\"mac\": \"02:00:00:00:00:01\", \"vlan\": 100, \"qos\": 3,"
                          " \"trust\": true, \"spoofchk\": false, \"max_tx_rate\": 500}");
        ck_assert_str_eq(f->log, "GS");
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 1, st, &err), 0);
        ck_assert_str_eq(f->log, "GSG");
        svff_class_nic_get_stats(c, &n);
        ck_assert_uint_eq(n.sets, 1);
        ck_assert_uint_eq(n.dumps, 0);
        ck_assert_uint_eq(f->dumps, 0);

        ck_assert_uint_eq(f->vfs[1].mac[5], 1);
        ck_assert_uint_eq(f->vfs[1].vlan, 100);
        ck_assert_uint_eq(f->vfs[1].qos, 3);
        ck_assert(f->vfs[1].trust);
        ck_assert(!f->vfs[1].spoofchk);
        ck_assert_uint_eq(f->vfs[1].max_tx_rate, 500);

        ck_assert_str_eq(S(st, "mac"), "02:00:00:00:00:01");
        ck_assert_str_eq(S(st, "verified"), "read");
        ck_assert_str_eq(S(st, "release"), "restore");
        d = svff_class_nic.describe(st);
        ck_assert_str_eq(d, "mac 02:00:00:00:00:01 vlan 100 qos 3 trust on spoofchk off rate 0-500");
        free(d);
        d = svff_class_nic.summarize(st);
        ck_assert_str_eq(d, "mac ..:00:01 vlan 100 trust");
}
END_TEST

/* Bad input is refused before any message, naming the VF and the fix. */
START_TEST(test_validation_before_anything) {
        static const struct {
                const char *settings;
                const char *says;
        } cases[] = {
                { "{\"mac\": \"02:00:00:00:01\"}", "malformed 'mac'" },
                { "{\"mac\": \"01:00:5e:00:00:01\"}", "multicast 'mac'" },
                { "{\"mac\": \"00:00:00:00:00:00\"}", "all-zero 'mac'" },
                { "{\"vlan\": 4096}", "0 to 4095" },
                { "{\"vlan\": -1}", "0 to 4095" },
                { "{\"vlan\": 5, \"qos\": 8}", "0 to 7" },
                { "{\"qos\": 2}", "without 'vlan'" },
                { "{\"vlan\": 5, \"vlan_proto\": \"802.1x\"}", "802.1Q or 802.1ad" },
                { "{\"link_state\": \"up\"}", "auto, enable or disable" },
                { "{\"trust\": \"yes\"}", "true or false" },
                { "{\"min_tx_rate\": 600, \"max_tx_rate\": 500}", "min_tx_rate above" },
                { "{\"mac_prefix\": \"03:00\"}", "multicast 'mac_prefix'" },
                { "{\"mac_prefix\": \"02:00:00:00:00\", \"vlan\": 1}", NULL },
                { "{\"vlam\": 5}", "unknown NIC setting 'vlam'" },
        };

        for (size_t i = 0; i < ELEMENTSOF(cases); i++) {
                struct svff_error err = SVFF_ERROR_NULL;

                log_reset();
                if (!cases[i].says) {
                        json_object_put(provision(0, cases[i].settings));
                        continue;
                }
                ck_assert_int_eq(provision_fails(2, cases[i].settings, &err), -EINVAL);
                ck_assert_msg(strstr(svff_error_message(&err), cases[i].says),
                              "%s: %s", cases[i].settings, svff_error_message(&err));
                ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "VF 2 of 'eth0'"));
                ck_assert_str_eq(f->log, "");
                svff_error_free(&err);
        }

        /* A MAC another VF of the PF has: read, never set. */
        struct svff_error err = SVFF_ERROR_NULL;
        f->vfs[3].mac[0] = 0x02;
        f->vfs[3].mac[5] = 0x33;
        log_reset();
        ck_assert_int_eq(provision_fails(1, "{\"mac\": \"02:00:00:00:00:33\", \"vlan\": 9}", &err),
                         -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "is VF 3's already"));
        ck_assert_str_eq(f->log, "G");
        ck_assert_uint_eq(f->vfs[1].vlan, 0);
        svff_error_free(&err);
}
END_TEST

/* A stable MAC from the policy's prefix and the VF index. */
START_TEST(test_mac_prefix) {
        for (unsigned i = 0; i < 4; i++)
                json_object_put(provision(i, "{\"mac_prefix\": \"02:53:00:00\"}"));
        for (unsigned i = 0; i < 4; i++) {
                ck_assert_uint_eq(f->vfs[i].mac[0], 0x02);
                ck_assert_uint_eq(f->vfs[i].mac[1], 0x53);
                ck_assert_uint_eq(f->vfs[i].mac[4], 0);
                ck_assert_uint_eq(f->vfs[i].mac[5], i);
        }
        /* The assignment's MAC wins. */
        json_object_put(provision(2, "{\"mac_prefix\": \"02:53:00:00\", \"mac\": \"02:aa:00:00:00:02\"}"));
        ck_assert_uint_eq(f->vfs[2].mac[1], 0xaa);
}
END_TEST

/* The same settings again, as recovery repeats a step: nothing is sent
 * but the read, and what the VF had before svff is kept from the record. */
START_TEST(test_idempotent_reprovision) {
        _cleanup_(json_object_putp) struct json_object *st = NULL, *again = NULL, *back = NULL, *crash = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *saved = NULL;

        f->vfs[0].vlan = 7;             /* set by someone before svff */
        st = provision(0, "{\"mac\": \"02:00:00:00:00:0a\", \"vlan\": 100}");
        ck_assert(json_object_object_get_ex(st, "saved", &saved));
        ck_assert_int_eq(json_object_get_int(json_object_object_get(saved, "vlan")), 7);

        log_reset();
        again = reprovision(0, "{\"mac\": \"02:00:00:00:00:0a\", \"vlan\": 100}", st);
        ck_assert_str_eq(f->log, "G");
        ck_assert(json_object_equal(st, again));

        /* Back to its tenant: the same. */
        log_reset();
        ck_assert_int_eq(provision_r(0, "{\"mac\": \"02:00:00:00:00:0a\", \"vlan\": 100}", st, true,
                                     &back, &err), 0);
        ck_assert_str_eq(f->log, "G");
        ck_assert(json_object_equal(st, back));

        /* Without the record (a crash before it was written), the VF
         * already carries svff's values: "before" is unknown, and release
         * will clear to the defaults instead of keeping VLAN 100. */
        log_reset();
        crash = provision(0, "{\"mac\": \"02:00:00:00:00:0a\", \"vlan\": 100}");
        ck_assert_str_eq(f->log, "G");
        ck_assert(json_object_object_get_ex(crash, "saved", &saved));
        ck_assert_ptr_null(saved);
}
END_TEST

/* numvfs 0 -> N wipes the VF: verify sees it, provision with the record
 * brings back exactly the recorded settings and keeps "saved". */
START_TEST(test_reconf_wipe) {
        _cleanup_(json_object_putp) struct json_object *st = NULL, *after = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        st = provision(2, "{\"mac\": \"02:00:00:00:00:02\", \"vlan\": 42, \"trust\": true}");
        nl_fake_reset(f, 4);
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 2, st, &err), -EUCLEAN);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "mac is 00:00:00:00:00:00, recorded 02:00:00:00:00:02"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "vlan is 0"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "trust is off, recorded on"));
        svff_error_free(&err);

        log_reset();
        after = reprovision(2, "{\"mac\": \"02:00:00:00:00:02\", \"vlan\": 42, \"trust\": true}", st);
        ck_assert_str_eq(f->log, "GS");
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 2, after, &err), 0);
        ck_assert(json_object_equal(st, after));
}
END_TEST

START_TEST(test_reconf_wipe_keeps_own) {
        _cleanup_(json_object_putp) struct json_object *st = NULL, *after = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        /* VF 3 had a VLAN of its own before svff, which sets only its MAC. */
        f->vfs[3].vlan = 7;
        st = provision(3, "{\"mac\": \"02:00:00:00:00:03\"}");
        ck_assert_uint_eq(f->vfs[3].vlan, 7);

        /* A reconf through 0 wipes the VF; its reprovision from the record
         * puts back both, and the VLAN stays the VF's own. */
        nl_fake_reset(f, 4);
        after = reprovision(3, "{\"mac\": \"02:00:00:00:00:03\"}", st);
        ck_assert_uint_eq(f->vfs[3].mac[5], 0x03);
        ck_assert_uint_eq(f->vfs[3].vlan, 7);
        ck_assert(json_object_equal(st, after));
        ck_assert_int_eq(svff_class_nic.release(c, &pf, 3, after, &err), 0);
        ck_assert_uint_eq(f->vfs[3].vlan, 7);

        /* Without a record (a first provision) nothing is invented. */
        nl_fake_reset(f, 4);
        json_object_put(after);
        after = provision(3, "{\"mac\": \"02:00:00:00:00:03\"}");
        ck_assert_uint_eq(f->vfs[3].vlan, 0);
}
END_TEST

/* A VF handed to another tenant, the previous one never released (its
 * domain undefined, say): provision with the VF's recorded state gives
 * exactly the new settings, read from the driver: the policy's MAC, no
 * VLAN, no rate, trust off, spoof checking on. A stray setting is then
 * drift. */
START_TEST(test_hand_over) {
        _cleanup_(json_object_putp) struct json_object *pool = NULL, *a = NULL, *b = NULL, *pool2 = NULL,
                *c2 = NULL, *d = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        pool = provision(1, "{\"mac_prefix\": \"02:53:00:00\"}");
        ck_assert_uint_eq(f->vfs[1].mac[1], 0x53);
        a = reprovision(1, "{\"mac_prefix\": \"02:53:00:00\", \"mac\": \"02:aa:00:00:00:01\", "
                        "\"vlan\": 100, \"trust\": true, \"spoofchk\": false, \"max_tx_rate\": 500}", pool);
        ck_assert_uint_eq(f->vfs[1].mac[1], 0xaa);
        ck_assert_uint_eq(f->vfs[1].vlan, 100);
        ck_assert(f->vfs[1].trust);

        b = reprovision(1, "{\"mac_prefix\": \"02:53:00:00\"}", a);
        ck_assert_uint_eq(f->vfs[1].mac[1], 0x53);
        ck_assert_uint_eq(f->vfs[1].mac[5], 0x01);
        ck_assert_uint_eq(f->vfs[1].vlan, 0);
        ck_assert(!f->vfs[1].trust);
        ck_assert(f->vfs[1].spoofchk);
        ck_assert_uint_eq(f->vfs[1].max_tx_rate, 0);
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 1, b, &err), 0);

        /* a VLAN set behind svff's back is drift, though B asked for none */
        f->vfs[1].vlan = 5;
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 1, b, &err), -EUCLEAN);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "vlan is 5"));
        svff_error_free(&err);
        f->vfs[1].vlan = 0;

        /* No MAC from the policy or the VF's own: the earlier tenant's
         * MAC is cleared (the drivers take zeros as none)... */
        pool2 = provision(2, "{}");
        c2 = reprovision(2, "{\"mac\": \"02:aa:00:00:00:02\"}", pool2);
        ck_assert_uint_eq(f->vfs[2].mac[1], 0xaa);
        d = reprovision(2, "{}", c2);
        ck_assert_uint_eq(f->vfs[2].mac[1], 0);
        ck_assert_uint_eq(f->vfs[2].mac[5], 0);
        /* ... and a driver that refuses zeros fails the hand-over, by name */
        f->vfs[2].mac[1] = 0xaa;
        f->refuse_zero_mac = true;
        ck_assert_int_lt(reprovision_fails(2, "{}", c2, &err), 0);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "mac"));
        svff_error_free(&err);
}
END_TEST

START_TEST(test_release_restores) {
        _cleanup_(json_object_putp) struct json_object *st = NULL, *st2 = NULL, *st3 = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        /* What VF 1 had before svff comes back. */
        f->vfs[1].mac[0] = 0x02;
        f->vfs[1].mac[5] = 0x77;
        f->vfs[1].vlan = 7;
        f->vfs[1].trust = true;
        st = provision(1, "{\"mac\": \"02:00:00:00:00:01\", \"vlan\": 100, \"trust\": false, "
                          "\"spoofchk\": false}");
        ck_assert_int_eq(svff_class_nic.release(c, &pf, 1, st, &err), 0);
        ck_assert_uint_eq(f->vfs[1].mac[5], 0x77);
        ck_assert_uint_eq(f->vfs[1].vlan, 7);
        ck_assert(f->vfs[1].trust);
        ck_assert(f->vfs[1].spoofchk);

        /* A fresh VF: the VLAN goes, spoof checking returns, and the MAC
         * is not overwritten with zeros. */
        f->refuse_zero_mac = true;
        st2 = provision(2, "{\"mac\": \"02:00:00:00:00:02\", \"vlan\": 100, \"spoofchk\": false}");
        log_reset();
        ck_assert_int_eq(svff_class_nic.release(c, &pf, 2, st2, &err), 0);
        ck_assert_str_eq(f->log, "S");
        ck_assert_uint_eq(f->vfs[2].vlan, 0);
        ck_assert(f->vfs[2].spoofchk);
        ck_assert_uint_eq(f->last_set.mask & SVFF_NL_VF_MAC, 0);

        /* "nic_release": "defaults" clears even what came before. */
        f->vfs[3].vlan = 9;
        st3 = provision(3, "{\"vlan\": 100, \"nic_release\": \"defaults\"}");
        ck_assert_int_eq(svff_class_nic.release(c, &pf, 3, st3, &err), 0);
        ck_assert_uint_eq(f->vfs[3].vlan, 0);

        /* A VF gone with its PF's VFs: nothing to undo. */
        pf.numvfs = 0;
        log_reset();
        ck_assert_int_eq(svff_class_nic.release(c, &pf, 1, st, &err), 0);
        ck_assert_str_eq(f->log, "");
}
END_TEST

/* Show's capacity lines count what inspect reads from the driver. */
START_TEST(test_capacity) {
        _cleanup_(json_object_putp) struct json_object *st = NULL, *st2 = NULL, *insp = NULL, *lines = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        const char *last;

        st = provision(0, "{\"mac\": \"02:00:00:00:00:01\", \"vlan\": 100, \"trust\": true}");
        st2 = provision(2, "{\"mac\": \"02:00:00:00:00:02\"}");
        ck_assert_int_eq(svff_class_nic.inspect(c, &pf, &insp, &err), 0);
        lines = svff_class_nic.capacity(insp, NULL);
        ck_assert_ptr_nonnull(lines);
        ck_assert_int_ge(json_object_array_length(lines), 2);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(lines, 0)), "interface: eth0");
        last = json_object_get_string(json_object_array_get_idx(lines, json_object_array_length(lines) - 1));
        ck_assert_str_eq(last, "VFs as read now: 4, 2 with a MAC, 1 on a VLAN, 1 trusted");
        /* The inspection carries each VF's counters, to its VF (the
         * stand-in's VF k counts k * 1000 + position). */
        {
                struct json_object *vfs, *v2, *counters;
                uint64_t rx = 0;

                ck_assert(json_object_object_get_ex(insp, "vfs", &vfs));
                ck_assert(json_object_object_get_ex(vfs, "2", &v2));
                ck_assert(json_object_object_get_ex(v2, "counters", &counters));
                ck_assert_int_eq(svff_json_get_u64(counters, "rx_bytes", &rx), 0);
                ck_assert_uint_eq(rx, 2002);
        }
}
END_TEST

/* The driver lacks link_state: strict (the default) names EOPNOTSUPP
 * and takes the rest back; non-strict keeps the rest and says so. */
START_TEST(test_partial_failure) {
        _cleanup_(json_object_putp) struct json_object *st = NULL;
        _cleanup_free_ char *d = NULL;
        struct svff_error err = SVFF_ERROR_NULL;
        struct json_object *u;

        f->refuse[__builtin_ctz(SVFF_NL_VF_LINK_STATE)] = -EOPNOTSUPP;
        log_reset();
        ck_assert_int_eq(provision_fails(0, "{\"vlan\": 100, \"trust\": true, \"link_state\": \"enable\"}",
                                         &err), -EOPNOTSUPP);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "igb does not implement link_state (EOPNOTSUPP)"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "\"nic_strict\": false"));
        /* read, the message, each attribute alone, the way back */
        ck_assert_str_eq(f->log, "GSSSSS");
        ck_assert_uint_eq(f->vfs[0].vlan, 0);
        ck_assert(!f->vfs[0].trust);
        svff_error_free(&err);

        st = provision(0, "{\"vlan\": 100, \"trust\": true, \"link_state\": \"enable\", \"nic_strict\": false}");
        ck_assert_uint_eq(f->vfs[0].vlan, 100);
        ck_assert(f->vfs[0].trust);
        ck_assert(json_object_object_get_ex(st, "unsupported", &u));
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(u, 0)), "link_state");
        ck_assert(!json_object_object_get_ex(st, "link_state", NULL));
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 0, st, &err), 0);
        d = svff_class_nic.describe(st);
        ck_assert_ptr_nonnull(strstr(d, "(unsupported: link_state)"));
}
END_TEST

/* igb refuses any min_tx_rate: the errno by name and the kernel's text. */
START_TEST(test_rate_refused) {
        struct svff_error err = SVFF_ERROR_NULL;

        f->refuse_min_rate = true;
        ck_assert_int_eq(provision_fails(1, "{\"min_tx_rate\": 100, \"max_tx_rate\": 500}", &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "refused min_tx_rate/max_tx_rate max 500 min 100 Mbps (EINVAL"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "min_tx_rate is not supported by this device"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "leave it 0"));
        svff_error_free(&err);

        /* Without the kernel's text, the errno once. */
        f->refuse_min_rate = false;
        f->refuse[__builtin_ctz(SVFF_NL_VF_TRUST)] = -EPERM;
        ck_assert_int_eq(provision_fails(1, "{\"trust\": true}", &err), -EPERM);
        ck_assert_str_eq(svff_error_message(&err), "VF 1 of 'eth0' (PF 0000:05:00.0): the driver igb "
                         "refused trust on (EPERM, Operation not permitted)");
        svff_error_free(&err);
}
END_TEST

/* A set that fails once but goes through attribute by attribute. */
START_TEST(test_transient_failure) {
        _cleanup_(json_object_putp) struct json_object *st = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        f->fail_set = 1;
        st = provision(3, "{\"vlan\": 12, \"spoofchk\": false}");
        ck_assert_str_eq(f->log, "GSSS");
        ck_assert_uint_eq(f->vfs[3].vlan, 12);
        ck_assert_int_eq(svff_class_nic.verify(c, &pf, 3, st, &err), 0);
}
END_TEST

/* 252 VFs (QDMA's count, a large NIC's): every VF is set and read back,
 * its list whole because the counters are left out (with them the
 * kernel's list outgrows its attribute at about 220 VFs), and no whole-PF
 * dump. */
START_TEST(test_252_vfs_read) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_(json_object_putp) struct json_object *in = NULL, *plan = NULL;
        struct svff_nl_stats n;

        open_pf(252);
        for (unsigned i = 0; i < 252; i++) {
                _cleanup_(json_object_putp) struct json_object *st = NULL;

                log_reset();
                st = provision(i, "{\"mac_prefix\": \"02:53:00:00\", \"vlan\": 100}");
                ck_assert_int_eq(svff_class_nic.verify(c, &pf, i, st, &err), 0);
                ck_assert_str_eq(f->log, "GSG");
                ck_assert_uint_eq(f->last_listed, 252);
                ck_assert_str_eq(S(st, "verified"), "read");
                if (i == 251) {
                        _cleanup_free_ char *d = svff_class_nic.describe(st);
                        ck_assert_str_eq(d, "mac 02:53:00:00:00:fb vlan 100");
                }
        }
        svff_class_nic_get_stats(c, &n);
        ck_assert_uint_eq(n.sets, 252);
        ck_assert_uint_eq(n.dumps, 0);
        ck_assert_uint_eq(f->dumps, 0);
        ck_assert_uint_eq(f->vfs[251].mac[5], 251);
        ck_assert_uint_eq(f->vfs[251].vlan, 100);

        /* Read whole: every VF is in the inspection. */
        ck_assert_int_eq(svff_class_nic.inspect(c, &pf, &in, &err), 0);
        ck_assert_ptr_null(strstr(json_object_to_json_string(in), "outgrows"));
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string(in), "02:53:00:00:00:fb"));

        ck_assert_int_eq(plan_vfs(252, NULL, &plan, &err), 0);
        ck_assert_ptr_null(strstr(S(plan, "verify"), "acknowledgement"));
}
END_TEST

/* 300 VFs: past what svff reads back, so there is no read at all: one
 * set per VF, verified by its ack, and the state says so. */
START_TEST(test_300_vfs_no_read) {
        struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_(json_object_putp) struct json_object *in = NULL, *plan = NULL;
        struct svff_nl_stats n;

        open_pf(300);
        for (unsigned i = 0; i < 300; i++) {
                _cleanup_(json_object_putp) struct json_object *st = NULL;

                log_reset();
                st = provision(i, "{\"mac_prefix\": \"02:53:00:00\", \"vlan\": 100}");
                ck_assert_int_eq(svff_class_nic.verify(c, &pf, i, st, &err), 0);
                ck_assert_str_eq(f->log, "S");
                ck_assert_str_eq(S(st, "verified"), "ack");
                if (i == 299) {
                        _cleanup_free_ char *d = svff_class_nic.describe(st);
                        ck_assert_str_eq(d, "mac 02:53:00:00:01:2b vlan 100, verified by ack");
                }
        }
        svff_class_nic_get_stats(c, &n);
        ck_assert_uint_eq(n.sets, 300);
        ck_assert_uint_eq(n.gets, 0);
        ck_assert_uint_eq(n.dumps, 0);
        ck_assert_uint_eq(f->dumps + f->gets, 0);
        ck_assert_uint_eq(f->vfs[299].mac[5], 0x2b);

        ck_assert_int_eq(svff_class_nic.inspect(c, &pf, &in, &err), 0);
        ck_assert_ptr_nonnull(strstr(json_object_to_json_string(in), "outgrows"));
        ck_assert_uint_eq(f->gets, 0);

        ck_assert_int_eq(plan_vfs(300, NULL, &plan, &err), 0);
        ck_assert_ptr_nonnull(strstr(S(plan, "verify"), "acknowledgement"));
}
END_TEST

/* The plan: duplicate MACs across the VFs, and another network manager. */
START_TEST(test_plan) {
        _cleanup_(json_object_putp) struct json_object *ok = NULL, *dup = NULL, *plan = NULL,
                *taken = NULL, *take = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        ok = J("[{\"mac_prefix\": \"02:53:00:00\"}, {\"mac_prefix\": \"02:53:00:00\", \"vlan\": 5}, null]");
        log_reset();
        ck_assert_int_eq(plan_vfs(3, ok, &plan, &err), 0);
        ck_assert_int_eq(json_object_array_length(json_object_object_get(plan, "steps")), 2);
        ck_assert_str_eq(f->log, "");

        dup = J("[{\"mac\": \"02:00:00:00:00:01\"}, {\"mac\": \"02:00:00:00:00:01\"}]");
        ck_assert_int_eq(plan_vfs(2, dup, &taken, &err), -EINVAL);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "VF 1 of 'eth0'"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "VF 0's too"));
        svff_error_free(&err);

        fixture_file(root, "etc/systemd/network/10-pf.link",
                     "[Match]\nOriginalName=eth0\n[Link]\nSR-IOVVirtualFunctions=4\n");
        ck_assert_int_eq(plan_vfs(3, ok, &taken, &err), -EBUSY);
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err),
                                     "managed by systemd-networkd (/etc/systemd/network/10-pf.link: "
                                     "SR-IOVVirtualFunctions=4)"));
        ck_assert_ptr_nonnull(strstr(svff_error_message(&err), "\"take_over\": true"));
        svff_error_free(&err);

        take = J("[{\"take_over\": true}]");
        ck_assert_int_eq(plan_vfs(1, take, &taken, &err), 0);
        ck_assert_ptr_nonnull(strstr(S(taken, "owner"), "taking over from systemd-networkd"));

        /* inspect (status) names the owner too, and reads each VF. */
        _cleanup_(json_object_putp) struct json_object *in = NULL;
        struct json_object *p = NULL, *o = NULL, *v = NULL;
        ck_assert_int_eq(svff_class_nic.inspect(c, &pf, &in, &err), 0);
        ck_assert(json_object_object_get_ex(in, "pf", &p));
        ck_assert(json_object_object_get_ex(p, "owner", &o));
        ck_assert_str_eq(S(o, "manager"), "systemd-networkd");
        ck_assert_str_eq(S(o, "file"), "/etc/systemd/network/10-pf.link");
        ck_assert(json_object_object_get_ex(json_object_object_get(in, "vfs"), "3", &v));
        ck_assert_str_eq(S(v, "mac"), "00:00:00:00:00:00");

        /* A file the owner check refuses stops the plan, named. */
        {
                _cleanup_free_ char *fifo = NULL;

                fixture_mkdir(root, "etc/sriov-operator/pci");
                ck_assert_int_ge(asprintf(&fifo, "%s/etc/sriov-operator/pci/0000:05:00.0", root), 0);
                ck_assert_int_eq(mkfifo(fifo, 0600), 0);
                ck_assert_int_eq(plan_vfs(1, take, &taken, &err), -EINVAL);
                ck_assert_msg(strstr(svff_error_message(&err), "'/etc/sriov-operator/pci/0000:05:00.0' is not a "
                                     "regular file"), "%s", svff_error_message(&err));
                svff_error_free(&err);
                ck_assert_int_eq(unlink(fifo), 0);
        }
}
END_TEST

/* svff_class_check(): the same refusals without a device, for the
 * policy loader. */
START_TEST(test_check) {
        _cleanup_(json_object_putp) struct json_object *good = NULL, *bad = NULL;
        struct svff_error err = SVFF_ERROR_NULL;

        good = J("{\"mac_prefix\": \"02:53:00:00\", \"vlan\": 100, \"take_over\": true, \"nic_strict\": false}");
        ck_assert_int_eq(svff_class_check(&svff_class_nic, good, &err), 0);
        ck_assert_int_eq(svff_class_check(&svff_class_nic, NULL, &err), 0);
        bad = J("{\"vlan\": 5000}");
        ck_assert_int_eq(svff_class_check(&svff_class_nic, bad, &err), -EINVAL);
        ck_assert_str_eq(svff_error_message(&err), "NIC settings: bad 'vlan': a VLAN is 0 to 4095");
        svff_error_free(&err);
        /* the daemon's old keys for a reprovision (the recorded state
         * is provision's argument now) are no setting, with a device or
         * without */
        for (const char *const *k = (const char *const[]) { "state", "tenant", NULL }; *k; k++) {
                _cleanup_(json_object_putp) struct json_object *reserved = json_object_new_object();
                struct svff_class_settings *s = NULL;

                json_object_object_add(reserved, *k, json_object_new_object());
                ck_assert_int_eq(svff_class_check(&svff_class_nic, reserved, &err), -EINVAL);
                ck_assert_msg(strstr(svff_error_message(&err), "unknown NIC setting"), "%s: %s", *k,
                              svff_error_message(&err));
                svff_error_free(&err);
                ck_assert_int_eq(svff_class_nic.load(c, 1, reserved, &s, &err), -EINVAL);
                ck_assert_ptr_null(s);
                ck_assert_msg(strstr(svff_error_message(&err), "VF 1 of 'eth0' (PF 0000:05:00.0): unknown "
                                     "NIC setting"), "%s: %s", *k, svff_error_message(&err));
                svff_error_free(&err);
        }
}
END_TEST

int main(void) {
        Suite *s = suite_create("class-nic");
        TCase *tc = tcase_create("core");
        SRunner *sr;
        int failed;

        tcase_add_checked_fixture(tc, setup, teardown);
        tcase_set_timeout(tc, 60);
        tcase_add_test(tc, test_match);
        tcase_add_test(tc, test_provision_order_and_count);
        tcase_add_test(tc, test_validation_before_anything);
        tcase_add_test(tc, test_mac_prefix);
        tcase_add_test(tc, test_idempotent_reprovision);
        tcase_add_test(tc, test_reconf_wipe);
        tcase_add_test(tc, test_reconf_wipe_keeps_own);
        tcase_add_test(tc, test_hand_over);
        tcase_add_test(tc, test_release_restores);
        tcase_add_test(tc, test_partial_failure);
        tcase_add_test(tc, test_rate_refused);
        tcase_add_test(tc, test_transient_failure);
        tcase_add_test(tc, test_252_vfs_read);
        tcase_add_test(tc, test_300_vfs_no_read);
        tcase_add_test(tc, test_plan);
        tcase_add_test(tc, test_check);
        tcase_add_test(tc, test_capacity);
        suite_add_tcase(s, tc);

        sr = srunner_create(s);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}

/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The NIC class (see class.h for the operations, netlink-vf.h for the
 * messages).
 *
 * Settings (policy defaults overlaid with the assignment's):
 *   "mac"          "02:00:00:00:00:01": unicast, not all-zero, not used by
 *                  another VF of the PF
 *   "mac_prefix"   "02:53:00:00": 1-5 bytes, the rest the VF index (big
 *                  endian), so a VF keeps its MAC across reboots without an
 *                  assignment ("mac" wins)
 *   "vlan" 0-4095, "qos" 0-7, "vlan_proto" "802.1Q" | "802.1ad"
 *   "spoofchk", "trust", "rss_query": booleans
 *   "link_state"   "auto" | "enable" | "disable"
 *   "max_tx_rate", "min_tx_rate": Mbps, 0 = no limit
 *   "nic_strict"   true (default): an attribute the driver does not
 *                  implement (EOPNOTSUPP) fails the step and nothing stays
 *                  applied; false: the others are applied and the state
 *                  lists it under "unsupported"
 *   "nic_release"  "restore" (default): release puts back what the VF had
 *                  before svff first set it; "defaults": the drivers'
 *                  defaults (no VLAN, spoof checking on, trust off, link
 *                  auto, no rate limit)
 *   "take_over"    true: manage the PF although NetworkManager or
 *                  systemd-networkd is configured for it (nic-owner.h)
 *
 * A reprovision is given the VF's recorded state (wants_recorded_state):
 * what it had before svff ("saved") survives reconfs that way. Whether
 * the VF goes back to its tenant changes nothing here.
 *
 * State: the keys above that were set, as set; "saved" (what the VF had
 * before svff touched it, or null: unknown, release clears to defaults);
 * "release"; "unsupported"; "verified": "read" (the VF list is read back)
 * or "ack" (above SVFF_NL_VF_LIST_MAX VFs the list outgrows netlink's
 * 64 KiB attribute, so the set's acknowledgement is the verification and
 * no whole-PF read is made).
 *
 * An all-zero MAC is written only to hand a VF on: release leaves the
 * MAC svff gave a VF that had none before (drivers refuse the zero MAC
 * or take it as "none"; a VF disable clears it), and the next tenant's
 * provision clears it when neither its settings nor the VF's own give
 * one. A driver that refuses the zero MAC then fails the hand-over:
 * give the policy a "mac_prefix", and every tenant a MAC of its own.
 *
 * libvirt: svff hands a VF to a domain as a plain <hostdev>, for which
 * libvirt sets neither MAC nor VLAN, so this class sets all of them, in
 * detach mode and in pause mode alike (a pause re-attaches nothing, and
 * after a reconf nothing but this class puts them back). Only a device
 * defined as <interface type='hostdev'> with <mac> or <vlan> has libvirt
 * set those itself at its attach, and restore them at its detach: there
 * the assignment's settings must be the XML's, or libvirt's attach
 * overwrites svff's. */

#include <errno.h>
#include <net/if.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "class-nic.h"
#include "json-util.h"
#include "nic-owner.h"
#include "sysfs.h"

struct svff_class_pf {
        struct svff_ctx *ctx;
        struct svff_nl *nl;
        char *ifname;
        char *address;
        char *config_root;
};

/* The kernel's order of attributes (do_setvfinfo()), which is also the
 * order a refused message applied a prefix of. */
static const unsigned attr_order[] = {
        SVFF_NL_VF_MAC, SVFF_NL_VF_VLAN, SVFF_NL_VF_RATE, SVFF_NL_VF_SPOOFCHK,
        SVFF_NL_VF_LINK_STATE, SVFF_NL_VF_RSS_QUERY, SVFF_NL_VF_TRUST,
};

static const char *const known_keys[] = {
        "mac", "mac_prefix", "vlan", "qos", "vlan_proto", "spoofchk", "trust", "rss_query",
        "link_state", "max_tx_rate", "min_tx_rate", "nic_strict", "nic_release", "take_over", NULL,
};

static const char *const link_states[] = { "auto", "enable", "disable" };

/* A NIC PF whose interface rtnetlink can reach: a link of that name in
 * this network namespace, with the ifindex sysfs gives it where sysfs
 * gives one. A simulated tree's interface (or another namespace's) is
 * none, and its PF stays a bare PCI function. */
static bool is_nic(struct svff_ctx *ctx, const struct svff_pf *pf) {
        _cleanup_free_ char *path = NULL;
        unsigned idx;
        int sysidx;

        if ((pf->class >> 16) != 0x02 || !pf->netdev)
                return false;
#ifdef SVFF_FAULT_POINTS
        /* Test builds: the stand-in for the PF driver (daemon/classes.c)
         * is every NIC PF's interface. */
        if (getenv("SVFF_TEST_NIC_STANDIN") && !strcmp(getenv("SVFF_TEST_NIC_STANDIN"), "1"))
                return true;
#endif
        idx = if_nametoindex(pf->netdev);
        if (idx == 0)
                return false;
        if (asprintf(&path, "bus/pci/devices/%s/net/%s/ifindex", pf->address, pf->netdev) < 0)
                return false;
        if (svff_sysfs_read_int(svff_ctx_get_rootfd(ctx), path, &sysidx) >= 0 && sysidx != (int) idx)
                return false;
        return true;
}

static void nic_close(struct svff_class_pf *c) {
        if (!c)
                return;
        svff_nl_free(c->nl);
        svff_ctx_unref(c->ctx);
        free(c->ifname);
        free(c->address);
        free(c->config_root);
        free(c);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_class_pf *, nic_close);

int svff_class_nic_open_with(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_nl *nl,
                             const char *config_root, struct svff_class_pf **ret,
                             struct svff_error *err) {
        _cleanup_(nic_closep) struct svff_class_pf *c = NULL;

        c = calloc(1, sizeof(*c));
        if (!c) {
                svff_nl_free(nl);
                return -ENOMEM;
        }
        c->nl = nl;
        if (!pf->netdev)
                return svff_error_set(err, -EOPNOTSUPP, "PF %s has no network interface: it is "
                                      "not a NIC PF, or its driver is not bound", pf->address);
        c->ctx = svff_ctx_ref(ctx);
        c->ifname = strdup(pf->netdev);
        c->address = strdup(pf->address);
        c->config_root = strdup(config_root ?: "/");
        if (!c->ifname || !c->address || !c->config_root)
                return -ENOMEM;
        *ret = TAKE_PTR(c);
        return 0;
}

int svff_class_nic_open_beside(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_nl *nl,
                               struct svff_class_pf **ret, struct svff_error *err) {
        _cleanup_free_ char *root = NULL;
        const char *sys = svff_ctx_get_root(ctx);
        char *slash;

        /* Other managers' files sit beside the sysfs tree: "/" on a host,
         * a test tree's etc/ next to its sys/. */
        root = strdup(sys ?: "/sys");
        if (!root) {
                svff_nl_free(nl);
                return -ENOMEM;
        }
        slash = strrchr(root, '/');
        if (slash && slash != root)
                *slash = 0;
        else
                strcpy(root, "/");
        return svff_class_nic_open_with(ctx, pf, nl, root, ret, err);
}

static int nic_open(struct svff_ctx *ctx, const struct svff_pf *pf, struct svff_class_pf **ret,
                    struct svff_error *err) {
        struct svff_nl *nl;
        int r;

        r = svff_nl_open(&nl);
        if (r < 0)
                return svff_error_set_errno(err, r, "PF %s: cannot open rtnetlink", pf->address);
        return svff_class_nic_open_beside(ctx, pf, nl, ret, err);
}

void svff_class_nic_get_stats(struct svff_class_pf *c, struct svff_nl_stats *ret) {
        svff_nl_get_stats(c->nl, ret);
}

/* What the settings ask of one VF (class.h). What it had before svff
 * is not here: that is the recorded state's, given to provision. */
struct svff_class_settings {
        struct svff_nl_vf vf;           /* mask: the attributes to set */
        bool strict;
        bool take_over;
        bool release_defaults;
};

/* c is NULL for a load without a device, which names none. */
static int bad(struct svff_error *err, const struct svff_class_pf *c, unsigned index, const char *fmt,
               const char *key, const char *hint) {
        if (!c)
                return svff_error_set(err, -EINVAL, "NIC settings: %s '%s': %s", fmt, key, hint);
        return svff_error_set(err, -EINVAL, "VF %u of '%s' (PF %s): %s '%s': %s", index, c->ifname,
                              c->address, fmt, key, hint);
}

static int get_uint_key(struct json_object *s, const char *key, unsigned max, unsigned *ret, bool *found,
                        const struct svff_class_pf *c, unsigned index, const char *range,
                        struct svff_error *err) {
        unsigned v;
        int r = svff_json_get_unsigned(s, key, &v);

        if (r == -ENOENT)
                return 0;
        if (r < 0 || v > max)
                return bad(err, c, index, "bad", key, range);
        *ret = v;
        *found = true;
        return 0;
}

static int get_bool_key(struct json_object *s, const char *key, bool *ret, bool *found,
                        const struct svff_class_pf *c, unsigned index, struct svff_error *err) {
        int r = svff_json_get_bool(s, key, ret);

        if (r == -ENOENT)
                return 0;
        if (r < 0)
                return bad(err, c, index, "bad", key, "expected true or false");
        if (found)
                *found = true;
        return 0;
}

static int mac_from_prefix(const char *prefix, unsigned index, uint8_t mac[static 6]) {
        uint8_t b[6] = {};
        unsigned n = 0;
        const char *p = prefix;

        while (*p && n < 6) {
                unsigned v;
                int len;

                if (sscanf(p, "%2x%n", &v, &len) != 1 || len != 2)
                        return -EINVAL;
                b[n++] = (uint8_t) v;
                p += 2;
                if (*p == ':')
                        p++;
                else if (*p)
                        return -EINVAL;
        }
        if (n < 1 || n > 5 || *p || p[-1] == ':')
                return -EINVAL;
        /* The index fills the rest; it must fit. */
        if (6 - n < 4 && index >> (8 * (6 - n)))
                return -ERANGE;
        for (unsigned i = 5, v = index; i >= n; i--, v >>= 8)
                b[i] = (uint8_t) v;
        memcpy(mac, b, 6);
        return 0;
}

/* No settings: nothing to set, strict, release restores. */
static void settings_init(struct svff_class_settings *w, unsigned index) {
        memset(w, 0, sizeof(*w));
        w->strict = true;
        w->vf.index = index;
        w->vf.vlan_proto = SVFF_NL_PROTO_8021Q;
}

static int check_keys(const struct svff_class_pf *c, unsigned index, struct json_object *s,
                      struct svff_error *err) {
        json_object_object_foreach(s, key, val) {
                bool ok = false;
                (void) val;
                for (size_t i = 0; known_keys[i]; i++)
                        if (streq(key, known_keys[i]))
                                ok = true;
                if (!ok)
                        return bad(err, c, index, "unknown NIC setting", key,
                                   "known: mac, mac_prefix, vlan, qos, vlan_proto, spoofchk, trust, "
                                   "rss_query, link_state, max_tx_rate, min_tx_rate, nic_strict, "
                                   "nic_release, take_over");
        }
        return 0;
}

static int settings_parse(const struct svff_class_pf *c, unsigned index, struct json_object *s,
                          struct svff_class_settings *w, struct svff_error *err) {
        struct svff_nl_vf *vf = &w->vf;
        const char *str;
        bool found = false, f_qos = false, f_proto = false, f_vlan = false, f_min = false, f_max = false;
        unsigned u;
        int r;

        settings_init(w, index);
        if (!s)
                return 0;
        if (!json_object_is_type(s, json_type_object))
                return bad(err, c, index, "not an object:", "settings", "expected {\"vlan\": 100, ...}");
        r = check_keys(c, index, s, err);
        if (r < 0)
                return r;

        r = svff_json_get_string(s, "mac", &str);
        if (r == 0) {
                char buf[18];
                if (svff_nl_mac_parse(str, vf->mac) < 0)
                        return bad(err, c, index, "malformed", "mac",
                                   "expected six hex bytes such as 02:00:00:00:00:01");
                svff_nl_mac_format(vf->mac, buf);
                if (svff_nl_mac_is_zero(vf->mac))
                        return bad(err, c, index, "refusing the all-zero", "mac",
                                   "give a unicast MAC, or none");
                if (svff_nl_mac_is_multicast(vf->mac))
                        return bad(err, c, index, "refusing the multicast", "mac",
                                   "the first byte must be even (02:... is a local unicast MAC)");
                vf->mask |= SVFF_NL_VF_MAC;
        } else if (r != -ENOENT)
                return bad(err, c, index, "bad", "mac", "expected a string");
        else {
                r = svff_json_get_string(s, "mac_prefix", &str);
                if (r == 0) {
                        r = mac_from_prefix(str, index, vf->mac);
                        if (r == -ERANGE)
                                return bad(err, c, index, "the VF index does not fit after", "mac_prefix",
                                           "use a shorter prefix");
                        if (r < 0)
                                return bad(err, c, index, "malformed", "mac_prefix",
                                           "expected 1 to 5 hex bytes such as 02:53:00:00");
                        if (svff_nl_mac_is_multicast(vf->mac))
                                return bad(err, c, index, "multicast", "mac_prefix",
                                           "the first byte must be even");
                        if (svff_nl_mac_is_zero(vf->mac))
                                return bad(err, c, index, "all-zero MAC from", "mac_prefix",
                                           "a prefix of zeros gives VF 0 no MAC: start with 02");
                        vf->mask |= SVFF_NL_VF_MAC;
                } else if (r != -ENOENT)
                        return bad(err, c, index, "bad", "mac_prefix", "expected a string");
        }

        r = get_uint_key(s, "vlan", 4095, &u, &f_vlan, c, index, "a VLAN is 0 to 4095", err);
        if (r < 0)
                return r;
        if (f_vlan)
                vf->vlan = (uint16_t) u;
        r = get_uint_key(s, "qos", 7, &u, &f_qos, c, index, "a QoS (802.1p priority) is 0 to 7", err);
        if (r < 0)
                return r;
        if (f_qos)
                vf->qos = (uint8_t) u;
        r = svff_json_get_string(s, "vlan_proto", &str);
        if (r == 0) {
                if (strcasecmp(str, "802.1Q") == 0)
                        vf->vlan_proto = SVFF_NL_PROTO_8021Q;
                else if (strcasecmp(str, "802.1ad") == 0)
                        vf->vlan_proto = SVFF_NL_PROTO_8021AD;
                else
                        return bad(err, c, index, "bad", "vlan_proto", "expected 802.1Q or 802.1ad");
                f_proto = true;
        } else if (r != -ENOENT)
                return bad(err, c, index, "bad", "vlan_proto", "expected 802.1Q or 802.1ad");
        if ((f_qos || f_proto) && !f_vlan)
                return bad(err, c, index, "a QoS or protocol without", "vlan", "give the VLAN too");
        if (f_vlan)
                vf->mask |= SVFF_NL_VF_VLAN;

        r = get_uint_key(s, "max_tx_rate", UINT32_MAX, &u, &f_max, c, index, "Mbps, 0 for no limit", err);
        if (r < 0)
                return r;
        if (f_max)
                vf->max_tx_rate = u;
        r = get_uint_key(s, "min_tx_rate", UINT32_MAX, &u, &f_min, c, index, "Mbps, 0 for none", err);
        if (r < 0)
                return r;
        if (f_min)
                vf->min_tx_rate = u;
        if (f_min && vf->min_tx_rate && vf->max_tx_rate && vf->min_tx_rate > vf->max_tx_rate)
                return bad(err, c, index, "min_tx_rate above", "max_tx_rate", "lower it");
        if (f_min || f_max)
                vf->mask |= SVFF_NL_VF_RATE;

        found = false;
        r = get_bool_key(s, "spoofchk", &vf->spoofchk, &found, c, index, err);
        if (r < 0)
                return r;
        if (found)
                vf->mask |= SVFF_NL_VF_SPOOFCHK;
        found = false;
        r = get_bool_key(s, "trust", &vf->trust, &found, c, index, err);
        if (r < 0)
                return r;
        if (found)
                vf->mask |= SVFF_NL_VF_TRUST;
        found = false;
        r = get_bool_key(s, "rss_query", &vf->rss_query, &found, c, index, err);
        if (r < 0)
                return r;
        if (found)
                vf->mask |= SVFF_NL_VF_RSS_QUERY;

        r = svff_json_get_string(s, "link_state", &str);
        if (r == 0) {
                bool ok = false;
                for (unsigned i = 0; i < ELEMENTSOF(link_states); i++)
                        if (streq(str, link_states[i])) {
                                vf->link_state = i;
                                ok = true;
                        }
                if (!ok)
                        return bad(err, c, index, "bad", "link_state", "expected auto, enable or disable");
                vf->mask |= SVFF_NL_VF_LINK_STATE;
        } else if (r != -ENOENT)
                return bad(err, c, index, "bad", "link_state", "expected auto, enable or disable");

        r = get_bool_key(s, "nic_strict", &w->strict, NULL, c, index, err);
        if (r < 0)
                return r;
        r = get_bool_key(s, "take_over", &w->take_over, NULL, c, index, err);
        if (r < 0)
                return r;
        r = svff_json_get_string(s, "nic_release", &str);
        if (r == 0) {
                if (streq(str, "defaults"))
                        w->release_defaults = true;
                else if (!streq(str, "restore"))
                        return bad(err, c, index, "bad", "nic_release", "expected restore or defaults");
        } else if (r != -ENOENT)
                return bad(err, c, index, "bad", "nic_release", "expected restore or defaults");
        return 0;
}

static void nic_unload(struct svff_class_settings *s) {
        free(s);
}
DEFINE_TRIVIAL_CLEANUP_FUNC(struct svff_class_settings *, nic_unload);

static int nic_load(const struct svff_class_pf *c, unsigned index, struct json_object *settings,
                    struct svff_class_settings **ret, struct svff_error *err) {
        _cleanup_(nic_unloadp) struct svff_class_settings *w = NULL;
        int r;

        w = malloc(sizeof(*w));
        if (!w)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        r = settings_parse(c, index, settings, w, err);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(w);
        return 0;
}

/* A state or saved object's attribute keys (lenient: written by svff). */
static void json_to_vf(struct json_object *o, unsigned index, struct svff_nl_vf *vf) {
        const char *str;
        unsigned u;
        bool b;

        memset(vf, 0, sizeof(*vf));
        vf->index = index;
        vf->vlan_proto = SVFF_NL_PROTO_8021Q;
        if (!o)
                return;
        if (svff_json_get_string(o, "mac", &str) == 0 && svff_nl_mac_parse(str, vf->mac) == 0)
                vf->mask |= SVFF_NL_VF_MAC;
        if (svff_json_get_unsigned(o, "vlan", &u) == 0 && u <= 4095) {
                vf->vlan = (uint16_t) u;
                vf->mask |= SVFF_NL_VF_VLAN;
                if (svff_json_get_unsigned(o, "qos", &u) == 0 && u <= 7)
                        vf->qos = (uint8_t) u;
                if (svff_json_get_string(o, "vlan_proto", &str) == 0 && strcasecmp(str, "802.1ad") == 0)
                        vf->vlan_proto = SVFF_NL_PROTO_8021AD;
        }
        if (svff_json_get_unsigned(o, "max_tx_rate", &u) == 0) {
                vf->max_tx_rate = u;
                vf->mask |= SVFF_NL_VF_RATE;
        }
        if (svff_json_get_unsigned(o, "min_tx_rate", &u) == 0) {
                vf->min_tx_rate = u;
                vf->mask |= SVFF_NL_VF_RATE;
        }
        if (svff_json_get_bool(o, "spoofchk", &b) == 0) {
                vf->spoofchk = b;
                vf->mask |= SVFF_NL_VF_SPOOFCHK;
        }
        if (svff_json_get_bool(o, "trust", &b) == 0) {
                vf->trust = b;
                vf->mask |= SVFF_NL_VF_TRUST;
        }
        if (svff_json_get_bool(o, "rss_query", &b) == 0) {
                vf->rss_query = b;
                vf->mask |= SVFF_NL_VF_RSS_QUERY;
        }
        if (svff_json_get_string(o, "link_state", &str) == 0)
                for (unsigned i = 0; i < ELEMENTSOF(link_states); i++)
                        if (streq(str, link_states[i])) {
                                vf->link_state = i;
                                vf->mask |= SVFF_NL_VF_LINK_STATE;
                        }
}

static int add(struct json_object *o, const char *key, struct json_object *v) {
        if (!v || json_object_object_add(o, key, v) < 0) {
                json_object_put(v);
                return -ENOMEM;
        }
        return 0;
}

/* The attributes in mask as JSON keys. */
static struct json_object *vf_to_json(const struct svff_nl_vf *vf, unsigned mask) {
        _cleanup_(json_object_putp) struct json_object *o = json_object_new_object();
        int r = 0;

        if (!o)
                return NULL;
        if (mask & SVFF_NL_VF_MAC) {
                char buf[18];
                svff_nl_mac_format(vf->mac, buf);
                r |= add(o, "mac", json_object_new_string(buf));
        }
        if (mask & SVFF_NL_VF_VLAN) {
                r |= add(o, "vlan", json_object_new_int(vf->vlan));
                r |= add(o, "qos", json_object_new_int(vf->qos));
                r |= add(o, "vlan_proto", json_object_new_string(
                                 vf->vlan_proto == SVFF_NL_PROTO_8021AD ? "802.1ad" : "802.1Q"));
        }
        if (mask & SVFF_NL_VF_RATE) {
                r |= add(o, "max_tx_rate", json_object_new_int64(vf->max_tx_rate));
                r |= add(o, "min_tx_rate", json_object_new_int64(vf->min_tx_rate));
        }
        if (mask & SVFF_NL_VF_SPOOFCHK)
                r |= add(o, "spoofchk", json_object_new_boolean(vf->spoofchk));
        if (mask & SVFF_NL_VF_LINK_STATE)
                r |= add(o, "link_state", json_object_new_string(
                                 vf->link_state < ELEMENTSOF(link_states) ? link_states[vf->link_state] : "auto"));
        if (mask & SVFF_NL_VF_RSS_QUERY)
                r |= add(o, "rss_query", json_object_new_boolean(vf->rss_query));
        if (mask & SVFF_NL_VF_TRUST)
                r |= add(o, "trust", json_object_new_boolean(vf->trust));
        if (mask & SVFF_NL_VF_COUNTERS) {
                const struct svff_nl_vf_counters *c = &vf->counters;
                struct json_object *co = json_object_new_object();

                if (!co)
                        return NULL;
                r |= add(co, "rx_packets", json_object_new_uint64(c->rx_packets));
                r |= add(co, "tx_packets", json_object_new_uint64(c->tx_packets));
                r |= add(co, "rx_bytes", json_object_new_uint64(c->rx_bytes));
                r |= add(co, "tx_bytes", json_object_new_uint64(c->tx_bytes));
                r |= add(co, "broadcast", json_object_new_uint64(c->broadcast));
                r |= add(co, "multicast", json_object_new_uint64(c->multicast));
                r |= add(co, "rx_dropped", json_object_new_uint64(c->rx_dropped));
                r |= add(co, "tx_dropped", json_object_new_uint64(c->tx_dropped));
                r |= add(o, "counters", co);
        }
        return r ? NULL : TAKE_PTR(o);
}

/* The attributes of mask whose values differ between a and b. */
static unsigned vf_diff(const struct svff_nl_vf *a, const struct svff_nl_vf *b, unsigned mask) {
        unsigned d = 0;

        if ((mask & SVFF_NL_VF_MAC) && memcmp(a->mac, b->mac, 6))
                d |= SVFF_NL_VF_MAC;
        if ((mask & SVFF_NL_VF_VLAN) &&
            (a->vlan != b->vlan || a->qos != b->qos ||
             /* Without a VLAN the protocol means nothing. */
             (a->vlan && a->vlan_proto != b->vlan_proto)))
                d |= SVFF_NL_VF_VLAN;
        if ((mask & SVFF_NL_VF_RATE) && (a->max_tx_rate != b->max_tx_rate || a->min_tx_rate != b->min_tx_rate))
                d |= SVFF_NL_VF_RATE;
        if ((mask & SVFF_NL_VF_SPOOFCHK) && a->spoofchk != b->spoofchk)
                d |= SVFF_NL_VF_SPOOFCHK;
        if ((mask & SVFF_NL_VF_LINK_STATE) && a->link_state != b->link_state)
                d |= SVFF_NL_VF_LINK_STATE;
        if ((mask & SVFF_NL_VF_RSS_QUERY) && a->rss_query != b->rss_query)
                d |= SVFF_NL_VF_RSS_QUERY;
        if ((mask & SVFF_NL_VF_TRUST) && a->trust != b->trust)
                d |= SVFF_NL_VF_TRUST;
        return d;
}

/* Copies the attributes bits of src into dst. */
static void vf_take(struct svff_nl_vf *dst, const struct svff_nl_vf *src, unsigned bits) {
        if (bits & SVFF_NL_VF_MAC)
                memcpy(dst->mac, src->mac, 6);
        if (bits & SVFF_NL_VF_VLAN) {
                dst->vlan = src->vlan;
                dst->qos = src->qos;
                dst->vlan_proto = src->vlan_proto;
        }
        if (bits & SVFF_NL_VF_RATE) {
                dst->max_tx_rate = src->max_tx_rate;
                dst->min_tx_rate = src->min_tx_rate;
        }
        if (bits & SVFF_NL_VF_SPOOFCHK)
                dst->spoofchk = src->spoofchk;
        if (bits & SVFF_NL_VF_LINK_STATE)
                dst->link_state = src->link_state;
        if (bits & SVFF_NL_VF_RSS_QUERY)
                dst->rss_query = src->rss_query;
        if (bits & SVFF_NL_VF_TRUST)
                dst->trust = src->trust;
        dst->mask |= bits;
}

/* The drivers' defaults after a VF enable. */
static void vf_defaults(struct svff_nl_vf *vf, unsigned index) {
        memset(vf, 0, sizeof(*vf));
        vf->index = index;
        vf->vlan_proto = SVFF_NL_PROTO_8021Q;
        vf->spoofchk = true;
        vf->link_state = SVFF_NL_LINK_AUTO;
}

static unsigned pf_numvfs(const struct svff_pf *pf, unsigned index) {
        return pf->numvfs > index ? pf->numvfs : index + 1;
}

/* The live VF list, when it can be read at all: 1 and *ret, 0 when the
 * PF has too many VFs for one reply. */
static int read_live(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                     struct svff_nl_vf **ret, size_t *ret_n, struct svff_error *err) {
        int r;

        if (!svff_nl_vf_list_readable(pf_numvfs(pf, index)))
                return 0;
        r = svff_nl_vf_get_all(c->nl, c->ifname, ret, ret_n, err);
        return r < 0 ? r : 1;
}

static const struct svff_nl_vf *find_vf(const struct svff_nl_vf *vfs, size_t n, unsigned index) {
        for (size_t i = 0; i < n; i++)
                if (vfs[i].index == index)
                        return &vfs[i];
        return NULL;
}

static const char *field_value(const struct svff_nl_vf *vf, unsigned bit, char buf[static 48]) {
        switch (bit) {
        case SVFF_NL_VF_MAC:
                svff_nl_mac_format(vf->mac, buf);
                break;
        case SVFF_NL_VF_VLAN:
                snprintf(buf, 48, "%u qos %u %s", vf->vlan, vf->qos,
                         vf->vlan_proto == SVFF_NL_PROTO_8021AD ? "802.1ad" : "802.1Q");
                break;
        case SVFF_NL_VF_RATE:
                snprintf(buf, 48, "max %u min %u Mbps", vf->max_tx_rate, vf->min_tx_rate);
                break;
        case SVFF_NL_VF_SPOOFCHK:
                return vf->spoofchk ? "on" : "off";
        case SVFF_NL_VF_TRUST:
                return vf->trust ? "on" : "off";
        case SVFF_NL_VF_RSS_QUERY:
                return vf->rss_query ? "on" : "off";
        case SVFF_NL_VF_LINK_STATE:
                return vf->link_state < ELEMENTSOF(link_states) ? link_states[vf->link_state] : "?";
        default:
                return "?";
        }
        return buf;
}

/* One refused attribute found by sending the attributes one by one. */
struct refusal {
        unsigned bit;
        int r;
        struct svff_error err;
};

/* The combined message was refused: the kernel applied a prefix of it.
 * Each attribute alone tells which ones the driver refuses and why;
 * those it takes are (re)applied on the way. */
static unsigned find_refused(struct svff_class_pf *c, const struct svff_nl_vf *v,
                             struct refusal refused[static 7], size_t *n_refused) {
        unsigned bits = 0;

        *n_refused = 0;
        for (size_t i = 0; i < ELEMENTSOF(attr_order); i++) {
                struct svff_nl_vf one = *v;
                struct refusal *f = &refused[*n_refused];

                if (!(v->mask & attr_order[i]))
                        continue;
                one.mask = attr_order[i];
                f->err = SVFF_ERROR_NULL;
                f->r = svff_nl_vf_set(c->nl, c->ifname, &one, &f->err);
                if (f->r < 0) {
                        f->bit = attr_order[i];
                        bits |= f->bit;
                        (*n_refused)++;
                }
        }
        return bits;
}

static int refusal_error(struct svff_class_pf *c, const struct svff_pf *pf, const struct svff_nl_vf *v,
                         const struct refusal *f, struct svff_error *err) {
        const char *name = svff_nl_vf_field_name(f->bit);
        const char *why = svff_error_message(&f->err);
        char buf[48];

        if (f->bit == SVFF_NL_VF_RATE)
                name = v->min_tx_rate ? "min_tx_rate/max_tx_rate" : "max_tx_rate";
        if (f->r == -EOPNOTSUPP)
                return svff_error_set(err, f->r,
                                      "VF %u of '%s' (PF %s): the driver %s does not implement %s "
                                      "(EOPNOTSUPP); remove '%s' from the settings, or set "
                                      "\"nic_strict\": false in the PF's policy to apply the others "
                                      "without it", v->index, c->ifname, c->address, strna(pf->driver),
                                      name, svff_nl_vf_field_name(f->bit));
        /* The kernel's own words (extended ack), when it gave any beyond
         * the errno: the inner message is "VF n of 'if': TEXT". */
        const char *after = strstr(why, "': ");
        char errtext[128], text_buf[512], *text = text_buf;
        size_t l, e;

        errno = -f->r;
        snprintf(errtext, sizeof(errtext), "%m");
        snprintf(text_buf, sizeof(text_buf), "%s", after ? after + 3 : why);
        l = strlen(text);
        e = strlen(errtext);
        if (l >= e && streq(text + l - e, errtext)) {
                text[l - e] = 0;
                l -= e;
                if (l >= 2 && streq(text + l - 2, ": "))
                        text[l - 2] = 0;
        }
        if (!*text)
                text = NULL;
        return svff_error_set(err, f->r, "VF %u of '%s' (PF %s): the driver %s refused %s %s (%s, %s)"
                              "%s%s%s", v->index, c->ifname, c->address, strna(pf->driver), name,
                              field_value(v, f->bit, buf), strerrorname_np(-f->r) ?: "?", errtext,
                              text ? ": " : "", text ?: "",
                              f->bit == SVFF_NL_VF_RATE && v->min_tx_rate ?
                              "; some NICs (igb) take no min_tx_rate: leave it 0" : "");
}

/* Whether recorded (a state, or NULL) has "saved": *ret is it, or NULL
 * when it is null (unknown). Borrowed from recorded. */
static bool recorded_saved(struct json_object *recorded, struct json_object **ret) {
        struct json_object *saved = NULL;

        *ret = NULL;
        if (!json_object_is_type(recorded, json_type_object) ||
            !json_object_object_get_ex(recorded, "saved", &saved))
                return false;
        if (json_object_is_type(saved, json_type_object))
                *ret = saved;
        return true;
}

static int nic_provision(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                         const struct svff_class_settings *settings, struct json_object *recorded,
                         bool tenant, struct json_object **ret, struct svff_error *err) {
        _cleanup_free_ struct svff_nl_vf *live = NULL;
        _cleanup_(json_object_putp) struct json_object *state = NULL, *saved = NULL, *unsupported = NULL;
        const struct svff_nl_vf *me = NULL;
        struct json_object *rec_saved;
        struct refusal refused[7];
        size_t n_live = 0, n_refused = 0;
        unsigned to_set, bad_bits = 0;
        struct svff_class_settings w;
        bool has_saved;
        int r, readable;

        /* A VF handed back to its tenant and one handed on get the same:
         * the settings, over what the VF had of its own (saved). */
        (void) tenant;
        /* A copy: a hand-over's reset below changes it. */
        if (settings)
                w = *settings;
        else
                settings_init(&w, index);
        w.vf.index = index;
        has_saved = recorded_saved(recorded, &rec_saved);

        readable = read_live(c, pf, index, &live, &n_live, err);
        if (readable < 0)
                return readable;
        if (readable) {
                me = find_vf(live, n_live, index);
                if (!me)
                        return svff_error_set(err, -ENODEV, "VF %u of '%s' (PF %s) does not exist: "
                                              "the PF has %zu VFs", index, c->ifname, c->address, n_live);
                if (w.vf.mask & SVFF_NL_VF_MAC)
                        for (size_t i = 0; i < n_live; i++)
                                if (live[i].index != index && !memcmp(live[i].mac, w.vf.mac, 6)) {
                                        char buf[18];
                                        svff_nl_mac_format(w.vf.mac, buf);
                                        return svff_error_set(err, -EINVAL,
                                                              "VF %u of '%s' (PF %s): MAC %s is VF %u's "
                                                              "already; give each VF its own MAC",
                                                              index, c->ifname, c->address, buf,
                                                              live[i].index);
                                }
        }

        /* What the VF had before svff: kept from the record once saved.
         * A VF that already has every value svff would set may carry
         * svff's own earlier write (a crash before the record): its
         * "before" is unknown, and release then clears to the defaults,
         * which never leaks a VLAN. */
        if (has_saved)
                saved = rec_saved ? json_object_get(rec_saved) : NULL;
        else if (me && (!w.vf.mask || vf_diff(me, &w.vf, w.vf.mask & me->mask)))
                saved = vf_to_json(me, me->mask);

        /* A VF made anew (a reconf through 0) gets back what it had of
         * its own before svff too: an attribute svff never set, such as a
         * VLAN given by hand, is part of its identity. It stays the VF's
         * own: not in the state, so release leaves it. */
        struct svff_nl_vf want = w.vf;
        if (has_saved && rec_saved && me) {
                struct svff_nl_vf own;
                unsigned bits;

                json_to_vf(rec_saved, index, &own);
                bits = own.mask & ~w.vf.mask & me->mask;
                if ((bits & SVFF_NL_VF_MAC) && svff_nl_mac_is_zero(own.mac))
                        bits &= ~SVFF_NL_VF_MAC;
                vf_take(&want, &own, vf_diff(me, &own, bits));
        }

        /* A VF handed on (its recorded state given) holds exactly these
         * settings: what an earlier tenant set and these do not ask for
         * goes back to what the VF had of its own, else to the drivers'
         * defaults (no MAC, no VLAN, no rate, spoof checking on, trust
         * off). It is recorded, so verify reads it back too. */
        if (has_saved && me) {
                struct svff_nl_vf base;
                unsigned reset;

                vf_defaults(&base, index);
                reset = vf_diff(me, &base, me->mask & ~want.mask);
                if ((me->mask & SVFF_NL_VF_MAC) && !(want.mask & SVFF_NL_VF_MAC) && !svff_nl_mac_is_zero(me->mac))
                        reset |= SVFF_NL_VF_MAC;
                vf_take(&want, &base, reset);
                vf_take(&w.vf, &base, reset);
                want.clear_mac = reset & SVFF_NL_VF_MAC;
        }

        to_set = me ? vf_diff(me, &want, want.mask) | (want.mask & ~me->mask) : want.mask;
        if (to_set) {
                struct svff_nl_vf v = want;
                struct svff_error e = SVFF_ERROR_NULL;

                v.mask = to_set;
                r = svff_nl_vf_set(c->nl, c->ifname, &v, &e);
                if (r < 0) {
                        bad_bits = find_refused(c, &v, refused, &n_refused);
                        /* n_refused 0: the driver took each alone, so the
                         * first failure was transient and all is set. */
                        if (n_refused == 0)
                                svff_log_debug(c->ctx, "VF %u of '%s': set again attribute by "
                                               "attribute after: %s", index, c->ifname,
                                               svff_error_message(&e));
                        svff_error_free(&e);

                        struct refusal *fatal = NULL;
                        for (size_t i = 0; i < n_refused && !fatal; i++)
                                if (w.strict || refused[i].r != -EOPNOTSUPP)
                                        fatal = &refused[i];
                        if (fatal) {
                                r = refusal_error(c, pf, &v, fatal, err);
                                /* Leave nothing half applied: what was
                                 * taken goes back to what it was. */
                                if (me && (to_set & ~bad_bits)) {
                                        struct svff_nl_vf back = *me;
                                        back.mask = to_set & ~bad_bits & me->mask;
                                        if ((back.mask & SVFF_NL_VF_MAC) && svff_nl_mac_is_zero(back.mac))
                                                back.mask &= ~SVFF_NL_VF_MAC;
                                        if (back.mask)
                                                (void) svff_nl_vf_set(c->nl, c->ifname, &back, NULL);
                                }
                                for (size_t i = 0; i < n_refused; i++)
                                        svff_error_free(&refused[i].err);
                                return r;
                        }
                        if (n_refused > 0) {
                                unsupported = json_object_new_array();
                                if (!unsupported)
                                        return -ENOMEM;
                        }
                        for (size_t i = 0; i < n_refused; i++) {
                                svff_log_debug(c->ctx, "VF %u of '%s': %s not implemented, ignoring "
                                               "(nic_strict false): %s", index, c->ifname,
                                               svff_nl_vf_field_name(refused[i].bit),
                                               svff_error_message(&refused[i].err));
                                json_object_array_add(unsupported, json_object_new_string(
                                                              svff_nl_vf_field_name(refused[i].bit)));
                                svff_error_free(&refused[i].err);
                        }
                }
        }

        state = vf_to_json(&w.vf, w.vf.mask & ~bad_bits);
        if (!state)
                return -ENOMEM;
        if (json_object_object_add(state, "saved", saved ? json_object_get(saved) : NULL) < 0)
                return -ENOMEM;
        if (add(state, "release", json_object_new_string(w.release_defaults ? "defaults" : "restore")) < 0 ||
            add(state, "verified", json_object_new_string(readable ? "read" : "ack")) < 0)
                return -ENOMEM;
        if (unsupported && add(state, "unsupported", TAKE_PTR(unsupported)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(state);
        return 0;
}

static int nic_verify(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                      struct json_object *state, struct svff_error *err) {
        _cleanup_free_ struct svff_nl_vf *live = NULL;
        _cleanup_free_ char *diff = NULL;
        const struct svff_nl_vf *me;
        struct svff_nl_vf rec;
        size_t n_live = 0;
        unsigned d;
        int r;

        json_to_vf(state, index, &rec);
        r = read_live(c, pf, index, &live, &n_live, err);
        if (r < 0)
                return r;
        if (r == 0)
                /* Verified by the set's acknowledgement (state "verified":
                 * "ack"): no whole-PF read past the attribute limit. */
                return 0;
        me = find_vf(live, n_live, index);
        if (!me)
                return svff_error_set(err, -EUCLEAN, "VF %u of '%s' (PF %s) is gone: the PF has %zu VFs",
                                      index, c->ifname, c->address, n_live);
        /* Exactly the state: what it does not set is the VF's own (as
         * saved) or the drivers' default, so a VLAN, a rate or trust that
         * the settings never asked for (an earlier tenant's, a hand's) is
         * drift too. */
        {
                struct svff_nl_vf base, own;
                struct json_object *saved = NULL;
                const unsigned guarded = SVFF_NL_VF_VLAN | SVFF_NL_VF_RATE | SVFF_NL_VF_SPOOFCHK | SVFF_NL_VF_TRUST;

                vf_defaults(&base, index);
                if (json_object_object_get_ex(state, "saved", &saved) && json_object_is_type(saved, json_type_object)) {
                        json_to_vf(saved, index, &own);
                        vf_take(&base, &own, own.mask & guarded);
                }
                base.mask = 0;
                vf_take(&base, &rec, rec.mask);
                base.mask = rec.mask | (guarded & ~rec.mask);
                rec = base;
        }
        d = vf_diff(me, &rec, rec.mask & me->mask);
        if (!d)
                return 0;
        for (size_t i = 0; i < ELEMENTSOF(attr_order); i++) {
                char a[48], b[48], *n;

                if (!(d & attr_order[i]))
                        continue;
                if (asprintf(&n, "%s%s%s is %s, recorded %s", diff ?: "", diff ? "; " : "",
                             svff_nl_vf_field_name(attr_order[i]), field_value(me, attr_order[i], a),
                             field_value(&rec, attr_order[i], b)) < 0)
                        return -ENOMEM;
                free(diff);
                diff = n;
        }
        return svff_error_set(err, -EUCLEAN, "VF %u of '%s' (PF %s): %s; provision it again", index,
                              c->ifname, c->address, diff);
}

static int nic_release(struct svff_class_pf *c, const struct svff_pf *pf, unsigned index,
                       struct json_object *state, struct svff_error *err) {
        struct json_object *saved = NULL;
        struct svff_nl_vf rec, back, prior;
        const char *mode = NULL;
        struct refusal refused[7];
        size_t n_refused;
        int r;

        if (!state)
                return 0;
        if (pf->numvfs <= index)
                return 0;       /* the VF is gone, and its settings with it */
        json_to_vf(state, index, &rec);
        (void) svff_json_get_string(state, "release", &mode);
        (void) json_object_object_get_ex(state, "saved", &saved);
        if (!json_object_is_type(saved, json_type_object) || (mode && streq(mode, "defaults")))
                saved = NULL;

        /* What svff set goes back: to the saved value, else the default. */
        vf_defaults(&back, index);
        json_to_vf(saved, index, &prior);
        if (prior.mask & SVFF_NL_VF_MAC)
                memcpy(back.mac, prior.mac, 6);
        if (prior.mask & SVFF_NL_VF_VLAN) {
                back.vlan = prior.vlan;
                back.qos = prior.qos;
                back.vlan_proto = prior.vlan_proto;
        }
        if (prior.mask & SVFF_NL_VF_RATE) {
                back.max_tx_rate = prior.max_tx_rate;
                back.min_tx_rate = prior.min_tx_rate;
        }
        if (prior.mask & SVFF_NL_VF_SPOOFCHK)
                back.spoofchk = prior.spoofchk;
        if (prior.mask & SVFF_NL_VF_TRUST)
                back.trust = prior.trust;
        if (prior.mask & SVFF_NL_VF_RSS_QUERY)
                back.rss_query = prior.rss_query;
        if (prior.mask & SVFF_NL_VF_LINK_STATE)
                back.link_state = prior.link_state;
        back.mask = rec.mask;
        if (svff_nl_mac_is_zero(back.mac))
                back.mask &= ~SVFF_NL_VF_MAC;   /* never written; see the top */
        if (!back.mask)
                return 0;

        r = svff_nl_vf_set(c->nl, c->ifname, &back, NULL);
        if (r >= 0)
                return 0;
        /* Put back all the driver takes (the VLAN above all), then say
         * what it did not. */
        (void) find_refused(c, &back, refused, &n_refused);
        if (n_refused == 0)
                return 0;
        r = refusal_error(c, pf, &back, &refused[0], err);
        for (size_t i = 0; i < n_refused; i++)
                svff_error_free(&refused[i].err);
        return r;
}

static int nic_inspect(struct svff_class_pf *c, const struct svff_pf *pf, struct json_object **ret,
                       struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = NULL, *p = NULL, *vfs = NULL;
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *owner = NULL;
        _cleanup_free_ struct svff_nl_vf *live = NULL;
        size_t n = 0;
        int r;

        o = json_object_new_object();
        p = json_object_new_object();
        vfs = json_object_new_object();
        if (!o || !p || !vfs)
                return -ENOMEM;
        if (add(p, "ifname", json_object_new_string(c->ifname)) < 0)
                return -ENOMEM;

        r = svff_nic_owner_find(c->config_root, c->ifname, c->address, &owner, err);
        if (r < 0)
                return r;
        if (owner) {
                _cleanup_(json_object_putp) struct json_object *ow = json_object_new_object();
                if (!ow || add(ow, "manager", json_object_new_string(owner->owner)) < 0 ||
                    add(ow, "file", json_object_new_string(owner->file)) < 0 ||
                    add(ow, "setting", json_object_new_string(owner->detail ?: "")) < 0)
                        return -ENOMEM;
                /* NetworkManager's live answer names its connection */
                if (owner->connection_uuid &&
                    (add(ow, "connection_id", json_object_new_string(owner->connection_id)) < 0 ||
                     add(ow, "connection_uuid", json_object_new_string(owner->connection_uuid)) < 0))
                        return -ENOMEM;
                if (add(p, "owner", TAKE_PTR(ow)) < 0)
                        return -ENOMEM;
        }

        if (svff_nl_vf_list_readable(pf->numvfs)) {
                /* With the counters while the list holds them. */
                r = svff_nl_vf_counters_readable(pf->numvfs) ? svff_nl_vf_get_all_counters(c->nl, c->ifname, &live, &n, err)
                                                             : svff_nl_vf_get_all(c->nl, c->ifname, &live, &n, err);
                if (r < 0)
                        return r;
                for (size_t i = 0; i < n; i++) {
                        char key[16];
                        snprintf(key, sizeof(key), "%u", live[i].index);
                        if (add(vfs, key, vf_to_json(&live[i], live[i].mask)) < 0)
                                return -ENOMEM;
                }
                r = add(p, "verify", json_object_new_string("read"));
        } else
                r = add(p, "verify", json_object_new_string(
                                "ack: the VF list outgrows netlink's 64 KiB attribute"));
        if (r < 0 || add(o, "pf", TAKE_PTR(p)) < 0 || add(o, "vfs", TAKE_PTR(vfs)) < 0)
                return -ENOMEM;
        *ret = TAKE_PTR(o);
        return 0;
}

static int step_add(struct json_object *steps, unsigned vf, const char *action, const char *detail) {
        _cleanup_(json_object_putp) struct json_object *s = json_object_new_object();

        if (!s || add(s, "vf", json_object_new_int((int) vf)) < 0 ||
            add(s, "action", json_object_new_string(action)) < 0 ||
            add(s, "detail", json_object_new_string(detail)) < 0 ||
            json_object_array_add(steps, s) < 0)
                return -ENOMEM;
        s = NULL;
        return 0;
}

static char *nic_describe(struct json_object *state);

static int nic_plan(struct svff_class_pf *c, const struct svff_pf *pf, unsigned numvfs,
                    struct svff_class_settings *const *settings, struct json_object **ret,
                    struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *o = NULL, *steps = NULL;
        _cleanup_(svff_nic_owner_freep) struct svff_nic_owner *owner = NULL;
        _cleanup_free_ uint8_t (*macs)[6] = NULL;
        _cleanup_free_ bool *has_mac = NULL;
        bool take_over = false;
        int r;

        macs = calloc(numvfs ?: 1, sizeof(*macs));
        has_mac = calloc(numvfs ?: 1, sizeof(*has_mac));
        steps = json_object_new_array();
        o = json_object_new_object();
        if (!macs || !has_mac || !steps || !o)
                return -ENOMEM;

        for (unsigned i = 0; i < numvfs; i++) {
                const struct svff_class_settings *w = settings ? settings[i] : NULL;
                _cleanup_(json_object_putp) struct json_object *st = NULL;
                _cleanup_free_ char *d = NULL;

                if (!w)
                        continue;       /* none loaded: nothing asked */
                take_over |= w->take_over;
                if (w->vf.mask & SVFF_NL_VF_MAC) {
                        for (unsigned j = 0; j < i; j++)
                                if (has_mac[j] && !memcmp(macs[j], w->vf.mac, 6)) {
                                        char buf[18];
                                        svff_nl_mac_format(w->vf.mac, buf);
                                        return svff_error_set(err, -EINVAL,
                                                              "VF %u of '%s' (PF %s): MAC %s is VF %u's "
                                                              "too; give each VF its own MAC", i,
                                                              c->ifname, c->address, buf, j);
                                }
                        memcpy(macs[i], w->vf.mac, 6);
                        has_mac[i] = true;
                }
                if (!w->vf.mask)
                        continue;
                st = vf_to_json(&w->vf, w->vf.mask);
                d = st ? nic_describe(st) : NULL;
                if (!d || step_add(steps, i, "nic-set", d) < 0)
                        return -ENOMEM;
        }

        /* Another manager would undo svff's VF count and settings. */
        r = svff_nic_owner_find(c->config_root, c->ifname, c->address, &owner, err);
        if (r < 0 && svff_error_is_set(err))
                return r;       /* a file refused: the message names it */
        if (r < 0)
                return svff_error_set_errno(err, r, "PF %s: cannot read the network managers' files",
                                            c->address);
        if (owner && !take_over)
                return svff_error_set(err, -EBUSY,
                                      "PF %s ('%s') is managed by %s (%s: %s): remove its SR-IOV "
                                      "settings there, or set \"take_over\": true in svff's policy "
                                      "for this PF", c->address, c->ifname, owner->owner, owner->file,
                                      strna(owner->detail));

        if (add(o, "steps", TAKE_PTR(steps)) < 0 ||
            add(o, "needs", json_object_new_string("one RTM_SETLINK per VF, no dump")) < 0 ||
            add(o, "verify", json_object_new_string(
                        svff_nl_vf_list_readable(numvfs) ? "read back" :
                        "by each set's acknowledgement: the VF list of this many VFs outgrows "
                        "netlink's 64 KiB attribute")) < 0)
                return -ENOMEM;
        if (owner) {
                _cleanup_free_ char *t = NULL;
                if (asprintf(&t, "taking over from %s (%s)", owner->owner, owner->file) < 0 ||
                    add(o, "owner", json_object_new_string(t)) < 0)
                        return -ENOMEM;
        }
        *ret = TAKE_PTR(o);
        return 0;
}

static char *nic_describe(struct json_object *state) {
        _cleanup_free_ char *s = NULL;
        struct json_object *u = NULL;
        struct svff_nl_vf vf;
        const char *v = NULL;
        char mac[18];

        json_to_vf(state, 0, &vf);
        if (vf.mask & SVFF_NL_VF_MAC)
                svff_nl_mac_format(vf.mac, mac);
        if (asprintf(&s, "mac %s", vf.mask & SVFF_NL_VF_MAC ? mac : "-") < 0)
                return NULL;
#define APPEND(...)                                             \
        do {                                                    \
                char *_t;                                       \
                if (asprintf(&_t, __VA_ARGS__) < 0)             \
                        return NULL;                            \
                free(s);                                        \
                s = _t;                                         \
        } while (0)
        if ((vf.mask & SVFF_NL_VF_VLAN) && vf.vlan) {
                APPEND("%s vlan %u", s, vf.vlan);
                if (vf.qos)
                        APPEND("%s qos %u", s, vf.qos);
                if (vf.vlan_proto == SVFF_NL_PROTO_8021AD)
                        APPEND("%s 802.1ad", s);
        } else
                APPEND("%s vlan -", s);
        if (vf.mask & SVFF_NL_VF_TRUST)
                APPEND("%s trust %s", s, vf.trust ? "on" : "off");
        if (vf.mask & SVFF_NL_VF_SPOOFCHK)
                APPEND("%s spoofchk %s", s, vf.spoofchk ? "on" : "off");
        if (vf.mask & SVFF_NL_VF_LINK_STATE)
                APPEND("%s link %s", s, link_states[vf.link_state]);
        if ((vf.mask & SVFF_NL_VF_RATE) && (vf.max_tx_rate || vf.min_tx_rate))
                APPEND("%s rate %u-%u", s, vf.min_tx_rate, vf.max_tx_rate);
        if (json_object_object_get_ex(state, "unsupported", &u) && json_object_array_length(u) > 0) {
                for (size_t i = 0; i < json_object_array_length(u); i++)
                        APPEND("%s%s%s", s, i ? "," : " (unsupported: ",
                               json_object_get_string(json_object_array_get_idx(u, i)));
                APPEND("%s)", s);
        }
        if (svff_json_get_string(state, "verified", &v) == 0 && streq(v, "ack"))
                APPEND("%s, verified by ack", s);
#undef APPEND
        return TAKE_PTR(s);
}

/* s with " word" appended (s freed), or NULL. */
static char *append_word(char *s, const char *word) {
        char *t = NULL;

        if (s && asprintf(&t, "%s %s", s, word) < 0)
                t = NULL;
        free(s);
        return t;
}

/* "mac ..:34:56 vlan 100 trust": the MAC's last two bytes tell a host's
 * VFs apart (their first ones are mostly one prefix); describe has it
 * all. */
static char *nic_summarize(struct json_object *state) {
        struct svff_nl_vf vf;
        char mac[18], vlan[16], *s = NULL;

        json_to_vf(state, 0, &vf);
        if (vf.mask & SVFF_NL_VF_MAC)
                svff_nl_mac_format(vf.mac, mac);
        if (asprintf(&s, "mac %s%s", vf.mask & SVFF_NL_VF_MAC ? ".." : "-",
                     vf.mask & SVFF_NL_VF_MAC ? mac + 11 : "") < 0)
                return NULL;
        if ((vf.mask & SVFF_NL_VF_VLAN) && vf.vlan) {
                snprintf(vlan, sizeof(vlan), "vlan %u", vf.vlan);
                s = append_word(s, vlan);
        }
        if ((vf.mask & SVFF_NL_VF_TRUST) && vf.trust)
                s = append_word(s, "trust");
        return s;
}

static struct json_object *nic_capacity(struct json_object *inspection, struct json_object *settings) {
        _cleanup_(json_object_putp) struct json_object *lines = json_object_new_array();
        struct json_object *pf = NULL, *vfs = NULL, *owner;
        const char *ifname = NULL, *verify = NULL, *manager = NULL, *file = NULL, *conn = NULL;
        unsigned n = 0, n_mac = 0, n_vlan = 0, n_trust = 0;
        int r = 0;

        (void) settings;
        if (!lines)
                return NULL;
        (void) json_object_object_get_ex(inspection, "pf", &pf);
        (void) json_object_object_get_ex(inspection, "vfs", &vfs);
        if (pf && svff_json_get_string(pf, "ifname", &ifname) >= 0 && ifname)
                r |= svff_class_line_add(lines, "interface: %s", ifname);
        if (pf && json_object_object_get_ex(pf, "owner", &owner)) {
                (void) svff_json_get_string(owner, "manager", &manager);
                (void) svff_json_get_string(owner, "file", &file);
                (void) svff_json_get_string(owner, "connection_id", &conn);
                r |= svff_class_line_add(lines, "its VFs are configured by %s%s%s%s (%s) as well as svff",
                                         strna(manager), conn ? " connection '" : "", conn ?: "", conn ? "'" : "",
                                         strna(file));
        }
        if (vfs && json_object_is_type(vfs, json_type_object)) {
                json_object_object_foreach(vfs, key, vo) {
                        const char *mac = NULL;
                        unsigned vlan = 0;
                        struct json_object *t;

                        (void) key;
                        n++;
                        if (svff_json_get_string(vo, "mac", &mac) >= 0 && mac && !streq(mac, "00:00:00:00:00:00"))
                                n_mac++;
                        if (svff_json_get_unsigned(vo, "vlan", &vlan) >= 0 && vlan > 0)
                                n_vlan++;
                        if (json_object_object_get_ex(vo, "trust", &t) && json_object_get_boolean(t))
                                n_trust++;
                }
        }
        if (pf && svff_json_get_string(pf, "verify", &verify) >= 0 && verify && !streq(verify, "read"))
                r |= svff_class_line_add(lines, "VF settings not read back: %s", verify);
        else
                r |= svff_class_line_add(lines, "VFs as read now: %u, %u with a MAC, %u on a VLAN, %u trusted",
                                         n, n_mac, n_vlan, n_trust);
        return r < 0 ? NULL : TAKE_PTR(lines);
}

const struct svff_class svff_class_nic = {
        .name = "nic",
        .match = is_nic,
        .open = nic_open,
        .close = nic_close,
        .inspect = nic_inspect,
        .plan = nic_plan,
        .provision = nic_provision,
        .verify = nic_verify,
        .release = nic_release,
        .describe = nic_describe,
        .summarize = nic_summarize,
        .load = nic_load,
        .unload = nic_unload,
        .wants_recorded_state = true,
        .capacity = nic_capacity,
};

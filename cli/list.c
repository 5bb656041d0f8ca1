/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "list.h"
#include "table.h"

enum {
        COL_DEVICE,
        COL_TYPE,
        COL_INDEX,
        COL_DRIVER,
        COL_VFS,
        COL_IFACE,
        COL_NUMA,
        COL_IOMMU,
        COL_ID,
        COL_RECORDED,
        COL_ORIGINAL,
        COL_OWNER,
        COL_POLICY,
        COL_POOL,
        COL_DOMAIN,
        COL_GUEST,
        COL_STATE,
        COL_NAME,
        COL_ALLOWED,
        COL_CLASS,
        _COL_MAX,
};

/* shrink: the order in which a narrow terminal cuts a column (1 first;
 * 0 never), the least useful first: a class's state before a domain's
 * name, and the driver last. */
static const struct {
        const char *name, *header, *help;
        unsigned shrink;
} columns[_COL_MAX] = {
        [COL_DEVICE]   = { "device",   "DEVICE",   "PCI address of the PF or VF" },
        [COL_TYPE]     = { "type",     "TYPE",     "PF, or VF with its index (VF3)" },
        [COL_INDEX]    = { "index",    "INDEX",    "VF index on its PF" },
        [COL_DRIVER]   = { "driver",   "DRIVER",   "driver bound now", 8 },
        [COL_VFS]      = { "vfs",      "VFS",      "PF: VFs now/most the PF offers" },
        [COL_IFACE]    = { "iface",    "IFACE",    "network interface name", 6 },
        [COL_NUMA]     = { "numa",     "NUMA",     "NUMA node" },
        [COL_IOMMU]    = { "iommu",    "IOMMU",    "IOMMU group" },
        [COL_ID]       = { "id",       "ID",       "vendor:device ID" },
        [COL_RECORDED] = { "recorded", "RECORDED", "svffd's store has it (VF: its original driver)" },
        [COL_ORIGINAL] = { "original", "ORIGINAL", "VF: the driver release gives it back to", 5 },
        [COL_OWNER]    = { "owner",    "OWNER",    "PF: who owns the VF count (policy or operator)" },
        [COL_POLICY]   = { "policy",   "POLICY",   "PF: the svff.conf policy that matches", 3 },
        [COL_POOL]     = { "pool",     "POOL",     "PF: attach --pf may pick its VFs" },
        [COL_DOMAIN]   = { "domain",   "DOMAIN",   "VF: the libvirt domain it is assigned to", 7 },
        [COL_GUEST]    = { "guest",    "GUEST",    "VF: guest PCI address (BB:SS.F)" },
        [COL_STATE]    = { "state",    "STATE",    "VF: attached (live), defined (config only), held (paused by svffd), detaching; unassignable "
                                                    "(its IOMMU group holds its PF); absent" },
        [COL_NAME]     = { "name",     "NAME",     "PF: vendor and device name", 2 },
        [COL_ALLOWED]  = { "allowed",  "ALLOWED",  "PF: yes, or the manage rule that leaves it read-only", 4 },
        [COL_CLASS]    = { "class",    "CLASS",    "VF: its device class's state (qmax 8, online ns 1)", 1 },
};

/* The default fits 80 columns for the usual addresses, drivers and
 * domain names; class is added when a VF has a class record, allowed
 * when a PF is outside the manage list. recorded, owner and iface are
 * mostly '-': -o +COL adds them. */
static const unsigned default_columns[] = {
        COL_DEVICE, COL_TYPE, COL_DRIVER, COL_VFS, COL_DOMAIN, COL_GUEST, COL_STATE,
};

static unsigned selected[_COL_MAX];
static size_t n_selected;   /* 0: the default */
static bool add_selected;   /* -o +COL,...: selected adds to the default */

int list_columns_parse(const char *spec) {
        _cleanup_free_ char *copy = NULL;
        char *save = NULL;

        n_selected = 0;
        add_selected = false;
        if (!spec || !*spec)
                return 0;
        copy = strdup(spec);
        if (!copy)
                return -ENOMEM;
        add_selected = copy[0] == '+';
        for (char *w = strtok_r(copy, ",", &save); w; w = strtok_r(NULL, ",", &save)) {
                size_t c;

                if (w[0] == '+') {
                        if (!add_selected) {
                                usage_error("list", "-o: '%s' adds to the default columns: start the list with "
                                            "'+' (-o +%s) or name every column (-o device,%s).", w, w + 1, w + 1);
                                return -EINVAL;
                        }
                        w++;
                }
                for (c = 0; c < _COL_MAX; c++)
                        if (strcasecmp(w, columns[c].name) == 0)
                                break;
                if (c == _COL_MAX) {
                        usage_error("list", "-o: no column '%s'; the columns are listed in 'svffctl list --help'.",
                                    w);
                        return -EINVAL;
                }
                if (n_selected == _COL_MAX) {
                        usage_error("list", "-o: too many columns.");
                        return -EINVAL;
                }
                selected[n_selected++] = (unsigned) c;
        }
        if (n_selected == 0) {
                usage_error("list", "-o needs at least one column.");
                return -EINVAL;
        }
        return 0;
}

void list_columns_help(FILE *f) {
        fprintf(f, "Columns for -o:\n");
        for (size_t c = 0; c < _COL_MAX; c++)
                fprintf(f, "  %-9s %s\n", columns[c].name, columns[c].help);
        fprintf(f, "\nDefault:");
        for (size_t i = 0; i < ELEMENTSOF(default_columns); i++)
                fprintf(f, "%s%s", i ? "," : " ", columns[default_columns[i]].name);
        fprintf(f, "\n(and class at the end when a VF has one, allowed last when a PF is outside\n"
                   "svff.conf's manage list). -o +COL,... adds columns to these.\n");
}

/* Whether some PF has key with a value other than null. */
static bool any_pf_set(struct json_object *reply, const char *key) {
        struct json_object *pfs, *v;

        if (!json_object_object_get_ex(reply, "pfs", &pfs) || !json_object_is_type(pfs, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(pfs); i++)
                if (json_object_object_get_ex(json_object_array_get_idx(pfs, i), key, &v) && v)
                        return true;
        return false;
}

static bool any_vf_has_class(struct json_object *reply) {
        struct json_object *pfs, *vfs, *v;

        if (!json_object_object_get_ex(reply, "pfs", &pfs) || !json_object_is_type(pfs, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(pfs); i++) {
                if (!json_object_object_get_ex(json_object_array_get_idx(pfs, i), "vfs", &vfs) ||
                    !json_object_is_type(vfs, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(vfs); k++)
                        if (json_object_object_get_ex(json_object_array_get_idx(vfs, k), "class", &v) && v)
                                return true;
        }
        return false;
}

/* Appends to cols[0, n) those of add[0, n_add) it does not have yet;
 * returns the new n. */
static size_t cols_add(unsigned *cols, size_t n, const unsigned *add, size_t n_add) {
        for (size_t i = 0; i < n_add; i++) {
                size_t k;

                for (k = 0; k < n; k++)
                        if (cols[k] == add[i])
                                break;
                if (k == n)
                        cols[n++] = add[i];
        }
        return n;
}

static const char *yes_no(struct json_object *o, const char *key) {
        struct json_object *v;

        if (!json_object_object_get_ex(o, key, &v) || !v)
                return NULL;
        return json_object_get_boolean(v) ? "yes" : "no";
}

/* One row's cells: what each column shows for a PF (vf NULL) or a VF. */
struct row {
        char type[24], index[24], vfs[48], numa[24], iommu[24], id[16], guest[24], state[64], name[256];
        const char *cell[_COL_MAX];
};

/* An assignment's state as the guest sees it: attached to the domain's
 * persistent definition only (attach --config) is "defined", which the
 * guest gets at its next start, not "attached", which it has. */
static const char *assignment_state(struct json_object *a) {
        const char *state = jstr(a, "state");
        struct json_object *live;

        if (state && streq(state, "attached") && json_object_object_get_ex(a, "live", &live) && live &&
            !json_object_get_boolean(live))
                return "defined";
        return state;
}

static void fill_assignment(struct row *r, struct json_object *a) {
        const char *state;

        if (!a)
                return;
        r->cell[COL_DOMAIN] = jstr(a, "domain") ?: jstr(a, "uuid");
        if (jstr(a, "guest_address"))
                r->cell[COL_GUEST] = guest_address_display(jstr(a, "guest_address"), r->guest, sizeof(r->guest));
        state = assignment_state(a);
        r->cell[COL_STATE] = state;
        /* An unresolved intent: the state is what it was before. */
        if (jstr(a, "intent") && state) {
                snprintf(r->state, sizeof(r->state), "%s (%s unresolved)", state, jstr(a, "intent"));
                r->cell[COL_STATE] = r->state;
        }
}

static void fill_int(char *buf, size_t n, const char **cell, long long v) {
        if (v < 0)
                return;
        snprintf(buf, n, "%lld", v);
        *cell = buf;
}

static void fill_pf(struct row *r, struct json_object *pf) {
        /* An older svffd has the names only under vendor and device. */
        const char *vendor = jstr(pf, "vendor_name") ?: jstr(pf, "vendor"),
                   *device = jstr(pf, "device_name") ?: jstr(pf, "device");
        struct json_object *d;

        r->cell[COL_DEVICE] = jstr(pf, "address");
        r->cell[COL_TYPE] = "PF";
        r->cell[COL_DRIVER] = jstr(pf, "driver");
        snprintf(r->vfs, sizeof(r->vfs), "%lld/%lld", jint(pf, "numvfs", 0), jint(pf, "totalvfs", 0));
        r->cell[COL_VFS] = r->vfs;
        r->cell[COL_IFACE] = jstr(pf, "netdev");
        fill_int(r->numa, sizeof(r->numa), &r->cell[COL_NUMA], jint(pf, "numa_node", -1));
        fill_int(r->iommu, sizeof(r->iommu), &r->cell[COL_IOMMU], jint(pf, "iommu_group", -1));
        snprintf(r->id, sizeof(r->id), "%s:%s", strna(jstr(pf, "vendor_id")), strna(jstr(pf, "device_id")));
        r->cell[COL_ID] = r->id;
        r->cell[COL_RECORDED] = json_object_object_get_ex(pf, "desired", &d) && d ? "yes" : "no";
        r->cell[COL_OWNER] = jstr(pf, "owner");
        r->cell[COL_POLICY] = jstr(pf, "policy");
        r->cell[COL_POOL] = yes_no(pf, "pool");
        r->cell[COL_ALLOWED] = jstr(pf, "unmanaged") ?: "yes";
        /* Its last known state while a VF count write is in the kernel,
         * or while an operation changes it; why, under the table. */
        if (jstr(pf, "changing"))
                r->cell[COL_STATE] = "changing";
        if (vendor || device) {
                snprintf(r->name, sizeof(r->name), "%s%s%s", vendor ?: "", vendor && device ? " " : "",
                         device ?: "");
                r->cell[COL_NAME] = r->name;
        }
}

static void fill_vf(struct row *r, struct json_object *vf) {
        struct json_object *a = NULL, *c = NULL;

        r->cell[COL_DEVICE] = jstr(vf, "address");
        snprintf(r->type, sizeof(r->type), "VF%lld", jint(vf, "index", 0));
        r->cell[COL_TYPE] = r->type;
        fill_int(r->index, sizeof(r->index), &r->cell[COL_INDEX], jint(vf, "index", -1));
        r->cell[COL_DRIVER] = jstr(vf, "driver");
        r->cell[COL_IFACE] = jstr(vf, "netdev");
        fill_int(r->iommu, sizeof(r->iommu), &r->cell[COL_IOMMU], jint(vf, "iommu_group", -1));
        /* An older svffd says managed. */
        r->cell[COL_RECORDED] = yes_no(vf, "recorded") ?: yes_no(vf, "managed");
        r->cell[COL_ORIGINAL] = jstr(vf, "original_driver");
        (void) json_object_object_get_ex(vf, "assigned_to", &a);
        fill_assignment(r, a);
        /* shown before anyone tries: no attach can work (List says why) */
        if (!a && jstr(vf, "unassignable"))
                r->cell[COL_STATE] = "unassignable";
        /* An older svffd has only the long description. */
        if (json_object_object_get_ex(vf, "class", &c) && c)
                r->cell[COL_CLASS] = jstr(c, "summary") ?: jstr(c, "description") ?: "recorded";
}

/* The row of an assignment whose VF does not exist. */
static void fill_gone(struct row *r, struct json_object *g) {
        struct json_object *a = NULL;

        r->cell[COL_DEVICE] = jstr(g, "address");
        r->cell[COL_TYPE] = "VF";
        (void) json_object_object_get_ex(g, "assigned_to", &a);
        fill_assignment(r, a);
        r->cell[COL_STATE] = "gone";
}

static int add_row(struct table *t, const unsigned *cols, size_t n, const struct row *r) {
        const char *cells[_COL_MAX];

        for (size_t i = 0; i < n; i++)
                cells[i] = r->cell[cols[i]];
        return table_add_row(t, cells);
}

/* A PF's assignments whose VF is gone, or NULL. */
static struct json_object *pf_gone(struct json_object *pf) {
        struct json_object *gone;

        if (!json_object_object_get_ex(pf, "gone", &gone) || !json_object_is_type(gone, json_type_array))
                return NULL;
        return gone;
}

int list_print(struct json_object *reply) {
        _cleanup_(table_freep) struct table *t = NULL;
        struct json_object *pfs = NULL, *absent = NULL;
        const char *headers[_COL_MAX];
        unsigned cols[_COL_MAX];
        size_t n = 0, n_pfs, n_absent;

        if (!json_object_object_get_ex(reply, "pfs", &pfs) || !json_object_is_type(pfs, json_type_array))
                pfs = NULL;
        if (!json_object_object_get_ex(reply, "absent", &absent) || !json_object_is_type(absent, json_type_array))
                absent = NULL;
        n_pfs = pfs ? json_object_array_length(pfs) : 0;
        n_absent = absent ? json_object_array_length(absent) : 0;
        if (n_pfs + n_absent == 0) {
                printf("No SR-IOV physical functions found.\n");
                return 0;
        }

        if (n_selected > 0 && !add_selected)
                n = cols_add(cols, n, selected, n_selected);
        else {
                n = cols_add(cols, n, default_columns, ELEMENTSOF(default_columns));
                n = cols_add(cols, n, selected, n_selected);
                if (any_vf_has_class(reply))
                        n = cols_add(cols, n, (const unsigned[]) { COL_CLASS }, 1);
                if (any_pf_set(reply, "unmanaged"))
                        n = cols_add(cols, n, (const unsigned[]) { COL_ALLOWED }, 1);
        }
        for (size_t i = 0; i < n; i++)
                headers[i] = columns[cols[i]].header;
        t = table_new((unsigned) n, headers);
        if (!t)
                return EXIT_FAILURE;
        table_set_gap(t, 1);
        for (size_t i = 0; i < n; i++)
                table_set_shrink_rank(t, (unsigned) i, columns[cols[i]].shrink);

        for (size_t i = 0; i < n_pfs; i++) {
                struct json_object *pf = json_object_array_get_idx(pfs, i), *vfs, *gone = pf_gone(pf);
                struct row r = {};

                fill_pf(&r, pf);
                if (add_row(t, cols, n, &r) < 0)
                        return EXIT_FAILURE;
                if (json_object_object_get_ex(pf, "vfs", &vfs) && json_object_is_type(vfs, json_type_array))
                        for (size_t k = 0; k < json_object_array_length(vfs); k++) {
                                struct row v = {};

                                fill_vf(&v, json_object_array_get_idx(vfs, k));
                                if (add_row(t, cols, n, &v) < 0)
                                        return EXIT_FAILURE;
                        }
                /* Its assignments whose VF is gone, where the VF was. */
                for (size_t k = 0; gone && k < json_object_array_length(gone); k++) {
                        struct row v = {};

                        fill_gone(&v, json_object_array_get_idx(gone, k));
                        if (add_row(t, cols, n, &v) < 0)
                                return EXIT_FAILURE;
                }
        }
        /* PFs svffd has records of that are not present: nothing is
         * forgotten, and they line up with the rest. */
        for (size_t i = 0; i < n_absent; i++) {
                struct json_object *a = json_object_array_get_idx(absent, i), *d = NULL, *vfs = NULL;
                struct row r = {};

                r.cell[COL_DEVICE] = jstr(a, "address");
                r.cell[COL_TYPE] = "PF";
                if (json_object_object_get_ex(a, "desired", &d) && d) {
                        snprintf(r.vfs, sizeof(r.vfs), "-/%lld", jint(d, "numvfs", 0));
                        r.cell[COL_VFS] = r.vfs;
                }
                r.cell[COL_RECORDED] = "yes";
                r.cell[COL_STATE] = "absent";
                if (add_row(t, cols, n, &r) < 0)
                        return EXIT_FAILURE;
                if (!json_object_object_get_ex(a, "vfs", &vfs) || !json_object_is_type(vfs, json_type_array))
                        continue;
                for (size_t k = 0; k < json_object_array_length(vfs); k++) {
                        struct json_object *vf = json_object_array_get_idx(vfs, k), *asg = NULL;
                        struct row v = {};

                        v.cell[COL_DEVICE] = jstr(vf, "address");
                        v.cell[COL_TYPE] = "VF";
                        v.cell[COL_RECORDED] = "yes";
                        v.cell[COL_ORIGINAL] = jstr(vf, "original_driver");
                        (void) json_object_object_get_ex(vf, "assigned_to", &asg);
                        fill_assignment(&v, asg);
                        v.cell[COL_STATE] = "absent";
                        if (add_row(t, cols, n, &v) < 0)
                                return EXIT_FAILURE;
                }
        }
        table_print_fit(t, stdout, 0, output_width(stdout));
        for (size_t i = 0; i < n_pfs; i++) {
                struct json_object *pf = json_object_array_get_idx(pfs, i), *gone = pf_gone(pf);

                if (jstr(pf, "changing"))
                        printf("%s changing: %s\n", strna(jstr(pf, "address")), jstr(pf, "changing"));
                for (size_t k = 0; gone && k < json_object_array_length(gone); k++) {
                        struct json_object *g = json_object_array_get_idx(gone, k), *a = NULL;

                        (void) json_object_object_get_ex(g, "assigned_to", &a);
                        printf("%s gone: domain '%s' lacks it; %s\n", strna(jstr(g, "address")),
                               strna(a ? jstr(a, "domain") : NULL), strna(jstr(g, "next_step")));
                }
        }
        return 0;
}

/* Whether want holds addr. */
static bool addr_wanted(const char *addr, char (*want)[SVFF_PCI_ADDR_STRLEN], bool *seen, size_t n) {
        bool hit = false;

        for (size_t i = 0; addr && i < n; i++)
                if (streq(addr, want[i])) {
                        seen[i] = true;
                        hit = true;
                }
        return hit;
}

/* Whether VF vf is assigned to the domain asked for (by name or UUID). */
static bool vf_in_domain(struct json_object *vf, const char *domain) {
        struct json_object *a = NULL;
        const char *d, *u;

        return json_object_object_get_ex(vf, "assigned_to", &a) && a &&
               (((d = jstr(a, "domain")) && streq(d, domain)) || ((u = jstr(a, "uuid")) && streq(u, domain)));
}

/* Keeps in pf[key] (its VFs, or its assignments whose VF is gone) those
 * the filter asks for: all when whole, else those it names; with a
 * domain, of those only the ones assigned to it. Returns how many. */
static int filter_vfs(struct json_object *pf, const char *key, bool whole, const struct list_filter *f,
                      bool *seen) {
        struct json_object *vfs, *some;
        size_t n;

        if (!json_object_object_get_ex(pf, key, &vfs) || !json_object_is_type(vfs, json_type_array))
                return 0;
        some = json_object_new_array();
        if (!some)
                return -ENOMEM;
        for (size_t k = 0; k < json_object_array_length(vfs); k++) {
                struct json_object *vf = json_object_array_get_idx(vfs, k);
                bool named = addr_wanted(jstr(vf, "address"), f->addrs, seen, f->n_addrs);

                if ((whole || named) && (!f->domain || vf_in_domain(vf, f->domain)))
                        json_object_array_add(some, json_object_get(vf));
        }
        n = json_object_array_length(some);
        json_object_object_add(pf, key, some);
        return (int) n;
}

/* Keeps in one "pfs" or "absent" array what the filter asks for: the
 * PFs it names, whole, and the VFs it names, each under its PF's row;
 * with a domain, of those (of all, when no address is named) only the
 * VFs assigned to it. */
static int filter_pfs(struct json_object *reply, const char *key, const struct list_filter *f, bool *seen) {
        struct json_object *pfs, *kept;

        if (!json_object_object_get_ex(reply, key, &pfs) || !json_object_is_type(pfs, json_type_array))
                return 0;
        kept = json_object_new_array();
        if (!kept)
                return -ENOMEM;
        for (size_t i = 0; i < json_object_array_length(pfs); i++) {
                struct json_object *pf = json_object_array_get_idx(pfs, i);
                bool whole = f->n_addrs == 0 || addr_wanted(jstr(pf, "address"), f->addrs, seen, f->n_addrs);
                int n_vfs, n_gone;

                if (whole && !f->domain) {
                        json_object_array_add(kept, json_object_get(pf));
                        continue;
                }
                /* The PF's row, with only the VFs asked for. */
                n_vfs = filter_vfs(pf, "vfs", whole, f, seen);
                n_gone = filter_vfs(pf, "gone", whole, f, seen);
                if (n_vfs < 0 || n_gone < 0) {
                        json_object_put(kept);
                        return -ENOMEM;
                }
                if (n_vfs + n_gone > 0)
                        json_object_array_add(kept, json_object_get(pf));
        }
        json_object_object_add(reply, key, kept);
        return 0;
}

int list_filter(struct json_object *reply, const struct list_filter *f, const char **ret_unknown) {
        _cleanup_free_ bool *seen = calloc(f->n_addrs + 1, sizeof(bool));
        int r;

        if (!seen)
                return -ENOMEM;
        *ret_unknown = NULL;
        r = filter_pfs(reply, "pfs", f, seen);
        if (r >= 0)
                r = filter_pfs(reply, "absent", f, seen);
        if (r < 0)
                return r;
        for (size_t i = 0; i < f->n_addrs; i++)
                if (!seen[i]) {
                        *ret_unknown = f->addrs[i];
                        return -ENODEV;
                }
        return 0;
}

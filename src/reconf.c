/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "json-util.h"
#include "pciaddr.h"
#include "reconf.h"

static const char *const mode_names[] = {
        [SVFF_RECONF_PAUSE] = "pause",
        [SVFF_RECONF_DETACH] = "detach",
};

static const char *const fate_names[] = {
        [SVFF_RECONF_SURVIVES] = "survives",
        [SVFF_RECONF_RELEASED] = "released",
        [SVFF_RECONF_REFUSED] = "refused",
        [SVFF_RECONF_BLOCKED] = "blocked",
};

static const char *const phase_names[] = {
        [SVFF_RECONF_PHASE_QUIESCE] = "quiesce",
        [SVFF_RECONF_PHASE_NUMVFS] = "numvfs",
        [SVFF_RECONF_PHASE_REPROGRAM] = "reprogram",
        [SVFF_RECONF_PHASE_PROVISION] = "provision",
        [SVFF_RECONF_PHASE_BIND] = "bind",
        [SVFF_RECONF_PHASE_RESTORE] = "restore",
        [SVFF_RECONF_PHASE_COMMIT] = "commit",
        [SVFF_RECONF_PHASE_RELEASE] = "release",
        [SVFF_RECONF_PHASE_DOMAIN] = "domain",
};

static const char *const action_names[] = {
        [SVFF_RECONF_DO_PAUSE] = "pause",
        [SVFF_RECONF_DO_DETACH] = "detach",
        [SVFF_RECONF_DO_RELEASE] = "release",
        [SVFF_RECONF_DO_NUMVFS] = "numvfs",
        [SVFF_RECONF_DO_BIND] = "bind",
        [SVFF_RECONF_DO_UNPAUSE] = "unpause",
        [SVFF_RECONF_DO_REATTACH] = "reattach",
        [SVFF_RECONF_DO_FORGET] = "forget",
        [SVFF_RECONF_DO_COMMIT] = "commit",
        [SVFF_RECONF_DO_REMOVE_PF] = "remove_pf",
        [SVFF_RECONF_DO_FLASH] = "flash",
        [SVFF_RECONF_DO_RESCAN] = "rescan",
        [SVFF_RECONF_DO_CHECK_IDENTITY] = "check_identity",
        [SVFF_RECONF_DO_BIND_PF] = "bind_pf",
        [SVFF_RECONF_DO_PROVISION] = "provision",
        [SVFF_RECONF_DO_RELEASE_CLASS] = "release_class",
        [SVFF_RECONF_DO_RESTORE_DRIVER] = "restore_driver",
        [SVFF_RECONF_DO_REPROBE] = "reprobe",
        [SVFF_RECONF_DO_JOURNAL] = "journal",
        [SVFF_RECONF_DO_ATTACH] = "attach",
};

static const char *const change_names[] = {
        [SVFF_CHANGE_ATTACH] = "attach",
        [SVFF_CHANGE_DETACH] = "detach",
        [SVFF_CHANGE_PAUSE] = "pause",
        [SVFF_CHANGE_UNPAUSE] = "unpause",
};

static int lookup(const char *const *names, size_t n, const char *s) {
        for (size_t i = 0; s && i < n; i++)
                if (names[i] && streq(names[i], s))
                        return (int) i;
        return -EINVAL;
}

const char *svff_reconf_mode_to_string(enum svff_reconf_mode m) {
        return (size_t) m < ELEMENTSOF(mode_names) ? mode_names[m] : NULL;
}

int svff_reconf_mode_from_string(const char *s) {
        return lookup(mode_names, ELEMENTSOF(mode_names), s);
}

const char *svff_reconf_fate_to_string(enum svff_reconf_fate f) {
        return (size_t) f < ELEMENTSOF(fate_names) ? fate_names[f] : NULL;
}

const char *svff_reconf_phase_to_string(enum svff_reconf_phase p) {
        return (size_t) p < ELEMENTSOF(phase_names) ? phase_names[p] : NULL;
}

const char *svff_reconf_action_to_string(enum svff_reconf_action a) {
        return (size_t) a < ELEMENTSOF(action_names) ? action_names[a] : NULL;
}

const char *svff_reconf_change_to_string(enum svff_reconf_change_kind k) {
        return (size_t) k < ELEMENTSOF(change_names) ? change_names[k] : NULL;
}

void svff_reconf_plan_free(struct svff_reconf_plan *p) {
        if (!p)
                return;
        free(p->items);
        free(p->steps);
        free(p->image);
        json_object_put(p->ids);
        free(p->release);
        free(p->change);
        free(p);
}

void svff_reconf_plan_set_deadline(struct svff_reconf_plan *p, size_t i, uint64_t msec) {
        if (p && i < p->n_steps)
                p->steps[i].deadline_msec = msec;
}

bool svff_reconf_plan_ok(const struct svff_reconf_plan *p) {
        return p && p->n_refused == 0 && p->n_blocked == 0;
}

const struct svff_reconf_item *svff_reconf_plan_find(const struct svff_reconf_plan *p, const char *vf) {
        for (size_t i = 0; p && vf && i < p->n_items; i++)
                if (streq(p->items[i].vf, vf))
                        return &p->items[i];
        return NULL;
}

static int cmp_item(const void *a, const void *b) {
        const struct svff_reconf_item *x = a, *y = b;

        return x->index < y->index ? -1 : x->index > y->index;
}

static int add_step(struct svff_reconf_plan *p, size_t *alloc, enum svff_reconf_phase phase,
                    enum svff_reconf_action action, int item, unsigned numvfs) {
        if (p->n_steps == *alloc) {
                size_t a = *alloc ? *alloc * 2 : 16;
                struct svff_reconf_step *n = realloc(p->steps, a * sizeof(*n));

                if (!n)
                        return -ENOMEM;
                p->steps = n;
                *alloc = a;
        }
        p->steps[p->n_steps++] = (struct svff_reconf_step) {
                .phase = phase, .action = action, .item = item, .numvfs = numvfs,
        };
        return 0;
}

/* Whether the item needs quiescing: only a device the domain holds now.
 * A paused one (natively, or detached with its address reserved) stays
 * as it is and keeps its reservation across the change. */
static bool item_attached(const struct svff_reconf_item *it) {
        return it->a.state == SVFF_ASSIGN_ATTACHED;
}

/* A release: off its domain, out of the records (before the VF is
 * touched, as every change of one VF commits first), then the device
 * as the next owner expects it. */
static int release_steps(struct svff_reconf_plan *p, size_t *alloc) {
        int r = 0;

        for (size_t i = 0; r >= 0 && i < p->n_items; i++)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_QUIESCE, SVFF_RECONF_DO_RELEASE, (int) i, 0);
        if (r >= 0)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_COMMIT, SVFF_RECONF_DO_COMMIT, -1, 0);
        if (r >= 0 && p->release->class_state)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_RELEASE, SVFF_RECONF_DO_RELEASE_CLASS, -1,
                             p->release->index);
        if (r >= 0)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_RELEASE,
                             *p->release->driver ? SVFF_RECONF_DO_RESTORE_DRIVER : SVFF_RECONF_DO_REPROBE, -1,
                             p->release->index);
        return r;
}

/* A change of one assignment: journaled first, as every such change is;
 * the VF set up before a domain gets it, and handed back to the pool's
 * settings once the domain let it go. */
static int change_steps(struct svff_reconf_plan *p, size_t *alloc) {
        const struct svff_reconf_change *c = p->change;
        const struct svff_reconf_item *it = &p->items[0];
        bool gets = c->kind == SVFF_CHANGE_ATTACH || c->kind == SVFF_CHANGE_UNPAUSE;
        enum svff_reconf_action a;
        int r;

        switch (c->kind) {
        case SVFF_CHANGE_ATTACH:
                a = SVFF_RECONF_DO_ATTACH;
                break;
        case SVFF_CHANGE_DETACH:
                a = SVFF_RECONF_DO_DETACH;
                break;
        case SVFF_CHANGE_PAUSE:
                a = SVFF_RECONF_DO_PAUSE;
                break;
        default:
                a = it->a.pause_mode == SVFF_PAUSE_NATIVE ? SVFF_RECONF_DO_UNPAUSE : SVFF_RECONF_DO_REATTACH;
                break;
        }
        /* An attach binds the VF among its checks, before its intent is
         * journaled; an unpause sets the class state up again first, and
         * binds only to re-attach. */
        r = c->kind == SVFF_CHANGE_ATTACH && c->bind
                    ? add_step(p, alloc, SVFF_RECONF_PHASE_BIND, SVFF_RECONF_DO_BIND, 0, 1)
                    : 0;
        if (r >= 0)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_COMMIT, SVFF_RECONF_DO_JOURNAL, 0, 0);
        if (r >= 0 && gets && c->class_state)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_PROVISION, SVFF_RECONF_DO_PROVISION, 0, it->index);
        if (r >= 0 && c->kind == SVFF_CHANGE_UNPAUSE && c->bind && a == SVFF_RECONF_DO_REATTACH)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_BIND, SVFF_RECONF_DO_BIND, 0, 1);
        if (r >= 0)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_DOMAIN, a, 0, 0);
        if (r >= 0 && c->kind == SVFF_CHANGE_DETACH && c->class_state) {
                r = add_step(p, alloc, SVFF_RECONF_PHASE_RELEASE, SVFF_RECONF_DO_RELEASE_CLASS, 0, it->index);
                if (r >= 0)
                        r = add_step(p, alloc, SVFF_RECONF_PHASE_PROVISION, SVFF_RECONF_DO_PROVISION, 0, it->index);
        }
        if (r >= 0)
                r = add_step(p, alloc, SVFF_RECONF_PHASE_COMMIT, SVFF_RECONF_DO_COMMIT, 0, 0);
        return r;
}

/* The steps follow from the items alone, so from_json can rebuild them
 * and a journal cannot carry steps that disagree with its items. */
static int plan_steps(struct svff_reconf_plan *p) {
        size_t alloc = 0;
        int r;

        free(p->steps);
        p->steps = NULL;
        p->n_steps = 0;
        p->n_refused = p->n_blocked = p->n_released = 0;
        for (size_t i = 0; i < p->n_items; i++) {
                struct svff_reconf_item *it = &p->items[i];

                if (it->fate == SVFF_RECONF_REFUSED)
                        p->n_refused++;
                else if (it->fate == SVFF_RECONF_BLOCKED)
                        p->n_blocked++;
                else if (it->fate == SVFF_RECONF_RELEASED)
                        p->n_released++;
        }
        if (!svff_reconf_plan_ok(p))
                return 0;  /* nothing will run: no steps to show */
        if (p->release)
                return release_steps(p, &alloc);
        if (p->change)
                return change_steps(p, &alloc);

        for (size_t i = 0; i < p->n_items; i++) {
                const struct svff_reconf_item *it = &p->items[i];
                enum svff_reconf_action a;

                if (!item_attached(it))
                        continue;
                a = it->fate == SVFF_RECONF_RELEASED ? SVFF_RECONF_DO_RELEASE
                    : p->mode == SVFF_RECONF_PAUSE   ? SVFF_RECONF_DO_PAUSE
                                                     : SVFF_RECONF_DO_DETACH;
                r = add_step(p, &alloc, SVFF_RECONF_PHASE_QUIESCE, a, (int) i, 0);
                if (r < 0)
                        return r;
        }
        /* The kernel changes a non-zero count only through 0; the same
         * count again is a full cycle too (every VF re-created), but for
         * an init, which leaves a count that is right alone. */
        if (p->from > 0 && !(p->init && p->from == p->to)) {
                r = add_step(p, &alloc, SVFF_RECONF_PHASE_NUMVFS, SVFF_RECONF_DO_NUMVFS, -1, 0);
                if (r < 0)
                        return r;
        }
        /* A reprogram flashes the PF off the bus, between the writes. */
        for (enum svff_reconf_action a = SVFF_RECONF_DO_REMOVE_PF; p->image && a <= SVFF_RECONF_DO_BIND_PF; a++) {
                r = add_step(p, &alloc, SVFF_RECONF_PHASE_REPROGRAM, a, -1, 0);
                if (r < 0)
                        return r;
        }
        if (p->to > 0) {
                r = p->init && p->from == p->to ? 0
                                                 : add_step(p, &alloc, SVFF_RECONF_PHASE_NUMVFS,
                                                            SVFF_RECONF_DO_NUMVFS, -1, p->to);
                /* Every new VF gets its class state before any is bound. */
                for (unsigned k = 0; r >= 0 && p->provision && k < p->to; k++)
                        r = add_step(p, &alloc, SVFF_RECONF_PHASE_PROVISION, SVFF_RECONF_DO_PROVISION, -1, k);
                if (r >= 0)
                        r = add_step(p, &alloc, SVFF_RECONF_PHASE_BIND, SVFF_RECONF_DO_BIND, -1, p->to);
                if (r < 0)
                        return r;
        }
        for (size_t i = 0; i < p->n_items; i++) {
                const struct svff_reconf_item *it = &p->items[i];
                enum svff_reconf_action a;

                if (it->fate == SVFF_RECONF_RELEASED)
                        a = SVFF_RECONF_DO_FORGET;
                else if (!item_attached(it))
                        continue;
                else
                        a = p->mode == SVFF_RECONF_PAUSE ? SVFF_RECONF_DO_UNPAUSE : SVFF_RECONF_DO_REATTACH;
                r = add_step(p, &alloc, SVFF_RECONF_PHASE_RESTORE, a, (int) i, 0);
                if (r < 0)
                        return r;
        }
        return add_step(p, &alloc, SVFF_RECONF_PHASE_COMMIT, SVFF_RECONF_DO_COMMIT, -1, 0);
}

static bool driver_ok(const char *d) {
        size_t n = d ? strlen(d) : 0;

        return n > 0 && n < SVFF_RECONF_DRIVER_MAX &&
               strspn(d, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.") == n;
}

/* A reprogram's IDs: "vvvv:dddd" strings, as the policy names them. */
static bool ids_ok(struct json_object *ids) {
        if (!ids)
                return true;
        if (!json_object_is_type(ids, json_type_array))
                return false;
        for (size_t i = 0; i < json_object_array_length(ids); i++) {
                struct json_object *v = json_object_array_get_idx(ids, i);
                const char *s = json_object_get_string(v);

                if (!json_object_is_type(v, json_type_string) || strlen(s) != 9 || s[4] != ':' ||
                    strspn(s, "0123456789abcdefABCDEF") != 4 || strspn(s + 5, "0123456789abcdefABCDEF") != 4)
                        return false;
        }
        return true;
}

/* Sets what the steps follow from, then the steps; p as it was on
 * failure. */
static int plan_restep(struct svff_reconf_plan *p, bool provision, const char *image, struct json_object *ids) {
        struct svff_reconf_plan old = *p;
        char *img = NULL;
        int r;

        if (!ids_ok(ids) || (image && (!*image || strlen(image) >= SVFF_RECONF_IMAGE_MAX)))
                return -EINVAL;
        if (image && !(img = strdup(image)))
                return -ENOMEM;
        p->provision = provision;
        p->image = img;
        p->ids = ids ? json_object_get(ids) : NULL;
        p->steps = NULL;
        r = plan_steps(p);
        if (r < 0) {
                free(p->steps);
                free(img);
                json_object_put(p->ids);
                *p = old;
                return r;
        }
        free(old.steps);
        free(old.image);
        json_object_put(old.ids);
        return 0;
}

int svff_reconf_plan_set_provision(struct svff_reconf_plan *p, bool provision) {
        if (!p)
                return -EINVAL;
        return plan_restep(p, provision, p->image, p->ids);
}

int svff_reconf_plan_set_reprogram(struct svff_reconf_plan *p, const char *image, struct json_object *ids) {
        if (!p)
                return -EINVAL;
        return plan_restep(p, p->provision, image, ids);
}

static enum svff_reconf_fate fate_for(const struct svff_reconf_item *it, unsigned numvfs, bool force) {
        if (it->a.state == SVFF_ASSIGN_DETACHING)
                return SVFF_RECONF_BLOCKED;
        if (it->index < numvfs)
                return SVFF_RECONF_SURVIVES;
        return force ? SVFF_RECONF_RELEASED : SVFF_RECONF_REFUSED;
}

int svff_reconf_plan_new(const struct svff_reconf_input *in, unsigned numvfs, enum svff_reconf_mode mode,
                         bool force, struct svff_reconf_plan **ret) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        char pf[SVFF_PCI_ADDR_STRLEN];
        int r;

        if (!in || !ret || !in->pf || svff_pci_addr_canonicalize(in->pf, pf) < 0 || !driver_ok(in->driver) ||
            (in->n_items > 0 && !in->items) || !svff_reconf_mode_to_string(mode))
                return -EINVAL;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        memcpy(p->pf, pf, sizeof(pf));
        p->from = in->numvfs;
        p->to = numvfs;
        p->mode = mode;
        p->force = force;
        snprintf(p->driver, sizeof(p->driver), "%s", in->driver);
        if (in->n_items > 0) {
                p->items = calloc(in->n_items, sizeof(*p->items));
                if (!p->items)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < in->n_items; i++) {
                struct svff_reconf_item *it = &p->items[p->n_items];

                *it = in->items[i];
                if (svff_pci_addr_canonicalize(in->items[i].vf, it->vf) < 0 || !*it->a.uuid)
                        return -EINVAL;
                it->fate = fate_for(it, numvfs, force);
                p->n_items++;
        }
        if (p->n_items > 1)
                qsort(p->items, p->n_items, sizeof(*p->items), cmp_item);
        for (size_t i = 1; i < p->n_items; i++)
                if (p->items[i].index == p->items[i - 1].index)
                        return -EINVAL;
        for (size_t i = 0; i < p->n_items; i++)
                for (size_t k = i + 1; k < p->n_items; k++)
                        if (streq(p->items[i].vf, p->items[k].vf))
                                return -EINVAL;

        r = plan_restep(p, in->provision, in->image, in->ids);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

int svff_reconf_plan_new_init(const struct svff_reconf_input *in, unsigned numvfs, struct svff_reconf_plan **ret) {
        struct svff_reconf_input none;
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        int r;

        if (!in || !ret || in->image)
                return -EINVAL;
        none = *in;
        none.items = NULL;
        none.n_items = 0;
        r = svff_reconf_plan_new(&none, numvfs, SVFF_RECONF_PAUSE, false, &p);
        if (r < 0)
                return r;
        p->init = true;
        r = plan_restep(p, p->provision, NULL, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* The release's VF, its only item (when assigned) released. */
static int release_check(const struct svff_reconf_plan *p) {
        const struct svff_reconf_release *rel = p->release;

        if (!*rel->vf || (*rel->driver && !driver_ok(rel->driver)) || p->from != p->to || p->init || p->image ||
            p->provision || p->change || p->mode != SVFF_RECONF_DETACH || p->force != (p->n_items > 0) ||
            p->n_items > 1 ||
            (p->n_items == 1 && (!streq(p->items[0].vf, rel->vf) || p->items[0].index != rel->index ||
                                 p->items[0].fate != SVFF_RECONF_RELEASED)))
                return -EINVAL;
        return 0;
}

int svff_reconf_plan_new_release(const struct svff_reconf_input *in, const struct svff_reconf_release *rel,
                                 struct svff_reconf_plan **ret) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        struct svff_reconf_input input;
        int r;

        if (!in || !rel || !ret || in->image || in->provision || in->n_items > 1)
                return -EINVAL;
        input = *in;
        r = svff_reconf_plan_new(&input, input.numvfs, SVFF_RECONF_DETACH, true, &p);
        if (r < 0)
                return r;
        /* Released whatever its state, one still detaching too: the
         * release detaches it again first. */
        if (p->n_items > 0)
                p->items[0].fate = SVFF_RECONF_RELEASED;
        p->force = p->n_items > 0;
        p->release = calloc(1, sizeof(*p->release));
        if (!p->release)
                return -ENOMEM;
        *p->release = *rel;
        if (svff_pci_addr_canonicalize(rel->vf, p->release->vf) < 0 || release_check(p) < 0)
                return -EINVAL;
        r = plan_restep(p, false, NULL, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* One assignment, in the state the change starts from. */
static int change_check(const struct svff_reconf_plan *p) {
        const struct svff_reconf_change *c = p->change;
        const struct svff_reconf_item *it = p->n_items == 1 ? &p->items[0] : NULL;

        if (!it || !svff_reconf_change_to_string(c->kind) || p->from != p->to || p->init || p->image ||
            p->provision || p->release || p->force || p->mode != SVFF_RECONF_PAUSE ||
            (c->bind && c->kind == SVFF_CHANGE_UNPAUSE && it->a.pause_mode == SVFF_PAUSE_NATIVE) ||
            it->fate != (c->kind == SVFF_CHANGE_DETACH ? SVFF_RECONF_RELEASED : SVFF_RECONF_SURVIVES) ||
            (c->bind && c->kind != SVFF_CHANGE_ATTACH && c->kind != SVFF_CHANGE_UNPAUSE) ||
            (c->kind == SVFF_CHANGE_ATTACH && it->a.state != SVFF_ASSIGN_ATTACHED) ||
            (c->kind == SVFF_CHANGE_PAUSE && it->a.state != SVFF_ASSIGN_ATTACHED) ||
            (c->kind == SVFF_CHANGE_UNPAUSE && it->a.state != SVFF_ASSIGN_PAUSED))
                return -EINVAL;
        return 0;
}

int svff_reconf_plan_new_change(const struct svff_reconf_input *in, const struct svff_reconf_change *c,
                                struct svff_reconf_plan **ret) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        int r;

        if (!in || !c || !ret || in->image || in->provision || in->n_items != 1)
                return -EINVAL;
        r = svff_reconf_plan_new(in, in->numvfs, SVFF_RECONF_PAUSE, false, &p);
        if (r < 0)
                return r;
        p->change = malloc(sizeof(*p->change));
        if (!p->change)
                return -ENOMEM;
        *p->change = *c;
        /* The assignment stays, but for a detach, which ends it. */
        p->items[0].fate = c->kind == SVFF_CHANGE_DETACH ? SVFF_RECONF_RELEASED : SVFF_RECONF_SURVIVES;
        p->force = false;
        if (change_check(p) < 0)
                return -EINVAL;
        r = plan_restep(p, false, NULL, NULL);
        if (r < 0)
                return r;
        *ret = TAKE_PTR(p);
        return 0;
}

/* ---- JSON ---- */

static void add_str(struct json_object *o, const char *key, const char *v) {
        json_object_object_add(o, key, v && *v ? json_object_new_string(v) : NULL);
}

static struct json_object *item_to_json(const struct svff_reconf_item *it) {
        struct json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        add_str(o, "vf", it->vf);
        json_object_object_add(o, "index", json_object_new_int64(it->index));
        add_str(o, "fate", svff_reconf_fate_to_string(it->fate));
        add_str(o, "domain", it->a.domain);
        add_str(o, "uuid", it->a.uuid);
        add_str(o, "guest_address", it->a.guest_address);
        add_str(o, "alias", it->a.alias);
        json_object_object_add(o, "live", json_object_new_boolean(it->a.live));
        json_object_object_add(o, "config", json_object_new_boolean(it->a.config));
        add_str(o, "state", svff_assign_state_to_string(it->a.state));
        add_str(o, "pause_mode", svff_pause_mode_to_string(it->a.pause_mode));
        if (*it->a.failover.standby) {
                /* A recovery re-attaches the pair as it was. */
                struct json_object *fo = json_object_new_object();

                add_str(fo, "standby", it->a.failover.standby);
                add_str(fo, "mac", it->a.failover.mac);
                json_object_object_add(o, "failover", fo);
        }
        return o;
}

struct json_object *svff_reconf_step_to_json(const struct svff_reconf_plan *p, const struct svff_reconf_step *s) {
        struct json_object *o = json_object_new_object();

        if (!o)
                return NULL;
        add_str(o, "phase", svff_reconf_phase_to_string(s->phase));
        add_str(o, "action", svff_reconf_action_to_string(s->action));
        if (s->item >= 0 && (size_t) s->item < p->n_items) {
                const struct svff_reconf_item *it = &p->items[s->item];

                add_str(o, "vf", it->vf);
                add_str(o, "domain", it->a.domain);
                add_str(o, "uuid", it->a.uuid);
                if ((s->phase == SVFF_RECONF_PHASE_RESTORE && s->action != SVFF_RECONF_DO_FORGET) ||
                    (s->phase == SVFF_RECONF_PHASE_DOMAIN &&
                     (s->action == SVFF_RECONF_DO_ATTACH || s->action == SVFF_RECONF_DO_UNPAUSE ||
                      s->action == SVFF_RECONF_DO_REATTACH))) {
                        add_str(o, "guest_address", it->a.guest_address);
                        add_str(o, "alias", it->a.alias);
                }
        }
        if (s->action == SVFF_RECONF_DO_NUMVFS || s->action == SVFF_RECONF_DO_BIND)
                json_object_object_add(o, "numvfs", json_object_new_int64(s->numvfs));
        if (s->action == SVFF_RECONF_DO_PROVISION)
                json_object_object_add(o, "index", json_object_new_int64(s->numvfs));
        if (s->action == SVFF_RECONF_DO_BIND)
                add_str(o, "driver", p->driver);
        if (s->deadline_msec > 0)
                json_object_object_add(o, "deadline_msec", json_object_new_int64((int64_t) s->deadline_msec));
        if (s->phase == SVFF_RECONF_PHASE_RELEASE) {
                if (p->release)
                        add_str(o, "vf", p->release->vf);
                json_object_object_add(o, "index", json_object_new_int64(s->numvfs));
                if (s->action == SVFF_RECONF_DO_RESTORE_DRIVER && p->release)
                        add_str(o, "driver", p->release->driver);
        }
        return o;
}

struct json_object *svff_reconf_plan_to_json(const struct svff_reconf_plan *p) {
        struct json_object *o = json_object_new_object(), *items, *steps;

        if (!o)
                return NULL;
        items = json_object_new_array_ext((int) p->n_items);
        steps = json_object_new_array_ext((int) p->n_steps);
        if (!items || !steps) {
                json_object_put(items);
                json_object_put(steps);
                json_object_put(o);
                return NULL;
        }
        add_str(o, "pf", p->pf);
        json_object_object_add(o, "from", json_object_new_int64(p->from));
        json_object_object_add(o, "to", json_object_new_int64(p->to));
        add_str(o, "mode", svff_reconf_mode_to_string(p->mode));
        json_object_object_add(o, "force", json_object_new_boolean(p->force));
        add_str(o, "driver", p->driver);
        if (p->init)
                json_object_object_add(o, "init", json_object_new_boolean(true));
        json_object_object_add(o, "provision", json_object_new_boolean(p->provision));
        if (p->image) {
                add_str(o, "image", p->image);
                json_object_object_add(o, "ids", json_object_get(p->ids));
        }
        if (p->release) {
                struct json_object *rel = json_object_new_object();

                if (!rel) {
                        json_object_put(items);
                        json_object_put(steps);
                        json_object_put(o);
                        return NULL;
                }
                add_str(rel, "vf", p->release->vf);
                json_object_object_add(rel, "index", json_object_new_int64(p->release->index));
                add_str(rel, "driver", p->release->driver);
                json_object_object_add(rel, "class_state", json_object_new_boolean(p->release->class_state));
                json_object_object_add(o, "release", rel);
        }
        if (p->change) {
                struct json_object *c = json_object_new_object();

                if (!c) {
                        json_object_put(items);
                        json_object_put(steps);
                        json_object_put(o);
                        return NULL;
                }
                add_str(c, "kind", svff_reconf_change_to_string(p->change->kind));
                json_object_object_add(c, "bind", json_object_new_boolean(p->change->bind));
                json_object_object_add(c, "class_state", json_object_new_boolean(p->change->class_state));
                json_object_object_add(o, "change", c);
        }
        json_object_object_add(o, "assignments", items);
        json_object_object_add(o, "steps", steps);
        for (size_t i = 0; i < p->n_items; i++) {
                struct json_object *j = item_to_json(&p->items[i]);

                if (!j || json_object_array_add(items, j) < 0) {
                        json_object_put(j);
                        json_object_put(o);
                        return NULL;
                }
        }
        for (size_t i = 0; i < p->n_steps; i++) {
                struct json_object *j = svff_reconf_step_to_json(p, &p->steps[i]);

                if (!j || json_object_array_add(steps, j) < 0) {
                        json_object_put(j);
                        json_object_put(o);
                        return NULL;
                }
        }
        return o;
}

static int copy_str(struct json_object *o, const char *key, bool nullable, char *buf, size_t n) {
        const char *v = NULL;
        int r;

        r = nullable ? svff_json_get_string_or_null(o, key, &v) : svff_json_get_string(o, key, &v);
        if (r == -ENOENT && nullable)
                v = NULL;
        else if (r < 0)
                return -EBADMSG;
        if (v && strlen(v) >= n)
                return -EBADMSG;
        snprintf(buf, n, "%s", v ?: "");
        return 0;
}

static int item_from_json(struct json_object *o, struct svff_reconf_item *ret) {
        struct svff_reconf_item it = {};
        struct json_object *fo;
        const char *s = NULL;
        int v;

        if (!json_object_is_type(o, json_type_object) ||
            copy_str(o, "vf", false, it.vf, sizeof(it.vf)) < 0 ||
            svff_json_get_unsigned(o, "index", &it.index) < 0 ||
            copy_str(o, "domain", true, it.a.domain, sizeof(it.a.domain)) < 0 ||
            copy_str(o, "uuid", false, it.a.uuid, sizeof(it.a.uuid)) < 0 ||
            copy_str(o, "guest_address", true, it.a.guest_address, sizeof(it.a.guest_address)) < 0 ||
            copy_str(o, "alias", true, it.a.alias, sizeof(it.a.alias)) < 0 ||
            svff_json_get_bool(o, "live", &it.a.live) < 0 ||
            svff_json_get_bool(o, "config", &it.a.config) < 0)
                return -EBADMSG;
        if (svff_json_get_string(o, "fate", &s) < 0 ||
            (v = lookup(fate_names, ELEMENTSOF(fate_names), s)) < 0)
                return -EBADMSG;
        it.fate = (enum svff_reconf_fate) v;
        if (svff_json_get_string(o, "state", &s) < 0 || (v = svff_assign_state_from_string(s)) < 0)
                return -EBADMSG;
        it.a.state = (enum svff_assign_state) v;
        s = NULL;
        if ((svff_json_get_string_or_null(o, "pause_mode", &s) < 0 &&
             json_object_object_get_ex(o, "pause_mode", NULL)) ||
            (v = svff_pause_mode_from_string(s)) < 0)
                return -EBADMSG;
        it.a.pause_mode = (enum svff_pause_mode) v;
        if (json_object_object_get_ex(o, "failover", &fo) && fo &&
            (copy_str(fo, "standby", false, it.a.failover.standby, sizeof(it.a.failover.standby)) < 0 ||
             copy_str(fo, "mac", false, it.a.failover.mac, sizeof(it.a.failover.mac)) < 0))
                return -EBADMSG;
        *ret = it;
        return 0;
}

/* A release changes no count, flashes nothing, provisions nothing. */
static int release_from_json(struct json_object *o, struct svff_reconf_plan *p, bool other) {
        struct json_object *rel;

        if (!json_object_object_get_ex(o, "release", &rel) || !rel)
                return 0;
        if (other)
                return -EBADMSG;
        p->release = calloc(1, sizeof(*p->release));
        if (!p->release)
                return -ENOMEM;
        if (!json_object_is_type(rel, json_type_object) ||
            copy_str(rel, "vf", false, p->release->vf, sizeof(p->release->vf)) < 0 ||
            svff_json_get_unsigned(rel, "index", &p->release->index) < 0 ||
            copy_str(rel, "driver", true, p->release->driver, sizeof(p->release->driver)) < 0 ||
            svff_json_get_bool(rel, "class_state", &p->release->class_state) < 0 ||
            release_check(p) < 0)
                return -EBADMSG;
        return 0;
}

static int change_from_json(struct json_object *o, struct svff_reconf_plan *p, bool other) {
        struct json_object *c;
        const char *kind = NULL;
        int v;

        if (!json_object_object_get_ex(o, "change", &c) || !c)
                return 0;
        if (other)
                return -EBADMSG;
        p->change = calloc(1, sizeof(*p->change));
        if (!p->change)
                return -ENOMEM;
        if (!json_object_is_type(c, json_type_object) || svff_json_get_string(c, "kind", &kind) < 0 ||
            (v = lookup(change_names, ELEMENTSOF(change_names), kind)) < 0 ||
            svff_json_get_bool(c, "bind", &p->change->bind) < 0 ||
            svff_json_get_bool(c, "class_state", &p->change->class_state) < 0)
                return -EBADMSG;
        p->change->kind = (enum svff_reconf_change_kind) v;
        if (change_check(p) < 0)
                return -EBADMSG;
        return 0;
}

/* The steps are rebuilt from the rest; what each may take is read from
 * the written steps where they are the same steps. */
static void steps_deadlines_from_json(struct json_object *o, struct svff_reconf_plan *p) {
        struct json_object *steps;
        int64_t msec;

        if (!json_object_object_get_ex(o, "steps", &steps) || !json_object_is_type(steps, json_type_array) ||
            json_object_array_length(steps) != p->n_steps)
                return;
        for (size_t i = 0; i < p->n_steps; i++) {
                struct json_object *s = json_object_array_get_idx(steps, i);
                const char *phase = NULL, *action = NULL;

                if (svff_json_get_string(s, "phase", &phase) < 0 || svff_json_get_string(s, "action", &action) < 0 ||
                    !streq(phase, svff_reconf_phase_to_string(p->steps[i].phase)) ||
                    !streq(action, svff_reconf_action_to_string(p->steps[i].action)))
                        return;
        }
        for (size_t i = 0; i < p->n_steps; i++) {
                struct json_object *v;

                if (json_object_object_get_ex(json_object_array_get_idx(steps, i), "deadline_msec", &v) &&
                    json_object_is_type(v, json_type_int) && (msec = json_object_get_int64(v)) > 0)
                        p->steps[i].deadline_msec = (uint64_t) msec;
        }
}

int svff_reconf_plan_from_json(struct json_object *o, struct svff_reconf_plan **ret) {
        _cleanup_(svff_reconf_plan_freep) struct svff_reconf_plan *p = NULL;
        struct json_object *items, *ids = NULL;
        const char *s, *image = NULL;
        bool provision = false;
        int v, r;

        if (!o || !ret || !json_object_is_type(o, json_type_object))
                return -EBADMSG;
        p = calloc(1, sizeof(*p));
        if (!p)
                return -ENOMEM;
        if (copy_str(o, "pf", false, p->pf, sizeof(p->pf)) < 0 ||
            svff_json_get_unsigned(o, "from", &p->from) < 0 ||
            svff_json_get_unsigned(o, "to", &p->to) < 0 ||
            svff_json_get_bool(o, "force", &p->force) < 0 ||
            copy_str(o, "driver", false, p->driver, sizeof(p->driver)) < 0 || !driver_ok(p->driver) ||
            svff_json_get_string(o, "mode", &s) < 0 || (v = svff_reconf_mode_from_string(s)) < 0)
                return -EBADMSG;
        p->mode = (enum svff_reconf_mode) v;
        /* Absent from plans journaled before they were kept. */
        if ((json_object_object_get_ex(o, "init", NULL) && svff_json_get_bool(o, "init", &p->init) < 0) ||
            (json_object_object_get_ex(o, "provision", NULL) && svff_json_get_bool(o, "provision", &provision) < 0) ||
            (json_object_object_get_ex(o, "image", NULL) && svff_json_get_string(o, "image", &image) < 0) ||
            (json_object_object_get_ex(o, "ids", &ids) && ids && !image))
                return -EBADMSG;
        if (!json_object_object_get_ex(o, "assignments", &items) || !json_object_is_type(items, json_type_array))
                return -EBADMSG;
        if (json_object_array_length(items) > 0) {
                p->items = calloc(json_object_array_length(items), sizeof(*p->items));
                if (!p->items)
                        return -ENOMEM;
        }
        for (size_t i = 0; i < json_object_array_length(items); i++) {
                r = item_from_json(json_object_array_get_idx(items, i), &p->items[i]);
                if (r < 0)
                        return r;
                p->n_items++;
        }
        if (p->init && (image || p->n_items > 0))
                return -EBADMSG;
        r = release_from_json(o, p, image || provision);
        if (r >= 0)
                r = change_from_json(o, p, image || provision);
        if (r < 0)
                return r;
        r = plan_restep(p, provision, image, ids);
        if (r < 0)
                return r == -EINVAL ? -EBADMSG : r;
        steps_deadlines_from_json(o, p);
        *ret = TAKE_PTR(p);
        return 0;
}

/* ---- for operators ---- */

/* A guest address the way the operator types it (--guest-address
 * BB:SS.F), not the canonical form the store keeps; none: what happens
 * instead, in words. */
static const char *guest_display(const char *ga, const char *none, char buf[static SVFF_PCI_ADDR_STRLEN]) {
        struct svff_pci_addr a;

        if (!*ga)
                return none;
        if (svff_pci_addr_parse(ga, &a) < 0 || a.domain != 0)
                return ga;
        snprintf(buf, SVFF_PCI_ADDR_STRLEN, "%02x:%02x.%x", a.bus, a.slot, a.func);
        return buf;
}

static void change_print_head(const struct svff_reconf_plan *p, FILE *f) {
        const struct svff_reconf_item *it = &p->items[0];
        char ga[SVFF_PCI_ADDR_STRLEN];
        const char *defs = it->a.live && it->a.config ? "live and persistent definitions"
                           : it->a.live           ? "live definition"
                           : it->a.config         ? "persistent definition"
                                                  : "reserved guest address (it is paused, out of the domain)";

        switch (p->change->kind) {
        case SVFF_CHANGE_ATTACH:
                fprintf(f, "Attach VF %s (VF %u of PF %s) to domain '%s' (%s), its %s, at guest address %s, "
                           "alias %s.\n", it->vf, it->index, p->pf, it->a.domain, it->a.uuid, defs,
                        guest_display(it->a.guest_address, "libvirt's choice", ga), it->a.alias);
                break;
        case SVFF_CHANGE_DETACH:
                fprintf(f, "Detach VF %s (VF %u of PF %s) from domain '%s' (%s) for good: its %s, and the "
                           "assignment ends.\n", it->vf, it->index, p->pf, it->a.domain, it->a.uuid, defs);
                break;
        case SVFF_CHANGE_PAUSE:
                fprintf(f, "Pause VF %s (VF %u of PF %s) in domain '%s' (%s): the assignment, its guest address "
                           "%s and alias %s stay.\n", it->vf, it->index, p->pf, it->a.domain, it->a.uuid,
                        guest_display(it->a.guest_address, "(none yet)", ga), it->a.alias);
                break;
        default:
                fprintf(f, "Unpause VF %s (VF %u of PF %s) in domain '%s' (%s), paused %s.\n", it->vf, it->index,
                        p->pf, it->a.domain, it->a.uuid,
                        it->a.pause_mode == SVFF_PAUSE_NATIVE ? "natively" : "by a detach with its address reserved");
                break;
        }
}

void svff_reconf_plan_print(const struct svff_reconf_plan *p, FILE *f) {
        char ga[SVFF_PCI_ADDR_STRLEN];

        if (p->change)
                change_print_head(p, f);
        else if (p->release)
                fprintf(f, "Release VF %s (VF %u of PF %s, which keeps its %u VF%s): %s%s.\n", p->release->vf,
                        p->release->index, p->pf, p->from, p->from == 1 ? "" : "s",
                        *p->release->driver ? "back to " : "re-probed: the kernel's choice of driver",
                        p->release->driver);
        else if (p->init)
                fprintf(f, "Init PF %s: %u -> %u VFs%s, VFs bound to %s.\n", p->pf, p->from, p->to,
                        p->from == p->to ? " (the count stays: no write)" : "", p->driver);
        else if (p->image)
                fprintf(f, "Reprogram PF %s with '%s': %u -> %u VFs (mode %s%s), VFs rebound to %s.\n", p->pf,
                        p->image, p->from, p->to, svff_reconf_mode_to_string(p->mode), p->force ? ", --force" : "",
                        p->driver);
        else
                fprintf(f, "Reconfigure PF %s: %u -> %u VFs (mode %s%s), VFs rebound to %s.\n", p->pf, p->from,
                        p->to, svff_reconf_mode_to_string(p->mode), p->force ? ", --force" : "", p->driver);
        if (p->init || p->change || (p->release && p->n_items == 0))
                ;       /* no VF taken from a domain, or said above */
        else if (p->n_items == 0)
                fprintf(f, "\nNo VF of this PF is assigned.\n");
        else {
                fprintf(f, "\nAssignments (%zu):\n", p->n_items);
                for (size_t i = 0; i < p->n_items; i++) {
                        const struct svff_reconf_item *it = &p->items[i];
                        const char *why;

                        switch (it->fate) {
                        case SVFF_RECONF_SURVIVES:
                                why = it->a.state == SVFF_ASSIGN_ATTACHED
                                              ? "survives: same VF index, guest address and alias"
                                              : "survives: stays paused with its reservation";
                                break;
                        case SVFF_RECONF_RELEASED:
                                why = p->release ? "RELEASED (--force): detached for good, the VF stays"
                                                 : "RELEASED (--force): detached for good, the VF no longer exists";
                                break;
                        case SVFF_RECONF_REFUSED:
                                why = "REFUSED: the VF index is not below the new count (--force releases it)";
                                break;
                        default:
                                why = "BLOCKED: still detaching, the guest has not released it";
                                break;
                        }
                        fprintf(f, "  VF %u %s  domain '%s' at %s (%s%s%s, %s): %s\n", it->index, it->vf,
                                it->a.domain, guest_display(it->a.guest_address, "no guest address yet", ga),
                                it->a.live ? "live" : "", it->a.live && it->a.config ? "+" : "",
                                it->a.config ? "config" : "", svff_assign_state_to_string(it->a.state), why);
                }
        }
        if (!svff_reconf_plan_ok(p)) {
                fprintf(f, "\nNot executable: %u assignment(s) refused, %u blocked; nothing would change.\n",
                        p->n_refused, p->n_blocked);
                return;
        }
        fprintf(f, "\nSteps:\n");
        for (size_t i = 0; i < p->n_steps; i++) {
                const struct svff_reconf_step *s = &p->steps[i];
                const struct svff_reconf_item *it = s->item >= 0 ? &p->items[s->item] : NULL;
                size_t last = i;

                /* One line for a run of provision steps: one per VF. */
                while (s->action == SVFF_RECONF_DO_PROVISION && last + 1 < p->n_steps &&
                       p->steps[last + 1].action == SVFF_RECONF_DO_PROVISION)
                        last++;
                if (last > i) {
                        fprintf(f, "  %2zu-%zu. [%s] set up VFs %u-%u with the PF's device class: the policy's "
                                   "settings, and each assignment's own for its VF\n", i + 1, last + 1,
                                svff_reconf_phase_to_string(s->phase), s->numvfs, p->steps[last].numvfs);
                        i = last;
                        continue;
                }
                fprintf(f, "  %2zu. [%s] ", i + 1, svff_reconf_phase_to_string(s->phase));
                switch (s->action) {
                case SVFF_RECONF_DO_PAUSE:
                        fprintf(f, "pause VF %s in domain '%s' (native if its QEMU offers it, else detach "
                                   "with its address reserved)", it->vf, it->a.domain);
                        break;
                case SVFF_RECONF_DO_DETACH:
                        if (p->change && !it->a.live && !it->a.config)
                                fprintf(f, "drop VF %s's reserved guest address in domain '%s' (it is out of "
                                           "the domain already)", it->vf, it->a.domain);
                        else if (p->change)
                                fprintf(f, "detach VF %s from domain '%s' and wait for the guest to let it go",
                                        it->vf, it->a.domain);
                        else
                                fprintf(f, "detach VF %s from domain '%s', keeping its address and alias (from a "
                                           "running domain, the live device only)", it->vf, it->a.domain);
                        break;
                case SVFF_RECONF_DO_ATTACH:
                        fprintf(f, "attach VF %s to domain '%s' as a managed='no' vfio hostdev", it->vf,
                                it->a.domain);
                        break;
                case SVFF_RECONF_DO_JOURNAL:
                        fprintf(f, "journal the %s of VF %s in the store, before libvirt is asked",
                                svff_reconf_change_to_string(p->change->kind), it->vf);
                        break;
                case SVFF_RECONF_DO_RELEASE:
                        fprintf(f, "detach VF %s from domain '%s' for good (--force)", it->vf, it->a.domain);
                        break;
                case SVFF_RECONF_DO_NUMVFS:
                        fprintf(f, "write sriov_numvfs = %u", s->numvfs);
                        break;
                case SVFF_RECONF_DO_BIND:
                        if (it)
                                fprintf(f, "bind VF %s to %s, svff's recorded driver for it", it->vf, p->driver);
                        else
                                fprintf(f, "bind the %u VFs to %s", s->numvfs, p->driver);
                        break;
                case SVFF_RECONF_DO_UNPAUSE:
                case SVFF_RECONF_DO_REATTACH:
                        fprintf(f, "%s VF %u (%s) in domain '%s' at guest address %s, alias %s",
                                s->action == SVFF_RECONF_DO_UNPAUSE ? "unpause" : "re-attach", it->index, it->vf,
                                it->a.domain, guest_display(it->a.guest_address, "libvirt's choice", ga),
                                it->a.alias);
                        break;
                case SVFF_RECONF_DO_FORGET:
                        fprintf(f, "drop the assignment of VF %s to domain '%s'", it->vf, it->a.domain);
                        break;
                case SVFF_RECONF_DO_COMMIT:
                        if (p->change)
                                fprintf(f, "record the assignment as it is now%s",
                                        p->change->kind == SVFF_CHANGE_DETACH ? ": none" : "");
                        else if (p->release)
                                fprintf(f, "drop the VF's record; the operator owns PF %s's count", p->pf);
                        else
                                fprintf(f, "record the new state and clear the journal");
                        break;
                case SVFF_RECONF_DO_RELEASE_CLASS:
                        fprintf(f, "undo what the PF's device class set up on VF %u, for the next owner",
                                s->numvfs);
                        break;
                case SVFF_RECONF_DO_RESTORE_DRIVER:
                        fprintf(f, "bind VF %s back to %s", p->release->vf, p->release->driver);
                        break;
                case SVFF_RECONF_DO_REPROBE:
                        fprintf(f, "clear VF %s's driver_override and re-probe it", p->release->vf);
                        break;
                case SVFF_RECONF_DO_REMOVE_PF:
                        fprintf(f, "remove PF %s from the bus", p->pf);
                        break;
                case SVFF_RECONF_DO_FLASH:
                        fprintf(f, "run the flash hook on '%s'", strna(p->image));
                        break;
                case SVFF_RECONF_DO_RESCAN:
                        fprintf(f, "rescan the PF's bus and wait for PF %s", p->pf);
                        break;
                case SVFF_RECONF_DO_CHECK_IDENTITY:
                        if (p->ids && json_object_array_length(p->ids) > 0) {
                                fprintf(f, "check the PF is one of");
                                for (size_t k = 0; k < json_object_array_length(p->ids); k++)
                                        fprintf(f, " %s",
                                                json_object_get_string(json_object_array_get_idx(p->ids, k)));
                        } else
                                fprintf(f, "check the PF is what it was");
                        fprintf(f, " with at least %u VF%s", p->to, p->to == 1 ? "" : "s");
                        break;
                case SVFF_RECONF_DO_BIND_PF:
                        fprintf(f, "bind PF %s to its driver", p->pf);
                        break;
                case SVFF_RECONF_DO_PROVISION:
                        if (p->change && p->change->kind == SVFF_CHANGE_DETACH)
                                fprintf(f, "set up VF %u with the policy's settings only, for the pool",
                                        s->numvfs);
                        else if (p->change && p->change->kind == SVFF_CHANGE_UNPAUSE)
                                fprintf(f, "set VF %u up again with its assignment's class state, unless the "
                                           "device is as recorded", s->numvfs);
                        else if (p->change)
                                fprintf(f, "hand VF %u over with the PF's device class: what it holds released "
                                           "unless it is exactly as asked, then the policy's settings and the "
                                           "assignment's own", s->numvfs);
                        else
                                fprintf(f, "set up VF %u with the PF's device class: the policy's settings, and its "
                                           "assignment's own", s->numvfs);
                        break;
                default:
                        fprintf(f, "?");
                        break;
                }
                if (s->deadline_msec > 0)
                        fprintf(f, " (deadline %llu s)", (unsigned long long) ((s->deadline_msec + 999) / 1000));
                fputc('\n', f);
        }
        if (!p->init && !p->release && !p->change)
                fprintf(f, "\nQuiesce steps run in parallel across domains, one at a time within a domain.\n");
}

void svff_reconf_item_defs(const struct svff_reconf_item *it, bool active, bool *ret_live, bool *ret_config) {
        bool live = it->a.live && active;

        *ret_live = live;
        *ret_config = it->a.config && !(live && it->fate == SVFF_RECONF_SURVIVES);
}

void svff_reconf_restore_of(const struct svff_reconf_item *it, bool active, enum svff_pause_mode mode, bool moved,
                            struct svff_reconf_restore *ret) {
        struct svff_reconf_restore r = {};

        if (!moved) {
                if (mode == SVFF_PAUSE_NATIVE)
                        r.unpause = true;
                else
                        svff_reconf_item_defs(it, active, &r.attach_live, &r.attach_config);
                *ret = r;
                return;
        }
        r.move_out_live = it->a.live && active;
        r.move_out_config = it->a.config;
        r.attach_live = it->a.live && active;
        r.attach_config = it->a.config;
        r.attach_config_first = r.attach_live && r.attach_config;
        *ret = r;
}

bool svff_reconf_plan_needs_libvirt(const struct svff_reconf_plan *p) {
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].item >= 0 && p->steps[i].action != SVFF_RECONF_DO_FORGET)
                        return true;
        return false;
}

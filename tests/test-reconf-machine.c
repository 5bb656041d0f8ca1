/* SPDX-License-Identifier: LGPL-2.1-or-later */

/* The reconf state machine (daemon/reconf-machine.h) against a fake ops
 * table, table-driven: every step x every failure, a crash at every
 * journal write followed by a restart from what was committed, and a
 * stop at every step, each with completions delivered at once, in order
 * and in reverse order.
 *
 * THE FAKE IS A STAND-IN for libvirt (domains holding host devices,
 * natively paused or detached), sysfs (sriov_numvfs, the VFs' drivers)
 * and the store (what a commit made durable): no real libvirt, kernel
 * or disk can be made to fail at every step, crash at every commit or
 * lose its connection on cue. It behaves rather than records: numvfs
 * destroys the VFs (and flags one still held by a domain), a re-attach
 * needs its VF to exist on vfio-pci, an unpause needs the device there.
 *
 * A reprogram (scenarios with an image) adds the PF's own steps: the
 * fake PF leaves the bus and comes back, and refuses (flags) a removal
 * with VFs enabled, a flash while the PF is on the bus, and a numvfs
 * write while it is off it. A journal the machine leaves "interrupted"
 * is restarted once as svffd's own recovery (which must neither flash
 * nor touch the PF), then taken up by the operator: a reprogram again or,
 * every other case, a reconf.
 *
 * The fake's VFs carry class state (what provision set up on them, by
 * the assignment it came from), wiped by a count change as the kernel
 * wipes it; and a count change may give the VFs other host addresses
 * (a device whose First VF Offset depends on NumVFs, or a new image).
 *
 * After each case, and after each restart, the invariants: no VF in two
 * domains, none destroyed while a domain held it, none given to a domain
 * on another driver; no assignment lost (a device in its domain has its
 * record saying so; one that is off its domain keeps a record with its
 * reservation, unless it was released); no class state on a VF other
 * than its own assignment's, and a VF given back to its domain with it;
 * records follow their VFs to their new addresses, and a VF goes back to
 * its domain at its address now; a count the kernel refuses on recovery
 * rolls back; the machine's outcome per assignment is the fake's; its
 * executed-steps log is what the fake saw done. */

#include <check.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fault.h"
#include "json-util.h"
#include "macro.h"
#include "reconf-journal.h"
#include "reconf-machine.h"
#include "reconf.h"

#ifdef SVFF_FAULT_POINTS
/* svffd's fault points (daemon/fault.c) need its log: not here. */
void fault_point(const char *name, unsigned n) {
        (void) name;
        (void) n;
}
bool fault_inject(const char *name, unsigned n) {
        (void) name;
        (void) n;
        return false;
}
void fault_set_stop(void (*fn)(void *userdata), void *userdata) {
        (void) fn;
        (void) userdata;
}
#endif

#define PF "0000:01:00.0"
#define MAX_VF 8
#define MAX_ITEMS 4
#define MAX_EVENTS 256
#define MAX_RESTARTS 5

enum step_kind { K_QUIESCE, K_NUMVFS0, K_NUMVFSN, K_PROVISION, K_BIND, K_RESTORE, K_COMMIT, K_RELEASE,
                 K_REMOVE, K_FLASH, K_RESCAN, K_IDENTITY, K_BINDPF, _K_MAX };
#define K_RECONF_MAX K_REMOVE
enum failure { F_NONE, F_ERROR, F_TIMEOUT, F_PARTIAL, F_LOST_DOMAIN, F_LOST_LIBVIRT, F_CRASH, F_CRASH_AFTER };
enum order { O_SYNC, O_FIFO, O_LIFO };

static const char *const kind_names[] = { "quiesce", "numvfs-0", "numvfs-N", "provision", "bind", "restore",
                                          "commit", "class-release", "remove-pf", "flash", "rescan", "check-identity", "bind-pf" };
static const char *const failure_names[] = { "none", "error", "timeout", "partial", "lost-domain", "lost-libvirt",
                                             "crash", "crash-after-commit" };
static const char *const order_names[] = { "sync", "fifo", "lifo" };

enum drv { DRV_NATIVE, DRV_VFIO };

struct dev {
        bool present, paused;
        unsigned index;
};

struct record {
        bool present;
        char vf[SVFF_PCI_ADDR_STRLEN];
        enum svff_assign_state state;
        enum svff_pause_mode mode;
};

enum ev_type { EV_QUIESCE, EV_NUMVFS, EV_PROVISION, EV_BIND, EV_RESTORE, EV_FORGET, EV_COMMIT, EV_PF };

struct event {
        enum ev_type type;
        size_t item;            /* or VF index */
        int r;
        enum svff_pause_mode mode;
        int n_vfs;
        unsigned numvfs;
        unsigned layout;        /* of the VFs the count change made */
        bool lost_libvirt;
        struct json_object *state;
        enum reconf_pf_op op;
};

struct world {
        /* sysfs */
        unsigned numvfs;
        bool pf_gone, pf_unbound;       /* off the bus; without its driver */
        unsigned flashes;               /* hook runs that completed */
        enum drv drv[MAX_VF];
        /* libvirt: one device per assignment, in its domain */
        struct dev dev[MAX_ITEMS];
        bool domain_gone[MAX_ITEMS];    /* by item: its domain */
        bool native[MAX_ITEMS];         /* its domain offers the device pause */
        /* the device class: what it set up for each item's VF undone
         * (release_class), and a release that failed */
        bool class_released[MAX_ITEMS];
        bool class_release_failed[MAX_ITEMS];
        bool lost_setup[MAX_ITEMS];     /* its VF removed, its class setup in place */
        bool libvirt_gone;
        /* the store, as committed */
        char *journal;
        bool image_unknown;             /* a reconf took the PF as it came back */
        struct record rec[MAX_ITEMS];
        char bad[512];                  /* the first invariant broken on the way */

        /* this run */
        const struct svff_reconf_plan *plan;
        struct reconf_machine *rm;
        enum order order;
        struct event ev[MAX_EVENTS];
        size_t n_ev;
        unsigned n_delivered;
        bool crashed, finished;
        /* the injection */
        enum step_kind fail_kind;
        enum failure fail;
        unsigned fail_at;               /* which occurrence of fail_kind, 1-based */
        unsigned seen[_K_MAX];
        unsigned stop_at;               /* stop before delivering this completion (1-based), 0: none */
        bool stop_now;
        /* what the fake saw done, as log tokens, delivered ones only */
        char done_log[64][32];
        size_t n_done;
        /* the kernel refusing the new count once, on a restart; then
         * (lose) libvirt gone at the rollback's first restore */
        bool refuse_recovery, refused_recovery;
        bool lose_after_refusal, lost_after_refusal;
        /* the first count change loses VF gap (>= 0) as it comes: the
         * kernel lists no virtfn<gap>, the VFs around it are there */
        int gap;
        bool gap_done;
        bool missing[MAX_VF];
        /* each count change that makes VFs puts them at other host
         * addresses (layout: which) */
        bool move;
        unsigned layout;
        /* the class state on each VF: the item whose assignment's state
         * provision set up there, or -1 (none, or the policy's only) */
        int cls_on[MAX_VF];
        /* the hook in a systemd unit of its own (ops flash_unit and
         * flash_resume): its name, whether svffd stops while it runs,
         * its result, how often a start took it up */
        bool in_unit, unit_stop;
        int unit_r;
        char unit_name[64];
        unsigned n_units, unit_resumed;
};

/* VF index's host address in layout (0: where the VFs were first). */
static const char *vf_addr_at(unsigned layout, unsigned index) {
        static char buf[MAX_VF][32];

        snprintf(buf[index], sizeof(buf[index]), "0000:01:%02x.%u", 1 + layout, index);
        return buf[index];
}

static const char *vf_addr(unsigned index) {
        return vf_addr_at(0, index);
}

static void bad(struct world *w, const char *fmt, ...) _printf_(2, 3);
static void bad(struct world *w, const char *fmt, ...) {
        va_list ap;

        if (*w->bad)
                return;
        va_start(ap, fmt);
        vsnprintf(w->bad, sizeof(w->bad), fmt, ap);
        va_end(ap);
}

static void done_token(struct world *w, const char *fmt, ...) _printf_(2, 3);
static void done_token(struct world *w, const char *fmt, ...) {
        va_list ap;

        ck_assert_uint_lt(w->n_done, ELEMENTSOF(w->done_log));
        va_start(ap, fmt);
        vsnprintf(w->done_log[w->n_done++], sizeof(w->done_log[0]), fmt, ap);
        va_end(ap);
}

/* Whether this occurrence of kind is the one to fail. */
static enum failure inject(struct world *w, enum step_kind kind) {
        w->seen[kind]++;
        if (w->fail != F_NONE && w->fail_kind == kind && w->seen[kind] == w->fail_at)
                return w->fail;
        return F_NONE;
}

static void lose_domain(struct world *w, size_t item) {
        const char *uuid = w->plan->items[item].a.uuid;

        for (size_t i = 0; i < w->plan->n_items; i++)
                if (streq(w->plan->items[i].a.uuid, uuid)) {
                        w->domain_gone[i] = true;
                        w->dev[i].present = false;
                }
}

static void deliver(struct world *w, struct event *e);

static void push(struct world *w, struct event e) {
        if (w->order == O_SYNC) {
                deliver(w, &e);
                return;
        }
        ck_assert_uint_lt(w->n_ev, MAX_EVENTS);
        w->ev[w->n_ev++] = e;
}

/* ---- the fake ops ---- */

static bool holds_vf(struct world *w, unsigned index, size_t except) {
        for (size_t i = 0; i < w->plan->n_items; i++)
                if (i != except && w->dev[i].present && w->dev[i].index == index)
                        return true;
        return false;
}

static int f_quiesce(void *userdata, const size_t *items, size_t n) {
        struct world *w = userdata;
        enum failure f = inject(w, K_QUIESCE);

        if (f == F_LOST_DOMAIN)
                lose_domain(w, items[0]);
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = true;
        for (size_t k = 0; k < n; k++) {
                size_t i = items[k];
                const struct svff_reconf_item *it = &w->plan->items[i];
                struct event e = { .type = EV_QUIESCE, .item = i };

                if (w->libvirt_gone)
                        e.r = -ENOTCONN, e.lost_libvirt = true;
                else if (w->domain_gone[i])
                        e.r = it->fate == SVFF_RECONF_RELEASED ? 0 : -ENOENT, e.mode = SVFF_PAUSE_DETACH;
                else if ((f == F_ERROR && k == 0) || (f == F_PARTIAL && k > 0))
                        e.r = -EIO;
                else if (f == F_TIMEOUT && k == 0)
                        e.r = -ETIMEDOUT;       /* the guest keeps the device */
                else if (f == F_PARTIAL && n == 1)
                        e.r = -EIO;
                else if (it->fate == SVFF_RECONF_SURVIVES && w->plan->mode == SVFF_RECONF_PAUSE && w->native[i]) {
                        w->dev[i].paused = true;
                        e.mode = SVFF_PAUSE_NATIVE;
                } else {
                        w->dev[i].present = false;
                        e.mode = SVFF_PAUSE_DETACH;
                }
                push(w, e);
        }
        return 0;
}

/* A count change, through 0: every VF goes. */
static void through_zero(struct world *w, unsigned n) {
        /* A natively paused device let go of its VF (that is what the
         * device pause is for). */
        for (size_t i = 0; i < w->plan->n_items; i++)
                if (w->dev[i].present && !w->dev[i].paused && w->dev[i].index < w->numvfs)
                        bad(w, "numvfs %u destroyed VF %u while domain '%s' held it", n, w->dev[i].index,
                            w->plan->items[i].a.domain);
        for (unsigned k = 0; k < MAX_VF; k++) {
                w->drv[k] = DRV_NATIVE;
                w->missing[k] = false;
                w->cls_on[k] = -1;      /* disabling the VFs wipes it */
        }
        for (size_t i = 0; i < w->plan->n_items; i++)
                if (w->plan->items[i].fate == SVFF_RECONF_RELEASED && w->plan->items[i].index < w->numvfs &&
                    !w->class_released[i] && !w->class_release_failed[i])
                        w->lost_setup[i] = true;
}

static int f_set_numvfs(void *userdata, unsigned n) {
        struct world *w = userdata;
        enum failure f = inject(w, n == 0 ? K_NUMVFS0 : K_NUMVFSN);
        struct event e = { .type = EV_NUMVFS, .numvfs = n };

        if (w->pf_gone || (w->pf_unbound && n != w->numvfs)) {
                /* The kernel: no PF to write to, or ENOENT without a
                 * driver (and a BUG after an orphaning removal). */
                bad(w, "numvfs %u written to PF %s %s", n, PF, w->pf_gone ? "off the bus" : "without its driver");
                e.r = w->pf_gone ? -ENODEV : -ENOENT;
                e.n_vfs = (int) w->numvfs;
                e.layout = w->layout;
                push(w, e);
                return 0;
        }

        if (f == F_LOST_DOMAIN)
                lose_domain(w, 0);
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = e.lost_libvirt = true;
        if (w->refuse_recovery && !w->refused_recovery && reconf_machine_recovery(w->rm) &&
            !reconf_machine_rollback(w->rm) && n == w->plan->to && n != w->numvfs) {
                /* A restart's write of the new count: the kernel takes
                 * the 0 it goes through, then refuses the count (ENOMEM
                 * from the driver), leaving the PF without VFs. */
                through_zero(w, n);
                w->numvfs = 0;
                w->refused_recovery = true;
                e.r = -ENOMEM;
                e.n_vfs = 0;
                e.layout = w->layout;
                push(w, e);
                return 0;
        }
        if (f == F_TIMEOUT) {
                e.r = -ETIMEDOUT;       /* still pending: nothing changed yet */
                e.n_vfs = -1;
        } else if (f == F_ERROR) {
                e.r = -EIO;             /* refused: the count stays */
                e.n_vfs = (int) w->numvfs;
        } else {
                unsigned make = f == F_PARTIAL && n > 0 ? n - 1 : n;

                if (w->numvfs != n) {
                        through_zero(w, n);
                        w->numvfs = make;
                        if (w->move && make > 0)
                                w->layout++;
                        if (w->gap >= 0 && !w->gap_done && (unsigned) w->gap < make) {
                                w->missing[w->gap] = true;
                                w->gap_done = true;
                        }
                }
                e.r = f == F_PARTIAL && n > 0 ? -ENOSPC : 0;
                e.n_vfs = (int) w->numvfs;
        }
        e.layout = w->layout;
        push(w, e);
        return 0;
}

static int f_provision(void *userdata, const unsigned *indexes, size_t n, struct json_object *const *cls) {
        struct world *w = userdata;
        enum failure f = inject(w, K_PROVISION);

        if (f == F_LOST_DOMAIN)
                lose_domain(w, 0);
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = true;
        for (size_t k = 0; k < n; k++) {
                struct event e = { .type = EV_PROVISION, .item = indexes[k], .lost_libvirt = f == F_LOST_LIBVIRT };

                if (indexes[k] >= w->numvfs)
                        e.r = -ENODEV;
                else if (w->missing[indexes[k]]) {
                        bad(w, "VF %u provisioned, which the kernel does not list", indexes[k]);
                        e.r = -ENODEV;
                } else if ((f == F_ERROR && k == 0) || (f == F_PARTIAL && k % 2 == 1))
                        e.r = -EIO;
                else if (f == F_TIMEOUT && k == 0)
                        e.r = -ETIMEDOUT;
                else {
                        struct json_object *o;
                        int item = -1;

                        /* Set up again: a release before is undone. */
                        for (size_t i = 0; i < w->plan->n_items; i++)
                                if (w->plan->items[i].index == indexes[k])
                                        w->class_released[i] = w->class_release_failed[i] = w->lost_setup[i] = false;
                        /* The class state it is handed is what the VF
                         * carries now: an assignment's only on that
                         * assignment's own VF. */
                        if (cls && cls[k] && json_object_object_get_ex(cls[k], "item", &o))
                                item = json_object_get_int(o);
                        if (item >= 0 && ((size_t) item >= w->plan->n_items ||
                                          w->plan->items[item].index != indexes[k]))
                                bad(w, "VF %u provisioned with the class state of item %d (VF %u)", indexes[k],
                                    item, (size_t) item < w->plan->n_items ? w->plan->items[item].index : 0);
                        w->cls_on[indexes[k]] = item;
                        /* Class state as a class would return it, kept
                         * verbatim by the machine: the assignment's it
                         * was made from, as set up on the VF. */
                        e.state = json_object_new_object();
                        if (item >= 0)
                                json_object_object_add(e.state, "item", json_object_new_int(item));
                        json_object_object_add(e.state, "provisioned", json_object_new_int64(indexes[k]));
                }
                push(w, e);
        }
        return 0;
}

static int f_bind(void *userdata, const unsigned *indexes, size_t n) {
        struct world *w = userdata;
        enum failure f = inject(w, K_BIND);

        if (f == F_LOST_DOMAIN)
                lose_domain(w, 0);
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = true;
        for (size_t k = 0; k < n; k++) {
                struct event e = { .type = EV_BIND, .item = indexes[k], .lost_libvirt = f == F_LOST_LIBVIRT };

                if (indexes[k] >= w->numvfs)
                        e.r = -ENODEV;
                else if (w->missing[indexes[k]]) {
                        bad(w, "VF %u bound, which the kernel does not list", indexes[k]);
                        e.r = -ENODEV;
                } else if ((f == F_ERROR && k == 0) || (f == F_PARTIAL && k % 2 == 1))
                        e.r = -EIO;
                else if (f == F_TIMEOUT && k == 0)
                        e.r = -ETIMEDOUT;
                else
                        w->drv[indexes[k]] = DRV_VFIO;
                push(w, e);
        }
        return 0;
}

static int f_restore(void *userdata, const size_t *items, size_t n) {
        struct world *w = userdata;
        enum failure f = inject(w, K_RESTORE);

        if (f == F_LOST_DOMAIN)
                lose_domain(w, items[0]);
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = true;
        if (w->lose_after_refusal && w->refused_recovery && !w->lost_after_refusal) {
                w->libvirt_gone = true;
                w->lost_after_refusal = true;
        }
        for (size_t k = 0; k < n; k++) {
                size_t i = items[k];
                const struct reconf_item *s = reconf_machine_item(w->rm, i);
                unsigned index = w->plan->items[i].index;
                struct event e = { .type = EV_RESTORE, .item = i };

                if (w->libvirt_gone)
                        e.r = -ENOTCONN, e.lost_libvirt = true;
                else if (w->domain_gone[i])
                        e.r = -ENOENT;
                else if ((f == F_ERROR && k == 0) || (f == F_PARTIAL && k > 0) || (f == F_PARTIAL && n == 1))
                        e.r = -EIO;
                else if (f == F_TIMEOUT && k == 0)
                        e.r = -ETIMEDOUT;
                else if (s->mode == SVFF_PAUSE_NATIVE) {
                        if (!w->dev[i].present)
                                e.r = -ENODEV;
                        else
                                w->dev[i].paused = false;
                } else if (s->mode == SVFF_PAUSE_NONE && w->dev[i].present)
                        w->dev[i].paused = false;       /* found there: unpaused */
                else if (index >= w->numvfs || w->missing[index])
                        e.r = -ENODEV;
                else if (w->drv[index] != DRV_VFIO)
                        e.r = -EBUSY;   /* as restore_one refuses */
                else if (!w->dev[i].present) {
                        /* Re-attach; one already there counts as back. */
                        if (!streq(s->vf, vf_addr_at(w->layout, index)))
                                bad(w, "VF %u given back to domain '%s' at %s, its address is %s", index,
                                    w->plan->items[i].a.domain, s->vf, vf_addr_at(w->layout, index));
                        if (w->cls_on[index] != (int) i)
                                bad(w, "VF %u given back to domain '%s' with the class state of %s", index,
                                    w->plan->items[i].a.domain,
                                    w->cls_on[index] < 0 ? "no assignment" : w->plan->items[w->cls_on[index]].a.domain);
                        if (holds_vf(w, index, i))
                                bad(w, "VF %u given to domain '%s' while another domain holds it", index,
                                    w->plan->items[i].a.domain);
                        if (w->class_released[i])
                                bad(w, "VF %u given back to domain '%s' after its device class's release", index,
                                    w->plan->items[i].a.domain);
                        w->dev[i] = (struct dev) { .present = true, .index = index };
                }
                if (e.r >= 0 && w->drv[index] != DRV_VFIO && w->dev[i].present && !w->dev[i].paused)
                        bad(w, "domain '%s' has VF %u back on another driver than vfio-pci",
                            w->plan->items[i].a.domain, index);
                push(w, e);
        }
        return 0;
}

/* The device class's release of released items' VFs: while the VF
 * exists, off its domain (a VF gone with its setup undone is what the
 * checks require). F_CRASH: svffd killed before the first had any
 * effect; F_CRASH_AFTER: after it. */
static int f_release_class(void *userdata, const size_t *items, size_t n, struct json_object *const *cls) {
        struct world *w = userdata;
        enum failure f = inject(w, K_RELEASE);

        if (f == F_CRASH) {
                w->crashed = true;
                return 0;
        }
        for (size_t k = 0; k < n; k++) {
                size_t i = items[k];
                struct event e = { .type = EV_FORGET, .item = i };

                ck_assert_ptr_nonnull(cls[k]);
                ck_assert_int_eq(json_object_get_int(json_object_object_get(cls[k], "item")), (int) i);
                if (w->plan->items[i].fate != SVFF_RECONF_RELEASED)
                        bad(w, "the device class's release run for item %zu, which survives", i);
                if (w->dev[i].present)
                        bad(w, "the device class's release of item %zu run while domain '%s' holds its VF", i,
                            w->plan->items[i].a.domain);
                if (w->plan->items[i].index >= w->numvfs) {
                        /* Again after a restart: nothing left to undo.
                         * Else the VF went with its setup in place. */
                        if (!w->class_released[i] && !w->class_release_failed[i])
                                bad(w, "the device class's release of item %zu run after its VF was gone", i);
                } else if ((f == F_ERROR && k == 0) || (f == F_PARTIAL && k > 0) || (f == F_TIMEOUT && k == 0)) {
                        e.r = -EIO;
                        w->class_release_failed[i] = true;
                } else {
                        w->class_released[i] = true;
                        w->cls_on[w->plan->items[i].index] = -1;
                }
                if (f == F_CRASH_AFTER) {
                        w->crashed = true;
                        return 0;
                }
                push(w, e);
        }
        return 0;
}

/* A reprogram's PF steps. F_CRASH: svffd killed while the step runs,
 * before it had any effect; F_CRASH_AFTER: once it had (the hook wrote
 * the image). */
static int f_pf(struct world *w, enum reconf_pf_op op, enum step_kind kind) {
        enum failure f = inject(w, kind);
        struct event e = { .type = EV_PF, .op = op };

        if (f == F_CRASH) {
                w->crashed = true;
                return 0;
        }
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = e.lost_libvirt = true;
        if (f == F_LOST_DOMAIN)
                lose_domain(w, 0);
        if (f == F_ERROR || f == F_PARTIAL)
                e.r = op == RECONF_PF_IDENTITY ? -EPROTO : -EIO;
        else if (f == F_TIMEOUT)
                e.r = -ETIMEDOUT;
        switch (op) {
        case RECONF_PF_REMOVE:
                if (w->numvfs > 0)
                        bad(w, "PF removed with %u VFs enabled", w->numvfs);
                if (e.r >= 0) {
                        w->pf_unbound = true;
                        w->pf_gone = true;
                } else
                        w->pf_unbound = true;   /* unbound, then the removal failed */
                break;
        case RECONF_PF_FLASH:
                if (!w->pf_gone)
                        bad(w, "flash hook run with PF %s on the bus", PF);
                if (e.r >= 0)
                        w->flashes++;
                break;
        case RECONF_PF_RESCAN:
                if (e.r >= 0) {
                        w->pf_gone = false;
                        w->pf_unbound = true;   /* back; its driver is bind_pf's to check */
                }
                break;
        case RECONF_PF_IDENTITY:
                if (w->pf_gone)
                        bad(w, "identity checked with PF %s off the bus", PF);
                break;
        case RECONF_PF_BIND:
        default:
                if (w->pf_gone)
                        bad(w, "driver bound with PF %s off the bus", PF);
                if (e.r >= 0)
                        w->pf_unbound = false;
                break;
        }
        if (f == F_CRASH_AFTER) {
                w->crashed = true;
                return 0;
        }
        push(w, e);
        return 0;
}

static int f_remove_pf(void *userdata) {
        return f_pf(userdata, RECONF_PF_REMOVE, K_REMOVE);
}

/* the file as the PF was removed, as the ops tell it */
#define IMAGE_BEFORE "{\"path\":\"/images/new.bit\",\"dev\":1,\"ino\":7,\"size\":9,\"mtime_nsec\":2}"

static int f_flash(void *userdata, const char *image) {
        struct world *w = userdata;

        ck_assert_str_eq(image, "/images/new.bit");
        if (w->in_unit) {
                const char *unit = reconf_machine_flash_unit(w->rm);
                char *journaled = w->journal ? strstr(w->journal, "\"flash_unit\"") : NULL;

                ck_assert_msg(unit && streq(unit, w->unit_name), "the flash runs in '%s', not the unit named for it",
                              strna(unit));
                /* Named in the journal before the hook starts. */
                ck_assert_msg(journaled && strstr(journaled, w->unit_name), "flash unit '%s' not journaled",
                              w->unit_name);
        }
        if (w->in_unit && w->unit_stop) {
                /* svffd stops; the unit goes on without it. */
                if (!w->pf_gone)
                        bad(w, "flash hook run with PF %s on the bus", PF);
                push(w, (struct event) { .type = EV_PF, .op = RECONF_PF_FLASH, .r = -EINPROGRESS });
                return 0;
        }
        return f_pf(userdata, RECONF_PF_FLASH, K_FLASH);
}

static int f_flash_unit(void *userdata, char **ret) {
        struct world *w = userdata;

        if (!w->in_unit) {
                *ret = NULL;
                return 0;
        }
        snprintf(w->unit_name, sizeof(w->unit_name), "svff-flash-%s-%u.service", PF, ++w->n_units);
        *ret = strdup(w->unit_name);
        return *ret ? 0 : -ENOMEM;
}

static int f_flash_resume(void *userdata, const char *unit) {
        struct world *w = userdata;

        ck_assert_str_eq(unit, w->unit_name);
        /* Taken up after a restart: the image, and the file as it was
         * before the flash, from the journal. */
        {
                _cleanup_(json_object_putp) struct json_object *want = json_tokener_parse(IMAGE_BEFORE);

                ck_assert_str_eq(strna(reconf_machine_image(w->rm)), "/images/new.bit");
                ck_assert_msg(json_object_equal(reconf_machine_image_before(w->rm), want),
                              "the image before the flash, taken up: %s",
                              json_object_to_json_string(reconf_machine_image_before(w->rm)));
        }
        w->unit_resumed++;
        if (!w->pf_gone)
                bad(w, "a flash taken up with PF %s on the bus", PF);
        push(w, (struct event) { .type = EV_PF, .op = RECONF_PF_FLASH, .r = w->unit_r });
        return 0;
}

static int f_rescan_wait(void *userdata) {
        return f_pf(userdata, RECONF_PF_RESCAN, K_RESCAN);
}

static int f_check_identity(void *userdata, struct json_object *ids, unsigned numvfs) {
        struct world *w = userdata;

        ck_assert_uint_eq(numvfs, w->plan->to);
        ck_assert_ptr_nonnull(ids);
        ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(ids, 0)), "10ee:903f");
        return f_pf(userdata, RECONF_PF_IDENTITY, K_IDENTITY);
}

static int f_bind_pf(void *userdata) {
        return f_pf(userdata, RECONF_PF_BIND, K_BINDPF);
}

#define IMAGE_IDENTITY "{\"path\":\"/images/new.bit\",\"dev\":1,\"ino\":7,\"size\":9,\"mtime_nsec\":3}"

static void apply_commit(struct world *w, struct json_object *journal) {
        struct json_object *rp, *id;

        /* Which file the hook wrote goes with the reprogram from the
         * completed flash on, through every restart; it is gone while a
         * flash may run, and a reconf that takes the PF without a flash
         * has none: the store never records an image the device may not
         * hold. */
        if (journal && json_object_object_get_ex(journal, "reprogram", &rp)) {
                bool has = json_object_object_get_ex(rp, "image_identity", &id), flashed = false;
                const char *phase = NULL;

                (void) svff_json_get_bool(rp, "flashed", &flashed);
                (void) svff_json_get_string(journal, "phase", &phase);
                if (flashed && !has && !w->image_unknown)
                        bad(w, "the journal says flashed without the image's identity");
                if (has && (w->flashes == 0 || w->image_unknown || (phase && (streq(phase, "flash") ||
                                                                              streq(phase, "remove")))))
                        bad(w, "the journal has an image identity in phase %s, %u flash(es) done%s", strna(phase),
                            w->flashes, w->image_unknown ? ", the PF taken as it came back" : "");
                if (has) {
                        _cleanup_(json_object_putp) struct json_object *want = json_tokener_parse(IMAGE_IDENTITY);

                        if (!json_object_equal(id, want))
                                bad(w, "the journal's image identity changed: %s", json_object_to_json_string(id));
                }
                /* The file as the PF left the bus goes with the flash
                 * (its result may be taken up after a restart), and only
                 * with it. */
                if (json_object_object_get_ex(rp, "image_before", &id)) {
                        _cleanup_(json_object_putp) struct json_object *want = json_tokener_parse(IMAGE_BEFORE);

                        if (!phase || (!streq(phase, "flash") && !streq(phase, "interrupted")))
                                bad(w, "the journal has the image before the flash in phase %s", strna(phase));
                        if (!json_object_equal(id, want))
                                bad(w, "the journal's image before the flash changed: %s",
                                    json_object_to_json_string(id));
                } else if (phase && streq(phase, "flash") && !w->image_unknown)
                        bad(w, "the journal is in phase flash without the image before it");
        }
        free(w->journal);
        w->journal = journal ? strdup(json_object_to_json_string(journal)) : NULL;
        for (size_t i = 0; i < w->plan->n_items; i++) {
                struct reconf_record rec;

                reconf_machine_record(w->rm, i, &rec);
                if (rec.action == RECONF_RECORD_REMOVE)
                        w->rec[i].present = false;
                else if (rec.action == RECONF_RECORD_SET && w->rec[i].present) {
                        snprintf(w->rec[i].vf, sizeof(w->rec[i].vf), "%s", rec.vf);
                        w->rec[i].state = rec.state;
                        w->rec[i].mode = rec.mode;
                } else if (w->rec[i].present)
                        /* Kept, but it follows its VF. */
                        snprintf(w->rec[i].vf, sizeof(w->rec[i].vf), "%s", rec.vf);
        }
}

static int f_commit(void *userdata, struct json_object *journal) {
        struct world *w = userdata;
        enum failure f = inject(w, K_COMMIT);
        struct event e = { .type = EV_COMMIT };

        if (f == F_CRASH || f == F_CRASH_AFTER) {
                /* SIGKILL during the write (nothing durable) or right
                 * after it: the machine never hears back. */
                if (f == F_CRASH_AFTER)
                        apply_commit(w, journal);
                w->crashed = true;
                return 0;
        }
        if (f == F_LOST_LIBVIRT)
                w->libvirt_gone = e.lost_libvirt = true;
        if (f == F_LOST_DOMAIN)
                lose_domain(w, 0);
        if (f == F_ERROR || f == F_PARTIAL || f == F_TIMEOUT)
                e.r = -EIO;
        else
                apply_commit(w, journal);
        push(w, e);
        return 0;
}

static void f_finished(void *userdata) {
        struct world *w = userdata;

        w->finished = true;
}

static const struct reconf_ops fake_ops = {
        .quiesce = f_quiesce,
        .set_numvfs = f_set_numvfs,
        .provision = f_provision,
        .bind = f_bind,
        .restore = f_restore,
        .release_class = f_release_class,
        .commit = f_commit,
        .remove_pf = f_remove_pf,
        .flash = f_flash,
        .rescan_wait = f_rescan_wait,
        .check_identity = f_check_identity,
        .bind_pf = f_bind_pf,
        .finished = f_finished,
};

static const struct reconf_ops unit_ops = {
        .quiesce = f_quiesce,
        .set_numvfs = f_set_numvfs,
        .provision = f_provision,
        .bind = f_bind,
        .restore = f_restore,
        .release_class = f_release_class,
        .commit = f_commit,
        .remove_pf = f_remove_pf,
        .flash = f_flash,
        .flash_unit = f_flash_unit,
        .flash_resume = f_flash_resume,
        .rescan_wait = f_rescan_wait,
        .check_identity = f_check_identity,
        .bind_pf = f_bind_pf,
        .finished = f_finished,
};

static void deliver(struct world *w, struct event *e) {
        struct reconf_machine *rm = w->rm;
        const char *vfs[MAX_VF];

        if (w->crashed)
                return;
        w->n_delivered++;
        if (w->stop_at && w->n_delivered == w->stop_at)
                reconf_machine_stop(rm, w->stop_now);
        if (e->lost_libvirt)
                reconf_machine_lost_libvirt(rm);
        switch (e->type) {
        case EV_QUIESCE:
                if (e->r >= 0)
                        done_token(w, "q%zu", e->item);
                reconf_machine_quiesce_done(rm, e->item, e->r, e->mode, e->r < 0 ? "fake failure" : NULL);
                break;
        case EV_NUMVFS:
                /* By index, as the kernel's virtfn<k> links: none for
                 * a VF it does not list. */
                for (int k = 0; k < e->n_vfs; k++)
                        vfs[k] = w->missing[k] ? "" : vf_addr_at(e->layout, (unsigned) k);
                if (e->r >= 0)
                        done_token(w, "n%u", e->numvfs);
                reconf_machine_numvfs_done(rm, e->r, vfs, e->n_vfs, e->r < 0 ? "fake numvfs failure" : NULL);
                break;
        case EV_PROVISION:
                if (e->r >= 0)
                        done_token(w, "p%zu", e->item);
                reconf_machine_provision_done(rm, (unsigned) e->item, e->r, TAKE_PTR(e->state),
                                              e->r < 0 ? "fake provision failure" : NULL);
                break;
        case EV_BIND:
                if (e->r >= 0)
                        done_token(w, "b");
                reconf_machine_bind_done(rm, (unsigned) e->item, e->r, e->r < 0 ? "fake bind failure" : NULL);
                break;
        case EV_RESTORE:
                if (e->r >= 0)
                        done_token(w, "r%zu", e->item);
                reconf_machine_restore_done(rm, e->item, e->r, e->r >= 0 ? w->plan->items[e->item].a.guest_address
                                                                         : NULL,
                                            e->r < 0 ? "fake restore failure" : NULL);
                break;
        case EV_FORGET:
                reconf_machine_forget_done(rm, e->item, e->r, e->r < 0 ? "fake class release failure" : NULL);
                break;
        case EV_COMMIT:
                reconf_machine_commit_done(rm, e->r, e->r < 0 ? "fake commit failure" : NULL);
                break;
        case EV_PF:
                if (e->r >= 0)
                        done_token(w, "%s", reconf_pf_op_to_string(e->op));
                if (e->op == RECONF_PF_REMOVE && e->r >= 0) {
                        /* The ops tell which file the image is as the PF
                         * leaves the bus. */
                        struct json_object *id = json_tokener_parse(IMAGE_BEFORE);

                        reconf_machine_set_image_before(rm, id);
                        json_object_put(id);
                }
                if (e->op == RECONF_PF_FLASH && e->r >= 0) {
                        /* The ops tell which file the hook wrote. */
                        struct json_object *id = json_tokener_parse(IMAGE_IDENTITY);

                        reconf_machine_set_image_identity(rm, id);
                        json_object_put(id);
                }
                reconf_machine_pf_done(rm, e->op, e->r, e->r < 0 ? "fake PF step failure" : NULL);
                break;
        }
}

/* Delivers what is pending until the machine ends or the fake crashed. */
static void run_loop(struct world *w) {
        while (!w->crashed && w->n_ev > 0) {
                struct event e;

                if (w->order == O_FIFO) {
                        e = w->ev[0];
                        memmove(w->ev, w->ev + 1, (w->n_ev - 1) * sizeof(*w->ev));
                        w->n_ev--;
                } else
                        e = w->ev[--w->n_ev];
                deliver(w, &e);
        }
        for (size_t k = 0; k < w->n_ev; k++)
                json_object_put(w->ev[k].state);
        w->n_ev = 0;
}

/* ---- the checks ---- */

static int cmp_str(const void *a, const void *b) {
        return strcmp(a, b);
}

/* The executed-steps log, as the fake's tokens: it must be what the fake
 * saw done. */
static void check_log(struct world *w, const char *name) {
        struct json_object *log = reconf_machine_log(w->rm);
        char mine[64][32];
        size_t n = 0;

        for (size_t k = 0; k < json_object_array_length(log); k++) {
                struct json_object *s = json_object_array_get_idx(log, k);
                const char *action = NULL, *vf = NULL;
                unsigned numvfs = 0;

                ck_assert_int_ge(svff_json_get_string(s, "action", &action), 0);
                (void) svff_json_get_string(s, "vf", &vf);
                (void) svff_json_get_unsigned(s, "numvfs", &numvfs);
                if (streq(action, "pause") || streq(action, "detach") || streq(action, "release") ||
                    streq(action, "unpause") || streq(action, "reattach")) {
                        size_t i;

                        for (i = 0; i < w->plan->n_items; i++)
                                if (streq(w->plan->items[i].vf, vf))
                                        break;
                        ck_assert_msg(i < w->plan->n_items, "%s: logged step on unknown VF %s", name, strna(vf));
                        snprintf(mine[n++], sizeof(mine[0]), "%c%zu",
                                 streq(action, "unpause") || streq(action, "reattach") ? 'r' : 'q', i);
                } else if (streq(action, "numvfs"))
                        snprintf(mine[n++], sizeof(mine[0]), "n%u", numvfs);
                else if (streq(action, "bind"))
                        for (unsigned b = 0; b < numvfs; b++)
                                snprintf(mine[n++], sizeof(mine[0]), "b");
                else if (streq(action, "provision")) {
                        unsigned v = MAX_VF;

                        /* at the address of its layout then */
                        for (unsigned l = 0; v == MAX_VF && l <= w->layout; l++)
                                for (v = 0; v < MAX_VF; v++)
                                        if (streq(vf_addr_at(l, v), vf))
                                                break;
                        snprintf(mine[n++], sizeof(mine[0]), "p%u", v);
                } else if (streq(action, "remove_pf") || streq(action, "flash") || streq(action, "rescan") ||
                           streq(action, "check_identity") || streq(action, "bind_pf"))
                        /* A reprogram's PF step: its action is the token. */
                        snprintf(mine[n++], sizeof(mine[0]), "%s", action);
                ck_assert_uint_lt(n, 60);
        }
        qsort(mine, n, sizeof(mine[0]), cmp_str);
        qsort(w->done_log, w->n_done, sizeof(w->done_log[0]), cmp_str);
        {
                char a[1024] = "", b[1024] = "";

                for (size_t k = 0; k < n; k++)
                        strncat(strncat(a, mine[k], sizeof(a) - strlen(a) - 2), " ", sizeof(a) - strlen(a) - 1);
                for (size_t k = 0; k < w->n_done; k++)
                        strncat(strncat(b, w->done_log[k], sizeof(b) - strlen(b) - 2), " ", sizeof(b) - strlen(b) - 1);
                ck_assert_msg(streq(a, b), "%s: the log says [%s], the fake saw [%s]", name, a, b);
        }
}

/* What the machine reports per assignment is the fake's truth. */
static void check_outcome(struct world *w, const char *name) {
        for (size_t i = 0; i < w->plan->n_items; i++) {
                bool has = w->dev[i].present && !w->dev[i].paused && !w->domain_gone[i];
                bool says = reconf_machine_item_has_vf(w->rm, i);

                if (w->plan->items[i].a.state != SVFF_ASSIGN_ATTACHED)
                        continue;
                ck_assert_msg(has == says, "%s: item %zu ('%s'): the outcome says %s the VF, the domain %s it", name,
                              i, w->plan->items[i].a.domain, says ? "has" : "lacks", has ? "has" : "lacks");
        }
        if (reconf_machine_result(w->rm, NULL) == RECONF_OK)
                for (size_t i = 0; i < w->plan->n_items; i++)
                        ck_assert_msg(w->plan->items[i].fate != SVFF_RECONF_SURVIVES ||
                                      reconf_machine_item_has_vf(w->rm, i),
                                      "%s: success reported, item %zu lacks its VF", name, i);
}

/* The state, after any run: nothing doubled, destroyed while held, on
 * the wrong driver, or lost. final: no journal left to resume. */
static void check_world(struct world *w, const char *name, bool final) {
        ck_assert_msg(!*w->bad, "%s: %s", name, w->bad);
        for (size_t i = 0; i < w->plan->n_items; i++) {
                const struct svff_reconf_item *it = &w->plan->items[i];
                const struct dev *d = &w->dev[i];
                const struct record *r = &w->rec[i];

                if (d->present) {
                        ck_assert_msg(!holds_vf(w, d->index, i), "%s: VF %u in two domains", name, d->index);
                        ck_assert_msg(d->paused || (d->index < w->numvfs && !w->missing[d->index]),
                                      "%s: domain '%s' holds VF %u, which does not exist", name, it->a.domain,
                                      d->index);
                        ck_assert_msg(d->paused || w->drv[d->index] == DRV_VFIO,
                                      "%s: domain '%s' holds VF %u on another driver", name, it->a.domain, d->index);
                        /* A device in a domain is recorded for it: else the
                         * pool could hand the VF out again. */
                        ck_assert_msg(r->present, "%s: domain '%s' holds VF %u with no record", name, it->a.domain,
                                      d->index);
                        /* At its address now; a natively paused one may
                         * lag until the run ends (a restart finds its
                         * record by index). */
                        if (!d->paused || final)
                                ck_assert_msg(streq(r->vf, vf_addr_at(w->layout, d->index)),
                                              "%s: item %zu recorded at %s, holds VF %u at %s", name, i, r->vf,
                                              d->index, vf_addr_at(w->layout, d->index));
                        /* With its own assignment's class state, no
                         * other's. */
                        if (!d->paused)
                                ck_assert_msg(w->cls_on[d->index] == (int) i,
                                              "%s: domain '%s' holds VF %u with the class state of %s", name,
                                              it->a.domain, d->index,
                                              w->cls_on[d->index] < 0 ? "no assignment"
                                                                      : w->plan->items[w->cls_on[d->index]].a.domain);
                }
                /* A record follows its VF: at the address its index has
                 * now, once nothing is left to resume. */
                if (final && r->present && it->index < w->numvfs && !w->missing[it->index])
                        ck_assert_msg(streq(r->vf, vf_addr_at(w->layout, it->index)),
                                      "%s: item %zu (VF %u) recorded at %s, the VF is at %s", name, i, it->index,
                                      r->vf, vf_addr_at(w->layout, it->index));
                if (!final || it->a.state != SVFF_ASSIGN_ATTACHED)
                        continue;
                if (d->present && !d->paused)
                        /* Detaching: the guest never let go (a timed-out
                         * detach), which the record says. */
                        ck_assert_msg(r->state == SVFF_ASSIGN_ATTACHED || r->state == SVFF_ASSIGN_DETACHING,
                                      "%s: item %zu is in its domain but recorded %s", name, i,
                                      svff_assign_state_to_string(r->state));
                else if (d->present)
                        ck_assert_msg(r->state == SVFF_ASSIGN_PAUSED && r->mode == SVFF_PAUSE_NATIVE,
                                      "%s: item %zu is natively paused but recorded %s", name, i,
                                      svff_assign_state_to_string(r->state));
                else if (r->present)
                        ck_assert_msg(r->state != SVFF_ASSIGN_ATTACHED || w->domain_gone[i],
                                      "%s: item %zu is off its domain but recorded attached", name, i);
                else
                {
                        /* Neither in its domain nor recorded: only a VF
                         * released by a reconf that went through, and
                         * its device class's setup undone (or the
                         * failure to reported). */
                        ck_assert_msg(it->fate == SVFF_RECONF_RELEASED && w->numvfs == w->plan->to,
                                      "%s: the assignment of item %zu ('%s') is lost", name, i, it->a.domain);
                        ck_assert_msg((w->class_released[i] || w->class_release_failed[i]) && !w->lost_setup[i],
                                      "%s: item %zu was released without its device class's release", name, i);
                }
        }
}

/* ---- scenarios ---- */

struct scenario {
        const char *name;
        unsigned from, to;
        enum svff_reconf_mode mode;
        bool force;
        bool reprogram;
};

static const struct scenario scenarios[] = {
        { "4->4 pause", 4, 4, SVFF_RECONF_PAUSE, false, false },
        { "4->2 detach force", 4, 2, SVFF_RECONF_DETACH, true, false },
        { "3->4 pause", 3, 4, SVFF_RECONF_PAUSE, false, false },
        { "reprogram 4->4 pause", 4, 4, SVFF_RECONF_PAUSE, false, true },
        { "reprogram 4->2 detach force", 4, 2, SVFF_RECONF_DETACH, true, true },
        { "reprogram 3->4 pause", 3, 4, SVFF_RECONF_PAUSE, false, true },
};

/* How a run starts: new, svffd's own recovery, or the operator's
 * reprogram (flash again) or reconf of an interrupted reprogram. */
enum start { S_NEW, S_RECOVER, S_REPROGRAM, S_RECONF };

/* Three domains: d1 (VF 0, native pause), d2 (VFs 1 and 2), d3 (VF 3,
 * when the PF has it). */
static size_t make_items(const struct scenario *sc, struct svff_reconf_item *items) {
        static const char *const uuids[] = { "11111111-1111-1111-1111-111111111111",
                                             "22222222-2222-2222-2222-222222222222",
                                             "22222222-2222-2222-2222-222222222222",
                                             "33333333-3333-3333-3333-333333333333" };
        static const char *const names[] = { "d1", "d2", "d2", "d3" };
        size_t n = sc->from < MAX_ITEMS ? sc->from : MAX_ITEMS;

        for (size_t i = 0; i < n; i++) {
                struct svff_reconf_item *it = &items[i];

                *it = (struct svff_reconf_item) { .index = (unsigned) i };
                snprintf(it->vf, sizeof(it->vf), "%s", vf_addr((unsigned) i));
                snprintf(it->a.uuid, sizeof(it->a.uuid), "%s", uuids[i]);
                snprintf(it->a.domain, sizeof(it->a.domain), "%s", names[i]);
                snprintf(it->a.guest_address, sizeof(it->a.guest_address), "0000:0%zu:00.0", i + 5);
                snprintf(it->a.alias, sizeof(it->a.alias), "ua-svff-%zu", i);
                it->a.live = true;
                it->a.config = true;
                it->a.state = SVFF_ASSIGN_ATTACHED;
        }
        return n;
}

static void world_init(struct world *w, const struct scenario *sc, const struct svff_reconf_plan *p) {
        *w = (struct world) { .numvfs = sc->from, .gap = -1 };
        for (unsigned k = 0; k < MAX_VF; k++)
                w->drv[k] = k < sc->from ? DRV_VFIO : DRV_NATIVE;
        for (unsigned k = 0; k < MAX_VF; k++)
                w->cls_on[k] = -1;
        for (size_t i = 0; i < p->n_items; i++) {
                w->cls_on[p->items[i].index] = (int) i;
                w->dev[i] = (struct dev) { .present = true, .index = p->items[i].index };
                w->native[i] = i == 0;
                w->rec[i] = (struct record) { .present = true, .state = SVFF_ASSIGN_ATTACHED };
                snprintf(w->rec[i].vf, sizeof(w->rec[i].vf), "%s", p->items[i].vf);
        }
}

/* One machine run on w: new (journal NULL) or a restart from the
 * committed journal; returns whether it ended (else it crashed). */
static bool run_once(struct world *w, struct svff_reconf_plan *plan, const char *journal_text, const char *name,
                     bool reprogram, enum start start) {
        struct reconf_journal j = {};
        struct json_object *je = NULL;
        bool ended;

        if (journal_text) {
                je = json_tokener_parse(journal_text);
                ck_assert_msg(je, "%s: the committed journal does not parse", name);
                ck_assert_msg(reconf_journal_decode(je, &j) == 0, "%s: the committed journal does not decode", name);
                plan = TAKE_PTR(j.plan);
        }
        w->plan = plan;
        w->rm = reconf_machine_new(plan, journal_text ? &j : NULL, 1, true, w->in_unit ? &unit_ops : &fake_ops, w);
        ck_assert_ptr_nonnull(w->rm);
        w->plan = reconf_machine_plan(w->rm);
        if (reprogram && !journal_text) {
                struct json_object *ids = json_object_new_array();

                json_object_array_add(ids, json_object_new_string("10ee:903f"));
                json_object_array_add(ids, json_object_new_string("10ee:913f"));
                ck_assert_int_eq(reconf_machine_set_reprogram(w->rm, "/images/new.bit", ids), 0);
                json_object_put(ids);
        }
        if (!journal_text)
                /* Whoever asked owns the count once it went through. */
                ck_assert_int_eq(reconf_machine_set_owner(w->rm, "operator"), 0);
        else
                ck_assert_msg(reconf_machine_owner(w->rm) && streq(reconf_machine_owner(w->rm), "operator"),
                              "%s: the journal lost who owns the count", name);
        if (!journal_text)
                /* Every assignment's VF has a class state, journaled
                 * with it: provision and release_class get it back. */
                for (size_t i = 0; i < w->plan->n_items; i++) {
                        struct json_object *c = json_object_new_object();

                        json_object_object_add(c, "item", json_object_new_int((int) i));
                        reconf_machine_set_class(w->rm, i, c);
                }
        if (start == S_REPROGRAM || start == S_RECONF)
                reconf_machine_resume_reprogram(w->rm, start == S_REPROGRAM);
        if (start == S_RECONF)
                w->image_unknown = true;
        if (journal_text)
                for (size_t i = 0; i < w->plan->n_items; i++)
                        reconf_machine_recover_item(w->rm, i, w->rec[i].present,
                                                    w->rec[i].present ? w->rec[i].vf : NULL, w->rec[i].state,
                                                    w->rec[i].mode);
        w->crashed = w->finished = false;
        w->n_done = 0;
        w->n_delivered = 0;
        reconf_machine_start(w->rm);
        run_loop(w);
        ended = !w->crashed;
        ck_assert_msg(w->crashed || w->finished, "%s: the machine neither ended nor has anything in flight", name);
        if (ended) {
                check_log(w, name);
                check_outcome(w, name);
                /* The owner goes to whoever asked only for the count
                 * they asked for: never when it was rolled back. */
                ck_assert_msg(!reconf_machine_count_set(w->rm) ||
                              (!reconf_machine_rollback(w->rm) && w->numvfs == w->plan->to),
                              "%s: the count counts as set, the PF has %u VFs%s", name, w->numvfs,
                              reconf_machine_rollback(w->rm) ? " after a rollback" : "");
                ck_assert_msg(reconf_machine_journal_kept(w->rm) == (w->journal != NULL) ||
                              reconf_machine_result(w->rm, NULL) == RECONF_ERR_STORE,
                              "%s: the machine says the journal is %s, the store %s", name,
                              reconf_machine_journal_kept(w->rm) ? "kept" : "cleared",
                              w->journal ? "has it" : "has none");
        }
        reconf_journal_done(&j);
        json_object_put(je);
        return ended;
}

static unsigned n_cases;
/* Whether the cases refuse the first new count a restart writes, and how
 * many were refused so. */
static bool refuse_recovery, lose_after_refusal;
static unsigned n_refused_recovery, n_lost_after_refusal;
/* Whether the cases lose a VF at the first count change (its index),
 * and how many did. */
static int gap_index = -1;
static unsigned n_gaps;
/* Whether each count change moves the VFs to other host addresses, and
 * how many cases moved them. */
static bool move_vfs;
static unsigned n_moved;

/* Runs a case, then restarts from the journal (without failures, libvirt
 * back) until none is left, checking after each run. */
static void run_case(const struct scenario *sc, enum order order, enum step_kind kind, enum failure f, unsigned at,
                     unsigned stop_at, bool stop_now, unsigned *ret_commits, unsigned *ret_completions) {
        struct svff_reconf_item items[MAX_ITEMS];
        size_t n = make_items(sc, items);
        struct svff_reconf_input in = { .pf = PF, .numvfs = sc->from, .driver = "vfio-pci", .items = items,
                                        .n_items = n };
        struct svff_reconf_plan *plan = NULL;
        bool reported = false, lost;
        struct world w;
        char name[256];

        snprintf(name, sizeof(name), "[%s, %s, %s %s #%u, stop at %u%s]", sc->name, order_names[order],
                 kind_names[kind], failure_names[f], at, stop_at, stop_now ? " (now)" : "");
        ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
        ck_assert(svff_reconf_plan_ok(plan));
        world_init(&w, sc, plan);
        w.order = order;
        w.fail_kind = kind;
        w.fail = f;
        w.fail_at = at;
        w.stop_at = stop_at;
        w.stop_now = stop_now;
        w.refuse_recovery = refuse_recovery;
        w.lose_after_refusal = lose_after_refusal;
        w.gap = gap_index;
        w.move = move_vfs;

        run_once(&w, plan, NULL, name, sc->reprogram, S_NEW);
        check_world(&w, name, !w.journal);
        if (w.gap_done) {
                /* No virtfn<gap> after the count change: a failure naming
                 * it; every other assignment has the VF of its own index,
                 * never the next one along; the one at the gap keeps its
                 * record, paused, at its address. */
                const char *message = NULL;
                char virtfn[32];

                n_gaps++;
                snprintf(virtfn, sizeof(virtfn), "virtfn%d", w.gap);
                ck_assert_msg(reconf_machine_result(w.rm, &message) != RECONF_OK && message &&
                              strstr(message, virtfn), "%s: VF %d missing, the reconf says: %s", name, w.gap,
                              strna(message));
                for (size_t i = 0; i < w.plan->n_items; i++) {
                        const struct svff_reconf_item *it = &w.plan->items[i];

                        if (it->index == (unsigned) w.gap) {
                                ck_assert_msg(!w.dev[i].present || w.dev[i].paused,
                                              "%s: item %zu has a VF though VF %d is missing", name, i, w.gap);
                                ck_assert_msg(w.rec[i].present && w.rec[i].state == SVFF_ASSIGN_PAUSED &&
                                              streq(w.rec[i].vf, it->vf),
                                              "%s: item %zu at the missing VF lost its record: %s at '%s'", name, i,
                                              w.rec[i].present ? svff_assign_state_to_string(w.rec[i].state)
                                                               : "none", w.rec[i].vf);
                        } else if (it->fate == SVFF_RECONF_SURVIVES)
                                ck_assert_msg(w.dev[i].present && !w.dev[i].paused && w.dev[i].index == it->index &&
                                              w.rec[i].present && streq(w.rec[i].vf, vf_addr_at(w.layout, it->index)),
                                              "%s: item %zu (VF %u) is not back on its own VF", name, i, it->index);
                }
        }
        if (ret_commits)
                *ret_commits = w.seen[K_COMMIT];
        if (ret_completions)
                *ret_completions = w.n_delivered;
        for (unsigned r = 0; w.journal && r < MAX_RESTARTS; r++) {
                _cleanup_free_ char *journal = strdup(w.journal);
                _cleanup_(json_object_putp) struct json_object *je = json_tokener_parse(journal);
                const char *phase = NULL;
                enum start start = S_RECOVER;
                unsigned flashes = w.flashes;
                char rname[300];

                (void) svff_json_get_string(je, "phase", &phase);
                if (phase && (streq(phase, "interrupted") || streq(phase, "flash")) && reported) {
                        /* svffd reported it; the operator takes it up. */
                        start = (n_cases % 2 == 0) ? S_REPROGRAM : S_RECONF;
                        reported = false;
                } else if (phase && (streq(phase, "interrupted") || streq(phase, "flash")))
                        reported = true;
                reconf_machine_free(w.rm);
                w.rm = NULL;
                w.fail = F_NONE;
                w.stop_at = 0;
                w.libvirt_gone = false;
                snprintf(rname, sizeof(rname), "%s restart %u (%s)", name, r + 1,
                         start == S_RECOVER ? "recovery" : start == S_REPROGRAM ? "reprogram again" : "reconf");
                lost = w.lost_after_refusal;
                run_once(&w, NULL, journal, rname, sc->reprogram, start);
                check_world(&w, rname, !w.journal);
                /* The rollback's journal stays until every assignment is
                 * back: libvirt lost during its restores keeps it. */
                if (w.lost_after_refusal && !lost)
                        ck_assert_msg(w.journal, "%s: the count was refused, libvirt lost during the rollback, and "
                                      "the journal was cleared", rname);
                if (reported) {
                        /* Never resumed by itself, never guessed flashed:
                         * no hook, the journal kept, the PF said to be
                         * interrupted. */
                        ck_assert_msg(w.flashes == flashes, "%s: svffd's own recovery ran the flash hook", rname);
                        ck_assert_msg(w.journal != NULL, "%s: the interrupted journal was dropped", rname);
                        ck_assert_msg(reconf_machine_interrupted(w.rm) &&
                                      reconf_machine_result(w.rm, NULL) == RECONF_ERR_INTERRUPTED,
                                      "%s: not reported as an interrupted reprogram", rname);
                }
                /* A restart without failures settles everything. */
                if (!w.journal)
                        for (size_t i = 0; i < w.plan->n_items; i++)
                                ck_assert_msg(w.domain_gone[i] || w.dev[i].present || w.plan->items[i].fate != SVFF_RECONF_SURVIVES ||
                                              w.plan->items[i].index >= w.numvfs,
                                              "%s: item %zu not back after the restart", rname, i);
        }
        ck_assert_msg(!w.journal, "%s: still journaled after %u restarts", name, MAX_RESTARTS);
        n_moved += w.layout > 0;
        ck_assert_msg(w.numvfs == sc->from || w.numvfs == sc->to || f == F_PARTIAL,
                      "%s: the PF ended at %u VFs", name, w.numvfs);
        ck_assert_msg(!w.pf_gone && !w.pf_unbound, "%s: the PF ended %s", name,
                      w.pf_gone ? "off the bus" : "without its driver");
        if (w.refused_recovery) {
                /* A refused count on recovery rolls back: the old count,
                 * every assignment in its domain again and recorded so. */
                n_refused_recovery++;
                n_lost_after_refusal += w.lost_after_refusal;
                ck_assert_msg(w.numvfs == sc->from, "%s: the restart's count was refused, the PF ended at %u VFs, "
                              "not %u", name, w.numvfs, sc->from);
                for (size_t i = 0; i < w.plan->n_items; i++)
                        ck_assert_msg(w.dev[i].present && !w.dev[i].paused && w.rec[i].present &&
                                      w.rec[i].state == SVFF_ASSIGN_ATTACHED,
                                      "%s: the restart's count was refused, item %zu ('%s') is not back: %s, "
                                      "recorded %s", name, i, w.plan->items[i].a.domain,
                                      !w.dev[i].present ? "off its domain" : w.dev[i].paused ? "paused" : "in it",
                                      w.rec[i].present ? svff_assign_state_to_string(w.rec[i].state) : "nowhere");
        }
        reconf_machine_free(w.rm);
        free(w.journal);
}

START_TEST(test_clean) {
        /* Every scenario, every order, no failure: the reconf goes
         * through and the log is the plan's steps. */
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                for (enum order o = O_SYNC; o <= O_LIFO; o++) {
                        run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, 0, false, NULL, NULL);
                        n_cases++;
                }
}
END_TEST

START_TEST(test_failures) {
        /* Every step x every failure, at its first and second occurrence. */
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                for (enum order o = O_SYNC; o <= O_LIFO; o++)
                        for (enum step_kind k = 0; k < (scenarios[s].reprogram ? _K_MAX : K_RECONF_MAX); k++)
                                for (enum failure f = F_ERROR; f <= F_LOST_LIBVIRT; f++)
                                        for (unsigned at = 1; at <= 2; at++) {
                                                run_case(&scenarios[s], o, k, f, at, 0, false, NULL, NULL);
                                                n_cases++;
                                        }
}
END_TEST

START_TEST(test_crashes) {
        /* A crash at every journal write (during it, and right after it),
         * then a restart from what was committed. */
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                for (enum order o = O_SYNC; o <= O_LIFO; o++) {
                        unsigned commits = 0;

                        run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, 0, false, &commits, NULL);
                        ck_assert_uint_ge(commits, 3);
                        for (unsigned at = 1; at <= commits; at++)
                                for (enum failure f = F_CRASH; f <= F_CRASH_AFTER; f++) {
                                        run_case(&scenarios[s], o, K_COMMIT, f, at, 0, false, NULL, NULL);
                                        n_cases++;
                                }
                        /* svffd killed during the device class's release,
                         * before and after it had its effect. */
                        for (enum failure f = F_CRASH; f <= F_CRASH_AFTER; f++) {
                                run_case(&scenarios[s], o, K_RELEASE, f, 1, 0, false, NULL, NULL);
                                n_cases++;
                        }
                        /* And a failed commit at each. */
                        for (unsigned at = 1; at <= commits; at++) {
                                run_case(&scenarios[s], o, K_COMMIT, F_ERROR, at, 0, false, NULL, NULL);
                                n_cases++;
                        }
                }
}
END_TEST

START_TEST(test_recovery_refused) {
        /* A crash at every journal write, then a restart whose write of
         * the new count the kernel refuses: the recovery rolls back as a
         * live reconf does, to the old count with every assignment back;
         * and with libvirt lost during that rollback's restores, its
         * journal stays for the next restart. */
        refuse_recovery = true;
        for (int lose = 0; lose <= 1; lose++) {
                lose_after_refusal = lose;
                for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                        for (enum order o = O_SYNC; o <= O_LIFO; o++) {
                                unsigned commits = 0;

                                run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, 0, false, &commits, NULL);
                                for (unsigned at = 1; at <= commits; at++)
                                        for (enum failure f = F_CRASH; f <= F_CRASH_AFTER; f++) {
                                                run_case(&scenarios[s], o, K_COMMIT, f, at, 0, false, NULL, NULL);
                                                n_cases++;
                                        }
                                if (scenarios[s].reprogram)
                                        for (enum step_kind k = K_REMOVE; k < _K_MAX; k++)
                                                for (enum failure f = F_CRASH; f <= F_CRASH_AFTER; f++) {
                                                        run_case(&scenarios[s], o, k, f, 1, 0, false, NULL, NULL);
                                                        n_cases++;
                                                }
                        }
        }
        refuse_recovery = lose_after_refusal = false;
        /* Not vacuous: restarts did write the new count, were refused,
         * and lost libvirt during the rollback. */
        ck_assert_uint_gt(n_lost_after_refusal, 0);
        ck_assert_uint_gt(n_refused_recovery, 0);
}
END_TEST

START_TEST(test_virtfn_gap) {
        /* The kernel lists no virtfn1 after the new count (VF 1 removed
         * as it came, its link gone or dangling), in every scenario and
         * order. */
        gap_index = 1;
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                for (enum order o = O_SYNC; o <= O_LIFO; o++) {
                        run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, 0, false, NULL, NULL);
                        n_cases++;
                }
        gap_index = -1;
        ck_assert_uint_eq(n_gaps, ELEMENTSOF(scenarios) * 3);
}
END_TEST

START_TEST(test_moved_vfs) {
        /* Every count change puts the VFs at other host addresses: with
         * no failure, a failure of each step, a crash at every journal
         * write, and a restart whose new count the kernel refuses. */
        move_vfs = true;
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                for (enum order o = O_SYNC; o <= O_LIFO; o++) {
                        unsigned commits = 0;

                        run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, 0, false, &commits, NULL);
                        n_cases++;
                        for (enum step_kind k = 0; k < (scenarios[s].reprogram ? _K_MAX : K_RECONF_MAX); k++)
                                for (enum failure f = F_ERROR; f <= F_PARTIAL; f++) {
                                        run_case(&scenarios[s], o, k, f, 1, 0, false, NULL, NULL);
                                        n_cases++;
                                }
                        for (int refuse = 0; refuse <= 1; refuse++) {
                                refuse_recovery = refuse;
                                for (unsigned at = 1; at <= commits; at++)
                                        for (enum failure f = F_CRASH; f <= F_CRASH_AFTER; f++) {
                                                run_case(&scenarios[s], o, K_COMMIT, f, at, 0, false, NULL, NULL);
                                                n_cases++;
                                        }
                        }
                        refuse_recovery = false;
                }
        move_vfs = false;
        /* Not vacuous: the VFs did move. */
        ck_assert_uint_gt(n_moved, 0);
}
END_TEST

START_TEST(test_reprogram_crashes) {
        /* svffd killed during each of a reprogram's PF steps, the hook
         * included, before and after the step had its effect. */
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++) {
                if (!scenarios[s].reprogram)
                        continue;
                for (enum order o = O_SYNC; o <= O_LIFO; o++)
                        for (enum step_kind k = K_REMOVE; k < _K_MAX; k++)
                                for (enum failure f = F_CRASH; f <= F_CRASH_AFTER; f++) {
                                        run_case(&scenarios[s], o, k, f, 1, 0, false, NULL, NULL);
                                        n_cases++;
                                }
        }
}
END_TEST

START_TEST(test_reprogram_interrupted) {
        /* A failing hook, a late one, a PF that does not come back, and
         * one that comes back as the policy does not allow: every
         * assignment off its domain stays paused with its record, the
         * journal says interrupted, the hook ran once. */
        static const struct { enum step_kind k; enum failure f; } cases[] = {
                { K_FLASH, F_ERROR }, { K_FLASH, F_TIMEOUT }, { K_RESCAN, F_TIMEOUT }, { K_IDENTITY, F_ERROR },
        };
        const struct scenario *sc = &scenarios[3];

        for (size_t c = 0; c < ELEMENTSOF(cases); c++) {
                struct svff_reconf_item items[MAX_ITEMS];
                size_t n = make_items(sc, items);
                struct svff_reconf_input in = { .pf = PF, .numvfs = sc->from, .driver = "vfio-pci", .items = items,
                                                .n_items = n };
                struct svff_reconf_plan *plan = NULL;
                const char *msg = NULL;
                struct world w;

                ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
                world_init(&w, sc, plan);
                w.order = O_FIFO;
                w.fail_kind = cases[c].k;
                w.fail = cases[c].f;
                w.fail_at = 1;
                ck_assert(run_once(&w, plan, NULL, "interrupted", true, S_NEW));
                ck_assert_int_eq(reconf_machine_result(w.rm, &msg), RECONF_ERR_INTERRUPTED);
                ck_assert_ptr_nonnull(strstr(msg, "reprogram interrupted"));
                ck_assert_ptr_nonnull(w.journal);
                ck_assert_ptr_nonnull(strstr(w.journal, "\"phase\": \"interrupted\""));
                ck_assert_uint_eq(w.flashes, cases[c].k == K_FLASH ? 0 : 1);
                for (size_t i = 0; i < w.plan->n_items; i++) {
                        ck_assert(w.rec[i].present);
                        ck_assert(!reconf_machine_item_has_vf(w.rm, i) || w.dev[i].paused);
                        ck_assert_int_eq(w.rec[i].state, SVFF_ASSIGN_PAUSED);
                        ck_assert_str_eq(reconf_machine_item_outcome(w.rm, i), "paused");
                }
                reconf_machine_free(w.rm);
                free(w.journal);
        }
}
END_TEST

START_TEST(test_flash_unit) {
        /* The hook in a systemd unit of its own: svffd stops during the
         * flash, the unit goes on, and the next start takes up its
         * result, never running the hook again: a success goes on from
         * the rescan and every assignment comes back; a failure is the
         * interrupted path. */
        const struct scenario *sc = &scenarios[3];

        for (int fail = 0; fail <= 1; fail++) {
                struct svff_reconf_item items[MAX_ITEMS];
                size_t n = make_items(sc, items);
                struct svff_reconf_input in = { .pf = PF, .numvfs = sc->from, .driver = "vfio-pci", .items = items,
                                                .n_items = n };
                struct svff_reconf_plan *plan = NULL;
                _cleanup_free_ char *journal = NULL;
                const char *msg = NULL;
                struct world w;

                ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
                world_init(&w, sc, plan);
                w.order = O_FIFO;
                w.in_unit = w.unit_stop = true;
                w.unit_r = fail ? -EIO : 0;
                ck_assert(run_once(&w, plan, NULL, "stop during the flash unit", true, S_NEW));
                ck_assert_int_eq(reconf_machine_result(w.rm, &msg), RECONF_ERR_SHUTTING_DOWN);
                ck_assert_msg(strstr(msg, "flash unit"), "the stop says: %s", msg);
                ck_assert_ptr_nonnull(w.journal);
                ck_assert_ptr_nonnull(strstr(w.journal, "\"phase\": \"flash\""));
                ck_assert_ptr_nonnull(strstr(w.journal, w.unit_name));
                check_world(&w, "stop during the flash unit", false);
                ck_assert_uint_eq(w.flashes, 0);

                /* The unit ends while svffd is stopped. */
                if (!fail)
                        w.flashes++;
                journal = strdup(w.journal);
                reconf_machine_free(w.rm);
                w.unit_stop = false;
                ck_assert(run_once(&w, NULL, journal, "the flash unit taken up", true, S_RECOVER));
                check_world(&w, "the flash unit taken up", !w.journal);
                ck_assert_uint_eq(w.unit_resumed, 1);
                ck_assert_uint_eq(w.n_units, 1);
                ck_assert_uint_eq(w.seen[K_FLASH], 0);
                if (!fail) {
                        ck_assert_int_eq(reconf_machine_result(w.rm, &msg), RECONF_OK);
                        ck_assert_ptr_null(w.journal);
                        ck_assert(!w.pf_gone && !w.pf_unbound);
                        ck_assert_uint_eq(w.numvfs, sc->to);
                        for (size_t i = 0; i < w.plan->n_items; i++)
                                ck_assert(w.dev[i].present && !w.dev[i].paused && w.rec[i].present &&
                                          w.rec[i].state == SVFF_ASSIGN_ATTACHED);
                } else {
                        ck_assert_int_eq(reconf_machine_result(w.rm, &msg), RECONF_ERR_INTERRUPTED);
                        ck_assert_ptr_nonnull(w.journal);
                        ck_assert_ptr_nonnull(strstr(w.journal, "\"phase\": \"interrupted\""));
                        for (size_t i = 0; i < w.plan->n_items; i++)
                                ck_assert(w.rec[i].present && w.rec[i].state == SVFF_ASSIGN_PAUSED);
                }
                reconf_machine_free(w.rm);
                free(w.journal);
        }
}
END_TEST

START_TEST(test_stops) {
        /* A stop (SIGTERM) before each completion, and one after which
         * nothing may start (the event loop gone). */
        for (size_t s = 0; s < ELEMENTSOF(scenarios); s++)
                for (enum order o = O_SYNC; o <= O_LIFO; o++) {
                        unsigned completions = 0;

                        run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, 0, false, NULL, &completions);
                        ck_assert_uint_ge(completions, 5);
                        for (unsigned at = 1; at <= completions; at++)
                                for (int now = 0; now <= 1; now++) {
                                        run_case(&scenarios[s], o, K_QUIESCE, F_NONE, 0, at, now, NULL, NULL);
                                        n_cases++;
                                }
                }
}
END_TEST

START_TEST(test_clean_log_is_plan) {
        /* Without failures the log is the plan's steps, one for one: a
         * plan that knows the PF's device class has its provision steps
         * too, and one that does not has none (the log has them). */
        const struct scenario *sc = &scenarios[1];
        struct svff_reconf_item items[MAX_ITEMS];
        size_t n = make_items(sc, items);

        for (int provision = 0; provision <= 1; provision++) {
                struct svff_reconf_input in = { .pf = PF, .numvfs = sc->from, .driver = "vfio-pci", .items = items,
                                                .n_items = n, .provision = provision };
                struct svff_reconf_plan *plan = NULL;
                struct json_object *log;
                struct world w;
                size_t n_prov = 0, k = 0;
                bool matched[64] = {};

                ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
                ck_assert_uint_le(plan->n_steps, ELEMENTSOF(matched));
                world_init(&w, sc, plan);
                w.order = O_FIFO;
                ck_assert(run_once(&w, plan, NULL, "clean", false, S_NEW));
                ck_assert_int_eq(reconf_machine_result(w.rm, NULL), RECONF_OK);
                plan = (struct svff_reconf_plan *) reconf_machine_plan(w.rm);
                log = reconf_machine_log(w.rm);
                for (size_t i = 0; i < json_object_array_length(log); i++) {
                        struct json_object *done = json_object_array_get_idx(log, i);
                        const char *phase = NULL;
                        bool found = false;

                        (void) svff_json_get_string(done, "phase", &phase);
                        if (streq(phase, "provision"))
                                n_prov++;
                        if (!provision && streq(phase, "provision"))
                                continue;
                        /* Restores run as their domains answer: the
                         * plan's order is not the log's there. */
                        for (size_t x = 0; x < plan->n_steps && !found; x++) {
                                _cleanup_(json_object_putp) struct json_object *want = NULL;

                                if (matched[x])
                                        continue;
                                want = svff_reconf_step_to_json(plan, &plan->steps[x]);
                                found = true;
                                json_object_object_foreach(want, key, v) {
                                        struct json_object *got = json_object_object_get(done, key);

                                        if (!got || !streq(json_object_get_string(got), json_object_get_string(v)))
                                                found = false;
                                }
                                matched[x] = found;
                        }
                        ck_assert_msg(found, "step %zu of the log is none of the plan's: %s", i,
                                      json_object_to_json_string(done));
                        k++;
                }
                ck_assert_uint_eq(n_prov, sc->to);
                ck_assert_uint_eq(k, plan->n_steps);
                /* The class state is journaled per VF, verbatim. */
                ck_assert_ptr_null(w.journal);
                reconf_machine_free(w.rm);
        }
}
END_TEST

START_TEST(test_journal_class) {
        /* The class states returned by provision reach the journal before
         * the bind, and a restart hands them back verbatim. */
        const struct scenario *sc = &scenarios[0];
        struct svff_reconf_item items[MAX_ITEMS];
        size_t n = make_items(sc, items);
        struct svff_reconf_input in = { .pf = PF, .numvfs = sc->from, .driver = "vfio-pci", .items = items,
                                        .n_items = n };
        struct svff_reconf_plan *plan = NULL;
        struct reconf_journal j = {};
        struct json_object *e, *c;
        struct world w;

        ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
        world_init(&w, sc, plan);
        svff_reconf_plan_free(plan);
        /* Crash right after each commit in turn, until one is the write
         * that follows provisioning (phase bind). */
        for (unsigned at = 1; at < 10; at++) {
                ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
                world_init(&w, sc, plan);
                w.order = O_FIFO;
                w.fail_kind = K_COMMIT;
                w.fail = F_CRASH_AFTER;
                w.fail_at = at;
                run_once(&w, plan, NULL, "class", false, S_NEW);
                reconf_machine_free(w.rm);
                ck_assert_ptr_nonnull(w.journal);
                e = json_tokener_parse(w.journal);
                ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
                if (streq(j.phase, "bind")) {
                        c = reconf_journal_get_class(&j, 1);
                        ck_assert_ptr_nonnull(c);
                        ck_assert_str_eq(json_object_to_json_string(c), "{ \"item\": 1, \"provisioned\": 1 }");
                        reconf_journal_done(&j);
                        json_object_put(e);
                        free(w.journal);
                        return;
                }
                reconf_journal_done(&j);
                json_object_put(e);
                free(w.journal);
        }
        ck_abort_msg("no journal write in phase bind");
}
END_TEST

START_TEST(test_old_reprogram_journal) {
        /* A reprogram journaled before the plan kept its image: the
         * recovered plan has the reprogram's steps again, so that its
         * progress counts the PF steps the run takes. */
        const struct scenario *sc = &scenarios[0];
        struct svff_reconf_item items[MAX_ITEMS];
        size_t n = make_items(sc, items);
        struct svff_reconf_input in = { .pf = PF, .numvfs = sc->from, .driver = "vfio-pci", .items = items,
                                        .n_items = n };
        struct svff_reconf_plan *plan = NULL;
        const struct svff_reconf_plan *p;
        _cleanup_(json_object_putp) struct json_object *e = NULL;
        struct json_object *rp = json_object_new_object();
        struct reconf_journal j = {};
        struct reconf_machine *rm;
        size_t n_plain, n_pf = 0;

        ck_assert_int_eq(svff_reconf_plan_new(&in, sc->to, sc->mode, sc->force, &plan), 0);
        n_plain = plan->n_steps;
        e = reconf_journal_encode(plan, "rescan", 1);
        svff_reconf_plan_free(plan);
        ck_assert_ptr_nonnull(e);
        json_object_object_add(rp, "image", json_object_new_string("/images/new.bit"));
        json_object_object_add(rp, "ids", json_tokener_parse("[\"10ee:903f\"]"));
        json_object_object_add(rp, "flashed", json_object_new_boolean(true));
        json_object_object_add(e, "reprogram", rp);
        ck_assert_int_eq(reconf_journal_decode(e, &j), 0);
        ck_assert_ptr_null(j.plan->image);
        rm = reconf_machine_new(TAKE_PTR(j.plan), &j, 1, true, &fake_ops, NULL);
        ck_assert_ptr_nonnull(rm);
        p = reconf_machine_plan(rm);
        ck_assert_str_eq(p->image, "/images/new.bit");
        for (size_t i = 0; i < p->n_steps; i++)
                if (p->steps[i].phase == SVFF_RECONF_PHASE_REPROGRAM)
                        n_pf++;
        ck_assert_uint_eq(n_pf, 5);
        ck_assert_uint_eq(p->n_steps, n_plain + 5);
        reconf_machine_free(rm);
}
END_TEST

START_TEST(test_count) {
        ck_assert_uint_gt(n_cases, 0);
}
END_TEST

int main(void) {
        Suite *s = suite_create("reconf-machine");
        TCase *tc = tcase_create("matrix");
        SRunner *sr;
        int failed;

        tcase_set_timeout(tc, 240);
        tcase_add_test(tc, test_clean);
        tcase_add_test(tc, test_clean_log_is_plan);
        tcase_add_test(tc, test_journal_class);
        tcase_add_test(tc, test_old_reprogram_journal);
        tcase_add_test(tc, test_failures);
        tcase_add_test(tc, test_crashes);
        tcase_add_test(tc, test_stops);
        tcase_add_test(tc, test_reprogram_crashes);
        tcase_add_test(tc, test_recovery_refused);
        tcase_add_test(tc, test_virtfn_gap);
        tcase_add_test(tc, test_moved_vfs);
        tcase_add_test(tc, test_reprogram_interrupted);
        tcase_add_test(tc, test_flash_unit);
        suite_add_tcase(s, tc);
        sr = srunner_create(s);
        srunner_set_fork_status(sr, CK_NOFORK);
        tcase_add_test(tc, test_count);
        srunner_run_all(sr, CK_NORMAL);
        failed = srunner_ntests_failed(sr);
        srunner_free(sr);
        printf("%u cases run\n", n_cases);
        return failed == 0 ? 0 : 1;
}

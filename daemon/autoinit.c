/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include <systemd/sd-daemon.h>

#include "allowlist.h"
#include "autoinit.h"
#include "busy.h"
#include "flash-hook.h"
#include "interface.h"
#include "json-util.h"
#include "log.h"
#include "params.h"
#include "operations.h"
#include "reconfigure.h"
#include "settings.h"
#include "sysfs.h"

/* A PF waiting for settle_msec of quiet, or for a fresh snapshot. */
struct pending {
        struct pending *next;
        struct autoinit *autoinit;
        char address[SVFF_PCI_ADDR_STRLEN];
        sd_event_source *timer;         /* NULL once settled */
        uint64_t started_usec;          /* the event's, CLOCK_MONOTONIC */
        bool restore;                   /* may fall back to the stored state */
        bool retry;                     /* a policy's Init waiting (wait_busy()) */
};

/* A policy svffd did not apply, for Status. */
struct refusal {
        struct refusal *next;
        char address[SVFF_PCI_ADDR_STRLEN];
        char *message;
        bool failed;                    /* its Init ran and failed: drift too */
};

/* A policy's image read for its content's hash on the ops pool, and
 * what the read found; apply() takes it on its next pass over the PF. */
struct image_read {
        struct image_read *next;
        struct autoinit *autoinit;      /* NULL once auto-init is gone */
        struct worker_pool *pool;
        char address[SVFF_PCI_ADDR_STRLEN];
        char *image, *image_dir;
        bool startup;                   /* counted in startup_reads */
        bool done;
        uint64_t started_usec;          /* CLOCK_MONOTONIC */
        int r;
        struct json_object *identity;   /* with "sha256", when r >= 0 */
        struct svff_error err;
};

struct autoinit {
        struct manager *manager;
        struct pending *pending;
        struct refusal *refusals;
        struct image_read *reads;
        bool waiting;                   /* a snapshot is on its way */
        unsigned reloads_waiting;       /* reload passes waiting for their snapshot */
        uint64_t reload_usec;           /* when the last of them was asked for */
        uint64_t startup_budget;        /* what the start-up Inits may take */
};

static struct pending *pending_free(struct pending *p) {
        if (p) {
                sd_event_source_disable_unref(p->timer);
                free(p);
        }
        return NULL;
}

int autoinit_new(struct manager *m, struct autoinit **ret) {
        struct autoinit *a = calloc(1, sizeof(*a));

        if (!a)
                return -ENOMEM;
        a->manager = m;
        *ret = a;
        return 0;
}

static struct image_read *image_read_free(struct image_read *r) {
        if (r) {
                free(r->image);
                free(r->image_dir);
                json_object_put(r->identity);
                svff_error_free(&r->err);
                free(r);
        }
        return NULL;
}

/* Unlinks r from its auto-init, and ends its part in start-up. */
static void image_read_unlink(struct image_read *r) {
        struct autoinit *a = r->autoinit;

        if (!a)
                return;
        for (struct image_read **p = &a->reads; *p; p = &(*p)->next)
                if (*p == r) {
                        *p = r->next;
                        break;
                }
        if (r->startup && a->manager->startup_reads > 0)
                a->manager->startup_reads--;
        r->autoinit = NULL;
        r->next = NULL;
}

struct autoinit *autoinit_free(struct autoinit *a) {
        if (!a)
                return NULL;
        while (a->reads) {
                struct image_read *r = a->reads;

                image_read_unlink(r);
                /* a read still running is freed by its end */
                if (r->done)
                        image_read_free(r);
        }
        while (a->pending) {
                struct pending *p = a->pending;

                a->pending = p->next;
                pending_free(p);
        }
        while (a->refusals) {
                struct refusal *f = a->refusals;

                a->refusals = f->next;
                free(f->message);
                free(f);
        }
        free(a);
        return NULL;
}

static struct pending **find_pending(struct autoinit *a, const char *address) {
        for (struct pending **p = &a->pending; *p; p = &(*p)->next)
                if (streq((*p)->address, address))
                        return p;
        return NULL;
}

/* Records (message non-NULL) or forgets why pf's policy was refused. */
static void set_refusal_full(struct manager *m, const char *pf, const char *message, bool failed) {
        struct autoinit *a = m->autoinit;
        struct refusal **fp, *f;

        if (!a)
                return;
        for (fp = &a->refusals; *fp; fp = &(*fp)->next)
                if (streq((*fp)->address, pf))
                        break;
        f = *fp;
        if (!message) {
                if (f) {
                        *fp = f->next;
                        free(f->message);
                        free(f);
                }
                return;
        }
        if (!f) {
                f = calloc(1, sizeof(*f));
                if (!f) {
                        log_oom();
                        return;
                }
                snprintf(f->address, sizeof(f->address), "%s", pf);
                *fp = f;
        }
        free(f->message);
        f->message = strdup(message);
        f->failed = failed;
}

static void set_refusal(struct manager *m, const char *pf, const char *message) {
        set_refusal_full(m, pf, message, false);
}

const char *autoinit_pf_refused(struct manager *m, const char *pf) {
        for (struct refusal *f = m->autoinit ? m->autoinit->refusals : NULL; f; f = f->next)
                if (streq(f->address, pf))
                        return f->message;
        return NULL;
}

const char *autoinit_pf_failed(struct manager *m, const char *pf) {
        for (struct refusal *f = m->autoinit ? m->autoinit->refusals : NULL; f; f = f->next)
                if (streq(f->address, pf) && f->failed)
                        return f->message;
        return NULL;
}

static void emit(struct manager *m, const char *name, const char *pf, const char *fmt, ...)
        _printf_(4, 5);
static void emit(struct manager *m, const char *name, const char *pf, const char *fmt, ...) {
        struct json_object *e = json_object_new_object();
        char msg[1536];
        va_list ap;

        if (!e)
                return;
        va_start(ap, fmt);
        vsnprintf(msg, sizeof(msg), fmt, ap);
        va_end(ap);
        json_object_object_add(e, "event", json_object_new_string(name));
        json_object_object_add(e, "device", json_object_new_string(pf));
        json_object_object_add(e, "pf", json_object_new_string(pf));
        json_object_object_add(e, "message", json_object_new_string(msg));
        manager_emit(m, NULL, e);
}

/* An Init svffd started on its own ended. A failure stays in Status (as
 * the policy not applied, and as drift) until the next pass over the PF
 * or an Init that succeeds: "Drift: none" after a failed policy would
 * tell libvirt's operator that the VFs are there. */
static void init_done(struct manager *m, const char *pf, const char *message) {
        LOG_CONTEXT(.pf = pf, .operation = "policy");
        if (!message) {
                set_refusal(m, pf, NULL);
                return;
        }
        {
                char msg[1200];

                snprintf(msg, sizeof(msg), "its init failed: %s", message);
                set_refusal_full(m, pf, msg, true);
                emit(m, "policy-failed", pf, "%s", msg);
        }
}

/* Whether pf already has numvfs VFs, all on driver. */
static bool satisfied(const struct svff_pf *pf, unsigned numvfs, const char *driver) {
        if (pf->numvfs != numvfs || pf->n_vfs != numvfs)
                return false;
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (!pf->vfs[i].driver || !streq(pf->vfs[i].driver, driver))
                        return false;
        return true;
}

/* Whether any VF of pf that the store records carries an assignment and
 * is missing or off its recorded driver. */
static bool assignments_need_restore(struct manager *m, const struct svff_pf *pf,
                                     const char *driver) {
        json_object_object_foreach(svff_store_assignments(m->store), vf, asg) {
                const char *vpf = NULL;
                const struct svff_vf *v;

                (void) asg;
                if (svff_store_get_vf(m->store, vf, &vpf, NULL) <= 0 || !vpf || !streq(vpf, pf->address))
                        continue;
                v = svff_pf_find_vf(pf, vf);
                if (!v || !v->driver || !streq(v->driver, driver))
                        return true;
        }
        return false;
}

static int apply(struct manager *m, const struct svff_pf *pf, bool restore, bool startup);

static bool read_cancelled(void *userdata) {
        struct image_read *r = userdata;

        return worker_pool_cancelled(r->pool);
}

static void image_read_done(void *userdata);

/* On the ops pool: the whole image, through its checks. */
static void image_read_run(void *userdata) {
        struct image_read *r = userdata;

        r->r = svff_flash_image_hash(r->image_dir, r->image, read_cancelled, r, &r->identity, &r->err);
        if (worker_pool_post(r->pool, image_read_done, r) < 0)
                log_oom();      /* lost: the next reload reads it again */
}

/* Main thread: the policy is applied again with what the read found. */
static void image_read_done(void *userdata) {
        struct image_read *r = userdata;
        struct autoinit *a = r->autoinit;
        struct manager *m;
        const struct svff_pf *pf;
        bool startup = r->startup;

        r->done = true;
        if (!a) {
                image_read_free(r);
                return;
        }
        m = a->manager;
        pf = m->shutting_down ? NULL : manager_snapshot_pf(m, r->address);
        if (pf)
                (void) apply(m, pf, false, startup);
        /* The pass took what it found, or took another way (the PF's
         * owner changed, the policy names another image): either way the
         * read is over, and only here is a read that is done freed. */
        image_read_unlink(r);
        image_read_free(r);
        if (startup)
                manager_notify_ready(m);
}

/* What the read of pol's image for pf found: 1 with the identity in
 * *ret (taken), -errno with err filled, or 0 when it is under way (it is
 * started if need be, and its end applies the policy again). A read
 * that is done is the one whose end is applying the policy now
 * (image_read_done() frees it after): it is read, never freed here. */
/* The newest image read for pf (a read started while another ends), or
 * NULL. */
static struct image_read *image_read_newest(struct autoinit *a, const char *pf) {
        struct image_read *r;

        for (r = a ? a->reads : NULL; r; r = r->next)
                if (streq(r->address, pf))
                        break;
        return r;
}

static int image_read_take(struct manager *m, const char *pf, const struct svff_policy *pol, bool startup,
                           struct json_object **ret, struct svff_error *err) {
        struct autoinit *a = m->autoinit;
        struct image_read *r = image_read_newest(a, pf);
        int k;

        if (r && !r->done) {
                if (startup && !r->startup) {
                        r->startup = true;
                        m->startup_reads++;
                }
                return 0;
        }
        if (r && streq(r->image, pol->image)) {
                k = r->r;
                if (k < 0)
                        return svff_error_set(err, k, "%s", svff_error_message(&r->err));
                if (!r->identity)
                        return svff_error_set(err, -ENOENT, "The read of image '%s' was taken already", r->image);
                *ret = TAKE_PTR(r->identity);
                return 1;
        }
        /* none, or one of an image the policy no longer names */

        r = calloc(1, sizeof(*r));
        if (!r || !(r->image = strdup(pol->image)) || !(r->image_dir = strdup(m->config.flash_image_dir))) {
                image_read_free(r);
                return svff_error_set(err, -ENOMEM, "Out of memory");
        }
        r->pool = m->ops_pool;
        snprintf(r->address, sizeof(r->address), "%s", pf);
        k = worker_pool_submit(m->ops_pool, image_read_run, r);
        if (k < 0) {
                image_read_free(r);
                return svff_error_set_errno(err, k, "Cannot start reading image '%s'", pol->image);
        }
        r->autoinit = a;
        r->started_usec = svff_now_usec();
        r->next = a->reads;
        a->reads = r;
        if (startup) {
                r->startup = true;
                m->startup_reads++;
        }
        log_info("PF %s: reading image '%s' for its SHA-256 (policy '%s', \"verify_image\": \"sha256\").", pf,
                 pol->image, pol->name);
        return 0;
}

/* The SHA-256 identity a finished read of pol's image for pf found,
 * without starting one or taking it: 1 with a copy in *ret, -errno with
 * err filled, or 0 when there is none (a dry run's). */
static int image_read_peek(struct manager *m, const char *pf, const struct svff_policy *pol,
                           struct json_object **ret, struct svff_error *err) {
        struct image_read *r = image_read_newest(m->autoinit, pf);

        if (!r || !r->done || !streq(r->image, pol->image))
                return 0;
        if (r->r < 0)
                return svff_error_set(err, r->r, "%s", svff_error_message(&r->err));
        if (!r->identity)
                return 0;
        *ret = svff_json_copy(r->identity);
        return *ret ? 1 : svff_error_set(err, -ENOMEM, "Out of memory");
}

/* What a reprogram takes beyond the hook and the numvfs writes: the
 * PF's removal, the rescan's wait for it (reconf-ops.c) and its bind. */
#define RESCAN_BUDGET_USEC (40 * USEC_PER_SEC)

/* What a pass over a PF does, decided before anything is done: apply()
 * carries it out; a reload's dry run (method_reload()) reports
 * it. */
enum policy_action {
        POLICY_NONE,            /* nothing to do: why, logged at level */
        POLICY_INIT,            /* an Init to numvfs VFs on driver */
        POLICY_REPROGRAM,       /* a reprogram with image, to numvfs (-1: the PF's count) */
        POLICY_REFUSED,         /* not applied: why (an event; Status's refusal unless not_recorded) */
        POLICY_HASH,            /* the image is read for its SHA-256 first */
};

struct policy_decision {
        enum policy_action action;
        int level;                      /* POLICY_NONE: LOG_DEBUG or LOG_INFO */
        const struct svff_policy *pol;  /* the matching policy, or NULL */
        int numvfs;
        const char *driver;             /* borrowed from the config or the store */
        int autoprobe;
        const char *new_owner;          /* POLICY_INIT: the count's owner from now on, or NULL */
        bool not_recorded;              /* POLICY_REFUSED: no refusal recorded for Status */
        bool before_policy;             /* decided before the policy was looked at: Status's
                                         * refusal stays as it was */
        char reason[512];
        char owner[256];
        char held[1400];                /* logged first: the PF holds the policy's image */
        char why[1400];                 /* POLICY_NONE, POLICY_REFUSED: the log line; else what it does */
        char event[1400];               /* POLICY_REFUSED: the event's text, when not why */
        bool oom;                       /* out of memory deciding: nothing decided */
};

/* A policy names an image: unless the store says svff last flashed that
 * very file to the PF, its init is a reprogram (quiesce, numvfs 0,
 * remove, flash, rescan, check, bind, then the policy's count). Decides
 * that for pf under cfg: 1 with d filled, or 0 when the PF holds the
 * image (the count is decided as usual). With dry_run, an image to hash
 * is not read (one read already is used). */
static int decide_image(struct manager *m, const struct svff_config *cfg, const struct svff_pf *pf,
                        const struct svff_policy *pol, bool startup, bool dry_run, struct policy_decision *d) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_(json_object_putp) struct json_object *identity = NULL;
        struct json_object *stored = svff_store_get_pf_image(m->store, pf->address);
        const char *had = NULL;
        struct stat st;
        int r = 0;

        snprintf(d->reason, sizeof(d->reason), "policy '%s' (%s)", pol->name, pol->origin);
        d->action = POLICY_REFUSED;
        if (!cfg->flash_hook || !cfg->flash_image_dir)
                snprintf(d->why, sizeof(d->why), "%s names image '%s', but no flash hook is configured: set "
                         "'flash_hook' and 'flash_image_dir' in svff.conf(5); not applied", d->reason, pol->image);
        else if (svff_flash_image_stat(cfg->flash_image_dir, pol->image, &st, &err) < 0)
                snprintf(d->why, sizeof(d->why), "%s names an image svff cannot flash: %s; not applied", d->reason,
                         svff_error_message(&err));
        else if (pol->verify_sha256 && dry_run && (r = image_read_peek(m, pf->address, pol, &identity, &err)) == 0) {
                d->action = POLICY_HASH;
                snprintf(d->why, sizeof(d->why), "%s names image '%s' with \"verify_image\": \"sha256\": it would "
                         "be read for its SHA-256 first, and the PF reprogrammed unless svff flashed that content",
                         d->reason, pol->image);
        } else if (pol->verify_sha256 && !dry_run && (r = image_read_take(m, pf->address, pol, startup, &identity,
                                                                           &err)) == 0)
                d->action = POLICY_HASH;
        else if (pol->verify_sha256 && r < 0)
                snprintf(d->why, sizeof(d->why), "%s names an image svff could not read for its SHA-256: %s; not "
                         "applied", d->reason, svff_error_message(&err));
        else if (!pol->verify_sha256 && !(identity = svff_flash_image_identity(pol->image, &st)))
                return log_oom();
        else if (pol->verify_sha256 ? svff_flash_image_same_content(stored, identity)
                                    : svff_flash_image_same(stored, identity)) {
                snprintf(d->held, sizeof(d->held), "PF %s holds image '%s' (%s), as svff flashed it%s.", pf->address,
                         pol->image, d->reason, pol->verify_sha256 ? ": the same content" : "");
                d->action = POLICY_NONE;
                return 0;
        } else {
                if (stored)
                        (void) svff_json_get_string(stored, "path", &had);
                /* present or not: the store's records */
                if (reconf_pf_has_assignments(m, pf->address))
                        snprintf(d->why, sizeof(d->why), "%s names image '%s', which svff has not flashed to the PF "
                                 "as it is now (%s%s%s), but VFs of the PF are assigned; not applied: 'svffctl "
                                 "reprogram %s %s' flashes it keeping them", d->reason, pol->image,
                                 had ? "it holds '" : "", had ?: "no flash recorded",
                                 !had ? ""
                                 : pol->verify_sha256 ? "', or with other content"
                                                      : "', or a file changed since",
                                 pf->address, pol->image);
                else if (!pf->driver) {
                        d->action = POLICY_NONE;
                        d->level = LOG_INFO;
                        snprintf(d->why, sizeof(d->why), "PF %s has no driver yet; %s waits for it to bind before it "
                                 "flashes '%s'.", pf->address, d->reason, pol->image);
                } else {
                        d->action = POLICY_REPROGRAM;
                        d->numvfs = pol->numvfs;
                        d->driver = pol->vf_driver ?: cfg->vf_driver;
                        snprintf(d->owner, sizeof(d->owner), SVFF_PF_OWNER_POLICY_PREFIX "%s", pol->name);
                        snprintf(d->why, sizeof(d->why), "%s names image '%s', %s", d->reason, pol->image,
                                 !had ? "which svff has no record of flashing to it"
                                 : !streq(had, pol->image) ? "not the one svff flashed last"
                                 : pol->verify_sha256 ? "whose content is not what svff flashed (or was not hashed "
                                                        "then)"
                                                      : "which changed since svff flashed it");
                }
        }
        return 1;
}

/* Carries out a reprogram decided by decide_image(). Returns 1 when it
 * was started, -EBUSY when an operation on the PF is in progress, or
 * -EAGAIN with the refusal in d when it could not start. */
static int apply_reprogram(struct manager *m, const struct svff_pf *pf, struct policy_decision *d, bool startup) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        const struct svff_policy *pol = d->pol;
        struct operation *op;
        int r;

        r = reconf_reprogram_own(m, pf->address, pol->image, pol->numvfs, d->driver, d->reason, d->owner, &err);
        if (r == -EBUSY && manager_find_operation(m, pf->address))
                return -EBUSY;
        if (r < 0) {
                d->action = POLICY_REFUSED;
                snprintf(d->why, sizeof(d->why), "%s names image '%s', but its reprogram could not start: %s; not "
                         "applied", d->reason, pol->image, svff_error_message(&err));
                return -EAGAIN;
        }
        log_notice("PF %s: %s; reprogramming it.", pf->address, d->why);
        /* It may have ended already. */
        op = manager_find_operation(m, pf->address);
        if (op && op->data && streq(op->kind, "reprogram")) {
                op->finished = init_done;
                if (startup && m->autoinit) {
                        unsigned to = pol->numvfs >= 0 ? (unsigned) pol->numvfs : pf->numvfs;

                        op->startup = true;
                        m->autoinit->startup_budget += m->config.flash_timeout_usec + RESCAN_BUDGET_USEC +
                                                       operation_init_budget(m, pf->numvfs, 0) +
                                                       operation_init_budget(m, 0, to);
                }
        }
        return 1;
}

static bool has_assignments(struct manager *m, const struct svff_pf *pf) {
        for (size_t i = 0; i < pf->n_vfs; i++)
                if (json_object_object_get_ex(svff_store_assignments(m->store), pf->vfs[i].address, NULL))
                        return true;
        return false;
}

/* Decides what pf should look like under cfg. restore: without a
 * policy, fall back to the stored desired state (a PF that came back).
 * dry_run: start nothing (decide_image()). */
static void decide(struct manager *m, const struct svff_config *cfg, const struct svff_pf *pf, bool restore,
                   bool startup, bool dry_run, struct policy_decision *d) {
        const struct svff_policy *pol;
        const char *owner;
        unsigned numvfs, stored;
        const char *driver = NULL;

        *d = (struct policy_decision) { .action = POLICY_NONE, .level = LOG_DEBUG, .autoprobe = -1 };
        if (reconf_journaled(m, pf->address) >= 0) {
                d->level = LOG_INFO;
                d->before_policy = true;
                snprintf(d->why, sizeof(d->why), "PF %s has an interrupted reconf; completing it decides the VF "
                         "count.", pf->address);
                return;
        }
        {
                _cleanup_free_ char *why = NULL;

                /* out of memory: unmanaged too, never the other way */
                if (svff_allowlist_check_pf(cfg->manage, cfg->manage_origin, m->ctx, pf, &why) != 0) {
                        d->before_policy = true;
                        snprintf(d->why, sizeof(d->why), "PF %s is %s: no policy or recorded state is applied to "
                                 "it.", pf->address, why ?: "not managed");
                        return;
                }
        }
        pol = d->pol = svff_config_find_policy(cfg, pf->address, pf->vendor_id, pf->device_id, pf->netdev);
        owner = manager_pf_owner(m, pf->address, pol, d->owner, sizeof(d->owner));
        if (pol && pol->image && (!owner || !streq(owner, SVFF_PF_OWNER_OPERATOR))) {
                int r = decide_image(m, cfg, pf, pol, startup, dry_run, d);

                if (r < 0) {
                        *d = (struct policy_decision) { .action = POLICY_NONE, .oom = true, .pol = pol };
                        snprintf(d->why, sizeof(d->why), "PF %s: out of memory deciding policy '%s'.", pf->address,
                                 pol->name);
                }
                if (r != 0)
                        return;
        }
        if (pol && pol->numvfs >= 0 && owner && !streq(owner, SVFF_PF_OWNER_OPERATOR)) {
                numvfs = (unsigned) pol->numvfs;
                driver = pol->vf_driver ?: cfg->vf_driver;
                d->autoprobe = pol->autoprobe;
                snprintf(d->reason, sizeof(d->reason), "policy '%s' (%s)", pol->name, pol->origin);
                d->new_owner = owner;
        } else if (pol && pol->numvfs >= 0 && !restore && !startup) {
                d->level = LOG_INFO;
                snprintf(d->why, sizeof(d->why), "PF %s: its VF count was set by an operator, so policy '%s' is not "
                         "applied; 'svffctl init %s --policy' hands it back.", pf->address, pol->name, pf->address);
                return;
        } else if (svff_store_get_pf(m->store, pf->address, &stored, &driver) > 0 && driver &&
                   (restore || (startup && assignments_need_restore(m, pf, driver)))) {
                numvfs = stored;
                snprintf(d->reason, sizeof(d->reason), "%s",
                         restore ? "the state svff recorded for it" : "the assignments recorded on its VFs");
        } else {
                snprintf(d->why, sizeof(d->why), "PF %s: no policy%s, leaving it as it is.", pf->address,
                         pol ? " with a VF count" : "");
                return;
        }
        d->numvfs = (int) numvfs;
        d->driver = driver;

        if (satisfied(pf, numvfs, driver)) {
                snprintf(d->why, sizeof(d->why), "PF %s already has %u VFs on %s (%s).", pf->address, numvfs, driver,
                         d->reason);
                return;
        }
        if (!pf->driver) {
                /* The kernel refuses sriov_numvfs without a PF driver; its
                 * bind event brings us back. */
                d->level = LOG_INFO;
                snprintf(d->why, sizeof(d->why), "PF %s has no driver yet; %s waits for it to bind.", pf->address,
                         d->reason);
                return;
        }
        if (has_assignments(m, pf) && ((pf->numvfs != numvfs && pf->numvfs > 0) || !streq(driver, "vfio-pci"))) {
                /* Changing the count destroys every VF, another driver
                 * takes them from vfio-pci: never behind the domains'
                 * backs. */
                d->action = POLICY_REFUSED;
                if (pf->numvfs != numvfs)
                        snprintf(d->why, sizeof(d->why), "%s asks for %u VFs instead of %u, but VFs of the PF are "
                                 "assigned; not applied: 'svffctl reconf %s %u' changes the count keeping them",
                                 d->reason, numvfs, pf->numvfs, pf->address, numvfs);
                else
                        snprintf(d->why, sizeof(d->why), "%s asks for driver '%s', but VFs of the PF are assigned "
                                 "and stay on vfio-pci; not applied", d->reason, driver);
                return;
        }
        if (numvfs > pf->totalvfs) {
                d->action = POLICY_REFUSED;
                d->not_recorded = true;
                snprintf(d->why, sizeof(d->why), "PF %s supports %u VFs, %s asks for %u; ignoring it.", pf->address,
                         pf->totalvfs, d->reason, numvfs);
                snprintf(d->event, sizeof(d->event), "%s asks for %u VFs, the PF supports %u", d->reason, numvfs,
                         pf->totalvfs);
                return;
        }
        d->action = POLICY_INIT;
        snprintf(d->why, sizeof(d->why), "%s asks for %u VFs on %s; the PF has %u", d->reason, numvfs, driver,
                 pf->numvfs);
}

/* A refusal decided: logged, emitted and, unless d says not, kept for
 * Status. */
static void refuse(struct manager *m, const struct svff_pf *pf, const struct policy_decision *d) {
        if (d->not_recorded) {
                log_warning("%s", d->why);
                emit(m, "policy-failed", pf->address, "%s", d->event);
                return;
        }
        log_warning("PF %s: %s.", pf->address, d->why);
        emit(m, "policy-failed", pf->address, "%s", d->why);
        set_refusal(m, pf->address, d->why);
}

static void arm(struct autoinit *a, const char *address, bool restore, bool retry);

/* How often a policy's waiting Init looks at its PF again. */
#define WAIT_RETRY_USEC (2 * USEC_PER_SEC)

/* The Init d asks for would wait behind a count write still in the
 * kernel, or run under an attach or detach of one of pf's VFs: it waits,
 * shown in Status, and the PF is looked at again every WAIT_RETRY_USEC
 * (a read known to be stuck is not repeated), without another pf-added
 * event. was: the PF's message in Status before this pass; logged only
 * when it changes. */
static void wait_busy(struct manager *m, const struct svff_pf *pf, const struct policy_decision *d, bool restore,
                      const char *was, const struct svff_error *err) {
        char why[sizeof(d->why) + 512];

        snprintf(why, sizeof(why), "%s; waiting: %s", d->why, svff_error_message(err));
        if (!streq(was, why))
                log_notice("PF %s: %s", pf->address, why);
        set_refusal(m, pf->address, why);
        if (m->autoinit)
                arm(m->autoinit, pf->address, restore, true);
}

/* Decides what pf should look like and starts an Init when it does not.
 * restore: without a policy, fall back to the stored desired state (a PF
 * that came back). Returns 1 when an Init was started, 0 when none was
 * needed or it waits (wait_busy()), -EBUSY when an operation on the PF is
 * in progress. */
static int apply(struct manager *m, const struct svff_pf *pf, bool restore, bool startup) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        _cleanup_free_ char *was = NULL;
        struct policy_decision d;
        int r;

        LOG_CONTEXT(.pf = pf->address, .operation = "policy");
        decide(m, &m->config, pf, restore, startup, false, &d);
        if (d.oom)
                return log_oom();
        if (*d.held)
                log_info("%s", d.held);
        if (autoinit_pf_refused(m, pf->address) && !(was = strdup(autoinit_pf_refused(m, pf->address))))
                return log_oom();
        if (!d.before_policy)
                set_refusal(m, pf->address, NULL);
        switch (d.action) {
        case POLICY_NONE:
                if (d.level == LOG_INFO)
                        log_info("%s", d.why);
                else
                        log_debug("%s", d.why);
                return 0;
        case POLICY_HASH:
                /* the read's end applies the policy again */
                return 0;
        case POLICY_REPROGRAM:
                /* A Reprogram by hand refuses a count write still in the
                 * kernel (request_start()): the policy waits for it, as
                 * its Init does below. */
                if (!startup && pf_busy(m, pf->address, pf->address, PF_BUSY_WRITE, &err) < 0) {
                        wait_busy(m, pf, &d, restore, was ?: "", &err);
                        return 0;
                }
                r = apply_reprogram(m, pf, &d, startup);
                if (r != -EAGAIN)
                        return r;
                refuse(m, pf, &d);
                return 0;
        case POLICY_REFUSED:
                refuse(m, pf, &d);
                return 0;
        case POLICY_INIT:
                break;
        }

        /* As an Init by hand asks (init_request()); another operation
         * on the PF refuses it below. Not at start-up: READY=1 waits for
         * the Inits started then, and the attaches and detaches a crash
         * left are resolved only once libvirt is connected, after it. */
        if (!startup && pf_busy(m, pf->address, pf->address, PF_BUSY_ASSIGN | PF_BUSY_WRITE, &err) < 0) {
                wait_busy(m, pf, &d, restore, was ?: "", &err);
                return 0;
        }
        r = operation_init_start(m, NULL, pf->address, (unsigned) d.numvfs, d.driver, d.autoprobe, d.reason,
                                 d.new_owner);
        if (r < 0) {
                if (r != -EBUSY)
                        log_warning_errno(r, "PF %s: could not start the init for %s: %m", pf->address, d.reason);
                return r;
        }
        {
                struct operation *op = manager_find_operation(m, pf->address);

                if (op) {
                        op->finished = init_done;
                        if (startup && m->autoinit) {
                                op->startup = true;
                                m->autoinit->startup_budget +=
                                        operation_init_budget(m, pf->numvfs, (unsigned) d.numvfs);
                        }
                }
        }
        return 1;
}

/* Runs once a snapshot newer than the settled events exists. */
static void snapshot_ready(struct manager *m, struct call *call, _unused_ void *userdata) {
        struct autoinit *a = m->autoinit;
        struct pending **pp = &a->pending;

        a->waiting = false;
        while (*pp) {
                struct pending *p = *pp;
                const struct svff_pf *pf;
                int r = 0;

                if (p->timer) {
                        pp = &p->next;
                        continue;
                }
                *pp = p->next;
                pf = manager_snapshot_pf(m, p->address);
                if (!pf) {
                        LOG_CONTEXT(.pf = p->address, .operation = "uevent");

                        log_debug("%s is not an SR-IOV PF (or is gone again), ignoring its event.",
                                  p->address);
                } else {
                        if (!p->retry)
                                emit(m, "pf-added", pf->address, "PF %s (%04x:%04x) is present", pf->address,
                                     pf->vendor_id, pf->device_id);
                        r = apply(m, pf, p->restore, false);
                }
                if (r == -EBUSY) {
                        /* Its operation will change it anyway; look again
                         * once that is over. */
                        arm(a, p->address, p->restore, false);
                }
                pending_free(p);
        }
}

static int on_settled(sd_event_source *s, uint64_t usec, void *userdata) {
        struct pending *p = userdata;
        struct autoinit *a = p->autoinit;
        struct manager *m = a->manager;

        p->timer = sd_event_source_disable_unref(p->timer);
        /* Read the host again: the PF is new to every snapshot so far. */
        manager_sysfs_changed(m, NULL);
        if (!a->waiting) {
                a->waiting = true;
                manager_with_snapshot(m, NULL, snapshot_ready, NULL, NULL);
        }
        return 0;
}

/* (Re)starts the settle timer of address: settle_msec after its event,
 * or, retry, WAIT_RETRY_USEC after a pass whose policy waits (no
 * pf-added then; an event of its own gives one again). */
static void arm(struct autoinit *a, const char *address, bool restore, bool retry) {
        struct manager *m = a->manager;
        struct pending **pp = find_pending(a, address), *p;
        uint64_t now_usec, delay = retry ? MAX(m->config.settle_usec, WAIT_RETRY_USEC) : m->config.settle_usec;
        int r;

        if (pp && (*pp)->timer) {
                p = *pp;
                p->restore = p->restore || restore;
                p->retry = retry;
                (void) sd_event_source_set_time_relative(p->timer, delay);
                return;
        }
        p = calloc(1, sizeof(*p));
        if (!p) {
                log_oom();
                return;
        }
        p->autoinit = a;
        p->restore = restore;
        p->retry = retry;
        snprintf(p->address, sizeof(p->address), "%s", address);
        (void) sd_event_now(m->event, CLOCK_MONOTONIC, &now_usec);
        p->started_usec = now_usec;
        r = sd_event_add_time(m->event, &p->timer, CLOCK_MONOTONIC, now_usec + delay, 0, on_settled, p);
        if (r < 0) {
                log_warning_errno(r, "Failed to arm the settle timer of %s, ignoring its event: %m",
                                  address);
                free(p);
                return;
        }
        p->next = a->pending;
        a->pending = p;
}

/* Whether address is a VF: one svff recorded, any other one present
 * (it has a physfn link), or one the last snapshot saw. A VF is never a
 * PF, so its events need no settle timer nor another pass over the
 * host; a reconf adds and binds a whole PF's worth of them at once. */
static bool known_vf(struct manager *m, const char *address) {
        char path[64];

        if (svff_store_get_vf(m->store, address, NULL, NULL) > 0)
                return true;
        snprintf(path, sizeof(path), "bus/pci/devices/%s/physfn", address);
        if (svff_sysfs_exists(svff_ctx_get_rootfd(m->ctx), path) > 0)
                return true;
        for (size_t i = 0; m->snapshot && i < m->snapshot->n_pfs; i++)
                if (svff_pf_find_vf(m->snapshot->pfs[i], address))
                        return true;
        return false;
}

void autoinit_handle_uevent(struct manager *m, const char *action, const char *address) {
        struct autoinit *a = m->autoinit;
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs = 0;
        size_t n_records = 0, n_assigned = 0;

        if (!a || m->shutting_down)
                return;
        if (svff_pci_addr_canonicalize(address, pf) < 0) {
                log_debug("Ignoring a uevent for '%s': not a PCI address.", address);
                return;
        }

        if (streq(action, "add") || streq(action, "bind")) {
                if (known_vf(m, pf))
                        return;
                LOG_CONTEXT(.pf = pf, .operation = "uevent");
                log_debug("PCI %s: %s; applying its policy once it settles.", pf, action);
                /* A PF svff has records of came back: its recorded state
                 * is the desired one unless a policy says otherwise. */
                arm(a, pf, true, false);
                return;
        }
        if (!streq(action, "remove"))
                return;

        {
                struct pending **pp = find_pending(a, pf);

                if (pp) {
                        struct pending *p = *pp;

                        *pp = p->next;
                        pending_free(p);
                }
        }
        if (!manager_snapshot_pf(m, pf) && svff_store_get_pf(m->store, pf, &numvfs, NULL) <= 0)
                return;  /* not a PF svff knows: a VF or another device */

        json_object_object_foreach(svff_store_vfs(m->store), vf, rec) {
                const char *vpf = NULL;

                if (svff_json_get_string(rec, "pf", &vpf) < 0 || !streq(vpf, pf))
                        continue;
                n_records++;
                if (json_object_object_get_ex(svff_store_assignments(m->store), vf, NULL))
                        n_assigned++;
        }
        manager_sysfs_changed(m, NULL);
        LOG_CONTEXT(.pf = pf, .operation = "uevent");
        log_notice("PF %s was removed; its %zu VF record(s) and %zu assignment(s) are kept and marked absent.",
                   pf, n_records, n_assigned);
        emit(m, "pf-removed", pf, "PF %s is absent; %zu VF record(s), %zu assignment(s) kept", pf,
             n_records, n_assigned);
}

static void reload_with_snapshot(struct manager *m, struct call *call, _unused_ void *userdata) {
        (void) call;
        if (m->autoinit && m->autoinit->reloads_waiting > 0)
                m->autoinit->reloads_waiting--;
        if (!m->autoinit || !m->snapshot || m->snapshot->error < 0)
                return;
        for (size_t i = 0; i < m->snapshot->n_pfs; i++)
                (void) apply(m, m->snapshot->pfs[i], false, false);
}

void autoinit_reload(struct manager *m) {
        /* The host as it is now: a PF an operation (a reprogram) took
         * off the bus and brought back is not in an older snapshot. */
        if (!m->autoinit)
                return;
        m->autoinit->reloads_waiting++;
        m->autoinit->reload_usec = svff_now_usec();
        manager_with_snapshot(m, NULL, reload_with_snapshot, NULL, NULL);
}

int autoinit_reload_config(struct manager *m) {
        int r;

        (void) sd_notify(false, "RELOADING=1\nSTATUS=Reloading the configuration.");
        r = manager_reload_config(m);
        if (r >= 0)
                autoinit_reload(m);
        (void) sd_notify(false, "READY=1");
        manager_notify_status(m);
        return r;
}

void autoinit_foreach_pending(struct manager *m, autoinit_pending_fn fn, void *userdata) {
        struct autoinit *a = m->autoinit;

        if (!a)
                return;
        if (a->reloads_waiting > 0)
                fn(NULL, "reload", a->reload_usec, userdata);
        for (struct pending *p = a->pending; p; p = p->next)
                if (p->timer)
                        fn(p->address, "settle", p->started_usec, userdata);
        for (struct image_read *r = a->reads; r; r = r->next)
                if (!r->done)
                        fn(r->address, "image-hash", r->started_usec, userdata);
}

unsigned autoinit_startup(struct manager *m) {
        unsigned n = 0;

        if (!m->snapshot || m->snapshot->error < 0)
                return 0;
        if (m->autoinit)
                m->autoinit->startup_budget = 0;
        for (size_t i = 0; i < m->snapshot->n_pfs; i++)
                if (apply(m, m->snapshot->pfs[i], false, true) > 0)
                        n++;
        /* READY=1 waits for these Inits (so libvirt, ordered after svffd,
         * starts no domain before its VFs exist), and each is bounded by
         * deadlines that grow with its VF count: tell systemd how long
         * start-up may take now, so TimeoutStartSec= does not kill a
         * 252-VF start-up that is merely slow. The Inits share the ops
         * pool, so in the worst case they run one after another. */
        if (n > 0 && m->autoinit)
                (void) sd_notifyf(false, "EXTEND_TIMEOUT_USEC=%llu\nSTATUS=Applying the policies of %u PF(s).",
                                  (unsigned long long) (m->autoinit->startup_budget + 10 * USEC_PER_SEC), n);
        return n;
}

/* ---- Reload ---- */

static const char *const policy_action_names[] = {
        [POLICY_NONE] = "none",
        [POLICY_INIT] = "init",
        [POLICY_REPROGRAM] = "reprogram",
        [POLICY_HASH] = "hash",
        [POLICY_REFUSED] = "refused",
};

static struct json_object *decision_json(const struct svff_pf *pf, const struct policy_decision *d) {
        struct json_object *o = json_object_new_object();
        bool count = d->action == POLICY_INIT || d->action == POLICY_REPROGRAM;
        char msg[sizeof(d->held) + sizeof(d->why) + 1];

        if (!o)
                return NULL;
        snprintf(msg, sizeof(msg), "%s%s%s", d->held, *d->held ? " " : "",
                 d->action == POLICY_REFUSED && *d->event ? d->event : d->why);
        json_object_object_add(o, "pf", json_object_new_string(pf->address));
        json_object_object_add(o, "action", json_object_new_string(policy_action_names[d->action]));
        json_object_object_add(o, "policy", d->pol ? json_object_new_string(d->pol->name) : NULL);
        json_object_object_add(o, "numvfs", count && d->numvfs >= 0 ? json_object_new_int(d->numvfs) : NULL);
        json_object_object_add(o, "driver", count && d->driver ? json_object_new_string(d->driver) : NULL);
        json_object_object_add(o, "image", d->action == POLICY_REPROGRAM || d->action == POLICY_HASH
                                                   ? json_object_new_string(d->pol->image) : NULL);
        if (json_object_object_add(o, "message", svff_json_new_text(msg)) < 0 ||
            !json_object_object_get(o, "message")) {
                json_object_put(o);
                return NULL;
        }
        return o;
}

static void reload_config_free(void *userdata) {
        struct svff_config *c = userdata;

        if (!c)
                return;
        svff_config_done(c);
        free(c);
}

/* The dry run over a fresh snapshot: every PF, as a reload's pass would
 * decide it under c. */
static void reload_plan_answer(struct manager *m, struct call *call, void *userdata) {
        struct svff_config *c = userdata;
        struct snapshot *s = m->snapshot;
        struct json_object *reply, *pfs;

        if (s->error < 0) {
                call_errorf(call, SVFF_ERROR_OPERATION_FAILED, "device", m->config.sysfs_root,
                            "Discovering PFs failed: %s", strna(s->error_message));
                reload_config_free(c);
                return;
        }
        reply = json_object_new_object();
        pfs = json_object_new_array();
        for (size_t i = 0; reply && pfs && i < s->n_pfs; i++) {
                struct policy_decision d;
                struct json_object *o;

                decide(m, c, s->pfs[i], false, false, true, &d);
                o = decision_json(s->pfs[i], &d);
                if (!o || json_object_array_add(pfs, o) < 0) {
                        json_object_put(o);
                        json_object_put(pfs);
                        pfs = NULL;
                }
        }
        if (!reply || !pfs) {
                json_object_put(reply);
                json_object_put(pfs);
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
        } else {
                json_object_object_add(reply, "dry_run", json_object_new_boolean(true));
                json_object_object_add(reply, "path", json_object_new_string(settings_path(&m->cmdline)));
                json_object_object_add(reply, "pfs", pfs);
                call_reply(call, reply);
                json_object_put(reply);
        }
        reload_config_free(c);
}

struct reload_params {
        bool dry_run;
};

static const struct param reload_param_table[] = {
        { "dry_run", PARAM_BOOL, false, offsetof(struct reload_params, dry_run), 0, "true or false" },
        PARAM_END,
};

static void method_reload(struct manager *m, struct call *call, void *params) {
        _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
        const struct reload_params *p = params;
        struct svff_config *c;
        struct json_object *reply;
        int r;

        if (!p->dry_run) {
                log_info("Reload of the configuration requested by uid %u.", (unsigned) call_peer(call)->uid);
                r = autoinit_reload_config(m);
                if (r < 0 && r != -ENOMEM && m->config_error) {
                        call_errorf(call, SVFF_ERROR_CONFIG_INVALID, "path", settings_path(&m->cmdline),
                                    "%s; svffd keeps the settings it runs with.", m->config_error);
                        return;
                }
                if (r < 0) {
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Reloading the configuration failed: %s.",
                                    strerror(-r));
                        return;
                }
                reply = json_object_new_object();
                if (!reply) {
                        call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                        return;
                }
                json_object_object_add(reply, "dry_run", json_object_new_boolean(false));
                json_object_object_add(reply, "path", json_object_new_string(settings_path(&m->cmdline)));
                call_reply(call, reply);
                json_object_put(reply);
                return;
        }
        c = calloc(1, sizeof(*c));
        if (!c) {
                call_errorf(call, SVFF_ERROR_INTERNAL, NULL, NULL, "Out of memory.");
                return;
        }
        r = settings_read(&m->cmdline, c, &err);
        if (r < 0) {
                free(c);
                call_errorf(call, SVFF_ERROR_CONFIG_INVALID, "path", settings_path(&m->cmdline),
                            "%s; a reload would keep the settings svffd runs with.",
                            svff_error_is_set(&err) ? svff_error_message(&err) : strerror(-r));
                return;
        }
        /* The host as it is now, as a reload's pass takes it. */
        manager_with_snapshot(m, call, reload_plan_answer, c, reload_config_free);
}

const struct method reload_method = {
        "Reload", method_reload, reload_param_table, sizeof(struct reload_params), NULL, METHOD_PRIVILEGED,
};

#ifdef SVFF_FAULT_POINTS
struct uevent_params {
        const char *action;
        const char *device;
};

static const struct param uevent_param_table[] = {
        { "action", PARAM_STRING, true, offsetof(struct uevent_params, action), 0, "add, bind or remove" },
        { "device", PARAM_STRING, true, offsetof(struct uevent_params, device), 0, "a PCI address" },
        PARAM_END,
};

static void method_debug_inject_uevent(struct manager *m, struct call *call, void *params) {
        const char *action = ((const struct uevent_params *) params)->action;
        const char *device = ((const struct uevent_params *) params)->device;

        if (!streq(action, "add") && !streq(action, "remove") && !streq(action, "bind")) {
                call_errorf(call, SVFF_ERROR_INVALID_PARAMETER, "parameter", "action",
                            "Parameter 'action' must be add, bind or remove.");
                return;
        }
        {
                LOG_CONTEXT(.pf = device, .operation = "uevent");

                log_info("Injected uevent: %s %s.", action, device);
        }
        autoinit_handle_uevent(m, action, device);
        call_reply(call, NULL);
}

const struct method inject_uevent_method = {
        "InjectUevent", method_debug_inject_uevent, uevent_param_table, sizeof(struct uevent_params), NULL,
        METHOD_PRIVILEGED,
};
#endif

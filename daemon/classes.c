/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include <errno.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "classes.h"
#include "journal.h"
#include "device.h"
#ifdef SVFF_FAULT_POINTS
#include "class-nic.h"
#include "class-nvme.h"
#include "nl-fake.h"
#include "nvme-standin.h"
#endif
#include "json-util.h"
#include "log.h"
#include "sysfs.h"

/* One lock per PF that ever ran a class step: a handful of entries,
 * kept until svffd exits, so a worker never frees one another waits on.
 * The one table of the process: the steps of one PF run on the ops pool,
 * the discovery pool and the libvirt pool alike, and must all see it. */
struct pf_lock {
        struct pf_lock *next;
        char pf[SVFF_PCI_ADDR_STRLEN];
        pthread_mutex_t mutex;
};

static pthread_mutex_t locks_mutex = PTHREAD_MUTEX_INITIALIZER;
static struct pf_lock *locks;

static struct pf_lock *pf_lock_get(const char *pf) {
        struct pf_lock *l;

        pthread_mutex_lock(&locks_mutex);
        for (l = locks; l; l = l->next)
                if (streq(l->pf, pf))
                        break;
        if (!l) {
                l = calloc(1, sizeof(*l));
                if (l) {
                        snprintf(l->pf, sizeof(l->pf), "%s", pf);
                        pthread_mutex_init(&l->mutex, NULL);
                        l->next = locks;
                        locks = l;
                }
        }
        pthread_mutex_unlock(&locks_mutex);
        return l;
}

#ifdef SVFF_FAULT_POINTS
/* Test builds only, for the host tier, where pcisim has a PF's sysfs but
 * no device runs behind it:
 * - SVFF_TEST_NVME_STANDIN=1 opens every NVMe PF through a stand-in for
 *   its admin queue (tests/nvme-standin.c, a model of QEMU's emulated
 *   controller);
 * - SVFF_TEST_NIC_STANDIN=1 opens every NIC PF through a stand-in for
 *   its driver behind rtnetlink (tests/nl-fake.c), which keeps each VF's
 *   MAC, VLAN and trust as the kernel's do_setvfinfo() applies them.
 * One model per PF, kept for the process (a restart starts from a fresh
 * device). Each learns the VF count from sysfs at each open, as the real
 * ones do from the PF's SR-IOV capability; a NIC model whose count
 * changed starts its VFs from the drivers' defaults, as a VF disable
 * leaves them. It sees counts only, not the writes between them: through
 * 0 and back to the same count (reconf --cycle) its VFs keep their
 * settings, which a real driver would have reset. Guarded by the PF's
 * lock like the real ones.
 * - SVFF_TEST_NVME_STANDIN_NQN names a file: while it exists, its first
 *   line is the subsystem NQN every NVMe model gives from its next open
 *   on, as a device whose firmware or configuration changed it would. */
struct standin {
        struct standin *next;
        char pf[SVFF_PCI_ADDR_STRLEN];
        struct nvme_standin model;
        struct nl_fake *nic;
};

static struct standin *standins;        /* under locks_mutex */

static struct standin *standin_for(const char *pf) {
        struct standin *i;

        pthread_mutex_lock(&locks_mutex);
        for (i = standins; i; i = i->next)
                if (streq(i->pf, pf))
                        break;
        if (!i && (i = calloc(1, sizeof(*i)))) {
                snprintf(i->pf, sizeof(i->pf), "%s", pf);
                nvme_standin_init_qemu(&i->model);
                i->next = standins;
                standins = i;
        }
        pthread_mutex_unlock(&locks_mutex);
        return i;
}

static bool standin_on(const char *name) {
        const char *e = getenv(name);

        return e && streq(e, "1");
}

static int standin_open(struct svff_ctx *ctx, const struct svff_class *class, const struct svff_pf *pf,
                        struct svff_class_pf **ret, struct svff_error *err) {
        bool nvme = streq(class->name, "nvme") && standin_on("SVFF_TEST_NVME_STANDIN");
        bool nic = streq(class->name, "nic") && standin_on("SVFF_TEST_NIC_STANDIN");
        struct standin *s;

        if (!nvme && !nic)
                return class->open(ctx, pf, ret, err);
        s = standin_for(pf->address);
        if (!s)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        if (nvme) {
                const char *nqn = getenv("SVFF_TEST_NVME_STANDIN_NQN");
                _cleanup_fclose_ FILE *f = nqn ? fopen(nqn, "re") : NULL;

                if (f && fgets(s->model.subnqn, sizeof(s->model.subnqn), f))
                        s->model.subnqn[strcspn(s->model.subnqn, "\n")] = '\0';
                nvme_standin_set_numvfs(&s->model, pf->numvfs);
                return svff_class_nvme_open_with(ctx, pf, &nvme_standin_ops, &s->model, ret, err);
        }
        if (!pf->netdev)
                return svff_error_set(err, -EOPNOTSUPP, "PF %s has no network interface", pf->address);
        if (!s->nic)
                s->nic = nl_fake_new(pf->netdev, pf->numvfs);
        else if (s->nic->numvfs != pf->numvfs)
                nl_fake_reset(s->nic, pf->numvfs);
        return svff_class_nic_open_beside(ctx, pf, nl_fake_open(s->nic), ret, err);
}
#else
static int standin_open(struct svff_ctx *ctx, const struct svff_class *class, const struct svff_pf *pf,
                        struct svff_class_pf **ret, struct svff_error *err) {
        return class->open(ctx, pf, ret, err);
}
#endif

/* pf opened by its class, its lock held. */
struct opened {
        struct pf_lock *lock;
        struct svff_pf *pf;
        const struct svff_class *class;
        struct svff_class_pf *c;
};

#ifdef SVFF_FAULT_POINTS
/* Test builds: the stand-in's model after each step, as
 * $SVFF_TEST_NVME_STANDIN_DUMP/<pf>, so a test reads the device and not
 * svff's records. Replaced whole: a reader sees one step's end. */
static void standin_dump(const struct opened *o) {
        const char *dir = getenv("SVFF_TEST_NVME_STANDIN_DUMP");
        _cleanup_free_ char *path = NULL, *tmp = NULL;
        struct standin *s;
        FILE *f;

        if (!dir || !o->class || !streq(o->class->name, "nvme") || !o->pf ||
            !(s = standin_for(o->pf->address)))
                return;
        if (asprintf(&path, "%s/%s", dir, o->pf->address) < 0 || asprintf(&tmp, "%s.tmp", path) < 0)
                return;
        f = fopen(tmp, "we");
        if (!f)
                return;
        nvme_standin_dump(&s->model, f);
        if (fclose(f) == 0)
                (void) rename(tmp, path);
}
#else
static void standin_dump(const struct opened *o) {
        (void) o;
}
#endif

static void opened_done(struct opened *o) {
        standin_dump(o);
        if (o->class && o->class->close && o->c)
                o->class->close(o->c);
        if (o->lock)
                pthread_mutex_unlock(&o->lock->mutex);
        svff_pf_free(o->pf);
        *o = (struct opened) {};
}

/* 0: pf has no class (o holds nothing); 1: opened. */
static int opened_open(struct svff_ctx *ctx, const char *pf, bool try, struct opened *o,
                       struct svff_error *err) {
        const struct svff_class *class;
        int r;

        *o = (struct opened) {};
        /* A try (a read-only look) never waits for a VF count write,
         * which holds every read of the PF's count: busy, as a step is. */
        r = try ? svff_pf_load_nowait(ctx, pf, &o->pf, err) : svff_pf_load(ctx, pf, &o->pf, err);
        if (r < 0)
                return r;
        if (svff_pf_is_unread(o->pf)) {
                opened_done(o);
                return svff_error_set(err, -EBUSY, "The VF count of PF %s is being changed", pf);
        }
        class = svff_class_find(ctx, o->pf);
        if (!class) {
                opened_done(o);
                return 0;
        }
        o->lock = pf_lock_get(o->pf->address);
        if (!o->lock) {
                opened_done(o);
                return svff_error_set(err, -ENOMEM, "Out of memory");
        }
        if (try) {
                if (pthread_mutex_trylock(&o->lock->mutex) != 0) {
                        o->lock = NULL;
                        opened_done(o);
                        return svff_error_set(err, -EBUSY, "A %s step on PF %s is in progress", class->name, pf);
                }
        } else
                pthread_mutex_lock(&o->lock->mutex);
        o->class = class;
        if (class->open) {
                r = standin_open(ctx, class, o->pf, &o->c, err);
                if (r < 0) {
                        o->class = NULL;
                        opened_done(o);
                        return svff_error_is_set(err) ? r : svff_error_set_errno(err, r, "Cannot open PF %s for its %s class",
                                                                                pf, class->name);
                }
        }
        return 1;
}

/* The member of policy named after class, overlaid with assignment. */
static struct json_object *settings_for(const struct svff_class *class, struct json_object *policy,
                                        struct json_object *assignment) {
        struct json_object *p = NULL;

        if (policy)
                (void) json_object_object_get_ex(policy, class->name, &p);
        return svff_class_settings_merge(p, assignment);
}

struct json_object *classes_settings_array(const struct svff_class *class, struct json_object *policy,
                                           struct json_object *assignments, unsigned numvfs) {
        struct json_object *a = json_object_new_array_ext((int) numvfs);

        for (unsigned i = 0; a && i < numvfs; i++) {
                struct json_object *asg = NULL;
                char key[16];

                snprintf(key, sizeof(key), "%u", i);
                if (assignments)
                        (void) json_object_object_get_ex(assignments, key, &asg);
                json_object_array_add(a, settings_for(class, policy, asg));
        }
        return a;
}

int classes_load_all(const struct svff_class *class, const struct svff_class_pf *c, struct json_object *policy,
                     struct json_object *assignments, unsigned numvfs, struct svff_class_settings ***ret,
                     struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *settings = NULL;

        settings = classes_settings_array(class, policy, assignments, numvfs);
        if (!settings)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        return svff_class_load_all(class, c, settings, numvfs, ret, err);
}

struct classes_loaded {
        const struct svff_class *class;
        struct svff_class_settings **s;
        unsigned n;
};

void classes_loaded_free(struct classes_loaded *l) {
        if (!l)
                return;
        svff_class_unload_all(l->class, l->s, l->n);
        free(l);
}

/* The loaded value of VF index, when l is for class. Borrowed. */
static const struct svff_class_settings *loaded_for(const struct classes_loaded *l, const struct svff_class *class,
                                                    unsigned index) {
        if (!l || l->class != class || index >= l->n)
                return NULL;
        return l->s[index];
}

/* try: a dry run's, which never waits for a step or a write of pf
 * (-EBUSY instead). prepare: an init's, which logs what the plan
 * needs, goes on to the PF-wide changes on the same settings (*prepare
 * set once they start), and keeps them for its provision in
 * *ret_loaded. */
static int plan_sync(struct svff_ctx *ctx, const char *pf, unsigned numvfs, struct json_object *policy,
                     struct json_object *assignments, bool try, bool *prepare, struct json_object **ret,
                     const char **ret_class_name, struct classes_loaded **ret_loaded, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *plan = NULL;
        struct svff_class_settings **settings = NULL;
        struct json_object *needs;
        struct opened o;
        int r;

        r = opened_open(ctx, pf, try, &o, err);
        if (r <= 0)
                return r;
        if (ret_class_name)
                *ret_class_name = o.class->name;  /* static in the registry */
        r = classes_load_all(o.class, o.c, policy, assignments, numvfs, &settings, err);
        if (r >= 0 && o.class->plan)
                r = o.class->plan(o.c, o.pf, numvfs, settings, &plan, err);
        if (r >= 0 && prepare && plan && json_object_object_get_ex(plan, "needs", &needs))
                svff_ctx_log(ctx, LOG_INFO, __FILE__, __LINE__, __func__, "PF %s, %s class: %s.", o.pf->address,
                             o.class->name, json_object_get_string(needs));
        if (r >= 0 && prepare && o.class->prepare) {
                *prepare = true;
                r = o.class->prepare(o.c, o.pf, numvfs, settings, err);
        }
        if (r >= 0 && ret_loaded) {
                *ret_loaded = calloc(1, sizeof(**ret_loaded));
                if (*ret_loaded)
                        **ret_loaded = (struct classes_loaded) { o.class, TAKE_PTR(settings), numvfs };
        }
        svff_class_unload_all(o.class, settings, numvfs);
        if (r >= 0) {
                if (!plan)
                        plan = json_object_new_object();
                if (plan && json_object_is_type(plan, json_type_object))
                        json_object_object_add(plan, "class", json_object_new_string(o.class->name));
                *ret = TAKE_PTR(plan);
                r = 1;
        }
        opened_done(&o);
        return r;
}

int classes_plan_prepare_sync(struct svff_ctx *ctx, const char *pf, unsigned numvfs,
                              struct json_object *policy, struct json_object *assignments, struct json_object **ret,
                              const char **ret_class_name, bool *prepared, struct classes_loaded **ret_loaded,
                              struct svff_error *err) {
        *prepared = false;
        *ret_loaded = NULL;
        return plan_sync(ctx, pf, numvfs, policy, assignments, false, prepared, ret, ret_class_name, ret_loaded,
                         err);
}

/* Whose the VF is after the step. */
enum ensure_for {
        ENSURE_ANY,             /* no domain's in particular */
        /* another tenant (or the pool): what recorded says the VF holds
         * is released first, unless the VF is verified to be exactly as
         * asked already */
        ENSURE_HANDOVER,
        /* the domain that had it: its guest's driver takes it back as
         * the device it knew (provision's tenant, class.h) */
        ENSURE_TENANT,
};

/* given: the VF's settings as loaded already (classes_loaded), or NULL
 * to load them here. */
static int ensure_opened(struct opened *op, unsigned index, struct json_object *policy,
                         struct json_object *assignment, struct json_object *recorded, enum ensure_for whose,
                         const struct svff_class_settings *given, struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *settings = NULL, *state = NULL, *rec = NULL;
        struct json_object *rsettings = NULL, *rstate = NULL;
        const char *rname = NULL;
        struct opened o = *op;
        int r = 0;

        settings = settings_for(o.class, policy, assignment);
        if (!settings) {
                r = svff_error_set(err, -ENOMEM, "Out of memory");
                goto finish;
        }
        /* Already as asked and as recorded: nothing to do, and nothing
         * done to a VF a guest may be using (an init that reasserts the
         * count of a PF with assigned VFs). */
        if (recorded && o.class->verify && svff_json_get_string(recorded, "name", &rname) >= 0 &&
            streq(rname, o.class->name) && json_object_object_get_ex(recorded, "settings", &rsettings) &&
            json_object_object_get_ex(recorded, "state", &rstate) && rstate &&
            json_object_equal(rsettings, settings)) {
                _cleanup_(svff_error_free) struct svff_error verr = SVFF_ERROR_NULL;

                if (o.class->verify(o.c, o.pf, index, rstate, &verr) >= 0) {
                        if (json_object_deep_copy(recorded, &rec, NULL) < 0)
                                r = svff_error_set(err, -ENOMEM, "Out of memory");
                        else {
                                *ret = TAKE_PTR(rec);
                                r = 2;
                        }
                        goto finish;
                }
        }
        if (whose == ENSURE_HANDOVER && o.class->release && recorded &&
            svff_json_get_string(recorded, "name", &rname) >= 0 &&
            streq(rname, o.class->name) && json_object_object_get_ex(recorded, "state", &rstate) && rstate) {
                r = o.class->release(o.c, o.pf, index, rstate, err);
                if (r < 0)
                        goto finish;
        }
        if (o.class->provision) {
                struct svff_class_settings *loaded = NULL;
                struct json_object *prior = NULL;

                /* The class keeps what it saved in the VF's state (a NIC
                 * VF's settings from before svff) through a reprovision. */
                if (o.class->wants_recorded_state && recorded &&
                    svff_json_get_string(recorded, "name", &rname) >= 0 && streq(rname, o.class->name))
                        (void) json_object_object_get_ex(recorded, "state", &prior);
                if (!given)
                        r = o.class->load(o.c, index, settings, &loaded, err);
                if (r >= 0)
                        r = o.class->provision(o.c, o.pf, index, given ?: loaded, prior, whose == ENSURE_TENANT,
                                               &state, err);
                if (loaded)
                        o.class->unload(loaded);
        }
        if (r >= 0 && o.class->verify)
                r = o.class->verify(o.c, o.pf, index, state, err);
        if (r >= 0) {
                rec = json_object_new_object();
                if (!rec)
                        r = svff_error_set(err, -ENOMEM, "Out of memory");
        }
        if (r >= 0) {
                json_object_object_add(rec, "name", json_object_new_string(o.class->name));
                json_object_object_add(rec, "settings", TAKE_PTR(settings));
                json_object_object_add(rec, "state", TAKE_PTR(state));
                *ret = TAKE_PTR(rec);
                r = 1;
        }
finish:
        return r;
}

/* ensure_opened() on pf opened for this one step. */
static int ensure_sync(struct svff_ctx *ctx, const char *pf, unsigned index, struct json_object *policy,
                       struct json_object *assignment, struct json_object *recorded, enum ensure_for whose,
                       struct json_object **ret, struct svff_error *err) {
        struct opened o;
        int r;

        r = opened_open(ctx, pf, false, &o, err);
        if (r <= 0)
                return r;
        r = ensure_opened(&o, index, policy, assignment, recorded, whose, NULL, ret, err);
        opened_done(&o);
        return r;
}

int classes_ensure_sync(struct svff_ctx *ctx, const char *pf, unsigned index, struct json_object *policy,
                        struct json_object *assignment, struct json_object *recorded, struct json_object **ret,
                        struct svff_error *err) {
        return ensure_sync(ctx, pf, index, policy, assignment, recorded, ENSURE_TENANT, ret, err);
}

int classes_handover_sync(struct svff_ctx *ctx, const char *pf, unsigned index, struct json_object *policy,
                          struct json_object *assignment, struct json_object *recorded, struct json_object **ret,
                          struct svff_error *err) {
        return ensure_sync(ctx, pf, index, policy, assignment, recorded, ENSURE_HANDOVER, ret, err);
}

/* ---- a PF held open for many VFs' steps ---- */

struct classes_open {
        struct opened o;
};

int classes_open_sync(struct svff_ctx *ctx, const char *pf, struct classes_open **ret, struct svff_error *err) {
        struct classes_open *co;
        int r;

        *ret = NULL;
        co = calloc(1, sizeof(*co));
        if (!co)
                return svff_error_set(err, -ENOMEM, "Out of memory");
        r = opened_open(ctx, pf, false, &co->o, err);
        if (r <= 0) {
                free(co);
                return r;
        }
        *ret = co;
        return 1;
}

void classes_close(struct classes_open *co) {
        if (!co)
                return;
        opened_done(&co->o);
        free(co);
}

int classes_ensure_open(struct classes_open *co, unsigned index, struct json_object *policy,
                        struct json_object *assignment, struct json_object *recorded, bool tenant,
                        const struct classes_loaded *loaded, struct json_object **ret, struct svff_error *err) {
        if (!co)
                return 0;
        return ensure_opened(&co->o, index, policy, assignment, recorded, tenant ? ENSURE_TENANT : ENSURE_ANY,
                             loaded_for(loaded, co->o.class, index), ret, err);
}

int classes_provision_recorded_open(struct classes_open *co, unsigned index, struct json_object *record,
                                    struct json_object *policy, bool tenant, struct json_object **ret,
                                    struct svff_error *err) {
        struct json_object *settings = NULL, *wrapped = NULL;
        const char *name = NULL;
        int r;

        if (!co)
                return 0;
        /* The settings as recorded (policy and assignment, merged when
         * the VF was provisioned) stand for the policy: the VF gets back
         * what it had, whatever the config says now. */
        if (record && json_object_object_get_ex(record, "settings", &settings) && settings &&
            svff_json_get_string(record, "name", &name) >= 0) {
                wrapped = json_object_new_object();
                settings = classes_recorded_settings(settings);
                if (!wrapped || !settings) {
                        json_object_put(wrapped);
                        json_object_put(settings);
                        return svff_error_set(err, -ENOMEM, "Out of memory");
                }
                json_object_object_add(wrapped, name, settings);
                policy = wrapped;
        }
        r = ensure_opened(&co->o, index, policy, NULL, record, tenant ? ENSURE_TENANT : ENSURE_ANY, NULL, ret, err);
        json_object_put(wrapped);
        return r;
}

int classes_provision_sync(struct svff_ctx *ctx, const char *pf, unsigned index,
                           struct json_object *policy, struct json_object *assignment, struct json_object **ret,
                           struct svff_error *err) {
        return classes_ensure_sync(ctx, pf, index, policy, assignment, NULL, ret, err);
}

int classes_provision_recorded_sync(struct svff_ctx *ctx, const char *pf, unsigned index,
                                    struct json_object *record, struct json_object *policy, bool tenant,
                                    struct json_object **ret, struct svff_error *err) {
        struct classes_open *co;
        int r;

        r = classes_open_sync(ctx, pf, &co, err);
        if (r <= 0)
                return r;
        r = classes_provision_recorded_open(co, index, record, policy, tenant, ret, err);
        classes_close(co);
        return r;
}

int classes_release_sync(struct svff_ctx *ctx, const char *pf, unsigned index,
                         struct json_object *state, struct svff_error *err) {
        struct opened o;
        int r;

        r = opened_open(ctx, pf, false, &o, err);
        if (r <= 0)
                return r;
        r = o.class->release ? o.class->release(o.c, o.pf, index, state, err) : 0;
        opened_done(&o);
        return r < 0 ? r : 1;
}

static int index_from_key(const char *key, unsigned *ret) {
        char *end;
        unsigned long v;

        errno = 0;
        v = strtoul(key, &end, 10);
        if (errno != 0 || end == key || *end || v > 65535)
                return -EINVAL;
        *ret = (unsigned) v;
        return 0;
}

int classes_inspect_sync(struct svff_ctx *ctx, const char *pf, struct json_object *recorded,
                         bool try, struct json_object **ret, struct svff_error *err) {
        _cleanup_(json_object_putp) struct json_object *live = NULL, *drift = NULL;
        struct opened o;
        int r;

        r = opened_open(ctx, pf, try, &o, err);
        if (r <= 0)
                return r;
        r = o.class->inspect ? o.class->inspect(o.c, o.pf, &live, err) : 0;
        if (r >= 0 && !live)
                live = json_object_new_object();
        if (r >= 0 && !json_object_is_type(live, json_type_object))
                r = svff_error_set(err, -EIO, "The %s class of PF %s answered its inspection with no object",
                                   o.class->name, pf);
        if (r >= 0 && recorded && o.class->verify) {
                drift = json_object_new_object();
                json_object_object_foreach(recorded, key, state) {
                        _cleanup_(svff_error_free) struct svff_error verr = SVFF_ERROR_NULL;
                        unsigned index;

                        if (index_from_key(key, &index) < 0)
                                continue;
                        if (o.class->verify(o.c, o.pf, index, state, &verr) < 0)
                                json_object_object_add(drift, key,
                                                       json_object_new_string(svff_error_message(&verr)));
                }
        }
        if (r >= 0) {
                json_object_object_add(live, "class", json_object_new_string(o.class->name));
                if (drift)
                        json_object_object_add(live, "drift", TAKE_PTR(drift));
                *ret = TAKE_PTR(live);
                r = 1;
        }
        opened_done(&o);
        return r;
}

/* ---- main thread: settings and records ---- */

struct json_object *classes_recorded_settings(struct json_object *settings) {
        struct json_object *copy = NULL;

        if (json_object_deep_copy(settings, &copy, NULL) < 0)
                return NULL;
        if (json_object_is_type(copy, json_type_object)) {
                json_object_object_del(copy, "state");
                json_object_object_del(copy, "tenant");
        }
        return copy;
}

struct json_object *classes_policy_settings(struct manager *m, const char *pf) {
        const struct svff_policy *pol = manager_pf_policy(m, pf);
        struct json_object *copy = NULL;

        if (!pol || !pol->classes)
                return NULL;
        if (json_object_deep_copy(pol->classes, &copy, NULL) < 0)
                return NULL;
        return copy;
}

struct json_object *classes_assignment_settings(struct manager *m, const char *pf) {
        struct json_object *o = NULL;

        json_object_object_foreach(svff_store_assignments(m->store), vf, arec) {
                struct json_object *vrec, *cls, *settings, *copy = NULL;
                const char *vpf;
                unsigned index;
                char key[16];

                if (!json_object_object_get_ex(svff_store_vfs(m->store), vf, &vrec) ||
                    svff_json_get_string(vrec, "pf", &vpf) < 0 || !streq(vpf, pf) ||
                    svff_json_get_unsigned(vrec, "index", &index) < 0)
                        continue;
                cls = svff_store_get_assignment_class(m->store, vf);
                (void) arec;
                if (!cls || !json_object_object_get_ex(cls, "settings", &settings) ||
                    !json_object_is_type(settings, json_type_object))
                        continue;
                if (!o && !(o = json_object_new_object()))
                        return NULL;
                copy = classes_recorded_settings(settings);
                if (!copy)
                        continue;
                snprintf(key, sizeof(key), "%u", index);
                json_object_object_add(o, key, copy);
        }
        return o;
}

struct json_object *classes_vf_record(struct manager *m, const char *vf) {
        return svff_store_get_vf_class(m->store, vf);
}

struct json_object *classes_vf_state(struct manager *m, const char *vf) {
        struct json_object *cls = classes_vf_record(m, vf), *state;

        if (!cls || !json_object_object_get_ex(cls, "state", &state))
                return NULL;
        return state;
}

int classes_record_vf(struct manager *m, const char *vf, struct json_object *rec) {
        struct json_object *acls, *state;

        /* An assignment that asked for class settings follows the VF's
         * new state. */
        acls = svff_store_get_assignment_class(m->store, vf);
        if (rec && acls && json_object_object_get_ex(rec, "state", &state))
                json_object_object_add(acls, "state", json_object_get(state));
        return svff_store_set_vf_class(m->store, vf, rec);
}

int classes_record_assignment(struct manager *m, const char *vf, struct json_object *settings,
                              struct json_object *state) {
        struct json_object *cls = NULL;

        if (settings || state) {
                cls = json_object_new_object();
                if (!cls) {
                        json_object_put(settings);
                        json_object_put(state);
                        return -ENOMEM;
                }
                json_object_object_add(cls, "settings", settings);
                json_object_object_add(cls, "state", state);
        }
        return svff_store_set_assignment_class(m->store, vf, cls);
}

char *classes_describe(const char *class_name, struct json_object *state) {
        const struct svff_class *class = class_name ? svff_class_by_name(class_name) : NULL;

        if (!class || !class->describe || !state)
                return NULL;
        return class->describe(state);
}

char *classes_summarize(const char *class_name, struct json_object *state) {
        const struct svff_class *class = class_name ? svff_class_by_name(class_name) : NULL;

        if (!class || !state)
                return NULL;
        return class->summarize ? class->summarize(state) : class->describe ? class->describe(state) : NULL;
}

/* ---- main thread: a dry run's class plan on the ops pool ---- */

struct read_share;

struct step {
        struct manager *m;
        struct svff_ctx *ctx;
        struct worker_pool *pool;
        char pf[SVFF_PCI_ADDR_STRLEN];
        unsigned numvfs;
        struct json_object *policy;     /* policy class members */
        struct json_object *assignments; /* by index */
        struct read_share *share;      /* whose callers it answers */

        int r;
        struct svff_error err;
        struct json_object *result;
        const char *class_name;         /* the PF's class, even when it refused */
};

static void step_free(struct step *s) {
        if (!s)
                return;
        svff_ctx_unref(s->ctx);
        json_object_put(s->policy);
        json_object_put(s->assignments);
        json_object_put(s->result);
        svff_error_free(&s->err);
        free(s);
}

static void share_done(struct manager *m, struct read_share *sh, int r, const char *message,
                       struct json_object *class_plan);

static void step_done(void *userdata) {
        struct step *s = userdata;
        const char *msg = s->r < 0 ? svff_error_message(&s->err) : NULL;
        struct json_object *cp = s->r > 0 ? json_object_get(s->result) : NULL;
        int r = s->r;

        if (r < 0 && s->class_name && (cp = json_object_new_object())) {
                json_object_object_add(cp, "class", json_object_new_string(s->class_name));
                json_object_object_add(cp, "refused", json_object_new_string(strna(msg)));
        }
        share_done(s->m, s->share, r < 0 ? r : 0, msg, cp);
        step_free(s);
}

static void step_run(void *userdata) {
        struct step *s = userdata;

        s->r = plan_sync(s->ctx, s->pf, s->numvfs, s->policy, s->assignments, true, NULL, &s->result, &s->class_name, NULL,
                         &s->err);
        if (worker_pool_post(s->pool, step_done, s) < 0)
                step_free(s);  /* the caller's done cannot run: svffd is out of memory */
}

/* Show's DeviceClass from an inspection (taken): its class's capacity
 * lines with the policy's member for the class. */
static struct json_object *show_object(struct json_object *inspection, struct json_object *policy) {
        _cleanup_(json_object_putp) struct json_object *insp = inspection, *o = json_object_new_object();
        struct json_object *settings = NULL, *lines = NULL;
        const struct svff_class *class;
        const char *name = NULL;

        if (!o || svff_json_get_string(insp, "class", &name) < 0 || !name || !(class = svff_class_by_name(name)))
                return NULL;
        if (policy)
                (void) json_object_object_get_ex(policy, name, &settings);
        json_object_object_add(o, "name", json_object_new_string(name));
        json_object_object_del(insp, "class");
        lines = class->capacity ? class->capacity(insp, settings) : json_object_new_array();
        if (!lines)
                return NULL;
        json_object_object_add(o, "capacity", lines);
        json_object_object_add(o, "settings", settings ? json_object_get(settings) : NULL);
        json_object_object_add(o, "inspection", TAKE_PTR(insp));
        return TAKE_PTR(o);
}

static void show_done(void *userdata) {
        struct step *s = userdata;

        share_done(s->m, s->share, s->r, s->r < 0 ? svff_error_message(&s->err) : NULL,
                   s->r > 0 ? json_object_get(s->result) : NULL);
        step_free(s);
}

static void show_run(void *userdata) {
        struct step *s = userdata;
        struct json_object *insp = NULL;

        /* A look, not a step: never waits behind a running one. */
        s->r = classes_inspect_sync(s->ctx, s->pf, NULL, true, &insp, &s->err);
        if (s->r > 0 && !(s->result = show_object(insp, s->policy)))
                s->r = svff_error_set(&s->err, -ENOMEM, "Out of memory reading the device class of PF %s", s->pf);
        if (worker_pool_post(s->pool, show_done, s) < 0)
                step_free(s);
}

/* A step of pf for pool, with the PF's policy settings; run on a
 * worker, it posts its done back. */
static int step_start(struct manager *m, const char *pf, struct worker_pool *pool, void (*run)(void *),
                      struct step *s) {
        s->m = m;
        s->ctx = svff_ctx_ref(m->ctx);
        s->pool = pool;
        snprintf(s->pf, sizeof(s->pf), "%s", pf);
        s->policy = classes_policy_settings(m, pf);
        if (worker_pool_submit(s->pool, run, s) < 0) {
                step_free(s);
                return -ESHUTDOWN;
        }
        return 0;
}

/* ---- main thread: reads of a device class, shared ---- */

struct read_waiter {
        struct read_waiter *next;
        classes_plan_fn done;
        void *userdata;
};

/* A dry run's class plan or Show's device class, read or being read. It
 * answers every caller asking the same of the same PF while the picture
 * of the host, the store and the PF's policy are those it was read for,
 * for list_max_age_msec at most: read-only callers, who may ask for
 * both, make a device answer once in that time however many they are,
 * and callers who come while it is read wait for that read. */
struct read_share {
        struct read_share *next;
        char pf[SVFF_PCI_ADDR_STRLEN];
        void (*run)(void *userdata);    /* step_run (a plan) or show_run */
        unsigned numvfs;                /* a plan's */
        uint64_t snapshot_id, generation;
        struct json_object *policy;     /* the PF's policy members then */
        bool running;
        struct read_waiter *waiters;    /* while running */
        uint64_t ended_usec;            /* once read */
        int r;
        char *message;
        struct json_object *result;
};

struct classes_reads {
        struct read_share *shares;
};

static void share_free(struct read_share *sh) {
        struct read_waiter *w;

        /* Unserved waiters: svffd is stopping, and their replies with it. */
        while ((w = sh->waiters)) {
                sh->waiters = w->next;
                free(w);
        }
        json_object_put(sh->policy);
        json_object_put(sh->result);
        free(sh->message);
        free(sh);
}

static struct classes_reads *classes_reads_free(struct classes_reads *c) {
        struct read_share *sh;

        if (!c)
                return NULL;
        while ((sh = c->shares)) {
                c->shares = sh->next;
                share_free(sh);
        }
        free(c);
        return NULL;
}

static void share_unlink(struct manager *m, struct read_share *sh) {
        for (struct read_share **p = &m->class_reads->shares; *p; p = &(*p)->next)
                if (*p == sh) {
                        *p = sh->next;
                        return;
                }
}

/* Answers every caller of sh with what was read. A busy PF or a failure
 * to read (nothing to show) is not kept: the next caller asks again. A caller's done may ask for another plan, which may drop sh:
 * what the callers get is held apart from it. */
static void share_done(struct manager *m, struct read_share *sh, int r, const char *message,
                       struct json_object *class_plan) {
        _cleanup_(json_object_putp) struct json_object *cp = json_object_get(class_plan);
        struct read_waiter *w, *waiters = TAKE_PTR(sh->waiters);
        bool keep;

        sh->running = false;
        sh->ended_usec = svff_now_usec();
        sh->r = r;
        sh->message = message ? strdup(message) : NULL;
        sh->result = class_plan;
        keep = (r >= 0 || class_plan) && (!message || sh->message);
        if (!keep) {
                share_unlink(m, sh);
                share_free(sh);
        }
        while ((w = waiters)) {
                waiters = w->next;
                w->done(m, r, message, json_object_get(cp), w->userdata);
                free(w);
        }
}

static bool share_matches(struct manager *m, const struct read_share *sh, const char *pf, void (*run)(void *),
                          unsigned numvfs, struct json_object *policy) {
        return streq(sh->pf, pf) && sh->run == run && sh->numvfs == numvfs && sh->snapshot_id == snapshot_cache_id(m->snapshots) &&
               sh->generation == svff_store_generation(m->store) && json_object_equal(sh->policy, policy) &&
               (sh->running || svff_now_usec() - sh->ended_usec < m->config.list_max_age_usec);
}

/* Runs run (a step of pf) for done, or has done share one that matches. */
static int share_start(struct manager *m, const char *pf, void (*run)(void *), unsigned numvfs,
                       classes_plan_fn done, void *userdata) {
        _cleanup_(json_object_putp) struct json_object *policy = classes_policy_settings(m, pf);
        struct read_waiter *w;
        struct read_share *sh;
        struct step *s;
        int r;

        if (!m->class_reads) {
                m->class_reads = calloc(1, sizeof(struct classes_reads));
                if (!m->class_reads)
                        return -ENOMEM;
                m->class_reads_free = classes_reads_free;
        }
        for (struct read_share **p = &m->class_reads->shares; (sh = *p);) {
                if (share_matches(m, sh, pf, run, numvfs, policy))
                        break;
                if (!sh->running) {  /* old: the host, the store or the policy changed since */
                        *p = sh->next;
                        share_free(sh);
                } else
                        p = &sh->next;
        }
        if (sh && !sh->running) {
                done(m, sh->r, sh->message, json_object_get(sh->result), userdata);
                return 0;
        }
        w = calloc(1, sizeof(*w));
        if (!w)
                return -ENOMEM;
        *w = (struct read_waiter) { .done = done, .userdata = userdata };
        if (sh) {
                w->next = sh->waiters;
                sh->waiters = w;
                return 0;
        }

        sh = calloc(1, sizeof(*sh));
        s = calloc(1, sizeof(*s));
        if (!sh || !s) {
                free(sh);
                free(s);
                free(w);
                return -ENOMEM;
        }
        snprintf(sh->pf, sizeof(sh->pf), "%s", pf);
        sh->run = run;
        sh->numvfs = numvfs;
        sh->snapshot_id = snapshot_cache_id(m->snapshots);
        sh->generation = svff_store_generation(m->store);
        sh->policy = json_object_get(policy);
        sh->running = true;
        sh->waiters = w;
        s->numvfs = numvfs;
        s->share = sh;
        if (run == step_run) {
                s->assignments = classes_assignment_settings(m, pf);
                log_debug("Asking the device class of PF %s for a plan of %u VFs.", pf, numvfs);
        } else
                log_debug("Reading the device class of PF %s.", pf);
        /* A read: on the discovery pool, as drift's and the counters'
         * reads, never queued behind an init's write on the ops pool,
         * and one read at a time, so that reads never find each other
         * holding the PF. */
        r = step_start(m, pf, snapshot_cache_pool(m->snapshots), run, s);
        if (r < 0) {
                sh->waiters = NULL;
                free(w);
                share_free(sh);
                return r;
        }
        sh->next = m->class_reads->shares;
        m->class_reads->shares = sh;
        return 0;
}

int classes_plan_start(struct manager *m, const char *pf, unsigned numvfs, classes_plan_fn done, void *userdata) {
        return share_start(m, pf, step_run, numvfs, done, userdata);
}

int classes_show_start(struct manager *m, const char *pf, classes_show_fn done, void *userdata) {
        return share_start(m, pf, show_run, 0, done, userdata);
}

/* ---- main thread: drift for status ---- */

struct drift_waiter {
        struct drift_waiter *next;
        struct call *call;
        classes_drift_fn fn;
};

struct classes_drift_cache {
        struct json_object *result;     /* the last inspection's */
        bool have;
        uint64_t taken_usec;            /* when it ended */
        uint64_t generation;            /* the store's then */
        bool running;
        struct drift_waiter *waiters;   /* for the one running */
};

struct drift_job {
        struct manager *m;
        uint64_t generation;
        struct svff_ctx *ctx;
        struct worker_pool *pool;
        struct json_object *recorded;   /* {"<pf>": {"<index>": state}} */
        struct json_object *vfs;        /* {"<pf>": {"<index>": "<vf>"}} */
        struct json_object *results;    /* {"<pf>": inspect, or {"error": msg}} */
};

static void drift_job_free(struct drift_job *j) {
        svff_ctx_unref(j->ctx);
        json_object_put(j->recorded);
        json_object_put(j->vfs);
        json_object_put(j->results);
        free(j);
}

/* pf: the PF of device (a VF) or device itself, so that status counts
 * a PF's drifted VFs on one line; next_step: NULL for none. */
static void drift_add(struct json_object *a, const char *device, const char *pf, const char *expected,
                      const char *actual, const char *message, const char *next_step) {
        struct json_object *d = json_object_new_object();

        if (!d)
                return;
        json_object_object_add(d, "kind", json_object_new_string("class-drift"));
        json_object_object_add(d, "device", json_object_new_string(device));
        json_object_object_add(d, "expected", expected ? json_object_new_string(expected) : NULL);
        json_object_object_add(d, "actual", actual ? json_object_new_string(actual) : NULL);
        json_object_object_add(d, "message", json_object_new_string(message));
        json_object_object_add(d, "pf", json_object_new_string(pf));
        json_object_object_add(d, "next_step", next_step ? json_object_new_string(next_step) : NULL);
        json_object_array_add(a, d);
}

/* Keeps a (taken) as the result of the inspection that ended at t over
 * the store's generation gen, and answers everyone waiting for it. */
static void drift_serve(struct manager *m, uint64_t t, uint64_t gen, struct json_object *a) {
        struct classes_drift_cache *c = m->class_drift;
        struct drift_waiter *w;

        json_object_put(c->result);
        c->result = a;
        c->have = true;
        c->taken_usec = t;
        c->generation = gen;
        c->running = false;
        while ((w = c->waiters)) {
                c->waiters = w->next;
                w->fn(m, w->call, json_object_get(a));
                call_unref(w->call);
                free(w);
        }
}

static struct classes_drift_cache *classes_drift_cache_free(struct classes_drift_cache *c) {
        struct drift_waiter *w;

        if (!c)
                return NULL;
        while ((w = c->waiters)) {
                c->waiters = w->next;
                call_unref(w->call);
                free(w);
        }
        json_object_put(c->result);
        free(c);
        return NULL;
}

static void drift_done(void *userdata) {
        struct drift_job *j = userdata;
        struct json_object *a = json_object_new_array();

        json_object_object_foreach(j->results, pf, res) {
                struct json_object *drift, *vfs = NULL, *live = NULL, *names = NULL, *err;
                const char *class_name = NULL;

                if (json_object_object_get_ex(res, "error", &err)) {
                        char msg[1024];

                        snprintf(msg, sizeof(msg), "The device-class state of PF %s cannot be read, so svffd "
                                 "cannot tell whether its VFs are still as it set them up: %s", pf,
                                 json_object_get_string(err));
                        drift_add(a, pf, pf, NULL, NULL, msg, NULL);
                        continue;
                }
                if (!json_object_object_get_ex(res, "drift", &drift))
                        continue;
                (void) svff_json_get_string(res, "class", &class_name);
                (void) json_object_object_get_ex(res, "vfs", &live);
                (void) json_object_object_get_ex(j->vfs, pf, &names);
                (void) json_object_object_get_ex(j->recorded, pf, &vfs);
                json_object_object_foreach(drift, key, msg) {
                        struct json_object *want = NULL, *got = NULL, *vfname = NULL;
                        _cleanup_free_ char *e = NULL, *g = NULL;
                        char line[1400], next[256];
                        const char *vf;

                        (void) json_object_object_get_ex(vfs, key, &want);
                        (void) json_object_object_get_ex(live, key, &got);
                        (void) json_object_object_get_ex(names, key, &vfname);
                        vf = vfname ? json_object_get_string(vfname) : pf;
                        e = classes_describe(class_name, want);
                        g = classes_describe(class_name, got);
                        unsigned n = 0;

                        (void) svff_store_get_pf(j->m->store, pf, &n, NULL);
                        snprintf(next, sizeof(next), "run 'svffctl init %s %u' to provision the PF's VFs again",
                                 pf, n);
                        snprintf(line, sizeof(line), "VF %s (%s class) is not what svffd set up: %s; %s", vf,
                                 strna(class_name), json_object_get_string(msg), next);
                        drift_add(a, vf, pf, e, g, line, next);
                }
        }
        /* Aged from its end: an inspection that outlasts
         * list_max_age_msec (a second at 1008 VFs) would otherwise be
         * old on arrival, and every Status would start another. */
        drift_serve(j->m, svff_now_usec(), j->generation, a);
        drift_job_free(j);
}

static void drift_run(void *userdata) {
        struct drift_job *j = userdata;

        json_object_object_foreach(j->recorded, pf, recorded) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
                struct json_object *res = NULL;
                int r;

                r = classes_inspect_sync(j->ctx, pf, recorded, true, &res, &err);
                if (r == -EBUSY || r == -ENODEV || r == 0)
                        continue;  /* a step is running, the PF is gone (drift of its own), no class */
                if (r < 0) {
                        res = json_object_new_object();
                        if (res)
                                json_object_object_add(res, "error",
                                                       json_object_new_string(svff_error_message(&err)));
                }
                if (res)
                        json_object_object_add(j->results, pf, res);
        }
        if (worker_pool_post(j->pool, drift_done, j) < 0)
                drift_job_free(j);
}

static struct json_object *object_child(struct json_object *o, const char *key) {
        struct json_object *c;

        if (json_object_object_get_ex(o, key, &c))
                return c;
        c = json_object_new_object();
        if (c && json_object_object_add(o, key, c) < 0) {
                json_object_put(c);
                return NULL;
        }
        return c;
}

void classes_with_drift(struct manager *m, struct call *call, classes_drift_fn fn) {
        struct classes_drift_cache *c;
        struct drift_waiter *w;
        struct drift_job *j;
        uint64_t now = svff_now_usec();
        bool any = false;

        if (!m->class_drift) {
                m->class_drift = calloc(1, sizeof(struct classes_drift_cache));
                m->class_drift_free = classes_drift_cache_free;
        }
        c = m->class_drift;
        if (!c) {
                fn(m, call, NULL);
                return;
        }
        if (c->have && !c->running && c->generation == svff_store_generation(m->store) &&
            now - c->taken_usec < m->config.list_max_age_usec) {
                fn(m, call, json_object_get(c->result));
                return;
        }
        w = calloc(1, sizeof(*w));
        if (!w) {
                fn(m, call, NULL);
                return;
        }
        w->call = call_ref(call);
        w->fn = fn;
        w->next = c->waiters;
        c->waiters = w;
        if (c->running)
                return;

        j = calloc(1, sizeof(*j));
        if (!j) {
                drift_serve(m, now, svff_store_generation(m->store), NULL);
                c->have = false;
                return;
        }
        j->recorded = json_object_new_object();
        j->vfs = json_object_new_object();
        j->results = json_object_new_object();
        if (!j->recorded || !j->vfs || !j->results) {
                drift_job_free(j);
                drift_serve(m, now, svff_store_generation(m->store), NULL);
                c->have = false;
                return;
        }
        json_object_object_foreach(svff_store_vfs(m->store), vf, rec) {
                struct json_object *state = classes_vf_state(m, vf), *copy = NULL, *by_pf, *names;
                const char *pf;
                unsigned index;
                char key[16];

                if (!state || svff_json_get_string(rec, "pf", &pf) < 0 ||
                    svff_json_get_unsigned(rec, "index", &index) < 0 || manager_find_operation(m, pf) ||
                    journal_recovery_waits(m, pf))
                        continue;  /* in flux, or its recovery waits for libvirt */
                by_pf = object_child(j->recorded, pf);
                names = object_child(j->vfs, pf);
                if (!by_pf || !names || json_object_deep_copy(state, &copy, NULL) < 0)
                        continue;
                snprintf(key, sizeof(key), "%u", index);
                json_object_object_add(by_pf, key, copy);
                json_object_object_add(names, key, json_object_new_string(vf));
                any = true;
        }
        if (!any) {
                drift_job_free(j);
                drift_serve(m, now, svff_store_generation(m->store), NULL);
                return;
        }
        log_debug("Reading the device-class state of %zu PF(s) for drift.",
                  (size_t) json_object_object_length(j->recorded));
        j->m = m;
        j->generation = svff_store_generation(m->store);
        j->ctx = svff_ctx_ref(m->ctx);
        /* The discovery pool: short reads, never queued behind an init. */
        j->pool = snapshot_cache_pool(m->snapshots);
        if (worker_pool_submit(j->pool, drift_run, j) < 0) {
                drift_job_free(j);
                drift_serve(m, now, svff_store_generation(m->store), NULL);
                c->have = false;
                return;
        }
        c->running = true;
}

/* ---- main thread: NIC VFs' counters, for the metrics file ---- */

struct counters_job {
        struct manager *m;
        struct svff_ctx *ctx;
        struct worker_pool *pool;
        struct json_object *pfs;        /* [pf] to read */
        struct json_object *result;     /* {"<pf>": {"<index>": counters}} */
        classes_counters_fn fn;
};

static void counters_job_free(struct counters_job *j) {
        svff_ctx_unref(j->ctx);
        json_object_put(j->pfs);
        json_object_put(j->result);
        free(j);
}

static void counters_done(void *userdata) {
        struct counters_job *j = userdata;

        j->fn(j->m, TAKE_PTR(j->result));
        counters_job_free(j);
}

static void counters_run(void *userdata) {
        struct counters_job *j = userdata;

        for (size_t i = 0; i < json_object_array_length(j->pfs); i++) {
                _cleanup_(svff_error_free) struct svff_error err = SVFF_ERROR_NULL;
                _cleanup_(json_object_putp) struct json_object *res = NULL;
                const char *pf = json_object_get_string(json_object_array_get_idx(j->pfs, i));
                struct json_object *vfs, *by_index = NULL;
                const char *name = NULL;

                /* A PF that is busy, gone or classless is left out. */
                if (classes_inspect_sync(j->ctx, pf, NULL, true, &res, &err) <= 0 ||
                    svff_json_get_string(res, "class", &name) < 0 || !name || !streq(name, "nic") ||
                    !json_object_object_get_ex(res, "vfs", &vfs) || !json_object_is_type(vfs, json_type_object))
                        continue;
                json_object_object_foreach(vfs, key, st) {
                        struct json_object *c;

                        if (!json_object_object_get_ex(st, "counters", &c))
                                continue;
                        if (!by_index && !(by_index = object_child(j->result, pf)))
                                break;
                        json_object_object_add(by_index, key, json_object_get(c));
                }
        }
        if (worker_pool_post(j->pool, counters_done, j) < 0)
                counters_job_free(j);
}

int classes_counters_start(struct manager *m, struct json_object *pfs, classes_counters_fn fn) {
        struct counters_job *j = calloc(1, sizeof(*j));

        if (!j) {
                json_object_put(pfs);
                return -ENOMEM;
        }
        j->m = m;
        j->pfs = pfs;
        j->fn = fn;
        j->result = json_object_new_object();
        j->ctx = svff_ctx_ref(m->ctx);
        j->pool = snapshot_cache_pool(m->snapshots);
        if (!j->result || worker_pool_submit(j->pool, counters_run, j) < 0) {
                counters_job_free(j);
                return -ENOMEM;
        }
        return 0;
}

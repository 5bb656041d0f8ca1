/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* A stand-in for an NVMe PF's admin queue: see nvme-standin.h. */

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nvme-standin.h"

void nvme_standin_init_qemu(struct nvme_standin *s) {
        *s = (struct nvme_standin) {
                .oacs = 0x10a,
                .cns14 = true,
                .caps = {
                        .cntlid = 0,
                        .vqfrt = 8, .vqrfa = 0, .vqrfap = 0, .vqprt = 5, .vqfrsm = 2,
                        .vifrt = 4, .virfa = 0, .virfap = 0, .viprt = 4, .vifrsm = 1,
                },
                .n_sec = 4,
                .n_ns = 4,
        };
        for (size_t i = 0; i < s->n_sec; i++)
                s->sec[i] = (struct svff_nvme_secondary) { .scid = i + 1, .pcid = 0, .vfn = i + 1 };
        for (size_t i = 0; i < s->n_ns; i++)
                s->ns[i].nsid = i + 1;
        snprintf(s->subnqn, sizeof(s->subnqn), "nqn.2019-08.org.qemu:svffnvme0");
}

void nvme_standin_done(struct nvme_standin *s) {
        free(s->log);
        s->log = NULL;
}

static struct svff_nvme_secondary *sec(struct nvme_standin *s, uint16_t scid) {
        for (size_t i = 0; i < s->n_sec; i++)
                if (s->sec[i].scid == scid)
                        return &s->sec[i];
        return NULL;
}

const struct svff_nvme_secondary *nvme_standin_sec(const struct nvme_standin *s, uint16_t scid) {
        return sec((struct nvme_standin *) s, scid);
}

struct standin_ns *nvme_standin_ns(struct nvme_standin *s, uint32_t nsid) {
        for (size_t i = 0; i < s->n_ns; i++)
                if (s->ns[i].nsid == nsid)
                        return &s->ns[i];
        return NULL;
}

bool nvme_standin_attached(const struct nvme_standin *s, uint32_t nsid, uint16_t cntlid) {
        const struct standin_ns *ns = nvme_standin_ns((struct nvme_standin *) s, nsid);

        for (size_t i = 0; ns && i < ns->n_ctrls; i++)
                if (ns->ctrls[i] == cntlid)
                        return true;
        return false;
}

static void drop(struct nvme_standin *s, struct svff_nvme_secondary *e) {
        e->online = false;
        s->caps.vqrfa -= e->nvq;
        s->caps.virfa -= e->nvi;
        e->nvq = e->nvi = 0;
}

void nvme_standin_set_numvfs(struct nvme_standin *s, unsigned n) {
        /* disabling VFs takes every secondary offline (and a new count
         * starts them offline): QEMU resets the secondaries with their VFs */
        for (size_t i = 0; i < s->n_sec; i++)
                if (s->sec[i].vfn > n || n != s->numvfs)
                        drop(s, &s->sec[i]);
        s->numvfs = n;
}

void nvme_standin_fail(struct nvme_standin *s, const char *prefix, int status, unsigned times) {
        snprintf(s->fail_prefix, sizeof(s->fail_prefix), "%s", prefix);
        s->fail_status = status;
        s->fail_times = times;
}

/* Logs the command; returns the status it must fail with, or 0. */
static int cmd(struct nvme_standin *s, const char *fmt, ...) {
        char line[128];
        size_t old = s->log ? strlen(s->log) : 0;
        va_list ap;
        char *n;

        va_start(ap, fmt);
        vsnprintf(line, sizeof(line), fmt, ap);
        va_end(ap);
        n = realloc(s->log, old + strlen(line) + 2);
        if (n) {
                s->log = n;
                sprintf(s->log + old, "%s\n", line);
        }
        if (s->fail_times > 0 && !strncmp(line, s->fail_prefix, strlen(s->fail_prefix))) {
                s->fail_times--;
                return s->fail_status;
        }
        return 0;
}

char *nvme_standin_take_log(struct nvme_standin *s, bool all) {
        char *out = calloc(1, s->log ? strlen(s->log) * 2 + 1 : 1);
        char *save = NULL;

        if (!out)
                abort();
        for (char *l = s->log ? strtok_r(s->log, "\n", &save) : NULL; l; l = strtok_r(NULL, "\n", &save)) {
                if (!all && (!strncmp(l, "identify", 8) || !strncmp(l, "ns-list", 7) || !strncmp(l, "ns-ctrls", 8)))
                        continue;
                if (*out)
                        strcat(out, "; ");
                strcat(out, l);
        }
        free(s->log);
        s->log = NULL;
        return out;
}

void nvme_standin_dump(const struct nvme_standin *s, FILE *f) {
        for (size_t i = 0; i < s->n_ns; i++) {
                fprintf(f, "ns %" PRIu32 ":", s->ns[i].nsid);
                for (size_t k = 0; k < s->ns[i].n_ctrls; k++)
                        fprintf(f, " %u", s->ns[i].ctrls[k]);
                fputc('\n', f);
        }
        for (size_t i = 0; i < s->n_sec; i++)
                fprintf(f, "sc %u %s %u %u\n", s->sec[i].scid, s->sec[i].online ? "online" : "offline",
                        s->sec[i].nvq, s->sec[i].nvi);
}

static int st_open(void *userdata, const char *ctrl, void **ret) {
        struct nvme_standin *s = userdata, *t;

        s->open_calls++;
        if (s->on_open)
                s->on_open(s, s->open_calls);
        /* the controller /dev/<ctrl> is now */
        for (t = s; t; t = t->next_ctrl)
                if (!t->name[0] || !strcmp(t->name, ctrl))
                        break;
        if (!t)
                return -ENOENT;
        if (t->open_refused)
                return -EACCES;
        if (t->open_not_live > 0) {
                t->open_not_live--;
                return -EAGAIN;
        }
        t->opens++;
        *ret = t;
        return 0;
}

static void st_close(void *handle) {
}

static int st_devnum(void *handle, dev_t *ret) {
        struct nvme_standin *s = handle;

        if (s->dev == 0)
                return 0;
        *ret = s->dev;
        return 1;
}

static int st_identify_ctrl(void *handle, struct svff_nvme_ctrl_id *ret) {
        struct nvme_standin *s = handle;
        int r = cmd(s, "identify-ctrl");

        if (r)
                return r;
        ret->cntlid = s->caps.cntlid;
        ret->oacs = s->oacs;
        memcpy(ret->subnqn, s->subnqn, sizeof(ret->subnqn));
        return 0;
}

/* Identify Namespace for an allocated NSID (CNS 11h), which QEMU
 * answers for every namespace of its subsystem, attached or not. An
 * NSID that is none answers Invalid Field here; the class then records
 * no identifiers. */
static int st_ns_ids(void *handle, uint32_t nsid, struct svff_nvme_ns_ids *ret) {
        struct nvme_standin *s = handle;
        const struct standin_ns *ns;
        int r = cmd(s, "identify-ns %" PRIu32, nsid);

        if (r)
                return r;
        ns = nvme_standin_ns(s, nsid);
        if (!ns)
                return SVFF_NVME_SC_INVALID_FIELD;
        *ret = ns->ids;
        return 0;
}

static int st_primary_caps(void *handle, struct svff_nvme_primary_caps *ret) {
        struct nvme_standin *s = handle;
        int r = cmd(s, "identify-primary");

        if (r)
                return r;
        if (!s->cns14)
                return SVFF_NVME_SC_INVALID_FIELD;
        *ret = s->caps;
        return 0;
}

static int st_secondary_list(void *handle, struct svff_nvme_secondary *ret, size_t max, size_t *ret_n) {
        struct nvme_standin *s = handle;
        int r = cmd(s, "identify-secondary");

        if (r)
                return r;
        if (!s->cns14)
                return SVFF_NVME_SC_INVALID_FIELD;
        *ret_n = s->n_sec < max ? s->n_sec : max;
        memcpy(ret, s->sec, *ret_n * sizeof(*ret));
        return 0;
}

static int assign(struct nvme_standin *s, struct svff_nvme_secondary *e, enum svff_nvme_res res, uint16_t nr) {
        uint32_t total = res == SVFF_NVME_RES_VQ ? s->caps.vqfrt : s->caps.vifrt;
        uint32_t prim = res == SVFF_NVME_RES_VQ ? s->caps.vqrfap : s->caps.virfap;
        uint32_t *assigned = res == SVFF_NVME_RES_VQ ? &s->caps.vqrfa : &s->caps.virfa;
        uint16_t *cur = res == SVFF_NVME_RES_VQ ? &e->nvq : &e->nvi;
        uint16_t limit = res == SVFF_NVME_RES_VQ ? s->caps.vqfrsm : s->caps.vifrsm;
        int free_ = (int) total - (int) prim - (int) *assigned;

        if (e->online)
                return SVFF_NVME_SC_INVALID_SEC_CTRL_STATE;
        if (nr > limit)
                return SVFF_NVME_SC_INVALID_NUM_RESOURCES;
        if ((int) nr - (int) *cur > free_)
                return SVFF_NVME_SC_INVALID_RESOURCE_ID;
        *assigned = *assigned + nr - *cur;
        *cur = nr;
        return 0;
}

static int st_virt_mgmt(void *handle, enum svff_nvme_virt_act act, enum svff_nvme_res res, uint16_t cntlid,
                        uint16_t nr) {
        struct nvme_standin *s = handle;
        const char *rname = res == SVFF_NVME_RES_VQ ? "vq" : "vi";
        struct svff_nvme_secondary *e;
        int r;

        switch (act) {
        case SVFF_NVME_VIRT_PRIMARY_FLEX:
                r = cmd(s, "virt-mgmt primary %s %u", rname, nr);
                if (r)
                        return r;
                if (cntlid != s->caps.cntlid)
                        return SVFF_NVME_SC_INVALID_CTRL_ID;
                if (nr > (res == SVFF_NVME_RES_VQ ? s->caps.vqfrt : s->caps.vifrt))
                        return SVFF_NVME_SC_INVALID_NUM_RESOURCES;
                if (nr > (res == SVFF_NVME_RES_VQ ? s->caps.vqfrt - s->caps.vqrfa : s->caps.vifrt - s->caps.virfa))
                        return SVFF_NVME_SC_INVALID_RESOURCE_ID;
                *(res == SVFF_NVME_RES_VQ ? &s->next_vqrfap : &s->next_virfap) = nr;
                return 0;
        case SVFF_NVME_VIRT_ASSIGN:
                r = cmd(s, "virt-mgmt assign c%u %s %u", cntlid, rname, nr);
                if (r)
                        return r;
                e = sec(s, cntlid);
                if (!e)
                        return SVFF_NVME_SC_INVALID_CTRL_ID;
                return assign(s, e, res, nr);
        case SVFF_NVME_VIRT_ONLINE:
                r = cmd(s, "virt-mgmt online c%u", cntlid);
                if (r)
                        return r;
                e = sec(s, cntlid);
                if (!e)
                        return SVFF_NVME_SC_INVALID_CTRL_ID;
                if (e->nvi < 1 || e->nvq < 2 || e->vfn > s->numvfs)
                        return SVFF_NVME_SC_INVALID_SEC_CTRL_STATE;
                e->online = true;
                return 0;
        case SVFF_NVME_VIRT_OFFLINE:
                r = cmd(s, "virt-mgmt offline c%u", cntlid);
                if (r)
                        return r;
                e = sec(s, cntlid);
                if (!e)
                        return SVFF_NVME_SC_INVALID_CTRL_ID;
                drop(s, e);
                return 0;
        }
        return SVFF_NVME_SC_INVALID_FIELD;
}

/* A controller namespaces can attach to: the primary, or a secondary
 * whose VF exists. */
static bool ctrl_exists(struct nvme_standin *s, uint16_t cntlid) {
        struct svff_nvme_secondary *e = sec(s, cntlid);

        return cntlid == s->caps.cntlid || (e && e->vfn <= s->numvfs);
}

static int st_ns_attach(void *handle, uint32_t nsid, uint16_t cntlid, bool attach) {
        struct nvme_standin *s = handle;
        struct standin_ns *ns;
        int r = cmd(s, "%s %u c%u", attach ? "ns-attach" : "ns-detach", nsid, cntlid);

        if (r)
                return r;
        ns = nvme_standin_ns(s, nsid);
        if (!ns)
                return SVFF_NVME_SC_INVALID_FIELD;
        if (!ctrl_exists(s, cntlid))
                return SVFF_NVME_SC_CTRL_LIST_INVALID;
        for (size_t i = 0; i < ns->n_ctrls; i++)
                if (ns->ctrls[i] == cntlid) {
                        if (attach)
                                return SVFF_NVME_SC_NS_ALREADY_ATTACHED;
                        ns->ctrls[i] = ns->ctrls[--ns->n_ctrls];
                        return 0;
                }
        if (!attach)
                return SVFF_NVME_SC_NS_NOT_ATTACHED;
        ns->ctrls[ns->n_ctrls++] = cntlid;
        return 0;
}

static int st_ns_list(void *handle, uint32_t *ret, size_t max, size_t *ret_n) {
        struct nvme_standin *s = handle;
        int r = cmd(s, "ns-list");

        if (r)
                return r;
        *ret_n = 0;
        for (size_t i = 0; i < s->n_ns && *ret_n < max; i++)
                ret[(*ret_n)++] = s->ns[i].nsid;
        return 0;
}

static int st_ns_ctrls(void *handle, uint32_t nsid, uint16_t *ret, size_t max, size_t *ret_n) {
        struct nvme_standin *s = handle;
        struct standin_ns *ns;
        int r = cmd(s, "ns-ctrls %u", nsid);

        if (r)
                return r;
        ns = nvme_standin_ns(s, nsid);
        if (!ns)
                return SVFF_NVME_SC_INVALID_FIELD;
        *ret_n = 0;
        for (size_t i = 0; i < ns->n_ctrls && *ret_n < max; i++)
                ret[(*ret_n)++] = ns->ctrls[i];
        return 0;
}

static int st_format(void *handle, uint32_t nsid) {
        struct nvme_standin *s = handle;
        struct standin_ns *ns;
        int r = cmd(s, "format %u", nsid);

        if (r)
                return r;
        ns = nvme_standin_ns(s, nsid);
        /* Format NVM addresses a namespace attached to the controller
         * that runs it */
        if (!ns || !nvme_standin_attached(s, nsid, s->caps.cntlid))
                return SVFF_NVME_SC_INVALID_NS;
        ns->formats++;
        return 0;
}

static int st_reset(void *handle) {
        struct nvme_standin *s = handle;
        int r = cmd(s, "reset");

        if (r)
                return r;
        s->caps.vqrfap = s->next_vqrfap;
        s->caps.virfap = s->next_virfap;
        return 0;
}

const struct svff_nvme_ops nvme_standin_ops = {
        .open = st_open,
        .close = st_close,
        .devnum = st_devnum,
        .identify_ctrl = st_identify_ctrl,
        .primary_caps = st_primary_caps,
        .secondary_list = st_secondary_list,
        .virt_mgmt = st_virt_mgmt,
        .ns_attach = st_ns_attach,
        .ns_list = st_ns_list,
        .ns_ids = st_ns_ids,
        .ns_ctrls = st_ns_ctrls,
        .format = st_format,
        .reset = st_reset,
};

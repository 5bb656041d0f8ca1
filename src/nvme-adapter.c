/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* libnvme behind svff's NVMe adapter (nvme-adapter.h). */

#include <assert.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <libnvme.h>

#include "nvme-adapter.h"

static const struct {
        int status;
        const char *name;
} status_names[] = {
        { SVFF_NVME_SC_INVALID_OPCODE, "Invalid Command Opcode" },
        { SVFF_NVME_SC_INVALID_FIELD, "Invalid Field in Command" },
        { SVFF_NVME_SC_INTERNAL, "Internal Error" },
        { SVFF_NVME_SC_INVALID_NS, "Invalid Namespace or Format" },
        { SVFF_NVME_SC_NS_WRITE_PROTECTED, "Namespace is Write Protected" },
        { SVFF_NVME_SC_FORMAT_IN_PROGRESS, "Format In Progress" },
        { SVFF_NVME_SC_INVALID_FORMAT, "Invalid Format" },
        { SVFF_NVME_SC_NS_ALREADY_ATTACHED, "Namespace Already Attached" },
        { SVFF_NVME_SC_NS_IS_PRIVATE, "Namespace Is Private" },
        { SVFF_NVME_SC_NS_NOT_ATTACHED, "Namespace Not Attached" },
        { SVFF_NVME_SC_CTRL_LIST_INVALID, "Controller List Invalid" },
        { SVFF_NVME_SC_INVALID_CTRL_ID, "Invalid Controller Identifier" },
        { SVFF_NVME_SC_INVALID_SEC_CTRL_STATE, "Invalid Secondary Controller State" },
        { SVFF_NVME_SC_INVALID_NUM_RESOURCES, "Invalid Number of Controller Resources" },
        { SVFF_NVME_SC_INVALID_RESOURCE_ID, "Invalid Resource Identifier" },
        { SVFF_NVME_SC_NS_ATTACHMENT_LIMIT, "Namespace Attachment Limit Exceeded" },
};

const char *svff_nvme_status_name(int status) {
        for (size_t i = 0; i < ELEMENTSOF(status_names); i++)
                if (status_names[i].status == status)
                        return status_names[i].name;
        return NULL;
}

/* libnvme returns the completion's status field (with the Do Not Retry,
 * More and Command Retry Delay bits), or -1 with errno set. */
static int status(int r) {
        if (r < 0)
                return errno > 0 ? -errno : -EIO;
        return r & 0x7ff;
}

struct handle {
        int fd;
};

static int ln_open(void *userdata, const char *ctrl, void **ret) {
        _cleanup_free_ char *path = NULL;
        struct handle *h;
        int fd;

        (void) userdata;
        if (!ctrl || !*ctrl || strchr(ctrl, '/'))
                return -EINVAL;
        if (asprintf(&path, "/dev/%s", ctrl) < 0)
                return -ENOMEM;
        fd = open(path, O_RDWR | O_CLOEXEC);
        if (fd < 0)
                return -errno;
        h = malloc(sizeof(*h));
        if (!h) {
                close(fd);
                return -ENOMEM;
        }
        h->fd = fd;
        *ret = h;
        return 0;
}

static void ln_close(void *handle) {
        struct handle *h = handle;

        if (!h)
                return;
        if (h->fd >= 0)
                close(h->fd);
        free(h);
}

static int ln_devnum(void *handle, dev_t *ret) {
        struct handle *h = handle;
        struct stat st;

        if (fstat(h->fd, &st) < 0)
                return -errno;
        if (!S_ISCHR(st.st_mode))
                return -ENOTTY;
        *ret = st.st_rdev;
        return 1;
}

static int ln_identify_ctrl(void *handle, struct svff_nvme_ctrl_id *ret) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_id_ctrl *id = calloc(1, sizeof(*id));
        int r;

        if (!id)
                return -ENOMEM;
        r = status(nvme_identify_ctrl(h->fd, id));
        if (r != 0)
                return r;
        ret->cntlid = le16toh(id->cntlid);
        ret->oacs = le16toh(id->oacs);
        static_assert(sizeof(ret->subnqn) == sizeof(id->subnqn), "SUBNQN is 256 bytes");
        memcpy(ret->subnqn, id->subnqn, sizeof(ret->subnqn));
        return 0;
}

static int ln_ns_ids(void *handle, uint32_t nsid, struct svff_nvme_ns_ids *ret) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_id_ns *ns = calloc(1, sizeof(*ns));
        int r;

        if (!ns)
                return -ENOMEM;
        r = status(nvme_identify_allocated_ns(h->fd, nsid, ns));
        if (r != 0)
                return r;
        memcpy(ret->nguid, ns->nguid, sizeof(ret->nguid));
        memcpy(ret->eui64, ns->eui64, sizeof(ret->eui64));
        return 0;
}

static int ln_primary_caps(void *handle, struct svff_nvme_primary_caps *ret) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_primary_ctrl_cap *cap = calloc(1, sizeof(*cap));
        int r;

        if (!cap)
                return -ENOMEM;
        r = status(nvme_identify_primary_ctrl(h->fd, 0, cap));
        if (r != 0)
                return r;
        *ret = (struct svff_nvme_primary_caps) {
                .cntlid = le16toh(cap->cntlid),
                .vqfrt = le32toh(cap->vqfrt),
                .vqrfa = le32toh(cap->vqrfa),
                .vqrfap = le16toh(cap->vqrfap),
                .vqprt = le16toh(cap->vqprt),
                .vqfrsm = le16toh(cap->vqfrsm),
                .vifrt = le32toh(cap->vifrt),
                .virfa = le32toh(cap->virfa),
                .virfap = le16toh(cap->virfap),
                .viprt = le16toh(cap->viprt),
                .vifrsm = le16toh(cap->vifrsm),
        };
        return 0;
}

static int ln_secondary_list(void *handle, struct svff_nvme_secondary *ret, size_t max, size_t *ret_n) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_secondary_ctrl_list *l = calloc(1, sizeof(*l));
        size_t n;
        int r;

        if (!l)
                return -ENOMEM;
        r = status(nvme_identify_secondary_ctrl_list(h->fd, NVME_NSID_NONE, 0, l));
        if (r != 0)
                return r;
        n = MIN((size_t) l->num, MIN(max, (size_t) NVME_ID_SECONDARY_CTRL_MAX));
        for (size_t i = 0; i < n; i++)
                ret[i] = (struct svff_nvme_secondary) {
                        .scid = le16toh(l->sc_entry[i].scid),
                        .pcid = le16toh(l->sc_entry[i].pcid),
                        .online = l->sc_entry[i].scs & 1,
                        .vfn = le16toh(l->sc_entry[i].vfn),
                        .nvq = le16toh(l->sc_entry[i].nvq),
                        .nvi = le16toh(l->sc_entry[i].nvi),
                };
        *ret_n = n;
        return 0;
}

static int ln_virt_mgmt(void *handle, enum svff_nvme_virt_act act, enum svff_nvme_res res,
                        uint16_t cntlid, uint16_t nr) {
        struct handle *h = handle;
        __u32 result = 0;
        struct nvme_virtual_mgmt_args args = {
                .result = &result,
                .args_size = sizeof(args),
                .fd = h->fd,
                .timeout = NVME_DEFAULT_IOCTL_TIMEOUT,
                .act = (enum nvme_virt_mgmt_act) act,
                .rt = (enum nvme_virt_mgmt_rt) res,
                .cntlid = cntlid,
                .nr = nr,
        };

        return status(nvme_virtual_mgmt(&args));
}

static int ln_ns_attach(void *handle, uint32_t nsid, uint16_t cntlid, bool attach) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_ctrl_list *l = calloc(1, sizeof(*l));
        __u16 ids[1] = { cntlid };

        if (!l)
                return -ENOMEM;
        nvme_init_ctrl_list(l, 1, ids);
        return status(attach ? nvme_ns_attach_ctrls(h->fd, nsid, l) : nvme_ns_detach_ctrls(h->fd, nsid, l));
}

static int ln_ns_list(void *handle, uint32_t *ret, size_t max, size_t *ret_n) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_ns_list *l = calloc(1, sizeof(*l));
        size_t n = 0;
        int r;

        if (!l)
                return -ENOMEM;
        r = status(nvme_identify_allocated_ns_list(h->fd, 0, l));
        if (r != 0)
                return r;
        for (size_t i = 0; i < NVME_ID_NS_LIST_MAX && n < max && l->ns[i]; i++)
                ret[n++] = le32toh(l->ns[i]);
        *ret_n = n;
        return 0;
}

static int ln_ns_ctrls(void *handle, uint32_t nsid, uint16_t *ret, size_t max, size_t *ret_n) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_ctrl_list *l = calloc(1, sizeof(*l));
        size_t n;
        int r;

        if (!l)
                return -ENOMEM;
        r = status(nvme_identify_nsid_ctrl_list(h->fd, nsid, 0, l));
        if (r != 0)
                return r;
        n = MIN((size_t) le16toh(l->num), MIN(max, (size_t) NVME_ID_CTRL_LIST_MAX));
        for (size_t i = 0; i < n; i++)
                ret[i] = le16toh(l->identifier[i]);
        *ret_n = n;
        return 0;
}

static int ln_format(void *handle, uint32_t nsid) {
        struct handle *h = handle;
        _cleanup_free_ struct nvme_id_ns *ns = calloc(1, sizeof(*ns));
        __u32 result = 0;
        __u8 lbaf;
        int r;

        if (!ns)
                return -ENOMEM;
        /* keep the namespace's current LBA format: only its data goes */
        r = status(nvme_identify_ns(h->fd, nsid, ns));
        if (r != 0)
                return r;
        nvme_id_ns_flbas_to_lbaf_inuse(ns->flbas, &lbaf);

        struct nvme_format_nvm_args args = {
                .result = &result,
                .args_size = sizeof(args),
                .fd = h->fd,
                .timeout = 600 * 1000,  /* a format may take minutes */
                .nsid = nsid,
                .mset = NVME_FORMAT_MSET_SEPARATE,
                .pi = NVME_FORMAT_PI_DISABLE,
                .pil = NVME_FORMAT_PIL_LAST,
                .ses = NVME_FORMAT_SES_USER_DATA_ERASE,
                .lbaf = lbaf & 0xf,
                .lbafu = (lbaf >> 4) & 0x3,
        };
        return status(nvme_format_nvm(&args));
}

static int ln_reset(void *handle) {
        struct handle *h = handle;

        return status(nvme_ctrl_reset(h->fd));
}

const struct svff_nvme_ops svff_nvme_ops_libnvme = {
        .open = ln_open,
        .close = ln_close,
        .devnum = ln_devnum,
        .identify_ctrl = ln_identify_ctrl,
        .primary_caps = ln_primary_caps,
        .secondary_list = ln_secondary_list,
        .virt_mgmt = ln_virt_mgmt,
        .ns_attach = ln_ns_attach,
        .ns_list = ln_ns_list,
        .ns_ids = ln_ns_ids,
        .ns_ctrls = ln_ns_ctrls,
        .format = ln_format,
        .reset = ln_reset,
};

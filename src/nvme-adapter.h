/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* The NVMe admin commands the NVMe class sends to a PF's primary
 * controller, behind one table of operations. The real table wraps
 * libnvme (1.3: every call takes the char device's fd; later releases
 * take a handle instead, so only nvme-adapter.c changes with them); the
 * unit tests plug in a stand-in for the admin queue.
 *
 * Every command returns 0, a positive NVMe status field (status code
 * type << 8 | status code, the Do Not Retry and More bits cleared) when
 * the controller answered with an error, or -errno when the command did
 * not reach it. The structures are svff's own, in host byte order, so
 * that neither the class nor a stand-in needs libnvme's headers. */

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "macro.h"

/* Status code types and the status codes the class handles by name. */
#define SVFF_NVME_SCT_GENERIC 0x0
#define SVFF_NVME_SCT_CMD_SPECIFIC 0x1
#define SVFF_NVME_STATUS(sct, sc) (((sct) << 8) | (sc))

enum {
        SVFF_NVME_SC_INVALID_OPCODE = SVFF_NVME_STATUS(SVFF_NVME_SCT_GENERIC, 0x01),
        SVFF_NVME_SC_INVALID_FIELD = SVFF_NVME_STATUS(SVFF_NVME_SCT_GENERIC, 0x02),
        SVFF_NVME_SC_INTERNAL = SVFF_NVME_STATUS(SVFF_NVME_SCT_GENERIC, 0x06),
        SVFF_NVME_SC_INVALID_NS = SVFF_NVME_STATUS(SVFF_NVME_SCT_GENERIC, 0x0b),
        SVFF_NVME_SC_NS_WRITE_PROTECTED = SVFF_NVME_STATUS(SVFF_NVME_SCT_GENERIC, 0x20),
        SVFF_NVME_SC_FORMAT_IN_PROGRESS = SVFF_NVME_STATUS(SVFF_NVME_SCT_GENERIC, 0x84),
        SVFF_NVME_SC_INVALID_FORMAT = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x0a),
        SVFF_NVME_SC_NS_ALREADY_ATTACHED = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x18),
        SVFF_NVME_SC_NS_IS_PRIVATE = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x19),
        SVFF_NVME_SC_NS_NOT_ATTACHED = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x1a),
        SVFF_NVME_SC_CTRL_LIST_INVALID = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x1c),
        SVFF_NVME_SC_INVALID_CTRL_ID = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x1f),
        SVFF_NVME_SC_INVALID_SEC_CTRL_STATE = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x20),
        SVFF_NVME_SC_INVALID_NUM_RESOURCES = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x21),
        SVFF_NVME_SC_INVALID_RESOURCE_ID = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x22),
        SVFF_NVME_SC_NS_ATTACHMENT_LIMIT = SVFF_NVME_STATUS(SVFF_NVME_SCT_CMD_SPECIFIC, 0x27),
};

/* The status's name from the table of the ones above ("Invalid Secondary
 * Controller State"), or NULL for any other. */
const char *svff_nvme_status_name(int status);

/* Identify Controller, Optional Admin Command Support. */
#define SVFF_NVME_OACS_NS_MGMT (1u << 3)
#define SVFF_NVME_OACS_VIRT_MGMT (1u << 7)

/* Identify Controller, what the class reads of it. */
#define SVFF_NVME_NQN_SIZE 256
struct svff_nvme_ctrl_id {
        uint16_t cntlid;
        uint16_t oacs;
        /* SUBNQN, the subsystem's NVMe Qualified Name as the controller
         * gave it: NUL-padded UTF-8 by the specification, device text
         * all the same, so checked before it is used */
        uint8_t subnqn[SVFF_NVME_NQN_SIZE];
};

/* The globally unique identifiers of a namespace in its Identify
 * Namespace data (NGUID, EUI64); all zero where the device gives none.
 * With the subsystem NQN and the NSID, they are what a host's NVMe
 * multipath matches a controller's namespace to a head by. */
struct svff_nvme_ns_ids {
        uint8_t nguid[16];
        uint8_t eui64[8];
};

/* Identify Primary Controller Capabilities (CNS 14h). VQ: queue
 * resources, VI: interrupt resources. */
struct svff_nvme_primary_caps {
        uint16_t cntlid;
        uint32_t vqfrt;         /* flexible resources, total */
        uint32_t vqrfa;         /* ... assigned to secondaries */
        uint16_t vqrfap;        /* ... allocated to the primary */
        uint16_t vqprt;         /* the primary's private resources */
        uint16_t vqfrsm;        /* most one secondary can take */
        uint32_t vifrt, virfa;
        uint16_t virfap, viprt, vifrsm;
};

/* One entry of the Secondary Controller List (CNS 15h). */
struct svff_nvme_secondary {
        uint16_t scid;          /* its controller id */
        uint16_t pcid;
        bool online;
        uint16_t vfn;           /* VF index + 1 */
        uint16_t nvq, nvi;      /* flexible resources assigned */
};

/* Virtualization Management (opcode 1Ch) actions and resource types. */
enum svff_nvme_virt_act {
        SVFF_NVME_VIRT_PRIMARY_FLEX = 1,
        SVFF_NVME_VIRT_OFFLINE = 7,
        SVFF_NVME_VIRT_ASSIGN = 8,
        SVFF_NVME_VIRT_ONLINE = 9,
};

enum svff_nvme_res {
        SVFF_NVME_RES_VQ = 0,
        SVFF_NVME_RES_VI = 1,
};

#define SVFF_NVME_MAX_SECONDARIES 127   /* one CNS 15h page */
#define SVFF_NVME_MAX_IDS 1024          /* one CNS 10h / 12h page */

struct svff_nvme_ops {
        /* Opens the controller's admin queue ("nvme0": the char device
         * /dev/nvme0 for the real table). *ret is the handle the other
         * operations take. */
        int (*open)(void *userdata, const char *ctrl, void **ret);
        void (*close)(void *handle);
        /* The device number of the character device the handle has open
         * (fstat of the fd for the real table): 1 and *ret; 0 when the
         * handle has no device node (a stand-in for a simulated tree's
         * controller); -ENOTTY when what it has open is no character
         * device. The class compares it with the PF's controller in
         * sysfs before every batch of commands. */
        int (*devnum)(void *handle, dev_t *ret);

        int (*identify_ctrl)(void *handle, struct svff_nvme_ctrl_id *ret);
        int (*primary_caps)(void *handle, struct svff_nvme_primary_caps *ret);
        /* Every secondary controller, *ret_n of them (at most max). */
        int (*secondary_list)(void *handle, struct svff_nvme_secondary *ret, size_t max, size_t *ret_n);
        int (*virt_mgmt)(void *handle, enum svff_nvme_virt_act act, enum svff_nvme_res res,
                         uint16_t cntlid, uint16_t nr);
        /* Namespace Attachment of nsid to (attach) or from one controller. */
        int (*ns_attach)(void *handle, uint32_t nsid, uint16_t cntlid, bool attach);
        /* The subsystem's allocated namespaces, attached or not (CNS 10h). */
        int (*ns_list)(void *handle, uint32_t *ret, size_t max, size_t *ret_n);
        /* The identifiers of nsid, allocated in the subsystem and
         * attached to any controller or none (Identify Namespace, CNS
         * 11h): the primary reads those of its VFs' namespaces. */
        int (*ns_ids)(void *handle, uint32_t nsid, struct svff_nvme_ns_ids *ret);
        /* The controllers nsid is attached to (CNS 12h). */
        int (*ns_ctrls)(void *handle, uint32_t nsid, uint16_t *ret, size_t max, size_t *ret_n);
        /* Format NVM of nsid in its current LBA format, erasing user
         * data. It runs only on a controller nsid is attached to: the
         * class sends none to the primary for a VF's namespace, which
         * would have to be attached to the host for it. */
        int (*format)(void *handle, uint32_t nsid);
        /* Controller reset of the primary: applies a Primary Controller
         * Flexible Allocation, and disrupts the host's own use of it. */
        int (*reset)(void *handle);
};

/* libnvme's table; userdata unused. */
extern const struct svff_nvme_ops svff_nvme_ops_libnvme;

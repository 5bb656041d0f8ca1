/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* A stand-in for an NVMe PF's admin queue, for tests where no real
 * controller can run: an svff_nvme_ops table over a model of the primary
 * controller and its secondaries that follows QEMU's emulated controller
 * (hw/nvme/ctrl.c, QEMU 7.2) and the NVMe base specification:
 *
 *   - VQ/VI resources change only while a secondary is offline
 *     (Invalid Secondary Controller State); above VQFRSM/VIFRSM is
 *     Invalid Number of Controller Resources; above the free pool
 *     (total - the primary's share - assigned) Invalid Resource
 *     Identifier; an unknown controller is Invalid Controller Identifier;
 *   - online needs NVI >= 1, NVQ >= 2 and the VF enabled (else Invalid
 *     Secondary Controller State); offline and VF disable drop both to 0;
 *   - SCID n is VFN n, VF index n - 1;
 *   - Namespace Attachment: Namespace Already Attached / Not Attached,
 *     Invalid Field for an unknown namespace, Controller List Invalid for
 *     a controller that does not exist (a secondary whose VF is not
 *     enabled);
 *   - a Primary Controller Flexible Allocation applies at the next reset.
 *
 * Every command is logged, and any command can be made to fail. */

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <sys/types.h>

#include "nvme-adapter.h"

/* room for a full Secondary Controller List (bench/bench-nvme runs 127
 * VFs, a namespace each) */
#define STANDIN_MAX_SEC SVFF_NVME_MAX_SECONDARIES
#define STANDIN_MAX_NS (SVFF_NVME_MAX_SECONDARIES + 1)

struct standin_ns {
        uint32_t nsid;
        struct svff_nvme_ns_ids ids;            /* all zero, as QEMU's */
        uint16_t ctrls[STANDIN_MAX_SEC + 1];
        size_t n_ctrls;
        unsigned formats;
};

struct nvme_standin {
        uint16_t oacs;
        char subnqn[SVFF_NVME_NQN_SIZE];        /* as QEMU's: nqn.2019-08.org.qemu:<serial> */
        bool cns14;                             /* answers Identify CNS 14h */
        struct svff_nvme_primary_caps caps;     /* vqrfa/virfa kept by the model */
        uint16_t next_vqrfap, next_virfap;
        struct svff_nvme_secondary sec[STANDIN_MAX_SEC];
        size_t n_sec;
        unsigned numvfs;                        /* VFs enabled */
        struct standin_ns ns[STANDIN_MAX_NS];
        size_t n_ns;

        char *log;                              /* "cmd\ncmd\n..." */
        /* the next `fail_times` commands whose log line starts with
         * fail_prefix answer fail_status (negative: -errno) */
        char fail_prefix[64];
        int fail_status;
        unsigned fail_times;
        unsigned opens;
        bool open_refused;
        /* the next opens answer EAGAIN, as nvme_dev_open() while the
         * controller is not live yet */
        unsigned open_not_live;

        /* /dev as open sees it, for a test to renumber controllers:
         * name is this controller's instance ("nvme0"; empty: it answers
         * to any name, one controller alone), dev its character device's
         * number (0: none, as a simulated tree's controller has),
         * next_ctrl the host's other controllers, which open finds by
         * name, and whose handles then get the commands. on_open, when
         * set, runs at every open (the count of them so far given),
         * before the name is looked up. */
        char name[16];
        dev_t dev;
        struct nvme_standin *next_ctrl;
        void (*on_open)(struct nvme_standin *s, unsigned n);
        unsigned open_calls;
};

/* The VM tier's controller: sriov_max_vfs=4, sriov_vq_flexible=8,
 * sriov_vi_flexible=4, max_ioqpairs=12, msix_qsize=8: 2 VQ and 1 VI
 * per VF at most, OACS 0x10a; namespaces 1..4 detached, numvfs 0;
 * serial "svffnvme0", so subsystem NQN nqn.2019-08.org.qemu:svffnvme0;
 * the namespaces' NGUID and EUI64 all zero, as QEMU gives them. */
void nvme_standin_init_qemu(struct nvme_standin *s);
void nvme_standin_done(struct nvme_standin *s);

/* sriov_numvfs: secondaries beyond n go offline with nothing assigned. */
void nvme_standin_set_numvfs(struct nvme_standin *s, unsigned n);

void nvme_standin_fail(struct nvme_standin *s, const char *prefix, int status, unsigned times);

/* The model as the device would answer it, one line each: "ns NSID:
 * CNTLID..." (the controllers that have the namespace) and "sc SCID
 * online|offline VQ VI", for tests that check the device, not svff's
 * records. */
void nvme_standin_dump(const struct nvme_standin *s, FILE *f);

/* The commands logged since the last call, joined by "; ". Reads
 * (identify-*, ns-list, ns-ctrls) are left out unless all. The log is
 * then cleared. Free the result. */
char *nvme_standin_take_log(struct nvme_standin *s, bool all);

const struct svff_nvme_secondary *nvme_standin_sec(const struct nvme_standin *s, uint16_t scid);
struct standin_ns *nvme_standin_ns(struct nvme_standin *s, uint32_t nsid);
bool nvme_standin_attached(const struct nvme_standin *s, uint32_t nsid, uint16_t cntlid);

/* userdata: the struct nvme_standin */
extern const struct svff_nvme_ops nvme_standin_ops;

/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <pci/pci.h>
#include <setjmp.h>
#include <stdlib.h>
#include <string.h>

#include "pciaddr.h"
#include "pcinames.h"

/* libpci reports fatal problems through pacc->error, declared noreturn:
 * its code does not expect it to return, and the default one calls
 * exit(). The callback takes no userdata, so ours longjmp()s back to
 * pci_call() on the same thread: the jump target is thread-local and set
 * only while this thread is inside libpci under the context's libpci
 * lock, so contexts share nothing. pci_call() then returns -EIO and drops
 * the handle, whose state is unknown. What the skipped libpci frames held
 * is lost; the paths that get here are rare: the ones known to reach
 * error() (unsupported method, over-long file names) are ruled out by
 * checks before the call, what remains is a corrupt pci.ids (a parse
 * error, reported after libpci closed the file), a device vanishing under
 * libpci, and out-of-memory inside libpci.
 *
 * (Earlier this ran every libpci call on a thread of its own, ended by
 * pthread_exit() from the callback: a hidden thread and a fresh malloc
 * arena per lookup, and forced unwinding through libpci's frames, which
 * aborts where they lack unwind tables.) */

static _Thread_local jmp_buf *pci_jump;

static void svff_pci_access_free(void *p);

static void pci_error_cb(char *msg, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void pci_error_cb(char *msg, ...) {
        if (pci_jump)
                longjmp(*pci_jump, 1);
        /* libpci entered other than through pci_call() or
         * svff_pci_access_free(): a bug in this file */
        abort();
}

/* Warnings ("Cannot open .../config") would go to stderr; the caller
 * checks what matters itself and logs through the context. */
static void pci_silent_cb(char *msg, ...) __attribute__((format(printf, 1, 2)));
static void pci_silent_cb(char *msg, ...) {
}

/* libpci's sysfs backend builds names in a 1024-byte buffer and calls
 * error() when one does not fit. */
#define PCI_OBJNAMELEN 1024
#define PCI_OBJNAME_SUFFIX_MAX (sizeof("/bus/pci/devices/") + SVFF_PCI_ADDR_STRLEN + sizeof("/config") + 16)

enum pci_op {
        PCI_OP_NAMES,
        PCI_OP_SRIOV_CAP,
};

/* Names looked up once; libpci's whole pci.ids (~2 MiB of heap) is
 * loaded for a lookup and released right after, as discovery only ever
 * asks for the few ids of the host's PFs. */
struct name_entry {
        uint16_t vendor, device;
        char *vendor_name, *device_name;
};

/* What the context's libpci slot holds. */
struct pci_state {
        struct pci_access *pacc;  /* NULL until needed, or after a failure */
        struct name_entry *names;
        size_t n_names;
};

/* What a libpci call reads and writes. */
struct pci_call {
        enum pci_op op;
        struct pci_state *state;
        const char *root;
        const char *ids_path;

        uint16_t vendor, device;
        char *vendor_name, *device_name;

        struct svff_pci_addr addr;
        struct svff_sriov_cap cap;

        int result;
};

static int pci_access_setup(struct pci_call *c) {
        _cleanup_free_ char *sysfs_path = NULL;
        struct pci_access *pacc;

        if (c->state->pacc)
                return 0;

        if (asprintf(&sysfs_path, "%s/bus/pci", c->root) < 0)
                return -ENOMEM;

        pacc = pci_alloc();
        /* Stored at once so that an error() below still gets it freed. */
        c->state->pacc = pacc;
        pacc->error = pci_error_cb;
        pacc->warning = pci_silent_cb;
        pacc->debug = pci_silent_cb;
        pacc->method = PCI_ACCESS_SYS_BUS_PCI;
        /* Names from pci.ids only: no DNS, no ~/.pciids-cache, no hwdb, so
         * results do not depend on the host or the network. */
        pacc->id_lookup_mode = 0;
        (void) pci_set_param(pacc, "hwdb.disable", (char *) "1");
        if (pci_set_param(pacc, "sysfs.path", sysfs_path) < 0)
                return -EIO;
        if (c->ids_path) {
                char *p = strdup(c->ids_path);
                if (!p)
                        return -ENOMEM;
                pci_set_name_list_path(pacc, p, 1);
        }
        pci_init(pacc);
        return 0;
}

static int pci_do_names(struct pci_call *c) {
        struct pci_access *pacc = c->state->pacc;
        char buf[1024];  /* a name, not a path; libpci truncates safely */
        const char *s;

        s = pci_lookup_name(pacc, buf, sizeof(buf), PCI_LOOKUP_VENDOR | PCI_LOOKUP_NO_HWDB,
                            c->vendor);
        if (!s)
                return -EIO;
        c->vendor_name = strdup(s);
        if (!c->vendor_name)
                return -ENOMEM;

        s = pci_lookup_name(pacc, buf, sizeof(buf), PCI_LOOKUP_DEVICE | PCI_LOOKUP_NO_HWDB,
                            c->vendor, c->device);
        if (!s)
                return -EIO;
        c->device_name = strdup(s);
        if (!c->device_name)
                return -ENOMEM;

        pci_free_name_list(pacc);
        return 0;
}

static int pci_do_sriov_cap(struct pci_call *c) {
        struct pci_access *pacc = c->state->pacc;
        struct pci_dev *d;
        struct pci_cap *cap;
        unsigned pos;
        int r = 0;

        d = pci_get_dev(pacc, (int) c->addr.domain, c->addr.bus, c->addr.slot, c->addr.func);
        if (!d)
                return -ENOMEM;

        /* Unreadable config space reads as all ones. */
        if (pci_read_word(d, PCI_VENDOR_ID) == 0xffff) {
                r = -ENODEV;
                goto out;
        }

        pci_fill_info(d, PCI_FILL_EXT_CAPS);
        cap = pci_find_cap(d, PCI_EXT_CAP_ID_SRIOV, PCI_CAP_EXTENDED);
        if (!cap) {
                r = -EOPNOTSUPP;
                goto out;
        }

        pos = cap->addr;
        c->cap = (struct svff_sriov_cap) {
                .initial_vfs = pci_read_word(d, (int) pos + PCI_IOV_INITIALVF),
                .total_vfs = pci_read_word(d, (int) pos + PCI_IOV_TOTALVF),
                .num_vfs = pci_read_word(d, (int) pos + PCI_IOV_NUMVF),
                .offset = pci_read_word(d, (int) pos + PCI_IOV_OFFSET),
                .stride = pci_read_word(d, (int) pos + PCI_IOV_STRIDE),
                .vf_device = pci_read_word(d, (int) pos + PCI_IOV_DID),
                .vf_enable = pci_read_word(d, (int) pos + PCI_IOV_CTRL) & PCI_IOV_CTRL_VFE,
        };
out:
        pci_free_dev(d);
        return r;
}

static void pci_call_run(struct pci_call *c) {
        int r;

        r = pci_access_setup(c);
        if (r >= 0)
                switch (c->op) {
                case PCI_OP_NAMES:
                        r = pci_do_names(c);
                        break;
                case PCI_OP_SRIOV_CAP:
                        r = pci_do_sriov_cap(c);
                        break;
                }
        c->result = r;
}

static void pci_state_drop_pacc(struct pci_state *st) {
        jmp_buf jb, *saved = pci_jump;
        struct pci_access *pacc = st->pacc;

        st->pacc = NULL;
        if (!pacc)
                return;
        if (setjmp(jb) == 0) {
                pci_jump = &jb;
                pci_cleanup(pacc);
        }
        /* else: leaked, as libpci failed freeing it */
        pci_jump = saved;
}

static const struct name_entry *names_find(const struct pci_state *st, uint16_t vendor,
                                           uint16_t device) {
        for (size_t i = 0; i < st->n_names; i++)
                if (st->names[i].vendor == vendor && st->names[i].device == device)
                        return &st->names[i];
        return NULL;
}

/* Runs c inside libpci with the error trampoline set: c->result, or
 * -ECANCELED when libpci failed fatally (its handle is then dropped). */
static int pci_call_guarded(struct pci_call *c) {
        jmp_buf jb, *saved = pci_jump;
        volatile int r = -ECANCELED;

        if (setjmp(jb) == 0) {
                pci_jump = &jb;
                pci_call_run(c);
                r = c->result;
        } else
                pci_state_drop_pacc(c->state);
        pci_jump = saved;
        return r;
}

/* Runs c under the context's libpci lock, on this thread. */
static int pci_call(struct svff_ctx *ctx, struct pci_call *c) {
        const char *root = svff_ctx_get_root(ctx);
        struct pci_state **slot;
        int r;

        if (strlen(root) + PCI_OBJNAME_SUFFIX_MAX >= PCI_OBJNAMELEN) {
                svff_log_debug(ctx, "Sysfs root '%s' is too long for libpci", root);
                return -ENAMETOOLONG;
        }
        if (!pci_get_method_name(PCI_ACCESS_SYS_BUS_PCI) ||
            pci_get_method_name(PCI_ACCESS_SYS_BUS_PCI)[0] == '\0') {
                svff_log_debug(ctx, "libpci was built without its linux-sysfs backend");
                return -EOPNOTSUPP;
        }

        c->root = root;
        slot = (struct pci_state **) svff_ctx_pci_acquire(ctx, svff_pci_access_free, &c->ids_path);
        if (!*slot)
                *slot = calloc(1, sizeof(struct pci_state));
        if (!*slot) {
                svff_ctx_pci_release(ctx);
                return -ENOMEM;
        }
        c->state = *slot;
        c->result = -EIO;

        if (c->op == PCI_OP_NAMES) {
                const struct name_entry *e = names_find(c->state, c->vendor, c->device);

                if (e) {
                        c->vendor_name = strdup(e->vendor_name);
                        c->device_name = strdup(e->device_name);
                        r = c->vendor_name && c->device_name ? 0 : -ENOMEM;
                        goto out;
                }
        }

        r = pci_call_guarded(c);
        if (r == -ECANCELED) {
                svff_log_debug(ctx, "libpci failed fatally (corrupt pci.ids? device gone? out of memory?); "
                               "dropped its handle");
                r = -EIO;
        }

        if (r >= 0 && c->op == PCI_OP_NAMES) {
                struct name_entry *n = realloc(c->state->names, (c->state->n_names + 1) * sizeof(*n));

                if (n) {
                        c->state->names = n;
                        n[c->state->n_names] = (struct name_entry) {
                                .vendor = c->vendor,
                                .device = c->device,
                                .vendor_name = strdup(c->vendor_name),
                                .device_name = strdup(c->device_name),
                        };
                        if (n[c->state->n_names].vendor_name && n[c->state->n_names].device_name)
                                c->state->n_names++;
                        else {
                                free(n[c->state->n_names].vendor_name);
                                free(n[c->state->n_names].device_name);
                        }
                }
                /* not cached: looked up again next time */
        }
out:
        svff_ctx_pci_release(ctx);

        if (r < 0) {
                free(c->vendor_name);
                free(c->device_name);
                c->vendor_name = c->device_name = NULL;
        }
        return r;
}

int svff_pci_names(struct svff_ctx *ctx, uint16_t vendor, uint16_t device,
                   char **ret_vendor, char **ret_device) {
        struct pci_call c = {
                .op = PCI_OP_NAMES,
                .vendor = vendor,
                .device = device,
        };
        int r;

        if (!ctx || !ret_vendor)
                return -EINVAL;

        r = pci_call(ctx, &c);
        if (r < 0) {
                svff_log_debug(ctx, "Failed to look up names of %04x:%04x: %d", vendor, device, r);
                return r;
        }

        *ret_vendor = c.vendor_name;
        if (ret_device)
                *ret_device = c.device_name;
        else
                free(c.device_name);
        return 0;
}

int svff_pci_read_sriov_cap(struct svff_ctx *ctx, const char *address, struct svff_sriov_cap *ret) {
        _cleanup_free_ char *config = NULL;
        char canonical[SVFF_PCI_ADDR_STRLEN];
        struct pci_call c = { .op = PCI_OP_SRIOV_CAP };
        int r;

        if (!ctx || !ret)
                return -EINVAL;
        r = svff_pci_addr_parse(address, &c.addr);
        if (r < 0)
                return r;
        svff_pci_addr_format(&c.addr, canonical);

        /* libpci would only warn and read all ones; ask first, so that a
         * missing device is -ENODEV and not "no capability". */
        if (asprintf(&config, "bus/pci/devices/%s/config", canonical) < 0)
                return -ENOMEM;
        if (faccessat(svff_ctx_get_rootfd(ctx), config, R_OK, 0) < 0) {
                r = -errno;
                svff_log_debug(ctx, "Cannot read config space of '%s': %d", canonical, r);
                return r == -ENOENT ? -ENODEV : r;
        }

        r = pci_call(ctx, &c);
        if (r < 0) {
                svff_log_debug(ctx, "No SR-IOV capability read from '%s': %d", canonical, r);
                return r;
        }

        *ret = c.cap;
        return 0;
}

static void svff_pci_access_free(void *p) {
        struct pci_state *st = p;

        if (!st)
                return;
        pci_state_drop_pacc(st);
        for (size_t i = 0; i < st->n_names; i++) {
                free(st->names[i].vendor_name);
                free(st->names[i].device_name);
        }
        free(st->names);
        free(st);
}

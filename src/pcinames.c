/* SPDX-License-Identifier: LGPL-2.1-or-later */

#include <fcntl.h>
#include <pci/pci.h>
#include <pthread.h>
#include <string.h>

#include "pciaddr.h"
#include "pcinames.h"

/* libpci reports fatal problems through pacc->error, declared noreturn:
 * its code does not expect it to return (returning is undefined
 * behaviour), and the default one calls exit(). The callbacks take no
 * userdata, and libsvff keeps no global state, so there is nowhere to
 * longjmp to. Instead every entry into libpci runs on a short-lived
 * thread of ours; the error callback ends that thread with
 * pthread_exit(), the caller sees PTHREAD_CANCELED from pthread_join()
 * and returns -EIO, and the handle, whose state is then unknown, is
 * dropped. The paths known to reach error() (unsupported method, over-long
 * file names) are ruled out by checks before the call; what remains is
 * a corrupt pci.ids and out-of-memory inside libpci. */

static void pci_error_cb(char *msg, ...) __attribute__((noreturn, format(printf, 1, 2)));
static void pci_error_cb(char *msg, ...) {
        pthread_exit(PTHREAD_CANCELED);
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

/* Everything a libpci thread reads or writes; the caller owns it and
 * waits for the thread, so plain borrowed pointers are safe. */
struct pci_call {
        enum pci_op op;
        struct pci_access **slot;
        const char *root;
        const char *ids_path;

        uint16_t vendor, device;
        bool want_device;
        char *vendor_name, *device_name;

        struct svff_pci_addr addr;
        struct svff_sriov_cap cap;

        int result;
};

static int pci_access_setup(struct pci_call *c) {
        _cleanup_free_ char *sysfs_path = NULL;
        struct pci_access *pacc;

        if (*c->slot)
                return 0;

        if (asprintf(&sysfs_path, "%s/bus/pci", c->root) < 0)
                return -ENOMEM;

        pacc = pci_alloc();
        /* Stored at once so that an error() below still gets it freed. */
        *c->slot = pacc;
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
        struct pci_access *pacc = *c->slot;
        char buf[1024];  /* a name, not a path; libpci truncates safely */
        const char *s;

        s = pci_lookup_name(pacc, buf, sizeof(buf), PCI_LOOKUP_VENDOR | PCI_LOOKUP_NO_HWDB,
                            c->vendor);
        if (!s)
                return -EIO;
        c->vendor_name = strdup(s);
        if (!c->vendor_name)
                return -ENOMEM;

        if (c->want_device) {
                s = pci_lookup_name(pacc, buf, sizeof(buf), PCI_LOOKUP_DEVICE | PCI_LOOKUP_NO_HWDB,
                                    c->vendor, c->device);
                if (!s)
                        return -EIO;
                c->device_name = strdup(s);
                if (!c->device_name)
                        return -ENOMEM;
        }
        return 0;
}

static int pci_do_sriov_cap(struct pci_call *c) {
        struct pci_access *pacc = *c->slot;
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

static void *pci_call_run(void *userdata) {
        struct pci_call *c = userdata;
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
        return NULL;
}

/* Runs c on a libpci thread under the context's libpci lock. */
static int pci_call(struct svff_ctx *ctx, struct pci_call *c) {
        const char *root = svff_ctx_get_root(ctx);
        pthread_t thread;
        void *retval = NULL;
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
        c->slot = (struct pci_access **) svff_ctx_pci_acquire(ctx, &c->ids_path);
        c->result = -EIO;

        r = -pthread_create(&thread, NULL, pci_call_run, c);
        if (r == 0) {
                r = -pthread_join(thread, &retval);
                if (r == 0 && retval == PTHREAD_CANCELED) {
                        svff_log_debug(ctx, "libpci failed fatally (corrupt pci.ids? out of memory?); "
                                       "dropping its handle");
                        svff_pci_access_free(*c->slot);
                        *c->slot = NULL;
                        r = -EIO;
                } else if (r == 0)
                        r = c->result;
        }
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
                .want_device = ret_device != NULL,
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

void svff_pci_access_free(void *pacc) {
        if (pacc)
                pci_cleanup(pacc);
}

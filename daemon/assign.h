/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* VFs to domains: io.svff.Attach, Detach, Pause and Unpause, and what
 * domain lifecycle events do to the assignments.
 *
 *   Attach(vf | pf, domain, live?, config?, guest_address?)
 *     main:   the VF is free (store) and not busy; for pf, the first VF
 *             on vfio-pci that is neither (from a fresh snapshot)
 *     libvirt pool: look the domain up; the VF on vfio-pci (bound when
 *             svff's recorded driver for it is vfio-pci, refused
 *             otherwise); its IOMMU group viable and shared with no other
 *             domain; attach; read the guest address back
 *     main:   record, commit, reply
 *   Detach(vf): record "detaching", commit; detach and wait for the guest
 *     (deadline detach_timeout_sec); gone -> drop the record; past the
 *     deadline -> GuestNotReleased, the record stays "detaching".
 *   Pause(vf): native (the configured QMP device-pause command, if the
 *     domain's QEMU offers it) or detach-with-reservation; the record
 *     keeps the guest address and alias, state "held", pause_mode.
 *   Unpause(vf): the reverse, at the recorded guest address and alias.
 *
 * Each of the four journals an intent on the VF's record (committed)
 * before libvirt is asked, and commits the final record after; a final
 * commit that fails takes the change back in libvirt (a detach cannot
 * be: the disk keeps the intent). assign_recover() resolves the intents
 * a crash left against the domain's XML; until then the VF is taken.
 *
 * Lifecycle: undefined -> the config side of the domain's assignments is
 * gone, those not live are released back to the pool; stopped -> config
 * assignments are kept (live=false), live-only ones are closed; started
 * -> attached config assignments are live again. Each is an event. An
 * event for a domain with an assignment on a PF that has an operation
 * in progress is held back, in order, until the operation ends. */

#include "manager.h"
#include "params.h"
#include "server.h"

/* io.svff.Attach, Detach, Pause and Unpause: their rows of the method
 * table. */
extern const struct method attach_method, detach_method, pause_method, unpause_method;

/* Detaches vf from its domain exactly as Detach does, for an operation
 * that needs the VF off its domain first (Release with force). done runs
 * once, on the main thread (possibly before this returns), with 0 or a
 * -errno and the io.svff error name and message Detach would have
 * answered; vf and message are borrowed for the call. */
typedef void (*assign_detach_fn)(struct manager *m, const char *vf, int r, const char *error,
                                 const char *message, void *userdata);
void assign_detach(struct manager *m, const char *vf, assign_detach_fn done, void *userdata);

/* A lifecycle event (virDomainEventType and its detail) for the domain
 * uuid/name, on the main thread. While an operation owns some of the
 * domain's assignments the event is held back, and applied the moment
 * that operation is removed from the registry (a hook). */
void assign_domain_event(struct manager *m, const char *uuid, const char *name, int event, int detail);

/* Resolves every intent in the store against libvirt's view, on the
 * libvirt pool (main thread, once connected: each VF is busy until its
 * answer is in). An intent libvirt cannot answer for stays. */
void assign_recover(struct manager *m);

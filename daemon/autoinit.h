/* SPDX-License-Identifier: LGPL-2.1-or-later */
#pragma once

/* Auto-init: PF policies (svff.conf "policies") applied without anyone
 * asking.
 *
 *   start-up   every PF present gets its policy; a PF whose VFs carry
 *              assignments gets its stored count and bindings back, so
 *              the domains find them (svffd is ordered before libvirt
 *              and says READY=1 only once these are done);
 *   add/bind   a PF that appears (udev, or an injected event) gets its
 *              policy, or else the state svff recorded for it, once it
 *              has been quiet for settle_msec;
 *   reload     the policies as changed, over the PFs present;
 *   image      a policy naming an image reprograms the PF (see
 *              reconfigure.h) unless the store records that very file
 *              as the one svff flashed last; never while VFs of the PF
 *              are assigned (refused: 'svffctl reprogram' keeps them);
 *   remove     the PF and its assignments are absent: List shows them
 *              under "absent", Status as drift, Monitor as pf-removed;
 *              the store keeps every record.
 *
 * Auto-init never changes the VF count of a PF with assigned VFs, nor
 * binds them elsewhere: it refuses, and Status shows the refusal.
 *
 * Who owns a PF's VF count (manager_pf_owner()). A policy with a VF
 * count owns the count of the PFs it matches until an operator's
 * explicit Init, Reconf or Release takes it over (a Reconf once the PF
 * took its count: one refused or rolled back leaves the owner as it
 * was); the PF's store record then says "operator" (else
 * "policy:<name>"), and no policy changes that PF's count or bindings
 * again, at start-up, on reload or when it comes back: it is handled as
 * a PF without a policy. Init with policy=true hands the count back to
 * the policy. A reload applies a policy only to the PFs it owns whose
 * count or drivers differ from it. A record written before owners were
 * recorded belongs to the matching policy when it holds the policy's
 * count, else to the operator.
 *
 * Everything runs on the main thread; the sysfs work is an ordinary Init
 * operation on the ops pool. autoinit_handle_uevent() is what the udev
 * monitor calls, and what tests drive directly through
 * io.svff.Debug.InjectUevent (compiled with --enable-fault-points). */

#include "manager.h"
#include "params.h"

struct autoinit;

int autoinit_new(struct manager *m, struct autoinit **ret);
struct autoinit *autoinit_free(struct autoinit *a);

/* A PCI uevent: action "add", "bind" or "remove" (others are ignored),
 * address the device's PCI address. VFs and devices without SR-IOV are
 * ignored. */
void autoinit_handle_uevent(struct manager *m, const char *action, const char *address);

/* The policy work that no operation shows yet, for Status (so that
 * 'status --wait' after a reload waits for it): fn(pf, phase,
 * started_usec, userdata) for a reload's pass waiting for its snapshot
 * (pf NULL: every PF; phase "reload"), a PF that appeared and is
 * settling ("settle"), and an image being read for its hash
 * ("image-hash"). started_usec: CLOCK_MONOTONIC. */
typedef void (*autoinit_pending_fn)(const char *pf, const char *phase, uint64_t started_usec, void *userdata);
void autoinit_foreach_pending(struct manager *m, autoinit_pending_fn fn, void *userdata);

/* Why the owning policy was last refused on pf (its VFs are assigned,
 * say), or why its Init waits, or NULL. Borrowed until the next pass
 * over pf. */
const char *autoinit_pf_refused(struct manager *m, const char *pf);

/* Why the Init svffd started on its own for pf last failed (also listed
 * by autoinit_pf_refused()), or NULL. */
const char *autoinit_pf_failed(struct manager *m, const char *pf);

/* Start-up pass over the current snapshot. Returns how many Init
 * operations it started. */
unsigned autoinit_startup(struct manager *m);

/* After a reload: the policies, as they now read, over a snapshot no
 * older than the last change svffd knows of (at once when the current
 * one is, else once the next is taken). */
void autoinit_reload(struct manager *m);

/* A reload as SIGHUP asks for it: svff.conf read again (a file that does
 * not read keeps the running settings, with m->config_error saying why),
 * then autoinit_reload(), with systemd told of both. Returns what
 * manager_reload_config() did. */
int autoinit_reload_config(struct manager *m);

/* io.svff.Reload(dry_run): the configuration read again and the
 * policies applied, as SIGHUP does; or with dry_run, what that would do
 * to each PF, from the same decisions the pass makes. */
extern const struct method reload_method;

#ifdef SVFF_FAULT_POINTS
/* io.svff.Debug.InjectUevent(action, device): a test's way into
 * autoinit_handle_uevent(), since libudev cannot watch a simulated
 * sysfs. Root only. */
extern const struct method inject_uevent_method;
#endif

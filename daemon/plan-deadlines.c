/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "plan-deadlines.h"

void plan_set_deadlines(const struct manager *m, struct svff_reconf_plan *p) {
        const struct svff_config *c = &m->config;

        for (size_t i = 0; p && i < p->n_steps; i++) {
                const struct svff_reconf_step *s = &p->steps[i];
                uint64_t usec = 0;

                switch (s->action) {
                case SVFF_RECONF_DO_NUMVFS:
                        /* the write of 0 is timed by the VFs it removes */
                        usec = svff_config_numvfs_timeout(c, s->numvfs > 0 ? s->numvfs : p->from);
                        break;
                case SVFF_RECONF_DO_BIND:
                        if (s->item < 0)        /* a change's bind of its VF has none */
                                usec = svff_config_bind_timeout(c, s->numvfs);
                        break;
                case SVFF_RECONF_DO_PAUSE:
                case SVFF_RECONF_DO_DETACH:
                case SVFF_RECONF_DO_RELEASE:
                        /* A reconf's quiesce has its own; a release's and
                         * an assignment change's are Detach's. A detach
                         * of a VF paused by a detach waits for no guest. */
                        if (p->change && s->item >= 0 && !p->items[s->item].a.live && !p->items[s->item].a.config)
                                break;
                        usec = p->release || p->change ? c->detach_timeout_usec : c->reconf_detach_timeout_usec;
                        /* A pause tries QMP's native pause first. */
                        if (s->action == SVFF_RECONF_DO_PAUSE)
                                usec += PLAN_QMP_TIMEOUT_USEC;
                        break;
                case SVFF_RECONF_DO_UNPAUSE:
                        usec = PLAN_QMP_TIMEOUT_USEC;
                        break;
                case SVFF_RECONF_DO_FLASH:
                        usec = c->flash_timeout_usec;
                        break;
                case SVFF_RECONF_DO_RESCAN:
                        usec = PLAN_RESCAN_TIMEOUT_USEC;
                        break;
                default:
                        break;
                }
                svff_reconf_plan_set_deadline(p, i, usec / USEC_PER_MSEC);
        }
}

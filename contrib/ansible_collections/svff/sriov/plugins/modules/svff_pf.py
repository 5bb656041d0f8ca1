#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: LGPL-2.1-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: svff_pf
short_description: An SR-IOV PF's VF count, VF driver or policy, through svffd
description:
  - Sets a PF's VF count and the driver its VFs are bound to (svffd's
    C(Init)), or hands the PF back to its svff.conf policy.
  - A change of count while VFs of the PF are assigned to domains is a
    reconf (svffd's C(Reconf)); every assigned VF is paused or detached,
    the count changed through 0, and every VF put back in its domain at
    the same guest address. It is refused unless I(keep_assignments=true).
  - The same count and driver report C(changed=false) and send nothing
    that changes the host.
  - Check mode runs svffd's dry run (C(Reconf) with C(dry_run)); with
    C(--diff) the plan is printed, which domains keep their VF, how, and
    every step. Nothing is changed.
version_added: "0.1.0"
author: svff
options:
  pf:
    description: The PF's PCI address (C(0000:03:00.0)).
    type: str
    required: true
  state:
    description: C(present) is the only state; C(numvfs=0) removes the VFs.
    type: str
    choices: [present]
    default: present
  numvfs:
    description: The VF count. Mutually exclusive with I(policy).
    type: int
  driver:
    description:
      - The driver the VFs are bound to; svffd's configured vf_driver
        (vfio-pci) when not given and the PF has no recorded driver.
      - A driver change over assigned VFs is refused by svffd.
    type: str
  policy:
    description: Hand the PF's count back to its svff.conf policy (svffd's
      C(Init) with policy), which owns it again.
    type: bool
    default: false
  keep_assignments:
    description:
      - Allow a count change over assigned VFs, a reconf that keeps every
        domain's VF. Without it such a change fails and nothing is touched.
      - A count that would drop an assigned VF (its index not below the
        new count) is still refused, with svffd's plan.
    type: bool
    default: false
  mode:
    description: How a reconf takes assigned VFs off their domains.
    type: str
    choices: [pause, detach]
    default: pause
  socket:
    description: svffd's varlink socket.
    type: path
    default: /run/svff/svffd.sock
  timeout:
    description:
      - Seconds to wait for each answer of svffd. When it passes, the task
        fails naming the operation svffd still runs; svffd carries it on.
    type: float
    default: 300
notes:
  - Changes need root or svffd's admin group (C(become=true)); check mode
    needs neither.
seealso:
  - module: svff.sriov.svff_info
  - module: svff.sriov.svff_assignment
'''

EXAMPLES = r'''
- name: Eight VFs on vfio-pci
  svff.sriov.svff_pf:
    pf: "0000:03:00.0"
    numvfs: 8

- name: Twelve, keeping every domain's VF (a reconf)
  svff.sriov.svff_pf:
    pf: "0000:03:00.0"
    numvfs: 12
    keep_assignments: true

- name: Back to what svff.conf's policy says
  svff.sriov.svff_pf:
    pf: "0000:03:00.0"
    policy: true
'''

RETURN = r'''
pf:
  description: The PF.
  returned: always
  type: str
numvfs:
  description: Its VF count after the task (in check mode, the count asked for).
  returned: always
  type: int
operation:
  description: What was (or in check mode would be) done, init, reconf,
    policy or none.
  returned: always
  type: str
plan:
  description: svffd's plan (C(Reconf) dry run), when a count change was planned.
  returned: when the count changes
  type: dict
assignments:
  description: What a reconf did to each assignment (outcome, has_vf).
  returned: after a reconf
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.svff.sriov.plugins.module_utils.svff import (
    COMMON_ARGS, SVFF_EXCEPTIONS, SvffClient, assigned_vfs, fail_from, find_pf, plan_text)


def describe(pf):
    desired = pf.get('desired') or {}
    return "pf: %s\nnumvfs: %s\ndriver: %s\nowner: %s\n" % (
        pf['address'], pf.get('numvfs'), desired.get('vf_driver'), pf.get('owner'))


def main():
    args = dict(
        pf=dict(type='str', required=True),
        state=dict(type='str', choices=['present'], default='present'),
        numvfs=dict(type='int'),
        driver=dict(type='str'),
        policy=dict(type='bool', default=False),
        keep_assignments=dict(type='bool', default=False),
        mode=dict(type='str', choices=['pause', 'detach'], default='pause'),
    )
    args.update(COMMON_ARGS)
    module = AnsibleModule(argument_spec=args, supports_check_mode=True,
                           mutually_exclusive=[('numvfs', 'policy'), ('driver', 'policy')],
                           required_one_of=[('numvfs', 'policy', 'driver')])
    p = module.params
    client = SvffClient(p['socket'], p['timeout'])
    addr = p['pf']
    try:
        pf = find_pf(client.call('List', {'pf': addr}, what='List of %s' % addr).get('pfs') or [], addr)
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e, pf=addr)
    if pf is None:
        module.fail_json(msg="'%s' is not an SR-IOV PF svffd lists; svff.sriov.svff_info "
                             "lists them" % addr, pf=addr)
    before = describe(pf)
    desired = pf.get('desired') or {}
    result = dict(changed=False, pf=addr, numvfs=pf.get('numvfs'), operation='none')

    if p['policy']:
        owner = pf.get('owner') or ''
        if owner.startswith('policy:'):
            module.exit_json(**result)
        result.update(changed=True, operation='policy')
        if module.check_mode:
            result['diff'] = dict(before=before, after=before.replace(
                'owner: %s' % pf.get('owner'), 'owner: policy:%s' % pf.get('policy')),
                before_header=addr, after_header=addr)
            module.exit_json(**result)
        try:
            r = client.call('Init', {'pf': addr, 'policy': True}, what='Init of %s by its policy' % addr)
        except SVFF_EXCEPTIONS as e:
            fail_from(module, e, pf=addr)
        result['numvfs'] = r.get('numvfs')
        module.exit_json(**result)

    numvfs = p['numvfs'] if p['numvfs'] is not None else pf.get('numvfs')
    driver = p['driver']
    same_driver = driver is None or desired.get('vf_driver') == driver
    if desired and desired.get('numvfs') == numvfs == pf.get('numvfs') and same_driver:
        module.exit_json(**result)

    assigned = assigned_vfs(pf)
    reconf = bool(assigned) and numvfs != pf.get('numvfs')
    result.update(changed=True, operation='reconf' if reconf else 'init', numvfs=numvfs)
    after = "pf: %s\nnumvfs: %s\ndriver: %s\nowner: operator\n" % (
        addr, numvfs, driver or desired.get('vf_driver') or '(svffd\'s vf_driver)')
    # The plan: svffd's dry run, for a reconf and for a plain count change
    # alike (a driver change alone keeps the count and has no plan).
    plan_reply = None
    if numvfs != pf.get('numvfs') or reconf:
        try:
            plan_reply = client.call('Reconf', {'pf': addr, 'numvfs': numvfs, 'mode': p['mode'],
                                                'dry_run': True},
                                     what='the plan (Reconf dry run) of %s to %s VFs' % (addr, numvfs))
        except SVFF_EXCEPTIONS as e:
            fail_from(module, e, pf=addr)
        result['plan'] = plan_reply.get('plan')
        if not plan_reply.get('executable'):
            module.fail_json(msg="svffd cannot carry out %s to %s VFs as planned; the plan says why"
                                 % (addr, numvfs), pf=addr, plan=plan_reply.get('plan'),
                             class_plan=plan_reply.get('class_plan'),
                             diff=dict(prepared=plan_text(plan_reply)))
    # Refused after svffd's own refusals (a count above totalvfs), before
    # anything changes.
    if reconf and not p['keep_assignments']:
        module.fail_json(
            msg="PF %s has %d VF(s) assigned (%s): changing its count from %s to %s is a "
                "reconf; set keep_assignments: true to keep every domain's VF through it"
                % (addr, len(assigned), ', '.join('%s in %s' % (v['address'], v['assigned_to'].get('domain'))
                                                 for v in assigned), pf.get('numvfs'), numvfs),
            pf=addr, plan=result.get('plan'))
    result['diff'] = dict(before=before, after=after, before_header=addr, after_header=addr)
    if plan_reply is not None:
        result['diff']['prepared'] = plan_text(plan_reply)
    if module.check_mode:
        module.exit_json(**result)

    try:
        if reconf:
            r = client.call('Reconf', {'pf': addr, 'numvfs': numvfs, 'mode': p['mode']},
                            what='Reconf of %s to %s VFs' % (addr, numvfs))
            result['assignments'] = r.get('assignments') or []
            result['steps'] = r.get('steps') or []
            result['message'] = r.get('message')
            result['numvfs'] = r.get('numvfs', numvfs)
        else:
            r = client.call('Init', {'pf': addr, 'numvfs': numvfs, 'driver': driver},
                            what='Init of %s to %s VFs' % (addr, numvfs))
            result['numvfs'] = r.get('numvfs', numvfs)
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e, pf=addr)
    module.exit_json(**result)


if __name__ == '__main__':
    main()

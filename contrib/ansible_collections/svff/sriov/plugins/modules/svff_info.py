#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: LGPL-2.1-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: svff_info
short_description: SR-IOV PFs, VFs, assignments, drift and operations from svffd
description:
  - Reads the host's SR-IOV state from svffd over its varlink socket
    (C(io.svff.List) and C(io.svff.Status)), every PF with its VFs, their
    device classes and assignments to libvirt domains, who owns each PF's
    VF count, where the host differs from svffd's store (drift), and the
    operations in progress.
  - Changes nothing; runs the same in check mode.
version_added: "0.1.0"
author: svff
options:
  pf:
    description: Only this PF (its PCI address, C(0000:03:00.0)).
    type: str
  socket:
    description: svffd's varlink socket.
    type: path
    default: /run/svff/svffd.sock
  timeout:
    description: Seconds to wait for each answer of svffd.
    type: float
    default: 300
notes:
  - Reads are open to anyone who can open the socket; no root needed.
seealso:
  - module: svff.sriov.svff_pf
  - module: svff.sriov.svff_assignment
'''

EXAMPLES = r'''
- name: Read svffd's picture of the host
  svff.sriov.svff_info:
  register: svff

- name: Wait until no operation runs and nothing drifted
  svff.sriov.svff_info:
  register: svff
  until: svff.operations | length == 0 and svff.drift | length == 0
  retries: 30
  delay: 2

- name: Every domain's VFs
  ansible.builtin.debug:
    msg: "{{ svff.assignments | groupby('domain') }}"
'''

RETURN = r'''
pfs:
  description: Every SR-IOV PF and its VFs, as io.svff.List returns them (see
    C(varlink info) of svffd's socket for each field).
  returned: always
  type: list
  elements: dict
absent:
  description: PFs svffd has records of that the host does not have.
  returned: always
  type: list
  elements: dict
assignments:
  description: One entry per assigned VF, flattened from I(pfs).
  returned: always
  type: list
  elements: dict
  contains:
    pf: {description: the PF, type: str}
    vf: {description: the VF, type: str}
    index: {description: the VF's index, type: int}
    domain: {description: the domain's name, type: str}
    uuid: {description: the domain's UUID, type: str}
    state: {description: attached, held or detaching, type: str}
    guest_address: {description: the guest PCI address, type: str}
    live: {description: whether the running domain holds it, type: bool}
    config: {description: whether the persistent definition holds it, type: bool}
owners:
  description: Each PF's VF count, owner, matching policy and VF limits (io.svff.Status).
  returned: always
  type: list
  elements: dict
drift:
  description: Where the host differs from svffd's store; each with kind,
    device, message and next_step.
  returned: always
  type: list
  elements: dict
operations:
  description: Operations in progress (op, pf, phase, done, total).
  returned: always
  type: list
  elements: dict
status:
  description: The whole io.svff.Status reply (version, store generation, libvirt, ...).
  returned: always
  type: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.svff.sriov.plugins.module_utils.svff import (
    COMMON_ARGS, SVFF_EXCEPTIONS, SvffClient, fail_from)


def flatten(pfs):
    out = []
    for p in pfs:
        for v in p.get('vfs') or []:
            a = v.get('assigned_to')
            if not a:
                continue
            out.append(dict(pf=p['address'], vf=v['address'], index=v.get('index'),
                            domain=a.get('domain'), uuid=a.get('uuid'), state=a.get('state'),
                            guest_address=a.get('guest_address'), live=a.get('live'),
                            config=a.get('config'), pause_mode=a.get('pause_mode'),
                            intent=a.get('intent')))
    return out


def main():
    args = dict(pf=dict(type='str'))
    args.update(COMMON_ARGS)
    module = AnsibleModule(argument_spec=args, supports_check_mode=True)
    client = SvffClient(module.params['socket'], module.params['timeout'])
    try:
        listed = client.call('List', {'pf': module.params['pf']}, what='List')
        status = client.call('Status', what='Status')
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e)
    pfs = listed.get('pfs') or []
    module.exit_json(changed=False, pfs=pfs, absent=listed.get('absent') or [],
                     assignments=flatten(pfs), owners=status.get('owners') or [],
                     drift=status.get('drift') or [], operations=status.get('operations') or [],
                     status=status)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: LGPL-2.1-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: svff_assignment
short_description: A VF's assignment to a libvirt domain, through svffd
description:
  - Attaches a VF, or any free VF of a PF's pool, to a libvirt domain
    (svffd's C(Attach)), with its device-class settings; detaches it
    (C(Detach)); pauses and unpauses it (C(Pause), C(Unpause)).
  - Idempotent. A VF already in the state asked for, in that domain,
    reports C(changed=false) and nothing is sent that changes the host.
  - Check mode changes nothing; with C(--diff) it shows the assignment
    before and after and the call svffd would be given.
version_added: "0.1.0"
author: svff
options:
  domain:
    description: The libvirt domain, by name or UUID. Required but for
      I(state=detached) with I(vf).
    type: str
  vf:
    description: The VF's PCI address. One of I(vf) and I(pf).
    type: str
  pf:
    description: A PF whose pool svffd picks a free VF from (attach), or
      whose VF in I(domain) is meant (the other states).
    type: str
  state:
    description:
      - C(attached) attaches (or unpauses a held assignment);
        C(held) pauses (natively where the domain's QEMU offers it,
        else detach with the guest address reserved); C(detached)
        detaches.
      - C(paused) is the old spelling of C(held), taken for a release.
    type: str
    choices: [attached, held, paused, detached]
    default: attached
  live:
    description: Attach to the running domain; svffd's default (live if it
      runs) when not given.
    type: bool
  config:
    description: Attach to the persistent definition; svffd's default (if
      it is persistent) when not given.
    type: bool
  guest_address:
    description: The guest PCI address to attach at.
    type: str
  settings:
    description:
      - "The device-class settings of the assignment, as svff.conf spells
        them (snake_case), e.g. C({namespace: 2}) for an NVMe VF or
        C({mac: 52:54:00:12:34:56, vlan: 100}) for a NIC VF. svffd
        provisions them before the domain gets the VF."
    type: dict
  mac:
    description: A NIC VF's MAC address (added to I(settings)).
    type: str
  vlan:
    description: A NIC VF's VLAN (added to I(settings)).
    type: int
  namespace:
    description: An NVMe VF's namespace ID (added to I(settings)).
    type: int
  socket:
    description: svffd's varlink socket.
    type: path
    default: /run/svff/svffd.sock
  timeout:
    description: Seconds to wait for svffd's answer; when it passes the task
      fails naming the operation svffd still runs.
    type: float
    default: 300
notes:
  - Changes need root or svffd's admin group (C(become=true)).
seealso:
  - module: svff.sriov.svff_info
  - module: svff.sriov.svff_pf
'''

EXAMPLES = r'''
- name: A VF of the NVMe PF's pool for db1, with namespace 2
  svff.sriov.svff_assignment:
    pf: "0000:04:00.0"
    domain: db1
    namespace: 2

- name: A given VF, held (paused; the domain keeps its address)
  svff.sriov.svff_assignment:
    vf: "0000:04:00.2"
    domain: db1
    state: held

- name: Taken off its domain
  svff.sriov.svff_assignment:
    vf: "0000:04:00.2"
    state: detached
'''

RETURN = r'''
vf:
  description: The VF (the one svffd picked for I(pf)).
  returned: when a VF is concerned
  type: str
assignment:
  description: The VF's assignment after the task (domain, uuid,
    guest_address, alias, live, config, state, pause_mode, class).
  returned: when the VF is assigned after the task
  type: dict
mode:
  description: How a pause or unpause was done (native or detach).
  returned: after a pause or unpause
  type: str
'''

import json

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.svff.sriov.plugins.module_utils.svff import (
    COMMON_ARGS, SVFF_EXCEPTIONS, SvffClient, domain_matches, fail_from, find_pf)


def find_vf(pfs, address):
    for p in pfs:
        for v in p.get('vfs') or []:
            if v.get('address') == address:
                return p, v
    return None, None


def text(vf, a):
    if not a:
        return "vf: %s\nassigned_to: none\n" % (vf or '(none)')
    return "vf: %s\ndomain: %s\nuuid: %s\nstate: %s\nguest_address: %s\n" % (
        vf, a.get('domain'), a.get('uuid'), a.get('state'), a.get('guest_address'))


def held(a):
    # An svffd before the rename says "paused".
    return a.get('state') in ('held', 'paused')


def main():
    args = dict(
        domain=dict(type='str'),
        vf=dict(type='str'),
        pf=dict(type='str'),
        state=dict(type='str', choices=['attached', 'held', 'paused', 'detached'], default='attached'),
        live=dict(type='bool'),
        config=dict(type='bool'),
        guest_address=dict(type='str'),
        settings=dict(type='dict'),
        mac=dict(type='str'),
        vlan=dict(type='int'),
        namespace=dict(type='int'),
    )
    args.update(COMMON_ARGS)
    module = AnsibleModule(argument_spec=args, supports_check_mode=True,
                           required_one_of=[('vf', 'pf')], mutually_exclusive=[('vf', 'pf')])
    p = module.params
    state, domain = p['state'], p['domain']
    if state == 'paused':
        state = 'held'
    if domain is None and not (state == 'detached' and p['vf']):
        module.fail_json(msg="domain is required but for state: detached of a given vf")
    settings = dict(p['settings'] or {})
    for k in ('mac', 'vlan', 'namespace'):
        if p[k] is not None:
            settings[k] = p[k]

    client = SvffClient(p['socket'], p['timeout'])
    try:
        pfs = client.call('List', {'pf': p['pf']}, what='List').get('pfs') or []
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e)

    # The VF meant and its assignment now.
    if p['vf']:
        _pf, vf = find_vf(pfs, p['vf'])
        if vf is None:
            module.fail_json(msg="'%s' is not a VF svffd lists; svff.sriov.svff_info lists them" % p['vf'],
                             vf=p['vf'])
    else:
        pf = find_pf(pfs, p['pf'])
        if pf is None:
            module.fail_json(msg="'%s' is not an SR-IOV PF svffd lists; svff.sriov.svff_info "
                                 "lists them" % p['pf'], pf=p['pf'])
        mine = [v for v in pf.get('vfs') or []
                if v.get('assigned_to') and domain_matches(v['assigned_to'], domain)]
        vf = mine[0] if mine else None
    a = vf.get('assigned_to') if vf else None
    vfaddr = vf['address'] if vf else None
    result = dict(changed=False, vf=vfaddr, assignment=a)

    call = None
    if state == 'attached':
        if a and domain_matches(a, domain) and a.get('state') == 'attached':
            module.exit_json(**result)
        if a and domain_matches(a, domain) and held(a):
            call = ('Unpause', {'vf': vfaddr})
        else:
            # Assigned elsewhere: svffd refuses it with its own message.
            call = ('Attach', {'vf': p['vf'], 'pf': None if p['vf'] else p['pf'], 'domain': domain,
                               'live': p['live'], 'config': p['config'],
                               'guest_address': p['guest_address'],
                               'class': settings or None})
    elif state == 'held':
        if a and domain_matches(a, domain) and held(a):
            module.exit_json(**result)
        if vfaddr is None:
            module.fail_json(msg="no VF of PF %s is assigned to '%s': attach one before pausing it"
                                 % (p['pf'], domain))
        call = ('Pause', {'vf': vfaddr})
    else:
        if not a:
            module.exit_json(**result)
        if domain is not None and not domain_matches(a, domain):
            module.fail_json(msg="VF %s is assigned to '%s', not to '%s': nothing detached"
                                 % (vfaddr, a.get('domain'), domain), vf=vfaddr, assignment=a)
        call = ('Detach', {'vf': vfaddr})

    method, params = call
    shown = dict((k, v) for k, v in params.items() if v is not None)
    result['changed'] = True
    result['diff'] = dict(before=text(vfaddr, a), before_header=vfaddr or p['pf'],
                          prepared="io.svff.%s %s\n" % (method, json.dumps(shown, sort_keys=True)))
    if module.check_mode:
        new = {'Attach': 'attached', 'Unpause': 'attached', 'Pause': 'held'}.get(method)
        result['diff']['after'] = text(vfaddr, dict(a or {}, domain=domain, state=new) if new else None)
        result['diff']['after_header'] = vfaddr or p['pf']
        module.exit_json(**result)
    what = '%s of %s%s' % (method, vfaddr or 'a VF of %s' % p['pf'],
                           ' to %s' % domain if method == 'Attach' else '')
    try:
        r = client.call(method, params, what=what)
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e, vf=vfaddr)
    vfaddr = r.get('vf', vfaddr)
    result['vf'] = vfaddr
    result['assignment'] = r.get('assignment')
    if r.get('mode'):
        result['mode'] = r['mode']
    result['diff']['after'] = text(vfaddr, r.get('assignment'))
    result['diff']['after_header'] = vfaddr
    module.exit_json(**result)


if __name__ == '__main__':
    main()

#!/usr/bin/python
# -*- coding: utf-8 -*-
# SPDX-License-Identifier: LGPL-2.1-or-later

from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r'''
---
module: svff_reprogram
short_description: Flash an image to an FPGA PF through svffd, every domain keeping its VF
description:
  - Runs svffd's C(Reprogram) - every assigned VF is paused (or detached),
    the VFs removed, the PF taken off the bus and flashed by svff.conf's
    C(flash_hook), the bus rescanned, the PF's identity checked against its
    policy's C(reprogram_ids), then the VFs made again and every assignment
    put back at its guest address.
  - Idempotent - when svffd's records say it last flashed this very
    file to the PF, unchanged since (same inode, size and times), the task
    reports C(changed=false) and flashes nothing. I(force_flash=true)
    flashes all the same.
  - Check mode runs svffd's dry run (C(Reprogram) with C(dry_run)), which
    checks the image and the hook before anything is touched; with
    C(--diff) the plan is printed. Nothing is changed.
  - A PF left "reprogram interrupted" (a failed hook, a PF that came back
    as an identity its policy does not allow) fails the task with svffd's
    message; run the task again to flash again.
version_added: "0.1.0"
author: svff
options:
  pf:
    description: The PF's PCI address (C(0000:3b:00.0)).
    type: str
    required: true
  image:
    description:
      - The image, an absolute path to a regular file under svff.conf's
        C(flash_image_dir) on the host, owned by root and writable by no
        one else. svffd checks it before anything is touched.
    type: path
    required: true
  numvfs:
    description: The VF count after the flash (default - the count the PF
      has). A count that would drop an assigned VF is refused unless
      I(release_dropped=true).
    type: int
  mode:
    description: How assigned VFs are taken off their domains.
    type: str
    choices: [pause, detach]
    default: pause
  release_dropped:
    description: Release the assignments of VFs the new count drops
      (svffd's C(force)); without it such a flash is refused before
      anything is touched.
    type: bool
    default: false
  force_flash:
    description: Flash even when svffd's records say the PF holds this
      image unchanged.
    type: bool
    default: false
  socket:
    description: svffd's varlink socket.
    type: path
    default: /run/svff/svffd.sock
  timeout:
    description:
      - Seconds to wait for each answer of svffd. When it passes, the task
        fails naming the operation svffd still runs; svffd carries it on.
    type: float
    default: 900
notes:
  - Needs root or svffd's admin group (C(become=true)), check mode included.
  - A flash can take minutes; I(timeout) must cover svff.conf's
    C(flash_timeout_sec) and the reconf around it.
seealso:
  - module: svff.sriov.svff_pf
  - module: svff.sriov.svff_info
'''

EXAMPLES = r'''
- name: The new shell, every domain keeping its VF
  svff.sriov.svff_reprogram:
    pf: "0000:3b:00.0"
    image: /var/lib/svff/images/shell-2.1.bit
  become: true

- name: Plan it only
  svff.sriov.svff_reprogram:
    pf: "0000:3b:00.0"
    image: /var/lib/svff/images/shell-2.1.bit
  check_mode: true
  diff: true
'''

RETURN = r'''
pf:
  description: The PF.
  returned: always
  type: str
image:
  description: The image asked for.
  returned: always
  type: str
numvfs:
  description: Its VF count after the task (in check mode, the count asked for).
  returned: always
  type: int
plan:
  description: svffd's plan (C(Reprogram) dry run).
  returned: when a flash was planned
  type: dict
ids:
  description: The vendor:device ids the PF may come back as.
  returned: when a flash was planned
  type: list
  elements: str
assignments:
  description: What the reprogram did to each assignment (outcome, has_vf).
  returned: after a flash
  type: list
  elements: dict
'''

from ansible.module_utils.basic import AnsibleModule
from ansible_collections.svff.sriov.plugins.module_utils.svff import (
    COMMON_ARGS, SVFF_EXCEPTIONS, SvffClient, fail_from, find_pf, plan_text)


def main():
    args = dict(
        pf=dict(type='str', required=True),
        image=dict(type='path', required=True),
        numvfs=dict(type='int'),
        mode=dict(type='str', choices=['pause', 'detach'], default='pause'),
        release_dropped=dict(type='bool', default=False),
        force_flash=dict(type='bool', default=False),
    )
    args.update(COMMON_ARGS)
    args['timeout'] = dict(type='float', default=900.0)
    module = AnsibleModule(argument_spec=args, supports_check_mode=True)
    p = module.params
    client = SvffClient(p['socket'], p['timeout'])
    addr, image = p['pf'], p['image']
    try:
        pf = find_pf(client.call('List', {'pf': addr}, what='List of %s' % addr).get('pfs') or [], addr)
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e, pf=addr)
    if pf is None:
        module.fail_json(msg="'%s' is not an SR-IOV PF svffd lists; svff.sriov.svff_info "
                             "lists them" % addr, pf=addr)
    numvfs = p['numvfs'] if p['numvfs'] is not None else pf.get('numvfs')
    result = dict(changed=False, pf=addr, image=image, numvfs=pf.get('numvfs'))
    held = pf.get('image') or {}
    if (not p['force_flash'] and held.get('path') == image and held.get('unchanged')
            and numvfs == pf.get('numvfs')):
        module.exit_json(**result)

    params = {'pf': addr, 'image': image, 'numvfs': numvfs, 'mode': p['mode']}
    if p['release_dropped']:
        params['force'] = True
    try:
        plan = client.call('Reprogram', dict(params, dry_run=True),
                           what='the plan (Reprogram dry run) of %s with %s' % (addr, image))
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e, pf=addr, image=image)
    result.update(changed=True, numvfs=numvfs, plan=plan.get('plan'), ids=plan.get('ids') or [])
    before = "pf: %s\nimage: %s\nnumvfs: %s\n" % (
        addr, ('%s%s' % (held['path'], '' if held.get('unchanged') else ' (changed since)'))
        if held.get('path') else '(none recorded)', pf.get('numvfs'))
    after = "pf: %s\nimage: %s\nnumvfs: %s\n" % (addr, image, numvfs)
    result['diff'] = dict(before=before, after=after, before_header=addr, after_header=addr,
                          prepared=plan_text(plan))
    if not plan.get('executable'):
        module.fail_json(msg="svffd cannot flash %s to %s as planned; the plan says why" % (image, addr),
                         pf=addr, image=image, plan=plan.get('plan'), class_plan=plan.get('class_plan'),
                         diff=result['diff'])
    if module.check_mode:
        module.exit_json(**result)

    try:
        r = client.call('Reprogram', params, what='Reprogram of %s with %s' % (addr, image))
    except SVFF_EXCEPTIONS as e:
        fail_from(module, e, pf=addr, image=image)
    result.update(numvfs=r.get('numvfs', numvfs), message=r.get('message'),
                  assignments=r.get('assignments') or [], steps=r.get('steps') or [])
    module.exit_json(**result)


if __name__ == '__main__':
    main()

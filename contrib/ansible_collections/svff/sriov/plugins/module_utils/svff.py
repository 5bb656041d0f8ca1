# -*- coding: utf-8 -*-
# SPDX-License-Identifier: LGPL-2.1-or-later
"""A small varlink client for svffd, shared by the svff.sriov modules.

svffd speaks varlink over a unix socket: one JSON object per message,
each terminated by a NUL byte. A call is {"method", "parameters"}; the
reply is {"parameters"} or {"error", "parameters"}. svffd's errors carry
their own message, which the modules hand to fail_json as it is.

Every reply is checked against the interface description svffd serves
(org.varlink.service.GetInterfaceDescription): the method must be one
it declares, and an error one it declares, or the module fails saying
so rather than guess what an unknown answer means.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

import json
import re
import socket
import time

DEFAULT_SOCKET = '/run/svff/svffd.sock'
INTERFACE = 'io.svff'
SERVICE = 'org.varlink.service'

# Options every module takes.
COMMON_ARGS = dict(
    socket=dict(type='path', default=DEFAULT_SOCKET),
    timeout=dict(type='float', default=300.0),
)


class SvffError(Exception):
    """svffd answered with a varlink error. message is svffd's own."""

    def __init__(self, method, name, parameters):
        self.method = method
        self.name = name
        self.parameters = parameters or {}
        msg = self.parameters.get('message')
        if not msg:
            msg = _describe_bare_error(method, name, self.parameters)
        self.message = msg
        Exception.__init__(self, msg)


class SvffTimeout(Exception):
    def __init__(self, message):
        self.message = message
        Exception.__init__(self, message)


class SvffUnreachable(Exception):
    def __init__(self, message):
        self.message = message
        Exception.__init__(self, message)


def _describe_bare_error(method, name, parameters):
    # The org.varlink.service errors carry no message of their own.
    short = method.rsplit('.', 1)[-1]
    if name == SERVICE + '.InvalidParameter':
        return "svffd refused %s: parameter '%s' is missing, of the wrong type or out of range" % (
            short, parameters.get('parameter', '?'))
    if name == SERVICE + '.PermissionDenied':
        return ("svffd refused %s: permission denied; run the task as root "
                "or as a member of svffd's admin group (become: true)" % short)
    if name == SERVICE + '.MethodNotFound':
        return "svffd does not know the method '%s'; is svffd older than this collection?" % method
    return "svffd answered %s with %s %s" % (short, name, json.dumps(parameters, sort_keys=True))


def _declared(description, kind):
    return set(re.findall(r'^%s\s+(\w+)' % kind, description, re.M))


class SvffClient:
    """One connection per call, as svffctl does: a call that times out
    leaves nothing half-read behind for the next one."""

    def __init__(self, path=DEFAULT_SOCKET, timeout=300.0):
        self.path = path
        self.timeout = timeout
        self._methods = None
        self._errors = None

    def _exchange(self, method, parameters, timeout, more=False):
        msg = {'method': method, 'parameters': parameters or {}}
        if more:
            msg['more'] = True
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.settimeout(timeout)
            try:
                s.connect(self.path)
            except (OSError, socket.error) as e:
                raise SvffUnreachable("cannot connect to svffd at '%s': %s; is svffd running "
                                      "(systemctl status svffd.socket)?" % (self.path, e.strerror or e))
            s.sendall(json.dumps(msg).encode('utf-8') + b'\0')
            buf = b''
            deadline = time.monotonic() + timeout
            while True:
                while b'\0' not in buf:
                    left = deadline - time.monotonic()
                    if left <= 0:
                        raise socket.timeout()
                    s.settimeout(left)
                    chunk = s.recv(65536)
                    if not chunk:
                        raise SvffUnreachable("svffd at '%s' hung up before it answered %s"
                                              % (self.path, method))
                    buf += chunk
                raw, buf = buf.split(b'\0', 1)
                reply = json.loads(raw.decode('utf-8'))
                if reply.get('error'):
                    return reply
                if more and reply.get('continues'):
                    continue
                return reply
        finally:
            s.close()

    def _load_interface(self):
        if self._methods is not None:
            return
        methods, errors = set(), set()
        for iface in (INTERFACE, SERVICE):
            try:
                reply = self._exchange(SERVICE + '.GetInterfaceDescription', {'interface': iface},
                                       min(self.timeout, 30.0))
            except socket.timeout:
                raise SvffTimeout("svffd at '%s' did not describe its interface within %g s"
                                  % (self.path, min(self.timeout, 30.0)))
            except ValueError:
                raise SvffUnreachable("svffd's description of %s is not a JSON object" % iface)
            except (OSError, socket.error) as e:
                raise SvffUnreachable("the connection to svffd at '%s' broke: %s"
                                      % (self.path, e.strerror or e))
            if reply.get('error'):
                raise SvffUnreachable("svffd at '%s' does not serve the interface %s (%s)"
                                      % (self.path, iface, reply['error']))
            text = reply.get('parameters', {}).get('description', '')
            methods |= {iface + '.' + m for m in _declared(text, 'method')}
            errors |= {iface + '.' + e for e in _declared(text, 'error')}
        self._methods, self._errors = methods, errors

    def call(self, method, parameters=None, timeout=None, what=None, more=False):
        """Calls io.svff.<method>; returns the final reply's parameters.
        Raises SvffError with svffd's message, SvffTimeout naming the
        operation svffd still runs, or SvffUnreachable."""
        full = INTERFACE + '.' + method
        timeout = self.timeout if timeout is None else timeout
        self._load_interface()
        if full not in self._methods:
            raise SvffUnreachable("svffd at '%s' does not declare the method %s; it is older "
                                  "than this collection" % (self.path, full))
        params = dict((k, v) for k, v in (parameters or {}).items() if v is not None)
        try:
            reply = self._exchange(full, params, timeout, more=more)
        except socket.timeout:
            raise SvffTimeout(self._timeout_message(full, what or method, timeout))
        except ValueError:
            raise SvffUnreachable("svffd's reply to %s is not a JSON object" % full)
        except (OSError, socket.error) as e:
            raise SvffUnreachable("the connection to svffd at '%s' broke during %s: %s"
                                  % (self.path, full, e.strerror or e))
        err = reply.get('error')
        if err:
            if err not in self._errors:
                raise SvffUnreachable("svffd answered %s with the error %s, which its interface "
                                      "does not declare" % (full, err))
            raise SvffError(full, err, reply.get('parameters'))
        out = reply.get('parameters')
        if not isinstance(out, dict):
            raise SvffUnreachable("svffd's reply to %s has no parameters object" % full)
        return out

    def _timeout_message(self, method, what, timeout):
        # What svffd runs now, from Status, which answers from its last
        # picture of the host; it too gets a short deadline.
        try:
            st = self._exchange(INTERFACE + '.Status', {}, 2.0).get('parameters') or {}
            ops = st.get('operations') or []
            if ops:
                running = '; svffd is still running: ' + ', '.join(
                    "%s on %s (phase %s, %d/%d)" % (o.get('op'), o.get('pf'), o.get('phase'),
                                                     o.get('done', 0), o.get('total', 0))
                    for o in ops)
            else:
                running = '; svffd reports no operation in progress now'
        except (socket.timeout, OSError, ValueError):
            running = " (svffd's Status did not answer within 2 s either)"
        return ("%s: no answer from svffd within %g s (timeout); the operation goes on in "
                "svffd%s. Wait for it with svff.sriov.svff_info (operations empty) before "
                "running this task again." % (what, timeout, running))


def find_pf(pfs, address):
    for p in pfs:
        if p.get('address') == address:
            return p
    return None


def assigned_vfs(pf):
    return [v for v in pf.get('vfs') or [] if v.get('assigned_to')]


def domain_matches(assignment, domain):
    return domain in (assignment.get('domain'), assignment.get('uuid'))


def plan_text(reply):
    """The plan of a Reconf dry run, as lines for --diff."""
    plan = reply.get('plan') or {}
    lines = []
    lines.append("PF %s: %s -> %s VFs on %s, assigned VFs taken off by %s%s" % (
        plan.get('pf', reply.get('pf')), plan.get('from'), plan.get('to'), plan.get('driver'),
        plan.get('mode'), ', force' if plan.get('force') else ''))
    lines.append("executable: %s" % ('yes' if reply.get('executable') else 'no'))
    if reply.get('image'):
        lines.append("image %s, flashed off the bus; the PF may come back as %s" % (
            reply['image'], ', '.join(reply.get('ids') or []) or 'what it was'))
    for a in plan.get('assignments') or []:
        how = {'survives': 'keeps its VF', 'released': 'loses its VF (released)',
               'refused': 'would lose its VF (refused)',
               'blocked': 'blocked (VF still detaching)'}.get(a.get('fate'), a.get('fate'))
        lines.append("domain %s (%s) %s: VF %s (index %s), %s%s%s" % (
            a.get('domain'), a.get('uuid'), how, a.get('vf'), a.get('index'), a.get('state'),
            ', guest address %s' % a['guest_address'] if a.get('guest_address') else '',
            ', alias %s' % a['alias'] if a.get('alias') else ''))
    for i, s in enumerate(plan.get('steps') or [], 1):
        detail = []
        for k in ('vf', 'domain', 'numvfs', 'driver', 'guest_address', 'alias'):
            if s.get(k) is not None:
                detail.append('%s %s' % (k, s[k]))
        what = s.get('action') if s.get('action') == s.get('phase') else '%s %s' % (s.get('phase'), s.get('action'))
        lines.append("step %d: %s%s" % (i, what, (' (' + ', '.join(detail) + ')') if detail else ''))
    cp = reply.get('class_plan')
    if cp:
        if cp.get('refused'):
            lines.append("class %s refuses: %s" % (cp.get('class'), cp['refused']))
        for s in cp.get('steps') or []:
            lines.append("class %s step: %s %s%s" % (
                cp.get('class'), 'PF' if s.get('vf') is None else 'VF %s' % s['vf'],
                s.get('action'), (': ' + s['detail']) if s.get('detail') else ''))
    return '\n'.join(lines) + '\n'


def fail_from(module, e, **kwargs):
    """fail_json with svffd's own message: no Python exception text."""
    if isinstance(e, SvffError):
        module.fail_json(msg=e.message, svff_error=e.name, svff_parameters=e.parameters, **kwargs)
    module.fail_json(msg=e.message, **kwargs)


SVFF_EXCEPTIONS = (SvffError, SvffTimeout, SvffUnreachable)

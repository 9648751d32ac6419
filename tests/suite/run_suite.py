#!/usr/bin/env python3
"""Runs the kernel corpus (tests/suite/cases.py) through the dvm command on one backend.

usage: run_suite.py --dvm PATH [--backend B] [--mode forward|grad|errors|big|all] [--filter S]
                    [--dvm-flag=FLAG ...] [--batch] [--refs DIR]
--dvm-flag adds FLAG to every launch (`--dvm-flag=--cpu-lanes`: the CPU's lane interpreters).
--batch runs the commands through `dvm batch` (one process per worker thread, the device
opened once in each: tests/suite/dvmbatch.py) instead of one dvm process per command; every
check is the same, and the batch processes must end cleanly (status as their commands').
--refs DIR keeps the grad references (finite differences, computed in Python) in DIR for the
next run of the same corpus (dvmtest.RefCache): ctest's grad runs share one folder.
Exit 0 when every selected check passed, 1 on any failure, 77 when the backend is not
available on this machine (ctest counts that as skipped, never as passed)."""
import argparse
import concurrent.futures
import os
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402
from dvmtest import Arr, Case, Runner, check_forward, check_grad  # noqa: E402
import cases  # noqa: E402


def backend_available(r):
    c = Case('probe', 'kernel k(y: f32[n]):\n    for i in range(n):\n        y[i] = 1.0\n', 'k',
             {'y': Arr('f4', (2,), [0.0, 0.0])}, lambda d: None)
    rc, msg, _ = r.launch(c, 'run', c.make_inputs())
    return rc, msg.strip()


def unavailable(msg):
    """True when a failed probe says the backend cannot be opened on this machine (not
    compiled in, no driver, no device), as opposed to a backend that opens and then fails."""
    return re.search(r"backend '\w+' (device \d+:|is not compiled)", msg) is not None or \
        msg.startswith('api_runner: context:')


def error_checks(r):
    """Runtime failures: exit 1, a message naming the place, and no output file written."""
    checks = [
        ('oob_read', 'kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i + 1]\n',
         {'x': Arr('f4', (4,), [1, 2, 3, 4]), 'y': Arr('f4', (4,), [0] * 4)},
         ['3:16', "'x'", '4', 'out of bounds'], []),
        ('oob_write_2d', 'kernel k(y: f32[n, m]):\n    for i in range(n):\n        y[i, m] = 1.0\n',
         {'y': Arr('f4', (2, 3), [0] * 6)}, ['3:9', "'y'", 'axis 1', 'out of bounds'], []),
        ('oob_read_2d_offset', 'kernel k(u: f32[n, m], v: f32[n, m]):\n    for i, j in ndrange(n, m):\n'
         '        v[i, j] = u[i, j + 1]\n',  # one LD2O: the index j + 1 is checked as the sum
         {'u': Arr('f4', (2, 3), [0] * 6), 'v': Arr('f4', (2, 3), [0] * 6)},
         ['3:', "'u'", 'axis 1', 'index 3', 'out of bounds'], []),
        # the last lane's element past the end, with every lane's first in bounds (the GPU
        # lanes' row path: 256 iterations, a warp's lanes end at the array's end)
        ('oob_read_row_end', 'kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i + 1]\n',
         {'x': Arr('f4', (256,), [0] * 256), 'y': Arr('f4', (256,), [0] * 256)},
         ['3:', "'x'", 'index 256', 'out of bounds'], []),
        ('oob_read_2d_row_end', 'kernel k(u: f32[n, m], v: f32[n, m]):\n    for i, j in ndrange(n, m):\n'
         '        v[i, j] = u[i, j + 1]\n',
         {'u': Arr('f4', (2, 256), [0] * 512), 'v': Arr('f4', (2, 256), [0] * 512)},
         ['3:', "'u'", 'axis 1', 'index 256', 'out of bounds'], []),
        ('assert_fail', 'kernel k(x: f32[n]):\n    for i in range(n):\n        assert x[i] < 2.5, "x too big"\n',
         {'x': Arr('f4', (4,), [1, 2, 3, 4])}, ['3:', 'x too big'], []),
        ('div_zero', 'kernel k(a: i32[n], y: i32[n]):\n    for i in range(n):\n        y[i] = 10 // a[i]\n',
         {'a': Arr('i4', (3,), [1, 0, 2]), 'y': Arr('i4', (3,), [0] * 3)}, ['3:', 'division by zero'], []),
        # serial code on uniforms alone runs on the host before a launch (vm/launch.c); one that
        # fails there is left to the backend, which reports it as before
        ('serial_div_zero', 'kernel k(x: f32[n], y: f32[m]):\n    q = n // (m - 3)\n    for i in range(q):\n'
         '        x[i] = 1.0\n',
         {'x': Arr('f4', (4,), [0] * 4), 'y': Arr('f4', (3,), [0] * 3)}, ['2:', 'division by zero'], []),
        ('serial_assert', 'kernel k(x: f32[n]):\n    assert n < 3, "n too big"\n    for i in range(n):\n'
         '        x[i] = 1.0\n',
         {'x': Arr('f4', (4,), [0] * 4)}, ['2:', 'n too big'], []),
        # a vec3 array is f32 of shape (n, 3): a wrong trailing axis names the parameter and
        # the shape it needs; an out-of-bounds vector read names the array like any other
        ('vec3_trailing_axis', 'kernel k(x: vec3[n]):\n    for i in range(n):\n        x[i] = x[i] * 2.0\n',
         {'x': Arr('f4', (4, 4), [0] * 16)}, ["'x'", 'axis 1 must have extent 3', 'f32[n, 3]', '(4, 4)'], []),
        ('vec3_rank', 'kernel k(x: vec3[n]):\n    for i in range(n):\n        x[i] = x[i] * 2.0\n',
         {'x': Arr('f4', (4,), [0] * 4)}, ["'x'", 'rank 2', 'f32[n, 3]'], []),
        ('vec3_oob', 'kernel k(x: vec3[n], y: vec3[n]):\n    for i in range(n):\n        y[i] = x[i + 1]\n',
         {'x': Arr('f4', (3, 3), [0] * 9), 'y': Arr('f4', (3, 3), [0] * 9)}, ['3:', "'x'", 'index 3', 'out of bounds'], []),
        ('adstack_overflow',
         'kernel k(x: f32[n], s: i32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n'
         '        for _ in range(s[i]):\n            v = v * v\n        y[i] = v\n',
         {'x': Arr('f4', (3,), [0.5, 0.6, 0.7]), 's': Arr('i4', (3,), [2, 9, 3]), 'y': Arr('f4', (3,), [0] * 3)},
         ['adstack overflow', "'v'", 'ad-stack-size'], ['--ad-stack-size', '2']),
    ]
    fails = []
    for name, src, d, want, extra_args in checks:
        mode = 'grad' if name == 'adstack_overflow' else 'run'
        c = Case(name, src, 'k', d, lambda _: None)
        with tempfile.TemporaryDirectory(prefix='dvmt_err_') as work:  # removed with what it holds
            src_path = os.path.join(work, 'k.dvk')
            with open(src_path, 'w') as f:
                f.write(src)
            args = [mode, src_path, 'k']
            for n, v in d.items():
                p = os.path.join(work, n + '.npy')
                npyio.write(p, v.dtype, v.shape, v.data)
                args.append(f'{n}={p}')
            out = os.path.join(work, 'out')
            rc, so, se = r.call(args + ['--out', out, '--backend', r.backend] + extra_args, work)
            msg = se + so
            if rc != 1:
                fails.append(f'{name}: exit {rc}, expected 1: {msg.strip()}')
            elif not all(w in msg for w in want):
                fails.append(f'{name}: message {msg.strip()!r} lacks one of {want}')
            elif os.path.isdir(out) and os.listdir(out):
                fails.append(f'{name}: a failed launch wrote {os.listdir(out)}')
        del c
    return fails


def capacity_checks(r):
    """The smallest forced capacity that works is exactly what the sizer computes."""
    src = ('kernel k(x: f32[n], s: i32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n'
           '        for _ in range(s[i]):\n            v = sin(v) * 1.1\n        y[i] = v\n')
    steps = [3, 11, 7, 0, 5]
    d = {'x': Arr('f4', (5,), [0.1, 0.2, 0.3, 0.4, 0.5]), 's': Arr('i4', (5,), steps),
         'y': Arr('f4', (5,), [0.0] * 5)}
    c = Case('cap', src, 'k', d, lambda _: None)
    if r.launch(c, 'grad', c.make_inputs())[0] != 0:
        return ['capacity: grad with computed sizes failed']
    lo, hi = 1, 64  # find the smallest capacity that succeeds
    if run_forced(r, c, hi) != 0:
        return ['capacity: grad with --ad-stack-size 64 failed']
    while lo < hi:
        mid = (lo + hi) // 2
        if run_forced(r, c, mid) == 0:
            hi = mid
        else:
            lo = mid + 1
    fails = []
    if lo != max(steps):
        fails.append(f'capacity: smallest working --ad-stack-size is {lo}, expected max(steps) = {max(steps)}')
    if run_forced(r, c, lo - 1) != 1:
        fails.append('capacity: one short of the need did not fail with exit 1')
    return fails


def run_forced(r, c, n):
    with tempfile.TemporaryDirectory(prefix='dvmt_cap_') as work:
        src_path = os.path.join(work, 'k.dvk')
        with open(src_path, 'w') as f:
            f.write(c.src)
        args = ['grad', src_path, c.kernel]
        for name, v in c.make_inputs().items():
            p = os.path.join(work, name + '.npy')
            npyio.write(p, v.dtype, v.shape, v.data)
            args.append(f'{name}={p}')
        return r.call(args + ['--backend', r.backend, '--ad-stack-size', str(n)], work)[0]


def big_check(r):
    """A max-over-range over more than 2^24 elements goes through the max-reducer: one element
    near the end needs 37 pushes; a wrong reduction overflows (exit 1) or misses it."""
    with tempfile.TemporaryDirectory(prefix='dvmt_big_') as work:  # 580 MB of inputs and outputs
        return big_check_in(r, work)


def big_check_in(r, work):
    n = (1 << 24) + 5
    src = ('kernel k(x: f32[n], s: i32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n'
           '        for _ in range(s[i]):\n            v = v * 0.5 + v * v * 0.01\n        y[i] = v\n')
    with open(os.path.join(work, 'k.dvk'), 'w') as f:
        f.write(src)
    steps = bytearray((1).to_bytes(4, 'little') * n)
    steps[4 * (n - 2):4 * (n - 1)] = (37).to_bytes(4, 'little')
    import struct
    def raw(path, descr, body):
        header = "{'descr': '%s', 'fortran_order': False, 'shape': (%d,), }" % (descr, n)
        header += ' ' * (64 - (10 + len(header) + 1) % 64) + '\n'
        with open(path, 'wb') as f:
            f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode())
            f.write(body)
    raw(os.path.join(work, 's.npy'), '<i4', bytes(steps))
    raw(os.path.join(work, 'x.npy'), '<f4', struct.pack('<f', 0.5) * n)
    raw(os.path.join(work, 'y.npy'), '<f4', bytes(4 * n))
    raw(os.path.join(work, 'g.npy'), '<f4', struct.pack('<f', 1.0) * n)
    out = os.path.join(work, 'out')
    rc, so, se = r.call(['grad', 'k.dvk', 'k', 'x=x.npy', 's=s.npy', 'y=y.npy', 'y.grad=g.npy',
                         '--out', out, '--backend', r.backend], work)
    if rc != 0:
        return [f'big: dvm grad exited {rc}: {(se + so).strip()}']
    dt, shape, xg = npyio.read(os.path.join(out, 'x.grad.npy'))
    # reference derivative of 37 steps of v -> 0.5 v + 0.01 v^2 from v = 0.5, in float64
    v, g = 0.5, 1.0
    for _ in range(37):
        g *= 0.5 + 0.02 * v
        v = v * 0.5 + v * v * 0.01
    fails = []
    if abs(xg[n - 2] - g) > 1e-4 * abs(g) + 1e-12:
        fails.append(f'big: x.grad[n-2] = {xg[n - 2]}, expected {g}')
    g1 = 0.5 + 0.02 * 0.5
    if abs(xg[0] - g1) > 1e-6:
        fails.append(f'big: x.grad[0] = {xg[0]}, expected {g1}')
    return fails


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dvm', required=True)
    ap.add_argument('--backend', default='cpu')
    ap.add_argument('--mode', default='all', choices=['forward', 'grad', 'errors', 'big', 'all'])
    ap.add_argument('--filter', default='')
    ap.add_argument('-j', type=int, default=2)
    ap.add_argument('--keep', action='store_true')
    ap.add_argument('--dvm-flag', action='append', default=[])
    ap.add_argument('--batch', action='store_true')
    ap.add_argument('--refs', default=None)
    a = ap.parse_args()
    r = Runner(os.path.abspath(a.dvm), a.backend, a.keep, a.dvm_flag, a.batch, a.refs)
    try:
        return run(a, r)
    finally:
        ran, problems = r.close()
        if a.batch:
            print(f'{ran} commands through dvm batch')
        for e in problems:
            print(f'FAIL batch: {e}')
        if problems:
            print(f'{a.backend}: the batch processes failed')
            sys.exit(1)


def run(a, r):
    rc, why = backend_available(r)
    if rc != 0:
        if unavailable(why):
            print(f'SKIP: backend {a.backend} is not available here: {why}')
            return 77
        print(f'FAIL probe: a one-line kernel failed on backend {a.backend} (exit {rc}): {why}')
        print(f'{a.backend}: 0 passed, 1 failed')
        return 1
    jobs = []
    sel = [c for c in cases.CASES if a.filter in c.name]
    if a.backend == 'vulkan' and 'llvmpipe' in ''.join(r.call(['info'], os.getcwd())[1:]):
        for c in sel:
            if c.long_loops:
                print(f'skip {c.name}: its loops are longer than lavapipe runs (llvmpipe loop limit)')
        sel = [c for c in sel if not c.long_loops]
    if a.mode in ('forward', 'all'):
        jobs += [(f'forward {c.name}', check_forward, c) for c in sel]
    if a.mode in ('grad', 'all'):
        jobs += [(f'grad {c.name}', check_grad, c) for c in sel if c.grad]
    passed = failed = 0
    with concurrent.futures.ThreadPoolExecutor(a.j) as ex:
        futs = [(label, ex.submit(fn, r, c)) for label, fn, c in jobs]
        for label, f in futs:
            try:
                err = f.result()
            except Exception as e:  # a harness error is a failure too
                err = f'harness error: {e!r}'
            if err:
                failed += 1
                print(f'FAIL {label}: {err}')
            else:
                passed += 1
                print(f'ok   {label}')
    extra = []
    if a.mode in ('errors', 'all') and not a.filter:
        extra += [('errors', error_checks), ('capacity', capacity_checks)]
    if a.mode == 'big':
        extra += [('big', big_check)]
    for label, fn in extra:
        fails = fn(r)
        for e in fails:
            print(f'FAIL {label}: {e}')
        failed += 1 if fails else 0
        passed += 0 if fails else 1
        if not fails:
            print(f'ok   {label}')
    print(f'{a.backend}: {passed} passed, {failed} failed')
    return 1 if failed else 0


if __name__ == '__main__':
    sys.exit(main())

"""Outputs survive kill -9: `dvm run ... --out DIR` is killed at many moments while it runs
and writes; every output file in DIR is then either the old file, whole, or the new one,
whole (never a mix, never truncated). Usage: test_kill.py DVM"""
import os
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

DVM = sys.argv[1]
N = 1 << 22  # 16 MiB per array: writing takes long enough for kills to land inside it


def npy_header(n):
    h = "{'descr': '<f4', 'fortran_order': False, 'shape': (%d,), }" % n
    h += ' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + '\n'
    return b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode()


def npy_bytes(value):
    return npy_header(N) + struct.pack('<f', value) * N


work = tempfile.mkdtemp(prefix='dvm_kill_')
try:
    src = os.path.join(work, 'fill.dvk')
    with open(src, 'w') as f:
        f.write('kernel fill(a: f32[n], b: f32[n], c: f32[n]):\n'
                '    for i in range(n):\n'
                '        a[i] = 2.0\n        b[i] = 3.0\n        c[i] = 4.0\n')
    for name in 'abc':
        with open(os.path.join(work, name + '.npy'), 'wb') as f:
            f.write(npy_bytes(1.0))
    out = os.path.join(work, 'out')
    os.makedirs(out)
    old = npy_bytes(1.0)
    new = {'a': npy_bytes(2.0), 'b': npy_bytes(3.0), 'c': npy_bytes(4.0)}
    for name in 'abc':
        with open(os.path.join(out, name + '.npy'), 'wb') as f:
            f.write(old)
    cmd = [DVM, 'run', src, 'fill'] + ['%s=%s' % (n, os.path.join(work, n + '.npy')) for n in 'abc'] + \
          ['--backend', 'cpu', '--threads', '1', '--out', out]
    t0 = time.monotonic()
    r = subprocess.run(cmd, capture_output=True, text=True)
    full = time.monotonic() - t0
    if r.returncode != 0:
        print('FAIL: the uninterrupted run failed:', r.stderr)
        sys.exit(1)
    fails, states = [], set()
    kills = 24
    for k in range(kills):
        for name in 'abc':  # back to the old outputs
            with open(os.path.join(out, name + '.npy'), 'wb') as f:
                f.write(old)
        p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        time.sleep(full * (k + 0.5) / kills)
        p.send_signal(signal.SIGKILL)
        p.wait()
        state = ''
        for name in 'abc':
            with open(os.path.join(out, name + '.npy'), 'rb') as f:
                data = f.read()
            if data == old:
                state += 'o'
            elif data == new[name]:
                state += 'n'
            else:
                fails.append('kill %d: %s.npy is neither the old nor the new file (%d bytes)' % (k, name, len(data)))
        states.add(state)
    for f in fails:
        print('FAIL', f)
    print('test_kill: %d kills over %.2f s runs; output states seen (o old, n new, per a b c): %s; %s' %
          (kills, full, ' '.join(sorted(states)), 'FAILED' if fails else 'ok'))
    sys.exit(1 if fails else 0)
finally:
    shutil.rmtree(work, ignore_errors=True)

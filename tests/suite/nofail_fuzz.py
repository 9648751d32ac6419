#!/usr/bin/env python3
"""nofail_fuzz.py --dvm PATH [--backend B] [--count N] [--seed S]: random loops whose accesses
(N kernels: 80, or DVM_NOFAIL_COUNT) are the loop's indices plus constants (`v[i + 1, j] = u[i - 2, j] * 2.0 + u[i, j + 1]`), over
ranges and shapes drawn so that some launches stay in bounds and some do not. A launch that the
host proves unable to fail takes no snapshot of the arrays it writes (vm/launch.c,
dvm_task_may_fail); for this family the proof is exact, so each launch is checked against
Python's own walk over the iteration space:
- in bounds everywhere: it succeeds, `--time` reports `snapshots 0 bytes`, and v is right;
- out of bounds somewhere: it fails with the out-of-bounds message, never with the internal
  error that a launch run without a snapshot reports, and writes nothing.
--batch runs the commands through one `dvm batch` process (tests/suite/dvmbatch.py: the device
opened once). Exit 0 all passed, 1 a failure, 77 the backend has no device."""
import argparse
import os
import random
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402
from dvmbatch import Dvm  # noqa: E402


def off(rng):
    return rng.choice([0, 0, 0, 0, 0, 0, 1, -1, 2, -2])


def term(x, o):
    return x if o == 0 else f'{x} + {o}' if o > 0 else f'{x} - {-o}'


def make(rng):
    nd = rng.choice([1, 2, 2])
    idx = ['i', 'j'][:nd]
    # u: f32[n(, m)], v: f32[p(, q)]; the loop runs over [a, n - b) on its first axis (1-D) or
    # over ndrange(n - b, m - c) (2-D), with scalars that may put it past either array
    ushape = [rng.randint(1, 7) for _ in range(nd)]
    vshape = list(ushape) if rng.random() < 0.75 else [max(1, s + rng.choice([-2, -1, 1, 2])) for s in ushape]
    a, b, c = rng.choice([0, 0, 0, 1, 2, -1]), rng.choice([0, 0, 0, 1, 2, -1]), rng.choice([0, 0, 0, 1, -1])
    if nd == 1:
        lo, hi = [a], [ushape[0] - b]
        head = f'    for i in range(a, n - b):'
        sig = 'u: f32[n], v: f32[p], a: i32, b: i32, c: i32'
    else:
        lo, hi = [0, 0], [ushape[0] - b, ushape[1] - c]
        head = f'    for i, j in ndrange(n - b, m - c):'
        sig = 'u: f32[n, m], v: f32[p, q], a: i32, b: i32, c: i32'
    offs = [[off(rng) for _ in range(nd)] for _ in range(3)]  # v's, then u's two reads
    at = [', '.join(term(idx[d], o[d]) for d in range(nd)) for o in offs]
    src = (f'kernel k({sig}):\n{head}\n'
           f'        v[{at[0]}] = u[{at[1]}] * 2.0 + u[{at[2]}]\n')
    return dict(src=src, nd=nd, ushape=ushape, vshape=vshape, a=a, b=b, c=c, lo=lo, hi=hi, offs=offs)


def inbounds(t):
    """Whether every access stays in its array (an empty space: trivially)."""
    nd, lo, hi, offs = t['nd'], t['lo'], t['hi'], t['offs']
    if any(h <= l for l, h in zip(lo, hi)):
        return True
    shapes = [t['vshape'], t['ushape'], t['ushape']]
    # every access at both ends of every axis (the accesses are affine)
    return all(lo[d] + offs[k][d] >= 0 and hi[d] - 1 + offs[k][d] < shapes[k][d] for k in range(3) for d in range(nd))


def walk(t, u, v):
    """v after the kernel, or None when some access leaves its array."""
    nd, lo, hi, offs = t['nd'], t['lo'], t['hi'], t['offs']
    if not inbounds(t):
        return None
    out = list(v)

    def flat(pt, shape):
        return pt[0] * shape[1] + pt[1] if nd == 2 else pt[0]
    pts = [[i] for i in range(lo[0], hi[0])] if nd == 1 else \
        [[i, j] for i in range(lo[0], hi[0]) for j in range(lo[1], hi[1])]
    for pt in pts:
        p = [[pt[d] + offs[k][d] for d in range(nd)] for k in range(3)]
        out[flat(p[0], t['vshape'])] = npyio.f32(npyio.f32(u[flat(p[1], t['ushape'])] * 2.0) + u[flat(p[2], t['ushape'])])
    return out


def size(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dvm', required=True)
    ap.add_argument('--backend', default='cpu')
    ap.add_argument('--count', type=int, default=int(os.environ.get('DVM_NOFAIL_COUNT', '80')))
    ap.add_argument('--seed', type=int, default=20261123)
    ap.add_argument('--batch', action='store_true', help='every command through one `dvm batch` process')
    o = ap.parse_args()
    return Dvm(o.dvm, o.batch).serve('nofail_fuzz', lambda dvm: fuzz(o, dvm))


def fuzz(o, dvm):
    rng = random.Random(o.seed)
    fails, safe, oob = [], 0, 0
    with tempfile.TemporaryDirectory(prefix='dvmt_nofail_') as work:
        for n in range(o.count):
            # half the kernels drawn until they stay in bounds, so both outcomes are common
            t = make(rng)
            for _ in range(100 if n % 2 else 0):
                if inbounds(t) and all(h > l for l, h in zip(t['lo'], t['hi'])):
                    break
                t = make(rng)
            src = os.path.join(work, f'k{n}.dvk')
            with open(src, 'w') as f:
                f.write(t['src'])
            u = [npyio.f32(rng.uniform(-1, 1)) for _ in range(size(t['ushape']))]
            v = [npyio.f32(rng.uniform(-1, 1)) for _ in range(size(t['vshape']))]
            npyio.write(os.path.join(work, 'u.npy'), 'f4', t['ushape'], u)
            npyio.write(os.path.join(work, 'v.npy'), 'f4', t['vshape'], v)
            out = os.path.join(work, f'out{n}')
            p = dvm.run(['run', src, 'k', f'u={work}/u.npy', f'v={work}/v.npy', f'a={t["a"]}',
                         f'b={t["b"]}', f'c={t["c"]}', '--backend', o.backend, '--out', out, '--time'], timeout=120)
            msg = (p.stderr + p.stdout).strip()
            if p.returncode != 0 and re.search(r"backend '\w+' (device \d+:|is not compiled)", msg):
                print(f'nofail_fuzz: SKIPPED: no {o.backend} device: {msg}')
                return 77
            want = walk(t, u, v)
            what = f'kernel {n} (u {t["ushape"]}, v {t["vshape"]}, a={t["a"]} b={t["b"]} c={t["c"]})'
            if want is None:
                oob += 1
                if p.returncode != 1 or 'out of bounds' not in msg or 'internal error' in msg or os.path.exists(out):
                    fails.append(f'{what}: expected an out-of-bounds failure with nothing written, got exit '
                                 f'{p.returncode}: {msg}\n{t["src"]}')
                continue
            safe += 1
            snap = re.search(r'snapshots (\d+) bytes', msg)
            if p.returncode != 0 or not snap or snap.group(1) != '0':
                fails.append(f'{what}: expected success with no snapshot, got exit {p.returncode}: {msg}\n{t["src"]}')
                continue
            diff = npyio.exact_diff(npyio.read(os.path.join(out, 'v.npy'))[2], want)
            if diff:
                fails.append(f'{what}: {diff}\n{t["src"]}')
    if safe * 4 < o.count or oob * 4 < o.count:
        fails.append(f'{safe} launches in bounds and {oob} out of bounds: too few of one kind to check both')
    return npyio.finish('nofail_fuzz', o.backend, o.count, fails, f'{safe} in bounds, {oob} out')


if __name__ == '__main__':
    sys.exit(main())

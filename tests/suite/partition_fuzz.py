#!/usr/bin/env python3
"""partition_fuzz.py --dvm PATH [--backend B] [--count N] [--seed S]: random parallel loops whose
body is one `if` on their indices (the shapes compiler/partition.c splits, and some it must
leave alone), run through `dvm run` and checked element by element against Python. Bounds of
every form and side, chained comparisons, scalars that put the box inside, across or outside
the range, 1-D ranges with a start, 2-D and 3-D; `else`, `elif` or neither. At least a third
of the kernels must come out partitioned (`dvm disasm` shows more than one parallel task), so
that the check cannot pass with the pass switched off. --batch runs the commands through one
`dvm batch` process (tests/suite/dvmbatch.py: the device opened once). Exit 0 all passed, 1 a
failure, 77 the backend has no device."""
import argparse
import os
import random
import re
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402
from dvmbatch import Dvm  # noqa: E402

BOUNDS = ['0', '1', '2', 'a', 'b', '{N} - 1', '{N} - 2', '{N} - a', 'a * 2', 'min(a, {N})', 'max(b, 1)',
          '-b', 'abs(b)', 'a + b', '{N} // 2']  # the last one cannot be split (// may fail)
FORMS = ['{X} > {E}', '{X} >= {E}', '{E} < {X}', '{E} <= {X}', '{X} < {E}', '{X} <= {E}', '{E} > {X}',
         '{E} >= {X}', '{E} < {X} < {F}', '{E} <= {X} < {F}']
OTHER = ['{X} != a', 'u[{I}] > 0.0', '{X} + 1 > b']  # tests no box describes


def atom(rng, idx, ext):
    k = rng.randrange(len(idx))
    x, n = idx[k], ext[k]
    if rng.random() < 0.08:
        return rng.choice(OTHER).format(X=x, I=', '.join(idx))
    e = rng.choice(BOUNDS).format(N=n)
    f = rng.choice(BOUNDS).format(N=n)
    return rng.choice(FORMS).format(X=x, E=e, F=f)


def make(rng, t):
    nd = rng.choice([1, 2, 2, 2, 3])
    idx = ['i', 'j', 'l'][:nd]
    ext = ['n', 'm', 'p'][:nd]
    shape = [rng.randint(1, 9) for _ in range(nd)]
    cond = ' and '.join(atom(rng, idx, ext) for _ in range(rng.randint(1, 4)))
    start = rng.choice([0, 0, 1, 3]) if nd == 1 else 0
    rng_s = f'range({start}, n)' if nd == 1 and start else (f'range(n)' if nd == 1 else f'ndrange({", ".join(ext)})')
    at = ', '.join(idx)
    kind = rng.choice(['else', 'else', 'none', 'elif'])
    lines = [f'kernel k(u: f32[{", ".join(ext)}], v: f32[{", ".join(ext)}], a: i32, b: i32):',
             f'    for {at} in {rng_s}:', f'        if {cond}:', f'            v[{at}] = u[{at}] * 2.0 + 1.0']
    if kind == 'else':
        lines += ['        else:', f'            v[{at}] = u[{at}] - 3.0']
    elif kind == 'elif':
        lines += [f'        elif {idx[-1]} > a:', f'            v[{at}] = 7.0', '        else:', f'            v[{at}] = u[{at}] * 0.5']
    src = '\n'.join(lines) + '\n'
    a, b = rng.randint(-4, 11), rng.randint(-4, 11)
    return dict(src=src, nd=nd, shape=shape, cond=cond, start=start, kind=kind, a=a, b=b, idx=idx, ext=ext)


def reference(c, u, v):
    """v after the kernel, by Python's own evaluation of the condition at every point."""
    nd, shape = c['nd'], c['shape']
    env = {'a': c['a'], 'b': c['b'], 'min': min, 'max': max, 'abs': abs}
    for k, e in enumerate(c['ext']):
        env[e] = shape[k]
    strides = [1] * nd
    for k in range(nd - 2, -1, -1):
        strides[k] = strides[k + 1] * shape[k + 1]
    cond = re.sub(r'u\[[^\]]*\]', 'U', c['cond'])
    out = list(v)
    total = 1
    for s in shape:
        total *= s
    for flat in range(total):
        pt = [(flat // strides[k]) % shape[k] for k in range(nd)]
        if nd == 1 and pt[0] < c['start']:
            continue
        env.update(dict(zip(c['idx'], pt)))
        env['U'] = u[flat]
        if eval(cond, {}, env):
            out[flat] = u[flat] * 2.0 + 1.0
        elif c['kind'] == 'else':
            out[flat] = u[flat] - 3.0
        elif c['kind'] == 'elif':
            out[flat] = 7.0 if pt[-1] > c['a'] else u[flat] * 0.5
    return out


f32 = npyio.f32


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument('--dvm', required=True)
    ap.add_argument('--backend', default='cpu')
    ap.add_argument('--count', type=int, default=60)
    ap.add_argument('--seed', type=int, default=20261123)
    ap.add_argument('--dvm-flag', action='append', default=[], help='added to every `dvm run` (--cpu-lanes)')
    ap.add_argument('--batch', action='store_true', help='every command through one `dvm batch` process')
    o = ap.parse_args()
    return Dvm(o.dvm, o.batch).serve('partition_fuzz', lambda dvm: fuzz(o, dvm))


def fuzz(o, dvm):
    rng = random.Random(o.seed)
    fails, split = [], 0
    with tempfile.TemporaryDirectory(prefix='dvmt_part_') as work:
        for t in range(o.count):
            c = make(rng, t)
            src = os.path.join(work, f'k{t}.dvk')
            with open(src, 'w') as f:
                f.write(c['src'])
            total = 1
            for s in c['shape']:
                total *= s
            u = [f32(rng.uniform(-1, 1)) for _ in range(total)]
            v = [f32(rng.uniform(-1, 1)) for _ in range(total)]
            npyio.write(os.path.join(work, 'u.npy'), 'f4', c['shape'], u)
            npyio.write(os.path.join(work, 'v.npy'), 'f4', c['shape'], v)
            out = os.path.join(work, f'out{t}')
            p = dvm.run(['run', src, 'k', f'u={work}/u.npy', f'v={work}/v.npy', f'a={c["a"]}',
                         f'b={c["b"]}', '--backend', o.backend, '--out', out] + o.dvm_flag, timeout=120)
            if p.returncode != 0:
                msg = p.stderr + p.stdout
                if re.search(r"backend '\w+' (device \d+:|is not compiled)", msg):
                    print(f'partition_fuzz: SKIPPED: no {o.backend} device: {msg.strip()}')
                    return 77
                fails.append(f'kernel {t}: exit {p.returncode}: {msg.strip()}\n{c["src"]}')
                continue
            diff = npyio.exact_diff(npyio.read(os.path.join(out, 'v.npy'))[2], [f32(x) for x in reference(c, u, v)])
            if diff:
                fails.append(f'kernel {t} (a={c["a"]}, b={c["b"]}, shape {c["shape"]}): {diff}\n{c["src"]}')
            d = dvm.run(['disasm', src], timeout=60).stdout
            fwd = d.split('variant adjoint')[0]
            split += len(re.findall(r'task \d+: parallel', fwd)) > 1
    if split * 3 < o.count:
        fails.append(f'only {split} of {o.count} kernels were partitioned')
    return npyio.finish('partition_fuzz', o.backend, o.count, fails, f'{split} partitioned')


if __name__ == '__main__':
    sys.exit(main())

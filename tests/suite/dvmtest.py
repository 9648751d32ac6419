"""The kernel test harness: runs .dvk kernels through the `dvm` command on a backend and
checks them against float64 references written in Python (never against dvm itself):
forward outputs, adjoint gradients against central finite differences of the reference,
and tangents against both finite differences and the adjoint (<J v, w> = <v, J^T w>)."""
import copy
import fcntl
import hashlib
import math
import os
import pickle
import random
import shutil
import subprocess
import tempfile
import threading

import dvmbatch
import npyio

# One command's limit (a hang guard): lavapipe compiles each pipeline's machine code at its
# first dispatch, a minute or more on two busy cores when Mesa's shader cache lacks it (a
# changed interpreter, a fresh machine); a command killed then loses that compile, and every
# later command of its class compiles again.
COMMAND_TIMEOUT = 360


class Arr:
    """A float64 / int array with C-order indexing for references: a[i], a[i, j]."""

    def __init__(self, dtype, shape, data):
        self.dtype, self.shape, self.data = dtype, tuple(shape), list(data)

    def _flat(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        assert len(idx) == len(self.shape), (idx, self.shape)
        f = 0
        for i, n in zip(idx, self.shape):
            if not 0 <= i < n:
                raise IndexError((idx, self.shape))
            f = f * n + i
        return f

    def __getitem__(self, idx):
        return self.data[self._flat(idx)]

    def __setitem__(self, idx, v):
        self.data[self._flat(idx)] = int(wrap32(v)) if self.dtype == 'i4' else float(v)

    def __len__(self):
        return self.shape[0]


def wrap32(v):
    v = int(v) & 0xFFFFFFFF
    return v - (1 << 32) if v >= 1 << 31 else v


def F(*shape, lo=-1.0, hi=1.0):
    return ('f4', shape, lo, hi)


def I(*shape, lo=0, hi=10):
    return ('i4', shape, lo, hi)


class Case:
    def __init__(self, name, src, kernel, inputs, ref, grad=False, scalars=None, seed=1,
                 rtol=1e-4, gtol=2e-3, fd_h=1e-4, exclude_grad=(), long_loops=False):
        # long_loops: loops longer than llvmpipe (lavapipe) runs; skipped there, with a message
        self.long_loops = long_loops
        self.name, self.src, self.kernel = name, src, kernel
        self.inputs, self.ref, self.grad = inputs, ref, grad
        self.scalars = scalars or {}
        self.seed, self.rtol, self.gtol, self.fd_h = seed, rtol, gtol, fd_h
        self.exclude_grad = exclude_grad

    def make_inputs(self):
        rng = random.Random(self.seed)
        d = {}
        for name, spec in self.inputs.items():
            if isinstance(spec, tuple) and spec and spec[0] in ('f4', 'i4'):
                dt, shape, lo, hi = spec
                n = 1
                for s in shape:
                    n *= s
                if dt == 'f4':
                    data = [npyio.f32(rng.uniform(lo, hi)) for _ in range(n)]
                else:
                    data = [rng.randint(lo, hi) for _ in range(n)]
                d[name] = Arr(dt, shape, data)
            elif isinstance(spec, Arr):
                d[name] = copy.deepcopy(spec)
            else:
                d[name] = spec
        return d


def run_ref(case, d):
    d = copy.deepcopy(d)
    case.ref(d)
    return d


class RefCache:
    """Reference values computed once and kept in a folder (None: no folder, always computed),
    so that the tests that check the same corpus (on each backend, through the CPU's lane
    interpreters, through the C API) do not each compute the same finite differences in
    Python again: they take most of a grad run. A value is filed under a hash of its key and
    of every .py file of the harness (the cases and the references are Python), so a changed
    case or reference is computed afresh; concurrent runs take a lock per key, so one
    computes what the other waits for."""

    def __init__(self, folder):
        self.folder = folder
        if folder:
            os.makedirs(folder, exist_ok=True)
            h = hashlib.sha256()
            here = os.path.dirname(os.path.abspath(__file__))
            for fn in sorted(os.listdir(here)):
                if fn.endswith('.py'):
                    with open(os.path.join(here, fn), 'rb') as f:
                        h.update(fn.encode() + b'\0' + f.read() + b'\0')
            self.sources = h.hexdigest()

    def get(self, key, compute):
        if not self.folder:
            return compute()
        name = hashlib.sha256((self.sources + '\0' + key).encode()).hexdigest()
        path = os.path.join(self.folder, name + '.pickle')
        with open(path + '.lock', 'w') as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            try:
                with open(path, 'rb') as f:
                    got = pickle.load(f)
                if got[0] == key:
                    return got[1]
            except (OSError, EOFError, pickle.UnpicklingError):
                pass
            value = compute()
            tmp = f'{path}.{os.getpid()}.{threading.get_ident()}'
            with open(tmp, 'wb') as f:
                pickle.dump((key, value), f)
            os.replace(tmp, path)
            return value


class Runner:
    def __init__(self, dvm, backend, keep=False, flags=(), batch=False, refs=None):
        """flags: options added to every run, grad and jvp (the switches: --cpu-lanes, ...).
        batch: every command through a `dvm batch` process of the calling thread (dvmbatch.py)
        instead of a `dvm` process of its own; close() ends them and returns their problems.
        refs: the folder of a RefCache for the references (None: computed in every run)."""
        self.dvm, self.backend, self.keep, self.flags = dvm, backend, keep, list(flags)
        self.refs = RefCache(refs)
        self.batch = batch
        self.batches, self.local, self.lock = [], threading.local(), threading.Lock()

    def call(self, args, cwd):
        if args and args[0] in ('run', 'grad', 'jvp'):
            args = args + self.flags
        if self.batch:
            b = getattr(self.local, 'batch', None)
            if b is None:
                b = self.local.batch = dvmbatch.Batch(self.dvm)
                with self.lock:
                    self.batches.append(b)
            return b.call(args, cwd, COMMAND_TIMEOUT)
        p = subprocess.run([self.dvm] + args, cwd=cwd, capture_output=True, text=True,
                           timeout=COMMAND_TIMEOUT)
        return p.returncode, p.stdout, p.stderr

    def close(self):
        """Ends the batch processes; returns (commands they ran, problems)."""
        problems = [p for b in self.batches for p in b.close()]
        return sum(b.commands for b in self.batches), problems

    def launch(self, case, cmd, d, extra=None, work=None):
        """Runs `dvm cmd`; returns (rc, stderr, outputs dict name -> Arr)."""
        work = work or tempfile.mkdtemp(prefix='dvmt_')
        src = os.path.join(work, case.name + '.dvk')
        with open(src, 'w') as f:
            f.write(case.src)
        args = [cmd, src, case.kernel]
        for name, v in d.items():
            if isinstance(v, Arr):
                path = os.path.join(work, name + '.in.npy')
                npyio.write(path, v.dtype, v.shape, v.data)
                args.append(f'{name}={path}')
            else:
                args.append(f'{name}={v!r}' if isinstance(v, float) else f'{name}={v}')
        for name, v in (extra or {}).items():
            path = os.path.join(work, name + '.in.npy')
            npyio.write(path, v.dtype, v.shape, v.data)
            args.append(f'{name}={path}')
        out = os.path.join(work, 'out')
        args += ['--out', out, '--backend', self.backend]
        rc, so, se = self.call(args, work)
        outs = {}
        if os.path.isdir(out):
            for fn in os.listdir(out):
                if fn.endswith('.npy'):
                    dt, shape, data = npyio.read(os.path.join(out, fn))
                    outs[fn[:-4]] = Arr(dt, shape, data)
        if not self.keep:
            shutil.rmtree(work, ignore_errors=True)
        return rc, se + so, outs


def close(a, b, rtol, atol):
    return abs(a - b) <= atol + rtol * abs(b)


def compare(label, got, want, rtol, scale=None):
    """Returns an error string or None. Ints exact, floats within rtol of the array's scale."""
    if got is None:
        return f'{label}: missing output'
    if tuple(got.shape) != tuple(want.shape):
        return f'{label}: shape {got.shape}, expected {want.shape}'
    if want.dtype == 'i4':
        for k, (g, w) in enumerate(zip(got.data, want.data)):
            if g != w:
                return f'{label}[{k}] = {g}, expected {w}'
        return None
    if scale is None:
        scale = max([abs(v) for v in want.data if math.isfinite(v)] + [1e-30])
    for k, (g, w) in enumerate(zip(got.data, want.data)):
        if math.isnan(w) and math.isnan(g):
            continue
        if math.isinf(w) and g == w:
            continue
        if not close(g, w, rtol, rtol * scale):
            return f'{label}[{k}] = {g!r}, expected {w!r} (rtol {rtol}, scale {scale:.3g})'
    return None


def f32_arrays(d):
    return [n for n, v in d.items() if isinstance(v, Arr) and v.dtype == 'f4']


def check_forward(r, case):
    d = case.make_inputs()
    want = run_ref(case, d)
    rc, msg, outs = r.launch(case, 'run', d)
    if rc != 0:
        return f'dvm run exited {rc}: {msg.strip()}'
    for name, v in want.items():
        if isinstance(v, Arr):
            e = compare(name, outs.get(name), v, case.rtol)
            if e:
                return e
    return None


def loss(case, d, seeds):
    out = run_ref(case, d)
    return sum(s * v for n in seeds for s, v in zip(seeds[n].data, out[n].data))


def grad_reference(case):
    """What check_grad compares dvm with, from the case alone: the inputs d, the seeds, the
    adjoint's reference (central differences of L = sum_p <seed_p, p_out> in float64), the
    tangent direction v and the tangent's reference (central differences along v)."""
    rng = random.Random(case.seed + 1000)
    d = case.make_inputs()
    names = [n for n in f32_arrays(d) if n not in case.exclude_grad]
    seeds = {n: Arr('f4', d[n].shape, [npyio.f32(rng.uniform(-1, 1)) for _ in d[n].data])
             for n in f32_arrays(d)}
    want = {}
    for n in names:
        g = []
        for j in range(len(d[n].data)):
            x0 = d[n].data[j]
            h = case.fd_h * max(1.0, abs(x0))
            d[n].data[j] = x0 + h
            lp = loss(case, d, seeds)
            d[n].data[j] = x0 - h
            lm = loss(case, d, seeds)
            d[n].data[j] = x0
            g.append((lp - lm) / (2 * h))
        want[n] = Arr('f4', d[n].shape, g)
    v = {n: Arr('f4', d[n].shape, [npyio.f32(rng.uniform(-1, 1)) for _ in d[n].data])
         for n in f32_arrays(d)}
    for n in f32_arrays(d):
        if n in case.exclude_grad:
            v[n].data = [0.0] * len(v[n].data)
    h = case.fd_h
    dp, dm = copy.deepcopy(d), copy.deepcopy(d)
    for n in v:
        dp[n].data = [a + h * b for a, b in zip(d[n].data, v[n].data)]
        dm[n].data = [a - h * b for a, b in zip(d[n].data, v[n].data)]
    op, om = run_ref(case, dp), run_ref(case, dm)
    wantd = {n: Arr('f4', d[n].shape, [(a - b) / (2 * h) for a, b in zip(op[n].data, om[n].data)])
             for n in f32_arrays(d)}
    return dict(d=d, names=names, seeds=seeds, want=want, v=v, wantd=wantd)


def check_grad(r, case):
    ref = r.refs.get('grad ' + case.name, lambda: grad_reference(case))
    d, names, seeds, want, v, wantd = (ref[k] for k in ('d', 'names', 'seeds', 'want', 'v', 'wantd'))
    extra = {n + '.grad': seeds[n] for n in seeds}
    rc, msg, outs = r.launch(case, 'grad', d, extra)
    if rc != 0:
        return f'dvm grad exited {rc}: {msg.strip()}'
    scale = max([abs(v) for n in want for v in want[n].data] + [1e-3])
    for n in names:
        e = compare(n + '.grad', outs.get(n + '.grad'), want[n], case.gtol, scale)
        if e:
            return e
    # tangent: against finite differences along v, and against the adjoint
    extra = {n + '.dual': v[n] for n in v}
    rc, msg, touts = r.launch(case, 'jvp', d, extra)
    if rc != 0:
        return f'dvm jvp exited {rc}: {msg.strip()}'
    tscale = 1e-3
    for n in f32_arrays(d):
        tscale = max([tscale] + [abs(x) for x in wantd[n].data])
    for n in f32_arrays(d):
        e = compare(n + '.dual', touts.get(n + '.dual'), wantd[n], case.gtol, tscale)
        if e:
            return e
    # <J v, w> = <v, J^T w> on dvm's own outputs
    jv_w = sum(a * b for n in seeds for a, b in zip(touts[n + '.dual'].data, seeds[n].data))
    v_jtw = sum(a * b for n in names for a, b in zip(v[n].data, outs[n + '.grad'].data))
    if not close(jv_w, v_jtw, case.gtol, case.gtol * max(1.0, abs(jv_w))):
        return f'<Jv, w> = {jv_w!r} but <v, J^T w> = {v_jtw!r}'
    return None

"""dvm side by side with its peers (Warp, Quadrants, JAX) on the kernels of bench/bench_kernels.h.

Every peer runs the same kernels on the same data, written in its own idiom (Warp: @wp.kernel
and wp.Tape; Quadrants: @qd.kernel on ndarrays and kernel.grad; JAX: jnp array code,
lax.fori_loop for the data-dependent loops, jax.vjp). Before any timing, the forward values and
gradients of dvm and of each peer are checked against a float64 numpy reference of the kernel's
math (its gradients checked against central differences by tests/test_peers.py); one that
disagrees is reported and not timed on that kernel. A peer that cannot be imported is skipped
with the reason.

Timing: one warm-up call (it compiles), then the median of --reps calls, each waited for.
"forward" is one launch; "gradient" is forward + reverse with the gradients zeroed and seeded
(random weights on the output) inside the timed call, as a training step needs it.
"edit to gradient" writes a kernel file with a changed constant and times, in the live process,
from the write to the first gradient (the peer's own compile path with its disk caches off or
pointed at a fresh folder, so each edit really compiles).

The tables give dvm's speed against each peer as peer time / dvm time: 2.00x means dvm took
half the peer's time, 0.50x twice the time.

Usage: python bench/peers.py [--device cpu|cuda] [--threads N] [--quick] [--reps N]
                             [--peers dvm,warp,quadrants,jax] [--edits N]
--threads N sets the CPU thread count of every peer that has one (0: all cores); it must be
given before dvm, OpenMP and the peers start, so it is applied at the start of this script."""
import argparse
import importlib.util
import os
import shutil
import statistics
import sys
import tempfile
import time

DVK = """
kernel saxpy(a: f32, x: f32[n], y: f32[n]):
    for i in range(n):
        y[i] = a * x[i] + y[i]

kernel trans(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        y[i] = sin(v) * cos(v) + exp(-v * v) + log(1.0 + v * v) + tanh(v)

kernel dynloop(x: f32[n], steps: i32[n], y: f32[n], rate: f32):
    for i in range(n):
        v = x[i]
        for _ in range(steps[i]):
            v = v * rate + 0.01
        y[i] = v

kernel dynsin(x: f32[n], steps: i32[n], y: f32[n], rate: f32):
    for i in range(n):
        v = x[i]
        for _ in range(steps[i]):
            v = sin(v) * rate + 0.01
        y[i] = v

kernel stencil(u: f32[n, m], v: f32[n, m]):
    for i, j in ndrange(n, m):
        if i > 0 and i < n - 1 and j > 0 and j < m - 1:
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]
        else:
            v[i, j] = u[i, j]

kernel hist(k: i32[n], h: i32[256]):
    for i in range(n):
        h[k[i] % 256] += 1
"""
# The same text as bench/bench_kernels.h's SRC; test_peers checks that they agree.

KERNELS = ["saxpy", "trans", "dynloop", "dynsin", "stencil", "hist"]
GRAD_KERNELS = ["saxpy", "trans", "dynloop", "dynsin", "stencil"]
RATE = 0.97
A = 2.0
MAXSTEPS = 64


def sizes(quick):
    """bench_cpu's sizes (n for each kernel; the stencil's side); --quick: a smoke run."""
    if quick:
        return {"saxpy": 1 << 14, "trans": 1 << 12, "dynloop": 1 << 10, "dynsin": 1 << 10, "stencil": 64,
                "hist": 1 << 14}
    return {"saxpy": 1 << 24, "trans": 1 << 22, "dynloop": 1 << 20, "dynsin": 1 << 20, "stencil": 2048,
            "hist": 1 << 24}


def make_data(np, sz, seed=1):
    """Inputs and gradient seeds as float32/int32 numpy arrays, shared by every peer."""
    r = np.random.default_rng(seed)
    f = lambda n: (r.random(n) * 2 - 1).astype(np.float32)
    d = {}
    n = sz["saxpy"]
    d["saxpy"] = dict(x=f(n), y=f(n), w=r.random(n).astype(np.float32))
    n = sz["trans"]
    d["trans"] = dict(x=f(n), w=r.random(n).astype(np.float32))
    for k in ("dynloop", "dynsin"):
        n = sz[k]
        d[k] = dict(x=f(n), steps=r.integers(0, MAXSTEPS, n).astype(np.int32), w=r.random(n).astype(np.float32))
    s = sz["stencil"]
    d["stencil"] = dict(u=r.random((s, s)).astype(np.float32), w=r.random((s, s)).astype(np.float32))
    n = sz["hist"]
    d["hist"] = dict(k=r.integers(0, 100000, n).astype(np.int32))
    return d


def median_ms(fn, reps):
    fn()  # warm-up: compiles, allocates
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter()
        fn()
        ts.append(time.perf_counter() - t0)
    return statistics.median(ts) * 1e3


def import_file(path, name):
    spec = importlib.util.spec_from_file_location(name, path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


# ------------------------------------------------------------------ peers
# Each peer: .name, .version, .forward(kernel, data) -> a callable that runs one forward and
# returns the output as numpy (used for checking; the timed call is .fwd_timed), .grad(kernel,
# data) -> a callable returning {input name: gradient}, and .edit_grad(folder, constant) -> the
# seconds from writing an edited kernel file to its first gradient.


class Dvm:
    name = "dvm"

    def __init__(self, device, np):
        import dvm
        self.dvm, self.np = dvm, np
        self.version = "python/dvm"
        dvm.set_device("cpu" if device == "cpu" else "cuda:0")
        self.dev = dvm.get_device()
        self.mod = dvm.compile(DVK, filename="bench_kernels.dvk")

    def _arr(self, a, grad=False):
        return self.dvm.array(a, requires_grad=grad)

    def forward(self, kname, d):
        dvm, np, k = self.dvm, self.np, self.mod[kname]
        if kname == "saxpy":
            x, y0 = self._arr(d["x"]), d["y"]
            y = self._arr(y0)
            def run():
                k(a=A, x=x, y=y)
            # saxpy updates y in place: the checked result starts from y0
            return run, lambda: (y.assign(y0), run(), y.numpy())[2]
        if kname == "trans":
            x, y = self._arr(d["x"]), dvm.zeros(d["x"].shape)
            run = lambda: k(x=x, y=y)
        elif kname in ("dynloop", "dynsin"):
            x, s, y = self._arr(d["x"]), self._arr(d["steps"]), dvm.zeros(d["x"].shape)
            run = lambda: k(x=x, steps=s, y=y, rate=RATE)
        elif kname == "stencil":
            u, v = self._arr(d["u"]), dvm.zeros(d["u"].shape)
            run = lambda: k(u=u, v=v)
            y = v
        else:
            kk, h = self._arr(d["k"]), dvm.zeros(256, dtype="i32")
            def run():
                h.zero_()
                k(k=kk, h=h)
            y = h
        return run, lambda: (run(), y.numpy())[1]

    def grad(self, kname, d):
        """A dvm.Tape over the one launch, gradients on the device (as wp.Tape keeps them)."""
        dvm, k = self.dvm, self.mod[kname]
        w = self._arr(d["w"])
        if kname == "saxpy":
            x, y = self._arr(d["x"], True), self._arr(d["y"], True)
            # in place: y's gradient is with respect to its value before the launch (linear, so
            # the same every call)
            call, ins, out = (lambda: k(a=A, x=x, y=y)), {"x": x, "y": y}, y
        elif kname == "trans":
            x, y = self._arr(d["x"], True), dvm.zeros(d["x"].shape, requires_grad=True)
            call, ins, out = (lambda: k(x=x, y=y)), {"x": x}, y
        elif kname in ("dynloop", "dynsin"):
            x, s = self._arr(d["x"], True), self._arr(d["steps"])
            y = dvm.zeros(d["x"].shape, requires_grad=True)
            call, ins, out = (lambda: k(x=x, steps=s, y=y, rate=RATE)), {"x": x}, y
        else:
            u, v = self._arr(d["u"], True), dvm.zeros(d["u"].shape, requires_grad=True)
            call, ins, out = (lambda: k(u=u, v=v)), {"u": u}, v

        def run():
            for a in ins.values():
                if a.grad is not None:
                    a.grad.zero_()
            with dvm.Tape() as tape:
                call()
            tape.backward(grads={out: w})
        return run, lambda: (run(), {n: a.grad.numpy() for n, a in ins.items()})[1]

    def edit_grad(self, folder, c, np, n):
        path = os.path.join(folder, "edit_dvm_%d.dvk" % int(c * 1e6))
        x = np.linspace(-1, 1, n).astype(np.float32)
        steps = (np.arange(n) % MAXSTEPS).astype(np.int32)
        t0 = time.perf_counter()
        with open(path, "w") as f:
            f.write(EDIT_DVK % c)
        m = self.dvm.load(path)
        g = m.dynsin.grad(x=x, steps=steps, y=np.zeros(n, np.float32), seeds={"y": np.ones(n, np.float32)})
        return time.perf_counter() - t0, g["x"]


EDIT_DVK = """kernel dynsin(x: f32[n], steps: i32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        for _ in range(steps[i]):
            v = sin(v) * %r + 0.01
        y[i] = v
"""


def reference(np, kname, d):
    """The kernel's output and its gradients ({input: w-weighted vector-Jacobian product}) in
    float64 numpy, from the math of the .dvk source: the one yardstick for every peer, dvm too,
    so a wrong gradient is reported whichever side has it."""
    f64 = lambda a: np.asarray(a, np.float64)
    a, rate, c = float(np.float32(A)), float(np.float32(RATE)), float(np.float32(0.01))
    if kname == "saxpy":
        x, y, w = f64(d["x"]), f64(d["y"]), f64(d["w"])
        return a * x + y, {"x": a * w, "y": w}
    if kname == "trans":
        v, w = f64(d["x"]), f64(d["w"])
        y = np.sin(v) * np.cos(v) + np.exp(-v * v) + np.log(1.0 + v * v) + np.tanh(v)
        dy = np.cos(2 * v) - 2 * v * np.exp(-v * v) + 2 * v / (1.0 + v * v) + 1.0 - np.tanh(v) ** 2
        return y, {"x": w * dy}
    if kname in ("dynloop", "dynsin"):
        v, steps, g = f64(d["x"]), d["steps"], f64(d["w"])
        # forward with every step's chain factor; the product of the factors is dy/dx
        dydx = np.ones_like(v)
        for s in range(int(steps.max()) if steps.size else 0):
            live = s < steps
            if kname == "dynloop":
                dydx = np.where(live, dydx * rate, dydx)
                v = np.where(live, v * rate + c, v)
            else:
                dydx = np.where(live, dydx * np.cos(v) * rate, dydx)
                v = np.where(live, np.sin(v) * rate + c, v)
        return v, {"x": g * dydx}
    if kname == "stencil":
        u, w = f64(d["u"]), f64(d["w"])
        y, g = u.copy(), w.copy()
        inner = w[1:-1, 1:-1]
        y[1:-1, 1:-1] = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]
        g[1:-1, 1:-1] = -inner  # an interior v reads its own u with weight -1, no copy
        for sl in ((slice(None, -2), slice(1, -1)), (slice(2, None), slice(1, -1)),
                   (slice(1, -1), slice(None, -2)), (slice(1, -1), slice(2, None))):
            g[sl] += 0.25 * inner
        return y, {"u": g}
    return np.bincount(d["k"] % 256, minlength=256).astype(np.int32), {}


def disagreement(np, mode, who, kname, got, want):
    """None when `got` (a forward output, or {input: gradient} for mode "gradient") matches the
    float64 reference `want`, else what differs."""
    if mode == "forward":
        return close(np, got, want, "%s %s forward" % (who, kname))
    if not isinstance(got, dict):
        return "%s %s gradient: %s, not {input: gradient}" % (who, kname, type(got).__name__)
    for n in want:
        if n not in got:
            return "%s %s d/d%s: missing" % (who, kname, n)
        note = close(np, got[n], want[n], "%s %s d/d%s" % (who, kname, n))
        if note:
            return note
    return None


def edit_reference(np, c, n):
    """d y / d x of the edit kernel in float64 (the check of every peer's edited gradient)."""
    x = np.linspace(-1, 1, n).astype(np.float32).astype(np.float64)
    steps = np.arange(n) % MAXSTEPS
    v, g = x.copy(), np.ones(n)
    for s in range(MAXSTEPS):
        live = s < steps
        g = np.where(live, g * np.cos(v) * c, g)
        v = np.where(live, np.sin(v) * c + 0.01, v)
    return g


WARP_SRC = '''import warp as wp


@wp.kernel
def saxpy(a: float, x: wp.array(dtype=float), y: wp.array(dtype=float), out: wp.array(dtype=float)):
    i = wp.tid()
    out[i] = a * x[i] + y[i]


@wp.kernel
def trans(x: wp.array(dtype=float), y: wp.array(dtype=float)):
    i = wp.tid()
    v = x[i]
    y[i] = wp.sin(v) * wp.cos(v) + wp.exp(-v * v) + wp.log(1.0 + v * v) + wp.tanh(v)


@wp.kernel
def dynloop(x: wp.array(dtype=float), steps: wp.array(dtype=wp.int32), y: wp.array(dtype=float), rate: float):
    i = wp.tid()
    v = x[i]
    for s in range(steps[i]):
        v = v * rate + 0.01
    y[i] = v


@wp.kernel
def dynsin_forward(x: wp.array(dtype=float), steps: wp.array(dtype=wp.int32), y: wp.array(dtype=float), rate: float):
    i = wp.tid()
    v = x[i]
    for s in range(steps[i]):
        v = wp.sin(v) * rate + 0.01
    y[i] = v


# Warp's reverse pass replays a dynamic loop without keeping the values it overwrites: right
# for dynloop's linear step, wrong for sin's (it would take cos of the last v). So dynsin keeps
# every step's v in an (n, 65) array, each entry written once, which the reverse pass reads.
@wp.kernel
def dynsin(x: wp.array(dtype=float), steps: wp.array(dtype=wp.int32), vs: wp.array2d(dtype=float),
           y: wp.array(dtype=float), rate: float):
    i = wp.tid()
    vs[i, 0] = x[i]
    for s in range(steps[i]):
        vs[i, s + 1] = wp.sin(vs[i, s]) * rate + 0.01
    y[i] = vs[i, steps[i]]


@wp.kernel
def stencil(u: wp.array2d(dtype=float), v: wp.array2d(dtype=float)):
    i, j = wp.tid()
    n = u.shape[0]
    m = u.shape[1]
    if i > 0 and i < n - 1 and j > 0 and j < m - 1:
        v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]
    else:
        v[i, j] = u[i, j]


@wp.kernel
def hist(k: wp.array(dtype=wp.int32), h: wp.array(dtype=wp.int32)):
    i = wp.tid()
    wp.atomic_add(h, k[i] % 256, 1)
'''

WARP_EDIT = '''import warp as wp


@wp.kernel
def dynsin(x: wp.array(dtype=float), steps: wp.array(dtype=wp.int32), vs: wp.array2d(dtype=float),
           y: wp.array(dtype=float)):
    i = wp.tid()
    vs[i, 0] = x[i]
    for s in range(steps[i]):
        vs[i, s + 1] = wp.sin(vs[i, s]) * %r + 0.01
    y[i] = vs[i, steps[i]]
'''


class Warp:
    name = "warp"

    def __init__(self, device, np, threads, folder):
        import warp as wp
        self.wp, self.np = wp, np
        self.version = "warp-lang " + wp.config.version
        # a fresh kernel cache: nothing compiled by an earlier run is reused
        wp.config.kernel_cache_dir = os.path.join(folder, "warp-cache")
        wp.config.quiet = True
        if hasattr(wp, "LOG_WARNING"):
            wp.config.log_level = wp.LOG_WARNING  # no per-module load lines inside the tables
        wp.init()
        self.dev = "cpu" if device == "cpu" else "cuda:0"
        path = os.path.join(folder, "warp_kernels.py")
        with open(path, "w") as f:
            f.write(WARP_SRC)
        self.k = import_file(path, "warp_kernels")
        self.folder = folder

    def _a(self, a, grad=False):
        return self.wp.array(a, device=self.dev, requires_grad=grad)

    def _z(self, shape, dtype=float, grad=False):
        return self.wp.zeros(shape, dtype=dtype, device=self.dev, requires_grad=grad)

    def _launch(self, kname, grad=False, d=None):
        wp, k, np = self.wp, self.k, self.np
        if kname == "saxpy":
            x, y = self._a(d["x"], grad), self._a(d["y"], grad)
            out = self._z(x.shape, grad=grad)
            return (lambda: wp.launch(k.saxpy, dim=x.shape, inputs=[A, x, y, out], device=self.dev)), \
                {"x": x, "y": y}, out
        if kname == "trans":
            x, y = self._a(d["x"], grad), self._z(d["x"].shape, grad=grad)
            return (lambda: wp.launch(k.trans, dim=x.shape, inputs=[x, y], device=self.dev)), {"x": x}, y
        if kname == "dynloop" or (kname == "dynsin" and not grad):
            # dynsin without a gradient needs no stored steps: its plain loop
            kern = k.dynloop if kname == "dynloop" else k.dynsin_forward
            x, s, y = self._a(d["x"], grad), self._a(d["steps"]), self._z(d["x"].shape, grad=grad)
            return (lambda: wp.launch(kern, dim=x.shape, inputs=[x, s, y, RATE], device=self.dev)), \
                {"x": x}, y
        if kname == "dynsin":
            x, s = self._a(d["x"], grad), self._a(d["steps"])
            vs = self._z((d["x"].shape[0], MAXSTEPS + 1), grad=grad)
            y = self._z(d["x"].shape, grad=grad)
            return (lambda: wp.launch(k.dynsin, dim=x.shape, inputs=[x, s, vs, y, RATE], device=self.dev)), \
                {"x": x}, y
        if kname == "stencil":
            u, v = self._a(d["u"], grad), self._z(d["u"].shape, grad=grad)
            return (lambda: wp.launch(k.stencil, dim=u.shape, inputs=[u, v], device=self.dev)), {"u": u}, v
        kk, h = self._a(d["k"]), self._z(256, dtype=wp.int32)

        def run():
            h.zero_()
            wp.launch(k.hist, dim=kk.shape, inputs=[kk, h], device=self.dev)
        return run, {}, h

    def forward(self, kname, d):
        call, _, out = self._launch(kname, False, d)

        def run():
            call()
            self.wp.synchronize_device(self.dev)
        return run, lambda: (run(), out.numpy())[1]

    def grad(self, kname, d):
        wp = self.wp
        call, ins, out = self._launch(kname, True, d)
        w = self._a(d["w"])

        def run():
            tape = wp.Tape()
            with tape:
                call()
            tape.backward(grads={out: w})
            wp.synchronize_device(self.dev)
            tape.zero()  # keeps the gradients' arrays, zeroes them for the next call
        grads = {}

        def check():
            tape = wp.Tape()
            with tape:
                call()
            tape.backward(grads={out: w})
            wp.synchronize_device(self.dev)
            r = {n: a.grad.numpy().copy() for n, a in ins.items()}
            tape.zero()
            return r
        return run, check

    def edit_grad(self, folder, c, np, n):
        wp = self.wp
        x = wp.array(np.linspace(-1, 1, n).astype(np.float32), device=self.dev, requires_grad=True)
        steps = wp.array((np.arange(n) % MAXSTEPS).astype(np.int32), device=self.dev)
        vs = wp.zeros((n, MAXSTEPS + 1), dtype=float, device=self.dev, requires_grad=True)
        y = wp.zeros(n, dtype=float, device=self.dev, requires_grad=True)
        seed = wp.ones(n, dtype=float, device=self.dev)
        name = "warp_edit_%d" % int(c * 1e6)
        path = os.path.join(folder, name + ".py")
        t0 = time.perf_counter()
        with open(path, "w") as f:
            f.write(WARP_EDIT % c)
        m = import_file(path, name)
        tape = wp.Tape()
        with tape:
            wp.launch(m.dynsin, dim=n, inputs=[x, steps, vs, y], device=self.dev)
        tape.backward(grads={y: seed})
        g = x.grad.numpy()
        return time.perf_counter() - t0, g


QD_SRC = '''import quadrants as qd

F1 = qd.types.ndarray(dtype=qd.f32, ndim=1)
I1 = qd.types.ndarray(dtype=qd.i32, ndim=1)
F2 = qd.types.ndarray(dtype=qd.f32, ndim=2)


@qd.kernel
def saxpy(a: qd.f32, x: F1, y: F1, out: F1):
    for i in range(x.shape[0]):
        out[i] = a * x[i] + y[i]


@qd.kernel
def trans(x: F1, y: F1):
    for i in range(x.shape[0]):
        v = x[i]
        y[i] = qd.sin(v) * qd.cos(v) + qd.exp(-v * v) + qd.log(1.0 + v * v) + qd.tanh(v)


@qd.kernel
def dynloop(x: F1, steps: I1, y: F1, rate: qd.f32):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(steps[i]):
            v = v * rate + 0.01
        y[i] = v


@qd.kernel
def dynsin(x: F1, steps: I1, y: F1, rate: qd.f32):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(steps[i]):
            v = qd.sin(v) * rate + 0.01
        y[i] = v


@qd.kernel
def stencil(u: F2, v: F2):
    # one parallel loop and nothing beside it: the form Quadrants' reverse mode takes
    for i, j in qd.ndrange(u.shape[0], u.shape[1]):
        if i > 0 and i < u.shape[0] - 1 and j > 0 and j < u.shape[1] - 1:
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]
        else:
            v[i, j] = u[i, j]


@qd.kernel
def hist(k: I1, h: I1):
    for i in range(k.shape[0]):
        qd.atomic_add(h[k[i] % 256], 1)
'''

QD_EDIT = '''import quadrants as qd

F1 = qd.types.ndarray(dtype=qd.f32, ndim=1)
I1 = qd.types.ndarray(dtype=qd.i32, ndim=1)


@qd.kernel
def dynsin(x: F1, steps: I1, y: F1):
    for i in range(x.shape[0]):
        v = x[i]
        for _ in range(steps[i]):
            v = qd.sin(v) * %r + 0.01
        y[i] = v
'''


class Quadrants:
    name = "quadrants"

    def __init__(self, device, np, threads, folder):
        import quadrants as qd
        self.qd, self.np = qd, np
        v = getattr(qd, "__version__", "?")
        self.version = "quadrants " + (".".join(map(str, v)) if isinstance(v, tuple) else str(v))
        opts = dict(arch=qd.cpu if device == "cpu" else qd.cuda, ad_stack_experimental_enabled=True,
                    offline_cache=False, log_level="warn")
        if device == "cpu" and threads:
            opts["cpu_max_num_threads"] = threads
        qd.init(**opts)
        path = os.path.join(folder, "qd_kernels.py")
        with open(path, "w") as f:
            f.write(QD_SRC)
        self.k = import_file(path, "qd_kernels")

    def _a(self, a, grad=False):
        qd = self.qd
        r = qd.ndarray(dtype=qd.f32 if a.dtype == self.np.float32 else qd.i32, shape=a.shape, needs_grad=grad)
        r.from_numpy(a)
        return r

    def _z(self, shape, dtype=None, grad=False):
        qd = self.qd
        return qd.ndarray(dtype=dtype or qd.f32, shape=shape, needs_grad=grad)

    def _launch(self, kname, grad, d):
        k = self.k
        if kname == "saxpy":
            x, y = self._a(d["x"], grad), self._a(d["y"], grad)
            out = self._z(x.shape, grad=grad)
            return (lambda: k.saxpy(A, x, y, out)), (lambda: k.saxpy.grad(A, x, y, out)), {"x": x, "y": y}, out
        if kname == "trans":
            x, y = self._a(d["x"], grad), self._z(d["x"].shape, grad=grad)
            return (lambda: k.trans(x, y)), (lambda: k.trans.grad(x, y)), {"x": x}, y
        if kname in ("dynloop", "dynsin"):
            x, s, y = self._a(d["x"], grad), self._a(d["steps"]), self._z(d["x"].shape, grad=grad)
            kern = getattr(k, kname)
            return (lambda: kern(x, s, y, RATE)), (lambda: kern.grad(x, s, y, RATE)), {"x": x}, y
        if kname == "stencil":
            u, v = self._a(d["u"], grad), self._z(d["u"].shape, grad=grad)
            return (lambda: k.stencil(u, v)), (lambda: k.stencil.grad(u, v)), {"u": u}, v
        kk, h = self._a(d["k"]), self._z(256, dtype=self.qd.i32)

        def run():
            h.fill(0)
            k.hist(kk, h)
        return run, None, {}, h

    def forward(self, kname, d):
        call, _, _, out = self._launch(kname, False, d)

        def run():
            call()
            self.qd.sync()
        return run, lambda: (run(), out.to_numpy())[1]

    def grad(self, kname, d):
        fwd, bwd, ins, out = self._launch(kname, True, d)
        w = d["w"]

        def run():
            for a in ins.values():
                a.grad.fill(0)
            fwd()
            out.grad.from_numpy(w)
            bwd()
            self.qd.sync()
        return run, lambda: (run(), {n: a.grad.to_numpy() for n, a in ins.items()})[1]

    def edit_grad(self, folder, c, np, n):
        qd = self.qd
        x = self._a(np.linspace(-1, 1, n).astype(np.float32), True)
        steps = self._a((np.arange(n) % MAXSTEPS).astype(np.int32))
        y = self._z(n, grad=True)
        name = "qd_edit_%d" % int(c * 1e6)
        path = os.path.join(folder, name + ".py")
        t0 = time.perf_counter()
        with open(path, "w") as f:
            f.write(QD_EDIT % c)
        m = import_file(path, name)
        m.dynsin(x, steps, y)
        y.grad.fill(1.0)
        m.dynsin.grad(x, steps, y)
        g = x.grad.to_numpy()
        return time.perf_counter() - t0, g


JAX_SRC = '''import jax
import jax.numpy as jnp
from jax import lax


def saxpy(a, x, y):
    return a * x + y


def trans(x):
    return jnp.sin(x) * jnp.cos(x) + jnp.exp(-x * x) + jnp.log(1.0 + x * x) + jnp.tanh(x)


def _loop(step, x, steps, nmax):
    # every element takes nmax steps, masked past its own count: the vector form of the loop
    def body(s, v):
        return jnp.where(s < steps, step(v), v)
    return lax.fori_loop(0, nmax, body, x)


def dynloop(x, steps, rate, nmax):
    return _loop(lambda v: v * rate + 0.01, x, steps, nmax)


def dynsin(x, steps, rate, nmax):
    return _loop(lambda v: jnp.sin(v) * rate + 0.01, x, steps, nmax)


def stencil(u):
    inner = 0.25 * (u[:-2, 1:-1] + u[2:, 1:-1] + u[1:-1, :-2] + u[1:-1, 2:]) - u[1:-1, 1:-1]
    return u.at[1:-1, 1:-1].set(inner)


def hist(k):
    return jnp.zeros(256, jnp.int32).at[k % 256].add(1)
'''

JAX_EDIT = '''import jax.numpy as jnp
from jax import lax


def dynsin(x, steps, nmax):
    def body(s, v):
        return jnp.where(s < steps, jnp.sin(v) * %r + 0.01, v)
    return lax.fori_loop(0, nmax, body, x)
'''


class Jax:
    name = "jax"

    def __init__(self, device, np, threads, folder):
        import jax
        jax.config.update("jax_enable_x64", False)
        self.jax, self.np = jax, np
        self.version = "jax " + jax.__version__
        plat = "cpu" if device == "cpu" else "gpu"
        self.dev = jax.devices(plat)[0]
        path = os.path.join(folder, "jax_kernels.py")
        with open(path, "w") as f:
            f.write(JAX_SRC)
        self.k = import_file(path, "jax_kernels")

    def _fn(self, kname, d):
        """(f, args, names): f(*args) is the kernel's output, the first len(names) args are the
        differentiated inputs. Every array is an argument, none a closed-over constant, which
        XLA could fold into the compiled program (the other peers read them at run time too)."""
        jax, k = self.jax, self.k
        put = lambda a: jax.device_put(a, self.dev)
        if kname == "saxpy":
            return (lambda x, y: k.saxpy(A, x, y)), [put(d["x"]), put(d["y"])], ["x", "y"]
        if kname == "trans":
            return k.trans, [put(d["x"])], ["x"]
        if kname in ("dynloop", "dynsin"):
            # fori_loop needs a bound known at trace time to be reverse-differentiable: the
            # largest trip count, each element masked past its own
            f, nmax = getattr(k, kname), int(d["steps"].max())
            return (lambda x, s: f(x, s, RATE, nmax)), [put(d["x"]), put(d["steps"])], ["x"]
        if kname == "stencil":
            return k.stencil, [put(d["u"])], ["u"]
        return k.hist, [put(d["k"])], []

    def forward(self, kname, d):
        f, args, _ = self._fn(kname, d)
        jf = self.jax.jit(f)
        run = lambda: jf(*args).block_until_ready()
        return run, lambda: self.np.asarray(run())

    def grad(self, kname, d):
        jax = self.jax
        f, args, names = self._fn(kname, d)
        nd = len(names)
        w = jax.device_put(d["w"], self.dev)

        # the output and its vector-Jacobian product with the seed w: what the other peers'
        # forward + reverse leave in hand (jax.grad of a weighted sum would skip the output)
        def step(w, *a):
            y, pull = jax.vjp(lambda *diff: f(*diff, *a[nd:]), *a[:nd])
            return y, pull(w)
        g = jax.jit(step)

        def run():
            return jax.block_until_ready(g(w, *args))
        return run, lambda: {n: self.np.asarray(v) for n, v in zip(names, run()[1])}

    def edit_grad(self, folder, c, np, n):
        jax = self.jax
        x = jax.device_put(np.linspace(-1, 1, n).astype(np.float32), self.dev)
        steps = jax.device_put((np.arange(n) % MAXSTEPS).astype(np.int32), self.dev)
        name = "jax_edit_%d" % int(c * 1e6)
        path = os.path.join(folder, name + ".py")
        t0 = time.perf_counter()
        with open(path, "w") as f:
            f.write(JAX_EDIT % c)
        m = import_file(path, name)
        g = jax.jit(jax.grad(lambda x: m.dynsin(x, steps, MAXSTEPS).sum()))(x)
        g = np.asarray(g)
        return time.perf_counter() - t0, g


# ------------------------------------------------------------------ reference checks
def close(np, got, ref, what):
    """Float tolerance: relative to the largest magnitude of the reference (float32 results of
    these kernels against float64 stay under 1e-5; a wrong derivative is off by far more)."""
    got, ref = np.asarray(got), np.asarray(ref)
    if got.shape != ref.shape:
        return "%s: shape %s, the reference's %s" % (what, got.shape, ref.shape)
    if ref.dtype.kind == "i":
        bad = int((got != ref).sum())
        return None if bad == 0 else "%s: %d entries differ" % (what, bad)
    if not np.all(np.isfinite(got)):
        return "%s: %d entries not finite" % (what, int((~np.isfinite(got)).sum()))
    scale = max(float(np.abs(ref).max()), 1e-30) if ref.size else 1.0
    err = float(np.abs(got.astype(np.float64) - ref).max()) / scale if ref.size else 0.0
    return None if err < 1e-4 else "%s: max error %.2e of max |reference| %.3g" % (what, err, scale)


def fmt_ms(t):
    return "-" if t is None else ("%.3f" % t if t < 10 else "%.1f" % t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--device", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--threads", type=int, default=0, help="CPU threads for every peer that has a setting (0: all)")
    ap.add_argument("--quick", action="store_true", help="small sizes and few repetitions (a smoke run)")
    ap.add_argument("--reps", type=int, default=None, help="timed calls per entry (median; default 10, --quick 2)")
    ap.add_argument("--edits", type=int, default=None, help="edits timed per peer (median; default 5, --quick 1)")
    ap.add_argument("--peers", default="dvm,warp,quadrants,jax", help="comma-separated subset of dvm,warp,quadrants,jax")
    ap.add_argument("--require", default="", help="comma-separated peers whose absence is an error (else skipped)")
    a = ap.parse_args()
    reps = a.reps or (2 if a.quick else 10)
    edits = a.edits or (1 if a.quick else 5)
    if a.threads:
        # before any OpenMP runtime, XLA or Quadrants starts: dvm's cpu device takes OpenMP's
        # count, Quadrants gets cpu_max_num_threads; the process is also held to that many
        # cores, which bounds the peers without a setting of their own (XLA's thread pools)
        os.environ["OMP_NUM_THREADS"] = str(a.threads)
        if hasattr(os, "sched_setaffinity"):
            cpus = sorted(os.sched_getaffinity(0))
            if a.threads < len(cpus):
                os.sched_setaffinity(0, cpus[:a.threads])
    # JAX takes 75% of the GPU's memory at its first use unless told not to, which would leave
    # too little to the peers that allocate after it; each allocates what it uses instead
    os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")
    import numpy as np

    folder = tempfile.mkdtemp(prefix="dvm-peers-")
    try:
        run(a, np, reps, edits, folder)
    finally:
        shutil.rmtree(folder, ignore_errors=True)


def run(a, np, reps, edits, folder):
    sz = sizes(a.quick)
    data = make_data(np, sz)
    wanted = [p.strip() for p in a.peers.split(",") if p.strip()]
    required = [p.strip() for p in a.require.split(",") if p.strip()]
    classes = {"warp": Warp, "quadrants": Quadrants, "jax": Jax}
    for p in wanted + required:
        if p not in classes and p != "dvm":
            sys.exit("peers.py: unknown peer '%s' (dvm, warp, quadrants, jax)" % p)
    dvm = Dvm(a.device, np)  # the reference: always runs
    peers = []
    for p in wanted:
        if p == "dvm":
            continue
        try:
            peers.append(classes[p](a.device, np, a.threads, folder))
        except Exception as e:  # ImportError, or a device the peer cannot open
            msg = "%s: %s" % (type(e).__name__, str(e).strip().splitlines()[0] if str(e).strip() else "")
            if p in required:
                sys.exit("peers.py: %s is required but cannot run: %s" % (p, msg))
            print("skipped %s: %s" % (p, msg))
    print("device %s (dvm: %s), threads %s; %s" % (
        a.device, dvm.dev, a.threads or "all (%d cores)" % os.cpu_count(),
        ", ".join(p.version for p in peers) or "no peer available"))
    print("sizes: %s; median of %d calls after a warm-up" % (
        ", ".join("%s %s" % (k, ("%dx%d" % (v, v)) if k == "stencil" else "2^%d" % (v.bit_length() - 1))
                  for k, v in sz.items()), reps))
    print()

    tables = {}
    for mode in ("forward", "gradient"):
        rows = []
        for kname in (KERNELS if mode == "forward" else GRAD_KERNELS):
            d = data[kname]
            print("peers.py: %s %s ..." % (kname, mode), file=sys.stderr, flush=True)
            want = reference(np, kname, d)[0 if mode == "forward" else 1]
            mk = dvm.forward if mode == "forward" else dvm.grad
            drun, dcheck = mk(kname, d)
            note = disagreement(np, mode, "dvm", kname, dcheck(), want)
            if note:
                print("not timed (disagrees with the float64 reference): " + note)
            tdvm = None if note else median_ms(drun, reps)
            row = [kname, tdvm]
            for p in peers:
                t, note = None, None
                try:
                    prun, pcheck = (p.forward if mode == "forward" else p.grad)(kname, d)
                    note = disagreement(np, mode, p.name, kname, pcheck(), want)
                    if note is None:
                        t = median_ms(prun, reps)
                except Exception as e:
                    note = "%s %s %s: %s: %s" % (p.name, kname, mode, type(e).__name__,
                                                 (str(e).strip().splitlines() or [""])[0])
                if note:
                    print("not timed (disagrees with the float64 reference, or fails): " + note)
                row.append(t)
            rows.append(row)
        tables[mode] = rows

    title = {"forward": "Forward (one launch)",
             "gradient": "Gradient (forward + reverse, gradients zeroed and seeded in the call)"}
    for mode in ("forward", "gradient"):
        print("### %s, %s" % (title[mode], a.device))
        print("dvm/peer = peer ms / dvm ms: dvm's speed against the peer (>1: dvm faster).")
        print()
        hdr = ["kernel", "dvm ms"] + ["%s ms" % p.name for p in peers] + ["dvm/%s" % p.name for p in peers]
        print("| " + " | ".join(hdr) + " |")
        print("|" + " --- |" * len(hdr))
        for row in tables[mode]:
            k, tdvm, ts = row[0], row[1], row[2:]
            ratios = ["-" if t is None or tdvm is None else "%.2fx" % (t / tdvm) for t in ts]
            print("| " + " | ".join([k, fmt_ms(tdvm)] + [fmt_ms(t) for t in ts] + ratios) + " |")
        print()

    # edit to first gradient
    n = 1 << 10
    print("### Edit to first gradient, %s (dynsin with an edited constant, n = %d, live process)" % (a.device, n))
    print("From writing the edited kernel file to the gradient in hand; a warm-up edit first, then")
    print("the median of %d edits, each a new constant (so each compiles anew)." % edits)
    print()
    print("| peer | what is timed | median ms | min ms | peer / dvm |")
    print("| --- | --- | --- | --- | --- |")
    what = {"dvm": "write .dvk, dvm.load, kernel.grad",
            "warp": "write .py, import (new @wp.kernel), wp.Tape forward + backward (fresh kernel cache)",
            "quadrants": "write .py, import, forward + kernel.grad (offline cache off)",
            "jax": "write .py, import, jax.jit(jax.grad(f))(x)"}
    base = None
    for p in [dvm] + peers:
        ts, note = [], None
        try:
            for e in range(edits + 1):
                c = round(0.9 + 0.001 * (e + 1), 6)
                t, g = p.edit_grad(folder, c, np, n)
                note = close(np, g, edit_reference(np, c, n), "%s edited gradient" % p.name)
                if note:
                    break
                if e:
                    ts.append(t * 1e3)
        except Exception as ex:
            note = "%s edit: %s: %s" % (p.name, type(ex).__name__, (str(ex).strip().splitlines() or [""])[0])
        if note:
            print("| %s | %s | - | - | - |" % (p.name, note))
            continue
        med = statistics.median(ts)
        if p is dvm:
            base = med
        print("| %s | %s | %s | %s | %s |" % (p.name, what[p.name], fmt_ms(med), fmt_ms(min(ts)),
                                            "1.00x" if p is dvm else "%.0fx" % (med / base)))


if __name__ == "__main__":
    main()

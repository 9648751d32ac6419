"""The Python package's overheads (bench/RESULTS.md, "Python").

1. A launch of a small kernel on the cpu from Python, `k(x=a, y=b, s=2.0)` with dvm.Arrays
   (and with numpy arrays), against the same launch made directly with dvm_launch on the same
   bound arguments (through ctypes, whose call costs well under a microsecond); then the
   Python work alone: the same calls with dvm_launch replaced by a no-op.
2. Edit to first gradient in a live process: a changed source string compiled with
   dvm.compile and its first kernel.grad, per edit.

Usage: python bench/python_bench.py [--n 64] [--reps 20000] [--device cpu]"""
import argparse
import ctypes
import time

import numpy as np

import dvm
from dvm import _lib

SRC = """
kernel axpy(x: f32[n], y: f32[n], s: f32):
    for i in range(n):
        y[i] = s * x[i] + y[i] * %s
"""


def per_call_us(f, reps, clock=time.perf_counter):
    """The best of 5 rounds, in µs per call."""
    for _ in range(min(reps // 10, 1000)):
        f()
    best = float("inf")
    for _ in range(5):
        t0 = clock()
        for _ in range(reps // 5):
            f()
        best = min(best, (clock() - t0) / (reps // 5))
    return best * 1e6


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=64)
    ap.add_argument("--reps", type=int, default=20000)
    ap.add_argument("--device", default="cpu")
    a = ap.parse_args()
    dvm.set_device(a.device)
    mod = dvm.compile(SRC % "0.5")
    k = mod.axpy
    x = dvm.array(np.ones(a.n, np.float32))
    y = dvm.zeros(a.n)
    xn = np.ones(a.n, np.float32)
    yn = np.zeros(a.n, np.float32)
    k(x=x, y=y, s=2.0)
    ks = k._state(x._ctx)
    args = ks.args_for(_lib.FORWARD)
    opts = _lib.LaunchOpts(0, 0, 0)
    ctx = x._ctx.h

    def direct():
        _lib.launch(ctx, ks.k, args, opts, None)
    s = 2.0
    t_direct = per_call_us(direct, a.reps)
    t_py = per_call_us(lambda: k(x=x, y=y, s=s), a.reps)
    t_np = per_call_us(lambda: k(x=xn, y=yn, s=s), a.reps)
    t_np_new = per_call_us(lambda: k(x=np.ones(a.n, np.float32), y=yn, s=s), a.reps // 4)
    print("launch, n=%d, %s: dvm_launch via ctypes %.2f us; from Python with dvm.Arrays %.2f us (+%.2f); "
          "with the same numpy arrays %.2f us (+%.2f); with a new numpy array each time %.2f us (+%.2f)" % (
              a.n, a.device, t_direct, t_py, t_py - t_direct, t_np, t_np - t_direct, t_np_new, t_np_new - t_direct))

    # the Python side alone: the same calls with dvm_launch replaced by a no-op
    real = _lib.launch
    _lib.launch = lambda *args: 0
    try:
        # process CPU time: the Python work alone is one thread's, and a loaded machine
        # inflates wall-clock time
        t_side = per_call_us(lambda: k(x=x, y=y, s=s), a.reps, time.process_time)
        t_side_np = per_call_us(lambda: k(x=xn, y=yn, s=s), a.reps, time.process_time)
    finally:
        _lib.launch = real
    print("Python work per launch (dvm_launch replaced by a no-op; CPU time): dvm.Arrays %.2f us, numpy arrays %.2f us" % (
        t_side, t_side_np))

    # edit to first gradient
    xg = np.linspace(0, 1, a.n).astype(np.float32)
    times = []
    for e in range(30):
        src = SRC % ("%.3f" % (0.5 + 0.001 * e))
        t0 = time.perf_counter()
        m = dvm.compile(src, filename="edit.dvk")
        g = m.axpy.grad(x=xg, y=np.zeros(a.n, np.float32), s=2.0, seeds={"y": np.ones(a.n, np.float32)})
        times.append(time.perf_counter() - t0)
        assert abs(float(g["x"][0]) - 2.0) < 1e-6
    times.sort()
    print("edit to first gradient (dvm.compile + kernel.grad, live process, %s): median %.3f ms, min %.3f ms" % (
        a.device, times[len(times) // 2] * 1e3, times[0] * 1e3))


if __name__ == "__main__":
    main()

"""Keyword launches, numpy arrays updated in place, ArgumentError and LaunchError."""
import numpy as np
import pytest

import dvm
from conftest import damp_reference

OOB = """
kernel scale(x: f32[n], idx: i32[1], a: f32):
    for i in range(n):
        x[i] = x[i] * a
    x[idx[0]] = 5.0
"""


def args():
    return dict(x=np.linspace(0, 1, 8, dtype=np.float32), steps=np.arange(8, dtype=np.int32),
                y=np.zeros(1, np.float32), rate=0.9)


def test_numpy_updated_in_place(damp):
    kw = args()
    y = kw["y"]
    damp.damp(**kw)
    np.testing.assert_allclose(y, damp_reference(kw["x"], kw["steps"], 0.9), rtol=1e-5)
    damp.damp(**kw)  # y[0] += ...: a second launch adds again, into the same array
    np.testing.assert_allclose(y, 2 * damp_reference(kw["x"], kw["steps"], 0.9), rtol=1e-5)
    kw["x"][:] = 0  # the caller's changes between launches are seen
    y[:] = 0
    damp.damp(**kw)
    np.testing.assert_allclose(y, damp_reference(kw["x"], kw["steps"], 0.9), rtol=1e-5)


def test_non_contiguous_and_readonly(device):
    mod = dvm.compile(OOB)
    base = np.ones(16, np.float32)
    view = base[::2]  # not contiguous: copied in, and back after the launch
    mod.scale(x=view, idx=np.array([0], np.int32), a=3.0)
    np.testing.assert_array_equal(base[1::2], 1)
    np.testing.assert_array_equal(view, [5] + [3] * 7)
    ro = np.ones(4, np.float32)
    ro.flags.writeable = False
    mod.scale(x=ro, idx=np.array([0], np.int32), a=3.0)  # runs on a copy; ro stays as it is
    np.testing.assert_array_equal(ro, 1)


def test_scalar_arguments(device):
    mod = dvm.compile(OOB)
    x = np.ones(4, np.float32)
    mod.scale(x=x, idx=np.array([1], np.int32), a=2)  # an int for an f32 scalar
    np.testing.assert_array_equal(x, [2, 5, 2, 2])
    mod.scale(x=x, idx=np.array([1], np.int32), a=np.float32(0.5))
    np.testing.assert_array_equal(x, [1, 5, 1, 1])
    with pytest.raises(dvm.ArgumentError, match="'a' is declared f32.*str"):
        mod.scale(x=x, idx=np.array([1], np.int32), a="2")


def test_float64_is_an_argument_error(damp):
    kw = args()
    kw["x"] = kw["x"].astype(np.float64)
    with pytest.raises(dvm.ArgumentError) as e:
        damp.damp(**kw)
    msg = str(e.value)
    assert "'x'" in msg and "f32[n]" in msg and "float64" in msg
    assert isinstance(e.value, dvm.Error)
    kw = args()
    kw["steps"] = kw["steps"].astype(np.int64)
    with pytest.raises(dvm.ArgumentError, match="'steps' is declared i32\\[n\\], given a int64"):
        damp.damp(**kw)


def test_missing_unknown_misshaped(damp):
    kw = args()
    del kw["rate"]
    with pytest.raises(dvm.ArgumentError, match="missing argument 'rate' \\(f32\\)"):
        damp.damp(**kw)
    kw = args()
    kw["z"] = 1.0
    with pytest.raises(dvm.ArgumentError, match="no parameter 'z'"):
        damp.damp(**kw)
    kw = args()
    kw["y"] = np.zeros(2, np.float32)  # y: f32[1]
    with pytest.raises(dvm.ArgumentError, match="'y' is declared f32\\[1\\], given a float32 array of shape \\(2,\\)"):
        damp.damp(**kw)
    kw = args()
    kw["x"] = np.zeros((2, 4), np.float32)  # rank
    with pytest.raises(dvm.ArgumentError, match="'x'"):
        damp.damp(**kw)
    kw = args()
    kw["steps"] = np.zeros(5, np.int32)  # n is 8 from x, 5 from steps: found by the C library
    with pytest.raises(dvm.ArgumentError, match="'n'"):
        damp.damp(**kw)
    kw = args()
    kw["x"] = [1.0, 2.0]
    with pytest.raises(dvm.ArgumentError, match="'x'.*numpy"):
        damp.damp(**kw)
    kw = args()
    kw["rate"] = np.ones(1, np.float32)
    with pytest.raises(dvm.ArgumentError, match="'rate' is declared f32, given a float32 array"):
        damp.damp(**kw)


def test_failed_launch_changes_nothing(device):
    mod = dvm.compile(OOB, filename="oob.dvk")
    x = np.arange(4, dtype=np.float32)
    with pytest.raises(dvm.LaunchError) as e:
        mod.scale(x=x, idx=np.array([7], np.int32), a=2.0)
    assert "oob.dvk:5:" in str(e.value) and "out of bounds" in str(e.value)
    np.testing.assert_array_equal(x, [0, 1, 2, 3])
    a = dvm.array(np.arange(4, dtype=np.float32))
    with pytest.raises(dvm.LaunchError):
        mod.scale(x=a, idx=np.array([-1], np.int32), a=2.0)
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3])
    mod.scale(x=a, idx=np.array([0], np.int32), a=2.0)  # and the kernel still runs
    np.testing.assert_array_equal(a.numpy(), [5, 2, 4, 6])


def test_timeout_writes_nothing(device):
    # a loop that never ends stops at its time limit (on lavapipe, llvmpipe's own loop guard
    # may stop it first): a LaunchError, and the arrays as they were
    mod = dvm.compile("kernel spin(x: f32[n]):\n    for i in range(n):\n        x[i] = 1.0\n"
                      "        v = x[i]\n        while v > -1.0:\n            v = v + 1.0\n        x[i] = v\n",
                      filename="spin.dvk")
    x = np.zeros(64, np.float32)
    with pytest.raises(dvm.LaunchError) as e:
        mod.spin.launch(x=x, timeout=0.3)
    msg = str(e.value)
    assert "kernel 'spin'" in msg and ("timed out" in msg or "llvmpipe" in msg), msg
    np.testing.assert_array_equal(x, 0)
    with pytest.raises(dvm.ArgumentError, match="timeout"):
        mod.spin.launch(x=x, timeout=-1)


def test_launch_stats_and_options(damp):
    st = damp.damp.launch(args(), ad_stack_size=0)
    assert st["total_ms"] >= 0 and "snapshot_bytes" in st


def test_numpy_arguments_repeated(device):
    # numpy arguments of the same shape launch after launch (on a GPU the device copy is
    # reused): each launch sees the current contents and writes back
    mod = dvm.compile("kernel inc(x: f32[n], d: f32):\n    for i in range(n):\n        x[i] = x[i] + d\n")
    a = np.zeros(5, np.float32)
    b = np.full(5, 10, np.float32)
    for t in range(3):
        mod.inc(x=a, d=1.0)
        mod.inc(x=b, d=2.0)
        a[0] += 100
    np.testing.assert_array_equal(a, [303, 3, 3, 3, 3])
    np.testing.assert_array_equal(b, 16)
    c = np.zeros(7, np.float32)  # another shape
    mod.inc(x=c, d=1.0)
    np.testing.assert_array_equal(c, 1)


def test_arguments_on_two_devices(device):
    others = [d for d in dvm.devices() if d != device]
    if not others:
        pytest.skip("one device here")
    mod = dvm.compile("kernel add(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = y[i] + x[i]\n")
    a = dvm.zeros(3, device=device)
    b = dvm.zeros(3, device=others[0])
    with pytest.raises(dvm.ArgumentError, match="two devices"):
        mod.add(x=a, y=b)

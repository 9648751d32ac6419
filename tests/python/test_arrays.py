"""dvm.devices, set_device, dvm.array, dvm.zeros, .numpy(), .shape, .dtype, .device, .grad, DLPack."""
import ctypes
import subprocess
import sys

import numpy as np
import pytest

import dvm


def test_devices_and_default():
    ds = dvm.devices()
    assert ds[0] == "cpu"
    assert all(d == "cpu" or d.split(":")[0] in ("cuda", "hip", "vulkan") for d in ds)
    gpu = [d for d in ds if d != "cpu"]
    dvm.set_device("cpu")
    assert dvm.get_device() == "cpu"
    with pytest.raises(ValueError, match="unknown device"):
        dvm.set_device("tpu:0")
    with pytest.raises(dvm.Error, match="not available"):
        dvm.set_device("vulkan:9")
    if gpu:
        dvm.set_device(gpu[0])
        assert dvm.get_device() == gpu[0]
    dvm.set_device("cpu")


def test_default_is_never_software_vulkan():
    """The default device follows `--backend auto`: a software Vulkan device (lavapipe) is
    passed over for the cpu (a fresh process: the default is chosen once)."""
    code = "import dvm; print(dvm.get_device()); print(dvm.info())"
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    default, report = r.stdout.split("\n", 1)
    software = [l for l in report.splitlines() if "[software:" in l]
    if default.startswith("vulkan:"):
        index = int(default.split(":")[1])
        assert not any(l.strip().startswith("vulkan device %d:" % index) for l in software), r.stdout
    gpus = [d for d in dvm.devices() if d.split(":")[0] in ("cuda", "hip")]
    hardware_vulkan = [l for l in report.splitlines() if l.strip().startswith("vulkan device") and "[software:" not in l]
    if software and not gpus and not hardware_vulkan:
        assert default == "cpu", r.stdout


def test_array_and_zeros(device):
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    a = dvm.array(x, requires_grad=True)
    assert a.shape == (2, 3) and a.dtype == "f32" and a.device == device and a.requires_grad
    assert a.grad is None
    np.testing.assert_array_equal(a.numpy(), x)
    x[0, 0] = 99  # dvm.array copies
    assert a.numpy()[0, 0] == 0
    b = a.numpy()
    b[0, 0] = 7  # .numpy() copies
    assert a.numpy()[0, 0] == 0
    z = dvm.zeros((4, 3), dtype="f32", device=None, requires_grad=False)
    assert z.shape == (4, 3) and z.device == device and not z.numpy().any()
    i = dvm.zeros(5, dtype="i32")
    assert i.dtype == "i32" and i.numpy().dtype == np.int32
    assert dvm.array([1.5, 2.5]).dtype == "f32"   # Python floats become f32
    assert dvm.array([1, 2]).dtype == "i32"
    assert dvm.array(np.arange(3.0)).dtype == "f32"  # float64 data converted on request only
    with pytest.raises(ValueError):
        dvm.zeros((1, 2, 3, 4, 5))
    with pytest.raises(ValueError):
        dvm.zeros(3, dtype="f64")
    e = dvm.zeros(0)
    assert e.numpy().shape == (0,)
    c = a.to("cpu")
    np.testing.assert_array_equal(c.numpy(), a.numpy())


def test_arrays_stay_on_device(device):
    mod = dvm.compile("kernel inc(x: f32[n]):\n    for i in range(n):\n        x[i] = x[i] + 1.0\n")
    a = dvm.zeros(5)
    for _ in range(3):
        mod.inc(x=a)
    np.testing.assert_array_equal(a.numpy(), 3)


def test_dlpack_numpy_cpu():
    dvm.set_device("cpu")
    x = np.arange(5, dtype=np.float32)
    a = dvm.from_dlpack(x)  # zero-copy: the same memory
    assert a.device == "cpu" and a.shape == (5,)
    x[0] = 42
    assert a.numpy()[0] == 42
    mod = dvm.compile("kernel inc(x: f32[n]):\n    for i in range(n):\n        x[i] = x[i] + 1.0\n")
    mod.inc(x=a)
    assert x[0] == 43  # the kernel wrote into numpy's memory
    assert a.__dlpack_device__() == (1, 0)
    y = np.from_dlpack(a)  # and back: numpy sees dvm's memory
    assert y.ctypes.data == x.ctypes.data
    b = dvm.zeros(3)
    v = np.from_dlpack(b)
    mod.inc(x=b)
    np.testing.assert_array_equal(v, 1)
    i = dvm.from_dlpack(np.arange(4, dtype=np.int32))
    assert i.dtype == "i32"
    with pytest.raises(ValueError, match="float32 or int32"):
        dvm.from_dlpack(np.arange(3.0))
    with pytest.raises(BufferError, match="contiguous"):
        dvm.from_dlpack(np.arange(8, dtype=np.float32)[::2])


def test_dlpack_capsules():
    dvm.set_device("cpu")
    a = dvm.array(np.arange(4, dtype=np.float32))
    get_name = ctypes.pythonapi.PyCapsule_GetName
    get_name.restype = ctypes.c_char_p
    get_name.argtypes = [ctypes.py_object]
    assert get_name(a.__dlpack__()) == b"dltensor"
    assert get_name(a.__dlpack__(max_version=(1, 0))) == b"dltensor_versioned"
    # an unconsumed capsule frees its tensor; a consumed one keeps the array alive
    from dvm import _dlpack
    n = len(_dlpack._exports)
    cap = a.__dlpack__()
    assert len(_dlpack._exports) == n + 1
    del cap
    assert len(_dlpack._exports) == n

    class Holder:
        def __init__(self, c):
            self.c = c

        def __dlpack__(self, **kw):
            return self.c

        def __dlpack_device__(self):
            return (1, 0)
    b = dvm.from_dlpack(Holder(dvm.array(np.arange(3, dtype=np.float32)).__dlpack__(max_version=(1, 0))))
    np.testing.assert_array_equal(b.numpy(), [0, 1, 2])  # the producer's array is gone; its memory is not
    del b
    assert len(_dlpack._exports) == n


def test_dlpack_gpu_array(device):
    a = dvm.array(np.arange(4, dtype=np.float32))
    if device == "cpu":
        pytest.skip("the cpu device is covered by test_dlpack_numpy_cpu")
    t, _ = a.__dlpack_device__()
    assert t in (2, 7, 10)
    if device.startswith("vulkan"):
        with pytest.raises(BufferError):
            a.__dlpack__(copy=False)
        # a copy to the host when asked for one
        np.testing.assert_array_equal(np.from_dlpack(a, device="cpu", copy=True) if np.__version__ >= "2.1"
                                      else a.numpy(), [0, 1, 2, 3])


def test_assign_zero_add_on_device(device, monkeypatch):
    """assign (a number, a same-shape array), zero_() and the tape's gradient sum (_add_) at
    every rank and dtype, against numpy; on a device they run there, never through the host
    (Array.numpy would be a host copy: it is made to fail while they run)."""
    rng = np.random.default_rng(3)
    for shape in [(7,), (3, 5), (2, 3, 4), (2, 3, 2, 3)]:
        for dt in (np.float32, np.int32):
            x = (rng.standard_normal(shape) * 10).astype(dt)
            y = (rng.standard_normal(shape) * 10).astype(dt)
            a, b = dvm.array(x), dvm.array(y)
            with monkeypatch.context() as m:
                if a.device != "cpu":
                    m.setattr(dvm.Array, "numpy", lambda self: pytest.fail("a host copy"))
                a.assign(b)
                c1 = None
                a2 = dvm.array(x)
                a2.assign(7)
                a3 = dvm.array(x)
                a3.zero_()
                if dt == np.float32:
                    c1 = dvm.array(x)
                    c1._add_(b)
                    a4 = dvm.array(x)
                    a4.assign(-2.5)
            assert np.array_equal(a.numpy(), y)
            assert (a2.numpy() == 7).all() and (a3.numpy() == 0).all()
            if c1 is not None:
                assert np.array_equal(c1.numpy(), x + y) and (a4.numpy() == -2.5).all()
            b.assign(x)  # the source is unchanged by the copy, and can be written after it
            assert np.array_equal(b.numpy(), x) and np.array_equal(a.numpy(), y)
    i = dvm.array(np.zeros(4, np.int32))
    i.assign(2.7)  # a fraction into i32: numpy's conversion, as before
    assert (i.numpy() == 2).all()

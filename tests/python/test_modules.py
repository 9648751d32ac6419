"""dvm.compile, dvm.load, Module.save, mod.kernels, mod.KERNEL / mod["KERNEL"], CompileError."""
import os
import subprocess
import sys

import numpy as np
import pytest

import dvm
from conftest import ROOT, damp_reference

SRC = open(os.path.join(ROOT, "examples", "damp.dvk")).read()


def run_damp(k, rate=0.9):
    x = np.linspace(0, 1, 8, dtype=np.float32)
    steps = np.arange(8, dtype=np.int32)
    y = np.zeros(1, np.float32)
    k(x=x, steps=steps, y=y, rate=rate)
    np.testing.assert_allclose(y, damp_reference(x, steps, rate), rtol=1e-5)
    return y


def test_compile_kernels(device):
    mod = dvm.compile(SRC, filename="damp.dvk")
    assert mod.kernels == ["damp"]
    assert mod.damp is mod["damp"]
    assert isinstance(mod.damp, dvm.Kernel)
    assert mod.damp.params == [("x", "f32[n]"), ("steps", "i32[n]"), ("y", "f32[1]"), ("rate", "f32")]
    run_damp(mod.damp)


def test_unknown_kernel(device):
    mod = dvm.compile(SRC, filename="damp.dvk")
    with pytest.raises(AttributeError, match="no kernel 'nope'.*damp"):
        mod.nope
    with pytest.raises(KeyError, match="no kernel 'nope'"):
        mod["nope"]


def test_load_source_and_blob(device, tmp_path):
    mod = dvm.load(os.path.join(ROOT, "examples", "damp.dvk"))
    run_damp(mod.damp)
    blob = tmp_path / "damp.dvb"
    mod.save(blob)
    assert blob.read_bytes() == mod.blob()
    mod2 = dvm.load(str(blob))
    assert mod2.kernels == ["damp"]
    run_damp(mod2.damp)


def test_blob_runs_on_every_device(tmp_path):
    dvm.set_device("cpu")
    mod = dvm.compile(SRC, filename="damp.dvk")
    mod.save(tmp_path / "d.dvb")
    for dev in dvm.devices():
        m = dvm.load(tmp_path / "d.dvb", device=dev)
        a = dvm.array(np.linspace(0, 1, 8, dtype=np.float32), device=dev)
        s = dvm.array(np.arange(8, dtype=np.int32), device=dev)
        y = dvm.zeros(1, device=dev)
        m.damp(x=a, steps=s, y=y, rate=0.9)
        np.testing.assert_allclose(y.numpy(), damp_reference(a.numpy(), s.numpy(), 0.9), rtol=1e-5)
        # the module compiled on the cpu runs on dev too: launches follow the arrays' device
        y2 = dvm.zeros(1, device=dev)
        mod.damp(x=a, steps=s, y=y2, rate=0.9)
        np.testing.assert_allclose(y2.numpy(), y.numpy(), rtol=1e-6)


def test_compile_error_diagnostics(device):
    src = "kernel f(x: f32[n]):\n    for i in range(n):\n        x[i] = zz + 1.0\n"
    with pytest.raises(dvm.CompileError) as e:
        dvm.compile(src, filename="bad.dvk")
    msg = str(e.value)
    assert "bad.dvk:3:" in msg and "error:" in msg and "zz" in msg
    assert isinstance(e.value, dvm.Error)


def test_load_errors(device, tmp_path):
    with pytest.raises(FileNotFoundError):
        dvm.load(tmp_path / "missing.dvk")
    bad = tmp_path / "bad.dvb"
    bad.write_bytes(b"DVMB" + b"\0" * 40)
    with pytest.raises(dvm.Error):
        dvm.load(bad)
    with pytest.raises(TypeError):
        dvm.compile(42)


def test_python_m_dvm_info():
    out = subprocess.run([sys.executable, "-m", "dvm", "info"], capture_output=True, text=True, check=True).stdout
    assert out.startswith("dvm ") and "cpu: 1 device" in out
    # the same report (the cpu line's thread count follows OpenMP's setting, which torch may
    # change in this process)
    mine = dvm.info()
    assert out.splitlines()[:-1] == mine.splitlines()[:-1] and len(out.splitlines()) == len(mine.splitlines())
    assert subprocess.run([sys.executable, "-m", "dvm", "nope"], capture_output=True).returncode == 2

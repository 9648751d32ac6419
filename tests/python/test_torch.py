"""dvm.torch and DLPack with torch / cupy (run on the GPU machine; skipped where missing)."""
import numpy as np
import pytest

import dvm
from conftest import central_diff, damp_reference

torch = pytest.importorskip("torch", reason="torch is not installed: the dvm.torch and torch DLPack tests are skipped")
import dvm.torch as dt  # noqa: E402

NONLIN = """
kernel f(x: f32[n], w: f32[n], out: f32[n]):
    for i in range(n):
        out[i] = sin(x[i] * w[i]) * x[i] + exp(0.1 * w[i])
"""


def torch_devices(device):
    if device == "cpu":
        return "cpu"
    if device.startswith("cuda") and torch.cuda.is_available():
        return "cuda:" + device.split(":")[1]
    pytest.skip("torch has no tensors on %s" % device)


def test_dlpack_torch_zero_copy(device):
    td = torch_devices(device)
    t = torch.arange(6, dtype=torch.float32, device=td)
    a = dvm.from_dlpack(t)
    assert a.device == device and a.shape == (6,)
    mod = dvm.compile("kernel inc(x: f32[n]):\n    for i in range(n):\n        x[i] = x[i] + 1.0\n")
    mod.inc(x=a)
    if device == "cpu" or dvm._lib.array_wrap_device is not None:
        assert t.tolist() == [1, 2, 3, 4, 5, 6]  # zero-copy: the kernel wrote into torch's memory
    back = torch.from_dlpack(a)
    assert back.device.type == t.device.type
    np.testing.assert_array_equal(back.cpu().numpy(), a.numpy())
    # tensors as launch arguments, updated in place
    u = torch.zeros(4, device=td)
    if device == "cpu" or dvm._lib.array_wrap_device is not None:
        mod.inc(x=u)
        assert u.tolist() == [1, 1, 1, 1]
    else:  # without dvm_array_wrap_device a copy would miss the writes: refused
        with pytest.raises(dvm.ArgumentError, match="in place"):
            mod.inc(x=u)
    with pytest.raises(dvm.ArgumentError, match="'x' is declared f32\\[n\\], given a i32"):
        mod.inc(x=torch.zeros(4, dtype=torch.int32, device=td))


def test_torch_function_backward(device):
    td = torch_devices(device)
    mod = dvm.compile(NONLIN)
    f = dt.function(mod.f, outputs="out")
    rng = np.random.default_rng(2)
    x0 = rng.standard_normal(5).astype(np.float32)
    w0 = rng.standard_normal(5).astype(np.float32)
    x = torch.tensor(x0, device=td, requires_grad=True)
    w = torch.tensor(w0, device=td, requires_grad=True)
    out = f(x=x, w=w, out=torch.zeros(5, device=td))
    (out * out).sum().backward()

    def ref(xx, ww):
        o = np.sin(xx * ww) * xx + np.exp(0.1 * ww)
        return float(np.sum(o * o))
    np.testing.assert_allclose(x.grad.cpu().numpy(), central_diff(lambda a: ref(a, w0.astype(np.float64)), x0),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_allclose(w.grad.cpu().numpy(), central_diff(lambda a: ref(x0.astype(np.float64), a), w0),
                               rtol=1e-3, atol=1e-4)
    np.testing.assert_array_equal(x.detach().cpu().numpy(), x0)  # inputs are not modified


def test_torch_sequence_backward(device):
    td = torch_devices(device)
    from test_tape import SRC, X0, V0, TARGET, STEPS, reference_loss
    mod = dvm.compile(SRC)
    target = dvm.array(TARGET)

    def run(x, v):
        L = dvm.zeros(1)
        for _ in range(STEPS):
            mod.step(x=x, v=v, rest=1.0, k=4.0, dt=0.01)
        mod.loss(x=x, target=target, L=L)
        return L
    g = dt.sequence(run)
    x = torch.tensor(X0, device=td, requires_grad=True)
    v = torch.tensor(V0, device=td, requires_grad=True)
    L = g(x, v)
    np.testing.assert_allclose(L.item(), reference_loss(X0, V0), rtol=1e-4)
    L.backward()
    np.testing.assert_allclose(x.grad.cpu().numpy(), central_diff(lambda a: reference_loss(a, V0), X0),
                               rtol=2e-3, atol=1e-4)


def test_dlpack_cupy(device):
    cupy = pytest.importorskip("cupy", reason="cupy is not installed")
    if not device.startswith("cuda"):
        pytest.skip("cupy arrays live on cuda devices")
    c = cupy.arange(4, dtype=cupy.float32)
    a = dvm.from_dlpack(c)
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3])
    if dvm._lib.array_data is not None:
        back = cupy.from_dlpack(a)
        np.testing.assert_array_equal(cupy.asnumpy(back), [0, 1, 2, 3])


def test_dlpack_jax(device):
    jax = pytest.importorskip("jax", reason="jax is not installed")
    if device != "cpu" and not device.startswith("cuda"):
        pytest.skip("jax arrays live on the cpu or cuda")
    import jax.numpy as jnp
    try:
        j = jax.device_put(jnp.arange(4, dtype=jnp.float32), jax.devices("gpu" if device != "cpu" else "cpu")[0])
    except RuntimeError as e:
        pytest.skip("jax has no such device: %s" % e)
    a = dvm.from_dlpack(j)
    np.testing.assert_array_equal(a.numpy(), [0, 1, 2, 3])

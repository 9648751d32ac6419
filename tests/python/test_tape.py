"""dvm.Tape over 100+ launches with in-place updates, against central differences of the same
simulation in float64 numpy; memory_budget, backward(grads=...), zero(), reset()."""
import pathlib

import numpy as np
import pytest

import dvm
from conftest import central_diff

# the kernels of examples/python/springs.py
SRC = (pathlib.Path(__file__).resolve().parents[2] / "examples" / "python" / "springs_chain.dvk").read_text()
N, STEPS = 8, 120
X0 = (np.arange(N) * 1.0 + 0.1 * np.sin(np.arange(N) * 1.7)).astype(np.float32)
V0 = (0.05 * np.cos(np.arange(N) * 0.9)).astype(np.float32)
TARGET = (np.arange(N) * 1.05).astype(np.float32)


def reference_loss(x0, v0, steps=STEPS, rest=1.0, k=4.0, dt=0.01):
    x = np.array(x0, np.float64)
    v = np.array(v0, np.float64)
    for _ in range(steps):
        f = -0.5 * x ** 3
        f[1:] -= k * (x[1:] - x[:-1] - rest)
        f[:-1] += k * (x[1:] - x[:-1] - rest)
        v = v * 0.995 + dt * f
        x = x + dt * v
    return float(np.sum((x - TARGET) ** 2))


@pytest.fixture
def mod(device):
    return dvm.compile(SRC, filename="springs.dvk")


def record(mod, tape, x, v, L, target):
    with tape:
        for _ in range(STEPS):
            mod.step(x=x, v=v, rest=1.0, k=4.0, dt=0.01)  # overwrites x and v in place
        mod.loss(x=x, target=target, L=L)


def test_tape_gradients_exact(mod):
    x = dvm.array(X0, requires_grad=True)
    v = dvm.array(V0, requires_grad=True)
    L = dvm.zeros(1)
    target = dvm.array(TARGET)
    tape = dvm.Tape()
    record(mod, tape, x, v, L, target)
    assert len(tape) == STEPS + 1
    np.testing.assert_allclose(L.numpy()[0], reference_loss(X0, V0), rtol=1e-4)
    final_x = x.numpy()
    tape.backward(L)
    np.testing.assert_array_equal(x.numpy(), final_x)  # the arrays keep their final values
    np.testing.assert_allclose(L.grad.numpy(), [1.0])
    gx = central_diff(lambda a: reference_loss(a, V0), X0)
    gv = central_diff(lambda a: reference_loss(X0, a), V0)
    np.testing.assert_allclose(x.grad.numpy(), gx, rtol=2e-3, atol=1e-4)
    np.testing.assert_allclose(v.grad.numpy(), gv, rtol=2e-3, atol=1e-4)
    assert target.grad is None  # no requires_grad: no gradient kept

    # backward again accumulates; zero() clears
    g1 = x.grad.numpy()
    tape.backward(L)
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1, rtol=1e-6)
    tape.zero()
    assert not x.grad.numpy().any()
    tape.backward(grads={L: np.full(1, 2.0, np.float32)})
    np.testing.assert_allclose(x.grad.numpy(), 2 * g1, rtol=1e-5)

    tape.reset()
    assert len(tape) == 0
    with pytest.raises(dvm.Error, match="not used by a recorded launch"):
        tape.backward(L)


def test_memory_budget_same_gradients(mod):
    grads = []
    for budget in (0, 4 * N * 4 * 2):
        x = dvm.array(X0, requires_grad=True)
        v = dvm.array(V0, requires_grad=True)
        L = dvm.zeros(1)
        tape = dvm.Tape(memory_budget=budget)
        assert tape.memory_budget == budget
        record(mod, tape, x, v, L, dvm.array(TARGET))
        tape.backward(L)
        grads.append((x.grad.numpy(), v.grad.numpy(), tape.stats))
    np.testing.assert_allclose(grads[0][0], grads[1][0], rtol=1e-6, atol=1e-7)
    np.testing.assert_allclose(grads[0][1], grads[1][1], rtol=1e-6, atol=1e-7)
    assert grads[1][2]["forward_launches"] > 0  # recomputed from checkpoints
    assert grads[1][2]["saved_bytes"] < grads[0][2]["saved_bytes"]


def test_tape_with_numpy_arrays(mod):
    x = X0.copy()
    v = V0.copy()
    L = np.zeros(1, np.float32)
    tape = dvm.Tape()
    record(mod, tape, x, v, L, TARGET.copy())
    np.testing.assert_allclose(L[0], reference_loss(X0, V0), rtol=1e-4)  # updated in place
    tape.backward(grads=[(L, np.full(1, 2.0, np.float32))])  # pairs: numpy arrays are not hashable
    np.testing.assert_allclose(tape.gradient(L).numpy(), [2.0])


def test_tape_errors(mod):
    tape = dvm.Tape()
    with pytest.raises(dvm.Error, match="nothing was recorded"):
        tape.backward()
    with pytest.raises(ValueError):
        dvm.Tape(memory_budget=-1)
    bad = dvm.compile("kernel f(x: f32[n], i: i32[1]):\n    x[i[0]] = 1.0\n", filename="b.dvk")
    x = dvm.array(X0, requires_grad=True)
    with tape:
        with pytest.raises(dvm.LaunchError):
            bad.f(x=x, i=np.array([99], np.int32))
    assert len(tape) == 0  # a failed launch records nothing
    np.testing.assert_array_equal(x.numpy(), X0)


def test_backward_accumulates_on_device(mod, monkeypatch):
    """A second backward adds to .grad: twice the central-difference gradient, the sum
    computed on the device (no host copy of the gradients) and seeds given as a number."""
    x, v = dvm.array(X0, requires_grad=True), dvm.array(V0)
    L, target = dvm.zeros((1,)), dvm.array(TARGET)
    tape = dvm.Tape()
    record(mod, tape, x, v, L, target)
    tape.backward(grads={L: 1.0})
    with monkeypatch.context() as m:
        if x.device != "cpu":
            m.setattr(dvm.Array, "numpy", lambda self: pytest.fail("a host copy"))
        tape.backward(grads={L: 1.0})
    fd = central_diff(lambda p: reference_loss(p, V0), X0)
    np.testing.assert_allclose(x.grad.numpy(), 2 * fd, rtol=2e-3, atol=2e-4)

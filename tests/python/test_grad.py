"""kernel.grad and kernel.jvp against central differences of the same program in float64 numpy."""
import numpy as np
import pytest

import dvm
from conftest import central_diff, damp_reference

X = np.linspace(0, 1, 8, dtype=np.float32)
STEPS = np.arange(8, dtype=np.int32)


def test_grad_matches_finite_differences(damp):
    y = np.zeros(1, np.float32)
    g = damp.damp.grad(x=X.copy(), steps=STEPS, y=y, rate=0.9, seeds={"y": np.ones(1, np.float32)})
    assert set(g) == {"x", "y"}  # one entry per f32 array parameter
    ref = central_diff(lambda x: damp_reference(x, STEPS, 0.9)[0], X)
    np.testing.assert_allclose(g["x"], ref, rtol=1e-4, atol=1e-6)
    assert g["x"].dtype == np.float32
    # the seed scales the gradient
    g3 = damp.damp.grad(x=X.copy(), steps=STEPS, y=np.zeros(1, np.float32), rate=0.9,
                        seeds={"y": np.full(1, 3, np.float32)})
    np.testing.assert_allclose(g3["x"], 3 * ref, rtol=1e-4, atol=1e-6)


def test_jvp_matches_finite_differences(damp):
    v = np.linspace(1, -1, 8).astype(np.float32)
    t = damp.damp.jvp(x=X.copy(), steps=STEPS, y=np.zeros(1, np.float32), rate=0.9, tangents={"x": v})
    eps = 1e-6
    ref = (damp_reference(X + eps * v.astype(np.float64), STEPS, 0.9) -
           damp_reference(X - eps * v.astype(np.float64), STEPS, 0.9)) / (2 * eps)
    np.testing.assert_allclose(t["y"], ref, rtol=1e-4)


NONLIN = """
kernel f(x: f32[n], w: f32[n], out: f32[n]):
    for i in range(n):
        a = x[i] * w[i]
        out[i] = sin(a) * x[i] + exp(0.1 * w[i])
"""


def test_grad_two_inputs_and_seeds_dict(device):
    mod = dvm.compile(NONLIN)
    rng = np.random.default_rng(1)
    x = rng.standard_normal(6).astype(np.float32)
    w = rng.standard_normal(6).astype(np.float32)
    s = rng.standard_normal(6).astype(np.float32)
    g = mod.f.grad(x=x, w=w, out=np.zeros(6, np.float32), seeds={"out": s})

    def ref(xx, ww):
        return float(np.dot(s.astype(np.float64), np.sin(xx * ww) * xx + np.exp(0.1 * ww)))
    np.testing.assert_allclose(g["x"], central_diff(lambda xx: ref(xx, w.astype(np.float64)), x), rtol=1e-4, atol=1e-5)
    np.testing.assert_allclose(g["w"], central_diff(lambda ww: ref(x.astype(np.float64), ww), w), rtol=1e-4, atol=1e-5)
    with pytest.raises(dvm.ArgumentError, match="seeds names 'nope'"):
        mod.f.grad(x=x, w=w, out=np.zeros(6, np.float32), seeds={"nope": s})
    with pytest.raises(dvm.ArgumentError, match="out.grad.*float32 array of shape \\(6,\\)"):
        mod.f.grad(x=x, w=w, out=np.zeros(6, np.float32), seeds={"out": np.ones(3, np.float32)})

"""pytest options: --dvm-device=cpu|vulkan:0|cuda:0 runs the suite on that device (default
cpu); a device that does not open here skips the tests that use it, saying why."""
import os
import sys

import numpy as np
import pytest

import dvm

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))


def pytest_addoption(parser):
    parser.addoption("--dvm-device", default="cpu", help="the device the tests run on (cpu, vulkan:0, cuda:0)")


@pytest.fixture
def device(request):
    name = request.config.getoption("--dvm-device")
    if name not in dvm.devices():
        pytest.skip("device %s is not available here (python -m dvm info says why)" % name)
    dvm.set_device(name)
    yield name


@pytest.fixture
def damp(device):
    with open(os.path.join(ROOT, "examples", "damp.dvk")) as f:
        return dvm.compile(f.read(), filename="damp.dvk")


def damp_reference(x, steps, rate):
    """y[0] of examples/damp.dvk in float64 numpy."""
    y = 0.0
    for xi, n in zip(np.asarray(x, np.float64), steps):
        v = xi
        for _ in range(int(n)):
            v = v * rate + 0.01
        y += v
    return np.array([y])


def central_diff(f, x, eps=1e-6):
    """df/dx of a scalar function of a float64 vector, by central differences."""
    x = np.asarray(x, np.float64)
    g = np.zeros_like(x)
    for i in range(x.size):
        xp = x.copy()
        xm = x.copy()
        xp.flat[i] += eps
        xm.flat[i] -= eps
        g.flat[i] = (f(xp) - f(xm)) / (2 * eps)
    return g

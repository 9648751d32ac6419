"""examples/python/springs.py converges: gradient descent through a tape of 150 steps."""
import importlib.util
import os

from conftest import ROOT


def test_springs_example_converges(device):
    path = os.path.join(ROOT, "examples", "python", "springs.py")
    spec = importlib.util.spec_from_file_location("springs_example", path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    losses = m.optimize(device, iters=30, verbose=False)
    assert losses[-1] < 0.1 * losses[0], losses
    assert all(b <= a * 1.001 for a, b in zip(losses, losses[1:])), losses  # falls at every step

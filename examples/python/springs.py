"""A chain of masses and springs, optimized by gradient descent through a dvm.Tape.

Each iteration records STEPS launches of `step` (which updates the velocities and positions
in place) and one of `loss`, runs the tape backward, and moves the initial velocities
against dL/dv0, so that the chain ends where `target` says. Prints the loss as it falls and,
if matplotlib is installed, saves a plot of it (springs_loss.png, or the path given).

Usage: python examples/python/springs.py [--device cpu] [--iters 40] [--png FILE]"""
import argparse
import pathlib
import sys

import numpy as np

import dvm

SOURCE = (pathlib.Path(__file__).parent / "springs_chain.dvk").read_text()
N, STEPS = 16, 150


def optimize(device="cpu", iters=40, lr=2.0, verbose=True):
    """Returns the losses, one per iteration."""
    dvm.set_device(device)
    mod = dvm.compile(SOURCE, filename="springs.dvk")
    x0 = (np.arange(N) - N / 2).astype(np.float32)
    target = dvm.array((np.arange(N) - N / 2) * 1.1 + 0.2 * np.sin(np.arange(N)), dtype="f32")
    v0 = np.zeros(N, np.float32)
    losses = []
    for it in range(iters):
        x = dvm.array(x0)
        v = dvm.array(v0, requires_grad=True)
        L = dvm.zeros(1)
        with dvm.Tape() as tape:
            for _ in range(STEPS):
                mod.step(x=x, v=v, rest=1.0, k=4.0, dt=0.01)
            mod.loss(x=x, target=target, L=L)
        tape.backward(L)
        loss = float(L.numpy()[0])
        losses.append(loss)
        if verbose and (it % 5 == 0 or it == iters - 1):
            print("iter %3d  loss %.6f" % (it, loss))
        v0 = v0 - lr * v.grad.numpy()
    return losses


def main(argv):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--device", default="cpu")
    ap.add_argument("--iters", type=int, default=40)
    ap.add_argument("--png", default="springs_loss.png")
    a = ap.parse_args(argv)
    losses = optimize(a.device, a.iters)
    print("loss %.6f -> %.6f over %d iterations of %d recorded steps" % (losses[0], losses[-1], len(losses), STEPS))
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("matplotlib is not installed: no plot")
        return 0
    plt.semilogy(losses)
    plt.xlabel("iteration")
    plt.ylabel("loss")
    plt.title("mass-spring chain, %d steps through a dvm.Tape" % STEPS)
    plt.savefig(a.png, dpi=100)
    print("saved", a.png)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

"""Decorated kernels for test_decorator.py (a .py file of its own: errors name its lines)."""
import dvm


@dvm.kernel
def axpy(x: "f32[n]", y: "f32[n]", a: "f32"):
    """y = a * x + y"""
    for i in range(n):  # noqa: F821 (n is the shape symbol: the body is .dvk)
        y[i] = a * x[i] + y[i]


@dvm.kernel
def scale2(
    m: dvm.f32["n, k"],
    s: dvm.f32,
):
    for i, j in ndrange(n, k):  # noqa: F821
        m[i, j] = m[i, j] * s


class Holder:
    @dvm.kernel
    def nested(x: "f32[n]"):
        for i in range(n):  # noqa: F821
            x[i] = x[i] + 1.0

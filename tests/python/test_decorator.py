"""@dvm.kernel: the function body is .dvk; errors point at the .py file's lines."""
import os
import textwrap

import numpy as np
import pytest

import dvm


def test_decorated_kernels(device):
    import kernels_decorated as kd
    x = np.arange(4, dtype=np.float32)
    y = np.ones(4, np.float32)
    kd.axpy(x=x, y=y, a=2.0)
    np.testing.assert_array_equal(y, 2 * np.arange(4) + 1)
    assert kd.axpy.__doc__ == "y = a * x + y"
    g = kd.axpy.grad(x=x, y=np.ones(4, np.float32), a=2.0, seeds={"y": np.ones(4, np.float32)})
    np.testing.assert_array_equal(g["x"], 2)
    m = np.ones((2, 3), np.float32)
    kd.scale2(m=m, s=3.0)
    np.testing.assert_array_equal(m, 3)
    assert kd.scale2.params == [("m", "f32[n, k]"), ("s", "f32")]
    z = np.zeros(3, np.float32)
    kd.Holder.nested(x=z)
    np.testing.assert_array_equal(z, 1)


def write(tmp_path, name, text):
    p = tmp_path / (name + ".py")
    p.write_text(textwrap.dedent(text))
    return p


def load_module(path):
    import importlib.util
    spec = importlib.util.spec_from_file_location(path.stem, path)
    m = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(m)
    return m


def test_compile_error_points_at_the_py_line(tmp_path, device):
    p = write(tmp_path, "bad_kernel", '''
        import dvm

        X = 1


        @dvm.kernel
        def broken(x: "f32[n]"):
            """doc"""
            for i in range(n):
                x[i] = undefined_name + 1.0
        ''')
    with pytest.raises(dvm.CompileError) as e:
        load_module(p)
    msg = str(e.value)
    lines = p.read_text().splitlines()
    line = next(i + 1 for i, t in enumerate(lines) if "undefined_name" in t)
    col = lines[line - 1].index("undefined_name") + 1
    assert "%s:%d:%d: error:" % (p, line, col) in msg, msg


def test_nested_error_columns(tmp_path, device):
    p = write(tmp_path, "bad_nested", '''
        import dvm

        class K:
            @dvm.kernel
            def broken(x: "f32[n]"):
                for i in range(n):
                    x[i] = nope
        ''')
    with pytest.raises(dvm.CompileError) as e:
        load_module(p)
    lines = p.read_text().splitlines()
    line = next(i + 1 for i, t in enumerate(lines) if "nope" in t)
    col = lines[line - 1].index("nope") + 1
    assert "%s:%d:%d: error:" % (p, line, col) in str(e.value), str(e.value)


def test_annotation_errors(tmp_path, device):
    p = write(tmp_path, "bad_ann", '''
        import dvm

        @dvm.kernel
        def f(x):
            pass
        ''')
    with pytest.raises(dvm.CompileError, match="bad_ann.py:5:7: error: parameter 'x' needs an annotation"):
        load_module(p)


def test_future_annotations(tmp_path, device):
    p = write(tmp_path, "future_ann", '''
        from __future__ import annotations
        import dvm

        @dvm.kernel
        def f(x: dvm.f32["n"], s: "f32"):
            for i in range(n):
                x[i] = x[i] * s
        ''')
    m = load_module(p)
    x = np.ones(3, np.float32)
    m.f(x=x, s=4.0)
    np.testing.assert_array_equal(x, 4)


def test_decorator_with_device(tmp_path, device):
    p = write(tmp_path, "dev_kernel", '''
        import dvm

        @dvm.kernel(device="cpu")
        def twice(x: "f32[n]"):
            for i in range(n):
                x[i] = 2.0 * x[i]
        ''')
    m = load_module(p)
    assert m.twice.module._ctx0.name == "cpu"
    a = dvm.array(np.ones(3, np.float32))  # on the test's device: the module follows the arrays
    m.twice(x=a)
    np.testing.assert_array_equal(a.numpy(), 2)


def test_vector_annotations(tmp_path, device):
    p = write(tmp_path, "vec_kernel", '''
        import dvm

        @dvm.kernel
        def rotate(p: dvm.vec3["n"], m: "mat3[1]", q: "vec3[n]", s: dvm.f32):
            for i in range(n):
                q[i] = (m[0] @ p[i]) * s + cross(p[i], vec3(0.0, 0.0, 1.0))
        ''')
    m = load_module(p)
    rng = np.random.default_rng(3)
    pts = rng.standard_normal((5, 3)).astype(np.float32)
    mat = rng.standard_normal((1, 3, 3)).astype(np.float32)
    out = np.zeros((5, 3), np.float32)
    m.rotate(p=pts, m=mat, q=out, s=2.0)
    want = (pts.astype(np.float64) @ mat[0].T.astype(np.float64)) * 2.0 + np.cross(pts.astype(np.float64), [0.0, 0.0, 1.0])
    np.testing.assert_allclose(out, want, rtol=1e-5, atol=1e-5)

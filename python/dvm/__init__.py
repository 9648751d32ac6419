"""dvm: a bytecode VM for differentiable parallel kernels, from Python.

    import numpy as np, dvm
    mod = dvm.compile(SOURCE)            # .dvk source; or dvm.load("file.dvk" / "file.dvb")
    mod.damp(x=x, steps=steps, y=y, rate=0.9)
    g = mod.damp.grad(x=x, steps=steps, y=y, rate=0.9, seeds={"y": np.ones(1, np.float32)})

See docs/python.md. Compiling, verifying and running happen in the C library (libdvm.so);
this package binds it with ctypes."""
from ._core import (Array, ArgumentError, CompileError, Error, Kernel, LaunchError, Module, array, compile,
                    devices, from_dlpack, get_device, load, set_device, zeros)
from ._tape import Tape
from ._decorator import kernel, f32, i32, vec2, vec3, vec4, mat2, mat3, mat4
from . import _lib

__version__ = "0.1.0"

__all__ = ["Array", "ArgumentError", "CompileError", "Error", "Kernel", "LaunchError", "Module", "Tape", "array",
           "compile", "devices", "f32", "from_dlpack", "get_device", "i32", "info", "kernel", "load", "set_device",
           "vec2", "vec3", "vec4", "mat2", "mat3", "mat4",
           "zeros"]


def info():
    """The report of `dvm info`: every backend and device found, and why others are missing."""
    return _lib.take_string(_lib.backends_report())

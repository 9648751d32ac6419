"""ctypes declarations of include/dvm.h: the only place that knows the C API's signatures.

libdvm.so sits beside this file in an installed package (CMake's DVM_PYTHON install).
Functions added to the C API later (dvm_array_wrap_device, dvm_array_data) are bound when
the library has them, and are None otherwise; callers fall back to copies."""
import ctypes
import os
from ctypes import (POINTER, Structure, c_char_p, c_double, c_float, c_int, c_int32, c_int64, c_size_t,
                    c_void_p)

OK, ERR_COMPILE, ERR_BLOB, ERR_ARG, ERR_RUNTIME, ERR_BACKEND, ERR_IO, ERR_NOMEM, ERR_USAGE, ERR_CANCELLED = range(10)
F32, I32 = 1, 2
FORWARD, ADJOINT, TANGENT = 0, 1, 2


class ContextOpts(Structure):
    # include/dvm.h, dvm_context_opts, field for field (the switches after `threads` are 0: defaults)
    _fields_ = [("backend", c_char_p), ("device", c_int), ("threads", c_int),
                ("no_opt", c_int), ("no_partition", c_int), ("unroll", c_int),
                ("cpu_lanes", c_int), ("gpu_threads", c_int), ("vk_no_int64", c_int),
                ("vk_no_float_atomics", c_int), ("vk_max_alloc", c_int64), ("vk_lanes", c_int)]


class ParamInfo(Structure):
    _fields_ = [("name", c_char_p), ("is_array", c_int), ("dtype", c_int), ("rank", c_int),
                ("dims", c_char_p * 4), ("literal_dims", c_int64 * 4)]


class LaunchOpts(Structure):
    _fields_ = [("mode", c_int), ("ad_stack_size", c_int64), ("default_ad_stack_size", c_int64),
                ("timeout_ms", c_double)]


class LaunchStats(Structure):
    _fields_ = [("size_ms", c_double), ("exec_ms", c_double), ("total_ms", c_double), ("heap_bytes", c_int64),
                ("heap_min_bytes", c_int64), ("snapshot_bytes", c_int64), ("version_bytes", c_int64),
                ("sizes_cached", c_int), ("retries", c_int)]


class TapeStats(Structure):
    _fields_ = [("forward_launches", c_int), ("adjoint_launches", c_int), ("checkpoints", c_int),
                ("saved_bytes", c_int64), ("work_bytes", c_int64)]


def _find_library():
    here = os.path.dirname(os.path.abspath(__file__))
    path = os.path.join(here, "libdvm.so")
    if os.path.exists(path):
        return path
    raise ImportError("dvm: %s is missing: install the package with `pip install .` at the root of a dvm "
                      "checkout (it builds the C library)" % path)


lib = ctypes.CDLL(_find_library())
P = c_void_p
PP = POINTER(c_void_p)
I64P = POINTER(c_int64)

_SIGS = {
    "dvm_context_create": (c_int, [POINTER(ContextOpts), PP]),
    "dvm_context_destroy": (None, [P]),
    "dvm_errmsg": (c_char_p, [P]),
    "dvm_context_backend": (c_char_p, [P]),
    "dvm_context_device": (c_char_p, [P]),
    "dvm_backends_report": (c_void_p, []),
    "dvm_free": (None, [P]),
    "dvm_compile": (c_int, [P, c_char_p, c_size_t, c_char_p, PP]),
    "dvm_load_blob": (c_int, [P, c_void_p, c_size_t, c_char_p, PP]),
    "dvm_load_file": (c_int, [P, c_char_p, PP]),
    "dvm_module_save": (c_int, [P, P, PP, POINTER(c_size_t)]),
    "dvm_module_destroy": (None, [P]),
    "dvm_module_kernel_count": (c_int, [P]),
    "dvm_module_kernel": (c_void_p, [P, c_int]),
    "dvm_module_disasm": (c_int, [P, P, PP]),
    "dvm_kernel_find": (c_int, [P, P, c_char_p, PP]),
    "dvm_kernel_name": (c_char_p, [P]),
    "dvm_kernel_param_count": (c_int, [P]),
    "dvm_kernel_param": (None, [P, c_int, POINTER(ParamInfo)]),
    "dvm_array_create": (c_int, [P, c_int, c_int, I64P, PP]),
    "dvm_array_wrap_host": (c_int, [P, c_int, c_int, I64P, c_void_p, PP]),
    "dvm_array_destroy": (None, [P]),
    "dvm_array_count": (c_int64, [P]),
    "dvm_array_write": (c_int, [P, P, c_void_p, c_int64]),
    "dvm_array_read": (c_int, [P, P, c_void_p, c_int64]),
    "dvm_args_create": (c_int, [P, P, PP]),
    "dvm_args_destroy": (None, [P]),
    "dvm_args_array": (c_int, [P, P, c_char_p, P]),
    "dvm_args_grad": (c_int, [P, P, c_char_p, P]),
    "dvm_args_dual": (c_int, [P, P, c_char_p, P]),
    "dvm_args_f32": (c_int, [P, P, c_char_p, c_float]),
    "dvm_args_i32": (c_int, [P, P, c_char_p, c_int32]),
    "dvm_launch": (c_int, [P, P, P, POINTER(LaunchOpts), POINTER(LaunchStats)]),
    "dvm_tape_create": (c_int, [P, c_int64, PP]),
    "dvm_tape_destroy": (None, [P]),
    "dvm_tape_launch": (c_int, [P, P, P]),
    "dvm_tape_grad": (c_int, [P, P, P]),
    "dvm_tape_backward": (c_int, [P, POINTER(TapeStats)]),
    "dvm_tape_reset": (None, [P]),
    "dvm_tape_count": (c_int, [P]),
}
# Bound only where the library has them (added to the C API after the package was written).
_OPTIONAL = {
    "dvm_array_wrap_device": (c_int, [P, c_int, c_int, I64P, c_void_p, PP]),
    "dvm_array_data": (c_void_p, [P]),
}

for _name, (_res, _args) in _SIGS.items():
    _f = getattr(lib, _name)
    _f.restype = _res
    _f.argtypes = _args
    globals()[_name[4:]] = _f
for _name, (_res, _args) in _OPTIONAL.items():
    _f = getattr(lib, _name, None)
    if _f is not None:
        _f.restype = _res
        _f.argtypes = _args
    globals()[_name[4:]] = _f


def take_string(ptr):
    """A char * the library allocated, as a str; frees it."""
    if not ptr:
        return None
    try:
        return ctypes.string_at(ptr).decode("utf-8", "replace")
    finally:
        free(ptr)

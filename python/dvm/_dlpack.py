"""DLPack both ways, with ctypes: dvm.Array.__dlpack__ / __dlpack_device__ and dvm.from_dlpack.

The structures follow the DLPack C header (dlpack.h, ABI 1.x): DLTensor, DLManagedTensor
(capsule "dltensor") and DLManagedTensorVersioned (capsule "dltensor_versioned"). A consumer
renames the capsule to "used_dltensor[_versioned]" and calls the deleter when done; a
capsule nobody consumed calls it from its destructor."""
import ctypes
from ctypes import POINTER, Structure, c_char_p, c_int32, c_int64, c_uint8, c_uint16, c_uint32, c_uint64, c_void_p

import numpy as np

from . import _lib as L
from ._core import Array, Error, _context, _new_array, _NP, _raise, _wrap_host

CPU, CUDA, CUDA_HOST, VULKAN, ROCM, ROCM_HOST, CUDA_MANAGED = 1, 2, 3, 7, 10, 11, 13
FLAG_READ_ONLY, FLAG_IS_COPIED = 1, 2
_INT, _FLOAT = 0, 2


class DLDevice(Structure):
    _fields_ = [("device_type", c_int32), ("device_id", c_int32)]


class DLDataType(Structure):
    _fields_ = [("code", c_uint8), ("bits", c_uint8), ("lanes", c_uint16)]


class DLTensor(Structure):
    _fields_ = [("data", c_void_p), ("device", DLDevice), ("ndim", c_int32), ("dtype", DLDataType),
                ("shape", POINTER(c_int64)), ("strides", POINTER(c_int64)), ("byte_offset", c_uint64)]


class DLManagedTensor(Structure):
    pass


_DELETER = ctypes.CFUNCTYPE(None, c_void_p)
DLManagedTensor._fields_ = [("dl_tensor", DLTensor), ("manager_ctx", c_void_p), ("deleter", _DELETER)]


class DLPackVersion(Structure):
    _fields_ = [("major", c_uint32), ("minor", c_uint32)]


class DLManagedTensorVersioned(Structure):
    _fields_ = [("version", DLPackVersion), ("manager_ctx", c_void_p), ("deleter", _DELETER),
                ("flags", c_uint64), ("dl_tensor", DLTensor)]


_NAME = b"dltensor"
_NAME_V = b"dltensor_versioned"
_USED = b"used_dltensor"
_USED_V = b"used_dltensor_versioned"

_api = ctypes.pythonapi
_CAPSULE_DESTRUCTOR = ctypes.CFUNCTYPE(None, c_void_p)
_api.PyCapsule_New.restype = ctypes.py_object
_api.PyCapsule_New.argtypes = [c_void_p, c_char_p, _CAPSULE_DESTRUCTOR]
_api.PyCapsule_IsValid.restype = ctypes.c_int
_api.PyCapsule_IsValid.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_GetPointer.restype = c_void_p
_api.PyCapsule_GetPointer.argtypes = [ctypes.py_object, c_char_p]
_api.PyCapsule_SetName.restype = ctypes.c_int
_api.PyCapsule_SetName.argtypes = [ctypes.py_object, c_char_p]
# the destructor gets a borrowed PyObject *: plain pointer arguments, no reference counting
_is_valid_raw = ctypes.PYFUNCTYPE(ctypes.c_int, c_void_p, c_char_p)(("PyCapsule_IsValid", _api))
_get_pointer_raw = ctypes.PYFUNCTYPE(c_void_p, c_void_p, c_char_p)(("PyCapsule_GetPointer", _api))

_BACKEND_TYPE = {"cpu": CPU, "cuda": CUDA, "hip": ROCM, "vulkan": VULKAN}
_TYPE_BACKEND = {CPU: "cpu", CUDA_HOST: "cpu", ROCM_HOST: "cpu", CUDA: "cuda", CUDA_MANAGED: "cuda", ROCM: "hip"}


def device_of(a):
    """(DLPack device type, index) of a dvm.Array."""
    ctx = a._ctx
    idx = int(ctx.name.partition(":")[2] or 0)
    return (_BACKEND_TYPE[ctx.backend], idx)


def device_name(dev):
    """A dvm device name for a (device type, index) pair."""
    t, i = int(dev[0]), int(dev[1])
    b = _TYPE_BACKEND.get(t)
    if b is None:
        raise Error("dvm: DLPack device type %d is not one dvm can use (cpu, cuda, rocm)" % t)
    return "cpu" if b == "cpu" else "%s:%d" % (b, i)


# ------------------------------------------------------------------ export
# Exported tensors: address of the managed struct -> what must stay alive until its deleter.
_exports = {}


def _deleter_impl(ptr):
    _exports.pop(ptr, None)


_deleter = _DELETER(_deleter_impl)


def _capsule_destructor_impl(cap):
    # a capsule still named "dltensor[_versioned]" was never consumed: delete its tensor
    for name in (_NAME, _NAME_V):
        if _is_valid_raw(cap, name):
            ptr = _get_pointer_raw(cap, name)
            if ptr:
                _exports.pop(ptr, None)
            return


_capsule_destructor = _CAPSULE_DESTRUCTOR(_capsule_destructor_impl)


def _data_pointer(a):
    if a._host is not None:
        return a._host.ctypes.data
    if L.array_data is not None and a._ctx.backend in ("cuda", "hip"):
        p = L.array_data(a._h)
        if p:
            return p
    return None


def export(a, stream=None, max_version=None, dl_device=None, copy=None):
    if dl_device is not None and tuple(dl_device) != device_of(a):
        if copy is False:
            raise BufferError("dvm: exporting to device %s needs a copy, and copy=False" % (tuple(dl_device),))
        if int(dl_device[0]) != CPU:
            raise BufferError("dvm: cannot export an array on %s to DLPack device %s" % (a.device, tuple(dl_device)))
        host = a.numpy()
        src = _wrap_host(_context("cpu"), host, a.dtype)
        return export(src, max_version=max_version, copy=None)
    ptr = None if copy else _data_pointer(a)
    copied = False
    if ptr is None:
        if copy is False:
            raise BufferError("dvm: the memory of an array on %s cannot be exported in place" % a.device)
        if a._ctx.is_cpu or copy:
            # a fresh copy on the same device (cpu: a new numpy buffer)
            b = _new_array(a._ctx, a.shape, a.dtype)
            b._write(a.numpy())
            if _data_pointer(b) is not None:
                return export(b, stream=stream, max_version=max_version, copy=None)
        raise BufferError("dvm: arrays on %s cannot be exported through DLPack by this libdvm (it lacks "
                          "dvm_array_data); use .numpy()" % a.device)
    versioned = max_version is not None and int(max_version[0]) >= 1
    n = len(a.shape)
    shape = (c_int64 * n)(*a.shape)
    dt = DLDataType(_FLOAT if a.dtype == "f32" else _INT, 32, 1)
    t = DLTensor(ptr, DLDevice(*device_of(a)), n, dt, shape, None, 0)
    if versioned:
        m = DLManagedTensorVersioned(DLPackVersion(1, 0), None, _deleter, FLAG_IS_COPIED if copied else 0, t)
        name = _NAME_V
    else:
        m = DLManagedTensor(t, None, _deleter)
        name = _NAME
    addr = ctypes.addressof(m)
    _exports[addr] = (m, shape, a)
    return _api.PyCapsule_New(addr, name, _capsule_destructor)


# ------------------------------------------------------------------ import
class _Imported:
    """Owns a consumed DLPack tensor: calls its deleter when the last Array over it goes."""

    def __init__(self, ptr, deleter, producer):
        self.ptr = ptr
        self.deleter = deleter
        self.producer = producer  # the object itself, for the producer's own bookkeeping

    def __del__(self):
        if self.deleter:
            d, self.deleter = self.deleter, None
            d(self.ptr)


def _call_dlpack(obj, dev):
    kw = {}
    if dev[0] in (CUDA, ROCM):
        # the legacy default stream (1 on CUDA, 0 on ROCm): the producer makes it wait for its
        # pending work; dvm's launches use the device's primary context and finish before
        # they return
        kw["stream"] = 1 if dev[0] == CUDA else 0
    try:
        return obj.__dlpack__(max_version=(1, 0), **kw)
    except TypeError:
        return obj.__dlpack__(**kw)


def import_(obj, device=None):
    if isinstance(obj, Array):
        return obj if device is None or _context(device) is obj._ctx else obj.to(device)
    if not hasattr(obj, "__dlpack__"):
        raise TypeError("dvm.from_dlpack: %s has no __dlpack__" % type(obj).__name__)
    dev = tuple(obj.__dlpack_device__()) if hasattr(obj, "__dlpack_device__") else (CPU, 0)
    src_name = device_name(dev)
    target = _context(device) if device is not None else _context(src_name)
    cap = _call_dlpack(obj, dev)
    if _api.PyCapsule_IsValid(cap, _NAME_V):
        ptr = _api.PyCapsule_GetPointer(cap, _NAME_V)
        m = DLManagedTensorVersioned.from_address(ptr)
        if m.version.major > 1:
            raise BufferError("dvm.from_dlpack: DLPack version %d.%d is newer than 1.x" % (
                m.version.major, m.version.minor))
        _api.PyCapsule_SetName(cap, _USED_V)
        readonly = bool(m.flags & FLAG_READ_ONLY)
        t = m.dl_tensor
    elif _api.PyCapsule_IsValid(cap, _NAME):
        ptr = _api.PyCapsule_GetPointer(cap, _NAME)
        m = DLManagedTensor.from_address(ptr)
        _api.PyCapsule_SetName(cap, _USED)
        readonly = False
        t = m.dl_tensor
    else:
        raise BufferError("dvm.from_dlpack: __dlpack__ returned no DLPack capsule")
    deleter = ctypes.cast(m.deleter, c_void_p).value
    owner = _Imported(ptr, _DELETER(deleter) if deleter else None, obj)
    n = t.ndim
    shape = tuple(t.shape[i] for i in range(n))
    if n == 0:
        shape = (1,)
    if not 1 <= len(shape) <= 4:
        raise ValueError("dvm.from_dlpack: arrays have 1 to 4 axes, this one has %d" % n)
    if (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (_FLOAT, 32, 1):
        dtype = "f32"
    elif (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (_INT, 32, 1):
        dtype = "i32"
    else:
        raise ValueError("dvm.from_dlpack: dtype (code %d, %d bits, %d lanes) is not supported: arrays are "
                         "float32 or int32" % (t.dtype.code, t.dtype.bits, t.dtype.lanes))
    count = 1
    for s in shape:
        count *= s
    compact = True
    if t.strides and n:
        expect = 1
        for i in reversed(range(n)):
            if shape[i] != 1 and t.strides[i] != expect:
                compact = False
            expect *= shape[i]
    if not compact:
        raise BufferError("dvm.from_dlpack: the tensor is not contiguous (row-major); make it contiguous first")
    data = (t.data or 0) + t.byte_offset
    itemsize = 4
    if dev[0] in (CPU, CUDA_HOST, ROCM_HOST):
        host = (np.ctypeslib.as_array(ctypes.cast(data, POINTER(ctypes.c_char)), (count * itemsize,))
                .view(_NP[dtype]).reshape(shape)) if count else np.zeros(shape, _NP[dtype])
        if readonly:
            host = host.copy()
            owner = None
        if target.is_cpu:
            if count and data % itemsize == 0:
                return _wrap_host(target, host, dtype, owner=owner)
            b = _new_array(target, shape, dtype)
            b._write(host)
            return b
        b = _new_array(target, shape, dtype)
        b._write(host)
        return b
    # device memory
    if target.name == src_name and L.array_wrap_device is not None and count and not readonly:
        h = ctypes.c_void_p()
        st = L.array_wrap_device(target.h, L.F32 if dtype == "f32" else L.I32, len(shape),
                                 (c_int64 * len(shape))(*shape), data, ctypes.byref(h))
        if st != L.OK:
            _raise(st, target)
        return Array._make(target, h.value, shape, dtype, owner=owner)
    # no zero-copy path: a copy through host memory, made by the producer
    del owner
    host_arr = _host_copy(obj, src_name)
    if host_arr.dtype != _NP[dtype] or host_arr.size != count:
        raise BufferError("dvm.from_dlpack: the host copy of the %s tensor does not match it" % src_name)
    b = _new_array(target, shape, dtype)
    b._write(host_arr)
    b._owner = _COPIED
    return b


_COPIED = "copied"  # the _owner of an Array that from_dlpack filled with a copy


def _host_copy(obj, src_name):
    """A numpy copy of a device tensor: DLPack's cross-device export where the producer has
    it (dl_device, copy), else the producer's own host copy (torch .cpu(), cupy .get())."""
    try:
        cap = obj.__dlpack__(dl_device=(CPU, 0), copy=True)

        class _Cap:
            def __dlpack__(self, **kw):
                return cap

            def __dlpack_device__(self):
                return (CPU, 0)
        return import_(_Cap(), "cpu").numpy()
    except Exception:
        pass
    for how in ("cpu", "get"):
        f = getattr(obj, how, None)
        if callable(f):
            try:
                return np.ascontiguousarray(np.asarray(f()))
            except Exception:
                continue
    try:
        return np.ascontiguousarray(np.asarray(obj))
    except Exception as e:
        raise BufferError("dvm.from_dlpack: %s memory cannot be used in place by this libdvm (it lacks "
                          "dvm_array_wrap_device), and the producer gives no host copy: %s" % (src_name, e))


def is_copy(a):
    """Whether from_dlpack had to copy (the array is not the producer's memory)."""
    return a._owner is _COPIED

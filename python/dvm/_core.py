"""Contexts, arrays, modules, kernels, launches and gradients over the C library (_lib).

Python only moves handles and checks what it can name better than C (dtypes, missing and
unknown arguments); compiling, verifying, sizing and running stay in libdvm."""
import ctypes
import numbers
import os
import threading

import numpy as np

from . import _lib as L


# ---------------------------------------------------------------- errors
class Error(Exception):
    """Any failure reported by dvm."""


class CompileError(Error):
    """The source has errors; the message holds every FILE:LINE:COL: error: MESSAGE diagnostic."""


class ArgumentError(Error, TypeError):
    """A missing, unknown, mistyped or misshaped argument."""


class LaunchError(Error):
    """A launch failed at run time (out of bounds, assert, adstack overflow, device failure).
    Every array holds what it held before the launch."""


_STATUS_ERRORS = {L.ERR_COMPILE: CompileError, L.ERR_ARG: ArgumentError, L.ERR_RUNTIME: LaunchError,
                  L.ERR_CANCELLED: LaunchError}


def _raise(status, ctx, launch=False):
    msg = L.errmsg(ctx.h if ctx is not None else None)
    msg = msg.decode("utf-8", "replace") if msg else "dvm: error %d" % status
    cls = _STATUS_ERRORS.get(status, Error)
    if launch and status == L.ERR_BACKEND:
        cls = LaunchError
    raise cls(msg)


# ---------------------------------------------------------------- dtypes
_NP = {"f32": np.dtype(np.float32), "i32": np.dtype(np.int32)}
_CODE = {"f32": L.F32, "i32": L.I32}
_NAME = {L.F32: "f32", L.I32: "i32"}


def _dtype_name(dtype):
    """'f32' or 'i32' from 'f32', 'float32', np.float32, np.dtype(...), torch-like names."""
    if isinstance(dtype, str) and dtype in _NP:
        return dtype
    try:
        d = np.dtype(dtype)
    except TypeError:
        d = None
    for k, v in _NP.items():
        if d == v:
            return k
    raise ValueError("dvm: dtype %r is not supported: arrays are 'f32' (float32) or 'i32' (int32)" % (dtype,))


# ---------------------------------------------------------------- contexts and devices
class _Context:
    """One backend device; lives as long as the process (arrays and modules refer to it)."""

    def __init__(self, name, backend, index):
        h = ctypes.c_void_p()
        opts = L.ContextOpts(backend.encode(), index, 0)
        st = L.context_create(ctypes.byref(opts), ctypes.byref(h))
        if st != L.OK:
            msg = L.errmsg(h) if h.value else b""
            L.context_destroy(h)
            raise Error("dvm: device '%s' is not available: %s" % (name, (msg or b"").decode("utf-8", "replace")))
        self.h = h.value
        if backend == "auto":  # named after what the library chose
            backend = L.context_backend(self.h).decode()
            name = "cpu" if backend == "cpu" else "%s:%d" % (backend, index)
        self.name = name
        self.backend = backend
        self.is_cpu = backend == "cpu"
        self.description = L.context_device(self.h).decode("utf-8", "replace")
        self.lock = threading.RLock()
        self.util = None  # the package's own kernels on this device (_util_run), compiled on first use

    def __repr__(self):
        return "<dvm device %s: %s>" % (self.name, self.description)


_contexts = {}
_failed = {}
_default = None
_BACKENDS = ("cuda", "hip", "vulkan")
_MAX_DEVICES = 16


def _parse_device(device):
    if isinstance(device, _Context):
        return device.name, device.backend, 0
    if not isinstance(device, str):
        raise ValueError("dvm: a device is a string such as 'cpu', 'cuda:0' or 'vulkan:0', not %r" % (device,))
    name = device.strip().lower()
    backend, _, idx = name.partition(":")
    if backend not in ("cpu",) + _BACKENDS:
        raise ValueError("dvm: unknown device '%s': devices are 'cpu', 'cuda:N', 'hip:N' and 'vulkan:N'" % device)
    if idx == "":
        idx = "0"
    if not idx.isdigit():
        raise ValueError("dvm: device '%s': the index after ':' must be a number" % device)
    if backend == "cpu":
        if idx != "0":
            raise ValueError("dvm: device '%s': there is one cpu device, 'cpu'" % device)
        return "cpu", "cpu", 0
    return "%s:%d" % (backend, int(idx)), backend, int(idx)


def _context(device=None):
    if device is None:
        return _default_context()
    if isinstance(device, _Context):
        return device
    name, backend, idx = _parse_device(device)
    c = _contexts.get(name)
    if c is None:
        if name in _failed:
            raise Error(_failed[name])
        try:
            c = _Context(name, backend, idx)
        except Error as e:
            _failed[name] = str(e)
            raise
        _contexts[name] = c
    return c


def _default_context():
    global _default
    if _default is None:
        # the library's `auto`: the first of cuda, hip, vulkan, cpu that opens, never a
        # software Vulkan device (lavapipe), so that the default is the one the command takes
        try:
            c = _Context("auto", "auto", 0)
        except Error as e:
            raise Error("dvm: no device is available (see `python -m dvm info`): %s" % e)
        if c.name in _contexts:  # opened before under its name: one context per device
            L.context_destroy(c.h)
            c = _contexts[c.name]
        else:
            _contexts[c.name] = c
        _default = c
    return _default


def devices():
    """The devices that open here, e.g. ['cpu', 'cuda:0', 'vulkan:0']."""
    out = []
    try:
        _context("cpu")
        out.append("cpu")
    except Error:
        pass
    for b in _BACKENDS:
        for i in range(_MAX_DEVICES):
            try:
                _context("%s:%d" % (b, i))
            except Error:
                break
            out.append("%s:%d" % (b, i))
    return out


def set_device(device):
    """Makes `device` the default of dvm.compile, dvm.array, dvm.zeros and of launches whose
    arguments are all host arrays."""
    global _default
    _default = _context(device)


def get_device():
    """The name of the default device."""
    return _default_context().name


# ---------------------------------------------------------------- arrays
def _shape_arg(shape):
    if isinstance(shape, numbers.Integral):
        shape = (shape,)
    shape = tuple(int(s) for s in shape)
    if not 1 <= len(shape) <= 4 or any(s < 0 for s in shape):
        raise ValueError("dvm: an array has 1 to 4 axes of extent >= 0, not shape %s" % (shape,))
    return shape


def _c_shape(shape):
    return (ctypes.c_int64 * len(shape))(*shape)


class Array:
    """An array in a device's memory. On the cpu device its memory is a numpy buffer that
    launches use in place; on a GPU it stays on the device between launches, and copies
    happen only in numpy(), dvm.array() and launches given numpy arrays."""

    __slots__ = ("_h", "_ctx", "shape", "dtype", "requires_grad", "grad", "_host", "_owner", "_destroy",
                 "__weakref__")

    def __init__(self, *a, **k):
        raise TypeError("dvm.Array is made by dvm.array, dvm.zeros or dvm.from_dlpack")

    @classmethod
    def _make(cls, ctx, h, shape, dtype, host=None, owner=None, requires_grad=False):
        self = object.__new__(cls)
        self._h = h
        self._ctx = ctx
        self.shape = shape
        self.dtype = dtype
        self.requires_grad = bool(requires_grad)
        self.grad = None
        self._host = host
        self._owner = owner
        self._destroy = L.array_destroy  # kept: module globals may be gone at interpreter exit
        return self

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            self._destroy(h)

    @property
    def device(self):
        return self._ctx.name

    @property
    def size(self):
        n = 1
        for s in self.shape:
            n *= s
        return n

    @property
    def ndim(self):
        return len(self.shape)

    def __len__(self):
        return self.shape[0]

    def numpy(self):
        """A copy of the array's contents as a numpy array."""
        if self._host is not None:
            return self._host.copy()
        out = np.empty(self.shape, _NP[self.dtype])
        if out.size:
            st = L.array_read(self._ctx.h, self._h, out.ctypes.data, out.size)
            if st != L.OK:
                _raise(st, self._ctx)
        return out

    def __array__(self, dtype=None, copy=None):
        a = self.numpy()
        return a if dtype is None else a.astype(dtype)

    def _write(self, src):
        """Copies a numpy array of the same size and dtype into this array."""
        src = np.ascontiguousarray(src, dtype=_NP[self.dtype])
        if src.size != self.size:
            raise ValueError("dvm: cannot write %d elements into an array of shape %s" % (src.size, self.shape))
        if self._host is not None:
            self._host[...] = src.reshape(self.shape)
            return
        if src.size:
            st = L.array_write(self._ctx.h, self._h, src.ctypes.data, src.size)
            if st != L.OK:
                _raise(st, self._ctx)

    def assign(self, values):
        """Copies values (a numpy array, a dvm.Array or a number) into this array. A number, or
        an array of the same shape and dtype on the same device, is copied on the device."""
        if self._host is None and self.size:
            if isinstance(values, Array) and values._ctx is self._ctx and values.shape == self.shape \
                    and values.dtype == self.dtype:
                if values is not self:
                    _util_run(self._ctx, "copy", self.dtype, self.ndim, a=self, b=values)
                return self
            if isinstance(values, numbers.Integral if self.dtype == "i32" else numbers.Real) and \
                    not isinstance(values, (bool, np.bool_)):
                _util_run(self._ctx, "fill", self.dtype, self.ndim, a=self, v=values)
                return self
        if self._host is not None:  # the cpu device: in place, numpy's conversions
            if isinstance(values, Array) and values._host is not None and values.shape == self.shape:
                np.copyto(self._host, values._host, casting="unsafe")
                return self
            if np.isscalar(values):
                self._host.fill(values)
                return self
        if isinstance(values, Array):
            values = values.numpy()
        if np.isscalar(values):
            values = np.full(self.shape, values, _NP[self.dtype])
        self._write(np.asarray(values))
        return self

    def _add_(self, other):
        """self += other, elementwise (f32, same shape, same device), without a host copy
        where the arrays live on a device."""
        if self._host is not None and other._host is not None:
            self._host += other._host
        elif self.size:
            _util_run(self._ctx, "acc", self.dtype, self.ndim, a=self, b=other)
        return self

    def zero_(self):
        return self.assign(0)

    def to(self, device):
        """A copy on another device (self if already there)."""
        ctx = _context(device)
        if ctx is self._ctx:
            return self
        return array(self.numpy(), device=ctx, requires_grad=self.requires_grad)

    def __repr__(self):
        return "dvm.Array(%s, dtype=%s, device=%s%s)" % (
            np.array2string(self.numpy(), threshold=20), self.dtype, self.device,
            ", requires_grad=True" if self.requires_grad else "")

    # DLPack (dvm/_dlpack.py)
    def __dlpack__(self, *, stream=None, max_version=None, dl_device=None, copy=None):
        from . import _dlpack
        return _dlpack.export(self, stream=stream, max_version=max_version, dl_device=dl_device, copy=copy)

    def __dlpack_device__(self):
        from . import _dlpack
        return _dlpack.device_of(self)


def _new_array(ctx, shape, dtype, requires_grad=False):
    """A zero-filled array. On the cpu it is a numpy buffer wrapped in place."""
    if ctx.is_cpu and all(s > 0 for s in shape):
        host = np.zeros(shape, _NP[dtype])
        return _wrap_host(ctx, host, dtype, owner=None, requires_grad=requires_grad)
    h = ctypes.c_void_p()
    st = L.array_create(ctx.h, _CODE[dtype], len(shape), _c_shape(shape), ctypes.byref(h))
    if st != L.OK:
        _raise(st, ctx)
    return Array._make(ctx, h.value, shape, dtype, requires_grad=requires_grad)


def _wrap_host(ctx, host, dtype, owner=None, requires_grad=False, ptr=None):
    """An Array over a C-contiguous, writeable, 4-byte aligned numpy array (cpu only)."""
    h = ctypes.c_void_p()
    shape = tuple(host.shape)
    st = L.array_wrap_host(ctx.h, _CODE[dtype], len(shape), _c_shape(shape),
                           ptr if ptr is not None else host.ctypes.data, ctypes.byref(h))
    if st != L.OK:
        _raise(st, ctx)
    return Array._make(ctx, h.value, shape, dtype, host=host, owner=owner, requires_grad=requires_grad)


def _wrappable(a):
    return a.flags.c_contiguous and a.flags.writeable and a.size > 0 and a.ctypes.data % 4 == 0


def zeros(shape, dtype="f32", device=None, requires_grad=False):
    """A zero-filled array of `shape` on `device` (None: the default device)."""
    return _new_array(_context(device), _shape_arg(shape), _dtype_name(dtype), requires_grad)


def array(data, dtype=None, device=None, requires_grad=False):
    """A copy of `data` (a numpy array, a sequence, a dvm.Array or a DLPack object) on
    `device`. dtype None keeps float32/int32 data as it is, turns other floats into f32 and
    other integers into i32."""
    if isinstance(data, Array):
        data = data.numpy()
    elif not isinstance(data, np.ndarray) and hasattr(data, "__dlpack__"):
        data = from_dlpack(data).numpy()
    a = np.asarray(data)
    if dtype is None:
        if a.dtype in (_NP["f32"], _NP["i32"]):
            dtype = _dtype_name(a.dtype)
        elif a.dtype.kind == "f":
            dtype = "f32"
        elif a.dtype.kind in "iub":
            dtype = "i32"
        else:
            raise ValueError("dvm.array: cannot store %s data: arrays are f32 or i32" % a.dtype)
    dtype = _dtype_name(dtype)
    if a.ndim == 0:
        a = a.reshape(1)
    out = _new_array(_context(device), _shape_arg(a.shape), dtype, requires_grad)
    out._write(a.astype(_NP[dtype], copy=False))
    return out


def from_dlpack(obj, device=None):
    """An Array over the memory of a DLPack object (torch, cupy, jax, numpy), zero-copy where
    the device allows it (cpu memory; cuda memory on a cuda device). See docs/python.md."""
    from . import _dlpack
    return _dlpack.import_(obj, device)


# ---------------------------------------------------------------- modules and kernels
def _str_result(ptr):
    return L.take_string(ptr)


class Module:
    """A compiled program: its kernels are attributes (mod.damp) and items (mod['damp'])."""

    def __init__(self, *a, **k):
        raise TypeError("dvm.Module is made by dvm.compile or dvm.load")

    @classmethod
    def _make(cls, ctx, h, name, line_map=None):
        self = object.__new__(cls)
        self._handles = {ctx: h}
        self._ctx0 = ctx
        self._blob = None
        self.name = name
        self._kstates = {}
        self._kernels = {}
        self._line_map = line_map
        self._mdestroy = L.module_destroy
        self._adestroy = L.args_destroy
        n = L.module_kernel_count(h)
        self.kernels = [L.kernel_name(L.module_kernel(h, i)).decode() for i in range(n)]
        return self

    def __del__(self):
        ks = getattr(self, "_kstates", None)
        if ks:
            for s in ks.values():
                for a in s.args:
                    if a:
                        self._adestroy(a)
            ks.clear()
        hs = getattr(self, "_handles", None)
        if hs:
            for h in hs.values():
                self._mdestroy(h)
            hs.clear()

    def _handle(self, ctx):
        h = self._handles.get(ctx)
        if h is None:
            blob = self.blob()
            out = ctypes.c_void_p()
            st = L.load_blob(ctx.h, blob, len(blob), self.name.encode(), ctypes.byref(out))
            if st != L.OK:
                _raise(st, ctx)
            h = self._handles[ctx] = out.value
        return h

    def blob(self):
        """The module as a blob (bytes): what save() writes."""
        if self._blob is None:
            ctx = self._ctx0
            p = ctypes.c_void_p()
            n = ctypes.c_size_t()
            st = L.module_save(ctx.h, self._handles[ctx], ctypes.byref(p), ctypes.byref(n))
            if st != L.OK:
                _raise(st, ctx)
            try:
                self._blob = ctypes.string_at(p.value, n.value)
            finally:
                L.free(p)
        return self._blob

    def save(self, path):
        """Writes the module as a blob (.dvb), which runs on every backend."""
        data = self.blob()
        with open(os.fspath(path), "wb") as f:
            f.write(data)

    def disasm(self):
        ctx = self._ctx0
        p = ctypes.c_void_p()
        st = L.module_disasm(ctx.h, self._handles[ctx], ctypes.byref(p))
        if st != L.OK:
            _raise(st, ctx)
        return _str_result(p.value)

    def __getitem__(self, name):
        k = self._kernels.get(name)
        if k is None:
            if name not in self.kernels:
                raise KeyError("dvm: module '%s' has no kernel '%s' (kernels: %s)" % (
                    self.name, name, ", ".join(self.kernels) or "none"))
            k = self._kernels[name] = Kernel(self, name)
        return k

    def __getattr__(self, name):
        if name.startswith("_"):
            raise AttributeError(name)
        try:
            return self[name]
        except KeyError as e:
            raise AttributeError(e.args[0]) from None

    def __dir__(self):
        return list(super().__dir__()) + list(self.kernels)

    def __repr__(self):
        return "<dvm.Module %s: %s>" % (self.name, ", ".join(self.kernels))


def compile(source, filename="<string>", device=None):
    """Compiles .dvk source (a str) into a Module; errors raise CompileError."""
    if isinstance(source, bytes):
        source = source.decode("utf-8")
    if not isinstance(source, str):
        raise TypeError("dvm.compile: source must be a str of .dvk source")
    ctx = _context(device)
    data = source.encode("utf-8")
    out = ctypes.c_void_p()
    st = L.compile(ctx.h, data, len(data), os.fspath(filename).encode(), ctypes.byref(out))
    if st != L.OK:
        _raise(st, ctx)
    return Module._make(ctx, out.value, os.path.basename(os.fspath(filename)))


def load(path, device=None):
    """Loads a .dvk source file or a .dvb blob (told by its contents)."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise FileNotFoundError("dvm.load: %s: no such file" % path)
    ctx = _context(device)
    out = ctypes.c_void_p()
    st = L.load_file(ctx.h, path.encode(), ctypes.byref(out))
    if st != L.OK:
        _raise(st, ctx)
    return Module._make(ctx, out.value, os.path.basename(path))


class _Param:
    __slots__ = ("name", "bname", "index", "is_array", "dtype", "rank", "dims", "decl", "npdtype")

    def __init__(self, kh, i):
        info = L.ParamInfo()
        L.kernel_param(kh, i, ctypes.byref(info))
        self.name = info.name.decode()
        self.bname = info.name
        self.index = i
        self.is_array = bool(info.is_array)
        self.dtype = _NAME[info.dtype]
        self.npdtype = _NP[self.dtype]
        self.rank = info.rank if self.is_array else 0
        self.dims = [(info.dims[a].decode() if info.dims[a] else int(info.literal_dims[a])) for a in range(self.rank)]
        self.decl = self.dtype + ("[%s]" % ", ".join(str(d) for d in self.dims) if self.is_array else "")


class _KState:
    """A kernel on one context: its handle, parameters, and one reusable dvm_args per mode
    with what each parameter was last bound to (rebinding is skipped for the same object)."""

    def __init__(self, ctx, kh):
        self.ctx = ctx
        self.k = kh
        self.params = [_Param(kh, i) for i in range(L.kernel_param_count(kh))]
        self.by_name = {p.name: p for p in self.params}
        self.names = frozenset(self.by_name)
        self.args = [None, None, None]
        self.bound = [[None] * len(self.params) for _ in range(3)]

    def args_for(self, mode):
        a = self.args[mode]
        if a is None:
            out = ctypes.c_void_p()
            st = L.args_create(self.ctx.h, self.k, ctypes.byref(out))
            if st != L.OK:
                _raise(st, self.ctx)
            a = self.args[mode] = out.value
        return a


_tls = threading.local()


def _util_source():
    """The package's own kernels (fill, copy, accumulate) for arrays of rank 1 to 4: what
    Array.assign, zero_ and the tape's gradient sums run on the array's device, where a round
    trip through numpy would copy the whole array to the host and back."""
    out = []
    for t in ("f32", "i32"):
        for r in range(1, 5):
            dims = ", ".join("d%d" % k for k in range(r))
            par = ["i0", "i1", "i2"][:min(r, 3)]
            head = ("for i0 in range(d0):" if r == 1 else
                    "for %s in ndrange(%s):" % (", ".join(par), ", ".join("d%d" % k for k in range(len(par)))))
            idx = ", ".join("i%d" % k for k in range(r))
            inner, ind = "", "        "
            if r == 4:
                inner, ind = "        for i3 in range(d3):\n", "            "
            ops = [("fill", "v: %s" % t, "a[%s] = v" % idx), ("copy", "b: %s[%s]" % (t, dims), "a[%s] = b[%s]" % (idx, idx))]
            if t == "f32":
                ops.append(("acc", "b: %s[%s]" % (t, dims), "a[%s] = a[%s] + b[%s]" % (idx, idx, idx)))
            for name, p2, body in ops:
                out.append("kernel %s_%s_%d(a: %s[%s], %s):\n    %s\n%s%s%s\n" % (
                    name, t, r, t, dims, p2, head, inner, ind, body))
    return "\n".join(out)


def _util_run(ctx, op, dtype, rank, **kw):
    """Runs the package's kernel `op` on ctx for arrays of dtype and rank, never recorded on
    a tape (it is not part of the user's program)."""
    mod = ctx.util
    if mod is None:
        mod = ctx.util = compile(_util_source(), "<dvm package>", device=ctx)
    k = mod["%s_%s_%d" % (op, dtype, rank)]
    ks = k._state(ctx)
    with ctx.lock:
        args, post, _ = k._bind(ks, L.FORWARD, kw, None, False)
        st = L.launch(ctx.h, ks.k, args, _F32_OPTS[0], None)
        if st != L.OK:
            _raise(st, ctx, launch=True)
        for f in post:
            f()


def _current_tape():
    return getattr(_tls, "tape", None)


def _describe(v):
    if isinstance(v, np.ndarray):
        return "a %s array of shape %s" % (v.dtype, tuple(v.shape))
    if isinstance(v, Array):
        return "a %s array of shape %s on %s" % (v.dtype, v.shape, v.device)
    return "%s %r" % (type(v).__name__, v) if isinstance(v, numbers.Number) else "a %s" % type(v).__name__


_F32_OPTS = [L.LaunchOpts(m, 0, 0) for m in (L.FORWARD, L.ADJOINT, L.TANGENT)]


class Kernel:
    """A kernel of a module. Call it with one keyword argument per parameter."""

    def __init__(self, module, name):
        self.module = module
        self.name = name
        self._last = None  # (ctx, kstate) of the last launch: the common case skips a lookup
        self.last_stats = None

    def __repr__(self):
        ks = self._state(self.module._ctx0)
        return "<dvm.Kernel %s(%s)>" % (self.name, ", ".join("%s: %s" % (p.name, p.decl) for p in ks.params))

    @property
    def params(self):
        """[(name, declaration)], e.g. [('x', 'f32[n]'), ('rate', 'f32')]."""
        return [(p.name, p.decl) for p in self._state(self.module._ctx0).params]

    def _state(self, ctx):
        last = self._last
        if last is not None and last[0] is ctx:
            return last[1]
        key = (self.name, ctx)
        ks = self.module._kstates.get(key)
        if ks is None:
            mh = self.module._handle(ctx)
            out = ctypes.c_void_p()
            st = L.kernel_find(ctx.h, mh, self.name.encode(), ctypes.byref(out))
            if st != L.OK:
                _raise(st, ctx)
            ks = self.module._kstates[key] = _KState(ctx, out.value)
        self._last = (ctx, ks)
        return ks

    # -- which device a launch runs on
    def _launch_ctx(self, kw, device):
        if device is not None:
            return _context(device)
        ctx = None
        for v in kw.values():
            c = None
            if isinstance(v, Array):
                c = v._ctx
            elif not isinstance(v, (np.ndarray, numbers.Number)) and hasattr(v, "__dlpack_device__"):
                from . import _dlpack
                c = _context(_dlpack.device_name(v.__dlpack_device__()))
            if c is not None:
                if ctx is not None and c is not ctx:
                    raise ArgumentError("kernel '%s': arguments are on two devices, %s and %s" % (
                        self.name, ctx.name, c.name))
                ctx = c
        return ctx if ctx is not None else _default_context()

    def _check_names(self, ks, kw):
        if len(kw) != len(ks.params) or any(k not in ks.by_name for k in kw):
            for k in kw:
                if k not in ks.by_name:
                    raise ArgumentError("kernel '%s' has no parameter '%s' (parameters: %s)" % (
                        self.name, k, ", ".join("%s: %s" % (p.name, p.decl) for p in ks.params)))
            for p in ks.params:
                if p.name not in kw:
                    raise ArgumentError("kernel '%s': missing argument '%s' (%s)" % (self.name, p.name, p.decl))

    def _array_arg(self, ctx, p, v, tape, role="", reuse=None):
        """(Array to bind, callable to run after a successful launch or None, reusable).
        reuse: the device copy a numpy argument got in the last launch, used again for one of
        the same shape (a GPU allocation less per launch)."""
        label = p.name + role
        if isinstance(v, Array):
            if v._ctx is not ctx:
                raise ArgumentError("kernel '%s': argument '%s' is on %s, the launch runs on %s (use .to(%r))" % (
                    self.name, label, v.device, ctx.name, ctx.name))
            self._check_array(p, v.dtype, v.shape, v, label)
            return v, None, True
        if not isinstance(v, np.ndarray):
            if hasattr(v, "__dlpack__") and not isinstance(v, (str, bytes)):
                if hasattr(v, "detach") and callable(v.detach):
                    v = v.detach()  # torch refuses to export tensors that require grad
                from . import _dlpack
                a = from_dlpack(v, ctx)
                self._check_array(p, a.dtype, a.shape, a, label)
                if _dlpack.is_copy(a):
                    raise ArgumentError(
                        "kernel '%s': argument '%s': %s memory cannot be used in place by this libdvm (it lacks "
                        "dvm_array_wrap_device), and a copy would not see the kernel's writes; pass "
                        "dvm.from_dlpack(...) or dvm.array(...) and copy back" % (self.name, label, a.device))
                return a, None, False
            if isinstance(v, (list, tuple)):
                raise ArgumentError("kernel '%s': argument '%s' (%s) is a %s: pass a numpy array, e.g. "
                                    "np.array(..., dtype=np.%s)" % (self.name, label, p.decl, type(v).__name__,
                                                                   p.npdtype.name))
            raise ArgumentError("kernel '%s': argument '%s' is declared %s, given %s" % (
                self.name, label, p.decl, _describe(v)))
        self._check_array(p, None, v.shape, v, label)
        if tape is not None:
            return tape._host_array(ctx, v, p.dtype)
        if ctx.is_cpu:
            if _wrappable(v):
                return _wrap_host(ctx, v, p.dtype, owner=v), None, True
            tmp = np.array(v, order="C")  # a copy: non-contiguous, read-only or empty
            if tmp.size == 0:
                return _new_array(ctx, tmp.shape, p.dtype), None, False
            arr = _wrap_host(ctx, tmp, p.dtype)
            if v.flags.writeable:
                def back(v=v, tmp=tmp):
                    v[...] = tmp
                return arr, back, False
            return arr, None, False
        arr = reuse if reuse is not None and reuse.shape == v.shape and reuse.dtype == p.dtype else None
        if arr is None:
            arr = _new_array(ctx, tuple(v.shape), p.dtype)
        if v.size:
            arr._write(v)
        if v.flags.writeable and v.size:
            def back(v=v, arr=arr):
                v[...] = arr.numpy()
            return arr, back, False
        return arr, None, False

    def _check_array(self, p, dtype, shape, v, label):
        if not p.is_array:
            raise ArgumentError("kernel '%s': argument '%s' is declared %s (a scalar), given %s" % (
                self.name, label, p.decl, _describe(v)))
        if dtype is None:
            if v.dtype != p.npdtype:
                hint = " (convert it with .astype(np.%s))" % p.npdtype.name
                raise ArgumentError("kernel '%s': argument '%s' is declared %s, given %s%s" % (
                    self.name, label, p.decl, _describe(v), hint))
        elif dtype != p.dtype:
            raise ArgumentError("kernel '%s': argument '%s' is declared %s, given %s" % (
                self.name, label, p.decl, _describe(v)))
        if len(shape) != p.rank or any(isinstance(d, int) and d != s for d, s in zip(p.dims, shape)):
            raise ArgumentError("kernel '%s': argument '%s' is declared %s, given %s" % (
                self.name, label, p.decl, _describe(v)))

    def _scalar(self, ks, args, p, v):
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Number) or isinstance(v, complex):
            if isinstance(v, np.ndarray) and v.ndim == 0 and v.dtype.kind in "fi":
                v = v.item()
            else:
                raise ArgumentError("kernel '%s': argument '%s' is declared %s, given %s" % (
                    self.name, p.name, p.decl, _describe(v)))
        if p.dtype == "f32":
            st = L.args_f32(ks.ctx.h, args, p.bname, float(v))
        else:
            if not isinstance(v, numbers.Integral):
                raise ArgumentError("kernel '%s': argument '%s' is declared i32, given %s" % (
                    self.name, p.name, _describe(v)))
            if not -2 ** 31 <= int(v) < 2 ** 31:
                raise ArgumentError("kernel '%s': argument '%s': %d is outside the i32 range" % (
                    self.name, p.name, int(v)))
            st = L.args_i32(ks.ctx.h, args, p.bname, int(v))
        if st != L.OK:
            _raise(st, ks.ctx)

    def _bind(self, ks, mode, kw, tape, cache):
        """Binds every parameter of args[mode]; returns (args, post-launch callables, arrays)."""
        ctx = ks.ctx
        args = ks.args[mode] or ks.args_for(mode)
        bound = ks.bound[mode]
        post = []
        arrays = []
        for p in ks.params:
            v = kw[p.name]
            b = bound[p.index]
            if cache and b is not None and b[0] is v and b[2]:
                if b[1] is not None:
                    arrays.append((p, b[1]))
                continue
            if p.is_array:
                reuse = b[1] if b is not None and len(b) > 3 and cache else None
                arr, back, reusable = self._array_arg(ctx, p, v, tape, reuse=reuse)
                st = L.args_array(ctx.h, args, p.bname, arr._h)
                if st != L.OK:
                    bound[p.index] = None
                    _raise(st, ctx)
                if back is not None and not ctx.is_cpu and arr is not v:
                    bound[p.index] = (v, arr, False, "device copy")  # ours: reusable for the next numpy array
                else:
                    bound[p.index] = (v, arr, reusable and cache)
                arrays.append((p, arr))
                if back is not None:
                    post.append(back)
            else:
                self._scalar(ks, args, p, v)
                bound[p.index] = (v, None, isinstance(v, (int, float)) and cache)
        return args, post, arrays

    def __call__(self, **kw):
        """Launches the kernel: one keyword argument per parameter. Arrays the kernel writes
        are updated in place (numpy arrays included); a failed launch raises LaunchError and
        changes nothing."""
        # the common case first, kept short: every launch pays for it (bench/python_bench.py)
        ctx = None
        for v in kw.values():
            if type(v) is Array:
                if ctx is None:
                    ctx = v._ctx
                elif v._ctx is not ctx:
                    ctx = self._launch_ctx(kw, None)  # raises: two devices
            elif not isinstance(v, (np.ndarray, float, int)):
                ctx = self._launch_ctx(kw, None)
                break
        if ctx is None:
            ctx = _default if _default is not None else _default_context()
        last = self._last
        ks = last[1] if last is not None and last[0] is ctx else self._state(ctx)
        if kw.keys() != ks.names:
            self._check_names(ks, kw)
        tape = getattr(_tls, "tape", None)
        with ctx.lock:
            args, post, arrays = self._bind(ks, L.FORWARD, kw, tape, tape is None)
            if tape is not None:
                tape._record(self, ks, args, arrays)
            else:
                st = L.launch(ctx.h, ks.k, args, _F32_OPTS[0], None)
                if st != L.OK:
                    _raise(st, ctx, launch=True)
            for f in post:
                f()

    def launch(self, args=None, device=None, ad_stack_size=0, default_ad_stack_size=0, timeout=None, **kw):
        """Like calling the kernel, with launch options: `args` a dict of arguments (or
        keywords), `device` to choose the device, the adstack overrides of dvm_launch_opts,
        `timeout` in seconds (a launch that runs longer stops at its next cancel point and
        raises LaunchError, writing nothing). Returns the launch's statistics as a dict."""
        kw = dict(args or {}, **kw)
        if timeout is not None and not (isinstance(timeout, (int, float)) and timeout > 0):
            raise ArgumentError("kernel '%s': timeout must be a positive number of seconds, not %r" % (self.name, timeout))
        return self._launch_mode(L.FORWARD, kw, None, device, ad_stack_size, default_ad_stack_size,
                                 timeout or 0)[1]

    def _launch_mode(self, mode, kw, extra, device, ad_stack_size=0, default_ad_stack_size=0, timeout=0):
        """A launch in `mode` with gradient (ADJOINT) or tangent (TANGENT) arrays from
        extra = {name: seed}: every f32 array parameter gets one; returns them as numpy."""
        ctx = self._launch_ctx(kw, device)
        ks = self._state(ctx)
        self._check_names(ks, kw)
        if _current_tape() is not None and mode != L.FORWARD:
            raise Error("kernel '%s': grad and jvp are single launches and cannot be recorded on a tape" % self.name)
        with ctx.lock:
            args, post, arrays = self._bind(ks, mode, kw, None, False)
            duals = {}
            if mode != L.FORWARD:
                extra = dict(extra or {})
                role = ".grad" if mode == L.ADJOINT else ".dual"
                bindf = L.args_grad if mode == L.ADJOINT else L.args_dual
                for p, arr in arrays:
                    if p.dtype != "f32":
                        continue
                    d = _new_array(ctx, arr.shape, "f32")
                    seed = extra.pop(p.name, None)
                    if seed is not None:
                        _write_seed(d, seed, self.name, p.name + role)
                    st = bindf(ctx.h, args, p.bname, d._h)
                    if st != L.OK:
                        _raise(st, ctx)
                    duals[p.name] = d
                for name in extra:
                    what = "seeds" if mode == L.ADJOINT else "tangents"
                    if name not in ks.by_name:
                        raise ArgumentError("kernel '%s': %s names '%s', which is not a parameter" % (
                            self.name, what, name))
                    raise ArgumentError("kernel '%s': %s names '%s' (%s): only f32 array parameters have one" % (
                        self.name, what, name, ks.by_name[name].decl))
            opts = L.LaunchOpts(mode, int(ad_stack_size), int(default_ad_stack_size), float(timeout) * 1e3)
            stats = L.LaunchStats()
            st = L.launch(ctx.h, ks.k, args, opts, ctypes.byref(stats))
            if st != L.OK:
                _raise(st, ctx, launch=True)
            for f in post:
                f()
            self.last_stats = {k: getattr(stats, k) for k, _ in L.LaunchStats._fields_}
            return {k: d.numpy() for k, d in duals.items()}, self.last_stats

    def grad(self, seeds=None, **kw):
        """Reverse mode: runs the kernel (its outputs are written as by a launch), then its
        adjoint seeded by `seeds` ({name: gradient of that output}). Returns {name: dL/dname}
        for every f32 array parameter, as numpy arrays."""
        return self._launch_mode(L.ADJOINT, kw, seeds, None)[0]

    def jvp(self, tangents=None, **kw):
        """Forward mode: runs the kernel's tangent along `tangents` ({name: direction}).
        Returns {name: directional derivative} for every f32 array parameter."""
        return self._launch_mode(L.TANGENT, kw, tangents, None)[0]


def _write_seed(d, seed, kname, label):
    # a number or an f32 dvm.Array of the same shape on d's device: written on the device
    if isinstance(seed, Array) and seed._ctx is d._ctx and seed.shape == d.shape and seed.dtype == "f32":
        d.assign(seed)
        return
    if isinstance(seed, numbers.Real) and not isinstance(seed, (bool, np.bool_)):
        d.assign(float(seed))
        return
    if isinstance(seed, Array):
        seed = seed.numpy()
    if isinstance(seed, numbers.Number):
        seed = np.full(d.shape, seed, np.float32)
    elif not isinstance(seed, np.ndarray) and hasattr(seed, "__dlpack__"):
        seed = from_dlpack(seed).numpy()
    seed = np.asarray(seed)
    if seed.dtype != np.float32 or tuple(seed.shape) != d.shape:
        raise ArgumentError("kernel '%s': '%s' must be a float32 array of shape %s, given %s" % (
            kname, label, d.shape, _describe(seed)))
    d._write(seed)

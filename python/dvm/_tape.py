"""dvm.Tape: gradients through a sequence of launches, on the C tape (dvm_tape_*)."""
import ctypes

import numpy as np

from . import _lib as L
from ._core import (Array, ArgumentError, Error, _new_array, _raise, _tls, _wrap_host, _wrappable, _write_seed)


class Tape:
    """Records the launches made inside `with tape:` (any kernels of any modules on one
    device); backward() then gives the gradient of every recorded f32 array that has
    requires_grad with respect to its value before the first recorded launch, exactly,
    also through in-place updates.

    memory_budget: 0 keeps a copy of every array a launch overwrites; > 0 keeps at most that
    many bytes and recomputes launches between checkpoints during backward (same gradients)."""

    def __init__(self, memory_budget=0):
        if int(memory_budget) < 0:
            raise ValueError("dvm.Tape: memory_budget must be >= 0 bytes, not %r" % (memory_budget,))
        self.memory_budget = int(memory_budget)
        self._h = None
        self._ctx = None
        self._arrays = {}   # id(Array) -> Array: every array a recorded launch bound
        self._host = {}     # id(numpy array) -> (numpy array, Array): host arrays given to launches
        self._keep = []     # modules whose kernels the C tape refers to
        self._outer = []
        self.stats = None
        self._destroy = L.tape_destroy

    def __del__(self):
        h = getattr(self, "_h", None)
        if h:
            self._h = None
            self._destroy(h)

    def __enter__(self):
        self._outer.append(getattr(_tls, "tape", None))
        _tls.tape = self
        return self

    def __exit__(self, *exc):
        _tls.tape = self._outer.pop()
        return False

    def __len__(self):
        return L.tape_count(self._h) if self._h else 0

    @property
    def device(self):
        return self._ctx.name if self._ctx else None

    def _host_array(self, ctx, v, dtype):
        """The one Array that stands for numpy array v in every launch of this tape."""
        e = self._host.get(id(v))
        if e is not None and e[0] is v:
            arr = e[1]
        else:
            if ctx.is_cpu and _wrappable(v):
                arr = _wrap_host(ctx, v, dtype, owner=v)
            elif ctx.is_cpu:
                raise ArgumentError("dvm.Tape: a recorded numpy array must be C-contiguous, writeable and "
                                    "non-empty on the cpu (it is used in place); use dvm.array(...)")
            else:
                arr = _new_array(ctx, tuple(v.shape), dtype)
                arr._write(v)
            self._host[id(v)] = (v, arr)
        if ctx.is_cpu:
            return arr, None, False

        def back(v=v, arr=arr):
            if v.flags.writeable:
                v[...] = arr.numpy()
        return arr, back, False

    def _record(self, kernel, ks, args, arrays):
        ctx = ks.ctx
        if self._h is None:
            out = ctypes.c_void_p()
            st = L.tape_create(ctx.h, self.memory_budget, ctypes.byref(out))
            if st != L.OK:
                _raise(st, ctx)
            self._h = out.value
            self._ctx = ctx
        elif ctx is not self._ctx:
            raise Error("dvm.Tape: kernel '%s' runs on %s, but the tape records launches on %s" % (
                kernel.name, ctx.name, self._ctx.name))
        st = L.tape_launch(self._h, ks.k, args)
        if st != L.OK:
            _raise(st, ctx, launch=True)
        for _, a in arrays:
            self._arrays[id(a)] = a
        if not self._keep or self._keep[-1] is not kernel.module:
            if all(m is not kernel.module for m in self._keep):
                self._keep.append(kernel.module)

    def _find(self, key):
        """The recorded Array for a dvm.Array or a numpy array given to recorded launches."""
        if isinstance(key, Array):
            if id(key) in self._arrays:
                return key
        elif isinstance(key, np.ndarray):
            e = self._host.get(id(key))
            if e is not None and e[0] is key:
                return e[1]
        raise ArgumentError("dvm.Tape: %r was not used by a recorded launch" % (key,))

    def backward(self, L_=None, grads=None):
        """backward(L) seeds L.grad with ones; backward(grads={array: seed, ...}) (or a list of
        (array, seed) pairs) with the given seeds. Then every recorded f32 array with requires_grad gets .grad += dL/d(its
        value before the first recorded launch); seeded arrays get .grad = dL/d(their first
        value). The arrays keep their final values. May be called again (after zero())."""
        if self._h is None:
            raise Error("dvm.Tape.backward: nothing was recorded")
        ctx = self._ctx
        seeds = {}
        if L_ is not None:
            a = self._find(L_)
            seeds[id(a)] = (a, 1.0)
        # a dict {array: seed}, or pairs [(array, seed)] (numpy arrays are not hashable)
        pairs = grads.items() if isinstance(grads, dict) else (grads or ())
        for k, v in pairs:
            a = self._find(k)
            seeds[id(a)] = (a, v)
        if not seeds:
            raise ArgumentError("dvm.Tape.backward: give the output, backward(L), or seeds, backward(grads={L: seed})")
        fresh = []
        bound = []
        for a in self._arrays.values():
            if a.dtype != "f32":
                continue
            if id(a) in seeds:
                g = _new_array(ctx, a.shape, "f32")
                _write_seed(g, seeds[id(a)][1], "tape", "seed")
            elif a.requires_grad:
                g = _new_array(ctx, a.shape, "f32")
                fresh.append((a, g))
            else:
                continue
            st = L.tape_grad(self._h, a._h, g._h)
            if st != L.OK:
                _raise(st, ctx)
            bound.append((a, g))
        for a, _ in seeds.values():
            if a.dtype != "f32":
                raise ArgumentError("dvm.Tape.backward: only f32 arrays have gradients, the seeded array is %s" % a.dtype)
        stats = L.TapeStats()
        st = L.tape_backward(self._h, ctypes.byref(stats))
        # unbind: the gradient arrays are ours, and the tape may run backward again
        for a, _ in bound:
            L.tape_grad(self._h, a._h, None)
        if st != L.OK:
            _raise(st, ctx, launch=True)
        self.stats = {k: getattr(stats, k) for k, _ in L.TapeStats._fields_}
        for a, g in bound:
            if id(a) in seeds or a.grad is None:
                a.grad = g
            elif isinstance(a.grad, Array) and a.grad._ctx is g._ctx and a.grad.shape == g.shape and a.grad.dtype == "f32":
                a.grad._add_(g)  # on the device: no copy through the host
            else:
                a.grad.assign(a.grad.numpy() + g.numpy())
        return self

    def gradient(self, array):
        """The .grad of a recorded array, or of a numpy array given to recorded launches."""
        return self._find(array).grad

    def zero(self):
        """Sets the gradient of every recorded array to zero."""
        for a in self._arrays.values():
            if a.grad is not None:
                a.grad.zero_()

    def reset(self):
        """Forgets every recorded launch (the saved copies are freed); arrays keep their values
        and gradients. The tape can record again."""
        if self._h:
            L.tape_reset(self._h)
        self._arrays = {}
        self._host = {}
        self._keep = []

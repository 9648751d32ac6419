"""dvm.torch: dvm kernels as differentiable torch functions (torch.autograd.Function).

    f = dvm.torch.function(mod.damp, outputs=["y"])
    y = f(x=x, steps=steps, y=torch.zeros(1), rate=0.9)   # tensors in, tensors out
    y.sum().backward()                                     # x.grad: through dvm's adjoint

    g = dvm.torch.sequence(run, outputs=1)   # run(*dvm arrays) launches kernels, returns arrays
    out = g(x0, v0)                          # recorded on a dvm.Tape; backward runs it

Tensors move to dvm by DLPack (zero-copy where the device allows) or by a copy; the
kernel runs on the tensors' device. Inputs are never modified: arrays the kernel writes are
copies, and the outputs are new tensors."""
import numpy as np
import torch as _torch

from . import _core
from ._core import Array, array as _array, from_dlpack as _from_dlpack
from ._tape import Tape


def _device_of(t):
    if t.device.type == "cuda":
        hip = getattr(_torch.version, "hip", None)
        return "%s:%d" % ("hip" if hip else "cuda", t.device.index or 0)
    return "cpu"


def _to_dvm(t, device, requires_grad=False):
    """A dvm array holding a copy of tensor t (the kernel may write it)."""
    t = t.detach()
    if t.dtype == _torch.float64 or t.dtype == _torch.float16 or t.dtype == _torch.bfloat16:
        raise _core.ArgumentError("dvm.torch: tensor of dtype %s: dvm arrays are float32 or int32" % t.dtype)
    c = t.clone().contiguous()
    try:
        a = _from_dlpack(c, device)
        a._owner = (a._owner, c)
    except Exception:
        a = _array(c.cpu().numpy(), device=device)
    a.requires_grad = requires_grad
    return a


def _to_torch(a, like):
    """A new tensor with a's contents, on like's device."""
    try:
        return _torch.from_dlpack(a).clone().to(like.device)
    except Exception:
        return _torch.from_numpy(a.numpy()).to(like.device)


class _KernelFn(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, *tensors):
        kernel, names, scalars, outputs, device = spec
        kw = dict(scalars)
        arrays = {}
        for n, t in zip(names, tensors):
            arrays[n] = kw[n] = _to_dvm(t, device)
        kernel(**kw)
        ctx.spec = spec
        ctx.save_for_backward(*tensors)
        return tuple(_to_torch(arrays[o], tensors[names.index(o)]) for o in outputs)

    @staticmethod
    def backward(ctx, *grad_outs):
        kernel, names, scalars, outputs, device = ctx.spec
        tensors = ctx.saved_tensors
        kw = dict(scalars)
        for n, t in zip(names, tensors):
            kw[n] = _to_dvm(t, device)
        seeds = {}
        for o, g in zip(outputs, grad_outs):
            if g is not None:
                seeds[o] = g.detach().to(_torch.float32).cpu().contiguous().numpy()
        grads = kernel.grad(seeds=seeds, **kw)
        res = [None]
        for n, t in zip(names, tensors):
            g = grads.get(n)
            res.append(_torch.from_numpy(g).to(t.device) if g is not None and t.is_floating_point() else None)
        return tuple(res)


def function(kernel, outputs):
    """A torch function of `kernel`'s arguments (keywords: tensors for array parameters,
    numbers for scalars) returning the tensors of the parameters named in `outputs` after a
    launch (one tensor, or a tuple for several). loss.backward() runs the kernel's adjoint:
    gradients reach every float32 tensor argument."""
    outputs = [outputs] if isinstance(outputs, str) else list(outputs)

    def f(**kw):
        names = [k for k, v in kw.items() if isinstance(v, _torch.Tensor)]
        scalars = tuple((k, v) for k, v in kw.items() if not isinstance(v, _torch.Tensor))
        for o in outputs:
            if o not in names:
                raise _core.ArgumentError("dvm.torch: output '%s' must be given as a tensor" % o)
        device = _device_of(kw[names[0]]) if names else None
        out = _KernelFn.apply((kernel, names, scalars, outputs, device), *[kw[n] for n in names])
        return out[0] if len(outputs) == 1 else out
    f.__name__ = kernel.name
    return f


class _SeqFn(_torch.autograd.Function):
    @staticmethod
    def forward(ctx, spec, *tensors):
        run, memory_budget = spec
        device = _device_of(tensors[0]) if tensors else None
        arrays = [_to_dvm(t, device, requires_grad=t.is_floating_point()) for t in tensors]
        tape = Tape(memory_budget=memory_budget)
        with tape:
            outs = run(*arrays)
        single = isinstance(outs, Array)
        outs = [outs] if single else list(outs)
        ctx.tape, ctx.arrays, ctx.outs = tape, arrays, outs
        ctx.devs = [t.device for t in tensors]
        like = tensors[0] if tensors else _torch.zeros(1)
        return tuple(_to_torch(o, like) for o in outs)

    @staticmethod
    def backward(ctx, *grad_outs):
        seeds = {}
        for o, g in zip(ctx.outs, grad_outs):
            if g is not None:
                seeds[o] = g.detach().to(_torch.float32).cpu().contiguous().numpy()
        for a in ctx.arrays:
            a.grad = None
        ctx.tape.backward(grads=seeds)
        res = [None]
        for a, dev in zip(ctx.arrays, ctx.devs):
            res.append(_torch.from_numpy(a.grad.numpy()).to(dev) if a.grad is not None else None)
        return tuple(res)


def sequence(run, memory_budget=0):
    """A torch function of tensors: run(*arrays) gets dvm arrays holding copies of them,
    launches any kernels on them (recorded on a dvm.Tape with memory_budget) and returns the
    output array or a tuple of arrays, which come back as tensors. loss.backward() runs the
    tape backward: gradients reach every float32 input. Backward may run once per call."""
    def f(*tensors):
        outs = _SeqFn.apply((run, memory_budget), *tensors)
        return outs[0] if len(outs) == 1 else outs
    return f

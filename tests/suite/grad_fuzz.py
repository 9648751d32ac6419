#!/usr/bin/env python3
"""grad_fuzz.py --dvm PATH [--backend B] [--count N] [--seed S] [--features LIST] [--keep DIR]:
random differentiable kernels checked through `dvm run`, `dvm grad` and `dvm jvp` against an
independent reference computed in Python over the same program (never against dvm itself).

Each program is generated as one text that is both the .dvk kernel and, executed by Python with
the operators below overloaded, its reference: every f32 value is a dual number whose primal is
rounded to binary32 after each operation (so that branches decide as dvm's f32 code does) and
whose tangent holds the derivative with respect to every element of every f32 array as it was
before the launch (forward mode, one direction per element: the full Jacobian of the launch).
From it:
- forward: every f32 array after `dvm run` (and after `grad` / `jvp`) against the primal;
- reverse: NAME.grad after `dvm grad`, seeded with random NAME.grad for the arrays the kernel
  writes, against seed^T J (an array both read and written gets the gradient with respect to
  its value before the launch, plus its own seed where the launch leaves it unchanged);
- tangent: NAME.dual after `dvm jvp` with random NAME.dual for every f32 array, against J v.
Each program is 'exact' (all agree within a tolerance fit for f32, scaled by the program's
depth), 'refused' (compile, run or grad exits 1 with an error message: first line recorded),
'wrong' (exit 0 but a value disagrees; or a crash) or 'ambiguous' (a value disagrees, but a
comparison in the reference came within a few ulps of flipping, so dvm's f32 arithmetic may
legitimately have taken the other branch: not a failure).

Features (--features a,b,c; default: every feature this dvm compiles):
  loops     dynamic serial loops: `for j in range(a[i])` (i32 array), `range(k)` (i32 scalar)
  while     `while c < LIMIT and v < e:` with a counter guard
  if        if / elif / else on f32 comparisons
  break     break / continue in serial loops, continue in parallel loops
  helper    helper functions `def h(v: f32, w: f32) -> f32:` (some with an if)
  math      sin cos tanh, exp of bounded arguments, sqrt(x*x + c), division by 1 + x*x
  stages    several parallel loops passing data through a scratch array (tmp[i] = ...; later
            out[i] = tmp[(i + 1) % n] * ...)
  accum     an accumulator `acc[0] += ...` read by a later parallel loop (or by a serial
            statement after the loops); with stages / inplace, `tmp[i] += ...`, `u[i] += ...`
  serial    serial top-level statements (`total[0] = 0.0`, `g = tanh(x[0] + s)` read by loops)
  inplace   in-place updates `u[i] = sin(u[i]) * 0.9 + ...`
  recur     a serial recurrence through an array in one iteration: y[i, j] = y[i, j - 1] * ...
  timeloop  `for t in serial(range(T)):` around the parallel loops
  vec       vec3 / mat3 locals: constructors, componentwise arithmetic, @, cross, dot, outer,
            transpose, clamp, components read (.x, [k]) and assigned (.y = ...)
--batch runs the commands through one `dvm batch` process (tests/suite/dvmbatch.py: the device
opened once instead of once per command).
Exit 0 no program wrong, 1 some program wrong, 77 the backend has no device."""
import argparse
import collections
import math
import os
import random
import re
import shutil
import struct
import subprocess
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import npyio  # noqa: E402
from dvmbatch import Dvm  # noqa: E402

ALL_FEATURES = ['loops', 'while', 'if', 'break', 'helper', 'math', 'stages', 'accum', 'serial',
                'inplace', 'recur', 'timeloop', 'vec']
# a comparison in the reference closer than this (relative) to its threshold makes a mismatch
# 'ambiguous': dvm's sin/exp/tanh may differ from Python's correctly rounded ones by an ulp or
# two, and a different summation order of += changes the last bits
AMBIG_GAP = 2e-4

# ---------------------------------------------------------------------------------------------
# The reference: f32 dual numbers. A tangent is a dict {initial element index: derivative}.

F32_MAX = 3.4028234663852886e38


def r32(v):
    if v != v or abs(v) > F32_MAX:
        if v != v:
            return v
        # values beyond the f32 range round to infinity (struct.pack would raise)
        return math.copysign(math.inf, v) if abs(v) >= 3.4028235677973366e38 else math.copysign(F32_MAX, v)
    return struct.unpack('<f', struct.pack('<f', v))[0]


class Ref:
    """Per-run state of the reference: the smallest relative gap of any comparison whose
    operands dvm may compute differently in the last bits (see Dual.x); with all_inexact (GPU
    backends, whose compilers may contract a * b + c), of every comparison."""
    min_gap = math.inf
    all_inexact = False


def _tadd(a, b, ca=1.0, cb=1.0):
    if not a and not b:
        return None
    t = {}
    if a:
        for k, v in a.items():
            t[k] = ca * v
    if b:
        for k, v in b.items():
            t[k] = t.get(k, 0.0) + cb * v
    return t


def _tscale(a, c):
    if not a:
        return None
    return {k: v * c for k, v in a.items()}


def _d(v):
    return v if isinstance(v, Dual) else Dual(r32(float(v)))


class Dual:
    """p: the f32 primal; t: the tangent; x: whether p may differ from dvm's in the last bits
    (it went through a transcendental, or through an accumulator summed in no fixed order):
    + - * / of exact f32 operands round the same way everywhere."""
    __slots__ = ('p', 't', 'x')

    def __init__(self, p, t=None, x=False):
        self.p, self.t, self.x = p, t, x

    def __add__(self, o):
        o = _d(o)
        return Dual(r32(self.p + o.p), _tadd(self.t, o.t), self.x or o.x)

    __radd__ = __add__

    def __sub__(self, o):
        o = _d(o)
        return Dual(r32(self.p - o.p), _tadd(self.t, o.t, 1.0, -1.0), self.x or o.x)

    def __rsub__(self, o):
        return _d(o) - self

    def __mul__(self, o):
        o = _d(o)
        return Dual(r32(self.p * o.p), _tadd(self.t, o.t, o.p, self.p), self.x or o.x)

    __rmul__ = __mul__

    def __truediv__(self, o):
        o = _d(o)
        q = r32(self.p / o.p)
        return Dual(q, _tadd(self.t, o.t, 1.0 / o.p, -q / o.p), self.x or o.x)

    def __rtruediv__(self, o):
        return _d(o) / self

    def __neg__(self):
        return Dual(-self.p, _tscale(self.t, -1.0), self.x)

    def _cmp(self, o):
        o = _d(o)
        if self.x or o.x or Ref.all_inexact:
            gap = abs(self.p - o.p) / (1.0 + abs(self.p) + abs(o.p))
            if gap < Ref.min_gap:
                Ref.min_gap = gap
        return self.p, o.p

    def __lt__(self, o):
        a, b = self._cmp(o)
        return a < b

    def __le__(self, o):
        a, b = self._cmp(o)
        return a <= b

    def __gt__(self, o):
        a, b = self._cmp(o)
        return a > b

    def __ge__(self, o):
        a, b = self._cmp(o)
        return a >= b


def _unary(f, df):
    def g(a):
        a = _d(a)
        return Dual(r32(f(a.p)), _tscale(a.t, df(a.p)), True)
    return g


sin = _unary(math.sin, math.cos)
cos = _unary(math.cos, lambda v: -math.sin(v))
tanh = _unary(math.tanh, lambda v: 1.0 - math.tanh(v) ** 2)
exp = _unary(math.exp, math.exp)
sqrt = _unary(math.sqrt, lambda v: 0.5 / math.sqrt(v))


class Vec:
    """A vec3 of duals, with the kernel's operators (componentwise, scalar broadcast)."""

    def __init__(self, c):
        self.c = [_d(v) for v in c]

    def _zip(self, o, f):
        return Vec([f(a, b) for a, b in zip(self.c, o.c)]) if isinstance(o, Vec) else Vec([f(a, o) for a in self.c])

    def __add__(self, o):
        return self._zip(o, lambda a, b: a + b)

    def __radd__(self, o):
        return Vec([_d(o) + a for a in self.c])

    def __sub__(self, o):
        return self._zip(o, lambda a, b: a - b)

    def __rsub__(self, o):
        return Vec([_d(o) - a for a in self.c])

    def __mul__(self, o):
        return self._zip(o, lambda a, b: a * b)

    def __rmul__(self, o):
        return Vec([_d(o) * a for a in self.c])

    def __truediv__(self, o):
        return self._zip(o, lambda a, b: a / b)

    def __neg__(self):
        return Vec([-a for a in self.c])

    def __getitem__(self, k):
        return self.c[k]

    def __matmul__(self, m):  # row vector times matrix
        return Vec([_dot3(self.c, [m.r[k].c[j] for k in range(3)]) for j in range(3)])

    x = property(lambda self: self.c[0], lambda self, v: self.c.__setitem__(0, _d(v)))
    y = property(lambda self: self.c[1], lambda self, v: self.c.__setitem__(1, _d(v)))
    z = property(lambda self: self.c[2], lambda self, v: self.c.__setitem__(2, _d(v)))


class Mat:
    """A row-major mat3 of duals."""

    def __init__(self, rows):
        self.r = [Vec(r.c if isinstance(r, Vec) else r) for r in rows]

    def __matmul__(self, o):
        if isinstance(o, Vec):
            return Vec([_dot3(r.c, o.c) for r in self.r])
        return Mat([[_dot3(r.c, [o.r[k].c[j] for k in range(3)]) for j in range(3)] for r in self.r])

    def __mul__(self, s):
        return Mat([r * s for r in self.r])


def _dot3(a, b):
    return a[0] * b[0] + a[1] * b[1] + a[2] * b[2]


def vec3(*a):
    return Vec(list(a) * 3 if len(a) == 1 else a)


def mat3(a, b, c):
    return Mat([a, b, c])


def dot(a, b):
    return _dot3(a.c, b.c)


def cross(a, b):
    a, b = a.c, b.c
    return Vec([a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]])


def outer(a, b):
    return Mat([[p * q for q in b.c] for p in a.c])


def transpose(m):
    return Mat([[m.r[k].c[j] for k in range(3)] for j in range(3)])


def _clamp1(v, lo, hi):
    v, lo, hi = _d(v), _d(lo), _d(hi)
    if v < lo:
        return lo
    return hi if v > hi else v


def clamp(v, lo, hi):
    return Vec([_clamp1(a, lo, hi) for a in v.c]) if isinstance(v, Vec) else _clamp1(v, lo, hi)


def f32(v):
    """`f32(j)` on an i32 in the kernel: a constant."""
    return Dual(r32(float(v)))


def serial(r):
    return r


class FArr:
    """An f32 array of duals, indexed like the kernel's (x[i], y[i, j]); bounds checked."""

    def __init__(self, shape, data, accumulated=False):
        self.shape, self.data, self.accumulated = tuple(shape), data, accumulated

    def _flat(self, idx):
        if not isinstance(idx, tuple):
            idx = (idx,)
        f = 0
        for i, n in zip(idx, self.shape):
            if not 0 <= i < n:
                raise IndexError(f'reference: index {idx} out of {self.shape}')
            f = f * n + i
        return f

    def __getitem__(self, idx):
        v = self.data[self._flat(idx)]
        if self.accumulated and not v.x:
            # the parallel iterations add into it in no fixed order
            v = Dual(v.p, v.t, True)
        return v

    def __setitem__(self, idx, v):
        self.data[self._flat(idx)] = _d(v)


class IArr(FArr):
    def __setitem__(self, idx, v):
        raise AssertionError('the generator never writes an i32 array')


# ---------------------------------------------------------------------------------------------
# The generator. Each expression is one text, valid both as .dvk and as Python over Dual; the
# generator tracks a bound on |value| of each expression so that nothing overflows.

CONSTS = ['0.5', '0.9', '0.3', '1.5', '0.25', '2.0', '0.7', '0.1']


class Scope:
    def __init__(self, parent=None):
        self.parent, self.f32 = parent, {}

    def all(self):
        d = dict(self.parent.all()) if self.parent else {}
        d.update(self.f32)
        return d


class Gen:
    def __init__(self, rng, feats):
        self.rng, self.f = rng, feats
        self.names = 0
        self.helpers = []   # (name, bound)
        self.depth = 0      # max nesting reached (for the tolerance)

    def fresh(self, p):
        self.names += 1
        return f'{p}{self.names}'

    def on(self, feat):
        return feat in self.f

    # --- expressions -------------------------------------------------------------------------
    def index1(self, ctx):
        """An i32 index into an axis of extent n, always in bounds."""
        rng = self.rng
        ch = ['i', 'i', '(i + 1) % n', 'n - 1 - i', '0']
        for j in ctx['ivars']:
            ch += [f'{j} % n', f'min({j}, n - 1)']
        return rng.choice(ch)

    def index2(self, ctx):
        rng = self.rng
        ch = ['0', 'm - 1', '(i + 1) % m']
        for j in ctx['ivars']:
            ch += [f'{j} % m']
        return rng.choice(ch)

    def read(self, ctx, arr):
        """A read of an array at an index this stage may read: (text, bound)."""
        kind, b = ctx['readable'][arr]
        if kind == '1d':
            return f'{arr}[{self.index1(ctx)}]', b
        if kind == 'own':     # the in-place target, read at its own element before the store
            return f'{arr}[i]', b
        if kind == '2d':
            return f'{arr}[{self.index1(ctx)}, {self.index2(ctx)}]', b
        return f'{arr}[0]', b

    def leaf(self, ctx):
        rng = self.rng
        opts = []
        for name, b in ctx['scope'].all().items():
            opts += [(name, b)] * 3
        for arr in ctx['readable']:
            opts.append(self.read(ctx, arr))
        opts.append((rng.choice(CONSTS), 2.0))
        if not ctx.get('in_helper'):
            opts.append(('s', 1.0))
        for j in ctx['ivars']:
            opts.append((f'f32({j})', 4.0))
        for g, b in ctx['globals'].items():
            opts.append((g, b))
        return rng.choice(opts)

    def expr(self, ctx, depth):
        rng = self.rng
        if depth <= 0 or rng.random() < 0.25:
            return self.leaf(ctx)
        forms = ['+', '-', '*', '*', 'neg']
        if self.on('math'):
            forms += ['sin', 'cos', 'tanh', 'exp', 'sqrt', 'div']
        if self.on('helper') and self.helpers and not ctx.get('in_helper'):
            forms += ['call']
        k = rng.choice(forms)
        if k in '+-*':
            a, ba = self.expr(ctx, depth - 1)
            b, bb = self.expr(ctx, depth - 1)
            return f'({a} {k} {b})', (ba * bb if k == '*' else ba + bb)
        if k == 'neg':
            a, ba = self.expr(ctx, depth - 1)
            return f'(-{a})', ba
        if k in ('sin', 'cos', 'tanh'):
            a, ba = self.expr(ctx, depth - 1)
            return f'{k}({a})', 1.0
        if k == 'exp':
            a, ba = self.expr(ctx, depth - 1)
            if ba > 3.0:
                a, ba = f'tanh({a})', 1.0
            return f'exp({a})', math.exp(ba)
        if k == 'sqrt':
            a, ba = self.leaf(ctx)
            c = rng.choice(['0.1', '1.0', '0.5'])
            return f'sqrt({a} * {a} + {c})', math.sqrt(ba * ba + float(c))
        if k == 'div':
            a, ba = self.expr(ctx, depth - 1)
            b, bb = self.leaf(ctx)
            return f'({a} / (1.0 + {b} * {b}))', ba
        name, hb = rng.choice(self.helpers)
        a, _ = self.expr(ctx, depth - 1)
        b, _ = self.expr(ctx, depth - 1)
        return f'{name}({a}, {b})', hb

    def squash(self, e, b):
        """A bounded form of e (|value| <= 4)."""
        if b <= 4.0:
            return e, b
        if b <= 40.0 and self.rng.random() < 0.5:
            return f'({e}) * 0.1', b * 0.1
        return f'tanh({e})', 1.0

    def bexpr(self, ctx, depth=2):
        return self.squash(*self.expr(ctx, depth))

    def cond(self, ctx):
        a, _ = self.expr(ctx, 1)
        b, _ = self.expr(ctx, 1)
        c = f'{a} {self.rng.choice(["<", "<=", ">", ">="])} {b}'
        if self.rng.random() < 0.15:
            a2, _ = self.expr(ctx, 0)
            c = f'({c} {self.rng.choice(["and", "or"])} {a2} > {self.rng.choice(CONSTS)})'
        return c

    # --- statements --------------------------------------------------------------------------
    def assign(self, ctx, out, ind):
        names = list(ctx['scope'].all())
        e, b = self.bexpr(ctx)
        if names and self.rng.random() < 0.75:
            v = self.rng.choice(names)
            if self.rng.random() < 0.3:
                e2, b2 = self.squash(f'{v} * 0.9 + {e}', 0.9 * 4.0 + b)
                e, b = e2, b2
        else:
            v = self.fresh('v')
        out.append(ind + f'{v} = {e}')
        if v not in ctx['scope'].all():
            ctx['scope'].f32[v] = 4.0   # every assignment is squashed to |value| <= 4

    def block(self, ctx, out, ind, depth, nstmt, in_loop):
        self.depth = max(self.depth, depth)
        ctx = dict(ctx, scope=Scope(ctx['scope']))
        start = len(out)
        for _ in range(nstmt):
            self.stmt(ctx, out, ind, depth, in_loop)
        if len(out) == start:
            out.append(ind + 'pass')

    def stmt(self, ctx, out, ind, depth, in_loop):
        rng = self.rng
        kinds = ['assign', 'assign']
        if depth < 3:
            if self.on('if'):
                kinds += ['if']
            if self.on('loops'):
                kinds += ['loop']
            if self.on('while'):
                kinds += ['while']
        if self.on('break') and (in_loop or ctx['parallel_body']):
            kinds += ['jump']
        for arr in ctx['accum']:
            kinds += ['accum:' + arr]
        if self.on('vec') and not ctx.get('in_helper'):
            kinds += ['vec']
        k = rng.choice(kinds)
        if k == 'assign':
            self.assign(ctx, out, ind)
        elif k == 'if':
            out.append(ind + f'if {self.cond(ctx)}:')
            self.block(ctx, out, ind + '    ', depth + 1, rng.randint(1, 2), in_loop)
            if rng.random() < 0.3:
                out.append(ind + f'elif {self.cond(ctx)}:')
                self.block(ctx, out, ind + '    ', depth + 1, rng.randint(1, 2), in_loop)
            if rng.random() < 0.6:
                out.append(ind + 'else:')
                self.block(ctx, out, ind + '    ', depth + 1, rng.randint(1, 2), in_loop)
        elif k == 'loop':
            j = self.fresh('j')
            trip = rng.choice(['a[i]', 'a[i]', 'k', 'a[(i + 1) % n]', '1, a[i] + 1', '2'])
            out.append(ind + f'for {j} in range({trip}):')
            c2 = dict(ctx, ivars=ctx['ivars'] + [j], parallel_body=False)
            self.block(c2, out, ind + '    ', depth + 1, rng.randint(1, 3), True)
        elif k == 'while':
            c = self.fresh('c')
            out.append(ind + f'{c} = 0')
            out.append(ind + f'while {c} < {rng.randint(1, 4)} and {self.cond(ctx)}:')
            out.append(ind + f'    {c} += 1')
            c2 = dict(ctx, parallel_body=False)
            self.block(c2, out, ind + '    ', depth + 1, rng.randint(1, 3), True)
        elif k == 'vec':
            self.vec_stmt(ctx, out, ind)
        elif k == 'jump':
            word = rng.choice(['break', 'continue']) if in_loop else 'continue'
            out.append(ind + f'if {self.cond(ctx)}:')
            out.append(ind + f'    {word}')
        else:
            arr = k.split(':')[1]
            e, _ = self.bexpr(ctx)
            out.append(ind + f'{arr}[0] += {e}')

    def vec_stmt(self, ctx, out, ind):
        """Two vec3 locals from f32 expressions, a vector or matrix form of them, and an f32
        local taken back from its components (every operand bounded by 4)."""
        rng = self.rng
        a, b, c, v = self.fresh('va'), self.fresh('vb'), self.fresh('vc'), self.fresh('v')
        e = [self.bexpr(ctx, 1)[0] for _ in range(3)]
        out.append(ind + f'{a} = vec3({e[0]}, {e[1]}, {e[2]})')
        if rng.random() < 0.3:
            out.append(ind + f'{b} = vec3({self.bexpr(ctx, 1)[0]})')
        else:
            f = [self.bexpr(ctx, 1)[0] for _ in range(3)]
            out.append(ind + f'{b} = vec3({f[0]}, {f[1]}, {f[2]})')
        form, bound = rng.choice([
            (f'{a} * 0.5 + {b}', 6.0),
            (f'-{a} + {b} / 2.0', 6.0),
            (f'cross({a}, {b}) * 0.1', 3.2),
            (f'mat3({a}, {b}, vec3(0.5, 0.25, 1.0)) @ {a} * 0.1', 4.8),
            (f'{a} @ transpose(mat3({b}, {a}, {b})) * 0.1', 4.8),
            (f'outer({a}, {b}) @ vec3(0.1, 0.2, 0.3)', 9.6),
            (f'clamp({a}, -1.0, 1.0) * {b}', 4.0),
            (f'(mat3({a}, {b}, {a}) * 0.1) @ (mat3({b}, {a}, {b}) * 0.1) @ vec3(1.0, 0.5, 0.25)', 2.7)])
        out.append(ind + f'{c} = {form}')
        if rng.random() < 0.4:
            out.append(ind + f'{c}.y = {c}.x * 0.5 + {c}[2] * 0.25')
        take, tb = rng.choice([(f'dot({c}, {a}) * 0.05', 3 * bound * 4 * 0.05), (f'{c}.x', bound), (f'{c}[1] + {a}.z', bound + 4),
                               (f'{c}.z * 0.5 - dot({a}, {b}) * 0.02', bound * 0.5 + 0.96)])
        e2, b2 = self.squash(take, tb)
        out.append(ind + f'{v} = {e2}')
        ctx['scope'].f32[v] = b2

    def helper(self, out):
        name = self.fresh('h')
        ctx = dict(scope=Scope(), readable={}, ivars=[], globals={}, in_helper=True)
        ctx['scope'].f32 = {'v': 4.0, 'w': 4.0}
        out.append(f'def {name}(v: f32, w: f32) -> f32:')
        if self.on('if') and self.rng.random() < 0.5:
            out.append(f'    if {self.cond(ctx)}:')
            e, b1 = self.bexpr(ctx)
            out.append(f'        return {e}')
        else:
            b1 = 0.0
        e, b2 = self.bexpr(ctx)
        out.append(f'    return {e}')
        out.append('')
        self.helpers.append((name, max(b1, b2)))

    # --- a whole program ---------------------------------------------------------------------
    def program(self):
        rng = self.rng
        on = self.on
        out = []
        if on('helper'):
            for _ in range(rng.randint(1, 2)):
                self.helper(out)
        arrays = collections.OrderedDict()   # name -> (dtype, shape symbols)
        arrays['x'] = ('f32', ['n'])
        arrays['out'] = ('f32', ['n'])
        nst = 1
        if on('stages'):
            arrays['tmp'] = ('f32', ['n'])
            nst = rng.randint(2, 3)
        if on('accum'):
            arrays['acc'] = ('f32', ['1'])
            nst = max(nst, 2)
        if on('serial'):
            arrays['total'] = ('f32', ['1'])
        if on('inplace'):
            arrays['u'] = ('f32', ['n'])
        if on('recur'):
            arrays['x2'] = ('f32', ['n', 'm'])
            arrays['y'] = ('f32', ['n', 'm'])
        if on('stages') or on('accum') or on('inplace') or on('recur'):
            nst = max(nst, rng.randint(1, 3))
        arrays['a'] = ('i32', ['n'])
        timeloop = on('timeloop')
        # roles: which stage stores / accumulates what
        store = {s: [] for s in range(nst)}
        store[nst - 1].append('out')
        if 'tmp' in arrays:
            for s in range(nst - 1):
                store[s].append('tmp')
            if nst == 1:
                store[0].append('tmp')
        accum = {s: [] for s in range(nst)}
        if 'acc' in arrays:
            accum[rng.randrange(nst - 1)].append('acc')
        if 'total' in arrays:
            accum[rng.randrange(nst)].append('total')
        u_stage = rng.randrange(nst) if 'u' in arrays else None
        y_stage = rng.randrange(nst) if 'y' in arrays else None
        bounds = {'x': 1.0, 'out': 4.0, 'tmp': 4.0, 'u': 4.0, 'x2': 1.0, 'y': 4.0}
        # an accumulator's value: its initial value plus n contributions of up to 4, at most 3
        # times each (dynamic loops), per time step
        bounds['acc'] = bounds['total'] = 1.0 + 6 * 4 * 3 * 4 * (3 if timeloop else 1)
        body = []
        glob = {}
        top = '    '
        if on('serial'):
            body.append(top + f'total[0] = {rng.choice(["0.0", "x[0] * 0.5", "s"])}')
            if rng.random() < 0.7:
                g = self.fresh('g')
                e, b = self.squash(f'tanh(x[{rng.choice(["0", "n - 1"])}] + s)', 1.0)
                body.append(top + f'{g} = {e}')
                glob[g] = b
        ind = top
        T = 0
        if timeloop:
            T = rng.randint(1, 3)
            body.append(top + f'for t in serial(range({T})):')
            ind = top + '    '
            if 'acc' in arrays and rng.random() < 0.5:
                body.append(ind + 'acc[0] = 0.0')
        for s in range(nst):
            readable = collections.OrderedDict()
            readable['x'] = ('1d', 1.0)
            if 'x2' in arrays:
                readable['x2'] = ('2d', 1.0)
            written_here = set(store[s]) | set(accum[s])
            if s == u_stage:
                written_here.add('u')
            if s == y_stage:
                written_here.add('y')
            for arr in ('tmp', 'out', 'u'):
                if arr in arrays and arr not in written_here and (timeloop or arr == 'u' or any(
                        arr in store[q] for q in range(s))):
                    readable[arr] = ('1d', bounds[arr])
            if 'y' in arrays and 'y' not in written_here and (timeloop or y_stage < s):
                readable['y'] = ('2d', bounds['y'])
            for arr in ('acc', 'total'):
                if arr in arrays and arr not in written_here and (timeloop or any(
                        arr in accum[q] for q in range(s))):
                    readable[arr] = ('acc', bounds[arr])
            if s == u_stage:
                readable['u'] = ('own', bounds['u'])
            ctx = dict(scope=Scope(), readable=readable, ivars=[], globals=glob,
                       accum=accum[s], parallel_body=True)
            pb = ind + '    '
            body.append(ind + 'for i in range(n):')
            for _ in range(rng.randint(1, 2)):
                v = self.fresh('v')
                e, b = self.bexpr(ctx, 1)
                body.append(pb + f'{v} = {e}')
                ctx['scope'].f32[v] = 4.0
            self.block(dict(ctx, scope=ctx['scope']), body, pb, 1, rng.randint(1, 4), False)
            # the stores of this stage, last (no array is read after its store in one stage)
            if s == y_stage:
                j = self.fresh('j')
                if rng.random() < 0.6:
                    e, _ = self.bexpr(ctx, 1)
                    body.append(pb + f'y[i, 0] = {e}')
                body.append(pb + f'for {j} in range(1, m):')
                c2 = dict(ctx, ivars=[j])
                e, b = self.bexpr(c2, 1)
                body.append(pb + f'    y[i, {j}] = tanh(y[i, {j} - 1] * x2[i, {j}] + {e})')
            if s == u_stage:
                e, b = self.bexpr(ctx, 1)
                if on('accum') and rng.random() < 0.3:
                    # an element accumulated in place (no plain store), read by later loops
                    body.append(pb + f'u[i] += {self.squash(f"sin(u[i]) * 0.5 + {e}", 0.5 + b)[0]}')
                else:
                    body.append(pb + f'u[i] = {self.squash(f"sin(u[i]) * 0.9 + {e}", 0.9 + b)[0]}')
            # the data earlier stages (or earlier time steps) left: read it here, mostly, so
            # that the multi-stage features are exercised and not just declared
            carried = [arr for arr, (kind, _) in readable.items() if arr not in ('x', 'x2') and kind != 'own']
            for arr in store[s]:
                e, b = self.bexpr(ctx)
                for r in carried:
                    if rng.random() < 0.7:
                        e, b = self.squash(f'{e} + tanh({self.read(ctx, r)[0]}) * 0.5', b + 0.5)
                op = '+=' if arr == 'tmp' and on('accum') and rng.random() < 0.4 else '='
                body.append(pb + f'{arr}[i] {op} {e}')
        if 'acc' in arrays and rng.random() < 0.3:
            # a serial statement reading the accumulator after the parallel loops
            body.append(top + 'acc[0] = tanh(acc[0]) * 0.5 + x[0]')
        if on('serial') and rng.random() < 0.3:
            body.append(top + 'total[0] = total[0] * 0.5 + x[0]')
        params = [f'{a}: {t}[{", ".join(sh)}]' for a, (t, sh) in arrays.items()] + ['k: i32', 's: f32']
        src = '\n'.join(out + [f'kernel fz({", ".join(params)}):'] + body) + '\n'
        written = set()
        for s in range(nst):
            written |= set(store[s]) | set(accum[s])
        if u_stage is not None:
            written.add('u')
        if y_stage is not None:
            written.add('y')
        if on('serial'):
            written.add('total')
        if timeloop and 'acc' in arrays:
            written.add('acc')
        depth = self.depth + nst + (T or 1)
        return dict(src=src, arrays=arrays, written=written, depth=depth)


def reference(prog, inputs, n, m):
    """Runs the program over duals. Returns (final f32 arrays as lists of Dual, min gap)."""
    env = dict(sin=sin, cos=cos, tanh=tanh, exp=exp, sqrt=sqrt, f32=f32, serial=serial, min=min, _c=f32, vec3=vec3,
               mat3=mat3, dot=dot, cross=cross, outer=outer, transpose=transpose, clamp=clamp)
    # the same text as Python: the kernel header becomes a def, and f32 literals become duals
    # (so that `0.3 + 0.7` is an f32 sum, not a float64 one)
    params = [a for a in prog['arrays']] + ['k', 's']
    src = re.sub(r'^kernel fz\(.*\):$', 'def kernel_k(%s, n, m):' % ', '.join(params), prog['src'], flags=re.M)
    src = re.sub(r'(?<![\w.])(\d+\.\d+)(?![\w.])', r'_c(\1)', src)
    exec(compile(src, '<grad_fuzz>', 'exec'), env)
    args = {}
    base = 0
    index = {}
    for a, (t, sh) in prog['arrays'].items():
        dt, shape, data = inputs[a]
        if t == 'i32':
            args[a] = IArr(shape, list(data))
        else:
            args[a] = FArr(shape, [Dual(v, {base + q: 1.0}) for q, v in enumerate(data)], a in ('acc', 'total'))
            index[a] = base
            base += len(data)
    args['k'], args['s'] = inputs['k'], Dual(inputs['s'])
    Ref.min_gap = math.inf
    env['kernel_k'](**args, n=n, m=m)
    return {a: args[a].data for a in index}, index, Ref.min_gap


# ---------------------------------------------------------------------------------------------

def first_error(msg):
    for ln in msg.splitlines():
        if 'error' in ln:
            return re.sub(r'^\S+\.dvk:\d+:\d+: ', '', ln.strip())
    return msg.strip().splitlines()[0] if msg.strip() else '(no message)'


def probe_features(dvm, work):
    """dvm: a dvmbatch.Dvm."""
    """Features this dvm compiles: a tiny kernel of the feature alone must compile."""
    probes = {'timeloop': 'kernel k(x: f32[n]):\n    for t in serial(range(2)):\n'
                          '        for i in range(n):\n            x[i] = x[i] * 0.5\n',
              'vec': 'kernel k(x: f32[n]):\n    for i in range(n):\n        x[i] = dot(vec3(x[i]), vec3(1.0, 2.0, 3.0))\n'}
    feats = []
    for f in ALL_FEATURES:
        if f in probes:
            p = os.path.join(work, f'probe_{f}.dvk')
            with open(p, 'w') as fh:
                fh.write(probes[f])
            r = dvm.run(['compile', p, '-o', p + '.dvb'], timeout=60)
            if r.returncode != 0:
                continue
        feats.append(f)
    return feats


def run_one(o, rng, feats, t, work):
    """Generates, runs and classifies one program. Returns (status, detail, record)."""
    g = Gen(rng, feats)
    prog = g.program()
    n, m = rng.randint(1, 5), rng.randint(2, 4)
    ext = {'n': n, 'm': m, '1': 1}
    inputs = {}
    for a, (typ, sh) in prog['arrays'].items():
        shape = tuple(ext[d] for d in sh)
        cnt = 1
        for d in shape:
            cnt *= d
        if typ == 'f32':
            inputs[a] = ('f4', shape, [npyio.f32(rng.uniform(-1, 1)) for _ in range(cnt)])
        else:
            inputs[a] = ('i4', shape, [rng.randint(0, 3) for _ in range(cnt)])
    inputs['k'] = rng.randint(0, 3)
    inputs['s'] = npyio.f32(rng.uniform(-1, 1))
    f32s = [a for a, (typ, _) in prog['arrays'].items() if typ == 'f32']
    seeds = {a: [npyio.f32(rng.uniform(-1, 1)) for _ in inputs[a][2]] for a in f32s if a in prog['written']}
    duals = {a: [npyio.f32(rng.uniform(-1, 1)) for _ in inputs[a][2]] for a in f32s}

    d = os.path.join(work, f'p{t}')
    os.makedirs(d, exist_ok=True)
    src = os.path.join(d, 'k.dvk')
    with open(src, 'w') as f:
        f.write(prog['src'])
    args = []
    for a, (dt, shape, data) in ((a, inputs[a]) for a in prog['arrays']):
        npyio.write(os.path.join(d, a + '.npy'), dt, shape, data)
        args.append(f'{a}={a}.npy')
    args += [f'k={inputs["k"]}', f's={inputs["s"]!r}']
    for a, v in seeds.items():
        npyio.write(os.path.join(d, a + '.grad.in.npy'), 'f4', inputs[a][1], v)
    for a, v in duals.items():
        npyio.write(os.path.join(d, a + '.dual.in.npy'), 'f4', inputs[a][1], v)
    cmds = {
        'run': ['run', 'k.dvk', 'fz'] + args,
        'grad': ['grad', 'k.dvk', 'fz'] + args + [f'{a}.grad={a}.grad.in.npy' for a in seeds],
        'jvp': ['jvp', 'k.dvk', 'fz'] + args + [f'{a}.dual={a}.dual.in.npy' for a in duals],
    }
    res = {}
    for c, cargs in cmds.items():
        outd = 'out_' + c
        try:
            p = o.run(cargs + ['--out', outd, '--backend', o.backend], cwd=d, timeout=o.timeout)
        except subprocess.TimeoutExpired:
            res[c] = (-1, f'timed out after {o.timeout} s (every loop of the program terminates)', {})
            continue
        msg = (p.stderr + p.stdout).strip()
        if p.returncode != 0 and re.search(r"backend '\w+' (device \d+:|is not compiled)", msg):
            return 'nodevice', msg, None
        outs = {}
        if p.returncode == 0 and os.path.isdir(os.path.join(d, outd)):
            for fn in os.listdir(os.path.join(d, outd)):
                if fn.endswith('.npy'):
                    outs[fn[:-4]] = npyio.read(os.path.join(d, outd, fn))[2]
        res[c] = (p.returncode, msg, outs)

    record = dict(src=prog['src'], dir=d, n=n, m=m, inputs=inputs, seeds=seeds, duals=duals,
                  cmds=cmds)
    crashes = [f'dvm {c} exited {rc}: {msg[-400:]}' for c, (rc, msg, _) in res.items()
               if rc not in (0, 1) or 'internal error' in msg]
    if crashes:
        return 'wrong', crashes[0], record
    if res['run'][0] != 0 and (res['grad'][0] == 0 or res['jvp'][0] == 0):
        return 'wrong', f'dvm run refused ({first_error(res["run"][1])}) but grad/jvp ran', record
    refusals = [(c, first_error(msg)) for c, (rc, msg, _) in res.items() if rc != 0]
    # the reference runs even when dvm refused everything, so that a generator bug (an index
    # out of bounds, an overflow) shows as an exception here whatever dvm supports
    final, index, gap = reference(prog, inputs, n, m)
    if len(refusals) == 3:
        return 'refused', refusals[0][1], record

    tol = 1e-3 * (1.0 + prog['depth'] / 4.0)
    mismatches = []

    def cmp(label, got, want):
        if got is None:
            mismatches.append(f'{label}: missing output')
            return
        for q, (a, b) in enumerate(zip(got, want)):
            if not (abs(a - b) <= tol * (1.0 + abs(b))):
                mismatches.append(f'{label}[{q}] = {a!r}, reference {b!r} (tol {tol:.2g})')
                return

    for c in ('run', 'grad', 'jvp'):
        rc, msg, outs = res[c]
        if rc != 0:
            continue
        for a in f32s:
            cmp(f'{c}: {a}', outs.get(a), [v.p for v in final[a]])
        if c == 'grad':
            for a in f32s:
                base, cnt = index[a], len(inputs[a][2])
                want = [0.0] * cnt
                for b2, sd in seeds.items():
                    for v, sv in zip(final[b2], sd):
                        if v.t:
                            for key, dv in v.t.items():
                                if base <= key < base + cnt:
                                    want[key - base] += sv * dv
                cmp(f'grad: {a}.grad', outs.get(a + '.grad'), want)
        if c == 'jvp':
            flat = []
            for a in f32s:
                flat += duals[a]
            for a in f32s:
                want = [sum(dv * flat[key] for key, dv in v.t.items()) if v.t else 0.0 for v in final[a]]
                cmp(f'jvp: {a}.dual', outs.get(a + '.dual'), want)
    if mismatches:
        detail = '; '.join(mismatches[:3]) + f' (closest comparison gap {gap:.3g})'
        return ('ambiguous' if gap < AMBIG_GAP else 'wrong'), detail, record
    if refusals:
        return 'refused', refusals[0][1], record
    return 'exact', '', record


def show(t, status, detail, rec):
    print(f'--- program {t}: {status.upper()}: {detail}')
    print(rec['src'].rstrip())
    print(f'# n={rec["n"]} m={rec["m"]} k={rec["inputs"]["k"]} s={rec["inputs"]["s"]!r}')
    for a, v in rec['inputs'].items():
        if not isinstance(v, tuple):
            continue
        dt, shape, data = v
        print(f'# {a} {shape} = {[round(v, 6) if dt == "f4" else v for v in data]}')
    for a, v in rec['seeds'].items():
        print(f'# {a}.grad seed = {[round(q, 6) for q in v]}')
    print('# ' + ' '.join(rec['cmds']['grad']))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split('\n')[0])
    ap.add_argument('--dvm', required=True)
    ap.add_argument('--backend', default='cpu')
    ap.add_argument('--count', type=int, default=300)
    ap.add_argument('--seed', type=int, default=20261126)
    ap.add_argument('--features', default=None,
                    help='comma-separated subset of: ' + ','.join(ALL_FEATURES))
    ap.add_argument('--timeout', type=int, default=60, help='seconds per dvm command')
    ap.add_argument('--always', default=None,
                    help='features on in every program (the others: each in a random 60%% of them)')
    ap.add_argument('--keep', default=None, help='copy failing programs (wrong) into this folder')
    ap.add_argument('--show-refused', action='store_true', help='print refused programs too')
    ap.add_argument('--batch', action='store_true', help='every command through one `dvm batch` process')
    o = ap.parse_args()
    o.dvm = os.path.abspath(o.dvm)
    dvm = Dvm(o.dvm, o.batch)
    o.run = dvm.run
    return dvm.serve('grad_fuzz', lambda d: fuzz(o, ap, d))


def fuzz(o, ap, dvm):
    rng = random.Random(o.seed)
    Ref.all_inexact = o.backend != 'cpu'
    counts = collections.Counter()
    hist = collections.Counter()
    with tempfile.TemporaryDirectory(prefix='dvmt_grad_') as work:
        if o.features is None:
            feats = probe_features(dvm, work)
        else:
            feats = [f for f in o.features.split(',') if f]
            bad = [f for f in feats if f not in ALL_FEATURES]
            if bad:
                ap.error(f'unknown features {bad}; known: {",".join(ALL_FEATURES)}')
        always = [f for f in (o.always or '').split(',') if f]
        feats += [f for f in always if f not in feats]
        print(f'grad_fuzz ({o.backend}): features {",".join(feats)}, seed {o.seed}')
        for t in range(o.count):
            # each program draws a random subset of the enabled features (at least one feature
            # on, so that every feature is tried alone and in combination)
            sub = [f for f in feats if f in always or rng.random() < 0.6] or feats[:1]
            status, detail, rec = run_one(o, rng, set(sub), t, work)
            if status == 'nodevice':
                print(f'grad_fuzz: SKIPPED: no {o.backend} device: {detail}')
                return 77
            counts[status] += 1
            if status == 'refused':
                hist[detail[:60]] += 1
            if status == 'ambiguous':
                print(f'--- program {t}: ambiguous (not a failure): {detail}')
            if status == 'wrong' or (status == 'refused' and o.show_refused):
                show(t, status, detail, rec)
            if status == 'wrong' and o.keep:
                dst = os.path.join(o.keep, f'p{t}')
                shutil.rmtree(dst, ignore_errors=True)
                shutil.copytree(rec['dir'], dst)
                with open(os.path.join(dst, 'README'), 'w') as f:
                    f.write(f'{detail}\ncd here; {o.dvm} ' + ' '.join(rec['cmds']['grad']) + '\n')
            shutil.rmtree(rec['dir'] if rec else os.path.join(work, f'p{t}'), ignore_errors=True)
    print(f'grad_fuzz: {o.count} programs: {counts["exact"]} exact, {counts["refused"]} refused, '
          f'{counts["wrong"]} wrong, {counts["ambiguous"]} ambiguous')
    for msg, c in hist.most_common():
        print(f'  refused {c:4d}: {msg}')
    return 1 if counts['wrong'] else 0


if __name__ == '__main__':
    sys.exit(main())

"""The kernel corpus. Each case: .dvk source, inputs, and a float64 reference in Python that
mutates the input dict exactly as the kernel mutates its arrays. grad=True cases are also
checked in reverse and forward mode against finite differences of the reference."""
import math

from dvmtest import Arr, Case, F, I, wrap32

C = []


def case(*a, **k):
    C.append(Case(*a, **k))


def pyfloordiv(a, b):
    return a // b


# ---------------------------------------------------------------- elementwise, params, shapes
def _saxpy(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['a'] * d['x'][i] + d['y'][i]
case('saxpy', '''
kernel saxpy(a: f32, x: f32[n], y: f32[n]):
    for i in range(n):
        y[i] = a * x[i] + y[i]
''', 'saxpy', {'a': 2.5, 'x': F(37), 'y': F(37)}, _saxpy, grad=True)


def _scale(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] * d['s'] + d['k']
case('scalar_params', '''
kernel scale(x: f32[n], y: f32[n], s: f32, k: i32):
    for i in range(n):
        y[i] = x[i] * s + k
''', 'scale', {'x': F(10), 'y': F(10), 's': -0.75, 'k': 3}, _scale, grad=True)


def _add2d(d):
    n, m = d['a'].shape
    for i in range(n):
        for j in range(m):
            d['c'][i, j] = d['a'][i, j] * d['b'][i, j] + d['a'][i, j]
case('ndrange2', '''
kernel add2(a: f32[n, m], b: f32[n, m], c: f32[n, m]):
    for i, j in ndrange(n, m):
        c[i, j] = a[i, j] * b[i, j] + a[i, j]
''', 'add2', {'a': F(5, 7), 'b': F(5, 7), 'c': F(5, 7)}, _add2d, grad=True)


def _nd3(d):
    p, q, r = d['v'].shape
    for i in range(p):
        for j in range(q):
            for k in range(r):
                d['v'][i, j, k] = i * 100 + j * 10 + k
case('ndrange3', '''
kernel idx3(v: i32[p, q, r]):
    for i, j, k in ndrange(p, q, r):
        v[i, j, k] = i * 100 + j * 10 + k
''', 'idx3', {'v': I(3, 4, 5)}, _nd3)


def _nd3b(d):
    p, q, r = d['v'].shape
    for i in range(p):
        for j in range(q):
            for k in range(r):
                d['v'][i, j, k] = i * 100 + j * 10 + k if (i + j + k) % 2 == 0 else -(i * 100 + j * 10 + k)
# A branch sends the task to the masked lanes, whose lanes step from one iteration's indices to
# the next with carries (GPU; `--gpu-threads 3` makes every digit carry).
case('ndrange3_branch', '''
kernel idx3b(v: i32[p, q, r]):
    for i, j, k in ndrange(p, q, r):
        if (i + j + k) % 2 == 0:
            v[i, j, k] = i * 100 + j * 10 + k
        else:
            v[i, j, k] = -(i * 100 + j * 10 + k)
''', 'idx3b', {'v': I(3, 7, 5)}, _nd3b)


def _rng(d):
    for i in range(d['lo'], d['hi']):
        d['y'][i] = 2.0 * i
case('range_start_stop', '''
kernel fill(y: f32[n], lo: i32, hi: i32):
    for i in range(lo, hi):
        y[i] = 2.0 * i
''', 'fill', {'y': F(12), 'lo': 3, 'hi': 9}, _rng)

case('range_empty', '''
kernel fill(y: f32[n], lo: i32, hi: i32):
    for i in range(lo, hi):
        y[i] = 1.0
''', 'fill', {'y': F(6), 'lo': 5, 'hi': 2}, lambda d: None)


def _damp(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        for _ in range(d['steps'][i]):
            v = v * d['rate'] + 0.01
        d['y'][0] += v
case('damp_helper_dynamic', '''
# Damped accumulation: each element is iterated a data-dependent number of times.
def step(v: f32, rate: f32) -> f32:      # helper: inlined at every call
    return v * rate + 0.01

kernel damp(x: f32[n], steps: i32[n], y: f32[1], rate: f32):
    for i in range(n):                   # top-level for: parallel over i
        v = x[i]
        for _ in range(steps[i]):        # nested loop: serial, dynamic trip count
            v = step(v, rate)
        y[0] += v                        # += on an array element is atomic
''', 'damp', {'x': F(20), 'steps': I(20, lo=0, hi=12), 'y': F(1), 'rate': 0.9}, _damp, grad=True)


def _early(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        if v < -0.5:
            r = -1.0
        elif v > 0.5:
            r = v * v
        else:
            r = v * 3.0
        d['y'][i] = r
case('helper_early_return', '''
def pick(v: f32) -> f32:
    if v < -0.5:
        return -1.0
    if v > 0.5:
        return v * v
    return v * 3.0

kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        y[i] = pick(x[i])
''', 'k', {'x': F(30), 'y': F(30)}, _early, grad=True)


def _harr(d):
    n = len(d['x'])
    for i in range(n):
        d['y'][i] = d['x'][(i + 1) % n] - d['x'][i]
case('helper_reads_array', '''
def diff(a: f32[m], i: i32) -> f32:
    return a[(i + 1) % m] - a[i]

kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        y[i] = diff(x, i)
''', 'k', {'x': F(9), 'y': F(9)}, _harr, grad=True)


def _static(d):
    n = d['x'].shape[0]
    for i in range(n):
        acc = 0.0
        for k in range(4):
            acc += d['w'][k] * d['x'][i, k]
        d['y'][i] = acc
case('static_unroll', '''
kernel dot4(x: f32[n, 4], w: f32[4], y: f32[n]):
    for i in range(n):
        acc = 0.0
        for k in static(range(4)):
            acc += w[k] * x[i, k]
        y[i] = acc
''', 'dot4', {'x': F(6, 4), 'w': F(4), 'y': F(6)}, _static, grad=True)


def _collatz(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        c = 0
        while v != 1:
            v = v // 2 if v % 2 == 0 else 3 * v + 1
            c += 1
        d['c'][i] = c
case('while_collatz', '''
kernel collatz(x: i32[n], c: i32[n]):
    for i in range(n):
        v = x[i]
        count = 0
        while v != 1:
            if v % 2 == 0:
                v = v // 2
            else:
                v = 3 * v + 1
            count += 1
        c[i] = count
''', 'collatz', {'x': I(25, lo=1, hi=200), 'c': I(25)}, _collatz)


def _brk(d):
    for i in range(len(d['x'])):
        s = 0.0
        for j in range(len(d['x'])):
            if d['x'][j] > d['t']:
                break
            s += d['x'][j] * d['x'][i]
        d['y'][i] = s
case('break_loop', '''
kernel k(x: f32[n], y: f32[n], t: f32):
    for i in range(n):
        s = 0.0
        for j in range(n):
            if x[j] > t:
                break
            s += x[j] * x[i]
        y[i] = s
''', 'k', {'x': F(16), 'y': F(16), 't': 0.7}, _brk, grad=True, seed=3)


def _cont(d):
    for i in range(len(d['x'])):
        s = 0.0
        for j in range(d['k'][i]):
            if j % 3 == 1:
                continue
            s = s * 0.5 + d['x'][i] * j
        d['y'][i] = s
case('continue_loop', '''
kernel k(x: f32[n], k: i32[n], y: f32[n]):
    for i in range(n):
        s = 0.0
        for j in range(k[i]):
            if j % 3 == 1:
                continue
            s = s * 0.5 + x[i] * j
        y[i] = s
''', 'k', {'x': F(12), 'k': I(12, lo=0, hi=9), 'y': F(12)}, _cont, grad=True)


def _matvec(d):
    n, m = d['a'].shape
    for i in range(n):
        s = 0.0
        for j in range(m):
            s += d['a'][i, j] * d['x'][j]
        d['y'][i] = s
case('matvec_nested', '''
kernel mv(a: f32[n, m], x: f32[m], y: f32[n]):
    for i in range(n):
        s = 0.0
        for j in range(m):
            s += a[i, j] * x[j]
        y[i] = s
''', 'mv', {'a': F(5, 6), 'x': F(6), 'y': F(5)}, _matvec, grad=True)


# loops the optimizer unrolls (docs/internals.md): trip counts 0..11 around the 4 copies per
# trip, a body that reads the counter, a loop whose adjoint keeps v on a stack, and counters
# at both ends of the i32 range
def _unrolled(d):
    n = len(d['x'])
    for i in range(n):
        acc = 0.0
        for j in range(d['k'][i]):
            acc = acc * 0.875 + d['x'][(i + j) % n] * (j + 1)
        v = d['x'][i]
        for _ in range(d['k'][(i + 3) % n]):
            v = v * (0.5 - v * 0.25)
        d['y'][i] = acc + v
case('unrolled_loops', '''
kernel unr(x: f32[n], k: i32[n], y: f32[n]):
    for i in range(n):
        acc = 0.0
        for j in range(k[i]):
            acc = acc * 0.875 + x[(i + j) % n] * (j + 1)
        v = x[i]
        for _ in range(k[(i + 3) % n]):
            v = v * (0.5 - v * 0.25)
        y[i] = acc + v
''', 'unr', {'x': F(29), 'k': I(29, lo=0, hi=11), 'y': F(29)}, _unrolled, grad=True)


def _edges(d):
    for i in range(len(d['y'])):
        c = 0
        for j in range(d['lo'] + i, d['hi']):
            c = wrap32(c + (j - d['lo']) * 3)
        d['y'][i] = c
_EDGES = '''
kernel edges(y: i32[n], lo: i32, hi: i32):
    for i in range(n):
        c = 0
        for j in range(lo + i, hi):
            c += (j - lo) * 3
        y[i] = c
'''
case('unrolled_int_max', _EDGES, 'edges', {'y': I(17), 'lo': 2147483631, 'hi': 2147483647}, _edges)
case('unrolled_int_min', _EDGES, 'edges', {'y': I(17), 'lo': -2147483648, 'hi': -2147483637}, _edges)


# a loop whose body is one self-update (v = v * r + 1: not unrolled, the interpreters run its
# trips in its INCLT; interp_core.h) with every trip count from 24 down to 0, at the ends of
# the i32 range
def _edges1(d):
    for i in range(len(d['y'])):
        v = 1.0
        for _ in range(d['lo'] + i, d['hi']):
            v = v * d['r'] + 1.0
        d['y'][i] = v
_EDGES1 = '''
kernel edges1(y: f32[n], lo: i32, hi: i32, r: f32):
    for i in range(n):
        v = 1.0
        for j in range(lo + i, hi):
            v = v * r + 1.0
        y[i] = v
'''
case('unrolled_one_node_int_max', _EDGES1, 'edges1', {'y': F(25), 'lo': 2147483647 - 24, 'hi': 2147483647, 'r': 0.75}, _edges1)
case('unrolled_one_node_int_min', _EDGES1, 'edges1', {'y': F(25), 'lo': -2147483648, 'hi': -2147483648 + 24, 'r': 0.75}, _edges1)


# loops whose body is one self-update of each kind (bytecode/bc.h: the node as v * m + k),
# whose trips the interpreters run in their INCLT: MULFK, ADDF, ADDFK, SUBF, and MULF with the
# factor first
def _self_updates(d):
    for i in range(len(d['x'])):
        t, c, k = d['x'][i], d['c'], d['m'][i]
        v, s, q, e, g = t, t, t, t, t + 1.0
        for _ in range(k):
            v = v * 0.5
            s = s + c
            q = q + 0.25
            e = e - c
            g = c * g
        d['y'][i] = v + s + q + e + g
case('self_update_loops', '''
kernel su(x: f32[n], m: i32[n], y: f32[n], c: f32):
    for i in range(n):
        t = x[i]
        v = t
        for _ in range(m[i]):
            v = v * 0.5
        s = t
        for _ in range(m[i]):
            s = s + c
        q = t
        for _ in range(m[i]):
            q = q + 0.25
        e = t
        for _ in range(m[i]):
            e = e - c
        g = t + 1.0
        for _ in range(m[i]):
            g = c * g
        y[i] = v + s + q + e + g
''', 'su', {'x': F(23, lo=-0.9, hi=0.9), 'm': I(23, lo=0, hi=24), 'y': F(23), 'c': 0.75}, _self_updates, grad=True)


# runs of FMAF/FMAFK nodes into one register, which the scalar C interpreter runs in one
# handler (interp_core.h): v * v + K (the factor is the accumulator: the run stops), the three
# forms of FMAF (factor b the accumulator, neither, factor c the accumulator), two
# accumulators in turn (w, z: one run each), runs that a branch jumps into the middle of (q,
# u: FMAFK, g: MULF; masked lanes that skipped the branch wait there), and loops whose body is
# one self-update (s: FMAFK, h: MULF), whose trips the interpreters run in their INCLT
def _fma_runs(d):
    for i in range(len(d['x'])):
        t = d['x'][i]
        p = d['c0']
        for c in ('c1', 'c2', 'c3'):
            p = p * t + d[c]
        v = t * 0.5
        for _ in range(d['k'][i]):
            v = v * v + 0.125
        a = 0.25
        for _ in range(d['k'][i]):
            a = a * t + a
            a = t * t + a
            a = t * a + a
        w, z = 0.5, -0.5
        for _ in range(d['k'][i]):
            w = w * t + 0.5
            z = z * t + 0.25
        q = t
        if t > 0.0:
            q = q * t + 0.25
        q = q * t + 0.125
        q = q * t + 0.5
        u = t
        if t > 0.0:
            u = u * t + 0.5
        u = u * t + 0.5
        u = u * t + 0.5
        s = 0.5
        for _ in range(d['m'][i]):
            s = s * t + 0.25
        h = 1.5
        for _ in range(d['m'][i]):
            h = h * t
        g = t + 0.25
        if t > 0.0:
            g = g * t
        g = g * t
        g = g * t
        d['y'][i] = p + v + a + w + z + q + u + s + h + g
case('fma_runs', '''
kernel fc(x: f32[n], k: i32[n], m: i32[n], y: f32[n], c0: f32, c1: f32, c2: f32, c3: f32):
    for i in range(n):
        t = x[i]
        p = c0
        p = p * t + c1
        p = p * t + c2
        p = p * t + c3
        v = t * 0.5
        for _ in range(k[i]):
            v = v * v + 0.125
        a = 0.25
        for _ in range(k[i]):
            a = a * t + a
            a = t * t + a
            a = t * a + a
        w = 0.5
        z = -0.5
        for _ in range(k[i]):
            w = w * t + 0.5
            z = z * t + 0.25
        q = t
        if t > 0.0:
            q = q * t + 0.25
        q = q * t + 0.125
        q = q * t + 0.5
        u = t
        if t > 0.0:
            u = u * t + 0.5
        u = u * t + 0.5
        u = u * t + 0.5
        s = 0.5
        for _ in range(m[i]):
            s = s * t + 0.25
        h = 1.5
        for _ in range(m[i]):
            h = h * t
        g = t + 0.25
        if t > 0.0:
            g = g * t
        g = g * t
        g = g * t
        y[i] = p + v + a + w + z + q + u + s + h + g
''', 'fc', {'x': F(23, lo=-0.9, hi=0.6), 'k': I(23, lo=0, hi=7), 'm': I(23, lo=0, hi=24), 'y': F(23), 'c0': 0.5, 'c1': -0.25, 'c2': 0.75,
             'c3': 0.125}, _fma_runs, grad=True)


# Arrays indexed by the iteration's own indices plus constants, over rows long enough for the
# GPU lanes' row path (interp_core.h, ROW1_/ROW2_: a thread's 8 lanes 32 iterations apart in
# one row, their bounds checked at the ends). 256 columns: every warp's lanes in one row, the
# first lane of a row parted by the branch; 300: rows whose ends fall inside a warp's lanes
# (those lanes take the usual path). Loads with offsets on both axes, a store, an atomic add
# per column (h[j]), and in the adjoint their atomic adds.
def _row_lanes(d):
    n, m = d['u'].shape
    for i in range(n):
        for j in range(m):
            if 0 < j < m - 1:
                d['v'][i, j] = d['u'][i, j - 1] * 0.5 + d['u'][i, j + 1] * d['w'][j] - d['u'][i, j]
            else:
                d['v'][i, j] = d['u'][i, j] + d['w'][j]
            if i > 0:
                d['v'][i, j] = d['v'][i, j] + d['u'][i - 1, j]
            d['h'][j] = d['h'][j] + d['u'][i, j] * 0.25
ROW_LANES = '''
kernel rows(u: f32[n, m], w: f32[m], v: f32[n, m], h: f32[m]):
    for i, j in ndrange(n, m):
        t = u[i, j] + w[j]
        if j > 0 and j < m - 1:
            t = u[i, j - 1] * 0.5 + u[i, j + 1] * w[j] - u[i, j]
        if i > 0:
            t = t + u[i - 1, j]
        v[i, j] = t
        h[j] += u[i, j] * 0.25
'''
case('row_lanes', ROW_LANES, 'rows', {'u': F(2, 256), 'w': F(256), 'v': F(2, 256), 'h': F(256)}, _row_lanes,
     grad=True, exclude_grad=('v', 'h'))  # (written, and added to: their gradients pass through)
case('row_lanes_ends', ROW_LANES, 'rows', {'u': F(3, 300), 'w': F(300), 'v': F(3, 300), 'h': F(300)}, _row_lanes)


# Bounds tests (JOUTI) in the GPU lanes' row rounds: the outer index against bounds the prologue
# computes, the inner one against a parameter that puts all of a thread's lanes out of the
# interval in some rounds (lo = 230: its last lane is at j0 + 224), and against a bound the
# body computes (a different one per lane).
def _row_jout(d):
    n, m = d['u'].shape
    lo = int(d['lo'])
    for i in range(n):
        for j in range(m):
            t = d['u'][i, j]
            if 0 < i < n - 1:
                t = t + 1.0
            if lo < j < m - 1:
                t = t * 2.0
            if 3 < j < i * 100:
                t = t - 0.5
            d['v'][i, j] = t
ROW_JOUT = '''
kernel rowj(u: f32[n, m], v: f32[n, m], lo: i32):
    for i, j in ndrange(n, m):
        t = u[i, j]
        if i > 0 and i < n - 1:
            t = t + 1.0
        if j > lo and j < m - 1:
            t = t * 2.0
        if j > 3 and j < i * 100:
            t = t - 0.5
        v[i, j] = t
'''
case('row_jout', ROW_JOUT, 'rowj', {'u': F(4, 512), 'v': F(4, 512), 'lo': 230}, _row_jout)
case('row_jout_ends', ROW_JOUT, 'rowj', {'u': F(5, 300), 'v': F(5, 300), 'lo': -7}, _row_jout)


# 1-D: a range with a start, neighbours on both sides (row path: lanes' index registers + k)
def _row_lanes_1d(d):
    x = d['x']
    for i in range(1, len(x.data) - 1):
        d['y'][i] = x[i - 1] + x[i + 1] * 2.0 - x[i]
        d['g'][i % 4] = d['g'][i % 4] + x[i]
case('row_lanes_1d', '''
kernel rows1(x: f32[n], y: f32[n], g: f32[4]):
    for i in range(1, n - 1):
        y[i] = x[i - 1] + x[i + 1] * 2.0 - x[i]
        g[i % 4] += x[i]
''', 'rows1', {'x': F(600), 'y': F(600), 'g': F(4)}, _row_lanes_1d, grad=True,
     exclude_grad=('y', 'g'))


def _elif(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        if v < -0.3:
            r = 1
        elif v < 0.0:
            r = 2
        elif v < 0.3:
            r = 3
        else:
            r = 4
        d['c'][i] = r
case('if_elif_else', '''
kernel cls(x: f32[n], c: i32[n]):
    for i in range(n):
        v = x[i]
        if v < -0.3:
            c[i] = 1
        elif v < 0.0:
            c[i] = 2
        elif v < 0.3:
            c[i] = 3
        else:
            c[i] = 4
''', 'cls', {'x': F(40), 'c': I(40)}, _elif)


def _cond(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        d['y'][i] = v * v if v > 0.0 else -v * 0.5
case('conditional_expr', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        y[i] = v * v if v > 0.0 else -v * 0.5
''', 'k', {'x': F(20), 'y': F(20)}, _cond, grad=True)


def _sc(d):
    n = len(d['x'])
    for i in range(n):
        d['c'][i] = 1 if (i + 1 < n and d['x'][i + 1] > 0.0) or (i == 0) else 0
case('short_circuit_guard', '''
kernel k(x: f32[n], c: i32[n]):
    for i in range(n):
        if (i + 1 < n and x[i + 1] > 0.0) or i == 0:
            c[i] = 1
        else:
            c[i] = 0
''', 'k', {'x': F(15), 'c': I(15)}, _sc)


def _not(d):
    for i in range(len(d['x'])):
        b = d['x'][i] > 0.0
        d['c'][i] = 7 if not b else 9
case('not_bool_local', '''
kernel k(x: f32[n], c: i32[n]):
    for i in range(n):
        b = x[i] > 0.0
        if not b:
            c[i] = 7
        else:
            c[i] = 9
''', 'k', {'x': F(15), 'c': I(15)}, _not)


def _idiv(d):
    for i in range(len(d['a'])):
        a, b = d['a'][i], d['b'][i]
        d['q'][i] = a // b
        d['r'][i] = a % b
case('int_floordiv_mod', '''
kernel k(a: i32[n], b: i32[n], q: i32[n], r: i32[n]):
    for i in range(n):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
''', 'k', {'a': Arr('i4', (8,), [7, -7, 7, -7, 0, 13, -13, 100]),
           'b': Arr('i4', (8,), [2, 2, -2, -2, 5, 4, 4, -7]), 'q': I(8), 'r': I(8)}, _idiv)


def _fdiv(d):
    for i in range(len(d['a'])):
        a, b = d['a'][i], d['b'][i]
        d['q'][i] = math.floor(a / b)
        d['r'][i] = a - b * math.floor(a / b)
case('float_floordiv_mod', '''
kernel k(a: f32[n], b: f32[n], q: f32[n], r: f32[n]):
    for i in range(n):
        q[i] = a[i] // b[i]
        r[i] = a[i] % b[i]
''', 'k', {'a': Arr('f4', (6,), [7.5, -7.5, 7.5, -7.5, 0.25, 3.0]),
           'b': Arr('f4', (6,), [2.0, 2.0, -2.0, -2.0, 0.5, 1.5]), 'q': F(6), 'r': F(6)}, _fdiv)


def _truediv(d):
    for i in range(len(d['a'])):
        d['y'][i] = d['a'][i] / d['b'][i]
case('int_truediv_is_f32', '''
kernel k(a: i32[n], b: i32[n], y: f32[n]):
    for i in range(n):
        y[i] = a[i] / b[i]
''', 'k', {'a': I(10, lo=-20, hi=20), 'b': I(10, lo=1, hi=6), 'y': F(10)}, _truediv)


def _pow(d):
    for i in range(len(d['a'])):
        d['p'][i] = d['a'][i] ** d['e'][i]
        d['y'][i] = d['x'][i] ** 2.5 + d['x'][i] ** 2
case('pow_int_float', '''
kernel k(a: i32[n], e: i32[n], p: i32[n], x: f32[n], y: f32[n]):
    for i in range(n):
        p[i] = a[i] ** e[i]
        y[i] = x[i] ** 2.5 + x[i] ** 2
''', 'k', {'a': I(8, lo=-3, hi=4), 'e': I(8, lo=0, hi=5), 'p': I(8), 'x': F(8, lo=0.1, hi=2.0),
           'y': F(8)}, _pow, grad=True, exclude_grad=())


def _m1(d):
    for i in range(len(d['x'])):
        x = d['x'][i]
        d['y'][i] = math.sin(x) + math.cos(x) * math.tan(x * 0.5) + math.exp(x) + math.log(x + 2.0) \
            + math.sqrt(x + 1.5)
case('math_1', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        y[i] = sin(v) + cos(v) * tan(v * 0.5) + exp(v) + log(v + 2.0) + sqrt(v + 1.5)
''', 'k', {'x': F(25), 'y': F(25)}, _m1, grad=True)


def _m2(d):
    for i in range(len(d['x'])):
        x = d['x'][i] * 0.9
        d['y'][i] = math.asin(x) + math.acos(x) * math.atan(x) + math.atan2(x, 0.7) \
            + math.tanh(x * 2.0) + 1.0 / math.sqrt(x + 2.0)
case('math_2', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i] * 0.9
        y[i] = asin(v) + acos(v) * atan(v) + atan2(v, 0.7) + tanh(v * 2.0) + rsqrt(v + 2.0)
''', 'k', {'x': F(25), 'y': F(25)}, _m2, grad=True)


def _m3(d):
    for i in range(len(d['x'])):
        x = d['x'][i]
        d['y'][i] = abs(x) + math.floor(x * 3.0) + math.ceil(x * 3.0) + math.pow(abs(x) + 0.5, 1.7) \
            + min(x, 0.2) + max(x, -0.1) + min(max(x * 2.0, -0.5), 0.5) + (x if x > 0.0 else 0.3 * x)
case('math_3', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        y[i] = abs(v) + floor(v * 3.0) + ceil(v * 3.0) + pow(abs(v) + 0.5, 1.7) + min(v, 0.2) + max(v, -0.1) + clamp(v * 2.0, -0.5, 0.5) + select(v > 0.0, v, 0.3 * v)
''', 'k', {'x': F(25), 'y': F(25)}, _m3, grad=True, seed=5)


def _mi(d):
    for i in range(len(d['a'])):
        a = d['a'][i]
        d['y'][i] = abs(a) + min(a, 3) * 10 + max(a, -2) * 100 + min(max(a, -4), 4) * 1000 \
            + (a if a > 0 else -a - 1) * 10000
case('math_int', '''
kernel k(a: i32[n], y: i32[n]):
    for i in range(n):
        v = a[i]
        y[i] = abs(v) + min(v, 3) * 10 + max(v, -2) * 100 + clamp(v, -4, 4) * 1000 + select(v > 0, v, -v - 1) * 10000
''', 'k', {'a': I(20, lo=-9, hi=9), 'y': I(20)}, _mi)


def _cast(d):
    for i in range(len(d['x'])):
        d['t'][i] = int(d['x'][i])
        d['y'][i] = float(d['t'][i]) * 0.5 + float(d['k'][i])
case('casts', '''
kernel k(x: f32[n], k: i32[n], t: i32[n], y: f32[n]):
    for i in range(n):
        ti = i32(x[i])
        t[i] = ti
        y[i] = f32(ti) * 0.5 + f32(k[i])
''', 'k', {'x': F(20, lo=-10, hi=10), 'k': I(20, lo=-5, hi=5), 't': I(20), 'y': F(20)}, _cast)


def _hist(d):
    for i in range(len(d['v'])):
        d['h'][d['v'][i] % 8] += 1
case('atomic_histogram', '''
kernel hist(v: i32[n], h: i32[8]):
    for i in range(n):
        h[v[i] % 8] += 1
''', 'hist', {'v': I(501, lo=0, hi=1000), 'h': Arr('i4', (8,), [0] * 8)}, _hist)


def _sum(d):
    for i in range(len(d['x'])):
        d['t'][0] += d['x'][i] * d['x'][i]
        d['t'][1] -= d['x'][i]
case('atomic_sum_f32', '''
kernel sumsq(x: f32[n], t: f32[2]):
    for i in range(n):
        t[0] += x[i] * x[i]
        t[1] -= x[i]
''', 'sumsq', {'x': F(203), 't': F(2)}, _sum, grad=True, rtol=1e-4)


def _amax(d):
    for i in range(len(d['x'])):
        d['mx'][0] = max(d['mx'][0], d['x'][i])
        d['mn'][0] = min(d['mn'][0], d['x'][i])
        d['imx'][0] = max(d['imx'][0], d['k'][i])
        d['imn'][0] = min(d['imn'][0], d['k'][i])
case('atomic_max_min', '''
kernel k(x: f32[n], k: i32[n], mx: f32[1], mn: f32[1], imx: i32[1], imn: i32[1]):
    for i in range(n):
        atomic_max(mx[0], x[i])
        atomic_min(mn[0], x[i])
        atomic_max(imx[0], k[i])
        atomic_min(imn[0], k[i])
''', 'k', {'x': F(100), 'k': I(100, lo=-50, hi=50), 'mx': Arr('f4', (1,), [-5.0]),
           'mn': Arr('f4', (1,), [5.0]), 'imx': Arr('i4', (1,), [-100]),
           'imn': Arr('i4', (1,), [100])}, _amax)


def _shape(d):
    n, m = d['a'].shape
    for i in range(n):
        d['y'][i] = n * 100 + m + d['a'][i, m - 1]
case('shape_symbols_values', '''
kernel k(a: f32[n, m], y: f32[n]):
    for i in range(n):
        y[i] = n * 100 + a.shape[1] + a[i, m - 1]
''', 'k', {'a': F(4, 3), 'y': F(4)}, _shape, grad=True)


def _lit(d):
    n = d['w'].shape[1]
    for i in range(n):
        d['y'][i] = d['w'][0, i] + d['w'][1, i] * 2.0 + d['w'][2, i] * 3.0
case('literal_dims', '''
kernel k(w: f32[3, n], y: f32[n]):
    for i in range(n):
        y[i] = w[0, i] + w[1, i] * 2.0 + w[2, i] * 3.0
''', 'k', {'w': F(3, 5), 'y': F(5)}, _lit, grad=True)


def _serial(d):
    d['t'][0] = 0.0
    for i in range(len(d['x'])):
        d['t'][0] += d['x'][i]
    d['t'][1] = d['t'][0] * 2.0
case('toplevel_serial', '''
kernel k(x: f32[n], t: f32[2]):
    t[0] = 0.0
    for i in range(n):
        t[0] += x[i]
    t[1] = 1.0
''', 'k', {'x': F(50), 't': F(2)}, lambda d: (d['t'].__setitem__(0, sum(d['x'].data)), d['t'].__setitem__(1, 1.0)))


def _glob(d):
    a = d['s'] * 2.0 + 1.0
    b = a * a
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] * a + b
case('toplevel_locals', '''
kernel k(x: f32[n], y: f32[n], s: f32):
    a = s * 2.0 + 1.0
    b = a * a
    for i in range(n):
        y[i] = x[i] * a + b
''', 'k', {'x': F(10), 'y': F(10), 's': 0.3}, _glob, grad=True)


def _glob2(d):
    a = 0.0
    for i in range(len(d['w'])):
        a = a + d['w'][i] * d['w'][i]
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] * a
case('toplevel_while_global_grad', '''
kernel k(w: f32[m], x: f32[n], y: f32[n]):
    a = 0.0
    j = 0
    while j < m:
        a = a + w[j] * w[j]
        j += 1
    for i in range(n):
        y[i] = x[i] * a
''', 'k', {'w': F(4), 'x': F(6), 'y': F(6)}, _glob2, grad=True)


def _sib(d):
    n = len(d['x'])
    for i in range(n):
        d['y'][i] = d['x'][i] * 2.0
    for i in range(n):
        d['z'][i] = d['x'][(i + 1) % n] + 1.0
case('sibling_loops', '''
kernel k(x: f32[n], y: f32[n], z: f32[n]):
    for i in range(n):
        y[i] = x[i] * 2.0
    for i in range(n):
        z[i] = x[(i + 1) % n] + 1.0
''', 'k', {'x': F(11), 'y': F(11), 'z': F(11)}, _sib, grad=True)


def _bools(d):
    for i in range(len(d['x'])):
        up = True
        v = d['x'][i]
        cnt = 0
        for j in range(6):
            if up:
                v = v * 1.5
            else:
                v = v - 0.25
            if v > 1.0:
                up = False
                cnt += 1
        d['y'][i] = v + cnt
case('bool_state', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        up = True
        v = x[i]
        cnt = 0
        for j in range(6):
            if up:
                v = v * 1.5
            else:
                v = v - 0.25
            if v > 1.0:
                up = False
                cnt += 1
        y[i] = v + cnt
''', 'k', {'x': F(20, lo=0.1, hi=0.9), 'y': F(20)}, _bools, grad=True, seed=7)


def _chain(d):
    for i in range(len(d['x'])):
        d['c'][i] = 1 if -0.5 < d['x'][i] < 0.5 else 0
case('chained_compare', '''
kernel k(x: f32[n], c: i32[n]):
    for i in range(n):
        if -0.5 < x[i] < 0.5:
            c[i] = 1
        else:
            c[i] = 0
''', 'k', {'x': F(30), 'c': I(30)}, _chain)


def _wrap(d):
    for i in range(len(d['a'])):
        d['y'][i] = wrap32(d['a'][i] * 1000003 + 2147483000)
case('i32_wraparound', '''
kernel k(a: i32[n], y: i32[n]):
    for i in range(n):
        y[i] = a[i] * 1000003 + 2147483000
''', 'k', {'a': I(10, lo=0, hi=5000), 'y': I(10)}, _wrap)


def _mixed(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['k'][i] * d['x'][i] + d['k'][i] / 4 + 1
case('mixed_promotion', '''
kernel k(x: f32[n], k: i32[n], y: f32[n]):
    for i in range(n):
        y[i] = k[i] * x[i] + k[i] / 4 + 1
''', 'k', {'x': F(10), 'k': I(10, lo=-5, hi=5), 'y': F(10)}, _mixed, grad=True)


def _stencil(d):
    n, m = d['u'].shape
    for i in range(n):
        for j in range(m):
            if 0 < i < n - 1 and 0 < j < m - 1:
                d['v'][i, j] = 0.25 * (d['u'][i - 1, j] + d['u'][i + 1, j] + d['u'][i, j - 1]
                                       + d['u'][i, j + 1]) - d['u'][i, j]
            else:
                d['v'][i, j] = d['u'][i, j]
case('stencil_2d', '''
kernel lap(u: f32[n, m], v: f32[n, m]):
    for i, j in ndrange(n, m):
        if i > 0 and i < n - 1 and j > 0 and j < m - 1:
            v[i, j] = 0.25 * (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) - u[i, j]
        else:
            v[i, j] = u[i, j]
''', 'lap', {'u': F(6, 7), 'v': F(6, 7)}, _stencil, grad=True)


def _nb(d):
    x, y, u, w = d['x'], d['y'], d['u'], d['w']
    for i in range(1, len(x) - 1):
        y[i] = x[i - 1] - 2.0 * x[i] + x[i + 1]
    p, q = u.shape
    for i in range(p - 2):
        for j in range(q - 40):
            w[i, j] = u[i + 1, j + 1] * u[i + 2, j + 40] + x[i + 300]
# Neighbours at constant offsets: the optimizer fuses the index arithmetic into the accesses
# (LDO, LD2O; the adjoint's ATOMADDFO, ATOMADDF2O). 1-D offsets are 16-bit (x[i + 300]);
# rank-2 ones -32..31 (u[i + 1, j + 1]: both in one LD2O; u[i + 2, j + 40] keeps its ADDIKs).
case('neighbors', '''
kernel nb(x: f32[n], y: f32[n], u: f32[p, q], w: f32[p, q]):
    for i in range(1, n - 1):
        y[i] = x[i - 1] - 2.0 * x[i] + x[i + 1]
    for i, j in ndrange(p - 2, q - 40):
        w[i, j] = u[i + 1, j + 1] * u[i + 2, j + 40] + x[i + 300]
''', 'nb', {'x': F(305), 'y': F(305), 'u': F(6, 45), 'w': F(6, 45)}, _nb, grad=True)



def _box(d):
    x, y = d['x'], d['y']
    for i in range(2, len(x) - 2):
        y[i] = x[i] + x[i + 1] + x[i - 2]
# Sums of neighbours: s = s + x[i + 1] is LDADDF, and its index's ADDIK fuses into it (LDADDFO).
# The bounds test, upper bound first, is one JOUTI (the two JGEIs in the other order).
case('box3', '''
kernel box(x: f32[n], y: f32[n]):
    for i in range(n):
        if i < n - 2 and i > 1:
            s = x[i]
            s = s + x[i + 1]
            s = s + x[i - 2]
            y[i] = s
''', 'box', {'x': F(37), 'y': F(37)}, _box, grad=True)

def _blur(d):
    u, v = d['u'], d['v']
    n, m = u.shape
    for i in range(1, n - 1):
        for j in range(1, m - 1):
            v[i, j] = (u[i - 1, j - 1] + u[i - 1, j + 1] + u[i + 1, j - 1] + u[i + 1, j + 1]) * 0.0625 \
                + (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) * 0.125 + u[i, j] * 0.25
# A 9-point stencil: the diagonal neighbours' two ADDIKs both fuse into one LD2O (the adjoint's
# ATOMADDF2O).
case('blur9', '''
kernel blur(u: f32[n, m], v: f32[n, m]):
    for i, j in ndrange(n, m):
        if i > 0 and i < n - 1 and j > 0 and j < m - 1:
            v[i, j] = (u[i - 1, j - 1] + u[i - 1, j + 1] + u[i + 1, j - 1] + u[i + 1, j + 1]) * 0.0625 + (u[i - 1, j] + u[i + 1, j] + u[i, j - 1] + u[i, j + 1]) * 0.125 + u[i, j] * 0.25
''', 'blur', {'u': F(7, 6), 'v': F(7, 6)}, _blur, grad=True)


def _tri(d):
    n = len(d['x'])
    for i in range(n):
        acc = 0.0
        v = 1.0
        for j in range(i):
            acc += d['x'][j] * v
            v = v * 0.9 + d['x'][i] * 0.1
        d['y'][i] = acc
case('triangular', '''
kernel tri(x: f32[n], y: f32[n]):
    for i in range(n):
        acc = 0.0
        v = 1.0
        for j in range(i):
            acc += x[j] * v
            v = v * 0.9 + x[i] * 0.1
        y[i] = acc
''', 'tri', {'x': F(12), 'y': F(12)}, _tri, grad=True)


def _nest(d):
    n = len(d['m'])
    for i in range(n):
        v = d['x'][i]
        for j in range(d['m'][i]):
            for k in range(d['q'][i, j]):
                v = v * d['w'][k] + 0.1
        d['y'][i] = v
case('nested_dynamic', '''
kernel nd(x: f32[n], m: i32[n], q: i32[n, 4], w: f32[6], y: f32[n]):
    for i in range(n):
        v = x[i]
        for j in range(m[i]):
            for k in range(q[i, j]):
                v = v * w[k] + 0.1
        y[i] = v
''', 'nd', {'x': F(8), 'm': I(8, lo=0, hi=4), 'q': I(8, 4, lo=0, hi=6), 'w': F(6, lo=0.5, hi=1.0),
            'y': F(8)}, _nest, grad=True)


def _newton(d):
    for i in range(len(d['a'])):
        a = d['a'][i]
        x = a
        it = 0
        while abs(x * x - a) > 1e-5 * a and it < 50:
            x = 0.5 * (x + a / x)
            it += 1
        d['y'][i] = x
case('while_newton_sqrt', '''
kernel nsqrt(a: f32[n], y: f32[n]):
    for i in range(n):
        x = a[i]
        it = 0
        while abs(x * x - a[i]) > 1e-5 * a[i] and it < 50:
            x = 0.5 * (x + a[i] / x)
            it += 1
        y[i] = x
''', 'nsqrt', {'a': F(10, lo=0.5, hi=9.0), 'y': F(10)}, _newton, grad=True, gtol=5e-3)


def _before_after(d):
    for i in range(len(d['x'])):
        a = d['x'][i] * 2.0
        v = d['x'][i]
        for _ in range(d['k'][i]):
            v = v * d['r'][i]
        d['y'][i] = v + a * a
case('defined_before_used_after', '''
kernel k(x: f32[n], k: i32[n], r: f32[n], y: f32[n]):
    for i in range(n):
        a = x[i] * 2.0
        v = x[i]
        for _ in range(k[i]):
            v = v * r[i]
        y[i] = v + a * a
''', 'k', {'x': F(10), 'k': I(10, lo=0, hi=6), 'r': F(10, lo=0.5, hi=1.2), 'y': F(10)},
     _before_after, grad=True)


def _accs(d):
    for i in range(len(d['x'])):
        s = 0.0
        p = 1.0
        c = 0
        flip = False
        for j in range(d['k'][i]):
            s += d['x'][i] * j
            p = p * (1.0 + d['x'][i] * 0.1)
            c += j
            flip = not flip
            if flip:
                s = s - p * 0.01
        d['y'][i] = s + p + c * 0.001
case('carried_accumulators', '''
kernel k(x: f32[n], k: i32[n], y: f32[n]):
    for i in range(n):
        s = 0.0
        p = 1.0
        c = 0
        flip = False
        for j in range(k[i]):
            s += x[i] * j
            p = p * (1.0 + x[i] * 0.1)
            c += j
            flip = not flip
            if flip:
                s = s - p * 0.01
        y[i] = s + p + c * 0.001
''', 'k', {'x': F(10), 'k': I(10, lo=0, hi=8), 'y': F(10)}, _accs, grad=True)


def _minmax_carried(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        m = -10.0
        for j in range(5):
            v = math.sin(v * 1.3 + j)
            m = max(m, v)
            if v > 0.0:
                v = min(v * 2.0, 0.8)
            else:
                v = v - 0.1
        d['y'][i] = v + m
case('minmax_if_carried', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        m = -10.0
        for j in range(5):
            v = sin(v * 1.3 + j)
            m = max(m, v)
            if v > 0.0:
                v = min(v * 2.0, 0.8)
            else:
                v = v - 0.1
        y[i] = v + m
''', 'k', {'x': F(12), 'y': F(12)}, _minmax_carried, grad=True, seed=11)


def _bounds_mix(d):
    n = len(d['x'])
    for i in range(n):
        v = d['x'][i]
        for j in range(d['s'] + d['k'][i] - 1):
            v = v * 0.95 + 0.01 * j
        for j in range(n - i):
            v = v + d['x'][j] * 0.01
        d['y'][i] = v
case('bounds_scalar_shape_array', '''
kernel k(x: f32[n], k: i32[n], y: f32[n], s: i32):
    for i in range(n):
        v = x[i]
        for j in range(s + k[i] - 1):
            v = v * 0.95 + 0.01 * j
        for j in range(n - i):
            v = v + x[j] * 0.01
        y[i] = v
''', 'k', {'x': F(9), 'k': I(9, lo=0, hi=5), 'y': F(9), 's': 3}, _bounds_mix, grad=True)


def _inplace(d):
    for i in range(len(d['y'])):
        d['y'][i] = d['y'][i] * d['y'][i] + math.sin(d['y'][i])
case('inplace_update', '''
kernel sq(y: f32[n]):
    for i in range(n):
        y[i] = y[i] * y[i] + sin(y[i])
''', 'sq', {'y': F(10)}, _inplace, grad=True)


def _assert_ok(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] + 1.0
case('assert_passing_pass', '''
kernel k(x: f32[n], y: f32[n]):
    assert n > 0, "need data"
    for i in range(n):
        assert x[i] > -2.0
        pass
        y[i] = x[i] + 1.0
''', 'k', {'x': F(10), 'y': F(10)}, _assert_ok, grad=True)


def _ndr_grad(d):
    n, m = d['a'].shape
    for i in range(n):
        for j in range(m):
            d['out'][0] += math.exp(d['a'][i, j] * 0.5) * d['b'][j]
case('ndrange_atomic_grad', '''
kernel k(a: f32[n, m], b: f32[m], out: f32[1]):
    for i, j in ndrange(n, m):
        out[0] += exp(a[i, j] * 0.5) * b[j]
''', 'k', {'a': F(4, 5), 'b': F(5), 'out': F(1)}, _ndr_grad, grad=True)


def _divgrad(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] / (1.5 + d['z'][i]) - (d['z'][i] - d['x'][i]) * -d['x'][i]
case('div_sub_neg_grad', '''
kernel k(x: f32[n], z: f32[n], y: f32[n]):
    for i in range(n):
        y[i] = x[i] / (1.5 + z[i]) - (z[i] - x[i]) * -x[i]
''', 'k', {'x': F(10), 'z': F(10), 'y': F(10)}, _divgrad, grad=True)


def _static_nested(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        for a in range(3):
            for b in range(2):
                v = v * 0.5 + a * 0.1 + b
        d['y'][i] = v
case('static_nested_loops', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        for a in range(3):
            for b in range(2):
                v = v * 0.5 + a * 0.1 + b
        y[i] = v
''', 'k', {'x': F(7), 'y': F(7)}, _static_nested, grad=True)


def _while_break(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        n = 0
        while True:
            v = v * 1.7 + 0.05
            n += 1
            if v > 3.0 or n >= 20:
                break
        d['y'][i] = v
case('while_true_break', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        c = 0
        while True:
            v = v * 1.7 + 0.05
            c += 1
            if v > 3.0 or c >= 20:
                break
        y[i] = v
''', 'k', {'x': F(10, lo=0.05, hi=1.0), 'y': F(10)}, _while_break, grad=True, seed=13)


def _while_long(d):
    n = len(d['x'])
    for i in range(n):
        v = d['x'][i]
        j = 0
        while j < d['c'][i]:
            v = math.sin(v + j * 0.001) * 0.5 + d['x'][i]
            j += 1
        d['y'][i] = v
    for i in range(n):
        d['z'][i] += d['x'][i] * d['x'][i]
# 700 to 1300 trips a thread, the count read from the data: more than the default capacity of a
# stack with no formula (256), with no option given. Lavapipe stops such long loops (its loop
# limit, docs/backends.md): skipped there. The launch grows the stacks and reruns
# (vm/launch.c run_variant); the second statement's reverse has added into x.grad before the
# first one's overflows (a `+=` keeps its seed z.grad), so a rerun that did not restore x.grad
# would add that twice.
case('while_long_no_knob', '''
kernel k(x: f32[n], c: i32[n], y: f32[n], z: f32[n]):
    for i in range(n):
        v = x[i]
        j = 0
        while j < c[i]:
            v = sin(v + j * 0.001) * 0.5 + x[i]
            j += 1
        y[i] = v
    for i in range(n):
        z[i] += x[i] * x[i]
''', 'k', {'x': F(10), 'c': I(10, lo=700, hi=1300), 'y': F(10), 'z': F(10)}, _while_long, grad=True, seed=5,
     long_loops=True)

from vec_cases import C as VEC_CASES  # noqa: E402 (vectors, matrices and tuples)

CASES = C + VEC_CASES


def _both(d):
    for i in range(len(d['a'])):
        a, b = d['a'][i], d['b'][i]
        d['y'][i] = math.pow(a, b) + math.atan2(a, b) + min(a, b) * 2.0 + max(a, b) * 3.0 \
            + (a if a > b else b) * 0.5 + a * b
case('binary_ops_both_args', '''
kernel k(a: f32[n], b: f32[n], y: f32[n]):
    for i in range(n):
        y[i] = pow(a[i], b[i]) + atan2(a[i], b[i]) + min(a[i], b[i]) * 2.0 + max(a[i], b[i]) * 3.0 + select(a[i] > b[i], a[i], b[i]) * 0.5 + a[i] * b[i]
''', 'k', {'a': F(15, lo=0.2, hi=2.0), 'b': F(15, lo=0.2, hi=2.0), 'y': F(15)}, _both, grad=True)


def _unary_all(d):
    for i in range(len(d['x'])):
        x = d['x'][i]
        d['y'][i] = -x + abs(x - 0.05) * math.sqrt(x + 2.0) / (1.0 + x * x) + math.exp(-x) * math.log(3.0 + x)
case('unary_chain_grad', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        y[i] = -v + abs(v - 0.05) * sqrt(v + 2.0) / (1.0 + v * v) + exp(-v) * log(3.0 + v)
''', 'k', {'x': F(16), 'y': F(16)}, _unary_all, grad=True, seed=17)


def _recur(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        w = 0.0
        for t in range(d['steps'][i]):
            w = w * 0.8 + math.tanh(v)
            v = v * d['a'] + w * 0.1
        d['y'][i] = v * w
case('recurrence_steps', '''
kernel rec(x: f32[n], steps: i32[n], a: f32, y: f32[n]):
    for i in range(n):
        v = x[i]
        w = 0.0
        for t in range(steps[i]):
            w = w * 0.8 + tanh(v)
            v = v * a + w * 0.1
        y[i] = v * w
''', 'rec', {'x': F(14), 'steps': I(14, lo=0, hi=15), 'a': 0.9, 'y': F(14)}, _recur, grad=True)


# ---------------------------------------------------------------- partitioned loops
# A parallel loop whose body is one `if` on a box of its indices runs as the box (no test)
# and the boxes around it (compiler/partition.c): bounds of every form and side, ranges with
# a start, boxes that are empty, cover everything or stick out of the range, `else` and `elif`
# or none, and the adjoints of the split loops.
def _part2(d):
    n, m = d['u'].shape
    a, b = int(d['a']), int(d['b'])
    for i in range(n):
        for j in range(m):
            if i >= a and i <= n - b and 1 < j < m - 1 and j <= a * 3:
                d['v'][i, j] = d['u'][i - 1, j] * 0.5 + d['u'][i, j + 1]
            else:
                d['v'][i, j] = d['u'][i, j] * 2.0
PART2 = '''
kernel part2(u: f32[n, m], v: f32[n, m], a: i32, b: i32):
    for i, j in ndrange(n, m):
        if i >= a and i <= n - b and 1 < j < m - 1 and j <= a * 3:
            v[i, j] = u[i - 1, j] * 0.5 + u[i, j + 1]
        else:
            v[i, j] = u[i, j] * 2.0
'''
case('partition_2d', PART2, 'part2', {'u': F(9, 13), 'v': F(9, 13), 'a': 2, 'b': 3}, _part2, grad=True)
case('partition_2d_all', PART2, 'part2', {'u': F(7, 40), 'v': F(7, 40), 'a': 1, 'b': -50}, _part2, grad=True)
case('partition_2d_empty', PART2, 'part2', {'u': F(6, 9), 'v': F(6, 9), 'a': 40, 'b': 1}, _part2, grad=True)
case('partition_2d_rows', PART2, 'part2', {'u': F(5, 700), 'v': F(5, 700), 'a': 1, 'b': 2}, _part2)



def _lazyrows(d):
    x, u, s = d['x'], d['u'], d['s']
    n, m = u.shape
    for i in range(n):
        for j in range(m):
            d['w'][i, j] = u[i, j] * 2.0 + x[i] + s[i, j + 1]
# The indices read only as array indices (dvm_task_flow.idx_as_index): the CUDA/HIP plain lanes
# leave them out of the register file on the row path (DVM_GPU_F_ROW_LAZY). x[i] in a 2-D loop
# never takes the row path, and s[i, j + 1] leaves it where a row's last lane passes s's row
# (m = 300: rounds of 8 lanes 32 apart); both then write the indices and run again. The
# adjoint's x.grad[i] += ... alike.
LAZY = '''
kernel lz(x: f32[n], u: f32[n, m], s: f32[n, k], w: f32[n, m]):
    for i, j in ndrange(n, m):
        w[i, j] = u[i, j] * 2.0 + x[i] + s[i, j + 1]
'''
case('row_lazy_idx', LAZY, 'lz', {'x': F(37), 'u': F(37, 300), 's': F(37, 301), 'w': F(37, 300)}, _lazyrows)
case('row_lazy_idx_grad', LAZY, 'lz', {'x': F(3), 'u': F(3, 260), 's': F(3, 261), 'w': F(3, 260)}, _lazyrows, grad=True)

def _part1(d):
    x = d['x']
    lo, hi = int(d['lo']), int(d['hi'])
    for i in range(2, len(x.data)):
        if lo < i and i <= hi:
            d['y'][i] = x[i] * 3.0 + x[i - 2]
PART1 = '''
kernel part1(x: f32[n], y: f32[n], lo: i32, hi: i32):
    for i in range(2, n):
        if lo < i and i <= hi:
            y[i] = x[i] * 3.0 + x[i - 2]
'''
case('partition_1d', PART1, 'part1', {'x': F(50), 'y': F(50), 'lo': 4, 'hi': 20}, _part1, grad=True)
case('partition_1d_wide', PART1, 'part1', {'x': F(30), 'y': F(30), 'lo': -2147483648, 'hi': 2147483647},
     _part1, grad=True)
case('partition_1d_none', PART1, 'part1', {'x': F(30), 'y': F(30), 'lo': 2147483647, 'hi': -2147483648},
     _part1)
case('partition_1d_crossed', PART1, 'part1', {'x': F(30), 'y': F(30), 'lo': 20, 'hi': 10}, _part1)


def _part3(d):
    p, q, r = d['v'].shape
    k = int(d['k'])
    for i in range(p):
        for j in range(q):
            for l in range(r):
                if j >= k and j < q - k:
                    d['v'][i, j, l] = i * 100 + j * 10 + l
                elif l > 0:
                    d['v'][i, j, l] = -1
                else:
                    d['v'][i, j, l] = -2
PART3 = '''
kernel part3(v: i32[p, q, r], k: i32):
    for i, j, l in ndrange(p, q, r):
        if j >= k and j < q - k:
            v[i, j, l] = i * 100 + j * 10 + l
        elif l > 0:
            v[i, j, l] = -1
        else:
            v[i, j, l] = -2
'''
case('partition_3d', PART3, 'part3', {'v': I(3, 9, 5), 'k': 2}, _part3)
case('partition_3d_empty_box', PART3, 'part3', {'v': I(3, 1, 5), 'k': 1}, _part3)


# A stop the host computes before the launch (k = n - 1), then the same global set from an
# array by device code (k = c[0]): the second loop's extent is not the host's
def _host_then_device(d):
    n = len(d['x'].data)
    for i in range(n - 1):
        d['y'][i] = d['x'][i] * 2.0
    for i in range(int(d['c'][0])):
        d['z'][i] = d['x'][i] + 1.0
case('host_then_device_stop', '''
kernel hd(x: f32[n], y: f32[n], z: f32[n], c: i32[1]):
    k = n - 1
    for i in range(k):
        y[i] = x[i] * 2.0
    k = c[0]
    for i in range(k):
        z[i] = x[i] + 1.0
''', 'hd', {'x': F(300), 'y': F(300), 'z': F(300), 'c': I(1, lo=280, hi=281)}, _host_then_device)


# ---------------------------------------------------------------- ordered stages
# Arrays written by one top-level statement and read by a later one: each statement's adjoint
# sees the arrays as they were when it ran forward (vm/launch.c run_stages).
def _normalize(d):
    n = len(d['x'].data)
    d['total'][0] = 0.0
    for i in range(n):
        d['total'][0] += d['x'][i]
    for i in range(n):
        d['out'][i] = d['x'][i] / d['total'][0]
case('stages_normalize', '''
kernel normalize(x: f32[n], total: f32[1], out: f32[n]):
    total[0] = 0.0
    for i in range(n):
        total[0] += x[i]
    for i in range(n):
        out[i] = x[i] / total[0]
''', 'normalize', {'x': F(6, lo=0.5, hi=1.5), 'total': F(1), 'out': F(6)}, _normalize, grad=True)


def _acc_read(d):
    n = len(d['x'].data)
    for i in range(n):
        d['acc'][0] += d['x'][i]
    for i in range(n):
        d['out'][i] = d['acc'][0] * d['x'][i]
case('stages_accumulator_read', '''
kernel k(x: f32[n], acc: f32[1], out: f32[n]):
    for i in range(n):
        acc[0] += x[i]
    for i in range(n):
        out[i] = acc[0] * x[i]
''', 'k', {'x': F(5), 'acc': F(1), 'out': F(5)}, _acc_read, grad=True)


def _scratch(d):
    n = len(d['x'].data)
    for i in range(n):
        d['tmp'][i] = d['x'][i] * d['x'][i]
    for i in range(n):
        d['out'][i] = math.sin(d['tmp'][i]) * 3.0
case('stages_scratch', '''
kernel scratch(x: f32[n], tmp: f32[n], out: f32[n]):
    for i in range(n):
        tmp[i] = x[i] * x[i]
    for i in range(n):
        out[i] = sin(tmp[i]) * 3.0
''', 'scratch', {'x': F(7), 'tmp': F(7), 'out': F(7)}, _scratch, grad=True)


# the same array updated in place by three statements, a serial one between, and read by the last
def _inplace(d):
    n = len(d['u'].data)
    for _ in range(2):
        for i in range(n):
            d['u'][i] = math.sin(d['u'][i]) * 0.9 + d['x'][i]
    d['s'][0] = d['u'][0] * d['u'][1]
    for i in range(n):
        d['u'][i] = d['u'][i] * d['s'][0] + d['x'][i] * d['x'][i]
case('stages_in_place', '''
kernel upd(u: f32[n], x: f32[n], s: f32[1]):
    for i in range(n):
        u[i] = sin(u[i]) * 0.9 + x[i]
    for i in range(n):
        u[i] = sin(u[i]) * 0.9 + x[i]
    s[0] = u[0] * u[1]
    for i in range(n):
        u[i] = u[i] * s[0] + x[i] * x[i]
''', 'upd', {'u': F(5), 'x': F(5), 's': F(1)}, _inplace, grad=True)


# a top-level local computed from an array a parallel loop wrote, used by the next loop
def _global_from_array(d):
    n = len(d['x'].data)
    for i in range(n):
        d['y'][i] = d['x'][i] * d['x'][i]
    g = d['y'][0] + d['y'][n - 1]
    for i in range(n):
        d['z'][i] = d['y'][i] * g
case('stages_global_from_array', '''
kernel g(x: f32[n], y: f32[n], z: f32[n]):
    for i in range(n):
        y[i] = x[i] * x[i]
    g = y[0] + y[n - 1]
    for i in range(n):
        z[i] = y[i] * g
''', 'g', {'x': F(4), 'y': F(4), 'z': F(4)}, _global_from_array, grad=True)


# a serial recurrence through an array within one parallel iteration: the reverse replays the
# stores and restores them
def _recurrence(d):
    n, m = d['y'].shape
    for i in range(n):
        for j in range(1, m):
            d['y'][i, j] = d['y'][i, j - 1] * d['x'][i, j]
case('stages_recurrence', '''
kernel rec(x: f32[n, m], y: f32[n, m]):
    for i in range(n):
        for j in range(1, m):
            y[i, j] = y[i, j - 1] * x[i, j]
''', 'rec', {'x': F(3, 4), 'y': F(3, 4)}, _recurrence, grad=True)


# within one parallel loop: a scratch element stored then read, an element += then read, and
# an element updated in place by a serial loop (sin(u) * 0.9 + x, three times)
def _within(d):
    n = len(d['x'].data)
    for i in range(n):
        d['tmp'][i] = d['x'][i] * d['x'][i]
        d['acc'][i] += d['tmp'][i] * 0.5
        d['out'][i] = math.sin(d['tmp'][i]) * d['acc'][i]
        for _ in range(3):
            d['u'][i] = math.sin(d['u'][i]) * 0.9 + d['x'][i]
case('stages_within_loop', '''
kernel w(x: f32[n], tmp: f32[n], acc: f32[n], out: f32[n], u: f32[n]):
    for i in range(n):
        tmp[i] = x[i] * x[i]
        acc[i] += tmp[i] * 0.5
        out[i] = sin(tmp[i]) * acc[i]
        for t in range(3):
            u[i] = sin(u[i]) * 0.9 + x[i]
''', 'w', {'x': F(6), 'tmp': F(6), 'acc': F(6), 'out': F(6), 'u': F(6)}, _within, grad=True)

# ---------------------------------------------------------------- values that reach no gradient
# Assignments whose value reaches no output get no reverse work (compiler/autodiff.c,
# find_useful): their partial derivatives, evaluated at values that overflow to inf or NaN
# where nothing reads them, would turn a zero adjoint into NaN (0 * inf). Each case below
# gave NaN gradients before; the first also overflowed v0's adstack at the default capacity.
def _dead_wfw(d):
    for i in range(len(d['a'].data)):
        d['L'][0] += 1.0  # v0 and v1 feed nothing: L does not depend on p
case('dead_nan_while_for_while', '''
kernel k(p: f32[m], a: i32[n], L: f32[1]):
    for i in range(n):
        v1 = p[1]
        it2 = 0
        while v1 < 1.59 and it2 < a[i] + 2:
            it2 += 1
            for j in range(a[i]):
                it9 = 0
                while v1 < 1.57 and it9 < a[i] + 2:
                    it9 += 1
                    v1 = v1 * 1.25 + 0.1
                    v0 = sqrt((v1 - p[(j + 1) % m]) * (v1 - p[(j + 1) % m]) + 0.5)
                    v0 = (v0 / (1.0 + v0 * v0)) / (1.0 + (v0 / (1.0 + v0 * v0)) * (v0 / (1.0 + v0 * v0)))
        L[0] += 1.0
''', 'k', {'p': Arr('f4', (3,), [-0.18138, -0.92246, 0.68435]), 'a': Arr('i4', (3,), [3, 5, 1]),
          'L': Arr('f4', (1,), [0.0])}, _dead_wfw, grad=True)


def _dead_def(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] * 2.0
case('dead_nan_overwritten_def', '''
kernel k(x: f32[n], y: f32[n]):
    for i in range(n):
        v = 1.0 / (x[i] - x[i])
        v = x[i] * 2.0
        y[i] = v
''', 'k', {'x': F(8), 'y': F(8)}, _dead_def, grad=True)


def _dead_global(d):
    g = d['x'][0]
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] * g
case('dead_nan_serial_global', '''
kernel k(x: f32[n], y: f32[n]):
    g = x[0]
    h = sqrt(g - g - 1.0)
    for i in range(n):
        y[i] = x[i] * g
''', 'k', {'x': F(8), 'y': F(8)}, _dead_global, grad=True)


def _dead_in_branches(d):
    for i in range(len(d['x'])):
        d['y'][i] = d['x'][i] * d['x'][i] + d['x'][i] * 3.0
case('dead_nan_under_loop_and_if', '''
kernel k(x: f32[n], c: i32[n], y: f32[n]):
    for i in range(n):
        s = x[i]
        for j in range(c[i]):
            s = s * 10.0
            t = s * s
            w = t / t
        v = x[i]
        if x[i] > -0.5:
            u = log(x[i] - 2.0)
            u = u * u
        y[i] = v * v + x[i] * 3.0
''', 'k', {'x': F(8), 'c': I(8, lo=0, hi=60), 'y': F(8)}, _dead_in_branches, grad=True)


def _dead_fwf(d):
    for i in range(len(d['x'])):
        v = d['x'][i]
        for j in range(d['c'][i]):
            for _ in range(d['c'][i]):
                v = v * 0.5 + 1.0
        d['y'][i] = v
case('dead_nan_for_while_for', '''
kernel k(x: f32[n], c: i32[n], y: f32[n]):
    for i in range(n):
        v = x[i]
        w = x[i]
        for j in range(c[i]):
            it = 0
            while it < c[i]:
                it += 1
                for q in range(3):
                    w = w * 1e10
                    u = w / (w * w)
                v = v * 0.5 + 1.0
        y[i] = v
''', 'k', {'x': F(8), 'c': I(8, lo=0, hi=5), 'y': F(8)}, _dead_fwf, grad=True)


# ---------------------------------------------------------------- serial loops of statements
# `for t in serial(range(...))` at top level: each trip runs its statements in order; the
# adjoint reverses the trips, each statement seeing the arrays as that trip left them
def _time_loop(d):
    n = len(d['u'].data)
    for _ in range(d['T']):
        for i in range(n):
            d['u'][i] = math.sin(d['u'][i]) * 0.9 + d['x'][i]
case('serial_loop_in_place', '''
kernel sim(u: f32[n], x: f32[n], T: i32):
    for t in serial(range(T)):
        for i in range(n):
            u[i] = sin(u[i]) * 0.9 + x[i]
''', 'sim', {'u': F(5), 'x': F(5), 'T': 7}, _time_loop, grad=True)


def _spring_loop(d):
    n = len(d['u'].data)
    s = 0.0
    for t in range(1, d['T']):
        for i in range(n):
            d['v'][i] = d['v'][i] * 0.9 + (d['x'][i] - d['u'][i]) * 0.1 * t
        s = s + d['v'][0]
        for i in range(n):
            d['u'][i] = d['u'][i] + d['v'][i] * 0.1
    for i in range(n):
        d['L'][0] += d['u'][i] * d['u'][i] * s
case('serial_loop_stages', '''
kernel sim2(u: f32[n], v: f32[n], x: f32[n], L: f32[1], T: i32):
    s = 0.0
    for t in serial(range(1, T)):
        for i in range(n):
            v[i] = v[i] * 0.9 + (x[i] - u[i]) * 0.1 * t
        s = s + v[0]
        for i in range(n):
            u[i] = u[i] + v[i] * 0.1
    for i in range(n):
        L[0] += u[i] * u[i] * s
''', 'sim2', {'u': F(4), 'v': F(4), 'x': F(4), 'L': F(1), 'T': 6}, _spring_loop, grad=True)


# a trip count read from an array, and a loop with no trips
def _loop_from_array(d):
    n = len(d['x'].data)
    for t in range(int(d['k'][0])):
        for i in range(n):
            d['y'][i] = d['y'][i] * d['x'][i] + t
case('serial_loop_bound_from_array', '''
kernel k(x: f32[n], y: f32[n], k: i32[1]):
    for t in serial(range(k[0])):
        for i in range(n):
            y[i] = y[i] * x[i] + t
''', 'k', {'x': F(4), 'y': F(4), 'k': I(1, lo=3, hi=3)}, _loop_from_array, grad=True)
case('serial_loop_no_trips', '''
kernel k(x: f32[n], y: f32[n], k: i32[1]):
    for t in serial(range(k[0])):
        for i in range(n):
            y[i] = y[i] * x[i] + t
''', 'k', {'x': F(4), 'y': F(4), 'k': I(1, lo=0, hi=0)}, _loop_from_array, grad=True)


# serial top-level code that reads back what it stored: its reverse walks a copy of what its
# forward left back, element by element
def _serial_store_read(d):
    n = len(d['x'].data)
    c = 1
    while c < n:
        d['y'][c] = math.sin(d['y'][c - 1]) * d['x'][c] + d['y'][c]
        c += 1
    d['y'][0] = d['y'][n - 1] * d['y'][1]
case('serial_store_read', '''
kernel k(x: f32[n], y: f32[n]):
    c = 1
    while c < n:
        y[c] = sin(y[c - 1]) * x[c] + y[c]
        c += 1
    y[0] = y[n - 1] * y[1]
''', 'k', {'x': F(5), 'y': F(5)}, _serial_store_read, grad=True)

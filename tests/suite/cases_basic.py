"""The kernel corpus, part 1 (tests/suite/cases.py assembles it): elementwise kernels,
scalar parameters and shapes, helpers, loops, unrolled and self-updating loops, the GPU lanes' row
paths."""
from dvmtest import Case, F, I, wrap32

C = []


def case(*a, **k):
    C.append(Case(*a, **k))


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
# trips in its INCLT; interp_run.h) with every trip count from 24 down to 0, at the ends of
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


# spellings of one self-update loop that all compile to one fused node (issue 26: compiler/
# emit_code.c, try_fma and counted_while): both factors and the addend as parameters (FMAFR),
# commuted, a literal factor (a hoisted register) with a literal or parameter addend, and while
# loops with a counter: a plain one, one with a break that starts past its bound for some
# elements (the counter's value after the loop is read), and ones that stay while loops (the
# bound written in the body, the counter read after its increment)
def _spellings(d):
    for i in range(len(d['x'])):
        t, r, c, m = d['x'][i], d['r'], d['c'], d['m'][i]
        v, w, u, q, s, b, e, z = t, t, t, t, t, t, t, t
        for _ in range(m):
            v = v * r + c
            w = c + r * w
            u = u * 0.75 + 0.125
            q = 0.75 * q + c
        j = 0
        while j < m:
            s = s * r + 0.125
            j += 1
        k = 3
        while k < m:
            if b > 0.5:
                break
            b = b * 1.5 + 0.25
            k += 1
        h, lim = 0, m
        while h < lim:
            e = e * r + c
            lim -= 1
            h += 1
        g = 0
        while g < m:
            g += 1
            z = z * r + 0.0625 * g
        d['y'][i] = v + w + u + q + s + b + e + z + 0.01 * (j + k + h + g)
case('spellings', '''
kernel sp(x: f32[n], m: i32[n], y: f32[n], r: f32, c: f32):
    for i in range(n):
        t = x[i]
        v = t
        for _ in range(m[i]):
            v = v * r + c
        w = t
        for _ in range(m[i]):
            w = c + r * w
        u = t
        for _ in range(m[i]):
            u = u * 0.75 + 0.125
        q = t
        for _ in range(m[i]):
            q = 0.75 * q + c
        j = 0
        s = t
        while j < m[i]:
            s = s * r + 0.125
            j += 1
        k = 3
        b = t
        while k < m[i]:
            if b > 0.5:
                break
            b = b * 1.5 + 0.25
            k += 1
        h = 0
        lim = m[i]
        e = t
        while h < lim:
            e = e * r + c
            lim -= 1
            h += 1
        g = 0
        z = t
        while g < m[i]:
            g += 1
            z = z * r + 0.0625 * f32(g)
        y[i] = v + w + u + q + s + b + e + z + 0.01 * f32(j + k + h + g)
''', 'sp', {'x': F(23, lo=-0.9, hi=0.9), 'm': I(23, lo=0, hi=24), 'y': F(23), 'r': 0.75, 'c': 0.125}, _spellings, grad=True)

# runs of FMAF/FMAFK nodes into one register, which the scalar C interpreter runs in one
# handler (interp_ops.h): v * v + K (the factor is the accumulator: the run stops), the three
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
# GPU lanes' row path (engine_lanes.h, ROW1_/ROW2_: a thread's 8 lanes 32 iterations apart in
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


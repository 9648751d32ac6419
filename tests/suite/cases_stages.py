"""The kernel corpus, part 3 (tests/suite/cases.py assembles it): partitioned loops, ordered
stages, values that reach no gradient, serial loops of statements."""
import math

from dvmtest import Arr, Case, F, I

C = []


def case(*a, **k):
    C.append(Case(*a, **k))


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
kernel normalize_by_total(x: f32[n], total: f32[1], out: f32[n]):
    total[0] = 0.0
    for i in range(n):
        total[0] += x[i]
    for i in range(n):
        out[i] = x[i] / total[0]
''', 'normalize_by_total', {'x': F(6, lo=0.5, hi=1.5), 'total': F(1), 'out': F(6)}, _normalize, grad=True)


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

"""Vector, matrix and tuple kernels (docs/language.md "Vectors, matrices and tuples"), with
float64 references in plain Python: vectors are lists, matrices lists of rows. The harness
checks forward values, and gradients in both modes against finite differences of these
references."""
import math

from dvmtest import Case, F

C = []


def case(*a, **k):
    C.append(Case(*a, **k))


# ---------------------------------------------------------------- reference helpers
def get(a, i, n):
    return [a[i, k] for k in range(n)]


def getm(a, i, n):
    return [[a[i, r, k] for k in range(n)] for r in range(n)]


def put(a, i, v):
    for k, x in enumerate(v):
        a[i, k] = x


def add(a, b):
    return [x + y for x, y in zip(a, b)]


def sub(a, b):
    return [x - y for x, y in zip(a, b)]


def scale(a, s):
    return [x * s for x in a]


def dot(a, b):
    return sum(x * y for x, y in zip(a, b))


def cross(a, b):
    return [a[1] * b[2] - a[2] * b[1], a[2] * b[0] - a[0] * b[2], a[0] * b[1] - a[1] * b[0]]


def length(a):
    return math.sqrt(dot(a, a))


def normalize(a):
    return scale(a, 1.0 / length(a))


def matvec(m, v):
    return [dot(r, v) for r in m]


def vecmat(v, m):
    return [sum(v[k] * m[k][j] for k in range(len(v))) for j in range(len(v))]


def matmul(a, b):
    n = len(a)
    return [[sum(a[i][k] * b[k][j] for k in range(n)) for j in range(n)] for i in range(n)]


def transpose(m):
    return [list(r) for r in zip(*m)]


def outer(a, b):
    return [[x * y for y in b] for x in a]


def det(m):
    n = len(m)
    if n == 1:
        return m[0][0]
    return sum((-1) ** j * m[0][j] * det([r[:j] + r[j + 1:] for r in m[1:]]) for j in range(n))


def inverse(m):
    n, d = len(m), det(m)
    return [[(-1) ** (i + j) * det([r[:i] + r[i + 1:] for k, r in enumerate(m) if k != j]) / d for j in range(n)] for i in range(n)]


def trace(m):
    return sum(m[i][i] for i in range(len(m)))


def madd(a, b):
    return [add(r, s) for r, s in zip(a, b)]


def eye(n, s):
    return [[s if i == j else 0.0 for j in range(n)] for i in range(n)]


# ---------------------------------------------------------------- forms
def _vec_forms(d):
    for i in range(len(d['x'])):
        v = get(d['x'], i, 3)
        a = add([1.0 * v[0], 2.0 * v[1], 3.0 * v[2]], [2.0] * 3)
        a[1] = a[1] * 2.0
        b = sub(scale(a, 0.5), [1.0 / x for x in [v[0] + 2.0, v[1] + 2.0, v[2] + 2.0]])
        b = [-x for x in b]
        b[2] += v[0]
        c = [0.0, 0.0, 0.0]
        for k in range(3):
            c[k] = b[k] * v[(k + 1) % 3]
        w = [d['s'] - x for x in c]
        w = scale(w, 1.5)
        put(d['y'], i, add(w, [a[2], b[0], v[1]]))
        d['z'][i] = w[0] + d['x'][i, 2] + d['x'][i, 1]
case('vec_forms', '''
kernel k(x: vec3[n], y: vec3[n], z: f32[n], s: f32):
    for i in range(n):
        v = x[i]
        a = vec3(1.0, 2.0, 3.0) * v + 2.0
        a.y = a.y * 2.0
        b = a * 0.5 - 1.0 / (v + vec3(2.0))
        b = -b
        b[2] += v.x
        c = vec3(0.0)
        for k in static(range(3)):
            c[k] = b[k] * v[(k + 1) % 3]
        w = s - c
        w *= 1.5
        y[i] = w + vec3(a.z, b.x, v[1])
        z[i] = w.x + x[i].z + x[i, 1]
''', 'k', {'x': F(7, 3), 'y': F(7, 3), 'z': F(7), 's': 0.25}, _vec_forms, grad=True)


def _vec_builtins(d):
    for i in range(len(d['a'])):
        a, b = get(d['a'], i, 3), get(d['b'], i, 3)
        a = add(a, [2.0, 0.0, 0.0])  # keeps |a| away from 0
        d['s'][i] = dot(a, b) + length(b)
        put(d['y'], i, add(cross(a, b), scale(normalize(a), length(b))))
case('vec_builtins', '''
kernel k(a: vec3[n], b: vec3[n], s: f32[n], y: vec3[n]):
    for i in range(n):
        u = a[i] + vec3(2.0, 0.0, 0.0)
        v = b[i]
        s[i] = dot(u, v) + length(v)
        y[i] = cross(u, v) + normalize(u) * length(v)
''', 'k', {'a': F(9, 3), 'b': F(9, 3), 's': F(9), 'y': F(9, 3)}, _vec_builtins, grad=True)


def _vec_matrix(d):
    for i in range(len(d['a'])):
        a, b, m = get(d['a'], i, 3), get(d['b'], i, 3), getm(d['m'], i, 3)
        p = matmul(m, transpose(outer(a, b)))
        w = add(matvec(p, a), vecmat(a, m))
        put(d['y'], i, w)
        q = [[p[r][k] * 0.5 + m[r][k] for k in range(3)] for r in range(3)]
        for r in range(3):
            for k in range(3):
                d['o'][i, r, k] = q[r][k]
        d['t'][i] = trace(p) + m[1][2] + q[2][0]
case('vec_matrix', '''
kernel k(a: vec3[n], b: vec3[n], m: mat3[n], y: vec3[n], o: mat3[n], t: f32[n]):
    for i in range(n):
        u = a[i]
        M = m[i]
        p = M @ transpose(outer(u, b[i]))
        y[i] = p @ u + u @ M
        q = p * 0.5 + M
        o[i] = q
        t[i] = trace(p) + m[i, 1, 2] + q[2, 0]
''', 'k', {'a': F(5, 3), 'b': F(5, 3), 'm': F(5, 3, 3), 'y': F(5, 3), 'o': F(5, 3, 3), 't': F(5)}, _vec_matrix, grad=True)


def _vec_det_inv(d):
    for i in range(len(d['m2'])):
        tot = 0.0
        for n, key in ((2, 'm2'), (3, 'm3'), (4, 'm4')):
            m = madd(getm(d[key], i, n), eye(n, 3.0))
            inv = inverse(m)
            tot += det(m) * 0.1 + trace(inv) + inv[0][n - 1]
            if n == 3:
                for r in range(3):
                    for k in range(3):
                        d['o'][i, r, k] = inv[r][k]
        d['t'][i] = tot
case('vec_det_inverse', '''
kernel k(m2: mat2[n], m3: mat3[n], m4: mat4[n], o: mat3[n], t: f32[n]):
    for i in range(n):
        a = m2[i] + mat2(3.0, 0.0, 0.0, 3.0)
        b = m3[i] + mat3(vec3(3.0, 0.0, 0.0), vec3(0.0, 3.0, 0.0), vec3(0.0, 0.0, 3.0))
        c = m4[i] + 3.0 * mat4(1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 0.0, 1.0)
        ia = inverse(a)
        ib = inverse(b)
        ic = inverse(c)
        o[i] = ib
        t[i] = determinant(a) * 0.1 + trace(ia) + ia[0, 1] + determinant(b) * 0.1 + trace(ib) + ib[0][2] + determinant(c) * 0.1 + trace(ic) + ic[0, 3]
''', 'k', {'m2': F(4, 2, 2), 'm3': F(4, 3, 3), 'm4': F(4, 4, 4), 'o': F(4, 3, 3), 't': F(4)}, _vec_det_inv, grad=True)


def _vec_elementwise(d):
    for i in range(len(d['a'])):
        a, b = get(d['a'], i, 4), get(d['b'], i, 4)
        r = [abs(x) for x in a]
        r = add(r, [min(x, y) for x, y in zip(a, b)])
        r = add(r, [max(x, 0.1) for x in b])
        r = add(r, [min(max(x, -0.5), 0.5) for x in a])
        r = add(r, [x if d['s'] > 0 else y for x, y in zip(a, b)])
        put(d['y'], i, r)
case('vec_elementwise', '''
kernel k(a: vec4[n], b: vec4[n], y: vec4[n], s: f32):
    for i in range(n):
        u = a[i]
        v = b[i]
        r = abs(u) + min(u, v) + max(v, 0.1) + clamp(u, -0.5, 0.5)
        r += select(s > 0.0, u, v)
        y[i] = r
''', 'k', {'a': F(6, 4), 'b': F(6, 4), 'y': F(6, 4), 's': 1.0}, _vec_elementwise, grad=True)


def _vec_stores(d):
    n = len(d['x'])
    for i in range(n):
        v = get(d['x'], i, 2)
        for k in range(2):
            d['acc'][0, k] += v[k] * v[k]
            d['acc'][1, k] -= v[k]
        d['y'][i, 1] = v[0] * 3.0
        d['y'][i, 0] = v[1]
case('vec_stores', '''
kernel k(x: vec2[n], acc: vec2[2], y: vec2[n]):
    for i in range(n):
        v = x[i]
        acc[0] += v * v
        acc[1] -= v
        y[i].y = v.x * 3.0
        y[i][0] = v[1]
''', 'k', {'x': F(11, 2), 'acc': F(2, 2), 'y': F(11, 2)}, _vec_stores, grad=True)


def _h_reflect(v, nrm):
    d = dot(v, nrm)
    return d, sub(v, scale(nrm, 2.0 * d))


def _h_pick(v):
    if v[0] > 0:
        return scale(v, 2.0)
    return [v[1], v[0], v[2]]


def _vec_helpers(d):
    for i in range(len(d['x'])):
        v = get(d['x'], i, 3)
        nrm = normalize([0.3, 1.0, -0.2])
        s, r = _h_reflect(v, nrm)
        r = add(r, _h_pick(v))
        put(d['y'], i, scale(r, s))
case('vec_helpers', '''
def reflect(v: vec3, nrm: vec3) -> (f32, vec3):
    d = dot(v, nrm)
    return d, v - nrm * (2.0 * d)

def pick(v: vec3) -> vec3:
    if v.x > 0.0:
        return v * 2.0
    return vec3(v.y, v.x, v.z)

kernel k(x: vec3[n], y: vec3[n]):
    for i in range(n):
        v = x[i]
        s, r = reflect(v, normalize(vec3(0.3, 1.0, -0.2)))
        r += pick(v)
        y[i] = r * s
''', 'k', {'x': F(8, 3), 'y': F(8, 3)}, _vec_helpers, grad=True)


def _vec_loop(d):
    for i in range(len(d['x'])):
        p = get(d['x'], i, 3)
        vel = get(d['v'], i, 3)
        for _ in range(d['steps'][i]):
            f = scale(p, -2.0)
            vel = add(vel, scale(f, 0.1))
            vel = [vel[1], vel[0], vel[2]] if dot(vel, p) > 0.0 else vel
            p = add(p, scale(vel, 0.1))
        put(d['x'], i, p)
case('vec_loop', '''
kernel k(x: vec3[n], v: vec3[n], steps: i32[n]):
    for i in range(n):
        p = x[i]
        vel = v[i]
        for _ in range(steps[i]):
            f = -2.0 * p
            vel += f * 0.1
            vel = vec3(vel.y, vel.x, vel.z) if dot(vel, p) > 0.0 else vel
            p += vel * 0.1
        x[i] = p
''', 'k', {'x': F(6, 3), 'v': F(6, 3), 'steps': ('i4', (6,), 0, 7)}, _vec_loop, grad=True)


def _vec_serial(d):
    n = len(d['x'])
    c = [0.0, 0.0, 0.0]
    for i in range(n):
        c = add(c, get(d['x'], i, 3))
    c = scale(c, 1.0 / n)
    m = [[d['r'][0, a, b] for b in range(3)] for a in range(3)]
    for i in range(n):
        put(d['y'], i, matvec(m, sub(get(d['x'], i, 3), c)))
case('vec_serial', '''
def at(x: vec3[n], i: i32) -> vec3:
    return x[i]

kernel k(x: vec3[n], r: mat3[1], y: vec3[n]):
    c = vec3(0.0)
    for j in serial(range(1)):
        for i in range(n):
            y[i] = vec3(0.0)
    t = 0
    while t < n:
        c += at(x, t)
        t += 1
    c /= f32(n)
    R = r[0]
    for i in range(n):
        y[i] = R @ (at(x, i) - c)
''', 'k', {'x': F(5, 3), 'r': F(1, 3, 3), 'y': F(5, 3)}, _vec_serial, grad=True)

#!/usr/bin/env python3
"""Tests of the `dvm` command (spec/cli.md): usage errors exit 2, bad arguments exit 1 and
name the parameter, missing files are reported, a failed launch writes no output file, and
run/grad/jvp/compile/verify/disasm/info work on the spec's first kernel. Every check also runs
through one `dvm batch` process, which must give the same status, stdout and stderr; then
dvm batch's own checks (its records, quoting, cd, kept contexts, Ctrl-C).

usage: test_cli.py PATH/TO/dvm EXAMPLES_DIR      (python3 standard library only)"""
import os
import re
import resource
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), 'suite'))
import dvmbatch  # noqa: E402

DVM = os.path.abspath(sys.argv[1])
EXAMPLES = os.path.abspath(sys.argv[2])
CLI_DOC = os.path.join(os.path.dirname(EXAMPLES), 'docs', 'cli.md')
DAMP = os.path.join(EXAMPLES, 'damp.dvk')
failures = []
BATCH = dvmbatch.Batch(DVM)  # every check again, through one `dvm batch` process


def write_npy(path, descr, shape, values):
    fmt = {'<f4': '<%df', '<i4': '<%di'}[descr]
    dims = ''.join('%d, ' % d for d in shape) if len(shape) != 1 else '%d,' % shape[0]
    header = "{'descr': '%s', 'fortran_order': False, 'shape': (%s), }" % (descr, dims.rstrip(', ') if len(shape) > 1 else dims)
    header += ' ' * ((64 - (10 + len(header) + 1) % 64) % 64) + '\n'
    with open(path, 'wb') as f:
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(header)) + header.encode('ascii'))
        f.write(struct.pack(fmt % len(values), *values))


def read_npy(path):
    with open(path, 'rb') as f:
        data = f.read()
    assert data[:6] == b'\x93NUMPY', path
    hl = struct.unpack('<H', data[8:10])[0]
    header = data[10:10 + hl].decode('ascii')
    body = data[10 + hl:]
    code = 'f' if "'<f4'" in header else 'i'
    return [x for x in struct.unpack('<%d%s' % (len(body) // 4, code), body)]


def dvm(*args, cwd=None, preexec=None):
    p = subprocess.run([DVM] + list(args), capture_output=True, text=True, timeout=120, cwd=cwd, preexec_fn=preexec)
    return p.returncode, p.stdout, p.stderr


def check(name, args, rc_want, *needles, cwd=None, preexec=None, mirror=True):
    rc, out, err = dvm(*args, cwd=cwd, preexec=preexec)
    # the same command in the batch: exactly the same (a batch line cannot be empty, run a
    # batch or take the file size limit of preexec; --time prints times that differ from run
    # to run; mirror=False: a command that changes its own inputs gives another result again)
    if mirror and args and args[0] != 'batch' and preexec is None and '--time' not in args:
        got = BATCH.call(list(args), cwd or os.getcwd(), 120)
        if got != (rc, out, err):
            failures.append('%s through dvm batch: %r, alone %r' % (name, got, (rc, out, err)))
    text = out + err
    if rc != rc_want:
        failures.append('%s: exit %d, expected %d; output: %s' % (name, rc, rc_want, text.strip()))
    for n in needles:
        if n not in text:
            failures.append('%s: output lacks %r; output: %s' % (name, n, text.strip()))
    return rc, out, err


def limit_file_size(n):
    """A preexec_fn: writes past n bytes fail with EFBIG (SIGXFSZ ignored, as exec keeps it)."""
    def f():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
        resource.setrlimit(resource.RLIMIT_FSIZE, (n, n))
    return f


def temporaries(d):
    return [f for f in os.listdir(d) if '.tmp' in f]


def documented_messages(path):
    """The example messages of docs/cli.md: indented lines that start like an error, a
    warning or a summary line; a more indented line after one continues it."""
    msg = re.compile(r"^(dvm: (error|warning): |[\w.]+\.dvk:\d+(:\d+)?: error: |[\w.]+: (f32|i32) \()")
    found, last_indent = [], None
    for line in open(path).read().splitlines():
        indent = len(line) - len(line.lstrip())
        text = line.strip()
        if indent >= 4 and msg.match(text):
            found.append(text)
            last_indent = indent
        elif found and last_indent is not None and text and indent > last_indent:
            found[-1] += ' ' + text
        else:
            last_indent = None
    return found


def check_documented_messages(w, good, j):
    """Every example message in docs/cli.md is what the command prints, word for word."""
    d = j('doc')
    os.makedirs(d)
    dj = lambda *p: os.path.join(d, *p)
    write_npy(dj('x.npy'), '<f4', (4,), [1.0, 1.0, 1.0, 1.0])
    write_npy(dj('y.npy'), '<f4', (4,), [0.0] * 4)
    write_npy(dj('s.npy'), '<i4', (4,), [0, 1, 2, 3])
    with open(dj('k.dvk'), 'w') as f:
        f.write('kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i + 1]\n')
    with open(dj('spin.dvk'), 'w') as f:
        f.write('kernel spin(x: f32[n]):\n    for i in range(n):\n        while True:\n            x[i] = x[i] + 1.0\n')
    with open(dj('a.dvk'), 'w') as f:
        f.write('kernel k(x: f32[n], s: i32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n'
                '        for _ in range(s[i]):\n            v = sin(v) * v\n        y[i] = v\n')
    f8 = j('doc_f8')
    os.makedirs(f8)
    with open(os.path.join(f8, 'x.npy'), 'wb') as f:
        h = "{'descr': '<f8', 'fortran_order': False, 'shape': (4,), }"
        h += ' ' * ((64 - (10 + len(h) + 1) % 64) % 64) + '\n'
        f.write(b'\x93NUMPY\x01\x00' + struct.pack('<H', len(h)) + h.encode() + struct.pack('<4d', 1, 2, 3, 4))
    ex = ['examples/damp.dvk', 'damp', 'x=examples/data/x.npy', 'steps=examples/data/steps.npy',
          'y=examples/data/y.npy', 'rate=0.9', 'y.grad=1']
    root = os.path.dirname(EXAMPLES)
    summary = (['grad'] + ex, root)
    ip = j('doc_ip')
    os.makedirs(ip)
    write_npy(os.path.join(ip, 'x.npy'), '<f4', (4,), [1.0, 1.0, 1.0, 1.0])
    # (a phrase that identifies the documented message, the command that prints it, its cwd)
    producers = [
        ("missing argument 'rate'", ['run', DAMP, 'damp'] + good[:3], w),
        ("shape symbol 'n'", ['run', DAMP, 'damp', 'x=' + j('x.npy'), 'steps=' + j('steps3.npy')] + good[2:], w),
        ('must have extent 1', ['run', DAMP, 'damp', 'y=' + j('y2.npy')] + good[:2] + good[3:], w),
        ("unsupported dtype '<f8'", ['run', DAMP, 'damp', 'x=x.npy'] + good[1:], f8),
        ('no output seed', ['grad', DAMP, 'damp'] + good, w),
        ('replaces the input file', ['run', DAMP, 'damp', 'x=x.npy'] + good[1:] + ['--out', '.'], ip),
        ('y: f32 (1,)',) + summary,
        ('x.grad: f32',) + summary,
        ('y.grad: f32',) + summary,
        ('adstack overflow', ['grad', 'a.dvk', 'k', 'x=x.npy', 's=s.npy', 'y=y.npy', 'y.grad=1', '--ad-stack-size', '2'], d),
        ('out of bounds', ['run', 'k.dvk', 'k', 'x=x.npy', 'y=y.npy'], d),
        ('timed out', ['run', 'spin.dvk', 'spin', 'x=x.npy', '--backend', 'cpu', '--timeout', '0.5'], d),
        ('has no effect on the blob', ['run', 'k.dvb', 'k', 'x=x.npy', 'y=y.npy', '--no-opt'], d),
    ]
    dvm('compile', 'k.dvk', cwd=d)  # k.dvb, for the warning about a compiler switch given with a blob
    docs = documented_messages(CLI_DOC)
    if len(docs) < len(producers):
        failures.append('docs/cli.md: found only %d example messages: %r' % (len(docs), docs))
    for m in docs:
        found = [(args, cwd) for key, args, cwd in producers if key in m]
        if not found:
            failures.append('docs/cli.md documents a message this test does not check: %r' % m)
            continue
        args, cwd = found[0]
        rc, out, err = dvm(*args, cwd=cwd)
        if m not in (out + err).splitlines():
            failures.append('docs/cli.md: documented %r, but `dvm %s` printed %r' % (m, ' '.join(args), (out + err).strip()))


def main():
    work = tempfile.mkdtemp(prefix='dvm_cli_')
    try:
        run_all(work)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    if failures:
        for f in failures:
            print('FAIL', f)
        print('%d check(s) failed' % len(failures))
        return 1
    print('all cli checks passed')
    return 0


def run_all(w):
    j = lambda *p: os.path.join(w, *p)
    xs, steps, rate = [0.5, 1.0, -2.0, 0.25], [0, 1, 3, 2], 0.9
    write_npy(j('x.npy'), '<f4', (4,), xs)
    write_npy(j('steps.npy'), '<i4', (4,), steps)
    write_npy(j('steps3.npy'), '<i4', (3,), steps[:3])
    write_npy(j('y.npy'), '<f4', (1,), [0.0])
    write_npy(j('y2.npy'), '<f4', (2,), [0.0, 0.0])
    write_npy(j('seed.npy'), '<f4', (1,), [1.0])
    write_npy(j('xi.npy'), '<i4', (4,), [1, 2, 3, 4])
    write_npy(j('x2d.npy'), '<f4', (2, 2), xs)
    write_npy(j('dx.npy'), '<f4', (4,), [1.0, 0.0, 2.0, 1.0])
    with open(j('bad.npy'), 'wb') as f:
        f.write(b'not an npy file at all')
    good = ['x=' + j('x.npy'), 'steps=' + j('steps.npy'), 'y=' + j('y.npy'), 'rate=%r' % rate]

    # ---- usage errors: exit 2 ----
    check('no command', [], 2, 'usage')
    check('unknown command', ['frobnicate'], 2, "unknown command 'frobnicate'")
    check('run without program', ['run'], 2, 'missing the program')
    check('run without kernel', ['run', DAMP], 2, 'missing the kernel')
    check('unknown option', ['run', DAMP, 'damp', '--frob'] + good, 2, "unknown option '--frob'")
    check('option without value', ['run', DAMP, 'damp'] + good + ['--threads'], 2, "'--threads' needs a value")
    check('bad --threads', ['run', DAMP, 'damp', '--threads', 'many'] + good, 2, '--threads')
    # OpenMP exited the process for 32768 threads and crashed for 65536: refused as usage errors
    for t in ['1025', '32768', '65536']:
        check('--threads %s' % t, ['run', DAMP, 'damp', '--threads', t, '--backend', 'cpu'] + good, 2,
              'thread count %s is more than the limit' % t, 'online CPUs')
    check('--threads 1', ['run', DAMP, 'damp', '--threads', '1', '--backend', 'cpu'] + good, 0)
    check('bad --ad-stack-size', ['grad', DAMP, 'damp', '--ad-stack-size', '-3'] + good, 2, '--ad-stack-size')
    check('bad --backend', ['run', DAMP, 'damp', '--backend', 'tpu'] + good, 2, "'tpu'")
    check('argument without =', ['run', DAMP, 'damp', 'x'] + good, 2, "unexpected argument 'x'")
    check('.grad given to run', ['run', DAMP, 'damp', 'y.grad=' + j('seed.npy')] + good, 2, "'y.grad'", 'dvm grad')
    check('.dual given to grad', ['grad', DAMP, 'damp', 'x.dual=' + j('dx.npy')] + good, 2, "'x.dual'", 'dvm jvp')
    check('argument twice', ['run', DAMP, 'damp', 'rate=1'] + good, 2, "'rate' is given twice")
    check('compile without source', ['compile'], 2, 'missing the source')
    check('verify without blob', ['verify'], 2, 'missing the blob')
    check('info with an argument', ['info', 'x'], 2, "unexpected argument 'x'")
    for cmd in ['compile', 'run', 'grad', 'jvp', 'disasm', 'verify', 'info']:
        check('%s --help' % cmd, [cmd, '--help'], 0, 'usage: dvm ' + cmd)
    check('--help', ['--help'], 0, 'dvm compile', 'dvm run', 'dvm grad', 'dvm jvp', 'dvm info')
    check('grad --help names .grad', ['grad', '--help'], 0, 'NAME.grad=FILE.npy', 'NAME.grad=VALUE', '--in-place',
          '--ad-stack-size', '--default-ad-stack-size')
    check('jvp --help names .dual', ['jvp', '--help'], 0, 'NAME.dual=FILE.npy', 'NAME.dual=VALUE')

    # ---- bad arguments: exit 1, naming the parameter ----
    check('unknown parameter', ['run', DAMP, 'damp', 'zz=1'] + good, 1, "no parameter 'zz'", 'rate')
    check('missing argument', ['run', DAMP, 'damp'] + good[:3], 1, "missing argument 'rate'")
    check('two missing', ['run', DAMP, 'damp'] + good[:2], 1, "'y'", "'rate'")
    check('mistyped array', ['run', DAMP, 'damp', 'x=' + j('xi.npy')] + good[1:], 1, "'x'", 'f32')
    check('wrong rank', ['run', DAMP, 'damp', 'x=' + j('x2d.npy')] + good[1:], 1, "'x'", 'rank 1')
    check('shape symbol conflict', ['run', DAMP, 'damp', 'x=' + j('x.npy'), 'steps=' + j('steps3.npy')] + good[2:], 1,
          "shape symbol 'n' is 4 from 'x' but 3 from 'steps'")
    check('literal extent', ['run', DAMP, 'damp', 'y=' + j('y2.npy')] + good[:2] + good[3:], 1, "'y'", 'extent 1')
    check('scalar not a number', ['run', DAMP, 'damp', 'rate=fast'] + good[:3], 1, "'rate'", "'fast'")
    check('scalar given a file', ['run', DAMP, 'damp', 'rate=' + j('x.npy')] + good[:3], 1, "'rate'")
    check('array given a number', ['run', DAMP, 'damp', 'x=3'] + good[1:], 1, "'x'")
    check('missing npy file', ['run', DAMP, 'damp', 'x=' + j('nope.npy')] + good[1:], 1, "'x'", 'nope.npy', 'cannot open')
    check('malformed npy file', ['run', DAMP, 'damp', 'x=' + j('bad.npy')] + good[1:], 1, "'x'", 'bad.npy', 'not a .npy file')
    check('missing program', ['run', j('nope.dvk'), 'damp'] + good, 1, 'nope.dvk', 'cannot open')
    check('unknown kernel', ['run', DAMP, 'dampp'] + good, 1, "no kernel 'dampp'", 'damp')
    check('grad of an i32 array', ['grad', DAMP, 'damp', 'steps.grad=' + j('x.npy')] + good, 1, "'steps.grad'")
    check('grad of the wrong shape', ['grad', DAMP, 'damp', 'x.grad=' + j('x2d.npy')] + good, 1, "'x.grad'")

    with open(j('k2.dvk'), 'w') as f:
        f.write('kernel k2(y: f32[n], k: i32, s: f32):\n    for i in range(n):\n        y[i] = s * f32(k)\n')
    yk = ['y=' + j('x.npy')]
    check('i32 rejects a float', ['run', j('k2.dvk'), 'k2', 'k=1.5', 's=2'] + yk, 1, "'k'", "'1.5'")
    check('i32 out of range', ['run', j('k2.dvk'), 'k2', 'k=9999999999', 's=2'] + yk, 1, "'k'")
    rc, out, _ = check('f32 takes an int', ['run', j('k2.dvk'), 'k2', 'k=3', 's=2', '--out', j('o_k2')] + yk, 0)
    if rc == 0 and read_npy(j('o_k2', 'y.npy')) != [6.0] * 4:
        failures.append('k2: y = %r, expected [6.0]*4' % read_npy(j('o_k2', 'y.npy')))

    with open(j('syntax.dvk'), 'w') as f:
        f.write('kernel broken(y: f32[n]):\n    for i in range(n)\n        y[i] = 1.0\n')
    rc, out, err = check('compile error', ['run', j('syntax.dvk'), 'broken', 'y=' + j('x.npy')], 1, 'syntax.dvk:2:')
    if rc == 1 and ': error: ' not in err:
        failures.append('compile error: stderr lacks "FILE:LINE:COL: error:": %s' % err)

    # ---- a failed launch writes no output files ----
    with open(j('oob.dvk'), 'w') as f:
        f.write('kernel oob(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i + 1]\n')
    out = j('o_fail')
    rc, so, se = check('out-of-bounds launch', ['run', j('oob.dvk'), 'oob', 'x=' + j('x.npy'), 'y=' + j('dx.npy'),
                                                '--out', out], 1, 'oob.dvk:3:', "'x'", 'out of bounds')
    if os.path.isdir(out) and os.listdir(out):
        failures.append('failed launch wrote %s' % os.listdir(out))
    if read_npy(j('dx.npy')) != [1.0, 0.0, 2.0, 1.0]:
        failures.append('failed launch changed an input file')

    # ---- run, grad, jvp on the spec's first kernel ----
    def damp_ref(xv):
        tot = 0.0
        for x0, s in zip(xv, steps):
            v = x0
            for _ in range(s):
                v = v * rate + 0.01
            tot += v
        return tot

    rc, so, se = check('run', ['run', DAMP, 'damp'] + good + ['--out', j('o_run'), '--time'], 0, 'launch')
    if rc == 0:
        y = read_npy(j('o_run', 'y.npy'))
        if abs(y[0] - damp_ref(xs)) > 1e-5:
            failures.append('run: y = %r, expected %r' % (y, damp_ref(xs)))
        for nm in ['x', 'steps', 'y']:
            if not os.path.exists(j('o_run', nm + '.npy')):
                failures.append('run --out: %s.npy missing' % nm)
    rc, so, se = check('run summary', ['run', DAMP, 'damp'] + good, 0, 'y: f32 (1,)')
    rc, so, se = check('grad', ['grad', DAMP, 'damp'] + good + ['y.grad=' + j('seed.npy'), '--out', j('o_grad')], 0)
    if rc == 0:
        g = read_npy(j('o_grad', 'x.grad.npy'))
        want = [rate ** s for s in steps]
        if any(abs(a - b) > 1e-5 for a, b in zip(g, want)):
            failures.append('grad: x.grad = %r, expected %r' % (g, want))
        if abs(read_npy(j('o_grad', 'y.npy'))[0] - damp_ref(xs)) > 1e-5:
            failures.append('grad: y is not the forward result')
        if not os.path.exists(j('o_grad', 'y.grad.npy')):
            failures.append('grad --out: y.grad.npy missing')
    dx = read_npy(j('dx.npy'))
    rc, so, se = check('jvp', ['jvp', DAMP, 'damp'] + good + ['x.dual=' + j('dx.npy'), '--out', j('o_jvp')], 0)
    if rc == 0:
        yd = read_npy(j('o_jvp', 'y.dual.npy'))[0]
        want = sum(d * rate ** s for d, s in zip(dx, steps))
        if abs(yd - want) > 1e-5:
            failures.append('jvp: y.dual = %r, expected %r' % (yd, want))
    # a seed given as a number fills the whole gradient / tangent
    for val in ['1', '2.5']:
        rc, so, se = check('grad y.grad=%s' % val, ['grad', DAMP, 'damp'] + good + ['y.grad=' + val, '--out', j('o_gv')], 0)
        if rc == 0:
            g = read_npy(j('o_gv', 'x.grad.npy'))
            want = [float(val) * rate ** s for s in steps]
            if any(abs(a - b) > 1e-5 for a, b in zip(g, want)):
                failures.append('grad y.grad=%s: x.grad = %r, expected %r' % (val, g, want))
            if 'warning' in se:
                failures.append('grad y.grad=%s: unexpected warning: %s' % (val, se.strip()))
    rc, so, se = check('jvp x.dual=1', ['jvp', DAMP, 'damp'] + good + ['x.dual=1', '--out', j('o_jv')], 0)
    if rc == 0 and abs(read_npy(j('o_jv', 'y.dual.npy'))[0] - sum(rate ** s for s in steps)) > 1e-5:
        failures.append('jvp x.dual=1: y.dual = %r' % read_npy(j('o_jv', 'y.dual.npy')))
    # no seed at all: every gradient is zero; the form stays valid (spec/cli.md), with a warning
    rc, so, se = check('grad without a seed', ['grad', DAMP, 'damp'] + good, 0,
                       'dvm: warning: no output seed', 'NAME.grad=FILE.npy or NAME.grad=1')

    # an output over an input file (compared by inode: a hard link counts) is warned about,
    # unless --in-place
    ip = j('inplace')
    os.makedirs(ip)
    write_npy(j('inplace', 'x.npy'), '<f4', (4,), xs)
    os.link(j('inplace', 'x.npy'), j('inplace', 'xl.npy'))
    write_npy(j('inplace', 'y.npy'), '<f4', (1,), [0.0])
    ipargs = ['run', DAMP, 'damp', 'x=xl.npy', 'steps=' + j('steps.npy'), 'y=y.npy', 'rate=0.9', '--out', '.']
    rc, so, se = check('output over inputs', ipargs, 0, "output ./x.npy replaces the input file xl.npy (argument 'x')",
                       "output ./y.npy replaces the input file y.npy (argument 'y')", '--in-place', cwd=ip,
                       mirror=False)
    if rc == 0 and abs(read_npy(j('inplace', 'y.npy'))[0] - damp_ref(xs)) > 1e-5:
        failures.append('output over inputs: y.npy = %r' % read_npy(j('inplace', 'y.npy')))
    rc, so, se = check('--in-place', ['run', DAMP, 'damp', 'x=x.npy', 'steps=' + j('steps.npy'), 'y=y.npy', 'rate=0.9',
                                      '--out', '.', '--in-place'], 0, cwd=ip, mirror=False)
    if 'warning' in se:
        failures.append('--in-place: unexpected warning: %s' % se.strip())

    # damp's reverse pass never reads v, so the optimizer drops v's adstack: the same kernel
    # with sin(v) keeps one that can overflow
    damp_sin = j('damp_sin.dvk')
    with open(DAMP) as f, open(damp_sin, 'w') as g:
        g.write(f.read().replace('return v * rate', 'return sin(v) * rate'))
    check('forced adstack size too small', ['grad', damp_sin, 'damp'] + good + ['--ad-stack-size', '1', '--out', j('o_small')],
          1, 'adstack overflow', '--ad-stack-size')
    if os.path.isdir(j('o_small')) and os.listdir(j('o_small')):
        failures.append('overflowing grad wrote %s' % os.listdir(j('o_small')))

    # ---- outputs are replaced all together, or not at all ----
    o_atomic = j('o_atomic')
    os.makedirs(o_atomic)
    write_npy(j('o_atomic', 'x.npy'), '<f4', (2,), [7.0, 7.0])  # old content to keep
    os.makedirs(j('o_atomic', 'steps.npy'))  # the second output cannot be written there
    check('second output fails', ['run', DAMP, 'damp'] + good + ['--out', o_atomic], 1, 'steps.npy', 'is a directory')
    if read_npy(j('o_atomic', 'x.npy')) != [7.0, 7.0]:
        failures.append('second output fails: the first output x.npy was replaced: %r' % read_npy(j('o_atomic', 'x.npy')))
    if os.path.exists(j('o_atomic', 'y.npy')):
        failures.append('second output fails: y.npy was written')
    if temporaries(o_atomic):
        failures.append('second output fails: temporaries left: %r' % temporaries(o_atomic))
    os.rmdir(j('o_atomic', 'steps.npy'))
    rc, _, _ = check('outputs replaced', ['run', DAMP, 'damp'] + good + ['--out', o_atomic], 0)
    if rc == 0:
        if sorted(os.listdir(o_atomic)) != ['steps.npy', 'x.npy', 'y.npy']:
            failures.append('outputs replaced: directory holds %r' % sorted(os.listdir(o_atomic)))
        if read_npy(j('o_atomic', 'x.npy')) != xs:
            failures.append('outputs replaced: x.npy = %r' % read_npy(j('o_atomic', 'x.npy')))
        umask = os.umask(0)
        os.umask(umask)
        mode = os.stat(j('o_atomic', 'y.npy')).st_mode & 0o777
        if mode != 0o666 & ~umask:
            failures.append('outputs replaced: a new output has mode %o, expected %o' % (mode, 0o666 & ~umask))
    # a write that fails (the file size limit) leaves every old output and no temporaries
    before = {f: open(j('o_atomic', f), 'rb').read() for f in os.listdir(o_atomic)}
    check('output write fails', ['run', DAMP, 'damp'] + good[:3] + ['rate=0.5', '--out', o_atomic], 1, 'write failed',
          preexec=limit_file_size(100))
    after = {f: open(j('o_atomic', f), 'rb').read() for f in os.listdir(o_atomic)}
    if after != before:
        failures.append('output write fails: the outputs changed: %r -> %r' % (sorted(before), sorted(after)))

    check_documented_messages(w, good, j)

    # ---- compile, verify, disasm, info ----
    src = j('damp.dvk')
    shutil.copy(DAMP, src)
    check('compile', ['compile', src], 0)
    blob = j('damp.dvb')
    if not os.path.exists(blob):
        failures.append('compile: default output damp.dvb missing')
        return
    check('compile -o', ['compile', src, '-o', j('other.dvb')], 0)
    # a blob write that fails keeps the previous blob (it was truncated, then removed)
    good_blob = open(blob, 'rb').read()
    check('compile write fails', ['compile', src, '-o', blob], 1, 'damp.dvb', 'write failed', preexec=limit_file_size(100))
    if not os.path.exists(blob) or open(blob, 'rb').read() != good_blob:
        failures.append('compile write fails: the previous blob was destroyed')
        with open(blob, 'wb') as f:
            f.write(good_blob)
    if temporaries(w):
        failures.append('compile write fails: temporaries left: %r' % temporaries(w))
    check('verify', ['verify', blob], 0, 'valid')
    check('run a blob', ['run', blob, 'damp'] + good + ['--out', j('o_blob')], 0)
    if os.path.exists(j('o_blob', 'y.npy')) and abs(read_npy(j('o_blob', 'y.npy'))[0] - damp_ref(xs)) > 1e-5:
        failures.append('run of the blob gives another y')
    data = bytearray(open(blob, 'rb').read())
    data[len(data) // 2] ^= 0x5a
    with open(j('corrupt.dvb'), 'wb') as f:
        f.write(bytes(data))
    check('verify a corrupt blob', ['verify', j('corrupt.dvb')], 1, 'corrupt.dvb')
    check('verify a source file', ['verify', src], 1, 'damp.dvk')
    check('verify a missing file', ['verify', j('nope.dvb')], 1, 'nope.dvb')
    check('disasm source', ['disasm', src], 0)
    check('disasm blob', ['disasm', blob], 0)
    check('info', ['info'], 0, 'cpu')
    check_cancel(w, j)
    check_switches(j)
    failures.extend('the mirror batch: %s' % p for p in BATCH.close())
    check_batch(w, j)


def check_switches(j):
    """The switches (docs/cli.md, "Switches"): the compiler's change the code, never the results;
    the blob records them and disasm prints them. The backends' (--cpu-lanes, --gpu-threads)
    show in the device line of --time and give the same results."""
    args = ['x=' + j('x.npy'), 'steps=' + j('steps.npy'), 'y=' + j('y.npy'), 'rate=0.9', 'y.grad=1']

    def grad(label, flags, backend='cpu', *needles):
        out = j('o_sw')
        shutil.rmtree(out, ignore_errors=True)
        rc, _, _ = check(label, ['grad', DAMP, 'damp', '--backend', backend, '--time', '--out', out] + args + flags, 0,
                         *needles)
        return read_npy(j('o_sw', 'x.grad.npy')) + read_npy(j('o_sw', 'y.npy')) if rc == 0 else None

    ref = grad('grad, default switches', [])
    blob = j('sw.dvb')
    for flags, listed in (([], 'default'), (['--no-opt'], '--no-opt'), (['--no-partition'], '--no-partition'),
                          (['--unroll', '1'], '--unroll 1'), (['--unroll=7', '--no-partition'], '--no-partition --unroll 7'),
                          (['--no-opt', '--unroll', '2'], '--no-opt')):
        check('compile %s' % flags, ['compile', DAMP, '-o', blob] + flags, 0)
        check('disasm of the blob of %s' % flags, ['disasm', blob], 0, 'compiler options: %s\n' % listed)
        check('disasm %s' % flags, ['disasm', DAMP] + flags, 0, 'compiler options: %s\n' % listed)
        got = grad('grad %s' % flags, flags)
        if ref is not None and got is not None and got != ref:
            failures.append('grad %s: x.grad and y %r, the default switches give %r' % (flags, got, ref))
    check('a compiler switch on a blob', ['run', blob, 'damp', '--no-partition'] + args[:4], 0,
          'dvm: warning: --no-partition has no effect on the blob')
    for bad in ('0', '257', 'x', '-1'):
        check('--unroll %s' % bad, ['compile', DAMP, '-o', blob, '--unroll', bad], 2, '--unroll needs a number')
        check('run --unroll %s' % bad, ['run', DAMP, 'damp', '--unroll=' + bad] + args[:4], 2, '--unroll needs a number')
    for bad in ('0', '-2', 'many'):
        check('--gpu-threads %s' % bad, ['run', DAMP, 'damp', '--gpu-threads', bad] + args[:4], 2, '--gpu-threads')
    for bad in ('0', '2', '8', 'x'):
        check('--vk-lanes %s' % bad, ['run', DAMP, 'damp', '--vk-lanes', bad] + args[:4], 2, '--vk-lanes must be 1 or 4')
    got = grad('grad --cpu-lanes', ['--cpu-lanes'], 'cpu', 'lanes (cpu_lanes)')
    if ref is not None and got is not None and got != ref:
        failures.append('grad --cpu-lanes: x.grad and y %r, without it %r' % (got, ref))
    # on Vulkan where it opens (lavapipe here): a few threads, each several of the iterations
    if 'vulkan device 0:' in dvm('info')[1]:
        got = grad('grad --gpu-threads 3', ['--gpu-threads', '3'], 'vulkan', 'at most 3 threads (gpu_threads)')
        if ref is not None and got is not None and any(abs(a - b) > 1e-5 * (1 + abs(b)) for a, b in zip(got, ref)):
            failures.append('vulkan --gpu-threads 3: x.grad and y %r, the cpu gives %r' % (got, ref))


def interrupt(p):
    """Sends SIGINT to dvm process p a second after it started; its (stdout, stderr, whether it
    had to be killed after 60 s)."""
    time.sleep(1.0)
    p.send_signal(signal.SIGINT)
    try:
        o, e = p.communicate(timeout=60)
        return o, e, False
    except subprocess.TimeoutExpired:
        p.kill()
        o, e = p.communicate()
        return o, e, True


def check_cancel(w, j):
    """--timeout and Ctrl-C on a `while True:` kernel: the launch stops with a message and
    writes no output file."""
    spin = j('spin.dvk')
    with open(spin, 'w') as f:
        f.write('kernel spin(x: f32[n]):\n    for i in range(n):\n        while True:\n            x[i] = x[i] + 1.0\n')
    write_npy(j('sx.npy'), '<f4', (8,), [0.0] * 8)
    for cmd, extra, label in (('run', [], ''), ('grad', ['x.grad=1'], ''), ('jvp', ['x.dual=1'], ' (tangent)')):
        out = j('o_timeout_' + cmd)
        check('%s --timeout' % cmd, [cmd, spin, 'spin', 'x=' + j('sx.npy')] + extra + ['--backend', 'cpu', '--timeout', '0.5', '--out', out], 1,
              "spin.dvk:3:15: error: kernel 'spin'%s: timed out after 0.5 s (--timeout)" % label)
        if os.path.exists(out):
            failures.append('%s --timeout: the timed-out launch wrote %r' % (cmd, os.listdir(out)))
    for bad in ('0', '-1', 'abc', 'nan', 'inf'):
        check('--timeout %s' % bad, ['run', spin, 'spin', 'x=' + j('sx.npy'), '--timeout', bad], 2, '--timeout needs a number of seconds')
    # a launch that ends within its time is not disturbed
    check('--timeout, a short launch', ['run', DAMP, 'damp', 'x=' + j('x.npy'), 'steps=' + j('steps.npy'), 'y=' + j('y.npy'),
                                        'rate=0.9', '--backend', 'cpu', '--timeout', '60', '--out', j('o_timeout_ok')], 0)
    if not os.path.exists(j('o_timeout_ok', 'y.npy')):
        failures.append('--timeout 60: the launch wrote no y.npy')
    # SIGINT while the launch runs
    out = j('o_sigint')
    p = subprocess.Popen([DVM, 'run', spin, 'spin', 'x=' + j('sx.npy'), '--backend', 'cpu', '--out', out],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    o, e, stuck = interrupt(p)
    if stuck:
        failures.append('SIGINT: dvm did not stop within 60 s')
    if p.returncode != 130 or 'dvm: interrupted' not in e:
        failures.append('SIGINT: expected exit 130 and "dvm: interrupted", got %d %r' % (p.returncode, (o + e).strip()))
    if os.path.exists(out):
        failures.append('SIGINT: the interrupted launch wrote %r' % os.listdir(out))


def batch(lines, *extra, cwd=None):
    """Runs `dvm batch` on lines (stdin); returns (status, records, stderr): records are
    (line, exit, stdout, stderr), read by the format of docs/cli.md."""
    p = subprocess.run([DVM, 'batch'] + list(extra), input=''.join(ln + '\n' for ln in lines).encode(),
                       capture_output=True, timeout=300, cwd=cwd)
    out, recs = p.stdout, []
    while out:
        m = dvmbatch.HEAD.match(out)
        if not m:
            failures.append('batch: not a record at %r' % out[:200])
            break
        a, b = m.end(), m.end() + int(m.group(3))
        c = b + int(m.group(4))
        recs.append((int(m.group(1)), int(m.group(2)), out[a:b].decode(), out[b:c].decode()))
        out = out[c:]
    return p.returncode, recs, p.stderr.decode()


def check_batch(w, j):
    """dvm batch (docs/cli.md, "batch"): one record per command line, in order, with the line's
    number; blank and comment lines skipped; quoting; cd; the status; kept contexts; Ctrl-C."""
    good = ['x=' + j('x.npy'), 'steps=' + j('steps.npy'), 'y=' + j('y.npy'), 'rate=0.9']
    sp = j("sp ace's")
    os.makedirs(sp, exist_ok=True)
    shutil.copy(j('x.npy'), os.path.join(sp, 'x "1".npy'))
    lines = ['# a comment', '', '  run %s damp %s --backend cpu' % (DAMP, ' '.join(good)),
             'cd %s' % w,
             # single quotes (a ' inside as '"'"'), double quotes with \" and \\ inside
             'run %s damp \'x=sp ace\'"\'"\'s/x "1".npy\' steps=steps.npy y=y.npy rate=0.9 '
             '--out "sp ace\'s/o \\\\ \\"q\\"" --backend cpu' % DAMP,
             # backslashes outside quotes
             'run %s damp x=sp\\ ace\\\'s/x\\ \\"1\\".npy steps=steps.npy y=y.npy rate=0.9 --backend cpu' % DAMP,
             '   # an indented comment',
             'run %s damp x=nope.npy steps=steps.npy y=y.npy rate=0.9 --backend cpu' % DAMP,
             'cd %s' % j('nope'), 'frobnicate', 'batch', 'run "unclosed', "run 'unclosed", 'run ends\\',
             'info', 'cd', '--version']
    rc, recs, err = batch(lines)
    want = [(3, 0), (4, 0), (5, 0), (6, 0), (8, 1), (9, 1), (10, 2), (11, 2), (12, 2), (13, 2), (14, 2), (15, 0),
            (16, 2), (17, 0)]
    if [(r[0], r[1]) for r in recs] != want or rc != 2 or err:
        failures.append('batch: records (line, exit) %r, status %d, stderr %r; expected %r, 2, none' %
                        ([(r[0], r[1]) for r in recs], rc, err, want))
    else:
        alone = dvm('run', DAMP, 'damp', *good, '--backend', 'cpu')
        if recs[0][1:] != alone:
            failures.append('batch: the first record %r, alone %r' % (recs[0][1:], alone))
        if not os.path.exists(os.path.join(sp, 'o \\ "q"', 'y.npy')):
            failures.append('batch: quoted --out: no y.npy in %r' % os.listdir(sp))
        if recs[3][2] != recs[0][2]:
            failures.append('batch: backslashes: %r, expected %r' % (recs[3][2], recs[0][2]))
        for k, needles in ((4, ["'x'", 'nope.npy']), (5, ['cd %s' % j('nope')]), (6, ["unknown command 'frobnicate'"]),
                           (7, ['cannot run `dvm batch`']), (8, ['batch line 12: a double quote is not closed']),
                           (9, ['batch line 13: a single quote is not closed']),
                           (10, ['batch line 14: a backslash ends the line']),
                           (11, ['cpu']), (12, ['cd takes one directory']), (13, ['dvm '])):
            if not all(n in recs[k][2] + recs[k][3] for n in needles):
                failures.append('batch: line %d: %r lacks one of %r' % (recs[k][0], recs[k][2] + recs[k][3], needles))
    # a file of commands; the status is the worst command's; wrong usage of batch itself
    with open(j('cmds.txt'), 'w') as f:
        f.write('run %s damp %s --backend cpu\nverify %s\n' % (DAMP, ' '.join(good), j('x.npy')))
    p = subprocess.run([DVM, 'batch', j('cmds.txt')], capture_output=True, timeout=120)
    if p.returncode != 1 or p.stdout.count(b'dvm batch: line ') != 2:
        failures.append('batch FILE: status %d, output %r' % (p.returncode, p.stdout[:300]))
    check('batch, no such file', ['batch', j('nope.txt')], 1, 'nope.txt', 'cannot open')
    check('batch, an unknown option', ['batch', '--frob'], 2, "unknown option '--frob'")
    check('batch, two files', ['batch', 'a', 'b'], 2, "unexpected argument 'b'")
    check('batch --help', ['batch', '--help'], 0, 'dvm batch: line L: exit S, stdout N bytes, stderr M bytes', 'cd DIR')
    check('--help names batch', ['--help'], 0, 'dvm batch')
    # a launch's context is kept for the next launch with the same context options, also
    # after a failed argument: on a device that takes long to open (lavapipe builds its
    # pipeline), the next takes no time; new options open a new one
    if 'vulkan device 0:' in dvm('info')[1]:
        run = ['run', DAMP, 'damp'] + good + ['--backend', 'vulkan', '--time']
        x2d = ['run', DAMP, 'damp', 'x=' + j('x2d.npy')] + good[1:] + ['--backend', 'vulkan', '--time']
        rc, recs, _ = batch([' '.join(run), ' '.join(run), ' '.join(x2d), ' '.join(run),
                             ' '.join(run + ['--gpu-threads', '5']), ' '.join(run + ['--gpu-threads', '5'])])
        ms = [float(m.group(1)) if m else None for m in (re.search(r'context ([0-9.]+) ms', r[3]) for r in recs)]
        if len(ms) != 6 or ms[2] is not None or None in ms[:2] + ms[3:] or \
                not (ms[0] > 10 * max(ms[1], ms[3]) and ms[4] > 10 * max(ms[1], ms[3], ms[5])):
            failures.append('batch on vulkan: context times %r: expected the 1st and 5th (new options) to open the '
                            'device, the 3rd to fail and the others to take the kept context' % ms)
    # Ctrl-C cancels the running launch; the batch ends there, with status 130
    spin = j('spin.dvk')
    p = subprocess.Popen([DVM, 'batch'], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    p.stdin.write(('run %s spin x=%s --backend cpu --out %s\n' % (spin, j('sx.npy'), j('o_bsig'))).encode())
    p.stdin.write(('run %s damp %s --backend cpu\n' % (DAMP, ' '.join(good))).encode())
    p.stdin.flush()
    o, e, _ = interrupt(p)
    if p.returncode != 130 or not o.startswith(b'dvm batch: line 1: exit 130, stdout 0 bytes') or \
            b'dvm: interrupted' not in o or o.count(b'dvm batch: line') != 1 or os.path.exists(j('o_bsig')):
        failures.append('batch, SIGINT: status %d, output %r, wrote %s' % (p.returncode, o, os.path.exists(j('o_bsig'))))


if __name__ == '__main__':
    sys.exit(main())

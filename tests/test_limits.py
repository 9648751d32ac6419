#!/usr/bin/env python3
"""test_limits.py DVM: generated sources up to 10 MB of every shape that once crashed, hung or
took minutes (elif chains, helper chains, long expressions, many statements, many kernels,
deep nesting, long lines, huge literals, an endless input, a source past the 16 MiB limit).
Each must compile or fail with a clear error, within a few seconds, without a signal."""
import os, subprocess, sys, tempfile, time

DVM = sys.argv[1]
LIMIT_S = 15.0  # generous for a loaded CI machine; each takes well under 3 s alone
failures = 0


def elif_chain(n):
    s = ["kernel k(x: f32[n], y: f32[n]):", "    for i in range(n):", "        v = x[i]",
         "        if v < 0.0:", "            y[i] = 0.0"]
    for j in range(1, n):
        s += ["        elif v < %d.0:" % j, "            y[i] = %d.0 * v" % j]
    s += ["        else:", "            y[i] = v"]
    return "\n".join(s) + "\n"


def helper_chain(n):
    s = ["def h0(a: f32) -> f32:", "    return a + 1.0"]
    for j in range(1, n):
        s += ["def h%d(a: f32) -> f32:" % j, "    return h%d(a) + 1.0" % (j - 1)]
    s += ["kernel k(x: f32[n], y: f32[n]):", "    for i in range(n):", "        y[i] = h%d(x[i])" % (n - 1)]
    return "\n".join(s) + "\n"


def body(lines):
    return "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n" + lines


def nested(n):
    s = body("        v = x[i]\n")
    for j in range(n):
        s += "    " * (j + 2) + "if v < %d.0:\n" % (j + 1000)
    return s + "    " * (n + 2) + "y[i] = v\n"


CASES = [  # name, source (str or bytes), expected: None (compiles) or a part of the error
    ("elif chain of 1,000", elif_chain(1000), None),
    ("elif chain of 10,000", elif_chain(10000), None),
    ("elif chain of 30,000", elif_chain(30000), "more than the limit of 65535"),
    ("elif chain of 150,000 (10 MB)", elif_chain(150000), "error:"),
    ("helper chain of 60", helper_chain(60), None),
    ("helper chain of 5,000", helper_chain(5000), "helper calls are nested too deeply"),
    ("helper chain of 15,000", helper_chain(15000), "too many kernels and helpers"),
    ("sum of 200,000 terms", body("        y[i] = 1.0" + " + 1.0" * 200000 + "\n"), "operator chain is too long"),
    ("10 MB of statements", body("        y[i] = x[i] * 2.0\n" * 400000), "too large"),
    ("10 MB of long expressions", body(("        y[i] = x[i]" + " + x[i]" * 300 + "\n") * 4000), "source too large: more than 4194304 tokens"),
    ("10,000 kernels (0.8 MB)", "".join("kernel k%d(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i] * %d.0\n"
                                        % (j, j) for j in range(10000)), None),
    ("120,000 kernels (10 MB)", "".join("kernel k%d(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i] * %d.0\n"
                                        % (j, j) for j in range(120000)), "source too large"),
    ("blocks nested 95 deep", nested(95), None),
    ("blocks nested 2,000 deep", nested(2000), "nested too deeply"),
    ("parentheses 100,000 deep", body("        y[i] = " + "(" * 100000 + "1.0" + ")" * 100000 + "\n"), "nested too deeply"),
    ("a 10 MB comment line", body("        y[i] = x[i]  #" + "c" * 10000000 + "\n"), None),
    ("a 5 MB identifier", body("        " + "v" * 5000000 + " = x[i]\n        y[i] = 1.0\n"), None),
    ("a 1 MB integer literal", body("        y[i] = f32(" + "9" * 1000000 + ")\n"), "(1000000 digits) is out of the i32 range"),
    ("a 1 MB float literal", body("        y[i] = " + "1" * 1000000 + ".5\n"), "out of the f32 range"),
    ("a 1 MB string", body("        assert x[i] < 1.0, \"" + "s" * 1000000 + "\"\n        y[i] = 1.0\n"), None),
    ("16 MiB of dense tokens", body(("        v = 1" + "+1" * 200 + "\n") * 40000), "more than 4194304 tokens"),
    ("16 MiB of pass", body("        pass\n" * 1290000), None),
    ("a source past 16 MiB", "#" * (16 * 1024 * 1024 + 10) + "\n", "source too large"),
]


def run(name, src, expect, path=None):
    global failures
    with tempfile.TemporaryDirectory() as tmp:
        if path is None:
            path = os.path.join(tmp, "gen.dvk")
            with open(path, "wb") as f:
                f.write(src.encode() if isinstance(src, str) else src)
        t0 = time.time()
        try:
            p = subprocess.run([DVM, "compile", path, "-o", os.path.join(tmp, "out.dvb")], capture_output=True,
                               timeout=60)
        except subprocess.TimeoutExpired:
            print("FAIL %s: still running after 60 s" % name)
            failures += 1
            return
        dt = time.time() - t0
        err = p.stderr.decode(errors="replace")
        first = err.strip().splitlines()[0][:150] if err.strip() else "compiled"
        print("%-32s %6.2f s  rc %d  %s" % (name, dt, p.returncode, first))
        if p.returncode < 0 or p.returncode > 1:
            print("FAIL %s: exit status %d (a signal or a usage error)" % (name, p.returncode))
            failures += 1
        elif expect is None and p.returncode != 0:
            print("FAIL %s: expected it to compile" % name)
            failures += 1
        elif expect is not None and (p.returncode != 1 or expect not in err):
            print("FAIL %s: expected an error with %r" % (name, expect))
            failures += 1
        if "internal" in err:
            print("FAIL %s: an internal error" % name)
            failures += 1
        if dt > LIMIT_S:
            print("FAIL %s: took %.1f s (limit %.0f s)" % (name, dt, LIMIT_S))
            failures += 1


def derivatives_refused():
    """The 10,000-branch chain's derivatives are past a task's node limit: the forward runs,
    and grad and jvp say why there is no gradient and no tangent."""
    global failures
    import struct
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "chain.dvk")
        with open(src, "w") as f:
            f.write(elif_chain(10000))
        h = "{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }"
        h += " " * ((64 - (10 + len(h) + 1) % 64) % 64) + "\n"
        with open(os.path.join(tmp, "x.npy"), "wb") as f:
            f.write(b"\x93NUMPY\x01\x00" + struct.pack("<H", len(h)) + h.encode() + struct.pack("<4f", -1, 0.5, 2.5, 9999.5))
        xs = ["x=" + os.path.join(tmp, "x.npy"), "y=" + os.path.join(tmp, "x.npy"), "--backend", "cpu"]
        p = subprocess.run([DVM, "run", src, "k"] + xs, capture_output=True, text=True, timeout=60)
        if p.returncode != 0 or "[0, 0.5, 7.5, 9999.5]" not in p.stdout:
            print("FAIL the 10,000-branch chain's forward: rc %d, %s %s" % (p.returncode, p.stdout, p.stderr))
            failures += 1
        for cmd, extra in (("grad", ["y.grad=1"]), ("jvp", ["x.dual=1"])):
            p = subprocess.run([DVM, cmd, src, "k"] + xs + extra, capture_output=True, text=True, timeout=60)
            if p.returncode != 1 or "no gradient and no tangent" not in p.stderr:
                print("FAIL the 10,000-branch chain's %s: rc %d, %s" % (cmd, p.returncode, p.stderr))
                failures += 1


for name, src, expect in CASES:
    run(name, src, expect)
derivatives_refused()
if os.path.exists("/dev/zero"):
    run("/dev/zero as the source", None, "source too large", path="/dev/zero")
print("%d failures" % failures if failures else "ok")
sys.exit(1 if failures else 0)

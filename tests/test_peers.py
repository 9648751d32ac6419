"""bench/peers.py keeps working: a --quick run of dvm alone from the build tree, no network.

Usage: test_peers.py SOURCE_DIR LIBDVM
The package is python/dvm with the build's libdvm.so beside it, in a temporary folder on
PYTHONPATH (what `pip install .` would lay out). Checks:
- peers.py's kernels are bench/bench_kernels.h's (the same source text);
- its float64 reference (the yardstick of dvm and every peer) has the gradients of central
  differences, and its check reports a wrong gradient, a missing one and a wrong output;
- `peers.py --quick --peers dvm` prints the forward, gradient and edit-to-gradient tables,
  with dvm's values and gradients agreeing with the reference;
- a peer that cannot be imported is skipped with a message naming it and why, and
  --require makes its absence an error.
Exits 77 (skipped) when numpy is missing."""
import os
import re
import shutil
import subprocess
import sys
import tempfile

src, lib = sys.argv[1], sys.argv[2]
try:
    import numpy  # noqa: F401
except ImportError:
    print("test_peers: skipped: numpy is not installed for %s (the dvm package needs it)" % sys.executable)
    sys.exit(77)

fails = 0


def check(ok, what, out=""):
    global fails
    print("%s: %s" % ("ok" if ok else "FAIL", what))
    if not ok:
        fails += 1
        print(out[-3000:])


# the kernels are the benchmark's own
with open(os.path.join(src, "bench", "bench_kernels.h")) as f:
    h = f.read()
body = h[h.index("static const char *SRC ="):h.index(";", h.index("static const char *SRC ="))]
c_src = "".join(bytes(s, "utf-8").decode("unicode_escape") for s in re.findall(r'"((?:[^"\\]|\\.)*)"', body))
sys.path.insert(0, os.path.join(src, "bench"))
import peers  # noqa: E402

check(peers.DVK.strip() == c_src.strip(), "peers.py's DVK is bench_kernels.h's SRC")

import numpy as np  # noqa: E402

# the reference's gradients are the derivatives of its forward: central differences of
# sum(w * y) in float64 on small data (steps are integers, not differentiated)
small = {"saxpy": 16, "trans": 16, "dynloop": 16, "dynsin": 16, "stencil": 5, "hist": 16}
data = peers.make_data(np, small, seed=3)
for k in peers.GRAD_KERNELS:
    d = {n: (a.astype(np.float64) if a.dtype == np.float32 else a) for n, a in data[k].items()}
    _, grads = peers.reference(np, k, d)
    worst = 0.0
    for n, g in grads.items():
        for idx in np.ndindex(d[n].shape):
            fd = []
            for h in (1e-6, -1e-6):
                e = dict(d)
                e[n] = d[n].copy()
                e[n][idx] += h
                fd.append(float((peers.reference(np, k, e)[0] * d["w"]).sum()))
            worst = max(worst, abs((fd[0] - fd[1]) / 2e-6 - g[idx]))
    check(worst < 1e-6, "reference gradient of %s matches central differences (max error %.1e)" % (k, worst))

# the check reports what is wrong, in any peer's gradient or output
d = data["dynsin"]
y, grads = peers.reference(np, "dynsin", d)
g32 = {"x": grads["x"].astype(np.float32)}
check(peers.disagreement(np, "gradient", "p", "dynsin", g32, grads) is None, "the float32 gradient passes")
off = {"x": g32["x"].copy()}
off["x"][3] *= 1.01
check(peers.disagreement(np, "gradient", "p", "dynsin", off, grads) is not None, "a gradient 1% off is reported")
# the reverse pass that replays the loop without its overwritten values (cos of the last v)
naive = d["w"] * (np.cos(y) * peers.RATE) ** d["steps"]
note = peers.disagreement(np, "gradient", "p", "dynsin", {"x": naive}, grads)
check(note is not None and "p dynsin d/dx" in note, "a replayed-loop gradient of dynsin is reported: %s" % note)
check("missing" in (peers.disagreement(np, "gradient", "p", "dynsin", {}, grads) or ""), "a missing gradient")
nan = {"x": g32["x"].copy()}
nan["x"][0] = np.nan
check(peers.disagreement(np, "gradient", "p", "dynsin", nan, grads) is not None, "a NaN in a gradient")
check(peers.disagreement(np, "forward", "p", "dynsin", (y * 1.001).astype(np.float32), y) is not None,
      "a wrong forward value is reported")
h = peers.reference(np, "hist", data["hist"])[0]
h2 = h.copy()
h2[0] += 1
check(peers.disagreement(np, "forward", "p", "hist", h2, h) is not None, "one histogram count off is reported")

tmp = tempfile.mkdtemp(prefix="dvm-test-peers-")
try:
    pkg = os.path.join(tmp, "dvm")
    shutil.copytree(os.path.join(src, "python", "dvm"), pkg, ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copy(lib, os.path.join(pkg, "libdvm.so"))
    # a module named like each peer that fails to import, ahead of any installed one
    fake = os.path.join(tmp, "fake")
    os.mkdir(fake)
    for name in ("warp", "quadrants", "jax"):
        with open(os.path.join(fake, name + ".py"), "w") as f:
            f.write("raise ImportError('not installed for test_peers')\n")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([fake, tmp]))
    script = os.path.join(src, "bench", "peers.py")

    def peers_py(*args):
        p = subprocess.run([sys.executable, script, "--quick", "--threads", "1"] + list(args), cwd=tmp, env=env,
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT, universal_newlines=True, timeout=600)
        return p.returncode, p.stdout

    rc, out = peers_py("--peers", "dvm")
    check(rc == 0, "peers.py --quick --peers dvm exits 0", out)
    check("not timed" not in out, "dvm's values and gradients agree with the float64 reference", out)
    for title in ("### Forward (one launch), cpu", "### Gradient (forward + reverse", "### Edit to first gradient"):
        check(title in out, "prints the table '%s'" % title, out)
    for k in peers.KERNELS:
        check(re.search(r"^\| %s \| [0-9.]+ \|$" % k, out, re.M) is not None, "forward row of %s" % k, out)
    for k in peers.GRAD_KERNELS:
        check(len(re.findall(r"^\| %s \| [0-9.]+ \|$" % k, out, re.M)) == 2, "gradient row of %s" % k, out)
    check(re.search(r"^\| dvm \| write \.dvk.* \| [0-9.]+ \| [0-9.]+ \| 1\.00x \|$", out, re.M) is not None,
          "edit-to-gradient row of dvm (its gradient checked against float64)", out)

    rc, out = peers_py("--peers", "dvm,warp,quadrants,jax", "--reps", "1")
    check(rc == 0, "absent peers: still exits 0", out)
    for name in ("warp", "quadrants", "jax"):
        check("skipped %s: ImportError: not installed for test_peers" % name in out, "names why %s is skipped" % name,
              out)

    rc, out = peers_py("--peers", "dvm,warp", "--require", "warp")
    check(rc != 0 and "warp is required but cannot run: ImportError" in out, "--require warp fails without warp",
          out)
    rc, out = peers_py("--peers", "dvm,taichi")
    check(rc != 0 and "unknown peer 'taichi'" in out, "an unknown peer is an error naming it", out)
finally:
    shutil.rmtree(tmp, ignore_errors=True)

print("test_peers: %s" % ("%d checks failed" % fails if fails else "all checks passed"))
sys.exit(1 if fails else 0)

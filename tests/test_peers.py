"""bench/peers.py keeps working: a --quick run of dvm alone from the build tree, no network.

Usage: test_peers.py SOURCE_DIR LIBDVM
The package is python/dvm with the build's libdvm.so beside it, in a temporary folder on
PYTHONPATH (what `pip install .` would lay out). Checks:
- peers.py's kernels are bench/bench_kernels.h's (the same source text);
- `peers.py --quick --peers dvm` prints the forward, gradient and edit-to-gradient tables;
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

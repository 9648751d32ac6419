#!/usr/bin/env bash
# The Python suite on the GPU machine (no network; python3 with numpy, torch, jax, cupy;
# cmake; nvcc). Carry the folder of wheels (tests/python/fetch_wheels.sh) as wheels/.
# Builds the package with CUDA (sm_90) into a venv that sees the system's packages, then runs
# tests/python on cuda:0 (CUDA, DLPack with torch/cupy/jax, dvm.torch) and on the cpu.
# Then bench/python_bench.py on cpu and cuda:0.
# Writes under $OUT: info.txt, install.log, pytest-<device>.log and .xml, bench.txt, summary.txt.
# Usage: OUT=dir tests/python/device_tests.sh [ARCHS]   (default 90)
set -u
cd "$(dirname "$0")/../.."
root=$PWD
OUT=${OUT:-$root/out}
mkdir -p "$OUT"
archs=${1:-90}
export PATH="$PATH:/usr/local/cuda/bin"
log() { echo "$*" | tee -a "$OUT/summary.txt"; }
: > "$OUT/summary.txt"
rm -rf build-pydev && mkdir -p build-pydev
if ! python3 -m venv --system-site-packages build-pydev/venv >"$OUT/install.log" 2>&1; then
  log "device_tests: python3 -m venv failed (see install.log)"; exit 1
fi
py=$root/build-pydev/venv/bin/python
# python3 may itself be a virtual environment (whose packages --system-site-packages does not
# reach): let the new one see its site-packages too
python3 -c 'import site, sys; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' \
  > "$("$py" -c 'import site; print(site.getsitepackages()[0])')/dvm-parent-env.pth"
if ! tests/python/offline_install.sh "$py" wheels -C cmake.define.DVM_CUDA=ON -C cmake.define.DVM_CUDA_ARCHS="$archs" \
     -C cmake.define.DVM_HIP=OFF -C build-dir=build-pydev/build -C build.verbose=true >>"$OUT/install.log" 2>&1; then
  log "device_tests: pip install failed (see install.log)"; tail -30 "$OUT/install.log"; exit 1
fi
(cd build-pydev && "$py" -m dvm info) >"$OUT/info.txt" 2>&1
cat "$OUT/info.txt"
"$py" -c 'import sys
for m in ("numpy", "torch", "cupy", "jax"):
    try:
        mod = __import__(m); print(m, mod.__version__)
    except Exception as e:
        print(m, "missing:", e)
import dvm; print("dvm_array_wrap_device:", dvm._lib.array_wrap_device is not None,
                  "dvm_array_data:", dvm._lib.array_data is not None)' 2>&1 | tee -a "$OUT/summary.txt"
rc=0
for dev in cuda:0 cpu; do
  tag=${dev/:/}
  (cd build-pydev && "$py" -m pytest ../tests/python --dvm-device="$dev" -rs -v -p no:cacheprovider \
     --junitxml="$OUT/pytest-$tag.xml") >"$OUT/pytest-$tag.log" 2>&1
  r=$?
  log "$dev: $(tail -1 "$OUT/pytest-$tag.log") (exit $r)"
  [ $r -ne 0 ] && rc=1
done
# the overheads of bench/RESULTS.md, "Python", on this machine
for dev in cpu cuda:0; do
  (cd build-pydev && "$py" ../bench/python_bench.py --device "$dev" --reps 5000) >>"$OUT/bench.txt" 2>&1
done
cat "$OUT/bench.txt" | tee -a "$OUT/summary.txt"
exit $rc

#!/usr/bin/env bash
# Builds the dvm command for what runs on this machine, then runs the demo: a kernel and its
# gradient on the default backend (`auto`: cuda, hip, vulkan on a hardware device, else cpu).
# Usage: scripts/demo.sh [--hip]
# Built: the CPU backend; Vulkan where glslangValidator, spirv-val and the Vulkan headers are
# found; CUDA where nvcc is. HIP (code objects for every AMD target, the longest part of a
# full build) only with --hip. No tests, examples or benchmarks: scripts/test.sh builds those.
set -euo pipefail
cd "$(dirname "$0")/.."
hip=OFF
for a in "$@"; do
  case $a in
    --hip) hip=ON ;;
    *) echo "usage: scripts/demo.sh [--hip]" >&2; exit 2 ;;
  esac
done
if [ $hip = ON ]; then scripts/setup.sh hip; else scripts/setup.sh demo; fi
export PATH="$PATH:/usr/local/cuda/bin"
log=$(mktemp)
# every choice is passed, so that what scripts/test.sh left in build/ does not carry over
if ! cmake -S . -B build -DCMAKE_BUILD_TYPE=Release -DDVM_BUILD_TESTS=OFF \
     -DDVM_VULKAN=AUTO -DDVM_CUDA=AUTO -DDVM_HIP=$hip >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
grep -E '^-- (dvm|Vulkan)' "$log" || true
if ! cmake --build build --target dvm_cli -j"$(nproc)" >"$log" 2>&1; then
  cat "$log"; rm -f "$log"; exit 1
fi
rm -f "$log"
echo
exec scripts/run_demo.sh build

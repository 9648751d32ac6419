#!/usr/bin/env bash
# Installs what is missing, builds dvm, and runs the demo: a kernel and its gradient on the
# default backend (the first available of cuda, hip, vulkan, cpu).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export PATH="$PATH:/usr/local/cuda/bin"
cmake -S . -B build -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build build -j"$(nproc)" >/dev/null
exec scripts/run_demo.sh build

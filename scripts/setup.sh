#!/usr/bin/env bash
# Installs the Debian packages a build needs, only those that are missing.
# Usage: scripts/setup.sh demo|hip|test
#   demo: a C compiler, CMake and OpenMP: the CPU backend (scripts/demo.sh). Vulkan and CUDA
#         are built where their toolchains already are, never installed for the demo.
#   hip:  demo, plus hipcc and clang for the HIP backend (scripts/demo.sh --hip).
#   test: everything the test suite builds and runs (scripts/test.sh): the Vulkan toolchain
#         and lavapipe, hipcc, clang for the fuzzers, Python (with numpy, for test_peers) for
#         the package's tests.
# CUDA's nvcc is not a Debian package here: the CUDA backend is built when nvcc is on PATH or
# in /usr/local/cuda/bin.
set -euo pipefail
mode=${1:-}
demo=(build-essential cmake)
hip=(clang libclang-rt-14-dev hipcc)
case $mode in
  demo) pkgs=("${demo[@]}") ;;
  hip) pkgs=("${demo[@]}" "${hip[@]}") ;;
  test) pkgs=("${demo[@]}" "${hip[@]}" python3 python3-venv python3-pip python3-numpy git
              glslang-tools spirv-tools libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-tools) ;;
  *) echo "usage: scripts/setup.sh demo|hip|test" >&2; exit 2 ;;
esac
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
# nvcc usually lives outside PATH
if ! command -v nvcc >/dev/null 2>&1 && [ -x /usr/local/cuda/bin/nvcc ]; then
  echo "setup: nvcc found in /usr/local/cuda/bin (add it to PATH to build the CUDA backend)"
fi

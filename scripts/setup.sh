#!/usr/bin/env bash
# Installs the Debian packages dvm's build and tests need, only those that are missing.
# Usage: scripts/setup.sh [--gpu-toolchains]   (CUDA's nvcc is not a Debian package here:
# the CUDA backend is built when nvcc is on PATH or in /usr/local/cuda/bin.)
set -euo pipefail
pkgs=(build-essential cmake python3 python3-venv python3-pip git
      glslang-tools spirv-tools libvulkan-dev libvulkan1 mesa-vulkan-drivers vulkan-tools
      clang libclang-rt-14-dev hipcc)
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

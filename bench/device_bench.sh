#!/bin/bash
# Final benchmarks on the lent machine: native CUDA vs dvm CUDA and dvm Vulkan (same process,
# CUDA events), Vulkan vs the CPU backend with pipeline cache cold/warm, and the CPU backend
# vs gcc -O2 on the machine's 16 cores.
# usage (on the GPU machine, from the repository root): bash bench/device_bench.sh DIR
# DIR holds the binaries built here (dvm, api_runner, test_gpu_backend, test_vulkan,
# bench_cuda, bench_vulkan, bench_cpu) and is carried with the Vulkan loader debs in .gl/.
D=${1:-.dev-final}; export PYTHONUNBUFFERED=1
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem --format=csv > $OUT/device.txt; lscpu | grep -E "Model name|^CPU\(s\)" >> $OUT/device.txt
timeout 150 $D/bench_cuda > $OUT/bench_cuda.txt 2>&1
DVM_BENCH_BACKEND=vulkan DVM_CACHE_DIR=/tmp/vkc timeout 150 $D/bench_cuda > $OUT/bench_cuda_vulkan.txt 2>&1
rm -rf /tmp/vkc2; for i in 1 2; do DVM_CACHE_DIR=/tmp/vkc2 timeout 150 $D/bench_vulkan > $OUT/bench_vulkan_$i.txt 2>&1; done
timeout 200 $D/bench_cpu > $OUT/bench_cpu.txt 2>&1
echo done >> $OUT/device.txt

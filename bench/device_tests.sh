#!/bin/bash
# Final GPU verification: every GPU test of the project on the lent machine, CUDA and Vulkan.
# usage (on the GPU machine, from the repository root): bash bench/device_tests.sh DIR
# DIR holds the binaries built here (dvm, api_runner, test_gpu_backend, test_vulkan,
# bench_cuda, bench_vulkan, bench_cpu) and is carried with the Vulkan loader debs in .gl/.
D=${1:-.dev-final}; export PYTHONUNBUFFERED=1
for f in .gl/*.deb; do dpkg -x $f /; done; ldconfig
export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json DVM_CACHE_DIR=/tmp/dvmcache
S=$OUT/summary.txt; L=$OUT/tests.log
{ nvidia-smi -L; $D/dvm info; } 2>&1 | tee $S
step() { # label, command...
  local label=$1; shift
  echo "== $label" >> $L
  timeout 300 "$@" >> $L 2>&1; local rc=$?
  echo "$label: exit $rc; $(grep -E '(passed|failed)' $L | tail -1)" | tee -a $S
}
step "gpu_backend_cuda" $D/test_gpu_backend cuda
step "vulkan (unit, NVIDIA)" $D/test_vulkan
step "vulkan_no_int64" $D/test_vulkan --no-int64
step "vulkan_no_float_atomics" $D/test_vulkan --no-float-atomics
step "vulkan_gpu_threads" $D/test_vulkan --gpu-threads 100
for be in cuda vulkan; do
  for m in forward grad errors big; do
    step "suite $m $be" python3 tests/suite/run_suite.py --dvm $D/dvm --backend $be --mode $m -j 4
  done
  for m in forward grad; do
    step "suite $m $be (C API)" python3 tests/suite/run_suite.py --dvm $D/api_runner --backend $be --mode $m -j 4
  done
done
for be in cuda vulkan; do
  step "partition_fuzz $be" python3 tests/suite/partition_fuzz.py --dvm $D/dvm --backend $be --count 200
  step "nofail_fuzz $be" python3 tests/suite/nofail_fuzz.py --dvm $D/dvm --backend $be --count 200
done
# 3 threads in all (the gpu_threads option): small inputs then take the CUDA lanes' tail and
# divergence paths
for m in forward grad errors; do
  step "suite $m cuda (--gpu-threads 3)" python3 tests/suite/run_suite.py --dvm $D/dvm --backend cuda --mode $m -j 4 --dvm-flag=--gpu-threads=3
done
grep -E "^FAIL" $L | head -40 >> $S

#!/bin/bash
# Profile of the CUDA interpreter on the lent machine: ncu's source counters and warp states
# for one launch of each named benchmark kernel, summarized by bench/ncu_summary.py (stall
# reasons, and the hottest SASS regions with their instruction counts and stalls).
# usage (on the GPU machine, from the repository root): bash bench/device_profile.sh DIR [KERNEL...]
# DIR holds bench_cuda built here; build it with -DDVM_CUDA_FLAGS=-lineinfo
# -DDVM_PTXAS_FLAGS=-lineinfo for source lines.
# KERNEL: a bench_cuda row's kernel name (default: dynloop stencil). Writes under $OUT:
# det_K.txt (ncu's details page), sass_K.csv.gz (per SASS instruction) and summary_K.txt.
D=${1:-.dev-final}; shift
kernels=${*:-dynloop stencil}
export PATH=$PATH:/usr/local/cuda/bin
for k in $kernels; do
  DVM_BENCH_ONLY=$k timeout 200 ncu --section SourceCounters --section InstructionStats \
      --section WarpStateStats --section Occupancy --section LaunchStats -k regex:dvm_k_parallel \
      -s 2 -c 1 -o /tmp/prof_$k $D/bench_cuda > /tmp/prof_$k.log 2>&1 || { tail -5 /tmp/prof_$k.log; continue; }
  ncu -i /tmp/prof_$k.ncu-rep --page details > $OUT/det_$k.txt 2>&1
  ncu -i /tmp/prof_$k.ncu-rep --page source --csv --print-source sass 2>&1 | gzip > $OUT/sass_$k.csv.gz
  python3 bench/ncu_summary.py $OUT/sass_$k.csv.gz > $OUT/summary_$k.txt 2>&1
  echo "== $k"; cat $OUT/summary_$k.txt
done

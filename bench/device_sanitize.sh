#!/bin/bash
# The CUDA backend under NVIDIA's compute-sanitizer: every CUDA suite case (and the C API
# runner, and test_gpu_backend) with its tools memcheck (out-of-bounds and misaligned device
# accesses, leaks), racecheck (shared-memory hazards: the staged nodes, tables and register
# files), synccheck (barriers) and initcheck (reads of uninitialized device memory).
# usage (on the GPU machine, from the repository root): bash bench/device_sanitize.sh DIR
# DIR holds dvm, api_runner and test_gpu_backend built here (as for device_tests.sh).
# A process whose tool reports anything exits 86, so its suite case fails; every log is
# kept and counted. Output: $OUT/sanitize.txt (the summary) and $OUT/sanitize_logs.txt (the
# first logs that report something).
D=$(realpath "${1:-.dev-final}"); export PYTHONUNBUFFERED=1
export PATH=$PATH:/usr/local/cuda/bin
command -v compute-sanitizer >/dev/null || { echo "compute-sanitizer not found" >&2; exit 1; }
LOGS=/tmp/dvm_sanitize; rm -rf $LOGS; mkdir -p $LOGS
W=/tmp/dvm_sanitize_bin; mkdir -p $W
for b in dvm api_runner test_gpu_backend; do # each run through the tool of $SAN_TOOL
  cat > $W/$b <<EOF
#!/bin/bash
exec compute-sanitizer --tool "\$SAN_TOOL" --error-exitcode 86 --print-limit 20 \\
  --log-file "$LOGS/\$SAN_STEP.%p.log" "$D/$b" "\$@"
EOF
  chmod +x $W/$b
done
S=$OUT/sanitize.txt
{ nvidia-smi -L; compute-sanitizer --version | tail -1; } 2>&1 | tee $S
# clean: memcheck, synccheck and initcheck end with "ERROR SUMMARY: 0 errors", racecheck with
# "RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
clean() { grep -qE 'ERROR SUMMARY: 0 errors|SUMMARY: 0 hazards displayed \(0 errors, 0 warnings\)' "$1"; }
step() { # tool, label, command...
  local tool=$1 label=$2; shift 2
  local tag=$(echo "$tool $label" | tr -c 'A-Za-z0-9\n' '_')
  export SAN_TOOL=$tool SAN_STEP=$tag
  timeout 240 "$@" > $LOGS/$tag.out 2>&1; local rc=$?
  local n=0 bad=0
  for f in $LOGS/$tag.*.log; do [ -e "$f" ] || continue; n=$((n + 1)); clean "$f" || bad=$((bad + 1)); done
  echo "$tool $label: exit $rc; $(grep -E '(passed|failed|OK)' $LOGS/$tag.out | tail -1); $n processes, $bad reported" | tee -a $S
}
SUITE="python3 tests/suite/run_suite.py --backend cuda -j 12"
for m in forward grad errors big; do step memcheck "suite $m" $SUITE --dvm $W/dvm --mode $m; done
for m in forward grad; do step memcheck "suite $m (C API)" $SUITE --dvm $W/api_runner --mode $m; done
for m in forward grad; do step memcheck "suite $m --gpu-threads 3" $SUITE --dvm $W/dvm --mode $m --dvm-flag=--gpu-threads=3; done
for tool in racecheck synccheck initcheck; do
  for m in forward grad; do step $tool "suite $m" $SUITE --dvm $W/dvm --mode $m; done
done
step memcheck "test_gpu_backend cuda" $W/test_gpu_backend cuda
n=0; for f in $LOGS/*.log; do clean "$f" && continue; n=$((n + 1)); [ $n -le 5 ] && { echo "== $f"; head -80 "$f"; }; done > $OUT/sanitize_logs.txt
echo "processes in all: $(ls $LOGS/*.log | wc -l); reporting something: $n" | tee -a $S

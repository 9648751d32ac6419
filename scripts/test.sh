#!/usr/bin/env bash
# The whole test suite, as CI runs it (.ci/run). Installs what is missing, then:
#  1. a Release build with every backend whose toolchain is present (CPU, Vulkan, CUDA, HIP:
#     the HIP code objects for every target in DVM_HIP_ARCHS, compiled even with no AMD GPU),
#     its ctest suite (CPU kernels and gradients, Vulkan on lavapipe, GPU build checks;
#     tests that need a missing GPU are skipped and say so);
#  2. an ASan+UBSan build of the library, the command and the CPU/Vulkan tests;
#  3. the libFuzzer harnesses (blob reader/verifier, compiler front end), 30 s each
#     (DVM_FUZZ_SECONDS=N for longer runs);
#  4. the Python package as a user installs it: a fresh venv, `pip install .` (CPU and Vulkan
#     backends: CUDA/HIP are off here to keep this step to a few minutes), numpy and pytest,
#     then tests/python on the CPU and on Vulkan (lavapipe; skipped with a message if none).
# Prints one closing line "summary: N passed, N failed, N skipped".
set -uo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh test || { echo "setup failed"; exit 1; }
export PATH="$PATH:/usr/local/cuda/bin"
jobs=$(nproc)
# ctest runs $jobs tests at once, each CPU launch with a thread per core: libgomp's default
# wait (spinning after every parallel region, some 30 ms of a core per dvm process) takes the
# cores the other tests need (grad_fuzz_cpu: 70 s -> 17 s on 2 cores with passive waits).
# The tests check results, which the wait policy does not change.
export OMP_WAIT_POLICY=passive
fuzz_seconds=${DVM_FUZZ_SECONDS:-30}
passed=0; failed=0; skipped=0; status=0

# Runs ctest in a build folder and adds its counts to the totals.
run_ctest() {
  local dir=$1; shift
  local log; log=$(mktemp)
  ctest --test-dir "$dir" --output-on-failure -j"$jobs" "$@" 2>&1 | tee "$log"
  local total fail skip
  total=$(sed -n 's/.*tests failed out of \([0-9]*\).*/\1/p' "$log" | tail -1)
  fail=$(sed -n 's/.*, \([0-9]*\) tests failed out of.*/\1/p' "$log" | tail -1)
  skip=$(grep -c '(Skipped)' "$log" || true)
  total=${total:-0}; fail=${fail:-0}
  if [ "$total" = 0 ]; then echo "test.sh: no tests ran in $dir"; status=1; fi
  [ "$fail" != 0 ] && status=1
  passed=$((passed + total - fail - skip)); failed=$((failed + fail)); skipped=$((skipped + skip))
  rm -f "$log"
}

build() { # dir, cmake args...
  local dir=$1; shift
  echo "== configure $dir $*"
  local log; log=$(mktemp)
  cmake -S . -B "$dir" "$@" >"$log" 2>&1 || { cat "$log"; rm -f "$log"; return 1; }
  grep -E '^-- dvm' "$log" || true; rm -f "$log"
  echo "== build $dir"
  cmake --build "$dir" -j"$jobs" 2>&1 | grep -E 'error|warning|Error' ; return "${PIPESTATUS[0]}"
}

# every choice is passed, so that what scripts/demo.sh left in build/ (no tests, no HIP)
# does not carry over
if build build -DCMAKE_BUILD_TYPE=Release -DDVM_BUILD_TESTS=ON -DDVM_VULKAN=AUTO -DDVM_CUDA=AUTO -DDVM_HIP=AUTO; then
  run_ctest build
else
  echo "test.sh: the Release build failed"; status=1; failed=$((failed + 1))
fi

if build build-asan -DCMAKE_BUILD_TYPE=Debug -DDVM_SANITIZE=ON -DDVM_CUDA=OFF -DDVM_HIP=OFF; then
  ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
    run_ctest build-asan -LE nosan
else
  echo "test.sh: the sanitizer build failed"; status=1; failed=$((failed + 1))
fi

if [ -x tests/fuzz/run_fuzz.sh ]; then
  echo "== fuzz ($fuzz_seconds s per harness)"
  if tests/fuzz/run_fuzz.sh "$fuzz_seconds"; then passed=$((passed + 1)); else failed=$((failed + 1)); status=1; fi
fi

# Runs pytest on one device; adds its counts (pytest's own closing line) to the totals.
run_pytest() { # python, device
  local py=$1 dev=$2
  local log; log=$(mktemp)
  (cd build-py && "$py" -m pytest ../tests/python --dvm-device="$dev" -q -rs -p no:cacheprovider) 2>&1 | tee "$log"
  local rc=${PIPESTATUS[0]} last p f s e
  last=$(grep -E '^=*.* in [0-9.]+s' "$log" | tail -1)
  p=$(echo "$last" | grep -oE '[0-9]+ passed' | grep -oE '[0-9]+'); f=$(echo "$last" | grep -oE '[0-9]+ failed' | grep -oE '[0-9]+')
  s=$(echo "$last" | grep -oE '[0-9]+ skipped' | grep -oE '[0-9]+'); e=$(echo "$last" | grep -oE '[0-9]+ errors?' | grep -oE '[0-9]+')
  passed=$((passed + ${p:-0})); failed=$((failed + ${f:-0} + ${e:-0})); skipped=$((skipped + ${s:-0}))
  if [ "$rc" != 0 ] && [ "$rc" != 5 ]; then status=1; [ -z "$f$e" ] && failed=$((failed + 1)); fi
  rm -f "$log"
}

echo "== python package: fresh venv, pip install ."
rm -rf build-py && mkdir -p build-py
if python3 -m venv build-py/venv && build-py/venv/bin/pip install -q numpy pytest &&
   build-py/venv/bin/pip install -q . -C cmake.define.DVM_CUDA=OFF -C cmake.define.DVM_HIP=OFF \
     -C build-dir=build-py/build; then
  py=$PWD/build-py/venv/bin/python
  run_pytest "$py" cpu
  if "$py" -c 'import dvm, sys; sys.exit("vulkan:0" not in dvm.devices())'; then
    run_pytest "$py" vulkan:0
  else
    echo "test.sh: python tests on vulkan skipped: no Vulkan device (python -m dvm info says why)"
    skipped=$((skipped + 1))
  fi
else
  echo "test.sh: pip install . failed"; status=1; failed=$((failed + 1))
fi

echo "summary: $passed passed, $failed failed, $skipped skipped"
exit $status

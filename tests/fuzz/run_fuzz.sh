#!/bin/sh
# run_fuzz.sh [SECONDS]: builds the libFuzzer harnesses with clang (ASan + UBSan), compiling
# the library sources they need directly, and runs each for SECONDS (default 60) from a
# copy of its seed corpus. Fails if a harness does not build or finds a crash, leak,
# sanitizer report or abort; the crashing input is left in the work directory it prints.
# fuzz_front takes sources up to 4 MiB, seeded also with large generated ones (long elif and
# helper chains, long expressions, many statements); fuzz_npy is the .npy reader.
# fuzz_front needs the whole compiler (front end, autodiff, emitter); it is skipped, with a
# message, while compiler/ lacks one of its stages.
set -eu
secs=${1:-60}
root=$(cd "$(dirname "$0")/../.." && pwd)
cc=${CC_FUZZ:-clang}
work=$(mktemp -d "${TMPDIR:-/tmp}/dvm-fuzz.XXXXXX")
echo "run_fuzz: work directory $work"
flags="-std=c11 -D_POSIX_C_SOURCE=200809L -g -O1 -fno-omit-frame-pointer
       -fsanitize=fuzzer,address,undefined -fno-sanitize-recover=undefined
       -I$root -I$root/include"

# The library sources: every stage a harness needs, compiled straight into it.
bytecode_src=$(ls "$root"/bytecode/*.c)
for f in ops.c program.c; do
    [ -f "$root/bytecode/$f" ] || { echo "run_fuzz: bytecode/$f is missing (the emit helper's file)"; exit 1; }
done

run() { # name, max_len, sources...
    name=$1; maxlen=$2; shift 2
    echo "run_fuzz: building $name"
    # shellcheck disable=SC2086
    $cc $flags "$@" -lm -o "$work/$name"
    mkdir -p "$work/corpus_$name" "$work/artifacts_$name"
    cp "$root/tests/fuzz/corpus_${name#fuzz_}"/* "$work/corpus_$name"/
    [ "$name" != fuzz_front ] || big_seeds "$work/corpus_$name"
    echo "run_fuzz: running $name for $secs s"
    if ! "$work/$name" -max_total_time="$secs" -rss_limit_mb=2048 -max_len="$maxlen" -timeout=10 \
            -print_final_stats=1 -artifact_prefix="$work/artifacts_$name/" "$work/corpus_$name" \
            >"$work/$name.log" 2>&1; then
        tail -n 60 "$work/$name.log"
        echo "run_fuzz: $name FAILED; inputs in $work/artifacts_$name/"
        exit 1
    fi
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$work/$name.log" | sed "s/^/run_fuzz: $name /"
}

# Large sources for fuzz_front's corpus (generated: they would bloat the repository).
big_seeds() { # dir
    awk 'BEGIN { print "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n        if v < 0.0:\n            y[i] = 0.0";
                 for (j = 1; j < 1500; j++) printf "        elif v < %d.0:\n            y[i] = %d.0 * v\n", j, j;
                 print "        else:\n            y[i] = v" }' >"$1/big_elif.dvk"
    awk 'BEGIN { print "def h0(a: f32) -> f32:\n    return a + 1.0";
                 for (j = 1; j < 100; j++) printf "def h%d(a: f32) -> f32:\n    return h%d(a) * 0.5 + 1.0\n", j, j - 1;
                 print "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = h99(x[i])" }' >"$1/big_helpers.dvk"
    awk 'BEGIN { printf "kernel k(x: f32[n], y: f32[n]):\n    for i in range(n):\n        v = x[i]\n";
                 for (j = 0; j < 4000; j++) printf "        v = v * 0.999 + sin(v) * %d.0\n", j % 7;
                 printf "        y[i] = v"; for (j = 0; j < 300; j++) printf " + v"; print "" }' >"$1/big_stmts.dvk"
    awk 'BEGIN { for (j = 0; j < 2000; j++) printf "kernel k%d(x: f32[n], y: f32[n]):\n    for i in range(n):\n        y[i] = x[i] * %d.0\n", j, j }' \
        >"$1/big_kernels.dvk"
}

# The harnesses build and run side by side (each is one process: on 2 cores the fuzz step
# then takes one harness's time, not the sum).
# shellcheck disable=SC2086
(run fuzz_blob 65536 "$root/tests/fuzz/fuzz_blob.c" $bytecode_src) &
blob=$!
# shellcheck disable=SC2086
(run fuzz_npy 65536 "$root/tests/fuzz/fuzz_npy.c" "$root/cli/npy.c") &
npy=$!

missing=""
for f in lex.c parse.c check.c lower.c autodiff.c emit.c compile.c; do
    [ -f "$root/compiler/$f" ] || missing="$missing $f"
done
front=""
if [ -n "$missing" ]; then
    echo "run_fuzz: fuzz_front skipped: compiler/ lacks$missing"
else
    # shellcheck disable=SC2086
    (run fuzz_front 4194304 "$root/tests/fuzz/fuzz_front.c" $bytecode_src $(ls "$root"/compiler/*.c)) &
    front=$!
fi
ok=1
wait "$blob" || ok=0
wait "$npy" || ok=0
if [ -n "$front" ]; then wait "$front" || ok=0; fi
[ "$ok" = 1 ] || exit 1
echo "run_fuzz: no crash"
rm -rf "$work"

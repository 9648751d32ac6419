#!/bin/sh
# run_fuzz.sh [SECONDS]: builds the libFuzzer harnesses with clang (ASan + UBSan), compiling
# the library sources they need directly, and runs each for SECONDS (default 60) from a
# copy of its seed corpus. Fails if a harness does not build or finds a crash, leak,
# sanitizer report or abort; the crashing input is left in the work directory it prints.
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

run() { # name, sources...
    name=$1; shift
    echo "run_fuzz: building $name"
    # shellcheck disable=SC2086
    $cc $flags "$@" -lm -o "$work/$name"
    mkdir -p "$work/corpus_$name" "$work/artifacts_$name"
    cp "$root/tests/fuzz/corpus_${name#fuzz_}"/* "$work/corpus_$name"/
    echo "run_fuzz: running $name for $secs s"
    if ! "$work/$name" -max_total_time="$secs" -rss_limit_mb=2048 -max_len=65536 -timeout=10 \
            -print_final_stats=1 -artifact_prefix="$work/artifacts_$name/" "$work/corpus_$name" \
            >"$work/$name.log" 2>&1; then
        tail -n 60 "$work/$name.log"
        echo "run_fuzz: $name FAILED; inputs in $work/artifacts_$name/"
        exit 1
    fi
    grep -E "stat::number_of_executed_units|stat::new_units_added" "$work/$name.log" | sed "s/^/run_fuzz: $name /"
}

# The harnesses build and run side by side (each is one process: on 2 cores the fuzz step
# then takes one harness's time, not the sum).
# shellcheck disable=SC2086
(run fuzz_blob "$root/tests/fuzz/fuzz_blob.c" $bytecode_src) &
blob=$!

missing=""
for f in lex.c parse.c check.c autodiff.c emit.c; do
    [ -f "$root/compiler/$f" ] || missing="$missing $f"
done
front=""
if [ -n "$missing" ]; then
    echo "run_fuzz: fuzz_front skipped: compiler/ lacks$missing"
else
    # shellcheck disable=SC2086
    (run fuzz_front "$root/tests/fuzz/fuzz_front.c" $bytecode_src $(ls "$root"/compiler/*.c)) &
    front=$!
fi
ok=1
wait "$blob" || ok=0
if [ -n "$front" ]; then wait "$front" || ok=0; fi
[ "$ok" = 1 ] || exit 1
echo "run_fuzz: no crash"
rm -rf "$work"

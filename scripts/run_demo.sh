#!/usr/bin/env bash
# Runs the README demo with an already built dvm: the spec's `damp` kernel forward, then its
# gradient dL/dx for L = y[0] (seed y.grad = 1), on the default backend.
set -euo pipefail
cd "$(dirname "$0")/.."
dvm=${1:-build}/dvm
args=(x=examples/data/x.npy steps=examples/data/steps.npy y=examples/data/y.npy rate=0.9)
echo "$ dvm info"
"$dvm" info
echo
echo "$ dvm run examples/damp.dvk damp ${args[*]} --time"
"$dvm" run examples/damp.dvk damp "${args[@]}" --time 2>&1
echo
echo "$ dvm grad examples/damp.dvk damp ${args[*]} y.grad=examples/data/y_seed.npy --time"
"$dvm" grad examples/damp.dvk damp "${args[@]}" y.grad=examples/data/y_seed.npy --time 2>&1
echo
echo "(x.grad[i] = rate^steps[i]: each x[i] goes through steps[i] steps of v = v*rate + 0.01)"

#!/bin/sh
# test_gpu_brx.sh: checks ptx_brx's reports from the CUDA build: in every PTX, every marked
# dispatch switch became a jump table ("ptx_brx: N of N switches rewritten", N > 0). A switch
# left as compares still runs correctly, only slower: this catches an nvcc whose PTX the
# rewriter no longer understands.
#   test_gpu_brx.sh REPORT...
set -eu
[ $# -gt 0 ] || { echo "test_gpu_brx: no reports given" >&2; exit 2; }
status=0
for r in "$@"; do
  if [ ! -f "$r" ]; then
    echo "test_gpu_brx: FAIL: $r: no report (was the CUDA interpreter built?)" >&2; status=1; continue
  fi
  line=$(cat "$r")
  n=$(echo "$line" | sed -n 's/^ptx_brx: \([0-9]*\) of \([0-9]*\) switches rewritten.*/\1/p')
  m=$(echo "$line" | sed -n 's/^ptx_brx: \([0-9]*\) of \([0-9]*\) switches rewritten.*/\2/p')
  if [ -z "$n" ] || [ "$m" = 0 ] || [ "$n" != "$m" ]; then
    echo "test_gpu_brx: FAIL: $r: expected every switch rewritten, got: $line" >&2; status=1
  else
    echo "test_gpu_brx: $r: $line"
  fi
done
exit $status

#!/usr/bin/env bash
# Installs the dvm package with no network: the build requirements from a folder of wheels
# (tests/python/fetch_wheels.sh made it), then `pip install .` without build isolation.
# Usage: tests/python/offline_install.sh [PYTHON [WHEELDIR [pip options...]]]
#   e.g. tests/python/offline_install.sh python3 wheels -C cmake.define.DVM_CUDA=ON
# numpy must already be installed (it is a run-time dependency).
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${1:-python3}; dir=${2:-wheels}
shift $(( $# < 2 ? $# : 2 ))
[ -d "$dir" ] || { echo "offline_install: no wheel folder '$dir' (run tests/python/fetch_wheels.sh where there is network)"; exit 1; }
"$py" -m pip install -q --no-index --find-links "$dir" "scikit-build-core>=0.10" pytest
"$py" -m pip install --no-index --find-links "$dir" --no-build-isolation --no-deps . "$@"

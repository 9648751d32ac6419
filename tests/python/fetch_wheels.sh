#!/usr/bin/env bash
# Downloads what `pip install .` needs to build dvm without network into a folder of wheels
# (default: wheels/ at the repository root): scikit-build-core and pytest with their
# dependencies, for Python 3.9 to 3.13. Usage: fetch_wheels.sh [DIR [PYTHON]]. Run it where
# there is network; then carry the folder
# to the machine without (tests/python/offline_install.sh, tests/python/device_tests.sh).
set -euo pipefail
cd "$(dirname "$0")/../.."
dir=${1:-wheels}; py=${2:-python3}
mkdir -p "$dir"
for v in 3.9 3.10 3.11 3.12 3.13; do
  "$py" -m pip download -q --only-binary=:all: --python-version "$v" -d "$dir" "scikit-build-core>=0.10" pytest \
    exceptiongroup tomli typing-extensions  # needed below Python 3.11; pip does not evaluate markers for --python-version
done
ls "$dir"

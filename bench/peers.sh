#!/usr/bin/env bash
# dvm against Warp, Quadrants and JAX (bench/peers.py) in a venv of its own.
#
# Usage: bench/peers.sh [--venv DIR] [--python PY] [--wheels DIR] [--jax] [--system-site]
#                       [--dvm-opt OPT]... [--fetch DIR] [-- peers.py options...]
#   --venv DIR      the venv (default build/peers-venv); made when missing, reused otherwise
#   --python PY     the interpreter that makes the venv (default python3)
#   --wheels DIR    install from this folder of wheels, without network (pip --no-index
#                   --find-links DIR); DIR comes from `--fetch` run where there is network
#   --jax           also install jax[cpu] (on the GPU machine, whose python3 has jax, use
#                   --system-site instead)
#   --system-site   the venv sees the packages of PY (and of the venv PY may be in): numpy,
#                   torch, jax, cupy already installed there are used, not reinstalled
#   --dvm-opt OPT   an option for dvm's `pip install .`, e.g. --dvm-opt -C
#                   --dvm-opt cmake.define.DVM_CUDA=ON (repeatable; default: CMake's detection)
#   --fetch DIR     only download into DIR the wheels for Python 3.12, manylinux x86_64:
#                   warp-lang, quadrants and their dependencies, numpy, and scikit-build-core
#                   (dvm's build); then stop. Carry DIR to the machine without network.
#                   A wheel over 48 MiB (warp-lang's, 149 MiB) is repacked as NAME.tar.xz of
#                   its files (xz packs its native libraries into about 100 MiB) and split into
#                   48 MiB parts NAME.tar.xz.partNN (the device machine takes 64 MiB a call:
#                   carry them in successive calls); --wheels joins the parts (any sizes, in the
#                   order of NN) and zips the files into NAME again. A part missing (00 to NN
#                   not all there) or a join that does not unpack leaves that wheel out, saying so.
# On the GPU machine (no network; python3 a venv with numpy, torch, jax, cupy):
#   bench/peers.sh --system-site --wheels DIR --dvm-opt -C --dvm-opt cmake.define.DVM_CUDA=ON \
#     --dvm-opt -C --dvm-opt cmake.define.DVM_CUDA_ARCHS=90 -- --device cuda
# There, what an earlier call left inside the checkout's copy (beside a carried folder too)
# was gone by the next call: each call that carries a part copies it to a folder outside the
# checkout (/tmp/wheels, say), and the last one gives that folder to --wheels (warp-lang's 101
# MiB take three calls, quadrants' 40 MiB a fourth or room in one of them).
# dvm is installed from this checkout with `pip install .`. A peer that does not install is
# skipped, saying pip's last line, and peers.py runs without it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=build/peers-venv; py=python3; wheels=""; jax=0; site=0; fetch=""; dvmopts=()
while [ $# -gt 0 ]; do
  case "$1" in
    --venv) venv=$2; shift 2 ;;
    --python) py=$2; shift 2 ;;
    --wheels) wheels=$2; shift 2 ;;
    --jax) jax=1; shift ;;
    --system-site) site=1; shift ;;
    --fetch) fetch=$2; shift 2 ;;
    --dvm-opt) dvmopts+=("$2"); shift 2 ;;
    --) shift; break ;;
    -h|--help) sed -n '2,/^set -euo/p' "$0" | sed '$d' | cut -c3-; exit 0 ;;
    *) echo "peers.sh: unknown option '$1' (--help lists them; peers.py options go after --)" >&2; exit 2 ;;
  esac
done

if [ -n "$fetch" ]; then
  mkdir -p "$fetch"
  # cp312 manylinux x86_64 binaries; numpy is fetched too (quadrants and warp pin no version,
  # the target's own numpy satisfies them when it is new enough)
  "$py" -m pip download --only-binary=:all: --python-version 3.12 --platform manylinux2014_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64 --platform manylinux_2_34_x86_64 \
    --implementation cp -d "$fetch" warp-lang quadrants numpy "scikit-build-core>=0.10"
  # the device machine takes at most 64 MiB a call: a larger wheel (warp-lang's) goes as an
  # xz tar of its files, in 48 MiB parts NAME.tar.xz.partNN, carried one call each; --wheels
  # joins them and zips the wheel again
  for f in "$fetch"/*.whl; do
    if [ "$(stat -c %s "$f")" -gt $((48 << 20)) ]; then
      t=$(mktemp -d)
      "$py" -m zipfile -e "$f" "$t"
      tar -C "$t" -cf - . | xz -6 -T0 > "$f.tar.xz"
      rm -rf "$t" "$f"
      if [ "$(stat -c %s "$f.tar.xz")" -gt $((48 << 20)) ]; then
        split -b 48M -d "$f.tar.xz" "$f.tar.xz.part" && rm "$f.tar.xz"
      fi
    fi
  done
  ls -l "$fetch"
  exit 0
fi
if [ -n "$wheels" ]; then
  for p in "$wheels"/*.part00; do
    [ -e "$p" ] || continue
    f=${p%.part00}
    [ -e "$f" ] || [ -e "${f%.tar.xz}" ] && continue
    parts=("$f".part[0-9][0-9])
    last=${parts[-1]##*.part}
    if [ ${#parts[@]} -ne $((10#$last + 1)) ]; then
      echo "peers.sh: $f: parts 00 to $last, but ${#parts[@]} of them here (one not carried?): not joined"
      continue
    fi
    cat "${parts[@]}" > "$f"
  done
  for x in "$wheels"/*.whl.tar.xz; do
    [ -e "$x" ] || continue
    w=${x%.tar.xz}
    [ -e "$w" ] && continue
    t=$(mktemp -d)
    if ! tar -C "$t" -xJf "$x"; then
      echo "peers.sh: $x does not unpack: its wheel is not made"
      rm -rf "$t"
      [ -e "$x.part00" ] && rm -f "$x"  # joined here from parts: joined again next time
      continue
    fi
    # stored, not deflated: only pip reads it, once
    "$py" -c 'import os, sys, zipfile
root, out = sys.argv[1], sys.argv[2]
with zipfile.ZipFile(out + ".tmp", "w", zipfile.ZIP_STORED) as z:
    for d, dirs, files in sorted(os.walk(root)):
        dirs.sort()
        for n in sorted(files):
            z.write(os.path.join(d, n), os.path.relpath(os.path.join(d, n), root))
os.replace(out + ".tmp", out)' "$t" "$w"
    rm -rf "$t"
  done
fi

if [ ! -x "$venv/bin/python" ]; then
  opts=(); [ "$site" = 1 ] && opts+=(--system-site-packages)
  "$py" -m venv "${opts[@]}" "$venv"
  if [ "$site" = 1 ]; then
    # $py may itself be a venv, whose packages --system-site-packages does not reach: a .pth
    # file adds its site folders too
    "$py" -c 'import site; print("\n".join(site.getsitepackages() + [site.getusersitepackages()]))' \
      > "$("$venv/bin/python" -c 'import site; print(site.getsitepackages()[0])')/dvm-parent-env.pth"
  fi
fi
venv=$(cd "$venv" && pwd)
vpy=$venv/bin/python
pipi=("$vpy" -m pip install -q)
[ -n "$wheels" ] && pipi+=(--no-index --find-links "$wheels")

install() { # package: installs it or says why not
  if ! "${pipi[@]}" "$1" 2> "$venv/pip-$2.log"; then
    echo "peers.sh: $1 did not install (skipped): $(tail -n 1 "$venv/pip-$2.log")"
  fi
}
"$vpy" -c "import numpy" 2>/dev/null || "${pipi[@]}" numpy
install warp-lang warp
install quadrants quadrants
[ "$jax" = 1 ] && install "jax[cpu]" jax

# dvm from this checkout
if [ -n "$wheels" ]; then
  "${pipi[@]}" "scikit-build-core>=0.10"
  "${pipi[@]}" --no-build-isolation --no-deps . -C build-dir="$venv/dvm-build" "${dvmopts[@]}"
else
  "${pipi[@]}" . -C build-dir="$venv/dvm-build" "${dvmopts[@]}"
fi

# outside the checkout, so `import dvm` is the installed package, not python/ (which has no libdvm.so)
root=$PWD
cd "$venv"
exec "$vpy" "$root/bench/peers.py" "$@"

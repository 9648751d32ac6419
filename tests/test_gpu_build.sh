#!/bin/sh
# test_gpu_build.sh: checks that the interpreter images embedded in libdvm hold code for
# every expected target: the CUDA fatbin (SASS per sm_XX, PTX for the newest) and the HIP
# offload bundle (a code object per gfx target). Fails naming the missing target.
#   test_gpu_build.sh DUMP_TOOL BACKEND "EXPECTED..." [BUNDLER]
#   BACKEND cuda: EXPECTED like "sm_75 sm_90 compute_90"; hip: "gfx906 gfx90a"
set -eu
tool=$1 backend=$2 expected=$3 bundler=${4:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$tool" "$backend" "$tmp/image"
found=""
if [ "$backend" = cuda ]; then
  if command -v cuobjdump >/dev/null 2>&1; then
    # cuobjdump names SASS as *.sm_XX.cubin and PTX as *.sm_XX.ptx
    found="$(cuobjdump --list-elf "$tmp/image" | sed -n 's/.*\.\(sm_[0-9a-z]*\)\.cubin.*/\1/p')
$(cuobjdump --list-ptx "$tmp/image" | sed -n 's/.*\.sm_\([0-9a-z]*\)\.ptx.*/compute_\1/p')"
    echo "test_gpu_build: listed with cuobjdump"
  else
    # no cuobjdump (this nvcc 13 install has none): read the fatbin container directly
    # (header: magic 0xBA55ED50, u16 version, u16 header size, u64 size; each entry:
    #  u16 kind (1 PTX, 2 ELF), u16, u32 header size, u64 payload size, ..., u32 arch at +28)
    found=$(python3 - "$tmp/image" <<'PY'
import struct, sys
d = open(sys.argv[1], 'rb').read()
magic, ver, hsz, size = struct.unpack_from('<IHHQ', d, 0)
if magic != 0xBA55ED50:
    sys.exit('test_gpu_build: the embedded CUDA image is not a fatbin (magic %08x)' % magic)
off, end = hsz, hsz + size
while off < end:
    kind, _, ehsz, psz = struct.unpack_from('<HHIQ', d, off)
    arch = struct.unpack_from('<I', d, off + 28)[0]
    print(('sm_%d' if kind == 2 else 'compute_%d') % arch)
    off += ehsz + psz
PY
)
    echo "test_gpu_build: listed by parsing the fatbin (cuobjdump not found)"
  fi
elif [ "$backend" = hip ]; then
  found=$("$bundler" --list --type=o --input="$tmp/image" | sed -n 's/.*amdgcn-amd-amdhsa-[^-]*-\(gfx[0-9a-z]*\).*/\1/p')
  echo "test_gpu_build: listed with $bundler"
else
  echo "test_gpu_build: unknown backend $backend" >&2
  exit 2
fi
echo "test_gpu_build: $backend image holds:" $found
missing=""
for t in $expected; do
  echo "$found" | grep -qx "$t" || missing="$missing $t"
done
if [ -n "$missing" ]; then
  echo "test_gpu_build: FAIL: expected $backend targets [$expected], missing:$missing" >&2
  exit 1
fi
echo "test_gpu_build: OK: every expected $backend target is embedded ($expected)"

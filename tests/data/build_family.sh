#!/usr/bin/env bash
# Build the kernel-family fixtures (tests/data/bin/family_*.so) from tests/data/src/family/:
# one kernel template (cwfam::Gemm) instantiated in per-architecture translation units, the
# shape of real libraries' per-arch kernels (vLLM's Marlin MoE units), to check the judge
# against launches on a real GPU (tests/probe/family_truth.py, tests/test_family_truth.py).
#
#   family_dispatch.so  Gemm<float,75> sm_75 | Gemm<float,80> compute_80 + sm_80 |
#                       Gemm<float,90> sm_90a; host code picks the unit by compute capability
#   family_sm75.so      the same objects; host code calls the sm_75 instantiation everywhere
#   family_unique.so    as family_dispatch, but the sm_75 unit also holds cwfam::Epilogue,
#                       which host code runs after the Gemm on every GPU
#   family_newptx.so    Gemm<float,90> sm_90 | src/family/table.cu (device data, no kernel) and
#                       src/family/empty.cu (no device code), each compute_75 PTX + sm_75,
#                       their PTX rewritten to ISA 9.4 (CUDA 13.4's, newer than driver 580's
#                       CUDA 13.0) in its text and entry header: NVIDIA's cuRAND 10.4.5.25 has
#                       three such kernel-less containers, and nothing else newer
#   family_newvar.so    as family_newptx.so with src/family/var.cu (a device variable that its
#                       own host code reads, cw_read_table) instead of table.cu and empty.cu
# Needs nvcc 13.0 and gcc.  Expectations are in tests/test_family_truth.py, by hand.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src/family"
BIN="$HERE/bin"
NVCC="${NVCC:-nvcc}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
cu() { local out="$1" src="$2"; shift 2; "$NVCC" -Xcompiler -fPIC -no-compress -c "$@" "$SRC/$src" -o "$out"; }
host() { gcc -fPIC -c -D"$1" -I"$(dirname "$(command -v "$NVCC")")/../include" \
    -I/usr/local/cuda-13.0/include "$SRC/host.c" -o "host_$1.o"; }
link() { local out="$1"; shift; "$NVCC" -shared -cudart=shared "$@" -o "$BIN/$out"
    strip --strip-unneeded "$BIN/$out"; }

cu g75.o gemm.cu -DCW_TAG=75 -gencode arch=compute_75,code=sm_75
cu g80.o gemm.cu -DCW_TAG=80 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80
cu g90.o gemm.cu -DCW_TAG=90 -gencode arch=compute_90a,code=sm_90a
cu g75u.o gemm.cu -DCW_TAG=75 -DCW_UNIQUE -gencode arch=compute_75,code=sm_75
host FAMILY_DISPATCH
host FAMILY_SM75
host FAMILY_UNIQUE
host FAMILY_NEWPTX
host FAMILY_NEWVAR
cu g90s.o gemm.cu -DCW_TAG=90 -gencode arch=compute_90,code=sm_90
cu table.o table.cu -diag-suppress 177 -gencode arch=compute_75,code=[compute_75,sm_75]
cu empty.o empty.cu -gencode arch=compute_75,code=[compute_75,sm_75]
cu var.o var.cu -gencode arch=compute_75,code=[compute_75,sm_75]
link family_dispatch.so g75.o g80.o g90.o host_FAMILY_DISPATCH.o
link family_sm75.so g75.o g80.o g90.o host_FAMILY_SM75.o
link family_unique.so g75u.o g80.o g90.o host_FAMILY_UNIQUE.o
link family_newptx.so g90s.o table.o empty.o host_FAMILY_NEWPTX.o
link family_newvar.so g90s.o var.o host_FAMILY_NEWVAR.o
# the compute_75 PTX entries' ISA 9.0 -> 9.4, in the text and the entry header (ISA
# (minor, major) at +24, arch at +28: docs/formats.md); same lengths
newptx() { python3 - "$@" <<'PY'
import re, struct, sys
path, units = sys.argv[1], int(sys.argv[2])
data = bytearray(open(path, "rb").read())
hits = [m.start() for m in re.finditer(re.escape(struct.pack("<HHI", 0, 9, 75)), bytes(data))
        if struct.unpack_from("<H", data, m.start() - 24)[0] == 1]
assert len(hits) == units, hits
for at in hits:
    struct.pack_into("<HH", data, at, 4, 9)
assert bytes(data).count(b".version 9.0") == units
data = bytearray(bytes(data).replace(b".version 9.0", b".version 9.4"))
open(path, "wb").write(bytes(data))
PY
}
newptx "$BIN/family_newptx.so" 2
newptx "$BIN/family_newvar.so" 1
ls -la "$BIN"/family_*.so

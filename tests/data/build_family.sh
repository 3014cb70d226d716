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
# Needs nvcc 13.0 and gcc.  Expectations are in tests/test_family_truth.py, by hand.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src/family"
BIN="$HERE/bin"
NVCC="${NVCC:-nvcc}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
cu() { local out="$1"; shift; "$NVCC" -Xcompiler -fPIC -no-compress -c "$@" "$SRC/gemm.cu" -o "$out"; }
host() { gcc -fPIC -c -D"$1" -I"$(dirname "$(command -v "$NVCC")")/../include" \
    -I/usr/local/cuda-13.0/include "$SRC/host.c" -o "host_$1.o"; }
link() { local out="$1"; shift; "$NVCC" -shared -cudart=shared "$@" -o "$BIN/$out"
    strip --strip-unneeded "$BIN/$out"; }

cu g75.o -DCW_TAG=75 -gencode arch=compute_75,code=sm_75
cu g80.o -DCW_TAG=80 -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80
cu g90.o -DCW_TAG=90 -gencode arch=compute_90a,code=sm_90a
cu g75u.o -DCW_TAG=75 -DCW_UNIQUE -gencode arch=compute_75,code=sm_75
host FAMILY_DISPATCH
host FAMILY_SM75
host FAMILY_UNIQUE
link family_dispatch.so g75.o g80.o g90.o host_FAMILY_DISPATCH.o
link family_sm75.so g75.o g80.o g90.o host_FAMILY_SM75.o
link family_unique.so g75u.o g80.o g90.o host_FAMILY_UNIQUE.o
ls -la "$BIN"/family_*.so

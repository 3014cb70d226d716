#!/usr/bin/env bash
# Build the kernel-name fixtures (tests/data/bin/kern_*.so) from tests/data/src/kernels/:
#
#   kern_perarch.so  kj::scale<1> sm_75 | kj::scale<2>, <3> {sm_80, compute_80} |
#                    kj::scale<4> sm_90a: one template, instantiated per architecture in
#                    three containers (as vLLM's Marlin MoE kernels are)
#   kern_unique.so   the same, and kj::turing_only in a fourth container, sm_75 only: a
#                    kernel no container for any other GPU has
#   kern_static.so   kj::scale<2>, <3> (t80.o) linked with -cudart=static and stripped:
#                    the CUDA runtime inside, no libcudart.so NEEDED
#   kern_names.so    kernels of several name shapes (templates, an anonymous namespace,
#                    static, extern "C", overloads, a lambda argument), sm_80 + compute_80
# Needs nvcc 13.0.  Expectations are in tests/test_kernels.py, by hand (c++filt and
# cuobjdump are the oracles for the names).
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src/kernels"
BIN="$HERE/bin"
NVCC="${NVCC:-nvcc}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
cu() { "$NVCC" -Xcompiler -fPIC -c "$@"; }
link() { local out="$1"; shift; "$NVCC" -shared -cudart="${RT:-shared}" "$@" -o "$BIN/$out"
    strip --strip-unneeded "$BIN/$out"; }

cu -gencode arch=compute_75,code=sm_75 "$SRC/t75.cu" -o t75.o
cu -gencode arch=compute_80,code=sm_80 -gencode arch=compute_80,code=compute_80 \
    "$SRC/t80.cu" -o t80.o
cu -gencode arch=compute_90a,code=sm_90a "$SRC/t90a.cu" -o t90a.o
cu -gencode arch=compute_75,code=sm_75 "$SRC/only75.cu" -o only75.o
link kern_perarch.so t75.o t80.o t90a.o
link kern_unique.so t75.o t80.o t90a.o only75.o
RT=static link kern_static.so t80.o
cu --extended-lambda -gencode arch=compute_80,code=sm_80 \
    -gencode arch=compute_80,code=compute_80 "$SRC/names.cu" -o names.o
link kern_names.so names.o
ls -la "$BIN"/kern_*.so

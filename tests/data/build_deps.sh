#!/usr/bin/env bash
# Build the fixtures of the dependency checks on torch extensions (tests/data/bin/deps_*,
# DEP008 / DEP009) without touching the other fixtures; build_check.sh calls this at its end.
#
# Needs gcc (x86_64).  Each fixture is host code only, linked against stand-ins that carry
# nothing but their sonames, so that its DT_NEEDED list is the one of a real published
# torch extension (read with readelf -d from the wheel on PyPI):
#   deps_torchext_cu12.so  auto_gptq 0.7.1 (cp311 manylinux2014_x86_64, Requires-Dist
#                          torch >=1.13.0) autogptq_cuda_64.cpython-311-x86_64-linux-gnu.so:
#                          libc10.so libtorch_cpu.so libtorch_python.so libcudart.so.12
#                          libc10_cuda.so (then libstdc++/libgcc_s/libc, left to gcc)
#   deps_torchext_cu13.so  the same list with libcudart.so.13 (a CUDA 13 rebuild)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"

T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
rm -f "$BIN"/deps_*

for so in libc10.so libtorch_cpu.so libtorch_python.so libc10_cuda.so; do
    gcc -shared -fPIC -O2 -Wl,-soname,$so "$SRC/hostonly.c" -o $so
done
for major in 12 13; do
    gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.$major "$SRC/cudart_stub.c" \
        -o libcudart.so.$major
    ln -sf libcudart.so.$major libcudart.so
    gcc -shared -fPIC -O2 "$SRC/hostonly.c" -L. -Wl,--no-as-needed \
        -l:libc10.so -l:libtorch_cpu.so -l:libtorch_python.so -lcudart -l:libc10_cuda.so \
        -o "$BIN/deps_torchext_cu$major.so"
    strip --strip-unneeded "$BIN/deps_torchext_cu$major.so"
done
ls -l "$BIN"/deps_*

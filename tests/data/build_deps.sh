#!/usr/bin/env bash
# Build the fixtures of the dependency checks on torch extensions (tests/data/bin/deps_*,
# DEP008-DEP010) without touching the other fixtures; build_check.sh calls this at its end.
#
# Needs gcc (x86_64).  Each fixture is host code only (src/torchext.c), linked against
# stand-ins that carry only sonames and the symbols it uses (src/torchlib_stub.c,
# src/cudart_stub.c), so that its DT_NEEDED list and torch symbols are those of a real
# published torch extension (readelf -d and nm -D --undefined-only of the wheels on PyPI):
#   deps_torchext_cu12.so  auto_gptq 0.7.1 (cp311 manylinux2014_x86_64, Requires-Dist
#                          torch >=1.13.0) autogptq_cuda_64.cpython-311-x86_64-linux-gnu.so:
#                          NEEDED libc10.so libtorch_cpu.so libtorch_python.so
#                          libcudart.so.12 libc10_cuda.so (then libstdc++/libgcc_s/libc,
#                          left to gcc); 2 of its 29 C++ API symbols (_ZN3c10...)
#   deps_torchext_cu13.so  the same with libcudart.so.13 (a CUDA 13 rebuild against torch
#                          2.11: two C++ API symbols only 2.11.0 exports both of)
#   deps_stableabi_cu12.so xformers 0.0.35 (py39-none-manylinux_2_28_x86_64, Requires-Dist
#                          torch>=2.10) xformers/_C.so: NEEDED libc10.so libtorch.so
#                          libtorch_cpu.so libtorch_python.so libcudart.so.12
#                          libc10_cuda.so libtorch_cuda.so; 2 of its aoti_torch_* symbols
#                          (torch's stable C shim) and no C++ API symbol
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"

T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
rm -f "$BIN"/deps_*

for so in libc10.so libtorch.so libtorch_cpu.so libtorch_python.so libc10_cuda.so \
          libtorch_cuda.so; do
    gcc -shared -fPIC -O2 -Wl,-soname,$so "$SRC/torchlib_stub.c" -o $so
done
for major in 12 13; do
    gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.$major "$SRC/cudart_stub.c" \
        -o libcudart.so.$major
done
ln -sf libcudart.so.12 libcudart.so
gcc -shared -fPIC -O2 "$SRC/torchext.c" -L. -Wl,--no-as-needed \
    -l:libc10.so -l:libtorch.so -l:libtorch_cpu.so -l:libtorch_python.so -lcudart \
    -l:libc10_cuda.so -l:libtorch_cuda.so -o "$BIN/deps_stableabi_cu12.so"
for major in 12 13; do
    ln -sf libcudart.so.$major libcudart.so
    api=-DCW_CXX_API
    [ "$major" = 13 ] && api=-DCW_CXX_API_211
    gcc -shared -fPIC -O2 $api "$SRC/torchext.c" -L. -Wl,--no-as-needed \
        -l:libc10.so -l:libtorch_cpu.so -l:libtorch_python.so -lcudart -l:libc10_cuda.so \
        -o "$BIN/deps_torchext_cu$major.so"
done
strip --strip-unneeded "$BIN"/deps_*.so
ls -l "$BIN"/deps_*

#!/usr/bin/env bash
# Build cuwheel doctor's fixtures (tests/data/bin_doctor/) from tests/data/src/doctor/.
#
# Needs: gcc, nvcc 13.0 (/usr/local/cuda-13.0), python3.  Re-runnable.
#   libcudart.so.12        stand-in CUDA 12 runtime (soname only; link target)
#   ext12.so               extension needing libcudart.so.12 (RUNPATH $ORIGIN/../cu12)
#   jit_old/libnvJitLink.so.12  defines __nvJitLinkAddData_12_1 (version libnvJitLink.so.12)
#   jit_new/libnvJitLink.so.12  defines _12_1 and _12_8
#   libcwskew.so           needs __nvJitLinkAddData_12_8@libnvJitLink.so.12 (RUNPATH $ORIGIN/jit_old)
#   ptx91.so               k.cu as compute_90 PTX only, its ISA rewritten 9.0 -> 9.1
#   libcudart.so.13        stand-in CUDA 13 runtime (soname only)
#   global_deps.so         like torch/lib/libtorch_global_deps.so: DT_RPATH
#                          $ORIGIN/../../nvidia/cu13/lib, needs libcudart.so.13
#   rt13.so                needs libcudart.so.13, RUNPATH $ORIGIN/../nvidia/cu13/lib
#   cutensor_mod.so        like CuPy's cupy_backends/cuda/libs/cutensor module: needs
#                          libcutensor.so.2 (a stand-in, not kept), no run path
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src/doctor"
BIN="$HERE/bin_doctor"
CUDA="${CUDA_HOME:-/usr/local/cuda-13.0}"
rm -rf "$BIN"; mkdir -p "$BIN/jit_old" "$BIN/jit_new"
T="$(mktemp -d)"; trap 'rm -rf "$T"' EXIT

gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.12 "$HERE/src/cudart_stub.c" -o "$BIN/libcudart.so.12"
gcc -shared -fPIC -O2 "$SRC/ext12.c" -L"$BIN" -l:libcudart.so.12 \
    -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../cu12' -o "$BIN/ext12.so"
for v in old new; do
    gcc -shared -fPIC -O2 -Wl,-soname,libnvJitLink.so.12 -Wl,--version-script="$SRC/jit.map" \
        "$SRC/jit_$v.c" -o "$BIN/jit_$v/libnvJitLink.so.12"
done
gcc -shared -fPIC -O2 "$SRC/skew.c" -L"$BIN/jit_new" -l:libnvJitLink.so.12 \
    -Wl,--enable-new-dtags,-rpath,'$ORIGIN/jit_old' -o "$BIN/libcwskew.so"
gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.13 "$HERE/src/cudart_stub.c" -o "$BIN/libcudart.so.13"
gcc -shared -fPIC -O2 "$SRC/rt13.c" -L"$BIN" -l:libcudart.so.13 \
    -Wl,--disable-new-dtags,-rpath,'$ORIGIN/../../nvidia/cu13/lib' -o "$BIN/global_deps.so"
gcc -shared -fPIC -O2 "$SRC/rt13.c" -L"$BIN" -l:libcudart.so.13 \
    -Wl,--enable-new-dtags,-rpath,'$ORIGIN/../nvidia/cu13/lib' -o "$BIN/rt13.so"
gcc -shared -fPIC -O2 -Wl,-soname,libcutensor.so.2 "$HERE/src/cudart_stub.c" -o "$T/libcutensor.so.2"
gcc -shared -fPIC -O2 "$SRC/rt13.c" -L"$T" -l:libcutensor.so.2 -o "$BIN/cutensor_mod.so"
"$CUDA/bin/nvcc" -shared -Xcompiler -fPIC -cudart=shared --compress-mode=none \
    -gencode arch=compute_90,code=compute_90 "$HERE/src/k.cu" -o "$BIN/ptx91.so"
python3 "$SRC/patch_ptx_isa.py" "$BIN/ptx91.so" 9.0 9.1
strip --strip-unneeded "$BIN"/*.so "$BIN"/jit_*/*.so.12 "$BIN"/libcudart.so.1[23]

#!/usr/bin/env bash
# Build the fixtures of `cuwheel check`'s seed-row wheels (tests/data/bin/row_*) without
# touching the other fixtures; build.sh calls this at its end.
#
# Needs what build.sh needs, plus for the Orin (CUDA 12.6) fixture a CUDA 12.6 ptxas:
# PTXAS12 (default: ptxas of NVIDIA's nvidia-cuda-nvcc-cu12==12.6.85 wheel, e.g.
#   pip download --no-deps nvidia-cuda-nvcc-cu12==12.6.85 && unzip it; PTXAS12=.../nvidia/cuda_nvcc/bin/ptxas).
# nvcc 13.0 writes PTX ISA 9.0, which ptxas 12.6 rejects, so the compute_87 PTX gets
# `.version 8.5` (the ISA CUDA 12.6 emits; the kernel uses nothing newer) before ptxas 12.6
# assembles it: the cubin then records toolkit 12.6 in .note.nv.tkinfo, as an Orin build would.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"
CUDA="${CUDA_HOME:-/usr/local/cuda-13.0}"
NVCC="$CUDA/bin/nvcc"
FATBINARY="$CUDA/bin/fatbinary"
PTXAS12="${PTXAS12:-/tmp/cu126/nvidia/cuda_nvcc/bin/ptxas}"
MINGW=x86_64-w64-mingw32-gcc
ARMCC=aarch64-linux-gnu-gcc
EMBED="python3 $SRC/embed_fatbin.py"

T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
rm -f "$BIN"/row_*

# Linux x86_64, CUDA 13 row: SASS 80 86 89 90 100 120 + compute_120 PTX, in every container
# (the same -gencode list on the link line, so the device-link stub container matches).
GEN13=(-gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86
       -gencode arch=compute_89,code=sm_89 -gencode arch=compute_90,code=sm_90
       -gencode arch=compute_100,code=sm_100 -gencode arch=compute_120,code=[sm_120,compute_120])
"$NVCC" -shared -Xcompiler -fPIC -cudart=shared "${GEN13[@]}" "$SRC/k.cu" "$SRC/rowlib.c" \
    -Xlinker -rpath -Xlinker '$ORIGIN/../../nvidia/cu13/lib' -o "$BIN/row_x86_cu13.so"
strip --strip-unneeded "$BIN/row_x86_cu13.so"

# Its broken variants, one fault each (tests/test_gate_e2e.py): sm_89 missing; sm_75 extra;
# no PTX (compute_120 dropped).
G80=(-gencode arch=compute_80,code=sm_80)
G86=(-gencode arch=compute_86,code=sm_86)
G89=(-gencode arch=compute_89,code=sm_89)
G90_100=(-gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100)
G120P=(-gencode arch=compute_120,code=[sm_120,compute_120])
for v in no89 plus75 noptx; do
    case $v in
        no89) GEN=("${G80[@]}" "${G86[@]}" "${G90_100[@]}" "${G120P[@]}") ;;
        plus75) GEN=(-gencode arch=compute_75,code=sm_75 "${GEN13[@]}") ;;
        noptx) GEN=("${G80[@]}" "${G86[@]}" "${G89[@]}" "${G90_100[@]}"
                    -gencode arch=compute_120,code=sm_120) ;;
    esac
    "$NVCC" -shared -Xcompiler -fPIC -cudart=shared "${GEN[@]}" "$SRC/k.cu" "$SRC/rowlib.c" \
        -Xlinker -rpath -Xlinker '$ORIGIN/../../nvidia/cu13/lib' -o "$BIN/row_x86_$v.so"
    strip --strip-unneeded "$BIN/row_x86_$v.so"
done

# Linux aarch64, CUDA 13 row: SASS 90 100 110, no PTX; host code cross-built with gcc
# against a stand-in libcudart.so.13 (only the soname is used).
$ARMCC -shared -fPIC -O2 -Wl,-soname,libcudart.so.13 "$SRC/cudart_stub.c" -o libcudart.so.13
ln -sf libcudart.so.13 libcudart.so
"$NVCC" -fatbin -gencode arch=compute_90,code=sm_90 -gencode arch=compute_100,code=sm_100 \
    -gencode arch=compute_110,code=sm_110 "$SRC/k.cu" -o arm13.fatbin
$EMBED fb_arm13.c --section .nv_fatbin --align 8 --symbol cw_fatbin --wrapper .nvFatBinSegment arm13.fatbin
$ARMCC -shared -fPIC -O2 fb_arm13.c "$SRC/rowlib.c" -L. -Wl,--no-as-needed -lcudart -Wl,-z,max-page-size=4096 \
    -Wl,-rpath,'$ORIGIN/../../nvidia/cu13/lib' -o "$BIN/row_arm_cu13.so"
aarch64-linux-gnu-strip --strip-unneeded "$BIN/row_arm_cu13.so"

# An auditwheel-style renamed copy of the x86_64 stand-in cudart: file name
# libcudart-45e7f3ed.so.13, SONAME still libcudart.so.13 (the loader finds NEEDED entries
# by file name, so this copy does not satisfy NEEDED libcudart.so.13).
gcc -shared -fPIC -O2 -Wl,-soname,libcudart.so.13 "$SRC/cudart_stub.c" -o "$BIN/renamed_cudart.so"
strip --strip-unneeded "$BIN/renamed_cudart.so"

# An auditwheel-grafted copy of the driver (file name and SONAME libcuda-<hash>.so.<driver
# version>, exporting driver API entry points) and a plugin that NEEDs it.
GRAFT=libcuda-3e1a2b4c.so.580.65.06
gcc -shared -fPIC -O2 -Wl,-soname,$GRAFT "$SRC/libcuda_stub.c" -o "$BIN/grafted_libcuda.so"
strip --strip-unneeded "$BIN/grafted_libcuda.so"
cp "$BIN/grafted_libcuda.so" "$GRAFT"
gcc -shared -fPIC -O2 "$SRC/hostonly.c" -L. -Wl,--no-as-needed -l:$GRAFT -Wl,-rpath,'$ORIGIN' \
    -o "$BIN/needs_grafted_cuda.so"
strip --strip-unneeded "$BIN/needs_grafted_cuda.so"

# aarch64 host-only Python extension (the seed's _C: no CUDA at all).
$ARMCC -shared -fPIC -O2 -Wl,-z,max-page-size=4096 "$SRC/hostonly.c" -o "$BIN/row_arm_hostonly.so"
aarch64-linux-gnu-strip --strip-unneeded "$BIN/row_arm_hostonly.so"

# Linux aarch64, CUDA 12.6 (Jetson Orin) row: sm_87 cubin from ptxas 12.6, libcudart.so.12,
# RPATH into nvidia-cuda-runtime-cu12's directory.
"$NVCC" -ptx -arch=compute_87 "$SRC/k.cu" -o k87.ptx
sed 's/^\.version 9\.0$/.version 8.5/' k87.ptx > k87_isa85.ptx
"$PTXAS12" -arch=sm_87 k87_isa85.ptx -o k87.cubin
"$FATBINARY" --64 --create=orin.fatbin --image3=kind=elf,sm=87,file=k87.cubin
$EMBED fb_orin.c --section .nv_fatbin --align 8 --symbol cw_fatbin --wrapper .nvFatBinSegment orin.fatbin
$ARMCC -shared -fPIC -O2 -Wl,-soname,libcudart.so.12 "$SRC/cudart_stub.c" -o libcudart.so.12
ln -sf libcudart.so.12 libcudart.so
$ARMCC -shared -fPIC -O2 fb_orin.c "$SRC/rowlib.c" -L. -Wl,--no-as-needed -lcudart -Wl,-z,max-page-size=4096 \
    -Wl,-rpath,'$ORIGIN/../../nvidia/cuda_runtime/lib' -o "$BIN/row_orin_cu126.so"
aarch64-linux-gnu-strip --strip-unneeded "$BIN/row_orin_cu126.so"

# Windows x64, CUDA 13 row: SASS 80 86 89 90 100 120 + compute_120 PTX, no CUDA DLL imported
# (cudart linked statically, only the driver needed at run time).
for sm in 80 86 89 90 100 120; do "$NVCC" -cubin -arch=sm_$sm "$SRC/k.cu" -o w$sm.cubin; done
"$NVCC" -ptx -arch=compute_120 "$SRC/k.cu" -o w120.ptx
"$FATBINARY" --host=windows --64 --create=win_row.fatbin \
    --image3=kind=elf,sm=80,file=w80.cubin --image3=kind=elf,sm=86,file=w86.cubin \
    --image3=kind=elf,sm=89,file=w89.cubin --image3=kind=elf,sm=90,file=w90.cubin \
    --image3=kind=elf,sm=100,file=w100.cubin --image3=kind=elf,sm=120,file=w120.cubin \
    --image3=kind=ptx,sm=120,file=w120.ptx 2>/dev/null
$EMBED fb_winrow.c --section .nv_fatbin --align 16 --symbol cw_fatbin --wrapper .nvFatBinSegment \
    win_row.fatbin
cat > dllmain.c <<'C'
int __stdcall DllMain(void *h, unsigned long reason, void *reserved) { (void)h; (void)reason; (void)reserved; return 1; }
C
$MINGW -shared -O2 -nostdlib -Wl,--entry,DllMain -Wl,--disable-long-section-names \
    -Wl,--no-insert-timestamp -s "$SRC/win_row.c" fb_winrow.c dllmain.c -lkernel32 \
    -o "$BIN/row_win_cu13.dll"

ls -l "$BIN"/row_*

# The platform-tag fixtures (tag_*): glibc / libstdc++ versions, librt, abi3 modules.
bash "$HERE/build_tags.sh"

# The torch-extension fixtures of the dependency checks (deps_*, DEP008 / DEP009).
bash "$HERE/build_deps.sh"

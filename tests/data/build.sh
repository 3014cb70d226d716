#!/usr/bin/env bash
# Build the committed cuwheel test fixtures (tests/data/bin/) from tests/data/src/.
#
# Needs: nvcc/fatbinary/nvlink 13.0 (/usr/local/cuda-13.0), gcc, binutils, python3, and for
# the cross fixtures gcc-mingw-w64-x86-64 and gcc-aarch64-linux-gnu (Debian packages).
# Re-runnable: every output is rebuilt from scratch; intermediates live in a temp dir.
# What each fixture was asked to contain is recorded by hand in fixtures.toml.
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"
CUDA="${CUDA_HOME:-/usr/local/cuda-13.0}"
NVCC="$CUDA/bin/nvcc"
FATBINARY="$CUDA/bin/fatbinary"
NVLINK="$CUDA/bin/nvlink"
MINGW=x86_64-w64-mingw32-gcc
DLLTOOL=x86_64-w64-mingw32-dlltool
ARMCC=aarch64-linux-gnu-gcc
EMBED="python3 $SRC/embed_fatbin.py"

T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
mkdir -p "$BIN"
rm -f "$BIN"/*

# Shared-library flags: dynamic cudart keeps every .so small (DT_NEEDED libcudart.so.13).
SO=(-shared -Xcompiler -fPIC -cudart=shared)
so() { # so OUT ARGS...: nvcc shared library, then strip (.nv_fatbin is SHF_ALLOC and survives)
    local out="$1"; shift
    "$NVCC" "${SO[@]}" "$@" -o "$BIN/$out"
    strip --strip-unneeded "$BIN/$out"
}

cd "$T"

# ---- single-TU Linux shared libraries --------------------------------------------------
so sm80.so      -arch=sm_80 "$SRC/k.cu"
so sm80only.so  -gencode arch=compute_80,code=sm_80 "$SRC/k.cu"
so sm90a.so     -gencode arch=compute_90a,code=sm_90a "$SRC/k.cu"
so sm100f.so    -gencode arch=compute_100f,code=sm_100f "$SRC/k.cu"
so ptx120.so    -gencode arch=compute_120,code=compute_120 "$SRC/k.cu"
so allmajor.so  -arch=all-major "$SRC/k.cu"
so g80.so       -G -arch=sm_80 "$SRC/k.cu"

# ---- two translation units with different arch lists, linked without -arch -----------
"$NVCC" -Xcompiler -fPIC -c -gencode arch=compute_80,code=sm_80 -gencode arch=compute_86,code=sm_86 \
    "$SRC/tu1.cu" -o tu1.o
"$NVCC" -Xcompiler -fPIC -c -gencode arch=compute_90,code=[sm_90,compute_90] \
    -gencode arch=compute_120,code=sm_120 "$SRC/tu2.cu" -o tu2.o
"$NVCC" "${SO[@]}" tu1.o tu2.o -o "$BIN/two_tu.so"
strip --strip-unneeded "$BIN/two_tu.so"

# ---- NVIDIA's aarch64 layout: .nv_fatbin input sections aligned to 256 -------------------
# (real aarch64 libraries such as libcurand.so.10 have .nv_fatbin Al 256, so the linker puts
# zero bytes between one TU's container and the next; here 64 of them before tu2's)
"$NVCC" -Xcompiler -fPIC -c -arch=sm_80 "$SRC/tu1.cu" -o a256_tu1.o
"$NVCC" -Xcompiler -fPIC -c -gencode arch=compute_90,code=sm_90 "$SRC/tu2.cu" -o a256_tu2.o
objcopy --set-section-alignment .nv_fatbin=256 a256_tu1.o
objcopy --set-section-alignment .nv_fatbin=256 a256_tu2.o
"$NVCC" "${SO[@]}" a256_tu1.o a256_tu2.o -o "$BIN/align256.so"
strip --strip-unneeded "$BIN/align256.so"

# ---- relocatable device code ------------------------------------------------------------
# compile first so that the archive members are called rdc_a.o / rdc_b.o (not tmpxft_<pid>_...)
"$NVCC" -rdc=true -arch=sm_80 -Xcompiler -fPIC -c "$SRC/rdc_a.cu" -o rdc_a.o
"$NVCC" -rdc=true -arch=sm_80 -Xcompiler -fPIC -c "$SRC/rdc_b.cu" -o rdc_b.o
"$NVCC" -lib rdc_a.o rdc_b.o -o "$BIN/librdc.a"
"$NVCC" "${SO[@]}" -rdc=true -arch=sm_80 "$SRC/rdc_a.cu" "$SRC/rdc_b.cu" -o "$BIN/librdc.so"
strip --strip-unneeded "$BIN/librdc.so"

# ---- compression variants of an sm_80 + compute_80 library -------------------------------
so cm_none.so      -arch=sm_80 --compress-mode=none "$SRC/k.cu"
so cm_speed_all.so -arch=sm_80 -Xfatbin=-compress-all --compress-mode=speed "$SRC/k.cu"
so cm_size.so      -arch=sm_80 --compress-mode=size "$SRC/k.cu"
so cm_default.so   -arch=sm_80 "$SRC/k.cu"

# ---- host-only libraries ------------------------------------------------------------------
gcc -shared -fPIC -O2 "$SRC/hostonly.c" -o "$BIN/hostonly.so"
gcc -shared -fPIC -O2 -Wl,--no-as-needed -I"$CUDA/include" "$SRC/hostcudart.c" \
    -L"$CUDA/lib64" -lcudart -o "$BIN/hostcudart.so"
strip --strip-unneeded "$BIN/hostonly.so" "$BIN/hostcudart.so"

# ---- raw device-code files -----------------------------------------------------------------
"$NVCC" -fatbin -arch=sm_86 "$SRC/k.cu" -o "$BIN/k86.fatbin"
"$NVCC" -cubin -arch=sm_90 "$SRC/k.cu" -o "$BIN/k90.cubin"
"$NVCC" -ptx -arch=compute_89 "$SRC/k.cu" -o "$BIN/k89.ptx"

# ---- device code outside .nv_fatbin (the cufft .ldata blind spot) ------------------------
$EMBED ldata_blob.c --section .ldata_cuwheel --align 16 --symbol cw_hidden_fatbin "$BIN/k86.fatbin"
gcc -shared -fPIC -O2 ldata_blob.c "$SRC/hostonly.c" -o "$BIN/ldata.so"
strip --strip-unneeded "$BIN/ldata.so"

# ---- objects and executables --------------------------------------------------------------
"$NVCC" -c -arch=sm_75 "$SRC/k.cu" -o "$BIN/tu_obj.o"
"$NVCC" -dc -gencode arch=compute_80,code=lto_80 "$SRC/k.cu" -o "$BIN/lto80.o"
"$NVCC" -arch=sm_86 -cudart=shared "$SRC/main.cu" -o "$BIN/prog"
strip "$BIN/prog"

# ---- Windows PE DLLs (mingw-w64; fatbinary --host=windows sets entry flag 0x40) ------------
"$DLLTOOL" -d "$SRC/cudart64_13.def" -D cudart64_13.dll -l libcudart64_13.a
"$DLLTOOL" -d "$SRC/cublas64_13.def" -D cublas64_13.dll -l libcublas64_13.a
# -nostdlib + own entry point: imports are exactly the DLLs named on the command line.
DLLFLAGS=(-shared -O2 -nostdlib -Wl,--entry,DllMain -Wl,--disable-long-section-names \
          -Wl,--no-insert-timestamp -s)
cat > dllmain.c <<'C'
int __stdcall DllMain(void *h, unsigned long reason, void *reserved) { (void)h; (void)reason; (void)reserved; return 1; }
C

"$NVCC" -cubin -arch=sm_80 "$SRC/k.cu" -o w80.cubin
"$NVCC" -cubin -arch=sm_86 "$SRC/k.cu" -o w86.cubin
"$NVCC" -ptx -arch=compute_86 "$SRC/k.cu" -o w86.ptx
"$FATBINARY" --host=windows --64 --create=win_sm80_86.fatbin \
    --image3=kind=elf,sm=80,file=w80.cubin --image3=kind=elf,sm=86,file=w86.cubin \
    --image3=kind=ptx,sm=86,file=w86.ptx 2>/dev/null   # 'host' is deprecated but still honoured
$EMBED fb_win.c --section .nv_fatbin --align 16 --symbol cw_fatbin --wrapper .nvFatBinSegment \
    win_sm80_86.fatbin
$MINGW "${DLLFLAGS[@]}" "$SRC/win_dll.c" fb_win.c dllmain.c -L. -lcudart64_13 -lcublas64_13 \
    -o "$BIN/win_sm80_86.dll"

# win_rdc.dll: __nv_rel holds two -rdc containers (one per TU, sm_80 ET_REL cubin + compute_80
# PTX); the first is sized so that it ends at 8 mod 16 -> one 8-byte pad before the second.
# .nv_fatb holds the nvlink'ed sm_80 cubin, as in a real device-linked DLL.
"$NVCC" -cubin -rdc=true -arch=sm_80 "$SRC/rdc_a.cu" -o rdc_a.cubin
"$NVCC" -cubin -rdc=true -arch=sm_80 "$SRC/rdc_b.cu" -o rdc_b.cubin
"$NVCC" -ptx -rdc=true -arch=compute_80 "$SRC/rdc_a.cu" -o rdc_a.ptx
"$NVCC" -ptx -rdc=true -arch=compute_80 "$SRC/rdc_b.cu" -o rdc_b.ptx
relfb() { # relfb OUT TU PTXAS_CMDLINE (the option string only lives in the PTX entry header)
    "$FATBINARY" --host=windows --64 -c --cmdline="$3" --create="$1" \
        --image3=kind=elf,sm=80,file="$2.cubin" --image3=kind=ptx,sm=80,file="$2.ptx" 2>/dev/null
}
# A 15- or 16-byte option string changes the PTX header by 8 bytes; keep the one that makes
# the first container end at 8 mod 16.
for cmd in "--compile-only " "--compile-only  "; do
    relfb rel_a.fatbin rdc_a "$cmd"
    [ $(( $(stat -c %s rel_a.fatbin) % 16 )) -eq 8 ] && break
done
[ $(( $(stat -c %s rel_a.fatbin) % 16 )) -eq 8 ] || { echo "could not arrange the 8-byte pad" >&2; exit 1; }
relfb rel_b.fatbin rdc_b "--compile-only "
"$NVLINK" --arch=sm_80 rdc_a.cubin rdc_b.cubin -o rdc_linked.cubin
"$FATBINARY" --host=windows --64 --link --create=win_rdc_linked.fatbin \
    --image3=kind=elf,sm=80,file=rdc_linked.cubin 2>/dev/null
$EMBED fb_rel.c --section __nv_relfatbin --align 16 --symbol cw_relfatbin --pad16 \
    rel_a.fatbin rel_b.fatbin
$EMBED fb_lnk.c --section .nv_fatbin --align 16 --symbol cw_fatbin win_rdc_linked.fatbin
$MINGW "${DLLFLAGS[@]}" "$SRC/win_dll.c" fb_rel.c fb_lnk.c dllmain.c -L. -lcudart64_13 -lcublas64_13 \
    -o "$BIN/win_rdc.dll"
cp rel_a.fatbin "$BIN/win_rdc_rel_a.fatbin"   # raw copy, for checking the __nv_rel walk

$MINGW "${DLLFLAGS[@]}" "$SRC/win_hostonly.c" dllmain.c -lkernel32 -o "$BIN/win_hostonly.dll"

# ---- aarch64 ELF with an embedded .nv_fatbin ----------------------------------------------
"$NVCC" -fatbin -arch=sm_90 "$SRC/k.cu" -o k90.fatbin
$EMBED fb_arm.c --section .nv_fatbin --align 8 --symbol cw_fatbin --wrapper .nvFatBinSegment k90.fatbin
$ARMCC -shared -fPIC -O2 fb_arm.c "$SRC/hostonly.c" -o "$BIN/arm64_sm90.so"
aarch64-linux-gnu-strip --strip-unneeded "$BIN/arm64_sm90.so"

ls -l "$BIN"
du -sh "$BIN"

# ---- seed-row fixtures of `cuwheel check` (row_*; see build_check.sh) ----------------------
"$HERE/build_check.sh"

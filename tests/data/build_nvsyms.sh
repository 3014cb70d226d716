#!/usr/bin/env bash
# Build the fixtures of NVIDIA symbol releases (tests/data/bin/nvsym_*, DEP013 and
# tools/nvidia_symbols.py's test) with gcc:
#   nvsym_r1.so / nvsym_r2.so  two releases of a stand-in library, SONAME libcwjit.so.1,
#                              every symbol at version node libcwjit.so.1 (as NVIDIA's):
#                              r1 exports cwLinkCreate, cwLinkAdd_1_0, cwLinkOld;
#                              r2 drops cwLinkOld, adds cwLinkAdd_1_1 and cwLinkDestroy
#   nvsym_user.so              NEEDS libnvJitLink.so.12, references
#                              __nvJitLinkAddData_12_4 and __nvJitLinkCreate_12_0 at version
#                              libnvJitLink.so.12 (linked against a stand-in with that node,
#                              the way cuSPARSE 12.x links nvJitLink)
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
printf 'libcwjit.so.1 { global: *; };\n' > "$T/cw.map"
CC=(gcc -shared -fPIC -O2 -Wl,--version-script,"$T/cw.map" -Wl,-soname,libcwjit.so.1)
"${CC[@]}" "$SRC/nvsym_lib.c" -o "$BIN/nvsym_r1.so"
"${CC[@]}" -DCW_RELEASE2 "$SRC/nvsym_lib.c" -o "$BIN/nvsym_r2.so"
printf 'libnvJitLink.so.12 { global: *; };\n' > "$T/jl.map"
gcc -shared -fPIC -O2 -Wl,--version-script,"$T/jl.map" -Wl,-soname,libnvJitLink.so.12 \
    "$SRC/nvsym_jitlink_stub.c" -o "$T/libnvJitLink.so.12"
gcc -shared -fPIC -O2 "$SRC/nvsym_user.c" "$T/libnvJitLink.so.12" -Wl,-soname,libnvsym_user.so \
    -o "$BIN/nvsym_user.so"
printf 'libnvJitLink.so.13 { global: *; };\n' > "$T/jl13.map"
mkdir "$T/13"
gcc -shared -fPIC -O2 -DCW_CUDA13 -Wl,--version-script,"$T/jl13.map" \
    -Wl,-soname,libnvJitLink.so.13 "$SRC/nvsym_jitlink_stub.c" -o "$T/13/libnvJitLink.so.13"
gcc -shared -fPIC -O2 -DCW_CUDA13 "$SRC/nvsym_user.c" "$T/13/libnvJitLink.so.13" \
    -Wl,-soname,libnvsym_user13.so -Wl,--enable-new-dtags \
    -Wl,-rpath,'$ORIGIN/../../nvidia/cu13/lib' -o "$BIN/nvsym_user13.so"
strip --strip-unneeded "$BIN"/nvsym_*.so

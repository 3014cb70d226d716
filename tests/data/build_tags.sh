#!/usr/bin/env bash
# Build the fixtures of the platform-tag checks (tests/data/bin/tag_*, TAG008-TAG013)
# without touching the other fixtures; build_check.sh calls this at its end.
#
# Needs gcc / g++ on glibc >= 2.34 (built on Debian 12: glibc 2.36, GCC 12) and the
# CPython 3.11 headers (python3-dev).  What each file shows:
#   tag_memcpy214.so   memcpy@GLIBC_2.14 (a plain link on a new glibc)
#   tag_memcpy225.so   memcpy@GLIBC_2.2.5 (the same source with .symver: the fix)
#   tag_shm234.so      shm_open@GLIBC_2.34 from libc.so.6 (a newer-glibc link)
#   tag_cxx.so         GLIBCXX_3.4.26 / _3.4.29 from libstdc++.so.6
#   tag_noshm.so       shm_open unversioned, no NEEDED librt.so.1: linked against a
#                      version-script stand-in of glibc < 2.34 without -lrt
#   tag_rt.so          the same linked with the stand-in librt.so.1 (-lrt): the fix
#   tag_oldlibc.so     the stand-in libc.so.6 itself (version definitions for the reader)
#   tag_abi3_310.so    a 3.10 limited-API module (PyModule_AddType, stable ABI 3.10)
#   tag_nonlimited.so  a module calling PyCode_NewEmpty (outside the stable ABI)
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"
PYINC="${PYINC:-$(python3 -c 'import sysconfig; print(sysconfig.get_paths()["include"])')}"

T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
rm -f "$BIN"/tag_*

CC=(gcc -shared -fPIC -O2 -fno-builtin)
"${CC[@]}" "$SRC/tag_memcpy.c" -o "$BIN/tag_memcpy214.so"
"${CC[@]}" -DOLD_MEMCPY "$SRC/tag_memcpy.c" -o "$BIN/tag_memcpy225.so"
"${CC[@]}" "$SRC/tag_shm.c" -o "$BIN/tag_shm234.so"
g++ -shared -fPIC -O2 "$SRC/tag_cxx.cpp" -o "$BIN/tag_cxx.so"

# Stand-ins of glibc < 2.34: every symbol at GLIBC_2.2.5, shm_open only in librt.so.1.
mkdir stub
printf 'GLIBC_2.2.5 { global: *; };\n' > glibc.map
gcc -shared -fPIC -O2 -nostdlib -Wl,-soname,libc.so.6 -Wl,--version-script,glibc.map \
    "$SRC/oldlibc_stub.c" -o stub/libc.so.6
gcc -shared -fPIC -O2 -nostdlib -DCW_LIBRT -Wl,-soname,librt.so.1 \
    -Wl,--version-script,glibc.map "$SRC/oldlibc_stub.c" -o stub/librt.so.1
cp stub/libc.so.6 "$BIN/tag_oldlibc.so"
# -nodefaultlibs: the stand-in libc.so.6 instead of this machine's (crt files kept).  A
# shared library may leave symbols undefined, so without -lrt shm_open stays unversioned.
"${CC[@]}" -nodefaultlibs "$SRC/tag_shm.c" -Lstub -Wl,--no-as-needed -l:libc.so.6 -o "$BIN/tag_noshm.so"
"${CC[@]}" -nodefaultlibs "$SRC/tag_shm.c" -Lstub -Wl,--no-as-needed -l:librt.so.1 -l:libc.so.6 -o "$BIN/tag_rt.so"

"${CC[@]}" -I"$PYINC" "$SRC/abi3_310.c" -o "$BIN/tag_abi3_310.so"
"${CC[@]}" -I"$PYINC" "$SRC/nonlimited.c" -o "$BIN/tag_nonlimited.so"
strip --strip-unneeded "$BIN"/tag_*.so

ls -l "$BIN"/tag_*

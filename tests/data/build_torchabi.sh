#!/usr/bin/env bash
# Build the torch ABI fixtures (tests/test_torch_abi.py) without touching the others.
#
# Needs gcc (x86_64) and a torch 2.13.0 whose libc10.so they link (the CPU build CI
# installs; `python -c "import torch; print(torch.__file__)"`):
#   torchabi_new.so  NEEDED libc10.so; imports a symbol libc10.so exports from 2.13.0 on
#   torchabi_old.so  the same with one that 2.13.0's libc10.so no longer exports
#   torchabi_c10.so  a libc10.so stand-in (SONAME libc10.so) defining two c10 symbols,
#                    for the front read of tools/torch_symbols.py (.dynsym after the notes)
# (src/torchabi_ext.c, src/torchabi_lib.c).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src"
BIN="$HERE/bin"
LIB="${TORCH_LIB:-$(python -c 'import os, torch; print(os.path.join(os.path.dirname(torch.__file__), "lib"))')}"

gcc -shared -fPIC -O2 -DCW_NEW "$SRC/torchabi_ext.c" -L"$LIB" -Wl,--no-as-needed -l:libc10.so \
    -o "$BIN/torchabi_new.so"
gcc -shared -fPIC -O2 "$SRC/torchabi_ext.c" -L"$LIB" -Wl,--no-as-needed -l:libc10.so \
    -o "$BIN/torchabi_old.so"
gcc -shared -fPIC -O2 -Wl,-soname,libc10.so "$SRC/torchabi_lib.c" -o "$BIN/torchabi_c10.so"
strip --strip-unneeded "$BIN"/torchabi_*.so
ls -l "$BIN"/torchabi_*

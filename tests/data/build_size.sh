#!/usr/bin/env bash
# Build the size-ledger fixtures (tests/data/bin/size_*.so) from tests/data/src/sizek.cu:
# one full build and the builds a what-if predicts (tests/test_size.py compares them).
# Needs nvcc 13.0 (/usr/local/cuda-13.0) and binutils.  Re-runnable.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
NVCC="${CUDA_HOME:-/usr/local/cuda-13.0}/bin/nvcc"
BIN="$HERE/bin"
SRC="$HERE/src/sizek.cu"
so() { # so OUT ARGS...
    local out="$1"; shift
    "$NVCC" -shared -Xcompiler -fPIC -cudart=shared "$@" "$SRC" -o "$BIN/$out"
    strip --strip-unneeded "$BIN/$out"
}
g() { echo "-gencode arch=compute_$1,code=[sm_$1,compute_$1]"; }
s() { echo "-gencode arch=compute_$1,code=sm_$1"; }
# shellcheck disable=SC2046
so size_base.so   $(g 75) $(g 80) $(g 90)
# shellcheck disable=SC2046
so size_drop75.so $(g 80) $(g 90)
# shellcheck disable=SC2046
so size_ptx90.so  $(s 75) $(s 80) $(g 90)
# shellcheck disable=SC2046
so size_none.so   --compress-mode=none $(g 75) $(g 80) $(g 90)
# shellcheck disable=SC2046
so size_size.so   --compress-mode=size $(g 75) $(g 80) $(g 90)

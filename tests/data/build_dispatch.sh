#!/usr/bin/env bash
# Build the library-level fixtures (tests/data/bin/dispatch_*.so) from tests/data/src/dispatch/:
# libraries whose host code launches kernels from several fatbin containers, to check the
# roll-up (rules/rollup.py) against a real driver (tests/probe/library_truth.py).
#
#   dispatch_perarch.so  k_a sm_75 | k_b sm_80 | k_c sm_90: one container per architecture
#   dispatch_lists.so    k_a {sm_75, sm_80} | k_c sm_90
#   dispatch_before.so   k_a {sm_75, sm_80} | k_p compute_80 PTX, made to look built by CUDA
#                        11.0 (before CC 9.0 existed): the cubins' toolkit notes say 11.0 and
#                        the PTX says ISA 7.0 (CUDA 11.0's), in its text and entry header;
#                        the driver reads neither note, and JIT-compiles ISA 7.0 text;
#                        the CUDA runtime is linked statically (as faiss-gpu 1.7.2's is), so
#                        no libcudart.so.13 tells its toolkit either
# Needs nvcc 13.0 and gcc.  Expectations are in tests/test_library_truth.py, by hand.
set -euo pipefail
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
SRC="$HERE/src/dispatch"
BIN="$HERE/bin"
NVCC="${NVCC:-nvcc}"
T="$(mktemp -d)"
trap 'rm -rf "$T"' EXIT
cd "$T"
cu() { "$NVCC" -Xcompiler -fPIC -no-compress -c "$@"; }
host() { gcc -fPIC -c -D"$1" -I"$(dirname "$(command -v "$NVCC")")/../include" \
    -I/usr/local/cuda-13.0/include "$SRC/host.c" -o "host_$1.o"; }
link() { local out="$1" rt="$2"; shift 2; "$NVCC" -shared -cudart="$rt" "$@" -o "$BIN/$out"
    strip --strip-unneeded "$BIN/$out"; }

cu -gencode arch=compute_75,code=sm_75 "$SRC/ka.cu" -o a75.o
cu -gencode arch=compute_80,code=sm_80 "$SRC/kb.cu" -o b80.o
cu -gencode arch=compute_90,code=sm_90 "$SRC/kc.cu" -o c90.o
host DISPATCH_PERARCH
link dispatch_perarch.so shared a75.o b80.o c90.o host_DISPATCH_PERARCH.o

cu -gencode arch=compute_75,code=sm_75 -gencode arch=compute_80,code=sm_80 "$SRC/ka.cu" -o a7580.o
host DISPATCH_LISTS
link dispatch_lists.so shared a7580.o c90.o host_DISPATCH_LISTS.o

cu -gencode arch=compute_80,code=compute_80 "$SRC/kp.cu" -o p80.o
host DISPATCH_BEFORE
link dispatch_before.so static a7580.o p80.o host_DISPATCH_BEFORE.o
# the toolkit notes of the (uncompressed) cubins and the PTX's ISA: same lengths
python3 - "$BIN/dispatch_before.so" <<'PY'
import re, struct, sys
path = sys.argv[1]
data = bytearray(open(path, "rb").read())
new, n = re.subn(rb"release 13\.0, V13\.0\.(\d\d)", lambda m: b"release 11.0, V11.0." + m[1],
                 bytes(data))
assert n >= 2, n
data = bytearray(new)
# the PTX entry header: kind 1, ISA (minor, major) at +24, arch at +28 (docs/formats.md)
hits = [m.start() for m in re.finditer(re.escape(struct.pack("<HHI", 0, 9, 80)), bytes(data))
        if struct.unpack_from("<H", data, m.start() - 24)[0] == 1]
assert len(hits) == 1, hits
struct.pack_into("<HH", data, hits[0], 0, 7)
text = bytes(data).count(b".version 9.0")
assert text == 1, text
data = bytearray(bytes(data).replace(b".version 9.0", b".version 7.0"))
open(path, "wb").write(bytes(data))
PY
ls -la "$BIN"/dispatch_*.so

#!/usr/bin/env bash
# Rebuild a real extension library (four of ggml's CUDA kernel files, from the
# llama-cpp-python sdist) under several arch lists and fatbin compression modes, and
# package each as a wheel, so that `cuwheel size --what-if` predictions made on the
# base wheel can be compared with the real rebuilt wheels (bench/size_whatif.py).
#
# Usage: bench/size_rebuild.sh WORKDIR   (needs nvcc 13.0 and network to PyPI once)
set -euo pipefail
W="$(realpath "${1:?WORKDIR}")"
mkdir -p "$W" && cd "$W"
PY="${PYTHON:-python3}"
[ -f llama_cpp_python-0.3.36.tar.gz ] || "$PY" -m pip download --no-deps --no-binary=:all: \
    llama-cpp-python==0.3.36 -d .
[ -d llama_cpp_python-0.3.36 ] || tar xzf llama_cpp_python-0.3.36.tar.gz
# ggml's CUDA headers include cublas_v2.h, which the toolkit install here lacks: take the
# headers (only) from NVIDIA's cuBLAS wheel.
if [ ! -f cublas/nvidia/cu13/include/cublas_v2.h ]; then
    "$PY" -m pip download --no-deps --only-binary=:all: nvidia-cublas==13.1.1.3 \
        --platform manylinux_2_27_x86_64 -d .
    unzip -q -o nvidia_cublas-13.1.1.3-*.whl 'nvidia/*/include/*' -d cublas
fi
G=llama_cpp_python-0.3.36/vendor/llama.cpp/ggml
FILES=(softmax norm rope getrows)
build() { # build NAME COMPRESS-MODE GENCODE...
    local name="$1" mode="$2"; shift 2
    [ -f "wheels/$name.whl" ] && return 0
    rm -rf "b/$name" && mkdir -p "b/$name/pkg/ggmlsub" wheels
    for f in "${FILES[@]}"; do
        nvcc -c -Xcompiler -fPIC -I$G/include -I$G/src -I$G/src/ggml-cuda \
            -Icublas/nvidia/cu13/include -DGGML_USE_CUDA --compress-mode="$mode" "$@" \
            "$G/src/ggml-cuda/$f.cu" -o "b/$name/$f.o"
    done
    nvcc -shared -cudart=shared "b/$name"/*.o -o "b/$name/pkg/ggmlsub/libggmlsub.so"
    "$PY" - "b/$name/pkg" "wheels/$name.whl" <<'PYEOF'
import sys, zipfile, hashlib, base64, os
root, out = sys.argv[1], sys.argv[2]
info = "ggmlsub-0.1.0.dist-info"
files = {}
for dp, _, fns in os.walk(root):
    for fn in sorted(fns):
        p = os.path.join(dp, fn)
        files[os.path.relpath(p, root)] = open(p, "rb").read()
files[f"{info}/METADATA"] = b"Metadata-Version: 2.1\nName: ggmlsub\nVersion: 0.1.0\n"
files[f"{info}/WHEEL"] = (b"Wheel-Version: 1.0\nGenerator: size_rebuild\nRoot-Is-Purelib: false\n"
                         b"Tag: py3-none-linux_x86_64\n")
rec = []
for n, b in files.items():
    h = base64.urlsafe_b64encode(hashlib.sha256(b).digest()).rstrip(b"=").decode()
    rec.append(f"{n},sha256={h},{len(b)}")
rec.append(f"{info}/RECORD,,")
files[f"{info}/RECORD"] = ("\n".join(rec) + "\n").encode()
with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as z:  # level 6, as `wheel` writes
    for n, b in files.items():
        z.writestr(zipfile.ZipInfo(n, (2026, 1, 1, 0, 0, 0)), b, zipfile.ZIP_DEFLATED)
PYEOF
    ls -l "wheels/$name.whl"
}
ALL=(75 80 86 89 90)
gen() { local out=(); for a in "$@"; do out+=(-gencode "arch=compute_$a,code=[sm_$a,compute_$a]"); done; echo "${out[@]}"; }
# base: SASS + PTX for every arch, nvcc's default compression
build base default $(gen "${ALL[@]}")
# what-ifs, rebuilt for real
build drop75_86 default $(gen 80 89 90)
build none none $(gen "${ALL[@]}")
build size size $(gen "${ALL[@]}")
PTX90=(); for a in 75 80 86 89; do PTX90+=(-gencode "arch=compute_$a,code=sm_$a"); done
build ptx90 default "${PTX90[@]}" -gencode "arch=compute_90,code=[sm_90,compute_90]"

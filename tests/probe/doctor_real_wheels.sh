#!/usr/bin/env bash
# cuwheel doctor on an environment made of real published wheels unpacked into one folder
# (docs/doctor.md#seen-on-real-wheels-and-a-real-gpu); writes the answers to
# tests/probe/doctor_real_wheels.txt.  Needs pip (PyPI) and ~1.2 GB in DIR.
#   bash tests/probe/doctor_real_wheels.sh DIR
# torch 2.11.0 (cu130, 531 MB) is downloaded but only its version.py, __init__.py, dist-info
# and lib/libtorch_global_deps.so are unpacked: what selects variants and preloads.
set -euo pipefail
DIR="${1:?download and unpack directory}"
HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
PY="${PY:-python3}"
mkdir -p "$DIR/wheels"
dl() { "$PY" -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 "$@" -d "$DIR/wheels"; }
dl --platform manylinux_2_24_x86_64 bitsandbytes==0.50.2
dl --platform manylinux_2_27_x86_64 --platform manylinux2014_x86_64 nvidia-cublas==13.1.0.3 \
    nvidia-cuda-runtime==13.0.96
dl --platform manylinux_2_28_x86_64 torch==2.11.0
ENV="$DIR/env"; rm -rf "$ENV"; mkdir -p "$ENV"
for w in "$DIR"/wheels/bitsandbytes-0.50.2-*.whl "$DIR"/wheels/nvidia_cublas-13.1.0.3-*.whl \
         "$DIR"/wheels/nvidia_cuda_runtime-13.0.96-*.whl; do
    unzip -q -o "$w" -d "$ENV"
done
unzip -q -o "$DIR"/wheels/torch-2.11.0-*.whl 'torch/version.py' 'torch/__init__.py' \
    'torch/lib/libtorch_global_deps.so' 'torch-2.11.0.dist-info/*' -d "$ENV"
OUTF="$HERE/doctor_real_wheels.txt"
: > "$OUTF"
run() {
    echo "\$ cuwheel doctor --path ENV $*" >> "$OUTF"
    set +e
    (cd "$DIR" && env -u LD_LIBRARY_PATH "$PY" -m cuwheel doctor --path "$ENV" --ld-cache none \
        --color never "$@" | sed "s|$ENV/||g; s|$ENV|ENV|g") >> "$OUTF"
    echo "exit status: ${PIPESTATUS[0]}" >> "$OUTF"; echo >> "$OUTF"
    set -e
}
run --gpu H100 --driver 580.65.06
run --gpu "GTX 1080" --driver 580.65.06
run --gpu H100 --driver 535.104.05
BNB_CUDA_VERSION=128 run --gpu H100 --driver 580.65.06
cat "$OUTF"

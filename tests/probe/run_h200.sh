#!/usr/bin/env bash
# Every H200 probe in one call, as issue 36's run did (results committed in tests/probe/).
#
# Stage, on a machine with network (the H200 machine has none), a folder STAGE that travels:
#   git archive HEAD src tests/probe tests/data/bin tests/data/bin_doctor | tar -x -C STAGE
#   git rev-parse HEAD > STAGE/VERSION
#   pip download --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
#       --platform manylinux2014_x86_64 -d STAGE/whl lz4 zstandard isal  # cuwheel's needs
#   cuRAND 10.4.5.25's libcurand.so.10 (105 MB) as a zstd patch against the 10.4.0.35 one
#   installed there (5 MB):  zstd -19 --long=28 --patch-from=OLD NEW -o STAGE/curand/curand.patch.zst
#   with sha256 of both in STAGE/curand/{old,new}.sha256, and a zstd binary in STAGE/bin;
#   nvidia-cuda-runtime-cu12's nvidia/cuda_runtime/lib/libcudart.so.12 under STAGE/cu12/.
# Then on the H200 machine:  OUT=DIR bash STAGE/tests/probe/run_h200.sh  (about 5 minutes)
set -u
S="$(cd "$(dirname "$0")/../.." && pwd)"
cd "$S"
R=/tmp/res_h200; mkdir -p $R /tmp/curand1045
exec > >(tee "$OUT/log") 2>&1
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site whl/*.whl || exit 1
export PYTHONPATH=$S/src:$S/tests/probe:/tmp/site PYTHONUNBUFFERED=1 CUWHEEL_COMMIT=$(cat VERSION)
step() { echo "=== $(date -u +%T) $*"; }
step start; nvidia-smi --query-gpu=name,compute_cap,driver_version --format=csv
SITE=$(python3 -c "import site; print(site.getsitepackages()[0])")
OLD=$SITE/nvidia/cu13/lib/libcurand.so.10 NEW=/tmp/curand1045/libcurand.so.10
LD_LIBRARY_PATH=$S/bin ./bin/zstd -q -d --long=28 --patch-from="$OLD" curand/curand.patch.zst -o "$NEW" -f
[ "$(sha256sum "$NEW" | cut -d' ' -f1)" = "$(cat curand/new.sha256)" ] || echo "cuRAND 10.4.5.25 not rebuilt"
step family; timeout 90 python3 tests/probe/family_truth.py --out $R | tail -3
step library; timeout 90 python3 tests/probe/library_truth.py --out $R | tail -3
step probe; timeout 150 python3 tests/probe/h200_probe.py --out $R --budget 100 | tail -30
step doctor; timeout 150 python3 tests/probe/doctor_gpu.py --cu12 "$S/cu12" --out $R --work /tmp/doctor_gpu | tail -5
step curand; timeout 330 python3 tests/probe/curand_truth.py --lib new="$NEW" --out $R --budget 50 --workers 14
step pack; tar -C $R -czf "$OUT/results.tgz" .; ls -la "$OUT"

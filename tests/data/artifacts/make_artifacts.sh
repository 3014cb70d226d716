#!/bin/sh
# On the GPU machine, from the repository root: make the exported-program fixtures into
# $OUT (see make_artifacts.py).  build/whl may hold executorch 1.2.0 and the pure-Python
# wheels it imports (expecttest, kgb, parameterized, ruamel.yaml, torchao 0.17.0); they are
# installed into /tmp/site for the ExecuTorch child alone.
# On 2026-12-01 the device tool sent the session's main checkout, not this worktree, so the
# run used a carried copy: the same script and wheels under build/artifacts_carry/.
set -u
OUT=${OUT:-${1:?usage: make_artifacts.sh OUTDIR}}
if ls build/whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site build/whl/*.whl \
    || rm -rf /tmp/site
fi
PYTHONUNBUFFERED=1 python3 tests/data/artifacts/make_artifacts.py "$OUT" 2>&1 | tail -c 11000
ls -laR "$OUT"

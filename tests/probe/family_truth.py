#!/usr/bin/env python3
"""Probe: kernel families (one template, per-architecture translation units) launched
through their libraries' host code on a real GPU.

    PYTHONPATH=src:tests/probe python3 tests/probe/family_truth.py --out DIR

Loads each ``tests/data/bin/family_*.so`` (tests/data/build_family.sh) and calls its
``cw_dispatch`` (the library's own choice of kernels for this GPU) and each single-kernel
entry point (``cw_gemm75`` ... ``cw_epilogue``), each in a child process, recording the
CUDA error: with the runtime's default module loading (lazy), then with
CUDA_MODULE_LOADING=EAGER (every module loaded when the context starts).  Writes
DIR/family_truth.json with the cuwheel commit given in CUWHEEL_COMMIT;
tests/test_family_truth.py recomputes today's verdicts against it.  Not a pytest module.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess

from library_truth import BIN, _cudart, _one  # the same child-process launch

FUNCTIONS = {
    "family_dispatch.so": ("cw_dispatch", "cw_gemm75", "cw_gemm80", "cw_gemm90"),
    "family_sm75.so": ("cw_dispatch", "cw_gemm75", "cw_gemm80", "cw_gemm90"),
    "family_unique.so": ("cw_dispatch", "cw_gemm75", "cw_gemm80", "cw_gemm90", "cw_epilogue"),
    "family_newptx.so": ("cw_dispatch", "cw_gemm90"),
    "family_newvar.so": ("cw_dispatch", "cw_gemm90", "cw_read_table"),
}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cudart = _cudart()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True)  # fmt: skip
    name, cc, driver = [x.strip() for x in smi.stdout.splitlines()[0].split(",")]
    rows = []
    for loading in ("", "EAGER"):  # the runtime's default (lazy), then every module at start
        os.environ.pop("CUDA_MODULE_LOADING", None)
        if loading:
            os.environ["CUDA_MODULE_LOADING"] = loading
        for lib, fns in FUNCTIONS.items():
            for fn in fns:
                rows.append({"loading": loading or "default", **_one(lib, fn, cudart)})
    doc = {"gpu": name, "cc": cc, "driver": driver, "cudart": cudart,
           "cuwheel_commit": os.environ.get("CUWHEEL_COMMIT"), "bin": os.path.relpath(BIN),
           "launches": rows}  # fmt: skip
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "family_truth.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

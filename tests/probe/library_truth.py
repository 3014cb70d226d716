#!/usr/bin/env python3
"""Probe: the roll-up's library verdicts (rules/rollup.py) against launches through the real
libraries on a real GPU.

    PYTHONPATH=src python3 tests/probe/library_truth.py --out DIR

Loads each ``tests/data/bin/dispatch_*.so`` (tests/data/build_dispatch.sh) and calls its
``cw_dispatch`` (launch the kernel the library has for this GPU's compute capability) and
``cw_all`` (launch every kernel), recording the CUDA error of each, with the roll-up's
verdict for this GPU.  Writes DIR/library_truth.json; tests/test_library_truth.py checks the
committed copy.  Not a pytest module.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import json
import os
import site
import subprocess
import sys

import cuwheel
from cuwheel import compat
from cuwheel.model.arch import Arch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "tests", "data", "bin")
NAMES = ("dispatch_perarch.so", "dispatch_lists.so", "dispatch_before.so")


def _cudart() -> str | None:
    roots = [*site.getsitepackages(), site.getusersitepackages()]
    for root in roots:
        for pat in ("nvidia/cu13/lib/libcudart.so.13", "nvidia/cuda_runtime/lib/libcudart.so.13",
                    "torch/lib/libcudart*.so*"):
            hits = sorted(glob.glob(os.path.join(root, pat)))
            if hits:
                return hits[0]
    return None


def _one(name: str, fn: str, cudart: str | None) -> dict[str, object]:
    """Run one call in a child process: a failed launch can leave the context unusable."""
    code = (
        "import ctypes, sys\n"
        + (f"ctypes.CDLL({cudart!r}, mode=ctypes.RTLD_GLOBAL)\n" if cudart else "")
        + f"lib = ctypes.CDLL({os.path.join(BIN, name)!r})\n"
        "rt = ctypes.CDLL(sys.argv[1]) if len(sys.argv) > 1 else lib\n"
        "rt.cudaMalloc.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t]\n"
        "p = ctypes.c_void_p()\n"
        "assert rt.cudaMalloc(ctypes.byref(p), 4096) == 0\n"
        f"f = lib.{fn}\n"
        "f.argtypes = [ctypes.c_void_p]\n"
        "print(int(f(p)))\n"
    )
    args = [sys.executable, "-c", code] + ([cudart] if cudart else [])
    out = subprocess.run(args, capture_output=True, text=True, timeout=120)
    err = int(out.stdout.strip().splitlines()[-1]) if out.returncode == 0 else None
    name_of = None
    if err is not None and cudart:
        rt = ctypes.CDLL(cudart)
        rt.cudaGetErrorName.restype = ctypes.c_char_p
        name_of = rt.cudaGetErrorName(err).decode()
    return {"library": name, "function": fn, "error": err, "error_name": name_of,
            "stderr": out.stderr[-400:] if out.returncode else ""}


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    cudart = _cudart()
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True)
    name, cc, driver = [x.strip() for x in smi.stdout.splitlines()[0].split(",")]
    target = compat.Target(Arch.parse(cc), name, compat.parse_driver(driver))
    inv = cuwheel.inspect([os.path.join(BIN, n) for n in NAMES])
    rows = []
    for b in inv.binaries:
        lv = compat.evaluate_binary(b, target)
        for fn in ("cw_dispatch", "cw_all"):
            row = _one(os.path.basename(b.path), fn, cudart)
            row["rollup"] = lv.verdict.value if lv else None
            rows.append(row)
    doc = {"gpu": name, "cc": cc, "driver": driver, "cudart": cudart, "launches": rows,
           "cuwheel_commit": os.environ.get("CUWHEEL_COMMIT")}  # fmt: skip
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "library_truth.json"), "w") as f:
        json.dump(doc, f, indent=1)
    print(json.dumps(doc, indent=1))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

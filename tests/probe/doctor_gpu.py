#!/usr/bin/env python3
"""Probe: cuwheel doctor's answers against the failures a real GPU, driver and loader give.

Run on a machine with an NVIDIA GPU, torch for CUDA 13 and NVML (made for the H200 machine
lent to this project), with the CUDA 12 runtime wheel unpacked at --cu12 (for its real
libcudart.so.12):

    PYTHONPATH=src python3 tests/probe/doctor_gpu.py --cu12 DIR --out OUT

Three failures are caused on purpose, each in a directory of its own added to the real
environment (``--path DIR --path <torch's site-packages>``), and each is then run for real
in a process that imports torch first:

* ``cw-nokernel``: tests/data/bin/sm80only.so (sm_80 SASS only) on a GPU that is not sm_8x:
  its kernel launch, and doctor (whole environment, every distribution read) naming it;
* ``cw-cu12``: tests/data/bin_doctor/ext12.so (needs libcudart.so.12) without, then with,
  ``LD_LIBRARY_PATH`` at the real CUDA 12 runtime: the import error, then both runtimes
  mapped in the process;
* ``cw-ptx91``: tests/data/bin_doctor/ptx91.so (compute_90 PTX rewritten to ISA 9.1) on a
  CUDA 13.0 driver: its kernel launch.

Writes OUT/doctor_gpu.json: per scenario the error observed and doctor's JSON answer.
tests/test_doctor_gpu.py checks the committed copy.  Not a pytest module.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
BIN = os.path.join(ROOT, "tests", "data", "bin")


def make_dist(site: str, name: str, files: dict[str, str]) -> None:
    """An installed distribution: its files copied under ``site`` and a RECORD naming them."""
    pkg = name.replace("-", "_")
    info = os.path.join(site, f"{pkg}-1.0.dist-info")
    os.makedirs(info, exist_ok=True)
    record = []
    for rel, src in files.items():
        dst = os.path.join(site, rel)
        os.makedirs(os.path.dirname(dst), exist_ok=True)
        shutil.copyfile(src, dst)
        record.append(f"{rel},,")
    with open(os.path.join(info, "METADATA"), "w") as f:
        f.write(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    with open(os.path.join(info, "WHEEL"), "w") as f:
        f.write("Wheel-Version: 1.0\nTag: py3-none-linux_x86_64\n")
    record += [f"{pkg}-1.0.dist-info/{n}," for n in ("METADATA", "WHEEL", "RECORD")]
    with open(os.path.join(info, "RECORD"), "w") as f:
        f.write("\n".join(record) + "\n")


LAUNCH = r"""
import ctypes, json, sys, torch
torch.cuda.init()
lib = ctypes.CDLL(sys.argv[1])
buf = torch.ones(32, device="cuda")
rc = lib.cw_launch(ctypes.c_void_p(buf.data_ptr()), ctypes.c_float(2.0))
rt = ctypes.CDLL("libcudart.so.13")  # the copy torch loaded
rt.cudaGetErrorString.restype = ctypes.c_char_p
rt.cudaGetErrorName.restype = ctypes.c_char_p
out = {"rc": rc, "name": rt.cudaGetErrorName(rc).decode(),
       "text": rt.cudaGetErrorString(rc).decode()}
try:
    torch.cuda.cudart()  # torch's binding of the runtime, which check_error needs
    torch.cuda.check_error(rc)
except Exception as exc:  # torch's own wording of the same error
    out["torch"] = f"{type(exc).__name__}: {exc}"
print(json.dumps(out))
"""

IMPORT12 = r"""
import ctypes, json, sys, torch
out = {}
try:
    lib = ctypes.CDLL(sys.argv[1])
    out["count"] = lib.cw_count12()
except OSError as exc:
    out["error"] = f"OSError: {exc}"
with open("/proc/self/maps") as f:
    out["cudart"] = sorted({l.split()[-1] for l in f if "libcudart.so" in l})
print(json.dumps(out))
"""

ERROR_STRINGS = r"""
import ctypes, json, torch
rt = ctypes.CDLL("libcudart.so.13")
rt.cudaGetErrorString.restype = ctypes.c_char_p
rt.cudaGetErrorName.restype = ctypes.c_char_p
codes = [35, 98, 100, 200, 209, 218, 221, 222, 803, 804]
name, text = rt.cudaGetErrorName, rt.cudaGetErrorString
print(json.dumps({c: [name(c).decode(), text(c).decode()] for c in codes}))
"""


def run_py(code: str, *args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    p = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                       env=env, timeout=180)  # fmt: skip
    try:
        return dict(json.loads(p.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {"rc": p.returncode, "stderr": p.stderr[-2000:]}


def doctor(*args: str, env: dict[str, str] | None = None) -> dict[str, object]:
    t = time.monotonic()
    p = subprocess.run([sys.executable, "-m", "cuwheel", "doctor", "--json", "--workers",
                        str(min(16, os.cpu_count() or 1)), *args],
                       capture_output=True, text=True, env=env, timeout=400)  # fmt: skip
    took = round(time.monotonic() - t, 1)
    try:
        doc = json.loads(p.stdout)
    except ValueError:
        return {"exit": p.returncode, "seconds": took, "stderr": p.stderr[-3000:]}
    dists = doc["targets"][0]["distributions"]
    return {
        "exit": p.returncode,
        "seconds": took,
        "status": doc["status"],
        "target": doc["targets"][0]["target"],
        "first": dists[0]["name"] if dists else None,
        "not_running": [
            {"name": d["name"], "status": d["status"], "findings": d["findings"]}
            for d in dists if d["status"] != "runs"
        ],
        "distributions": len(dists),
        "read": doc["environment"]["distributions"],
        "loader": [lo for lo in doc["loader"]["loaded"] if "cudart" in lo["name"]],
        "loader_findings": doc["loader"]["findings"],
        "stderr": p.stderr[-1500:],
    }  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--cu12", required=True, help="the unpacked nvidia-cuda-runtime-cu12 wheel")
    ap.add_argument("--out", required=True)
    ap.add_argument("--work", default="/tmp/doctor_gpu")
    a = ap.parse_args()
    import torch

    site = os.path.dirname(os.path.dirname(torch.__file__))
    shutil.rmtree(a.work, ignore_errors=True)
    dirs = {k: os.path.join(a.work, k) for k in ("nokernel", "cu12", "ptx91")}
    make_dist(dirs["nokernel"], "cw-nokernel",
              {"cw_nokernel/libcw_sm80.so": os.path.join(BIN, "sm80only.so")})
    make_dist(dirs["cu12"], "cw-cu12",
              {"cw_cu12/ext12.so": os.path.join(BIN + "_doctor", "ext12.so")})
    make_dist(dirs["ptx91"], "cw-ptx91",
              {"cw_ptx91/libcw_ptx91.so": os.path.join(BIN + "_doctor", "ptx91.so")})
    cu12lib = os.path.join(a.cu12, "nvidia", "cuda_runtime", "lib")
    with open(os.path.join(site, "torch", "__init__.py")) as f:
        init = f.read()
    preload = re.findall(r'\("(\w+)", "(lib[\w.*\[\]0-9-]+)"\)', init)
    res: dict[str, object] = {
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "cuwheel_commit": os.environ.get("CUWHEEL_COMMIT"),  # the code that ran
        "gpu": torch.cuda.get_device_name(0),
        "cc": list(torch.cuda.get_device_capability(0)),
        "python": sys.version.split()[0],
        "site": site,
        "torch_preload_list": preload,
        "error_strings": run_py(ERROR_STRINGS),
    }
    base = os.environ.copy()
    base.pop("LD_LIBRARY_PATH", None)
    os.makedirs(a.out, exist_ok=True)

    def save() -> None:  # after every step: a run cut short still leaves what it saw
        with open(os.path.join(a.out, "doctor_gpu.json"), "w") as f:
            json.dump(res, f, indent=2)

    save()
    ext12 = os.path.join(dirs["cu12"], "cw_cu12/ext12.so")
    only = ["--dist", "cw-cu12", "--dist", "torch", "--dist", "nvidia-cuda-runtime"]
    with12 = dict(base, LD_LIBRARY_PATH=cu12lib)
    res["cu12"] = {
        "observed_without": run_py(IMPORT12, ext12, env=base),
        "doctor_without": doctor("--path", dirs["cu12"], "--path", site, *only, env=base),
        "observed_with_ld_library_path": run_py(IMPORT12, ext12, env=with12),
        "doctor_with_ld_library_path": doctor("--path", dirs["cu12"], "--path", site, *only,
                                              env=with12),
    }  # fmt: skip
    save()
    res["ptx91"] = {
        "observed": run_py(LAUNCH, os.path.join(dirs["ptx91"], "cw_ptx91/libcw_ptx91.so"),
                           env=base),
        "doctor": doctor("--path", dirs["ptx91"], "--path", site, "--dist", "cw-ptx91",
                         "--dist", "torch", env=base),
    }  # fmt: skip
    save()
    res["nokernel"] = {
        "observed": run_py(LAUNCH, os.path.join(dirs["nokernel"], "cw_nokernel/libcw_sm80.so"),
                           env=base),
    }  # fmt: skip
    save()
    res["nokernel"]["doctor_whole_env"] = doctor("--path", dirs["nokernel"], "--path", site,
                                                 env=base)  # fmt: skip
    save()
    print(json.dumps(res, indent=1)[:6000])
    return 0


if __name__ == "__main__":
    sys.exit(main())

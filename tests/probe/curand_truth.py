#!/usr/bin/env python3
"""Probe: every cuRAND generator and distribution, called through the host API of a given
libcurand.so.10 on a real GPU, and every fatbin container of that library loaded alone.

    PYTHONPATH=src python3 tests/probe/curand_truth.py --lib NAME=PATH [--lib ...] --out DIR

Made for NVIDIA's cuRAND 10.4.5.25 (CUDA 13.4) on the H200 machine's driver 580 (CUDA
13.0): three of its containers hold nothing for CC 9.0 but compute_75 PTX of ISA 9.4, which
that driver cannot JIT-compile.  Which calls does that stop?  Per library, per
CUDA_MODULE_LOADING (unset = the runtime's default, lazy; EAGER), per generator type,
ordering and distribution, a child process (a failed launch can spoil its context) creates
the generator, sets seed / ordering, generates into device memory and synchronizes; it
records each curandStatus_t, cudaGetLastError, the synchronize's error and whether the
values read back lie in the distribution's range.  The libcudart.so.13 the library NEEDs
is the environment's (the NVIDIA runtime wheel torch uses), loaded first.

Then ``cuModuleLoadData`` on each container's bytes (at cuwheel's offsets), beside
cuwheel.compat's container verdict for this GPU and driver.  Writes DIR/curand_truth.json;
tests/test_curand_truth.py checks the committed copy.  Not a pytest module.
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
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

# curandRngType_t, curandOrdering_t, curandStatus_t (curand.h of CUDA 13)
RNG = {
    "PSEUDO_DEFAULT": 100, "PSEUDO_XORWOW": 101, "PSEUDO_MRG32K3A": 121,
    "PSEUDO_MTGP32": 141, "PSEUDO_MT19937": 142, "PSEUDO_PHILOX4_32_10": 161,
    "QUASI_DEFAULT": 200, "QUASI_SOBOL32": 201, "QUASI_SCRAMBLED_SOBOL32": 202,
    "QUASI_SOBOL64": 203, "QUASI_SCRAMBLED_SOBOL64": 204,
}  # fmt: skip
ORDERING = {
    "default": None, "PSEUDO_BEST": 100, "PSEUDO_SEEDED": 102,
    "PSEUDO_LEGACY": 103, "PSEUDO_DYNAMIC": 104,
}  # fmt: skip
STATUS = {
    0: "SUCCESS", 100: "VERSION_MISMATCH", 101: "NOT_INITIALIZED", 102: "ALLOCATION_FAILED",
    103: "TYPE_ERROR", 104: "OUT_OF_RANGE", 105: "LENGTH_NOT_MULTIPLE",
    106: "DOUBLE_PRECISION_REQUIRED", 201: "LAUNCH_FAILURE", 202: "PREEXISTING_FAILURE",
    203: "INITIALIZATION_FAILED", 204: "ARCH_MISMATCH", 999: "INTERNAL_ERROR",
}  # fmt: skip
# name: (curand function, element bytes, extra arguments, range check)
DISTS = {
    "generate32": ("curandGenerate", 4, (), "u32"),
    "generate64": ("curandGenerateLongLong", 8, (), "u64"),
    "uniform": ("curandGenerateUniform", 4, (), "unit"),
    "uniform_double": ("curandGenerateUniformDouble", 8, (), "unit"),
    "normal": ("curandGenerateNormal", 4, (0.0, 1.0), "finite"),
    "normal_double": ("curandGenerateNormalDouble", 8, (0.0, 1.0), "finite"),
    "lognormal": ("curandGenerateLogNormal", 4, (0.0, 1.0), "positive"),
    "lognormal_double": ("curandGenerateLogNormalDouble", 8, (0.0, 1.0), "positive"),
    "poisson_4": ("curandGeneratePoisson", 4, (4.0,), "u32"),
    "poisson_2000": ("curandGeneratePoisson", 4, (2000.0,), "u32"),
    "seeds": ("curandGenerateSeeds", 0, (), None),
}
N = 1 << 16  # values per call: a multiple of every generator's block


def cudart() -> str | None:
    for root in [*site.getsitepackages(), site.getusersitepackages()]:
        for pat in ("nvidia/cu13/lib/libcudart.so.13", "nvidia/cuda_runtime/lib/libcudart.so.13"):
            hits = sorted(glob.glob(os.path.join(root, pat)))
            if hits:
                return hits[0]
    return None


def installed_curand() -> str | None:
    for root in site.getsitepackages():
        hits = sorted(glob.glob(os.path.join(root, "nvidia/cu13/lib/libcurand.so.10")))
        if hits:
            return hits[0]
    return None


def _in_range(kind: str | None, raw: bytes, size: int) -> bool | None:
    import array

    if kind is None:
        return None
    code = {"u32": "I", "u64": "Q"}.get(kind, "f" if size == 4 else "d")
    vals = array.array(code, raw)
    if kind in ("u32", "u64"):
        return len(set(vals[:1024])) > 1
    if kind == "unit":
        return all(0.0 < v <= 1.0 for v in vals)
    if kind == "positive":
        return all(v > 0.0 and v == v and v != float("inf") for v in vals)
    return all(v == v and abs(v) != float("inf") for v in vals)


def child(lib: str, rt_path: str, rng: str, ordering: str, dist: str) -> dict[str, Any]:
    """One call sequence in this process; the answer as a dict."""
    rt = ctypes.CDLL(rt_path, mode=ctypes.RTLD_GLOBAL)
    cr = ctypes.CDLL(lib)
    rt.cudaGetErrorName.restype = ctypes.c_char_p
    name = lambda e: rt.cudaGetErrorName(e).decode()  # noqa: E731
    out: dict[str, Any] = {}
    ver = ctypes.c_int()
    cr.curandGetVersion(ctypes.byref(ver))
    out["curand_version"] = ver.value
    gen = ctypes.c_void_p()
    st = cr.curandCreateGenerator(ctypes.byref(gen), ctypes.c_int(RNG[rng]))
    out["create"] = STATUS.get(st, st)
    if st:
        out["last_error"] = name(rt.cudaGetLastError())
        return out
    if ORDERING[ordering] is not None:
        st = cr.curandSetGeneratorOrdering(gen, ctypes.c_int(ORDERING[ordering]))
        out["ordering_status"] = STATUS.get(st, st)
        if st:
            return out
    if rng.startswith("PSEUDO"):
        out["seed"] = STATUS.get(cr.curandSetPseudoRandomGeneratorSeed(
            gen, ctypes.c_ulonglong(1234)))  # fmt: skip
    fn, size, extra, check = DISTS[dist]
    ptr = ctypes.c_void_p()
    if size:
        assert rt.cudaMalloc(ctypes.byref(ptr), ctypes.c_size_t(N * size)) == 0
    args: list[Any] = [gen] + ([ptr, ctypes.c_size_t(N)] if size else [])
    args += [ctypes.c_double(x) for x in extra]
    st = getattr(cr, fn)(*args)
    out["generate"] = STATUS.get(st, st)
    out["last_error"] = name(rt.cudaGetLastError())
    out["sync"] = name(rt.cudaDeviceSynchronize())
    if st == 0 and size:
        host = ctypes.create_string_buffer(N * size)
        rt.cudaMemcpy(host, ptr, ctypes.c_size_t(N * size), 2)  # device to host
        out["values_ok"] = _in_range(check, host.raw, size)
    out["destroy"] = STATUS.get(cr.curandDestroyGenerator(gen))
    return out


def run_child(job: dict[str, str]) -> dict[str, Any]:
    env = dict(os.environ)
    env.pop("CUDA_MODULE_LOADING", None)
    if job["loading"]:
        env["CUDA_MODULE_LOADING"] = job["loading"]
    args = [sys.executable, os.path.abspath(__file__), "--child", json.dumps(job)]
    p = subprocess.run(args, capture_output=True, text=True, env=env, timeout=120)
    row: dict[str, Any] = dict(job)
    row.pop("path", None)
    row.pop("cudart", None)
    try:
        row.update(json.loads(p.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        row["crash"] = {"returncode": p.returncode, "stderr": p.stderr[-600:]}
    return row


def container_loads(lib: str, budget: float) -> dict[str, Any]:
    """cuModuleLoadData on every container (the three whose only CC 9.0 code is new PTX
    first), beside cuwheel.compat's container verdict, in a child process."""
    p = subprocess.run([sys.executable, os.path.abspath(__file__), "--containers", lib,
                        "--budget", str(budget)], capture_output=True, text=True,
                       timeout=budget + 120)  # fmt: skip
    try:
        return dict(json.loads(p.stdout.strip().splitlines()[-1]))
    except (ValueError, IndexError):
        return {"crash": {"returncode": p.returncode, "stderr": p.stderr[-2000:]}}


def containers_child(lib: str, budget: float) -> dict[str, Any]:
    import importlib.util

    import cuwheel
    from cuwheel import compat

    spec = importlib.util.spec_from_file_location(
        "h200_probe", os.path.join(os.path.dirname(os.path.abspath(__file__)), "h200_probe.py"))
    assert spec and spec.loader
    probe = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(probe)
    cuda = probe.Cuda()
    from cuwheel.compat.localgpu import detect

    arch = cuwheel.Arch(cuda.cc[0] * 10 + cuda.cc[1])
    target = compat.Target(arch, cuda.name, detect().driver)
    (b,) = cuwheel.inspect([lib]).binaries
    with open(lib, "rb") as f:
        data = f.read()
    verdicts = [compat.evaluate_container(c, target, compat.binary_os(b)) for c in b.containers]
    order = sorted(range(len(b.containers)), key=lambda i: (
        verdicts[i].verdict is not compat.Verdict.DRIVER,
        verdicts[i].verdict is compat.Verdict.PTX_JIT, i))  # fmt: skip
    rows = []
    deadline = time.monotonic() + budget
    for i in order:
        if time.monotonic() > deadline:
            break
        c, cv = b.containers[i], verdicts[i]
        t0 = time.monotonic()
        rc = cuda.load(data[c.offset : c.offset + c.size])
        rows.append([i, c.offset, c.size, c.section,
                     " ".join(f"{e.kind.value}{e.arch.number}{e.arch.variant}" for e in c.entries),
                     cv.verdict.short if cv.verdict else None, cv.ignored is not None,
                     rc, cuda.error_name(rc),
                     round((time.monotonic() - t0) * 1000, 1)])  # fmt: skip
    return {"target": str(target.driver), "containers": len(b.containers),
            "columns": ["index", "offset", "size", "section", "entries", "predicted",
                        "ignored", "rc", "result", "ms"], "rows": rows}  # fmt: skip


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", action="append", default=[], help="NAME=PATH of a libcurand.so.10")
    ap.add_argument("--out")
    ap.add_argument("--workers", type=int, default=12)
    ap.add_argument("--budget", type=float, default=150.0, help="seconds for container loads")
    ap.add_argument("--skip-calls", action="store_true", help="container loads only")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--containers", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        job = json.loads(a.child)
        print(json.dumps(child(job["path"], job["cudart"], job["rng"], job["ordering"],
                               job["dist"])))  # fmt: skip
        return 0
    if a.containers:
        print(json.dumps(containers_child(a.containers, a.budget)))
        return 0
    rt = cudart()
    assert rt, "no libcudart.so.13 in this environment"
    libs = dict(x.split("=", 1) for x in a.lib)
    if "installed" not in libs and installed_curand():
        libs["installed"] = str(installed_curand())
    jobs = []
    for label, path in libs.items():
        for rng in RNG:
            orders = [o for o in ORDERING if rng.startswith("PSEUDO") or o == "default"]
            for ordering in orders:
                for dist in DISTS:
                    jobs.append({"lib": label, "path": path, "cudart": rt, "loading": "",
                                 "rng": rng, "ordering": ordering, "dist": dist})  # fmt: skip
            # EAGER loading: every module of the library is loaded when the context starts
            for dist in ("uniform", "generate32"):
                jobs.append({"lib": label, "path": path, "cudart": rt, "loading": "EAGER",
                             "rng": rng, "ordering": "default", "dist": dist})  # fmt: skip
    t0 = time.monotonic()
    with ThreadPoolExecutor(a.workers) as pool:
        rows = [] if a.skip_calls else list(pool.map(run_child, jobs))
    calls_s = round(time.monotonic() - t0, 1)
    loads = {label: container_loads(path, a.budget) for label, path in libs.items()}
    smi = subprocess.run(["nvidia-smi", "--query-gpu=name,compute_cap,driver_version",
                          "--format=csv,noheader"], capture_output=True, text=True)  # fmt: skip
    gpu, cc, driver = [x.strip() for x in smi.stdout.splitlines()[0].split(",")]
    doc = {"gpu": gpu, "cc": cc, "driver": driver, "cudart": rt,
           "cuwheel_commit": os.environ.get("CUWHEEL_COMMIT"),
           "libraries": {k: {"path": v, "size": os.path.getsize(v)} for k, v in libs.items()},
           "calls_seconds": calls_s, "calls": rows, "container_loads": loads}  # fmt: skip
    os.makedirs(a.out, exist_ok=True)
    with open(os.path.join(a.out, "curand_truth.json"), "w") as f:
        json.dump(doc, f, indent=None, separators=(",", ":"))
    bad = [r for r in rows if r.get("generate") not in (None, "SUCCESS") or "crash" in r
           or r.get("sync") not in (None, "cudaSuccess")]  # fmt: skip
    print(f"{len(rows)} calls in {calls_s}s, {len(bad)} not successful")
    for r in bad[:60]:
        print(" ", {k: r.get(k) for k in ("lib", "loading", "rng", "ordering", "dist", "create",
                                          "generate", "last_error", "sync", "crash")})
    for label, v in loads.items():
        res: dict[str, int] = {}
        for row in v.get("rows", []):
            key = f"{row[5]} -> {row[8]}"
            res[key] = res.get(key, 0) + 1
        print(label, v.get("containers"), res, v.get("crash"))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

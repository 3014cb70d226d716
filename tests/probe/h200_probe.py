#!/usr/bin/env python3
"""Probe: cuwheel.compat's predictions against what a real CUDA driver does.

Run on a machine with an NVIDIA GPU (made for the H200 machine lent to this project):

    PYTHONPATH=src python3 tests/probe/h200_probe.py --out DIR

For every fatbin container of the committed fixtures (tests/data/bin) and of the CUDA
libraries installed in this Python environment (nvidia/*/lib, torch/lib, CuPy, JAX plugins),
it takes the container's bytes at the offset cuwheel's inventory gives, calls
``cuModuleLoadData`` on them through ctypes (libcuda.so.1, primary context of GPU 0) and
compares the outcome with ``cuwheel.compat.evaluate_container`` for this GPU and driver.
Libraries with many containers are sampled evenly (``--per-library``).  Containers the rules
send to the PTX JIT are loaded too, within a time budget.

It also launches the fixtures' kernels through the CUDA runtime (``cw_launch`` ...) to check
the library-level roll-up, and runs ``cuwheel compat --local``.

Writes DIR/h200_results.json and DIR/compat_local.txt / .json.  Not a pytest module: the
committed results are checked by tests/test_compat_probe.py.
"""

from __future__ import annotations

import argparse
import ctypes
import glob
import importlib.metadata
import json
import os
import pickle
import platform
import site
import subprocess
import sys
import time
from typing import Any

import cuwheel
from cuwheel import compat
from cuwheel.model.inventory import Binary, Compression

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
FIXTURES = os.path.join(ROOT, "tests", "data", "bin")
# The script children run (a test harness may substitute a wrapper).
SELF = os.environ.get("CUWHEEL_PROBE_SELF", os.path.abspath(__file__))
LOADS = {compat.Verdict.NATIVE, compat.Verdict.COMPATIBLE, compat.Verdict.PTX_JIT}


class Cuda:
    """The few driver API calls the probe needs, through ctypes."""

    def __init__(self) -> None:
        self.lib = ctypes.CDLL("libcuda.so.1")
        self.check(self.lib.cuInit(0), "cuInit")
        v = ctypes.c_int()
        self.check(self.lib.cuDriverGetVersion(ctypes.byref(v)), "cuDriverGetVersion")
        self.version = v.value
        self.dev = ctypes.c_int()
        self.check(self.lib.cuDeviceGet(ctypes.byref(self.dev), 0), "cuDeviceGet")
        major, minor = ctypes.c_int(), ctypes.c_int()
        self.lib.cuDeviceGetAttribute(ctypes.byref(major), 75, self.dev)
        self.lib.cuDeviceGetAttribute(ctypes.byref(minor), 76, self.dev)
        self.cc = (major.value, minor.value)
        buf = ctypes.create_string_buffer(256)
        self.lib.cuDeviceGetName(buf, 256, self.dev)
        self.name = buf.value.decode()
        self.ctx = ctypes.c_void_p()
        self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(self.ctx), self.dev), "retain")
        self.check(self.lib.cuCtxSetCurrent(self.ctx), "cuCtxSetCurrent")

    def error_name(self, rc: int) -> str:
        p = ctypes.c_char_p()
        if self.lib.cuGetErrorName(rc, ctypes.byref(p)) == 0 and p.value:
            return p.value.decode()
        return f"CUresult {rc}"

    def check(self, rc: int, what: str) -> None:
        if rc != 0:
            raise RuntimeError(f"{what} failed: {rc}")

    def load(self, image: bytes) -> int:
        module = ctypes.c_void_p()
        buf = ctypes.create_string_buffer(image, len(image))
        rc = int(self.lib.cuModuleLoadData(ctypes.byref(module), buf))
        if rc == 0:
            self.lib.cuModuleUnload(module)
        return rc


def site_dirs() -> list[str]:
    dirs = []
    for d in [*site.getsitepackages(), *sys.path]:
        if d and os.path.isdir(d) and os.path.realpath(d) not in dirs:
            dirs.append(os.path.realpath(d))
    return dirs


# Edits of the k89.ptx fixture (nvcc 13.0: .version 9.0, .target sm_89) for the gates the
# fixtures do not reach: newer PTX ISA than the driver, a / f / higher-arch targets.
PTX_VARIANTS = [
    ("9.1", "sm_89"),
    ("9.5", "sm_89"),
    ("8.8", "sm_89"),
    ("9.0", "sm_80"),
    ("9.0", "sm_90a"),
    ("9.0", "sm_100"),
    ("9.0", "sm_100f"),
    ("9.0", "sm_120"),
]


def write_ptx_variants(folder: str) -> str:
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(FIXTURES, "k89.ptx")) as f:
        text = f.read()
    for isa, target in PTX_VARIANTS:
        body = text.replace(".version 9.0\n", f".version {isa}\n", 1)
        body = body.replace(".target sm_89\n", f".target {target}\n", 1)
        with open(os.path.join(folder, f"k_isa{isa}_{target}.ptx"), "w") as f:
            f.write(body)
    return folder


def real_libraries() -> list[str]:
    patterns = [
        "nvidia/*/lib/*.so*",
        "torch/lib/*.so*",
        "cupy/**/*.so",
        "cupy_backends/**/*.so",
        "jaxlib/**/*.so",
        "jax_plugins/**/*.so",
        "jax_cuda13_plugin/**/*.so",
        "jax_cuda13_pjrt/**/*.so",
    ]
    found: dict[str, str] = {}
    for d in site_dirs():
        for pat in patterns:
            for p in glob.glob(os.path.join(d, pat), recursive=True):
                if os.path.isfile(p) and not os.path.islink(p):
                    found.setdefault(os.path.realpath(p), p)
    return sorted(found.values())


def sample(n: int, k: int, keep: set[int]) -> list[int]:
    if n <= k:
        return list(range(n))
    picked = {round(i * (n - 1) / (k - 1)) for i in range(k)}
    return sorted(picked | {i for i in keep if 0 <= i < n})


def ignored_code(cv: compat.ContainerVerdict) -> str | None:
    if cv.ignored is None:
        return None
    text = cv.ignored
    for key, code in (
        ("empty", "empty"),
        ("relocatable", "reloc"),
        ("LTO", "lto"),
        ("stub", "stub"),
    ):
        if key in text:
            return code
    return "other"


def elf_text_sections(cubin: bytes) -> int | None:
    """How many ``.text.*`` (kernel code) sections a stored cubin has; None if unreadable."""
    import struct

    if cubin[:4] != b"\x7fELF" or cubin[4] != 2:
        return None
    try:
        shoff = struct.unpack_from("<Q", cubin, 0x28)[0]
        shentsize, shnum, shstrndx = struct.unpack_from("<HHH", cubin, 0x3A)

        def sh(i: int) -> tuple[int, int, int]:
            base = shoff + i * shentsize
            name = struct.unpack_from("<I", cubin, base)[0]
            off, size = struct.unpack_from("<QQ", cubin, base + 0x18)
            return name, off, size

        _, stroff, _ = sh(shstrndx)
        count = 0
        for i in range(shnum):
            name_off = sh(i)[0]
            end = cubin.index(b"\0", stroff + name_off)
            if cubin[stroff + name_off : end].startswith(b".text."):
                count += 1
        return count
    except (struct.error, ValueError):
        return None


def stub_kernels(data: bytes, container_offset: int, b: Binary, index: int) -> list[int | None]:
    c = b.containers[index]
    out: list[int | None] = []
    for e in c.entries:
        if e.compression is not Compression.NONE:
            out.append(None)
            continue
        start = e.offset - container_offset + e.header_size
        out.append(elf_text_sections(data[start : start + e.uncompressed_size]))
    return out


def library_label(b: Binary, prefixes: list[tuple[str, str]]) -> str:
    real = os.path.realpath(b.archive or b.path)
    for pre, name in prefixes:
        if real.startswith(pre + os.sep):
            label = f"{name}/{os.path.relpath(real, pre)}"
            return label + (f"({b.member})" if b.member else "")
    return b.path


def library_info(
    target: compat.Target, b: Binary, label: str, lib_id: int, per_library: int
) -> dict[str, Any]:
    stub = compat.link_stub_index(b)
    lv = compat.evaluate_binary(b, target)
    lv_strict = compat.evaluate_binary(b, target, strict=True)
    n = len(b.containers)
    info: dict[str, Any] = {
        "id": lib_id,
        "path": label,
        "format": b.format,
        "containers": n,
        "sampled": sample(n, per_library, {stub} if stub is not None else set()),
        "stub": stub,
        "verdict": lv.verdict.value if lv else None,
        "verdict_strict": lv_strict.verdict.value if lv_strict else None,
        "runtime": lv.runtime.reason if lv and lv.runtime else None,
    }
    if b.archive is not None:
        info["skipped"] = "archive member: offsets are inside the member"
        info["sampled"] = []
    return info


def probe_container(
    cuda: Cuda,
    target: compat.Target,
    b: Binary,
    info: dict[str, Any],
    i: int,
    data: bytes,
    jit_ok: bool,
) -> list[Any]:
    """One row: the prediction for container ``i`` and what cuModuleLoadData did."""
    c = b.containers[i]
    stub = info["stub"]
    cv = compat.evaluate_container(c, target, compat.binary_os(b), stub=i == stub)
    predicted = cv.verdict in LOADS
    row: list[Any] = [
        info["id"],
        i,
        c.offset,
        c.size,
        c.section,
        " ".join(cv.codes),
        ignored_code(cv),
        cv.verdict.short if cv.verdict else None,
        predicted,
        None,
        None,
        None,
        None,
        None,
    ]
    if cv.verdict is compat.Verdict.PTX_JIT and not jit_ok:
        row[10] = "skipped: JIT budget"
        return row
    image = data + b"\0" if b.format == "ptx" else data
    t0 = time.monotonic()
    rc = cuda.load(image)
    row[9] = rc
    row[10] = cuda.error_name(rc)
    row[11] = round((time.monotonic() - t0) * 1000, 2)
    row[12] = predicted == (rc == 0)
    if i == stub:
        row[13] = stub_kernels(data, c.offset, b, i)
    if not row[12] or info["path"].startswith(("fixtures/", "synthetic/")):
        row.append(cv.reason)
    return row


def _open_binary(path: str) -> Any:
    """A binary on disk, or a wheel member (``x.whl!member``) read into memory."""
    if "!" in path:
        import io
        import zipfile

        wheel, member = path.split("!", 1)
        with zipfile.ZipFile(wheel) as z:
            return io.BytesIO(z.read(member))
    return open(path, "rb")


def child(a: argparse.Namespace) -> int:
    """Probe containers not yet in the journal; a crash loses only the one in flight."""
    with open(a.state, "rb") as f:
        inv, target, libraries = pickle.load(f)
    done: set[tuple[int, int]] = set()
    jit_used = 0
    if os.path.exists(a.journal):
        with open(a.journal) as f:
            for line in f:
                rec = json.loads(line)
                key = rec["row"][:2] if "row" in rec else rec.get("try") or rec["crash"]
                done.add((key[0], key[1]))
                if "row" in rec and rec["row"][7] == "JIT" and rec["row"][9] is not None:
                    jit_used += 1
    cuda = Cuda()
    binaries = [b for b in inv.binaries if b.containers]
    with open(a.journal, "a") as journal:
        for b, info in zip(binaries, libraries, strict=True):
            todo = [i for i in info["sampled"] if (info["id"], i) not in done]
            if not todo:
                continue
            with _open_binary(b.path) as f:
                for i in todo:
                    if time.time() > a.deadline:
                        return 0
                    c = b.containers[i]
                    f.seek(c.offset)
                    data = f.read(c.size)
                    journal.write(json.dumps({"try": [info["id"], i]}) + "\n")
                    journal.flush()
                    os.fsync(journal.fileno())
                    row = probe_container(cuda, target, b, info, i, data, jit_used < a.jit)
                    if row[7] == "JIT" and row[9] is not None:
                        jit_used += 1
                    journal.write(json.dumps({"row": row}) + "\n")
                    journal.flush()
    return 0


def launches(target: compat.Target, cudart: str | None) -> list[dict[str, Any]]:
    """Launch the fixtures' kernels through the CUDA runtime (library-level check)."""
    if cudart is None:
        return [{"error": "libcudart.so.13 not found"}]
    rt = ctypes.CDLL(cudart, mode=ctypes.RTLD_GLOBAL)
    ptr = ctypes.c_void_p()
    if rt.cudaMalloc(ctypes.byref(ptr), 4096) != 0:
        return [{"error": "cudaMalloc failed"}]
    inv = cuwheel.inspect([FIXTURES])
    by_name = {os.path.basename(b.path): b for b in inv.binaries}
    # (file, exported launcher, codes of the container holding its kernel)
    cases = [
        (n, "cw_launch", None)
        for n in (
            "sm80.so",
            "sm80only.so",
            "sm90a.so",
            "sm100f.so",
            "ptx120.so",
            "allmajor.so",
            "g80.so",
            "cm_none.so",
            "cm_size.so",
            "cm_speed_all.so",
            "cm_default.so",
        )
    ]
    cases += [
        ("two_tu.so", "cw_tu1_launch", "sm_80"),
        ("two_tu.so", "cw_tu2_launch", "sm_90"),
        ("librdc.so", "cw_rdc_launch", None),
    ]
    out = []
    for name, fn, holder in cases:
        b = by_name.get(name)
        if b is None:
            continue
        lv = compat.evaluate_binary(b, target)
        predicted = lv.verdict if lv else None
        if holder is not None and lv is not None:
            for cv in lv.containers:
                if holder in cv.codes and cv.counted:
                    predicted = cv.verdict
        lib = ctypes.CDLL(os.path.join(FIXTURES, name))
        launch = getattr(lib, fn)
        launch.argtypes = (
            [ctypes.c_void_p, ctypes.c_float] if fn == "cw_launch" else [ctypes.c_void_p]
        )
        args = (ptr, ctypes.c_float(2.0)) if fn == "cw_launch" else (ptr,)
        err = int(launch(*args))
        sync = int(rt.cudaDeviceSynchronize())
        rt.cudaGetErrorName.restype = ctypes.c_char_p
        out.append(
            {
                "library": name,
                "function": fn,
                "predicted": predicted.value if predicted else None,
                "predicted_runs": bool(predicted and predicted in LOADS),
                "launch_error": err,
                "launch_error_name": rt.cudaGetErrorName(err).decode(),
                "sync_error": sync,
                "agree": bool(predicted and predicted in LOADS) == (err == 0 and sync == 0),
            }
        )
    return out


def versions() -> dict[str, str]:
    out = {}
    for d in importlib.metadata.distributions():
        n = (d.metadata["Name"] or "").lower()
        if n.startswith(("nvidia-", "torch", "cupy", "jax", "cuda-")):
            out[n] = d.version
    return dict(sorted(out.items()))


def run_children(
    a: argparse.Namespace, deadline: float
) -> tuple[list[list[Any]], dict[tuple[int, int], list[Any]]]:
    """Run child probes until every sampled container has a row; a crashed container
    gets a row saying so and the next child goes on after it."""
    with open(a.state, "rb") as f:
        inv, target, libraries = pickle.load(f)
    binaries = [b for b in inv.binaries if b.containers]
    crashes = 0
    while True:
        cmd = [
            sys.executable,
            SELF,
            "--child",
            "--out",
            a.out,
            "--state",
            a.state,
            "--journal",
            a.journal,
            "--deadline",
            str(deadline),
            "--jit",
            str(a.jit),
        ]
        p = subprocess.run(cmd)
        last_try = None
        if not os.path.exists(a.journal):
            print(f"  child failed ({p.returncode}) before probing anything", flush=True)
            break
        with open(a.journal) as f:
            for line in f:
                rec = json.loads(line)
                last_try = rec.get("try")
        if p.returncode == 0 or last_try is None or crashes >= a.max_crashes:
            break
        crashes += 1
        print(f"  child died ({p.returncode}) on container {last_try}", flush=True)
        b = binaries[last_try[0]]
        cv = compat.evaluate_container(
            b.containers[last_try[1]],
            target,
            compat.binary_os(b),
            stub=last_try[1] == libraries[last_try[0]]["stub"],
        )
        c = b.containers[last_try[1]]
        what = [
            c.offset,
            c.size,
            c.section,
            " ".join(cv.codes),
            ignored_code(cv),
            cv.verdict.short if cv.verdict else None,
        ]
        with open(a.journal, "a") as f:
            f.write(
                json.dumps({"crash": last_try, "returncode": p.returncode, "what": what}) + "\n"
            )
    rows: dict[tuple[int, int], list[Any]] = {}
    crashed: dict[tuple[int, int], list[Any]] = {}
    if not os.path.exists(a.journal):
        return [], crashed
    with open(a.journal) as f:
        for line in f:
            rec = json.loads(line)
            if "row" in rec:
                rows[(rec["row"][0], rec["row"][1])] = rec["row"]
            elif "crash" in rec:
                crashed[(rec["crash"][0], rec["crash"][1])] = [rec["returncode"], *rec["what"]]
    return [rows[k] for k in sorted(rows)], crashed


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    ap.add_argument("--per-library", type=int, default=200)
    ap.add_argument("--budget", type=float, default=330.0, help="seconds for loading")
    ap.add_argument("--jit", type=int, default=400, help="most PTX-JIT loads in all")
    ap.add_argument("--max-crashes", type=int, default=40)
    ap.add_argument("--extra", action="append", default=[],
                    help="more wheels / files / directories to probe (e.g. aarch64 wheels: "
                    "the driver loads a container's bytes whatever the host binary's CPU)")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    ap.add_argument("--state", default="/tmp/cuwheel_probe_state.pkl", help=argparse.SUPPRESS)
    ap.add_argument("--journal", default="/tmp/cuwheel_probe_journal.jsonl", help=argparse.SUPPRESS)
    ap.add_argument("--deadline", type=float, default=0.0, help=argparse.SUPPRESS)
    ap.add_argument("--launches", help=argparse.SUPPRESS)
    ap.add_argument("--cudart", help=argparse.SUPPRESS)
    a = ap.parse_args()
    os.environ.setdefault("CUDA_MODULE_LOADING", "EAGER")
    if a.child:
        return child(a)
    if a.launches:
        with open(a.state, "rb") as f:
            _, target_, _ = pickle.load(f)
        with open(a.launches, "w") as f:
            json.dump(launches(target_, a.cudart or None), f)
        return 0

    os.makedirs(a.out, exist_ok=True)
    start = time.monotonic()
    cuda = Cuda()
    from cuwheel.compat.localgpu import detect

    machine = detect()
    driver = machine.driver
    target = compat.Target(cuwheel.Arch(cuda.cc[0] * 10 + cuda.cc[1]), cuda.name, driver)
    print(f"GPU {cuda.name} CC {cuda.cc} {driver} cuDriverGetVersion {cuda.version}", flush=True)
    libs = real_libraries()
    print(f"{len(libs)} candidate libraries", flush=True)
    synthetic = write_ptx_variants(os.path.join(os.path.dirname(a.state), "cuwheel_probe_ptx"))
    t0 = time.monotonic()
    inv = cuwheel.inspect([FIXTURES, synthetic, *libs, *a.extra])
    inspect_s = time.monotonic() - t0
    print(f"inventory in {inspect_s:.1f}s; problems: {len(inv.problems)}", flush=True)
    prefixes = [
        (os.path.realpath(FIXTURES), "fixtures"),
        (os.path.realpath(synthetic), "synthetic"),
    ] + [(d, "site") for d in site_dirs()] + [
        (os.path.realpath(os.path.dirname(x)), "extra") for x in a.extra
    ]
    binaries = [b for b in inv.binaries if b.containers]
    libraries = [
        library_info(target, b, library_label(b, prefixes), n, a.per_library)
        for n, b in enumerate(binaries)
    ]
    with open(a.state, "wb") as f:
        pickle.dump((inv, target, libraries), f)
    if os.path.exists(a.journal):
        os.remove(a.journal)
    rows, crashed = run_children(a, time.time() + a.budget)
    for info in libraries:
        info["probed"] = sum(1 for r in rows if r[0] == info["id"] and r[9] is not None)
        info["crashed"] = sorted(i for (lib, i) in crashed if lib == info["id"])
        print(
            f"  {info['path']}: {info['probed']}/{info['containers']} {info['verdict']}", flush=True
        )
    loaded = [r for r in rows if r[9] is not None]
    counted = [r for r in loaded if r[6] is None]
    info_rows = [r for r in loaded if r[6] is not None]
    cudart = next((p for p in libs if os.path.basename(p) == "libcudart.so.13"), None)
    launch_out = os.path.join(a.out, "launches.json")
    subprocess.run(
        [
            sys.executable,
            SELF,
            "--out",
            a.out,
            "--state",
            a.state,
            "--launches",
            launch_out,
            "--cudart",
            cudart or "",
        ],
        timeout=120,
    )
    try:
        with open(launch_out) as f:
            launch_rows = json.load(f)
        os.remove(launch_out)
    except (OSError, ValueError) as exc:
        launch_rows = [{"error": f"launch probe failed: {exc}"}]
    fallback: dict[str, Any]
    try:
        from cuwheel.compat.localgpu import _via_libcuda

        m2 = _via_libcuda()
        fallback = {
            "gpus": [[g.index, g.name, g.arch.cc] for g in m2.gpus],
            "driver": str(m2.driver),
        }
    except Exception as exc:  # report, do not fail the probe
        fallback = {"error": str(exc)}
    summary: dict[str, Any] = {
        "containers_in_libraries": sum(x["containers"] for x in libraries),
        "libraries": len(libraries),
        "probed": len(loaded),
        "skipped": sum(len(x["sampled"]) for x in libraries) - len(loaded) - len(crashed),
        "crashed": len(crashed),
        "counted": len(counted),
        "counted_agree": sum(1 for r in counted if r[12]),
        "counted_disagree": sum(1 for r in counted if not r[12]),
        "ignored_probed": len(info_rows),
        "ignored_agree": sum(1 for r in info_rows if r[12]),
        "by_prediction": {},
        "launches": len(launch_rows),
        "launches_agree": sum(1 for r in launch_rows if r.get("agree")),
        "seconds": round(time.monotonic() - start, 1),
        "inspect_seconds": round(inspect_s, 1),
    }
    for r in loaded:
        key = f"{r[7]} -> {r[10]}"
        summary["by_prediction"][key] = summary["by_prediction"].get(key, 0) + 1
    result = {
        "schema": "cuwheel-compat-probe/1",
        "cuwheel_commit": os.environ.get("CUWHEEL_COMMIT"),  # the code that ran
        "machine": {
            "gpu": cuda.name,
            "cc": f"{cuda.cc[0]}.{cuda.cc[1]}",
            "driver": driver.version,
            "driver_cuda": cuda.version,
            "nvml_via": machine.via,
            "libcuda_fallback": fallback,
            "python": platform.python_version(),
            "packages": versions(),
            "CUDA_MODULE_LOADING": os.environ.get("CUDA_MODULE_LOADING"),
        },
        "target": {"cc": target.arch.cc, "driver": str(driver)},
        "summary": summary,
        "row_columns": [
            "lib",
            "index",
            "offset",
            "size",
            "section",
            "codes",
            "ignored",
            "predicted",
            "predicted_loads",
            "rc",
            "result",
            "ms",
            "agree",
            "stub_text_sections",
            "reason",
        ],
        "libraries": libraries,
        "rows": rows,
        "crash_columns": [
            "lib",
            "index",
            "returncode",
            "offset",
            "size",
            "section",
            "codes",
            "ignored",
            "predicted",
        ],
        "crashes": [[lib, i, *what] for (lib, i), what in sorted(crashed.items())],
        "launches": launch_rows,
        "problems": [str(p) for p in inv.problems][:50],
    }
    with open(os.path.join(a.out, "h200_results.json"), "w") as f:
        json.dump(result, f, separators=(",", ":"))
    print(json.dumps(summary, indent=1), flush=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    torch_lib = next((os.path.dirname(p) for p in libs if p.endswith("libtorch_cuda.so")), None)
    targets = [FIXTURES] + ([torch_lib] if torch_lib else [])
    for ext, extra in (("txt", []), ("json", ["--json"])):
        cmd = [sys.executable, "-m", "cuwheel", "compat", *targets, "--local", *extra]
        p = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=120)
        with open(os.path.join(a.out, f"compat_local.{ext}"), "w") as f:
            f.write(
                f"$ cuwheel compat {' '.join(targets)} --local {' '.join(extra)}\n"
                if ext == "txt"
                else ""
            )
            f.write(p.stdout)
            if ext == "txt":
                f.write(f"\n[stderr]\n{p.stderr}\n[exit status {p.returncode}]\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())

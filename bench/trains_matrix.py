"""Every seed train's toolkit for real, from wheels and from a redist mirror, with no CUDA on
PATH: assembled, then used (nvcc builds a kernel whose cubin records the toolkit; CMake's
enable_language(CUDA) + FindCUDAToolkit with CUDA::cuda_driver), timed against plain pip.

    python bench/trains_matrix.py [--trains cu126,cu128,cu129,cu130,cu132,cu134] [--work DIR]

Per train:
- wheels: `cuwheel toolkit --for build --source wheels` in a new cache (cold), a second
  prefix with that cache (warm), the same prefix again (up to date), each against
  `pip install --target --no-deps` of the same wheels (cold: --no-cache-dir; warm: a filled
  pip cache). CUDA 12's nvcc wheel has no nvcc, so there the build set must be refused
  (exit 2 naming --source redist) and the runtime set is assembled instead.
- redist: a mirror made here (NVIDIA's host is not reachable): the component wheels of the
  same release repacked into NVIDIA's archive layout (<key>-linux-x86_64-<version>-archive/)
  with their sha256 and size in a redistrib_<release>.json of NVIDIA's format; assembled
  with `--source redist --base-url DIR`.
- use: nvcc -arch=sm_80 builds a kernel, `cuwheel inspect --json` reads the cubin's toolkit
  note (must be the nvcc component's version); CMake 3.25 configures and builds a project
  linking CUDA::cudart and CUDA::cuda_driver (found in the prefix's lib/stubs).
Prints a Markdown table; one run per figure (wall time of the whole command).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tarfile
import time
import zipfile
from pathlib import Path

from cuwheel.knowledge.toolkits import load_toolkits
from cuwheel.toolkit import resolve
from cuwheel.toolkit.cache import Cache

PY = sys.executable
KERNEL = """#include <cstdio>
__global__ void k(int *x) { x[threadIdx.x] += 1; }
int main() { int *d = nullptr; cudaMalloc(&d, 16); k<<<1, 4>>>(d); std::printf("built\\n"); }
"""
CMAKE = """cmake_minimum_required(VERSION 3.24)
project(probe LANGUAGES CXX CUDA)
find_package(CUDAToolkit REQUIRED)
add_executable(probe k.cu)
set_target_properties(probe PROPERTIES CUDA_ARCHITECTURES 80)
target_link_libraries(probe PRIVATE CUDA::cudart CUDA::cuda_driver)
file(WRITE ${CMAKE_BINARY_DIR}/found.txt
  "${CUDAToolkit_VERSION};${CUDAToolkit_NVCC_EXECUTABLE};${CUDA_cuda_driver_LIBRARY}")
"""


def no_cuda_env() -> dict[str, str]:
    drop = ("CUDA_HOME", "CUDA_PATH", "CUDACXX", "CUDAARCHS", "LD_LIBRARY_PATH")
    env = {k: v for k, v in os.environ.items() if k not in drop}
    keep = [d for d in env.get("PATH", "").split(os.pathsep)
            if d and "cuda" not in d.lower() and not (Path(d) / "nvcc").exists()]  # fmt: skip
    env["PATH"] = os.pathsep.join(keep)
    return env


def run(cmd: list[str], env: dict[str, str] | None = None, cwd: Path | None = None
        ) -> tuple[int, float, str, str]:  # fmt: skip
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env or no_cuda_env(), cwd=cwd)
    return r.returncode, time.perf_counter() - start, r.stdout, r.stderr


def cuwheel(*args: str) -> list[str]:
    return [PY, "-m", "cuwheel", "toolkit", "--no-progress", *args]


def env_of(printed: str) -> dict[str, str]:
    env = no_cuda_env()
    for line in printed.splitlines():
        k, _, v = line.partition("=")
        if k == "PATH":
            v = os.pathsep.join([v.split(os.pathsep)[0], env["PATH"]])
        elif k == "LD_LIBRARY_PATH":
            v = v.split(os.pathsep)[0]
        if k:
            env[k] = v
    return env


def use(prefix: Path, printed: str, work: Path) -> dict[str, str]:
    """nvcc builds a kernel and the cubin's toolkit note; CMake's FindCUDAToolkit."""
    out: dict[str, str] = {}
    env = env_of(printed)
    src = work / "k.cu"
    src.write_text(KERNEL)
    exe = work / "k"
    code, t, _, err = run([env["CUDACXX"], "-arch=sm_80", str(src), "-o", str(exe)], env)
    if code != 0:
        out["nvcc"] = f"FAILED: {err.strip().splitlines()[-1:]}"
        return out
    code, _, js, err = run([PY, "-m", "cuwheel", "inspect", str(exe), "--json"])
    doc = json.loads(js)
    notes = sorted({tk for s in doc["sources"] for b in s.get("binaries", [])
                    for tk in b.get("summary", {}).get("toolkits", [])})  # fmt: skip
    version = json.loads((prefix / "version.json").read_text())
    nvcc_v = next((v["version"] for k, v in version.items() if v.get("name") == "nvcc"), "?")
    out["nvcc"] = f"{t:.1f} s, cubin toolkit note {', '.join(notes) or 'none'}" + (
        "" if any(n == nvcc_v for n in notes) else f" (nvcc component {nvcc_v}: MISMATCH)")
    cm = work / "cmake"
    shutil.rmtree(cm, ignore_errors=True)
    cm.mkdir()
    (cm / "CMakeLists.txt").write_text(CMAKE)
    shutil.copy(src, cm / "k.cu")
    code, t1, o, e = run(["cmake", "-S", str(cm), "-B", str(cm / "b")], env)
    if code == 0:
        code, t2, o, e = run(["cmake", "--build", str(cm / "b")], env)
        t1 += t2
    if code != 0:
        out["cmake"] = f"FAILED: {(o + e).strip().splitlines()[-3:]}"
    else:
        found = (cm / "b" / "found.txt").read_text().split(";")
        out["cmake"] = f"{t1:.1f} s, CUDAToolkit {found[0]}, cuda_driver {found[2]}"
    return out


def repack(wheel: Path, top: str, out: Path) -> None:
    with zipfile.ZipFile(wheel) as zf, tarfile.open(out, "w:xz", preset=0) as tar:
        for info in zf.infolist():
            parts = info.filename.split("/")
            if info.is_dir() or len(parts) < 3 or parts[0] != "nvidia":
                continue
            if parts[2] == ".metadata" or parts[-1] == "__init__.py" or "__pycache__" in parts:
                continue
            ti = tarfile.TarInfo(f"{top}/{'/'.join(parts[2:])}")
            ti.size = info.file_size
            ti.mode = 0o755 if (info.external_attr >> 16) & 0o111 else 0o644
            with zf.open(info) as fh:
                tar.addfile(ti, fh)


def mirror(train: str, for_: str, work: Path, cache: Cache) -> tuple[Path, str]:
    """A redist mirror of the release's wheels; (directory, release)."""
    lock = resolve(train, "linux-x86_64", for_=for_, source="wheels", cache=cache)
    cat = load_toolkits()
    wheels = work / "wheels"
    wheels.mkdir(exist_ok=True)
    tags = [a for t in cat.platform("linux-x86_64").pip_platforms for a in ("--platform", t)]
    pins = [f"{p.package}=={p.version}" for p in lock.parts]
    subprocess.run([PY, "-m", "pip", "download", "-q", "--no-deps", "--only-binary=:all:",
                    *tags, "-d", str(wheels), *pins], check=True, capture_output=True)  # fmt: skip
    root = work / "mirror"
    doc: dict[str, object] = {"release_date": "2026-01-01", "release_label": lock.cuda,
                              "release_product": "cuda"}  # fmt: skip
    for p in lock.parts:
        key = cat.component(p.component).redist
        (whl,) = wheels.glob(f"{p.package.replace('-', '_')}-{p.version}-*.whl")
        top = f"{key}-linux-x86_64-{p.version}-archive"
        rel = f"{key}/linux-x86_64/{top}.tar.xz"
        (root / key / "linux-x86_64").mkdir(parents=True, exist_ok=True)
        repack(whl, top, root / rel)
        data = (root / rel).read_bytes()
        doc[key] = {"name": key, "license": "CUDA Toolkit", "version": p.version,
                    "linux-x86_64": {"relative_path": rel,
                                     "sha256": hashlib.sha256(data).hexdigest(),
                                     "md5": hashlib.md5(data).hexdigest(),
                                     "size": str(len(data))}}  # fmt: skip
    (root / f"redistrib_{lock.cuda}.json").write_text(json.dumps(doc, indent=4))
    return root, lock.cuda


def pip_times(pins: list[str], work: Path) -> tuple[float, float]:
    cat = load_toolkits()
    tags = [a for t in cat.platform("linux-x86_64").pip_platforms for a in ("--platform", t)]
    pip = [PY, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:", *tags]
    _, cold, _, _ = run([*pip, "--no-cache-dir", "--target", str(work / "t1"), *pins])
    env = {**no_cuda_env(), "PIP_CACHE_DIR": str(work / "pipcache")}
    run([*pip, "--target", str(work / "t0"), *pins], env)
    _, warm, _, _ = run([*pip, "--target", str(work / "t2"), *pins], env)
    return cold, warm


def one(train: str, work: Path) -> list[str]:
    rows = []
    work.mkdir(parents=True, exist_ok=True)
    cache = work / "cache"
    tk = cuwheel("--train", train, "--platform", "linux-x86_64", "--source", "wheels",
                 "--cache", str(cache))  # fmt: skip
    code, cold, out, err = run([*tk, "--for", "build", "--prefix", str(work / "w1")])
    for_ = "build"
    if code != 0:
        rows.append(f"| {train} | wheels, build set | refused (exit {code}): "
                    f"{err.strip().splitlines()[-1][16:]} |")  # fmt: skip
        for_ = "runtime"
        code, cold, out, err = run([*tk, "--for", "runtime", "--prefix", str(work / "w1")])
    if code != 0:
        rows.append(f"| {train} | wheels, {for_} | FAILED: {err.strip()} |")
        return rows
    release = json.loads((work / "w1" / "cuwheel-toolkit.lock").read_text())["cuda"]
    _, warm, _, _ = run([*tk, "--for", for_, "--prefix", str(work / "w2")])
    _, same, _, e3 = run([*tk, "--for", for_, "--prefix", str(work / "w2")])
    assert "up to date" in e3, e3
    _, verify, _, _ = run([*tk, "--for", for_, "--prefix", str(work / "w2"), "--verify"])
    lock = json.loads((work / "w1" / "cuwheel-toolkit.lock").read_text())
    pins = [f"{c['package']}=={c['version']}" for c in lock["components"]]
    pcold, pwarm = pip_times(pins, work)
    size = sum(f.stat().st_size for f in (cache / "toolkit" / "blobs").rglob("*") if f.is_file())
    rows.append(f"| {train} | wheels, {for_} set: CUDA {release}, {len(pins)} wheels "
                f"{size / 1e6:.0f} MB | cold {cold:.1f} s (pip {pcold:.1f} s, "
                f"{pcold / cold:.1f}x); warm {warm:.1f} s (pip {pwarm:.1f} s, "
                f"{pwarm / warm:.1f}x); "
                f"up to date {same:.2f} s; --verify {verify:.2f} s |")  # fmt: skip
    if for_ == "build":
        for k, v in use(work / "w1", out, work).items():
            rows.append(f"| {train} | wheels: {k} | {v} |")
    root, rel = mirror(train, for_, work, Cache.at(cache))
    rtk = cuwheel("--train", train, "--platform", "linux-x86_64", "--source", "redist",
                  "--base-url", str(root), "--cache", str(work / "rcache"),
                  "--for", for_)  # fmt: skip
    if rel != load_toolkits().train(train).latest:
        rtk[rtk.index(train)] = rel  # the catalog's newest is not on the index yet
    code, t, out, err = run([*rtk, "--prefix", str(work / "r1")])
    if code != 0:
        rows.append(f"| {train} | redist mirror, {for_} | FAILED: {err.strip()} |")
        return rows
    rows.append(f"| {train} | redist mirror, {for_} set: CUDA {rel} | {t:.1f} s |")
    if for_ == "build":
        for k, v in use(work / "r1", out, work).items():
            rows.append(f"| {train} | redist: {k} | {v} |")
    return rows


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--trains", default="cu126,cu128,cu129,cu130,cu132,cu134")
    ap.add_argument("--work", default="/tmp/cuwheel-trains")
    ap.add_argument("--keep", action="store_true", help="keep each train's files")
    args = ap.parse_args()
    print("| train | what | result |\n|---|---|---|", flush=True)
    for train in args.trains.split(","):
        work = Path(args.work) / train
        shutil.rmtree(work, ignore_errors=True)
        for row in one(train, work):
            print(row, flush=True)
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

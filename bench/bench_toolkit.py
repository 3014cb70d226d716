"""Cold and warm assembly of a train's build toolkit with `cuwheel toolkit --source wheels`,
against what users run today to get the same components without an installer:
`pip install --target DIR --no-deps` of the same NVIDIA wheels.

    python bench/bench_toolkit.py [--train cu130[,cu132,...]] [--runs 3]

cold: empty caches (cuwheel: a new --cache; pip: --no-cache-dir), a new prefix / target.
warm: the caches from a previous run, a new prefix / target.
up to date: the same prefix again (the train's newest release asked of the index, every
file's size / mtime / mode checked); --verify: the same, every file re-hashed.
(bench/trains_matrix.py runs every seed train once, CUDA 12's refusal and the redist path
included.)
Each figure is the median wall time of --runs runs of the whole command (interpreter start
included); the ratio is pip's time over cuwheel's.
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from cuwheel.knowledge.toolkits import load_toolkits
from cuwheel.toolkit import host_platform, resolve

CPU: dict[str, list[float]] = {}  # what -> CPU seconds (user + sys) of the command's processes


def timed(cmd: list[str], env_extra: dict[str, str] | None = None, what: str = "") -> float:
    import os
    import resource

    env = {**os.environ, **(env_extra or {})}
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    result = subprocess.run(cmd, capture_output=True, text=True, env=env)
    elapsed = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    CPU.setdefault(what, []).append(cpu)
    if result.returncode != 0:
        sys.exit(f"failed: {' '.join(cmd)}\n{result.stderr[-2000:]}")
    return elapsed


def bench(train: str, runs: int) -> None:
    cat = load_toolkits()
    platform = host_platform()
    with tempfile.TemporaryDirectory(prefix="bench-toolkit-") as tmp:
        from cuwheel.toolkit import Cache

        lock = resolve(train, platform, for_="build", source="wheels", cache=Cache.at(tmp))
    pins = [f"{p.package}=={p.version}" for p in lock.parts]
    tags = [t for p in cat.platform(platform).pip_platforms for t in ("--platform", p)]
    cuwheel = [sys.executable, "-m", "cuwheel", "toolkit", "--train", train, "--for",
               "build", "--source", "wheels", "--platform", platform, "--no-progress"]  # fmt: skip
    pip = [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--only-binary=:all:",
           *tags]  # fmt: skip
    rows: dict[str, list[float]] = {k: [] for k in ("cw_cold", "cw_warm", "cw_same", "cw_verify",
                                                     "pip_cold", "pip_warm")}  # fmt: skip
    for _ in range(runs):
        with tempfile.TemporaryDirectory(prefix="bench-toolkit-") as tmp:
            t = Path(tmp)
            cache = ["--cache", str(t / "cwcache")]
            rows["cw_cold"].append(
                timed([*cuwheel, *cache, "--prefix", str(t / "p1")], what="cw_cold")
            )
            rows["cw_warm"].append(
                timed([*cuwheel, *cache, "--prefix", str(t / "p2")], what="cw_warm")
            )
            rows["cw_same"].append(
                timed([*cuwheel, *cache, "--prefix", str(t / "p2")], what="cw_same")
            )
            rows["cw_verify"].append(
                timed([*cuwheel, *cache, "--prefix", str(t / "p2"), "--verify"], what="cw_verify")
            )
            rows["pip_cold"].append(
                timed([*pip, "--no-cache-dir", "--target", str(t / "t1"), *pins], what="pip_cold")
            )
            pip_cache = {"PIP_CACHE_DIR": str(t / "pipcache")}
            timed([*pip, "--target", str(t / "t0"), *pins], pip_cache)  # fills pip's cache
            rows["pip_warm"].append(
                timed([*pip, "--target", str(t / "t2"), *pins], pip_cache, what="pip_warm")
            )
            shutil.rmtree(t, ignore_errors=True)
    m = {k: statistics.median(v) for k, v in rows.items()}
    c = {k: statistics.median(CPU[k][-runs:]) for k in rows}
    print(f"{train} = CUDA {lock.cuda} --for build ({', '.join(pins)}) on {platform}, "
          f"median of {runs} runs")  # fmt: skip
    print("wall time (CPU time: user + sys of the command's processes)")
    print("| what | pip install --target | cuwheel toolkit --source wheels | ratio (wall) |")
    print("|---|---|---|---|")
    for label, key in (("cold (empty caches)", "cold"), ("warm cache, new prefix", "warm")):
        p_, w_ = f"pip_{key}", f"cw_{key}"
        print(f"| {label} | {m[p_]:.1f} s ({c[p_]:.1f}) | {m[w_]:.1f} s ({c[w_]:.1f}) | "
              f"{m[p_] / m[w_]:.1f}x |")
    print(f"| same prefix again | | {m['cw_same']:.2f} s ({c['cw_same']:.2f}) up to date | |")
    print(f"| same prefix, --verify | | {m['cw_verify']:.2f} s ({c['cw_verify']:.2f}) "
          "every file re-hashed | |")
    print(flush=True)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--train", default="cu130", help="one train or several, comma-separated")
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    for train in args.train.split(","):
        bench(train, args.runs)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

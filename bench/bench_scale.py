#!/usr/bin/env python3
"""Benchmark cuwheel on many wheels at once (issue: scale).

Prints, in one run:
  1. the many-wheel corpus: `cuwheel inspect --json --workers N` on every wheel of the
     corpus in one call, against the floor of inflating every binary member once with
     isal on one thread divided by the cores (target <= 1.2x at all cores), and the
     scaling from 1 to N workers; peak RSS summed over the processes;
  2. `cuwheel scan` on the same corpus (records with the audit-mode check, and with
     --no-check), and a re-run served by the cache;
  3. the Dask engine's LocalCluster run against the local run of `cuwheel scan`, with the
     same number of workers, and whether their records are equal byte for byte (sorted);
  4. start-up: `cuwheel inspect tests/data/bin/sm80.so` against bare `python -c pass`
     plus the work itself (target <= 2x).

Usage: python bench/bench_scale.py CORPUS_DIR [--workers 1,2,4,16] [--repeat N]
           [--no-dask] [--no-scan]
CORPUS_DIR holds the wheels (*.whl); without it the corpus parts are skipped.
"""

from __future__ import annotations

import argparse
import glob
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, HERE)
from bench_inspect import binary_members, isal_inflate, run_with_peak_rss  # noqa: E402

SMALL = os.path.join(ROOT, "tests", "data", "bin", "sm80.so")


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def children_cpu() -> float:
    """User + system CPU seconds of the waited-for children so far."""
    import resource

    r = resource.getrusage(resource.RUSAGE_CHILDREN)
    return r.ru_utime + r.ru_stime


def load() -> str:
    try:
        a, b, c = os.getloadavg()
        return f"load average {a:.1f} {b:.1f} {c:.1f}"
    except OSError:
        return "load average unknown"


def timed(cmd: list[str], **kw: object) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   **kw)  # type: ignore[call-overload]
    return time.perf_counter() - t


def best(cmd: list[str], n: int) -> float:
    return min(timed(cmd) for _ in range(n))


def worker_list(text: str | None, n: int) -> list[int]:
    if text:
        return sorted({max(1, int(x)) for x in text.split(",") if x.strip()})
    out, w = [], 1
    while w < n:
        out.append(w)
        w *= 2
    return [*out, n]


def floor(wheels: list[str], repeat: int) -> tuple[float, float, int, int]:
    """Inflating every binary member once with isal on one thread: (total seconds, the
    longest single member's seconds, members, bytes).  Deflate inflates front to back
    only, so no number of cores reads the corpus faster than its longest member."""
    members = {w: binary_members(w) for w in wheels}
    count = sum(len(m) for m in members.values())
    size = sum(i.file_size for m in members.values() for i in m)
    best_total, best_longest = float("inf"), float("inf")
    for _ in range(repeat):
        times = [isal_inflate(w, [m]) for w in wheels for m in members[w]]
        best_total = min(best_total, sum(times))
        best_longest = min(best_longest, max(times, default=0.0))
    return best_total, best_longest, count, size


def startup(repeat: int) -> None:
    py = sys.executable
    bare = best([py, "-c", "pass"], repeat * 5)
    cli = best([py, "-m", "cuwheel", "inspect", SMALL], repeat * 5)
    cli_json = best([py, "-m", "cuwheel", "inspect", "--json", SMALL], repeat * 5)
    code = ("import time, cuwheel\n"
            "from cuwheel.render.inspect_text import render_text\n"
            f"render_text(cuwheel.inspect({SMALL!r}, workers=1))  # imports, catalog\n"
            "t = time.perf_counter()\n"
            f"render_text(cuwheel.inspect({SMALL!r}, workers=1))\n"
            "print(time.perf_counter() - t)\n")
    work = min(float(subprocess.run([py, "-c", code], capture_output=True, text=True,
                                    check=True).stdout) for _ in range(repeat * 3))
    print("\n4. start-up on one small file (tests/data/bin/sm80.so)")
    print(f"   python -c pass                     : {bare:7.3f} s")
    print(f"   the work itself (inspect + render) : {work:7.3f} s")
    print(f"   cuwheel inspect FILE               : {cli:7.3f} s   "
          f"{cli / (bare + work):4.2f}x bare + work (target <= 2x)")
    print(f"   cuwheel inspect --json FILE        : {cli_json:7.3f} s   "
          f"{cli_json / (bare + work):4.2f}x")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", help="directory of wheels")
    ap.add_argument("--workers", help="comma-separated worker counts (default 1, 2, 4 .. CPUs)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask comparison")
    ap.add_argument("--no-scan", action="store_true", help="skip the cuwheel scan runs")
    args = ap.parse_args()
    n = cpus()
    py = sys.executable
    print(f"cpus: {n}; python {sys.version.split()[0]}; {load()} (other work on the "
          "machine inflates every wall time below)")
    wheels = sorted(glob.glob(os.path.join(args.corpus, "*.whl"))) if args.corpus else []
    if not wheels:
        print(f"no corpus ({args.corpus or 'none given'}: no *.whl): corpus parts skipped")
        startup(args.repeat)
        return
    counts = worker_list(args.workers, n)
    total = sum(os.path.getsize(w) for w in wheels)
    print(f"corpus: {len(wheels)} wheels, {total / 1e9:.2f} GB in {args.corpus}")
    for w in wheels:  # warm the page cache for everyone
        with open(w, "rb") as f:
            while f.read(1 << 24):
                pass
    t_floor, t_longest, members, size = floor(wheels, args.repeat)
    print(f"\n1. many-wheel corpus: `cuwheel inspect --json --workers N` on all {len(wheels)}")
    print(f"   isal inflate of {members} binary members ({size / 1e9:.2f} GB), one thread: "
          f"{t_floor:.2f} s; floor / {n} cores = {t_floor / n:.2f} s; the longest member "
          f"alone: {t_longest:.2f} s (no core count reads the corpus faster)")
    inspect = [py, "-m", "cuwheel", "inspect", "--json"]
    base = None
    for w in counts:
        runs = []
        for _ in range(args.repeat):
            before = children_cpu()
            runs.append((*run_with_peak_rss([*inspect, "--workers", str(w), *wheels]),
                         children_cpu() - before))
        t = min(r[0] for r in runs)
        rss = max(r[1] for r in runs)
        cpu = min(r[2] for r in runs)
        if base is None:
            base = t
        floor_w = t_floor / min(w, n)
        bound = max(floor_w, t_longest)
        print(f"   --workers {w:<3}: {t:7.2f} s   {t / floor_w:5.2f}x floor/{min(w, n)} "
              f"({t / bound:4.2f}x max(floor/{min(w, n)}, longest member))   "
              f"speed-up {base / t:4.2f}x over {counts[0]}   peak RSS {rss:5.0f} MB "
              f"({rss / max(1, min(w, n)):4.0f} MB per worker)   CPU {cpu:6.2f} s "
              f"({cpu / t_floor:4.2f}x the floor's)"
              + ("   (target <= 1.2x)" if w == n else ""))
    if not args.no_scan:
        with tempfile.TemporaryDirectory() as tmp:
            scan = [py, "-m", "cuwheel", "scan", "--workers", str(n), args.corpus]
            out = os.path.join(tmp, "local.jsonl")
            t_nc = best([*scan, "--no-cache", "--no-check", "-o", out], args.repeat)
            t_full = best([*scan, "--no-cache", "-o", out], args.repeat)
            cache = os.path.join(tmp, "cache")
            t_first = timed([*scan, "--cache", cache, "-o", os.path.join(tmp, "c.jsonl")])
            t_again = timed([*scan, "--cache", cache, "-o", os.path.join(tmp, "c.jsonl")])
            print(f"\n2. `cuwheel scan --workers {n}` on the corpus")
            print(f"   records without the check (--no-check) : {t_nc:7.2f} s   "
                  f"{t_nc / (t_floor / n):5.2f}x floor/{n} (sha256 of every wheel included)")
            print(f"   records with audit findings           : {t_full:7.2f} s   "
                  f"{t_full / (t_floor / n):5.2f}x floor/{n}")
            print(f"   first run filling a cache             : {t_first:7.2f} s")
            print(f"   re-run, everything from the cache      : {t_again:7.2f} s")
            if not args.no_dask:
                try:
                    import distributed  # noqa: F401
                except ImportError:
                    print("\n3. Dask: not installed (pip install 'cuwheel[dask]'): skipped")
                else:
                    dout = os.path.join(tmp, "dask.jsonl")
                    t_dask = best([*scan, "--no-cache", "--engine", "dask", "-o", dout],
                                  args.repeat)
                    with open(out, encoding="utf-8") as f:
                        local = sorted(f)
                    with open(dout, encoding="utf-8") as f:
                        dask = sorted(f)
                    same = "equal" if local == dask else "DIFFERENT"
                    print(f"\n3. Dask LocalCluster ({n} worker processes) vs the local engine"
                          f" ({n} workers), records with audit findings")
                    print(f"   local : {t_full:7.2f} s")
                    print(f"   dask  : {t_dask:7.2f} s   {t_dask / t_full:4.2f}x local; records "
                          f"{same} byte for byte after sorting ({len(local)} records)")
    startup(args.repeat)
    print(f"\nat the end: {load()}")


if __name__ == "__main__":
    main()

"""What the trust boundaries cost (docs/toolkit.md, docs/scan.md), against what users run
today for the same job:

- the bounded JSON loader on a PEP 691 project page of --files files, against plain
  ``json.loads`` (CPU seconds, median of --runs);
- the cache blob check (sha256 of --mib MiB on every use), against ``sha256sum``;
- the ownership digest of a toolkit-sized tree of --tree files, against ``find -ls``
  (one stat per entry as well).

    python bench/bench_trust.py [--files 100000] [--mib 512] [--tree 20000] [--runs 3]
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

from cuwheel._json import load_json
from cuwheel.toolkit.cache import Cache
from cuwheel.toolkit.lock import tree_digest


def median(fn: Callable[[], object], runs: int, clock: Callable[[], float]) -> float:
    times = []
    for _ in range(runs):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    return statistics.median(times)


def wall(cmd: list[str]) -> Callable[[], object]:
    return lambda: subprocess.run(cmd, check=True, capture_output=True)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--files", type=int, default=100_000)
    ap.add_argument("--mib", type=int, default=512)
    ap.add_argument("--tree", type=int, default=20_000)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rows = []

    page = json.dumps({"meta": {"api-version": "1.1"}, "name": "torch", "files": [
        {"filename": f"torch-2.{i}-cp311-cp311-manylinux_2_28_x86_64.whl",
         "url": f"https://files.pythonhosted.org/packages/{i:08x}/torch.whl",
         "hashes": {"sha256": "0" * 64}, "size": 800_000_000 + i, "yanked": False,
         "requires-python": ">=3.9", "core-metadata": {"sha256": "1" * 64}}
        for i in range(a.files)]})  # fmt: skip
    base = median(lambda: json.loads(page), a.runs, time.process_time)
    ours = median(lambda: load_json(page), a.runs, time.process_time)
    rows.append((f"PEP 691 page, {a.files} files ({len(page) >> 20} MiB), CPU",
                 "json.loads", base, "load_json", ours))

    with tempfile.TemporaryDirectory() as d:
        data = os.urandom(1 << 20) * a.mib
        sha = hashlib.sha256(data).hexdigest()
        cache = Cache(Path(d) / "toolkit")
        blob = cache.blob(sha)
        blob.parent.mkdir(parents=True)
        blob.write_bytes(data)
        del data
        base = median(wall(["sha256sum", str(blob)]), a.runs, time.perf_counter)
        ours = median(lambda: cache.verified_blob(sha), a.runs, time.perf_counter)
        rows.append((f"blob check, {a.mib} MiB, wall", "sha256sum", base,
                     "Cache.verified_blob", ours))

        tree = Path(d) / "tree"
        for i in range(a.tree):
            sub = tree / f"d{i % 200}"
            sub.mkdir(parents=True, exist_ok=True)
            (sub / f"f{i}").write_bytes(b"x" * (i % 97))
        base = median(wall(["find", str(tree), "-ls"]), a.runs, time.perf_counter)
        ours = median(lambda: tree_digest(tree), a.runs, time.perf_counter)
        rows.append((f"ownership digest, {a.tree} files, wall", "find -ls", base,
                     "tree_digest", ours))

    print(f"median of {a.runs} runs")
    print("| what | today | s | cuwheel | s | ratio (cuwheel / today) |")
    print("|---|---|---|---|---|---|")
    for what, tool, t_tool, ours_name, t_ours in rows:
        print(f"| {what} | {tool} | {t_tool:.3f} | {ours_name} | {t_ours:.3f} | "
              f"{t_ours / t_tool:.2f}x |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

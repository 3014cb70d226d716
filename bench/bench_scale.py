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
     plus the work itself (target <= 2x);
  5. streaming: `cuwheel scan --index URL --project '*'` against a local index (a
     directory of wheels served by an http.server thread on 127.0.0.1, PEP 691 with
     sha256s and sizes: offline), its temporary disk sampled every few milliseconds:
     peak disk against the in-flight bound (N wheels x the largest) and against what a
     scan that downloads everything first holds (the whole index), records per second;
  6. the summary of synthetic records (tests/scanrecords.py, the shape of real ones):
     peak RSS, CPU, and the HTML pages, for 20k records (target <= 200 MB) and more.

Usage: python bench/bench_scale.py CORPUS_DIR [--workers 1,2,4,16] [--repeat N]
           [--no-dask] [--no-scan] [--index-dir DIR] [--max-in-flight N,M]
           [--summary-records 20000,100000] [--only-streaming]
CORPUS_DIR holds the wheels (*.whl); without it the corpus parts are skipped.
--index-dir (default: CORPUS_DIR) is the directory served as the local index for 5.
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


# -- 5. streaming ------------------------------------------------------------------------
def serve_index(directory: str) -> tuple[str, object, dict[str, int]]:
    """A PEP 691 simple index of the wheels in ``directory`` on 127.0.0.1 (a thread):
    (index URL, server, {file name: size})."""
    import hashlib
    import json
    import re
    import threading
    from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

    files: dict[str, dict[str, object]] = {}
    projects: dict[str, list[str]] = {}
    for path in sorted(glob.glob(os.path.join(directory, "*.whl"))):
        name = os.path.basename(path)
        h = hashlib.sha256()
        with open(path, "rb") as f:
            while block := f.read(1 << 24):
                h.update(block)
        files[name] = {"path": path, "size": os.path.getsize(path), "sha256": h.hexdigest()}
        project = re.sub(r"[-_.]+", "-", name.split("-", 1)[0]).lower()
        projects.setdefault(project, []).append(name)
    kind = "application/vnd.pypi.simple.v1+json"

    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *a: object) -> None:
            pass

        def _send(self, body: bytes, ctype: str) -> None:
            self.send_response(200)
            self.send_header("Content-Type", ctype)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            meta = {"api-version": "1.1"}
            if self.path == "/simple/":
                doc: dict[str, object] = {"meta": meta,
                                          "projects": [{"name": p} for p in projects]}
                return self._send(json.dumps(doc).encode(), kind)
            m = re.fullmatch(r"/simple/([^/]+)/", self.path)
            if m and m.group(1) in projects:
                doc = {"meta": meta, "name": m.group(1), "files": [
                    {"filename": n, "url": f"/files/{n}", "size": files[n]["size"],
                     "hashes": {"sha256": files[n]["sha256"]}}
                    for n in projects[m.group(1)]]}
                return self._send(json.dumps(doc).encode(), kind)
            name = self.path[len("/files/"):] if self.path.startswith("/files/") else ""
            if name not in files:
                return self.send_error(404)
            self.send_response(200)
            self.send_header("Content-Length", str(files[name]["size"]))
            self.end_headers()
            with open(str(files[name]["path"]), "rb") as f:
                while block := f.read(1 << 20):
                    self.wfile.write(block)
            return None

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    sizes = {n: int(str(f["size"])) for n, f in files.items()}
    return f"http://127.0.0.1:{server.server_address[1]}/simple/", server, sizes


def sampled_run(cmd: list[str], tmp: str) -> tuple[float, int, int, int]:
    """Run ``cmd`` with TMPDIR=tmp, sampling the bytes and wheel files under tmp: (wall
    seconds, peak bytes, peak wheel files, samples)."""
    import threading

    peak = [0, 0, 0]
    done = threading.Event()

    def sample() -> None:
        while not done.is_set():
            size = files = 0
            for dirpath, _, names in os.walk(tmp):
                for n in names:
                    try:
                        size += os.path.getsize(os.path.join(dirpath, n))
                    except OSError:
                        continue
                    files += n.endswith(".whl")
            peak[0] = max(peak[0], size)
            peak[1] = max(peak[1], files)
            peak[2] += 1
            time.sleep(0.002)

    t = threading.Thread(target=sample, daemon=True)
    t.start()
    start = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=False,
                   env={**os.environ, "TMPDIR": tmp})
    wall = time.perf_counter() - start
    done.set()
    t.join()
    return wall, peak[0], peak[1], peak[2]


def streaming(directory: str, n: int, bounds: list[int] | None) -> None:
    url, server, sizes = serve_index(directory)
    total, largest = sum(sizes.values()), max(sizes.values(), default=0)
    print(f"\n5. streaming index scan: `cuwheel scan --index URL --project '*' --workers {n} "
          f"--no-cache` on a local index of {len(sizes)} wheels, {total / 1e6:.0f} MB "
          f"(largest {largest / 1e6:.0f} MB) from {directory}")
    print(f"   a scan that downloads everything first holds the whole index: "
          f"{total / 1e6:.0f} MB")
    py = sys.executable
    for bound in bounds or [2 * n, 2]:
        with tempfile.TemporaryDirectory() as tmp:
            out = os.path.join(tmp, "r.jsonl")
            td = os.path.join(tmp, "t")
            os.mkdir(td)
            cmd = [py, "-m", "cuwheel", "scan", "--index", url, "--project", "*",
                   "--workers", str(n), "--no-cache", "--max-in-flight", str(bound),
                   "-o", out]
            wall, peak, files, samples = sampled_run(cmd, td)
            with open(out, "rb") as f:
                records = sum(1 for _ in f)
            left = sum(len(fs) for _, _, fs in os.walk(td))
            cap = min(bound, len(sizes))
            limit = sum(sorted(sizes.values(), reverse=True)[:cap])
            print(f"   --max-in-flight {bound:<3}: {records} records in {wall:6.2f} s "
                  f"({records / wall:5.2f} records/s, {total / 1e6 / wall:6.1f} MB/s); peak "
                  f"temp disk {peak / 1e6:6.1f} MB in {files} wheel(s) (bound: {cap} wheels, "
                  f"the {cap} largest {limit / 1e6:.1f} MB; {peak / max(1, limit):4.2f}x); "
                  f"{peak / max(1, total):5.1%} of the index; {samples} samples; "
                  f"{left} files left behind")
    server.shutdown()  # type: ignore[attr-defined]


# -- 6. the summary ---------------------------------------------------------------------------
_SUMMARY_CHILD = r"""
import json, resource, sys, time
from cuwheel.scan.summary import Summary, iter_records, write
t = time.process_time()
with Summary() as s:
    s.add_all(iter_records([sys.argv[1]], []))
    pages = []
    for fmt in ("text", "json", "html"):
        path = sys.argv[2] + "." + fmt
        with open(path, "w", encoding="utf-8") as f:
            pages += write(s, fmt, f, path=path)
# VmHWM: this process's own peak since exec (ru_maxrss keeps the parent's peak at fork)
try:
    hwm = [int(l.split()[1]) * 1024 for l in open("/proc/self/status")
           if l.startswith("VmHWM:")][0]
except (OSError, IndexError):
    hwm = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
print(json.dumps({"rss": hwm,
                  "cpu": time.process_time() - t, "pages": pages}))
"""


def summary(counts: list[int]) -> None:
    import json

    py = sys.executable
    env = {**os.environ, "PYTHONPATH": os.path.join(ROOT, "src")}
    print("\n6. the summary (text, JSON and paged HTML) of synthetic records "
          "(tests/scanrecords.py)")
    for count in counts:
        with tempfile.TemporaryDirectory() as tmp:
            recs = os.path.join(tmp, "r.jsonl")
            subprocess.run([py, os.path.join(ROOT, "tests", "scanrecords.py"), recs,
                            str(count)], env=env, check=True, capture_output=True)
            res = subprocess.run([py, "-c", _SUMMARY_CHILD, recs, os.path.join(tmp, "s")],
                                 env=env, check=True, capture_output=True, text=True)
            got = json.loads(res.stdout)
            pages = [os.path.getsize(p) for p in got["pages"]]
            index = os.path.getsize(os.path.join(tmp, "s.html"))
            js = os.path.getsize(os.path.join(tmp, "s.json"))
            print(f"   {count:>7} records ({os.path.getsize(recs) / 1e6:5.0f} MB): peak RSS "
                  f"{got['rss'] / 2**20:5.0f} MB"
                  + ("  (target <= 200 MB)" if count == 20_000 else "")
                  + f"; CPU {got['cpu']:5.1f} s; HTML: index {index / 1e3:.0f} kB + "
                  f"{len(pages)} pages of at most {max(pages, default=0) / 1e6:.1f} MB; "
                  f"JSON {js / 1e6:.0f} MB")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("corpus", nargs="?", help="directory of wheels")
    ap.add_argument("--workers", help="comma-separated worker counts (default 1, 2, 4 .. CPUs)")
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--no-dask", action="store_true", help="skip the Dask comparison")
    ap.add_argument("--no-scan", action="store_true", help="skip the cuwheel scan runs")
    ap.add_argument("--index-dir", help="wheels served as a local index for the streaming "
                    "scan (default: CORPUS_DIR)")
    ap.add_argument("--max-in-flight", help="comma-separated bounds for the streaming scan "
                    "(default: twice the CPUs, and 2)")
    ap.add_argument("--summary-records", default="20000",
                    help="comma-separated record counts for the summary (default 20000)")
    ap.add_argument("--only-streaming", action="store_true",
                    help="only parts 5 and 6 (streaming and the summary)")
    args = ap.parse_args()
    n = cpus()
    py = sys.executable
    print(f"cpus: {n}; python {sys.version.split()[0]}; {load()} (other work on the "
          "machine inflates every wall time below)")
    if args.only_streaming:
        streaming_parts(args, n)
        print(f"\nat the end: {load()}")
        return
    wheels = sorted(glob.glob(os.path.join(args.corpus, "*.whl"))) if args.corpus else []
    if not wheels:
        print(f"no corpus ({args.corpus or 'none given'}: no *.whl): corpus parts skipped")
        startup(args.repeat)
        streaming_parts(args, n)
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
    streaming_parts(args, n)
    print(f"\nat the end: {load()}")


def streaming_parts(args: argparse.Namespace, n: int) -> None:
    directory = args.index_dir or args.corpus
    if directory and glob.glob(os.path.join(directory, "*.whl")):
        bounds = ([max(1, int(x)) for x in args.max_in_flight.split(",") if x.strip()]
                  if args.max_in_flight else None)
        streaming(directory, n, bounds)
    else:
        print("\n5. streaming index scan: no --index-dir or corpus of *.whl: skipped")
    counts = [int(x) for x in args.summary_records.split(",") if x.strip()]
    if counts:
        summary(counts)


if __name__ == "__main__":
    main()

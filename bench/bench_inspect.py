#!/usr/bin/env python3
"""Benchmark ``cuwheel inspect`` against the cuobjdump pipeline on the torch CUDA wheel.

Prints, in one run:
  1. cuobjdump --list-elf --list-ptx on an extracted libtorch_cuda.so vs cuwheel on it
     (target: cuwheel >= 200x faster);
  2. unzip + cuobjdump on every binary of the wheel vs `cuwheel inspect WHEEL`
     (target >= 30x faster), and cuwheel vs merely inflating the wheel's binary members
     once with isal (target <= 1.2x);
  3. peak RSS of `cuwheel inspect WHEEL` (target <= 250 MB), summed over its processes;
  4. many wheels (``--many``: wheels or directories of them) in one `cuwheel inspect`.

In 2 and 4 cuwheel is set against the isal inflate of the same binary members (one
thread) twice: by CPU seconds (user + system of cuwheel and every worker it started,
from getrusage; interpreter start-up included), which a loaded machine does not
stretch, and by wall time against the inflate's wall time divided by the CPUs this
process may use.  Target for both: <= 1.2x.

Usage: python bench/bench_inspect.py [--wheel PATH] [--repeat N] [--quick]
                                     [--many PATH ...] [--many-only]
The wheel defaults to `pip download --no-deps torch==2.14.1` into bench/out/.
cuobjdump comes from the PyPI wheel nvidia-cuda-cuobjdump (or PATH).
"""

from __future__ import annotations

import argparse
import glob
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
MAGICS = (b"\x7fELF", b"MZ", b"!<arch>\n", b"\x50\xed\x55\xba")


def find_cuobjdump() -> str:
    sys.path.insert(0, os.path.join(ROOT, "tests"))
    from cuobjdump_oracle import find_cuobjdump as find

    path = find()
    if not path:
        sys.exit("cuobjdump not found: pip install nvidia-cuda-cuobjdump")
    return path


def get_wheel(path: str | None) -> str:
    if path:
        return path
    out = os.path.join(HERE, "out")
    found = glob.glob(os.path.join(out, "torch-2.14.1-*.whl"))
    if not found:
        subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                        "torch==2.14.1", "-d", out], check=True)
        found = glob.glob(os.path.join(out, "torch-2.14.1-*.whl"))
    return found[0]


def timed(cmd: list[str], **kw: object) -> float:
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, **kw)  # type: ignore[call-overload]
    return time.perf_counter() - t


def best(f, n: int) -> float:  # type: ignore[no-untyped-def]
    return min(f() for _ in range(n))


def tree_rss_kb(pid: int) -> int:
    """VmRSS of a process and all its descendants (Linux /proc)."""
    total, todo = 0, [pid]
    while todo:
        p = todo.pop()
        try:
            with open(f"/proc/{p}/status") as f:
                for line in f:
                    if line.startswith("VmRSS:"):
                        total += int(line.split()[1])
            for task in os.listdir(f"/proc/{p}/task"):
                with open(f"/proc/{p}/task/{task}/children") as f:
                    todo += [int(c) for c in f.read().split()]
        except (FileNotFoundError, ProcessLookupError, ValueError):
            pass
    return total


def run_with_peak_rss(cmd: list[str]) -> tuple[float, float]:
    """Wall time and peak summed RSS (MB) of a command and its children."""
    peak = 0
    t = time.perf_counter()
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    stop = threading.Event()

    def sample() -> None:
        nonlocal peak
        while not stop.is_set():
            peak = max(peak, tree_rss_kb(proc.pid))
            time.sleep(0.005)

    th = threading.Thread(target=sample)
    th.start()
    proc.wait()
    wall = time.perf_counter() - t
    stop.set()
    th.join()
    return wall, peak / 1024


def binary_members(wheel: str) -> list[zipfile.ZipInfo]:
    out = []
    with zipfile.ZipFile(wheel) as z:
        for info in z.infolist():
            if info.is_dir() or info.file_size < 8:
                continue
            with z.open(info) as f:
                head = f.read(8)
            if head.startswith(MAGICS):
                out.append(info)
    return out


def cpu_run(cmd: list[str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of a command and of every process it
    waited for (cuwheel's workers)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def isal_floor(wheels: list[str], repeat: int) -> tuple[float, float, int]:
    """Best wall and CPU seconds of inflating every binary member of ``wheels`` once with
    isal in this process, and how many members that is."""
    members = [(w, binary_members(w)) for w in wheels]
    walls, cpus = [], []
    for _ in range(repeat):
        t, c = time.perf_counter(), time.process_time()
        for w, ms in members:
            isal_inflate(w, ms)
        walls.append(time.perf_counter() - t)
        cpus.append(time.process_time() - c)
    return min(walls), min(cpus), sum(len(ms) for _, ms in members)


def cpus() -> int:
    try:
        return len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return os.cpu_count() or 1


def against_floor(label: str, cmd: list[str], floor_wall: float, floor_cpu: float,
                  repeat: int) -> None:
    """One line: cuwheel's best wall and CPU time, and both ratios to the floor."""
    runs = [cpu_run(cmd) for _ in range(repeat)]
    wall = min(r[0] for r in runs)
    cpu = min(r[1] for r in runs)
    n = cpus()
    print(f"   {label:<32}: wall {wall:7.2f} s, CPU {cpu:7.2f} s   CPU/inflate CPU "
          f"{cpu / floor_cpu:5.2f}x   wall/(inflate wall / {n} CPUs) "
          f"{wall / (floor_wall / n):5.2f}x")


def expand_wheels(paths: list[str]) -> list[str]:
    out = []
    for p in paths:
        if os.path.isdir(p):
            out += sorted(glob.glob(os.path.join(p, "*.whl")))
        else:
            out.append(p)
    return out


def many_wheels(paths: list[str], repeat: int) -> None:
    wheels = expand_wheels(paths)
    floor_wall, floor_cpu, n = isal_floor(wheels, repeat)
    size = sum(os.path.getsize(w) for w in wheels) / 1e6
    print(f"\n4. many wheels: {len(wheels)} wheels ({size:.0f} MB), {n} binary members")
    for w in wheels:
        print(f"   - {os.path.basename(w)}")
    print(f"   isal inflate of binary members  : wall {floor_wall:7.2f} s, CPU "
          f"{floor_cpu:7.2f} s (one thread)")
    cli = [sys.executable, "-m", "cuwheel", "inspect", "--json"]
    against_floor("cuwheel inspect WHEELS (CLI)", [*cli, *wheels], floor_wall, floor_cpu,
                  repeat)
    against_floor("cuwheel with --workers 1", [*cli, "--workers", "1", *wheels], floor_wall,
                  floor_cpu, repeat)


def isal_inflate(wheel: str, members: list[zipfile.ZipInfo]) -> float:
    from isal import isal_zlib

    t = time.perf_counter()
    with open(wheel, "rb") as f:
        fd = f.fileno()
        for info in members:
            head = os.pread(fd, 30, info.header_offset)
            start = info.header_offset + 30 + int.from_bytes(head[26:28], "little") + \
                int.from_bytes(head[28:30], "little")
            d = isal_zlib.decompressobj(-15)
            left, pos = info.compress_size, start
            while left:
                chunk = os.pread(fd, min(1 << 20, left), pos)
                pos += len(chunk)
                left -= len(chunk)
                d.decompress(chunk)
    return time.perf_counter() - t


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--wheel")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--quick", action="store_true", help="skip the slow whole-wheel cuobjdump")
    ap.add_argument("--many", nargs="+", default=[], metavar="PATH",
                    help="wheels, or directories of wheels, read together (section 4)")
    ap.add_argument("--many-only", action="store_true", help="only section 4")
    args = ap.parse_args()
    if args.many_only:
        if not args.many:
            ap.error("--many-only needs --many")
        many_wheels(args.many, args.repeat)
        return
    cuobjdump = find_cuobjdump()
    wheel = get_wheel(args.wheel)
    cli = [sys.executable, "-m", "cuwheel", "inspect", "--json"]
    print(f"wheel: {os.path.basename(wheel)} ({os.path.getsize(wheel) / 1e6:.0f} MB)")
    print(f"cuobjdump: {cuobjdump}; cpus: {os.cpu_count()}")

    import cuwheel

    with tempfile.TemporaryDirectory() as tmp:
        with zipfile.ZipFile(wheel) as z:
            lib = z.extract("torch/lib/libtorch_cuda.so", tmp)
        # warm the page cache for everyone
        with open(lib, "rb") as f:
            while f.read(1 << 24):
                pass
        t_cuobj = timed([cuobjdump, "--list-elf", "--list-ptx", lib])
        t_api = best(lambda: _api(cuwheel, lib), args.repeat)
        t_cli = best(lambda: timed([*cli, lib]), args.repeat)
        print("\n1. libtorch_cuda.so (%.0f MB), extracted" % (os.path.getsize(lib) / 1e6))
        print(f"   cuobjdump --list-elf --list-ptx : {t_cuobj:8.3f} s")
        print(f"   cuwheel.inspect() (library)     : {t_api:8.3f} s   ratio {t_cuobj / t_api:6.0f}x"
              "  (target >= 200x)")
        print(f"   cuwheel inspect --json (CLI)    : {t_cli:8.3f} s   ratio {t_cuobj / t_cli:6.0f}x"
              "  (includes interpreter start-up)")

    members = binary_members(wheel)
    t_isal = best(lambda: isal_inflate(wheel, members), args.repeat)
    runs = [run_with_peak_rss([*cli, wheel]) for _ in range(args.repeat)]
    t_wheel = min(r[0] for r in runs)
    rss = max(r[1] for r in runs)
    t_w1 = best(lambda: timed([*cli, "--workers", "1", wheel]), args.repeat)
    print(f"\n2. whole wheel ({len(members)} binary members)")
    if not args.quick:
        with tempfile.TemporaryDirectory() as tmp:
            t = time.perf_counter()
            subprocess.run(["unzip", "-q", wheel, "-d", tmp], check=True)
            for dirpath, _dirs, files in os.walk(tmp):
                for fn in files:
                    p = os.path.join(dirpath, fn)
                    with open(p, "rb") as f:
                        if not f.read(8).startswith(MAGICS):
                            continue
                    subprocess.run([cuobjdump, "--list-elf", "--list-ptx", p],
                                   stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            t_pipe = time.perf_counter() - t
            shutil.rmtree(tmp, ignore_errors=True)
        print(f"   unzip + cuobjdump on each binary: {t_pipe:8.3f} s")
        ratio = t_pipe / t_wheel
        print(f"   cuwheel inspect WHEEL (CLI)     : {t_wheel:8.3f} s   ratio {ratio:6.1f}x"
              "  (target >= 30x)")
    else:
        print(f"   cuwheel inspect WHEEL (CLI)     : {t_wheel:8.3f} s")
    print(f"   isal inflate of binary members  : {t_isal:8.3f} s   cuwheel/inflate "
          f"{t_wheel / t_isal:5.2f}x  (target <= 1.2x)")
    print(f"   cuwheel with --workers 1        : {t_w1:8.3f} s   cuwheel/inflate "
          f"{t_w1 / t_isal:5.2f}x")
    floor_wall, floor_cpu, _ = isal_floor([wheel], args.repeat)
    print(f"   by CPU time (inflate: wall {floor_wall:.2f} s, CPU {floor_cpu:.2f} s):")
    against_floor("cuwheel inspect WHEEL (CLI)", [*cli, wheel], floor_wall, floor_cpu,
                  args.repeat)
    against_floor("cuwheel with --workers 1", [*cli, "--workers", "1", wheel], floor_wall,
                  floor_cpu, args.repeat)
    print(f"\n3. peak RSS of cuwheel inspect WHEEL, all processes: {rss:6.0f} MB"
          "  (target <= 250 MB)")
    if args.many:
        many_wheels(args.many, args.repeat)


def _api(cuwheel, lib: str) -> float:  # type: ignore[no-untyped-def]
    t = time.perf_counter()
    cuwheel.inspect(lib)
    return time.perf_counter() - t


if __name__ == "__main__":
    main()

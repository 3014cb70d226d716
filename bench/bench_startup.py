"""Start-up of the CLI against bare Python: `cuwheel --version`, `--help` and a
subcommand's `--help`, each the median wall time of --runs fresh interpreters, printed as
the ratio to `python -c pass` (the floor every Python CLI pays), with the module count
`python -X importtime` reports.

    python bench/bench_startup.py [--runs 30] [--lib PATH] [--lib-runs 10]

The goal (issues 23 and 34) is --version, --help and the look-ups (gpus, plan, explain)
within 3x bare Python, in CPU time of the child (user + system: what other work on a
shared machine moves least). With ``--lib`` (one
extracted library, e.g. ``unzip -j torch-2.14.1-*.whl torch/lib/libtorch_cuda.so -d
/tmp``) it also times ``cuwheel inspect LIB`` against the library API on it (the work:
``inspect([LIB])`` less bare Python), NVIDIA's ``cuobjdump --list-elf --list-ptx LIB`` and
bare Python; that goal is the CLI within 2x bare Python + the work. Bytecode is cached (as
in an installed package) in a temporary PYTHONPYCACHEPREFIX, warmed by one untimed run, even
where PYTHONDONTWRITEBYTECODE is set: compiling every module each run would be measured
instead of the import.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time

# What the console script pip writes for ``cuwheel`` runs (``python -m`` adds runpy).
SCRIPT = "import re, sys; from cuwheel.cli import main; sys.exit(main())"
COMMANDS = {
    "python -c pass": ["-c", "pass"],
    "cuwheel --version": ["-c", SCRIPT, "--version"],
    "cuwheel --help": ["-c", SCRIPT, "--help"],
    "cuwheel check --help": ["-c", SCRIPT, "check", "--help"],
    "cuwheel explain DC001": ["-c", SCRIPT, "explain", "DC001"],
    "cuwheel gpus H100": ["-c", SCRIPT, "gpus", "H100"],
    "cuwheel plan --train cu130": ["-c", SCRIPT, "plan", "--train", "cu130"],
    "cuwheel explain TEXT": ["-c", SCRIPT, "explain",
                             "ImportError: libcublas.so.12: cannot open shared object file"],
}


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
LIBRARY = "import sys; from cuwheel.read.inspect import inspect; inspect([sys.argv[1]])"
HERE = os.path.dirname(os.path.abspath(__file__))


def _once(args: list[str], exe: str | None = None) -> float:
    return _timed(args, exe)[0]


def _timed(args: list[str], exe: str | None = None) -> tuple[float, float]:
    """(wall, CPU) seconds of one run; CPU (user + system of the child) moves less than
    wall time when other work shares the machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run([exe or sys.executable, *args], check=True, capture_output=True, env=ENV)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _single_library(lib: str, runs: int) -> None:
    """One extracted library: the CLI, the library API, cuobjdump, bare Python."""
    sys.path.insert(0, os.path.join(os.path.dirname(HERE), "tests"))
    from cuobjdump_oracle import find_cuobjdump

    cuobjdump = find_cuobjdump()
    commands: dict[str, tuple[str | None, list[str]]] = {
        "python -c pass": (None, ["-c", "pass"]),
        "library: inspect([LIB])": (None, ["-c", LIBRARY, lib]),
        "cuwheel inspect LIB": (None, ["-c", SCRIPT, "inspect", lib]),
        "cuwheel inspect LIB --json": (None, ["-c", SCRIPT, "inspect", lib, "--json"]),
    }
    if cuobjdump:
        commands["cuobjdump -lelf -lptx LIB"] = (cuobjdump, ["--list-elf", "--list-ptx", lib])
    for exe, args in commands.values():  # bytecode written, the file in the page cache
        _once(args, exe)
    walls: dict[str, list[float]] = {name: [] for name in commands}
    cpus: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (exe, args) in commands.items():
            wall, cpu = _timed(args, exe)
            walls[name].append(wall)
            cpus[name].append(cpu)
    size = os.path.getsize(lib) / 1e6
    print(f"\none library: {os.path.basename(lib)} ({size:.0f} MB), median of {runs} runs")
    print(f"{'command':<28} {'wall ms':>9} {'x bare':>7} {'CPU ms':>9} {'x bare':>7}")
    wmed = {name: statistics.median(t) for name, t in walls.items()}
    cmed = {name: statistics.median(t) for name, t in cpus.items()}
    for name in commands:
        print(f"{name:<28} {wmed[name] * 1000:9.1f} {wmed[name] / wmed['python -c pass']:7.2f} "
              f"{cmed[name] * 1000:9.1f} {cmed[name] / cmed['python -c pass']:7.2f}")
    for label, med in (("wall", wmed), ("CPU", cmed)):
        bare, api = med["python -c pass"], med["library: inspect([LIB])"]
        work = max(api - bare, 0.0)
        goal = 2 * bare + work
        print(f"{label}: the work (library API less bare Python) {work * 1000:.1f} ms; goal "
              f"2x bare + the work = {goal * 1000:.1f} ms")
        for name in ("cuwheel inspect LIB", "cuwheel inspect LIB --json"):
            cli = med[name]
            print(f"  {name}: {cli * 1000:.1f} ms = {cli / goal:.2f}x the goal; over the "
                  f"library API {(cli - api) * 1000:+.1f} ms")
    if cuobjdump:
        print(f"cuobjdump / cuwheel inspect LIB (wall): "
              f"{wmed['cuobjdump -lelf -lptx LIB'] / wmed['cuwheel inspect LIB']:.1f}x")
    _exports_cost(lib, runs)


def _exports_cost(lib: str, runs: int) -> None:
    """The reading's CPU in this process with and without the exported names decoded
    (``inspect(exports=False)``: inspect's text view, compat, size)."""
    from cuwheel.read.inspect import inspect

    inspect([lib], workers=1)  # the file in the page cache, the catalog loaded
    for exports in (True, False):
        times = []
        for _ in range(runs):
            start = time.process_time()
            inventory = inspect([lib], workers=1, exports=exports)
            times.append(time.process_time() - start)
        count = sum(len(b.exported) for b in inventory.binaries)
        print(f"inspect([LIB], exports={exports}): {statistics.median(times) * 1000:.1f} ms CPU"
              f" ({count} exported names)")


def _modules(args: list[str]) -> int:
    out = subprocess.run([sys.executable, "-X", "importtime", *args], check=True,
                         capture_output=True, text=True, env=ENV)
    return sum(line.startswith("import time:") for line in out.stderr.splitlines()) - 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    parser.add_argument("--lib", metavar="PATH",
                        help="also time one extracted library (e.g. libtorch_cuda.so)")
    parser.add_argument("--lib-runs", type=int, default=10)
    parser.add_argument("--only-lib", action="store_true", help="only the library figures")
    opts = parser.parse_args()
    runs = opts.runs
    ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="cuwheel-bench-pyc-")
    if opts.only_lib:
        if not opts.lib:
            parser.error("--only-lib needs --lib PATH")
        _single_library(opts.lib, opts.lib_runs)
        return 0
    for args in COMMANDS.values():  # write the bytecode
        _once(args)
    # Interleaved runs: a shared machine's load hits every command alike.
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    cpu: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, args in COMMANDS.items():
            wall, used = _timed(args)
            times[name].append(wall)
            cpu[name].append(used)
    bare = statistics.median(times["python -c pass"])
    bare_cpu = statistics.median(cpu["python -c pass"])
    print(f"{'command':<24} {'median ms':>9} {'x bare':>7} {'CPU ms':>8} {'x bare':>7} "
          f"{'modules':>8}")
    for name, args in COMMANDS.items():
        med, used = statistics.median(times[name]), statistics.median(cpu[name])
        print(f"{name:<24} {med * 1000:9.1f} {med / bare:7.2f} {used * 1000:8.1f} "
              f"{used / bare_cpu:7.2f} {_modules(args):8d}")
    if opts.lib:
        _single_library(opts.lib, opts.lib_runs)
    return 0


if __name__ == "__main__":
    sys.exit(main())

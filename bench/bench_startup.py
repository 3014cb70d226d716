"""Start-up of the CLI against bare Python: `cuwheel --version`, `--help` and a
subcommand's `--help`, each the median wall time of --runs fresh interpreters, printed as
the ratio to `python -c pass` (the floor every Python CLI pays), with the module count
`python -X importtime` reports.

    python bench/bench_startup.py [--runs 30]

The goal (issue 23) is --version and --help within 3x bare Python. Bytecode is cached (as
in an installed package) in a temporary PYTHONPYCACHEPREFIX, warmed by one untimed run, even
where PYTHONDONTWRITEBYTECODE is set: compiling every module each run would be measured
instead of the import.
"""

from __future__ import annotations

import argparse
import os
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
}


ENV = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}


def _once(args: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run([sys.executable, *args], check=True, capture_output=True, env=ENV)
    return time.perf_counter() - start


def _modules(args: list[str]) -> int:
    out = subprocess.run([sys.executable, "-X", "importtime", *args], check=True,
                         capture_output=True, text=True, env=ENV)
    return sum(line.startswith("import time:") for line in out.stderr.splitlines()) - 1


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30)
    runs = parser.parse_args().runs
    ENV["PYTHONPYCACHEPREFIX"] = tempfile.mkdtemp(prefix="cuwheel-bench-pyc-")
    for args in COMMANDS.values():  # write the bytecode
        _once(args)
    # Interleaved runs: a shared machine's load hits every command alike.
    times: dict[str, list[float]] = {name: [] for name in COMMANDS}
    for _ in range(runs):
        for name, args in COMMANDS.items():
            times[name].append(_once(args))
    bare = statistics.median(times["python -c pass"])
    print(f"{'command':<24} {'median ms':>9} {'x bare':>7} {'modules':>8}")
    for name, args in COMMANDS.items():
        med = statistics.median(times[name])
        print(f"{name:<24} {med * 1000:9.1f} {med / bare:7.2f} {_modules(args):8d}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

"""The three stories of issue 23, re-run as a new user would, on published wheels:

  (a) set up a torch extension: ``init`` in an empty project, then ``plan`` for cu130;
  (b) answer a "no kernel image" report: ``explain`` the error, ``compat WHEEL --gpu``;
  (c) audit ten wheels for the team: ``check --audit DIR``.

For every command it records the exit status, the lines printed (stdout and stderr), the
lines wider than 80 columns, the time to the first useful line (the first non-blank line
on stdout) and the first three lines. Commands run with stdout and stderr on pipes and
``COLUMNS=80``, as in a CI log or ``| less``.

    PYTHONPATH=/work/wt/before/src python bench/stories.py --cuwheel "python -m cuwheel" \\
        --label before -o bench/results/stories-before.txt
    PYTHONPATH=$PWD/src python bench/stories.py --cuwheel "python -m cuwheel" --label after

``--cuwheel`` is the command to run (split as a shell would); the tree it runs is the one
on PYTHONPATH. Wheels: /work/real (faiss-gpu, bitsandbytes x3) and a local mirror of PyPI
(/opt/pypi-more/files; NVIDIA runtime wheels, torchvision, the cuda-toolkit metapackage),
or ``--wheels DIR`` and ``--report-wheel WHEEL``; ``pip download --no-deps
--only-binary=:all: NAME==VERSION`` fetches the same files.
"""

from __future__ import annotations

import argparse
import os
import selectors
import shlex
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

REAL = Path("/work/real")
MIRROR = Path("/opt/pypi-more/files")
AUDIT = [
    REAL / "faiss_gpu-1.7.2-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",
    REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl",
    REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_aarch64.whl",
    REAL / "bitsandbytes-0.50.2-py3-none-win_amd64.whl",
    MIRROR / "nvidia_cuda_cupti-13.0.85-py3-none-manylinux_2_25_x86_64.whl",
    MIRROR / "nvidia_cufile-1.15.1.6-py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
    MIRROR / "nvidia_nvtx-13.0.85-py3-none-manylinux1_x86_64.manylinux_2_5_x86_64.whl",
    MIRROR / "nvidia_nvjitlink-13.4.92-py3-none-manylinux2010_x86_64.manylinux_2_12_x86_64.whl",
    MIRROR / "torchvision-0.29.1-cp311-cp311-manylinux_2_28_x86_64.whl",
    MIRROR / "cuda_toolkit-13.0.3.0-py2.py3-none-any.whl",
]
REPORT = REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl"
ERROR = "CUDA error: no kernel image is available for execution on the device"


@dataclass
class Run:
    story: str
    argv: list[str]
    code: int = 0
    lines: list[str] = field(default_factory=list)  # stdout then stderr
    out_lines: int = 0
    err_lines: int = 0
    wide: int = 0
    first: float | None = None  # seconds to the first non-blank stdout line
    total: float = 0.0
    head: list[str] = field(default_factory=list)


def run(story: str, cuwheel: list[str], args: list[str], cwd: Path) -> Run:
    env = {**os.environ, "COLUMNS": "80"}
    for var in ("FORCE_COLOR", "CUWHEEL_TRAIN", "CUWHEEL_ROW", "CUWHEEL_PLATFORM"):
        env.pop(var, None)
    r = Run(story, args)
    start = time.perf_counter()
    proc = subprocess.Popen([*cuwheel, *args], cwd=cwd, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, stdin=subprocess.DEVNULL)
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, "out")
    sel.register(proc.stderr, selectors.EVENT_READ, "err")
    data = {"out": b"", "err": b""}
    while sel.get_map():
        for key, _ in sel.select():
            block = os.read(key.fileobj.fileno(), 65536)  # type: ignore[union-attr]
            if not block:
                sel.unregister(key.fileobj)
                continue
            data[key.data] += block
            if key.data == "out" and r.first is None and data["out"].strip():
                r.first = time.perf_counter() - start
    r.code = proc.wait()
    r.total = time.perf_counter() - start
    out = data["out"].decode("utf-8", "replace").splitlines()
    err = data["err"].decode("utf-8", "replace").splitlines()
    r.out_lines, r.err_lines = len(out), len(err)
    r.lines = out + err
    r.wide = sum(len(line) > 80 for line in r.lines)
    r.head = [line for line in out if line.strip()][:3] or err[:3]
    return r


def stories(cuwheel: list[str], wheels: Path, report: Path, work: Path) -> list[Run]:
    project = work / "ext"
    project.mkdir()
    runs = [
        run("a: torch extension", cuwheel, ["init"], project),
        run("a: torch extension", cuwheel, ["plan", "-f", "torch", "--train", "cu130"], project),
        run("a: torch extension", cuwheel, ["plan", "--train", "cu130"], project),
        run("b: no kernel image", cuwheel, ["explain", ERROR], work),
        run("b: no kernel image", cuwheel, ["compat", str(report), "--gpu", "RTX 2080"], work),
        run("b: no kernel image", cuwheel, ["compat", str(report), "--gpu", "GTX 1080",
                                            "--driver", "580"], work),
        run("c: audit ten wheels", cuwheel, ["check", "--audit", str(wheels)], work),
    ]
    return runs


def render(runs: list[Run], label: str, cuwheel: str) -> str:
    out = [f"stories ({label}): {cuwheel}; PYTHONPATH={os.environ.get('PYTHONPATH', '')}",
           f"{time.strftime('%Y-%m-%d')}, {os.cpu_count()} CPUs, COLUMNS=80, pipes (no "
           "terminal)", ""]
    out.append(f"{'story':<20} {'command':<44} {'exit':>4} {'lines':>5} {'>80':>4} "
               f"{'first s':>7} {'total s':>7}")
    for r in runs:
        cmd = " ".join(shlex.quote(Path(a).name if "/" in a else a) for a in r.argv)
        cmd = cmd if len(cmd) <= 44 else cmd[:41] + "..."
        first = f"{r.first:7.2f}" if r.first is not None else "      -"
        out.append(f"{r.story:<20} {cmd:<44} {r.code:>4} {len(r.lines):>5} {r.wide:>4} "
                   f"{first} {r.total:7.2f}")
    out.append("")
    for r in runs:
        cmd = " ".join(shlex.quote(Path(a).name if "/" in a else a) for a in r.argv)
        out.append(f"$ cuwheel {cmd}   (exit {r.code}; {r.out_lines} lines on stdout, "
                   f"{r.err_lines} on stderr, {r.wide} wider than 80)")
        out += [f"  | {line}" for line in r.head]
        out.append("")
    return "\n".join(out)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cuwheel", default=f"{sys.executable} -m cuwheel",
                    help="the command to run (default: this Python's -m cuwheel)")
    ap.add_argument("--label", default="after")
    ap.add_argument("--wheels", type=Path, help="a directory of ~10 wheels to audit")
    ap.add_argument("--report-wheel", type=Path, default=REPORT)
    ap.add_argument("-o", "--output", type=Path)
    opts = ap.parse_args()
    cuwheel = shlex.split(opts.cuwheel)
    with tempfile.TemporaryDirectory(prefix="cuwheel-stories-") as tmp:
        work = Path(tmp)
        wheels = opts.wheels
        if wheels is None:
            wheels = work / "wheels"
            wheels.mkdir()
            missing = [p for p in AUDIT if not p.is_file()]
            if missing:
                sys.exit(f"missing wheels (pip download them or give --wheels): {missing}")
            for p in AUDIT:
                (wheels / p.name).symlink_to(p)
        text = render(stories(cuwheel, wheels, opts.report_wheel, work), opts.label,
                      opts.cuwheel)
    print(text)
    if opts.output:
        opts.output.write_text(text + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())

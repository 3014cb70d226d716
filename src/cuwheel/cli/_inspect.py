"""``cuwheel inspect``: list the device code and CUDA linkage of binaries."""

from __future__ import annotations

import argparse
from typing import Any

from cuwheel.cli._common import add_output, check_output_path, error, warn, write_output
from cuwheel.errors import Exit

__all__ = ["register"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "inspect",
        help="list the GPU code and CUDA linkage of wheels, directories, files, installs",
        description="List the device code (SASS, PTX, LTO-IR per fatbin container) and the "
        "CUDA linkage of every binary in wheels, directories, installed distributions or "
        "single ELF / PE / ar / cubin / fatbin / PTX files.",
    )
    p.add_argument("targets", nargs="*", metavar="TARGET",
                   help="wheel, directory or file; an exported program (.pt2, .pte, .ptd) or "
                   "Triton cache directory is named by kind, with its CUDA train, GPUs and "
                   "host (docs/artifacts.md)")
    p.add_argument("--dist", action="append", default=[], metavar="NAME",
                   help="an installed distribution (files from its RECORD); repeatable")
    p.add_argument("--env", action="store_true",
                   help="every distribution installed in this environment")
    add_output(p, ("text", "json"))
    p.add_argument("--only-device-code", action="store_true",
                   help="text: list only binaries that carry device code")
    p.add_argument("--all", action="store_true",
                   help="show every container and entry (text) / exported symbols (JSON)")
    p.add_argument("--toolkit", choices=("sample", "all", "none"), default="sample",
                   help="which cubins to decode for the toolkit that built them "
                   "(default: one per container in containers 0, 1, 2, 4, 8, ...)")
    p.add_argument("--kernels", action="store_true",
                   help="decode every cubin and PTX text for the names of its entry kernels "
                   "and list them by family (the name without template arguments); slower")
    p.add_argument("--workers", type=_positive, default=None,
                   help="worker processes for big wheels (default: up to 2)")
    p.set_defaults(handler=run)


def _positive(text: str) -> int:
    if not (text.isascii() and text.isdigit() and len(text) <= 4 and int(text) >= 1):
        raise argparse.ArgumentTypeError(f"a number of processes, 1 or more; got {text!r}")
    return int(text)


def run(args: argparse.Namespace) -> int:
    from cuwheel.errors import CuwheelError
    from cuwheel.read.inspect import inspect

    if not args.targets and not args.dist and not args.env:
        raise CuwheelError("nothing to inspect: give a TARGET, --dist NAME or --env")
    if args.output:
        check_output_path(args.output)
    from cuwheel.cli._progress import progress

    with progress(args, "inspect") as bar:
        # The text view shows no exported symbol: their names are not read for it.
        inv = inspect(args.targets, dists=args.dist, env=args.env, workers=args.workers,
                      progress=bar, payload="kernels" if args.kernels else args.toolkit,
                      exports=args.format == "json")
    problem_paths = {p.path for p in inv.problems}
    # A source that is nothing but its problem (a missing file, an unknown --dist) gets no
    # header: its error is on stderr, once.
    real = [s for s in inv.sources
            if s.binaries or s.files_seen or s.path not in problem_paths]
    empty = [s for s in real if s.kind == "directory" and not s.files_seen]
    if args.env and not args.all:  # pure-Python distributions say nothing about CUDA
        hidden = [s for s in real if s.kind == "distribution" and not s.binaries]
        real = [s for s in real if s not in hidden]
    if args.format == "json":
        from cuwheel.render.inspect_json import render_json

        write_output(args, render_json(inv, full=args.all))
    else:
        from cuwheel.render.inspect_text import render_text

        if real:
            write_output(args, render_text(inv, full=args.all,
                                           device_only=args.only_device_code, sources=real))
    for problem in inv.problems:
        error(str(problem))
    for s in empty:
        error(f"{s.path}: empty directory: nothing to inspect")
    damaged = [b for b in inv.binaries if b.anomalies]
    for b in damaged:
        for a in b.anomalies:
            warn(f"{b.path}: {a}")
    # Something could not be read (a file, or a structure of one), or nothing was there:
    # the inventory is incomplete, exit 2 as for an unreadable file.
    return Exit.UNUSABLE if inv.problems or damaged or empty else Exit.OK


EXAMPLES = """\
examples:
  cuwheel inspect dist/*.whl                    device code and linkage of each binary
  cuwheel inspect torch-2.14.1-*.whl --only-device-code
  cuwheel inspect build/lib/libk.so -f json -o inventory.json
  cuwheel inspect --dist torch                  an installed distribution
"""

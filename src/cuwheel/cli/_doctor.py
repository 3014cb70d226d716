"""``cuwheel doctor [--path DIR]... [--gpu NAME | --cc X.Y] [--driver V]``: why CUDA code
fails on this machine (docs/doctor.md)."""

from __future__ import annotations

import argparse
import os
import shutil
import sys
from typing import Any

from cuwheel.cli._common import add_output, asked_targets, check_output_path, info, write_output
from cuwheel.errors import Exit

__all__ = ["register", "targets_of", "text_width"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "doctor",
        help="why CUDA code fails on this machine: the installed environment vs its GPU",
        description=(
            "Judge every installed distribution with device code or CUDA linkage on this "
            "machine's GPUs and driver (NVML), or on --gpu/--cc and --driver: runs / runs "
            "except / does not run / unknown, the cause first; resolve each CUDA library the "
            "way the loader will (RPATH/RUNPATH, LD_LIBRARY_PATH, the ld.so cache, torch's "
            "preloads). Exit status: 0 runs, 1 does not run, 2 unusable input or unknown."
        ),
    )
    p.add_argument("--path", action="append", default=[], metavar="DIR",
                   help="a site-packages directory or unpacked tree to diagnose (repeatable, "
                        "searched in order; default: this interpreter's sys.path)")  # fmt: skip
    p.add_argument("--dist", action="append", default=[], metavar="NAME",
                   help="read the binaries of these distributions only (repeatable)")
    p.add_argument("--gpu", action="append", default=[], metavar="NAME",
                   help="GPU by product, alias or family, instead of this machine's")
    p.add_argument("--cc", action="append", default=[], metavar="X.Y",
                   help="compute capability, instead of this machine's GPU")
    p.add_argument("--driver", metavar="VERSION",
                   help="driver version ('580.65.06') or the CUDA version it supports ('13.0')")
    p.add_argument("--ld-library-path", metavar="PATHS",
                   help="LD_LIBRARY_PATH to resolve with (default: this process's)")
    p.add_argument("--ld-cache", metavar="FILE", default="/etc/ld.so.cache",
                   help="the ld.so cache to read ('none': no cache; default: /etc/ld.so.cache)")
    p.add_argument("--workers", type=int, metavar="N",
                   help="processes reading the binaries (default: up to 2)")
    p.add_argument("--error", metavar="TEXT",
                   help="the error the environment raised ('-': stdin): diagnose it from its "
                        "facts and name the distribution behind it first")  # fmt: skip
    p.add_argument("-v", "--verbose", action="store_true",
                   help="every module of each cause, every library's verdict and every CUDA "
                        "library of the process")  # fmt: skip
    add_output(p, ("text", "json"))
    p.set_defaults(handler=_run)


def text_width() -> int:
    """The width doctor's and explain's text answers wrap to: the terminal's (COLUMNS),
    60 to 120."""
    return max(60, min(120, shutil.get_terminal_size((100, 24)).columns - 1))


def targets_of(args: argparse.Namespace) -> list[Any]:
    """The GPUs + driver asked about (--gpu, --cc, --driver), else this machine's."""

    driver, targets = asked_targets(args)
    if targets:
        return targets
    from cuwheel.compat.localgpu import detect

    machine = detect()
    info(f"local: {len(machine.gpus)} GPU(s), {machine.driver} (via {machine.via})")
    local = machine.targets()
    return [t.with_driver(driver) for t in local] if driver else list(local)


def _run(args: argparse.Namespace) -> int:
    from cuwheel.doctor import SearchContext, diagnose, read_environment, read_ld_cache
    from cuwheel.errors import CuwheelError
    from cuwheel.render.doctor import doctor_json, doctor_text

    if args.output:
        check_output_path(args.output)
    for d in args.path:
        if not os.path.isdir(d):
            raise CuwheelError(f"--path {d}: not a directory")
    targets = targets_of(args)
    cache = None if args.ld_cache == "none" else read_ld_cache(args.ld_cache)
    environ = dict(os.environ)
    if args.ld_library_path is not None:
        environ["LD_LIBRARY_PATH"] = args.ld_library_path
    ctx = SearchContext.from_environ(environ, cache)
    if args.workers is not None and args.workers < 1:
        raise CuwheelError(f"--workers {args.workers}: at least 1")
    env = read_environment(args.path or None, only=args.dist, workers=args.workers)
    if not env.distributions:
        where = ", ".join(args.path) if args.path else "sys.path"
        from cuwheel.render.escape import escape

        print(escape(f"cuwheel: warning: no installed distribution found in {where}"),
              file=sys.stderr)
    diagnosis = diagnose(env, targets, ctx)
    text, blames = _error(args, env, diagnosis)
    if args.format == "json":
        from cuwheel.render.diagnosis import diagnosis_json

        write_output(args, doctor_json(diagnosis, None if text is None else
                                       diagnosis_json(text, blames)))  # fmt: skip
    else:
        from cuwheel.render.diagnosis import diagnosis_lines
        from cuwheel.render.escape import escape_lines

        width = text_width()
        head = "" if text is None else escape_lines([*diagnosis_lines(text, width, blames), ""])
        write_output(args, head + doctor_text(diagnosis, verbose=args.verbose, width=width))
    errors = [f for t in diagnosis.targets for r in t.distributions for f in r.findings]
    from cuwheel.checks.codes import Severity

    if any(f.severity is Severity.ERROR for f in [*errors, *diagnosis.loader_findings]):
        return Exit.NO
    # the roll-up's exit codes (docs/compat.md#wheel-verdicts): runs 0, unknown 2, runs
    # except 3, depends on dispatch 4
    from cuwheel.rules.rollup import WheelState

    return WheelState(diagnosis.status).exit_code

def _error(args: argparse.Namespace, env: Any, diagnosis: Any) -> tuple[Any, Any]:
    """(the --error text's diagnosis, the distributions behind it), or (None, None)."""
    if args.error is None:
        return None, None
    from cuwheel.doctor.culprits import blame
    from cuwheel.doctor.explain import diagnose_text
    from cuwheel.doctor.facts import MAX_TEXT

    text = sys.stdin.read(MAX_TEXT) if args.error == "-" else args.error
    td = diagnose_text(text)
    return td, blame(td, env, diagnosis)


EXAMPLES = """\
examples:
  cuwheel doctor                                  this interpreter's packages on this machine
  cuwheel doctor --path venv/lib/python3.12/site-packages --gpu H100 --driver 535
  cuwheel doctor --dist torch --dist bitsandbytes -v
  cuwheel doctor --error "$(python -c 'import ctranslate2' 2>&1)"
"""

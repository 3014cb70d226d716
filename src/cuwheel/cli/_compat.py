"""``cuwheel compat TARGET... (--gpu NAME | --cc X.Y | --local) [--driver V] [--matrix]``."""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import (
    add_output,
    asked_targets,
    check_output_path,
    error,
    text_width,
    write_file,
    write_output,
)
from cuwheel.errors import Exit
from cuwheel.render.escape import dumps

if TYPE_CHECKING:
    from cuwheel import compat

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "compat",
        help="will this wheel run on GPU X with driver Y?",
        description=(
            "Apply CUDA's loading rules to the device code of wheels, directories, files or "
            "installed distributions: per fatbin container native SASS / compatible SASS / "
            "PTX JIT / no code, rolled up per library and per wheel (modules for other GPUs "
            "and run-time alternatives such as one library per CUDA version are not "
            "failures). Exit status: 0 runs, 1 does not run, 2 unusable input or an input "
            "that could not be read (unknown), 3 runs except named modules, 4 depends on "
            "dispatch (runs only if named libraries pick kernels by compute capability); "
            "several GPUs: the worst (1, 2, 3, 4, 0)."
        ),
    )
    p.add_argument(
        "targets",
        nargs="*",
        metavar="TARGET",
        help="wheel, directory or file (anything 'cuwheel inspect' takes)",
    )
    p.add_argument(
        "--dist",
        action="append",
        default=[],
        metavar="NAME",
        help="an installed distribution (repeatable)",
    )
    p.add_argument("--env", action="store_true", help="every distribution of this environment")
    p.add_argument(
        "--gpu",
        action="append",
        default=[],
        metavar="NAME",
        help="GPU by product, alias or family: 'RTX 4090', 'GB200', 'Jetson Orin' (repeatable)",
    )
    p.add_argument(
        "--cc",
        action="append",
        default=[],
        metavar="X.Y",
        help="compute capability: '8.9' or 'sm_89' (repeatable)",
    )
    p.add_argument(
        "--local",
        action="store_true",
        help="every GPU of this machine and its driver (NVML, else libcuda)",
    )
    p.add_argument(
        "--driver",
        metavar="VERSION",
        help="driver version ('580.65.06') or the CUDA version it supports ('13.0')",
    )
    p.add_argument(
        "--matrix",
        action="store_true",
        help="a support table: every GPU of the catalog (or those asked) x library",
    )
    p.add_argument("--svg", metavar="FILE", help="with --matrix: also write the table as SVG")
    add_output(p, ("text", "json", "svg"), help="svg: the --matrix table as an image")
    p.add_argument(
        "--strict",
        action="store_true",
        help="a library is its worst container, also when others run (no 'partial')",
    )
    p.add_argument(
        "--no-kernels",
        action="store_true",
        help="do not read the kernels' names (faster): judge containers that miss the GPU "
        "by their architecture sets alone (docs/compat.md#kernel-families)",
    )
    p.add_argument(
        "--cuda",
        metavar="X.Y",
        help="the CUDA version of the process (torch.version.cuda): picks which of a set of "
        "run-time alternatives loads (libfoo_cuda128.so)",
    )
    p.add_argument("-v", "--verbose", action="store_true", help="list every container")
    p.set_defaults(handler=_run)


def _targets(args: argparse.Namespace) -> list[compat.Target]:
    from cuwheel import compat

    driver, targets = asked_targets(args)
    if args.local:
        from cuwheel.compat.localgpu import detect

        machine = detect()
        local = machine.targets()
        if driver is not None:  # an explicit --driver overrides what the machine has
            local = tuple(t.with_driver(driver) for t in local)
        targets.extend(local)
        from cuwheel.render.escape import escape

        print(  # the driver's own strings: through the one escape function
            escape(f"local: {len(machine.gpus)} GPU(s), {machine.driver} (via {machine.via})"),
            file=sys.stderr,
        )
    if not targets and args.matrix:
        targets.extend(compat.catalog_targets(driver))
    if not targets:
        raise compat.CompatError(
            "name the GPU(s) to ask about: --gpu NAME, --cc X.Y or --local "
            "(or --matrix for every GPU of the catalog)"
        )
    seen: dict[tuple[str, str | None], compat.Target] = {}
    for t in targets:
        seen.setdefault((t.arch.sass, t.label), t)
    return list(seen.values())


def _cuda_version(text: str | None) -> tuple[int, int] | None:
    from cuwheel import compat

    if text is None:
        return None
    parts = text.strip().split(".")
    if len(parts) < 2 or not all(p.isdigit() and len(p) <= 3 for p in parts[:2]):
        raise compat.CompatError(f"--cuda {text!r}: expected a CUDA version such as 12.8")
    from cuwheel.knowledge import catalog

    version = int(parts[0]), int(parts[1])
    try:  # a process runs a released CUDA: 99.9 is a typo, not a future answer
        catalog.release(version)
    except LookupError as exc:
        raise compat.CompatError(f"--cuda {text.strip()}: {exc}") from None
    return version


def _run(args: argparse.Namespace) -> int:
    from cuwheel import compat
    from cuwheel.read.inspect import inspect
    from cuwheel.render.compat import (
        exit_code,
        matrix_json,
        matrix_svg,
        matrix_text,
        report_json,
        report_text,
    )

    if not (args.targets or args.dist or args.env):
        raise compat.CompatError(
            "nothing to inspect: name a wheel, directory or file, or use --dist NAME / --env"
        )
    if (args.svg or args.format == "svg") and not args.matrix:
        raise compat.CompatError("svg draws the --matrix table; add --matrix")
    for path in (args.output, args.svg):
        if path:
            check_output_path(path)
    targets = _targets(args)
    from cuwheel.cli._progress import progress

    with progress(args, "compat: reading") as bar:
        # the entry kernels' names: which containers are instances for other GPUs of
        # kernels that load on this one (docs/compat.md#kernel-families)
        inventory = inspect(args.targets, dists=args.dist, env=args.env, progress=bar,
                            payload="sample" if args.no_kernels else "kernels",
                            exports=False)  # the loading rules never read them
    for p in inventory.problems:
        error(str(p))
    damaged = [f"{b.path}: {a}" for b in inventory.binaries for a in b.anomalies]
    for d in damaged:
        error(d)
    if inventory.problems and not inventory.binaries:
        raise compat.CompatError("no input could be read")
    if args.matrix:
        m = compat.matrix(inventory, targets, strict=args.strict, cuda=_cuda_version(args.cuda))
        title = "cuwheel compat: " + ", ".join(
            s.path.rsplit("/", 1)[-1] for s in inventory.sources
        )
        if args.svg:
            write_file(args.svg, matrix_svg(m, title), "--svg")
        if args.format == "json":
            write_output(args, dumps(matrix_json(m), indent=2) + "\n")
        elif args.format == "svg":
            write_output(args, matrix_svg(m, title))
        else:
            write_output(args, matrix_text(m, text_width(sys.stdout)))
        if not all(m.row_runs(i) for i in range(len(m.targets))):
            return Exit.NO
        return Exit.UNUSABLE if inventory.problems or damaged else Exit.OK
    cuda = _cuda_version(args.cuda)
    reports = [compat.evaluate(inventory, t, strict=args.strict, cuda=cuda) for t in targets]
    if args.format == "json":
        write_output(args, dumps(report_json(reports, containers=args.verbose), indent=2) + "\n")
    else:
        import shutil

        width = shutil.get_terminal_size().columns  # COLUMNS, else the terminal, else 80
        write_output(args, report_text(reports, verbose=args.verbose, width=width))
    # One exit status per answer (docs/compat.md#wheel-verdicts): runs 0, does not run 1,
    # unknown 2, runs except 3, depends on dispatch 4; several GPUs: the worst.
    return exit_code(reports)


EXAMPLES = """\
examples:
  cuwheel compat x.whl --gpu "RTX 4090" --driver 580
  cuwheel compat x.whl --cc 7.5 --cc 12.0 -v    every container's verdict
  cuwheel compat --dist torch --local           this machine's GPUs and driver
  cuwheel compat x.whl --matrix -f svg -o support.svg
"""

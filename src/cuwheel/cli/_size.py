"""``cuwheel size``: bytes per architecture of wheels and binaries, and what-if answers."""

from __future__ import annotations

import argparse
from typing import Any

from cuwheel.cli._common import add_output, check_output_path, error, write_output
from cuwheel.errors import Exit

__all__ = ["register"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "size",
        help="bytes per architecture (SASS, PTX) in wheels, and what dropping some costs",
        description=(
            "The size ledger: bytes per architecture (SASS per arch, PTX per ISA), per "
            "library and per wheel, stored and compressed in the zip, and the compression "
            "of each fatbin container; with --drop / --ptx-from / --compress, the estimated "
            "wheel size of each choice and the GPUs it gives up (docs/size.md)."
        ),
    )
    p.add_argument("targets", nargs="+", metavar="TARGET", help="wheel, directory or file")
    p.add_argument("--drop", action="append", default=[], metavar="ARCHS",
                   help="what-if: drop these (sm_75 SASS, compute_75 PTX, 75 both; "
                   "comma-separated); repeat for more scenarios")  # fmt: skip
    p.add_argument("--ptx-from", action="append", default=[], metavar="ARCH",
                   help="what-if: keep PTX only for this architecture and above")
    p.add_argument("--compress", action="append", default=[], metavar="MODE",
                   choices=("none", "default", "size", "speed", "speed-all"),
                   help="what-if: rebuild with nvcc --compress-mode=MODE "
                   "(speed-all: speed with -Xfatbin=-compress-all)")  # fmt: skip
    p.add_argument("--combine", action="store_true",
                   help="one scenario with every --drop / --ptx-from / --compress given")
    p.add_argument("--budget", type=int, default=192, metavar="MIB",
                   help="MiB deflated per binary before sampling (default: 192)")
    add_output(p, ("text", "json", "svg", "html"))
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuwheel.errors import CuwheelError
    from cuwheel.model.arch import Arch, ArchSpellingError
    from cuwheel.model.inventory import Inventory
    from cuwheel.read.inspect import inspect
    from cuwheel.render import size as render
    from cuwheel.size import Scenario, estimate, ledger, measure, parse_drop

    if args.output:
        check_output_path(args.output)
    if args.budget < 1:
        raise CuwheelError("--budget takes a number of MiB, 1 or more")
    ptx_from: list[Arch] = []
    for text in args.ptx_from:
        try:
            ptx_from.append(Arch.parse(text))
        except ArchSpellingError as exc:
            raise CuwheelError(f"--ptx-from {text!r}: {exc}") from None
    drops = [parse_drop([d]) for d in args.drop]
    scenarios: list[Scenario] = []
    if args.combine:
        sass = frozenset(a for d in drops for a in d[0])
        ptx = frozenset(a for d in drops for a in d[1])
        if len(args.compress) > 1 or len(ptx_from) > 1:
            raise CuwheelError("--combine takes at most one --compress and one --ptx-from")
        if drops or ptx_from or args.compress:
            scenarios.append(Scenario(sass, ptx, ptx_from[0] if ptx_from else None,
                                      args.compress[0] if args.compress else None))
    else:
        scenarios += [Scenario(s, p) for s, p in drops]
        scenarios += [Scenario(ptx_from=a) for a in ptx_from]
        scenarios += [Scenario(compression=m) for m in args.compress]
    from cuwheel.cli._progress import progress

    with progress(args, "size: reading") as bar:
        inv = inspect(args.targets, progress=bar, exports=False)  # bytes, not names
    for problem in inv.problems:
        error(str(problem))
    if inv.problems:
        return Exit.UNUSABLE
    measured = measure(inv, scenarios=scenarios, budget=args.budget << 20)
    ledgers = ledger(inv, measured)
    estimates = [  # one source at a time: the GPUs each choice gives up are per wheel
        estimate(Inventory((src,)), [m], s)
        for src, m in zip(inv.sources, measured, strict=True)
        for s in scenarios
    ]
    if args.format == "json":
        write_output(args, render.size_json(ledgers, estimates))
    elif args.format == "svg":
        write_output(args, render.size_svg(ledgers))
    elif args.format == "html":
        write_output(args, render.size_html(ledgers, estimates))
    else:
        write_output(args, render.size_text(ledgers, estimates))
    return Exit.OK


EXAMPLES = """\
examples:
  cuwheel size dist/x.whl                        bytes per architecture, per library
  cuwheel size dist/x.whl --drop sm_75,compute_75 --ptx-from 90 --compress size
  cuwheel size dist/x.whl --drop 75 --drop 75,86 -f json -o size.json
  cuwheel size dist/x.whl -f svg -o size.svg     stacked bars per library
"""

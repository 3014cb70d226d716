"""``cuwheel variant``: wheel-variant properties derived from the code; declared ones checked."""

from __future__ import annotations

import argparse
from typing import Any

from cuwheel.cli._common import add_output, check_output_path, error, write_output
from cuwheel.errors import Exit

__all__ = ["register"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "variant",
        help="wheel-variant properties (nvidia :: sm_arch ...) derived from the code, "
        "and a variant wheel's declared ones checked",
        description=(
            "Derive the NVIDIA provider's wheel-variant properties (PEP 825 draft) that "
            "every library of a wheel backs, print them (text, the cuwheel JSON document, "
            "or the *.dist-info/variant.json to ship), and check the properties a variant "
            "wheel declares (or --declare gives) against the code (VAR001-VAR004; "
            "docs/variants.md)."
        ),
    )
    p.add_argument("targets", nargs="+", metavar="WHEEL", help="wheel (or directory, file)")
    p.add_argument("--label", default="cuda", help="variant label for variant.json "
                   "(default: the wheel's own, else 'cuda')")  # fmt: skip
    p.add_argument("--declare", action="append", default=[], metavar="PROPERTY",
                   help="check this property ('nvidia :: sm_arch :: 90_real') as if declared")
    add_output(p, ("text", "json", "variant-json"),
               help="variant-json: the derived variant.json of the first wheel")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuwheel.read.inspect import inspect
    from cuwheel.render.variant import variant_doc, variant_text
    from cuwheel.variant import Declared, derive, parse_property, read_declared, variant_json
    from cuwheel.variant import verify as check

    if args.output:
        check_output_path(args.output)
    extra = tuple(args.declare)
    for p in extra:
        parse_property(p)
    inv = inspect(args.targets)
    for problem in inv.problems:
        error(str(problem))
    if inv.problems:
        return Exit.UNUSABLE
    items = []
    failed = False
    for s in inv.sources:
        derived = derive(s)
        declared = read_declared(s.path) if s.kind == "wheel" else None
        if extra:
            base = declared or Declared(None, (), ())
            declared = Declared(base.label, tuple(sorted({*base.properties, *extra})),
                                base.problems)  # fmt: skip
        findings = check(derived, declared) if declared is not None else ()
        failed = failed or any(str(f.severity) == "error" for f in findings)
        label = args.label if args.label != "cuda" or declared is None else (
            declared.label or "cuda")  # fmt: skip
        items.append((derived, declared, findings, variant_json(derived, label)))
    if args.format == "json":
        write_output(args, variant_doc(items))
    elif args.format == "variant-json":
        write_output(args, items[0][3] if items else "")
    else:
        write_output(args, variant_text(items))
    return Exit.NO if failed else Exit.OK


EXAMPLES = """\
examples:
  cuwheel variant dist/x.whl                       properties every library backs
  cuwheel variant dist/x.whl --label cu130 -f variant-json -o variant.json
  cuwheel variant dist/x-1.0-py3-none-linux_x86_64-cu130.whl   check a variant wheel
  cuwheel variant dist/x.whl --declare "nvidia :: sm_arch :: 89_real"
"""

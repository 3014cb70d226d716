"""``cuwheel explain [CODE|PREFIX]...``: what a check code means, its causes and the fix."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import add_output, write_output

if TYPE_CHECKING:
    from cuwheel.checks.codes import Code

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "explain",
        help="what a check code means: its causes and the fix (DC001), or a family's codes (DC)",
        description=(
            "Explain check codes: a code (DC001, case-insensitive) prints its default "
            "severity, title, causes and fix and the link to docs/checks.md; a family or "
            "other prefix (DC, DEP0) lists its codes one per line; no code, or --list, "
            "lists every code."
        ),
    )
    p.add_argument("codes", nargs="*", metavar="CODE", help="check codes or code prefixes")
    p.add_argument("--list", action="store_true", help="list every code, one line each")
    add_output(p, ("text", "json"))
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from cuwheel.checks.codes import CODES, FAMILIES, find_codes
    from cuwheel.render.explain import explain_text, list_text, to_json, to_text

    everything = args.list or not args.codes
    queries: list[str] = [] if everything else list(args.codes)
    blocks: list[list[str]] = []
    chosen: dict[str, Code] = {}
    for q in queries:  # every query is looked up before anything is written
        found = find_codes(q)
        chosen.update((c.code, c) for c in found)
        if len(found) == 1 and found[0].code == q.strip().upper():
            blocks.append(explain_text(found[0]))
        else:
            prefix = q.strip().upper()
            blocks.append(list_text(found, prefix if prefix in FAMILIES else None))
    if everything:
        chosen.update(CODES)
        blocks.append(list_text(list(CODES.values())))
    if args.format == "json":
        write_output(args, to_json(list(chosen.values())))
    else:
        write_output(args, to_text(blocks))
    return 0

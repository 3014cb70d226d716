"""``cuwheel explain [CODE|PREFIX|"ERROR TEXT"]...``: what a check code means, its causes and
the fix; or what a pasted run-time error means, the codes that predict it and the command
that finds the culprit."""

from __future__ import annotations

import argparse
import re
import sys
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import add_output, write_output

if TYPE_CHECKING:
    from cuwheel.checks.codes import Code

__all__ = ["register"]

# A code or a prefix of one (DC001, dep0, TAG): anything else is error text.
_CODE_LIKE = re.compile(r"\s*[A-Za-z]{1,8}[0-9]{0,3}\s*")


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "explain",
        help="what a check code (DC001) or a pasted CUDA error text means: causes and the fix",
        description=(
            "Explain check codes: a code (DC001, case-insensitive) prints its default "
            "severity, title, causes and fix and the link to docs/checks.md; a family or "
            "other prefix (DC, DEP0) lists its codes one per line; no code, or --list, "
            "lists every code. Any other argument is error text as a run printed it "
            "('no kernel image is available ...', '-' reads it from stdin): its causes, "
            "the codes that predict it and the command that finds the culprit; text that "
            "matches no known error exits 2."
        ),
    )
    p.add_argument("codes", nargs="*", metavar="CODE|TEXT",
                   help="check codes, code prefixes, or error text ('-': stdin)")
    p.add_argument("--list", action="store_true", help="list every code, one line each")
    add_output(p, ("text", "json"))
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    # imported here: building the parser stays cheap (bench/bench_startup.py)
    from cuwheel.checks.codes import CODES, FAMILIES, find_codes
    from cuwheel.doctor.errors import MAX_TEXT, ErrorMatch, match_errors
    from cuwheel.errors import UnknownCode, shown
    from cuwheel.render.explain import error_text, explain_text, list_text, to_json, to_text

    everything = args.list or not args.codes
    queries: list[str] = [] if everything else list(args.codes)
    blocks: list[list[str]] = []
    chosen: dict[str, Code] = {}
    matches: list[ErrorMatch] = []
    for q in queries:  # every query is looked up before anything is written
        if q == "-":
            q = sys.stdin.read(MAX_TEXT)
        found: list[Code] = []
        if _CODE_LIKE.fullmatch(q):
            try:
                found = find_codes(q)
            except UnknownCode:
                if not match_errors(q):
                    raise
        if not found:
            hits = match_errors(q)
            if not hits:
                raise UnknownCode(
                    f"no match: {shown(q.strip(), 80)} is neither a check code nor a CUDA "
                    "error cuwheel knows (cuwheel explain --list shows the codes)"
                )
            for m in hits:
                matches.append(m)
                chosen.update((c, CODES[c]) for c in m.error.codes)
                blocks.append(error_text(m))
            continue
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
        write_output(args, to_json(list(chosen.values()), matches))
    else:
        write_output(args, to_text(blocks))
    return 0


EXAMPLES = """\
examples:
  cuwheel explain DC001                     a check code: its causes and the fix
  cuwheel explain DEP                       every code of a family
  cuwheel explain "CUDA error: no kernel image is available for execution on the device"
  cuwheel explain - < traceback.txt         error text from stdin
"""

"""``cuwheel explain [CODE|PREFIX|"ERROR TEXT"]... [--path SITE] [--gpu NAME] [--driver V]``:
what a check code means, its causes and the fix; or what a pasted run-time error means: the
facts it states, the causes they support with their fixes and, with an environment, the
distribution that causes it (docs/doctor.md#error-texts)."""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import add_output, write_output
from cuwheel.cli._doctor import targets_of, text_width
from cuwheel.errors import Exit

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
            "('no kernel image is available ...', '-' reads it from stdin): the facts it "
            "states (libraries, symbols, CUDA error names and numbers, architectures, "
            "versions) and the causes they support, the leading one first with its fix; "
            "with --path, the installed distribution that causes it. Text whose facts "
            "support no known cause exits 2."
        ),
    )
    p.add_argument("codes", nargs="*", metavar="CODE|TEXT",
                   help="check codes, code prefixes, or error text ('-': stdin)")
    p.add_argument("--list", action="store_true", help="list every code, one line each")
    p.add_argument("--path", action="append", default=[], metavar="SITE",
                   help="a site-packages directory to find the culprit distribution in "
                        "(repeatable)")  # fmt: skip
    p.add_argument("--gpu", action="append", default=[], metavar="NAME",
                   help="with --path: judge the environment on this GPU (doctor's diagnosis)")
    p.add_argument("--cc", action="append", default=[], metavar="X.Y",
                   help="with --path: judge the environment on this compute capability")
    p.add_argument("--driver", metavar="VERSION",
                   help="with --path: the driver version ('535.104.05') or its CUDA ('12.2')")
    add_output(p, ("text", "json"))
    p.set_defaults(handler=_run)


def _machine(args: argparse.Namespace) -> tuple[Any, Any]:
    """(environment, doctor's diagnosis or None) for --path [--gpu/--cc/--driver]."""
    if not args.path:
        return None, None
    from cuwheel.doctor import SearchContext, diagnose, read_environment, read_ld_cache
    from cuwheel.errors import CuwheelError

    for d in args.path:
        if not os.path.isdir(d):
            raise CuwheelError(f"--path {d}: not a directory")
    env = read_environment(args.path)
    if not (args.gpu or args.cc or args.driver):
        return env, None
    ctx = SearchContext.from_environ(dict(os.environ), read_ld_cache("/etc/ld.so.cache"))
    return env, diagnose(env, targets_of(args), ctx)


def _run(args: argparse.Namespace) -> int:
    # imported here: building the parser stays cheap (bench/bench_startup.py); a text's
    # diagnosis imports neither the check codes nor their renderer
    from cuwheel.doctor.explain import TextDiagnosis, diagnose_text
    from cuwheel.doctor.facts import MAX_TEXT
    from cuwheel.errors import UnknownCode, shown

    everything = args.list or not args.codes
    queries: list[str] = [] if everything else list(args.codes)
    blocks: list[list[str] | int] = []  # a code's lines, or the index of a text
    chosen: dict[str, Code] = {}
    texts: list[TextDiagnosis] = []
    if (args.gpu or args.cc or args.driver) and not args.path:
        from cuwheel.errors import CuwheelError

        raise CuwheelError("--gpu, --cc and --driver need --path (the environment to judge)")
    for q in queries:  # every query is looked up before anything is written
        if q == "-":
            q = sys.stdin.read(MAX_TEXT)
        found: list[Code] = []
        if _CODE_LIKE.fullmatch(q):
            from cuwheel.checks.codes import find_codes

            try:
                found = find_codes(q)
            except UnknownCode:
                if not diagnose_text(q).causes:
                    raise
        if found:
            blocks.append(_code_block(q, found, chosen))
            continue
        td = diagnose_text(q)
        if not td.causes:
            raise UnknownCode(
                f"no match: {shown(q.strip(), 80)} is neither a check code nor an error text "
                "whose facts support a cause cuwheel knows (cuwheel explain --list: the codes)"
            )
        blocks.append(len(texts))  # rendered below, once the environment is read
        texts.append(td)
    env, diagnosis = _machine(args) if texts else (None, None)
    blames = []
    if env is not None:
        from cuwheel.cli._common import info
        from cuwheel.doctor.culprits import NEEDS_TARGET, blame

        blames = [blame(td, env, diagnosis) for td in texts]
        if diagnosis is None and any(c.id in NEEDS_TARGET for td in texts for c in td.causes):
            info("which distribution lacks code for the GPU or needs a newer driver: add "
                 "--gpu NAME and --driver VERSION")
    if everything:
        from cuwheel.checks.codes import CODES
        from cuwheel.render.explain import list_text

        chosen.update(CODES)
        blocks.append(list_text(list(CODES.values())))
    if args.format == "json":
        return _json(args, chosen, texts, blames if env is not None else None)
    from cuwheel._text import escape_lines
    from cuwheel.render.diagnosis import diagnosis_lines

    width = text_width()
    lines: list[str] = []
    for b in blocks:
        if isinstance(b, int):
            b = diagnosis_lines(texts[b], width, blames[b] if env is not None else None)
        lines += ([""] if lines else []) + b
    write_output(args, escape_lines(lines))
    return Exit.OK


def _code_block(q: str, found: list[Code], chosen: dict[str, Code]) -> list[str]:
    from cuwheel.checks.codes import FAMILIES
    from cuwheel.render.explain import explain_text, list_text

    chosen.update((c.code, c) for c in found)
    if len(found) == 1 and found[0].code == q.strip().upper():
        return explain_text(found[0])
    prefix = q.strip().upper()
    return list_text(found, prefix if prefix in FAMILIES else None)


def _json(args: argparse.Namespace, chosen: dict[str, Code], texts: list[Any],
          blames: list[Any] | None) -> int:
    from cuwheel.checks.codes import CODES
    from cuwheel.render.diagnosis import diagnosis_json
    from cuwheel.render.explain import to_json

    for td in texts:
        chosen.update((c, CODES[c]) for cause in td.causes for c in cause.codes)
    errors = [diagnosis_json(td, blames[i] if blames is not None else None)
              for i, td in enumerate(texts)]
    write_output(args, to_json(list(chosen.values()), errors))
    return Exit.OK


EXAMPLES = """\
examples:
  cuwheel explain DC001                     a check code: its causes and the fix
  cuwheel explain DEP                       every code of a family
  cuwheel explain "CUDA error: no kernel image is available for execution on the device"
  cuwheel explain - < traceback.txt         error text from stdin
  cuwheel explain "$(cat log.txt)" --path .venv/lib/python3.12/site-packages --gpu H100
"""

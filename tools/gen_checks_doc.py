"""Write docs/checks.md's per-code sections from cuwheel's codes (src/cuwheel/data/codes.toml).

    python tools/gen_checks_doc.py          # rewrites the generated sections
    python tools/gen_checks_doc.py --check  # exit 1 when docs/checks.md differs

The hand-written prose around them stays: each generated block sits between a start
marker naming its codes (``<!-- codes DC001-DC007: ... -->``, a range in the data's order)
and ``<!-- end codes -->``.  Each code gets a stable anchor (``#dc001``, what
``cuwheel._urls.code_url`` links to) and a heading ``### DC001 (error) title``; codes that
share an explanation (``same-as``) get stacked headings and the text once.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Mapping
from pathlib import Path

from cuwheel.checks.codes import Code

ROOT = Path(__file__).resolve().parents[1]
DOC = ROOT / "docs" / "checks.md"
START = re.compile(r"<!-- codes ([A-Z]+[0-9]{3})-([A-Z]+[0-9]{3}): [^>]*-->")
END = "<!-- end codes -->"
NOTE = "generated from src/cuwheel/data/codes.toml by tools/gen_checks_doc.py; edit the data"


def sections(codes: list[Code]) -> list[str]:
    """The Markdown lines of ``codes``' sections."""
    lines: list[str] = []
    for i, c in enumerate(codes):
        if lines:
            lines.append("")
        lines += [f'<a id="{c.code.lower()}"></a>', "", f"### {c.code} ({c.severity}) {c.title}"]
        following = codes[i + 1] if i + 1 < len(codes) else None
        if following is None or following.explanation != c.explanation:
            lines += c.explanation.split("\n")
    return lines


def render(doc: str, codes: Mapping[str, Code]) -> str:
    """``doc`` with every generated block rewritten; ValueError for a broken marker."""
    order = list(codes)
    out: list[str] = []
    lines = doc.split("\n")
    i = 0
    while i < len(lines):
        m = START.fullmatch(lines[i])
        if m is None:
            if lines[i] == END:
                raise ValueError(f"line {i + 1}: {END} without a start marker")
            out.append(lines[i])
            i += 1
            continue
        first, last = m[1], m[2]
        if first not in codes or last not in codes or order.index(first) > order.index(last):
            raise ValueError(f"line {i + 1}: no range of codes {first}-{last}")
        try:
            end = lines.index(END, i)
        except ValueError:
            raise ValueError(f"line {i + 1}: no {END} after it") from None
        chosen = order[order.index(first) : order.index(last) + 1]
        out += [f"<!-- codes {first}-{last}: {NOTE} -->", "",
                *sections([codes[c] for c in chosen]), "", END]  # fmt: skip
        i = end + 1
    return "\n".join(out)


def covered(doc: str, codes: Mapping[str, Code]) -> list[str]:
    """The codes of every generated block, in order (each code should be in one)."""
    order: list[str] = []
    names = list(codes)
    for m in START.finditer(doc):
        order += names[names.index(m[1]) : names.index(m[2]) + 1]
    return order


def main() -> int:
    from cuwheel.checks.codes import CODES

    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--check", action="store_true", help="exit 1 when docs/checks.md differs")
    args = ap.parse_args()
    doc = DOC.read_text(encoding="utf-8")
    new = render(doc, CODES)
    if args.check:
        if new != doc:
            print(f"{DOC}: out of date; run python tools/gen_checks_doc.py", file=sys.stderr)
            return 1
        return 0
    DOC.write_text(new, encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Text results fitted to the terminal: a line wider than the width is broken at spaces,
its continuation lines indented under the line's label (``legend: ``, ``SASS  ``,
``note: ``) or four columns in. A word longer than the width (a path) is never broken:
it stays whole on a line of its own, the one case a line may be wider."""

from __future__ import annotations

import re
import textwrap

__all__ = ["fit", "fit_line"]

# A label the rest of the line belongs to: "legend: ", "not derived: ", "SASS  ".
_LABEL = re.compile(r"\s*(?:[A-Za-z][\w .()-]{0,24}?: +(?=\S)|(?:\S{1,12} {2,})+(?=\S))")
# A line that continues the prose of the one before it (same indent, a lower-case start,
# no column gap): reflowed with it, not wrapped alone.
_PROSE = re.compile(r" *(?![a-z][\w -]{0,24}: )[a-z(`'\"][^ ]*(?: [^ ]+)*")
MIN_TEXT = 24  # a continuation keeps at least this many columns for text


def fit_line(line: str, width: int, *, paragraph: bool = False) -> list[str]:
    """``line`` as lines of at most ``width`` columns where its words allow; a
    ``paragraph`` continues at its own indent."""
    if len(line) <= width:
        return [line]
    indent = len(line) - len(line.lstrip(" "))
    m = None if paragraph else _LABEL.match(line)
    hang = m.end() if m is not None else indent + (0 if paragraph else 4)
    if hang > width - MIN_TEXT:
        hang = max(min(indent + 4, width - MIN_TEXT), 0)
    return textwrap.wrap(line, width, subsequent_indent=" " * hang, break_long_words=False,
                         break_on_hyphens=False) or [line]


def _indent(line: str) -> int:
    return len(line) - len(line.lstrip(" "))


def fit(text: str, width: int) -> str:
    """Every line of ``text`` fitted to ``width``. A wrapped line takes the prose lines
    that continue it along (a paragraph laid out for a wider terminal is reflowed, not
    left ragged); other lines keep their ends."""
    lines = text.split("\n")
    out: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if len(line) <= width:
            out.append(line)
            continue
        joined = False
        while (i < len(lines) and lines[i].strip() and _indent(lines[i]) == _indent(line)
               and _PROSE.fullmatch(lines[i])):
            line = f"{line} {lines[i].strip()}"
            joined = True
            i += 1
        out.extend(fit_line(line, width, paragraph=joined))
    return "\n".join(out)

"""Renderers of ``cuwheel explain``: a code's explanation (heading, causes and fix, the
docs link), or one line per code for a family or the whole list; text or JSON (the common
envelope; schema in ``cuwheel/data/explain.schema.json``).  An error text's diagnosis is
:mod:`cuwheel.render.diagnosis`'s."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuwheel._urls import code_url
from cuwheel.checks.codes import FAMILIES, Code
from cuwheel.render.envelope import envelope
from cuwheel.render.escape import dumps, escape_lines

__all__ = ["explain_text", "list_text", "to_json", "to_json_data", "to_text"]


def explain_text(code: Code) -> list[str]:
    """The full explanation of one code."""
    return [
        f"{code.code} ({code.severity}): {code.title}",
        "",
        *code.explanation.split("\n"),
        "",
        f"docs: {code_url(code.code)}",
    ]


def list_text(codes: Sequence[Code], family: str | None = None) -> list[str]:
    """One line per code (code, default severity, title), under a family's heading."""
    lines = [f"{family}: {FAMILIES[family]}"] if family in FAMILIES else []
    width = max((len(c.code) for c in codes), default=0)
    lines += [f"{'  ' if lines else ''}{c.code:<{width}}  {c.severity!s:<8} {c.title}"
              for c in codes]  # fmt: skip
    return lines


def to_text(blocks: Sequence[list[str]]) -> str:
    """Blocks of lines, a blank line between them."""
    lines: list[str] = []
    for block in blocks:
        if lines:
            lines.append("")
        lines += block
    return escape_lines(lines)


def _code_json(c: Code) -> dict[str, Any]:
    return {
        "code": c.code,
        "family": c.family,
        "severity": str(c.severity),
        "title": c.title,
        "explanation": c.explanation,
        "help_url": code_url(c.code),
    }


def to_json_data(codes: Sequence[Code], errors: Sequence[dict[str, Any]] = ()) -> dict[str, Any]:
    """The explain document; ``errors``: render.diagnosis.diagnosis_json of each text."""
    doc = {**envelope("explain"), "codes": [_code_json(c) for c in codes]}
    if errors:
        doc["errors"] = list(errors)
    return doc


def to_json(codes: Sequence[Code], errors: Sequence[dict[str, Any]] = ()) -> str:
    return dumps(to_json_data(codes, errors), indent=2) + "\n"

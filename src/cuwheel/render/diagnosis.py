"""Renderers of a pasted error's diagnosis (``cuwheel explain TEXT``, ``cuwheel doctor
--error TEXT``): the leading cause and its fix first, what the facts mean, the facts used,
doubt said aloud; the other causes after it; with an environment, the distributions behind
each cause.  Text wrapped to a width; JSON as the ``errors`` of the explain document
(schema ``cuwheel/data/explain.schema.json``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from cuwheel.doctor.explain import Cause, TextDiagnosis
from cuwheel.doctor.facts import Fact

if TYPE_CHECKING:  # the culprits module reads environments: not needed to print a text's
    from cuwheel.doctor.culprits import Blame

__all__ = ["diagnosis_json", "diagnosis_lines", "wrap"]


def wrap(text: str, width: int, first: str = "", rest: str | None = None) -> list[str]:
    """``text`` in lines of at most ``width`` characters (a longer word keeps its own
    line), the first led by ``first``, the others by ``rest`` (default: as many spaces)."""
    rest = " " * len(first) if rest is None else rest
    out: list[str] = []
    line, lead = "", first
    for word in text.split():
        if line and len(lead) + len(line) + 1 + len(word) > width:
            out.append(lead + line)
            line, lead = word, rest
        else:
            line = f"{line} {word}" if line else word
    if line:
        out.append(lead + line)
    return out


def _fact(f: Fact) -> str:
    return f"{f.kind} {f.value}"


def _cause_lines(c: Cause, width: int, lead: bool) -> list[str]:
    head = "cause" if c.packaging else "not a packaging problem"
    doubt = "" if c.sure else " (unsure)"
    if not lead:
        return wrap(f"{c.title}{doubt} [{c.id}]", width, "  also: ")
    lines = wrap(f"{c.title}{doubt} [{c.id}]", width, f"{head}: ")
    lines += wrap(c.fix, width, "  fix: ", "       ")
    lines += wrap(c.cause, width, "  why: ", "       ")
    for b in c.because:
        lines += wrap(b, width, "  known: ", "         ")
    if c.facts:
        lines += wrap(", ".join(_fact(f) for f in c.facts), width, "  facts used: ", "    ")
    if not c.sure:
        lines += wrap("the facts fit more than one cause; check with the command below.",
                      width, "  unsure: ", "    ")
    if c.codes:
        lines += wrap(" ".join(c.codes), width, "  codes that predict it: ", "    ")
    if c.command:
        lines.append(f"  find the culprit: {c.command}")
    return lines


def diagnosis_lines(td: TextDiagnosis, width: int = 88,
                    blames: Sequence[Blame] | None = None) -> list[str]:
    """The text answer: a line naming the culprit distribution first where an environment
    was read, then the leading cause, the others, and every distribution's part."""
    lines: list[str] = []
    if not td.causes:
        found = ", ".join(_fact(f) for f in td.facts if f.kind not in ("os", "tool"))
        lines += wrap("no cause known for this text" + (f"; facts read: {found}" if found
                                                        else ""), width)
        return lines
    culprits = [b for b in blames or () if b.role == "culprit"]
    lead = td.causes[0]
    if culprits:
        b = culprits[0]
        reason = b.reason.split("; ")[0]
        lines += wrap(f"{b.distribution}: {lead.title} ({reason})", width, "culprit: ")
    for i, c in enumerate(td.causes):
        lines += _cause_lines(c, width, i == 0)
    if blames:
        lines.append("distributions:")
        for b in blames:
            lines += wrap(f"{b.distribution} [{b.cause}]: {b.reason}", width,
                          f"  {b.role}: ", "      ")
    elif blames is not None:
        lines.append("distributions: none installed has a part in it")
    return lines


def _fact_json(f: Fact) -> dict[str, Any]:
    return {"kind": f.kind, "value": f.value, "quote": f.quote, "detail": f.detail}


def diagnosis_json(td: TextDiagnosis, blames: Sequence[Blame] | None = None) -> dict[str, Any]:
    return {
        "facts": [_fact_json(f) for f in td.facts],
        "causes": [{
            "id": c.id, "title": c.title, "packaging": c.packaging, "sure": c.sure,
            "cause": c.cause, "fix": c.fix, "because": list(c.because),
            "install": list(c.install), "facts": [_fact_json(f) for f in c.facts],
            "codes": list(c.codes), "command": c.command,
        } for c in td.causes],
        "distributions": None if blames is None else [
            {"cause": b.cause, "distribution": b.distribution, "role": b.role,
             "reason": b.reason} for b in blames],
    }  # fmt: skip

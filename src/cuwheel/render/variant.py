"""``cuwheel variant``: derived properties, and the findings on declared ones, as text or
JSON (data/variant.schema.json)."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from cuwheel.checks.findings import Finding
from cuwheel.render.envelope import envelope
from cuwheel.render.escape import dumps, escape_lines
from cuwheel.variant import Declared, Derived

__all__ = ["variant_doc", "variant_text"]

Item = tuple[Derived, Declared | None, tuple[Finding, ...], str]  # + its variant.json


def variant_text(items: Sequence[Item]) -> str:
    out: list[str] = []
    for derived, declared, findings, _ in items:
        out.append(f"{derived.source}: {len(derived.libraries)} libraries with device code")
        out.append("  derived (backed by every library):")
        out += [f"    {p}" for p in derived.properties] or ["    (none)"]
        if derived.lower_bound_from:
            out.append(f"  lower bound: {derived.lower_bound_from}")
        if derived.ptx_jit_needs:
            out.append(f"  PTX JIT needs a CUDA {derived.ptx_jit_needs} driver or newer")
        for p in derived.partial:
            miss = ", ".join(p.missing[:3]) + (", ..." if len(p.missing) > 3 else "")
            out.append(f"  not derived: {p.value} (missing in {len(p.missing)}: {miss})")
        out += [f"  note: {n}" for n in derived.notes]
        if declared is not None:
            out.append(f"  declared (label {declared.label}):")
            out += [f"    {p}" for p in declared.properties] or ["    (none)"]
            for f in findings:
                out.append(f"  {f.severity}: {f.code} {f.line()}")
            if not findings:
                out.append("  PASS: every declared property is backed by the code")
    return escape_lines(out)


def variant_doc(items: Sequence[Item]) -> str:
    doc: dict[str, Any] = envelope("variant")
    doc["wheels"] = [
        {
            "path": d.source,
            "libraries": list(d.libraries),
            "derived": list(d.properties),
            "not_derived": [{"property": p.value, "missing": list(p.missing)} for p in d.partial],
            "lower_bound_from": d.lower_bound_from,
            "ptx_jit_needs": d.ptx_jit_needs,
            "notes": list(d.notes),
            "variant_json": json.loads(vj),
            "declared": None if dec is None else {
                "label": dec.label, "properties": list(dec.properties),
                "problems": list(dec.problems),
            },
            "findings": [
                {"code": f.code, "severity": str(f.severity), "message": f.message,
                 "library": f.library}
                for f in fs
            ],
        }
        for d, dec, fs, vj in items
    ]  # fmt: skip
    return dumps(doc, indent=2) + "\n"

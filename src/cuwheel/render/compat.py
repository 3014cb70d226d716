"""Renderers for compat results: text, JSON (the ``cuwheel-compat`` and
``cuwheel-compat-matrix`` documents of render/envelope.py) and an SVG matrix."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

from cuwheel.compat import (
    ContainerVerdict,
    GroupVerdict,
    LibraryVerdict,
    Matrix,
    SourceVerdict,
    Target,
    TargetReport,
    Verdict,
    WheelState,
)
from cuwheel.model.inventory import member_of
from cuwheel.render.envelope import envelope
from cuwheel.render.escape import escape_lines, xml_text
from cuwheel.rules.rollup import combine_states

__all__ = [
    "COLORS",
    "exit_code",
    "matrix_json",
    "matrix_svg",
    "matrix_text",
    "report_json",
    "report_text",
    "short_path",
]


COLORS = {
    Verdict.HOST: "#e0e0e0",
    Verdict.NATIVE: "#2e7d32",
    Verdict.COMPATIBLE: "#66bb6a",
    Verdict.PTX_JIT: "#fbc02d",
    Verdict.OTHER_GPUS: "#b0bec5",
    Verdict.DEPENDS: "#ffe082",
    Verdict.PARTIAL: "#fb8c00",
    Verdict.DRIVER: "#8e24aa",
    Verdict.NO_CODE: "#c62828",
    Verdict.PLATFORM: "#5d4037",
}
_WHITE_TEXT = (Verdict.NATIVE, Verdict.DRIVER, Verdict.NO_CODE, Verdict.PLATFORM)
_TEXT_ON = dict.fromkeys(_WHITE_TEXT, "#fff")


def short_path(path: str) -> str:
    """``x.whl!torch/lib/libtorch_cuda.so`` -> ``libtorch_cuda.so``."""
    inner = path.rsplit("!", 1)[-1]
    return os.path.basename(inner.rstrip("/")) or inner


def _target_json(t: Target) -> dict[str, Any]:
    return {
        "label": t.label,
        "cc": t.arch.cc,
        "sass": t.arch.sass,
        "family": t.family,
        "driver": None
        if t.driver is None
        else {
            "version": t.driver.version,
            "cuda": None if t.driver.cuda is None else f"{t.driver.cuda[0]}.{t.driver.cuda[1]}",
        },
    }


def _container_json(c: ContainerVerdict) -> dict[str, Any]:
    return {
        "offset": c.offset,
        "size": c.size,
        "section": c.section,
        "codes": list(c.codes),
        "verdict": c.verdict.value if c.verdict else None,
        "chosen": c.chosen,
        "reason": c.reason,
        "ignored": c.ignored,
    }


def _library_json(lv: LibraryVerdict, source: str, containers: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": member_of(source, lv.path) or lv.path,
        "verdict": lv.verdict.value,
        "runs": lv.verdict.runs,
        "reason": lv.reason,
        "counts": lv.counts,
        "runtime": None
        if lv.runtime is None
        else {
            "major": lv.runtime.major,
            "library": lv.runtime.library,
            "floor": lv.runtime.floor,
            "ok": lv.runtime.ok,
            "reason": lv.runtime.reason,
        },
    }
    if containers:
        out["containers"] = [_container_json(c) for c in lv.containers]
    return out


def _group_json(g: GroupVerdict) -> dict[str, Any]:
    return {
        "members": [a.path.rsplit("!", 1)[-1] for a in g.members],
        "verdict": g.verdict.value,
        "reason": g.reason,
        "chosen": g.chosen,
        "running": list(g.running),
        "not_for_this_gpu": list(g.not_for),
        "failing": list(g.failing),
    }


def _source_json(s: SourceVerdict, containers: bool) -> dict[str, Any]:
    def rel(lv: LibraryVerdict) -> str:
        return member_of(s.path, lv.path) or lv.path

    return {
        "path": s.path,
        "kind": s.kind,
        "state": s.state.value,
        "reason": s.reason,
        "verdict": s.verdict.value if s.verdict else None,
        "culprits": [rel(lv) for lv in s.culprits],
        "depends_on_dispatch": [rel(lv) for lv in s.doubtful],
        "for_other_gpus": [rel(lv) for lv in s.other_gpus],
        "alternatives": [_group_json(g) for g in s.groups],
        "libraries": [_library_json(lv, s.path, containers) for lv in s.libraries],
    }


def report_json(reports: Sequence[TargetReport], *, containers: bool = False) -> dict[str, Any]:
    """The ``cuwheel-compat`` document (data/compat.schema.json); library paths are
    relative to their source."""
    return {
        **envelope("compat"),
        "runs": (
            False if not all(r.runs for r in reports)
            else True if all(r.known for r in reports) else None
        ),
        "state": combine_states(r.state for r in reports).value,
        "exit_code": exit_code(reports),
        "targets": [
            {
                "target": _target_json(r.target),
                "device_cc": r.device.cc,
                "state": r.state.value,
                "verdict": r.verdict.value if r.verdict else None,
                "runs": r.runs if r.known or not r.runs else None,
                "unread": list(r.unread),
                "notes": list(r.notes),
                "sources": [_source_json(s, containers) for s in r.sources],
            }
            for r in reports
        ],
    }


def exit_code(reports: Sequence[TargetReport]) -> int:
    """The documented exit status of a compat answer (docs/compat.md#wheel-verdicts)."""
    return int(combine_states(r.state for r in reports).exit_code)


def _counts_text(lv: LibraryVerdict) -> str:
    counts = lv.counts
    if not lv.containers:
        return ""
    parts = [f"{n} {k}" for k, n in counts.items()]
    return f"{len(lv.containers)} containers: " + ", ".join(parts)


def _name(s: SourceVerdict, lv: LibraryVerdict) -> str:
    return member_of(s.path, lv.path) or short_path(lv.path)


def _headline(r: TargetReport) -> str:
    t = r.target
    drv = f" with {t.driver}" if t.driver else ""
    head = f"{t.label}{drv}: {r.state.heading}"
    if r.state is WheelState.NOTHING:
        return head + " (no device code, no CUDA runtime linked)"
    if r.state is WheelState.UNKNOWN and r.unread:
        return head + f": {len(r.unread)} input(s) could not be read"
    named = [short_path(lv.path) for lv in r.culprits]
    named += [
        short_path(g.members[0].path) + " (every variant)"
        for s in r.sources
        for g in s.groups
        if g.verdict.fails
    ]
    if not named and r.state is WheelState.DEPENDS:
        named = [short_path(lv.path) for s in r.sources for lv in s.doubtful]
    if named:
        return head + " " + ", ".join(named[:3]) + (f" and {len(named) - 3} more" if len(
            named) > 3 else "")
    how = worst_how(r)
    return head + (f" ({how.value})" if how else "")


def worst_how(r: TargetReport) -> Verdict | None:
    hows = [s.how for s in r.sources if s.how is not None]
    return max(hows, key=lambda v: v.rank, default=None)


def _library_lines(s: SourceVerdict, lv: LibraryVerdict, verbose: bool) -> list[str]:
    lines = [f"    {_name(s, lv)}: {lv.verdict.value}", f"        {lv.reason}"]
    ct = _counts_text(lv)
    if ct and (verbose or len(lv.containers) > 1):
        lines.append(f"        {ct}")
    if lv.runtime is not None and lv.runtime.reason != lv.reason and (
        verbose or not lv.runtime.ok
    ):
        lines.append(f"        runtime: {lv.runtime.reason}")
    if verbose:
        for c in lv.containers:
            v = c.verdict.value if c.verdict else "-"
            ign = f" [ignored: {c.ignored}]" if c.ignored else ""
            lines.append(
                f"          @{c.offset:#x} {','.join(c.codes) or '(empty)'}: {v} - {c.reason}{ign}"
            )
    return lines


def _source_lines(s: SourceVerdict, verbose: bool) -> list[str]:
    # The input by its file name: the directories it was found in are the user's own
    # (an absolute path to a wheel alone would fill the line).
    name = os.path.basename(s.path.rstrip("/")) or s.path
    if not s.libraries:
        return [f"  {name}: nothing CUDA"]
    # The reason names the culprit; its own lines follow, so the source line is short then.
    said = bool(s.culprits or s.doubtful)
    lines = [f"  {name}: {s.state.value}" + ("" if said else f": {s.reason}")]
    grouped = {a.path for g in s.groups for a in g.members}
    shown: set[str] = set()
    for lv in (*s.culprits, *s.doubtful):  # the culprits first
        lines += _library_lines(s, lv, verbose)
        shown.add(lv.path)
    for g in s.groups:
        label = short_path(g.members[0].path)
        lines.append(f"    {label} and {len(g.members) - 1} alternative(s): {g.verdict.value}")
        lines.append(f"        {g.reason}")
    if s.other_gpus and not verbose:
        names = [_name(s, lv) for lv in s.other_gpus]
        lines.append(
            f"    for other GPUs ({len(names)}, arch- or family-specific modules): "
            + ", ".join(names[:4]) + (", ..." if len(names) > 4 else "")
        )
        shown.update(lv.path for lv in s.other_gpus)
    rest = [lv for lv in s.libraries if lv.path not in shown and lv.path not in grouped]
    if verbose:
        for lv in rest:
            lines += _library_lines(s, lv, verbose)
        for g in s.groups:
            for lv in s.libraries:
                if lv.path in {a.path for a in g.members}:
                    lines += _library_lines(s, lv, verbose)
    elif rest:
        counts: dict[str, int] = {}
        for lv in rest:
            counts[lv.verdict.value] = counts.get(lv.verdict.value, 0) + 1
        if len(rest) == 1:
            lines += _library_lines(s, rest[0], verbose)
        else:
            parts = ", ".join(f"{n} {v}" for v, n in counts.items())
            lines.append(f"    {len(rest)} other libraries: {parts} (-v lists them)")
    return lines


def report_text(reports: Sequence[TargetReport], *, verbose: bool = False,
                width: int | None = None) -> str:
    """The answer first, naming the culprit and the GPU as the user typed it; then per
    source the culprits, alternatives and modules for other GPUs; the rest behind -v.
    ``width``: lines wrapped to it, continuations indented under their line."""
    lines: list[str] = []
    for r in reports:
        lines.append(_headline(r))
        for u in r.unread:
            lines.append(f"  unread: {u}")
        for s in r.sources:
            lines += _source_lines(s, verbose)
        for n in r.notes:
            lines.append(f"  note: {n}")
        lines.append("")
    return escape_lines(_fit(lines[:-1], width))


def _fit(lines: Sequence[str], width: int | None) -> list[str]:
    if not width:
        return list(lines)
    import textwrap

    out: list[str] = []
    for line in lines:
        body = line.lstrip(" ")
        if len(line) <= width or " " not in body:  # a name alone is kept whole
            out.append(line)
            continue
        indent = " " * (len(line) - len(body))
        out += textwrap.wrap(body, max(width, len(indent) + 24), initial_indent=indent,
                             subsequent_indent=indent + "    ", break_long_words=False,
                             break_on_hyphens=False)
    return out


# ---------------------------------------------------------------------------- matrix


def _column_names(m: Matrix) -> list[str]:
    names = [short_path(c) for c in m.columns]
    dup = {n for n in names if names.count(n) > 1}
    return [c.rsplit("!", 1)[-1] if n in dup else n for n, c in zip(names, m.columns, strict=True)]


def _cell(v: Verdict | None) -> str:
    return "" if v is None else v.short


def matrix_text(m: Matrix, width: int | None = None) -> str:
    """The table; wider than ``width`` columns, the libraries are shown in blocks that
    fit, each with the GPU column again."""
    cols = _column_names(m)
    if not cols:
        return "no library with device code found\n"
    row_w = max([len("GPU")] + [len(t.label) for t in m.targets])
    key: list[str] = []
    if width is not None and row_w + sum(max(len(c), 7) + 2 for c in cols) > width:
        key = [f"[{j + 1}] {c}" for j, c in enumerate(cols)]  # headers by number
        cols = [f"[{j + 1}]" for j in range(len(cols))]
    widths = [max(len(c), 7) for c in cols]
    blocks: list[list[int]] = [[]]
    used = row_w
    for j, w in enumerate(widths):
        if blocks[-1] and width is not None and used + 2 + w > width:
            blocks.append([])
            used = row_w
        blocks[-1].append(j)
        used += 2 + w
    lines: list[str] = []
    for block in blocks:
        if lines:
            lines.append("")
        lines.append("  ".join(["GPU".ljust(row_w), *(cols[j].ljust(widths[j]) for j in block)])
                     .rstrip())
        for i, t in enumerate(m.targets):
            cells = [_cell(m.cells[i][j]).ljust(widths[j]) for j in block]
            lines.append("  ".join([t.label.ljust(row_w), *cells]).rstrip())
    legend = ", ".join(f"{v.short} = {v.value}" for v in Verdict if v is not Verdict.HOST)
    lines.append("")
    lines.extend(key)
    lines.append(f"legend: {legend}")
    drivers = {str(t.driver) for t in m.targets if t.driver}
    lines.append(
        f"driver: {', '.join(sorted(drivers))}"
        if drivers
        else "driver: not given (gates assumed met)"
    )
    return escape_lines(lines)


def matrix_json(m: Matrix) -> dict[str, Any]:
    """The ``cuwheel-compat-matrix`` document (data/compat-matrix.schema.json)."""
    return {
        **envelope("compat-matrix"),
        "columns": list(m.columns),
        "rows": [
            {
                "target": _target_json(t),
                "runs": m.row_runs(i),
                "notes": list(m.reports[i].notes),
                "cells": [None if v is None else v.value for v in m.cells[i]],
            }
            for i, t in enumerate(m.targets)
        ],
    }


def matrix_svg(m: Matrix, title: str = "cuwheel compat") -> str:
    """The matrix as a standalone SVG table (plain strings; no drawing library)."""
    cols = _column_names(m)
    char_w, row_h, pad = 7.2, 22, 8
    label_w = int(max([len("GPU")] + [len(t.label) for t in m.targets]) * char_w) + 2 * pad
    col_ws = [int(max(len(c), 8) * char_w) + 2 * pad for c in cols]
    top = 30 + row_h
    legend = [v for v in Verdict if v is not Verdict.HOST]
    legend_labels = [f"{v.short} = {v.value}" if v.short != v.value else v.value for v in legend]
    legend_w = sum(int((len(lb) + 4) * char_w) for lb in legend_labels) + 2 * pad
    width = max(label_w + sum(col_ws) + 1, legend_w)
    legend_y = top + row_h * len(m.targets) + 20
    height = legend_y + 30
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="DejaVu Sans Mono, Menlo, Consolas, monospace" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{pad}" y="20" font-size="14" font-weight="bold">{xml_text(title)}</text>',
    ]
    x = label_w
    out.append(f'<text x="{pad}" y="{top - 7}" font-weight="bold">GPU</text>')
    for c, w in zip(cols, col_ws, strict=True):
        out.append(f'<text x="{x + pad}" y="{top - 7}" font-weight="bold">{xml_text(c)}</text>')
        x += w
    for i, t in enumerate(m.targets):
        y = top + i * row_h
        out.append(f'<text x="{pad}" y="{y + 15}">{xml_text(t.label)}</text>')
        x = label_w
        for v, w in zip(m.cells[i], col_ws, strict=True):
            fill = COLORS.get(v, "#ffffff") if v else "#ffffff"
            ink = _TEXT_ON.get(v, "#000") if v else "#000"
            out.append(
                f'<rect x="{x}" y="{y}" width="{w}" height="{row_h}" fill="{fill}" '
                f'stroke="#ffffff"/>'
            )
            if v is not None:
                out.append(
                    f'<text x="{x + w / 2:.0f}" y="{y + 15}" text-anchor="middle" '
                    f'fill="{ink}">{xml_text(v.short)}</text>'
                )
            x += w
    x = pad
    for v, label in zip(legend, legend_labels, strict=True):
        out.append(f'<rect x="{x}" y="{legend_y}" width="12" height="12" fill="{COLORS[v]}"/>')
        out.append(f'<text x="{x + 16}" y="{legend_y + 11}">{xml_text(label)}</text>')
        x += int((len(label) + 4) * char_w)
    out.append("</svg>")
    return "\n".join(out) + "\n"

"""``cuwheel size``: the ledger and its what-if as text, JSON (data/size.schema.json),
and a picture (stacked bars per library in SVG, or the SVG inside an HTML page)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuwheel.model.inventory import CodeKind, member_of
from cuwheel.render.envelope import envelope
from cuwheel.render.escape import dumps, escape_lines, xml_text
from cuwheel.size.ledger import ArchBytes, LibraryLedger, SourceLedger
from cuwheel.size.whatif import Estimate

__all__ = ["APPORTIONING", "size_html", "size_json", "size_svg", "size_text"]

APPORTIONING = (
    "each zip member's compressed size is shared among its fatbin entries and the rest of "
    "the binary in proportion to their own raw-deflate sizes (level 6, 64 KiB blocks, "
    "sampled on big binaries); outside a wheel, zipped is that deflate estimate itself"
)


def human(n: float) -> str:
    sign = "-" if n < 0 else ""
    v = abs(float(n))
    for unit in ("B", "KiB", "MiB", "GiB"):
        if v < 1024 or unit == "GiB":
            return f"{sign}{v:.0f} {unit}" if unit == "B" else f"{sign}{v:.1f} {unit}"
        v /= 1024
    return f"{sign}{v:.1f} GiB"  # pragma: no cover


def _lib_name(src: SourceLedger, lib: LibraryLedger) -> str:
    return member_of(src.path, lib.path) or lib.path


def _zipped_of(lib: LibraryLedger) -> int:
    return lib.zipped if lib.zipped is not None else lib.size


# ---------------------------------------------------------------------------- text


def _arch_lines(archs: Sequence[ArchBytes], total: int, indent: str) -> list[str]:
    lines = [f"{indent}{'code':<14} {'entries':>7} {'stored':>11} {'zipped':>11} {'share':>6}"]
    for a in archs:
        share = 100.0 * a.zipped / total if total else 0.0
        isa = f"  (PTX ISA {', '.join(a.ptx_isa)})" if a.ptx_isa else ""
        lines.append(
            f"{indent}{a.name:<14} {a.entries:>7} {human(a.stored):>11} {human(a.zipped):>11} "
            f"{share:>5.1f}%{isa}"
        )
    return lines


def _whatif_lines(estimates: Sequence[Estimate]) -> list[str]:
    out: list[str] = ["  what-if:"] if estimates else []
    for e in estimates:
        delta = e.estimate - e.size
        pct = 100.0 * delta / e.size if e.size else 0.0
        out.append(
            f"    {e.scenario.label}: {human(e.size)} -> {human(e.estimate)} "
            f"({'+' if delta >= 0 else ''}{human(delta)}, {pct:+.1f}%)"
        )
        lost = [g for g in e.gpus if g.lost]
        other = [g for g in e.gpus if not g.lost]
        if lost:
            out.append("      gives up: " + "; ".join(
                f"{g.label} ({g.before} -> {g.after})" for g in lost))  # fmt: skip
        if other:
            out.append("      changes: " + "; ".join(
                f"{g.label} ({g.before} -> {g.after})" for g in other))  # fmt: skip
        if not e.gpus:
            out.append("      no GPU of the catalog changes verdict")
    return out


def size_text(ledgers: Sequence[SourceLedger], estimates: Sequence[Estimate]) -> str:
    out: list[str] = []
    for src in ledgers:
        out.append(f"{src.path} ({src.kind}, {human(src.size)})")
        if not src.libraries:
            out.append("  no device code")
            continue
        out += _arch_lines(src.archs, src.size, "  ")
        code = sum(a.zipped for a in src.archs)
        out.append(f"  {'other':<14} {'':>7} {'':>11} {human(src.size - code):>11} "
                   f"{100.0 * (src.size - code) / src.size if src.size else 0:>5.1f}%"
                   "  (host code, zip structure, other files)")  # fmt: skip
        out.append("  libraries:")
        for lib in src.libraries:
            modes = ", ".join(f"{n} {m}" for m, n in lib.modes)
            zipped = f", {human(lib.zipped)} zipped" if lib.zipped is not None else ""
            sampled = " (sampled)" if lib.sampled else ""
            out.append(
                f"    {_lib_name(src, lib)}: {human(lib.size)}{zipped}; "
                f"containers: {modes}{sampled}"
            )
            if len(src.libraries) > 1:  # one library: its table is the wheel's
                out += _arch_lines(lib.archs, _zipped_of(lib), "      ")
        out += _whatif_lines([e for e in estimates if e.sources and e.sources[0].path == src.path])
    return escape_lines(out)


# ---------------------------------------------------------------------------- json


def _arch(a: ArchBytes) -> dict[str, Any]:
    return {
        "name": a.name, "kind": a.kind.value, "arch": a.arch.number, "variant": a.arch.variant,
        "entries": a.entries, "stored": a.stored, "uncompressed": a.uncompressed,
        "zipped": a.zipped, "ptx_isa": list(a.ptx_isa),
    }  # fmt: skip


def _estimate(e: Estimate) -> dict[str, Any]:
    s = e.scenario
    return {
        "scenario": {
            "label": s.label,
            "drop_sass": [a.sass for a in sorted(s.drop_sass)],
            "drop_ptx": [a.ptx for a in sorted(s.drop_ptx)],
            "ptx_from": s.ptx_from.ptx if s.ptx_from else None,
            "compression": s.compression,
        },
        "size": e.size,
        "estimate": e.estimate,
        "sources": [
            {"path": x.path, "size": x.size, "estimate": x.estimate,
             "dropped_stored": x.dropped_stored, "dropped_zipped": x.dropped_zipped,
             "recompressed_delta": x.recompressed_delta, "method": x.method}
            for x in e.sources
        ],
        "gpus": [
            {"label": g.label, "cc": g.cc, "before": g.before, "after": g.after, "lost": g.lost}
            for g in e.gpus
        ],
    }  # fmt: skip


def size_json(ledgers: Sequence[SourceLedger], estimates: Sequence[Estimate]) -> str:
    doc = envelope("size")
    doc["apportioning"] = APPORTIONING
    doc["sources"] = [
        {
            "path": src.path, "kind": src.kind, "size": src.size,
            "other_zipped": src.size - sum(a.zipped for a in src.archs),
            "archs": [_arch(a) for a in src.archs],
            "libraries": [
                {"path": _lib_name(src, lib), "size": lib.size, "zipped": lib.zipped,
                 "other_stored": lib.other_stored, "other_zipped": lib.other_zipped,
                 "compression": {m: n for m, n in lib.modes}, "sampled": lib.sampled,
                 "archs": [_arch(a) for a in lib.archs]}
                for lib in src.libraries
            ],
        }
        for src in ledgers
    ]  # fmt: skip
    doc["what_if"] = [_estimate(e) for e in estimates]
    return dumps(doc, indent=2) + "\n"


# ---------------------------------------------------------------------------- picture

# One hue per major architecture family; SASS solid, PTX / LTO-IR lighter.
_PALETTE = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1",
            "#ff9da7", "#9c755f", "#bab0ac", "#1f77b4", "#8c564b"]  # fmt: skip
_LIGHT = {CodeKind.SASS: 1.0, CodeKind.PTX: 0.55, CodeKind.LTOIR: 0.35}


def _tint(hex_color: str, amount: float) -> str:
    r, g, b = (int(hex_color[i : i + 2], 16) for i in (1, 3, 5))
    mix = [round(c * amount + 255 * (1 - amount)) for c in (r, g, b)]
    return "#" + "".join(f"{c:02x}" for c in mix)


def size_svg(ledgers: Sequence[SourceLedger], title: str = "cuwheel size") -> str:
    """Stacked bars: one per library and one per source, each segment one code kind +
    architecture, widths proportional to zipped bytes (the grey tail: host code and the
    rest); the scale is shared so bars compare."""
    rows: list[tuple[str, int, Sequence[ArchBytes], bool]] = []
    for src in ledgers:
        rows.append((src.path.replace("\\", "/").rsplit("/", 1)[-1], src.size, src.archs, True))
        for lib in src.libraries:
            rows.append(("  " + _lib_name(src, lib), _zipped_of(lib), lib.archs, False))
    names = sorted({(a.arch.number, a.arch.variant) for _, _, archs, _ in rows for a in archs})
    color = {n: _PALETTE[i % len(_PALETTE)] for i, n in enumerate(names)}
    char_w, row_h, pad, bar_w = 7.2, 24, 10, 640
    label_w = int(max([12] + [len(r[0]) for r in rows]) * (char_w + 0.6)) + 2 * pad
    biggest = max([r[1] for r in rows] + [1])
    width = label_w + bar_w + 120
    top = 40
    rank = {CodeKind.SASS: 0, CodeKind.PTX: 1, CodeKind.LTOIR: 2}
    present = sorted({(a.arch.number, a.arch.variant, rank[a.kind]): a for _, _, archs, _ in rows
                      for a in archs}.items())  # fmt: skip
    legend_items = [
        (a.name, _tint(color[(a.arch.number, a.arch.variant)], _LIGHT[a.kind]))
        for _, a in present
    ]
    legend_items.append(("other (host code, zip)", "#d9d9d9"))
    per_line = max(1, (width - 2 * pad) // 150)
    legend_rows = -(-len(legend_items) // per_line)
    height = top + row_h * len(rows) + 30 + legend_rows * 18 + 10
    out = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" '
        f'font-family="DejaVu Sans, Helvetica, Arial, sans-serif" font-size="12">',
        f'<rect width="{width}" height="{height}" fill="#ffffff"/>',
        f'<text x="{pad}" y="22" font-size="15" font-weight="bold">{xml_text(title)}</text>',
        f'<text x="{label_w}" y="22" fill="#555">bar length: bytes in the wheel (zip-compressed); '
        f"full width = {xml_text(human(biggest))}</text>",
    ]
    for i, (label, total, archs, bold) in enumerate(rows):
        y = top + i * row_h
        weight = ' font-weight="bold"' if bold else ""
        out.append(f'<text x="{pad}" y="{y + 16}"{weight}>{xml_text(label.strip())}</text>')
        x = float(label_w)
        scale = bar_w / biggest
        for a in archs:
            w = a.zipped * scale
            fill = _tint(color[(a.arch.number, a.arch.variant)], _LIGHT[a.kind])
            tip = f"{a.name}: {human(a.zipped)} zipped, {human(a.stored)} stored"
            out.append(
                f'<rect x="{x:.2f}" y="{y + 3}" width="{max(w, 0):.2f}" height="{row_h - 6}" '
                f'fill="{fill}" stroke="#ffffff" stroke-width="0.5">'
                f"<title>{xml_text(tip)}</title></rect>"
            )
            x += w
        rest = max(0.0, total - sum(a.zipped for a in archs)) * scale
        out.append(
            f'<rect x="{x:.2f}" y="{y + 3}" width="{rest:.2f}" height="{row_h - 6}" '
            f'fill="#d9d9d9" stroke="#ffffff" stroke-width="0.5"/>'
        )
        out.append(f'<text x="{x + rest + 6:.0f}" y="{y + 16}" fill="#333">'
                   f"{xml_text(human(total))}</text>")  # fmt: skip
    ly = top + row_h * len(rows) + 24
    for j, (name, fill) in enumerate(legend_items):
        lx = pad + (j % per_line) * 150
        yy = ly + (j // per_line) * 18
        out.append(f'<rect x="{lx}" y="{yy - 10}" width="12" height="12" fill="{fill}"/>')
        out.append(f'<text x="{lx + 16}" y="{yy}">{xml_text(name)}</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def size_html(ledgers: Sequence[SourceLedger], estimates: Sequence[Estimate]) -> str:
    """The picture and the text report in one standalone page."""
    text = "\n".join(xml_text(line) for line in size_text(ledgers, estimates).splitlines())
    return (
        '<!DOCTYPE html>\n<html><head><meta charset="utf-8"><title>cuwheel size</title>'
        "</head><body>\n" + size_svg(ledgers) + "<pre>" + text + "</pre>\n</body></html>\n"
    )

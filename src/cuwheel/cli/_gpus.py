"""``cuwheel gpus [QUERY]``: search the GPU catalog by product, alias, family, chip or CC."""

from __future__ import annotations

import argparse
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import add_output, check_output_path, write_output
from cuwheel.errors import Exit
from cuwheel.render.escape import dumps, escape_lines

if TYPE_CHECKING:
    from cuwheel.knowledge.catalog import GpuMatch

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "gpus",
        help="look up GPUs: product name -> compute capability, architecture, CUDA releases",
        description=(
            "Search the GPU catalog. QUERY may be a product or alias ('4090', 'A10G', "
            "'RTX PRO 6000'), a family ('Hopper'), a chip ('GH100'), a compute capability "
            "('8.9') or an arch name ('sm_89'). Without QUERY, list every GPU."
        ),
    )
    p.add_argument("query", nargs="*", help="words to search for")
    add_output(p, ("text", "json"))
    p.set_defaults(handler=_run)


def _span(arch_releases: tuple[str, ...]) -> str:
    first, last = arch_releases[0], arch_releases[-1]
    return first if first == last else f"{first}-{last}"


def _nvcc_range(match: GpuMatch) -> str | None:
    from cuwheel.knowledge.catalog import releases_supporting, renames

    parts: list[str] = []
    supporting = tuple(r.name for r in releases_supporting(match.gpu.arch))
    if supporting:
        parts.append(_span(supporting))
    for rn in renames():
        if rn.new == match.gpu.arch:
            old = tuple(r.name for r in releases_supporting(rn.old))
            if old:
                parts.append(f"{_span(old)} as {rn.old}")
    return ", ".join(parts) or None


def _as_json(match: GpuMatch) -> dict[str, Any]:
    from cuwheel.knowledge.catalog import releases_supporting

    g = match.gpu
    return {
        "cc": g.cc,
        "sass": g.arch.sass,
        "family": g.family,
        "chips": list(g.chips),
        "products": [
            {"name": p.name, "segment": p.segment, "aliases": list(p.aliases), "note": p.note}
            for p in match.products
        ],
        "exact": match.exact,
        "cuda_releases": [r.name for r in releases_supporting(g.arch)],
        "source": g.source,
        "note": g.note,
    }


def _run(args: argparse.Namespace) -> int:
    from cuwheel.knowledge.catalog import find_gpus
    from cuwheel.render.envelope import envelope

    if args.output:
        check_output_path(args.output)
    query = " ".join(args.query)
    matches = find_gpus(query)
    if args.format == "json":
        doc = {**envelope("gpus"), "query": query, "gpus": [_as_json(m) for m in matches]}
        write_output(args, dumps(doc, indent=2) + "\n")
        return Exit.OK if matches else Exit.NO
    if not matches:
        from cuwheel.knowledge.catalog import gpu_hint

        write_output(args, f"no GPU matches {query!r}{gpu_hint(query)}\n")
        return Exit.NO
    lines: list[str] = []
    for m in matches:
        g = m.gpu
        chips = f" ({', '.join(g.chips)})" if g.chips else ""
        nvcc = _nvcc_range(m)
        built = f"  nvcc: CUDA {nvcc}" if nvcc else "  nvcc: no release in the catalog"
        lines.append(f"{g.arch.sass:<7} CC {g.cc:<5} {g.family}{chips}{built}")
        for p in m.products:
            aka = f" (also: {', '.join(p.aliases)})" if p.aliases else ""
            note = f" - {p.note}" if p.note else ""
            lines.append(f"    {p.name} [{p.segment}]{aka}{note}")
        if g.note:
            lines.append(f"    note: {g.note}")
    write_output(args, escape_lines(lines))
    return Exit.OK


EXAMPLES = """\
examples:
  cuwheel gpus A10G                             compute capability, family, CUDA releases
  cuwheel gpus Hopper
  cuwheel gpus 12.0 -f json
"""

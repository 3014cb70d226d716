"""The ``cuwheel inspect --format json`` document: the common envelope (_envelope.py)
and the sources read; schema in data/inspect.schema.json."""

from __future__ import annotations

from typing import Any

from cuwheel.model.artifact import TrainEvidence
from cuwheel.model.inventory import (
    Binary,
    CodeKind,
    FatbinContainer,
    FatbinEntry,
    Inventory,
    Source,
    Toolkit,
)
from cuwheel.model.kernels import family_rows
from cuwheel.render.envelope import envelope
from cuwheel.render.envelope import load_schema as load
from cuwheel.render.escape import dumps

__all__ = ["inventory_to_dict", "load_schema", "render_json"]


def load_schema() -> dict[str, Any]:
    return load("inspect")


def _toolkit(t: Toolkit | None) -> dict[str, Any] | None:
    if t is None:
        return None
    return {"version": f"{t.major}.{t.minor}", "full": t.full, "source": t.source}


def _entry(e: FatbinEntry) -> dict[str, Any]:
    return {
        "offset": e.offset,
        "kind": e.kind.value,
        "target": e.name,
        "arch": e.arch.number,
        "variant": e.arch.variant,
        "code_version": list(e.code_version),
        "ptx_isa": e.ptx_isa,
        "flags": e.flags,
        "host": e.host,
        "debug": e.debug,
        "compression": e.compression.value,
        "stored_size": e.stored_size,
        "compressed_size": e.compressed_size,
        "uncompressed_size": e.uncompressed_size,
        "identifier": e.identifier,
        "toolkit": _toolkit(e.toolkit),
        "relocatable": e.relocatable,
        "kernels": list(e.kernel_names) if e.kernel_names is not None else None,
    }


def _container(c: FatbinContainer) -> dict[str, Any]:
    return {
        "offset": c.offset,
        "size": c.size,
        "section": c.section,
        "named_section": c.named_section,
        "relocatable": c.relocatable,
        "toolkit": _toolkit(c.toolkit),
        "device_link": c.device_link,
        "entries": [_entry(e) for e in c.entries],
    }


def binary_summary(b: Binary) -> dict[str, Any]:
    kinds: dict[str, list[dict[str, Any]]] = {"sass": [], "ptx": [], "lto-ir": []}
    for cov in b.coverage():
        kinds[cov.kind.value].append(
            {
                "target": cov.arch.sass if cov.kind is CodeKind.SASS else cov.arch.ptx,
                "containers": cov.containers,
                "entries": cov.entries,
                "stored_bytes": cov.stored_bytes,
                "uncompressed_bytes": cov.uncompressed_bytes,
            }
        )
    compression: dict[str, int] = {}
    for e in b.entries():
        compression[e.compression.value] = compression.get(e.compression.value, 0) + 1
    toolkits = sorted({str(c.toolkit) for c in b.containers if c.toolkit is not None})
    isas = sorted({e.ptx_isa for e in b.entries() if e.ptx_isa})
    sections: dict[str, int] = {}
    for c in b.containers:
        key = c.section or "(none)"
        sections[key] = sections.get(key, 0) + 1
    return {
        "containers": len(b.containers),
        "containers_with_code": b.containers_with_code,
        "sections": sections,
        "sass": kinds["sass"],
        "ptx": kinds["ptx"],
        "lto_ir": kinds["lto-ir"],
        "ptx_isa": isas,
        "compression": compression,
        "toolkits": toolkits,
        "kernel_families": _families(b),
    }


def _families(b: Binary) -> list[dict[str, Any]] | None:
    rows = family_rows((e.kind.value, e.name, e.kernel_names) for e in b.entries())
    if rows is None:
        return None
    return [{"family": f, "kernels": n, "sass": sass, "ptx": ptx} for f, n, sass, ptx in rows]


def _binary(b: Binary, full: bool) -> dict[str, Any]:
    out: dict[str, Any] = {
        "path": b.path,
        "format": b.format,
        "size": b.size,
        "file_type": b.file_type,
        "machine": b.machine,
        "archive": b.archive,
        "member": b.member,
        "needed": list(b.needed),
        "rpath": list(b.rpath),
        "runpath": list(b.runpath),
        "soname": b.soname,
        "exported_count": len(b.exported),
        "summary": binary_summary(b),
        "containers": [_container(c) for c in b.containers],
        "anomalies": list(b.anomalies),
    }
    if b.ptx_version is not None:
        out["ptx_version"] = b.ptx_version
    if full:
        out["exported"] = list(b.exported)
    return out


def _source(s: Source, full: bool) -> dict[str, Any]:
    wheel = None
    if s.wheel is not None:
        w = s.wheel
        wheel = {
            "name": w.name,
            "version": w.version,
            "tags": list(w.tags),
            "requires_dist": list(w.requires_dist),
            "local_version": w.local_version,
        }
    out = {
        "kind": s.kind,
        "path": s.path,
        "wheel": wheel,
        "files_seen": s.files_seen,
        "binaries": [_binary(b, full) for b in s.binaries],
        "problems": [{"path": p.path, "message": p.message} for p in s.problems],
    }
    if s.artifact is not None:
        out["artifact"] = _artifact(s)
    return out


def _artifact(s: Source) -> dict[str, Any]:
    """An artifact's own records (docs/artifacts.md; schema $defs/artifact)."""
    from cuwheel.rules.artifact import isa_needs, runs_on
    from cuwheel.rules.artifact_train import runtime_imported, strongest, train_evidence

    a = s.artifact
    assert a is not None
    evidence = train_evidence(s)
    t = strongest(evidence)

    def ev(e: TrainEvidence) -> dict[str, Any]:
        return {"source": e.source, "major": e.major, "minor": e.minor, "where": e.where}

    return {
        "label": a.label,
        "train": ev(t) if t else None,
        "evidence": [ev(e) for e in evidence],
        "runs_on": [arch.cc for arch in runs_on(s)],
        "platform": a.platform,
        "machine": a.machine,
        "cpu_isa": list(a.cpu_isa),
        "isa_beyond_baseline": [{"name": n.name, "level": n.level}
                                for n in isa_needs(a.cpu_isa, a.machine)],
        "runtime_imported": runtime_imported(s),
        "metadata": [[k, v] for k, v in a.metadata],
        "notes": list(a.notes),
    }


def inventory_to_dict(inv: Inventory, *, full: bool = False) -> dict[str, Any]:
    """The JSON document; ``full`` adds each binary's exported symbols."""
    return {
        **envelope("inspect"),
        "sources": [_source(s, full) for s in inv.sources],
    }


def render_json(inv: Inventory, *, full: bool = False) -> str:
    # No indent: the C encoder only runs without one, and big inventories are large.
    return dumps(inventory_to_dict(inv, full=full), separators=(",", ":")) + "\n"

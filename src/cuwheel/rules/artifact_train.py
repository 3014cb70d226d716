"""The CUDA train an artifact names (docs/artifacts.md#evidence): the evidence its binaries
give -- the runtime they link (the catalog's library table), the toolkit that built their
cubins, the release a PTX ISA needs (the catalog's ISA table) -- beside what the reader
found recorded in it (toolkit paths its build left), and the strongest of all that.  The
reader (cuwheel.read.artifacts) hands on facts only; the look-ups are here."""

from __future__ import annotations

import re
from collections.abc import Iterable

from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import runtime_majors
from cuwheel.model.artifact import EVIDENCE_ORDER, ArtifactFacts, TrainEvidence
from cuwheel.model.inventory import Binary, CodeKind, Source

__all__ = ["artifact_train", "binary_evidence", "runtime_imported", "strongest",
           "train_evidence"]

_RUNTIME_IMPORT = re.compile(r"^cuda[A-Z][A-Za-z0-9_]*$")


def _facts(source: Source) -> ArtifactFacts:
    return source.artifact or ArtifactFacts(source.kind)


def _dedupe(ev: Iterable[TrainEvidence]) -> list[TrainEvidence]:
    seen: dict[tuple[str, int, int | None], TrainEvidence] = {}
    for e in ev:
        seen.setdefault((e.source, e.major, e.minor), e)
    return list(seen.values())


def binary_evidence(binaries: Iterable[Binary]) -> list[TrainEvidence]:
    """What the binaries say of their train, once per (class, train): each CUDA runtime
    library they link, the toolkit recorded in their cubins, the release each PTX ISA
    version first came with."""
    ev: list[TrainEvidence] = []
    for b in binaries:
        for major, lib in runtime_majors(b):
            ev.append(TrainEvidence("runtime-link", major, None, f"{b.path}: links {lib}"))
        for c in b.containers:
            tk = c.toolkit
            if tk is None:
                tks = [e.toolkit for e in c.entries if e.toolkit is not None]
                tk = tks[0] if tks else None
            if tk is not None:
                full = f" ({tk.full})" if tk.full else ""
                ev.append(TrainEvidence("cubin-toolkit", tk.major, tk.minor,
                                        f"{b.path}: cubin from CUDA {tk.major}.{tk.minor}{full}"))
            for e in c.entries:
                if e.kind is CodeKind.PTX and e.code_version:
                    r = active_catalog().release_for_ptx_isa(e.code_version)
                    if r is not None:
                        isa = f"{e.code_version[0]}.{e.code_version[1]}"
                        ev.append(TrainEvidence(
                            "ptx-isa", r.major, r.minor,
                            f"{b.path}: PTX ISA {isa} (CUDA {r.name} or later)"))
    return _dedupe(ev)


def runtime_imported(source: Source) -> bool:
    """Whether a host binary of the artifact imports ``cuda*`` runtime symbols from the
    process (unversioned, from no named library) without linking a CUDA runtime."""
    return any(
        b.machine != "cuda" and not runtime_majors(b) and any(
            _RUNTIME_IMPORT.match(u.name) and u.library is None and u.version is None
            for u in b.undefined)
        for b in source.binaries
    )


def train_evidence(source: Source) -> tuple[TrainEvidence, ...]:
    """Everything that names the artifact's train: what the reader found recorded and what
    its binaries give.  A plain library lists its binaries' evidence first (its toolkit
    paths are searched after them), an exported program its own records first."""
    recorded = list(_facts(source).evidence)
    derived = binary_evidence(source.binaries)
    both = derived + recorded if source.kind == "library" else recorded + derived
    return tuple(both)


def strongest(evidence: Iterable[TrainEvidence]) -> TrainEvidence | None:
    """The train that the strongest class of evidence names (the newest where one class
    names several); a major-only finding borrows the minor of weaker evidence of the same
    major."""
    evidence = list(evidence)
    for cls in EVIDENCE_ORDER:
        found = [e for e in evidence if e.source == cls]
        if not found:
            continue
        best = max(found, key=lambda e: (e.major, e.minor if e.minor is not None else -1))
        if best.minor is None:
            weaker = [e for e in evidence if e.major == best.major and e.minor is not None]
            if weaker:
                w = max(weaker, key=lambda e: e.minor or 0)
                return TrainEvidence(best.source, best.major, w.minor,
                                     f"{best.where}; minor from {w.source}: {w.where}")
        return best
    return None


def artifact_train(source: Source) -> TrainEvidence | None:
    """The train the artifact's evidence names, or None when nothing names one."""
    return strongest(train_evidence(source))

"""Will this code run on GPU X with driver Y: each container judged by the loading rules on
a target, rolled up into a library, a wheel and a support matrix (docs/compat.md).

The rules themselves (which entry the driver loads, which containers are modules, what a
driver supports) live in :mod:`cuwheel.rules`; nothing here reads files or talks to a GPU.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace

from cuwheel.compat.targets import Target, driver_knows_gpu, effective_arch
from cuwheel.knowledge import catalog
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, FatbinContainer, Inventory, Source
from cuwheel.rules import loading
from cuwheel.rules.loading import (
    ContainerVerdict,
    Verdict,
    judge_container,
    link_stub_index,
)
from cuwheel.rules.runtime import (
    RuntimeCheck,
    binary_os,
    binary_platform,
    driver_cuda_version,
    runtime_check,
)

__all__ = [
    "LibraryVerdict",
    "Matrix",
    "SourceVerdict",
    "TargetReport",
    "evaluate",
    "evaluate_binary",
    "evaluate_container",
    "matrix",
]


# ---------------------------------------------------------------------------- rules


def evaluate_container(
    container: FatbinContainer, target: Target, os: str = "linux", *, stub: bool = False
) -> ContainerVerdict:
    """The verdict for one container: the best entry the driver would pick on ``target``.
    ``stub``: the caller found it to be nvcc's device-link stub (:func:`link_stub_index`)."""
    device, _ = effective_arch(target, os)
    cuda = driver_cuda_version(target.driver, os) if target.driver else None
    cv = judge_container(container, device, cuda=cuda, os=os, stub=stub)
    if cv.verdict is not Verdict.NO_CODE:
        return cv
    reason = cv.reason
    if device.base != target.arch:
        reason += f" (the device reports CC {device.cc} under this driver)"
    for rn in catalog.renames():
        old, new = rn.old.base, rn.new.base
        if device == new and any(e.arch.base == old for e in container.entries):
            reason += (
                f"; {old.sass} is this GPU's CUDA {rn.last_release_with_old} name: whether a "
                f"CUDA {rn.first_release_with_new}+ driver still loads it is not verified, "
                f"rebuild for {new.sass}"
            )
    return replace(cv, reason=reason)


# ---------------------------------------------------------------------------- roll-ups


@dataclass(frozen=True)
class LibraryVerdict:
    """One binary on one target: its containers' verdicts rolled up (docs/compat.md)."""

    path: str
    verdict: Verdict
    reason: str
    containers: tuple[ContainerVerdict, ...]
    runtime: RuntimeCheck | None
    has_device_code: bool

    def count(self, verdict: Verdict) -> int:
        return sum(1 for c in self.containers if c.counted and c.verdict is verdict)

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.containers:
            key = c.verdict.value if c.counted and c.verdict else "ignored"
            out[key] = out.get(key, 0) + 1
        return out


def _codes_summary(cvs: Sequence[ContainerVerdict], limit: int = 6) -> str:
    names = sorted({n for c in cvs for n in c.codes})
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def evaluate_binary(
    binary: Binary, target: Target, *, strict: bool = False
) -> LibraryVerdict | None:
    """Roll one binary's containers up; None for binaries with neither device code nor a
    CUDA runtime link (nothing to say).  ``strict``: a library is its worst container.

    Each container keeps its own verdict; what depends on the library as a whole (the
    runtime's device link of -rdc code, containers for other GPUs) is said at this level.
    """
    os = binary_os(binary)
    stub = link_stub_index(binary)
    cvs = tuple(
        evaluate_container(c, target, os, stub=i == stub) for i, c in enumerate(binary.containers)
    )
    counted = [c for c in cvs if c.counted]
    rt = runtime_check(binary, target.driver)
    if not counted and rt is None:
        return None
    plat = binary_platform(binary)
    if target.hosts is not None and plat is not None and plat not in target.hosts:
        why = (
            f"a {plat} binary cannot run on {target.label}: the machines that carry this GPU "
            f"are {', '.join(target.hosts)}"
        )
        return LibraryVerdict(binary.path, Verdict.PLATFORM, why, cvs, rt, bool(counted))
    if rt is not None and rt.ok is False:
        return LibraryVerdict(binary.path, Verdict.DRIVER, rt.reason, cvs, rt, bool(counted))
    if not counted:
        why = "no device code that the driver loads"
        if cvs:
            why += f" ({len(cvs)} container(s) ignored: {cvs[0].ignored})"
        return LibraryVerdict(binary.path, Verdict.HOST, why, cvs, rt, False)
    link = _jit_link(binary, cvs)
    if link is not None and any(c.verdict is Verdict.NO_CODE for c in counted):
        via, how = link
        nothing = [c for c in counted if c.verdict is Verdict.NO_CODE]
        loaded = [c.verdict for c in counted if c.verdict is not Verdict.NO_CODE and c.verdict]
        verdict = loading.worst([via, *loaded])
        assert verdict is not None
        reason = (
            f"{len(nothing)} of {len(counted)} linked container(s) have no code for CC "
            f"{target.arch.cc} (they hold {_codes_summary(nothing)}), but {how}"
        )
        return LibraryVerdict(binary.path, verdict, reason, cvs, rt, True)
    verdicts = [c.verdict for c in counted if c.verdict is not None]
    worst = loading.worst(verdicts)
    assert worst is not None
    running = [c for c in counted if c.verdict is not None and c.verdict.runs]
    if worst.runs or not running or strict:
        first = next(c for c in counted if c.verdict is worst)
        if len(counted) == 1:
            reason = first.reason
        else:
            same = sum(1 for v in verdicts if v is worst)
            reason = f"{same} of {len(counted)} containers: {first.reason}"
        return LibraryVerdict(binary.path, worst, reason, cvs, rt, True)
    best_run = loading.worst(c.verdict for c in running if c.verdict is not None)
    missing = [c for c in counted if c.verdict is not None and not c.verdict.runs]
    reason = (
        f"{len(running)} of {len(counted)} containers load ({best_run.value if best_run else ''}"
        f" at worst); {len(missing)} have no usable code for this GPU (they hold "
        f"{_codes_summary(missing)}): kernels built only for other GPUs, which a library "
        f"that picks kernels by architecture never loads here, or kernels missing for this one"
    )
    return LibraryVerdict(binary.path, Verdict.PARTIAL, reason, cvs, rt, True)


def _jit_link(binary: Binary, cvs: tuple[ContainerVerdict, ...]) -> tuple[Verdict, str] | None:
    """-rdc binaries: when the linked image has nothing for the GPU, the CUDA runtime
    device-links the relocatable containers (``__nv_relfatbin``) itself at first load,
    JIT-compiling their PTX (seen on the H200: librdc.so, linked for sm_80 only, runs).
    That works when every relocatable container has code the rules load: then the verdict
    it gives the library, and how; None when it does not apply."""
    rel = [
        cv
        for c, cv in zip(binary.containers, cvs, strict=True)
        if c.relocatable and cv.verdict is not None
    ]
    if not rel or not all(cv.verdict is not None and cv.verdict.loads for cv in rel):
        return None
    worst = loading.worst(cv.verdict for cv in rel if cv.verdict is not None)
    assert worst is not None
    jit = any(cv.verdict is Verdict.PTX_JIT for cv in rel)
    via = max(worst, Verdict.PTX_JIT, key=lambda v: v.rank) if jit else worst
    how = (
        f"the CUDA runtime device-links the {len(rel)} relocatable (-rdc) container(s) of "
        "this binary at first load" + (" (JIT-compiling their PTX)" if jit else "")
    )
    return via, how


@dataclass(frozen=True)
class SourceVerdict:
    """One inspected target (wheel, directory, distribution, file): its worst library."""

    path: str
    kind: str
    verdict: Verdict | None  # None: nothing CUDA in it
    libraries: tuple[LibraryVerdict, ...]


@dataclass(frozen=True)
class TargetReport:
    """Everything inspected, on one target GPU + driver."""

    target: Target
    device: Arch  # the CC the rules used (rename applied)
    verdict: Verdict | None  # worst source; None when nothing CUDA was found
    sources: tuple[SourceVerdict, ...]
    notes: tuple[str, ...]
    # Inputs that could not be read ("path: problem"): with any, the answer is unknown.
    unread: tuple[str, ...] = ()

    @property
    def runs(self) -> bool:
        """Every library read loads; see ``known`` before trusting it."""
        return self.verdict is None or self.verdict.runs

    @property
    def known(self) -> bool:
        """False when some input could not be read: what it holds was not judged."""
        return not self.unread


def _evaluate_source(source: Source, target: Target, strict: bool) -> SourceVerdict:
    libs = tuple(
        lv
        for lv in (evaluate_binary(b, target, strict=strict) for b in source.binaries)
        if lv is not None
    )
    return SourceVerdict(source.path, source.kind, loading.worst(lv.verdict for lv in libs), libs)


def evaluate(inventory: Inventory, target: Target, *, strict: bool = False) -> TargetReport:
    """Every source of ``inventory`` on ``target``; the report's verdict is the worst."""
    sources = tuple(_evaluate_source(s, target, strict) for s in inventory.sources)
    device, rename_note = effective_arch(target)
    notes: list[str] = []
    if rename_note:
        notes.append(rename_note)
    cuda = driver_cuda_version(target.driver) if target.driver else None
    knows = driver_knows_gpu(target.arch, cuda)
    if knows:
        notes.append(knows)
    if target.driver is not None and cuda is None:
        notes.append(f"{target.driver} is older than every CUDA release in the catalog")
    if target.driver is None and any(
        lv.verdict is Verdict.PTX_JIT or lv.runtime is not None
        for s in sources
        for lv in s.libraries
    ):
        notes.append("no driver given: driver gates (PTX ISA, runtime floor) assumed met")
    verdict = loading.worst(s.verdict for s in sources if s.verdict is not None)
    unread = tuple(str(p) for p in inventory.problems) + tuple(
        f"{b.path}: {a}" for b in inventory.binaries for a in b.anomalies
    )
    return TargetReport(target, device, verdict, sources, tuple(notes), unread)


# ---------------------------------------------------------------------------- matrix


@dataclass(frozen=True)
class Matrix:
    """Rows: targets (GPUs); columns: libraries with device code; cells: verdicts."""

    targets: tuple[Target, ...]
    columns: tuple[str, ...]  # library display paths
    cells: tuple[tuple[Verdict | None, ...], ...]  # [row][column]; None: not evaluated
    reports: tuple[TargetReport, ...]

    def row_runs(self, i: int) -> bool:
        return all(v is None or v.runs for v in self.cells[i])


def matrix(inventory: Inventory, targets: Sequence[Target], *, strict: bool = False) -> Matrix:
    reports = tuple(evaluate(inventory, t, strict=strict) for t in targets)
    columns: list[str] = []
    for r in reports:
        for s in r.sources:
            for lv in s.libraries:
                if lv.has_device_code and lv.path not in columns:
                    columns.append(lv.path)
    order = {b.path: i for i, b in enumerate(inventory.binaries)}
    columns.sort(key=lambda p: order.get(p, len(order)))
    rows = []
    for r in reports:
        by_path = {lv.path: lv.verdict for s in r.sources for lv in s.libraries}
        rows.append(tuple(by_path.get(c) for c in columns))
    return Matrix(tuple(targets), tuple(columns), tuple(rows), reports)

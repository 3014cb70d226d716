"""Will this code run on GPU X with driver Y: each container judged by the loading rules on
a target, rolled up into a library, a wheel and a support matrix (docs/compat.md).

The rules themselves (which entry the driver loads, which containers are modules, what a
driver supports) live in :mod:`cuwheel.rules`; nothing here reads files or talks to a GPU.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from dataclasses import dataclass, replace

from cuwheel.compat.targets import Target, driver_knows_gpu, effective_arch
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import binary_os
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, FatbinContainer, Inventory, Source
from cuwheel.rules import loading
from cuwheel.rules._memo import library_shape
from cuwheel.rules.evidence import core_library
from cuwheel.rules.judge import Rules, active_rules, judging
from cuwheel.rules.library import LibraryVerdict, judge_library
from cuwheel.rules.loading import (
    ContainerVerdict,
    Verdict,
    judge_container,
)
from cuwheel.rules.rollup import WheelState, WheelVerdict, combine_states, judge_wheel
from cuwheel.rules.runtime import (
    binary_platform,
    driver_cuda_version,
    package_major,
    runtime_check,
)
from cuwheel.rules.shapes import judge_containers
from cuwheel.rules.torch_abi import torch_note

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
    return _container_verdict(container, target, device, cuda, os, stub)


def _container_verdict(
    container: FatbinContainer,
    target: Target,
    device: Arch,
    cuda: tuple[int, int] | None,
    os: str,
    stub: bool,
) -> ContainerVerdict:
    cv = judge_container(container, device, cuda=cuda, os=os, stub=stub)
    if cv.verdict is not Verdict.NO_CODE:
        return cv
    return _no_code(cv, container, target, device)


def _no_code(
    cv: ContainerVerdict, container: FatbinContainer, target: Target, device: Arch
) -> ContainerVerdict:
    """A container with no code for the GPU, its reason told in the GPU's terms: the CC the
    device reports under this driver, an older name of the same GPU."""
    reason = cv.reason
    if device.base != target.arch:
        reason += f" (the device reports CC {device.cc} under this driver)"
    for rn in active_catalog().renames:
        old, new = rn.old.base, rn.new.base
        if device == new and any(e.arch.base == old for e in container.entries):
            reason += (
                f"; {old.sass} is this GPU's CUDA {rn.last_release_with_old} name: whether a "
                f"CUDA {rn.first_release_with_new}+ driver still loads it is not verified, "
                f"rebuild for {new.sass}"
            )
    return cv if reason == cv.reason else replace(cv, reason=reason)


# ---------------------------------------------------------------------------- roll-ups


# evaluate_binary's verdicts by library shape, in the active Rules' memo "libraries" (its
# own state: a verdict depends on the catalog); cleared when full (a bound on memory).
MAX_JUDGED = 65_536


def evaluate_binary(
    binary: Binary, target: Target, *, strict: bool = False, static_major: int | None = None
) -> LibraryVerdict | None:
    """Roll one binary's containers up; None for binaries with neither device code nor a
    CUDA runtime link (nothing to say).  ``strict``: a library is its worst container.

    Each container keeps its own verdict; what depends on the library as a whole (the
    runtime's device link of -rdc code, containers for other GPUs) is said at this level.
    A library of the same shape as one already judged on this target (equal facts, its
    path aside: rules/_memo.library_shape) is not judged again: a wheel of 3,000 copies
    costs one judgment per GPU, as each container shape does within a library.
    """
    key = (library_shape(binary), target, strict, static_major)
    judged: dict[tuple[int, Target, bool, int | None], LibraryVerdict | None]
    judged = active_rules().memo("libraries")
    if key in judged:
        lv = judged[key]
        return lv if lv is None or lv.path == binary.path else replace(lv, path=binary.path)
    if len(judged) >= MAX_JUDGED:
        judged.clear()
    lv = judged[key] = _evaluate_binary(binary, target, strict=strict,
                                         static_major=static_major)
    return lv


def _evaluate_binary(
    binary: Binary, target: Target, *, strict: bool = False, static_major: int | None = None
) -> LibraryVerdict | None:
    os = binary_os(binary)
    device, _ = effective_arch(target, os)
    cuda = driver_cuda_version(target.driver, os) if target.driver else None
    cvs = tuple(
        cv if cv.verdict is not Verdict.NO_CODE else _no_code(cv, c, target, device)
        for c, cv in zip(binary.containers, judge_containers(binary, device, cuda=cuda, os=os),
                         strict=True)
    )
    counted = [c for c in cvs if c.counted]
    rt = runtime_check(binary, target.driver, static_major)
    if not counted and rt is None:
        return None
    plat = binary_platform(binary)
    if target.hosts is not None and plat is not None and plat not in target.hosts:
        carriers = (
            f"the machines that carry this GPU are {', '.join(target.hosts)}" if target.hosts
            else "no platform cuwheel knows carries this GPU"
        )
        why = f"a {plat} binary cannot run on {target.label}: {carriers}"
        return LibraryVerdict(binary.path, Verdict.PLATFORM, why, cvs, rt, bool(counted))
    if rt is not None and rt.ok is False:
        return LibraryVerdict(binary.path, Verdict.DRIVER, rt.reason, cvs, rt, bool(counted))
    if not counted:
        why = "no device code that the driver loads"
        if cvs:
            why += f" ({len(cvs)} container(s) ignored: {cvs[0].ignored})"
        return LibraryVerdict(binary.path, Verdict.HOST, why, cvs, rt, False)
    j = judge_library(binary, cvs, device, strict=strict)
    assert j is not None  # some container counts
    return LibraryVerdict(binary.path, j.verdict, j.reason, cvs, rt, True)


# One inspected target (wheel, directory, distribution, file) on one GPU: the roll-up's.
SourceVerdict = WheelVerdict


@dataclass(frozen=True)
class TargetReport:
    """Everything inspected, on one target GPU + driver."""

    target: Target
    device: Arch  # the CC the rules used (rename applied)
    verdict: Verdict | None  # worst library verdict; None when nothing CUDA was found
    sources: tuple[SourceVerdict, ...]
    notes: tuple[str, ...]
    # Inputs that could not be read ("path: problem"): with any, the answer is unknown.
    unread: tuple[str, ...] = ()
    state: WheelState = WheelState.NOTHING  # the sources' states combined

    @property
    def runs(self) -> bool:
        """Nothing read fails here (see ``state`` for the qualified answers)."""
        return self.state not in (WheelState.DOES_NOT_RUN, WheelState.RUNS_EXCEPT)

    @property
    def known(self) -> bool:
        """False when some input could not be read: what it holds was not judged."""
        return not self.unread

    @property
    def culprits(self) -> tuple[LibraryVerdict, ...]:
        return tuple(lv for s in self.sources for lv in s.culprits)


def _evaluate_source(
    source: Source, target: Target, strict: bool, cuda: tuple[int, int] | None
) -> SourceVerdict:
    major = package_major(source.binaries) if any(b.static_cudart for b in source.binaries) \
        else None
    libs = tuple(
        lv
        for lv in (evaluate_binary(b, target, strict=strict, static_major=major)
                   for b in source.binaries)
        if lv is not None
    )
    device, _ = effective_arch(target)
    unread = tuple(str(p) for p in source.problems) + tuple(
        f"{b.path}: {a}" for b in source.binaries for a in b.anomalies
    )
    return judge_wheel(source.path, source.kind, libs, device, cuda=cuda, unread=unread,
                       core=core_library(source.binaries),
                       static=[b.path for b in source.binaries if b.static_cudart],
                       variant_rule=_variant_rule(source))


def _variant_rule(source: Source) -> str:
    """How the wheel's package picks among its variant libraries (data/loaders.toml)."""
    from cuwheel.knowledge.loaders import variants_for

    w = source.wheel
    v = variants_for(w.name, w.version) if w is not None else None
    return v.rule if v is not None else "nearest"


def evaluate(
    inventory: Inventory,
    target: Target,
    *,
    strict: bool = False,
    cuda: tuple[int, int] | None = None,
    rules: Rules | None = None,
) -> TargetReport:
    """Every source of ``inventory`` on ``target``.  ``cuda``: the CUDA version of the
    process that loads them (torch.version.cuda), which picks among run-time
    alternatives (docs/compat.md#run-time-alternatives).  ``rules``: the judge
    (rules/judge.py; default: the shipped catalog's, or the one already judging)."""
    with judging(rules):
        return _evaluate(inventory, target, strict, cuda)


def _evaluate(
    inventory: Inventory, target: Target, strict: bool, cuda: tuple[int, int] | None
) -> TargetReport:
    sources = tuple(_evaluate_source(s, target, strict, cuda) for s in inventory.sources)
    device, rename_note = effective_arch(target)
    notes: list[str] = []
    if rename_note:
        notes.append(rename_note)
    drv_cuda = driver_cuda_version(target.driver) if target.driver else None
    knows = driver_knows_gpu(target.arch, drv_cuda)
    if knows:
        notes.append(knows)
    if target.driver is not None and drv_cuda is None:
        notes.append(f"{target.driver} is older than every CUDA release in the catalog")
    if target.driver is None and any(
        lv.verdict is Verdict.PTX_JIT or lv.runtime is not None
        for s in sources
        for lv in s.libraries
    ):
        notes.append("no driver given: driver gates (PTX ISA, runtime floor) assumed met")
    for s in inventory.sources:
        if s.wheel is not None and s.wheel.name.lower() == "torch":
            continue  # torch's own libraries link each other
        note = torch_note(os.path.basename(s.path), s.binaries)
        if note is not None:
            notes.append(note)
    verdict = loading.worst(s.verdict for s in sources if s.verdict is not None)
    unread = tuple(str(p) for p in inventory.problems) + tuple(
        f"{b.path}: {a}" for b in inventory.binaries for a in b.anomalies
    )
    state = combine_states(s.state for s in sources).unread(unread)
    return TargetReport(target, device, verdict, sources, tuple(notes), unread, state)


# ---------------------------------------------------------------------------- matrix


@dataclass(frozen=True)
class Matrix:
    """Rows: targets (GPUs); columns: libraries with device code; cells: verdicts."""

    targets: tuple[Target, ...]
    columns: tuple[str, ...]  # library display paths
    cells: tuple[tuple[Verdict | None, ...], ...]  # [row][column]; None: not evaluated
    reports: tuple[TargetReport, ...]

    def row_runs(self, i: int) -> bool:
        """The row's GPU runs what was read (the roll-up's answer, not any one cell)."""
        return self.reports[i].runs


def matrix(
    inventory: Inventory,
    targets: Sequence[Target],
    *,
    strict: bool = False,
    cuda: tuple[int, int] | None = None,
    rules: Rules | None = None,
) -> Matrix:
    """:func:`evaluate` on each of ``targets``, as a table of libraries by GPU."""
    with judging(rules):
        reports = tuple(evaluate(inventory, t, strict=strict, cuda=cuda) for t in targets)
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

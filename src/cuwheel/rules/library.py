"""A library's containers on one GPU, rolled up into one verdict: the first step of the
roll-up (rules/rollup.py; docs/compat.md#from-containers-to-a-wheel).  A container that
does not load is missing code, code for other GPUs, or in doubt -- which one is decided by
what the bytes say of how the library was built (rules/evidence.py)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, FatbinContainer
from cuwheel.rules.evidence import (
    build_floor,
    builder_knows,
    dispatches_by_arch,
    per_architecture_build,
    specialised_only,
)
from cuwheel.rules.kernels import split_by_kernels
from cuwheel.rules.loading import ContainerVerdict, Verdict, is_tegra, worst
from cuwheel.rules.runtime import RuntimeCheck

__all__ = ["LibraryJudgement", "LibraryVerdict", "judge_library"]


@dataclass(frozen=True)
class LibraryJudgement:
    """The verdict of a library's containers on one GPU, and the evidence."""

    verdict: Verdict
    reason: str
    missing: tuple[int, ...] = ()  # container indexes with missing code
    specialised: tuple[int, ...] = ()  # container indexes for other GPUs
    doubtful: tuple[int, ...] = ()  # container indexes whose use depends on dispatch
    # Kernel families with no code for the GPU in any container that loads (rules/kernels.py)
    missing_families: tuple[str, ...] = ()


def _codes(cvs: Iterable[ContainerVerdict], limit: int = 6) -> str:
    names = sorted({n for c in cvs for n in c.codes})
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def _families(names: Sequence[str], limit: int = 4) -> str:
    return ", ".join(names[:limit]) + (f" and {len(names) - limit} more" if len(names) > limit
                                       else "")


def _gap(c: FatbinContainer, device: Arch) -> str:
    """A container with no code for ``device``: "older" (plain code for older GPUs of this
    GPU's side of the desktop / Tegra divide only), "newer" (plain code for newer GPUs),
    or "other" (arch- or family-specific code, or code for the other side of the divide)."""
    code = [e.arch for e in c.entries if e.kind in (CodeKind.SASS, CodeKind.PTX)]
    plain = [a for a in code if not a.variant and is_tegra(a) == is_tegra(device)]
    if any(a.number > device.number for a in plain):
        return "newer"
    if plain:
        return "older"
    return "other"


def judge_library(
    binary: Binary,
    cvs: Sequence[ContainerVerdict],
    device: Arch,
    *,
    strict: bool = False,
) -> LibraryJudgement | None:
    """Roll the container verdicts ``cvs`` (one per container of ``binary``, on CC
    ``device``) up; None when no container counts.  ``strict``: every container that does
    not load counts against the library, specialisations included."""
    idx = [i for i, c in enumerate(cvs) if c.counted]
    if not idx:
        return None
    verdict_of: dict[int, Verdict] = {}
    for i in idx:
        v = cvs[i].verdict
        assert v is not None  # counted containers have a verdict
        verdict_of[i] = v
    link = _jit_link(binary, cvs)
    nothing = [i for i in idx if verdict_of[i] is Verdict.NO_CODE]
    if link is not None and nothing:
        via, how = link
        none = set(nothing)
        linked = worst([via, *(verdict_of[i] for i in idx if i not in none)])
        assert linked is not None
        reason = (
            f"{len(nothing)} of {len(idx)} linked container(s) have no code for CC "
            f"{device.cc} (they hold {_codes(cvs[i] for i in nothing)}), but {how}"
        )
        return LibraryJudgement(linked, reason)
    loads = [i for i in idx if verdict_of[i].loads]
    others = [i for i in idx if not verdict_of[i].loads]
    if not loads or not others or strict:
        w = worst(verdict_of.values())
        assert w is not None
        first = next(i for i in idx if verdict_of[i] is w)
        same = sum(1 for i in idx if verdict_of[i] is w)
        reason = cvs[first].reason if len(idx) == 1 else (
            f"{same} of {len(idx)} containers: {cvs[first].reason}"
        )
        if not loads and not strict and specialised_only(binary):
            archs = sorted({e.name for c in binary.containers for e in c.entries})
            reason = (
                f"a module of arch- or family-specific code only ({', '.join(archs[:6])}): "
                f"built for those GPUs, not for CC {device.cc}"
            )
            return LibraryJudgement(Verdict.OTHER_GPUS, reason)
        return LibraryJudgement(w, reason)
    driver = [i for i in others if verdict_of[i] is Verdict.DRIVER]
    gaps = {i: _gap(binary.containers[i], device) for i in others
            if verdict_of[i] is Verdict.NO_CODE}  # fmt: skip
    # Arch- or family-specific code for other GPUs (or code for the other side of the
    # Tegra divide) is built for those GPUs alone, whatever its kernels.  Of the others,
    # where kernel names were read, a container whose every kernel family has code that
    # loads here is an instance for other GPUs (rules/kernels.py); one with kernels found
    # nowhere else, and every container without names, is judged by the evidence below.
    spec = [i for i, g in gaps.items() if g == "other"]
    split = split_by_kernels(binary.containers, loads,
                             [i for i, g in gaps.items() if g != "other"])
    spec += split.specialised
    rest = set(split.unknown) | set(split.unique)
    older = [i for i, g in gaps.items() if g == "older" and i in rest]
    newer = [i for i, g in gaps.items() if g == "newer" and i in rest]
    missing: list[int] = []
    doubtful: list[int] = []
    why_known = ""
    floor = build_floor(binary) if newer else None
    if newer and floor is not None and device.number < floor.number:
        # a GPU below where the library's build starts: its kernels for newer GPUs are the
        # library's kernels, not a specialisation (vLLM's _C on a P100)
        missing += newer
        why_known = f"the library's build starts at CC {floor.cc}"
    else:
        spec += newer
    if older:
        knew, why = builder_knows(binary, device)
        if knew is False:
            missing += older
            why_known = why_known or f"the library predates CC {device.cc} ({why})"
        elif knew and dispatches_by_arch(binary):
            # NVIDIA's libraries name kernels per architecture (cuBLAS: sm80_xmma_...,
            # fermiPlus...) and pick them per GPU: unique names do not make them missing
            spec += older
        elif knew and per_architecture_build(binary, device) and not split.unique:
            # one plain architecture per container: taken to be the same kernels built per
            # architecture, unless their names say otherwise
            spec += older
        else:
            # kernels that no container for this GPU has: missing, named; without names,
            # in doubt
            named = [i for i in older if i in split.unique]
            missing += named
            doubtful = [i for i in older if i not in split.unique]
            if named:
                why_known = why_known or (
                    f"their kernels ({_families(split.families(named))}) have no code for "
                    f"CC {device.cc} in any other container")
    best = worst(verdict_of[i] for i in loads)
    assert best is not None
    loaded = f"{len(loads)} of {len(idx)} containers load ({best.value} at worst)"
    if missing:
        reason = (
            f"{loaded}; {len(missing)} have nothing for CC {device.cc} (they hold "
            f"{_codes(cvs[i] for i in missing)}) and {why_known}: no kernel image for those "
            "kernels"
        )
        return LibraryJudgement(Verdict.PARTIAL, reason, tuple(missing), tuple(spec),
                                missing_families=split.families(missing))
    if driver:
        reason = f"{loaded}; {len(driver)}: {cvs[driver[0]].reason}"
        reads = sorted({n for i in driver for n in binary.containers[i].host_reads or ()})
        if reads:
            # kernel-less modules loaded only for their variables (rules/loading.py)
            reason += f"; the host code reads {_families(reads)} from them, which fails"
        return LibraryJudgement(Verdict.DRIVER, reason, (), tuple(spec), tuple(doubtful))
    if doubtful:
        reason = (
            f"{loaded}; {len(doubtful)} hold code for older GPUs only ("
            f"{_codes(cvs[i] for i in doubtful)}): it runs only if the library picks "
            f"kernels by compute capability and never calls those on CC {device.cc} "
            "(the host code decides; calling one is 'no kernel image is available')"
        )
        return LibraryJudgement(Verdict.DEPENDS, reason, (), tuple(spec), tuple(doubtful))
    reason = loaded
    if spec:
        reason += (
            f"; {len(spec)} are for other GPUs (they hold "
            f"{_codes(cvs[i] for i in spec)}) and are not needed here"
        )
        if split.other_gpu_families:
            reason += (f" ({len(split.specialised)} hold instances of kernels that have code "
                       f"for CC {device.cc} elsewhere: {_families(split.other_gpu_families)})")
    return LibraryJudgement(best, reason, (), tuple(spec))


def _jit_link(binary: Binary, cvs: Sequence[ContainerVerdict]) -> tuple[Verdict, str] | None:
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
    w = worst(cv.verdict for cv in rel if cv.verdict is not None)
    assert w is not None
    jit = any(cv.verdict is Verdict.PTX_JIT for cv in rel)
    via = max(w, Verdict.PTX_JIT, key=lambda v: v.rank) if jit else w
    how = (
        f"the CUDA runtime device-links the {len(rel)} relocatable (-rdc) container(s) of "
        "this binary at first load" + (" (JIT-compiling their PTX)" if jit else "")
    )
    return via, how


@dataclass(frozen=True)
class LibraryVerdict:
    """One binary on one target: its containers' verdicts rolled up, with its runtime."""

    path: str
    verdict: Verdict
    reason: str
    containers: tuple[ContainerVerdict, ...]
    runtime: RuntimeCheck | None
    has_device_code: bool

    @property
    def specialised(self) -> bool:
        """A module built for other GPUs only (not what fails a wheel on this one)."""
        return self.verdict is Verdict.OTHER_GPUS

    def count(self, verdict: Verdict) -> int:
        return sum(1 for c in self.containers if c.counted and c.verdict is verdict)

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.containers:
            key = c.verdict.value if c.counted and c.verdict else "ignored"
            out[key] = out.get(key, 0) + 1
        return out

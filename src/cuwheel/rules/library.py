"""From containers to a library: what one binary's container verdicts mean for a GPU
(docs/compat.md#from-containers-to-a-library-and-a-wheel).

A library's containers are loaded one by one.  When some load on a GPU and others do not,
the others are either a **specialisation** the library dispatches around (kernels for newer
GPUs, arch- or family-specific code, one container per architecture of a library that
builds each architecture apart, as NVIDIA's own libraries do) or **missing code**: kernels
built for older GPUs of a list that left this one out, with no PTX it can JIT — the "no
kernel image is available" failure.  check and compat both judge libraries here.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, FatbinContainer
from cuwheel.rules.loading import (
    ContainerVerdict,
    Verdict,
    counted_containers,
    is_tegra,
    worst,
)

__all__ = [
    "DISPATCH_ARCH_SETS",
    "LibraryJudgement",
    "dispatches_by_arch",
    "gap_is_missing",
    "judge_library",
    "specialised_only",
]

# A library whose containers come in this many different SASS architecture sets picks its
# kernels by architecture at run time.  Measured on 49 real wheels (docs/compat.md): NVIDIA's
# cuBLAS / cuBLASLt / cuDNN / cuSPARSELt have 10 to 35 sets, and theirs are the only
# libraries where containers for older GPUs stand beside ones that load; extension modules
# built from one arch list (torch, xformers, vLLM, bitsandbytes, CuPy, JAX) have 1 to 3.
DISPATCH_ARCH_SETS = 8


def _general_older(code: Arch, device: Arch) -> bool:
    """Code a general build for an older GPU than ``device`` would hold: a plain target of a
    lower CC on the same side of the desktop / Tegra divide."""
    return (
        code.variant == ""
        and code.number < device.number
        and is_tegra(code) == is_tegra(device)
    )


def gap_is_missing(container: FatbinContainer, device: Arch, *, others_load: bool) -> bool:
    """For a counted container with no code for ``device``: is it missing code (True) or a
    specialisation (False)?

    Missing: it holds general code (plain ``sm_XY``) for several older GPUs and none for
    newer ones (a build for a list that ends below ``device``), or the library has nothing
    else that loads.  Code for older and newer GPUs that skips this one was skipped on
    purpose (cuBLASLt's sm_80 / sm_86 / sm_120 kernels: Hopper has its own).  A
    container of one older architecture beside containers that do load is one
    per-architecture build of a library that keeps each architecture apart (cuFFT,
    cuSPARSE: the same kernels are in this GPU's container).
    """
    older = {
        e.arch
        for e in container.entries
        if e.kind in (CodeKind.SASS, CodeKind.PTX) and _general_older(e.arch, device)
    }
    if not older:
        return False
    if any(e.arch.number > device.number for e in container.entries):
        return False  # code for older and newer GPUs but not this one: skipped on purpose
    # arch- and family-specific cubins beside it are specialisations of their own
    general = {e.arch for e in container.entries if e.kind is CodeKind.SASS and not e.arch.variant}
    return not (others_load and len(general) <= 1)


def dispatches_by_arch(binary: Binary) -> bool:
    """Whether the binary's counted containers come in at least
    :data:`DISPATCH_ARCH_SETS` different SASS architecture sets (a library that keeps
    kernels per architecture and chooses among them: its gaps are never missing code)."""
    sets = {
        frozenset(e.arch for e in c.entries if e.kind is CodeKind.SASS)
        for _, c in counted_containers(binary)
    }
    return len(sets) >= DISPATCH_ARCH_SETS


def specialised_only(binary: Binary) -> bool:
    """Every SASS / PTX entry of the binary is arch- or family-specific (``sm_90a``,
    ``sm_100f``): a module built for those GPUs alone (vLLM's, flash-attention's per-GPU
    modules), which its package loads only there."""
    entries = [
        e for c in binary.containers for e in c.entries if e.kind in (CodeKind.SASS, CodeKind.PTX)
    ]
    return bool(entries) and all(e.arch.variant for e in entries)


@dataclass(frozen=True)
class LibraryJudgement:
    """The verdict of a library's containers on one GPU, and the evidence."""

    verdict: Verdict
    reason: str
    missing: tuple[int, ...] = ()  # container indexes with missing code
    specialised: tuple[int, ...] = ()  # container indexes that specialise for other GPUs
    specialised_library: bool = False  # nothing here, and the library is for other GPUs only


def _codes(cvs: Sequence[ContainerVerdict], limit: int = 6) -> str:
    names = sorted({n for c in cvs for n in c.codes})
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


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
        linked = worst([via, *(verdict_of[i] for i in idx if i not in nothing)])
        assert linked is not None
        reason = (
            f"{len(nothing)} of {len(idx)} linked container(s) have no code for CC "
            f"{device.cc} (they hold {_codes([cvs[i] for i in nothing])}), but {how}"
        )
        return LibraryJudgement(linked, reason)
    loads = [i for i in idx if verdict_of[i].loads]
    others = [i for i in idx if i not in loads]
    if not loads or not others or strict:
        w = worst(verdict_of.values())
        assert w is not None
        first = next(i for i in idx if verdict_of[i] is w)
        same = sum(1 for i in idx if verdict_of[i] is w)
        reason = cvs[first].reason if len(idx) == 1 else (
            f"{same} of {len(idx)} containers: {cvs[first].reason}"
        )
        spec_lib = not loads and not strict and specialised_only(binary)
        if spec_lib:
            reason += "; every kernel here is arch- or family-specific (a module for those GPUs)"
        return LibraryJudgement(w, reason, specialised_library=spec_lib)
    driver = [i for i in others if verdict_of[i] is Verdict.DRIVER]
    nocode = [i for i in others if verdict_of[i] is Verdict.NO_CODE]
    dispatch = dispatches_by_arch(binary)
    missing = [
        i for i in nocode
        if not dispatch and gap_is_missing(binary.containers[i], device, others_load=True)
    ]  # fmt: skip
    spec = [i for i in nocode if i not in missing]
    best = worst(verdict_of[i] for i in loads)
    assert best is not None
    loaded = f"{len(loads)} of {len(idx)} containers load ({best.value} at worst)"
    if missing:
        reason = (
            f"{loaded}; {len(missing)} have kernels built for older GPUs and nothing for CC "
            f"{device.cc} (they hold {_codes([cvs[i] for i in missing])}): no kernel image "
            "for those kernels"
        )
        return LibraryJudgement(Verdict.PARTIAL, reason, tuple(missing), tuple(spec))
    if driver:
        reason = f"{loaded}; {len(driver)}: {cvs[driver[0]].reason}"
        return LibraryJudgement(Verdict.DRIVER, reason, (), tuple(spec))
    reason = loaded
    if spec:
        reason += (
            f"; {len(spec)} specialise for other GPUs (they hold "
            f"{_codes([cvs[i] for i in spec])}) and are not needed here"
        )
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

"""Device-code checks (DC): every library against the row's architectures, one at a time.

Never a union across libraries: a library whose kernels cover only part of the row fails
on its own.  Within a library coverage is counted per fatbin container, because each
container is loaded on its own and one without code for the GPU is a "no kernel image"
error for its kernels.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from cuwheel.checks.claims import IMPLICIT, library_claim
from cuwheel.checks.codes import Severity
from cuwheel.checks.context import CheckContext, Lib
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import binary_os
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import CodeKind, FatbinContainer
from cuwheel.rules.evidence import Alternative, alternatives, specialised_only
from cuwheel.rules.library import LibraryVerdict, judge_library
from cuwheel.rules.loading import (
    ContainerVerdict,
    Verdict,
    counted_containers,
    judge_container,
)
from cuwheel.rules.rollup import judge_group
from cuwheel.rules.shapes import judge_containers

_Containers = tuple[FatbinContainer, ...]

__all__ = ["check_device_code", "check_has_device_code", "ptx_loads_on"]


def ptx_loads_on(c: FatbinContainer, gpu: Arch, os: str = "linux") -> ContainerVerdict:
    """What the loading rules say of the container's PTX alone on a GPU of CC ``gpu``: does
    it stand in for a missing cubin (PTX_JIT), or not (the driver's gates assumed met)."""
    ptx_only = dataclasses.replace(
        c, entries=tuple(e for e in c.entries if e.kind is CodeKind.PTX)
    )
    return judge_container(ptx_only, gpu.base, os=os)


def _has_sass(c: FatbinContainer, arch: Arch) -> bool:
    return any(
        e.kind is CodeKind.SASS
        and e.arch.base == arch.base
        and (not arch.variant or e.arch.variant == arch.variant)
        for e in c.entries
    )


def _names(archs: set[Arch], kind: CodeKind) -> str:
    if not archs:
        return "none"
    return " ".join(a.sass if kind is CodeKind.SASS else a.ptx for a in sorted(archs))


def _of(k: int, n: int) -> str:
    return f"{k} of {n} container{'' if n == 1 else 's'}"


def _severity(ctx: CheckContext, accepted: bool) -> Severity:
    if accepted:
        return Severity.INFO
    return Severity.ERROR if ctx.policy.device_code == "strict" else Severity.WARNING


def check_has_device_code(ctx: CheckContext) -> list[Finding]:
    """DC004: fail closed when a CUDA row's wheel carries no device code at all."""
    if ctx.is_cpu:
        return []
    libs = list(ctx.loadable_libs())
    if any(lib.runtime_containers() for lib in libs):
        return []
    gpus = ctx.plan.sass if ctx.profile.coverage == "exact" else ctx.claim.gpus
    if not gpus:
        return []  # nothing claimed (a runtime-only wheel read without a row)
    claimed = " ".join(a.sass for a in gpus)
    return [ctx.finding(
        "DC004",
        f"no device code in any of {len(libs)} binaries read, yet the "
        f"{'row' if ctx.profile.coverage == 'exact' else 'claim'} says {claimed}",
    )]  # fmt: skip


def check_device_code(ctx: CheckContext) -> list[Finding]:
    """DC001, DC002, DC003, DC005 for every loadable library with device code."""
    if ctx.is_cpu:
        return []
    if ctx.profile.coverage == "loads":
        return _loads(ctx, [lib for lib in ctx.loadable_libs() if lib.runtime_containers()])
    out: list[Finding] = []
    for lib in ctx.loadable_libs():
        containers = lib.runtime_containers()
        if containers:
            out += _coverage(ctx, lib, containers)
            out += _unclaimed(ctx, lib, containers)
            out += _ptx(ctx, lib, containers)
    return out


def _coverage(ctx: CheckContext, lib: Lib, containers: _Containers) -> list[Finding]:
    out = []
    n = len(containers)
    have = {e.arch for c in containers for e in c.entries if e.kind is CodeKind.SASS}
    for arch in ctx.plan.sass:
        lacking = [c for c in containers if not _has_sass(c, arch)]
        if not lacking:
            continue
        os = ctx.os or "linux"
        by_ptx = [ptx_loads_on(c, arch, os) for c in lacking]
        jit = {Arch.parse(v.chosen) for v in by_ptx if v.verdict is Verdict.PTX_JIT and v.chosen}
        covered = all(v.verdict is Verdict.PTX_JIT for v in by_ptx)
        accepted = covered and ctx.policy.accept_ptx_for_sass
        where = _of(len(lacking), n)
        msg = f"no SASS for {arch.sass} in {where} (SASS present: {_names(have, CodeKind.SASS)})"
        if covered:
            msg += f"; PTX {_names(jit, CodeKind.PTX)} can JIT-compile it"
            if accepted:
                msg += " (accepted: accept-ptx-for-sass)"
        out.append(ctx.finding("DC001", msg, lib.name, _severity(ctx, accepted)))
    return out


def _unclaimed(ctx: CheckContext, lib: Lib, containers: _Containers) -> list[Finding]:
    claimed = set(ctx.plan.sass)
    bases = {a.base for a in claimed}
    extra = set(ctx.policy.allow_extra)
    counts: dict[Arch, int] = {}
    for c in containers:
        for a in {e.arch for e in c.entries if e.kind is CodeKind.SASS}:
            counts[a] = counts.get(a, 0) + 1
    out = []
    for arch in sorted(counts):
        if arch in claimed or arch in extra:
            continue
        if arch.variant and arch.base in bases and ctx.policy.allow_variants:
            continue
        row = " ".join(a.sass for a in ctx.plan.sass)
        what = (
            "a variant of a claimed arch; allow-variants is off"
            if arch.base in bases
            else ("the build did not use the row's list")
        )
        out.append(ctx.finding(
            "DC002",
            f"SASS for {arch.sass} in {_of(counts[arch], len(containers))}, not in the "
            f"row ({row}): {what}",
            lib.name,
        ))  # fmt: skip
    return out


def _ptx(ctx: CheckContext, lib: Lib, containers: _Containers) -> list[Finding]:
    out = []
    required = set(ctx.plan.ptx)
    present: dict[Arch, int] = {}
    for c in containers:
        for a in {e.arch for e in c.entries if e.kind is CodeKind.PTX}:
            present[a] = present.get(a, 0) + 1
    for arch in sorted(required):
        if arch in present:
            continue
        accepted = ctx.policy.accept_missing_ptx
        n = len(containers)
        among = "its one container" if n == 1 else f"any of its {n} containers"
        msg = (
            f"no {arch.ptx} PTX in {among} (PTX present: "
            f"{_names(set(present), CodeKind.PTX)}); GPUs newer than {arch.sass} get no code"
        )
        if accepted:
            msg += " (accepted: accept-missing-ptx)"
        out.append(ctx.finding("DC003", msg, lib.name, _severity(ctx, accepted)))
    for arch in sorted(set(present) - required):
        want = _names(required, CodeKind.PTX)
        out.append(ctx.finding(
            "DC005",
            f"PTX {arch.ptx} in {_of(present[arch], len(containers))}; the row's PTX "
            f"is {want}",
            lib.name,
        ))  # fmt: skip
    return out


# ---------------------------------------------------------------------------- coverage "loads"


def _gpu_names(ctx: CheckContext, gpus: Sequence[Arch]) -> str:
    """``7.5 RTX 2080``: the name the user typed, else the catalog's first product."""
    names = []
    for a in gpus:
        typed = ctx.claim.name_of(a) if ctx.claim.explicit else None
        g = active_catalog().gpu_for_arch(a)
        product = typed or (g.products[0].name if g and g.products else None)
        names.append(f"{a.cc}" + (f" {product}" if product else ""))
    return ", ".join(names)


def _judge(lib: Lib, gpu: Arch) -> LibraryVerdict | None:
    """The library on one GPU, by the one roll-up (rules/rollup.py); driver gates are
    compat's question, not check's."""
    b = lib.binary
    cvs = judge_containers(b, gpu, os=binary_os(b))
    j = judge_library(b, cvs, gpu)
    if j is None:
        return None
    return LibraryVerdict(b.path, j.verdict, j.reason, cvs, None, True)


def _claim_of(ctx: CheckContext, lib: Lib) -> tuple[tuple[Arch, ...], str, bool]:
    """(GPUs, where the claim comes from, explicit) for one library."""
    if ctx.claim.explicit:
        return ctx.claim.gpus, ctx.claim.source, True
    plat = ctx.platform.name if ctx.platform else None
    extra, why = ctx.carrier_archs(lib)
    claim = library_claim(lib.binary, plat, extra)
    return claim.gpus, why or IMPLICIT, False


def _loads(ctx: CheckContext, libs: Sequence[Lib]) -> list[Finding]:
    """DC001 / DC003 / DC006 / DC007 / DC008 / DC009: does each library (each set of
    run-time alternatives, as a set) load on every GPU claimed for it, by the one roll-up
    (rules/rollup.py, docs/compat.md)."""
    out: list[Finding] = []
    by_path = {lib.binary.path: lib for lib in libs}
    grouped: set[str] = set()
    for members in alternatives(by_path):
        grouped.update(a.path for a in members)
        out += _group(ctx, [by_path[a.path] for a in members], members)
    for lib in libs:
        if lib.binary.path not in grouped:
            gpus, source, explicit = _claim_of(ctx, lib)
            out += _library(ctx, lib, gpus, source, explicit)
    return out


def _library(
    ctx: CheckContext, lib: Lib, gpus: Sequence[Arch], source: str, explicit: bool
) -> list[Finding]:
    failing: list[tuple[Arch, str]] = []
    jit: list[Arch] = []
    specialised: list[Arch] = []
    doubt: list[tuple[Arch, str]] = []
    for gpu in gpus:
        lv = _judge(lib, gpu)
        if lv is None:
            continue
        if lv.verdict.runs:
            if lv.verdict is Verdict.PTX_JIT:
                jit.append(gpu)
        elif lv.verdict is Verdict.OTHER_GPUS:
            specialised.append(gpu)
        elif lv.verdict is Verdict.DEPENDS:
            doubt.append((gpu, lv.reason))
        else:
            failing.append((gpu, lv.reason))
    out: list[Finding] = []
    severity = Severity.ERROR if explicit else Severity.WARNING
    if failing:
        failed = [g for g, _ in failing]
        out.append(ctx.finding(
            "DC001",
            f"no kernel image for CC {_gpu_names(ctx, failed)} ({source} claims "
            f"{'them' if len(failed) > 1 else 'it'}): {failing[0][1]}",
            lib.name, severity,
        ))  # fmt: skip
    if doubt:
        out.append(ctx.finding(
            "DC008",
            f"on CC {_gpu_names(ctx, [g for g, _ in doubt])} ({source} claims "
            f"{'them' if len(doubt) > 1 else 'it'}): {doubt[0][1]}",
            lib.name,
        ))  # fmt: skip
    if jit:
        out.append(ctx.finding(
            "DC007",
            f"runs on CC {_gpu_names(ctx, jit)} only by JIT-compiling PTX (the first load "
            "compiles; slow start, and it needs a driver that knows the PTX ISA)",
            lib.name,
        ))  # fmt: skip
    if specialised:
        archs = sorted({e.name for c in lib.binary.containers for e in c.entries})
        out.append(ctx.finding(
            "DC006",
            f"a module of arch- or family-specific code only ({' '.join(archs[:6])}): not "
            f"loadable on CC {_gpu_names(ctx, specialised)}, which its package must not ask "
            "it to",
            lib.name,
        ))  # fmt: skip
    if not specialised_only(lib.binary):  # a module for some GPUs promises nothing later
        out += _future_ptx(ctx, lib)
    return out


def _group(ctx: CheckContext, libs: Sequence[Lib], members: Sequence[Alternative]) -> list[Finding]:
    """A set of run-time alternatives (libx_cuda118.so ... libx_cuda132.so): each variant
    against its own code; an explicit claim against the set, a variant whose CUDA cannot
    build for a GPU being "not for this GPU", never a failure."""
    if not ctx.claim.explicit:
        out: list[Finding] = []
        for lib in libs:
            gpus, source, _ = _claim_of(ctx, lib)
            out += _library(ctx, lib, gpus, source, False)
        return out
    out = []
    failing: dict[str, list[Arch]] = {}
    none_runs: list[tuple[Arch, str]] = []
    for gpu in ctx.claim.gpus:
        verdicts = {lib.binary.path: lv for lib in libs if (lv := _judge(lib, gpu)) is not None}
        g = judge_group(members, verdicts, gpu)
        if g is None:
            continue
        if not g.verdict.runs:
            none_runs.append((gpu, g.reason))
            continue
        for name in g.failing:
            failing.setdefault(name, []).append(gpu)
    label = libs[0].name
    if none_runs:
        out.append(ctx.finding(
            "DC001",
            f"no variant of this set of alternatives runs on CC "
            f"{_gpu_names(ctx, [g for g, _ in none_runs])} ({ctx.claim.source} claims "
            f"{'them' if len(none_runs) > 1 else 'it'}): {none_runs[0][1]}",
            label,
        ))  # fmt: skip
    for lib in libs:
        base = lib.name.rsplit("/", 1)[-1]
        if base in failing:
            out.append(ctx.finding(
                "DC009",
                f"no code for CC {_gpu_names(ctx, failing[base])}, which its CUDA can build "
                "for: a process whose CUDA version picks this variant gets 'no kernel image' "
                "there (other variants of the set run)",
                lib.name,
            ))  # fmt: skip
    for lib in libs:
        if not specialised_only(lib.binary):
            out += _future_ptx(ctx, lib)
    return out


def _future_ptx(ctx: CheckContext, lib: Lib) -> list[Finding]:
    """DC003 in coverage "loads": the claimed PTX, or, where no PTX is claimed, any plain
    PTX at all — without it the GPUs after the newest SASS get no code."""
    entries = [e for _, c in counted_containers(lib.binary) for e in c.entries]
    ptx = {e.arch for e in entries if e.kind is CodeKind.PTX}
    if ctx.claim.ptx:
        lacking = [a for a in ctx.claim.ptx if a not in ptx]
        if not lacking:
            return []
        msg = f"no {' '.join(a.ptx for a in lacking)} PTX ({ctx.claim.source} claims it)"
    else:
        if any(not a.variant for a in ptx):
            return []
        sass = [e.arch for e in entries if e.kind is CodeKind.SASS and not e.arch.variant]
        if not sass:
            return []
        msg = (
            f"no plain PTX: GPUs newer than {max(sass).sass} get no code "
            "(compute_XY PTX of the newest architecture would JIT-compile for them)"
        )
    return [ctx.finding("DC003", msg, lib.name)]

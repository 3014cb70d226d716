"""DEP011 and DEP012: a torch requirement judged by the torch symbols the wheel's binaries
import (rules/torch_abi.py: the releases that export them all, from data/torch_abi.toml).

DEP011: the requirement admits PyPI torch releases that do not define every torch symbol
some library imports (the import fails there with ``undefined symbol``).  DEP012
(Windows): a library imports from torch's CUDA DLLs, which no PyPI torch for Windows
ships, and every release the requirement admits is CPU-only there.  No requirement at all
is DEP009 (checks/dependencies.py)."""

from __future__ import annotations

from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.version import InvalidVersion, Version

from cuwheel.checks.context import CheckContext, Declared, Lib
from cuwheel.checks.findings import Finding
from cuwheel.rules.torch_abi import (
    TORCH,
    TorchAbiAnswer,
    loadable_span,
    requirement_for,
    resolve_torch_abi,
    resolve_without_cuda_dlls,
)

__all__ = ["CUDA_INDEX", "check_torch_abi", "torch_answers"]

# Where PyTorch's CUDA builds come from (pip's +cuXYZ local versions; PyPI carries one
# build per platform): https://pytorch.org/get-started/locally/ (the install selector).
CUDA_INDEX = "https://download.pytorch.org/whl/cuXYZ"


def torch_answers(ctx: CheckContext) -> list[tuple[Lib, TorchAbiAnswer]]:
    """The loadable libraries that import torch's symbols, with their answers."""
    out = []
    for lib in ctx.loadable_libs():
        ans = resolve_torch_abi(lib.binary)
        if ans is not None and (ans.imported or ans.unknown_count or ans.cuda_dlls):
            out.append((lib, ans))
    return out


def _admits(spec: SpecifierSet, version: str) -> bool:
    try:
        return spec.contains(version, prereleases=True)
    except InvalidVersion:
        return False


def _is_version(text: str) -> bool:
    try:
        Version(text)
    except InvalidVersion:
        return False
    return True


def check_torch_abi(ctx: CheckContext) -> list[Finding]:
    d = next((d for d in ctx.declared if d.name == TORCH and d.applies), None)
    if d is None:
        return []  # DEP009 says a requirement is missing
    try:
        spec = Requirement(d.text).specifier
    except InvalidRequirement:
        return []
    answers = torch_answers(ctx)
    if not answers:
        return []
    out = _cuda_dlls(ctx, d, spec, answers)
    rest = [(lib, a) for lib, a in answers if not a.cuda_dlls]
    if rest:
        out += _releases(ctx, d, spec, rest)
    return out


def _releases(ctx: CheckContext, d: Declared, spec: SpecifierSet,
              answers: list[tuple[Lib, TorchAbiAnswer]]) -> list[Finding]:
    considered = answers[0][1].considered
    admitted = [r.version for r in considered if _admits(spec, r.version)]
    if not admitted:
        return []  # no release the data knows: nothing to say
    ok = set(admitted)
    blame: dict[str, tuple[str, str]] = {}  # release -> (library, symbol it lacks)
    for lib, a in answers:
        for v in list(ok):
            if v not in a.versions:
                ok.discard(v)
                blame.setdefault(v, (lib.name, a.lacking.get(v, "?")))
    bad = [v for v in admitted if v not in ok]
    if not bad:
        return []
    loads = set.intersection(*(set(a.versions) for _, a in answers))
    imported = sum(a.imported for _, a in answers)
    libs = len(answers)
    newest = bad[-1]
    lib0, sym0 = blame[newest]
    unknown = next((a for _, a in answers if a.unknown_count), None)
    if loads:
        fix = f"require {requirement_for(loads, [r.version for r in considered])}"
        which = (f"only {loadable_span([v for v in admitted if v in ok])} define them all"
                 if ok else f"none defines them all (they are {loadable_span(sorted(loads))}'s)")
    else:
        which = "none defines them all"
        fix = ("no PyPI torch release defines them all"
               + (f" ({unknown.unknown[0]} is in none: built against a nightly or a "
                  "source build)" if unknown is not None else "")
               + "; rebuild against the torch release you support and require it")
    error = ("'The specified procedure could not be found'"
             if considered[0].windows else "'undefined symbol'")
    wheel = ctx.source.wheel
    record = next((r for r in (wheel.build_records if wheel else ())
                   if r.package == TORCH and _is_version(r.version)), None)
    if record is not None:
        fix += f" (the wheel says it was built against {record.version}: {record.member})"
    return [ctx.finding(
        "DEP011",
        f"{libs} librar{'y imports' if libs == 1 else 'ies import'} {imported} symbols of "
        f"torch's libraries; of the torch releases {d.label} admits on PyPI for "
        f"{considered[0].platform} ({loadable_span(admitted)}), {which}: {newest} lacks "
        f"{sym0} ({lib0}), so the import fails there with {error}; {fix}",
        lib0 if libs == 1 else None,
    )]  # fmt: skip


def _cuda_dlls(ctx: CheckContext, d: Declared, spec: SpecifierSet,
               answers: list[tuple[Lib, TorchAbiAnswer]]) -> list[Finding]:
    needing = [(lib, a) for lib, a in answers if a.cuda_dlls]
    if not needing:
        return []
    considered = needing[0][1].considered
    admitted = [r for r in considered if _admits(spec, r.version)]
    if not admitted or any(r.cuda for r in admitted):
        return []
    dlls = sorted({n for _, a in needing for n, _ in a.cuda_dlls})
    count = sum(c for _, a in needing for _, c in a.cuda_dlls)
    cands: set[str] | None = None
    for lib, a in needing:
        got = {r.version for r in resolve_without_cuda_dlls(a, lib.binary)}
        cands = got if cands is None else cands & got
    built = ""
    if cands:
        built = (f"; its imports from torch's other DLLs match {loadable_span(sorted(cands))} "
                 f"({requirement_for(cands, [r.version for r in considered])})")
    lib0 = needing[0][0].name
    return [ctx.finding(
        "DEP012",
        f"{len(needing)} librar{'y imports' if len(needing) == 1 else 'ies import'} {count} "
        f"functions from {', '.join(dlls)}, which only PyTorch's CUDA builds of torch for "
        f"Windows ship; every torch release {d.label} admits on PyPI for win-amd64 "
        f"({loadable_span([r.version for r in admitted])}) is CPU-only, so pip installs a "
        "torch it does not load with ('DLL load failed'): the CUDA build comes only from "
        f"PyTorch's index ({CUDA_INDEX}, a +cuXYZ local version), which a requirement cannot "
        f"name; say so in the install instructions{built}",
        lib0 if len(needing) == 1 else None,
    )]  # fmt: skip

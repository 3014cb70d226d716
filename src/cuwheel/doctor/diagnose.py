"""``diagnose(environment, targets)``: every distribution with device code or CUDA linkage
on each GPU + driver asked about, the loader's view of the environment, and the findings
(ENV001-ENV009, docs/checks.md#env-an-installed-environment-on-a-machine), cause first.
docs/doctor.md."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuwheel.checks.codes import CODES, Severity
from cuwheel.checks.findings import Finding
from cuwheel.compat import LibraryVerdict, Target, Verdict, evaluate
from cuwheel.doctor.environment import Distribution, Environment, with_kernel_names
from cuwheel.doctor.loader import (
    Conflict,
    Process,
    SearchContext,
    binary_os,
    simulate,
)
from cuwheel.doctor.torchabi import torch_abi_findings
from cuwheel.doctor.verdict import VariantChoice, judge_distribution, loaded_binaries
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import runtime_majors
from cuwheel.knowledge.platforms import BINARY_FORMATS
from cuwheel.model.inventory import Binary, Inventory
from cuwheel.rules.judge import Rules, judging
from cuwheel.rules.rollup import WheelState, combine_states

__all__ = [
    "NO_KERNEL_IMAGE",
    "Diagnosis",
    "DistributionReport",
    "Status",
    "TargetDiagnosis",
    "diagnose",
    "read_file_binary",
]


def _message(name: str) -> str:
    """cudaGetErrorString's text for ``name`` (data/cuda_errors.toml; the same texts were
    observed on the H200, tests/test_doctor_gpu.py)."""
    from cuwheel.knowledge.cudaerrors import load_cuda_errors

    e = load_cuda_errors().by_name(name)
    if e is None or e.text is None:  # pragma: no cover - the data file's test forbids it
        raise LookupError(f"cuda_errors.toml has no message for {name}")
    return e.text


# the failures the findings predict
NO_KERNEL_IMAGE = _message("cudaErrorNoKernelImageForDevice")
INSUFFICIENT_DRIVER = _message("cudaErrorInsufficientDriver")
UNSUPPORTED_PTX = _message("cudaErrorUnsupportedPtxVersion")


class Status:
    """What a distribution does: the roll-up's states (rules/rollup.WheelState), worst
    first; the loader's findings can only make it worse."""

    DOES_NOT_RUN = WheelState.DOES_NOT_RUN.value
    UNKNOWN = WheelState.UNKNOWN.value
    RUNS_EXCEPT = WheelState.RUNS_EXCEPT.value
    DEPENDS = WheelState.DEPENDS.value
    RUNS = WheelState.RUNS.value
    ORDER = tuple(s.value for s in WheelState.worst_first() if s is not WheelState.NOTHING)


# every code diagnose may emit, its loader's and torch ABI findings included
# (tests/test_codes.py holds it against codes.toml)
CODES_EMITTED = ("ENV001", "ENV002", "ENV003", "ENV004", "ENV005", "ENV006", "ENV007",
                 "ENV008", "ENV009", "ENV010")


def _finding(code: str, distribution: str | None, library: str | None, message: str,
             error_text: str | None = None, fix: str | None = None) -> Finding:
    """A doctor finding: its severity is the code's (data/codes.toml)."""
    return Finding(code, CODES[code].severity, message, library, check="doctor",
                   distribution=distribution, error_text=error_text, fix=fix)


@dataclass(frozen=True)
class DistributionReport:
    name: str
    version: str
    status: str
    cause: str  # the first finding's message, or the verdict's reason
    verdict: Verdict | None
    libraries: tuple[LibraryVerdict, ...]
    findings: tuple[Finding, ...]
    variants: VariantChoice | None = None
    problems: tuple[str, ...] = ()


@dataclass(frozen=True)
class TargetDiagnosis:
    target: Target
    status: str
    distributions: tuple[DistributionReport, ...]  # worst first
    notes: tuple[str, ...]


@dataclass(frozen=True)
class Diagnosis:
    environment: Environment
    targets: tuple[TargetDiagnosis, ...]
    process: Process
    loader_findings: tuple[Finding, ...]

    @property
    def status(self) -> str:
        """The worst target's status."""
        return min((t.status for t in self.targets), key=Status.ORDER.index, default=Status.RUNS)


def read_file_binary(path: str) -> Binary | None:
    """A library outside the environment (LD_LIBRARY_PATH, the ld.so cache), read for its
    linkage only; None when it is not a binary cuwheel reads."""
    from cuwheel.read.sources.source import read_path

    binaries, _, _ = read_path(path, payload="none")
    return next((b for b in binaries if b.format in BINARY_FORMATS), None)


def _cuda_related(b: Binary) -> bool:
    return b.has_device_code or bool(runtime_majors(b)) or any(
        active_catalog().is_cuda_library(n, binary_os(b)) for n in b.needed)


def _entries(env: Environment, environ: dict[str, str]) -> list[str]:
    """The modules of the environment that a program imports or a package loads: shared
    objects and DLLs that are not themselves CUDA libraries, variants not selected left
    out."""
    out = []
    for d in env.import_order():
        binaries, _ = loaded_binaries(d, env.torch_cuda, environ)
        for b in binaries:
            if b.file_type not in ("shared", "dll") or b.archive is not None:
                continue
            name = b.soname or os.path.basename(b.path)
            if active_catalog().is_cuda_library(name, binary_os(b)):
                continue
            out.append(b.path)
    return out


def _conflict_finding(c: Conflict, env: Environment) -> Finding:
    owner = env.owner(c.by) if c.by and os.path.isabs(c.by) else None
    return _finding(c.code, owner.label if owner else None, c.by, c.message, c.error_text,
                    CODES[c.code].fix)


def _library_findings(dist: Distribution, lv: LibraryVerdict, target: Target) -> list[Finding]:
    v = lv.verdict
    if lv.specialised or v.runs or v is Verdict.HOST:
        return []
    if v is Verdict.DRIVER and lv.runtime is not None and lv.runtime.ok is False:
        floor, major = lv.runtime.floor, lv.runtime.major
        driver = f"a driver >= {floor}" if floor else f"a CUDA {major} driver"
        return [_finding("ENV002", dist.label, lv.path, lv.reason, INSUFFICIENT_DRIVER,
                         CODES["ENV002"].fix_text(driver=driver, major=major))]
    if v is Verdict.DRIVER:
        return [_finding("ENV003", dist.label, lv.path, lv.reason, UNSUPPORTED_PTX,
                         CODES["ENV003"].fix_text())]
    if v in (Verdict.NO_CODE, Verdict.PARTIAL):
        return [_finding("ENV001", dist.label, lv.path, lv.reason, NO_KERNEL_IMAGE,
                         CODES["ENV001"].fix_text(sass=target.arch.sass))]
    return [_finding("ENV001", dist.label, lv.path, lv.reason)]  # wrong platform


def _status(state: WheelState, findings: Sequence[Finding], problems: Sequence[str]) -> str:
    """The roll-up's state for the code that loads, made worse by what the loader finds:
    an error (a library not found, no variant) stops the import."""
    states = [state]
    if any(f.severity is Severity.ERROR and f.code not in _DEVICE for f in findings):
        states.append(WheelState.DOES_NOT_RUN)
    elif any(f.code not in _DEVICE for f in findings):
        states.append(WheelState.RUNS_EXCEPT)
    if problems:
        states.append(WheelState.UNKNOWN)
    worst = combine_states(states)
    final: WheelState = WheelState.RUNS if worst is WheelState.NOTHING else worst
    return final.value


# the findings that restate the roll-up's culprits (it already decided the state)
_DEVICE = ("ENV001", "ENV002", "ENV003")


def _names_decide(v: Verdict) -> bool:
    """Whether kernel and variable names can change a library verdict (rules/library.py):
    whether a container that misses the GPU is for other GPUs or missing code, whether a
    kernel-less one is ever loaded.  Not for the wrong platform."""
    return v is Verdict.DEPENDS or (v.fails and v is not Verdict.PLATFORM)


def _needing_names(env: Environment, targets: Sequence[Target], environ: dict[str, str]
                   ) -> set[str]:
    """The binaries read without names whose verdict on some target names could change."""
    read = {b.path for d in env.distributions for b in d.binaries
            if not any(e.kernel_names is None for c in b.containers for e in c.entries)}
    return {lv.path for t in targets for d in env.distributions
            for lv in judge_distribution(d, t, env.torch_cuda, environ).libraries
            if _names_decide(lv.verdict) and lv.has_device_code and lv.path not in read}


def diagnose(
    env: Environment,
    targets: Sequence[Target],
    ctx: SearchContext,
    *,
    reader: object = None,
    names: Callable[[Environment, set[str]], Environment] | None = None,
    rules: Rules | None = None,
) -> Diagnosis:
    """The environment on each target; ``ctx``: what the loader searches on this machine.
    ``names``: reads binaries again with kernel names (default: from their files);
    ``rules``: the judge (rules/judge.py; default: the shipped catalog's)."""
    with judging(rules):
        return _diagnose(env, targets, ctx, reader, names)


def _diagnose(
    env: Environment,
    targets: Sequence[Target],
    ctx: SearchContext,
    reader: object,
    names: Callable[[Environment, set[str]], Environment] | None,
) -> Diagnosis:
    environ = dict(ctx.environ)
    env = (names or with_kernel_names)(env, _needing_names(env, targets, environ))
    process = simulate(env, _entries(env, environ), ctx,
                       reader if callable(reader) else read_file_binary)  # fmt: skip
    loader = tuple(_conflict_finding(c, env) for c in process.conflicts)
    torch = {d.label: [_finding("ENV009", d.label, lib, msg, text,
                                fix or CODES["ENV009"].fix_text())
                       for lib, msg, text, fix in torch_abi_findings(d, env)]
             for d in env.distributions}
    out = []
    for target in targets:
        reports = []
        for d in env.distributions:
            dv = judge_distribution(d, target, env.torch_cuda, environ)
            cuda_libs = [b for b in d.binaries if _cuda_related(b)]
            mine = [f for f in loader if f.distribution == d.label] + torch[d.label]
            if not dv.libraries and not mine and not cuda_libs:
                continue
            findings: list[Finding] = []
            if dv.variants is not None and dv.variants.selected is None:
                findings.append(_finding("ENV008", d.label, None, dv.variants.why, None,
                                         CODES["ENV008"].fix_text()))  # fmt: skip
            for lv in dv.culprits:
                findings += _library_findings(d, lv, target)
            findings += mine
            findings.sort(key=lambda f: (-f.severity, f.code))
            problems = tuple(str(p) for p in d.problems)
            status = _status(dv.state, findings, problems)
            doubt = [lv for lv in dv.libraries if lv.verdict is Verdict.DEPENDS]
            if findings:
                cause = findings[0].message
            elif doubt:
                cause = f"{os.path.basename(doubt[0].path)}: {doubt[0].reason}"
            elif dv.libraries:
                cause = dv.libraries[0].reason
            else:
                cause = "no device code; its CUDA libraries resolve"
            reports.append(DistributionReport(d.name, d.version, status, cause, dv.verdict,
                                              dv.libraries, tuple(findings), dv.variants,
                                              problems))  # fmt: skip
        reports.sort(key=lambda r: (Status.ORDER.index(r.status), r.name.lower()))
        notes = evaluate(Inventory(()), target).notes
        status = min((r.status for r in reports), key=Status.ORDER.index, default=Status.RUNS)
        out.append(TargetDiagnosis(target, status, tuple(reports), notes))
    return Diagnosis(env, tuple(out), process, loader)

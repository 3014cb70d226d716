"""The artifact checks (ART): an exported program judged beside the wheel it runs with
(``cuwheel check WHEEL --artifact FILE``; docs/artifacts.md).  The artifact's facts come
from read/artifacts/programs.py, the shared judgments (GPUs it runs on, host ISA levels) from
rules/artifact.py; this module only compares them with the wheel's report."""

from __future__ import annotations

from dataclasses import replace

from cuwheel.checks.codes import CODES, Severity
from cuwheel.checks.findings import Finding, WheelReport
from cuwheel.checks.policy import CheckPolicy
from cuwheel.errors import ConfigError, CuwheelError
from cuwheel.knowledge.platforms import load_platforms
from cuwheel.model.arch import Arch
from cuwheel.model.artifact import ArtifactFacts
from cuwheel.model.inventory import CodeKind, Source
from cuwheel.rules.artifact import code_archs, covers, isa_needs
from cuwheel.rules.artifact_train import artifact_train
from cuwheel.rules.trains import release_of

__all__ = ["CPU_LEVELS", "artifact_findings", "artifact_summary", "check_artifact"]

def _machine(name: str | None) -> str | None:
    """One name per instruction set (``AMD64`` -> x86_64, ``arm64`` -> aarch64), as
    data/platforms.toml names the machines of its platforms."""
    return load_platforms().cpu(name)


def _wheel_host(platform: str | None) -> tuple[str | None, str | None]:
    """(os, machine) of a row platform name such as ``linux-x86_64`` or ``win-amd64``
    (data/platforms.toml); a name not in the table by its parts (``linux-riscv64``: linux,
    a machine of no platform)."""
    if not platform:
        return None, None
    table = load_platforms()
    known = table.get(platform)
    if known is not None:
        return known.os, _machine(known.binary_machine)
    os_part, _, machine = platform.partition("-")
    # the OS part of the table's names and of NVIDIA's (redistrib keys: windows-x86_64)
    prefixes = {n.partition("-")[0]: p.os for p in table.platforms
                for n in (p.name, *dict(p.redist).values())}  # fmt: skip
    return prefixes.get(os_part), _machine(machine)


def _facts(artifact: Source) -> ArtifactFacts:
    return artifact.artifact or ArtifactFacts("library")


def _code_text(artifact: Source) -> str:
    code = code_archs(artifact)
    parts = [("SASS " if k is CodeKind.SASS else "PTX ") + (a.sass if k is CodeKind.SASS
                                                          else a.ptx) for k, a in code]
    return ", ".join(parts) if parts else "no device code"


def artifact_summary(artifact: Source) -> str:
    """One line: what the artifact is, its train and what decided it."""
    facts = _facts(artifact)
    train = artifact_train(artifact)
    what = (f"CUDA {train.train} ({train.source}: {train.where})" if train
            else "no CUDA train recorded")
    return f"artifact {artifact.path}: {facts.label}, {what}; device code: {_code_text(artifact)}"


# The machine levels of data/host_isa.toml in order; a need of no level ("none": an
# extension, "unknown") is above every level.
CPU_LEVELS = ("baseline", "x86-64-v2", "x86-64-v3", "x86-64-v4")


def _above(level: str, baseline: str) -> bool:
    rank = {name: i for i, name in enumerate(CPU_LEVELS)}
    return rank.get(level, len(CPU_LEVELS)) > rank.get(baseline, 0)


def artifact_findings(
    report: WheelReport,
    artifact: Source,
    *,
    gpus_claimed: bool = False,
    cpu_baseline: str | None = None,
) -> list[Finding]:
    """The ART findings for ``artifact`` beside the wheel of ``report``.  The train is the
    gate (ART001 / ART002 errors).  GPU coverage (ART003) and host ISA (ART004) are errors
    only when claimed for the artifact -- ``gpus_claimed`` (the user named the GPUs:
    ``--gpus`` / ``--archs``), ``cpu_baseline`` (a level of data/host_isa.toml the
    deployment machines promise) -- and warnings otherwise: an export is made on one GPU
    and one CPU, the wheel's claim is the wheel's, not the program's."""
    facts = _facts(artifact)
    lib = artifact.path
    out: list[Finding] = []

    def add(code: str, message: str, severity: Severity | None = None) -> None:
        out.append(Finding(code, severity or CODES[code].severity, message, lib, "artifact"))

    if artifact.problems:
        first = artifact.problems[0]
        more = f" (and {len(artifact.problems) - 1} more)" if len(artifact.problems) > 1 else ""
        add("ART008", f"{first}{more}")
    train = artifact_train(artifact)
    if train is None:
        add("ART006", f"nothing in the {facts.label} names a CUDA train")
    elif report.train != "cpu":
        try:
            wheel = release_of(report.train)
        except (LookupError, CuwheelError):
            wheel = None
        if wheel is not None:
            art = (f"cu{train.major}{train.minor}" if train.minor is not None
                   else f"CUDA {train.major}")
            said = (f"exported with CUDA {train.train} ({art}; {train.source}: {train.where}), "
                    f"the wheel is {report.train} (CUDA {wheel.name})")
            if train.major != wheel.major:
                add("ART001", said)
            elif train.minor is not None and train.minor != wheel.minor:
                add("ART002", said)
    code = code_archs(artifact)
    claimed: dict[Arch, None] = {}
    for cc in report.claimed:
        try:
            claimed[Arch.parse(cc).base] = None
        except ValueError:
            continue
    missing = [a for a in claimed if covers(code, a) is None]
    if missing:
        ccs = ", ".join(a.cc for a in missing)
        if gpus_claimed:
            add("ART003", f"no code for CC {ccs} that the wheel claims (the artifact has "
                          f"{_code_text(artifact)})", Severity.ERROR)
        else:
            add("ART003", f"no code for CC {ccs} of the wheel's claim (the artifact has "
                          f"{_code_text(artifact)}); --gpus holds the program to a claim")
    w_os, w_machine = _wheel_host(report.platform)
    a_machine = _machine(facts.machine)
    a_os = load_platforms().os_of_sys_platform(facts.platform)  # AOTI_PLATFORM: sys.platform
    if (a_machine and w_machine and a_machine != w_machine) or (a_os and w_os and a_os != w_os):
        add("ART007", f"built for {facts.platform or '?'} {facts.machine or '?'}, the wheel "
                      f"is {report.platform}")
    elif w_machine and (a_machine in (None, w_machine)):
        needs = isa_needs(facts.cpu_isa, a_machine or w_machine)
        names = " ".join(n.name for n in needs)
        if cpu_baseline is not None:
            over = [n for n in needs if _above(n.level, cpu_baseline)]
            if over:
                add("ART004", f"host code needs {' '.join(n.name for n in over)} "
                              f"(AOTI_CPU_ISA), above the claimed baseline {cpu_baseline}",
                    Severity.ERROR)
        elif any(n.severe for n in needs):
            add("ART004", f"host code needs {names} (AOTI_CPU_ISA); {report.platform} "
                          f"promises the {w_machine} baseline only (--cpu-baseline claims "
                          "a level)")
        elif needs:
            levels = ", ".join(sorted({n.level for n in needs}))
            add("ART005", f"host code needs {names} ({levels}); {report.platform} promises "
                          f"the {w_machine} baseline only")
    return out


# every code check_artifact may emit (tests/test_codes.py holds it against codes.toml)
CODES_EMITTED = ("ART001", "ART002", "ART003", "ART004", "ART005", "ART006", "ART007", "ART008")


def check_artifact(
    report: WheelReport,
    artifact: Source,
    policy: CheckPolicy,
    *,
    gpus_claimed: bool = False,
    cpu_baseline: str | None = None,
) -> WheelReport:
    """``report`` with the artifact's findings (:func:`artifact_findings`; the policy's
    selection, waivers by the artifact's path) and a note naming its train's evidence."""
    if cpu_baseline is not None and cpu_baseline not in CPU_LEVELS:
        raise ConfigError(f"--cpu-baseline must be one of {', '.join(CPU_LEVELS)}, "
                          f"got {cpu_baseline!r}")
    found = list(report.findings)
    for f in artifact_findings(report, artifact, gpus_claimed=gpus_claimed,
                               cpu_baseline=cpu_baseline):
        if not policy.enabled(f.code):
            continue
        w = policy.waiver_for(f.code, f.library)
        found.append(f.waive(w.reason) if w else f)
    found.sort(key=lambda f: (f.library or "", f.code))
    checks = report.checks if "artifact" in report.checks else (*report.checks, "artifact")
    return replace(report, findings=tuple(found), checks=checks,
                   notes=(*report.notes, artifact_summary(artifact)))

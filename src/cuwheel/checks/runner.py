"""Run the checks: pick the row for a wheel, call every check, then select, ignore and waive."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import TYPE_CHECKING, NamedTuple, TypedDict

from cuwheel.checks.claims import Claim, claim_from_gpus
from cuwheel.checks.codes import CODES, Severity
from cuwheel.checks.context import CheckContext
from cuwheel.checks.cpu import check_cpu
from cuwheel.checks.dependencies import check_dependencies
from cuwheel.checks.devicecode import check_device_code, check_has_device_code
from cuwheel.checks.driver import check_driver
from cuwheel.checks.findings import Finding, Stats, WheelReport
from cuwheel.checks.index import check_placeholders, read_projects
from cuwheel.checks.inputs import check_inputs
from cuwheel.checks.modules import check_modules
from cuwheel.checks.nvidia_symbols import check_symbol_releases
from cuwheel.checks.ownership import check_ownership
from cuwheel.checks.platform_tags import check_platform_tags
from cuwheel.checks.policy import CheckPolicy
from cuwheel.checks.rowpick import (
    Matrix,
    matrix_rows,
    newest_release_train,
    pick_by_evidence,
    pick_by_name,
    wheel_evidence,
)
from cuwheel.checks.runpaths import check_runpaths
from cuwheel.checks.tags import check_machine, check_train
from cuwheel.checks.windows import check_windows
from cuwheel.errors import InputError
from cuwheel.model.inventory import Source
from cuwheel.plan.rows import Plan, Row, Train, parse_train
from cuwheel.plan.select import (
    ENV_ROW,
    ENV_TRAIN,
    RELEASE_ENV_TRAIN,
    Selection,
    parse_wheel_name,
)
from cuwheel.rules.judge import Rules, judging

if TYPE_CHECKING:
    from typing_extensions import Unpack

__all__ = [
    "CHECKS",
    "INDEX_CODES",
    "CheckOptions",
    "CheckSpec",
    "audit_plan",
    "check_source",
    "check_wheel",
    "check_wheels",
]

Check = Callable[[CheckContext], list[Finding]]
Progress = Callable[[str, int, int], None]  # cuwheel.read.inspect.Progress


class CheckOptions(TypedDict, total=False):
    """The keyword options of :func:`check_wheel` and :func:`check_installed` (each None
    by default; :func:`check_wheel` says what they mean)."""

    train: str | None
    platform: str | None
    row: str | None
    environ: Mapping[str, str] | None
    claim: Claim | None
    audit: bool | None
    gpus: str | None
    index: str | None
    rules: Rules | None

class CheckSpec(NamedTuple):
    """One check: its name (what JUnit reports as the test case, check x library), the
    function, and every code it may emit (tests/test_codes.py holds the map against
    data/codes.toml and against the calls that emit them)."""

    name: str
    run: Check
    codes: tuple[str, ...]


CHECKS: tuple[CheckSpec, ...] = (
    CheckSpec("inputs", check_inputs, ("IN001", "IN002")),
    CheckSpec("device-code-present", check_has_device_code, ("DC004",)),
    CheckSpec("device-code", check_device_code,
              ("DC001", "DC002", "DC003", "DC005", "DC006", "DC007", "DC008", "DC009")),
    CheckSpec("cpu", check_cpu, ("CPU001", "CPU002", "CPU003")),
    CheckSpec("dependencies", check_dependencies,
              ("DEP001", "DEP002", "DEP003", "DEP004", "DEP005", "DEP006", "DEP008", "DEP009",
               "DEP010", "DEP011", "DEP012")),
    CheckSpec("symbol-releases", check_symbol_releases, ("DEP013",)),
    CheckSpec("runpaths", check_runpaths, ("RP001", "RP002", "RP003")),
    CheckSpec("driver", check_driver, ("DRV001", "DRV002", "DRV003", "DRV004")),
    CheckSpec("windows", check_windows, ("DEP006", "WIN001", "WIN002", "WIN003")),
    CheckSpec("modules", check_modules, ("MOD001", "MOD002", "MOD003")),
    CheckSpec("ownership", check_ownership, ("OWN001", "OWN002")),
    CheckSpec("machine", check_machine, ("TAG001",)),
    CheckSpec("train", check_train,
              ("TAG002", "TAG003", "TAG004", "TAG005", "TAG006", "TAG007")),
    CheckSpec("platform-tags", check_platform_tags,
              ("TAG008", "TAG009", "TAG010", "TAG011", "TAG012", "TAG013")),
)
# findings made from what a package index says (check --index), judged like the others
INDEX_CODES = ("DEP007",)


def _stats(ctx: CheckContext) -> Stats:
    libs = ctx.libs
    return Stats(
        files=ctx.source.files_seen,
        binaries=len(libs),
        device_binaries=sum(1 for lib in libs if lib.binary.has_device_code),
        containers=sum(lib.binary.containers_with_code for lib in libs),
        entries=sum(1 for lib in libs for _ in lib.binary.entries()),
    )


def check_source(
    source: Source,
    plan: Plan,
    policy: CheckPolicy | None = None,
    *,
    local: str | None = None,
    train_from: str = "the wheel's local version",
    claim: Claim | None = None,
    audit: bool = False,
    notes: Sequence[str] = (),
    extra: Sequence[Finding] = (),
    rules: Rules | None = None,
) -> WheelReport:
    """Judge one inspected wheel against ``plan``: pure (facts + row + policy -> report).
    ``local`` is the wheel's local version; ``train_from`` says where the train came from;
    ``claim`` the GPUs it must run on (default: the row's, else its own SASS); ``audit``:
    the plan was made up from the wheel (no row), so each library's train is its own.
    ``extra``: findings of the ``index`` check (made from what an index says), judged by
    the same policy as the others.  ``rules``: the judge (rules/judge.py; default: the
    shipped catalog's, or the one already judging)."""
    with judging(rules):
        return _check_source(source, plan, policy, local, train_from, claim, audit, notes,
                             extra)


def _check_source(
    source: Source,
    plan: Plan,
    policy: CheckPolicy | None,
    local: str | None,
    train_from: str,
    claim: Claim | None,
    audit: bool,
    notes: Sequence[str],
    extra: Sequence[Finding],
) -> WheelReport:
    policy = policy or CheckPolicy()
    ctx = CheckContext(source, plan, policy, local, train_from, claim=claim, audit=audit)
    prof = ctx.profile
    findings: list[Finding] = []
    checks = list(CHECKS)
    if extra:
        checks.append(CheckSpec("index", lambda _ctx: list(extra), INDEX_CODES))
    for name, check, _ in checks:
        for f in check(ctx):
            if not policy.enabled(f.code):
                continue
            severity: Severity | None = f.severity
            if f.severity == CODES[f.code].severity:  # a check's own choice stands
                severity = prof.severity(f.code, f.severity)
            if severity is None:
                continue
            f = Finding(f.code, severity, f.message, f.library, name)
            w = policy.waiver_for(f.code, f.library)
            findings.append(f.waive(w.reason) if w else f)
    findings.sort(key=lambda f: (f.library or "", f.code))
    return WheelReport(
        wheel=ctx.wheel_name,
        path=source.path,
        row=plan.row.name,
        train=plan.train.name,
        platform=plan.platform,
        sass=tuple(a.sass for a in plan.sass),
        ptx=tuple(a.ptx for a in plan.ptx),
        stats=_stats(ctx),
        libraries=tuple(lib.name for lib in ctx.libs),
        checks=tuple(c.name for c in checks),
        findings=tuple(findings),
        fail_on=policy.fail_on,
        notes=tuple(notes) + _audit_notes(ctx),
        profile=prof.name,
        claim=ctx.claim.describe() if not ctx.is_cpu else None,
        claimed=tuple(a.cc for a in ctx.claim.gpus) if not ctx.is_cpu else (),
    )


def _audit_notes(ctx: CheckContext) -> tuple[str, ...]:
    """What audit mode inferred, library by library (the evidence for its trains)."""
    if not ctx.audit:
        return ()
    out = []
    for lib in ctx.loadable_libs():
        t = ctx.train_of(lib)
        if lib.runtime_containers() or t.major is not None:
            out.append(f"{lib.name}: train {t.describe()} ({t.evidence})")
    return tuple(out)


def check_wheel(
    path: str | os.PathLike[str],
    rows: Sequence[Row] | Matrix,
    policy: CheckPolicy | None = None,
    *,
    progress: Progress | None = None,
    **options: Unpack[CheckOptions],
) -> WheelReport:
    """Inspect the wheel at ``path`` and check it against its row; the keyword options are
    :class:`CheckOptions`.

    ``rows``: a project's rows, or a :class:`cuwheel.config.Config` (then its file is named
    in the report, and the built-in matrix -- a Config without a file -- audits a wheel
    unless a row is named).  The row is picked as :mod:`cuwheel.checks.rowpick` says:
    ``row`` (or ``$CUWHEEL_ROW``), else the train of ``train`` / the wheel's ``+cuXYZ`` /
    ``environ``, else the train the wheel's libraries name, each with ``platform`` or the
    wheel's platform tag; exactly one row must match (ConfigError naming the candidates).
    ``audit``: True judges the wheel without a row (each library by its own train, the
    GPUs of ``claim`` or of its own SASS); None (the default) does so only for the built-in
    matrix; False never does.  ``gpus``: the claim as ``--gpus`` names it (``"V100,T4"``,
    ``"all"``: every GPU of the wheel's train).  InputError when the file is no readable
    wheel.  ``index``: a PEP 691 simple-index URL; the wheel's requirements are looked up
    there (DEP007: placeholder projects).  Without it nothing leaves the machine.
    ``progress``: called as the wheel is read (:data:`cuwheel.read.inspect.Progress`).
    ``rules``: the judge (:class:`cuwheel.rules.judge.Rules`; default: the shipped
    catalog's).
    """
    from cuwheel.read.inspect import inspect

    p = os.fspath(path)
    if os.path.isdir(p):
        raise InputError(p, "is a directory (cuwheel check DIR checks the wheels in it)")
    if not os.path.exists(p):
        raise InputError(p, "no such file")
    if not os.path.isfile(p):
        raise InputError(p, "not a regular file")
    if not p.endswith(".whl"):
        raise InputError(p, "not a wheel (a wheel file name ends in .whl)")

    def read() -> Source:
        source = inspect(p, progress=progress).sources[0]
        if source.kind != "wheel" or source.wheel is None:
            why = source.problems[0].message if source.problems else "not a wheel"
            raise InputError(p, why)
        return source

    return _check(p, read, rows, policy, options)


def check_installed(
    name: str,
    rows: Sequence[Row] | Matrix,
    policy: CheckPolicy | None = None,
    **options: Unpack[CheckOptions],
) -> WheelReport:
    """:func:`check_wheel` for the installed distribution ``name``, judged as the wheel it
    was installed from (:func:`cuwheel.read.inspect.installed_source`: its files, METADATA
    and WHEEL tags).  InputError when it is not installed."""
    from cuwheel.read.inspect import installed_source

    source = installed_source(name)
    report = _check(source.path, lambda: source, rows, policy, options)
    note = "an installed distribution, judged as the wheel its WHEEL file's tags name"
    return replace(report, notes=(*report.notes, note))


def _check(
    wheel: str,
    read: Callable[[], Source],
    matrix: Sequence[Row] | Matrix,
    policy: CheckPolicy | None,
    o: CheckOptions,
) -> WheelReport:
    """Pick the row (a row or train that matches nothing is reported before a 500 MB wheel
    is read; the wheel's own evidence after), then judge the wheel."""
    with judging(o.get("rules")):
        return _check_judged(wheel, read, matrix, policy, o)


def _check_judged(
    wheel: str,
    read: Callable[[], Source],
    matrix: Sequence[Row] | Matrix,
    policy: CheckPolicy | None,
    o: CheckOptions,
) -> WheelReport:
    environ = o.get("environ")
    env = os.environ if environ is None else environ
    train, platform, row = o.get("train"), o.get("platform"), o.get("row")
    rows, config, own = matrix_rows(matrix)
    audit = o.get("audit")
    if audit is None and not own and not (row or env.get(ENV_ROW, "").strip()):
        audit = True  # the built-in rows are the seed project's: anyone else's is audited
    sel: Selection | None = None
    if audit is not True:
        sel = pick_by_name(rows, wheel, train=train, platform=platform, row=row,
                           environ=env, config=config)
    source = read()
    if sel is None and audit is not True:
        sel = pick_by_evidence(rows, source, platform=platform, config=config)
    report = _check_read(source, sel, policy, train=train, platform=platform, environ=env,
                         claim=o.get("claim"), gpus=o.get("gpus"), index=o.get("index"))
    return replace(report, config=config) if config is not None else report


def _check_read(
    source: Source,
    sel: Selection | None,
    policy: CheckPolicy | None,
    *,
    train: str | None,
    platform: str | None,
    environ: Mapping[str, str],
    claim: Claim | None,
    gpus: str | None,
    index: str | None,
) -> WheelReport:
    """Judge an inspected wheel (or installed distribution) against its selected row, or
    audit it when ``sel`` is None."""
    assert source.wheel is not None
    p, env = source.path, environ
    extra: list[Finding] = []
    if index:
        requires = source.wheel.requires_dist
        extra = check_placeholders(requires, read_projects(index, requires), index)
    if sel is not None:
        if gpus:
            claim = claim_from_gpus(gpus, sel.plan.train.release)
        report = check_source(source, sel.plan, policy, local=sel.local,
                              train_from=sel.train_from, claim=claim, notes=sel.notes,
                              extra=extra)
        report = replace(report, row_from=_row_from(sel))
    else:
        plan, train_from, notes = audit_plan(source, train=train, platform=platform, environ=env)
        if gpus:
            claim = claim_from_gpus(gpus, plan.train.release)
        local = parse_wheel_name(p).local
        report = check_source(source, plan, policy, local=local, train_from=train_from,
                              claim=claim, audit=True, notes=notes, extra=extra)
        report = replace(report, row_from=f"train from {train_from}")
    return report


def _row_from(sel: Selection) -> str:
    """How the row was chosen, for the report's first lines."""
    if sel.row_from in ("--row", f"${ENV_ROW}"):
        return f"row chosen by {sel.row_from}"
    where = f" and {sel.platform_from}" if sel.platform_from and not sel.plan.train.is_cpu else ""
    return f"row chosen by {sel.train_from}{where}"


def audit_plan(
    source: Source,
    *,
    train: str | None = None,
    platform: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> tuple[Plan, str, tuple[str, ...]]:
    """A plan made up from the wheel itself, for audit mode: its platform tag, and the train
    from ``train``, its ``+cuXYZ``, the environment, or what its libraries say
    (:func:`cuwheel.checks.rowpick.wheel_evidence`).  Returns (plan, where the train came
    from, notes)."""
    name = parse_wheel_name(source.path)
    plat = platform or name.platform
    env = os.environ if environ is None else environ
    chosen: Train | None = None
    train_from = ""
    if train:
        chosen, train_from = parse_train(train), "--train"
    elif name.train is not None:
        chosen, train_from = name.train, f"the wheel's +{name.local}"
    else:
        for var in (ENV_TRAIN, *RELEASE_ENV_TRAIN):
            if env.get(var, "").strip():
                chosen, train_from = parse_train(env[var].strip()), f"${var}"
                break
    notes: list[str] = []
    if chosen is None:
        ev = wheel_evidence(source)
        notes += ev.notes
        if ev.train is not None:
            chosen, train_from = ev.train, ev.evidence
        else:
            chosen = newest_release_train()
            train_from = "nothing (the newest release is assumed)"
            notes.append(f"no library names its CUDA train; judged as {chosen}")
    if chosen.is_cpu:
        row = Row(name="audit", platform=None, cuda=(), dependencies="none")
    else:
        assert chosen.release is not None
        row = Row(name="audit", platform=plat, cuda=(chosen.release.name,), sass=(),
                  ptx="none", dependencies="declare")
    plan = Plan(row, chosen, None if chosen.is_cpu else plat, ())
    return plan, train_from, tuple(notes)


def check_wheels(
    paths: Sequence[str | os.PathLike[str]],
    rows: Sequence[Row] | Matrix,
    policy: CheckPolicy | None = None,
    **options: Unpack[CheckOptions],
) -> list[WheelReport]:
    return [check_wheel(p, rows, policy, **options) for p in paths]

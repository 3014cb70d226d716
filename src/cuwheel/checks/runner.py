"""Run the checks: pick the row for a wheel, call every check, then select, ignore and waive."""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence

from cuwheel.checks.context import CheckContext
from cuwheel.checks.cpu import check_cpu
from cuwheel.checks.dependencies import check_dependencies
from cuwheel.checks.devicecode import check_device_code, check_has_device_code
from cuwheel.checks.driver import check_driver
from cuwheel.checks.findings import Finding, Stats, WheelReport
from cuwheel.checks.inputs import check_inputs
from cuwheel.checks.modules import check_modules
from cuwheel.checks.ownership import check_ownership
from cuwheel.checks.policy import CheckPolicy
from cuwheel.checks.runpaths import check_runpaths
from cuwheel.checks.tags import check_machine, check_train
from cuwheel.checks.windows import check_windows
from cuwheel.errors import InputError
from cuwheel.model.inventory import Source
from cuwheel.plan.rows import Plan, Row
from cuwheel.plan.select import Selection, select

__all__ = ["CHECKS", "check_source", "check_wheel", "check_wheels"]

Check = Callable[[CheckContext], list[Finding]]

# One line per check; the name is what JUnit reports as the test case (check x library).
CHECKS: tuple[tuple[str, Check], ...] = (
    ("inputs", check_inputs),
    ("device-code-present", check_has_device_code),
    ("device-code", check_device_code),
    ("cpu", check_cpu),
    ("dependencies", check_dependencies),
    ("runpaths", check_runpaths),
    ("driver", check_driver),
    ("windows", check_windows),
    ("modules", check_modules),
    ("ownership", check_ownership),
    ("machine", check_machine),
    ("train", check_train),
)


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
) -> WheelReport:
    """Judge one inspected wheel against ``plan``: pure (facts + row + policy -> report).
    ``local`` is the wheel's local version; ``train_from`` says where the train came from."""
    policy = policy or CheckPolicy()
    ctx = CheckContext(source, plan, policy, local, train_from)
    findings: list[Finding] = []
    for name, check in CHECKS:
        for f in check(ctx):
            if not policy.enabled(f.code):
                continue
            f = Finding(f.code, f.severity, f.message, f.library, name)
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
        checks=tuple(name for name, _ in CHECKS),
        findings=tuple(findings),
        fail_on=policy.fail_on,
    )


def check_wheel(
    path: str | os.PathLike[str],
    rows: Sequence[Row],
    policy: CheckPolicy | None = None,
    *,
    train: str | None = None,
    platform: str | None = None,
    row: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> WheelReport:
    """Inspect the wheel at ``path`` and check it against its row among ``rows`` (picked by
    :func:`cuwheel.plan.select.select` from the flags, the wheel's name and ``environ``).

    Raises ConfigError when no row fits and InputError when the file is no readable wheel.
    """
    from cuwheel.read.inspect import inspect

    p = os.fspath(path)
    if not os.path.isfile(p):
        raise InputError(p, "no such file")
    sel: Selection = select(
        rows, train=train, platform=platform, row=row, wheel=p, environ=environ
    )
    inventory = inspect(p, workers=1)
    source = inventory.sources[0]
    if source.kind != "wheel" or source.wheel is None:
        why = source.problems[0].message if source.problems else "not a wheel"
        raise InputError(p, why)
    return check_source(source, sel.plan, policy, local=sel.local, train_from=sel.train_from)


def check_wheels(
    paths: Sequence[str | os.PathLike[str]],
    rows: Sequence[Row],
    policy: CheckPolicy | None = None,
    **selection: str | None,
) -> list[WheelReport]:
    return [check_wheel(p, rows, policy, **selection) for p in paths]  # type: ignore[arg-type]

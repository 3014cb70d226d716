"""Which row judges a wheel: the one decision that :func:`cuwheel.checks.check_wheel` and
``cuwheel check`` share (docs/checks.md#which-row-judges-a-wheel).

With a project's rows: a row named by ``--row`` (or ``$CUWHEEL_ROW``); else the train of
``--train``, of the wheel's ``+cuXYZ`` local version or of the environment; else the train
the wheel's own libraries name (:func:`cuwheel.rules.trains.infer_train`: cubin toolkit
notes, the linked runtime, the recorded build and the pinned requirements) -- each with
the wheel's platform tag (or ``--platform``).  Exactly one row is used; none or several is
a ConfigError naming the candidates and the flag that picks one.  A wheel is audited (no
row) only when that is asked for, or when there is no project configuration.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

from cuwheel.errors import ConfigError
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import runtime_majors
from cuwheel.model.inventory import Source
from cuwheel.plan.rows import CPU_TRAIN, Row, Train, parse_train, plan_for
from cuwheel.plan.select import (
    ENV_ROW,
    ENV_TRAIN,
    RELEASE_ENV_TRAIN,
    Selection,
    WheelName,
    parse_wheel_name,
    select,
)
from cuwheel.rules.trains import infer_train, train_requires, wheel_release

__all__ = ["Evidence", "Matrix", "asked_row", "matrix_rows", "pick_by_evidence", "pick_by_name",
           "wheel_evidence"]


class Matrix(Protocol):
    """A release matrix with the file it came from: :class:`cuwheel.config.Config`."""

    @property
    def rows(self) -> tuple[Row, ...]: ...

    @property
    def path(self) -> str | None: ...


def matrix_rows(rows: Sequence[Row] | Matrix) -> tuple[tuple[Row, ...], str | None, bool]:
    """(the rows, the configuration file they came from, whether they are a project's own):
    a Config without a file is the built-in matrix, not the project's; rows passed as a
    sequence are the caller's own."""
    if isinstance(rows, Sequence):
        return tuple(rows), None, True
    return tuple(rows.rows), rows.path, rows.path is not None


@dataclass(frozen=True)
class Evidence:
    """The train a wheel's own libraries name (audit mode and row selection read this)."""

    train: Train | None  # None: nothing names one (a CUDA wheel without notes or links)
    major_only: int | None  # only a linked soname names the major: the release is unknown
    evidence: str  # what says so, for reports
    notes: tuple[str, ...] = ()


def wheel_evidence(source: Source) -> Evidence:
    """The train of the wheel as its libraries say (the most common of their trains,
    :func:`cuwheel.rules.trains.wheel_release`); the CPU train for a wheel with no CUDA
    code or link."""
    requires = train_requires(source.wheel)
    project = source.wheel.name if source.wheel else None  # its name may state a major
    guesses = [infer_train(b, requires, project=project) for b in source.binaries]
    picked = wheel_release(guesses)
    if picked is not None:
        release, note = picked
        if note:  # only sonames name the major
            said = [g.evidence for g in guesses if g.major_only == release.major]
            return Evidence(Train(release), release.major, f"what its libraries say "
                            f"({said[0]})", (note,))
        said = [g.evidence for g in guesses if g.release == release]
        return Evidence(Train(release), None, f"what its libraries say ({said[0]})")
    if any(b.containers for b in source.binaries) or any(runtime_majors(b) for b in
                                                         source.binaries):
        return Evidence(None, None, "nothing in its libraries names a CUDA train")
    return Evidence(CPU_TRAIN, None, "no CUDA code or link in the wheel")


def asked_row(rows: Sequence[Row], *, row: str | None, train: str | None) -> None:
    """ConfigError (before any wheel is read) when ``row`` names no row of ``rows`` or
    ``train`` names no train: a mistake of the run, not of one wheel."""
    if row is not None and not any(r.name == row for r in rows):
        known = ", ".join(r.name for r in rows) or "none"
        raise ConfigError(f"--row: no row named {row!r}; known rows: {known}")
    if train:
        parse_train(train)


def _asked_train(train: str | None, name: WheelName | None,
                 env: Mapping[str, str]) -> tuple[Train, str] | None:
    """The train a flag, the wheel's local version or the environment names (the order of
    :func:`cuwheel.plan.select.select`); ConfigError for a spelling that names none."""
    if train:
        return parse_train(train), f"--train {train}"
    if name is not None and name.train is not None:
        return name.train, f"the wheel's +{name.local}"
    for var in (ENV_TRAIN, *RELEASE_ENV_TRAIN):
        value = env.get(var, "").strip()
        if value:
            return parse_train(value), f"${var}"
    return None


def pick_by_name(
    rows: Sequence[Row],
    wheel: str,
    *,
    train: str | None,
    platform: str | None,
    row: str | None,
    environ: Mapping[str, str],
    config: str | None,
) -> Selection | None:
    """The row that a flag, the environment or the wheel's file name picks, before the wheel
    is read; None when none of them names a train or a row (the wheel's libraries decide:
    :func:`pick_by_evidence`).  ConfigError naming the candidates when the train named
    matches no row."""
    named_row = row or environ.get(ENV_ROW, "").strip()
    name = parse_wheel_name(wheel)
    asked = _asked_train(train, name, environ)
    if not named_row and asked is None:
        return None
    try:
        return select(rows, train=train, platform=platform, row=row, wheel=wheel,
                      environ=environ)
    except ConfigError as exc:
        if named_row or asked is None:
            raise
        failed = exc
    chosen, said = asked
    plat = platform or name.platform
    _match(rows, chosen, None, plat, f"{_what(chosen, None, plat)}, from {said}", name, config)
    raise failed  # a row matches: select() refused for another reason (the platform)


def pick_by_evidence(
    rows: Sequence[Row],
    source: Source,
    *,
    platform: str | None,
    config: str | None,
) -> Selection:
    """The one row that covers the train the wheel's libraries name on its platform tag
    (or ``platform``); ConfigError naming the candidates when none or several do."""
    name = parse_wheel_name(source.path)
    ev = wheel_evidence(source)
    plat = platform or name.platform
    platform_from = "--platform" if platform else (
        f"the wheel's tag {', '.join(name.platform_tags)}" if name.platform else None)
    said = f"{_what(ev.train, ev.major_only, plat)}, from {ev.evidence}"
    if ev.train is None:
        _refuse(rows, [], said, plat, name, config)
    assert ev.train is not None
    row = _match(rows, ev.train, ev.major_only, plat, said, name, config)
    train = ev.train
    notes = list(ev.notes)
    if ev.major_only is not None:
        covered = [r for r in row.releases() if r.major == ev.major_only]
        train = Train(covered[-1])
        notes.append(f"train {train} assumed: the newest CUDA {ev.major_only} release "
                     f"{row.describe()} covers (pass --train to choose)")
    plan = plan_for(row, train, None if train.is_cpu else plat)
    return Selection(plan, name, ev.evidence, platform_from, "the wheel's own evidence",
                     notes=tuple(notes))


def _what(train: Train | None, major_only: int | None, plat: str | None) -> str:
    if train is not None and train.is_cpu:
        return "the CPU train"
    t = f"CUDA {major_only}" if major_only is not None else (str(train) if train else
                                                             "no train")
    return f"{t} on {plat or 'an unknown platform'}"


def _match(rows: Sequence[Row], train: Train, major_only: int | None, plat: str | None,
           said: str, name: WheelName, config: str | None) -> Row:
    """The one row covering ``train`` (any release of ``major_only``, when only the major
    is known) on ``plat``; ConfigError naming the candidates otherwise."""
    if train.is_cpu:
        found = [r for r in rows if r.is_cpu]
    elif major_only is not None:
        found = [r for r in rows if not r.is_cpu and r.platform == plat
                 and any(rel.major == major_only for rel in r.releases())]
    else:
        found = [r for r in rows if not r.is_cpu and r.platform == plat and r.covers(train)]
    if len(found) != 1:
        _refuse(rows, found, said, plat, name, config)
    return found[0]


def _refuse(rows: Sequence[Row], found: Sequence[Row], said: str, plat: str | None,
            name: WheelName, config: str | None) -> None:
    where = config or "the rows given"
    if found:
        listed = ", ".join(r.describe() for r in found)
        raise ConfigError(f"{name.filename}: {said} matches {len(found)} rows of {where}: "
                          f"{listed}; pick one with --row NAME or --train cuXYZ")
    near = [r for r in rows if r.platform == plat and not r.is_cpu] or list(rows)
    listed = ", ".join(r.describe() for r in near) or "none"
    raise ConfigError(f"{name.filename}: {said} matches no row of {where}; candidates: "
                      f"{listed}; pick one with --row NAME or --train cuXYZ, or --audit "
                      "to judge it without a row")


def newest_release_train() -> Train:
    """The train audit mode assumes for a CUDA wheel whose libraries name none."""
    return Train(active_catalog().releases[-1])

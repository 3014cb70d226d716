"""Pick the release row of a build or a wheel: one picker for plan, check and compat.

Each of train, platform and row comes from the first place that names it:

==========  ===========  ======================================  ==========================
            flag         the wheel                               environment
==========  ===========  ======================================  ==========================
train       ``--train``  its ``+cuXYZ`` / ``+cpu`` local version ``CUWHEEL_TRAIN``, then
                                                                 ``CU_VERSION``,
                                                                 ``DESIRED_CUDA``
platform    ``--platform`` its platform tag                      ``CUWHEEL_PLATFORM``, then
                                                                 this machine (no wheel)
row         ``--row``    —                                       ``CUWHEEL_ROW``
==========  ===========  ======================================  ==========================

A named row also supplies the train (when it covers one release, or the wheel names one)
and the platform.  A flag that contradicts the wheel is not an error here: the selection
records it in ``conflicts``, and each caller decides (``plan`` refuses to print a row for
a contradiction; ``check`` reports the wheel's tag against the row as a finding).
"""

from __future__ import annotations

import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import PurePath

from cuwheel.errors import ConfigError, shown
from cuwheel.knowledge import catalog, platforms
from cuwheel.plan.rows import Plan, Row, Train, parse_train, plan_for, select_row

__all__ = [
    "ENV_PLATFORM",
    "ENV_ROW",
    "ENV_TRAIN",
    "RELEASE_ENV_TRAIN",
    "Selection",
    "WheelName",
    "host_platform",
    "parse_wheel_name",
    "select",
    "select_plan",
]

ENV_TRAIN = "CUWHEEL_TRAIN"
ENV_ROW = "CUWHEEL_ROW"
ENV_PLATFORM = "CUWHEEL_PLATFORM"
# Release-tooling variables that name the train (PyTorch's builders use both).
RELEASE_ENV_TRAIN = ("CU_VERSION", "DESIRED_CUDA")


@dataclass(frozen=True)
class WheelName:
    """What a wheel's file name says about its row (facts of the name, not judged)."""

    filename: str
    local: str | None  # "cu130" from "2.14.1+cu130"
    train: Train | None  # the train the local version names, when it names one
    platform_tags: tuple[str, ...]
    platform: str | None  # the row platform of its platform tag, when one matches


def parse_wheel_name(filename: str) -> WheelName:
    """Read a wheel file name; ConfigError when it is no wheel name, when its tags name
    several row platforms, or when its local version names no known train."""
    # packaging (and the logging it loads) only when a wheel is named: plan's start-up
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename

    base = PurePath(filename.replace("\\", "/")).name
    try:
        _name, version, _build, tags = parse_wheel_filename(base)
    except InvalidWheelFilename:
        raise ConfigError(
            f"{shown(base, 80)}: not a wheel file name "
            "(NAME-VERSION[-BUILD]-PYTHON-ABI-PLATFORM.whl)"
        ) from None
    local = version.local
    train: Train | None = None
    if local is not None:
        try:
            train = parse_train(local)
        except ConfigError as exc:
            raise ConfigError(f"{base}: local version +{local}: {exc}") from None
    plat_tags = tuple(sorted({t.platform for t in tags}))
    plats = {p.name for t in plat_tags if (p := catalog.platform_for_wheel_tag(t))}
    if len(plats) > 1:
        raise ConfigError(f"{base}: platform tags name several platforms: {sorted(plats)}")
    return WheelName(base, local, train, plat_tags, plats.pop() if plats else None)


def host_platform() -> str | None:
    """This machine's row platform (``linux-x86_64``, ``win-amd64``...), or None: the row
    platform of :func:`cuwheel.knowledge.platforms.host_platform`'s record."""
    here = platforms.host_platform()
    return here.row_platform if here is not None else None


@dataclass(frozen=True)
class Selection:
    """The row chosen for a build or a wheel, and where each choice came from."""

    plan: Plan
    wheel: WheelName | None
    train_from: str  # "--train", "the wheel's +cu130", "$CUWHEEL_TRAIN", "row 'x'"
    platform_from: str | None
    row_from: str  # "--row", "$CUWHEEL_ROW", or "train and platform"
    conflicts: tuple[str, ...] = ()  # flags that contradict the wheel
    notes: tuple[str, ...] = ()

    @property
    def local(self) -> str | None:
        return self.wheel.local if self.wheel else None


def _env_train(env: Mapping[str, str]) -> tuple[Train, str] | None:
    for var in (ENV_TRAIN, *RELEASE_ENV_TRAIN):
        value = env.get(var, "").strip()
        if value:
            try:
                return parse_train(value), f"${var}"
            except ConfigError as exc:
                raise ConfigError(f"${var}: {exc}") from None
    return None


def _named_row(rows: Sequence[Row], name: str, where: str) -> Row:
    for r in rows:
        if r.name == name:
            return r
    known = ", ".join(r.name for r in rows) or "none"
    raise ConfigError(f"{where}: no row named {name!r}; known rows: {known}")


def select(
    rows: Sequence[Row],
    *,
    train: str | None = None,
    platform: str | None = None,
    row: str | None = None,
    wheel: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Selection:
    """Choose the row; ConfigError (saying what to pass or add) when none fits."""
    env = os.environ if environ is None else environ
    name = parse_wheel_name(wheel) if wheel is not None else None
    conflicts: list[str] = []
    notes: list[str] = []

    named: Row | None = None
    row_from = "train and platform"
    if row is not None:
        named, row_from = _named_row(rows, row, "--row"), "--row"
    elif env.get(ENV_ROW, "").strip():
        named, row_from = _named_row(rows, env[ENV_ROW].strip(), f"${ENV_ROW}"), f"${ENV_ROW}"

    chosen: Train | None = None
    train_from = ""
    if train:
        chosen, train_from = parse_train(train), "--train"
        if name is not None and name.train is not None and name.train != chosen:
            conflicts.append(f"--train {chosen} contradicts the wheel's +{name.local}")
    elif name is not None and name.train is not None:
        chosen, train_from = name.train, f"the wheel's +{name.local}"
    else:
        found = _env_train(env)
        if found is not None:
            chosen, train_from = found
    if chosen is None and named is not None:
        covered = named.releases()
        if named.is_cpu:
            chosen = Train(None)
        elif covered:
            chosen = Train(covered[-1])
            if len(covered) > 1:
                notes.append(
                    f"train {chosen} assumed: the newest of the {len(covered)} releases "
                    f"{named.describe()} covers (pass --train to choose)"
                )
        train_from = f"row {named.name!r}"
    if chosen is None:
        what = f"{name.filename} has no +cuXYZ local version; " if name is not None else ""
        raise ConfigError(
            f"no train selected: {what}pass --train (cu130, 13.0 or cpu), or set "
            f"{ENV_TRAIN}, {' or '.join(RELEASE_ENV_TRAIN)}, or name a row in ${ENV_ROW}"
        )

    plat = platform
    platform_from: str | None = "--platform" if platform else None
    if name is not None:
        if plat is not None and name.platform is not None and plat != name.platform:
            conflicts.append(f"--platform {plat} contradicts the wheel's platform {name.platform}")
        if plat is None and name.platform is not None:
            plat, platform_from = name.platform, f"the wheel's tag {', '.join(name.platform_tags)}"
    if plat is None and named is not None and named.platform is not None:
        plat, platform_from = named.platform, f"row {named.name!r}"
    if plat is None and not chosen.is_cpu:
        if name is not None and name.platform_tags != ("any",):
            known = ", ".join(p.name for p in catalog.load_catalog().platforms)
            raise ConfigError(
                f"{name.filename}: platform tag {', '.join(name.platform_tags)} is no known "
                f"row platform ({known}); pass --platform"
            )
        plat = env.get(ENV_PLATFORM, "").strip() or None
        platform_from = f"${ENV_PLATFORM}" if plat else None
        if plat is None and name is None:
            plat, platform_from = host_platform(), "this machine"

    if named is not None:
        if not named.is_cpu and plat is not None and named.platform != plat:
            raise ConfigError(f"{named.describe()} is for {named.platform}, not {plat}")
        chosen_row = named
    else:
        chosen_row = select_row(rows, chosen, plat)
    plan = plan_for(chosen_row, chosen, plat)
    return Selection(plan, name, train_from, platform_from, row_from, tuple(conflicts),
                     tuple(notes))


def select_plan(
    rows: Sequence[Row],
    *,
    train: str | None = None,
    platform: str | None = None,
    row: str | None = None,
    wheel: str | None = None,
    environ: Mapping[str, str] | None = None,
) -> Plan:
    """The plan of :func:`select`, refusing contradictions (what ``cuwheel plan`` prints
    must be the row the wheel belongs to)."""
    sel = select(rows, train=train, platform=platform, row=row, wheel=wheel, environ=environ)
    if sel.conflicts:
        raise ConfigError(list(sel.conflicts))
    return sel.plan

"""Release rows: CUDA train x platform -> architectures, PTX policy, dependency policy.

A row is the single source of truth for what a wheel of one release train contains:
the build reads it (through :mod:`cuwheel.plan.emit`) and the checks read the same row, keyed
by the wheel's ``+cuXYZ`` tag, never what the build happened to consume.

Rows are validated against the catalog (:mod:`cuwheel.knowledge.catalog`): an architecture the
train's nvcc cannot build is an error; ``a`` / ``f`` PTX as the only forward path is a
warning (it cannot be JIT-compiled for a newer major).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cuwheel.errors import ConfigError, TrainSpellingError, shown
from cuwheel.knowledge import catalog
from cuwheel.knowledge.catalog import Release
from cuwheel.model.arch import Arch, ArchSpec, normalize_specs
from cuwheel.model.train import parse_train_name

__all__ = [
    "CPU_TRAIN",
    "DEPENDENCY_POLICIES",
    "PTX_POLICIES",
    "Plan",
    "Project",
    "Row",
    "Train",
    "check_rows",
    "parse_train",
    "plan_for",
    "select_row",
]

PTX_POLICIES = ("newest", "none")
DEPENDENCY_POLICIES = ("declare", "none")


@dataclass(frozen=True)
class Train:
    """A release train: a CUDA release (``cu130`` = CUDA 13.0) or the CPU train."""

    release: Release | None  # None for the CPU train

    @property
    def name(self) -> str:
        return self.release.train if self.release else "cpu"

    @property
    def is_cpu(self) -> bool:
        return self.release is None

    def __str__(self) -> str:
        return self.name


CPU_TRAIN = Train(None)


def _lookalike_train(text: str) -> str:
    """`` (did you mean 'cu130'?)`` for a train spelled with letters for digits (cu13O)."""
    fixed = text.strip().lower()
    fixed = fixed[:2] + fixed[2:].translate(str.maketrans("oil", "011"))
    try:
        parse_train_name(fixed)
    except TrainSpellingError:
        return ""
    return f" (did you mean {fixed!r}?)"


def parse_train(text: str) -> Train:
    """``cu130`` / ``13.0`` / ``13.0.2`` / ``cpu`` -> Train; raises ConfigError.

    The spelling is :func:`cuwheel.model.train.parse_train_name`'s; the release must be in
    the catalog (``cu127`` fails: CUDA 12.7 was never released).
    """
    if text.strip().lower() == "cpu":
        return CPU_TRAIN
    try:
        name = parse_train_name(text)
    except TrainSpellingError:
        hint = ""
        if re.fullmatch(r"cu[0-9]{1,2}", text.strip().lower(), re.ASCII):
            hint = " (a train names a release: cu130, not cu13)"
        else:
            hint = _lookalike_train(text)
        raise ConfigError(
            f"not a CUDA train: {shown(text)}{hint}; expected cuXYZ (cu130), X.Y (13.0) "
            "or cpu"
        ) from None
    try:
        return Train(catalog.release(name.version))
    except LookupError as exc:
        raise ConfigError(f"train {shown(text)}: {exc}") from None


@dataclass(frozen=True)
class Row:
    """One row of the release matrix (as written in ``[tool.cuwheel]``)."""

    name: str
    platform: str | None  # None: any platform (the CPU row)
    cuda: tuple[str, ...]  # "13" (every 13.x), "13.2"; empty for the CPU row
    sass: tuple[Arch, ...] = ()
    ptx: str | tuple[Arch, ...] = "newest"  # "newest", "none" or explicit archs
    dependencies: str = "declare"  # "declare" NVIDIA packages, or "none"
    note: str | None = None
    profile: str | None = None  # the check profile wheels of this row are held to
    # Per-library trains of a multi-train wheel: (glob over paths in the wheel, train name
    # or "infer"), first match wins; unmatched libraries use the row's train.
    library_trains: tuple[tuple[str, str], ...] = ()
    optional: tuple[str, ...] = ()  # globs: plugins whose CUDA dependencies are optional
    # False: the row's wheels are published without a +cuXYZ local version (the package
    # index forbids them), so none is expected (no TAG002).
    local_version: bool = True

    @property
    def is_cpu(self) -> bool:
        return not self.cuda

    def covers(self, train: Train) -> bool:
        """Whether this row applies to ``train`` (any platform)."""
        if train.is_cpu or self.is_cpu:
            return train.is_cpu and self.is_cpu
        assert train.release is not None
        return any(_pattern_covers(p, train.release) for p in self.cuda)

    def releases(self) -> tuple[Release, ...]:
        """Every catalog release this row covers."""
        return tuple(r for r in catalog.releases() if any(_pattern_covers(p, r) for p in self.cuda))

    def targets(self) -> tuple[ArchSpec, ...]:
        """SASS targets plus PTX as the policy says (``newest``: PTX of the highest SASS)."""
        specs = [ArchSpec(a, sass=True, ptx=False) for a in self.sass]
        if self.ptx == "newest" and self.sass:
            specs.append(ArchSpec(max(self.sass), sass=False, ptx=True))
        elif isinstance(self.ptx, tuple):
            specs.extend(ArchSpec(a, sass=False, ptx=True) for a in self.ptx)
        return normalize_specs(specs)

    def describe(self) -> str:
        if self.is_cpu:
            return f"row {self.name!r} (CPU)"
        return f"row {self.name!r} ({self.platform}, CUDA {', '.join(self.cuda)})"


def _pattern_covers(pattern: str, release: Release) -> bool:
    if "." in pattern:
        return catalog.parse_version(pattern) == release.version
    return pattern.isascii() and pattern.isdigit() and len(pattern) <= 6 and (
        int(pattern) == release.major
    )


def check_cuda_pattern(pattern: str) -> str | None:
    """Problem with a row's ``cuda`` item, or None.  ``13`` / ``13.x`` / ``13.2`` are valid."""
    if re.fullmatch(r"[0-9]{1,6}", pattern):
        if not any(r.major == int(pattern) for r in catalog.releases()):
            return f"no CUDA {pattern}.x release is known"
        return None
    try:
        catalog.release(pattern)
    except (LookupError, ValueError) as exc:
        return str(exc)
    return None


def _release_span(rels: Sequence[Release]) -> str:
    names = [r.name for r in rels]
    return names[0] if len(names) == 1 else f"{names[0]} ... {names[-1]} ({len(names)} releases)"


def _why_not(arch: Arch, release: Release) -> str:
    for rn in catalog.renames():
        if arch.base == rn.old.base and release.version >= catalog.parse_version(
            rn.first_release_with_new
        ):
            return f"{rn.old} was renamed {rn.new} in CUDA {rn.first_release_with_new}"
        if arch.base == rn.new.base and release.accepts(rn.old.base):
            return f"CUDA {release.name} calls it {rn.old}"
    plain = [a for a in release.sass if not a.variant]
    return f"CUDA {release.name}'s nvcc builds {plain[0]} ... {plain[-1]}" + (
        "" if arch.variant == "" else f" (variant '{arch.variant}' not offered for {arch.base})"
    )


def check_rows(rows: Sequence[Row]) -> tuple[list[str], list[str]]:
    """Validate rows against the catalog and each other: (errors, warnings)."""
    errors: list[str] = []
    warnings: list[str] = []
    platforms = {p.name for p in catalog.load_catalog().platforms}
    seen: dict[tuple[str | None, str], str] = {}
    for row in rows:
        where = row.describe()
        if row.is_cpu:
            if row.sass or isinstance(row.ptx, tuple):
                errors.append(f"{where}: the CPU row builds no architectures")
            if row.dependencies != "none":
                errors.append(f"{where}: the CPU row declares no CUDA dependencies")
            key: tuple[str | None, str] = (None, "cpu")
            if key in seen:
                errors.append(f"{where}: a second CPU row (first: {seen[key]!r})")
            seen[key] = row.name
            continue
        if row.platform not in platforms:
            errors.append(
                f"{where}: unknown platform {row.platform!r}; known: {', '.join(sorted(platforms))}"
            )
        bad_pattern = False
        for pattern in row.cuda:
            problem = check_cuda_pattern(pattern)
            if problem:
                errors.append(f"{where}: cuda {pattern!r}: {problem}")
                bad_pattern = True
        if bad_pattern:
            continue
        if not row.sass:
            errors.append(f"{where}: a CUDA row needs at least one SASS architecture")
        ptx_targets = [t.arch for t in row.targets() if t.ptx]
        failing: dict[tuple[str, Arch], list[Release]] = {}
        for release in row.releases():
            k = (row.platform, release.name)
            if k in seen:
                errors.append(
                    f"{where}: CUDA {release.name} on {row.platform} is also covered by "
                    f"row {seen[k]!r}"
                )
            seen[k] = row.name
            for a in row.sass:
                if not release.accepts(a):
                    failing.setdefault(("build", a), []).append(release)
            for a in ptx_targets:
                if not release.accepts(a):
                    failing.setdefault(("emit", a), []).append(release)
        for (what, a), rels in failing.items():
            names = _release_span(rels)
            thing = a.sass if what == "build" else f"{a.ptx} PTX"
            errors.append(f"{where}: CUDA {names} cannot {what} {thing} ({_why_not(a, rels[0])})")
        if ptx_targets and all(a.variant for a in ptx_targets):
            names = ", ".join(a.ptx for a in ptx_targets)
            warnings.append(
                f"{where}: the only PTX ({names}) is architecture-/family-specific and cannot "
                "be JIT-compiled for a newer major; add plain compute_XY PTX to reach future GPUs"
            )
    return errors, warnings


def select_row(rows: Iterable[Row], train: Train, platform: str | None) -> Row:
    """The row for ``train`` on ``platform``; ConfigError saying what to add when none."""
    rows = list(rows)
    if train.is_cpu:
        for row in rows:
            if row.is_cpu:
                return row
        raise ConfigError("no CPU row", hint=toml_row_hint("cpu", None))
    if platform is None:
        raise ConfigError(
            f"train {train} needs a platform: pass --platform (e.g. linux-x86_64) or a wheel"
        )
    known = sorted(p.name for p in catalog.load_catalog().platforms)
    if platform not in known:
        raise ConfigError(f"unknown platform {shown(platform)}{platform_suggestion(platform)}; "
                          f"known: {', '.join(known)}")
    for row in rows:
        if not row.is_cpu and row.platform == platform and row.covers(train):
            return row
    assert train.release is not None
    others = sorted({r.platform or "" for r in rows if not r.is_cpu and r.covers(train)})
    elsewhere = f" (rows exist for {', '.join(others)})" if others else ""
    raise ConfigError(
        f"no row for {train} on {platform}{elsewhere}; add one to pyproject.toml",
        hint=toml_row_hint(train.release.name, platform),
    )


def toml_row_hint(cuda: str, platform: str | None) -> str:
    """A row to paste into pyproject.toml (valid TOML as printed)."""
    if platform is None:
        return '[[tool.cuwheel.rows]]\nname = "cpu"\ncuda = "cpu"'
    return (
        f'[[tool.cuwheel.rows]]\nplatform = "{platform}"\ncuda = "{cuda}"\n'
        'sass = ["sm_80", "sm_90"]  # the GPUs you build for: see `cuwheel gpus`'
    )


def platform_suggestion(text: str) -> str:
    """`` (did you mean 'linux-x86_64'?)`` for a wheel tag or a near-miss spelling."""
    import difflib

    p = catalog.platform_for_wheel_tag(text) or catalog.platform_for_wheel_tag(
        text.replace("-", "_")
    )
    if p is not None:
        return f" (did you mean {p.name!r}? wheel tag {text} is built on it)"
    known = [q.name for q in catalog.load_catalog().platforms]
    close = difflib.get_close_matches(text.replace("_", "-"), known, n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


@dataclass(frozen=True)
class Plan:
    """A row resolved for one train and platform: exactly what to build."""

    row: Row
    train: Train
    platform: str | None
    targets: tuple[ArchSpec, ...]
    warnings: tuple[str, ...] = ()

    @property
    def sass(self) -> tuple[Arch, ...]:
        return tuple(t.arch for t in self.targets if t.sass)

    @property
    def ptx(self) -> tuple[Arch, ...]:
        return tuple(t.arch for t in self.targets if t.ptx)

    @property
    def declares_dependencies(self) -> bool:
        return not self.train.is_cpu and self.row.dependencies == "declare"


def plan_for(row: Row, train: Train, platform: str | None) -> Plan:
    """Resolve ``row`` for ``train``; ConfigError when that train's nvcc cannot build it."""
    if not row.covers(train):
        raise ConfigError(f"{row.describe()} does not cover train {train}")
    targets = row.targets()
    problems: list[str] = []
    if train.release is not None:
        for t in targets:
            if not train.release.accepts(t.arch):
                problems.append(
                    f"{row.describe()}: CUDA {train.release.name} cannot build {t} "
                    f"({_why_not(t.arch, train.release)})"
                )
    if problems:
        raise ConfigError(problems)
    _, warnings = check_rows([row])
    return Plan(row, train, platform if not train.is_cpu else None, targets, tuple(warnings))


@dataclass(frozen=True)
class Project:
    """A project's release matrix: its rows, the trains it releases, its Python versions
    and the consumer versions that read the emitted lists (``[tool.cuwheel]``)."""

    rows: tuple[Row, ...]
    trains: tuple[Train, ...]
    python: tuple[str, ...]
    torch_version: str
    cmake_version: str

"""Rows read off existing wheels (``cuwheel init --from``; docs/config.md#init): one row per
(platform, train) of the wheels, holding the SASS of the GPUs the wheel runs on natively.

Which GPUs those are is the roll-up's answer, the one compat gives (rules/rollup.py:
:func:`~cuwheel.compat.evaluate.evaluate_binary` per library, :func:`judge_wheel` for the
wheel, run-time alternatives judged as a set, modules for other GPUs left out): a GPU goes
into the row when the wheel runs there and every library with device code that runs there
runs from SASS of that GPU (the row is a claim each library is checked against, so a GPU
one library reaches only by PTX or by another GPU's SASS would be a DC001 for it).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from cuwheel.errors import ConfigError, InputError
from cuwheel.knowledge.active import active_catalog
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, Source
from cuwheel.plan.rows import CPU_TRAIN, Row, Train
from cuwheel.rules.judge import Rules, judging

__all__ = ["DerivedRow", "derive_rows", "native_gpus"]


@dataclass(frozen=True)
class DerivedRow:
    """A row read off existing wheels, and what the comments above it say."""

    row: Row
    train: Train
    wheels: tuple[str, ...]
    comments: tuple[str, ...] = ()


@dataclass
class _Facts:
    """What one wheel says about its row."""

    path: str
    platform: str | None
    train: Train
    train_from: str
    native: set[Arch]  # GPUs (plain archs) the wheel runs on natively (native_gpus)
    ptx: set[Arch] | None  # PTX every library carries (None: no library has device code)
    libraries: int  # libraries with device code, specialised modules left out
    union: set[Arch] = field(default_factory=set)
    ptx_union: set[Arch] = field(default_factory=set)
    declares: tuple[str, ...] = ()
    library_trains: tuple[tuple[str, str], ...] = ()
    notes: list[str] = field(default_factory=list)
    # GPU (plain arch) -> how the libraries spell its SASS: sm_90a where one ships only
    # sm_90a (arch-specific code runs on that GPU only; the row must keep the suffix)
    spelled: dict[Arch, set[Arch]] = field(default_factory=dict)


def _member(source: Source, b: Binary) -> str:
    path = b.archive or b.path
    prefix = source.path + "!"
    return path[len(prefix):] if path.startswith(prefix) else path


def _sass_of(b: Binary) -> set[Arch]:
    from cuwheel.rules.loading import counted_containers

    return {e.arch for _, c in counted_containers(b) for e in c.entries
            if e.kind is CodeKind.SASS}  # fmt: skip


def native_gpus(source: Source, candidates: Iterable[Arch]) -> set[Arch]:
    """The GPUs among ``candidates`` (plain archs) that the wheel runs on from SASS of
    that GPU: the roll-up's wheel state is RUNS (compat's :func:`evaluate_binary` per
    library, no driver or host platform assumed, :func:`judge_wheel`), and every library
    with device code that counts there (alone, or the running variants of a set of
    run-time alternatives) runs from native or compatible SASS and ships SASS of that GPU."""
    from cuwheel.compat.evaluate import evaluate_binary
    from cuwheel.compat.targets import Target
    from cuwheel.rules.loading import Verdict
    from cuwheel.rules.rollup import WheelState, judge_wheel

    good = (Verdict.NATIVE, Verdict.COMPATIBLE)
    sass = {b.path: _sass_of(b) for b in source.binaries}
    out: set[Arch] = set()
    for gpu in candidates:
        verdicts = {b.path: lv for b in source.binaries
                    if (lv := evaluate_binary(b, Target(gpu, gpu.sass))) is not None}
        wv = judge_wheel(source.path, source.kind, list(verdicts.values()), gpu)
        if wv.state is not WheelState.RUNS:
            continue
        grouped = {a.path for g in wv.groups for a in g.members}
        alone = [lv for lv in wv.libraries if lv.path not in grouped and lv.has_device_code
                 and lv.verdict is not Verdict.OTHER_GPUS]  # fmt: skip
        running = [verdicts[a.path] for g in wv.groups for a in g.members
                   if a.path in verdicts and verdicts[a.path].verdict.runs
                   and verdicts[a.path].has_device_code]  # fmt: skip
        if all(lv.verdict in good and any(a.base == gpu for a in sass.get(lv.path, ()))
               for lv in (*alone, *running)):  # fmt: skip
            out.add(gpu)
    return out


def _cuda_requirements(requires: Sequence[str], platform: str | None) -> tuple[str, ...]:
    """The CUDA requirements that apply on the wheel's platform without an extra, as the
    checks read them (:func:`cuwheel.checks.context.declared_requirements`)."""
    from cuwheel.checks.context import declared_requirements
    from cuwheel.knowledge.platforms import platform_record

    plat = platform_record(platform) if platform is not None else None
    return tuple(d.text.split(";")[0].strip() for d in declared_requirements(requires, plat)
                 if d.is_cuda and d.applies)  # fmt: skip


def _read_wheel(path: str) -> _Facts:
    from cuwheel.knowledge.linkage import runtime_majors
    from cuwheel.plan.select import parse_wheel_name
    from cuwheel.read.inspect import inspect
    from cuwheel.rules.evidence import specialised_only
    from cuwheel.rules.loading import counted_containers
    from cuwheel.rules.trains import infer_train, train_requires, wheel_release

    if os.path.isdir(path):
        raise InputError(path, "is a directory; name the wheels (--from dist/*.whl)")
    if not os.path.isfile(path):
        raise InputError(path, "no such file")
    if not path.endswith(".whl"):
        raise InputError(path, "not a wheel (a wheel file name ends in .whl)")
    name = parse_wheel_name(path)
    source = inspect(path).sources[0]
    if source.kind != "wheel" or source.wheel is None:
        why = source.problems[0].message if source.problems else "not a wheel"
        raise InputError(path, why)
    unread = list(source.problems)
    requires = train_requires(source.wheel)
    loadable = [b for b in source.binaries if b.archive is None and b.file_type != "object"]
    device = [b for b in loadable if any(True for _ in counted_containers(b))]
    cuda_linked = any(runtime_majors(b) for b in source.binaries)
    facts_notes: list[str] = []
    if unread:
        facts_notes.append(f"{len(unread)} member(s) could not be read: {unread[0].message}")

    # the train: the +cuXYZ local version, else what the libraries say (the most common)
    train: Train
    train_from: str
    per_lib = {_member(source, b): infer_train(b, requires) for b in device}
    if name.train is not None:
        train, train_from = name.train, f"its +{name.local}"
    elif not device and not cuda_linked:
        train, train_from = CPU_TRAIN, "no device code and no CUDA library linked"
    else:
        picked = wheel_release(list(per_lib.values())) or wheel_release(
            [infer_train(b, requires) for b in loadable]
        )
        if picked is None:
            raise ConfigError(
                f"{name.filename}: no +cuXYZ local version and no library names its CUDA "
                "train; write its row by hand (or pass a wheel that names it)"
            )
        train, train_from = Train(picked[0]), "what its libraries say (no +cuXYZ)"
        if picked[1]:
            facts_notes.append(picked[1])
    if train.is_cpu:
        return _Facts(path, None, train, train_from, set(), None, 0, notes=facts_notes)
    if name.platform is None:
        known = ", ".join(p.name for p in active_catalog().platforms)
        raise ConfigError(f"{name.filename}: platform tag {', '.join(name.platform_tags)} is "
                          f"no row platform ({known})")
    release = train.release
    assert release is not None

    # arch-specific modules beside general ones are left out (loaded on their GPUs only);
    # a wheel of arch-specific code alone is built for those GPUs: its row names them
    general = [b for b in device if not specialised_only(b)] or device
    skipped = len(device) - len(general)
    if skipped:
        facts_notes.append(f"{skipped} module(s) of arch-specific code only left out")
    union: set[Arch] = set()
    ptx_sets: list[set[Arch]] = []
    spelled: dict[Arch, set[Arch]] = {}
    for b in general:
        union |= _sass_of(b)
        ptx_sets.append({e.arch for _, c in counted_containers(b) for e in c.entries
                         if e.kind is CodeKind.PTX})
    native = native_gpus(source, sorted({a.base for a in union}))
    for b in general:
        shipped = _sass_of(b)
        for gpu in native:
            own = [a for a in shipped if a.base == gpu]
            if own:
                spelled.setdefault(gpu, set()).add(gpu if gpu in shipped else min(own))
    common_ptx = set.intersection(*ptx_sets) if ptx_sets else None
    ptx_union = set().union(*ptx_sets) if ptx_sets else set()

    lib_trains: list[tuple[str, str]] = []
    for member, t in sorted(per_lib.items()):
        # another release of the same major is no other train for the checks (TAG006 is
        # information); a library of another major is (bitsandbytes' one per train)
        # "infer", not the train read now: a library that only links libcudart.so.13 names
        # its major, and the release inferred for it is a guess (the newest of the major)
        if t.release is not None and t.release.major != release.major:
            lib_trains.append((glob.escape(member), "infer"))
            facts_notes.append(f"{member}: its own train ({t.release.train} by {t.evidence})")
    return _Facts(path, name.platform, train, train_from, native, common_ptx,
                  len(general), union, ptx_union,
                  _cuda_requirements(requires, name.platform), tuple(lib_trains), facts_notes,
                  spelled)


def _arch_names(archs: Iterable[Arch], ptx: bool = False) -> str:
    return " ".join(a.ptx if ptx else a.sass for a in sorted(archs)) or "none"


def derive_rows(paths: Sequence[str], *, rules: Rules | None = None) -> list[DerivedRow]:
    """One row per (platform, train) of the wheels at ``paths``.

    SASS: the GPUs every library with device code runs on from its own SASS (modules of
    arch-specific code only, which their package loads on those GPUs alone, left out),
    across every wheel of the row.  PTX: the architectures whose PTX every such library
    carries ("newest" when that is the highest SASS's).  Dependencies: "declare" when every
    wheel of the row requires NVIDIA packages on its platform.  InputError / ConfigError
    for a file that is no readable wheel or names no row.  ``rules``: the judge
    (rules/judge.py; default: the shipped catalog's)."""
    with judging(rules):
        return _derive_rows(paths)


def _derive_rows(paths: Sequence[str]) -> list[DerivedRow]:
    facts = [_read_wheel(p) for p in paths]
    groups: dict[tuple[str | None, str], list[_Facts]] = {}
    for f in facts:
        groups.setdefault((f.platform, f.train.name), []).append(f)
    out: list[DerivedRow] = []
    for (platform, _), group in sorted(groups.items(), key=_group_order):
        out.append(_row_of(platform, group))
    return out


def _group_order(
    item: tuple[tuple[str | None, str], list[_Facts]],
) -> tuple[int, str, tuple[int, int]]:
    (platform, _), group = item
    t = group[0].train
    return (1 if t.is_cpu else 0, platform or "", t.release.version if t.release else (0, 0))


def _row_of(platform: str | None, group: list[_Facts]) -> DerivedRow:
    train = group[0].train
    wheels = tuple(os.path.basename(f.path) for f in group)
    comments = [f"From {w}" for w in wheels]
    comments.append(f"train {train}: {group[0].train_from}")
    if train.is_cpu:
        for f in group:
            comments += f.notes
        row = Row(name="cpu", platform=None, cuda=(), ptx="none", dependencies="none")
        return DerivedRow(row, train, wheels, tuple(comments))
    release = train.release
    assert release is not None and platform is not None
    libraries = sum(f.libraries for f in group)
    shared: set[Arch] = set.intersection(*(f.native for f in group))
    union = set().union(*(f.union for f in group))
    not_built = {a for a in shared if not release.accepts(a)}
    spelled: dict[Arch, set[Arch]] = {}
    for f in group:
        for gpu, names in f.spelled.items():
            spelled.setdefault(gpu, set()).update(names)
    # one spelling for all libraries: that one (sm_90a); mixed, the plain arch
    sass = tuple(sorted(min(spelled[g]) if len(spelled.get(g, ())) == 1 else g
                        for g in shared - not_built))
    ptx_sets = [f.ptx for f in group if f.ptx is not None]
    common_ptx = set.intersection(*ptx_sets) if ptx_sets else set()
    ptx_union = set().union(*(f.ptx_union for f in group))
    ptx_ok = {a for a in common_ptx if release.accepts(a)}
    ptx: str | tuple[Arch, ...]
    if not ptx_ok:
        ptx = "none"
    elif sass and ptx_ok == {max(sass)}:
        ptx = "newest"
    else:
        ptx = tuple(sorted(ptx_ok))
    declares = [f.declares for f in group]
    deps = "declare" if all(declares) else "none"
    who = ("its one library with device code ships" if libraries == 1
           else f"all {libraries} of its libraries with device code ship")
    comments.append(f"SASS {who}: {_arch_names(sass)}")
    extra = {a for a in union if a.base not in {s.base for s in sass}} | not_built
    if extra:
        comments.append(f"shipped by some libraries only (not claimed): {_arch_names(extra)}")
    if not_built:
        comments.append(f"CUDA {release.name}'s nvcc does not build {_arch_names(not_built)}")
    comments.append(f"PTX in every library: {_arch_names(common_ptx, ptx=True)}"
                    + (f" (some: {_arch_names(ptx_union - common_ptx, ptx=True)})"
                       if ptx_union - common_ptx else ""))
    if all(declares):
        comments.append(f"NVIDIA requirements: {', '.join(sorted(set().union(*declares)))}")
    elif any(declares):
        comments.append("some wheels of this row require NVIDIA packages, others do not")
    for f in group:
        comments += f.notes
    local = any(f.train_from.startswith("its +") for f in group)
    if not local:
        comments.append("no +cuXYZ local version (local-version = false): `cuwheel check "
                        "WHEEL` finds this row by the CUDA release its libraries record")
    lib_trains: list[tuple[str, str]] = []
    for f in group:
        lib_trains += [lt for lt in f.library_trains if lt not in lib_trains]
    if not sass:
        raise ConfigError(
            f"{', '.join(wheels)}: no SASS architecture that every library ships"
            + (f" (some ship {_arch_names(union)})" if union else " (no device code)")
            + "; write its row by hand"
        )
    # A row read off a wheel whose build contract is unknown is the common part of its
    # libraries: judged by what loads (audit), not as an exact list; and a wheel with no
    # +cuXYZ (every wheel on PyPI) says its row's wheels carry none.
    row = Row(name=f"{platform}-{train}", platform=platform, cuda=(release.name,), sass=sass,
              ptx=ptx, dependencies=deps, library_trains=tuple(lib_trains), profile="audit",
              local_version=local)
    return DerivedRow(row, train, wheels, tuple(comments))

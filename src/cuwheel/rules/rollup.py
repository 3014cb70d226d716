"""The one roll-up: container verdicts -> a library -> run-time alternatives -> a wheel ->
an environment (docs/compat.md#from-containers-to-a-wheel).

compat, check's device-code findings, scan's summary, ``init --from`` and the doctor all
ask here; nothing else judges coverage.  A library's containers are loaded one by one
(rules/library.py rolls them up).
When some load on a GPU and others do not, the others are one of three things:

- **for other GPUs**: arch- or family-specific code, code for newer GPUs, or one
  container per architecture of a library that keeps each architecture apart (NVIDIA's
  own libraries).  The library dispatches around them.
- **missing**: code for older GPUs only, in a library built before this GPU existed (its
  newest toolkit did not know the architecture): its host code cannot have been written to
  pick other kernels here, and calling them is the "no kernel image" error.
- **in doubt**: code for older GPUs only, in a library whose toolkit knew this GPU.  The
  same bytes come from a library that picks kernels by compute capability (it runs) and
  from one that calls every kernel (it fails); only the host code tells.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, field
from enum import Enum

from cuwheel.errors import Exit
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.loaders import select_variant
from cuwheel.model.arch import Arch
from cuwheel.rules.evidence import (
    Alternative,
    alternatives,
    group_label,
    release_at_or_below,
    split_path,
)
from cuwheel.rules.library import LibraryVerdict
from cuwheel.rules.loading import Verdict, worst

__all__ = [
    "GroupVerdict",
    "WheelState",
    "WheelVerdict",
    "combine_states",
    "judge_group",
    "judge_wheel",
]



# ---------------------------------------------------------------------------- alternatives


@dataclass(frozen=True)
class GroupVerdict:
    """A set of run-time alternatives on one GPU: the best variant that can target it, or
    the one a process with CUDA ``cuda`` loads."""

    members: tuple[Alternative, ...]
    verdict: Verdict
    reason: str
    chosen: str | None  # the variant that decided (loaded, or the best)
    running: tuple[str, ...]  # variants that run here
    not_for: tuple[str, ...]  # variants whose CUDA cannot build for this GPU
    failing: tuple[str, ...]  # variants that could target it but do not run


def _label(a: Alternative) -> str:
    return split_path(a.path)[1]


def judge_group(
    members: Sequence[Alternative],
    verdicts: dict[str, LibraryVerdict],
    device: Arch,
    cuda: tuple[int, int] | None = None,
    rule: str = "nearest",
) -> GroupVerdict | None:
    """The set's verdict.  A variant whose CUDA release cannot build for ``device`` at all
    is "for other GPUs", never a failure; None when no member has anything CUDA."""
    judged = [(a, verdicts[a.path]) for a in members if a.path in verdicts]
    if any(lv.has_device_code for _, lv in judged):
        # a variant without device code (it only links a runtime) says nothing of the GPU
        judged = [(a, lv) for a, lv in judged if lv.has_device_code or not lv.verdict.runs]
    if not judged:
        return None
    running, not_for, failing = [], [], []
    for a, lv in judged:
        rel = None
        if a.cuda is not None:
            try:
                rel = active_catalog().release(a.cuda)
            except LookupError:
                rel = release_at_or_below(a.cuda)
        if lv.verdict.runs:
            running.append((a, lv))
        elif (
            rel is not None
            and not any(x.number == device.number for x in rel.sass)
            and lv.verdict is not Verdict.DRIVER
        ):
            not_for.append((a, lv))
        else:
            failing.append((a, lv))
    names = {
        "running": tuple(_label(a) for a, _ in running),
        "not_for": tuple(_label(a) for a, _ in not_for),
        "failing": tuple(_label(a) for a, _ in failing),
    }
    if cuda is not None:
        version = select_variant((a.cuda for a, _ in judged if a.cuda), cuda, rule)
        pick = [(a, lv) for a, lv in judged if a.cuda == version and not a.flavor]
        pick = pick or [(a, lv) for a, lv in judged if version and a.cuda == version]
        if not pick:
            have = ", ".join(_label(a) for a, _ in judged)
            return GroupVerdict(
                tuple(members), Verdict.NO_CODE,
                f"no variant for CUDA {cuda[0]}.{cuda[1]} (the package has {have})",
                None, **names,
            )  # fmt: skip
        a, lv = pick[0]
        v = Verdict.OTHER_GPUS if any(a is x for x, _ in not_for) else lv.verdict
        return GroupVerdict(
            tuple(members), v, f"with CUDA {cuda[0]}.{cuda[1]} it loads {_label(a)}: {lv.reason}",
            _label(a), **names,
        )  # fmt: skip
    if running:
        best = min(running, key=lambda x: x[1].verdict.rank)
        reason = f"{len(running)} of {len(judged)} variants run ({', '.join(names['running'])})"
        if not_for:
            reason += (
                f"; not for this GPU: {', '.join(names['not_for'])} (their CUDA cannot build "
                f"for CC {device.cc})"
            )
        if failing:
            reason += f"; no code here: {', '.join(names['failing'])}"
        return GroupVerdict(tuple(members), best[1].verdict, reason, _label(best[0]), **names)
    if failing:
        w = max(failing, key=lambda x: x[1].verdict.rank)
        return GroupVerdict(
            tuple(members), w[1].verdict,
            f"no variant runs: {_label(w[0])}: {w[1].reason}", _label(w[0]), **names,
        )  # fmt: skip
    return GroupVerdict(
        tuple(members), Verdict.OTHER_GPUS,
        f"every variant is built by a CUDA that cannot build for CC {device.cc}",
        None, **names,
    )  # fmt: skip


# ---------------------------------------------------------------------------- a wheel


class WheelState(str, Enum):
    """The answer for a wheel (or an environment) on one GPU + driver; each has one exit
    code (docs/compat.md#wheel-verdicts)."""

    RUNS = "runs"
    RUNS_EXCEPT = "runs except"
    DEPENDS = "depends on dispatch"
    DOES_NOT_RUN = "does not run"
    UNKNOWN = "unknown"
    NOTHING = "nothing CUDA"

    @property
    def exit_code(self) -> Exit:
        return _EXIT[self]

    @property
    def heading(self) -> str:
        return self.value.upper()

    @staticmethod
    def worst_first() -> tuple[WheelState, ...]:
        """Every answer, the worst first: the one order of answers (combine_states, doctor's
        statuses)."""
        return _SEVERITY

    def unread(self, inputs: Sequence[str]) -> WheelState:
        """This answer when ``inputs`` could not be read: a failure stands (what was read
        already fails), anything else is UNKNOWN (what was not read could fail)."""
        if inputs and self in (WheelState.RUNS, WheelState.DEPENDS, WheelState.NOTHING):
            return WheelState.UNKNOWN
        return self


_EXIT = {
    WheelState.RUNS: Exit.OK,
    WheelState.NOTHING: Exit.OK,
    WheelState.DOES_NOT_RUN: Exit.NO,
    WheelState.UNKNOWN: Exit.UNUSABLE,
    WheelState.RUNS_EXCEPT: Exit.RUNS_EXCEPT,
    WheelState.DEPENDS: Exit.DEPENDS,
}
# Worst first, for several wheels or GPUs: a failure, then what could not be read, then
# the qualified answers.
_SEVERITY = (
    WheelState.DOES_NOT_RUN,
    WheelState.UNKNOWN,
    WheelState.RUNS_EXCEPT,
    WheelState.DEPENDS,
    WheelState.RUNS,
    WheelState.NOTHING,
)


def combine_states(states: Iterable[WheelState]) -> WheelState:
    """Several answers (wheels of an environment, GPUs of a machine) as one: the worst."""
    have = set(states)
    return next((s for s in _SEVERITY if s in have), WheelState.NOTHING)


@dataclass(frozen=True)
class WheelVerdict:
    """One inspected source (wheel, directory, distribution, file) on one GPU."""

    path: str
    kind: str
    state: WheelState
    reason: str  # the culprit first
    libraries: tuple[LibraryVerdict, ...]
    culprits: tuple[LibraryVerdict, ...] = ()  # what does not run, worst first
    doubtful: tuple[LibraryVerdict, ...] = ()  # what runs only if it dispatches
    other_gpus: tuple[LibraryVerdict, ...] = ()  # modules for other GPUs
    groups: tuple[GroupVerdict, ...] = ()
    unread: tuple[str, ...] = ()
    how: Verdict | None = None  # how what runs runs (native ... PTX JIT), worst
    verdict: Verdict | None = field(default=None)  # the worst unit verdict (None: nothing)

    @property
    def wrong_platform(self) -> bool:
        """Every library or set of alternatives that fails here fails for its platform: no
        machine of the wheel's platform carries the GPU."""
        failing = [lv.verdict for lv in self.culprits]
        failing += [g.verdict for g in self.groups if g.verdict.fails]
        return bool(failing) and all(v is Verdict.PLATFORM for v in failing)


def _name(path: str) -> str:
    return split_path(path)[1] or path


def judge_wheel(
    path: str,
    kind: str,
    libraries: Sequence[LibraryVerdict],
    device: Arch,
    *,
    cuda: tuple[int, int] | None = None,
    unread: Sequence[str] = (),
    core: str | None = None,
    static: Collection[str] = (),
    variant_rule: str = "nearest",
) -> WheelVerdict:
    """The wheel's state from its libraries' verdicts; alternatives judged as a set
    (``cuda``: the CUDA version of the process, which picks one), modules for other GPUs
    reported, not failed.  ``core``: the path of the wheel's core library
    (evidence.core_library); when it fails, the wheel does not run, whatever else does.
    ``static``: the paths of libraries with the CUDA runtime linked in statically; when one's
    driver gate fails, so does the package's (its runtime is the package's own).
    ``variant_rule``: how the package picks a variant (knowledge/loaders.py RULES)."""
    by_path = {lv.path: lv for lv in libraries}
    groups: list[GroupVerdict] = []
    grouped: set[str] = set()
    for members in alternatives(by_path):
        g = judge_group(members, by_path, device, cuda, variant_rule)
        grouped.update(a.path for a in members)
        if g is not None:
            groups.append(g)
    units: list[tuple[str, Verdict, str, bool]] = [
        (lv.path, lv.verdict, lv.reason, lv.has_device_code)
        for lv in libraries
        if lv.path not in grouped
    ]
    for g in groups:
        units.append((_group_label(g), g.verdict, g.reason, True))
    culprits = [lv for lv in libraries if lv.path not in grouped and lv.verdict.fails]
    doubtful = [lv for lv in libraries if lv.path not in grouped and lv.verdict is Verdict.DEPENDS]
    other = [lv for lv in libraries if lv.path not in grouped and lv.specialised]
    group_fail = [g for g in groups if g.verdict.fails]
    verdict = worst(v for _, v, _, _ in units if v is not Verdict.OTHER_GPUS)
    runs = [u for u in units if u[1].runs and u[3]]
    how = worst(v for _, v, _, dc in units if v.runs and dc)
    culprits.sort(key=lambda lv: -lv.verdict.rank)
    if not units:
        state, reason = WheelState.NOTHING, "nothing CUDA (no device code, no CUDA runtime linked)"
    elif culprits or group_fail:
        first = culprits[0] if culprits else None
        names = [_name(lv.path) for lv in culprits] + [
            _group_label(g) + " (every variant)" for g in group_fail
        ]
        why = first.reason if first else group_fail[0].reason
        state = WheelState.RUNS_EXCEPT if runs else WheelState.DOES_NOT_RUN
        reason = f"{', '.join(names[:4])}{', ...' if len(names) > 4 else ''}: {why}"
        hub = next((lv for lv in culprits if lv.path == core), None) or next(
            (lv for lv in culprits if lv.path in static and lv.verdict is Verdict.DRIVER), None)
        if hub is not None:
            # every other library of the wheel links it: importing the package loads it
            state = WheelState.DOES_NOT_RUN
            what = ("the core library (the wheel's other libraries link it)"
                    if hub.path == core else "which links the CUDA runtime statically")
            reason = f"{_name(hub.path)}, {what}: {hub.reason}"
    elif all(v is Verdict.OTHER_GPUS for _, v, _, dc in units if dc) and any(
        dc for *_, dc in units
    ):
        state = WheelState.DOES_NOT_RUN
        reason = f"every module with device code here is built for other GPUs, not CC {device.cc}"
        verdict = Verdict.OTHER_GPUS
    elif doubtful:
        state = WheelState.DEPENDS
        reason = f"{', '.join(_name(lv.path) for lv in doubtful[:4])}: {doubtful[0].reason}"
    else:
        state = WheelState.RUNS
        reason = f"{len(runs)} librar{'y' if len(runs) == 1 else 'ies'} with device code run"
        reason += f" ({how.value} at worst)" if how else ""
    if state.unread(unread) is not state:
        state = state.unread(unread)
        reason = f"{len(unread)} input(s) could not be read: {unread[0]}"
    return WheelVerdict(
        path, kind, state, reason, tuple(libraries), tuple(culprits), tuple(doubtful),
        tuple(other), tuple(groups), tuple(unread), how, verdict,
    )  # fmt: skip


def _group_label(g: GroupVerdict) -> str:
    """``libbitsandbytes_*.so`` for the set."""
    return group_label(g.members[0].path)


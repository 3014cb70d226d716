"""The scheduler's work items (schedule.py), one type per kind, and what a worker process
does with each: read a target whole, read some members of a wheel or files of a
directory, or finish a target read in parts."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable
from typing import Any, NamedTuple

from cuwheel.model.inventory import Binary, Problem, Source
from cuwheel.read.device.payloads import PayloadMode
from cuwheel.read.sources.source import DirectorySource, WheelSource
from cuwheel.read.sources.zipdir import Limits
from cuwheel.read.targets import read_target

__all__ = ["FinishItem", "Item", "MembersItem", "Parts", "WholeItem", "open_wheels",
           "run_item"]

# Wheels a worker keeps open of its own (least recently used closed first), besides those
# it inherits from the parent.
_WORKER_WHEELS = 8


class WholeItem(NamedTuple):
    """A target read in one piece -> finish(Source)."""

    target: int  # its index among the call's targets
    path: str
    kind: str  # what classify() called it: "zip", "dir", "file", "artifact"


class MembersItem(NamedTuple):
    """Members of a wheel ("zip") or files of a directory ("dir") -> [(name, binaries,
    problems)]."""

    target: int
    path: str
    kind: str
    names: list[str]


class FinishItem(NamedTuple):
    """finish(source) of a target read in parts."""

    target: int
    source: Source


Item = WholeItem | MembersItem | FinishItem
# What a MembersItem comes to: (name, binaries, problems) of each member read.
Parts = list[tuple[str, list[Binary], list[Problem]]]


def run_item(item: Item, limits: Limits, payload: PayloadMode, finish: Callable[[Source, Any], Any],
             tag: Any) -> Any:
    """Do one work item (in a worker, or in this process when there is no pool)."""
    if isinstance(item, WholeItem):
        return finish(read_target(item.path, limits, payload, item.kind), tag)
    if isinstance(item, FinishItem):
        return finish(item.source, tag)
    src = _wheel(item.path, limits) if item.kind == "zip" else DirectorySource(item.path)
    out: Parts = []
    for name in item.names:
        binaries, problems = src.read(name, payload)
        out.append((name, binaries, problems))
    return out


# Wheels open in this process: inherited from the parent at fork (read-only here), and
# the worker's own, the least recently used closed first.
open_wheels: dict[str, WheelSource] = {}
_own_wheels: OrderedDict[str, WheelSource] = OrderedDict()


def _wheel(path: str, limits: Limits) -> WheelSource:
    src = open_wheels.get(path)
    if src is not None:
        return src
    src = _own_wheels.get(path)
    if src is None:
        src = _own_wheels[path] = WheelSource(path, limits)
        while len(_own_wheels) > _WORKER_WHEELS:
            _own_wheels.popitem(last=False)[1].close()
    _own_wheels.move_to_end(path)
    return src

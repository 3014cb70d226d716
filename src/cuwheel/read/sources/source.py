"""Where binaries come from: a wheel, a directory, an installed distribution
(installed.py), each behind one interface, in the spirit of PyPA installer's
``WheelSource``: what the source is (its ``Plan``: metadata, the members to read with
their sizes, the problems found on the way) and one member read at a time.  A file on
disk is read by :func:`read_path`, a wheel member by :func:`read_member`; both sniff the
format and hand the bytes, as a stream, to read/binary/sniff.py.

The formats under a wheel are in zipdir.py (zip structure), inflate.py (decompression),
wheelfile.py (members as streams) and wheelmeta.py (METADATA, WHEEL, build records).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from cuwheel.errors import InputError
from cuwheel.model.inventory import Binary, Problem, Source, WheelInfo
from cuwheel.read.binary.sniff import SNIFF_BYTES, read_binary, sniff
from cuwheel.read.device.payloads import PayloadMode
from cuwheel.read.sources.files import file_chunks, open_fd
from cuwheel.read.sources.wheelfile import WheelFile
from cuwheel.read.sources.wheelmeta import wheel_info
from cuwheel.read.sources.zipdir import (
    DEFAULT_LIMITS,
    Limits,
)

__all__ = [
    "DirectorySource",
    "InputSource",
    "Plan",
    "Read",
    "WheelSource",
    "read_member",
    "read_opened",
    "read_path",
    "read_source",
    "walk",
]

# (binaries, problems) of one member
Read = tuple[list[Binary], list[Problem]]


@dataclass
class Plan:
    """What a source holds, known before any member is read."""

    info: WheelInfo | None  # a wheel's (or an installed distribution's) metadata
    problems: list[Problem]  # found while planning (METADATA, refused members, the walk)
    members: list[tuple[str, int]]  # (name, size) of what to read, in order
    refused: Problem | None = None  # the source as a whole is over a limit: nothing is read


class InputSource(Protocol):
    """A wheel, directory or installed distribution, opened (InputError when it cannot
    be); ``kind`` and ``label`` become the Source's."""

    kind: str
    label: str

    def plan(self) -> Plan: ...

    def read(self, name: str, payload: PayloadMode) -> Read: ...

    def close(self) -> None: ...


class WheelSource:
    """A wheel's members, read one at a time from the zip (never extracted)."""

    kind = "wheel"

    def __init__(self, path: str, limits: Limits = DEFAULT_LIMITS) -> None:
        self.wf = WheelFile(path, limits)
        self.label = path
        self.limits = limits

    def plan(self) -> Plan:
        info, problems = wheel_info(self.wf)
        members: list[tuple[str, int]] = []
        total = 0
        for m in self.wf.members:
            why = self.wf.refusal(m)
            if why:
                problems.append(Problem(self.wf.display(m.name), why))
                continue
            if m.is_dir():
                continue
            members.append((m.name, m.file_size))
            total += m.file_size
        refused = None
        if total > self.limits.max_total_size:
            refused = Problem(self.label, f"members declare {total} bytes in all, over the limit")
        return Plan(info, problems, members, refused)

    def read(self, name: str, payload: PayloadMode) -> Read:
        binaries, problems, _ = read_member(self.wf, name, payload)
        return binaries, problems

    def close(self) -> None:
        self.wf.close()


class DirectorySource:
    """The files under a directory, links never followed (see :func:`walk`)."""

    kind = "directory"

    def __init__(self, root: str) -> None:
        self.label = root

    def plan(self) -> Plan:
        problems: list[Problem] = []
        sized = []
        for f in walk(self.label, problems):
            try:
                sized.append((f, os.lstat(f).st_size))
            except OSError:
                sized.append((f, 0))  # read_path reports it
        return Plan(None, problems, sized)

    def read(self, name: str, payload: PayloadMode) -> Read:
        binaries, problems, _ = read_path(name, payload)
        return binaries, problems

    def close(self) -> None:
        pass


def read_source(src: InputSource, payload: PayloadMode, plan: Plan | None = None) -> Source:
    """Every member of an open source, read in this process (``plan``: its plan, when
    already made)."""
    plan = src.plan() if plan is None else plan
    if plan.refused is not None:
        return Source(src.kind, src.label, wheel=plan.info,
                      problems=(*plan.problems, plan.refused))
    binaries: list[Binary] = []
    problems = list(plan.problems)
    for name, _ in plan.members:
        bs, ps = src.read(name, payload)
        binaries += bs
        problems += ps
    return Source(src.kind, src.label, wheel=plan.info, files_seen=len(plan.members),
                  binaries=tuple(binaries), problems=tuple(problems))


def read_opened(opener: Callable[[], InputSource], kind: str, target: str,
                payload: PayloadMode) -> Source:
    """Open a source and read it whole; one that cannot be opened (InputError) is a
    Source of ``kind`` holding that one problem."""
    try:
        src = opener()
    except InputError as exc:
        return Source(kind, target, problems=(Problem(exc.path, exc.problem),))
    try:
        return read_source(src, payload)
    finally:
        src.close()


def walk(root: str, problems: list[Problem],
         keep: Callable[[os.DirEntry[str]], bool] | None = None) -> list[str]:
    """Every file under ``root`` that is no symlink (or, with ``keep``, every entry that
    is no directory and that ``keep`` accepts), depth first in name order: a link to a
    directory is never followed, so a loop of links cannot be, and depth costs no
    recursion (a tree 100,000 levels deep is a list, not a stack overflow)."""
    out: list[str] = []
    stack = [root]
    while stack:
        d = stack.pop()
        try:
            with os.scandir(d) as it:
                entries = sorted(it, key=lambda e: e.name)
        except OSError as exc:
            problems.append(Problem(str(exc.filename or d), exc.strerror or str(exc)))
            continue
        subdirs = []
        for e in entries:
            try:
                if e.is_dir(follow_symlinks=False):
                    subdirs.append(e.path)
                elif keep(e) if keep is not None else not e.is_symlink():
                    out.append(e.path)  # special files are refused by read_path
            except OSError as exc:
                problems.append(Problem(e.path, exc.strerror or str(exc)))
        stack.extend(reversed(subdirs))
    return out


def read_member(
    wf: WheelFile, name: str, payload: PayloadMode = "sample"
) -> tuple[list[Binary], list[Problem], bool]:
    """Read one wheel member: (binaries, problems, was it a binary)."""
    m = wf.infos[name]
    where = wf.display(name)
    try:
        kind = sniff(wf.prefix(m, SNIFF_BYTES))
        if kind is None:
            return [], [], False
        return (
            read_binary(where, m.file_size, lambda: wf.chunks(m), kind, payload=payload),
            [],
            True,
        )
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)], True
    except OSError as exc:
        return [], [Problem(where, exc.strerror or str(exc))], True


def read_path(
    path: str, payload: PayloadMode = "sample"
) -> tuple[list[Binary], list[Problem], bool]:
    """Read one file on disk: (binaries, problems, was it a binary)."""
    try:
        fd = open_fd(path)
        try:
            size = os.fstat(fd).st_size
            head = os.pread(fd, SNIFF_BYTES, 0)
        finally:
            os.close(fd)
        kind = sniff(head)
        if kind is None:
            return [], [], False
        return read_binary(path, size, file_chunks(path), kind, payload=payload), [], True
    except InputError as exc:
        return [], [Problem(exc.path, exc.problem)], True
    except OSError as exc:
        return [], [Problem(path, exc.strerror or str(exc))], True

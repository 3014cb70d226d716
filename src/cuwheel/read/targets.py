"""What a target of ``inspect`` names, from stat and magic bytes (a wheel, a directory,
a file, an exported program or Triton cache), and one target read whole in this process
(the scheduler, schedule.py, cuts big ones into parts instead)."""

from __future__ import annotations

import errno
import os
from typing import Any

from cuwheel._paths import open_untrusted
from cuwheel.model.inventory import Problem, Source
from cuwheel.read.artifacts.programs import artifact_kind, read_artifact
from cuwheel.read.device.payloads import PayloadMode
from cuwheel.read.sources.source import (
    DirectorySource,
    WheelSource,
    read_opened,
    read_path,
    read_source,
)
from cuwheel.read.sources.zipdir import Limits

__all__ = ["classify", "read_target"]


def classify(path: str) -> tuple[str, Any]:
    """What a target is, from stat and magic: ("dir", its Plan: files with sizes),
    ("zip", size), ("file", size), ("artifact", size) for an exported program or Triton
    cache (read/artifacts/programs.py), or ("done", Source) when it cannot be read at all."""
    if artifact_kind(path) is not None:
        return "artifact", max(os.path.getsize(path), 1) if os.path.isfile(path) else 1
    if os.path.isdir(path):
        return "dir", DirectorySource(path).plan()
    try:
        # The one opener (cuwheel._paths): a FIFO would block open() forever; a device is
        # no input either.
        with open_untrusted(path) as fh:
            st = os.fstat(fh.fileno())
            magic = fh.read(4)
    except OSError as exc:
        if exc.errno == errno.EINVAL:
            return "done", Source("file", path, problems=(Problem(path, "not a regular file"),))
        return "done", Source("file", path, problems=(Problem(path, exc.strerror or str(exc)),))
    if magic in (b"PK\x03\x04", b"PK\x05\x06"):
        return "zip", st.st_size
    return "file", st.st_size


def read_target(
    path: str, limits: Limits, payload: PayloadMode, known: str | None = None
) -> Source:
    """Read one target whole; ``known``: what classify found it to be (it is not looked
    at again, except that a directory is walked again)."""
    what: Any = None
    kind = known
    if known in (None, "dir"):
        kind, what = classify(path)
    if kind == "done":
        done: Source = what
        return done
    if kind == "dir":
        return read_source(DirectorySource(path), payload, what)
    if kind == "zip":
        return read_opened(lambda: WheelSource(path, limits), "wheel", path, payload)
    if kind == "artifact":
        return read_artifact(path, limits)
    binaries, problems, is_bin = read_path(path, payload)
    if not is_bin and not problems:
        problems = [Problem(path, "not a wheel, directory, or binary cuwheel can read")]
    return Source("file", path, files_seen=1, binaries=tuple(binaries), problems=tuple(problems))

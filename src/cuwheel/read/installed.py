"""An installed distribution's own files (``*.dist-info``: METADATA, WHEEL, RECORD; the
installation format of PyPA's "Recording installed projects"), read with bounds instead of
``importlib.metadata``'s whole-file reads:

* METADATA, WHEEL and RECORD are regular files of at most MAX_DIST_FILE bytes (a FIFO or a
  1 GiB METADATA is a problem, not a hang or an allocation);
* RECORD gives at most MAX_RECORD_ROWS paths; each is resolved through the whole chain of
  links (:func:`cuwheel._paths.resolve_inside`) and read only when it stays inside the
  distribution's site-packages directory: ``../../../etc/shadow`` in a RECORD, or a link
  in site-packages that leads out, is never opened.  Rows outside it (console scripts in
  ``bin/``, headers under the prefix) are left out, as a wheel's ``.data`` would be.
"""

from __future__ import annotations

import csv
import email.message
import email.parser
import io
import os
import stat
from dataclasses import dataclass
from typing import Any

from cuwheel._paths import resolve_inside
from cuwheel.errors import InputError
from cuwheel.model.inventory import Problem
from cuwheel.read.sources import read_regular

__all__ = ["MAX_DIST_FILE", "MAX_RECORD_ROWS", "InstalledDist", "find", "installed_names"]

MAX_DIST_FILE = 16 << 20
MAX_RECORD_ROWS = 1_000_000


@dataclass(frozen=True)
class InstalledDist:
    name: str
    version: str
    base: str  # the site-packages directory, resolved
    files: tuple[str, ...]  # regular files of RECORD inside ``base``, resolved, sorted
    problems: tuple[Problem, ...]
    metadata: email.message.Message
    wheel: bytes | None  # the WHEEL file's bytes


def _read(path: str, what: str, problems: list[Problem]) -> bytes | None:
    try:
        data = read_regular(path, MAX_DIST_FILE)
    except OSError as exc:
        problems.append(Problem(path, f"{what}: {exc.strerror or exc}"))
        return None
    if data is None:
        problems.append(Problem(path, f"{what} larger than {MAX_DIST_FILE} bytes; not read"))
    return data


def _metadata(dist_info: str, problems: list[Problem]) -> email.message.Message:
    raw = _read(os.path.join(dist_info, "METADATA"), "METADATA", problems)
    return email.parser.BytesHeaderParser().parsebytes(raw or b"")


def _dist_info(dist: Any) -> str | None:
    path = getattr(dist, "_path", None)  # PathDistribution: its .dist-info directory
    return os.fspath(path) if path is not None else None


def find(name: str) -> InstalledDist:
    """The installed distribution ``name``; InputError when none is installed."""
    import importlib.metadata

    try:
        dist = importlib.metadata.distribution(name)
    except (importlib.metadata.PackageNotFoundError, ValueError):
        raise InputError(name, "no such distribution is installed") from None
    problems: list[Problem] = []
    dist_info = _dist_info(dist)
    if dist_info is None:
        raise InputError(name, "not installed from a wheel in a directory (no .dist-info)")
    meta = _metadata(dist_info, problems)
    wheel = None
    if os.path.lexists(os.path.join(dist_info, "WHEEL")):
        wheel = _read(os.path.join(dist_info, "WHEEL"), "WHEEL", problems)
    base = os.path.realpath(os.path.dirname(dist_info))
    files: set[str] = set()
    record = _read(os.path.join(dist_info, "RECORD"), "RECORD", problems)
    rows = csv.reader(io.StringIO((record or b"").decode("utf-8", "surrogateescape")))
    for n, row in enumerate(rows):
        if n >= MAX_RECORD_ROWS:
            problems.append(Problem(os.path.join(dist_info, "RECORD"),
                                    f"more than {MAX_RECORD_ROWS} rows; the rest not read"))
            break
        if not row or not row[0] or os.path.isabs(row[0]):
            continue
        real = resolve_inside(base, os.path.join(base, row[0]))
        if real is None or real == base:
            continue  # outside site-packages: never opened
        try:
            if stat.S_ISREG(os.lstat(real).st_mode):
                files.add(real)
        except OSError:
            continue
    return InstalledDist(
        name=str(meta["Name"] or name), version=str(meta["Version"] or "0"), base=base,
        files=tuple(sorted(files)), problems=tuple(problems), metadata=meta, wheel=wheel,
    )  # fmt: skip


def installed_names() -> list[str]:
    """The Name of every installed distribution, METADATA read bounded."""
    import importlib.metadata

    out = []
    for dist in importlib.metadata.distributions():
        dist_info = _dist_info(dist)
        if dist_info is None:
            continue
        name = _metadata(dist_info, []).get("Name")
        if name:
            out.append(str(name))
    return out

"""An installed distribution, read through the source interface (sources.py), and its
own files (``*.dist-info``: METADATA, WHEEL, RECORD; the
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
import dataclasses
import email.message
import email.parser
import io
import os
import stat
from dataclasses import dataclass
from typing import Any

from cuwheel._paths import resolve_inside
from cuwheel.errors import InputError
from cuwheel.model.inventory import Problem, Source, WheelInfo
from cuwheel.read.sources import Plan, Read, read_opened, read_path, read_regular, read_source

__all__ = [
    "MAX_DIST_FILE",
    "MAX_RECORD_ROWS",
    "DistSource",
    "InstalledDist",
    "dist_source",
    "find",
    "installed_names",
    "installed_source",
]

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


class DistSource:
    """An installed distribution behind the source interface (sources.py): the files
    its RECORD lists inside site-packages, labelled ``<name> <version>``; InputError when
    it is not installed."""

    kind = "distribution"

    def __init__(self, name: str) -> None:
        self.dist = find(name)
        self.label = f"{self.dist.name} {self.dist.version}"

    def plan(self) -> Plan:
        return Plan(None, list(self.dist.problems), [(f, 0) for f in self.dist.files])

    def read(self, name: str, payload: str) -> Read:
        binaries, problems, _ = read_path(name, payload)
        return binaries, problems

    def close(self) -> None:
        pass


def dist_source(name: str, payload: str = "sample") -> Source:
    """The installed distribution ``name`` read (its files named by their paths on
    disk); one not installed is a Source holding that problem."""
    return read_opened(lambda: DistSource(name), "distribution", name, payload)


def installed_source(name: str, payload: str = "sample") -> Source:
    """An installed distribution read as the wheel it was installed from: its files under
    the site-packages directory, named ``<wheel file name>!<path>`` as a wheel's members
    are, and a WheelInfo from its METADATA and WHEEL (the file name is made up from the
    WHEEL file's ``Tag:`` lines).  InputError when it is not installed.  It is read as
    :func:`dist_source` reads it (one DistSource); only the names differ."""
    from packaging.version import InvalidVersion, Version

    from cuwheel.read.tables import MAX_NAME
    from cuwheel.read.wheelmeta import MAX_WHEEL_FILE, wheel_file_tags

    src = DistSource(name)
    dist = src.dist
    meta = dist.metadata
    dist_name = dist.name[:MAX_NAME]
    version = dist.version[:MAX_NAME]
    # The WHEEL file, read as a wheel's is: bounded, tags cut.
    wheel_file = wheel_file_tags(dist.wheel[:MAX_WHEEL_FILE]) if dist.wheel is not None \
        else None
    tags = tuple(dict.fromkeys(wheel_file or ("py3-none-any",)))
    parts: list[dict[str, None]] = [{}, {}, {}]  # the compressed tag set of a file name
    for tag in tags:
        for i, piece in enumerate(tag.split("-", 2)):
            parts[i][piece] = None
    filename = "-".join(
        [dist_name.replace("-", "_"), version, *(".".join(p) for p in parts)]
    ) + ".whl"
    base = dist.base
    read = read_source(src, payload)

    def member(path: str | None) -> str | None:
        if path is None or not path.startswith(base + os.sep):
            return path
        return filename + "!" + path[len(base) + 1 :].replace(os.sep, "/")

    binaries = tuple(
        dataclasses.replace(b, path=member(b.path) or b.path, archive=member(b.archive))
        for b in read.binaries
    )
    problems = tuple(dataclasses.replace(p, path=member(p.path) or p.path)
                     for p in read.problems)
    try:
        local = Version(version).local
    except InvalidVersion:
        local = None
    rp = meta["Requires-Python"]
    info = WheelInfo(
        name=dist_name, version=version,
        # The WHEEL file's own lines, not the product of the name's compressed sets: that
        # product of hostile lines would grow as their count cubed.
        tags=tuple(sorted(tags)),
        requires_dist=tuple(str(r) for r in meta.get_all("Requires-Dist") or ()),
        local_version=local, wheel_file_tags=wheel_file,
        requires_python=str(rp)[:4096] if rp is not None else None,
    )  # fmt: skip
    return dataclasses.replace(read, path=filename, wheel=info, binaries=binaries,
                               problems=problems)

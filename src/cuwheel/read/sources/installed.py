"""An installed distribution, read through the source interface (source.py), and its
own files (``*.dist-info``: METADATA, WHEEL, RECORD; the
installation format of PyPA's "Recording installed projects"), found in the site
directories and read with bounds instead of through ``importlib.metadata`` (whole-file,
blocking reads): the one reader of installed distributions, for ``inspect --dist``,
``check --dist`` / ``--env`` and doctor (docs/trust.md#a-hostile-site-packages):

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
import re
import stat
import sys
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from cuwheel._paths import decode_text, read_untrusted, resolve_inside
from cuwheel._text import normalized_name as _norm
from cuwheel.errors import InputError
from cuwheel.model.inventory import Problem, Source, WheelInfo
from cuwheel.read.device.payloads import PayloadMode
from cuwheel.read.sources.source import Plan, Read, read_opened, read_path, read_source

__all__ = [
    "MAX_DISTS",
    "MAX_DIST_FILE",
    "MAX_RECORD_ROWS",
    "DistSource",
    "InstalledDist",
    "dist_source",
    "distributions",
    "find",
    "installed_names",
    "installed_source",
    "site_dirs",
]

MAX_DIST_FILE = 16 << 20
MAX_RECORD_ROWS = 1_000_000
MAX_DISTS = 100_000  # entries of one site directory looked at
_REQ_NAME = re.compile(r"\s*([A-Za-z0-9][A-Za-z0-9._-]{0,200})")


@dataclass(frozen=True)
class InstalledDist:
    name: str
    version: str
    base: str  # the site-packages directory, resolved
    files: tuple[str, ...]  # regular files of RECORD inside ``base``, resolved, sorted
    problems: tuple[Problem, ...]
    metadata: email.message.Message
    wheel: bytes | None  # the WHEEL file's bytes

    @property
    def requires(self) -> tuple[str, ...]:
        """The normalised names its Requires-Dist lines name (extras included)."""
        return tuple(dict.fromkeys(
            _norm(m[0]) for r in self.metadata.get_all("Requires-Dist") or ()
            if (m := _REQ_NAME.match(str(r))) is not None))  # fmt: skip


def _read(path: str, what: str, problems: list[Problem], root: str) -> bytes | None:
    try:
        data = read_untrusted(path, MAX_DIST_FILE, root)
    except OSError as exc:
        problems.append(Problem(path, f"{what}: {exc.strerror or exc}"))
        return None
    if data is None:
        problems.append(Problem(path, f"{what} larger than {MAX_DIST_FILE} bytes; not read"))
    return data


def _metadata(dist_info: str, problems: list[Problem], root: str) -> email.message.Message:
    raw = _read(os.path.join(dist_info, "METADATA"), "METADATA", problems, root)
    # one stated decoding (cuwheel._paths.decode_text): a Latin-1 METADATA is read, its
    # bad bytes U+FFFD, never a traceback
    return email.parser.HeaderParser().parsestr(decode_text(raw or b""))


def site_dirs() -> list[str]:
    """The running interpreter's import path, as directories (where imports look)."""
    return [p for p in sys.path if p and os.path.isdir(p)]


def _dist_infos(site: str) -> tuple[str, list[str], list[Problem]]:
    """(the site resolved, its ``*.dist-info`` directories that stay inside it, sorted,
    problems): at most MAX_DISTS names of the directory are looked at."""
    real = os.path.realpath(site)
    out: list[str] = []
    problems: list[Problem] = []
    try:
        with os.scandir(real) as it:
            for n, entry in enumerate(it):
                if n >= MAX_DISTS:
                    problems.append(Problem(site, f"more than {MAX_DISTS} entries; "
                                                  "the rest not looked at"))
                    break
                if not entry.name.endswith(".dist-info"):
                    continue
                inner = resolve_inside(real, entry.path)
                if inner is None or inner == real:
                    problems.append(Problem(entry.path, "a link that leads outside the site "
                                                        "directory; not read"))
                elif os.path.isdir(inner):
                    out.append(entry.path)
    except OSError:
        pass  # not a directory (a zip on sys.path): no distributions here
    return real, sorted(out), problems


def _resolve_row(base: str, row: str, folders: dict[str, str | None]) -> str | None:
    """A RECORD row resolved inside ``base`` (resolve_inside), its folder resolved once
    per RECORD (a million rows in one folder cost a million ``lstat``, not a million
    walks of the whole chain)."""
    head, leaf = os.path.split(os.path.join(base, row))
    if leaf in ("", ".", "..") or "\0" in row:  # a NUL names no file (and os refuses it)
        return None
    if head not in folders:
        folders[head] = resolve_inside(base, head)
    folder = folders[head]
    if folder is None:
        return None
    path = os.path.join(folder, leaf)
    return resolve_inside(base, path) if os.path.islink(path) else path


def _rows(rows: Iterator[list[str]], base: str, dist_info: str, files: set[str],
          problems: list[Problem]) -> None:
    folders: dict[str, str | None] = {}
    for n, row in enumerate(rows):
        if n >= MAX_RECORD_ROWS:
            problems.append(Problem(os.path.join(dist_info, "RECORD"),
                                    f"more than {MAX_RECORD_ROWS} rows; the rest not read"))
            break
        if not row or not row[0] or os.path.isabs(row[0]):
            continue
        real = _resolve_row(base, row[0], folders)
        if real is None or real == base:
            continue  # outside site-packages: never opened
        try:
            if stat.S_ISREG(os.lstat(real).st_mode):
                files.add(real)
        except OSError:
            continue


def read_dist(dist_info: str, site: str | None = None) -> InstalledDist:
    """The distribution of one ``*.dist-info`` directory of the site directory ``site``
    (resolved; default: its parent, resolved): every file read bounded and inside it."""
    problems: list[Problem] = []
    base = site if site is not None else os.path.realpath(os.path.dirname(dist_info))
    meta = _metadata(dist_info, problems, base)
    wheel = None
    if os.path.lexists(os.path.join(dist_info, "WHEEL")):
        wheel = _read(os.path.join(dist_info, "WHEEL"), "WHEEL", problems, base)
    files: set[str] = set()
    record = _read(os.path.join(dist_info, "RECORD"), "RECORD", problems, base)
    # A line with a NUL names no file (_resolve_row); Python 3.10's csv refuses the whole
    # reader at it, 3.11's reads on: drop such lines first, so both read the rest.
    text = "".join(line for line in decode_text(record or b"").splitlines(keepends=True)
                   if "\0" not in line)
    rows = csv.reader(io.StringIO(text))
    try:
        _rows(rows, base, dist_info, files, problems)
    except csv.Error as exc:  # a field past csv's limit
        problems.append(Problem(os.path.join(dist_info, "RECORD"),
                                f"RECORD: not CSV ({exc}); the rest not read"))
    stem = os.path.basename(dist_info)[: -len(".dist-info")]
    name, _, version = stem.partition("-")
    return InstalledDist(
        name=str(meta["Name"] or name), version=str(meta["Version"] or version or "0"),
        base=base, files=tuple(sorted(files)), problems=tuple(problems), metadata=meta,
        wheel=wheel,
    )  # fmt: skip


def distributions(sites: Sequence[str] | None = None) -> Iterator[InstalledDist]:
    """Every distribution installed in ``sites`` (default: :func:`site_dirs`), the first
    of each name winning, as imports find them; never through ``importlib.metadata``
    (its reads are whole-file and blocking)."""
    seen: set[str] = set()
    for site in site_dirs() if sites is None else sites:
        real, infos, problems = _dist_infos(site)
        for info in infos:
            dist = read_dist(info, real)
            if _norm(dist.name) in seen:
                continue
            seen.add(_norm(dist.name))
            yield dataclasses.replace(dist, problems=(*problems, *dist.problems))
            problems = []


def find(name: str, sites: Sequence[str] | None = None) -> InstalledDist:
    """The installed distribution ``name`` (the first of ``sites``, default
    :func:`site_dirs`); InputError when none is installed.  Only the directories whose
    name says ``name`` are read."""
    want = _norm(name)
    for site in site_dirs() if sites is None else sites:
        real, infos, _ = _dist_infos(site)
        for info in infos:
            if _norm(os.path.basename(info).partition("-")[0]) == want:
                return read_dist(info, real)
    raise InputError(name, "no such distribution is installed")


def installed_names(sites: Sequence[str] | None = None) -> list[str]:
    """The Name of every installed distribution, METADATA read bounded."""
    return [d.name for d in distributions(sites)]


class DistSource:
    """An installed distribution behind the source interface (source.py): the files
    its RECORD lists inside site-packages, labelled ``<name> <version>``; InputError when
    it is not installed."""

    kind = "distribution"

    def __init__(self, name: str) -> None:
        self.dist = find(name)
        self.label = f"{self.dist.name} {self.dist.version}"

    def plan(self) -> Plan:
        return Plan(None, list(self.dist.problems), [(f, 0) for f in self.dist.files])

    def read(self, name: str, payload: PayloadMode) -> Read:
        binaries, problems, _ = read_path(name, payload)
        return binaries, problems

    def close(self) -> None:
        pass


def dist_source(name: str, payload: PayloadMode = "sample") -> Source:
    """The installed distribution ``name`` read (its files named by their paths on
    disk); one not installed is a Source holding that problem."""
    return read_opened(lambda: DistSource(name), "distribution", name, payload)


def installed_source(name: str, payload: PayloadMode = "sample") -> Source:
    """An installed distribution read as the wheel it was installed from: its files under
    the site-packages directory, named ``<wheel file name>!<path>`` as a wheel's members
    are, and a WheelInfo from its METADATA and WHEEL (the file name is made up from the
    WHEEL file's ``Tag:`` lines).  InputError when it is not installed.  It is read as
    :func:`dist_source` reads it (one DistSource); only the names differ."""
    from packaging.version import InvalidVersion, Version

    from cuwheel.read.bytes.tables import MAX_NAME
    from cuwheel.read.sources.wheelmeta import MAX_WHEEL_FILE, wheel_file_tags

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

"""A wheel's own description (the binary distribution format): name, version and tags
from its file name, ``.dist-info/METADATA`` and ``WHEEL``, and the build records some
projects ship (xformers' ``cpp_lib.json``); every file read bounded."""

from __future__ import annotations

import os

from cuwheel._json import load_json
from cuwheel.errors import InputError, JsonError
from cuwheel.model.inventory import BuildRecord, Problem, WheelInfo
from cuwheel.read.sources.wheelfile import WheelFile

__all__ = [
    "MAX_RECORDS",
    "MAX_RECORD_FILE",
    "MAX_WHEEL_FILE",
    "MAX_WHEEL_TAGS",
    "wheel_file_tags",
    "wheel_info",
]


def wheel_info(wf: WheelFile) -> tuple[WheelInfo | None, list[Problem]]:
    """Name, version, tags and requirements from the filename and ``.dist-info``, and
    the problem with METADATA if it cannot be read."""
    from packaging.utils import InvalidWheelFilename, parse_wheel_filename
    from packaging.version import InvalidVersion, Version

    base = os.path.basename(wf.path)
    try:
        parsed_name, version, _build, tags = parse_wheel_filename(base)
        name: str = str(parsed_name)
        tag_list = tuple(sorted(str(t) for t in tags))
        vstr = str(version)
    except InvalidWheelFilename:
        name, vstr, tag_list = base, "", ()
    meta_name = next(
        (n for n in wf.infos if n.count("/") == 1 and n.endswith(".dist-info/METADATA")), None
    )
    requires: tuple[str, ...] = ()
    requires_python: str | None = None
    problems: list[Problem] = []
    if meta_name:
        try:
            raw = wf.read_small(meta_name)
        except InputError as exc:
            raw = None
            problems.append(Problem(exc.path, exc.problem))
        if raw is not None:
            import email.parser

            msg = email.parser.BytesHeaderParser().parsebytes(raw)
            # Header values with bytes that are not ASCII come back as Header objects.
            requires = tuple(str(r) for r in msg.get_all("Requires-Dist") or ())
            rp = msg.get("Requires-Python")
            requires_python = str(rp)[:4096] if rp is not None else None
            if not vstr:
                vstr = str(msg.get("Version", ""))
            if name == base:
                name = str(msg.get("Name", base))
    wheel_tags = _wheel_file_tags(wf, meta_name, problems)
    records = _build_records(wf, problems)
    local = None
    if vstr:
        try:
            local = Version(vstr).local
        except InvalidVersion:
            local = None
    info = WheelInfo(
        name=str(name), version=vstr, tags=tag_list, requires_dist=requires, local_version=local,
        wheel_file_tags=wheel_tags, requires_python=requires_python, build_records=records,
    )
    return info, problems


# Files recording the build (xformers' cpp_lib.json is under 1 KiB); bigger ones are not read.
MAX_RECORD_FILE = 64 << 10
MAX_RECORDS = 16


def _build_records(wf: WheelFile, problems: list[Problem]) -> tuple[BuildRecord, ...]:
    """What the wheel records it was built against: xformers' ``<pkg>/cpp_lib.json``
    (``{"version": {"torch": "2.10.0+cu128", "cuda": 1208, ...}, ...}``, written by its
    setup.py into every wheel since 0.0.2x).  A file that is not that JSON is no record."""
    from cuwheel.read.bytes.tables import MAX_NAME

    out: list[BuildRecord] = []
    for name in wf.infos:
        if name.count("/") != 1 or not name.endswith("/cpp_lib.json"):
            continue
        try:
            raw = wf.read_small(name, MAX_RECORD_FILE)
        except InputError as exc:
            problems.append(Problem(exc.path, exc.problem))
            continue
        try:  # the one bounded JSON loader (cuwheel/_json.py)
            data = load_json(raw, max_bytes=MAX_RECORD_FILE) if raw is not None else None
        except JsonError:
            continue
        version = data.get("version") if isinstance(data, dict) else None
        torch = version.get("torch") if isinstance(version, dict) else None
        if isinstance(torch, str) and torch.strip():
            out.append(BuildRecord(name, "torch", torch.strip()[:MAX_NAME]))
            if len(out) >= MAX_RECORDS:
                break
    return tuple(out)


# A WHEEL file is a few hundred bytes; one bigger than this is not read.
MAX_WHEEL_FILE = 1 << 20
MAX_WHEEL_TAGS = 10_000


def _wheel_file_tags(wf: WheelFile, meta_name: str | None,
                     problems: list[Problem]) -> tuple[str, ...] | None:
    """The ``Tag:`` lines of ``<name>.dist-info/WHEEL`` (the dist-info of METADATA when
    there is one), each cut to MAX_NAME characters; None when there is no readable WHEEL."""

    if meta_name is not None:
        name: str | None = meta_name.rsplit("/", 1)[0] + "/WHEEL"
    else:
        name = next((n for n in wf.infos
                     if n.count("/") == 1 and n.endswith(".dist-info/WHEEL")), None)
    if name is None or name not in wf.infos:
        return None
    try:
        raw = wf.read_small(name, MAX_WHEEL_FILE)
    except InputError as exc:
        problems.append(Problem(exc.path, exc.problem))
        return None
    if raw is None:
        return None
    return wheel_file_tags(raw)


def wheel_file_tags(raw: bytes) -> tuple[str, ...]:
    """The ``Tag:`` lines of a WHEEL file's bytes (at most MAX_WHEEL_FILE of them are
    read), at most MAX_WHEEL_TAGS, each cut to MAX_NAME characters."""
    from cuwheel.read.bytes.tables import MAX_NAME

    tags: list[str] = []
    for line in raw[:MAX_WHEEL_FILE].decode("utf-8", "replace").splitlines():
        key, sep, value = line.partition(":")
        if sep and key.strip().lower() == "tag" and len(tags) < MAX_WHEEL_TAGS:
            tags.append(value.strip()[:MAX_NAME])
    return tuple(tags)

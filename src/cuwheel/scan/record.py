"""One scan record per wheel: a JSON object on one line, its bytes a pure function of
the wheel's content and the options (keys sorted, no timestamps, no local paths), so a
cached record, a record made by another machine or by a Dask worker, and one made here
are the same bytes.

Fields (docs/scan.md): ``record_version``, ``input`` (the path or URL as given, the one
field that depends on where the wheel was found), ``wheel`` (filename, name, version,
tags, sha256, size), ``tool``, ``options``, ``inventory`` (the wheel's source as
``cuwheel inspect --json`` writes it, paths relative to the wheel; per binary without
its containers unless ``detail="containers"``), ``gpus`` (per GPU of the catalog, the
wheel's state by the one roll-up: :func:`gpu_states`), ``check`` (the audit-mode
verdict, or None) and ``error`` (why the wheel could not be judged, or None).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from cuwheel._paths import open_untrusted
from cuwheel._version import __version__
from cuwheel.model.inventory import Source
from cuwheel.rules.judge import Rules, judging

__all__ = [
    "RECORD_VERSION",
    "DamagedLine",
    "RecordFile",
    "RecordOptions",
    "Tag",
    "content_part",
    "dumps",
    "error_record",
    "make_record",
    "parse_record",
    "read_record_file",
    "sha256_file",
    "with_input",
]

# 3: the per-GPU states of the judge that reads kernel-less containers and kernel families
# (docs/compat.md#kernel-less-containers); a cached v2 record's states are another judge's
RECORD_VERSION = 3
_HASH_READ = 4 << 20
MAX_RECORD = 64 << 20  # one line: a wheel of thousands of binaries with --detail containers


@dataclass(frozen=True)
class RecordOptions:
    """What a record holds; part of the cache key."""

    check: bool = True  # the audit-mode check findings
    detail: str = "summary"  # "summary": each binary without its containers; "containers"
    payload: str = "sample"  # which cubins are decoded (inspect's --toolkit)

    def as_dict(self) -> dict[str, Any]:
        return {"check": self.check, "detail": self.detail, "payload": self.payload}


@dataclass(frozen=True)
class Tag:
    """What the worker needs besides the Source: where the wheel came from (``input``),
    its file name, and its sha256 when known already (the index's, or the cache's)."""

    input: str
    filename: str
    sha256: str | None
    options: RecordOptions
    rules: Rules | None = None  # the judge (None: the shipped catalog's)


def dumps(obj: Any) -> str:
    """One line of JSON, valid UTF-8 whatever the names in it: an undecodable file name
    (a lone surrogate) becomes the visible ``\\xNN`` of the one escape function, so the
    line can be written to any file and cache."""
    text = json.dumps(obj, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        from cuwheel.render.escape import json_clean

        text = json.dumps(json_clean(obj), sort_keys=True, separators=(",", ":"),
                          ensure_ascii=False)
    return text


def parse_record(line: str | bytes) -> dict[str, Any]:
    """A record line as an object, read by the bounded JSON loader; JsonError when it is
    not one (damaged, cut short, not a record)."""
    from cuwheel._json import load_json
    from cuwheel.errors import JsonError

    obj = load_json(line, max_bytes=MAX_RECORD)
    if not isinstance(obj, dict):
        raise JsonError("not a JSON object")
    if obj.get("record_version") != RECORD_VERSION:
        raise JsonError(f"not a version {RECORD_VERSION} scan record")
    if not isinstance(obj.get("input"), str):
        raise JsonError("a record without its 'input'")
    if not isinstance(obj.get("wheel"), dict):
        raise JsonError("a record without its 'wheel'")
    return obj


@dataclass(frozen=True)
class DamagedLine:
    """A line of a record file that is not a record: skipped and reported, never the end
    of the file's valid records."""

    path: str
    line: int
    problem: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.problem}; skipped"


class RecordFile:
    """The valid records of a JSON Lines file (``lines``: its lines, bytes or text, each
    with its newline), one at a time, each damaged line added to ``damaged``; after the
    iteration, ``whole`` is how many bytes of the file end with its last newline (a last
    line without one was cut short by an interrupted run, and is not a record yet)."""

    def __init__(self, lines: Any, path: str, damaged: list[DamagedLine]) -> None:
        self.lines = lines
        self.path = path
        self.damaged = damaged
        self.whole = 0

    def __iter__(self) -> Iterator[dict[str, Any]]:
        from cuwheel.errors import JsonError

        lines = _bounded_lines(self.lines) if hasattr(self.lines, "readline") else self.lines
        for n, raw in enumerate(lines, 1):
            if isinstance(raw, _Overlong):
                self.whole += raw.size
                self.damaged.append(DamagedLine(self.path, n, f"longer than {MAX_RECORD} bytes"))
                continue
            size = len(raw.encode("utf-8", "surrogateescape") if isinstance(raw, str)
                       else raw)
            ended = raw.endswith("\n" if isinstance(raw, str) else b"\n")
            if not ended:
                self.damaged.append(DamagedLine(self.path, n, "an unfinished last line"))
                break
            self.whole += size
            if not raw.strip():
                continue
            try:
                yield parse_record(raw)
            except JsonError as exc:
                self.damaged.append(DamagedLine(self.path, n, f"not a record ({exc})"))


class _Overlong:
    """A line past :data:`MAX_RECORD` (read past, never held): its length in bytes."""

    def __init__(self, size: int) -> None:
        self.size = size


def _bounded_lines(f: Any) -> Iterator[bytes | str | _Overlong]:
    """The lines of an open file, none held longer than one record may be: a longer one
    is read past in pieces and given as its length (a damaged file costs no memory)."""
    while line := f.readline(MAX_RECORD + 1):
        if len(line) <= MAX_RECORD or line.endswith(b"\n" if isinstance(line, bytes) else "\n"):
            yield line
            continue
        size = len(line)
        while (more := f.readline(MAX_RECORD + 1)) and not more.endswith(
            b"\n" if isinstance(more, bytes) else "\n"
        ):
            size += len(more)
        if not more:  # the file ended inside the line: an unfinished last line
            yield line[:0]
            return
        yield _Overlong(size + len(more))


def read_record_file(
    lines: Any, path: str, damaged: list[DamagedLine]
) -> tuple[list[dict[str, Any]], int]:
    """Every valid record of a JSON Lines file and the length of its whole lines
    (:class:`RecordFile`, all at once)."""
    rf = RecordFile(lines, path, damaged)
    out = list(rf)
    return out, rf.whole


def sha256_file(path: str) -> str:
    h = hashlib.sha256()
    with open_untrusted(path) as f:
        while chunk := f.read(_HASH_READ):
            h.update(chunk)
    return h.hexdigest()


def make_record(source: Source, tag: Tag) -> str:
    """The record of one inspected wheel, as one line of JSON (no newline).  Runs in
    a worker process: everything it needs is in ``source`` and ``tag``."""
    with judging(tag.rules):
        return _record(source, tag)


def _record(source: Source, tag: Tag) -> str:
    sha = tag.sha256
    size = None
    try:
        size = os.stat(source.path).st_size
        if sha is None:
            sha = sha256_file(source.path)
    except OSError as exc:
        err = f"{exc.strerror or exc}"
        return with_input(dumps(_content(source, tag, None, None, err)), tag.input)
    return with_input(dumps(_content(source, tag, sha, size, None)), tag.input)


def with_input(content: str, input_: str) -> str:
    """A record line from its content part (cached by sha256) and where it was found:
    ``input`` is inserted at its sorted place, so the line is what dumps() would give."""
    obj = json.loads(content)
    obj["input"] = input_
    return dumps(obj)


def content_part(line: str) -> str:
    """A record without its ``input``: what the cache keeps."""
    obj = json.loads(line)
    obj.pop("input", None)
    return dumps(obj)


def _content(
    source: Source, tag: Tag, sha: str | None, size: int | None, error: str | None
) -> dict[str, Any]:
    from cuwheel.model.inventory import Inventory
    from cuwheel.render.inspect_json import inventory_to_dict

    opts = tag.options
    doc = inventory_to_dict(Inventory((source,)))
    inv = _relative(doc["sources"][0], source.path, tag.filename)
    if opts.detail != "containers":
        for b in inv["binaries"]:
            b.pop("containers", None)
    w = source.wheel
    wheel = {
        "filename": tag.filename,
        "name": w.name if w else None,
        "version": w.version if w else None,
        "tags": list(w.tags) if w else [],
        "sha256": sha,
        "size": size,
    }
    check = None
    if error is None and opts.check:
        check, error = _check(source, tag.filename)
    return {
        "record_version": RECORD_VERSION,
        "tool": {"name": "cuwheel", "version": __version__},
        "options": opts.as_dict(),
        "wheel": wheel,
        "inventory": inv,
        "gpus": gpu_states(source),
        "check": check,
        "error": error,
    }


PLATFORM = "wrong platform"  # no machine of the wheel's platform carries the GPU


def gpu_states(source: Source) -> dict[str, str] | None:
    """Per GPU of the catalog (``sm_XY``), the wheel's state by the one roll-up
    (rules/rollup.py: ``runs``, ``runs except``, ...), or ``wrong platform``; None when
    the wheel has nothing CUDA.  No driver: its gates are compat's question."""
    from cuwheel.compat import WheelState, catalog_targets, evaluate
    from cuwheel.model.inventory import Inventory

    inv = Inventory((source,))
    out: dict[str, str] = {}
    for t in catalog_targets():
        (s,) = evaluate(inv, t).sources
        if s.state is WheelState.NOTHING or not any(lv.has_device_code for lv in s.libraries):
            return None
        if s.wrong_platform:
            out[t.arch.sass] = PLATFORM
        else:
            out[t.arch.sass] = s.state.value
    return out


def _relative(obj: Any, path: str, filename: str) -> Any:
    """Replace the wheel's local path by its file name in every string: a display path
    ``/tmp/x/a.whl!lib/b.so`` becomes ``lib/b.so``, the wheel itself ``a.whl``."""
    prefix = path + "!"
    if isinstance(obj, str):
        if obj.startswith(prefix):
            return obj[len(prefix):]
        if obj == path:
            return filename
        return obj.replace(path, filename) if path in obj else obj
    if isinstance(obj, list):
        return [_relative(x, path, filename) for x in obj]
    if isinstance(obj, dict):
        return {k: _relative(v, path, filename) for k, v in obj.items()}
    return obj


def _check(source: Source, filename: str) -> tuple[dict[str, Any] | None, str | None]:
    """The audit-mode verdict (no row: each library by its own train, the GPUs of its
    own SASS), judged from the wheel alone: no environment variable, no project file."""
    from cuwheel.checks.runner import audit_plan, check_source
    from cuwheel.errors import CuwheelError
    from cuwheel.plan.select import parse_wheel_name

    if source.kind != "wheel" or source.wheel is None:
        why = source.problems[0].message if source.problems else "not a wheel"
        return None, why
    try:
        plan, train_from, notes = audit_plan(source, environ={})
        local = parse_wheel_name(source.path).local
        report = check_source(source, plan, local=local, train_from=train_from,
                              audit=True, notes=notes)
    except CuwheelError as exc:
        return None, f"cannot be checked: {exc}"
    findings = [
        {
            "code": f.code,
            "severity": str(f.severity),
            "library": _relative(f.library, source.path, "") if f.library else None,
            "message": _relative(f.message, source.path, filename),
        }
        for f in report.findings
    ]
    return {
        "passed": report.passed,
        "train": report.train,
        "platform": report.platform,
        "profile": report.profile,
        "claim": report.claim,
        "notes": [_relative(n, source.path, filename) for n in report.notes],
        "findings": findings,
    }, None


def error_record(input_: str, filename: str, sha256: str | None, message: str,
                 options: RecordOptions) -> str:
    """The record of a wheel that could not be read at all (not downloaded, vanished)."""
    obj = {
        "record_version": RECORD_VERSION,
        "tool": {"name": "cuwheel", "version": __version__},
        "options": options.as_dict(),
        "wheel": {"filename": filename, "name": None, "version": None, "tags": [],
                  "sha256": sha256, "size": None},
        "inventory": None,
        "gpus": None,
        "check": None,
        "error": message,
        "input": input_,
    }
    return dumps(obj)

"""Renderers of check reports: text (grouped by library; a table when there are several
wheels), versioned JSON (the common envelope; schema in ``cuwheel/data/check.schema.json``),
JUnit XML (one test case per check x library: render/check_junit.py), GitHub Actions
workflow commands and SARIF 2.1.0 (GitHub code scanning: render/check_sarif.py).  Each
returns a string; only the CLI prints.  Every finding links to its code's section of
docs/checks.md (``cuwheel._urls.code_url``)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from cuwheel._urls import code_url
from cuwheel.checks.codes import Severity
from cuwheel.checks.findings import Finding, Unreadable, WheelReport
from cuwheel.render import CHECK_FORMATS
from cuwheel.render.check_junit import to_junit
from cuwheel.render.check_names import WHEEL, codes_in
from cuwheel.render.check_sarif import _artifact_uri as _artifact_uri  # tests name it here
from cuwheel.render.check_sarif import to_sarif, to_sarif_data
from cuwheel.render.envelope import COMMANDS, envelope
from cuwheel.render.escape import dumps, escape_lines, gh_data, gh_prop

__all__ = [
    "FORMATS",
    "JSON_SCHEMA_VERSION",
    "render",
    "text_block",
    "text_table",
    "to_github",
    "to_json",
    "to_json_data",
    "to_junit",
    "to_sarif",
    "to_sarif_data",
    "to_text",
    "unreadable_block",
]

JSON_SCHEMA_VERSION = COMMANDS["check"]
FORMATS = CHECK_FORMATS


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _summary(r: WheelReport) -> str:
    verdict = "PASS" if r.passed else "FAIL"
    parts = [
        _plural(r.count(Severity.ERROR), "error"),
        _plural(r.count(Severity.WARNING), "warning"),
        f"{r.count(Severity.INFO)} info",
    ]
    if r.waived:
        parts.append(f"{r.waived} waived")
    return f"{verdict}: {', '.join(parts)} (fails on {r.fail_on})"


def _row_line(r: WheelReport) -> str:
    if r.train == "cpu":
        return f"row {r.row}: CPU (profile {r.profile})"
    if r.row == "audit":
        return (f"audit (no row): train {r.train} on {r.platform}; profile {r.profile}; "
                f"claim {r.claim}")
    ptx = " ".join(r.ptx) or "none"
    return (f"row {r.row}: train {r.train} on {r.platform}; SASS {' '.join(r.sass)}; "
            f"PTX {ptx}; profile {r.profile}")


def _row_lines(r: WheelReport) -> list[str]:
    """The row and what chose it: the report's first lines."""
    out = [f"  {_row_line(r)}"]
    if r.row_from:
        out.append(f"  {r.row_from}")
    return out


def _read_line(r: WheelReport) -> str:
    s = r.stats
    return (
        f"read {_plural(s.files, 'file')}: {_plural(s.binaries, 'binary').replace('ys', 'ies')}, "
        f"{s.device_binaries} with device code, {_plural(s.containers, 'fatbin container')}, "
        f"{_plural(s.entries, 'entry').replace('ys', 'ies')}"
    )


_NUMBER = re.compile(r"[0-9]+")


def _merge(messages: Sequence[str]) -> str:
    """Messages of one shape (the same words, other numbers) as one: each word that differs
    written as its values joined with '/', e.g. ``GPUs newer than sm_90/sm_120``; values too
    long to read joined (paths) as the first and how many more (``-v`` lists each)."""
    split = [m.split(" ") for m in messages]
    out = []
    for words in zip(*split, strict=True):  # one shape: as many words each
        values = list(dict.fromkeys(words))
        joined = "/".join(values[:4]) + ("/..." if len(values) > 4 else "")
        if len(values) > 1 and len(joined) > _JOINED:
            joined = f"{values[0]} (+{len(values) - 1} more)"
        out.append(values[0] if len(values) == 1 else joined)
    return " ".join(out)


_JOINED = 32  # columns: "sm_90/sm_120/sm_121" reads as one word, four paths do not
_NAMES = 3  # libraries named on a grouped line before "and N more"


def _grouped(findings: Sequence[Finding]) -> list[str]:
    """Findings not waived, worst first, one line per (severity, code, message shape): the
    same finding in several libraries is one line naming how many and which."""
    groups: dict[tuple[Severity, str, tuple[str, ...]], list[Finding]] = {}
    for f in findings:
        if f.waived is None:
            shape = tuple(_NUMBER.sub("#", w) for w in f.message.split(" "))
            groups.setdefault((f.severity, f.code, shape), []).append(f)
    # worst first: Severity's own order (checks/codes.py)
    order = sorted(groups.items(), key=lambda kv: (-kv[0][0], -len(kv[1]), kv[0][1]))
    lines = []
    for (severity, code, _), found in order:
        head = f"{severity!s:<9}{code:<7}"
        libs = list(dict.fromkeys(f.library or WHEEL for f in found))
        if len(libs) == 1:
            where = "" if libs[0] == WHEEL else f"{libs[0]}: "
            lines.append(f"{head}{where}{_merge([f.message for f in found])}")
            continue
        names = [PurePath(lib).name for lib in libs]
        shown = names if len(set(names)) == len(names) else libs
        more = f" and {len(shown) - _NAMES} more" if len(shown) > _NAMES + 1 else ""
        shown = shown[:_NAMES] if more else shown
        lines.append(f"{head}{_merge([f.message for f in found])} "
                     f"[{len(libs)} libraries: {', '.join(shown)}{more}]")
    return lines


def _wrap(lines: Sequence[str], width: int | None) -> list[str]:
    """Each line fitted to ``width`` columns, continuation lines indented under its text."""
    if not width:
        return list(lines)
    import textwrap

    out: list[str] = []
    for line in lines:
        # a name or path is kept whole on its line: the header, config, a library
        keep = (line.startswith("cuwheel check ") or line.lstrip().startswith("config: ")
                or " " not in line.strip())
        if keep or len(line) <= width:
            out.append(line)
            continue
        body = line.lstrip(" ")
        indent = " " * (len(line) - len(body))
        m = re.match(r"(error|warning|info|waived) +[A-Z]+[0-9]+ +", body)
        hang = indent + " " * (m.end() if m else 2)
        out += textwrap.wrap(body, max(width, len(hang) + 20), initial_indent=indent,
                             subsequent_indent=hang, break_on_hyphens=False,
                             break_long_words=False)
    return out


def to_text(reports: Sequence[WheelReport], *, verbose: bool = True,
            width: int | None = None, unreadable: Sequence[Unreadable] = ()) -> str:
    """The text report. ``verbose``: every library and finding in place; otherwise the
    verdict first, then the findings grouped and worst first, the libraries without
    findings counted (``cuwheel check`` without -v). ``width``: lines wrapped to it.
    ``unreadable``: inputs not checked, each an ERROR entry.  The same text as
    :func:`text_block` of each report (:func:`unreadable_block` of each input) followed by
    :func:`text_table`."""
    lines = _wrap(_detail(reports) if verbose else _brief(reports), width)
    lines += [line for u in unreadable for line in _unreadable_lines(u)]
    if len(reports) + len(unreadable) > 1:  # a table: its columns line up only unwrapped
        lines += _table(reports, unreadable)
    return escape_lines(lines)


def _unreadable_lines(u: Unreadable) -> list[str]:
    return [f"cuwheel check {u.input}", f"  ERROR: not checked: {u.error}"]


def unreadable_block(u: Unreadable) -> str:
    """One unreadable input's part of :func:`to_text`."""
    return escape_lines(_unreadable_lines(u))


def text_block(report: WheelReport, *, verbose: bool = True, width: int | None = None) -> str:
    """One wheel's part of :func:`to_text`: written as soon as that wheel is checked."""
    return to_text([report], verbose=verbose, width=width)


def text_table(reports: Sequence[WheelReport], unreadable: Sequence[Unreadable] = ()) -> str:
    """The summary table that ends :func:`to_text` for several inputs ('' for one)."""
    many = len(reports) + len(unreadable) > 1
    return escape_lines(_table(reports, unreadable)) if many else ""


def _brief(reports: Sequence[WheelReport]) -> list[str]:
    lines: list[str] = []
    for r in reports:
        lines.append(f"cuwheel check {r.wheel}")
        lines.append(f"  {_summary(r)}")
        lines += _row_lines(r)
        lines += [f"    {line}" for line in _grouped(r.findings)]
        with_findings = {f.library or WHEEL for f in r.findings}
        ok = [lib for lib in r.libraries if lib not in with_findings]
        if ok:
            lines.append(f"  {_plural(len(ok), 'library').replace('ys', 'ies')} without findings")
        if r.config is not None:
            lines.append(f"  config: {r.config}")
        lines.append(f"  {_read_line(r)}")
        if len(r.notes) <= 2:
            lines += [f"  note: {n}" for n in r.notes]
        else:
            lines.append(f"  {len(r.notes)} notes (cuwheel check -v lists them)")
        if r.findings:
            lines.append(f"  explain a code: cuwheel explain {' '.join(codes_in(r.findings))}")
    return lines


def _detail(reports: Sequence[WheelReport]) -> list[str]:
    lines: list[str] = []
    for r in reports:
        lines.append(f"cuwheel check {r.wheel}")
        lines += _row_lines(r)
        if r.config is not None:
            lines.append(f"  config: {r.config}")
        lines.append(f"  {_read_line(r)}")
        lines += [f"  note: {n}" for n in r.notes]
        groups: dict[str, list[Finding]] = {}
        for f in r.findings:
            groups.setdefault(f.library or WHEEL, []).append(f)
        for lib in (*r.libraries, WHEEL):
            found = groups.pop(lib, [])
            if not found and lib == WHEEL:
                continue
            lines.append(f"  {lib}" + ("" if found else ": ok"))
            for f in found:
                if f.waived is not None:
                    lines.append(f"    waived   {f.code:<7}{f.message} [waiver: {f.waived}]")
                else:
                    lines.append(f"    {f.severity!s:<9}{f.code:<7}{f.message}")
        for lib, found in groups.items():  # findings about paths outside the binaries read
            lines.append(f"  {lib}")
            lines += [f"    {f.severity!s:<9}{f.code:<7}{f.message}" for f in found]
        lines.append(f"  {_summary(r)}")
        if r.findings:
            lines.append(f"  explain a code: cuwheel explain {' '.join(codes_in(r.findings))}")
    return lines


def _table(reports: Sequence[WheelReport], unreadable: Sequence[Unreadable] = ()) -> list[str]:
    """One line per wheel (verdict, counts, row), one per unreadable input (ERROR) and a
    total line."""
    head = ("wheel", "result", "errors", "warnings", "info", "row")
    rows: list[tuple[str, ...]] = [
        (r.wheel, "PASS" if r.passed else "FAIL", str(r.count(Severity.ERROR)),
         str(r.count(Severity.WARNING)), str(r.count(Severity.INFO)), r.row)
        for r in reports
    ]  # fmt: skip
    rows += [(PurePath(u.input).name or u.input, "ERROR", "1", "0", "0", "-")
             for u in unreadable]
    failed = sum(1 for r in reports if not r.passed) + len(unreadable)
    rows.append((
        f"total: {len(reports) + len(unreadable)} wheels", f"{failed} FAIL" if failed else "PASS",
        *(str(sum(int(row[i]) for row in rows)) for i in (2, 3, 4)), "",
    ))  # fmt: skip
    widths = [max(len(row[i]) for row in (head, *rows)) for i in range(len(head))]

    def line(row: Sequence[str]) -> str:
        cells = [row[0].ljust(widths[0]), row[1].ljust(widths[1]),
                 *(row[i].rjust(widths[i]) for i in (2, 3, 4)), row[5]]  # fmt: skip
        return ("  " + "  ".join(cells)).rstrip()

    return ["summary", line(head), *(line(row) for row in rows)]


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "code": f.code,
        "severity": str(f.severity),
        "check": f.check,
        "library": f.library,
        "message": f.message,
        "waived": f.waived,
        "help_url": code_url(f.code),
    }


def to_json_data(reports: Sequence[WheelReport],
                 unreadable: Sequence[Unreadable] = ()) -> dict[str, Any]:
    wheels = []
    for r in reports:
        wheels.append({
            "wheel": r.wheel,
            "row": r.row,
            "row_from": r.row_from,
            "profile": r.profile,
            "claim": r.claim,
            "config": r.config,
            "notes": list(r.notes),
            "train": r.train,
            "platform": r.platform,
            "sass": list(r.sass),
            "ptx": list(r.ptx),
            "stats": {
                "files": r.stats.files,
                "binaries": r.stats.binaries,
                "device_binaries": r.stats.device_binaries,
                "containers": r.stats.containers,
                "entries": r.stats.entries,
            },
            "libraries": list(r.libraries),
            "checks": list(r.checks),
            "fail_on": str(r.fail_on),
            "passed": r.passed,
            "summary": {
                "error": r.count(Severity.ERROR),
                "warning": r.count(Severity.WARNING),
                "info": r.count(Severity.INFO),
                "waived": r.waived,
            },
            "findings": [_finding_json(f) for f in r.findings],
        })  # fmt: skip
    configs = {r.config for r in reports}
    config = configs.pop() if len(configs) == 1 else None
    return {
        **envelope("check", config=config, row=None),
        "passed": all(r.passed for r in reports) and not unreadable,
        "wheels": wheels,
        "unreadable": [{"input": u.input, "error": u.error} for u in unreadable],
    }


def to_json(reports: Sequence[WheelReport], unreadable: Sequence[Unreadable] = ()) -> str:
    return dumps(to_json_data(reports, unreadable), indent=2) + "\n"


_GH_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def to_github(reports: Sequence[WheelReport], unreadable: Sequence[Unreadable] = ()) -> str:
    lines = []
    for r in reports:
        for f in r.findings:
            if f.waived is not None:
                continue
            level = _GH_LEVEL[f.severity]
            title = gh_prop(f"{f.code} {r.wheel}")
            message = f"{f.line()} (docs: {code_url(f.code)})"
            lines.append(f"::{level} file={gh_prop(r.path)},title={title}::{gh_data(message)}")
        lines.append(gh_data(f"{r.wheel}: {_summary(r)}"))
    for u in unreadable:
        title = gh_prop(f"cuwheel check {PurePath(u.input).name or u.input}")
        lines.append(f"::error file={gh_prop(u.input)},title={title}::"
                     f"{gh_data('not checked: ' + u.error)}")
        lines.append(gh_data(f"{u.input}: ERROR: not checked"))
    return "\n".join(lines) + "\n"


def render(reports: Sequence[WheelReport], fmt: str, *, verbose: bool = True,
           width: int | None = None, unreadable: Sequence[Unreadable] = ()) -> str:
    """``fmt`` of the reports and of the inputs that could not be checked (a failed entry
    in every format); ``verbose`` and ``width`` shape the text format only."""
    if fmt == "json":
        return to_json(reports, unreadable)
    if fmt == "sarif":
        return to_sarif(reports, unreadable)
    if fmt == "junit":
        return to_junit(reports, unreadable)
    if fmt == "github":
        return to_github(reports, unreadable)
    return to_text(reports, verbose=verbose, width=width, unreadable=unreadable)

"""Renderers of check reports: text (grouped by library; a table when there are several
wheels), versioned JSON (the common envelope; schema in ``cuwheel/data/check.schema.json``),
JUnit XML (one test case per check x library), GitHub Actions workflow commands and SARIF
2.1.0 (GitHub code scanning).  Each returns a string; only the CLI prints.  Every finding
links to its code's section of docs/checks.md (``cuwheel._urls.code_url``)."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from cuwheel import __version__
from cuwheel._urls import HOMEPAGE, code_url
from cuwheel.checks.codes import CODES, Severity
from cuwheel.checks.findings import Finding, WheelReport
from cuwheel.render import CHECK_FORMATS
from cuwheel.render.envelope import COMMANDS, envelope
from cuwheel.render.escape import dumps, escape_lines, gh_data, gh_prop, xml_attr, xml_text

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
]

JSON_SCHEMA_VERSION = COMMANDS["check"]
FORMATS = CHECK_FORMATS
WHEEL = "(wheel)"


def _codes(findings: Sequence[Finding]) -> list[str]:
    """The codes that occur in ``findings``, once each, in the order of CODES."""
    seen = {f.code for f in findings}
    return [c for c in CODES if c in seen] + sorted(seen - CODES.keys())


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


def _read_line(r: WheelReport) -> str:
    s = r.stats
    return (
        f"read {_plural(s.files, 'file')}: {_plural(s.binaries, 'binary').replace('ys', 'ies')}, "
        f"{s.device_binaries} with device code, {_plural(s.containers, 'fatbin container')}, "
        f"{_plural(s.entries, 'entry').replace('ys', 'ies')}"
    )


_SEVERITY_ORDER = {Severity.ERROR: 0, Severity.WARNING: 1, Severity.INFO: 2}
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
    order = sorted(groups.items(), key=lambda kv: (_SEVERITY_ORDER.get(kv[0][0], 3),
                                                   -len(kv[1]), kv[0][1]))
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
            width: int | None = None) -> str:
    """The text report. ``verbose``: every library and finding in place; otherwise the
    verdict first, then the findings grouped and worst first, the libraries without
    findings counted (``cuwheel check`` without -v). ``width``: lines wrapped to it.
    The same text as :func:`text_block` of each report followed by :func:`text_table`."""
    lines = _wrap(_detail(reports) if verbose else _brief(reports), width)
    if len(reports) > 1:  # a table: its columns line up only unwrapped
        lines += _table(reports)
    return escape_lines(lines)


def text_block(report: WheelReport, *, verbose: bool = True, width: int | None = None) -> str:
    """One wheel's part of :func:`to_text`: written as soon as that wheel is checked."""
    return to_text([report], verbose=verbose, width=width)


def text_table(reports: Sequence[WheelReport]) -> str:
    """The summary table that ends :func:`to_text` for several wheels ('' for one)."""
    return escape_lines(_table(reports)) if len(reports) > 1 else ""


def _brief(reports: Sequence[WheelReport]) -> list[str]:
    lines: list[str] = []
    for r in reports:
        lines.append(f"cuwheel check {r.wheel}")
        lines.append(f"  {_summary(r)}")
        lines += [f"    {line}" for line in _grouped(r.findings)]
        with_findings = {f.library or WHEEL for f in r.findings}
        ok = [lib for lib in r.libraries if lib not in with_findings]
        if ok:
            lines.append(f"  {_plural(len(ok), 'library').replace('ys', 'ies')} without findings")
        lines.append(f"  {_row_line(r)}")
        if r.config is not None:
            lines.append(f"  config: {r.config}")
        lines.append(f"  {_read_line(r)}")
        if len(r.notes) <= 2:
            lines += [f"  note: {n}" for n in r.notes]
        else:
            lines.append(f"  {len(r.notes)} notes (cuwheel check -v lists them)")
        if r.findings:
            lines.append(f"  explain a code: cuwheel explain {' '.join(_codes(r.findings))}")
    return lines


def _detail(reports: Sequence[WheelReport]) -> list[str]:
    lines: list[str] = []
    for r in reports:
        lines.append(f"cuwheel check {r.wheel}")
        lines.append(f"  {_row_line(r)}")
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
            lines.append(f"  explain a code: cuwheel explain {' '.join(_codes(r.findings))}")
    return lines


def _table(reports: Sequence[WheelReport]) -> list[str]:
    """One line per wheel (verdict, counts, row) and a total line."""
    head = ("wheel", "result", "errors", "warnings", "info", "row")
    rows: list[tuple[str, ...]] = [
        (r.wheel, "PASS" if r.passed else "FAIL", str(r.count(Severity.ERROR)),
         str(r.count(Severity.WARNING)), str(r.count(Severity.INFO)), r.row)
        for r in reports
    ]  # fmt: skip
    failed = sum(1 for r in reports if not r.passed)
    rows.append((
        f"total: {len(reports)} wheels", f"{failed} FAIL" if failed else "PASS",
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


def to_json_data(reports: Sequence[WheelReport]) -> dict[str, Any]:
    wheels = []
    for r in reports:
        wheels.append({
            "wheel": r.wheel,
            "row": r.row,
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
        "passed": all(r.passed for r in reports),
        "wheels": wheels,
    }


def to_json(reports: Sequence[WheelReport]) -> str:
    return dumps(to_json_data(reports), indent=2) + "\n"


def to_junit(reports: Sequence[WheelReport]) -> str:
    out = ['<?xml version="1.0" encoding="UTF-8"?>']
    total = sum(len(r.checks) * (len(r.libraries) + 1) for r in reports)
    fails = 0
    suites: list[str] = []
    for r in reports:
        cases: list[str] = []
        failed_here = 0
        for check in r.checks:
            for lib in (*r.libraries, WHEEL):
                found = [f for f in r.findings if f.check == check and (f.library or WHEEL) == lib]
                failing = [f for f in found if f in r.failing]
                name = xml_attr(f"{check}: {lib}")
                cls = xml_attr(f"cuwheel.check.{check}")
                body = ""
                if failing:
                    failed_here += 1
                    text = "\n".join(
                        xml_text(f"{f.code} {f.severity}: {f.message} (docs: {code_url(f.code)})")
                        for f in failing
                    )
                    body += (
                        f"<failure type={xml_attr(failing[0].code)} "
                        f"message={xml_attr(failing[0].message)}>{text}</failure>"
                    )
                rest = [f for f in found if f not in failing]
                if rest:
                    text = "\n".join(
                        xml_text(
                            f"{f.code} {f.severity}: {f.message}"
                            + (f" [waived: {f.waived}]" if f.waived else "")
                        )
                        for f in rest
                    )
                    body += f"<system-out>{text}</system-out>"
                if body:
                    cases.append(f"    <testcase classname={cls} name={name}>{body}</testcase>")
                else:
                    cases.append(f"    <testcase classname={cls} name={name}/>")
        fails += failed_here
        suites.append(
            f'  <testsuite name={xml_attr(r.wheel)} tests="{len(cases)}" '
            f'failures="{failed_here}" errors="0">'
        )
        suites += cases
        suites.append("  </testsuite>")
    out.append(f'<testsuites name="cuwheel check" tests="{total}" failures="{fails}">')
    out += suites
    out.append("</testsuites>")
    return "\n".join(out) + "\n"


_GH_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "notice"}


def to_github(reports: Sequence[WheelReport]) -> str:
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
    return "\n".join(lines) + "\n"


_SARIF_LEVEL = {Severity.ERROR: "error", Severity.WARNING: "warning", Severity.INFO: "note"}
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"


def _rule_name(title: str) -> str:
    """A readable identifier of a rule (SARIF's ``name``): its title in PascalCase."""
    return "".join(w[:1].upper() + w[1:] for w in re.findall(r"[A-Za-z0-9]+", title))


def _rule(code: str) -> dict[str, Any]:
    c = CODES.get(code)
    if c is None:  # not a code of data/codes.toml: name it, nothing more
        return {"id": code, "helpUri": code_url(code)}
    return {
        "id": code,
        "name": _rule_name(c.title),
        "shortDescription": {"text": c.title},
        "fullDescription": {"text": c.explanation},
        "help": {"text": c.explanation, "markdown": c.explanation},
        "helpUri": code_url(code),
        "defaultConfiguration": {"level": _SARIF_LEVEL[c.severity]},
        "properties": {"tags": [c.family]},
    }


def _artifact_uri(path: str) -> str:
    """The wheel's path as a URI reference: relative stays relative (GitHub code scanning
    matches it against the repository's files); an absolute path becomes a file: URI."""
    p = PurePath(path)
    if p.is_absolute():
        return p.as_uri()
    ref = quote(p.as_posix(), safe="/+,;=@:!$&'()*")
    # A first segment with a colon would read as a scheme (``javascript:...``, RFC 3986
    # section 4.2): "./" keeps the reference relative.
    return "./" + ref if ":" in ref.split("/", 1)[0] else ref


def to_sarif_data(reports: Sequence[WheelReport]) -> dict[str, Any]:
    """One SARIF 2.1.0 run: a rule per code that occurred, a result per finding (a waived
    one carries an external suppression with the waiver's reason)."""
    codes = _codes([f for r in reports for f in r.findings])
    index = {code: i for i, code in enumerate(codes)}
    results: list[dict[str, Any]] = []
    for r in reports:
        uri = _artifact_uri(r.path)
        occurrences: dict[str, int] = {}
        for f in r.findings:
            # A stable identity across runs (GitHub code scanning's fingerprint): the code,
            # the library and the message, numbered when the same finding repeats.
            key = hashlib.sha256(
                f"{f.code}\0{f.library or ''}\0{f.message}".encode("utf-8", "backslashreplace")
            ).hexdigest()[:16]
            occurrences[key] = occurrences.get(key, 0) + 1
            result: dict[str, Any] = {
                "ruleId": f.code,
                "ruleIndex": index[f.code],
                "level": _SARIF_LEVEL[f.severity],
                "message": {"text": f"{f.line()} ({r.wheel})"},
                "locations": [{
                    "physicalLocation": {
                        "artifactLocation": {"uri": uri},
                        # a wheel has no lines; GitHub requires a region with startLine
                        "region": {"startLine": 1},
                    },
                }],
                "partialFingerprints": {"primaryLocationLineHash": f"{key}:{occurrences[key]}"},
                "properties": {"wheel": r.wheel, "library": f.library, "check": f.check,
                               "row": r.row},
            }  # fmt: skip
            if f.waived is not None:
                result["suppressions"] = [
                    {"kind": "external", "status": "accepted", "justification": f.waived}
                ]
            results.append(result)
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "cuwheel",
                "version": __version__,
                "informationUri": HOMEPAGE,
                "rules": [_rule(code) for code in codes],
            }},
            "results": results,
        }],
    }  # fmt: skip


def to_sarif(reports: Sequence[WheelReport]) -> str:
    return dumps(to_sarif_data(reports), indent=2) + "\n"


def render(reports: Sequence[WheelReport], fmt: str, *, verbose: bool = True,
           width: int | None = None) -> str:
    """``fmt`` of the reports; ``verbose`` and ``width`` shape the text format only."""
    if fmt == "json":
        return to_json(reports)
    if fmt == "sarif":
        return to_sarif(reports)
    if fmt == "junit":
        return to_junit(reports)
    if fmt == "github":
        return to_github(reports)
    return to_text(reports, verbose=verbose, width=width)

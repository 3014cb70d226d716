"""Renderers of check reports: text (grouped by library), versioned JSON (schema in
``cuwheel/data/check-schema.json``), JUnit XML (one test case per check x library) and
GitHub Actions workflow commands.  Each returns a string; only the CLI prints."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from cuwheel.checks.codes import Severity
from cuwheel.checks.findings import Finding, WheelReport
from cuwheel.render.escape import dumps, escape_lines, gh_data, gh_prop, xml_attr, xml_text

__all__ = [
    "FORMATS",
    "JSON_SCHEMA_VERSION",
    "render",
    "to_github",
    "to_json",
    "to_json_data",
    "to_junit",
    "to_text",
]

JSON_SCHEMA_VERSION = 1
FORMATS = ("text", "json", "junit", "github")
WHEEL = "(wheel)"


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


def to_text(reports: Sequence[WheelReport]) -> str:
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
    return escape_lines(lines)


def _finding_json(f: Finding) -> dict[str, Any]:
    return {
        "code": f.code,
        "severity": str(f.severity),
        "check": f.check,
        "library": f.library,
        "message": f.message,
        "waived": f.waived,
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
    return {
        "schema": "cuwheel-check",
        "version": JSON_SCHEMA_VERSION,
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
                        xml_text(f"{f.code} {f.severity}: {f.message}") for f in failing
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
            lines.append(f"::{level} file={gh_prop(r.path)},title={title}::{gh_data(f.line())}")
        lines.append(gh_data(f"{r.wheel}: {_summary(r)}"))
    return "\n".join(lines) + "\n"


def render(reports: Sequence[WheelReport], fmt: str) -> str:
    if fmt == "json":
        return to_json(reports)
    if fmt == "junit":
        return to_junit(reports)
    if fmt == "github":
        return to_github(reports)
    return to_text(reports)

"""Check reports as SARIF 2.1.0 (GitHub code scanning; docs/checks.md): a rule per code
that occurred, a result per finding with a fingerprint stable across runs, a waived
finding as an external suppression."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence
from pathlib import PurePath
from typing import Any
from urllib.parse import quote

from cuwheel._urls import HOMEPAGE, code_url
from cuwheel._version import __version__
from cuwheel.checks.codes import CODES, Severity
from cuwheel.checks.findings import Unreadable, WheelReport
from cuwheel.render.check_names import codes_in
from cuwheel.render.escape import dumps

__all__ = ["SARIF_SCHEMA", "to_sarif", "to_sarif_data"]


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


def to_sarif_data(reports: Sequence[WheelReport],
                  unreadable: Sequence[Unreadable] = ()) -> dict[str, Any]:
    """One SARIF 2.1.0 run: a rule per code that occurred, a result per finding (a waived
    one carries an external suppression with the waiver's reason); an input that could not
    be read is a tool-execution notification of level error in the run's invocation, whose
    ``executionSuccessful`` is then false (SARIF 2.1.0 section 3.20)."""
    codes = codes_in([f for r in reports for f in r.findings])
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
    run: dict[str, Any] = {
        "tool": {"driver": {
            "name": "cuwheel",
            "version": __version__,
            "informationUri": HOMEPAGE,
            "rules": [_rule(code) for code in codes],
        }},
    }  # fmt: skip
    if unreadable:
        run["invocations"] = [{
            "executionSuccessful": False,
            "toolExecutionNotifications": [{
                "level": "error",
                "message": {"text": f"not checked: {u.error}"},
                "locations": [{"physicalLocation": {
                    "artifactLocation": {"uri": _artifact_uri(u.input)}}}],
            } for u in unreadable],
        }]  # fmt: skip
    run["results"] = results
    return {"$schema": SARIF_SCHEMA, "version": "2.1.0", "runs": [run]}


def to_sarif(reports: Sequence[WheelReport], unreadable: Sequence[Unreadable] = ()) -> str:
    return dumps(to_sarif_data(reports, unreadable), indent=2) + "\n"

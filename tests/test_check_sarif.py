"""``cuwheel check --format sarif``: SARIF 2.1.0 that GitHub code scanning accepts.

Validated against the OASIS SARIF 2.1.0 schema (tests/data/sarif-schema-2.1.0.json; its
source is named in tests/data/sarif-schema-2.1.0.json.source), then held to what GitHub's
"SARIF support for code scanning" asks beyond the schema: a message text and at least one
location per result, a relative artifact URI, a region with a start line, rule ids that stay
the same, and fingerprints so that one finding is one alert across runs.
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import checkwheels as cw
from cuwheel.checks import CODES, Severity, WheelReport, check_wheel
from cuwheel.checks.findings import Finding
from cuwheel.cli import main_inner
from cuwheel.config import parse_config
from cuwheel.render.check import to_sarif_data

SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
DOCS = "https://github.com/cuwheel/cuwheel/blob/main/docs/checks.md#"


def _validate(log: dict[str, Any]) -> None:
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft4Validator.check_schema(schema)
    jsonschema.Draft4Validator(schema).validate(log)


def _report(tmp_path: Path, waivers: list[dict[str, str]] | None = None) -> WheelReport:
    policy: dict[str, Any] = dict(cw.SEED_POLICY)
    if waivers:
        policy["waivers"] = waivers
    cfg = parse_config({"check": policy}, "seed")
    wheel = cw.broken_seeds()["linux-x86_64-cu13"].build(tmp_path)
    rel = os.path.relpath(wheel)  # as a workflow names it: relative to the checkout
    return check_wheel(rel, cfg.rows, cfg.check, environ={})


def test_schema_rejects_what_it_should() -> None:
    with pytest.raises(jsonschema.ValidationError):
        _validate({"version": "2.1.0", "runs": [{"tool": {"driver": {}}}]})  # no driver name


def test_sarif_log_is_valid_and_github_ready(tmp_path: Path) -> None:
    report = _report(tmp_path)
    log = to_sarif_data([report])
    _validate(log)
    assert log["version"] == "2.1.0"
    assert len(log["runs"]) == 1
    run = log["runs"][0]
    driver = run["tool"]["driver"]
    assert driver["name"] == "cuwheel"
    assert driver["informationUri"] == "https://github.com/cuwheel/cuwheel"
    assert driver["version"]
    # one rule per code that occurred, in a stable order
    assert [r["id"] for r in driver["rules"]] == ["DC001", "DC002", "RP001", "RP002", "MOD001"]
    rp002 = driver["rules"][3]
    assert rp002["shortDescription"]["text"] == "an absolute run path entry"
    assert rp002["helpUri"] == DOCS + "rp002"
    assert rp002["defaultConfiguration"]["level"] == "error"
    assert "$ORIGIN" in rp002["fullDescription"]["text"]
    assert rp002["help"]["text"] == rp002["fullDescription"]["text"]
    assert rp002["name"] == "AnAbsoluteRunPathEntry"
    results = run["results"]
    assert len(results) == 9 == len(report.findings)
    prints = set()
    for res in results:
        assert driver["rules"][res["ruleIndex"]]["id"] == res["ruleId"]
        assert res["level"] == "error"
        assert res["message"]["text"].strip()
        (loc,) = res["locations"]
        phys = loc["physicalLocation"]
        uri = phys["artifactLocation"]["uri"]
        assert uri == Path(report.path).as_posix()  # as given; '+' needs no escape
        assert not uri.startswith(("/", "file:"))
        assert phys["region"]["startLine"] >= 1
        prints.add(res["partialFingerprints"]["primaryLocationLineHash"])
        assert "suppressions" not in res
    assert len(prints) == len(results)  # one alert per finding
    (tmp_path / "again").mkdir()
    again = to_sarif_data([_report(tmp_path / "again")])
    assert [r["partialFingerprints"] for r in again["runs"][0]["results"]] == [
        r["partialFingerprints"] for r in results]  # the same findings, the same identities


def test_levels_and_waivers(tmp_path: Path) -> None:
    report = _report(tmp_path, [{"code": "RP", "path": "pkg/lib/libpkg_extra.so",
                                 "reason": "vendored; fixed upstream"}])
    log = to_sarif_data([report])
    _validate(log)
    waived = [r for r in log["runs"][0]["results"] if "suppressions" in r]
    assert sorted(r["ruleId"] for r in waived) == ["RP001", "RP002"]
    for r in waived:
        assert r["suppressions"] == [{"kind": "external", "status": "accepted",
                                      "justification": "vendored; fixed upstream"}]
    # info and warning findings map to SARIF's note and warning
    extra = replace(report, findings=(
        Finding("DC006", Severity.INFO, "only sm_90a", "pkg/x.so", "device-code"),
        Finding("DC005", Severity.WARNING, "extra PTX", "pkg/x.so", "device-code"),
    ))  # fmt: skip
    log = to_sarif_data([extra])
    _validate(log)
    assert [r["level"] for r in log["runs"][0]["results"]] == ["note", "warning"]
    rules = log["runs"][0]["tool"]["driver"]["rules"]
    assert [(r["id"], r["defaultConfiguration"]["level"]) for r in rules] == [
        ("DC005", "warning"), ("DC006", "note")]
    assert CODES["DC006"].title == rules[1]["shortDescription"]["text"]


def test_absolute_wheel_path_is_a_file_uri(tmp_path: Path) -> None:
    report = _report(tmp_path)
    absolute = replace(report, path="/builds/x y/pkg.whl")
    log = to_sarif_data([absolute])
    _validate(log)
    uri = log["runs"][0]["results"][0]["locations"][0]["physicalLocation"]["artifactLocation"]
    assert uri["uri"] == "file:///builds/x%20y/pkg.whl"


def test_cli_writes_sarif(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    wheel = cw.broken_seeds()["linux-x86_64-cu13"].build(tmp_path)
    out = tmp_path / "cuwheel.sarif"
    code = main_inner(["check", wheel, "--row", "linux-x86_64-cu13", "-f", "sarif", "-o",
                       str(out)])  # fmt: skip
    assert code == 1  # the findings still fail the run
    log = json.loads(out.read_text(encoding="utf-8"))
    _validate(log)
    assert log["runs"][0]["results"]
    # a clean wheel: a valid log without results
    (tmp_path / "clean").mkdir()
    clean = cw.linux_x86_cu13().build(tmp_path / "clean")
    assert main_inner(["check", clean, "--row", "linux-x86_64-cu13", "--format", "sarif"]) == 0
    log = json.loads(capsys.readouterr().out)
    _validate(log)
    assert log["runs"][0]["results"] == [] and log["runs"][0]["tool"]["driver"]["rules"] == []

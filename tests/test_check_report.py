"""Reports, policy options, [tool.cuwheel.check] and the `cuwheel check` CLI."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import checkwheels as cw
from cuwheel.checks import CODES, CheckPolicy, Severity, check_wheel
from cuwheel.cli import main, main_inner
from cuwheel.config import load_config, parse_config
from cuwheel.errors import ConfigError
from cuwheel.render.check import to_github, to_junit

X86 = cw.linux_x86_cu13()
ARM = cw.linux_aarch64_cu13()


def _schema() -> dict[str, Any]:
    text = resources.files("cuwheel").joinpath("data/check.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _check(tmp_path: Path, spec: cw.Spec, table: dict[str, Any] | None = None,
           **selection: str) -> Any:
    table = dict(table or {})
    if "rows" in table:  # these tests are about the release rules (exact arch lists)
        table["rows"] = [{"profile": "release", **r} for r in table["rows"]]
    cfg = parse_config(table, "test")
    return check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={}, **selection)


def test_schema_lists_every_code() -> None:
    enum = _schema()["$defs"]["finding"]["properties"]["code"]["enum"]
    assert sorted(enum) == sorted(CODES)


def test_schema_rejects_a_wrong_report() -> None:
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"schema": "cuwheel-check", "version": 2, "passed": True,
                             "wheels": []}, _schema())


def test_junit_one_case_per_check_and_library(tmp_path: Path) -> None:
    bad = cw.broken_seeds()["linux-aarch64-cu13"]
    report = _check(tmp_path, bad)
    root = ET.fromstring(to_junit([report]))
    cases = root.findall("./testsuite/testcase")
    # 14 checks x (3 binaries + the wheel itself)
    assert len(cases) == 14 * 4
    failed = sorted(c.get("name", "") for c in cases if c.find("failure") is not None)
    assert failed == [
        "dependencies: (wheel)",
        "dependencies: pkg/lib/libpkg_cuda.so",
        "machine: pkg/lib/libhost.so",
    ]
    assert root.get("failures") == "3"


def test_github_annotations(tmp_path: Path) -> None:
    report = _check(tmp_path, cw.broken_seeds()["linux-aarch64-cu13"])
    lines = to_github([report]).splitlines()
    assert lines[0].startswith("::error file=")
    assert any(
        "title=TAG001 pkg-1.0+cu130-cp311-cp311-manylinux_2_28_aarch64.whl::pkg/lib/libhost.so: "
        "ELF x86_64 binary" in line for line in lines
    )
    assert lines[-1].endswith("FAIL: 3 errors, 0 warnings, 0 info (fails on error)")


def test_partial_container_coverage_is_counted(tmp_path: Path) -> None:
    """two_tu.so: a link stub [sm_75] (not counted: no kernels), TU1 [sm_80 sm_86],
    TU2 [sm_90 compute_90 sm_120]."""
    rows = [{"name": "x", "platform": "linux-x86_64", "cuda": "13",
             "sass": ["sm_80", "sm_86", "sm_90", "sm_120"], "ptx": "none"},
            {"name": "cpu", "cuda": "cpu"}]
    spec = X86.with_member("pkg/lib/libpkg_cuda.so", cw.fixture("two_tu.so"))
    report = _check(tmp_path, spec, {"rows": rows, "trains": [], "check": {"select": ["DC001"]}})
    got = sorted(f.message.split(" (")[0] for f in report.findings)
    assert got == [
        "no SASS for sm_120 in 1 of 2 containers",
        "no SASS for sm_80 in 1 of 2 containers",
        "no SASS for sm_86 in 1 of 2 containers",
        "no SASS for sm_90 in 1 of 2 containers",
    ]


ARM_PTX_ROWS = [{"name": "a", "platform": "linux-aarch64", "cuda": "13",
                 "sass": ["sm_90", "sm_100"], "ptx": "none"}, {"name": "cpu", "cuda": "cpu"}]
ARM_PTX = replace(ARM.with_member("pkg/lib/libpkg_cuda.so", cw.fixture("arm64_sm90.so")),
                  requires=())


def test_accept_ptx_for_sass(tmp_path: Path) -> None:
    table: dict[str, Any] = {"rows": ARM_PTX_ROWS, "trains": [], "check": {"ignore": ["DC005"]}}
    strict = _check(tmp_path, ARM_PTX, table)
    assert [(f.code, f.severity) for f in strict.findings] == [("DC001", Severity.ERROR)]
    assert "PTX compute_90 can JIT-compile it" in strict.findings[0].message
    table["check"]["accept-ptx-for-sass"] = True
    accepted = _check(tmp_path, ARM_PTX, table)
    assert [(f.code, f.severity) for f in accepted.findings] == [("DC001", Severity.INFO)]
    assert accepted.passed


def test_accept_missing_ptx_and_warn_mode(tmp_path: Path) -> None:
    rows = [{"name": "a", "platform": "linux-aarch64", "cuda": "13",
             "sass": ["sm_90", "sm_100", "sm_110"], "ptx": "newest"},
            {"name": "cpu", "cuda": "cpu"}]
    base: dict[str, Any] = {"rows": rows, "trains": []}
    assert [(f.code, f.severity) for f in _check(tmp_path, ARM, base).findings] == [
        ("DC003", Severity.ERROR)]
    warn = _check(tmp_path, ARM, {**base, "check": {"device-code": "warn"}})
    assert [(f.code, f.severity) for f in warn.findings] == [("DC003", Severity.WARNING)]
    assert warn.passed
    strict = _check(tmp_path, ARM, {**base, "check": {"device-code": "warn", "fail-on": "warning"}})
    assert not strict.passed
    ok = _check(tmp_path, ARM, {**base, "check": {"accept-missing-ptx": True}})
    assert [(f.code, f.severity) for f in ok.findings] == [("DC003", Severity.INFO)]


def test_variants_of_claimed_archs(tmp_path: Path) -> None:
    rows = [{"name": "x", "platform": "linux-x86_64", "cuda": "13", "sass": ["sm_90"],
             "ptx": "none"}, {"name": "cpu", "cuda": "cpu"}]
    spec = X86.with_member("pkg/lib/libpkg_cuda.so", cw.fixture("sm90a.so"))
    table: dict[str, Any] = {"rows": rows, "trains": [], "check": {"select": ["DC"]}}
    assert _check(tmp_path, spec, table).findings == ()
    table["check"]["allow-variants"] = False
    got = [(f.code, f.message.split(",")[0]) for f in _check(tmp_path, spec, table).findings]
    # the device-link stub (sm_90a too) is not counted: it holds no kernels
    assert got == [("DC002", "SASS for sm_90a in 1 of 1 container")]


def test_waiver_needs_a_reason_and_waives(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="needs a reason"):
        parse_config({"check": {"waivers": [{"code": "RP002", "path": "*"}]}}, "t")
    bad = cw.broken_seeds()["linux-x86_64-cu13"]
    table = {"check": {"waivers": [
        {"code": "RP", "path": "pkg/lib/libpkg_extra.so", "reason": "vendored; fixed upstream"},
    ]}}
    report = _check(tmp_path, bad, table)
    waived = sorted(f.code for f in report.findings if f.waived)
    assert waived == ["RP001", "RP002"]
    assert all(f.library == "pkg/lib/libpkg_extra.so" for f in report.findings if f.waived)
    assert report.waived == 2


def test_select_and_ignore(tmp_path: Path) -> None:
    bad = cw.broken_seeds()["linux-x86_64-cu13"]
    sel = _check(tmp_path, bad, {"check": {"select": ["RP"], "ignore": ["RP001"]}})
    assert {f.code for f in sel.findings} == {"RP002"}


def test_config_problems_listed_at_once() -> None:
    with pytest.raises(ConfigError) as exc:
        parse_config({"check": {"selct": ["DC"], "fail-on": "sometimes", "ignore": "XYZ"}}, "t")
    text = str(exc.value)
    assert "did you mean 'select'" in text
    assert "fail-on" in text
    assert "'XYZ' is no check code or prefix" in text


def test_pyproject_check_table(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text(
        '[tool.cuwheel.check]\nignore = ["DEP002"]\nno-cuda = ["pkg/_C*"]\n', encoding="utf-8")
    config = load_config(tmp_path / "pyproject.toml")
    assert config.check == CheckPolicy(ignore=("DEP002",), no_cuda=("pkg/_C*",))


def test_cli_exit_status(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    good = X86.build(tmp_path)
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = cw.broken_seeds()["linux-x86_64-cu13"].build(bad_dir)
    seed = ["--row", "linux-x86_64-cu13"]  # the built-in rows are the seed project's
    assert main_inner(["check", good, *seed]) == 0
    assert main_inner(["check", good, bad, *seed]) == 1
    assert main_inner(["check", bad, "--select", "TAG", *seed]) == 0
    assert main_inner(["check", good]) == 0  # audit mode: no row of this project
    capsys.readouterr()
    assert main_inner(["check", good, bad, "--format", "json", *seed]) == 1
    data = json.loads(capsys.readouterr().out)
    jsonschema.validate(data, _schema())
    assert [w["passed"] for w in data["wheels"]] == [True, False]
    assert main(["check", str(tmp_path / "missing.whl")]) == 2
    assert main(["check", good, "--select", "NOPE"]) == 2
    assert main(["check", good, "--row", "linux-aarch64-cu13"]) == 2
    nolocal = replace(X86, version="1.0").build(tmp_path)
    assert main(["check", nolocal]) == 0  # audit mode reads the train off the libraries
    assert main(["check", nolocal, *seed]) == 0  # the row names the train; TAG002 warns
    assert main(["check", nolocal, *seed, "--strict"]) == 1


def test_docs_list_every_code() -> None:
    docs = (Path(__file__).parent.parent / "docs" / "checks.md").read_text(encoding="utf-8")
    for code in CODES:
        assert f"### {code} " in docs, code

"""What every check report format says beyond the findings: the docs link of each code
(JSON, GitHub, JUnit, text), the common JSON envelope and the table of several wheels."""

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
from cuwheel.checks import WheelReport, check_wheel
from cuwheel.cli import main_inner
from cuwheel.config import parse_config
from cuwheel.render.check import to_github, to_json_data, to_junit, to_text

DOCS = "https://github.com/cuwheel/cuwheel/blob/main/docs/checks.md#"
GOOD_ARM = "pkg-1.0+cu130-cp311-cp311-manylinux_2_28_aarch64.whl"
BAD_X86 = "pkg-1.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl"


def _schema() -> dict[str, Any]:
    text = resources.files("cuwheel").joinpath("data/check.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _run(wheel: str) -> WheelReport:
    cfg = parse_config({"check": cw.SEED_POLICY}, "seed")
    return check_wheel(wheel, cfg.rows, cfg.check, environ={})


@pytest.fixture
def reports(tmp_path: Path) -> list[WheelReport]:
    good = _run(cw.linux_aarch64_cu13().build(tmp_path))
    bad_dir = tmp_path / "bad"
    bad_dir.mkdir()
    bad = _run(cw.broken_seeds()["linux-x86_64-cu13"].build(bad_dir))
    assert (good.wheel, bad.wheel) == (GOOD_ARM, BAD_X86)
    return [good, bad]


def test_json_envelope_and_help_urls(reports: list[WheelReport]) -> None:
    data = to_json_data(reports)
    jsonschema.validate(data, _schema())
    assert list(data)[:5] == ["schema", "version", "tool", "config", "row"]
    assert (data["schema"], data["version"], data["row"]) == ("cuwheel-check", 2, None)
    assert data["tool"]["name"] == "cuwheel"
    assert data["config"] is None  # the built-in defaults
    urls = {f["code"]: f["help_url"] for w in data["wheels"] for f in w["findings"]}
    assert urls["RP002"] == DOCS + "rp002"
    assert urls["MOD001"] == DOCS + "mod001"
    bad = dict(data)
    bad["wheels"] = [dict(data["wheels"][1], findings=[
        {k: v for k, v in data["wheels"][1]["findings"][0].items() if k != "help_url"}])]
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, _schema())


def test_top_level_config_only_when_shared(reports: list[WheelReport]) -> None:
    a, b = reports
    same = [replace(a, config="/p/cuwheel.toml"), replace(b, config="/p/cuwheel.toml")]
    assert to_json_data(same)["config"] == "/p/cuwheel.toml"
    mixed = [replace(a, config="/p/cuwheel.toml"), b]
    data = to_json_data(mixed)
    assert data["config"] is None
    assert [w["config"] for w in data["wheels"]] == ["/p/cuwheel.toml", None]
    jsonschema.validate(data, _schema())


def test_github_and_junit_link_the_code(reports: list[WheelReport]) -> None:
    gh = to_github(reports).splitlines()
    rp002 = [line for line in gh if "title=RP002 " in line]
    assert rp002 and rp002[0].endswith(f"(docs: {DOCS}rp002)")
    root = ET.fromstring(to_junit(reports))
    failures = [f.text or "" for f in root.iter("failure")]
    assert any(f"(docs: {DOCS}rp001)" in text for text in failures)


def test_text_names_the_codes_to_explain(reports: list[WheelReport]) -> None:
    text = to_text([reports[1]])
    last = text.splitlines()[-1]
    assert last == "  explain a code: cuwheel explain DC001 DC002 RP001 RP002 MOD001"
    assert "https://" not in text  # no URL on the text lines
    clean = replace(reports[0], findings=())
    assert "explain a code" not in to_text([clean])


def test_table_of_several_wheels(reports: list[WheelReport]) -> None:
    one = to_text(reports[:1])
    assert "summary" not in one.splitlines()  # one wheel: no table
    lines = to_text(reports).splitlines()
    start = lines.index("summary")
    table = [line.split() for line in lines[start + 1 :]]
    assert table[0] == ["wheel", "result", "errors", "warnings", "info", "row"]
    # the broken seed: DC001 x2, DC002 x2, RP001 x3, RP002, MOD001 (tests/test_check_seed.py)
    assert table[1] == [GOOD_ARM, "PASS", "0", "0", "0", "linux-aarch64-cu13"]
    assert table[2] == [BAD_X86, "FAIL", "9", "0", "0", "linux-x86_64-cu13"]
    assert table[3] == ["total:", "2", "wheels", "1", "FAIL", "9", "0", "0"]
    assert len(table) == 4
    # columns line up: each number ends where its heading does
    head, row = lines[start + 1], lines[start + 3]
    assert head.index("errors") + len("errors") == row.index(" 9 ") + 2


def test_cli_table_and_audit_row(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    a = cw.linux_aarch64_cu13().build(tmp_path)
    (tmp_path / "b").mkdir()
    b = cw.linux_x86_cu13().build(tmp_path / "b")
    assert main_inner(["check", a, b, "--color", "never"]) == 0  # no project config: audit
    lines = capsys.readouterr().out.splitlines()
    rows = [line.split() for line in lines[lines.index("summary") + 2 :]]
    assert [r[-1] for r in rows[:2]] == ["audit", "audit"]
    assert rows[2][:5] == ["total:", "2", "wheels", "PASS", "0"]


REAL = Path(__file__).parent / "data" / "real"


def test_text_leads_with_the_verdict_and_groups_repeats(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """bitsandbytes ships seven CUDA libraries, libbitsandbytes_cuda118.so to _cuda132.so,
    SASS only (data/real/manifest.txt): the same DC003 seven times is one line naming the
    seven, after the verdict; every line fits COLUMNS; -v lists each library in place."""
    monkeypatch.setenv("COLUMNS", "80")
    wheel = str(REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl")
    assert main_inner(["check", wheel, "--color", "never"]) == 0
    out = capsys.readouterr().out
    lines = out.splitlines()
    assert lines[1].startswith("  PASS: 0 errors, 7 warnings")
    assert lines[2].startswith("  audit (no row): train cu132")  # then what chose it
    severities = [line.split()[:2] for line in lines
                  if line.split()[:1] in (["error"], ["warning"], ["info"])]
    assert severities[0] == ["warning", "DC003"]
    text = " ".join(out.split())
    assert "[7 libraries: libbitsandbytes_cuda118.so," in text
    # cuda118..126 end at sm_90, cuda128..132 at sm_120: one line says both
    assert "GPUs newer than sm_90/sm_120 get no code" in text
    assert sum(line.split()[:2] == ["warning", "DC003"] for line in lines) == 1
    assert all(len(line) <= 80 for line in lines)
    assert main_inner(["-v", "check", wheel, "--color", "never"]) == 0
    verbose = capsys.readouterr().out.splitlines()
    assert sum(line.split()[:2] == ["warning", "DC003"] for line in verbose) == 7
    assert len(verbose) > len(lines)

"""Every input accounted for: a run over one good wheel and one that cannot be read exits
2, and the unreadable one is a failed entry of every format (text, JSON, JUnit, SARIF,
GitHub), compared with tests/golden/check/unreadable.*; the JSON and SARIF are validated
against their schemas.  Before, `-f json` said "passed": true and never named it.

Regenerate the golden files (then read the diff!) with CUWHEEL_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import json
import os
import xml.etree.ElementTree as ET
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

import checkwheels as cw
from cuwheel.cli import main

GOLDEN = Path(__file__).parent / "golden" / "check"
UPDATE = os.environ.get("CUWHEEL_UPDATE_GOLDEN") == "1"
SARIF_SCHEMA = Path(__file__).parent / "data" / "sarif-schema-2.1.0.json"
BROKEN = "broken-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"


def _run(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
         fmt: str) -> tuple[int, str, str]:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("COLUMNS", "100")
    for var in ("CUWHEEL_ROW", "CUWHEEL_TRAIN", "CU_VERSION", "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)
    good = Path(cw.linux_x86_cu13().build(tmp_path)).name
    (tmp_path / BROKEN).write_bytes(b"PK\x03\x04 truncated: not a zip archive")
    code = main(["check", good, BROKEN, "-f", fmt, "--color", "never"])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs (CUWHEEL_UPDATE_GOLDEN=1)"


@pytest.mark.parametrize("fmt", ["text", "json", "junit", "sarif", "github"])
def test_one_unreadable_input_is_a_failed_entry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    fmt: str,
) -> None:
    code, out, err = _run(tmp_path, monkeypatch, capsys, fmt)
    assert code == 2
    (line,) = err.splitlines()
    assert line.startswith(f"cuwheel: error: {BROKEN}: ") and "Traceback" not in err
    error = line.removeprefix("cuwheel: error: ")
    ext = {"text": "txt", "junit": "xml"}.get(fmt, fmt)
    _golden(f"unreadable.{ext}", out)
    if fmt == "text":
        assert f"cuwheel check {BROKEN}\n  ERROR: not checked: {error}\n" in out
        assert "total: 2 wheels" in out and " ERROR " in out and " 1 FAIL " in out
    elif fmt == "json":
        data = json.loads(out)
        schema = json.loads(resources.files("cuwheel").joinpath("data/check.schema.json")
                            .read_text("utf-8"))
        jsonschema.validate(data, schema)
        assert data["passed"] is False
        assert [w["passed"] for w in data["wheels"]] == [True]
        assert data["unreadable"] == [{"input": BROKEN, "error": error}]
    elif fmt == "junit":
        root = ET.fromstring(out)
        assert root.get("errors") == "1"
        (suite,) = [s for s in root if s.get("name") == BROKEN]
        assert suite.get("errors") == "1"
        (case,) = list(suite)
        (err_el,) = list(case)
        assert err_el.tag == "error" and err_el.get("message") == error
    elif fmt == "sarif":
        data = json.loads(out)
        jsonschema.validate(data, json.loads(SARIF_SCHEMA.read_text("utf-8")))
        (inv,) = data["runs"][0]["invocations"]
        assert inv["executionSuccessful"] is False
        (note,) = inv["toolExecutionNotifications"]
        assert note["level"] == "error" and error in note["message"]["text"]
    else:
        errors = [ln for ln in out.splitlines() if ln.startswith("::error")]
        assert len(errors) == 1 and BROKEN in errors[0]


def test_exit_2_wins_over_exit_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                    capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    good = Path(cw.linux_x86_cu13().build(tmp_path)).name
    (tmp_path / BROKEN).write_bytes(b"not a zip")
    assert main(["check", good, BROKEN, "--exit-zero", "-f", "json"]) == 2
    assert json.loads(capsys.readouterr().out)["passed"] is False

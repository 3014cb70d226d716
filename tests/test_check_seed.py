"""The seed rows end to end: one realistic wheel per row passes, its broken variant fails
with the codes written here by hand; text / JSON reports are compared with tests/golden/check.

Regenerate the golden files (then read the diff!) with CUWHEEL_UPDATE_GOLDEN=1.
"""

from __future__ import annotations

import json
import os
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import checkwheels as cw
from cuwheel.checks import WheelReport, check_wheel
from cuwheel.config import parse_config
from cuwheel.render.check import to_json, to_text

GOLDEN = Path(__file__).parent / "golden" / "check"
UPDATE = os.environ.get("CUWHEEL_UPDATE_GOLDEN") == "1"

# Hand-written: what each broken seed wheel must be reported for (see checkwheels.broken_seeds).
BROKEN = {
    "linux-x86_64-cu13": {"DC001", "DC002", "MOD001", "RP001", "RP002"},
    "linux-aarch64-cu13": {"DEP001", "DEP003", "TAG001"},
    "linux-aarch64-cu126": {"DC001", "DC002", "DEP002", "TAG004", "TAG005"},
    # (the old DLL also lacks the allocator that the ownership policy names: OWN002)
    "win-amd64-cu13": {"DC001", "DC003", "DC005", "OWN002", "TAG006", "WIN001", "WIN002",
                       "WIN003"},
    "cpu": {"CPU001", "CPU002", "CPU003", "MOD001", "MOD002"},
}
# the Orin library published under +cu130 is judged by the CUDA 13 aarch64 row
ROW_OF = {**{k: k for k in BROKEN}, "linux-aarch64-cu126": "linux-aarch64-cu13"}


def _config(row: str) -> Any:
    return parse_config({"check": cw.CPU_POLICY if row == "cpu" else cw.SEED_POLICY}, "seed")


def _golden(name: str, text: str) -> None:
    path = GOLDEN / name
    if UPDATE:
        path.write_text(text, encoding="utf-8")
    assert path.read_text(encoding="utf-8") == text, f"{name} differs (CUWHEEL_UPDATE_GOLDEN=1)"


def _schema() -> dict[str, Any]:
    text = resources.files("cuwheel").joinpath("data/check.schema.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    return data


def _run(wheel: str, row: str) -> WheelReport:
    cfg = _config(row)
    return check_wheel(wheel, cfg.rows, cfg.check, environ={})


@pytest.mark.parametrize("row", sorted(cw.SEEDS))
def test_seed_row_good_wheel_passes(tmp_path: Path, row: str) -> None:
    report = _run(cw.SEEDS[row]().build(tmp_path), row)
    assert report.row == row
    assert report.passed
    assert report.count(report.fail_on) == 0
    assert not [f for f in report.findings if f.severity.name != "INFO"], report.findings
    assert report.stats.binaries == 2 if row != "cpu" else 1
    _golden(f"good-{row}.txt", to_text([report]))
    data = json.loads(to_json([report]))
    jsonschema.validate(data, _schema())
    _golden(f"good-{row}.json", to_json([report]))


@pytest.mark.parametrize("row", sorted(BROKEN))
def test_seed_row_broken_wheel_fails(tmp_path: Path, row: str) -> None:
    report = _run(cw.broken_seeds()[row].build(tmp_path), row)
    assert report.row == ROW_OF[row]
    assert not report.passed
    assert {f.code for f in report.findings} == BROKEN[row], [f.line() for f in report.findings]
    _golden(f"broken-{row}.txt", to_text([report]))
    data = json.loads(to_json([report]))
    jsonschema.validate(data, _schema())
    _golden(f"broken-{row}.json", to_json([report]))


def test_seed_device_code_evidence(tmp_path: Path) -> None:
    """Per-library container counts for the all-major build (2 containers: stub + TU)."""
    report = _run(cw.broken_seeds()["linux-x86_64-cu13"].build(tmp_path), "linux-x86_64-cu13")
    dc = sorted(f.message for f in report.findings if f.code in ("DC001", "DC002"))
    assert [m.split(" (")[0] for m in dc] == [
        "SASS for sm_110 in 1 of 1 container, not in the row",
        "SASS for sm_75 in 1 of 1 container, not in the row",
        "no SASS for sm_86 in 1 of 1 container",
        "no SASS for sm_89 in 1 of 1 container",
    ]
    assert all(f.library == "pkg/lib/libpkg_cuda.so" for f in report.findings
               if f.code.startswith("DC"))

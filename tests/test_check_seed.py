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
# Hand-written: how many findings of each (severity, code) each broken wheel gets, and its
# verdict line, from how checkwheels.broken_seeds breaks it; asserted on the report itself,
# independently of the golden snapshot.
COUNTS = {
    # all-major build (sm_75 sm_80 sm_90 sm_100 sm_110 sm_120) against the row's sm_80 sm_86
    # sm_89 sm_90 sm_100 sm_120: sm_86 and sm_89 missing, sm_75 and sm_110 extra; three
    # libraries link libcudart with no run path into the wheel's CUDA, one through the build
    # machine's absolute path; _C links CUDA against the no-cuda policy
    "linux-x86_64-cu13": ({("error", "DC001"): 2, ("error", "DC002"): 2, ("error", "RP001"): 3,
                           ("error", "RP002"): 1, ("error", "MOD001"): 1},
                          "FAIL: 9 errors, 0 warnings, 0 info (fails on error)"),
    # one x86_64 library in an aarch64 wheel (TAG001); it links a CUDA 12 runtime no
    # requirement installs (DEP001); the requirement asks for CUDA 12 (DEP003)
    "linux-aarch64-cu13": ({("error", "DEP001"): 1, ("error", "DEP003"): 1,
                            ("error", "TAG001"): 1},
                           "FAIL: 3 errors, 0 warnings, 0 info (fails on error)"),
    # Orin (sm_87) code built by CUDA 12.6 under the CUDA 13 row: the row's three GPUs get no
    # SASS (DC001 x3), sm_87 is not in the row (DC002); Tegra-only cubins in a wheel tagged
    # for every aarch64 machine (TAG005); libcudart.so.12 under a cu130 tag (TAG004); the
    # CUDA 13 requirement installs nothing it uses (DEP002, a warning)
    "linux-aarch64-cu126": ({("error", "DC001"): 3, ("error", "DC002"): 1,
                             ("error", "TAG004"): 1, ("error", "TAG005"): 1,
                             ("warning", "DEP002"): 1},
                            "FAIL: 6 errors, 1 warning, 0 info (fails on error)"),
    # an older DLL: sm_80/86 + compute_86 against a four-GPU row (DC001 x4, DC003: not the
    # row's PTX, DC005: PTX the row does not ask for), imports two CUDA DLLs (WIN001,
    # WIN002), a requirement without its Linux marker (WIN003); cubins in a win_amd64 wheel
    # (TAG006, info) and the allocator the ownership policy names missing (OWN002, warning)
    "win-amd64-cu13": ({("error", "DC001"): 4, ("error", "DC003"): 1, ("error", "WIN001"): 1,
                        ("error", "WIN002"): 1, ("error", "WIN003"): 1, ("info", "TAG006"): 1,
                        ("warning", "DC005"): 1, ("warning", "OWN002"): 1},
                       "FAIL: 8 errors, 2 warnings, 1 info (fails on error)"),
    # the CUDA extension leaked into the CPU wheel: device code (CPU001), CUDA links
    # (CPU002), a CUDA requirement (CPU003), and the two no-cuda module rules
    "cpu": ({("error", "CPU001"): 1, ("error", "CPU002"): 1, ("error", "CPU003"): 1,
             ("error", "MOD001"): 1, ("error", "MOD002"): 1},
            "FAIL: 5 errors, 0 warnings, 0 info (fails on error)"),
}
# Every good wheel passes with nothing to say, except the Windows one: cubins in a win_amd64
# wheel are an info (TAG006).
GOOD_INFO = {"win-amd64-cu13": {("info", "TAG006"): 1}}
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


def _counts(report: WheelReport) -> dict[tuple[str, str], int]:
    out: dict[tuple[str, str], int] = {}
    for f in report.findings:
        key = (f.severity.name.lower(), f.code)
        out[key] = out.get(key, 0) + 1
    return out


def _verdict_line(text: str) -> str:
    (line,) = [ln.strip() for ln in text.splitlines()
               if ln.strip().startswith(("PASS:", "FAIL:"))]
    return line


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
    assert _counts(report) == GOOD_INFO.get(row, {})
    info = sum(GOOD_INFO.get(row, {}).values())
    assert _verdict_line(to_text([report])) == (
        f"PASS: 0 errors, 0 warnings, {info} info (fails on error)"
    )
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
    counts, line = COUNTS[row]
    assert _counts(report) == counts
    assert _verdict_line(to_text([report])) == line
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

"""ExecuTorch's release gate end to end, as its release engineers write it: its rows in a
``cuwheel.toml`` with no extra line (checkwheels.EXECUTORCH_TOML), wheels named as PyPI
requires (no ``+cuXYZ``), built from the committed nvcc fixtures (tests/data/bin, built by
tests/data/build_check.sh), checked with ``cuwheel check`` and no flag but the inputs.

The good wheels pass, each judged by the row its own libraries and platform tag name; each
broken variant fails naming its fault (codes and words written here by hand from how the
variant is broken, never read back from cuwheel).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

import checkwheels as cw
from cuwheel.cli import main

ART = Path(__file__).parent / "data" / "artifacts"
PROGRAM = str(ART / "aoti_cu130.pt2")  # AOTInductor export of CUDA 13.0 on an H200

GOOD: dict[str, tuple[cw.Spec, str]] = {
    "x86_64": (cw.linux_x86_cu13(), "linux-x86_64-cu13"),
    "aarch64": (cw.linux_aarch64_cu13(), "linux-aarch64-cu13"),
    "jetson": (cw.linux_aarch64_cu126(), "jetson-cu126"),
    "cpu": (cw.cpu(), "cpu"),
}

X86 = cw.linux_x86_cu13()
LIB = "pkg/lib/libpkg_cuda.so"
# variant -> (the wheel, the codes that fail it, words the first failing finding says)
BROKEN: dict[str, tuple[cw.Spec, set[str], str]] = {
    "arch missing": (X86.with_member(LIB, cw.fixture("row_x86_no89.so")), {"DC001"},
                     "no SASS for sm_89"),
    "extra arch": (X86.with_member(LIB, cw.fixture("row_x86_plus75.so")), {"DC002"},
                   "SASS for sm_75"),
    "no PTX": (X86.with_member(LIB, cw.fixture("row_x86_noptx.so")), {"DC003"},
               "compute_120"),
    # links libcudart.so.13; nothing installs it
    "runtime requirement missing": (replace(X86, requires=()), {"DEP001"}, "libcudart.so.13"),
    # the CUDA 12 runtime package beside a CUDA 13 library
    "runtime of the wrong major": (
        replace(X86, requires=('nvidia-cuda-runtime-cu12; sys_platform == "linux"',)),
        {"DEP001", "DEP003"}, "libcudart.so.13"),
    # the build machine's toolkit as the run path, none into the wheel's CUDA (RP001 too)
    "build-machine RUNPATH": (
        X86.with_member(LIB, cw.patch(cw.fixture("row_x86_cu13.so"), cw.X86_RPATH,
                                      b"/usr/local/cuda-13.0/lib64")),
        {"RP001", "RP002"}, "/usr/local/cuda-13.0/lib64"),
}


@pytest.fixture
def project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    for var in ("CUWHEEL_ROW", "CUWHEEL_TRAIN", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "cuwheel.toml").write_text(cw.EXECUTORCH_TOML, encoding="utf-8")
    (tmp_path / "dist").mkdir()
    monkeypatch.chdir(tmp_path)
    return tmp_path


def _pypi(spec: cw.Spec, directory: Path, name: str = "executorch") -> str:
    # PyPI forbids local versions: 1.0, never 1.0+cu130
    directory.mkdir(parents=True, exist_ok=True)
    return replace(spec, version="1.0", name=name).build(directory)


def _check(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, dict[str, Any]]:
    code = main(["check", *argv, "-f", "json"])
    return code, json.loads(capsys.readouterr().out)


def test_the_good_wheels_pass_each_on_its_row(project: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    wheels = {k: _pypi(spec, project / "dist" / k) for k, (spec, _) in GOOD.items()}
    code, data = _check(capsys, *wheels.values())
    assert code == 0 and data["passed"], data["unreadable"]
    assert data["config"] == str(project / "cuwheel.toml")
    # in the order given (the x86_64 CUDA wheel and the CPU wheel share a file name)
    assert [w["row"] for w in data["wheels"]] == [row for _, row in GOOD.values()]
    for w in data["wheels"]:
        # judged by the release profile; the row came from the wheel's own evidence
        assert w["profile"] == "release"
        assert w["row_from"].startswith("row chosen by ")
        assert [f["code"] for f in w["findings"] if f["severity"] != "info"] == ["TAG002"]
    # the Windows row covers 13.2 / 13.4 and this DLL's cubins say 13.0: the engineer names
    # the train, and the row judges it
    win = _pypi(cw.win_amd64_cu13(), project / "dist" / "win")
    code, data = _check(capsys, win, "--train", "cu132")
    assert code == 0 and data["wheels"][0]["row"] == "win-amd64-cu13"
    assert main(["check", win]) == 2  # without it, no row matches: exit 2, never an audit
    assert "win-amd64-cu13" in capsys.readouterr().err


def test_a_good_wheel_passes_strict_once_the_rows_say_no_local_version(
    project: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _pypi(X86, project / "dist")
    assert main(["check", wheel, "--strict"]) == 1  # TAG002: no +cuXYZ, a warning
    assert "TAG002" in capsys.readouterr().out
    text = cw.EXECUTORCH_TOML.replace('cuda = "13"\n', 'cuda = "13"\nlocal-version = false\n', 1)
    (project / "cuwheel.toml").write_text(text, encoding="utf-8")
    code, data = _check(capsys, wheel, "--strict")
    assert code == 0 and data["wheels"][0]["findings"] == []


@pytest.mark.parametrize("variant", sorted(BROKEN))
def test_each_broken_variant_fails_naming_its_fault(
    project: Path, capsys: pytest.CaptureFixture[str], variant: str
) -> None:
    spec, codes, words = BROKEN[variant]
    code, data = _check(capsys, _pypi(spec, project / "dist"))
    (w,) = data["wheels"]
    assert code == 1 and not data["passed"]
    assert w["row"] == "linux-x86_64-cu13" and w["profile"] == "release"
    failing = [f for f in w["findings"] if f["severity"] == "error" and f["waived"] is None]
    assert {f["code"] for f in failing} == codes, [(f["code"], f["message"]) for f in failing]
    assert any(words in f["message"] for f in failing), [f["message"] for f in failing]


def test_the_program_gate(project: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The exported program's train is the gate: the cu130 program passes with the cu130
    wheel (its H200-only code and AVX-512 host code are warnings), and fails with the cu134
    wheel, naming both trains."""
    wheel = _pypi(X86, project / "dist")
    code, data = _check(capsys, wheel, "--artifact", PROGRAM)
    assert code == 0
    art = [f for f in data["wheels"][0]["findings"] if f["code"].startswith("ART")]
    assert {(f["code"], f["severity"]) for f in art} == {("ART003", "warning"),
                                                          ("ART004", "warning")}
    # the cu134 build of the same wheel (this fixture's cubins are 13.0's: the job names it)
    code, data = _check(capsys, wheel, "--train", "cu134", "--artifact", PROGRAM)
    (w,) = data["wheels"]
    assert code == 1 and w["train"] == "cu134"
    (f,) = [f for f in w["findings"] if f["severity"] == "error"]
    assert f["code"] == "ART002" and "cu130" in f["message"] and "cu134" in f["message"]

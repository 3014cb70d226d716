"""What a real GPU, driver and loader did, next to what cuwheel doctor answered: the
committed results of tests/probe/doctor_gpu.py on the H200 machine (driver 580.159,
torch 2.11.0+cu130), tests/probe/doctor_gpu.json, with the cuwheel commit that ran.  Each
failure was caused on purpose, run for real, and diagnosed by doctor on the same
environment.  Doctor's answers need that environment (198 installed distributions), so
they are read from the record: re-run the probe after changing doctor's judgement."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from cuwheel.doctor import diagnose_text
from cuwheel.doctor.conventions import conventions
from cuwheel.knowledge.cudaerrors import load_cuda_errors

RESULTS = json.loads((Path(__file__).parent / "probe" / "doctor_gpu.json").read_text())


def _lead(text: str) -> str | None:
    d = diagnose_text(text)
    return d.lead.id if d.lead else None


def _finding(answer: dict[str, Any], name: str, code: str) -> dict[str, Any]:
    for d in answer["not_running"]:
        if d["name"] == name:
            for f in d["findings"]:
                if f["code"] == code:
                    return dict(f)
    raise AssertionError(f"doctor reported no {code} for {name}: {answer['not_running']}")


def test_the_machine() -> None:
    assert RESULTS["gpu"] == "NVIDIA H200" and RESULTS["cc"] == [9, 0]
    assert RESULTS["torch_cuda"] == "13.0" and len(RESULTS["cuwheel_commit"]) == 40


def test_no_kernel_image_is_named() -> None:
    r = RESULTS["nokernel"]
    seen = r["observed"]
    assert seen["name"] == "cudaErrorNoKernelImageForDevice"
    doc = r["doctor_whole_env"]
    # the whole environment was read, and the library built for sm_80 only is named
    assert doc["read"] > 50 and doc["status"] == "does not run"
    f = _finding(doc, "cw-nokernel", "ENV001")
    assert f["error_text"] == seen["text"]
    assert f["library"] == "cw_nokernel/libcw_sm80.so"
    for text in (seen["text"], seen["torch"]):
        assert _lead(text) == "no-kernel-image"


def test_missing_cuda_12_runtime() -> None:
    r = RESULTS["cu12"]
    f = _finding(r["doctor_without"], "cw-cu12", "ENV004")
    assert r["observed_without"]["error"] == f"OSError: {f['error_text']}"
    (cause,) = diagnose_text(r["observed_without"]["error"]).causes
    assert cause.id == "library-missing" and "nvidia-cuda-runtime-cu12" in cause.install
    assert [f.value for f in cause.facts] == ["libcudart.so.12"]


def test_wrong_major_through_ld_library_path() -> None:
    r = RESULTS["cu12"]
    seen = r["observed_with_ld_library_path"]
    assert "error" not in seen and seen["count"] == 1  # it loads and runs on CUDA 12's runtime
    majors = sorted(p.rsplit("/", 1)[-1].split(".so.")[1].split(".")[0] for p in seen["cudart"])
    assert majors == ["12", "13"]  # both runtimes mapped in one process
    f = _finding(r["doctor_with_ld_library_path"], "cw-cu12", "ENV005")
    assert "libcudart.so.12" in f["message"] and "libcudart.so.13" in f["message"]
    assert "LD_LIBRARY_PATH" in f["message"]
    cu12 = next(p for p in seen["cudart"] if ".so.12" in p)
    assert cu12.rsplit("/", 1)[0] in f["message"]


def test_ptx_newer_than_the_driver() -> None:
    r = RESULTS["ptx91"]
    seen = r["observed"]
    assert seen["name"] == "cudaErrorUnsupportedPtxVersion"
    f = _finding(r["doctor"], "cw-ptx91", "ENV003")
    assert f["error_text"] == seen["text"]
    assert _lead(seen["text"]) == "ptx-too-new"


# cudaError values (CUDA Runtime API, enum cudaError) and the known error each string is
EXPECTED = {
    "35": "driver-too-old", "98": "no-kernel-image", "100": "driver-missing",
    "200": "invalid-image", "209": "no-kernel-image", "218": "ptx-jit-failed",
    "221": "ptx-jit-failed", "222": "ptx-too-new", "803": "forward-compat",
    "804": "forward-compat",
}  # fmt: skip


@pytest.mark.parametrize("code", sorted(EXPECTED))
def test_runtime_error_strings_are_known(code: str) -> None:
    name, text = RESULTS["error_strings"][code]
    assert _lead(text) == EXPECTED[code], (name, text)
    # the strings seen on the H200 are data/cuda_errors.toml's (generated from another run)
    e = load_cuda_errors().by_value(int(code), "runtime")
    assert e is not None and (e.name, e.text) == (name, text)
    assert _lead(name) == EXPECTED[code], (name, text)  # the enum name alone


def test_torch_preload_list_is_the_installed_torchs() -> None:
    (pre,) = conventions().preloads
    installed = [tuple(p) for p in RESULTS["torch_preload_list"]]
    # torch's list, then the optional nvToolsExt it preloads apart
    assert installed[: len(pre.libraries) - 1] == list(pre.libraries[:-1])


# The run of 0ac17cf flagged, besides cw-nokernel, five distributions that run on this
# machine: CuPy for its optional cuTENSOR module (cuTENSOR is not installed; CuPy imports the
# module only inside try/except ImportError, cupy/cuda/cutensor.py), cuSPARSELt 0.8.0 (the
# build floor misread a library of mostly Blackwell-only containers), cuBLAS, cuDNN and
# cuSPARSE as "depends on dispatch" (each has sm_90 code that loaded here:
# tests/probe/h200_results.json).  The run of the commit in doctor_gpu.json, with the
# kernel-level judge (doctor reads names where they decide) and data/loaders.toml's
# optional modules, flags none of those as failing.


def test_what_else_the_whole_environment_showed() -> None:
    # 198 distributions read (16 workers).  An earlier run (before 0ac17cf) also flagged
    # torchaudio 2.11 (ENV004 for torch's libc10.so ...), since fixed: a distribution now
    # loads after those that ship what it needs
    # (tests/test_doctor.py::test_a_package_imports_its_dependencies_first).
    doc = RESULTS["nokernel"]["doctor_whole_env"]
    assert doc["read"] == 198
    flagged = {d["name"]: d for d in doc["not_running"]}
    # CuPy runs; its cuTENSOR support is what is missing, a warning naming the feature
    assert sorted(flagged) == ["cupy-cuda13x", "cw-nokernel"]
    cupy = flagged["cupy-cuda13x"]
    assert cupy["status"] == "runs except"
    assert {(f["code"], f["severity"]) for f in cupy["findings"]} == {("ENV010", "warning")}
    assert all("cuTENSOR" in f["message"] for f in cupy["findings"])


def test_only_the_planted_failure_is_flagged() -> None:
    doc = RESULTS["nokernel"]["doctor_whole_env"]
    failing = [d["name"] for d in doc["not_running"] if d["status"] == "does not run"]
    assert failing == ["cw-nokernel"]

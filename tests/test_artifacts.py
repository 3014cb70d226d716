"""Exported programs as artifacts (docs/artifacts.md): the real AOTInductor exports and
Triton caches of tests/data/artifacts (made on an H200 by make_artifacts.py, trimmed by
trim.py), the ExecuTorch reconstruction (make_executorch.py), and the train check of the
seed: the cu134 wheel with the 13.0-exported program fails, the cu130 one passes.

Expected values come from the machine that exported them (meta.json: torch's CUDA, the
ptxas versions, cuobjdump's listing of every cubin), not from cuwheel."""

from __future__ import annotations

import gzip
import json
import re
import shutil
import zipfile
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.checks.artifact import check_artifact
from cuwheel.checks.findings import WheelReport
from cuwheel.cli import main
from cuwheel.config import parse_config
from cuwheel.model.inventory import Source
from cuwheel.read.artifacts.programs import artifact_kind, read_artifact
from cuwheel.read.inspect import inspect
from cuwheel.render.inspect_json import inventory_to_dict
from cuwheel.rules.artifact_train import (
    artifact_train,
    runtime_imported,
    strongest,
    train_evidence,
)

ART = Path(__file__).parent / "data" / "artifacts"
META: dict[str, Any] = json.loads((ART / "meta.json").read_text())


def _release(text: str) -> tuple[int, int]:
    m = re.search(r"release (\d+)\.(\d+)", text)
    assert m, text
    return int(m[1]), int(m[2])


def _cuobjdump_archs() -> dict[str, str]:
    """cubin file name (with its hash folder for the Triton cache) -> the sm cuobjdump
    named it on the export machine."""
    out = {}
    for listing in META["listings"].values():
        for member, text in listing.items():
            m = re.search(r"ELF file\s+1: \S+?\.(sm_\d+[af]?)\.cubin", text)
            if m and member.endswith(".cubin"):
                out["/".join(member.split("/")[-2:])] = m[1]
    return out


def _train(src: Source) -> tuple[int, int | None]:
    t = artifact_train(src)
    assert src.artifact is not None and t is not None
    return t.major, t.minor


def _sass(src: Source) -> set[str]:
    return {e.arch.sass for b in src.binaries for e in b.entries() if e.kind.value == "sass"}


# -- reading ---------------------------------------------------------------------------------
def test_kinds_by_name_and_bytes(tmp_path: Path) -> None:
    assert artifact_kind(str(ART / "aoti_cu130.pt2")) == "aoti-package"
    assert artifact_kind(str(ART / "triton_cache_bundled")) == "triton-cache"
    assert artifact_kind(str(ART / "aoti_cuda_blob.ptd")) == "executorch-data"
    assert artifact_kind(str(ART)) is None  # a directory of artifacts is no Triton cache
    whl = tmp_path / "x.whl"
    shutil.copy(ART / "aoti_cu130.pt2", whl)
    assert artifact_kind(str(whl)) is None  # a wheel stays a wheel


def test_the_cu130_export_is_read_as_the_exporter_recorded() -> None:
    src = read_artifact(str(ART / "aoti_cu130.pt2"))
    assert src.kind == "aoti-package" and not src.problems
    a = src.artifact
    assert a is not None
    # torch 2.11+cu130 and nvcc 13.0 on the export machine
    assert META["torch_cuda"] == "13.0"
    assert _train(src) == _release(META["nvcc"])
    train = artifact_train(src)
    assert train is not None and train.source == "build-path"
    assert "cuda-13.0" in train.where
    # the cubin's own note agrees (the Inductor kernel went through the toolkit's ptxas)
    tk = [e for e in train_evidence(src) if e.source == "cubin-toolkit"]
    assert [(e.major, e.minor) for e in tk] == [_release(META["toolkit_ptxas"])]
    # metadata AOTInductor wrote, as the export machine listed it
    recorded = json.loads(next(v for k, v in META["listings"]["aoti_cu130.pt2"].items()
                               if k.endswith("wrapper_metadata.json")))
    assert a.cpu_isa == tuple(recorded["AOTI_CPU_ISA"].split())
    assert a.meta("AOTI_COMPUTE_CAPABILITY") == (recorded["AOTI_COMPUTE_CAPABILITY"],)
    assert (a.platform, a.machine) == (recorded["AOTI_PLATFORM"], recorded["AOTI_MACHINE"])
    # the wrapper imports the CUDA runtime from the process: cudaMalloc & co, no libcudart
    wrapper = next(b for b in src.binaries if b.path.endswith(".wrapper.so"))
    assert not any("cudart" in n for n in wrapper.needed)
    assert any(u.name == "cudaMalloc" for u in wrapper.undefined)
    assert runtime_imported(src)


def test_every_cubin_has_the_arch_cuobjdump_gave_it() -> None:
    oracle = _cuobjdump_archs()
    assert len(oracle) >= 4
    seen = {}
    for p in ("aoti_cu130.pt2", "triton_cache_bundled", "triton_cache_inductor"):
        for b in read_artifact(str(ART / p)).binaries:
            if b.format == "cubin":
                key = "/".join(b.path.replace("!", "/").split("/")[-2:])
                seen[key] = next(iter(_sass(Source("f", "f", binaries=(b,)))))
    # the ABI v7 sm_90a cubin of Triton's bundled ptxas is among them (e_flags bit 0x800)
    assert "VOE5YQPPXVJAXMUFV4FVJ2MVTJ3NE5BLZZPTQX2NP75IOZCJQJXA/add.cubin" in seen
    for key, arch in oracle.items():
        if key in seen:
            assert seen[key] == arch, key
    assert len(set(oracle) & set(seen)) == 4


def test_the_embedded_kernel_is_found_in_the_wrapper_library() -> None:
    embedded = read_artifact(str(ART / "aoti_embedded.pt2"))
    separate = read_artifact(str(ART / "aoti_cu130.pt2"))
    cubins = [b for b in embedded.binaries if b.format == "cubin"]
    assert len(cubins) == 1 and "wrapper.so@0x" in cubins[0].path
    # the same kernel, exported the other way: same arch, same toolkit
    assert _sass(embedded) == _sass(separate) == {"sm_90a"}
    assert _train(embedded) == _train(separate)
    # the image ends where its section headers end: its size equals the separate cubin's
    sep = next(b for b in separate.binaries if b.format == "cubin")
    assert cubins[0].size == sep.size


def test_triton_caches_name_the_ptxas_that_made_them() -> None:
    bundled = read_artifact(str(ART / "triton_cache_bundled"))
    inductor = read_artifact(str(ART / "triton_cache_inductor"))
    assert bundled.kind == inductor.kind == "triton-cache"
    assert _train(bundled) == _release(META["triton_ptxas_version"])  # Triton's own: 12.8
    assert _train(inductor) == _release(META["toolkit_ptxas"])  # the toolkit's: 13.0
    assert bundled.artifact is not None
    assert set(bundled.artifact.meta("TRITON_TARGET")) == {"cuda:80", "cuda:90"}
    assert bundled.artifact.meta("TRITON_VERSION") == (META["triton"],)


def test_the_multi_arch_export_carries_ptx_and_an_avx2_host() -> None:
    src = read_artifact(str(ART / "aoti_multiarch.pt2"))
    a = src.artifact
    assert a is not None and a.cpu_isa == ("AVX2",)
    assert {e.source for e in train_evidence(src)} >= {"build-path", "cubin-toolkit", "ptx-isa"}
    assert any(b.format == "fatbin" and b.has_device_code for b in src.binaries)


def _pte(tmp_path: Path) -> Path:
    out = tmp_path / "et_cuda.pte"
    out.write_bytes(gzip.decompress((ART / "et_cuda.pte.gz").read_bytes()))
    return out


def test_executorch_program_and_data(tmp_path: Path) -> None:
    pte = _pte(tmp_path)
    assert artifact_kind(str(pte)) == "executorch-program"
    src = read_artifact(str(pte))
    assert not src.problems and src.artifact is not None
    assert src.artifact.meta("ET_DELEGATE") == ("forward:CudaBackend",)
    assert src.artifact.meta("ET_NAMED_DATA") == ("forward_so_blob",)
    # the wrapper library in the program's segment, its kernel inside it
    assert _sass(src) == {"sm_90a"}
    train = artifact_train(src)
    assert train is not None and train.source == "cubin-toolkit"
    assert _train(src) == _release(META["toolkit_ptxas"])
    data = read_artifact(str(ART / "aoti_cuda_blob.ptd"))
    assert data.kind == "executorch-data" and not data.problems
    assert data.artifact is not None
    assert data.artifact.meta("ET_NAMED_DATA") == ("forward_weights_blob",)


@pytest.mark.parametrize("cut", [12, 40, 200, 5000])
def test_a_truncated_program_is_a_problem_not_a_crash(tmp_path: Path, cut: int) -> None:
    pte = _pte(tmp_path)
    short = tmp_path / "short.pte"
    short.write_bytes(pte.read_bytes()[:cut])
    src = read_artifact(str(short))
    assert src.problems


def test_a_hostile_segment_table_is_a_problem(tmp_path: Path) -> None:
    raw = bytearray(_pte(tmp_path).read_bytes())
    # point the segment base past the end of the file (eh00 header, offset 24)
    raw[24:32] = (len(raw) * 4).to_bytes(8, "little")
    bad = tmp_path / "bad.pte"
    bad.write_bytes(bytes(raw))
    src = read_artifact(str(bad))
    assert any("past the end" in p.message for p in src.problems)
    assert not src.binaries


def test_a_truncated_package_is_a_problem(tmp_path: Path) -> None:
    short = tmp_path / "short.pt2"
    short.write_bytes((ART / "aoti_cu130.pt2").read_bytes()[:5000])
    src = read_artifact(str(short))
    assert src.kind == "aoti-package" and src.problems


def test_a_zip_named_pt2_without_aotinductor_members(tmp_path: Path) -> None:
    p = tmp_path / "other.pt2"
    with zipfile.ZipFile(p, "w") as z:
        z.writestr("other/archive_format", "pt2")
    src = read_artifact(str(p))
    assert any("not an AOTInductor package" in x.message for x in src.problems)


def test_inspect_json_of_artifacts_matches_the_schema(tmp_path: Path) -> None:
    schema = json.loads(resources.files("cuwheel").joinpath("data/inspect.schema.json")
                        .read_text("utf-8"))
    inv = inspect([str(ART / "aoti_cu130.pt2"), str(ART / "triton_cache_bundled"),
                   str(_pte(tmp_path))], workers=1)
    doc = json.loads(json.dumps(inventory_to_dict(inv)))
    jsonschema.validate(doc, schema)
    kinds = [s["kind"] for s in doc["sources"]]
    assert kinds == ["aoti-package", "triton-cache", "executorch-program"]
    art = doc["sources"][0]["artifact"]
    assert art["runs_on"] == ["9.0"]
    assert {n["name"] for n in art["isa_beyond_baseline"]} == {"AVX512", "AVX512_VNNI",
                                                               "AMX_TILE"}


def test_cli_inspect_names_the_kind_and_the_evidence(capsys: Any) -> None:
    assert main(["inspect", str(ART / "aoti_cu130.pt2")]) == 0
    out = capsys.readouterr().out
    assert out.startswith("aoti-package ")
    assert "CUDA train 13.0 (decided by build-path" in out
    # the header names the kind, not "wheel" (the path is left out: a checkout is often
    # a directory named cuwheel)
    assert "runs on: CC 9.0" in out and "wheel" not in out.split("\n")[0].replace(str(ART), "")


# -- the check -----------------------------------------------------------------------------
def _wheel(tmp_path: Path, version: str) -> str:
    return replace(cw.linux_x86_cu13(), version=version).build(tmp_path)


def _check(wheel: str, artifact: Path, gpus: str | None = None) -> WheelReport:
    cfg = parse_config({"check": cw.SEED_POLICY}, "seed")
    report = check_wheel(wheel, cfg.rows, cfg.check, environ={}, gpus=gpus)
    return check_artifact(report, read_artifact(str(artifact)), cfg.check)


def _codes(r: WheelReport) -> set[str]:
    return {f.code for f in r.findings if f.code.startswith("ART")}


def test_seed_negative_the_cu134_wheel_with_the_13_0_program(tmp_path: Path) -> None:
    r = _check(_wheel(tmp_path, "1.0+cu134"), ART / "aoti_cu130.pt2", gpus="H100,H200")
    assert not r.passed
    f = next(f for f in r.findings if f.code == "ART002")
    assert "cu134" in f.message and "cu130" in f.message and "build-path" in f.message
    assert "ART001" not in _codes(r)


def test_seed_positive_the_cu130_wheel_with_the_13_0_program(tmp_path: Path) -> None:
    r = _check(_wheel(tmp_path, "1.0+cu130"), ART / "aoti_multiarch.pt2", gpus="H100,H200")
    assert r.passed, [f.line() for f in r.failing]
    assert _codes(r) == {"ART005"}  # AVX2: a warning
    assert any("CUDA 13.0 (build-path" in n for n in r.notes)


def test_the_h200_export_needs_avx512_and_amx(tmp_path: Path) -> None:
    r = _check(_wheel(tmp_path, "1.0+cu130"), ART / "aoti_cu130.pt2", gpus="H100")
    assert _codes(r) == {"ART004"}  # the train matches; the host ISA does not
    f = next(f for f in r.findings if f.code == "ART004")
    assert "AMX_TILE" in f.message and "AVX512" in f.message


def test_another_major_and_claimed_gpus_without_code(tmp_path: Path) -> None:
    wheel = _wheel(tmp_path, "1.0+cu130")
    r = _check(wheel, ART / "triton_cache_bundled", gpus="A100")
    assert _codes(r) == {"ART001"}
    assert "12.8" in next(f.message for f in r.findings if f.code == "ART001")
    # the wheel's own claim (CC 8.0 to 12.0) against the sm_90a-only program
    r = _check(wheel, ART / "aoti_multiarch.pt2")
    missing = next(f.message for f in r.findings if f.code == "ART003")
    assert "CC 8.0" in missing and "9.0," not in missing


def test_a_windows_wheel_with_a_linux_program(tmp_path: Path) -> None:
    wheel = cw.win_amd64_cu13().build(tmp_path)
    r = _check(wheel, ART / "aoti_multiarch.pt2", gpus="H100")
    assert "ART007" in _codes(r)


def test_cli_exit_status(tmp_path: Path, capsys: Any) -> None:
    cu134 = _wheel(tmp_path, "1.0+cu134")
    assert main(["check", cu134, "--gpus", "H100", "--artifact",
                 str(ART / "aoti_cu130.pt2")]) == 1
    assert "ART002" in capsys.readouterr().out
    cu130 = _wheel(tmp_path, "1.0+cu130")
    assert main(["check", cu130, "--gpus", "H100", "--artifact",
                 str(ART / "aoti_multiarch.pt2")]) == 0
    capsys.readouterr()
    assert main(["check", cu130, "--artifact", str(tmp_path / "missing.pt2")]) == 2
    err = capsys.readouterr().err
    assert "missing.pt2" in err and "Traceback" not in err


def test_compat_on_an_artifact(capsys: Any) -> None:
    assert main(["compat", str(ART / "aoti_cu130.pt2"), "--gpu", "H100"]) == 0
    assert "RUNS" in capsys.readouterr().out
    main(["compat", str(ART / "aoti_cu130.pt2"), "--gpu", "A100"])
    assert "DOES NOT RUN" in capsys.readouterr().out


def test_cubins_inside_fatbins_are_not_counted_twice() -> None:
    # an nvcc-built library: its fatbin's uncompressed cubins are container entries, not
    # "embedded" images (cuobjdump lists them once: tests/test_inspect_oracle.py)
    lib = Path(__file__).parent / "data" / "bin" / "align256.so"
    src = read_artifact(str(lib))
    assert src.kind == "library" and len(src.binaries) == 1
    assert src.binaries[0].has_device_code


def test_which_evidence_decides() -> None:
    from cuwheel.model.artifact import TrainEvidence

    def ev(source: str, major: int, minor: int | None) -> TrainEvidence:
        return TrainEvidence(source, major, minor, f"{source} {major}.{minor}")

    # the strongest class decides, even against newer weaker evidence
    f = strongest((ev("cubin-toolkit", 13, 2),
                       ev("build-path", 13, 0)))
    assert f is not None and (f.source, f.minor) == ("build-path", 0)
    # within a class the newest
    f = strongest((ev("cubin-toolkit", 12, 8),
                       ev("cubin-toolkit", 13, 0)))
    assert f is not None and (f.major, f.minor) == (13, 0)
    # a major alone borrows the minor of weaker evidence of that major, and says so
    f = strongest((ev("runtime-link", 12, None),
                       ev("cubin-toolkit", 13, 0),
                       ev("ptx-isa", 12, 4)))
    assert f is not None and (f.major, f.minor) == (12, 4)
    assert "minor from ptx-isa" in f.where
    assert strongest(()) is None


def test_a_program_without_a_train_fails_closed(tmp_path: Path) -> None:
    # a host-only library: nothing names a train (ART006), nothing runs on a GPU (ART003)
    lib = Path(__file__).parent / "data" / "bin" / "hostonly.so"
    r = _check(_wheel(tmp_path, "1.0+cu130"), lib, gpus="H100")
    assert {"ART006", "ART003"} <= _codes(r) and not r.passed


def test_byte_flips_in_a_program_are_problems_never_exceptions(tmp_path: Path) -> None:
    import random

    raw = _pte(tmp_path).read_bytes()
    head = bytearray(raw[:4096])  # the flatbuffer, its header and the start of the segment
    rng = random.Random(21)
    bad = tmp_path / "flip.pte"
    for _ in range(40):
        mutated = bytearray(head)
        for _ in range(rng.randint(1, 8)):
            mutated[rng.randrange(len(mutated))] = rng.randrange(256)
        bad.write_bytes(bytes(mutated) + raw[4096:])
        read_artifact(str(bad))  # raises nothing


def test_an_unreadable_member_is_art008(tmp_path: Path) -> None:
    # the package stored, then bytes of the cubin member changed: its CRC-32 no longer holds
    src = ART / "aoti_cu130.pt2"
    bad = tmp_path / "crc.pt2"
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(bad, "w", zipfile.ZIP_STORED) as zout:
        for info in zin.infolist():
            zout.writestr(info.filename, zin.read(info))
    raw = bytearray(bad.read_bytes())
    at = raw.index(b"\x7fELF\x02\x01", raw.index(b".cubin"))
    raw[at + 4000 : at + 4010] = b"\xff" * 10
    bad.write_bytes(bytes(raw))
    r = _check(_wheel(tmp_path, "1.0+cu130"), bad, gpus="H100")
    assert "ART008" in _codes(r)


def test_every_art_code_has_a_case_here() -> None:
    # the cases above, by the code each asserts (a new ART code needs one)
    from cuwheel.checks.codes import CODES

    here = Path(__file__).read_text()
    for code in (c for c in CODES if c.startswith("ART")):
        assert f'"{code}"' in here, code


def test_a_fifo_is_not_opened_for_its_kind(tmp_path: Path) -> None:
    import os

    fifo = tmp_path / "model.pt2"
    os.mkfifo(fifo)
    assert artifact_kind(str(fifo)) is None  # returns at once: nothing writes to it


def test_the_train_is_the_gate_coverage_and_isa_warn_unless_claimed(tmp_path: Path) -> None:
    """The seed's gate with no flag: the H200 export (SASS sm_90a, AVX-512 + AMX host code)
    beside the cu130 wheel passes with two warnings; beside the cu134 wheel it fails on the
    train alone.  Claiming the GPUs (--gpus) or a CPU level (--cpu-baseline) makes the
    coverage / ISA findings errors."""
    cu130, cu134 = _wheel(tmp_path, "1.0+cu130"), _wheel(tmp_path, "1.0+cu134")
    r = _check(cu130, ART / "aoti_cu130.pt2")
    assert r.passed
    assert {(f.code, str(f.severity)) for f in r.findings if f.code.startswith("ART")} == {
        ("ART003", "warning"), ("ART004", "warning")}
    r = _check(cu134, ART / "aoti_cu130.pt2")
    assert [f.code for f in r.failing] == ["ART002"]
    assert "cu130" in r.failing[0].message and "cu134" in r.failing[0].message
    cfg = parse_config({"check": cw.SEED_POLICY}, "seed")
    report = check_wheel(cu130, cfg.rows, cfg.check, environ={}, gpus="A100")
    art = read_artifact(str(ART / "aoti_cu130.pt2"))
    r = check_artifact(report, art, cfg.check, gpus_claimed=True)
    assert [f.code for f in r.failing] == ["ART003"] and "CC 8.0" in r.failing[0].message
    report = check_wheel(cu130, cfg.rows, cfg.check, environ={}, gpus="H100")
    r = check_artifact(report, art, cfg.check, gpus_claimed=True, cpu_baseline="x86-64-v3")
    assert [f.code for f in r.failing] == ["ART004"]
    assert "x86-64-v3" in r.failing[0].message and "AMX_TILE" in r.failing[0].message
    # AVX2 under an x86-64-v3 claim is inside it: nothing to say
    r = check_artifact(report, read_artifact(str(ART / "aoti_multiarch.pt2")), cfg.check,
                       gpus_claimed=True, cpu_baseline="x86-64-v3")
    assert not [f for f in r.findings if f.code in ("ART004", "ART005")]


def test_cli_artifact_gate_without_flags(tmp_path: Path, capsys: Any) -> None:
    cu130, cu134 = _wheel(tmp_path, "1.0+cu130"), _wheel(tmp_path, "1.0+cu134")
    prog = str(ART / "aoti_cu130.pt2")
    assert main(["check", cu130, "--artifact", prog]) == 0
    assert main(["check", cu134, "--artifact", prog]) == 1
    out = capsys.readouterr().out
    assert "ART002" in out and "cu130" in out and "cu134" in out
    assert main(["check", cu130, "--artifact", prog, "--cpu-baseline", "x86-64-v9"]) == 2
    assert "--cpu-baseline must be one of" in capsys.readouterr().err

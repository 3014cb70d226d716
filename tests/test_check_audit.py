"""Audit mode: check a published wheel with no row.  Each test states the wheel a real
project publishes (a multi-train wheel, a torch extension for Windows, a wheel without a
local version ...) and what its users would hit; expectations are written from the
fixtures' build commands (tests/data/fixtures.toml), never read back from cuwheel."""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path

import pytest

import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.checks.claims import claim_from_archs
from cuwheel.checks.findings import WheelReport
from cuwheel.config import parse_config
from cuwheel.errors import ConfigError


def audit(tmp_path: Path, spec: cw.Spec, **kw: object) -> WheelReport:
    cfg = parse_config({}, "test")
    return check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={}, audit=True,
                       **kw)  # type: ignore[arg-type]


def codes(report: WheelReport) -> set[str]:
    return {f.code for f in report.findings if f.severity.name != "INFO"}


def test_a_published_wheel_without_local_version(tmp_path: Path) -> None:
    """PyPI forbids +cu130: the train comes from the library (it links libcudart.so.13 and
    its cubins were built by CUDA 13.0), and no TAG002 is raised."""
    report = audit(tmp_path, replace(cw.linux_x86_cu13(), version="1.0"))
    assert report.row == "audit" and report.train == "cu130" and report.profile == "audit"
    assert codes(report) == set(), [f.line() for f in report.findings]
    assert any("pkg/lib/libpkg_cuda.so: train cu130" in n for n in report.notes)


def test_one_library_per_train(tmp_path: Path) -> None:
    """bitsandbytes-style: a CUDA 12.6 library (Orin, sm_87, libcudart.so.12) beside a CUDA
    13 one (sm_90 / sm_100 / sm_110, libcudart.so.13) in one aarch64 wheel.  Judged by one
    train, one of them would be TAG004 + TAG005; each by its own, neither is."""
    spec = cw.linux_aarch64_cu13().with_member("pkg/lib/libpkg_cuda126.so",
                                               cw.fixture("row_orin_cu126.so"))
    spec = replace(spec, version="1.0", requires=(
        *spec.requires, 'nvidia-cuda-runtime-cu12==12.6.*; platform_machine == "aarch64"'))
    report = audit(tmp_path, spec)
    assert not {"TAG004", "TAG005"} & codes(report), [f.line() for f in report.findings]
    notes = "\n".join(report.notes)
    assert "libpkg_cuda126.so: train cu126" in notes and "libpkg_cuda.so: train cu130" in notes


def test_a_windows_extension_importing_the_cudart_dll(tmp_path: Path) -> None:
    """A torch extension for Windows imports cudart64_13.dll (torch ships it): a design
    choice the release profile forbids (WIN001), not a failure for users."""
    spec = cw.win_amd64_cu13().with_member("pkg/pkg_cuda.dll", cw.fixture("win_sm80_86.dll"))
    spec = spec.with_member("pkg/cublas64_13.dll", cw.fixture("win_hostonly.dll"))
    report = audit(tmp_path, spec)
    assert "WIN001" not in codes(report), [f.line() for f in report.findings]
    cfg = parse_config({}, "test")
    strict = check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={},
                         row="win-amd64-cu13")
    assert "WIN001" in {f.code for f in strict.findings}


def test_claims_inline(tmp_path: Path) -> None:
    """The x86 library is built for sm_80 ... sm_120 (+ compute_120 PTX): a claim of 7.5
    (T4) is a DC001 and one of 8.9 is not, in any spelling."""
    spec = replace(cw.linux_x86_cu13(), version="1.0")
    for claim in ("7.5;8.9", "75-real;89-real", "-gencode arch=compute_75,code=sm_75 "
                  "-gencode arch=compute_89,code=sm_89"):
        report = audit(tmp_path, spec, claim=claim_from_archs(claim))
        dc001 = [f.message for f in report.findings if f.code == "DC001"]
        assert [m.split(" (")[0] for m in dc001] == ["no kernel image for CC 7.5 Tesla T4"], claim
    report = audit(tmp_path, spec, gpus="T4, L4")
    assert [f.code for f in report.findings if f.code == "DC001"] == ["DC001"]
    report = audit(tmp_path, spec, gpus="all")  # every GPU CUDA 13.0 builds for: 7.5 too
    assert "DC001" in {f.code for f in report.findings}
    with pytest.raises(ConfigError, match="no GPU in the catalog matches"):
        audit(tmp_path, spec, gpus="Voodoo 5")


def _torch_extension(requires: tuple[str, ...]) -> cw.Spec:
    """A torch extension: sm80.so (sm_80 SASS + compute_80 PTX) linking torch's
    libc10_cuda.so, in a CUDA 13 x86_64 wheel."""
    ext = cw.patch(cw.fixture("sm80.so"), b"libstdc++.so.6", b"libc10_cuda.so")
    spec = cw.linux_x86_cu13().with_member("pkg/_C.so", ext)
    return replace(spec, version="1.0", requires=(*spec.requires, *requires))


def test_an_extension_claims_what_its_torch_build_supports(tmp_path: Path) -> None:
    """torch 2.14.1's cu130 build on x86_64 supports CC 7.5 (its TORCH_CUDA_ARCH_LIST starts
    at 7.5: data/torch_archs.toml, checked on the real wheel); an extension built against
    it with sm_80 + compute_80 only has no kernel image on a T4.  Implicit: a warning."""
    report = audit(tmp_path, _torch_extension(("torch==2.14.1+cu130",)))
    dc = [f for f in report.findings if f.code == "DC001" and f.library == "pkg/_C.so"]
    assert len(dc) == 1 and dc[0].severity.name == "WARNING", [f.line() for f in dc]
    assert "7.5" in dc[0].message and "torch 2.14.1+cu130" in dc[0].message
    # unpinned: the library's own code claims sm_80 and, by its PTX, newer GPUs only
    (tmp_path / "loose").mkdir()
    loose = audit(tmp_path / "loose", _torch_extension(("torch>=2.11",)))
    assert not [f for f in loose.findings if f.code == "DC001" and f.library == "pkg/_C.so"]


def test_a_library_built_before_ampere_warns_without_a_row(tmp_path: Path) -> None:
    """faiss-gpu 1.7.2's shape (tests/data/real, trimmed from the published wheel): its
    compute_75 PTX is there for newer GPUs, but its CUDA 10.0 cuBLAS containers have no
    code for them; users report cuBLAS failures on an A100 (faiss#2026)."""
    real = Path(__file__).parent / "data" / "real"
    (wheel,) = real.glob("faiss_gpu-1.7.2-*.whl")
    cfg = parse_config({}, "test")
    report = check_wheel(str(wheel), cfg.rows, cfg.check, environ={}, audit=True)
    (dc,) = [f for f in report.findings if f.code == "DC001"]
    assert dc.severity.name == "WARNING" and "8.0" in dc.message and "10.0" in dc.message
    # an explicit claim of an A100 makes it an error
    strict = check_wheel(str(wheel), cfg.rows, cfg.check, environ={}, audit=True,
                         claim=cw_claim("A100"))
    assert any(f.code == "DC001" and f.severity.name == "ERROR" for f in strict.findings)


def cw_claim(gpus: str):  # type: ignore[no-untyped-def]
    from cuwheel.checks.claims import claim_from_gpus

    return claim_from_gpus(gpus, None)


def test_an_archive_of_objects_for_another_machine_is_data(tmp_path: Path) -> None:
    """A Windows wheel that bundles a compiler ships a `.a` of ELF relocatable objects as
    data (librdc.a: x86_64 ELF objects): nothing loads them, so no TAG001; a loadable ELF
    in the same wheel still gets it."""
    spec = cw.win_amd64_cu13().with_member("pkg/toolchain/lib/librdc.a", cw.fixture("librdc.a"))
    report = audit(tmp_path, spec)
    assert "TAG001" not in codes(report), [f.line() for f in report.findings]
    (tmp_path / "so").mkdir()
    bad = audit(tmp_path / "so", spec.with_member("pkg/k.so", cw.fixture("sm80.so")))
    assert [f.library for f in bad.findings if f.code == "TAG001"] == ["pkg/k.so"]


def test_the_gpu_is_named_as_the_user_typed_it(tmp_path: Path) -> None:
    """`--gpus "RTX 2080"` on a wheel built for sm_80 and newer: the finding names the RTX
    2080, not the catalog's first product of CC 7.5 (a Tesla T4)."""
    report = audit(tmp_path, replace(cw.linux_x86_cu13(), version="1.0"),
                   claim=cw_claim("RTX 2080"))
    (dc,) = [f for f in report.findings if f.code == "DC001"]
    assert "7.5 RTX 2080" in dc.message and "T4" not in dc.message
    assert dc.severity.name == "ERROR"


def test_one_library_per_cuda_version_passes_its_own_gpus() -> None:
    """bitsandbytes 0.50.2 (trimmed from the published x86_64 wheel, tests/data/real): each
    `libbitsandbytes_cudaXYZ.so` claims its own code; none is asked about the sm_60 that only
    its 11.8 - 12.6 siblings carry (the wheel's union used to fail its CUDA 12.8 and 13
    libraries: DC001 errors)."""
    real = Path(__file__).parent / "data" / "real"
    (wheel,) = real.glob("bitsandbytes-0.50.2-*x86_64.whl")
    cfg = parse_config({}, "test")
    report = check_wheel(str(wheel), cfg.rows, cfg.check, environ={}, audit=True)
    assert not [f.line() for f in report.findings if f.code in ("DC001", "DC008", "DC009")]
    # asked about Pascal explicitly, the set runs (11.8 - 12.6); the CUDA 12.8 variant, whose
    # CUDA can build sm_60, is named; the CUDA 13 ones cannot and are not
    p100 = check_wheel(str(wheel), cfg.rows, cfg.check, environ={}, audit=True,
                       claim=cw_claim("P100"))
    assert not [f for f in p100.findings if f.code == "DC001"]
    assert [f.library for f in p100.findings if f.code == "DC009"] == [
        "bitsandbytes/libbitsandbytes_cuda128.so"]


@pytest.mark.parametrize(("name", "major"), [
    ("pkg-cu12", 12), ("pkg_cu118", 11), ("cupy-cuda12x", 12), ("jax-cuda12-plugin", 12),
    ("nvidia-cublas", 13), ("nvidia-cublas-cu12", 12), ("nvidia-nccl-cu13", 13),
    ("torch", None), ("onnxruntime-gpu", None), ("cucumber", None), ("cuda-python", None),
])
def test_named_major(name: str, major: int | None) -> None:
    from cuwheel.rules.trains import named_major

    assert named_major(name) == major


def test_a_name_that_states_another_train(tmp_path: Path) -> None:
    """A project named ...-cu12 whose library links libcudart.so.13 and whose cubins CUDA
    13.0 built: the name states CUDA 12, so the library breaks it (TAG004 for the link,
    TAG005 for the cubins), and audit mode does not tell the user to declare CUDA 13's
    packages (DEP003 instead names the declared CUDA 13 requirement as the other major)."""
    spec = replace(cw.linux_x86_cu13(), version="1.0", name="pkg_cu12")
    report = audit(tmp_path, spec)
    tag004 = [f.message for f in report.findings if f.code == "TAG004"]
    assert tag004 and all("its name pkg-cu12 states CUDA 12" in m for m in tag004), tag004
    assert codes(report) == {"TAG004", "TAG005", "DEP003"}, [f.line() for f in report.findings]
    [tag005] = [f.message for f in report.findings if f.code == "TAG005"]
    assert re.search(r"built by CUDA 13\.0[.0-9]*, not CUDA 12, which its name pkg-cu12 "
                     "states", tag005), tag005
    assert not any(f.code == "DEP001" for f in report.findings)
    assert report.train.startswith("cu12")
    # the same wheel named for its own train: nothing of the kind
    same = audit(tmp_path, replace(cw.linux_x86_cu13(), version="1.0", name="pkg_cu13"))
    assert not {"TAG004", "TAG005"} & codes(same), [f.line() for f in same.findings]

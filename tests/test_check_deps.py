"""Dependencies as pip and the loader see them, on published torch extensions: a torch
requirement whose range admits torch releases of another CUDA major (DEP008), torch's own
libraries linked without requiring torch (DEP009), and torch as the carrier of the CUDA DLLs
on Windows.  The fixtures copy the real wheels' relevant members: their Requires-Dist lines
as published, and gcc-built libraries with the same DT_NEEDED lists
(tests/data/build_deps.sh).  Which torch release carries which CUDA major was read from
torch's own wheels on PyPI (torch/version.py and METADATA; data/packages.toml
[[carrier_build]]): linux-x86_64 CUDA 11 in 1.13.0-2.0.1, 12 in 2.1.0-2.10.0, 13 from
2.11.0; linux-aarch64 CPU-only before 2.11.0; win-amd64 CPU-only in every release."""

from __future__ import annotations

import json
from pathlib import Path

import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.checks.findings import Finding, WheelReport
from cuwheel.config import parse_config

# auto_gptq 0.7.1 and autoawq_kernels 0.0.9 (cp311 manylinux2014_x86_64 and win_amd64)
AUTO_GPTQ_REQUIRES = ("torch >=1.13.0", "safetensors", "transformers >=4.31.0")
LINUX = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"


def audit(tmp_path: Path, spec: cw.Spec) -> WheelReport:
    cfg = parse_config({}, "test")
    return check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={}, audit=True)


def found(report: WheelReport, code: str) -> list[Finding]:
    return [f for f in report.findings if f.code == code]


def torch_ext(requires: tuple[str, ...], fixture: str = "deps_torchext_cu12.so",
              tag: str = LINUX) -> cw.Spec:
    return cw.Spec({"autogptq_cuda_64.cpython-311-x86_64-linux-gnu.so": cw.fixture(fixture)},
                   "0.7.1", tag, requires, name="auto_gptq")


def test_torch_range_admits_cuda_11_and_13(tmp_path: Path) -> None:
    """auto_gptq 0.7.1: a CUDA 12 extension requiring `torch >=1.13.0`.  pip installs the
    newest torch (CUDA 13 since 2.11.0), where libcudart.so.12 is nowhere: an error, with the
    range whose releases carry CUDA 12."""
    report = audit(tmp_path, torch_ext(AUTO_GPTQ_REQUIRES))
    (f,) = found(report, "DEP008")
    assert f.severity.name == "ERROR"
    assert "libcudart.so.12" in f.message
    # its C++ API binds it to the torch releases that export both of its symbols: PyPI's
    # torch wheels (data/torch_abi.toml) stop exporting c10::SmallVectorBase<unsigned>::
    # grow_pod(void*, unsigned long, unsigned long) in 2.4.0 (tests/test_torch_abi.py has
    # the real loader's word on such answers)
    (abi,) = found(report, "DEP011")
    assert abi.severity.name == "ERROR" and "only 1.13.0-2.3.1 define them all" in abi.message
    assert "2.15.0 lacks _ZN3c1015SmallVectorBaseIjE8grow_podEPvmm" in abi.message
    assert "require torch>=1.13,<2.4" in abi.message
    assert not found(report, "DEP010")
    assert "CUDA 11 in 1.13.0-2.0.1" in f.message and "CUDA 13 in 2.11.0-" in f.message
    assert "require torch>=2.1.0,<2.11.0" in f.message
    assert not found(report, "DEP001") and not found(report, "DEP009")


def test_a_range_of_cuda_12_releases_is_satisfiable(tmp_path: Path) -> None:
    report = audit(tmp_path, torch_ext(("torch>=2.1.0,<2.11.0",)))
    assert not found(report, "DEP008"), [f.line() for f in report.findings]


def test_only_older_releases_of_another_major(tmp_path: Path) -> None:
    """A CUDA 13 rebuild requiring torch>=2.0: pip's pick carries CUDA 13, the older
    releases the range admits do not: a warning."""
    report = audit(tmp_path, torch_ext(("torch>=2.0",), "deps_torchext_cu13.so"))
    (f,) = found(report, "DEP008")
    assert f.severity.name == "WARNING" and "require torch>=2.11.0 " in f.message


def xformers(requires: tuple[str, ...], torch: str = "2.10.0+cu128",
             fixture: str = "deps_stableabi_cu12.so") -> cw.Spec:
    """xformers 0.0.35 (py39-none-manylinux_2_28_x86_64): its cpp_lib.json as published
    (the build's torch and CUDA), its _C.so's links (stable ABI only)."""
    record = json.dumps({"version": {"cuda": 1208, "hip": None, "torch": torch,
                                     "python": "3.10.19"},
                         "env": {"TORCH_CUDA_ARCH_LIST": "7.5 8.0+PTX 8.0 9.0a"}})
    return cw.Spec({"xformers/_C.so": cw.fixture(fixture),
                    "xformers/cpp_lib.json": record.encode()}, "0.0.35",
                   "py39-none-manylinux_2_28_x86_64", requires, name="xformers")


def test_xformers_035_records_cu128_and_admits_cuda_13(tmp_path: Path) -> None:
    """xformers 0.0.35: built against torch 2.10.0+cu128 (xformers/cpp_lib.json), links
    libcudart.so.12, requires `torch>=2.10`: every torch from 2.11.0 carries CUDA 13.  Its
    _C.so uses only torch's stable C shim: no release-bound symbol, no DEP010."""
    report = audit(tmp_path, xformers(("torch>=2.10", "numpy")))
    (f,) = found(report, "DEP008")
    assert "CUDA 12 in 2.10.0; CUDA 13 in 2.11.0-" in f.message
    assert "require torch>=2.10.0,<2.11.0" in f.message
    assert "built against 2.10.0+cu128: xformers/cpp_lib.json" in f.message
    assert not found(report, "DEP010"), [x.line() for x in report.findings]


def test_a_requirement_that_excludes_the_recorded_build(tmp_path: Path) -> None:
    report = audit(tmp_path, xformers(("torch>=2.11",)))
    (f,) = found(report, "DEP010")
    assert f.severity.name == "ERROR" and "2.10.0+cu128 (xformers/cpp_lib.json)" in f.message


def test_cxx_api_pinned_to_its_build(tmp_path: Path) -> None:
    """xformers 0.0.33.post2: C++ API, built against 2.9.1+cu128, requires torch==2.9.1:
    nothing to say.  The same under torch>=2.9: the range admits 2.9 ... 2.15."""
    spec = xformers(("torch==2.9.1",), "2.9.1+cu128", "deps_torchext_cu12.so")
    report = audit(tmp_path, spec)
    assert not found(report, "DEP010") and not found(report, "DEP008"), \
        [f.line() for f in report.findings]
    # (the fixture's two C++ API symbols are auto_gptq's: c10::SmallVectorBase<unsigned>::
    # grow_pod is in no torch since 2.4.0, data/torch_abi.toml)
    report = audit(tmp_path, xformers(("torch>=2.9",), "2.9.1+cu128", "deps_torchext_cu12.so"))
    (f,) = found(report, "DEP011")
    assert "none defines them all (they are 1.13.0-2.3.1's)" in f.message
    assert "built against 2.9.1+cu128: xformers/cpp_lib.json" in f.message
    assert not found(report, "DEP010")


def test_a_cpp_lib_json_that_is_no_record(tmp_path: Path) -> None:
    for junk in (b"[" * 100_000, b"\xff\xfe", b'{"version": {"torch": 2}}', b"{}" * 40_000,
                 b'{"version": {"torch": "not a version"}}'):
        spec = xformers(("torch>=2.11",))
        spec = spec.with_member("xformers/cpp_lib.json", junk)
        assert not found(audit(tmp_path, spec), "DEP010"), junk[:10]


def test_aarch64_torch_was_cpu_only_before_2_11(tmp_path: Path) -> None:
    """On linux-aarch64 torch's PyPI wheels carry CUDA only from 2.11.0 (CUDA 13): a CUDA 13
    library requiring torch>=2.5 gets no CUDA from the older releases it admits."""
    spec = cw.linux_aarch64_cu13()
    spec = cw.Spec({"pkg/lib/libpkg_cuda.so": spec.members["pkg/lib/libpkg_cuda.so"]}, "1.0",
                   spec.tag, ("torch>=2.5",))
    (f,) = found(audit(tmp_path, spec), "DEP008")
    assert f.severity.name == "WARNING"
    assert "CPU-only in 2.5.0-2.10.0" in f.message and "require torch>=2.11.0" in f.message


def test_windows_torch_carries_the_cuda_dlls(tmp_path: Path) -> None:
    """auto_gptq 0.7.1 win_amd64 imports cublas64_12.dll and cudart64_12.dll, which torch's
    CUDA builds ship in torch/lib: requiring torch, that is no WIN002.  But every torch that
    PyPI has for Windows is CPU-only: a warning that the CUDA build must come from
    PyTorch's own index.  (win_sm80_86.dll imports the CUDA 13 pair.)"""
    dll = cw.fixture("win_sm80_86.dll")
    spec = cw.Spec({"pkg/pkg_cuda.dll": dll}, "1.0", "cp311-cp311-win_amd64",
                   AUTO_GPTQ_REQUIRES)
    report = audit(tmp_path, spec)
    assert not found(report, "WIN002"), [f.line() for f in report.findings]
    (f,) = found(report, "DEP008")
    assert f.severity.name == "WARNING" and "CPU-only on PyPI for win-amd64" in f.message
    bare = audit(tmp_path, cw.Spec({"pkg/pkg_cuda.dll": dll}, "1.0", "cp311-cp311-win_amd64"))
    assert found(bare, "WIN002") and not found(bare, "DEP008")


def test_torchao_links_torch_without_requiring_it(tmp_path: Path) -> None:
    """torchao 0.9.0 (cp39-abi3 manylinux): torchao/_C.abi3.so links libc10.so,
    libtorch*.so and libcudart.so.12, and its METADATA requires torch under no condition:
    DEP009, and DEP001 says torch is what carries libcudart."""
    spec = cw.Spec({"torchao/_C.abi3.so": cw.fixture("deps_torchext_cu12.so")}, "0.9.0",
                   "cp39-abi3-manylinux_2_17_x86_64.manylinux2014_x86_64",
                   ('pytest==7.4.0; extra == "dev"',), name="torchao")
    report = audit(tmp_path, spec)
    (f,) = found(report, "DEP009")
    assert "libc10.so, libtorch_cpu.so, libtorch_python.so, libc10_cuda.so" in f.message
    (dep,) = found(report, "DEP001")
    assert "require torch" in dep.message
    fixed = audit(tmp_path, cw.Spec(spec.members, "0.9.0", spec.tag, ("torch>=2.1,<2.11",),
                                    name="torchao"))
    assert not found(fixed, "DEP009") and not found(fixed, "DEP001")


def test_a_soname_major_alone_names_no_release(tmp_path: Path) -> None:
    """hostcudart.so links libcudart.so.13 and holds no device code: CUDA 13 is all it
    says, so its train is "CUDA 13 (release unknown)", not the newest 13.x; a pin of the
    wheel's requirements names the release; the host-only module beside it (no device
    code, no CUDA library) gets no train at all, even with the pin."""
    members = {"pkg/_cuda.so": cw.fixture("hostcudart.so"),
               "pkg/_C.so": cw.fixture("hostonly.so")}
    spec = cw.Spec(members, "1.0", "cp311-cp311-manylinux_2_28_x86_64", ("torch>=2.11",))
    notes = audit(tmp_path, spec).notes
    assert "pkg/_cuda.so: train CUDA 13 (release unknown) (links libcudart.so.13 (release "\
           "unknown))" in notes, notes
    assert not any(n.startswith("pkg/_C.so") for n in notes), notes
    pinned = cw.Spec(members, "1.0", spec.tag, ("cuda-toolkit[cudart]==13.0.3",))
    notes = audit(tmp_path, pinned).notes
    assert any(n.startswith("pkg/_cuda.so: train cu130 (links libcudart.so.13, cuda-toolkit")
               for n in notes), notes
    assert not any(n.startswith("pkg/_C.so") for n in notes), notes


def test_a_windows_extension_importing_torch_without_requiring_it(tmp_path: Path) -> None:
    """win_sm80_86.dll with its cudart64_13.dll import renamed to c10.dll (in place, as
    checkwheels.patch does): a torch extension's imports of cuBLAS and torch's c10.dll.
    Without a torch requirement: DEP009 for c10.dll, and WIN002 for cuBLAS says that torch
    is what would carry it; requiring torch answers both."""
    dll = cw.patch(cw.fixture("win_sm80_86.dll"), b"cudart64_13.dll", b"c10.dll")
    bare = cw.Spec({"pkg/pkg_cuda.dll": dll}, "1.0", "cp311-cp311-win_amd64")
    report = audit(tmp_path, bare)
    (f,) = found(report, "DEP009")
    assert "c10.dll" in f.message
    (w,) = found(report, "WIN002")
    assert "cublas64_13.dll" in w.message and "require torch" in w.message
    report = audit(tmp_path, cw.Spec(bare.members, "1.0", bare.tag, ("torch>=2.11",)))
    assert not found(report, "DEP009") and not found(report, "WIN002"), \
        [x.line() for x in report.findings]


def test_one_library_per_cuda_major(tmp_path: Path) -> None:
    """bitsandbytes 0.50.2 (py3-none-manylinux_2_24_aarch64, Requires-Dist `torch<3,>=2.4`)
    ships a library per CUDA version and loads the one of the installed torch's CUDA: on
    aarch64 every torch it admits is CPU-only (2.4-2.10) or CUDA 13 (2.11-), and its CUDA 13
    library serves the latter.  Here the Orin library (libcudart.so.12) beside the aarch64
    CUDA 13 one: nothing to say.  The CUDA 12 library alone: pip's torch cannot load it."""
    arm = cw.linux_aarch64_cu13()
    members = {"bitsandbytes/libbitsandbytes_cuda126.so": cw.fixture("row_orin_cu126.so"),
               "bitsandbytes/libbitsandbytes_cuda130.so": arm.members["pkg/lib/libpkg_cuda.so"]}
    spec = cw.Spec(members, "0.50.2", "py3-none-manylinux_2_24_aarch64", ("torch<3,>=2.4",),
                   name="bitsandbytes")
    report = audit(tmp_path, spec)
    assert not found(report, "DEP008"), [f.line() for f in report.findings]
    alone = spec.without("bitsandbytes/libbitsandbytes_cuda130.so")
    (f,) = found(audit(tmp_path, alone), "DEP008")
    assert f.severity.name == "ERROR" and "no torch release it admits carries CUDA 12" in f.message


def test_a_record_that_is_no_version(tmp_path: Path) -> None:
    """A cpp_lib.json whose torch is no version names no build: the symbols' judgment
    (DEP011) stands without it."""
    spec = xformers(("torch>=2.9",), "not a version", "deps_torchext_cu12.so")
    report = audit(tmp_path, spec)
    (f,) = found(report, "DEP011")
    assert "built against" not in f.message and not found(report, "DEP010")


def test_a_runtime_the_wheel_ships_needs_no_carrier(tmp_path: Path) -> None:
    """The same extension with its own libcudart.so.12 in the wheel: the wheel carries the
    runtime, so which CUDA major pip's torch carries is no DEP008 (whether the loader
    reaches the copy is RP001's question)."""
    spec = torch_ext(AUTO_GPTQ_REQUIRES)
    spec = spec.with_member("libcudart.so.12", cw.fixture("hostonly.so"))
    report = audit(tmp_path, spec)
    assert not found(report, "DEP008"), [f.line() for f in report.findings]


def test_nvidias_runtime_wheel_is_its_own_release(tmp_path: Path) -> None:
    """A soname is not a release: NVIDIA's nvidia-cuda-runtime 13.0.96 (CUDA 13.0 Update 2,
    the CUDA 13.0 release notes' component table) ships libcudart.so.13, which names only
    the major; before, the audit judged it as the newest 13.x (cu135). Its own version is
    the release; the same library in another project's wheel stays release-unknown."""
    members = {"nvidia/cu13/lib/libcudart_user.so": cw.fixture("hostcudart.so")}
    spec = cw.Spec(members, "13.0.96", "py3-none-manylinux_2_28_x86_64", (),
                   name="nvidia_cuda_runtime")
    report = audit(tmp_path, spec)
    assert any(n.endswith("train cu130 (links libcudart.so.13, "
                          "nvidia-cuda-runtime==13.0.96)") for n in report.notes), report.notes
    assert not any("cu135" in n for n in report.notes), report.notes
    other = cw.Spec(members, "13.0.96", spec.tag, (), name="somepkg")
    assert any("CUDA 13 (release unknown)" in n for n in audit(tmp_path, other).notes)

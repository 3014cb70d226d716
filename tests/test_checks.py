"""Every check code: a good wheel passes it, a wheel broken in exactly that way fails with it.

Expected code sets are written by hand from what each variant changes (see checkwheels.py);
none is read back from cuwheel.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

import checkwheels as cw
from cuwheel.checks import CODES, Severity, check_wheel
from cuwheel.checks.findings import WheelReport
from cuwheel.config import parse_config

# The seed's release rules (exact arch lists): the rows of the seed project's own wheels.
X86_ROW: dict[str, Any] = {
    "name": "x86", "platform": "linux-x86_64", "cuda": "13", "profile": "release",
    "sass": ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], "ptx": "newest",
}  # fmt: skip
ARM_ROW: dict[str, Any] = {
    "name": "arm", "platform": "linux-aarch64", "cuda": "13", "profile": "release",
    "sass": ["sm_90", "sm_100", "sm_110"], "ptx": "none",
}  # fmt: skip
WIN_ROW: dict[str, Any] = {
    "name": "win", "platform": "win-amd64", "cuda": "13", "dependencies": "none",
    "profile": "release",
    "sass": ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"], "ptx": "newest",
}  # fmt: skip
ORIN_ROW: dict[str, Any] = {
    "name": "orin", "platform": "linux-aarch64", "cuda": "12.6", "sass": ["sm_87"], "ptx": "none",
    "profile": "release",
}  # fmt: skip
CPU_ROW: dict[str, Any] = {"name": "cpu", "cuda": "cpu", "profile": "release"}


def run(tmp_path: Any, spec: cw.Spec, policy: dict[str, Any] | None = None,
        rows: list[dict[str, Any]] | None = None, **selection: str) -> WheelReport:
    table: dict[str, Any] = {"check": policy or {}}
    if rows is not None:
        table["rows"] = [*rows, CPU_ROW]
        table["trains"] = []
    config = parse_config(table, "test")
    return check_wheel(spec.build(tmp_path), config.rows, config.check, environ={}, **selection)


def codes(report: WheelReport, keep: str = "") -> set[str]:
    """Codes of the unwaived findings; info findings only for ``keep``."""
    return {
        f.code for f in report.findings
        if f.waived is None and (f.severity > Severity.INFO or f.code == keep)
    }  # fmt: skip


def rp(spec: cw.Spec, new: bytes) -> cw.Spec:
    lib = cw.patch(cw.fixture("row_x86_cu13.so"), cw.X86_RPATH, new)
    return spec.with_member("pkg/lib/libpkg_cuda.so", lib)


X86 = cw.linux_x86_cu13()
ARM = cw.linux_aarch64_cu13()
WIN = cw.win_amd64_cu13()
ORIN = cw.linux_aarch64_cu126()
CPU = cw.cpu()
ORIN_AS_13 = cw.patch(
    cw.patch(cw.fixture("row_orin_cu126.so"), b"libcudart.so.12", b"libcudart.so.13"),
    cw.ORIN_RPATH, cw.X86_RPATH,
)
HOSTCUDART_12 = cw.patch(cw.fixture("hostcudart.so"), b"libcudart.so.13", b"libcudart.so.12")

# code -> (good spec, broken spec, policy, rows, selection, exact codes of the broken wheel)
CASES: dict[str, tuple[cw.Spec, cw.Spec, dict[str, Any], list[dict[str, Any]] | None,
                       dict[str, str], set[str]]] = {
    "IN001": (X86, replace(X86, members={"pkg/__init__.py": b""}, requires=()), {}, None, {},
              {"IN001", "DC004"}),
    "IN002": (X86, X86.with_member("pkg/lib/libbad.so", cw.fixture("sm80.so")[:200]), {}, None,
              {}, {"IN002"}),
    # the row claims sm_75 too; the library was built without it
    "DC001": (X86, X86, {}, [{**X86_ROW, "sass": ["sm_75", *X86_ROW["sass"]]}], {}, {"DC001"}),
    # the row drops sm_89; the library still has it
    "DC002": (X86, X86, {}, [{**X86_ROW, "sass": ["sm_80", "sm_86", "sm_90", "sm_100",
                                                  "sm_120"]}], {}, {"DC002"}),
    # the aarch64 library has no PTX; this row wants PTX of its newest arch
    "DC003": (ARM, ARM, {}, [{**ARM_ROW, "ptx": "newest"}], {}, {"DC003"}),
    "DC004": (X86, replace(X86.with_member("pkg/lib/libpkg_cuda.so", cw.fixture("hostonly.so")),
                           requires=()), {}, None, {}, {"DC004"}),
    # arm64_sm90.so carries sm_90 + compute_90; the row lists no PTX
    "DC005": (ARM, replace(ARM.with_member("pkg/lib/libpkg_cuda.so", cw.fixture("arm64_sm90.so")),
                           requires=()), {},
              [{**ARM_ROW, "sass": ["sm_90"]}], {}, {"DC005"}),
    # audit profile: a module of sm_100f code only beside the library the row claims for
    # (sm100f.so links libcudart.so.13 and has no run path: RP001 too)
    "DC006": (X86, X86.with_member("pkg/_C_sm100.so", cw.fixture("sm100f.so")), {},
              [{**X86_ROW, "profile": "audit"}], {}, {"DC006", "RP001"}),
    # audit profile: arm64_sm90.so (sm_90 + compute_90) on a claimed 10.0 runs by JIT only
    "DC007": (ARM,
              replace(ARM.with_member("pkg/lib/libpkg_cuda.so", cw.fixture("arm64_sm90.so")),
                      requires=()), {},
              [{**ARM_ROW, "sass": ["sm_90", "sm_100"], "profile": "audit"}], {}, {"DC007"}),
    # audit profile: two_tu.so's TU1 (sm_80 / sm_86) has nothing for the claimed 9.0 while
    # TU2 (sm_90 ...) does, from a toolkit that knew 9.0: runs only if it dispatches
    "DC008": (X86, X86.with_member("pkg/_C_two.so", cw.fixture("two_tu.so")), {},
              [{**X86_ROW, "sass": ["sm_80", "sm_90"], "ptx": "none", "profile": "audit"}], {},
              {"DC008", "RP001"}),
    # one library per CUDA version: the 12.8 variant (sm_80 only, no PTX) lacks 9.0, which
    # CUDA 12.8 builds; the 13.0 variant (all-major) runs there
    "DC009": (X86, X86.with_member("pkg/lib/libk_cuda128.so", cw.fixture("sm80only.so"))
              .with_member("pkg/lib/libk_cuda130.so", cw.fixture("allmajor.so")), {},
              [{**X86_ROW, "sass": ["sm_80", "sm_90"], "ptx": "none", "profile": "audit"}], {},
              {"DC009", "DC003", "RP001"}),
    "CPU001": (CPU, CPU.with_member("pkg/k.fatbin", cw.fixture("k86.fatbin")), {}, None, {},
               {"CPU001"}),
    "CPU002": (CPU, CPU.with_member("pkg/_C.so", cw.fixture("hostcudart.so")), {}, None, {},
               {"CPU002"}),
    "CPU003": (CPU, replace(CPU, requires=("cuda-toolkit[cudart]==13.*",)), {}, None, {},
               {"CPU003"}),
    "DEP001": (X86, replace(X86, requires=()), {}, None, {}, {"DEP001"}),
    "DEP002": (X86, replace(X86, requires=("cuda-toolkit[cudart,cublas]==13.*",)), {}, None, {},
               {"DEP002"}),
    "DEP003": (X86, replace(X86, requires=(*X86.requires, "nvidia-cuda-runtime-cu12")), {},
               None, {}, {"DEP003"}),
    "DEP004": (X86, replace(X86, requires=("cuda-toolkit[cudart]",)), {}, None, {}, {"DEP004"}),
    # a Linux row that declares nothing: the requirement is wrong, libcudart is not shipped
    # (the bundled stand-in libcudart sits next to the library, found through $ORIGIN)
    # libcudart comes only with the extra "cuda": the library fails to load without it
    "DEP006": (X86, replace(X86, requires=(
        'cuda-toolkit[cudart]==13.*; sys_platform == "linux" and extra == "cuda"',)), {},
               None, {}, {"DEP006"}),
    "DEP005": (replace(rp(X86, b"$ORIGIN").with_member("pkg/lib/libcudart.so.13",
                                                        cw.fixture("hostonly.so")), requires=()),
               X86, {}, [{**X86_ROW, "dependencies": "none"}], {}, {"DEP005"}),
    "RP001": (X86, rp(X86, b"$ORIGIN/../nvidia/cu13/lib"), {}, None, {}, {"RP001"}),
    "RP002": (X86, rp(X86, b"/usr/local/cuda-13.0/lib64"), {}, None, {}, {"RP001", "RP002"}),
    "RP003": (X86, rp(X86, b"lib"), {}, None, {}, {"RP001", "RP003"}),
    "DRV001": (X86, X86.with_member("pkg/lib/libcuda.so.1", cw.fixture("hostonly.so")), {},
               None, {}, {"DRV001"}),
    "DRV002": (X86, replace(X86, requires=("cuda-toolkit[cudart,nvml]==13.*",)), {}, None, {},
               {"DRV002"}),
    # an auditwheel-grafted driver (renamed) and a plugin that NEEDs it
    "DRV004": (X86, X86.with_member("pkg/lib/libcuda-3e1a2b4c.so.580.65.06",
                                    cw.fixture("grafted_libcuda.so"))
               .with_member("pkg/lib/plugin.so", cw.fixture("needs_grafted_cuda.so")), {},
               None, {}, {"DRV001", "DRV004"}),
    "DRV003": (X86, rp(X86, b"$ORIGIN/stubs"), {}, None, {}, {"DRV003", "RP001"}),
    # win_sm80_86.dll: sm_80/86 + compute_86, imports cudart64_13 and cublas64_13 (shipped here)
    "WIN001": (WIN, WIN.with_member("pkg/pkg_cuda.dll", cw.fixture("win_sm80_86.dll"))
               .with_member("pkg/cublas64_13.dll", cw.fixture("win_hostonly.dll")), {},
               [{**WIN_ROW, "sass": ["sm_80", "sm_86"], "ptx": ["compute_86"]}],
               {}, {"WIN001"}),
    "WIN002": (WIN, WIN.with_member("pkg/pkg_cuda.dll", cw.fixture("win_sm80_86.dll")), {},
               [{**WIN_ROW, "sass": ["sm_80", "sm_86"], "ptx": ["compute_86"]}],
               {}, {"WIN001", "WIN002"}),
    "WIN003": (WIN, replace(WIN, requires=("nvidia-cuda-runtime",)), {}, [WIN_ROW], {},
               {"WIN003"}),
    "MOD001": (X86, X86.with_member("pkg/_C.so", cw.fixture("hostcudart.so")),
               {"no-cuda": ["pkg/_C*"]}, None, {}, {"MOD001", "RP001"}),
    "MOD002": (X86, X86.with_member("pkg/_C.so", cw.fixture("row_x86_cu13.so")),
               {"no-cuda": ["pkg/_C*"]}, None, {}, {"MOD001", "MOD002", "RP001"}),
    "MOD003": (X86, X86, {"no-cuda": ["pkg/_D*"]}, None, {}, {"MOD003"}),
    "OWN001": (X86, X86.with_member("pkg/lib/libpkg_more.so", cw.fixture("row_x86_cu13.so")),
               {"owned-symbols": ["cw_cuda_*"]}, None, {}, {"OWN001"}),
    "OWN002": (X86, X86, {"owned-symbols": ["cw_stream_*"]}, None, {}, {"OWN002"}),
    "TAG001": (X86, X86.with_member("pkg/_arm.so", cw.fixture("row_arm_hostonly.so")), {}, None,
               {}, {"TAG001"}),
    "TAG002": (X86, replace(X86, version="1.0"), {}, None, {"train": "cu130"}, {"TAG002"}),
    "TAG003": (X86, replace(X86, version="1.0+cu132"), {}, None, {"train": "cu130"}, {"TAG003"}),
    "TAG004": (X86, X86.with_member("pkg/_old.so", HOSTCUDART_12), {}, None, {}, {"TAG004"}),
    # the Orin library, relinked for CUDA 13 names: its cubin still says 12.6
    "TAG005": (ARM, ARM.with_member("pkg/lib/libpkg_cuda.so", ORIN_AS_13), {},
               [{**ARM_ROW, "sass": ["sm_87"]}], {}, {"TAG005"}),
    # built by 13.0, published as cu132 (info: same major, loads on the train's driver)
    "TAG006": (X86, replace(X86, version="1.0+cu132"), {}, None, {}, {"TAG006"}),
    # PTX ISA 9.0 (nvcc 13.0) in a CUDA 12.6 wheel: a 12.6 driver cannot JIT it
    # (a raw .ptx file is device code of its own: no sm_87 SASS, PTX the row does not list)
    "TAG007": (ORIN, ORIN.with_member("pkg/k89.ptx", cw.fixture("k89.ptx")), {}, None, {},
               {"TAG007", "DC001", "DC005"}),
}


# A torch extension (auto_gptq 0.7.1's NEEDED list, tests/data/build_deps.sh) relinked for
# CUDA 13: torch>=2.11 admits only releases whose PyPI wheels carry CUDA 13 (torch's own
# METADATA, packages.toml [[carrier_build]]); torch==2.10.* (CUDA 12) does not carry
# libcudart.so.13.
TORCH_EXT = X86.with_member("pkg/_ext.so", cw.fixture("deps_torchext_cu13.so"))
# (torch loads libcudart.so.13 before any extension: no run path needed, no other requirement)
# Its c10:: symbols bind it to one torch minor release: the good wheels pin 2.11.*.
TORCH_211 = replace(TORCH_EXT, requires=("torch==2.11.*",))
CPP_LIB_211 = b'{"version": {"torch": "2.11.0+cu130"}}'
# win_hostonly.dll imports GetTickCount from KERNEL32.dll: the same with that DLL named
# c10_cuda.dll (torch's, and a name no PyPI torch for Windows ships)
TORCH_CUDA_PYD = cw.patch(cw.fixture("win_hostonly.dll"), b"KERNEL32.dll", b"c10_cuda.dll")
CASES.update({
    # (its C++ API symbols are 2.11.0's: 2.10 lacks one, DEP011)
    "DEP008": (TORCH_211, replace(TORCH_EXT, requires=("torch==2.10.*",)), {}, None, {},
               {"DEP008", "DEP011"}),
    # the same extension requiring only cuda-toolkit: libc10.so & co. load from nowhere, and
    # its libcudart.so.13 now needs a run path into nvidia/cu13/lib
    "DEP009": (TORCH_211, TORCH_EXT, {}, None, {}, {"DEP009", "RP001"}),
    # the wheel records the torch it was built against (xformers' cpp_lib.json), and its
    # requirement excludes it
    "DEP010": (TORCH_211.with_member("pkg/cpp_lib.json", CPP_LIB_211),
               replace(TORCH_EXT, requires=("torch==2.10.*",)).with_member(
                   "pkg/cpp_lib.json", CPP_LIB_211), {}, None, {}, {"DEP010", "DEP008", "DEP011"}),
    # torch>=2.11 admits 2.11 ... 2.15, all CUDA 13 on linux-x86_64, but only 2.11.0 exports
    # both of its C++ API symbols (data/torch_abi.toml)
    "DEP011": (TORCH_211, replace(TORCH_EXT, requires=("torch>=2.11",)), {}, None, {},
               {"DEP011"}),
    # Windows: a module importing from torch_cuda.dll (its cuBLAS import renamed), requiring
    # torch, whose PyPI builds for Windows are all CPU-only
    "DEP012": (WIN, replace(WIN.with_member("pkg/_torch.pyd", TORCH_CUDA_PYD),
                            requires=(*WIN.requires, "torch>=2.1")), {}, None, {}, {"DEP012"}),
})

# A library built against nvJitLink 13.1 (__nvJitLinkAddData_13_1, build_nvsyms.sh): a bare
# nvidia-nvjitlink admits 13.0, whose wheels do not export it (data/nvidia_symbols.toml)
JITLINK_USER = X86.with_member("pkg/lib/libpkg_jit.so", cw.fixture("nvsym_user13.so"))
CASES["DEP013"] = (
    replace(JITLINK_USER, requires=(*X86.requires, "nvidia-nvjitlink>=13.1")),
    replace(JITLINK_USER, requires=(*X86.requires, "nvidia-nvjitlink")), {}, None, {},
    {"DEP013"},
)


# The platform-tag checks (TAG008-TAG013): the tag_* fixtures (tests/data/build_tags.sh).
MANYLINUX1 = "cp311-cp311-manylinux1_x86_64"
ABI3_39 = "cp39-abi3-manylinux_2_28_x86_64"
CASES.update({
    # memcpy@GLIBC_2.14 in a manylinux1 (glibc 2.5) wheel; the .symver build binds 2.2.5
    "TAG008": (replace(X86.with_member("pkg/lib/libcopy.so", cw.fixture("tag_memcpy225.so")),
                       tag=MANYLINUX1),
               replace(X86.with_member("pkg/lib/libcopy.so", cw.fixture("tag_memcpy214.so")),
                       tag=MANYLINUX1), {}, None, {}, {"TAG008"}),
    # shm_open unversioned without librt.so.1 (linked against glibc < 2.34 without -lrt) in
    # a manylinux2014 wheel; the good one was linked with -lrt
    "TAG009": (replace(X86.with_member("pkg/lib/libshm.so", cw.fixture("tag_rt.so")),
                       tag="cp311-cp311-manylinux2014_x86_64"),
               replace(X86.with_member("pkg/lib/libshm.so", cw.fixture("tag_noshm.so")),
                       tag="cp311-cp311-manylinux2014_x86_64"), {}, None, {}, {"TAG009"}),
    # renamed from linux_x86_64 without retagging
    "TAG010": (X86, replace(X86, wheel_tags=("cp311-cp311-linux_x86_64",)), {}, None, {},
               {"TAG010"}),
    # a module named for CPython 3.9 in a cp39-abi3 wheel
    "TAG011": (replace(X86.with_member("pkg/_m.abi3.so", cw.fixture("hostonly.so")), tag=ABI3_39),
               replace(X86.with_member("pkg/_m.cpython-39-x86_64-linux-gnu.so",
                                       cw.fixture("hostonly.so")), tag=ABI3_39),
               {}, None, {}, {"TAG011"}),
    # a 3.10 limited-API module (PyModule_AddType) tagged cp38-abi3
    "TAG012": (replace(X86.with_member("pkg/abi3_310.abi3.so", cw.fixture("tag_abi3_310.so")),
                       tag="cp310-abi3-manylinux_2_28_x86_64"),
               replace(X86.with_member("pkg/abi3_310.abi3.so", cw.fixture("tag_abi3_310.so")),
                       tag="cp38-abi3-manylinux_2_28_x86_64"), {}, None, {}, {"TAG012"}),
    # PyCode_NewEmpty (outside the stable ABI) in an abi3 module
    "TAG013": (replace(X86.with_member("pkg/abi3_310.abi3.so", cw.fixture("tag_abi3_310.so")),
                       tag="cp310-abi3-manylinux_2_28_x86_64"),
               replace(X86.with_member("pkg/nonlimited.abi3.so", cw.fixture("tag_nonlimited.so")),
                       tag="cp310-abi3-manylinux_2_28_x86_64"), {}, None, {}, {"TAG013"}),
})


# The good wheels of the policy checks, under a policy that they meet.
GOOD_POLICY = {"MOD003": {"no-cuda": ["pkg/_C*"]}, "OWN002": {"owned-symbols": ["cw_cuda_*"]}}


def test_every_code_has_a_case() -> None:
    # DEP007 needs a package index: tests/test_check_index.py serves one; the ART codes
    # judge an exported program beside the wheel (tests/test_artifacts.py has their cases);
    # the ENV codes are cuwheel doctor's (tests/test_doctor.py), the VAR codes cuwheel
    # variant's (tests/test_variant.py), never check's
    others = {c for c in CODES if c.startswith(("ART", "ENV", "VAR"))}
    assert set(CASES) | {"DEP007"} | others == set(CODES)


@pytest.mark.parametrize("code", sorted(CASES))
def test_good_wheel_passes(tmp_path: Any, code: str) -> None:
    good, _bad, policy, rows, sel, _exact = CASES[code]
    # the good wheel meets the seed rows; only DEP005's needs its row (dependencies = none)
    report = run(tmp_path, good, GOOD_POLICY.get(code, policy),
                 rows if code == "DEP005" else None, **sel)
    assert code not in codes(report, code), report.findings
    assert report.passed, report.findings


@pytest.mark.parametrize("code", sorted(CASES))
def test_broken_wheel_fails_with_its_code(tmp_path: Any, code: str) -> None:
    _good, bad, policy, rows, sel, exact = CASES[code]
    report = run(tmp_path, bad, policy, rows, **sel)
    assert codes(report, code) == exact, [f.line() for f in report.findings]
    assert report.passed is not any(CODES[c].severity is Severity.ERROR for c in exact)


@pytest.mark.parametrize(
    ("requires", "message"),
    [
        # the library links libcudart only: an extra nothing links is named
        (("cuda-toolkit[cudart,cublas]==13.*",),
         "declares cuda-toolkit[cudart,cublas]==13.*: no binary links the libraries of extra "
         "cublas"),
        # a requirement none of whose libraries is linked
        (("cuda-toolkit[cudart]==13.*", "nvidia-cublas==13.*"),
         "declares nvidia-cublas==13.*, but no binary links its libraries"),
        # every extra used: nothing to say
        (("cuda-toolkit[cudart]==13.*",), None),
    ],
)
def test_dep002_partial_and_whole(tmp_path: Any, requires: tuple[str, ...],
                                  message: str | None) -> None:
    report = run(tmp_path, replace(X86, requires=requires))
    found = [f.message for f in report.findings if f.code == "DEP002"]
    assert found == ([message] if message else [])

"""compat: CUDA's loading rules over hand-built inventories, and the compat CLI on fixtures.

Every expected verdict comes from docs/cuda.md (#loading-rules, #tegra-exception, #families,
#minimum-drivers; [D] rows were measured on an H200 with cuModuleLoadData), from fixtures.toml (what
each fixture was built with) or from the H200 probe (tests/probe/h200_results.json) - never
from running the code under test.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

import cuwheel.cli
from cuwheel import compat
from cuwheel.compat import Driver, Target, Verdict
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import (
    Binary,
    CodeKind,
    Compression,
    FatbinContainer,
    FatbinEntry,
    Inventory,
    Source,
    Toolkit,
)
from cuwheel.read.sources.source import read_path
from cuwheel.render.compat import matrix_svg
from cuwheel.rules import runtime
from cuwheel.rules.loading import counted_containers

BIN = Path(__file__).parent / "data" / "bin"

V = Verdict


# ---------------------------------------------------------------- hand-built inventories


def entry(
    name: str, isa: tuple[int, int] = (9, 0), *, rel: bool | None = False, size: int = 20000
) -> FatbinEntry:
    """``sm_90a`` -> a cubin, ``compute_90`` -> PTX of ISA ``isa``, ``lto_80`` -> LTO-IR."""
    prefix = name.split("_", 1)[0]
    kind = {"sm": CodeKind.SASS, "compute": CodeKind.PTX, "lto": CodeKind.LTOIR}[prefix]
    return FatbinEntry(
        offset=0,
        kind=kind,
        arch=Arch.parse(name),
        code_version=(1, 8) if kind is CodeKind.SASS else isa,
        flags=0x11,
        header_size=64,
        stored_size=size,
        compression=Compression.NONE,
        compressed_size=0,
        uncompressed_size=size,
        host="linux",
        debug=False,
        relocatable=rel if kind is CodeKind.SASS else None,
    )


def container(
    *codes: str | FatbinEntry,
    section: str | None = ".nv_fatbin",
    relocatable: bool = False,
    toolkit: Toolkit | None = None,
) -> FatbinContainer:
    entries = tuple(c if isinstance(c, FatbinEntry) else entry(c) for c in codes)
    return FatbinContainer(
        offset=0x2000,
        size=16 + sum(e.stored_size for e in entries),
        section=section,
        named_section=section in (".nv_fatbin", "__nv_relfatbin", ".nv_fatb", "__nv_rel"),
        relocatable=relocatable,
        entries=entries,
        toolkit=toolkit,
    )


def binary(
    *containers: FatbinContainer,
    needed: tuple[str, ...] = (),
    fmt: str = "elf",
    file_type: str = "shared",
    path: str = "lib.so",
    soname: str | None = None,
) -> Binary:
    return Binary(
        path=path,
        format=fmt,
        size=1 << 20,
        file_type=file_type,
        needed=needed,
        soname=soname,
        containers=containers,
    )


def cc(text: str, driver: str | None = None) -> Target:
    return compat.target_for_cc(text, compat.parse_driver(driver) if driver else None)


def gpu(name: str, driver: str | None = None) -> Target:
    (t,) = compat.targets_for_gpu(name, compat.parse_driver(driver) if driver else None)
    return t


def verdict(c: FatbinContainer, t: Target, os: str = "linux") -> Verdict | None:
    return compat.evaluate_container(c, t, os).verdict


# ---------------------------------------------------------------- SASS rules

# (code, device CC, expected) - docs/cuda.md#loading-rules, #tegra-exception, #families.
SASS_CASES = [
    # [D] on the H200: sm_75/80/86/89/100/120 cubins -> NO_BINARY_FOR_GPU, sm_90 loads
    ("sm_75", "9.0", V.NO_CODE),
    ("sm_80", "9.0", V.NO_CODE),
    ("sm_86", "9.0", V.NO_CODE),
    ("sm_89", "9.0", V.NO_CODE),
    ("sm_100", "9.0", V.NO_CODE),
    ("sm_120", "9.0", V.NO_CODE),
    ("sm_90", "9.0", V.NATIVE),
    ("sm_90a", "9.0", V.NATIVE),  # [D] sm_90a cubin loads on the H200
    # same major, higher minor
    ("sm_80", "8.0", V.NATIVE),
    ("sm_80", "8.6", V.COMPATIBLE),
    ("sm_80", "8.9", V.COMPATIBLE),
    ("sm_86", "8.9", V.COMPATIBLE),
    ("sm_86", "8.0", V.NO_CODE),
    ("sm_75", "8.0", V.NO_CODE),
    # Tegra has no SASS binary compatibility (CUDA C++ Programming Guide, "Binary
    # Compatibility"; measured on an Orin in jax-ml/jax PR #40492: code=sm_80 -> "no kernel
    # image", code=sm_87 runs): Orin 8.7 runs sm_87 only, and desktop 8.9 no sm_87 cubin.
    ("sm_80", "8.7", V.NO_CODE),
    ("sm_86", "8.7", V.NO_CODE),
    ("sm_87", "8.7", V.NATIVE),
    ("sm_87", "8.6", V.NO_CODE),
    ("sm_87", "8.9", V.NO_CODE),
    ("sm_72", "7.5", V.NO_CODE),  # Xavier code on a desktop Turing
    ("sm_70", "7.2", V.NO_CODE),  # desktop Volta code on Xavier
    ("sm_53", "5.3", V.NATIVE),
    ("sm_50", "5.3", V.NO_CODE),  # Jetson Nano / TX1
    # sm_88 (desktop): plain major-8 rules
    ("sm_80", "8.8", V.COMPATIBLE),
    # a = exactly that CC
    ("sm_90a", "10.0", V.NO_CODE),
    ("sm_100a", "10.3", V.NO_CODE),
    ("sm_100a", "10.0", V.NATIVE),
    # f cubins run on the members of their family (PTX ISA family table)
    ("sm_100f", "10.3", V.COMPATIBLE),
    ("sm_103f", "10.0", V.NO_CODE),
    ("sm_100f", "10.0", V.NATIVE),
    ("sm_100f", "9.0", V.NO_CODE),
    ("sm_100f", "12.0", V.NO_CODE),
    # sm_101f is in the sm_11x family (PTX ISA family definition): Thor, CC 11.0, is a member
    ("sm_101f", "11.0", V.COMPATIBLE),
    ("sm_101f", "10.0", V.NO_CODE),
    ("sm_101f", "10.3", V.NO_CODE),
    ("sm_101a", "11.0", V.NO_CODE),  # a cubin: whether the 13.x driver loads it is not known
    # sm_120 vs 12.1 (DGX Spark)
    ("sm_120", "12.1", V.COMPATIBLE),
    ("sm_120f", "12.1", V.COMPATIBLE),
    ("sm_120a", "12.1", V.NO_CODE),
    ("sm_121", "12.0", V.NO_CODE),
    # Rubin 10.7: same-major rule, sm_100a is not eligible
    ("sm_100", "10.7", V.COMPATIBLE),
    ("sm_100f", "10.7", V.COMPATIBLE),
    ("sm_100a", "10.7", V.NO_CODE),
    # data-center Blackwell (10.x) and consumer Blackwell (12.x) share no SASS
    ("sm_100", "12.0", V.NO_CODE),
    ("sm_120", "10.0", V.NO_CODE),
]


@pytest.mark.parametrize(("code", "device", "expected"), SASS_CASES)
def test_sass_rules(code: str, device: str, expected: Verdict) -> None:
    assert verdict(container(code), cc(device)) is expected


# ---------------------------------------------------------------- PTX rules

PTX_CASES = [
    # [D] compute_80/89/90 PTX JIT on 9.0; compute_100/120 -> INVALID_PTX
    ("compute_80", "9.0", V.PTX_JIT),
    ("compute_89", "9.0", V.PTX_JIT),
    ("compute_90", "9.0", V.PTX_JIT),
    ("compute_100", "9.0", V.NO_CODE),
    ("compute_120", "9.0", V.NO_CODE),
    # plain PTX crosses majors
    ("compute_75", "12.0", V.PTX_JIT),
    ("compute_90", "12.1", V.PTX_JIT),
    ("compute_120", "12.1", V.PTX_JIT),
    # [D] compute_90a-only fatbin JIT-loads on the H200; a PTX = that CC only
    ("compute_90a", "9.0", V.PTX_JIT),
    ("compute_90a", "10.0", V.NO_CODE),
    ("compute_100a", "10.3", V.NO_CODE),
    # families (ptxas 12.9 / 13.5 table): 100f -> 100, 103, 107; 103f -> 103, 107
    ("compute_100f", "9.0", V.NO_CODE),  # [D] fails on the H200
    ("compute_100f", "10.0", V.PTX_JIT),
    ("compute_100f", "10.3", V.PTX_JIT),
    ("compute_100f", "10.7", V.PTX_JIT),
    ("compute_100f", "11.0", V.NO_CODE),  # Thor is not in the 100 family
    ("compute_100f", "12.0", V.NO_CODE),
    ("compute_103f", "10.0", V.NO_CODE),
    ("compute_103f", "10.7", V.PTX_JIT),
    ("compute_120f", "12.1", V.PTX_JIT),
    ("compute_121f", "12.0", V.NO_CODE),
    ("compute_110f", "11.0", V.PTX_JIT),
    # the sm_11x family is sm_110f and sm_101f (Thor's CUDA 12.x name): ptxas 13.0.88 compiles
    # '.target sm_101f' for sm_110 / sm_110f / sm_110a and '.target sm_101a' for sm_110a only
    ("compute_101f", "11.0", V.PTX_JIT),
    ("compute_101a", "11.0", V.PTX_JIT),
    ("compute_101f", "10.0", V.NO_CODE),
    ("compute_101f", "12.0", V.NO_CODE),
    ("compute_110f", "10.3", V.NO_CODE),
]


@pytest.mark.parametrize(("code", "device", "expected"), PTX_CASES)
def test_ptx_rules(code: str, device: str, expected: Verdict) -> None:
    assert verdict(container(code), cc(device, "13.0")) is expected


def test_family_members_follow_the_catalog() -> None:
    assert [a.cc for a in compat.family_members(Arch.parse("sm_100f"))] == ["10.0", "10.3", "10.7"]
    assert [a.cc for a in compat.family_members(Arch.parse("sm_120f"))] == ["12.0", "12.1"]
    # the sm_11x family: sm_110f and sm_101f (Thor under both names)
    assert [a.cc for a in compat.family_members(Arch.parse("sm_101f"))] == ["10.1", "11.0"]
    assert [a.cc for a in compat.family_members(Arch.parse("sm_110f"))] == ["11.0"]


def test_sass_is_preferred_over_ptx_and_best_cubin_chosen() -> None:
    c = container("sm_80", "sm_86", "compute_86")
    cv = compat.evaluate_container(c, cc("8.9"))
    assert (cv.verdict, cv.chosen) == (V.COMPATIBLE, "sm_86")
    cv = compat.evaluate_container(container("sm_80", "sm_90", "compute_90"), cc("9.0"))
    assert (cv.verdict, cv.chosen) == (V.NATIVE, "sm_90")
    cv = compat.evaluate_container(container("sm_80", "compute_80"), cc("9.0"))
    assert (cv.verdict, cv.chosen) == (V.PTX_JIT, "compute_80")
    assert "first load" in cv.reason


# ---------------------------------------------------------------- driver gates


@pytest.mark.parametrize(
    ("isa", "driver", "expected"),
    [
        ((9, 0), "13.0", V.PTX_JIT),  # [D] .version 9.0 JITs on driver 13.0
        ((9, 1), "13.0", V.DRIVER),  # [D] 9.1 ... 9.5 fail: UNSUPPORTED_PTX_VERSION
        ((9, 5), "13.0", V.DRIVER),
        ((9, 1), "580.65.06", V.DRIVER),
        ((9, 1), "580.159.04", V.DRIVER),  # the H200's driver (CUDA 13.0)
        ((9, 1), "590.44.01", V.PTX_JIT),  # CUDA 13.1's minimum driver
        ((9, 1), "13.1", V.PTX_JIT),
        ((8, 8), "575.51.03", V.PTX_JIT),  # CUDA 12.9 / PTX 8.8
        ((8, 8), "570.26", V.DRIVER),
        ((9, 9), "13.5", V.DRIVER),  # newer than any release known
        # CUDA 13.5 = R620 (NVIDIA's driver manifest redistrib_620.70.06.json: cuda_compat
        # for 13.5), PTX ISA 9.5: a 620 driver JITs it, a 615 (CUDA 13.4) driver does not
        ((9, 5), "620.70.06", V.PTX_JIT),
        ((9, 5), "620", V.PTX_JIT),
        ((9, 5), "615.71.09", V.DRIVER),
        ((9, 4), "615.71.09", V.PTX_JIT),
        ((9, 5), None, V.PTX_JIT),  # no driver given: gate assumed met
    ],
)
def test_ptx_isa_gate(isa: tuple[int, int], driver: str | None, expected: Verdict) -> None:
    c = container(entry("compute_90", isa))
    cv = compat.evaluate_container(c, cc("9.0", driver))
    assert cv.verdict is expected
    if expected is V.DRIVER:
        assert f"PTX ISA {isa[0]}.{isa[1]}" in cv.reason


# NVIDIA's nvcc docs, --compress-mode: "not compatible with drivers released before CUDA
# Toolkit's 12.4 Release"; the codec it adds is zstd (flag 0x8000), LZ4 (0x2000) is older.
def zstd(name: str, codec: Compression = Compression.ZSTD) -> FatbinEntry:
    # PTX of ISA 8.0 (CUDA 12.0): its own gate is met by every driver these cases use
    return replace(entry(name, (8, 0)), compression=codec, compressed_size=9000)


@pytest.mark.parametrize(
    ("entries", "driver", "os", "expected"),
    [
        (("sm_90",), "545.23.06", "linux", V.DRIVER),  # CUDA 12.3's driver
        (("sm_90",), "12.3", "linux", V.DRIVER),
        (("sm_90",), "550.54.14", "linux", V.NATIVE),  # CUDA 12.4's minimum
        (("sm_90",), "580.65.06", "linux", V.NATIVE),
        (("sm_90",), None, "linux", V.NATIVE),  # no driver given: assumed able
        (("sm_90",), "545.84", "windows", V.DRIVER),  # CUDA 12.3 on Windows
        (("sm_90",), "551.61", "windows", V.NATIVE),  # CUDA 12.4 on Windows
        (("compute_80",), "545.23.06", "linux", V.DRIVER),  # zstd PTX: JIT needs it too
        (("compute_80",), "550.54.14", "linux", V.PTX_JIT),
    ],
)
def test_zstd_entries_need_a_cuda_12_4_driver(
    entries: tuple[str, ...], driver: str | None, os: str, expected: Verdict
) -> None:
    c = container(*(zstd(e) for e in entries))
    cv = compat.evaluate_container(c, cc("9.0", driver), os)
    assert cv.verdict is expected
    if expected is V.DRIVER:
        assert "zstd-compressed" in cv.reason and "CUDA 12.4" in cv.reason


def test_lz4_entries_load_on_older_drivers() -> None:
    # NVIDIA's CUDA 11 wheels are LZ4-compressed and run on 450.80.02+ drivers
    c = container(zstd("sm_80", Compression.LZ4))
    assert verdict(c, cc("8.0", "450.80.02")) is V.NATIVE


@pytest.mark.parametrize(
    ("fixture", "expected"), [("cm_size.so", V.DRIVER), ("cm_speed_all.so", V.NATIVE)]
)
def test_compress_mode_fixtures_on_a_cuda_12_3_driver(fixture: str, expected: Verdict) -> None:
    # fixtures.toml: cm_size.so is zstd throughout (flags 0x8011), cm_speed_all.so LZ4
    (b,), _, _ = read_path(fx(fixture))
    counted = [c for _, c in counted_containers(b)]
    assert counted
    for c in counted:
        assert compat.evaluate_container(c, cc("8.0", "545.23.06")).verdict is expected


def test_sass_from_a_newer_toolkit_loads_on_an_older_driver() -> None:
    # [D] sm_90 cubins made by ptxas 13.5 load on driver 13.0 (580.159.04)
    c = container("sm_90", toolkit=Toolkit(13, 5, "tkinfo", "13.5.37"))
    assert verdict(c, cc("9.0", "580.159.04")) is V.NATIVE


@pytest.mark.parametrize(
    ("text", "version", "cuda"),
    [("580.65.06", "580.65.06", None), ("13.0", None, (13, 0)), ("12.9", None, (12, 9)),
     ("580", "580", None)],  # a driver branch, as docs/compat.md accepts it
)
def test_parse_driver(text: str, version: str | None, cuda: tuple[int, int] | None) -> None:
    assert compat.parse_driver(text) == Driver(version, cuda)


@pytest.mark.parametrize(
    "text", ["", "abc", "13", "13.0.1", "13.x", "\uff15\uff18\uff10", "1" * 5000]
)
def test_parse_driver_rejects(text: str) -> None:
    with pytest.raises(compat.CompatError):
        compat.parse_driver(text)


@pytest.mark.parametrize(
    ("version", "os", "cuda"),
    [
        ("580.159.04", "linux", (13, 0)),  # [D] nvidia-smi: CUDA Version 13.0
        ("580.65.06", "linux", (13, 0)),
        ("575.57.08", "linux", (12, 9)),
        ("590.44.01", "linux", (13, 1)),
        ("525.60.13", "linux", (12, 0)),
        ("450.51.05", "linux", (11, 0)),
        ("576.02", "windows", (12, 9)),
        ("580.97", "windows", (13, 0)),  # 13.x Windows minimum not tabulated: R580 branch
        ("440.33", "linux", (10, 2)),  # CUDA 10.2's minimum (CUDA Compatibility, Table 2)
        ("410.47", "linux", None),  # older than CUDA 10.0's 410.48
        ("615.71.09", "linux", (13, 4)),  # 13.4 needs the R615 branch
        ("610.57.04", "linux", (13, 3)),
        ("620.70.06", "linux", (13, 5)),  # redistrib_620.70.06.json: cuda_compat 13.5
    ],
)
def test_driver_cuda_version(version: str, os: str, cuda: tuple[int, int] | None) -> None:
    assert compat.driver_cuda_version(Driver(version), os) == cuda


# ---------------------------------------------------------------- runtime linkage


@pytest.mark.parametrize(
    ("needed", "driver", "fmt", "ok"),
    [
        (("libcudart.so.13",), "580.65.06", "elf", True),
        (("libcudart.so.13",), "575.51.03", "elf", False),
        (("libcudart.so.13",), "12.9", "elf", False),
        (("libcudart.so.13",), "13.0", "elf", True),
        (("libcudart.so.12",), "580.159.04", "elf", True),  # [D] .12 runs on R580
        (("libcudart.so.12",), "525.60.13", "elf", True),
        (("libcudart.so.12",), "520.61.05", "elf", False),
        (("libcudart.so.11.0",), "450.80.02", "elf", True),
        (("libcudart.so.11.0",), "450.51.05", "elf", False),  # 11.0 GA driver < floor
        (("libcudart.so.11.0",), "580.159.04", "elf", True),  # [D]
        (("cudart64_13.dll",), "13.0", "pe", True),
        (("cudart64_13.dll",), "12.9", "pe", False),
        (("cudart64_12.dll",), "527.41", "pe", True),
        (("cudart64_12.dll",), "526.98", "pe", False),
        # 13.x on Windows: ">= 580" (Minor Version Compatibility, Table 1; no per-OS split)
        (("cudart64_13.dll",), "581.57", "pe", True),
        (("cudart64_13.dll",), "580.88", "pe", True),
        (("cudart64_13.dll",), "576.80", "pe", False),
    ],
)
def test_runtime_floor(needed: tuple[str, ...], driver: str, fmt: str, ok: bool) -> None:
    b = binary(container("sm_90"), needed=needed, fmt=fmt)
    lv = compat.evaluate_binary(b, cc("9.0", driver))
    assert lv is not None and lv.runtime is not None
    assert lv.runtime.ok is ok
    assert (lv.verdict is V.DRIVER) is not ok


def test_forward_compat_is_named_below_the_floor_on_linux_only() -> None:
    # NVIDIA's Forward Compatibility page: data-center GPUs, select NGC Server Ready RTX
    # cards and Jetson boards, on an older Linux driver (cuda-compat-<major>-<minor>)
    elf = binary(container("sm_90"), needed=("libcudart.so.13",))
    lv = compat.evaluate_binary(elf, cc("9.0", "575.51.03"))
    assert lv is not None and lv.runtime is not None and lv.runtime.ok is False
    assert "forward-compatibility package (cuda-compat-" in lv.runtime.reason
    assert "data-center GPUs" in lv.runtime.reason and "Jetson" in lv.runtime.reason
    ok = compat.evaluate_binary(elf, cc("9.0", "580.65.06"))
    assert ok is not None and ok.runtime is not None and "forward" not in ok.runtime.reason
    pe = binary(container("sm_90"), needed=("cudart64_13.dll",), fmt="pe")
    lv = compat.evaluate_binary(pe, cc("9.0", "576.80"))
    assert lv is not None and lv.runtime is not None and lv.runtime.ok is False
    assert "forward" not in lv.runtime.reason  # Linux drivers only


@pytest.mark.parametrize(
    ("segment", "os", "applies"),
    [
        ("datacenter", "linux", True),
        ("embedded", "linux", True),
        ("consumer", "linux", False),
        ("workstation", "linux", False),
        ("datacenter", "windows", False),
    ],
)
def test_forward_compat_applies(segment: str, os: str, applies: bool) -> None:
    assert runtime.forward_compat_applies(segment, os) is applies


def test_windows_13x_floor_is_named() -> None:
    lv = compat.evaluate_binary(
        binary(container("sm_90"), needed=("cudart64_13.dll",), fmt="pe"), cc("9.0", "576.80")
    )
    assert lv is not None and lv.runtime is not None
    assert lv.runtime.floor == "580" and "driver >= 580" in lv.runtime.reason


def test_runtime_major_from_libraries_of_one_major_only() -> None:
    # libcurand.so.10 ships with CUDA 11, 12 and 13: it says nothing about the major
    assert compat.runtime_majors(binary(needed=("libcurand.so.10",))) == ()
    assert compat.runtime_majors(binary(soname="libcublasLt.so.13")) == ((13, "libcublasLt.so.13"),)
    assert compat.runtime_majors(binary(needed=("libc.so.6", "libcudart.so.12"))) == (
        (12, "libcudart.so.12"),
    )


def test_host_only_library_with_a_runtime() -> None:
    b = binary(needed=("libcudart.so.13",))
    lv = compat.evaluate_binary(b, cc("9.0", "580.65.06"))
    assert lv is not None and lv.verdict is V.HOST and not lv.has_device_code
    lv = compat.evaluate_binary(b, cc("9.0", "12.8"))
    assert lv is not None and lv.verdict is V.DRIVER
    assert compat.evaluate_binary(binary(needed=("libc.so.6",)), cc("9.0")) is None


# ---------------------------------------------------------------- Thor rename


def test_thor_rename_follows_the_driver() -> None:
    thor = gpu("Jetson AGX Thor")
    assert thor.arch.cc == "11.0"
    new = container("sm_110")
    old = container("sm_101")
    assert verdict(new, thor.with_driver(Driver(cuda=(13, 0)))) is V.NATIVE
    cv = compat.evaluate_container(old, thor.with_driver(Driver(cuda=(13, 0))))
    assert cv.verdict is V.NO_CODE and "not verified" in cv.reason
    # a CUDA 12.x driver reports Thor as CC 10.1 (sm_101)
    assert verdict(old, thor.with_driver(Driver(cuda=(12, 9)))) is V.NATIVE
    assert verdict(new, thor.with_driver(Driver(cuda=(12, 9)))) is V.NO_CODE
    # sm_101f is not in the 100 family: compute_100f PTX does not reach Thor
    assert verdict(container("compute_100f"), thor.with_driver(Driver(cuda=(12, 9)))) is (V.NO_CODE)
    # "--cc 10.1" names the same GPU
    assert cc("10.1").arch.cc == "11.0"


# ---------------------------------------------------------------- roll-ups


def small(name: str) -> FatbinEntry:
    return entry(name, size=1456)  # nvcc's device-link stub: 1456-byte cubin (fixtures)


def test_device_link_stub_is_ignored() -> None:
    # nvcc -arch=sm_80 library: stub (sm_80) + TU (sm_80 + compute_80); on 9.0 it JITs
    b = binary(container(small("sm_80")), container("sm_80", "compute_80"))
    assert compat.link_stub_index(b) == 0
    lv = compat.evaluate_binary(b, cc("9.0"))
    assert lv is not None and lv.verdict is V.PTX_JIT
    assert lv.containers[0].ignored and not lv.containers[0].counted


@pytest.mark.parametrize(
    "b",
    [
        binary(container(small("sm_80"))),  # alone: it is the code
        binary(container("sm_80"), container("sm_90")),  # first cubin is big
        binary(container(small("sm_80")), container("sm_90"), file_type="object"),
        binary(
            container(small("sm_80")),
            container("sm_80", section="__nv_relfatbin", relocatable=True),
        ),
        binary(container(small("sm_80"), "compute_80"), container("sm_90")),
    ],
)
def test_no_stub(b: Binary) -> None:
    assert compat.link_stub_index(b) is None


def test_stub_without_a_wrapper_record() -> None:
    """cuRAND 10.4.0.35 (x86_64 and aarch64): 11 containers, 10 version-1 records; the
    first container, the kernel-less stub, has no record of its own."""
    stub = replace(container(small("sm_75")), device_link=None)
    tus = [replace(container("sm_80", "sm_90"), device_link=False) for _ in range(10)]
    assert compat.link_stub_index(binary(stub, *tus)) == 0
    # a first container with a record of its own is a translation unit, not the stub
    first = replace(container(small("sm_75")), device_link=False)
    assert compat.link_stub_index(binary(first, *tus)) is None


def test_partial_library_and_strict() -> None:
    # two_tu.so's shape: TU1 sm_80/sm_86, TU2 sm_90 + compute_90 + sm_120 (fixtures.toml)
    b = binary(
        container(small("sm_75")),
        container("sm_80", "sm_86"),
        container("sm_90", "compute_90", "sm_120"),
    )
    lv = compat.evaluate_binary(b, cc("9.0"))
    # TU1 holds code for older GPUs only, in a library that knew 9.0 (TU2 has sm_90): the
    # bytes cannot tell a library that dispatches by CC from one that calls TU1's kernels
    # everywhere (on the H200 the second fails: tests/probe), so it depends on dispatch
    assert lv is not None and lv.verdict is V.DEPENDS and not lv.verdict.runs
    assert "sm_80, sm_86" in lv.reason and "compute capability" in lv.reason
    strict = compat.evaluate_binary(b, cc("9.0"), strict=True)
    assert strict is not None and strict.verdict is V.NO_CODE
    lv86 = compat.evaluate_binary(b, cc("8.6"))
    # TU2 holds only code for newer GPUs: a specialisation, not missing code for 8.6
    assert lv86 is not None and lv86.verdict is V.NATIVE and "other GPUs" in lv86.reason
    lv12 = compat.evaluate_binary(b, cc("12.0"))
    assert lv12 is not None and lv12.verdict is V.DEPENDS
    lv75 = compat.evaluate_binary(b, cc("7.5"))
    assert lv75 is not None and lv75.verdict is V.NO_CODE  # stub ignored, nothing else


@pytest.mark.parametrize(
    ("containers", "verdict"),
    [
        # cuFFT / cuSPARSE: one container per architecture; on 9.0 the sm_80 one is the
        # Ampere build of kernels whose Hopper build is in the sm_90 container
        (("sm_80", "sm_90", "sm_100"), V.NATIVE),
        # cuDNN engines: Ampere + Blackwell-family kernels beside the Hopper ones
        ((("sm_80", "sm_100f"), "sm_90"), V.NATIVE),
        # cuBLASLt: newer-only and arch-specific containers beside the loading one
        (("sm_90", ("sm_100", "compute_120", "sm_120"), "sm_100a"), V.NATIVE),
        # a build for a list of older GPUs beside one that loads, from a toolkit that knew
        # 9.0: a library that dispatches by CC runs, one that calls them fails (H200 probe)
        ((("sm_80", "sm_86"), "sm_90"), V.DEPENDS),
        # several older architectures without PTX beside JIT-able PTX elsewhere
        ((("sm_75", "sm_80"), ("compute_80",)), V.DEPENDS),
        # older and newer code that skips 9.0 (cuBLASLt's sm_80/sm_86/sm_120 container)
        ((("sm_80", "sm_86", "sm_120"), "sm_90"), V.NATIVE),
        # a library of many architecture sets (cuDNN: 26) picks kernels by architecture:
        # its Ampere-only sm_80/sm_86 container is no missing code on 9.0
        ((("sm_80", "sm_86"), "sm_90", "sm_100", "sm_120", ("sm_90", "sm_100"), "sm_75",
          ("sm_75", "sm_80"), ("sm_100", "sm_120"), "sm_103"), V.NATIVE),
    ],
)
def test_specialisation_or_missing_code(containers: tuple[object, ...], verdict: Verdict) -> None:
    built = [container(*(c if isinstance(c, tuple) else (c,))) for c in containers]
    lv = compat.evaluate_binary(binary(*built), cc("9.0"))
    assert lv is not None and lv.verdict is verdict, lv.reason


def test_a_module_for_other_gpus_does_not_fail_the_wheel() -> None:
    """vLLM-style: a module built only for sm_100f beside the code that runs on 9.0; the
    package loads it only on Blackwell.  A wheel of nothing but such modules still fails."""
    main = binary(container("sm_90"), path="w.whl!pkg/_C.so")
    blackwell = binary(container("sm_100f"), path="w.whl!pkg/_C_sm100.so")
    inv = Inventory((Source("wheel", "w.whl", binaries=(main, blackwell)),))
    report = compat.evaluate(inv, cc("9.0"))
    assert report.verdict is V.NATIVE and report.runs
    (lv_blackwell,) = [lv for s in report.sources for lv in s.libraries if "sm100" in lv.path]
    assert lv_blackwell.verdict is V.OTHER_GPUS and lv_blackwell.specialised
    alone = Inventory((Source("wheel", "w.whl", binaries=(blackwell,)),))
    assert not compat.evaluate(alone, cc("9.0")).runs
    # a plain build for newer GPUs is no specialised module: torch's linalg library on a T4
    linalg = binary(container("sm_80", "sm_90"), path="w.whl!pkg/_linalg.so")
    inv = Inventory((Source("wheel", "w.whl", binaries=(binary(container("sm_75")), linalg)),))
    assert not compat.evaluate(inv, cc("7.5")).runs


def test_ignored_containers() -> None:
    empty = container()
    rel = container("sm_80", "compute_80", section="__nv_relfatbin", relocatable=True)
    lto = container("lto_80", section="__nv_relfatbin", relocatable=True)
    lto_rodata = container("lto_70", "compute_70", "sm_70", "sm_90", section=".rodata")
    et_rel = container(entry("sm_90", rel=True), "compute_90", section=None)
    t = cc("9.0")
    for c in (empty, rel, lto, lto_rodata, et_rel):
        cv = compat.evaluate_container(c, t)
        assert cv.ignored and not cv.counted
    # a binary of nothing but ignored containers and no runtime: nothing to say
    assert compat.evaluate_binary(binary(rel, lto, file_type="object"), t) is None


def test_rdc_binary_is_device_linked_at_first_load() -> None:
    # librdc.so's shape: linked sm_80 image + two relocatable sm_80/compute_80 containers.
    # [probe] cw_rdc_launch runs on the H200 although the linked image is sm_80 only.
    rel = container("sm_80", "compute_80", section="__nv_relfatbin", relocatable=True)
    b = binary(container("sm_80"), rel, rel)
    lv = compat.evaluate_binary(b, cc("9.0", "13.0"))
    assert lv is not None and lv.verdict is V.PTX_JIT and "device-links" in lv.reason
    # without PTX in the relocatable code nothing can be linked for 9.0
    rel_sass = container("sm_80", section="__nv_relfatbin", relocatable=True)
    lv = compat.evaluate_binary(binary(container("sm_80"), rel_sass), cc("9.0"))
    assert lv is not None and lv.verdict is V.NO_CODE


def test_container_verdicts_stay_their_own() -> None:
    """A linked container with only sm_100f has no code for CC 9.0, whatever the library's
    relocatable containers make of the library; it used to be printed as "native SASS"."""
    rel = container("sm_90", "compute_90", section="__nv_relfatbin", relocatable=True)
    b = binary(container("sm_100f"), rel)
    lv = compat.evaluate_binary(b, cc("9.0", "13.0"))
    assert lv is not None
    linked = lv.containers[0]
    assert linked.verdict is V.NO_CODE and "device-links" not in linked.reason
    assert lv.verdict is V.NATIVE and "device-links" in lv.reason


def test_wheel_takes_its_worst_library() -> None:
    good = binary(container("sm_90"), path="w.whl!a.so")
    bad = binary(container("sm_80"), path="w.whl!b.so")
    inv = Inventory((Source("wheel", "w.whl", binaries=(good, bad)),))
    report = compat.evaluate(inv, cc("9.0"))
    assert report.verdict is V.NO_CODE and not report.runs
    assert [lv.verdict for lv in report.sources[0].libraries] == [V.NATIVE, V.NO_CODE]
    only_good = Inventory((Source("wheel", "w.whl", binaries=(good,)),))
    assert compat.evaluate(only_good, cc("9.0")).verdict is V.NATIVE


def test_verdict_order() -> None:
    order = [V.HOST, V.NATIVE, V.COMPATIBLE, V.PTX_JIT, V.PARTIAL, V.DRIVER, V.NO_CODE,
             V.PLATFORM]
    assert sorted(order, key=lambda v: v.rank) == order
    # partial: some kernels of the library have no image for the GPU (cw_tu1 of two_tu.so
    # failed to launch on the H200 while cw_tu2 ran)
    assert [v.runs for v in order] == [True] * 4 + [False] * 4


def test_driver_that_predates_the_gpu_is_noted() -> None:
    inv = Inventory((Source("file", "x", binaries=(binary(container("sm_100")),)),))
    report = compat.evaluate(inv, gpu("Rubin", "13.0"))  # sm_107 first built by CUDA 13.4
    assert any("13.4" in n for n in report.notes)


# ---------------------------------------------------------------- targets


@pytest.mark.parametrize(
    ("name", "ccs"),
    [
        ("RTX 4090", ["8.9"]),
        ("H100", ["9.0"]),
        ("GB200", ["10.0"]),
        ("Jetson Orin", ["8.7"]),
        ("DGX Spark", ["12.1"]),
        ("A10G", ["8.6"]),
        ("RTX PRO 6000", ["12.0"]),
    ],
)
def test_targets_for_gpu(name: str, ccs: list[str]) -> None:
    assert [t.arch.cc for t in compat.targets_for_gpu(name)] == ccs


def test_family_name_gives_every_cc() -> None:
    ccs = {t.arch.cc for t in compat.targets_for_gpu("Blackwell")}
    assert {"10.0", "12.0", "12.1"} <= ccs


@pytest.mark.parametrize("bad", ["", "Voodoo 5", "sm_90a"])
def test_bad_targets(bad: str) -> None:
    with pytest.raises(compat.CompatError):
        if bad.startswith("sm_"):
            compat.target_for_cc(bad)
        else:
            compat.targets_for_gpu(bad)


# ---------------------------------------------------------------- matrix and SVG


def test_matrix_and_svg() -> None:
    a = binary(container("sm_80", "compute_80"), path="w.whl!pkg/a.so")
    host = binary(needed=("libcudart.so.13",), path="w.whl!pkg/host.so")
    inv = Inventory((Source("wheel", "w.whl", binaries=(a, host)),))
    m = compat.matrix(inv, [cc("7.5"), cc("8.6"), cc("9.0")])
    assert m.columns == ("w.whl!pkg/a.so",)  # libraries with device code only
    assert [row[0] for row in m.cells] == [V.NO_CODE, V.COMPATIBLE, V.PTX_JIT]
    assert [m.row_runs(i) for i in range(3)] == [False, True, True]
    svg = matrix_svg(m, "demo <&>")
    root = ET.fromstring(svg)
    texts = [t.text for t in root.iter("{http://www.w3.org/2000/svg}text")]
    assert "a.so" in texts and "demo <&>" in texts and "JIT" in texts


# ---------------------------------------------------------------- CLI on fixtures


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    monkeypatch.setattr(cuwheel.cli, "SUBCOMMANDS", ["_compat"])

    def run(*argv: str) -> tuple[int, str, str]:
        code = cuwheel.cli.main(["compat", *argv])
        out, err = capsys.readouterr()
        return code, out, err

    return run


def fx(name: str) -> str:
    return str(BIN / name)


# fixtures.toml: what each was built with -> what the rules say on these GPUs
CLI_CASES = [
    ("sm80.so", ["--cc", "9.0", "--driver", "580.65.06"], 0, "PTX JIT"),
    ("sm80.so", ["--gpu", "A100"], 0, "native SASS"),
    ("sm80.so", ["--gpu", "RTX 4090"], 0, "compatible SASS"),
    ("sm80only.so", ["--gpu", "H100"], 1, "no code"),
    ("sm90a.so", ["--gpu", "H200"], 0, "native SASS"),
    ("sm90a.so", ["--gpu", "H200", "--gpu", "B200"], 1, "for other GPUs"),
    ("sm100f.so", ["--gpu", "B300"], 0, "compatible SASS"),
    ("ptx120.so", ["--gpu", "RTX 5090", "--driver", "13.0"], 0, "PTX JIT"),
    ("ptx120.so", ["--cc", "9.0"], 1, "no code"),
    ("allmajor.so", ["--gpu", "RTX 5090"], 0, "native SASS"),
    # DGX Spark and Jetson are aarch64 machines (gpus.toml hosts): x86_64 code cannot run
    ("ptx120.so", ["--gpu", "DGX Spark", "--driver", "13.0"], 1, "wrong platform"),
    ("allmajor.so", ["--gpu", "Jetson AGX Thor"], 1, "wrong platform"),
    ("row_arm_cu13.so", ["--gpu", "Jetson AGX Thor"], 0, "native SASS"),
    ("row_orin_cu126.so", ["--gpu", "Jetson AGX Orin"], 0, "native SASS"),
    ("row_arm_cu13.so", ["--gpu", "GH200"], 0, "native SASS"),
    ("row_x86_cu13.so", ["--gpu", "GH200"], 1, "wrong platform"),
    ("k89.ptx", ["--cc", "9.0", "--driver", "13.0"], 0, "PTX JIT"),
    ("k89.ptx", ["--cc", "9.0", "--driver", "12.9"], 1, "driver too old"),  # ISA 9.0
    ("k90.cubin", ["--cc", "sm_90"], 0, "native SASS"),
    # [probe] cw_tu1 has no kernel image, cw_tu2 runs: the CLI reads the kernel names,
    # and cw_tu1 (sm_80 / sm_86 only) has no code for CC 9.0 anywhere: named as missing
    ("two_tu.so", ["--cc", "9.0"], 1, "cw_tu1"),
    ("librdc.so", ["--cc", "9.0"], 0, "PTX JIT"),
    ("hostcudart.so", ["--cc", "9.0", "--driver", "575.51.03"], 1, "driver too old"),
    ("win_sm80_86.dll", ["--gpu", "RTX 4090"], 0, "compatible SASS"),
]


@pytest.mark.parametrize(("name", "flags", "code", "text"), CLI_CASES)
def test_cli_verdicts(run_cli, name: str, flags: list[str], code: int, text: str) -> None:  # type: ignore[no-untyped-def]
    rc, out, err = run_cli(fx(name), *flags)
    assert rc == code, out + err
    assert text in out


def test_cli_strict(run_cli) -> None:  # type: ignore[no-untyped-def]
    assert run_cli(fx("two_tu.so"), "--cc", "9.0", "--strict")[0] == 1


def test_cli_json(run_cli) -> None:  # type: ignore[no-untyped-def]
    rc, out, _ = run_cli(fx("sm80.so"), fx("sm90a.so"), "--cc", "9.0", "--json", "-v")
    assert rc == 0
    data = json.loads(out)
    assert (data["schema"], data["version"]) == ("cuwheel-compat", 3) and data["runs"] is True
    (t,) = data["targets"]
    libs = {Path(lib["path"]).name: lib for s in t["sources"] for lib in s["libraries"]}
    assert libs["sm80.so"]["verdict"] == "PTX JIT"
    assert libs["sm90a.so"]["verdict"] == "native SASS"
    assert [c["ignored"] is not None for c in libs["sm80.so"]["containers"]] == [True, False]


def test_cli_matrix(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    svg = tmp_path / "m.svg"
    rc, out, _ = run_cli(fx("sm90a.so"), fx("allmajor.so"), "--matrix", "--json", "--svg", str(svg))
    assert rc == 1  # sm90a.so runs on 9.0 only
    data = json.loads(out)
    names = [Path(c).name for c in data["columns"]]
    assert names == ["sm90a.so", "allmajor.so"]  # in the order asked
    rows = {r["target"]["cc"]: r["cells"] for r in data["rows"]}
    assert rows["9.0"] == ["native SASS", "native SASS"]
    assert rows["8.9"] == ["for other GPUs", "compatible SASS"]
    assert rows["12.1"] == ["wrong platform", "wrong platform"]  # DGX Spark is aarch64
    assert rows["7.0"] == ["for other GPUs", "no code"]  # all-major starts at sm_75
    ET.parse(svg)
    rc, out, _ = run_cli(fx("allmajor.so"), "--matrix", "--cc", "8.9", "--cc", "12.0")
    assert rc == 0 and "legend" in out


@pytest.mark.parametrize(
    "argv",
    [
        [fx("sm80.so")],  # no GPU named
        ["--cc", "9.0"],  # nothing to inspect
        [fx("sm80.so"), "--cc", "9.0", "--driver", "thirteen"],
        [fx("sm80.so"), "--gpu", "Voodoo 5"],
        [fx("sm80.so"), "--cc", "sm_90a"],
        [fx("sm80.so"), "--cc", "9.0", "--svg", "x.svg"],
    ],
)
def test_cli_usage_errors(run_cli, argv: list[str]) -> None:  # type: ignore[no-untyped-def]
    rc, _, err = run_cli(*argv)
    assert rc == 2 and err.startswith("cuwheel: error:")


def test_cli_unreadable_input(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    rc, _, err = run_cli(str(tmp_path / "missing.whl"), "--cc", "9.0")
    assert rc == 2 and "missing.whl" in err


def test_cli_a_library_it_could_not_read_makes_the_answer_unknown(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """sm90a.so runs on 9.0, but a truncated library beside it was not judged: that is no
    "runs" (it used to exit 0)."""
    (tmp_path / "good.so").write_bytes((BIN / "sm90a.so").read_bytes())
    (tmp_path / "cut.so").write_bytes((BIN / "sm80.so").read_bytes()[:3000])
    rc, out, err = run_cli(str(tmp_path), "--cc", "9.0")
    assert rc == 2, out + err
    assert "UNKNOWN" in out and "cut.so" in out and "cut.so" in err
    rc, out, _ = run_cli(str(tmp_path), "--cc", "9.0", "--json")
    assert rc == 2 and json.loads(out)["runs"] is None
    # ... while a GPU it definitely does not run on is a plain "no"
    assert run_cli(str(tmp_path), "--cc", "8.0")[0] == 1


def test_cli_local_without_driver(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import cuwheel.compat.localgpu as lg

    def no_nvml() -> lg.LocalMachine:
        raise ImportError("pynvml")

    def no_lib(name: str) -> None:
        raise OSError(f"{name}: cannot open shared object file")

    monkeypatch.setattr(lg, "_via_nvml", no_nvml)
    monkeypatch.setattr(lg.ctypes, "CDLL", no_lib)
    rc, _, err = run_cli(fx("sm80.so"), "--local")
    assert rc == 2
    assert "no NVIDIA driver found" in err and "nvidia-ml-py" in err


def test_cli_local_uses_the_machine(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    import cuwheel.compat.localgpu as lg

    machine = lg.LocalMachine(
        (lg.LocalGpu(0, "NVIDIA H200", Arch(90)),), Driver("580.159.04", (13, 0)), "nvml"
    )
    real_detect = lg.detect
    monkeypatch.setattr(lg, "detect", lambda: machine)
    rc, out, err = run_cli(fx("k89.ptx"), fx("sm90a.so"), "--local")
    assert rc == 0
    assert "GPU 0: NVIDIA H200 (CC 9.0) with driver 580.159.04 / CUDA 13.0: RUNS" in out
    assert "1 GPU(s)" in err
    machine_no_gpu = lg.LocalMachine((), Driver("580.159.04", (13, 0)), "nvml")
    monkeypatch.setattr(lg, "_via_nvml", lambda: machine_no_gpu)
    with pytest.raises(lg.NoGpuError, match="reports no GPU"):
        real_detect()

"""The knowledge catalog: loads, validates, and answers lookups with the values of docs/cuda.md.

Expected values are taken from docs/cuda.md (with their sources), not from
the data files under test.
"""

from __future__ import annotations

import json

import pytest

from cuwheel.knowledge import catalog
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.catalog import CatalogError
from cuwheel.model.arch import Arch, ArchSpec


def test_loads_once_and_notes_sources() -> None:
    assert catalog.load_catalog() is catalog.load_catalog()
    metas = catalog.data_sources()
    assert {m.file for m in metas} == {"gpus.toml", "cuda.toml", "packages.toml", "consumers.toml"}
    for m in metas:
        assert m.sources and m.compiled


@pytest.mark.parametrize(
    ("query", "sass"),
    [
        ("4090", "sm_89"),
        ("A10G", "sm_86"),
        ("H200", "sm_90"),
        ("GB200", "sm_100"),
        ("RTX 5090", "sm_120"),
        ("Jetson Orin", "sm_87"),
        ("DGX Spark", "sm_121"),
        ("RTX PRO 6000", "sm_120"),
        ("RTX 6000 Ada", "sm_89"),
        ("Quadro RTX 6000", "sm_75"),
        ("T4", "sm_75"),
        ("B300", "sm_103"),
        ("Jetson AGX Thor", "sm_110"),
        ("L40S", "sm_89"),
        ("GH200", "sm_90"),
        # developer.nvidia.com/cuda-gpus: 12.0 RTX PRO 2000 Blackwell, 8.9 RTX 4000 SFF Ada
        # and GeForce RTX 4050, 8.6 RTX A3000; nvidia-smi spells laptop parts "... Laptop GPU"
        ("RTX PRO 2000 Blackwell", "sm_120"),
        ("NVIDIA RTX 4000 SFF Ada Generation", "sm_89"),
        ("RTX 4050", "sm_89"),
        ("NVIDIA GeForce RTX 4050 Laptop GPU", "sm_89"),
        ("NVIDIA RTX A3000 Laptop GPU", "sm_86"),
        ("NVIDIA GeForce RTX 4090 Laptop GPU", "sm_89"),
        ("GeForce RTX 3080 Laptop GPU", "sm_86"),
        ("GeForce RTX 5090 Laptop GPU", "sm_120"),
    ],
)
def test_gpu_lookup_first_hit(query: str, sass: str) -> None:
    hits = catalog.find_gpus(query)
    assert hits, query
    assert hits[0].gpu.arch.sass == sass


def test_rtx_6000_is_three_different_gpus() -> None:
    found = {m.gpu.arch.sass for m in catalog.find_gpus("RTX 6000")}
    assert found == {"sm_75", "sm_89", "sm_120"}


def test_server_editions_are_data_center_products() -> None:
    # NVIDIA's CC table lists the RTX PRO 6000 / 4500 Blackwell Server Editions under Data Center
    (hit,) = catalog.find_gpus("RTX PRO 4500 Blackwell Server Edition")
    assert [(p.name, p.segment) for p in hit.products] == [
        ("RTX PRO 4500 Blackwell Server Edition", "datacenter")
    ]
    assert catalog.find_gpus("Laptop") == ()


def test_a10_does_not_match_a100() -> None:
    assert {m.gpu.arch.sass for m in catalog.find_gpus("A10")} == {"sm_86"}
    assert {m.gpu.arch.sass for m in catalog.find_gpus("A100")} == {"sm_80"}


def test_gpu_by_cc_and_family() -> None:
    assert catalog.find_gpus("8.9")[0].gpu.family.startswith("Ada")
    assert catalog.find_gpus("sm_90a")[0].gpu.cc == "9.0"
    assert {m.gpu.cc for m in catalog.find_gpus("Hopper")} == {"9.0"}
    assert catalog.find_gpus("no such gpu xyz") == ()
    assert len(catalog.find_gpus("")) == len(catalog.load_catalog().gpus)
    g = catalog.gpu_for_arch("sm_121a")
    assert g is not None and g.cc == "12.1"


# docs/cuda.md#ptx-isa-by-release: PTX ISA emitted per release.
@pytest.mark.parametrize(
    ("version", "isa"),
    [("11.8", "7.8"), ("12.0", "8.0"), ("12.6", "8.5"), ("12.8", "8.7"), ("12.9", "8.8"),
     ("13.0", "9.0"), ("13.5", "9.5")],
)  # fmt: skip
def test_ptx_isa(version: str, isa: str) -> None:
    assert catalog.release(version).ptx_isa_name == isa


def test_release_targets_from_fact_sheet() -> None:
    r130 = catalog.release("13.0")
    # nvcc 13.0 rejects sm_50..sm_72 and sm_101; accepts sm_75, sm_88, sm_110.
    for name in ("sm_70", "sm_72", "sm_101", "sm_107"):
        assert not r130.accepts(Arch.parse(name)), name
    for name in ("sm_75", "sm_88", "sm_90a", "sm_100f", "sm_110", "sm_121a"):
        assert r130.accepts(Arch.parse(name)), name
    assert r130.default_arch == Arch(75)
    assert catalog.release("13.4").accepts(Arch.parse("sm_107f"))
    assert not catalog.release("12.6").accepts(Arch.parse("sm_110"))
    assert not catalog.release("12.6").accepts(Arch.parse("sm_100"))
    assert catalog.release("12.8").accepts(Arch.parse("sm_101a"))
    assert not catalog.release("12.8").accepts(Arch.parse("sm_100f"))  # f arrived in 12.9
    assert catalog.release("11.8").accepts(Arch(90))
    assert not catalog.release("11.8").accepts(Arch(90, "a"))
    assert catalog.release("12.0").default_arch == Arch(52)
    # `a` exists only for 90 and >= 100, `f` only for >= 100 (ptxas 13.5 list).
    for a in catalog.release("13.5").sass:
        if a.variant == "a":
            assert a.number == 90 or a.number >= 100
        if a.variant == "f":
            assert a.number >= 100


def test_families() -> None:
    def members(version: str, name: str) -> set[str]:
        return {a.sass for a in catalog.release(version).family(Arch.parse(name))}

    assert members("12.9", "sm_100f") == {"sm_100", "sm_103"}
    assert members("12.9", "sm_101f") == {"sm_101"}
    assert members("13.0", "sm_110f") == {"sm_110"}
    assert members("13.4", "sm_100f") == {"sm_100", "sm_103", "sm_107"}
    assert members("13.5", "sm_120f") == {"sm_120", "sm_121"}
    assert members("13.5", "sm_121f") == {"sm_121"}
    assert members("13.5", "sm_90") == set()


def test_named_groups() -> None:
    r = catalog.release("13.0")
    major = r.group("all-major")
    assert major is not None
    assert [str(s) for s in major] == [
        "sm_75", "sm_80", "sm_90", "sm_100", "sm_110", "sm_120+PTX",
    ]  # fmt: skip
    all_135 = catalog.release("13.5").group("ALL")
    assert all_135 is not None and ArchSpec(Arch(107)) in all_135
    assert catalog.release("12.6").group("all-major") is None  # not recorded: unknown


def test_release_lookup_errors() -> None:
    assert catalog.release("13.0.88").name == "13.0"
    assert catalog.release((12, 9)).train == "cu129"
    with pytest.raises(LookupError, match="never released"):
        catalog.release("12.7")
    with pytest.raises(LookupError, match=r"unknown CUDA release 14\.0"):
        catalog.release("14.0")


def test_drivers_known_and_unknown() -> None:
    assert catalog.release("13.0").driver_linux == "580.65.06"
    assert catalog.release("13.0").driver_windows is None  # not tabulated: unknown
    assert catalog.release("12.0").driver_windows == "527.41"
    # NVIDIA's driver manifest redistrib_620.70.06.json: cuda_compat for CUDA 13.5 (R620).
    assert catalog.release("13.5").driver_linux == "620.70.06"
    assert catalog.release("13.5").driver_windows is None
    # Release notes table: CUDA 11.8 GA Windows ">=520.06" (not the installer's 522.06).
    assert catalog.release("11.8").driver_windows == "520.06"
    assert catalog.release("12.0").driver_linux == "525.60.13"  # GA row, not 12.0 Update 1
    # CUDA 13.4 release notes: R615 branch; only the branch is known, so any 615.x meets it.
    assert catalog.release("13.4").driver_linux == "615"
    # CUDA Compatibility docs, Table 2 "CUDA Toolkit 10.x Minimum Required Driver Versions".
    assert [(catalog.release(v).driver_linux, catalog.release(v).driver_windows)
            for v in ("10.0", "10.1", "10.2")] == [
        ("410.48", "411.31"), ("418.39", "418.96"), ("440.33", "441.22")]  # fmt: skip
    floor = catalog.minor_compat_floor(12)
    assert floor is not None and floor.driver_linux == "525.60.13"
    floor13 = catalog.minor_compat_floor(13)
    assert floor13 is not None and floor13.driver_linux == "580.65.06"
    assert catalog.minor_compat_floor(10) is None


def test_ptx_isa_to_toolkit() -> None:
    # 8.6 belongs to the unreleased 12.7: the first toolkit that understands it is 12.8.
    r = catalog.release_for_ptx_isa("8.6")
    assert r is not None and r.name == "12.8"
    r = catalog.release_for_ptx_isa("9.1")
    assert r is not None and r.name == "13.1"
    assert catalog.release_for_ptx_isa("9.9") is None


def test_releases_supporting_and_rename() -> None:
    names = [r.name for r in catalog.releases_supporting(Arch(110))]
    assert names[0] == "13.0"
    assert [r.name for r in catalog.releases_supporting(Arch(101))] == ["12.8", "12.9"]
    (rename,) = catalog.renames()
    assert (rename.old, rename.new) == (Arch(101), Arch(110))


@pytest.mark.parametrize(
    ("library", "major", "distribution", "requirement"),
    [
        ("libcudart.so.13", 13, "nvidia-cuda-runtime", "cuda-toolkit[cudart]==13.*"),
        ("libcudart.so.12", 12, "nvidia-cuda-runtime-cu12", "cuda-toolkit[cudart]==12.*"),
        ("libcublasLt.so.13", 13, "nvidia-cublas", "cuda-toolkit[cublas]==13.*"),
        ("libcufft.so.12", 13, "nvidia-cufft", "cuda-toolkit[cufft]==13.*"),
        ("libnvrtc-builtins.so.13.5", 13, "nvidia-cuda-nvrtc", "cuda-toolkit[nvrtc]==13.*"),
        ("cudart64_13.dll", 13, "nvidia-cuda-runtime", "cuda-toolkit[cudart]==13.*"),
        ("CUDART64_12.DLL", 12, "nvidia-cuda-runtime-cu12", "cuda-toolkit[cudart]==12.*"),
        ("libcudnn.so.9", 13, "nvidia-cudnn-cu13", "nvidia-cudnn-cu13"),
        ("libnccl.so.2", 13, "nvidia-nccl-cu13", "nvidia-nccl-cu13"),
        ("libcupti.so.11.8", 11, "nvidia-cuda-cupti-cu11", "cuda-toolkit[cupti]==11.8.*"),
        ("cupti64_13.dll", 13, "nvidia-cuda-cupti", "cuda-toolkit[cupti]==13.*"),
        # names read from the wheels (issue 19 audit; docs/facts-changed.md)
        ("cusparse64_11.dll", 11, "nvidia-cusparse-cu11", "cuda-toolkit[cusparse]==11.8.*"),
        ("cufftw64_10.dll", 11, "nvidia-cufft-cu11", "cuda-toolkit[cufft]==11.8.*"),
        ("nvblas64_11.dll", 11, "nvidia-cublas-cu11", "cuda-toolkit[cublas]==11.8.*"),
        ("cusolverMg64_11.dll", 11, "nvidia-cusolver-cu11", "cuda-toolkit[cusolver]==11.8.*"),
        ("libcufile_rdma.so.1", 12, "nvidia-cufile-cu12", "cuda-toolkit[cufile]==12.*"),
        ("cudnn_engines_precompiled64_9.dll", 13, "nvidia-cudnn-cu13", "nvidia-cudnn-cu13"),
        ("cudnn_graph64_9.dll", 12, "nvidia-cudnn-cu12", "nvidia-cudnn-cu12"),
        ("libcutensorMg.so.2", 12, "cutensor-cu12", "cutensor-cu12"),
        ("cutensor.dll", 13, "cutensor-cu13", "cutensor-cu13"),
        ("libcudss.so.0", 12, "nvidia-cudss-cu12", "nvidia-cudss-cu12"),
        ("cudss_mtlayer_vcomp14064_1.dll", 13, "nvidia-cudss-cu13", "nvidia-cudss-cu13"),
        ("libcublasmp.so.0", 13, "nvidia-cublasmp-cu13", "nvidia-cublasmp-cu13"),
        ("libcufftMp.so.11", 12, "nvidia-cufftmp-cu12", "nvidia-cufftmp-cu12"),
        ("mathdx64_0.dll", 12, "nvidia-libmathdx-cu12", "nvidia-libmathdx-cu12"),
        ("nvshmem_transport_ibrc.so.3", 11, "nvidia-nvshmem-cu11", "nvidia-nvshmem-cu11"),
        ("nvshmem_transport_ucx.so.4", 12, "nvidia-nvshmem-cu12", "nvidia-nvshmem-cu12"),
        ("nvshmem_transport_gpunetio.so.7", 13, "nvidia-nvshmem-cu13", "nvidia-nvshmem-cu13"),
    ],
)
def test_library_to_package(library: str, major: int, distribution: str, requirement: str) -> None:
    (c,) = catalog.find_library(library, major=major)
    assert c.distribution == distribution
    assert c.requirement == requirement


def test_library_dirs() -> None:
    (rt13,) = catalog.find_library("libcudart.so.13")
    assert rt13.linux_dir == "nvidia/cu13/lib"
    assert rt13.windows_dir == "nvidia/cu13/bin/x86_64"
    (rt12,) = catalog.find_library("libcudart.so.12")
    assert rt12.linux_dir == "nvidia/cuda_runtime/lib"
    (cudnn,) = catalog.find_library("libcudnn_graph.so.9", major=13)
    assert cudnn.linux_dir == "nvidia/cudnn/lib"
    # Same soname in three majors.
    assert {c.major for c in catalog.find_library("libcurand.so.10")} == {11, 12, 13}
    assert catalog.find_library("libcudart.so.13", os="windows") == ()
    assert catalog.find_library("libfoo.so.1") == ()
    # cuSOLVER 11.x is in CUDA 11 and 12 under the same names: the name says no major
    assert {c.major for c in catalog.find_library("cusolver64_11.dll")} == {11, 12}
    (cudss13,) = catalog.find_library("libcudss.so.1", major=13)
    assert (cudss13.linux_dir, cudss13.windows_dir) == ("nvidia/cu13/lib", "nvidia/cu13/bin")
    (mp12,) = catalog.find_library("libcufftMp.so.11")
    assert (mp12.linux_dir, mp12.windows_dir) == ("nvidia/cufftmp/cu12/lib", None)
    # cuTENSOR: one soname for both CUDA majors; libcufftw.so.12 stays cuFFT's alone
    assert {c.major for c in catalog.find_library("libcutensor.so.2")} == {12, 13}
    assert [c.name for c in catalog.find_library("libcufftw.so.12")] == ["cufft"]
    # NVSHMEM transport plugins: no soname past 3.8's .so.7 is known
    assert catalog.find_library("nvshmem_transport_ucx.so.8") == ()


@pytest.mark.parametrize(
    ("name", "driver"),
    [
        ("libcuda.so.1", True),
        ("libcuda.so", True),
        ("/usr/lib/x86_64-linux-gnu/libnvidia-ml.so.1", True),
        ("libnvidia-ptxjitcompiler.so.1", True),
        ("libnvidia-nvvm.so.4", True),
        ("libnvidia-glcore.so.580.159.04", True),
        ("nvcuda.dll", True),
        ("NVML.DLL", True),
        ("libnvvm.so.4", False),  # the toolkit's NVVM, not the driver's
        ("libOpenCL.so.1", False),  # Khronos ICD loader
        ("libcudart.so.13", False),
        ("libcublas.so.12", False),
    ],
)
def test_driver_libraries(name: str, driver: bool) -> None:
    assert catalog.is_driver_library(name) is driver


def test_platforms_and_consumers() -> None:
    p = catalog.platform_for_wheel_tag("manylinux_2_28_x86_64")
    assert p is not None and p.name == "linux-x86_64"
    p = catalog.platform_for_wheel_tag("manylinux2014_aarch64")
    assert p is not None and p.name == "linux-aarch64"
    p = catalog.platform_for_wheel_tag("win_amd64")
    assert p is not None and p.name == "win-amd64"
    assert catalog.platform_for_wheel_tag("macosx_14_0_arm64") is None
    t = catalog.torch_consumer("2.14.1")
    assert Arch(90, "a") in t.accepted and Arch(88) not in t.accepted
    assert not any(a.variant == "f" for a in t.accepted)
    with pytest.raises(LookupError):
        catalog.torch_consumer("1.0")
    assert catalog.cmake_consumer().f_rejected == "3.25.1"


# ---------------------------------------------------------------- validation of broken data


def edited(name: str, edit) -> catalog.Catalog:  # type: ignore[no-untyped-def]
    """A catalog built from the shipped data files with one of them edited (no cache, no
    monkeypatching: build_catalog takes the tables)."""
    tables = {n: read_data_file(n) for n in catalog.DATA_FILES}
    tables[name] = json.loads(json.dumps(tables[name]))
    edit(tables[name])
    return catalog.build_catalog(tables)


def test_broken_data_reports_every_problem() -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        r = d["release"][-1]
        r["sass"].insert(0, "sm_200")  # unknown GPU and out of order
        r["default_arch"] = "sm_61"  # not a target
        r["colour"] = "green"  # unknown key
        d["release"][0]["driver_linux"] = "four-fifty"
        del d["meta"]["sources"]

    with pytest.raises(CatalogError) as info:
        edited("cuda.toml", edit)
    text = "\n".join(info.value.problems)
    assert "'sass' must be sorted" in text
    assert "default_arch sm_61 is not in 'sass'" in text
    assert "unknown key 'colour'" in text
    assert "not a driver version: 'four-fifty'" in text
    assert "missing key 'sources'" in text
    assert "sm_200 has no gpus.toml entry" in text


def test_broken_forward_compat() -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        d["forward_compat"]["segments"].append("gaming")
        d["forward_compat"]["os"].append("macos")

    with pytest.raises(CatalogError) as info:
        edited("cuda.toml", edit)
    text = "\n".join(info.value.problems)
    assert "unknown segment 'gaming'" in text
    assert "os must be linux or windows: 'macos'" in text


def test_broken_codec_gate() -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        d["fatbin_codecs"]["zstd"] = "12.7"  # never released
        d["fatbin_codecs"]["brotli"] = "13.0"

    with pytest.raises(CatalogError) as info:
        edited("cuda.toml", edit)
    text = "\n".join(info.value.problems)
    assert "zstd: 12.7 is not a release" in text
    assert "unknown key 'brotli'" in text


def test_codec_gate_data() -> None:
    # NVIDIA's nvcc docs: --compress-mode "is not compatible with drivers released before
    # CUDA Toolkit's 12.4 Release"
    rel = catalog.codec_release("zstd")
    assert rel is not None and rel.name == "12.4"
    assert catalog.codec_release("lz4") is None and catalog.codec_release("none") is None


def test_forward_compat_data() -> None:
    # NVIDIA's Forward Compatibility page: data-center GPUs, select NGC Server Ready RTX
    # cards, Jetson boards; older Linux drivers only
    fc = catalog.forward_compat()
    assert fc is not None
    assert fc.os == ("linux",) and set(fc.segments) == {"datacenter", "embedded"}


def test_broken_gpu_names() -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        d["gpu"][-1]["products"].append({"name": "H200", "segment": "datacenter"})
        d["gpu"][0]["products"][0]["segment"] = "gaming"

    with pytest.raises(CatalogError) as info:
        edited("gpus.toml", edit)
    text = "\n".join(info.value.problems)
    assert "name 'H200' also used for CC" in text
    assert "segment must be one of" in text


def test_component_may_not_ship_a_driver_library() -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        d["component"][0]["linux"].append("libcuda.so.1")

    with pytest.raises(CatalogError, match=r"libcuda\.so\.1 matches a driver library"):
        edited("packages.toml", edit)


# ---------------------------------------------------------------- tegra and hosts
#
# Expectations come from independent statements, not from the data:
# * NVIDIA's Jetson modules are Tegra SoCs with Arm CPUs: a Jetson is never driven from x86
#   or Windows (TK1 is 32-bit ARMv7, so not even from linux-aarch64);
# * the Grace superchips (GH200, GB200, GB300) pair the GPU with NVIDIA's Arm CPU Grace;
# * DGX Spark is an Arm (GB10) system, integrated but not a Tegra SoC;
# * a GeForce card is a desktop part that NVIDIA ships Windows and Linux x86 drivers for.


def _all_products() -> list[tuple[catalog.Gpu, catalog.Product]]:
    return [(g, p) for g in catalog.load_catalog().gpus for p in g.products]


def test_jetsons_are_tegra_and_arm_only() -> None:
    jetsons = [(g, p) for g, p in _all_products() if "Jetson" in p.name]
    assert {g.cc for g, _ in jetsons} >= {"5.3", "6.2", "7.2", "8.7", "11.0"}
    for g, p in jetsons:
        assert g.tegra, p.name
        assert set(p.hosts or g.hosts) <= {"linux-aarch64"}, p.name
        assert p.segment == "embedded", p.name
    # Every 64-bit Jetson (all but TK1) is driven from linux-aarch64 wheels.
    assert all("linux-aarch64" in g.hosts for g, p in jetsons if p.name != "Jetson TK1")


def test_tegra_gpus_have_only_embedded_arm_products() -> None:
    for g in catalog.load_catalog().gpus:
        if g.tegra:
            assert g.products, g.cc
            assert all(p.segment == "embedded" for p in g.products), g.cc
            assert set(g.hosts) <= {"linux-aarch64"}, g.cc
        else:
            assert not any("Jetson" in p.name for p in g.products), g.cc


def test_grace_superchips_are_aarch64_only() -> None:
    grace = {p.name: (g, p) for g, p in _all_products() if p.name in ("GH200", "GB200", "GB300")}
    assert set(grace) == {"GH200", "GB200", "GB300"}
    for g, p in grace.values():
        assert p.hosts == ("linux-aarch64",), p.name
        # The CC's discrete parts (H100, B200, B300) also run with x86 hosts.
        assert "linux-x86_64" in g.hosts, g.cc


def test_dgx_spark_is_arm_but_not_tegra() -> None:
    (hit,) = [m for m in catalog.find_gpus("DGX Spark") if m.exact]
    assert hit.gpu.cc == "12.1"
    assert hit.gpu.hosts == ("linux-aarch64",)
    assert not hit.gpu.tegra
    assert "GB20B" in hit.gpu.chips  # GB10 is the superchip, GB20B its GPU


def test_geforce_runs_on_x86_linux_and_windows() -> None:
    for g, p in _all_products():
        if p.name.startswith("GeForce"):
            assert {"linux-x86_64", "win-amd64"} <= set(p.hosts or g.hosts), p.name


def test_hosts_are_row_platforms_and_products_within_their_gpu() -> None:
    for g in catalog.load_catalog().gpus:
        assert len(set(g.hosts)) == len(g.hosts), g.cc
        for h in g.hosts:
            assert catalog.platform(h) is not None, (g.cc, h)
        for p in g.products:
            assert p.hosts is None or set(p.hosts) <= set(g.hosts), p.name


def test_new_chip_names() -> None:
    g72 = catalog.gpu_for_arch("sm_72")
    assert g72 is not None and g72.chips == ("GV11B",)  # Tegra194 (Xavier)
    assert catalog.find_gpus("GV11B")[0].gpu.cc == "7.2"


def test_kepler_history_back_to_cuda_10() -> None:
    r100 = catalog.release("10.0")
    assert r100.ptx_isa_name == "6.3"
    assert r100.accepts(Arch(30)) and r100.accepts(Arch(75)) and not r100.accepts(Arch(80))
    assert catalog.release("10.2").accepts(Arch(32))
    assert not catalog.release("11.0").accepts(Arch(30))  # dropped in 11.0
    assert [r.name for r in catalog.releases_supporting(Arch(30))] == ["10.0", "10.1", "10.2"]
    assert catalog.release("11.4").accepts(Arch(87))  # PTX ISA 7.4 adds sm_87
    assert not catalog.release("11.3").accepts(Arch(87))
    r = catalog.release_for_ptx_isa("6.4")
    assert r is not None and r.name == "10.1"
    tk1 = catalog.gpu_for_arch("sm_32")
    assert tk1 is not None and tk1.tegra and tk1.hosts == ()


def test_broken_hosts_and_tegra() -> None:
    def edit(d: dict) -> None:  # type: ignore[type-arg]
        by_cc = {g["cc"]: g for g in d["gpu"]}
        by_cc["8.0"]["hosts"] = ["linux-x86_64", "macos-arm64"]
        by_cc["8.0"]["tegra"] = "yes"
        by_cc["9.0"]["products"][0]["hosts"] = ["win-arm64"]  # not among the GPU's hosts
        by_cc["10.0"]["hosts"] = ["linux-aarch64", "linux-aarch64"]

    with pytest.raises(CatalogError) as info:
        edited("gpus.toml", edit)
    text = "\n".join(info.value.problems)
    assert "host 'macos-arm64' is no platforms.toml row platform" in text
    assert "'tegra' must be bool" in text
    assert "not all in the GPU's hosts" in text
    assert "'hosts' has duplicates" in text

"""NVIDIA's cuda-pathfinder and our package map (packages.toml) agree on library names.

cuda-pathfinder (pinned in the ``test`` extra) carries NVIDIA's own descriptors of the
libraries it can load: ``cuda.pathfinder._dynamic_libs.descriptor_catalog.DESCRIPTOR_CATALOG``,
one ``DescriptorSpec`` per library with its Linux sonames and Windows DLL names (every CUDA
major merged, newest first), the site-packages directories of NVIDIA's wheels, and whether
the library comes with the toolkit ("ctk"), separately ("other") or with the driver.

The checks: every name pathfinder lists for a library that one of our components covers is
matched by that component (in some CUDA major), unless it is in KNOWN_PATHFINDER_ERRORS;
the driver libraries it lists are driver libraries for us; and our components' wheel
directories are among the ones it searches.  Libraries our map does not cover are listed
in NOT_COVERED, so that a new pathfinder descriptor fails here until it is decided.
"""

from __future__ import annotations

import pytest

import _absent
from cuwheel.knowledge import catalog

pathfinder = _absent.extra("cuda-pathfinder", "cuda.pathfinder")
descriptor_catalog = _absent.extra("cuda-pathfinder",
                                   "cuda.pathfinder._dynamic_libs.descriptor_catalog")

# pyproject.toml pins 1.9.1 (1.8.3 on Python 3.10, which 1.8.4+ no longer supports); both
# were read when this file was written.
PINNED = {"1.9.1", "1.8.3"}

# pathfinder descriptor name -> our component name (packages.toml [[component]] name).
COVERED = {
    "cudart": "cudart",
    "nvfatbin": "nvfatbin",
    "nvJitLink": "nvjitlink",
    "nvrtc": "nvrtc",
    "nvvm": "nvvm",
    "cublas": "cublas",
    "cublasLt": "cublas",
    "nvblas": "cublas",
    "cufft": "cufft",
    "cufftw": "cufft",
    "curand": "curand",
    "cusolver": "cusolver",
    "cusolverMg": "cusolver",
    "cusparse": "cusparse",
    "nppc": "npp",
    "nppial": "npp",
    "nppicc": "npp",
    "nppidei": "npp",
    "nppif": "npp",
    "nppig": "npp",
    "nppim": "npp",
    "nppist": "npp",
    "nppisu": "npp",
    "nppitc": "npp",
    "npps": "npp",
    "nvjpeg": "nvjpeg",
    "cufile": "cufile",
    "cupti": "cupti",
    "cudnn": "cudnn",
    "nccl": "nccl",
    "nvshmem_host": "nvshmem",
    "cusparseLt": "cusparselt",
    "cutensor": "cutensor",
    "cutensorMg": "cutensor",
    "cutensorMp": "cutensor",
    "cudss": "cudss",
    "cublasmp": "cublasmp",
    "cufftMp": "cufftmp",
    "mathdx": "mathdx",
}

# Libraries pathfinder describes that packages.toml has no component for (yet).
NOT_COVERED = {
    "cudla",  # libcudla.so.1 (nvidia/cu13/lib); cudla.dll: pathfinder says no wheel ships it
    "cusolverMp",
    "cudensitymat",
    "cupauliprop",
    "cutensornet",
    "custabilizer",
    "custatevec",
    "nvpl_fftw",
}

# Names pathfinder lists that no NVIDIA wheel ships, checked by opening the wheels
# (pip download --no-deps --only-binary=:all: ... ; unzip -l):
KNOWN_PATHFINDER_ERRORS = {
    # A "future" cuRAND major: every nvidia-curand release (10.4.0.35 ... 10.4.5.25, the
    # newest, manylinux_2_27_x86_64 and win_amd64) ships libcurand.so.10 / curand64_10.dll,
    # as does nvidia-curand-cu12; no wheel has a .so.11 or curand64_11.dll.
    "libcurand.so.11",
    "curand64_11.dll",
    # NVVM DLL names found in no wheel: nvidia-nvvm 13.0.48 / 13.5.37 (win_amd64 and
    # 13.5.37 win_arm64) and nvidia-cuda-nvcc-cu12 12.0.76 / 12.9.86, -cu11 11.8.89
    # (win_amd64) all ship nvvm64_40_0.dll only.
    "nvvm64.dll",
    "nvvm70.dll",
}


def _descriptors() -> tuple[object, ...]:
    return tuple(descriptor_catalog.DESCRIPTOR_CATALOG)


def test_pinned_version() -> None:
    assert pathfinder.__version__ in PINNED


def test_every_descriptor_is_decided() -> None:
    names = {d.name for d in _descriptors() if d.packaged_with != "driver"}
    assert names - set(COVERED) - NOT_COVERED == set(), "new pathfinder library: decide"
    assert set(COVERED) - names == set(), "pathfinder dropped a library we map"


def _components(name: str) -> list[catalog.Component]:
    comps = [c for c in catalog.load_catalog().components if c.name == name]
    assert comps, name
    return comps


@pytest.mark.parametrize("lib", sorted(COVERED))
def test_pathfinder_names_are_in_our_map(lib: str) -> None:
    (desc,) = [d for d in _descriptors() if d.name == lib]
    comps = _components(COVERED[lib])
    missing = [
        name
        for os, names in (("linux", desc.linux_sonames), ("windows", desc.windows_dlls))
        for name in names
        if name not in KNOWN_PATHFINDER_ERRORS and not any(c.ships(name, os) for c in comps)
    ]
    assert missing == [], f"{lib}: pathfinder lists {missing}; packages.toml does not"


def test_known_errors_are_still_listed_and_still_unmatched() -> None:
    listed = {n for d in _descriptors() for n in (*d.linux_sonames, *d.windows_dlls)}
    assert listed >= KNOWN_PATHFINDER_ERRORS, "pathfinder fixed one: drop it from the list"
    for name in KNOWN_PATHFINDER_ERRORS:
        assert catalog.find_library(name) == (), name


def test_pathfinder_driver_libraries_are_driver_libraries() -> None:
    drivers = [d for d in _descriptors() if d.packaged_with == "driver"]
    assert {d.name for d in drivers} >= {"cuda", "nvml"}
    for d in drivers:
        for name in (*d.linux_sonames, *d.windows_dlls):
            assert catalog.is_driver_library(name), name
            assert catalog.find_library(name) == (), name


@pytest.mark.parametrize("lib", sorted(COVERED))
def test_our_wheel_dirs_are_pathfinders(lib: str) -> None:
    (desc,) = [d for d in _descriptors() if d.name == lib]
    for c in _components(COVERED[lib]):
        if c.linux and desc.site_packages_linux:
            assert c.linux_dir in desc.site_packages_linux, (c.major, c.linux_dir)
        win = desc.site_packages_windows
        if c.windows and c.windows_dir and win.x64:
            assert c.windows_dir in win.x64, (c.major, c.windows_dir)
        if c.windows and c.windows_arm64_dir and win.arm64:
            assert c.windows_arm64_dir in win.arm64, (c.major, c.windows_arm64_dir)

"""Seed-row wheels for the `cuwheel check` tests, packed at test time from tests/data/bin.

Each builder returns the members, requirements, version and tag of one wheel; `build`
writes it with tests/wheelfactory.py.  Broken variants change one thing: a member, a
requirement, the name, or bytes of a fixture (`patch` swaps a string in .dynstr for a
shorter one padded with NULs, the way pyelftools' corrupt-file suite derives variants).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field, replace
from pathlib import Path

from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"

X86_RPATH = b"$ORIGIN/../../nvidia/cu13/lib"
ORIN_RPATH = b"$ORIGIN/../../nvidia/cuda_runtime/lib"


def fixture(name: str) -> bytes:
    return (BIN / name).read_bytes()


def patch(data: bytes, old: bytes, new: bytes) -> bytes:
    """Replace every NUL-terminated ``old`` by ``new`` (not longer), padding with NULs."""
    assert len(new) <= len(old), (old, new)
    assert old + b"\0" in data, old
    return data.replace(old + b"\0", new + b"\0" * (len(old) - len(new) + 1))


@dataclass(frozen=True)
class Spec:
    members: dict[str, bytes]
    version: str
    tag: str
    requires: tuple[str, ...] = ()
    name: str = "pkg"
    extra: dict[str, bytes] = field(default_factory=dict)
    wheel_tags: tuple[str, ...] | None = None  # the WHEEL file's Tag lines (default: tag)

    def with_member(self, arcname: str, data: bytes) -> Spec:
        return replace(self, members={**self.members, arcname: data})

    def without(self, arcname: str) -> Spec:
        return replace(self, members={k: v for k, v in self.members.items() if k != arcname})

    def build(self, directory: str | os.PathLike[str]) -> str:
        return make_wheel(directory, self.members, name=self.name, version=self.version,
                          tag=self.tag, requires=self.requires, wheel_tags=self.wheel_tags)


CU13_LINUX = 'cuda-toolkit[cudart]==13.*; sys_platform == "linux"'


def linux_x86_cu13() -> Spec:
    return Spec(
        {
            "pkg/__init__.py": b"",
            "pkg/lib/libpkg_cuda.so": fixture("row_x86_cu13.so"),
            "pkg/_C.so": fixture("hostonly.so"),
        },
        "1.0+cu130",
        "cp311-cp311-manylinux_2_28_x86_64",
        (CU13_LINUX,),
    )


def linux_aarch64_cu13() -> Spec:
    return Spec(
        {
            "pkg/__init__.py": b"",
            "pkg/lib/libpkg_cuda.so": fixture("row_arm_cu13.so"),
            "pkg/_C.so": fixture("row_arm_hostonly.so"),
        },
        "1.0+cu130",
        "cp311-cp311-manylinux_2_28_aarch64",
        (CU13_LINUX,),
    )


def linux_aarch64_cu126() -> Spec:
    return Spec(
        {
            "pkg/__init__.py": b"",
            "pkg/lib/libpkg_cuda.so": fixture("row_orin_cu126.so"),
            "pkg/_C.so": fixture("row_arm_hostonly.so"),
        },
        "1.0+cu126",
        "cp310-cp310-manylinux_2_28_aarch64",
        ('nvidia-cuda-runtime-cu12==12.6.*; platform_machine == "aarch64"',),
    )


def win_amd64_cu13() -> Spec:
    return Spec(
        {
            "pkg/__init__.py": b"",
            "pkg/pkg_cuda.dll": fixture("row_win_cu13.dll"),
            "pkg/_C.pyd": fixture("win_hostonly.dll"),
        },
        "1.0+cu132",
        "cp311-cp311-win_amd64",
        (CU13_LINUX,),  # Linux-only: must not apply on Windows
    )


def cpu() -> Spec:
    return Spec(
        {"pkg/__init__.py": b"", "pkg/_C.so": fixture("hostonly.so")},
        "1.0+cpu",
        "cp311-cp311-manylinux_2_28_x86_64",
    )


SEEDS = {
    "linux-x86_64-cu13": linux_x86_cu13,
    "linux-aarch64-cu13": linux_aarch64_cu13,
    "linux-aarch64-cu126": linux_aarch64_cu126,
    "win-amd64-cu13": win_amd64_cu13,
    "cpu": cpu,
}

# ExecuTorch's rows as its release engineers write them in cuwheel.toml: no profile, no
# extra key (tests/test_gate_e2e.py, tests/test_check_rowpick.py).
EXECUTORCH_TOML = """\
[[rows]]
name = "linux-x86_64-cu13"
platform = "linux-x86_64"
cuda = "13"
sass = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]

[[rows]]
name = "linux-aarch64-cu13"
platform = "linux-aarch64"
cuda = "13"
sass = ["sm_90", "sm_100", "sm_110"]
ptx = "none"

[[rows]]
name = "jetson-cu126"
platform = "linux-aarch64"
cuda = "12.6"
sass = ["sm_87"]
ptx = "none"

[[rows]]
name = "win-amd64-cu13"
platform = "win-amd64"
cuda = ["13.2", "13.4"]
sass = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
dependencies = "none"

[[rows]]
name = "cpu"
cuda = "cpu"
"""

# The seed's check policy: the Python extension must not use CUDA; the CUDA allocator has
# one owner (the CPU wheel has no CUDA allocator).
SEED_POLICY = {"no-cuda": ["pkg/_C*"], "owned-symbols": ["cw_cuda_alloc"]}
CPU_POLICY = {"no-cuda": ["pkg/_C*"]}


def broken_seeds() -> dict[str, Spec]:
    """One realistic broken wheel per seed row (what went wrong in the seed project)."""
    x86 = linux_x86_cu13()
    arm = linux_aarch64_cu13()
    win = win_amd64_cu13()
    return {
        # built with nvcc's all-major list instead of the row's: sm_75 in, sm_86/89 out; its
        # _C extension links libcudart; the run path is the build machine's toolkit
        "linux-x86_64-cu13": x86.with_member("pkg/lib/libpkg_cuda.so", fixture("allmajor.so"))
        .with_member("pkg/_C.so", fixture("hostcudart.so"))
        .with_member("pkg/lib/libpkg_extra.so", patch(fixture("row_x86_cu13.so"), X86_RPATH,
                                                      b"/usr/local/cuda-13.0/lib64")),
        # an x86_64 library in the aarch64 wheel, and a CUDA 12 runtime requirement
        "linux-aarch64-cu13": replace(
            arm.with_member("pkg/lib/libhost.so", fixture("hostonly.so")),
            requires=("nvidia-cuda-runtime-cu12; sys_platform == 'linux'",),
        ),
        # the Orin library shipped under the CUDA 13 train: built by 12.6, links libcudart.so.12
        "linux-aarch64-cu126": replace(linux_aarch64_cu126(), version="1.0+cu130",
                                       requires=(CU13_LINUX,)),
        # the DLL of an older build: imports cudart64_13/cublas64_13, only sm_80/86 + compute_86;
        # and the NVIDIA requirement lost its Linux marker
        "win-amd64-cu13": replace(
            win.with_member("pkg/pkg_cuda.dll", fixture("win_sm80_86.dll")),
            requires=("cuda-toolkit[cudart]==13.*",),
        ),
        # the CUDA build's extension and requirement leaked into the CPU wheel
        "cpu": replace(cpu().with_member("pkg/_C.so", fixture("sm80.so")),
                       requires=("nvidia-cuda-runtime",)),
    }

"""The emitted plans against the real consumers: nvcc, CMake and PyTorch.

Each test skips when its tool is missing.  What a build produced is read back with
``cuwheel.inspect`` (the plan -> build -> inspect loop of issue 3), container by
container; NVIDIA's cuobjdump (PyPI wheel nvidia-cuda-cuobjdump), independent of cuwheel,
cross-checks the same binaries when it is installed.
"""

from __future__ import annotations

import importlib.util
import json
import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import _absent
import cuwheel
from cuwheel import CodeKind
from cuwheel.config import default_config, load_config
from cuwheel.knowledge import catalog
from cuwheel.model.arch import Arch, parse_gencode
from cuwheel.plan import emit
from cuwheel.plan.rows import Plan
from cuwheel.plan.select import select_plan

pytestmark = pytest.mark.consumer

# The seed rows of issue 3 that build CUDA code (train, platform).
SEED_ROWS = [
    ("cu130", "linux-x86_64"),
    ("cu130", "linux-aarch64"),
    ("cu126", "linux-aarch64"),
    ("cu132", "win-amd64"),
    ("cu134", "win-amd64"),
]
KERNEL = "__global__ void k(float* x) { x[threadIdx.x] += 1.0f; }\n"


def seed_plan(train: str, platform: str) -> Plan:
    return select_plan(default_config().rows, train=train, platform=platform, environ={})


NVCC = shutil.which("nvcc")
CMAKE = shutil.which("cmake")
needs_nvcc = _absent.skip_without("nvcc", NVCC is None)


def nvcc_version() -> tuple[int, int]:
    assert NVCC is not None
    out = subprocess.run([NVCC, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"release (\d+)\.(\d+)", out)
    assert m is not None
    return int(m[1]), int(m[2])


Archs = tuple[frozenset[str], frozenset[str]]


def containers_in(binary: Path) -> list[tuple[bool, Archs]]:
    """(device-link stub?, (SASS names, PTX names)) of each fatbin container
    ``cuwheel.inspect`` finds in ``binary``, in file order, e.g.
    ``(False, ({'sm_80', 'sm_90a', 'sm_100f'}, {'compute_120'}))``."""
    inventory = cuwheel.inspect(binary)
    assert not inventory.problems, inventory.problems
    (found,) = inventory.binaries
    return [
        (
            bool(c.device_link),
            (
                frozenset(e.arch.sass for e in c.entries if e.kind is CodeKind.SASS),
                frozenset(e.arch.ptx for e in c.entries if e.kind is CodeKind.PTX),
            ),
        )
        for c in found.containers
    ]


def row_archs(plan: Plan) -> Archs:
    return frozenset(a.sass for a in plan.sass), frozenset(a.ptx for a in plan.ptx)


def assert_built_exactly(plan: Plan, lib: Path, objects: list[Path]) -> None:
    """Each translation unit's container holds exactly the row (SASS with its a/f variant,
    PTX), in its object and in the linked library; nvcc's device-link stub, if the link
    step added one, follows the link line's flags (the same row here) and holds no PTX."""
    want = row_archs(plan)
    for obj in objects:
        assert containers_in(obj) == [(False, want)], obj.name
    found = containers_in(lib)
    units = [archs for stub, archs in found if not stub]
    stubs = [archs for stub, archs in found if stub]
    assert units == [want] * len(objects), found
    assert stubs in ([], [(want[0], frozenset())]), found
    # independent cross-check of the whole library (the test extra's oracle: never skipped)
    assert archs_in(lib) == expected_listing(plan)


def archs_in(binary: Path) -> tuple[set[str], set[str]]:
    """(SASS names, PTX names) that cuobjdump lists, e.g. ({'sm_80'}, {'sm_120'})."""
    out = subprocess.run(
        [_absent.cuobjdump(), "--list-elf", "--list-ptx", str(binary)],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    sass = set(re.findall(r"^ELF file\s+\d+: .*\.(sm_\w+)\.cubin$", out, re.M))
    ptx = set(re.findall(r"^PTX file\s+\d+: .*\.(sm_\w+)\.ptx$", out, re.M))
    return sass, ptx


def expected_listing(plan: Plan) -> tuple[set[str], set[str]]:
    # cuobjdump lists an `f` cubin under the plain name and PTX as sm_XY
    # (docs/formats.md#what-cuobjdump-lists).
    sass = {(a.base if a.variant == "f" else a).sass for a in plan.sass}
    ptx = {a.sass for a in plan.ptx}
    return sass, ptx


def nvcc_build(tmp_path: Path, plan: Plan) -> tuple[Path, Path]:
    """Compile the kernel with the row's flags, then link it with the same flags (so the
    device-link stub nvcc adds at the link step follows the row too): (object, library)."""
    flags = emit.nvcc_flags(plan)
    src = tmp_path / "k.cu"
    src.write_text(KERNEL)
    obj, lib = tmp_path / "k.o", tmp_path / "libk.so"
    nvcc = NVCC or "nvcc"
    subprocess.run(
        [nvcc, "-c", "-Xcompiler", "-fPIC", *flags, "-o", str(obj), str(src)],
        check=True,
        capture_output=True,
    )
    subprocess.run(
        [nvcc, "-shared", *flags, "-o", str(lib), str(obj)], check=True, capture_output=True
    )
    return obj, lib


def nvcc_accepts(plan: Plan) -> bool:
    try:
        release = catalog.release(nvcc_version())
    except LookupError:
        return False
    return all(release.accepts(t.arch) for t in plan.targets)


# ---------------------------------------------------------------- nvcc


@needs_nvcc
def test_catalog_matches_local_nvcc() -> None:
    out = subprocess.run(
        [NVCC or "nvcc", "--list-gpu-code"], capture_output=True, text=True, check=True
    ).stdout
    listed = {Arch.parse(line) for line in out.split()}
    recorded = {a for a in catalog.release(nvcc_version()).sass if not a.variant}
    assert listed == recorded


@needs_nvcc
@pytest.mark.parametrize(("train", "platform"), SEED_ROWS)
def test_nvcc_builds_exactly_the_row(tmp_path: Path, train: str, platform: str) -> None:
    plan = seed_plan(train, platform)
    if not nvcc_accepts(plan):
        _absent.skip("nvcc", f"local nvcc {nvcc_version()} cannot build {train}'s row")
    obj, lib = nvcc_build(tmp_path, plan)
    assert_built_exactly(plan, lib, [obj])


@needs_nvcc
def test_nvcc_builds_a_and_f_targets(tmp_path: Path) -> None:
    # A row with a / f targets and separate PTX, beyond the seed rows.
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[tool.cuwheel]\ntrains = ["cu130"]\n[[tool.cuwheel.rows]]\nplatform = "linux-x86_64"\n'
        'cuda = "13.0"\nsass = ["sm_75", "sm_90a", "sm_100f", "sm_120"]\n'
        'ptx = ["compute_90", "compute_120f"]\n'
    )
    plan = select_plan(load_config(path).rows, train="cu130", platform="linux-x86_64", environ={})
    if not nvcc_accepts(plan):
        _absent.skip("nvcc", "local nvcc cannot build CUDA 13.0 targets")
    obj, lib = nvcc_build(tmp_path, plan)
    assert containers_in(obj) == [
        (False, (frozenset({"sm_75", "sm_90a", "sm_100f", "sm_120"}),
                 frozenset({"compute_90", "compute_120f"})))
    ]  # fmt: skip
    assert_built_exactly(plan, lib, [obj])


@needs_nvcc
def test_nvcc_stub_follows_the_link_line(tmp_path: Path) -> None:
    """Objects built from the row but linked with nvcc's default arch: the translation
    unit's container still matches the row; the device-link stub (inventory:
    ``device_link``) gets the link line's default arch (docs/checks.md, DC)."""
    plan = seed_plan("cu130", "linux-x86_64")
    if not nvcc_accepts(plan):
        _absent.skip("nvcc", "local nvcc cannot build CUDA 13.0 targets")
    default = catalog.release(nvcc_version()).default_arch
    assert default is not None
    obj, _ = nvcc_build(tmp_path, plan)
    lib = tmp_path / "libdefault.so"
    subprocess.run([NVCC or "nvcc", "-shared", "-o", str(lib), str(obj)], check=True,
                   capture_output=True)  # fmt: skip
    assert sorted(containers_in(lib)) == [
        (False, row_archs(plan)),
        (True, (frozenset({default.sass}), frozenset())),
    ]


# ---------------------------------------------------------------- CMake


def cmake_version() -> str:
    assert CMAKE is not None
    out = subprocess.run([CMAKE, "--version"], capture_output=True, text=True, check=True).stdout
    m = re.search(r"version (\d+\.\d+\.\d+)", out)
    assert m is not None
    return m[1]


def cmake_project(tmp_path: Path, architectures: str) -> subprocess.CompletedProcess[str]:
    src = tmp_path / "src"
    src.mkdir()
    (src / "k.cu").write_text(KERNEL)
    (src / "CMakeLists.txt").write_text(
        "cmake_minimum_required(VERSION 3.18)\n"
        "project(k LANGUAGES CUDA)\n"
        "add_library(k SHARED k.cu)\n"
    )
    build = tmp_path / "build"
    configure = subprocess.run(
        [
            CMAKE or "cmake",
            "-S", str(src), "-B", str(build),
            f"-DCMAKE_CUDA_COMPILER={NVCC}",
            f"-DCMAKE_CUDA_ARCHITECTURES={architectures}",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    if configure.returncode != 0:
        return configure
    return subprocess.run([CMAKE or "cmake", "--build", str(build)], capture_output=True, text=True)


@needs_nvcc
@_absent.skip_without("cmake", CMAKE is None)
@pytest.mark.parametrize(("train", "platform"), SEED_ROWS)
def test_cmake_builds_exactly_the_row(tmp_path: Path, train: str, platform: str) -> None:
    plan = seed_plan(train, platform)
    if not nvcc_accepts(plan):
        _absent.skip("nvcc", f"local nvcc cannot build {train}'s row")
    value = emit.cmake_architectures(plan, cmake_version())
    result = cmake_project(tmp_path, value)
    assert result.returncode == 0, result.stdout + result.stderr
    (lib,) = (tmp_path / "build").glob("libk.so")
    (obj,) = (tmp_path / "build").glob("CMakeFiles/k.dir/k.cu.o")
    assert_built_exactly(plan, lib, [obj])


@needs_nvcc
@_absent.skip_without("cmake", CMAKE is None)
def test_cmake_refusal_matches_cmake(tmp_path: Path) -> None:
    """cuwheel refuses 100f for this CMake exactly when this CMake rejects it."""
    path = tmp_path / "pyproject.toml"
    path.write_text(
        '[tool.cuwheel]\ntrains = ["cu130"]\n[[tool.cuwheel.rows]]\nplatform = "linux-x86_64"\n'
        'cuda = "13.0"\nsass = ["sm_100f"]\nptx = "none"\n'
    )
    plan = select_plan(load_config(path).rows, train="cu130", platform="linux-x86_64", environ={})
    version = cmake_version()
    try:
        emit.cmake_architectures(plan, version)
        refused = False
    except emit.Unexpressible:
        refused = True
    if not refused:
        _absent.skip("cmake", f"CMake {version} is recorded as accepting f targets")
    proj = tmp_path / "proj"
    proj.mkdir()
    result = cmake_project(proj, "100f-real")
    assert result.returncode != 0, "CMake accepted 100f although cuwheel refused it"


# ---------------------------------------------------------------- PyTorch


def torch_flags(arch_list: str) -> list[str]:
    """Run torch's own parser in a fresh interpreter with TORCH_CUDA_ARCH_LIST set."""
    code = (
        "import json, torch.utils.cpp_extension as c\nprint(json.dumps(c._get_cuda_arch_flags()))\n"
    )
    env = {**os.environ, "TORCH_CUDA_ARCH_LIST": arch_list}
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    if result.returncode != 0:
        raise ValueError(result.stderr.strip().splitlines()[-1])
    flags: list[str] = json.loads(result.stdout.strip().splitlines()[-1])
    return flags


def torch_version() -> str | None:
    if importlib.util.find_spec("torch") is None:
        return None
    out = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.__version__)"],
        capture_output=True,
        text=True,
    )
    return out.stdout.strip().split("+")[0] if out.returncode == 0 else None


TORCH = torch_version()
needs_torch = _absent.skip_without("torch", TORCH is None)


@needs_torch
@pytest.mark.parametrize(("train", "platform"), SEED_ROWS)
def test_torch_turns_the_list_into_the_rows_gencode(train: str, platform: str) -> None:
    plan = seed_plan(train, platform)
    value = emit.torch_arch_list(plan, TORCH or "")
    flags = torch_flags(value)
    assert parse_gencode(" ".join(flags)) == plan.targets
    assert sorted(flags) == sorted(emit.nvcc_flags(plan))


@needs_torch
@pytest.mark.parametrize("item", ["10.0f", "8.8", "10.1"])
def test_torch_rejects_what_cuwheel_refuses(item: str) -> None:
    with pytest.raises(ValueError, match="Unknown CUDA arch"):
        torch_flags(item)
    assert Arch.parse(item) not in catalog.torch_consumer(TORCH).accepted


@needs_torch
def test_catalog_lists_exactly_what_the_installed_torch_accepts() -> None:
    """consumers.toml's accepted list for this torch equals what its parser takes, over
    every X.Y / X.Ya / X.Yf spelling from 3.0 to 13.9."""
    candidates = [f"{major}.{minor}{v}" for major in range(3, 14) for minor in range(10)
                  for v in ("", "a", "f")]
    code = (
        "import json, os, sys, torch.utils.cpp_extension as c\n"
        "ok = []\n"
        "for item in json.loads(sys.argv[1]):\n"
        "    os.environ['TORCH_CUDA_ARCH_LIST'] = item\n"
        "    try:\n"
        "        c._get_cuda_arch_flags()\n"
        "    except ValueError:\n"
        "        continue\n"
        "    ok.append(item)\n"
        "print(json.dumps(ok))\n"
    )
    out = subprocess.run([sys.executable, "-c", code, json.dumps(candidates)],
                         capture_output=True, text=True, check=True)
    accepted_by_torch = set(json.loads(out.stdout.strip().splitlines()[-1]))
    accepted_by_catalog = {a.dotted for a in catalog.torch_consumer(TORCH).accepted}
    assert accepted_by_catalog == accepted_by_torch

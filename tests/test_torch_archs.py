"""data/torch_archs.toml: the file validates, the lookup reads pip's versions, and the lists
agree with what real torch wheels carry.

The wheel facts below are stated by hand from the PyPI wheels read on 2026-12-01 (see the
data file's ``wheels`` / ``cite``): the arch-flags string in ``torch/lib/libtorch_python.so``
(what ``torch.cuda.get_arch_list()`` splits) and the fatbin containers of
``torch/lib/libtorch_cuda.so`` as ``cuwheel inspect`` counted them (NVIDIA's cuobjdump -lelf
lists the same cubin counts for the .nv_fatbin of the 2.15.0 aarch64 library; it names the
sm_103f cubins sm_103 and does not read the .rodata containers). None is copied from the
data file.
"""

from __future__ import annotations

import copy
from typing import Any

import pytest

from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.torch import build_torch_archs, load_torch_archs, torch_arch_list
from cuwheel.model.arch import Arch


def _archs(*names: str) -> set[Arch]:
    return {Arch.parse(n) for n in names}


def test_file_loads_every_entry_cited() -> None:
    cat = load_torch_archs()
    assert cat.meta is not None and cat.meta.sources
    assert len(cat.builds) >= 40
    for b in cat.builds:
        assert b.cite.strip(), b
        assert b.source in ("S", "L"), b
        assert b.sass, b
    # One release series has one list per train and platform.
    keys = [(b.torch, b.train, b.platform) for b in cat.builds]
    assert len(keys) == len(set(keys))


def test_lookup_reads_pip_versions() -> None:
    t = torch_arch_list("2.7.1+cu126")
    assert t is not None and t.train == "cu126" and t.platform == "linux-x86_64"
    assert set(t.sass) == _archs("sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86", "sm_90")
    assert t.ptx == ()
    # A version without a local label needs the train.
    same = torch_arch_list("2.1.0", "cu121")
    assert same is not None and same.torch == "2.1"
    assert torch_arch_list("2.1.0") is None
    # 3.7+PTX on Windows: compute_37 beside the SASS (pytorch/builder windows/cuda117.bat).
    win = torch_arch_list("1.13.1", "cu117", "win-amd64")
    assert win is not None and win.ptx == (Arch(37),)
    assert Arch(61) in win.sass and Arch(61) not in torch_arch_list("1.13.1+cu117").sass  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("version", "train", "platform"),
    [
        ("2.7.1+cu128", None, "linux-x86_64"),  # a train PyPI does not carry: not recorded
        ("2.15.0", "cu132", "win-amd64"),
        ("2.9.1+cu128", None, "linux-aarch64"),  # PyPI's 2.9.1 aarch64 wheel is a CPU build
        ("3.0.0+cu130", None, "linux-x86_64"),
        ("2.13.0+cpu", None, "linux-x86_64"),
        ("not a version", "cu128", "linux-x86_64"),
        ("2.14.1+cu130", None, "no-such-platform"),
    ],
)
def test_unknown_is_none(version: str, train: str | None, platform: str) -> None:
    assert torch_arch_list(version, train, platform) is None


def test_contradictory_train_is_an_error() -> None:
    with pytest.raises(ValueError, match="cu126 build, not cu128"):
        torch_arch_list("2.7.1+cu126", "cu128")


def _one(**changes: Any) -> dict[str, Any]:
    data = copy.deepcopy(read_data_file("torch_archs.toml"))
    data["build"] = [dict(data["build"][0], **changes)]
    return data


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"train": "cu130", "arch_list": "7.0;8.0"}, "nvcc 13.0 cannot build sm_70"),
        ({"arch_list": "8.0;9.0x"}, "not a TORCH_CUDA_ARCH_LIST item"),
        ({"platforms": ["linux-ppc64le"]}, "'linux-ppc64le' is no platform"),
        ({"train": "cuda12"}, "train must be spelled cuXYZ"),
        ({"train": "cu127"}, "12.7"),
        ({"torch": ["2"]}, "is no release series"),
        ({"cite": " "}, "'cite' is empty"),
        ({"source": "X"}, "source mark"),
        ({"archs": "8.0"}, "unknown key 'archs'"),
    ],
)
def test_bad_entries_are_rejected(changes: dict[str, Any], message: str) -> None:
    with pytest.raises(CatalogError, match=message):
        build_torch_archs(_one(**changes))


def test_every_problem_reported_and_duplicates() -> None:
    data = copy.deepcopy(read_data_file("torch_archs.toml"))
    first = data["build"][0]
    data["build"] = [first, dict(first), dict(first, train="cu200", torch=["x"])]
    with pytest.raises(CatalogError) as info:
        build_torch_archs(data)
    text = str(info.value)
    assert "recorded twice" in text and "no release series" in text and "cu200" in text


# The arch-flags string of the PyPI wheels (libtorch_python.so), as read.
WHEEL_FLAGS = {
    ("1.13.0", "cu117", "linux-x86_64"): "sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86",
    ("1.13.1", "cu117", "linux-x86_64"): "sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86",
    ("2.0.1", "cu117", "linux-x86_64"): "sm_37 sm_50 sm_60 sm_70 sm_75 sm_80 sm_86",
    ("2.1.2", "cu121", "linux-x86_64"): "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
    ("2.4.1", "cu121", "linux-x86_64"): "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
    ("2.5.1", "cu124", "linux-x86_64"): "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
    ("2.6.0", "cu124", "linux-x86_64"): "sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90",
    ("2.8.0", "cu128", "linux-x86_64"): "sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
    ("2.10.0", "cu128", "linux-x86_64"): "sm_70 sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
    ("2.11.0", "cu130", "linux-aarch64"): "sm_80 sm_90 sm_100 sm_110 sm_120",
    ("2.14.1", "cu130", "linux-x86_64"): "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
    ("2.15.0", "cu132", "linux-x86_64"): "sm_75 sm_80 sm_86 sm_90 sm_100 sm_120",
    ("2.15.0", "cu132", "linux-aarch64"): "sm_80 sm_90 sm_100 sm_110 sm_120",
}


@pytest.mark.parametrize(("key", "flags"), sorted(WHEEL_FLAGS.items()))
def test_lists_match_the_wheels_arch_flags(key: tuple[str, str, str], flags: str) -> None:
    """1.13-2.5 entries come from the build scripts: the wheels confirm them."""
    t = torch_arch_list(*key)
    assert t is not None, key
    words = flags.split()
    assert set(t.sass) == _archs(*(w for w in words if w.startswith("sm_")))
    assert set(t.ptx) == _archs(*(w for w in words if w.startswith("compute_")))


# libtorch_cuda.so of real wheels: the archs in every .nv_fatbin container (torch's own
# kernels, built from TORCH_CUDA_ARCH_LIST) and the ones in a few containers only, with the
# number of containers.  None of these libraries carries PTX.
LIBTORCH_CUDA: dict[tuple[str, str, str], tuple[int, set[str], dict[str, int]]] = {
    ("2.0.1", "cu117", "linux-x86_64"): (
        259,
        {"sm_37", "sm_50", "sm_60", "sm_70", "sm_75", "sm_80", "sm_86"},
        {},
    ),
    ("2.8.0", "cu128", "linux-x86_64"): (
        393,
        {"sm_70", "sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"},
        {"sm_89": 1, "sm_90a": 4, "sm_100a": 1, "sm_120a": 1},
    ),
    ("2.14.1", "cu130", "linux-x86_64"): (
        475,
        {"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"},
        {"sm_89": 1, "sm_90a": 4, "sm_100a": 59, "sm_103f": 59, "sm_120a": 1, "sm_121a": 1},
    ),
    # Plus 58 containers outside .nv_fatbin (.lrodata on x86_64, .rodata on aarch64): CuTe
    # DSL top-k kernels (RadixSelectTopK), 29 for sm_90 and 29 for sm_100, CUDA 13.4.
    ("2.15.0", "cu132", "linux-x86_64"): (
        476,
        {"sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"},
        {"sm_89": 1, "sm_90a": 4, "sm_100a": 59, "sm_103f": 59, "sm_120a": 1, "sm_121a": 1},
    ),
    ("2.15.0", "cu132", "linux-aarch64"): (
        476,
        {"sm_80", "sm_90", "sm_100", "sm_110", "sm_120"},
        {"sm_90a": 4, "sm_100a": 59, "sm_103f": 59, "sm_110a": 59, "sm_120a": 1, "sm_121a": 1},
    ),
}


@pytest.mark.parametrize(("key", "seen"), sorted(LIBTORCH_CUDA.items()))
def test_lists_match_libtorch_cuda(
    key: tuple[str, str, str], seen: tuple[int, set[str], dict[str, int]]
) -> None:
    containers, in_every, in_some = seen
    t = torch_arch_list(*key)
    assert t is not None, key
    # The list is exactly the SASS every container of torch's own kernels carries ...
    assert set(t.sass) == _archs(*in_every)
    assert t.ptx == ()
    # ... and the rest is a handful of translation units that PyTorch's CMake builds for
    # extra targets (CUTLASS fp8 rowwise-scaled / grouped GEMMs: sm_89, sm_90a, sm_100a,
    # sm_103f, sm_110a, sm_120a, sm_121a): arch-specific code or an arch the list's SASS
    # already runs on, never a GPU the list leaves out.
    for name, count in in_some.items():
        a = Arch.parse(name)
        assert count < containers // 5, name
        assert a.variant in ("a", "f") or any(s.major == a.major and s <= a for s in t.sass)

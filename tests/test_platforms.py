"""data/platforms.toml and its loader (knowledge/platforms.py): every tag in the data
against PEP 425 / packaging's tag parser, the binary numbers against the ELF / PE readers,
one clear error for an unknown platform, and the host platform of each kind of machine."""

from __future__ import annotations

import copy
import platform
import sys

import pytest
from packaging.tags import parse_tag

from cuwheel.errors import CatalogError, ToolkitError, UnknownName
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.platforms import (
    build_platforms,
    host_platform,
    load_platforms,
    platform_for_wheel_tag,
    platform_record,
)
from cuwheel.plan import select
from cuwheel.read.binary.elf import ELF_MACHINES
from cuwheel.read.binary.pe import PE_MACHINES
from cuwheel.toolkit import host_platform as toolkit_host_platform

PLATFORMS = load_platforms().platforms


def _concrete(glob: str) -> str:
    """A tag the glob stands for: manylinux*_x86_64 -> manylinux_2_28_x86_64."""
    return glob.replace("*", "_2_28")


@pytest.mark.parametrize("p", PLATFORMS, ids=lambda p: p.name)
def test_every_tag_round_trips(p: object) -> None:
    from cuwheel.knowledge.platforms import Platform

    assert isinstance(p, Platform)
    for tag in (*p.pip_platforms, *map(_concrete, p.wheel_tags)):
        # packaging reads it as one platform tag, unchanged
        (parsed,) = parse_tag(f"py3-none-{tag}")
        assert parsed.platform == tag
        # and the platform it names is this one's row platform
        found = platform_for_wheel_tag(tag)
        assert found is not None and found.name == p.row_platform, tag
    if p.sysconfig is not None:
        # PEP 425: the platform tag is get_platform() with '-' and '.' as '_'
        pep425 = p.sysconfig.replace("-", "_").replace(".", "_")
        assert platform_for_wheel_tag(pep425) is p
        assert p.sysconfig.split("-")[0] == {"linux": "linux", "windows": "win"}[p.os]


@pytest.mark.parametrize("p", PLATFORMS, ids=lambda p: p.name)
def test_binary_numbers_name_the_readers_machines(p: object) -> None:
    from cuwheel.knowledge.platforms import Platform

    assert isinstance(p, Platform) and p.binary_code is not None
    table = ELF_MACHINES if p.binary_format == "elf" else PE_MACHINES
    assert table[p.binary_code] == p.binary_machine
    # PEP 508's platform_machine is platform.machine(), one of the machines listed
    assert p.marker_environment()["platform_machine"].lower() in p.machines


@pytest.mark.parametrize(
    ("tag", "name"),
    [("manylinux2014_aarch64", "linux-aarch64"), ("musllinux_1_2_x86_64", "linux-x86_64"),
     ("linux_x86_64", "linux-x86_64"), ("win_arm64", "win-arm64"), ("win_amd64", "win-amd64"),
     ("macosx_14_0_arm64", None), ("win32", None), ("manylinux_2_28_ppc64le", None),
     ("any", None)],
)  # fmt: skip
def test_wheel_tags(tag: str, name: str | None) -> None:
    found = platform_for_wheel_tag(tag)
    assert (found.name if found else None) == name


def test_an_unknown_platform_is_one_clear_error() -> None:
    with pytest.raises(UnknownName) as info:
        platform_record("linux-x86-64")
    text = str(info.value)
    assert "unknown platform 'linux-x86-64'" in text and "did you mean 'linux-x86_64'" in text
    assert "\n" not in text
    with pytest.raises(UnknownName) as info:
        platform_record("x" * 5000)
    assert len(str(info.value)) < 300


def test_bad_data_reports_every_problem() -> None:
    data = copy.deepcopy(read_data_file("platforms.toml"))
    data["platform"][0]["os"] = "macos"
    data["platform"][1]["wheel_tags"] = ["manylinux-2014"]
    data["platform"][2]["row_platform"] = "linux-arm64"
    data["platform"][3]["binary"]["format"] = "elf"
    data["platform"].append(dict(data["platform"][4]))  # a twin
    with pytest.raises(CatalogError) as info:
        build_platforms(data)
    text = str(info.value)
    for needle in ("os must be one of", "not a wheel platform tag: 'manylinux-2014'",
                   "row_platform 'linux-arm64' is no row platform",
                   "PE binaries are Windows'", "duplicate platform names",
                   "two platforms claim one"):  # fmt: skip
        assert needle in text, needle


@pytest.mark.parametrize(
    ("sys_platform", "machine", "record", "row", "toolkit"),
    [
        ("linux", "x86_64", "linux-x86_64", "linux-x86_64", "linux-x86_64"),
        # an Arm64 Linux host is an Arm server to the toolkit (Jetsons are not told apart)
        ("linux", "aarch64", "linux-sbsa", "linux-aarch64", "linux-sbsa"),
        ("win32", "AMD64", "win-amd64", "win-amd64", "win-amd64"),
        ("win32", "ARM64", "win-arm64", "win-arm64", None),  # NVIDIA has no toolkit for it
        ("darwin", "arm64", None, None, None),
        ("linux", "riscv64", None, None, None),
    ],
)
def test_host_platform_on_each_machine(
    monkeypatch: pytest.MonkeyPatch, sys_platform: str, machine: str, record: str | None,
    row: str | None, toolkit: str | None,
) -> None:
    monkeypatch.setattr(sys, "platform", sys_platform)
    monkeypatch.setattr(platform, "machine", lambda: machine)
    here = host_platform()
    assert (here.name if here else None) == record
    assert select.host_platform() == row
    if toolkit is None:
        with pytest.raises(ToolkitError, match="no CUDA toolkit platform for this machine"):
            toolkit_host_platform()
    else:
        assert toolkit_host_platform() == toolkit


def test_linux_tag_architectures_are_auditwheels() -> None:
    from cuwheel.knowledge.tagpolicy import load_tag_policies

    linux = load_platforms().linux
    # every machine is one the ELF reader names, every architecture one auditwheel's
    # policies (data/manylinux.toml, checked against auditwheel) have symbol sets for
    archs = {a for p in load_tag_policies().policies for a in p.symbol_versions}
    for machine, arch in linux.tag_arch:
        assert machine in ELF_MACHINES.values(), machine
        assert arch in archs, arch
    assert linux.arch_of("i386") == "i686" and linux.arch_of("cuda") is None
    for loader in ("ld-linux-x86-64.so.2", "ld-linux-aarch64.so.1", "ld64.so.2", "ld64.so.1"):
        assert linux.is_loader(loader), loader
    for other in ("libdl.so.2", "libld64.so.2", "ld64.so.3"):
        assert not linux.is_loader(other), other

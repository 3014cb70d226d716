"""Containers written by nvcc's device-link step (wrapper record version 2), checked
against the .nvFatBinSegment / .nvFatBi bytes as readelf and pefile show them."""

from __future__ import annotations

import re
import struct
import subprocess
from pathlib import Path

import pefile
import pytest

import _absent
import cuwheel
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
ELF_LINKED = ["sm80.so", "two_tu.so", "librdc.so", "prog", "ptx120.so", "allmajor.so"]


def _readelf_wrappers(path: Path) -> dict[int, int]:
    """File offset of each container a wrapper record names -> the record's version."""
    sections = subprocess.run(["readelf", "-SW", str(path)], capture_output=True, text=True,
                              check=True).stdout
    addr_to_off = []
    for m in re.finditer(r"\]\s+(\S+)\s+\S+\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)",
                         sections):
        addr_to_off.append((int(m.group(2), 16), int(m.group(3), 16), int(m.group(4), 16)))
    dump = subprocess.run(["readelf", "-x", ".nvFatBinSegment", str(path)],
                          capture_output=True, text=True, check=True).stdout
    raw = b""
    for line in dump.splitlines():
        tokens = line.split()
        if not tokens or not tokens[0].startswith("0x"):
            continue
        for group in tokens[1:5]:  # up to 4 hex groups, then the ASCII column
            if not re.fullmatch(r"(?:[0-9a-f]{2}){1,4}", group):
                break
            raw += bytes.fromhex(group)
    out = {}
    for magic, version, addr, _ in struct.iter_unpack("<IIQQ", raw):
        assert magic == 0x466243B1
        for a, off, size in addr_to_off:
            if a <= addr < a + size and a:
                out[off + addr - a] = version
    return out


@_absent.skip_without("readelf", _absent.no_tool("readelf"))
@pytest.mark.parametrize("name", ELF_LINKED)
def test_elf_device_link_flags_match_the_wrapper_records(name: str, tmp_path: Path) -> None:
    expected = _readelf_wrappers(BIN / name)
    assert sorted(expected.values()).count(2) == 1  # one device-link output per link
    for binaries in (
        cuwheel.inspect(BIN / name).binaries,
        cuwheel.inspect(make_wheel(tmp_path, {f"p/{name}": (BIN / name).read_bytes()})).binaries,
    ):
        (b,) = binaries
        got = {c.offset: c.device_link for c in b.containers}
        assert got == {off: v == 2 for off, v in expected.items()}


def test_pe_wrapper_records_match_pefile() -> None:
    path = BIN / "win_sm80_86.dll"
    pe = pefile.PE(str(path))
    sec = next(s for s in pe.sections if s.Name.rstrip(b"\0") == b".nvFatBi")
    records = list(struct.iter_unpack("<IIQQ", sec.get_data()[: sec.Misc_VirtualSize]))
    expected = {
        pe.get_offset_from_rva(addr - pe.OPTIONAL_HEADER.ImageBase): version == 2
        for _magic, version, addr, _ in records
    }
    (b,) = cuwheel.inspect(path).binaries
    assert {c.offset: c.device_link for c in b.containers} == expected


def test_objects_and_files_without_records_say_unknown() -> None:
    for name in ("tu_obj.o", "librdc.a", "k86.fatbin", "arm64_sm90.so"):
        for b in cuwheel.inspect(BIN / name).binaries:
            assert all(c.device_link is None for c in b.containers), name


@pytest.mark.parametrize("name", ["sm80.so", "two_tu.so", "sm90a.so", "allmajor.so", "sm100f.so"])
def test_kernels_fact_agrees_with_cuobjdump_and_readelf(name: str, tmp_path: Path) -> None:
    """Which cubins hold a kernel: NVIDIA's cuobjdump extracts every cubin of .nv_fatbin
    and readelf lists its sections (a kernel is a .text.<name> section); cuwheel's
    ``kernels`` fact, with every cubin decoded, must say the same, arch by arch."""
    tool = _absent.cuobjdump()
    if _absent.no_tool("readelf"):
        _absent.skip("readelf")
    subprocess.run([tool, "-xelf", "all", str(BIN / name)], cwd=tmp_path, check=True,
                   capture_output=True)
    oracle = []
    for cubin in sorted(tmp_path.glob("*.cubin"), key=lambda p: int(p.name.split(".")[1])):
        sections = subprocess.run(["readelf", "-SW", str(cubin)], capture_output=True,
                                  text=True, check=True).stdout
        oracle.append((cubin.name.split(".")[2], " .text." in sections))
    (b,) = cuwheel.inspect([BIN / name], payload="all").binaries
    ours = [(e.arch.base.sass if e.arch.variant != "a" else e.arch.sass, e.kernels)
            for c in b.containers if c.section == ".nv_fatbin" for e in c.entries
            if e.kind.value == "sass"]
    assert oracle and sorted(ours) == sorted(oracle)

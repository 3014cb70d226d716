"""DEP013 on Windows: a DLL importing ``__nvJitLinkAddData_12_4`` by name from
``nvJitLink_120_0.dll`` beside a bare requirement.  The DLL is laid out here by hand
(Microsoft PE format spec, "The .idata Section": import directory table, import lookup
table, hint/name table) and read back by binutils' ``objdump -p`` as well as cuwheel."""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path

import _absent
import binbuild
from binbuild import PeSec
from cuwheel import check_wheel
from cuwheel.knowledge.nvidia_symbols import first_release_exporting
from cuwheel.read.sources.source import read_path
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
OBJDUMP = shutil.which("objdump")
VA = 0x2000


def idata(imports: dict[str, list[str | int]]) -> bytes:
    """An .idata section at RVA ``VA``: one descriptor per DLL (then a zero one), each
    DLL's lookup table (8-byte entries; an int is an import by ordinal), hint/name
    entries and DLL names."""
    ndesc = len(imports) + 1
    tables_at = ndesc * 20
    tables = bytearray()
    names = bytearray()
    table_offs, name_offs = [], []
    names_at = tables_at + sum(8 * (len(v) + 1) for v in imports.values())
    for funcs in imports.values():
        table_offs.append(tables_at + len(tables))
        for f in funcs:
            if isinstance(f, int):
                tables += struct.pack("<Q", (1 << 63) | f)
            else:
                tables += struct.pack("<Q", VA + names_at + len(names))
                names += struct.pack("<H", 0) + f.encode() + b"\0"
                names += bytes(len(names) % 2)
        tables += bytes(8)
    for dll in imports:
        name_offs.append(names_at + len(names))
        names += dll.encode() + b"\0"
    desc = bytearray()
    for t, n in zip(table_offs, name_offs, strict=True):
        desc += struct.pack("<IIIII", VA + t, 0, 0, VA + n, VA + t)
    desc += bytes(20)
    return bytes(desc + tables + names)


def hand_dll(imports: dict[str, list[str | int]]) -> bytes:
    blob = idata(imports)
    return binbuild.pe32plus([PeSec(b".idata", blob, va=VA)],
                             dirs={1: (VA, 20 * (len(imports) + 1))})


def objdump_imports(path: Path) -> list[tuple[str, str]]:
    text = subprocess.run([OBJDUMP or "objdump", "-p", str(path)], capture_output=True,
                          text=True, check=True).stdout
    out: list[tuple[str, str]] = []
    dll = None
    for line in text.splitlines():
        m = re.match(r"\s*DLL Name: (\S+)", line)
        if m:
            dll = m[1]
            continue
        if dll is None:
            continue
        m = re.match(r"\s+[0-9a-f]+\s+\d+\s+(\S+)\s*$", line)
        if m:
            if m[1] != "<none>":  # an import by ordinal
                out.append((dll, m[1]))
        elif not line.strip():
            dll = None
    return out


@_absent.skip_without("objdump", OBJDUMP is None)
def test_hand_built_imports(tmp_path: Path) -> None:
    imports: dict[str, list[str | int]] = {
        "nvJitLink_120_0.dll": ["__nvJitLinkCreate_12_0", "__nvJitLinkAddData_12_4"],
        "KERNEL32.dll": ["GetLastError", 7],  # an ordinal: no name
    }
    path = tmp_path / "user.dll"
    path.write_bytes(hand_dll(imports))
    [b], problems, _ = read_path(str(path), "none")
    assert not problems and not b.anomalies
    assert b.needed == ("nvJitLink_120_0.dll", "KERNEL32.dll")
    assert [(u.library, u.name) for u in b.undefined] == objdump_imports(path) == [
        ("nvJitLink_120_0.dll", "__nvJitLinkCreate_12_0"),
        ("nvJitLink_120_0.dll", "__nvJitLinkAddData_12_4"),
        ("KERNEL32.dll", "GetLastError"),
    ]


def test_dep013_on_windows(tmp_path: Path) -> None:
    first = first_release_exporting("nvJitLink_120_0.dll", "__nvJitLinkAddData_12_4",
                                    "windows")
    assert first is not None
    dll = hand_dll({"nvJitLink_120_0.dll": ["__nvJitLinkAddData_12_4"]})

    def dep013(requires: str) -> list[str]:
        d = tmp_path / requires.replace(">=", "_")
        d.mkdir()
        path = make_wheel(d, {"cwuser/cwuser.dll": dll}, name="cwuser", version="1.0",
                          tag="py3-none-win_amd64", requires=(requires,))
        return [f.message for f in check_wheel(path, [], audit=True).findings
                if f.code == "DEP013"]

    [msg] = dep013("nvidia-nvjitlink-cu12")
    assert "__nvJitLinkAddData_12_4 of nvJitLink_120_0.dll" in msg
    assert msg.endswith(f"require nvidia-nvjitlink-cu12>={first.first}")
    assert dep013(f"nvidia-nvjitlink-cu12>={first.first}") == []

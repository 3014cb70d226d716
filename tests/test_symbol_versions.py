"""ELF symbol versioning (.gnu.version, .gnu.version_r, .gnu.version_d) against readelf.

A differential test: for every ELF fixture (and the system's libc / libstdc++ / librt,
which carry many version definitions), what `readelf --dyn-syms -V -W` prints is parsed
here and compared with cuwheel's facts; nothing is hard-coded.  The same files streamed
out of a wheel give the same facts.  Hostile version tables are anomalies, never a
traceback, and their walks are bounded.
"""

from __future__ import annotations

import re
import shutil
import struct
import subprocess
from pathlib import Path
from typing import Any

import pytest

import _absent
from cuwheel import inspect
from cuwheel.model.inventory import Binary, UndefinedSymbol, VersionNeed
from cuwheel.read.binary import elfsyms
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
SYSTEM = [Path(p) for p in ("/lib/x86_64-linux-gnu/libc.so.6",
                            "/lib/x86_64-linux-gnu/libstdc++.so.6",
                            "/lib/x86_64-linux-gnu/librt.so.1")]


def _elf_fixtures() -> list[Path]:
    out = []
    for p in sorted(BIN.iterdir()):
        head = p.read_bytes()[:20]
        # host ELF shared objects and executables (not cubins, not .o)
        if head[:4] == b"\x7fELF" and struct.unpack_from("<H", head, 18)[0] != 190 \
                and struct.unpack_from("<H", head, 16)[0] in (2, 3):
            out.append(p)
    return out + [p for p in SYSTEM if p.exists()]


FILES = _elf_fixtures()
READELF = shutil.which("readelf")

_SYM = re.compile(r"^\s*\d+:\s+[0-9a-f]+\s+\d+\s+(\w+)\s+(\w+)\s+(\w+)\s+(\S+)\s*(.*)$")
_VER = re.compile(r"^(.*?)@+(\S+) \((\d+)\)$|^(.*?)@+(\S+)$")


def readelf_facts(path: Path) -> tuple[set[tuple[str, str | None, str | None, bool]],
                                       list[tuple[str, tuple[str, ...]]], list[str]]:
    """(undefined symbols as (name, version, library, weak), version needs, version defs)
    as readelf prints them."""
    text = subprocess.run([READELF or "readelf", "--dyn-syms", "-V", "-W", str(path)],
                          capture_output=True, text=True, check=True).stdout
    needs: list[tuple[str, list[str]]] = []
    index_lib: dict[int, str] = {}
    defs: list[str] = []
    raw_undefined: list[tuple[str, int | None, str | None, bool]] = []
    section = ""
    for line in text.splitlines():
        if line.startswith("Symbol table '.dynsym'"):
            section = "dynsym"
        elif line.startswith("Version needs section"):
            section = "need"
        elif line.startswith("Version definition section"):
            section = "def"
        elif line.startswith(("Version symbols section", "Symbol table")):
            section = ""
        elif section == "dynsym":
            m = _SYM.match(line)
            if not m or m.group(4) != "UND" or m.group(2) not in ("GLOBAL", "WEAK"):
                continue
            name, weak = m.group(5).strip(), m.group(2) == "WEAK"
            if not name:
                continue
            v = _VER.match(name)
            if v and v.group(1) is not None:
                raw_undefined.append((v.group(1), int(v.group(3)), v.group(2), weak))
            elif v:
                raw_undefined.append((v.group(4), None, v.group(5), weak))
            else:
                raw_undefined.append((name, None, None, weak))
        elif section == "need":
            f = re.search(r"File: (\S+)\s+Cnt:", line)
            if f:
                needs.append((f.group(1), []))
                continue
            n = re.search(r"Name: (\S+)\s+Flags: .*Version: (\d+)", line)
            if n and needs:
                needs[-1][1].append(n.group(1))
                index_lib[int(n.group(2))] = needs[-1][0]
        elif section == "def":
            d = re.search(r"Flags: (\S+)\s+Index: \d+\s+Cnt: \d+\s+Name: (\S+)", line)
            if d and d.group(1) != "BASE":
                defs.append(d.group(2))
    undefined = {(n, v, index_lib.get(i) if i is not None else None, w)
                 for n, i, v, w in raw_undefined}
    return undefined, [(f, tuple(v)) for f, v in needs], defs


def facts_of(b: Binary) -> tuple[set[tuple[str, str | None, str | None, bool]],
                                 list[tuple[str, tuple[str, ...]]], list[str]]:
    return ({(u.name, u.version, u.library, u.weak) for u in b.undefined},
            [(n.library, n.versions) for n in b.version_needs], list(b.version_defs))


@_absent.skip_without("readelf", READELF is None)
@pytest.mark.parametrize("path", FILES, ids=[p.name for p in FILES])
def test_versions_agree_with_readelf(path: Path) -> None:
    (b,) = inspect([str(path)]).binaries
    assert not b.anomalies
    assert facts_of(b) == readelf_facts(path)


def test_fixtures_cover_every_table() -> None:
    """The differential test sees requirements, definitions and unversioned references."""
    bins = inspect([str(p) for p in FILES]).binaries
    assert any(b.version_defs for b in bins)
    assert any(u.version is None and not u.weak for b in bins for u in b.undefined)
    assert any(len(b.version_needs) > 1 for b in bins)


def test_streamed_read_gives_the_same_versions(tmp_path: Any) -> None:
    members = {f"pkg/{p.name}": p.read_bytes() for p in FILES}
    whl = make_wheel(tmp_path, members, tag="py3-none-manylinux_2_17_x86_64")
    streamed = {b.path.rsplit("/", 1)[-1]: facts_of(b) for b in inspect([whl]).binaries}
    disk = {p.name: facts_of(b) for p, b in zip(FILES, inspect([str(p) for p in FILES]).binaries,
                                                 strict=True)}
    assert streamed == disk


# ------------------------------------------------------------------ hostile version tables
def _section(data: bytes, sh_type: int) -> tuple[int, int, int]:
    """(offset of its section header, sh_offset, sh_size) of the first section of a type."""
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    for i in range(shnum):
        at = shoff + i * shentsize
        _name, typ = struct.unpack_from("<II", data, at)
        if typ == sh_type:
            off, size = struct.unpack_from("<QQ", data, at + 0x18)
            return at, off, size
    raise AssertionError(f"no section of type {sh_type:#x}")


def test_verneed_cycle_and_huge_count_are_bounded() -> None:
    """vn_next and vna_next pointing at themselves cannot loop (a zero next offset ends a
    chain, offsets only go forward); a huge sh_info is cut at the record budget."""
    data = bytearray((BIN / "tag_cxx.so").read_bytes())
    hdr, off, _size = _section(bytes(data), elfsyms.SHT_GNU_VERNEED)
    struct.pack_into("<I", data, hdr + 0x2C, 0xFFFFFFFF)  # sh_info: 4 billion entries
    # first entry: vn_cnt huge, vna_next of its first aux = 0 would end; make vn_next 0x10
    # so that entries overlap their own aux records
    struct.pack_into("<H", data, off + 2, 0xFFFF)
    struct.pack_into("<I", data, off + 12, 16)
    from cuwheel.read.binary.sniff import read_binary

    def chunks() -> Any:
        yield bytes(data)

    (b,) = read_binary("x.so", len(data), chunks, "elf")
    assert any("version_r" in a for a in b.anomalies), b.anomalies
    assert len(b.version_needs) <= elfsyms.MAX_VERSION_RECORDS


def test_version_index_without_a_version_is_an_anomaly() -> None:
    data = bytearray((BIN / "tag_memcpy214.so").read_bytes())
    _hdr, off, size = _section(bytes(data), elfsyms.SHT_GNU_VERSYM)
    for i in range(0, size, 2):
        if struct.unpack_from("<H", data, off + i)[0] > 1:
            struct.pack_into("<H", data, off + i, 0x7777)
    from cuwheel.read.binary.sniff import read_binary

    (b,) = read_binary("x.so", len(data), lambda: iter([bytes(data)]), "elf")
    assert any("version index 30583" in a for a in b.anomalies), b.anomalies
    assert all(u.version is None for u in b.undefined)


def test_model_types_are_exported() -> None:
    assert UndefinedSymbol("a").version is None
    assert VersionNeed("libc.so.6", ("GLIBC_2.2.5",)).library == "libc.so.6"

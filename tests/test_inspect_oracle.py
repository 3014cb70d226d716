"""cuwheel.inspect on every committed fixture, checked against independent oracles.

* NVIDIA's cuobjdump (``--list-elf --list-ptx``, default and ``-all``): the selection
  cuobjdump makes is derived from each container's ``section`` / ``relocatable`` facts per
  ELF object (docs/formats.md#what-cuobjdump-lists) and names are mapped to cuobjdump's
  spelling (``f`` dropped on cubins only, PTX named ``sm_XX``; docs/formats.md#target-names).
  PE DLLs: cuobjdump reads the extracted ``.nv_fatb`` / ``__nv_rel`` section bytes
  (docs/formats.md#pe-images).
* Where cuobjdump is documented wrong (the ``f`` suffix, LTO-IR, containers outside the
  named sections, raw PTX), tests compare with tests/data/fixtures.toml: what nvcc was
  asked to build, never what cuwheel said.
* Host facts: readelf (``-dW``, ``--dyn-syms -W``) and pefile.
* The same inventory read three ways (mmap'ed file, wheel member, directory), also with
  the streaming path forced by tiny chunks and windows.
"""

from __future__ import annotations

import collections
import dataclasses
import functools
import itertools
import os
import re
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import _absent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).parent))
import cuobjdump_oracle as oracle
import cuwheel
import wheelfactory
from cuwheel.model.inventory import Binary, CodeKind, Compression, FatbinContainer, Source

DATA = Path(__file__).parent / "data"
BIN = DATA / "bin"
TOML = tomllib.loads((DATA / "fixtures.toml").read_text())
FIXTURES: dict[str, dict] = TOML["fixture"]
NAMES = sorted(FIXTURES)
C = collections.Counter

needs_cuobjdump = _absent.needs_cuobjdump
needs_readelf = _absent.skip_without("readelf", _absent.no_tool("readelf"))

# Formats cuobjdump is documented not to read (docs/formats.md#what-cuobjdump-lists;
# fixtures.toml k89.ptx).
_CUOBJDUMP_BLIND_FORMATS = ("pe", "ptx")
PE_SECTIONS = (".nv_fatb", "__nv_rel")


# ----------------------------------------------------------------------------- helpers
@functools.cache
def inspected(name: str) -> Source:
    inv = cuwheel.inspect([BIN / name])
    assert len(inv.sources) == 1
    src = inv.sources[0]
    assert src.problems == (), [str(p) for p in src.problems]
    assert src.binaries, f"{name}: no binary"
    return src


def binaries(name: str) -> tuple[Binary, ...]:
    return inspected(name).binaries


def named(b: Binary) -> list[FatbinContainer]:
    """Containers in the device-code sections (or the whole raw device-code file)."""
    if b.format in ("fatbin", "cubin", "ptx"):
        return list(b.containers)
    return [c for c in b.containers if c.named_section]


def cuobjdump_selection(b: Binary, all_sections: bool) -> list[FatbinContainer]:
    """What cuobjdump lists of one ELF object (docs/formats.md#what-cuobjdump-lists).

    Default: only .nv_fatbin when the object has one, else __nv_relfatbin.  -all: both,
    .nv_fatbin first whatever the section order.  Containers outside the named sections are
    never listed (1.5).
    """
    if b.format in ("fatbin", "cubin"):
        return list(b.containers)
    exe = [c for c in named(b) if not c.relocatable]
    rel = [c for c in named(b) if c.relocatable]
    if all_sections:
        return exe + rel
    return exe if exe else rel


def cuobjdump_spelling(kind: CodeKind, name: str) -> str:
    if kind is CodeKind.SASS:
        return name[:-1] if name.endswith("f") else name  # f dropped on cubins only
    return "sm_" + name.removeprefix("compute_")  # PTX files are named sm_XX, f/a kept


def as_cuobjdump(containers: list[FatbinContainer]) -> list[tuple[str, str]]:
    out = []
    for c in containers:
        for e in c.entries:
            if e.kind is CodeKind.LTOIR:
                continue  # never listed by cuobjdump 13.5 (1.4)
            out.append(("ELF" if e.kind is CodeKind.SASS else "PTX",
                        cuobjdump_spelling(e.kind, e.name)))
    return out


def split(seq: list[tuple[str, str]]) -> tuple[collections.Counter[str], collections.Counter[str]]:
    return C(n for k, n in seq if k == "ELF"), C(n for k, n in seq if k == "PTX")


def section_bytes_and_offset(path: Path, section: str) -> tuple[bytes, int]:
    pefile = _absent.extra("pefile")
    pe = pefile.PE(str(path), fast_load=True)
    try:
        for s in pe.sections:
            if s.Name.rstrip(b"\0") == section.encode()[:8]:
                return oracle.extract_pe_section(path, section), s.PointerToRawData
    finally:
        pe.close()
    raise KeyError(section)


def entries_of(name: str, kind: CodeKind) -> list[str]:
    return [e.name for b in binaries(name) for c in named(b) for e in c.entries if e.kind is kind]


# ------------------------------------------------------------------ cuobjdump, per fixture
ORACLE_NAMES = [n for n in NAMES if FIXTURES[n]["format"] not in _CUOBJDUMP_BLIND_FORMATS]


@pytest.mark.oracle
@needs_cuobjdump
@pytest.mark.parametrize("all_sections", [False, True], ids=["default", "all"])
@pytest.mark.parametrize("name", ORACLE_NAMES)
def test_cuobjdump_listing_equals_inventory(name: str, all_sections: bool) -> None:
    want = [x for b in binaries(name) for x in as_cuobjdump(cuobjdump_selection(b, all_sections))]
    got_sass, got_ptx = oracle.list_device_code(BIN / name, all_sections=all_sections)
    assert split(want) == (got_sass, got_ptx)
    # and in cuobjdump's order (interleaved ELF / PTX, entry by entry)
    assert oracle.list_device_code_sequence(BIN / name, all_sections=all_sections) == want


@pytest.mark.oracle
@needs_cuobjdump
@pytest.mark.parametrize("section", PE_SECTIONS)
@pytest.mark.parametrize("name", [n for n in NAMES if FIXTURES[n]["format"] == "pe"])
def test_cuobjdump_on_pe_section_equals_inventory(
    name: str, section: str, tmp_path: Path
) -> None:
    (b,) = binaries(name)
    mine = [c for c in b.containers if c.section == section]
    try:
        data, raw_ptr = section_bytes_and_offset(BIN / name, section)
    except KeyError:
        assert mine == []
        return
    assert mine, f"{name}: cuwheel found no container in {section}"
    for c in mine:
        assert c.named_section
        assert c.relocatable == (section == "__nv_rel")
        rel = c.offset - raw_ptr
        assert rel >= 0 and rel + c.size <= len(data)
        assert data[rel : rel + 4] == b"\x50\xed\x55\xba"
    dump = tmp_path / (section.strip("._") + ".fatbin")
    dump.write_bytes(data)
    want = as_cuobjdump(mine)
    for all_sections in (False, True):
        assert oracle.list_device_code(dump, all_sections=all_sections) == split(want)
        assert oracle.list_device_code_sequence(dump, all_sections=all_sections) == want
    recorded = FIXTURES[name]["cuobjdump_sections"][section]
    assert split(want) == (C(recorded["sass"]), C(recorded["ptx"]))


# ------------------------------------------- where cuobjdump is wrong: fixtures.toml decides
@pytest.mark.oracle
@needs_cuobjdump
def test_f_suffix_kept_where_cuobjdump_drops_it() -> None:
    fx = FIXTURES["sm100f.so"]
    assert "sm_100f" in fx["asked"]
    assert entries_of("sm100f.so", CodeKind.SASS) == fx["sass"] == ["sm_100f", "sm_100f"]
    for b in binaries("sm100f.so"):
        for e in b.entries():
            assert e.arch.number == 100 and e.arch.variant == "f"
    sass, _ = oracle.list_device_code(BIN / "sm100f.so")
    assert sass == C(fx["cuobjdump"]["sass"]) == C({"sm_100": 2})


@pytest.mark.oracle
@needs_cuobjdump
def test_lto_ir_listed_where_cuobjdump_is_silent() -> None:
    fx = FIXTURES["lto80.o"]
    assert fx["asked"] == ["lto_80"]
    assert entries_of("lto80.o", CodeKind.LTOIR) == fx["lto"] == ["compute_80"]
    assert entries_of("lto80.o", CodeKind.SASS) == entries_of("lto80.o", CodeKind.PTX) == []
    (b,) = binaries("lto80.o")
    (c,) = b.containers
    assert c.section == "__nv_relfatbin" and c.relocatable
    for all_sections in (False, True):
        assert oracle.list_device_code(BIN / "lto80.o", all_sections=all_sections) == (C(), C())


@pytest.mark.oracle
@needs_cuobjdump
def test_container_outside_named_sections_found_where_cuobjdump_misses_it() -> None:
    fx = FIXTURES["ldata.so"]
    hidden = fx["hidden"]
    (b,) = binaries("ldata.so")
    assert named(b) == []
    outside = [c for c in b.containers if not c.named_section]
    assert len(outside) == hidden["containers"]
    assert {c.section for c in outside} == {hidden["section"]}
    assert not any(c.relocatable for c in outside)
    kinds = [(e.kind, e.name) for c in outside for e in c.entries]
    assert [n for k, n in kinds if k is CodeKind.SASS] == hidden["sass"]
    assert [n for k, n in kinds if k is CodeKind.PTX] == hidden["ptx"]
    # the hidden bytes are k86.fatbin, verbatim
    raw = (BIN / "k86.fatbin").read_bytes()
    data = (BIN / "ldata.so").read_bytes()
    assert data[outside[0].offset : outside[0].offset + outside[0].size] == raw
    for all_sections in (False, True):
        assert oracle.list_device_code(BIN / "ldata.so", all_sections=all_sections) == (C(), C())


@pytest.mark.oracle
@needs_cuobjdump
def test_raw_ptx_read_where_cuobjdump_sees_no_device_code() -> None:
    fx = FIXTURES["k89.ptx"]
    (b,) = binaries("k89.ptx")
    assert b.format == "ptx"
    assert b.ptx_version == fx["ptx_version"] == TOML["ptx_isa"]
    assert entries_of("k89.ptx", CodeKind.PTX) == fx["ptx"] == ["compute_89"]
    assert entries_of("k89.ptx", CodeKind.SASS) == []
    assert oracle.list_device_code(BIN / "k89.ptx") == (C(), C())


@pytest.mark.oracle
@needs_cuobjdump
@pytest.mark.parametrize("name", [n for n in NAMES if FIXTURES[n]["format"] == "pe"])
def test_pe_read_where_linux_cuobjdump_sees_nothing(name: str) -> None:
    fx = FIXTURES[name]
    assert oracle.list_device_code(BIN / name) == (C(fx["cuobjdump"]["sass"]),
                                                  C(fx["cuobjdump"]["ptx"])) == (C(), C())
    assert entries_of(name, CodeKind.SASS) == fx["sass"]
    assert entries_of(name, CodeKind.PTX) == fx["ptx"]


# --------------------------------------------------------- fixtures.toml: what was built
@pytest.mark.parametrize("name", NAMES)
def test_host_facts_match_fixture(name: str) -> None:
    fx = FIXTURES[name]
    bs = binaries(name)
    if "members" in fx:
        assert [b.member for b in bs] == fx["members"]
        assert all(b.archive == str(BIN / name) for b in bs)
        assert [b.path for b in bs] == [f"{BIN / name}({m})" for m in fx["members"]]
    else:
        assert len(bs) == 1
        assert bs[0].path == str(BIN / name)
        assert bs[0].size == (BIN / name).stat().st_size
    for b in bs:
        assert b.format == fx["format"]
        if "file_type" in fx:
            assert b.file_type == fx["file_type"]
        if "machine" in fx:
            assert b.machine == fx["machine"]
        if "needed" in fx:
            assert list(b.needed) == fx["needed"]
        if "exports" in fx:
            if b.format == "pe":
                assert sorted(b.exported) == sorted(fx["exports"])
            else:  # ELF: the symbols our sources define, among others (dim3 ctors ...)
                assert set(fx["exports"]) <= set(b.exported)
            assert len(b.exported) == len(set(b.exported))
    machines = {"arm64_sm90.so": "aarch64", "win_sm80_86.dll": "AMD64", "win_rdc.dll": "AMD64",
                "win_hostonly.dll": "AMD64"}
    if name in machines:
        assert {b.machine for b in bs} == {machines[name]}


@pytest.mark.parametrize("name", NAMES)
def test_entries_match_fixture_in_file_order(name: str) -> None:
    fx = FIXTURES[name]
    assert entries_of(name, CodeKind.SASS) == fx["sass"]
    assert entries_of(name, CodeKind.PTX) == fx["ptx"]
    assert entries_of(name, CodeKind.LTOIR) == fx.get("lto", [])
    for b in binaries(name):
        offsets = [c.offset for c in b.containers]
        assert offsets == sorted(offsets)
        for c in b.containers:
            assert [e.offset for e in c.entries] == sorted(e.offset for e in c.entries)
            if b.format in ("cubin", "ptx"):  # the whole file is its one entry
                assert [(e.offset, e.stored_size) for e in c.entries] == [(0, b.size)]
            else:
                assert all(c.offset < e.offset < c.offset + c.size for e in c.entries)


@pytest.mark.parametrize("name", [n for n in NAMES if "containers" in FIXTURES[n]])
def test_container_counts_per_section(name: str) -> None:
    fx = FIXTURES[name]
    got = C(c.section or "" for b in binaries(name) for c in named(b))
    assert got == C(fx["containers"])
    empty = sum(1 for b in binaries(name) for c in named(b) if not c.entries)
    assert empty == fx.get("empty_containers", 0)
    rel = {c.section for b in binaries(name) for c in named(b) if c.relocatable}
    assert rel == set(fx.get("relocatable_sections", []))


@pytest.mark.parametrize("name", NAMES)
def test_entry_flags_match_fixture(name: str) -> None:
    fx = FIXTURES[name]
    entries = [(c, e) for b in binaries(name) for c in named(b) for e in c.entries]
    if "host" in fx:
        assert {e.host for _, e in entries} == {fx["host"]}
    if "debug" in fx:
        assert {e.debug for _, e in entries} <= {fx["debug"]}
    if "identifier" in fx:
        # The header holds the source path nvcc was given (the device-link stub's with a
        # trailing space, kept verbatim); cuobjdump names files after its base name.
        idents = {e.identifier for _, e in entries}
        assert {os.path.basename((i or "").rstrip()) for i in idents} == {fx["identifier"]}
        assert all((i or "").rstrip().endswith("/src/" + fx["identifier"]) for i in idents)
    comp = fx.get("compression", {})
    for kind_key, kind in (("sass", CodeKind.SASS), ("ptx", CodeKind.PTX)):
        if kind_key not in comp:
            continue
        spec = comp[kind_key]
        m = re.fullmatch(r"(\w+) \(linked\) / (\w+) \(relocatable\)", spec)
        for c, e in entries:
            if e.kind is not kind:
                continue
            want = (m.group(2) if c.relocatable else m.group(1)) if m else spec
            assert e.compression is Compression(want), (c.section, e.name)
    for _, e in entries:
        if e.compression is Compression.NONE:
            assert e.compressed_size == 0 and e.uncompressed_size == e.stored_size
        elif e.kind is not CodeKind.LTOIR:
            assert 0 < e.compressed_size <= e.stored_size
            # docs/formats.md#payloads-and-compression
            assert e.stored_size == (e.compressed_size + 7) // 8 * 8
        if e.kind is CodeKind.PTX:
            assert e.ptx_isa == FIXTURES[name].get("ptx_isa", TOML["ptx_isa"])


@pytest.mark.parametrize("name", [n for n in NAMES if FIXTURES[n]["sass"]])
def test_cubin_facts_match_fixture(name: str) -> None:
    """Decoded cubins: the toolkit that built them, and ET_REL exactly in -rdc sections."""
    decoded = 0
    toolkit = FIXTURES[name].get("toolkit", TOML["toolkit"])  # per-fixture override (Orin: 12.6)
    for b in binaries(name):
        for c in named(b):
            for e in c.entries:
                if e.kind is not CodeKind.SASS or e.toolkit is None:
                    continue
                decoded += 1
                assert str(e.toolkit) == toolkit
                if b.format == "elf" or b.format == "pe":
                    assert e.relocatable == c.relocatable, (c.section, e.name)
                else:  # a raw file has no section; win_rdc_rel_a is __nv_rel's first container
                    assert e.relocatable == ("rdc" in name) or b.format == "cubin"
            if c.toolkit is not None:
                assert str(c.toolkit) == toolkit
    assert decoded >= 1


def test_pe_pads_between_containers() -> None:
    fx = FIXTURES["win_rdc.dll"]
    (b,) = binaries("win_rdc.dll")
    for section, pads in fx["pads"].items():
        cs = [c for c in b.containers if c.section == section]
        gaps = [nxt.offset - (cur.offset + cur.size) for cur, nxt in itertools.pairwise(cs)]
        assert [g for g in gaps if g] == pads


def test_raw_pe_rel_container_equals_first_dll_container() -> None:
    (raw,) = binaries("win_rdc_rel_a.fatbin")
    (dll,) = binaries("win_rdc.dll")
    first = next(c for c in dll.containers if c.section == "__nv_rel")
    strip = [dataclasses.replace(e, offset=0) for e in first.entries]
    assert [dataclasses.replace(e, offset=0) for e in raw.containers[0].entries] == strip
    assert raw.containers[0].size == first.size


def test_coverage_counts_containers_per_arch() -> None:
    (b,) = binaries("two_tu.so")
    cov = {(a.kind, a.arch.sass if a.kind is CodeKind.SASS else a.arch.ptx): a
           for a in b.coverage()}
    assert {k[1]: v.containers for k, v in cov.items()} == {
        "sm_75": 1, "sm_80": 1, "sm_86": 1, "sm_90": 1, "sm_120": 1, "compute_90": 1}
    (b,) = binaries("sm80.so")
    sm80 = next(a for a in b.coverage() if a.kind is CodeKind.SASS)
    assert (sm80.containers, sm80.entries) == (2, 2)
    assert sm80.stored_bytes == sum(e.stored_size for e in b.entries() if e.kind is CodeKind.SASS)


# ------------------------------------------------------------------- readelf and pefile
def readelf_dynamic(path: Path) -> dict[str, list[str]]:
    out = subprocess.run(["readelf", "-dW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    facts: dict[str, list[str]] = {"NEEDED": [], "SONAME": [], "RPATH": [], "RUNPATH": []}
    for line in out.splitlines():
        m = re.match(r"\s*0x[0-9a-f]+ \((NEEDED|SONAME|RPATH|RUNPATH)\)\s+.*?\[(.*)\]\s*$", line)
        if m:
            facts[m.group(1)].append(m.group(2))
    return facts


def readelf_defined_dynsyms(path: Path) -> set[str]:
    out = subprocess.run(["readelf", "--dyn-syms", "-W", str(path)], capture_output=True,
                         text=True, check=True).stdout
    names: set[str] = set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 8 or not parts[0].rstrip(":").isdigit():
            continue
        _num, _value, _size, _type, bind, _vis, ndx, name = parts[:8]
        if ndx == "UND" or bind not in ("GLOBAL", "WEAK", "UNIQUE"):
            continue
        names.add(name.split("@")[0])
    return names


def check_against_readelf(b: Binary, path: Path) -> None:
    dyn = readelf_dynamic(path)
    assert list(b.needed) == dyn["NEEDED"]
    assert b.soname == (dyn["SONAME"][0] if dyn["SONAME"] else None)
    # every entry, empty ones included (ld.so reads "" as the working directory)
    assert list(b.rpath) == [p for v in dyn["RPATH"] for p in v.split(":")]
    assert list(b.runpath) == [p for v in dyn["RUNPATH"] for p in v.split(":")]
    assert set(b.exported) == readelf_defined_dynsyms(path)


ELF_HOSTS = [n for n in NAMES if FIXTURES[n]["format"] == "elf" and "members" not in FIXTURES[n]]


@needs_readelf
@pytest.mark.parametrize("name", ELF_HOSTS)
def test_elf_host_facts_equal_readelf(name: str) -> None:
    (b,) = binaries(name)
    check_against_readelf(b, BIN / name)


@needs_readelf
@_absent.skip_without("gcc", _absent.no_tool("gcc"))
@pytest.mark.parametrize("dtags", ["--disable-new-dtags", "--enable-new-dtags"])
def test_rpath_runpath_soname_equal_readelf(dtags: str, tmp_path: Path) -> None:
    src = tmp_path / "x.c"
    src.write_text("int cw_a(void){return 1;}\n__attribute__((weak)) int cw_w(void){return 2;}\n"
                   "static int hidden(void){return 3;}\nint cw_b(void){return hidden();}\n")
    so = tmp_path / "libcwx.so.1"
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(so),
                    "-Wl,-soname,libcwx.so.1", "-Wl,-rpath,$ORIGIN/../lib:/opt/a::/opt/b",
                    f"-Wl,{dtags}", "-Wl,--no-as-needed", "-lm"], check=True)
    inv = cuwheel.inspect([so])
    assert inv.problems == ()
    (b,) = inv.binaries
    check_against_readelf(b, so)
    assert b.soname == "libcwx.so.1"
    assert {"cw_a", "cw_b", "cw_w"} <= set(b.exported) and "hidden" not in b.exported
    paths = ["$ORIGIN/../lib", "/opt/a", "", "/opt/b"]  # "::" is an empty entry: kept
    assert (b.rpath, b.runpath) == ((tuple(paths), ()) if "disable" in dtags else
                                    ((), tuple(paths)))
    assert "libm.so.6" in b.needed


# Real published wheels, trimmed (device code rebuilt small, host facts kept) and committed
# with the script that trims them (tests/data/real/trim_real.py, manifest.txt): their
# libraries against readelf and NVIDIA's cuobjdump, on every machine that runs the tests.
REAL = DATA / "real"


def _real_libraries() -> list[tuple[str, str]]:
    out = []
    for whl in sorted(REAL.glob("*.whl")):
        with zipfile.ZipFile(whl) as zf:
            out += [(whl.name, n) for n in zf.namelist() if n.endswith(".so")]
    return out


REAL_LIBS = _real_libraries()


def test_real_libraries_are_committed() -> None:
    wheels = {w for w, _ in REAL_LIBS}
    assert len(wheels) == 3 and len(REAL_LIBS) >= 10
    assert ("vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl", "vllm/_C.abi3.so") in REAL_LIBS


@pytest.mark.oracle
@pytest.mark.parametrize(("wheel", "member"), REAL_LIBS, ids=[m for _, m in REAL_LIBS])
def test_real_library_equals_readelf_and_cuobjdump(wheel: str, member: str, tmp_path: Path) -> None:
    assert shutil.which("readelf") is not None, "readelf (binutils) is needed"
    assert oracle.find_cuobjdump() is not None, "nvidia-cuda-cuobjdump (test extra) is needed"
    path = tmp_path / Path(member).name
    with zipfile.ZipFile(REAL / wheel) as zf:
        path.write_bytes(zf.read(member))
    inv = cuwheel.inspect([path])
    assert inv.problems == ()
    (b,) = inv.binaries
    assert (b.format, b.file_type, b.machine) == ("elf", "shared", "x86_64")
    check_against_readelf(b, path)
    for all_sections in (False, True):
        want = as_cuobjdump(cuobjdump_selection(b, all_sections))
        try:
            got = oracle.list_device_code_sequence(path, all_sections=all_sections)
        except oracle.CuobjdumpError as exc:
            # cuobjdump 13.5 refuses binaries with Kepler code ("Support for 'sm_35' has
            # been removed"): there it is no oracle, and the inventory must show that code
            old = re.search(r"Support for '(sm_\d+)' has been removed", str(exc))
            assert old is not None, exc
            assert old.group(1) in {e.name for e in b.entries()}
            return
        assert got == want


@pytest.mark.parametrize("name", [n for n in NAMES if FIXTURES[n]["format"] == "pe"])
def test_pe_host_facts_equal_pefile(name: str) -> None:
    pefile = _absent.extra("pefile")
    (b,) = binaries(name)
    pe = pefile.PE(str(BIN / name))
    try:
        imports = [e.dll.decode() for e in getattr(pe, "DIRECTORY_ENTRY_IMPORT", [])]
        assert list(b.needed) == imports
        exp = getattr(pe, "DIRECTORY_ENTRY_EXPORT", None)
        names = sorted({s.name.decode() for s in exp.symbols if s.name}) if exp else []
        assert sorted(b.exported) == names
        assert pe.FILE_HEADER.Machine == 0x8664 and b.machine == "AMD64"
        assert bool(pe.FILE_HEADER.Characteristics & 0x2000) == (b.file_type == "dll")
        for c in b.containers:  # each container lies inside the section cuwheel names
            sec = next(s for s in pe.sections
                       if s.PointerToRawData <= c.offset < s.PointerToRawData + s.SizeOfRawData)
            assert sec.Name.rstrip(b"\0").decode() == c.section
            assert c.offset + c.size <= sec.PointerToRawData + min(sec.Misc_VirtualSize,
                                                                   sec.SizeOfRawData)
    finally:
        pe.close()


# --------------------------------------------------- the same inventory read three ways
def _strip(b: Binary) -> Binary:
    """A Binary without the parts that name where it was read from."""
    return dataclasses.replace(b, path="", archive=None)


def _expected() -> dict[str, list[Binary]]:
    return {n: [_strip(b) for b in binaries(n)] for n in NAMES}


def _by_member(src: Source, prefix: str, sep: str) -> dict[str, list[Binary]]:
    out: dict[str, list[Binary]] = collections.defaultdict(list)
    for b in src.binaries:
        where = b.archive if b.archive is not None else b.path
        rel = where.split(prefix, 1)[1]
        out[rel.replace(sep, "/").removeprefix("lib/")].append(_strip(b))
    return dict(out)


@pytest.fixture(scope="module")
def fixture_bytes() -> dict[str, bytes]:
    return {n: (BIN / n).read_bytes() for n in NAMES}


@pytest.mark.parametrize("method", [zipfile.ZIP_DEFLATED, zipfile.ZIP_STORED],
                         ids=["deflate", "stored"])
@pytest.mark.parametrize("mode", ["whole", "streamed"])
def test_wheel_directory_and_file_agree(
    method: int, mode: str, tmp_path: Path, fixture_bytes: dict[str, bytes],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if mode == "streamed":
        force_streaming(monkeypatch)
    whl = wheelfactory.make_wheel(tmp_path, {f"lib/{n}": d for n, d in fixture_bytes.items()},
                                  compression=method)
    tree = tmp_path / "tree" / "lib"
    tree.mkdir(parents=True)
    for n, d in fixture_bytes.items():
        (tree / n).write_bytes(d)
    inv = cuwheel.inspect([whl, tmp_path / "tree"], workers=1)
    wheel_src, dir_src = inv.sources
    assert wheel_src.kind == "wheel" and dir_src.kind == "directory"
    assert wheel_src.problems == () and dir_src.problems == ()
    assert wheel_src.wheel is not None and wheel_src.wheel.name == "cwfixture"
    assert wheel_src.files_seen == len(NAMES) + 3  # + METADATA, WHEEL, RECORD
    want = _expected()
    assert _by_member(wheel_src, "!", "/") == want
    assert _by_member(dir_src, str(tmp_path / "tree") + os.sep, os.sep) == want
    for b in wheel_src.binaries:
        assert b.path.startswith(f"{whl}!lib/")


def force_streaming(monkeypatch: pytest.MonkeyPatch) -> None:
    """Tiny inflate / read pieces, a tiny trailing window, no kept ELF head: every member
    streams in many chunks and most structures need the second pass."""
    import cuwheel.read.binary.elf as elf_mod
    import cuwheel.read.binary.sniff as binary_mod
    import cuwheel.read.bytes.stream as stream_mod
    import cuwheel.read.sources.wheelfile as sources_mod

    monkeypatch.setattr(sources_mod, "OUT_SIZE", 4096)
    monkeypatch.setattr(sources_mod, "READ_SIZE", 4096)
    monkeypatch.setattr(elf_mod, "HEAD_BYTES", 0)
    monkeypatch.setattr(stream_mod, "DEFAULT_WINDOW", 64)
    # Scan binds DEFAULT_WINDOW as a default argument when the class is defined, so
    # patching the module constant alone would change nothing: build Scans with it.
    base = stream_mod.Scan

    class SmallWindowScan(base):  # type: ignore[misc, valid-type]
        def __init__(self, size: int, **kw: object) -> None:
            kw.setdefault("window", 64)
            super().__init__(size, **kw)

    monkeypatch.setattr(binary_mod, "Scan", SmallWindowScan)


def test_streaming_really_streams(
    tmp_path: Path, fixture_bytes: dict[str, bytes], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The forced path takes more than one pass and many chunks (else the test above would
    only prove the resident path twice)."""
    import cuwheel.read.binary.sniff as binary_mod

    force_streaming(monkeypatch)
    passes: list[int] = []
    chunks: list[int] = []
    scan_cls = binary_mod.Scan

    class Spy(scan_cls):  # type: ignore[misc, valid-type]
        def feed(self, chunk: object) -> None:
            chunks.append(len(chunk))  # type: ignore[arg-type]
            super().feed(chunk)

        def restart(self) -> None:
            super().restart()
            passes.append(self.passes)

    monkeypatch.setattr(binary_mod, "Scan", Spy)
    whl = wheelfactory.make_wheel(tmp_path, {"lib/allmajor.so": fixture_bytes["allmajor.so"]})
    inv = cuwheel.inspect([whl], workers=1)
    assert inv.problems == ()
    assert passes and max(passes) >= 2
    assert max(chunks) <= 4096 and len(chunks) > len(fixture_bytes["allmajor.so"]) // 4096
    assert [_strip(b) for b in inv.binaries] == _expected()["allmajor.so"]


def test_highly_compressible_tail_inflates_whole(tmp_path: Path) -> None:
    """Regression: isal's decompressor takes in all the input it is given and owes the
    output; a member whose last compressed MiB inflates beyond one output piece (here a
    library followed by 1 MiB of noise and 16 MiB of zeros) was cut short and refused as
    'inflates to N bytes, declared M'.  Default piece sizes."""
    lib = (BIN / "sm80.so").read_bytes()
    blob = lib + os.urandom(1 << 20) + bytes(16 << 20)
    whl = wheelfactory.make_wheel(tmp_path, {"lib/sm80.so": blob})
    inv = cuwheel.inspect([whl], workers=1)
    assert inv.problems == ()
    (b,) = inv.binaries
    assert b.size == len(blob)
    assert _strip(dataclasses.replace(b, size=len(lib))) == _expected()["sm80.so"][0]

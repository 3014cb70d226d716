"""Self-check of the committed fixtures against NVIDIA's cuobjdump.

Checks that tests/data/fixtures.toml (what nvcc was asked to build) agrees with what
cuobjdump 13.5 lists, so that other tests can use either as an independent oracle.
Nothing here imports cuwheel.
"""

from __future__ import annotations

import collections
import sys
from pathlib import Path

import pytest

import _absent

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

sys.path.insert(0, str(Path(__file__).parent))
import cuobjdump_oracle as oracle

DATA = Path(__file__).parent / "data"
BIN = DATA / "bin"
FIXTURES: dict[str, dict] = tomllib.loads((DATA / "fixtures.toml").read_text())["fixture"]

needs_cuobjdump = _absent.needs_cuobjdump
pytestmark = pytest.mark.oracle

C = collections.Counter


def cuobjdump_sass_name(name: str) -> str:
    """FatbinEntry-style cubin name -> cuobjdump's: the f suffix is dropped."""
    return name[:-1] if name.endswith("f") else name


def cuobjdump_ptx_name(name: str) -> str:
    """compute_100f -> sm_100f (cuobjdump names PTX files sm_XX)."""
    return "sm_" + name.removeprefix("compute_")


def test_every_fixture_is_described() -> None:
    on_disk = {p.name for p in BIN.iterdir()}
    assert on_disk == set(FIXTURES)


@pytest.mark.parametrize("name", sorted(FIXTURES))
def test_asked_matches_recorded_entries(name: str) -> None:
    """The recorded entries are the asked targets plus the device-link stub (toml sanity)."""
    fx = FIXTURES[name]
    asked = fx["asked"]
    if "hidden" in fx:  # device code only outside the named sections
        got = C(fx["hidden"]["sass"]) + C(fx["hidden"]["ptx"])
        assert got == C(asked)
        return
    tus = fx.get("tus", 1)
    # a target asked of several units of one library is listed once per unit
    asked_sass = C([a for a in asked if a.startswith("sm_")] * tus)
    asked_ptx = C([a for a in asked if a.startswith("compute_")] * tus)
    asked_lto = C(["compute_" + a[4:] for a in asked if a.startswith("lto_")] * tus)
    assert C(fx["sass"]) - C(fx.get("link_stub", [])) == asked_sass
    assert C(fx.get("link_stub", [])) <= C(fx["sass"])
    assert C(fx["ptx"]) == asked_ptx
    assert C(fx.get("lto", [])) == asked_lto


@needs_cuobjdump
@pytest.mark.parametrize("name", sorted(n for n, fx in FIXTURES.items() if "cuobjdump" in fx))
def test_cuobjdump_default_listing(name: str) -> None:
    fx = FIXTURES[name]
    sass, ptx = oracle.list_device_code(BIN / name)
    assert sass == C(fx["cuobjdump"]["sass"])
    assert ptx == C(fx["cuobjdump"]["ptx"])


@needs_cuobjdump
@pytest.mark.parametrize("name", sorted(n for n, fx in FIXTURES.items() if "cuobjdump_all" in fx))
def test_cuobjdump_all_listing(name: str) -> None:
    fx = FIXTURES[name]
    sass, ptx = oracle.list_device_code(BIN / name, all_sections=True)
    assert sass == C(fx["cuobjdump_all"]["sass"])
    assert ptx == C(fx["cuobjdump_all"]["ptx"])
    seq = oracle.list_device_code_sequence(BIN / name, all_sections=True)
    assert [n for k, n in seq if k == "ELF"] == fx["cuobjdump_all"]["sass"]
    assert [n for k, n in seq if k == "PTX"] == fx["cuobjdump_all"]["ptx"]


@needs_cuobjdump
@pytest.mark.parametrize(
    "name",
    sorted(n for n, fx in FIXTURES.items() if "cuobjdump_all" in fx and fx["format"] != "ptx"),
)
def test_cuobjdump_all_equals_asked_entries(name: str) -> None:
    """cuobjdump -all sees exactly the recorded entries (LTO-IR excluded), in its spelling."""
    fx = FIXTURES[name]
    sass, ptx = oracle.list_device_code(BIN / name, all_sections=True)
    assert sass == C(cuobjdump_sass_name(s) for s in fx["sass"])
    assert ptx == C(cuobjdump_ptx_name(p) for p in fx["ptx"])


@needs_cuobjdump
@pytest.mark.parametrize(
    "name", sorted(n for n, fx in FIXTURES.items() if "cuobjdump_sections" in fx)
)
def test_cuobjdump_on_pe_sections(name: str, tmp_path: Path) -> None:
    fx = FIXTURES[name]
    total_sass: collections.Counter[str] = C()
    total_ptx: collections.Counter[str] = C()
    for section, want in fx["cuobjdump_sections"].items():
        dump = tmp_path / (section.strip("._") + ".fatbin")
        dump.write_bytes(oracle.extract_pe_section(BIN / name, section))
        sass, ptx = oracle.list_device_code(dump)
        assert sass == C(want["sass"]), section
        assert ptx == C(want["ptx"]), section
        total_sass += sass
        total_ptx += ptx
    assert total_sass == C(cuobjdump_sass_name(s) for s in fx["sass"])
    assert total_ptx == C(cuobjdump_ptx_name(p) for p in fx["ptx"])


@needs_cuobjdump
def test_raw_ptx_is_not_listed_by_cuobjdump() -> None:
    assert oracle.list_device_code(BIN / "k89.ptx") == (C(), C())


@needs_cuobjdump
def test_oracle_raises_on_garbage(tmp_path: Path) -> None:
    bad = tmp_path / "bad.fatbin"
    data = bytearray((BIN / "k86.fatbin").read_bytes())
    data[16 + 64 : 16 + 64 + 4] = b"JUNK"  # break the cubin's ELF magic
    bad.write_bytes(bytes(data))
    try:
        sass, ptx = oracle.list_device_code(bad)
    except oracle.CuobjdumpError:
        return
    # cuobjdump 13.5 lists it anyway (a listing reads only the fatbin headers); at least
    # it must not invent entries
    assert sum(sass.values()) <= 1 and sum(ptx.values()) <= 1


def test_pe_section_extraction_matches_truncated_names() -> None:
    _absent.extra("pefile")
    data = oracle.extract_pe_section(BIN / "win_rdc.dll", "__nv_relfatbin")
    assert data[:4] == b"\x50\xed\x55\xba"
    assert data == oracle.extract_pe_section(BIN / "win_rdc.dll", "__nv_rel")
    # one 8-byte zero pad between the two containers
    first = (BIN / "win_rdc_rel_a.fatbin").read_bytes()
    assert data.startswith(first)
    assert data[len(first) : len(first) + 8] == bytes(8)
    assert data[len(first) + 8 : len(first) + 12] == b"\x50\xed\x55\xba"
    with pytest.raises(KeyError):
        oracle.extract_pe_section(BIN / "win_hostonly.dll", ".nv_fatbin")


@pytest.mark.parametrize("name", sorted(n for n, fx in FIXTURES.items() if fx["format"] == "pe"))
def test_pe_imports_and_exports(name: str) -> None:
    pefile = _absent.extra("pefile")
    fx = FIXTURES[name]
    pe = pefile.PE(str(BIN / name))
    try:
        assert [e.dll.decode() for e in pe.DIRECTORY_ENTRY_IMPORT] == fx["needed"]
        exports = sorted(s.name.decode() for s in pe.DIRECTORY_ENTRY_EXPORT.symbols)
        assert exports == sorted(fx["exports"])
    finally:
        pe.close()

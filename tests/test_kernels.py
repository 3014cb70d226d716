"""Entry kernels and their families (read/device/cubin.py entry_kernels,
read/device/ptx.py ptx_entries, model/kernels.py): against cuobjdump -symbols, the PTX text
cuobjdump prints, and c++filt, on nvcc-built fixtures (tests/data/build_kernels.sh) and on
names copied from real wheels."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
import time
from pathlib import Path

import jsonschema
import pytest

import cuwheel
from cuobjdump_oracle import find_cuobjdump, list_entry_kernels
from cuwheel.cli import main
from cuwheel.model.inventory import CodeKind
from cuwheel.model.kernels import kernel_family
from cuwheel.read.device import cubin as cubin_mod
from cuwheel.read.device.cubin import entry_kernels, parse_cubin
from cuwheel.read.device.ptx import ptx_entries
from cuwheel.render.inspect_json import inventory_to_dict, load_schema

BIN = Path(__file__).parent / "data" / "bin"
KERNEL_FIXTURES = ["kern_perarch.so", "kern_unique.so", "kern_names.so", "k90.cubin",
                   "two_tu.so", "sm90a.so", "librdc.so", "sm100f.so"]

# Real kernel names (facts copied from the cubins of published wheels), with the family
# c++filt's output gives once template arguments and parameters are dropped.
REAL_NAMES = [
    # vllm 0.33.0 _moe_C_stable_libtorch.abi3.so, an sm_75-only container
    "_ZN16marlin_moe_wna166MarlinILl1125899906909952ELl1125899906843648ELl1125899906910725EL"
    "l1125899906910725ELi128ELi1ELi4ELi8ELb0ELi2ELi2ELb0EEEvPK4int4S3_PS1_S4_S3_PKfS3_S6_S3_"
    "PKiS8_S8_S6_ibiiiPibbb",
    "_Z21expandInputRowsKernelI13__nv_bfloat16Lb0EEvPKT_PS1_PKiPiS7_PKllS9_lli",
    "_ZN3cub29CUB_300001_SM_750_800_860_890_900_1000_1200_NS_6detail11EmptyKernelIvEEvv",
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EE"
    "EEviT0_T1_",
]


def _cxxfilt_family(mangled: str) -> str:
    """The family as c++filt spells the name: its return type ("void ", printed for
    templates), template arguments and parameters dropped."""
    exe = shutil.which("c++filt")
    assert exe is not None, "c++filt (binutils) is needed"
    out = subprocess.run([exe, mangled], capture_output=True, text=True, check=True).stdout
    text = out.strip().replace("(anonymous namespace)", "\0")
    text = text.removeprefix("void ")
    depth, cut = 0, len(text)
    for i, ch in enumerate(text):
        if ch in "<(" and depth == 0:
            cut = i
            break
    return text[:cut].replace("\0", "(anonymous namespace)")


def _entries(path: Path, payload: str = "kernels"):
    inv = cuwheel.inspect(path, payload=payload)
    assert not inv.problems
    return [e for b in inv.binaries for e in b.entries()]


@pytest.mark.parametrize("name", [n for n in KERNEL_FIXTURES if not n.endswith(".cubin")])
def test_entry_kernels_of_every_cubin_match_cuobjdump_symbols(name: str) -> None:
    # the oracle is in the test extra: its absence fails, never skips
    assert find_cuobjdump() is not None, "pip install nvidia-cuda-cuobjdump (the test extra)"
    ours = [list(e.kernel_names or ()) for e in _entries(BIN / name)
            if e.kind is CodeKind.SASS]
    # -all: __nv_relfatbin too (cuobjdump lists .nv_fatbin first, cuwheel in file order)
    assert sorted(ours) == sorted(list_entry_kernels(BIN / name, all_sections=True))
    assert any(ours)


def test_entry_kernels_of_a_bare_cubin() -> None:
    data = (BIN / "k90.cubin").read_bytes()
    assert entry_kernels(data) == ("cw_scale",)
    assert parse_cubin(data).kernel_names is None  # only when asked
    assert parse_cubin(data, kernel_names=True).kernel_names == ("cw_scale",)


@pytest.mark.parametrize("name", ["kern_perarch.so", "kern_names.so"])
def test_ptx_entries_match_the_ptx_cuobjdump_prints(name: str) -> None:
    exe = find_cuobjdump()
    assert exe is not None
    text = subprocess.run([exe, "-ptx", str(BIN / name)], capture_output=True, text=True,
                          check=True).stdout
    # cuobjdump prints each PTX file after a "Fatbin ptx code" header
    want = [re.findall(r"^(?:\.(?:visible|weak|extern) )?\.entry (\S+?)\(", part, re.M)
            for part in text.split("Fatbin ptx code:")[1:]]
    ours = [list(e.kernel_names or ()) for e in _entries(BIN / name) if e.kind is CodeKind.PTX]
    assert ours == want and any(want)


def test_names_are_read_only_when_asked() -> None:
    entries = _entries(BIN / "kern_unique.so", payload="sample")
    assert entries and all(e.kernel_names is None for e in entries)
    assert all(e.kernel_names is not None for e in _entries(BIN / "kern_unique.so"))


def test_families_of_the_fixture_by_hand() -> None:
    names = {n for e in _entries(BIN / "kern_names.so") for n in (e.kernel_names or ())}
    assert {kernel_family(n) for n in names} == {
        "outer::inner::tiled", "outer::inner::with_struct", "(anonymous namespace)::hidden",
        "file_static", "c_linkage", "overloaded", "apply", "big_literal",
    }
    perarch = {kernel_family(n) for e in _entries(BIN / "kern_perarch.so")
               for n in (e.kernel_names or ())}
    assert perarch == {"kj::scale"}


def test_families_match_cxxfilt() -> None:
    names = {n for f in KERNEL_FIXTURES for e in _entries(BIN / f) for n in (e.kernel_names or ())}
    names |= set(REAL_NAMES)
    for n in sorted(names):
        if n.startswith("_Z"):
            assert kernel_family(n) == _cxxfilt_family(n), n
        else:
            assert kernel_family(n) == n


@pytest.mark.parametrize("name", [
    "_ZZ4mainE1k", "_Z", "_ZN", "_ZN99xE", "_ZNS0_3fooEv", "_Z0x", "_ZN2ns3fooB5cxx",
    "_ZN" + "1a" * 100 + "E", "_ZN2nsC1Ev", "_ZplRK1AS1_",
])
def test_names_outside_the_subset_are_their_own_family(name: str) -> None:
    assert kernel_family(name) == name


# -- bounds on hostile input ------------------------------------------------------------

def _sections(data: bytes) -> list[tuple[int, int, int, int, int]]:
    """(index, type, offset, size, link) of each section header of a cubin."""
    shoff, = struct.unpack_from("<Q", data, 40)
    _, shnum = struct.unpack_from("<HH", data, 58)
    out = []
    for i in range(shnum):
        sh_type, = struct.unpack_from("<I", data, shoff + i * 64 + 4)
        off, size, link = struct.unpack_from("<QQI", data, shoff + i * 64 + 24)
        out.append((i, sh_type, off, size, link))
    return out


def test_a_symbol_table_past_the_end_gives_none() -> None:
    data = bytearray((BIN / "k90.cubin").read_bytes())
    shoff, = struct.unpack_from("<Q", data, 40)
    i = next(s[0] for s in _sections(bytes(data)) if s[1] == 2)
    struct.pack_into("<Q", data, shoff + i * 64 + 32, 1 << 40)  # sh_size
    assert entry_kernels(bytes(data)) is None
    assert entry_kernels(bytes(data[:100])) is None


def test_an_unterminated_name_is_cut() -> None:
    data = bytearray((BIN / "k90.cubin").read_bytes())
    secs = _sections(bytes(data))
    sym = next(s for s in secs if s[1] == 2)
    strtab = secs[sym[4]]
    # the string table's bytes become one long name without a NUL, then extend the
    # cubin so the table is 10,000 bytes of 'x'
    shoff, = struct.unpack_from("<Q", data, 40)
    data += b"x" * 10_000
    struct.pack_into("<QQ", data, shoff + strtab[0] * 64 + 24, len(data) - 10_000, 10_000)
    names = entry_kernels(bytes(data))
    assert names is not None and len(names) == 1 and names[0] == "x" * 4096


def test_kernels_per_cubin_are_bounded(monkeypatch: pytest.MonkeyPatch) -> None:
    names = entry_kernels((BIN / "kern_names.so").read_bytes()) or ()
    assert names == ()  # a host ELF is no cubin: no CUDA symbol table entries
    data = next(e for e in _entries(BIN / "kern_names.so") if e.kind is CodeKind.SASS
                and e.arch.number == 80)
    assert data.kernel_names is not None and len(data.kernel_names) == 10
    monkeypatch.setattr(cubin_mod, "MAX_KERNELS", 3)
    inv = cuwheel.inspect(BIN / "kern_names.so", payload="kernels")
    sm80 = [e for e in inv.binaries[0].entries() if e.arch.number == 80
            and e.kind is CodeKind.SASS]
    assert sm80 and all(len(e.kernel_names or ()) == 3 for e in sm80)


def test_ptx_entries_cost_is_linear_in_the_text() -> None:
    text = b".version 9.0\n.target sm_80\n" + b".entry .entry\n" * 200_000
    start = time.process_time()
    assert ptx_entries(text) == ()
    assert time.process_time() - start < 5
    assert ptx_entries(b".visible .entry k_a(\n.entry   k_b (\n.entry k_a(\nx.entry k_c(") == (
        "k_a", "k_b")
    many = b"".join(b".entry k%d(\n" % i for i in range(70_000))
    assert len(ptx_entries(many)) == 1 << 16


# -- the CLI ----------------------------------------------------------------------------

def test_inspect_kernels_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["inspect", "--kernels", str(BIN / "kern_unique.so")]) == 0
    out = capsys.readouterr().out
    assert "kernels: 5 in 2 families" in out
    assert "kj::scale  4 kernels (sm_75, sm_80, sm_90a, compute_80)" in out
    assert "kj::turing_only  1 kernel (sm_75)" in out
    assert main(["inspect", "--kernels", "--json", str(BIN / "kern_unique.so")]) == 0
    doc = json.loads(capsys.readouterr().out)
    schema = load_schema()
    jsonschema.validators.validator_for(schema)(schema).validate(doc)
    b = doc["sources"][0]["binaries"][0]
    assert b["summary"]["kernel_families"] == [
        {"family": "kj::scale", "kernels": 4, "sass": ["sm_75", "sm_80", "sm_90a"],
         "ptx": ["compute_80"]},
        {"family": "kj::turing_only", "kernels": 1, "sass": ["sm_75"], "ptx": []},
    ]
    assert b["containers"][4]["entries"][0]["kernels"] == ["_ZN2kj11turing_onlyEPf"]
    plain = inventory_to_dict(cuwheel.inspect(BIN / "kern_unique.so"))
    assert plain["sources"][0]["binaries"][0]["summary"]["kernel_families"] is None

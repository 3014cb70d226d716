"""Device variables and whether host code reads them (read/device/cubin.py entry_symbols,
read/device/ptx.py ptx_variables, read/binary/hostrefs.py), and the loading rule that uses them
(rules/loading.py ignored_reason).

Truth: tests/data/src/family/ (table.cu: a static table its host code never touches;
var.cu: a variable its own host code reads with cudaMemcpyFromSymbol), written here by
hand; what the driver did with them is tests/test_family_truth.py's.  cuobjdump -elf is the
oracle for the cubins' variables.
"""

from __future__ import annotations

import struct
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import cuwheel
from cuobjdump_oracle import find_cuobjdump, list_device_objects
from cuwheel.model.inventory import CodeKind
from cuwheel.read.binary.hostrefs import read_host_reads
from cuwheel.read.device.ptx import ptx_variables
from cuwheel.rules.loading import ignored_reason

BIN = Path(__file__).parent / "data" / "bin"


def _kernel_less(name: str) -> list[object]:
    """The kernel-less containers that are not nvcc's device-link stub (one cubin)."""
    (b,) = cuwheel.inspect([str(BIN / name)], payload="kernels").binaries
    return [c for c in b.containers if not c.device_link
            and all(e.kernel_names == () for e in c.entries)]  # fmt: skip


def test_the_read_variable_is_read_and_the_static_table_is_not() -> None:
    (var,) = _kernel_less("family_newvar.so")
    assert var.host_reads == ("cw_table",)  # type: ignore[attr-defined]
    table, empty = _kernel_less("family_newptx.so")
    assert table.host_reads == ()  # type: ignore[attr-defined]
    assert {n for e in empty.entries for n in e.data_names or ()} == set()  # type: ignore[attr-defined]


def test_only_the_unread_kernel_less_modules_are_ignored() -> None:
    (var,) = _kernel_less("family_newvar.so")
    table, empty = _kernel_less("family_newptx.so")
    assert ignored_reason(var) is None  # type: ignore[arg-type]
    assert "no device variable the host code reads" in (ignored_reason(table) or "")  # type: ignore[arg-type]
    assert "no device variables" in (ignored_reason(empty) or "")  # type: ignore[arg-type]


def test_without_names_nothing_changes() -> None:
    """Read without names (the default inspect), no container is called kernel-less."""
    (b,) = cuwheel.inspect([str(BIN / "family_newvar.so")]).binaries
    assert all(c.host_reads is None for c in b.containers)
    stub, gemm, var = b.containers
    assert [ignored_reason(gemm), ignored_reason(var)] == [None, None]
    assert stub.device_link and "no .text section" in (ignored_reason(stub) or "")


@pytest.mark.parametrize("name", ["family_newvar.so", "family_newptx.so", "family_dispatch.so"])
def test_cubin_variables_match_cuobjdump(name: str) -> None:
    exe = find_cuobjdump()
    assert exe is not None, "the test extra's cuobjdump is missing"
    (b,) = cuwheel.inspect([str(BIN / name)], payload="kernels").binaries
    ours = sorted(sorted(e.data_names or ()) for c in b.containers for e in c.entries
                  if e.kind is CodeKind.SASS)  # fmt: skip
    assert ours == sorted(sorted(x) for x in list_device_objects(BIN / name))


def test_ptx_variables_by_hand() -> None:
    text = (b"\n.version 9.4\n.target sm_75\n.address_size 64\n"
            b".global .align 4 .b8 precalc[8] = {1, 2};\n"
            b".visible .const .align 8 .u64 cst;\n"
            b".extern .global .align 4 .u32 elsewhere;\n"
            b".global .attribute(.managed) .align 4 .u32 managed;\n"
            b".visible .entry k(\n)\n{\n\t.global .u32 not_module_scope;\n\tret;\n}\n"
            b".weak .global .align 4 .v4 .f32 vec[2];\n")  # fmt: skip
    assert ptx_variables(text) == ("precalc", "cst", "managed", "vec")


def _patched(name: str, edit: dict[int, bytes]) -> memoryview:
    data = bytearray((BIN / name).read_bytes())
    for at, raw in edit.items():
        data[at : at + len(raw)] = raw
    return memoryview(bytes(data))


def _var_container() -> object:
    (var,) = _kernel_less("family_newvar.so")
    return var


def test_another_machine_is_unknown() -> None:
    var = _var_container()
    data = _patched("family_newvar.so", {18: struct.pack("<H", 183)})  # EM_AARCH64
    assert read_host_reads(data, [var]) == {var.offset: None}  # type: ignore[attr-defined]


def test_no_unwind_table_is_unknown() -> None:
    """Without .eh_frame_hdr the registration functions cannot be told apart."""
    var = _var_container()
    raw = (BIN / "family_newvar.so").read_bytes()
    at = raw.index(b".eh_frame_hdr\0")
    data = _patched("family_newvar.so", {at: b".eh_frame_hdX"})
    assert read_host_reads(data, [var]) == {var.offset: None}  # type: ignore[attr-defined]


def test_a_second_reference_makes_it_read() -> None:
    """The static table's shadow gets a second lea (the registration's own bytes copied
    into unused padding): the answer moves to read, never the other way."""
    table = _kernel_less("family_newptx.so")[0]
    raw = (BIN / "family_newptx.so").read_bytes()
    assert read_host_reads(memoryview(raw), [table]) == {table.offset: ()}  # type: ignore[attr-defined]
    # find `lea rsi, [rip+d]` whose target is the table's shadow: the one rsi lea of the
    # unit's registration callback
    from cuwheel.read.binary import hostrefs

    secs = hostrefs._sections(memoryview(raw))
    text = next(s for s in secs if s.name == ".text")
    refs = hostrefs._references(memoryview(raw), secs)
    rsi = [(a, t) for t, hits in refs.items() for a, op, reg in hits if op == 0x8D and reg == 6]
    writable = {s.name: s for s in secs}[".bss"]
    ((_, shadow),) = [(a, t) for a, t in rsi if writable.addr <= t < writable.addr + writable.size]
    # a copy far from the registration (the end of .text holds padding in the fixture)
    at = text.off + text.size - 16
    new_a = text.addr + text.size - 16
    disp = shadow - (new_a + 7)
    data = _patched("family_newptx.so", {at: b"\x48\x8d\x35" + struct.pack("<i", disp)})
    assert read_host_reads(data, [table]) == {table.offset: ("cw_table",)}  # type: ignore[attr-defined]


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 0x7000), st.binary(min_size=1, max_size=8)),
                max_size=6))
def test_damaged_files_never_raise(edits: list[tuple[int, bytes]]) -> None:
    var = _var_container()
    data = bytearray((BIN / "family_newvar.so").read_bytes())
    for at, raw in edits:
        data[at : at + len(raw)] = raw
    out = read_host_reads(memoryview(bytes(data)), [var])
    assert set(out) == {var.offset}  # type: ignore[attr-defined]


@pytest.mark.parametrize("name", ["family_newvar.so", "family_newptx.so"])
def test_ptx_variables_of_kernel_less_texts_match_cuobjdump(name: str) -> None:
    """The PTX texts without kernels, through the whole read: their module-scope variables
    are the .global / .const lines `cuobjdump -ptx` prints at column 0."""
    import subprocess

    exe = find_cuobjdump()
    assert exe is not None, "the test extra's cuobjdump is missing"
    out = subprocess.run([exe, "-ptx", str(BIN / name)], capture_output=True, text=True,
                         check=True).stdout
    theirs = sorted(line.split("[")[0].split()[-1] for line in out.splitlines()
                    if line.startswith((".global ", ".const ", ".visible .global ")))
    (b,) = cuwheel.inspect([str(BIN / name)], payload="kernels").binaries
    ours = sorted(n for c in b.containers for e in c.entries
                  if e.kind is CodeKind.PTX and e.kernel_names == ()
                  for n in e.data_names or ())  # fmt: skip
    assert ours == theirs and ours


def test_a_text_of_openings_is_bounded() -> None:
    """A hostile PTX text of nothing but variable openings: the names kept and the
    positions looked at stay bounded."""
    text = b"\n.version 9.0\n.target sm_90\n" + b"\n.global .u32 v;" * 200_000
    names = ptx_variables(text)
    assert names == ("v",)
    from cuwheel.read.device import ptx

    assert len(ptx._openings(text)) <= 65_536 * len(ptx._OPENINGS) + 1


def test_too_many_references_is_unknown(monkeypatch: pytest.MonkeyPatch) -> None:
    """Past MAX_REFERENCES (a file made of instruction-like bytes) the answer is unknown,
    not memory spent."""
    from cuwheel.read.binary import hostrefs

    table = _kernel_less("family_newptx.so")[0]
    raw = memoryview((BIN / "family_newptx.so").read_bytes())
    monkeypatch.setattr(hostrefs, "MAX_REFERENCES", 3)
    assert read_host_reads(raw, [table]) == {table.offset: None}  # type: ignore[attr-defined]


def test_a_relocated_pointer_to_the_shadow_makes_it_read() -> None:
    """A pointer table (an R_X86_64_RELATIVE relocation) holding the static table's shadow
    lets code reach it without an instruction naming it: read."""
    from cuwheel.read.binary import hostrefs

    table = _kernel_less("family_newptx.so")[0]
    raw = (BIN / "family_newptx.so").read_bytes()
    secs = hostrefs._sections(memoryview(raw))
    refs = hostrefs._references(memoryview(raw), secs)
    bss = {s.name: s for s in secs}[".bss"]
    (shadow,) = {t for t, hits in refs.items() for _, op, reg in hits
                 if op == 0x8D and reg == 6 and bss.addr <= t < bss.addr + bss.size}
    rela = {s.name: s for s in secs}[".rela.dyn"]
    at = next(rela.off + i for i in range(0, rela.size, 24)
              if struct.unpack_from("<Q", raw, rela.off + i + 8)[0] & 0xFFFFFFFF == 8)
    data = _patched("family_newptx.so", {at + 16: struct.pack("<q", shadow)})
    assert read_host_reads(data, [table]) == {table.offset: ("cw_table",)}  # type: ignore[attr-defined]

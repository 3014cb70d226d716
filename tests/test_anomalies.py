"""One damaged structure does not lose the binary: the rest of its facts are kept and the
damage is a one-line anomaly (docs/inspect.md, "Anomalies"); only a file whose own
header or table is unreadable is a Problem.  The same bytes read from disk and streamed
from a wheel give the same Binary, anomalies included."""

from __future__ import annotations

import dataclasses
import json
import struct
import subprocess
import sys
from pathlib import Path

import pytest

import _absent

sys.path.insert(0, str(Path(__file__).parent))
import binbuild
import cuwheel
import wheelfactory
from cuwheel.model.inventory import Binary, Inventory
from cuwheel.render.inspect_json import inventory_to_dict, load_schema
from cuwheel.render.inspect_text import render_text

BIN = Path(__file__).parent / "data" / "bin"
ROW = BIN / "row_x86_cu13.so"  # NEEDED, RUNPATH, exports, 2 containers in .nv_fatbin
WHOLE = cuwheel.inspect([ROW]).binaries[0]


def shdrs(data: bytes) -> dict[str, tuple[int, int, int]]:
    """name -> (header offset, sh_offset, sh_size), parsed here (ELF64 LE)."""
    shoff, = struct.unpack_from("<Q", data, 40)
    shnum, shstrndx = struct.unpack_from("<HH", data, 60)
    recs = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + 64 * i) for i in range(shnum)]
    strtab = recs[shstrndx][4]
    out = {}
    for i, r in enumerate(recs):
        end = data.index(b"\0", strtab + r[0])
        out[data[strtab + r[0] : end].decode()] = (shoff + 64 * i, r[4], r[5])
    return out


def patched(data: bytes, at: int, fmt: str, value: int) -> bytes:
    buf = bytearray(data)
    struct.pack_into(fmt, buf, at, value)
    return bytes(buf)


def read_both(tmp_path: Path, name: str, data: bytes,
              monkeypatch: pytest.MonkeyPatch) -> Inventory:
    """Read from disk, and streamed in 1 KiB pieces from a wheel: both must agree."""
    import cuwheel.read.sources.wheelfile as sources_mod

    p = tmp_path / name
    p.write_bytes(data)
    disk = cuwheel.inspect([p], workers=1)
    monkeypatch.setattr(sources_mod, "OUT_SIZE", 1024)
    whl = wheelfactory.make_wheel(tmp_path / "w", {f"lib/{name}": data})
    streamed = cuwheel.inspect([whl], workers=1)
    strip = [dataclasses.replace(b, path="", archive=None) for b in streamed.binaries]
    assert strip == [dataclasses.replace(b, path="", archive=None) for b in disk.binaries]
    assert [p.message for p in streamed.problems] == [p.message for p in disk.problems]
    return disk


def one(inv: Inventory) -> Binary:
    assert inv.problems == ()
    (b,) = inv.binaries
    assert b.anomalies, "expected an anomaly"
    for a in b.anomalies:
        assert "\n" not in a and a.strip() == a
    return b


def test_a_damaged_container_keeps_the_library_and_its_other_facts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = ROW.read_bytes()
    first = WHOLE.containers[0]
    bad = patched(data, first.entries[0].offset, "<H", 77)  # entry kind 77
    b = one(read_both(tmp_path, "row.so", bad, monkeypatch))
    assert b.anomalies == (f".nv_fatbin container at 0x{first.offset:x}: entry at "
                           f"0x{first.entries[0].offset:x}: unknown fatbin entry kind 77",)
    assert [c.offset for c in b.containers] == [c.offset for c in WHOLE.containers[1:]]
    assert (b.needed, b.runpath, b.soname, b.exported) == (
        WHOLE.needed, WHOLE.runpath, WHOLE.soname, WHOLE.exported)


def test_anomalies_in_json_text_and_exit_status(tmp_path: Path) -> None:
    import jsonschema

    data = ROW.read_bytes()
    bad = patched(data, WHOLE.containers[1].entries[0].offset + 28, "<I", 0)  # arch 0
    p = tmp_path / "row.so"
    p.write_bytes(bad)
    inv = cuwheel.inspect([p])
    (b,) = inv.binaries
    (note,) = b.anomalies
    doc = inventory_to_dict(inv)
    jsonschema.validate(doc, load_schema())
    assert doc["sources"][0]["binaries"][0]["anomalies"] == [note]
    assert f"    warning: {note}\n" in render_text(inv)
    assert doc["sources"][0]["problems"] == []
    for args in ([], ["--json"]):
        proc = subprocess.run([sys.executable, "-m", "cuwheel", "inspect", *args, str(p)],
                              capture_output=True, text=True, check=False)
        assert proc.returncode == 2
        assert f"cuwheel: warning: {p}: {note}" in proc.stderr
        assert "Traceback" not in proc.stderr
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "inspect", str(ROW)],
                          capture_output=True, text=True, check=False)
    assert proc.returncode == 0 and "warning" not in proc.stdout + proc.stderr
    # a binary with anomalies is shown even without device code or linked libraries
    host = tmp_path / "hostonly.so"
    hdata = (BIN / "hostonly.so").read_bytes()
    host.write_bytes(patched(hdata, shdrs(hdata)[".dynsym"][0] + 24, "<Q", len(hdata)))
    text = render_text(cuwheel.inspect([host]))
    assert "hostonly.so" in text and "warning: .dynsym at 0x" in text


def test_dynamic_strings_in_no_segment(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """DT_STRTAB pointing nowhere: NEEDED / RUNPATH / exports are lost, the device code
    is not."""
    data = ROW.read_bytes()
    dyn_at = shdrs(data)[".dynamic"][1]
    buf = bytearray(data)
    for i in range(0, 0x200, 16):
        tag, _ = struct.unpack_from("<qQ", buf, dyn_at + i)
        if tag == 5:  # DT_STRTAB
            struct.pack_into("<Q", buf, dyn_at + i + 8, 1 << 40)
    b = one(read_both(tmp_path, "row.so", bytes(buf), monkeypatch))
    assert b.anomalies == ("DT_STRTAB 0x10000000000 lies in no loaded segment, so the "
                           "dynamic names are not read",)
    assert b.needed == () and b.runpath == () and b.exported == ()
    assert b.containers == WHOLE.containers


def test_dynamic_string_table_cut_by_the_end_of_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """DT_STRSZ past the end of the file: what the file holds of the table is read."""
    data = ROW.read_bytes()
    dyn_at = shdrs(data)[".dynamic"][1]
    buf = bytearray(data)
    for i in range(0, 0x200, 16):
        tag, _ = struct.unpack_from("<qQ", buf, dyn_at + i)
        if tag == 10:  # DT_STRSZ
            struct.pack_into("<Q", buf, dyn_at + i + 8, len(data))
    b = one(read_both(tmp_path, "row.so", bytes(buf), monkeypatch))
    (note,) = b.anomalies
    assert note.startswith("dynamic string table at 0x508+0x") and "is cut at the end" in note
    assert (b.needed, b.runpath, b.exported, b.containers) == (
        WHOLE.needed, WHOLE.runpath, WHOLE.exported, WHOLE.containers)


def test_section_names_unreadable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """.shstrtab outside the file: sections have no names, so no device-code section is
    known; the containers are still found by the search of data sections, and the
    dynamic facts come from the program headers."""
    data = ROW.read_bytes()
    hdr = shdrs(data)[".shstrtab"][0]
    b = one(read_both(tmp_path, "row.so", patched(data, hdr + 24, "<Q", 1 << 32),
                      monkeypatch))
    assert b.anomalies == (".shstrtab at 0x100000000+0x11e lies outside the file: the "
                           "section names are unknown",
                           "section (unnamed) at 0x100000000+0x11e runs past the end of the "
                           "file")
    assert b.needed == WHOLE.needed and b.runpath == WHOLE.runpath
    assert [c.offset for c in b.containers] == [c.offset for c in WHOLE.containers]
    assert {c.section for c in b.containers} == {""}


def test_section_past_the_end_of_the_file(tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    data = ROW.read_bytes()
    hdr, off, _size = shdrs(data)[".nv_fatbin"]
    b = one(read_both(tmp_path, "row.so", patched(data, hdr + 32, "<Q", len(data)),
                      monkeypatch))
    assert f"section .nv_fatbin at 0x{off:x}+0x{len(data):x} runs past the end of the " \
           "file" in b.anomalies
    assert [c.offset for c in b.containers] == [c.offset for c in WHOLE.containers]
    assert b.needed == WHOLE.needed


def test_whole_file_problems_stay_problems(tmp_path: Path) -> None:
    data = ROW.read_bytes()
    cases = {
        "ehdr.so": data[:60],  # truncated ELF header
        "shoff.so": patched(data, 40, "<Q", len(data)),  # section table outside the file
        "shent.so": patched(data, 58, "<H", 40),  # section header size wrong
        "class.so": patched(data, 4, "<B", 7),
    }
    for name, blob in cases.items():
        (tmp_path / name).write_bytes(blob)
    inv = cuwheel.inspect([tmp_path / n for n in cases], workers=1)
    msgs = {Path(p.path).name: p.message for p in inv.problems}
    assert inv.binaries == ()
    assert msgs == {
        "ehdr.so": "truncated ELF header",
        "shoff.so": f"ELF structure at 0x{len(data):x}+0x{64 * 30:x} lies outside the file",
        "shent.so": "section header size 40 is not 64",
        "class.so": "unknown ELF class 7",
    }


def test_archive_member_with_a_broken_header_is_listed(tmp_path: Path,
                                                       monkeypatch: pytest.MonkeyPatch) -> None:
    """In an archive a member is a structure: its broken ELF header is its anomaly and
    the other members are read."""
    obj = (BIN / "tu_obj.o").read_bytes()
    broken = patched(obj, 40, "<Q", len(obj) * 4)  # its section table outside the member
    data = binbuild.ar([(b"good.o/", obj), (b"bad.o/", broken)])
    inv = read_both(tmp_path, "lib.a", data, monkeypatch)
    assert inv.problems == ()
    good, bad = inv.binaries
    assert (good.member, bad.member) == ("good.o", "bad.o")
    assert good.anomalies == () and len(good.containers) == 1
    table = 64 * struct.unpack_from("<H", obj, 60)[0]
    assert bad.anomalies == (f"ELF structure at 0x{len(obj) * 4:x}+0x{table:x} lies outside "
                             "the member",)
    # its section table unread, its container is still found by the signature search
    assert bad.machine == "x86_64"
    assert [(c.section, len(c.entries)) for c in bad.containers] == [(None, 2)]


def test_pe_export_directory_outside_the_image(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    pefile = _absent.extra("pefile")
    path = BIN / "win_sm80_86.dll"
    data = path.read_bytes()
    pe = pefile.PE(str(path), fast_load=True)
    dir_at = pe.OPTIONAL_HEADER.DATA_DIRECTORY[0].get_file_offset()
    pe.close()
    whole = cuwheel.inspect([path]).binaries[0]
    b = one(read_both(tmp_path, "w.dll", patched(data, dir_at, "<I", 0x7FFF0000),
                      monkeypatch))
    assert b.anomalies == ("export directory RVA 0x7fff0000 lies in no section's data",)
    assert b.exported == () and b.needed == whole.needed
    assert b.containers == whole.containers


def test_json_document_has_anomalies_for_every_binary() -> None:
    doc = inventory_to_dict(cuwheel.inspect([ROW]))
    assert json.loads(json.dumps(doc))["sources"][0]["binaries"][0]["anomalies"] == []


def test_check_and_compat_do_not_trust_a_damaged_library(tmp_path: Path) -> None:
    """A damaged container is code nobody judged: check reports IN002 on the library, and
    compat's answer is unknown (exit status 2) where the rest of the library runs."""
    from cuwheel.checks import check_source
    from cuwheel.cli import main
    from cuwheel.config import default_config
    from cuwheel.plan.select import select_plan

    first = WHOLE.containers[0]
    bad = patched(ROW.read_bytes(), first.entries[0].offset, "<H", 77)
    whl = wheelfactory.make_wheel(tmp_path, {"pkg/lib/libpkg_cuda.so": bad},
                                  name="pkg", version="1.0+cu130",
                                  tag="cp311-cp311-manylinux_2_28_x86_64")
    source = cuwheel.inspect([whl]).sources[0]
    plan = select_plan(default_config().rows, wheel=whl, environ={})
    report = check_source(source, plan)
    in002 = [f for f in report.findings if f.code == "IN002"]
    assert [f.library for f in in002] == ["pkg/lib/libpkg_cuda.so"]
    assert not report.passed
    assert main(["compat", whl, "--cc", "9.0"]) == 2


@pytest.mark.parametrize("size", [1, 8, 15, 17])
def test_container_cut_by_its_section_end(size: int, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzz finding: .nv_fatbin's sh_size cut to fewer bytes than a container header.
    The stream search saw the signature that starts there, the walk of the file on disk
    did not (it needed 16 bytes of section): now both report the same container as
    running past the end of its section, and still find the others."""
    data = (BIN / "align256.so").read_bytes()
    hdr, off, _size = shdrs(data)[".nv_fatbin"]
    b = one(read_both(tmp_path, "a.so", patched(data, hdr + 32, "<Q", size), monkeypatch))
    assert b.anomalies == (f".nv_fatbin container at 0x{off:x}: container runs past the end "
                           "of .nv_fatbin",)
    assert len(b.containers) == 2  # the two after it, found by the search of the rest


def test_walk_error_wins_over_payload_error(tmp_path: Path,
                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """Fuzz finding: g80.so with its first entry's header size 95 (was 96).  The entry
    walk ends 1 byte short and the payload, now read from a byte early, is no zstd frame;
    from disk (payloads decoded during the walk) the walk's error was reported, streamed
    (payloads decoded after it) the payload's.  The walk's error is reported both ways."""
    data = (BIN / "g80.so").read_bytes()
    (first,) = cuwheel.inspect([BIN / "g80.so"]).binaries[0].containers[:1]
    bad = patched(data, first.entries[0].offset + 4, "<I", first.entries[0].header_size - 1)
    b = one(read_both(tmp_path, "g80.so", bad, monkeypatch))
    assert b.anomalies == (f".nv_fatbin container at 0x{first.offset:x}: 1 stray bytes after "
                           "the last entry",)

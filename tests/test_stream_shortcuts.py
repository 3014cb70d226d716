"""The streamed read's shortcuts (skipping code segments and found containers' payloads
in the signature search) must never change what is found."""

from __future__ import annotations

import struct
from pathlib import Path

import pytest

import cuwheel
import cuwheel.read.binary.sniff as binary_mod
import cuwheel.read.sources.wheelfile as sources_mod
from cuwheel.read.device.fatbin import CONTAINER_SIGNATURE
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"


@pytest.fixture
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sources_mod, "OUT_SIZE", 1024)
    monkeypatch.setattr(sources_mod, "READ_SIZE", 1024)


def _facts(inv: cuwheel.Inventory) -> list[tuple[object, ...]]:
    return [
        (c.offset, c.size, c.section, [(e.kind, e.arch, e.offset) for e in c.entries])
        for b in inv.binaries
        for c in b.containers
    ]


def test_false_signature_claiming_the_rest_of_the_file_is_read_again(
    tmp_path: Path, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    data = bytearray((BIN / "ldata.so").read_bytes())
    truth = cuwheel.inspect(BIN / "ldata.so")
    (container,) = truth.binaries[0].containers
    assert container.section == ".ldata_cuwheel"
    # Plant, 64 bytes before the real container, a signature whose payload claims every
    # byte to the end of the file: the search must not trust it to skip the real one.
    fake = container.offset - 64
    data[fake : fake + 16] = b"\x50\xed\x55\xba\x01\x00\x10\x00" + struct.pack(
        "<Q", len(data) - fake - 16
    )
    whl = make_wheel(tmp_path, {"pkg/ldata.so": bytes(data)})
    rereads = []
    real_read = binary_mod._read

    def spy(*args: object) -> object:
        rereads.append(args[5:])
        return real_read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(binary_mod, "_read", spy)
    inv = cuwheel.inspect(whl)
    assert not inv.problems
    assert _facts(inv) == _facts(truth)
    # The second read trusts no known extent; code segments stay skipped, and are not
    # searched (a read from disk does not search them either; only device code there
    # turns that off).
    assert rereads[-1] == (True, False, False)


def test_streamed_and_mapped_reads_agree_on_every_fixture_with_tiny_chunks(
    tmp_path: Path, small_chunks: None
) -> None:
    names = ["two_tu.so", "allmajor.so", "librdc.so", "arm64_sm90.so", "win_rdc.dll", "prog"]
    whl = make_wheel(tmp_path, {f"pkg/{n}": (BIN / n).read_bytes() for n in names})
    streamed = cuwheel.inspect(whl).binaries
    for name, b in zip(names, streamed, strict=True):
        (mapped,) = cuwheel.inspect(BIN / name).binaries
        assert b.containers == mapped.containers, name


@pytest.mark.parametrize(
    ("offset", "value"),
    [
        (508, 32),  # a section's characteristics now say "code": the stream search skips
        # bytes that hold __nv_rel, so the member must be read again without skipping
        (134, 1),  # NumberOfSections 1: the device code lies outside every known section
    ],
)
def test_damaged_pe_section_table_reads_the_same_streamed_and_on_disk(
    tmp_path: Path, small_chunks: None, offset: int, value: int
) -> None:
    data = bytearray((BIN / "win_rdc.dll").read_bytes())
    data[offset] = value
    on_disk = tmp_path / "w.dll"
    on_disk.write_bytes(bytes(data))
    whl = make_wheel(tmp_path, {"pkg/w.dll": bytes(data)})
    mapped, streamed = cuwheel.inspect(on_disk), cuwheel.inspect(whl)
    assert [p.message for p in mapped.problems] == [p.message for p in streamed.problems]
    assert _facts(mapped) == _facts(streamed)


def test_searching_a_file_on_disk_reads_each_byte_about_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """cuFFT keeps 18,227 containers in .data: the search must not re-read the section
    from each hit onwards (that once cost 13 s of system time)."""
    import cuwheel.read.bytes.stream as stream

    sig = b"\x50\xed\x55\xba\x01\x00\x10\x00"
    blob = (sig + bytes(56)) * 5000 + sig  # a signature every 64 bytes, one at the end
    path = tmp_path / "many.bin"
    path.write_bytes(blob)
    monkeypatch.setattr(stream, "_SEARCH_PIECE", 4100)  # many pieces, signatures straddling
    read = []
    real_pread = stream.os.pread

    def counting_pread(fd: int, n: int, off: int) -> bytes:
        read.append(n)
        return real_pread(fd, n, off)

    monkeypatch.setattr(stream.os, "pread", counting_pread)
    with open(path, "rb") as f:
        scan = stream.Scan(len(blob), signature=CONTAINER_SIGNATURE)
        scan.feed(stream.FileBuffer(f.fileno(), len(blob)))
        hits = scan.find_signatures(0, len(blob))
    assert hits == [64 * i for i in range(5001)]
    assert sum(read) < 2 * len(blob)


def test_code_segments_are_skipped_alike_with_no_section_table(
    tmp_path: Path, small_chunks: None
) -> None:
    """Fuzz finding: align256.so with e_shnum 0 (no sections) and the segment holding
    .nv_fatbin flagged executable only.  The stream skipped that segment (the file keeps
    an R-only segment: -z separate-code), the read from disk searched all unclaimed bytes:
    different containers.  What starts in a skipped code segment is now no candidate
    either way (unless a device-code section lies there: then both search it)."""
    data = bytearray((BIN / "align256.so").read_bytes())
    data[180] = 1  # program header 2's p_flags: PF_X
    struct.pack_into("<H", data, 60, 0)  # e_shnum
    on_disk = tmp_path / "a.so"
    on_disk.write_bytes(bytes(data))
    whl = make_wheel(tmp_path, {"pkg/a.so": bytes(data)})
    mapped, streamed = cuwheel.inspect(on_disk), cuwheel.inspect(whl)
    assert [p.message for p in mapped.problems] == [p.message for p in streamed.problems]
    assert _facts(mapped) == _facts(streamed)
    assert mapped.binaries[0].needed  # the dynamic facts are still read


def test_signature_starting_in_a_tiny_unclaimed_gap(tmp_path: Path, small_chunks: None) -> None:
    """Fuzz finding: librdc.so with .nv_fatbin's sh_offset moved 1 byte on.  Its first
    container now starts in a 3-byte gap no section claims; the stream found it there,
    the read from disk searched only gaps of 8 bytes or more, and only for signatures
    wholly inside them.  Every signature that starts in an unclaimed byte counts now."""
    data = bytearray((BIN / "librdc.so").read_bytes())
    shoff = struct.unpack_from("<Q", data, 40)[0]
    at = shoff + 64 * 16 + 24  # section 16 (.nv_fatbin): sh_offset
    struct.pack_into("<Q", data, at, struct.unpack_from("<Q", data, at)[0] + 1)
    on_disk = tmp_path / "r.so"
    on_disk.write_bytes(bytes(data))
    whl = make_wheel(tmp_path, {"pkg/r.so": bytes(data)})
    mapped, streamed = cuwheel.inspect(on_disk), cuwheel.inspect(whl)
    assert _facts(mapped) == _facts(streamed)
    assert mapped.binaries[0].anomalies == streamed.binaries[0].anomalies
    first = mapped.binaries[0].containers[0]
    assert (first.offset, first.section) == (0x20A0, None)


def test_device_code_in_a_code_segment_is_streamed_once(
    tmp_path: Path, small_chunks: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A member whose device code lies where the search would skip (an executable
    section: cuFFT's .nv_fatbin sits in its R+X segment) is decompressed once, and reads
    as it does from disk; the code there is searched in that one pass."""
    data = bytearray((BIN / "win_rdc.dll").read_bytes())
    data[508] = 32  # the characteristics of the section holding __nv_rel now say "code"
    on_disk = tmp_path / "w.dll"
    on_disk.write_bytes(bytes(data))
    whl = make_wheel(tmp_path, {"pkg/w.dll": bytes(data)})
    reads = []
    real_read = binary_mod._read

    def spy(*args: object) -> object:
        reads.append(args[5:])
        return real_read(*args)  # type: ignore[arg-type]

    monkeypatch.setattr(binary_mod, "_read", spy)
    streamed = cuwheel.inspect(whl)
    assert reads == [()]  # one read, with the defaults: no second pass over the member
    assert _facts(streamed) == _facts(cuwheel.inspect(on_disk)) != []

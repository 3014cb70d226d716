"""Zero padding between fatbin containers (NVIDIA's aarch64 libraries align .nv_fatbin
inputs to 256 bytes): every container is found, and only padding is forgiven."""

from __future__ import annotations

import dataclasses
import itertools
import re
import subprocess
import sys
import time
import tracemalloc
from pathlib import Path

import pytest

import _absent

sys.path.insert(0, str(Path(__file__).parent))
import binbuild
import cuobjdump_oracle as oracle
import cuwheel
import wheelfactory
from binbuild import Elf, Sec
from cuwheel.model.inventory import CodeKind, Inventory

BIN = Path(__file__).parent / "data" / "bin"
ALIGNED = BIN / "align256.so"
K86 = (BIN / "k86.fatbin").read_bytes()  # one real container (sm_86 cubin + PTX)


def messages(inv: Inventory) -> list[str]:
    """Problems and per-binary anomalies, as one list of messages."""
    out = [p.message for p in inv.problems]
    for b in inv.binaries:
        out += list(getattr(b, "anomalies", ()))
    return out


def _gaps(data: bytes, start: int, end: int) -> list[tuple[int, int]]:
    """(offset, length) of the zero runs between containers of [start, end), found by a
    header walk independent of cuwheel."""
    out, at = [], start
    while at < end:
        if data[at : at + 8] == binbuild.SIGNATURE:
            at += 16 + int.from_bytes(data[at + 8 : at + 16], "little")
            continue
        j = at
        while j < end and data[j] == 0:
            j += 1
        assert j > at, f"junk at 0x{at:x}"
        out.append((at, j - at))
        at = j
    return out


@_absent.skip_without("readelf", _absent.no_tool("readelf"))
def test_fixture_really_has_zero_gaps() -> None:
    """The committed fixture is what it claims: .nv_fatbin aligned 256 and zero runs
    between its containers (readelf and a header walk, not cuwheel)."""
    out = subprocess.run(["readelf", "-SW", str(ALIGNED)], capture_output=True, text=True,
                         check=True).stdout
    m = re.search(r"\.nv_fatbin\s+PROGBITS\s+\S+\s+(\S+)\s+(\S+)\s+\S+\s+A\s+0\s+0\s+256",
                  out)
    assert m, out
    start, size = int(m.group(1), 16), int(m.group(2), 16)
    gaps = _gaps(ALIGNED.read_bytes(), start, start + size)
    assert [n for _, n in gaps] == [64]


def test_every_container_of_the_aligned_fixture_is_found() -> None:
    inv = cuwheel.inspect([ALIGNED])
    assert messages(inv) == []
    (b,) = inv.binaries
    cs = [c for c in b.containers if c.section == ".nv_fatbin"]
    assert len(cs) == 3
    gaps = [n.offset - (c.offset + c.size) for c, n in itertools.pairwise(cs)]
    assert [g for g in gaps if g] == [64]
    assert [e.name for c in cs for e in c.entries if e.kind is CodeKind.SASS] == [
        "sm_75", "sm_80", "sm_90"]


@_absent.needs_cuobjdump
def test_aligned_fixture_equals_cuobjdump() -> None:
    (b,) = cuwheel.inspect([ALIGNED]).binaries
    want = [("ELF" if e.kind is CodeKind.SASS else "PTX",
             e.name if e.kind is CodeKind.SASS else "sm_" + e.name.removeprefix("compute_"))
            for c in b.containers for e in c.entries]
    assert oracle.list_device_code_sequence(ALIGNED) == want
    assert oracle.list_device_code_sequence(ALIGNED, all_sections=True) == want


def test_aligned_fixture_streamed_from_a_wheel(tmp_path: Path,
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    import cuwheel.read.sources.wheelfile as sources_mod

    monkeypatch.setattr(sources_mod, "OUT_SIZE", 1024)
    whl = wheelfactory.make_wheel(tmp_path, {"lib/align256.so": ALIGNED.read_bytes()})
    inv = cuwheel.inspect([whl], workers=1)
    disk = cuwheel.inspect([ALIGNED], workers=1)
    assert messages(inv) == []
    strip = [dataclasses.replace(b, path="", archive=None) for b in inv.binaries]
    assert strip == [dataclasses.replace(b, path="", archive=None) for b in disk.binaries]


def _fatbin_section(parts: list[bytes], align: int) -> bytes:
    return binbuild.elf64(Elf([Sec(".text", b"\xc3" * 16, flags=6, align=16),
                               Sec(".nv_fatbin", b"".join(parts), align=align)]))


def _read(tmp_path: Path, data: bytes, name: str = "x.so") -> Inventory:
    p = tmp_path / name
    p.write_bytes(data)
    return cuwheel.inspect([p], workers=1)


@pytest.mark.parametrize(
    ("align", "pad", "ok"),
    [(256, 256 - len(K86) % 256, True), (8, 8, True), (8, 16, False), (16, 8, True),
     (4096, 4088, True), (1 << 20, 4096, False)],
)
def test_zero_run_between_containers_is_padding_below_the_alignment(
    align: int, pad: int, ok: bool, tmp_path: Path
) -> None:
    data = _fatbin_section([K86, bytes(pad), K86], align)
    inv = _read(tmp_path, data)
    if ok:
        assert messages(inv) == []
        (b,) = inv.binaries
        assert len([c for c in b.containers if c.named_section]) == 2
    else:
        (msg,) = messages(inv)
        assert f"{pad} zero bytes at 0x" in msg and "alignment padding" in msg, msg


@pytest.mark.parametrize("junk", [b"\x01" + bytes(7), bytes(7) + b"\x01", b"\xff" * 64])
def test_non_zero_bytes_between_containers_are_still_a_problem(junk: bytes,
                                                               tmp_path: Path) -> None:
    inv = _read(tmp_path, _fatbin_section([K86, junk, K86], 256))
    (msg,) = messages(inv)
    assert ".nv_fatbin: bytes at 0x" in msg and "are not a fatbin container" in msg


@pytest.mark.parametrize(("tail", "ok"), [(8, True), (15, True), (16, False), (200, False)])
def test_zeros_after_the_last_container(tail: int, ok: bool, tmp_path: Path) -> None:
    inv = _read(tmp_path, _fatbin_section([K86, K86, bytes(tail)], 256))
    assert (messages(inv) == []) == ok, messages(inv)


def test_gigabyte_of_zero_padding_is_walked_at_once(tmp_path: Path) -> None:
    """1 GiB of zeros in .nv_fatbin, then a container: one read per growing piece, not 8
    bytes at a time (a sparse file: nothing is written to disk)."""
    gig = 1 << 30
    head = binbuild.elf64(Elf([Sec(".nv_fatbin", b"", align=256, offset=4096,
                                   size=gig + len(K86))], phdrs=[]))
    p = tmp_path / "zeros.so"
    with open(p, "wb") as f:
        f.write(head)
        f.seek(4096 + gig)
        f.write(K86)
    t0 = time.process_time()  # CPU time, not the wall clock
    tracemalloc.start()
    try:
        inv = cuwheel.inspect([p], workers=1)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert time.process_time() - t0 < 5
    assert peak < 64 << 20
    # (zeros are counted up to 4096 bytes back: a longer run is just "not a container")
    (msg,) = messages(inv)
    assert ".nv_fatbin: bytes at 0x1000 are not a fatbin container" in msg, msg

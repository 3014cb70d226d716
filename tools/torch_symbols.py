"""Record what torch's own libraries export, per release and platform, from PyPI's wheels.

Reads each wheel by HTTP range requests: the zip's end records and central directory
(cuwheel.read.sources.zipdir), then each library member of ``torch/lib`` inflated front to back
(cuwheel.read.sources.inflate) only as far as its dynamic symbol table:

* ELF (System V gABI): the ELF and program headers are at the front; ``.dynsym`` and
  ``.dynstr`` follow the notes in the first PT_LOAD (GNU ld: ``.gnu.hash`` first, its
  chains give the symbol count; gold / this layout: ``.dynsym`` first, ended by the first
  entry that is not a symbol).  The names are decoded by cuwheel.read.binary.elfsyms.  The
  section headers are at the end of the file, so ``--verify`` streams a member whole and
  compares with cuwheel's own ELF reader;
* PE (Microsoft PE format): cuwheel's PeReader on a streamed Scan, stopped as soon as
  it asks for nothing more (the export names are in ``.rdata``, before ``.data``).

Writes one JSON file per wheel under OUT (``raw``), then ``build`` packs them into
src/cuwheel/data/torch_abi.bin and torch_abi.toml (docs/compat.md#torch-abi).

    python tools/torch_symbols.py fetch --out /tmp/torchsyms [--versions 2.1.2,...]
    python tools/torch_symbols.py build --out /tmp/torchsyms
    python tools/torch_symbols.py file PATH...   # one library on disk (the test's input)
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import struct
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from cuwheel.read.binary.elfsyms import dynamic_symbols
from cuwheel.read.binary.pe import PeReader
from cuwheel.read.bytes.stream import Scan
from cuwheel.read.bytes.tables import Anomalies, NameBudget, StringTable
from cuwheel.read.sources.inflate import decoder
from cuwheel.read.sources.zipdir import DEFAULT_LIMITS, LOCAL, read_central_directory

INDEX = "https://pypi.org/simple/torch/"
PLATFORMS = {"linux-x86_64": r"manylinux\w*_x86_64", "linux-aarch64": r"manylinux\w*_aarch64",
             "win-amd64": r"win_amd64"}
PYTHONS = ("cp311", "cp310", "cp312")
# torch's own libraries (not the third-party ones bundled next to them: libgomp, cudart).
OWN_LIB = re.compile(r"^torch/lib/(lib(c10|torch|shm|caffe2)[\w.-]*\.so(\.[\d.]+)?"
                     r"|(c10|torch|shm|caffe2)[\w-]*\.dll)$")
PIECE = 1 << 20


# -- HTTP ------------------------------------------------------------------------------
class Remote:
    """One wheel on an index, read by ranges; counts the bytes it is sent."""

    def __init__(self, url: str, size: int) -> None:
        self.url, self.size, self.sent = url, size, 0

    def open(self, start: int, end: int | None = None) -> Any:
        last = "" if end is None else str(end - 1)
        req = urllib.request.Request(self.url, headers={"Range": f"bytes={start}-{last}"})
        resp = urllib.request.urlopen(req, timeout=120)
        if resp.status != 206:
            raise RuntimeError(f"{self.url}: no range support (HTTP {resp.status})")
        return resp

    def read(self, start: int, length: int) -> bytes:
        with self.open(start, start + length) as resp:
            data: bytes = resp.read()
        self.sent += len(data)
        return data

    def pieces(self, start: int, end: int):  # type: ignore[no-untyped-def]
        with self.open(start, end) as resp:
            while True:
                data = resp.read(PIECE)
                if not data:
                    return
                self.sent += len(data)
                yield data


def members(remote: Remote) -> list[Any]:
    """The central directory, read from the wheel's tail into a sparse file of its size
    (zipdir.py reads the records through a file descriptor)."""
    tail = min(remote.size, 4 << 20)
    with tempfile.TemporaryFile() as f:
        f.truncate(remote.size)
        os.pwrite(f.fileno(), remote.read(remote.size - tail, tail), remote.size - tail)
        try:
            return read_central_directory(f.fileno(), remote.url, DEFAULT_LIMITS)
        except Exception:  # a directory longer than the tail read: read it all
            os.pwrite(f.fileno(), remote.read(0, remote.size - tail), 0)
            return read_central_directory(f.fileno(), remote.url, DEFAULT_LIMITS)


def inflated(remote: Remote, m: Any):  # type: ignore[no-untyped-def]
    """The member's bytes, a piece at a time, as far as the caller reads."""
    head = remote.read(m.header_offset, LOCAL.size)
    fields = LOCAL.unpack(head)
    start = m.header_offset + LOCAL.size + fields[9] + fields[10]
    dec = decoder(m.method, m.file_size, DEFAULT_LIMITS.max_lzma_dictionary)
    for data in remote.pieces(start, start + m.compress_size):
        while data:
            out, data = dec.step(data, 64 << 20)
            if out:
                yield out
            if dec.eof:
                return


# -- ELF: the dynamic symbol table from the front of the file --------------------------
class Front:
    """The bytes of a member inflated so far, extended on demand."""

    def __init__(self, chunks: Any) -> None:
        self.chunks, self.buf = chunks, bytearray()

    def need(self, end: int, *, short: bool = False) -> bytearray:
        """The buffer, holding at least bytes [0, end) (with ``short``, fewer where the
        file ends first); not a copy: a walk of 100k entries must not copy it each time."""
        while len(self.buf) < end:
            piece = next(self.chunks, None)
            if piece is None:
                if short:
                    break
                raise ValueError(f"the file ends before byte {end}")
            self.buf += piece
        return self.buf


def _gnu_hash_count(f: Front, at: int) -> tuple[int, int] | None:
    """(symbols, bytes) of a .gnu.hash at ``at`` (nbuckets, symoffset, bloom_size,
    bloom_shift, bloom words, buckets, chains; a chain ends at an odd value)."""
    nb, symoff, bloom, _shift = struct.unpack_from("<IIII", f.need(at + 16), at)
    if not (0 < nb < 1 << 24 and bloom < 1 << 24 and symoff < 1 << 24):
        return None
    b0 = at + 16 + 8 * bloom
    buckets = struct.unpack_from(f"<{nb}I", f.need(b0 + 4 * nb), b0)
    top = max(buckets)
    if top == 0:
        return symoff, b0 + 4 * nb - at
    c0 = b0 + 4 * nb
    i = top
    while True:
        (v,) = struct.unpack_from("<I", f.need(c0 + 4 * (i - symoff) + 4), c0 + 4 * (i - symoff))
        if v & 1:
            return i + 1, c0 + 4 * (i + 1 - symoff) - at
        i += 1


def _is_symbol(rec: tuple[int, ...], shnum: int) -> bool:
    name, info, other, shndx, _value, _size = rec
    return (info & 0xF) in (0, 1, 2, 3, 4, 5, 6, 10) and (info >> 4) in (0, 1, 2, 10) \
        and other <= 3 and (shndx < max(shnum, 1) or shndx in (0xFFF1, 0xFFF2)) \
        and name < 1 << 30


def elf_front(chunks: Any) -> tuple[list[tuple[str, bool]], int, str]:
    """The defined dynamic symbols (name, weak) of an ELF64 file read from its front,
    the bytes inflated for them and how the table was located."""
    f = Front(chunks)
    eh = f.need(64)
    if eh[:4] != b"\x7fELF" or eh[4] != 2:
        raise ValueError("not an ELF64 file")
    (phoff,) = struct.unpack_from("<Q", eh, 32)
    phentsize, phnum, _she, shnum = struct.unpack_from("<HHHH", eh, 54)
    ph = f.need(phoff + phnum * phentsize)
    notes_end = phoff + phnum * phentsize
    for i in range(phnum):
        ptype, _fl, off, _va, _pa, filesz = struct.unpack_from("<IIQQQQ", ph, phoff + i * phentsize)
        if ptype in (3, 4) and off < 1 << 20:  # PT_INTERP, PT_NOTE at the front
            notes_end = max(notes_end, off + filesz)
    at = (notes_end + 7) & ~7
    width = 24
    how = "dynsym-first"
    if f.need(at + width)[at : at + width] == bytes(width):
        count = 0
        while True:
            end = at + (count + 1) * width
            rec = struct.unpack_from("<IBBHQQ", f.need(end), end - width)
            if count and not _is_symbol(rec, shnum):
                break
            count += 1
    else:
        found = _gnu_hash_count(f, at)
        if found is None:
            raise ValueError(f"no .dynsym or .gnu.hash after the notes at 0x{at:x}")
        count, hsize = found
        at = (at + hsize + 7) & ~7
        how = "gnu-hash-first"
        if f.need(at + width)[at : at + width] != bytes(width):
            raise ValueError(f"no .dynsym after .gnu.hash at 0x{at:x}")
    dynsym = bytes(f.need(at + count * width)[at : at + count * width])
    strtab = at + count * width
    recs = list(struct.iter_unpack("<IBBHQQ", dynsym))
    if how == "dynsym-first" and f.need(strtab + 1)[strtab] != 0:
        raise ValueError(".dynsym is not followed by a string table")
    top = max(r[0] for r in recs)
    # the longest name read is bounded by MAX_NAME; 64 KiB past the last offset is ample
    data = f.need(strtab + top + (64 << 10), short=True)
    end = data.index(b"\0", strtab + top) + 1
    names = StringTable(bytes(data[strtab:end]), ".dynstr", NameBudget(1 << 40), Anomalies(),
                        limit=1 << 16)
    exported = dynamic_symbols(dynsym, 2, names, {}, {}, Anomalies()).exported
    weak = {names.get(r[0]) for r in recs if r[3] and (r[1] >> 4) == 2}
    return [(n, n in weak) for n in exported], len(f.buf), how


def pe_exports(size: int, chunks: Any) -> tuple[list[tuple[str, bool]], int]:
    """The export names of a PE image, streamed until the reader asks for nothing more."""
    scan = Scan(size)
    reader = PeReader(scan, 0, size)
    seen = 0
    for chunk in chunks:
        scan.feed(chunk)
        seen += len(chunk)
        if not scan.pending:
            break
    if scan.pending:
        raise ValueError("the export names were not reached")
    return [(n, False) for n in reader.finish().exported], seen


# -- one wheel -------------------------------------------------------------------------
def read_wheel(info: dict[str, Any], verify: bool) -> dict[str, Any]:
    remote = Remote(info["url"], info["size"])
    libs: dict[str, Any] = {}
    for m in members(remote):
        if not OWN_LIB.match(m.name):
            continue
        t0 = time.process_time()
        before = remote.sent
        if m.name.endswith(".dll"):
            syms, inflated_bytes = pe_exports(m.file_size, inflated(remote, m))
            how = "pe-reader"
        else:
            syms, inflated_bytes, how = _elf_member(remote, m)
        rec = {"symbols": len(syms), "sent": remote.sent - before, "inflated": inflated_bytes,
               "size": m.file_size, "compressed": m.compress_size, "located": how,
               "cpu_s": round(time.process_time() - t0, 2)}
        if verify and not m.name.endswith(".dll"):
            rec["verified"] = verify_member(remote, m, {s for s, _ in syms})
        rec["names"] = syms
        libs[m.name.rsplit("/", 1)[1]] = rec
    cuda_libs = any("cuda" in n for n in libs)
    return {"version": info["version"], "platform": info["platform"],
            "filename": info["filename"], "sha256": info["sha256"], "size": info["size"],
            "cuda_build": cuda_libs, "libraries": libs,
            "sent": remote.sent}


def _tee(chunks: Any, out: Any):  # type: ignore[no-untyped-def]
    for piece in chunks:
        out.write(piece)
        yield piece


def _elf_member(remote: Remote, m: Any) -> tuple[list[tuple[str, bool]], int, str]:
    """The front read of one member; where its layout is not the front one (patchelf
    moved .dynstr to a new segment at the end and filled the old one), the rest of the
    same stream is kept and the whole file read by cuwheel's ELF reader: one pass."""
    from cuwheel.read.inspect import inspect

    with tempfile.TemporaryDirectory() as d:
        kept = Path(d) / m.name.rsplit("/", 1)[1]
        with open(kept, "wb") as out:
            stream = _tee(inflated(remote, m), out)
            try:
                return elf_front(stream)
            except ValueError:
                for _ in stream:
                    pass
        inv = inspect([str(kept)], workers=1, payload="none")
        names = inv.sources[0].binaries[0].exported
        return [(n, False) for n in names], m.file_size, "whole"


def full_elf(remote: Remote, m: Any) -> list[str]:
    """The member streamed whole to a temporary file and read by cuwheel's ELF reader
    (through its section headers)."""
    from cuwheel.read.inspect import inspect

    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / m.name.rsplit("/", 1)[1]
        with open(p, "wb") as out:
            for piece in inflated(remote, m):
                out.write(piece)
        inv = inspect([str(p)], workers=1, payload="none")
        return list(inv.sources[0].binaries[0].exported)


def verify_member(remote: Remote, m: Any, names: set[str]) -> str:
    """The front read against the whole file's section headers: equal name sets."""
    full = set(full_elf(remote, m))
    return "equal" if full == names else f"DIFFERENT: {len(full ^ names)} names"


def index_files(versions: list[str] | None) -> list[dict[str, Any]]:
    req = urllib.request.Request(INDEX, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    with urllib.request.urlopen(req, timeout=60) as resp:
        doc = json.load(resp)
    picked: dict[tuple[str, str], dict[str, Any]] = {}
    for f in doc["files"]:
        mt = re.match(r"torch-([\d.]+)(-\d+)?-(cp\d+)-cp\d+-(\w+)\.whl$", f["filename"])
        if not mt or f.get("yanked"):
            continue
        version, build, py, plat = mt.groups()
        major_minor = tuple(int(x) for x in version.split(".")[:2])
        if major_minor < (1, 13) or py not in PYTHONS or (versions and version not in versions):
            continue
        for name, pattern in PLATFORMS.items():
            if re.fullmatch(pattern, plat):
                key = (version, name)
                rank = (PYTHONS.index(py), 0 if build else 1)
                old = picked.get(key)
                if old is None or rank < old["rank"]:
                    picked[key] = {"version": version, "platform": name, "rank": rank,
                                   "filename": f["filename"], "url": f["url"],
                                   "size": f["size"], "sha256": f["hashes"]["sha256"]}
    return sorted(picked.values(), key=lambda r: (tuple(int(x) for x in r["version"].split(".")),
                                                  r["platform"]))


def cmd_fetch(args: argparse.Namespace) -> None:
    raw = Path(args.out) / "raw"
    raw.mkdir(parents=True, exist_ok=True)
    wanted = args.versions.split(",") if args.versions else None
    plats = args.platforms.split(",") if args.platforms else list(PLATFORMS)
    for info in index_files(wanted):
        if info["platform"] not in plats:
            continue
        target = raw / f"{info['version']}_{info['platform']}.json"
        if target.exists():
            continue
        t0 = time.time()
        try:
            rec = read_wheel(info, args.verify)
        except Exception as exc:
            print(f"{info['filename']}: FAILED {exc!r}", flush=True)
            continue
        target.write_text(json.dumps(rec))
        libs = ", ".join(f"{k}:{v['symbols']}/{v['sent'] >> 10}K/{v['located']}"
                         + (f"/{v['verified']}" if "verified" in v else "")
                         for k, v in rec["libraries"].items())
        print(f"{info['filename']}: {rec['sent'] >> 20} MiB of {info['size'] >> 20} MiB in "
              f"{time.time() - t0:.1f}s; {libs}", flush=True)


def cmd_file(args: argparse.Namespace) -> None:
    for p in args.paths:
        data = Path(p).read_bytes()
        syms, _, how = elf_front(iter([data[i : i + PIECE] for i in range(0, len(data), PIECE)]))
        print(json.dumps({"file": os.path.basename(p), "located": how,
                          "sha256": hashlib.sha256(data).hexdigest(), "names": syms}))


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    f = sub.add_parser("fetch")
    f.add_argument("--out", required=True)
    f.add_argument("--versions")
    f.add_argument("--platforms")
    f.add_argument("--verify", action="store_true")
    b = sub.add_parser("build")
    b.add_argument("--out", required=True)
    b.add_argument("--data", default=str(Path(__file__).resolve().parents[1]
                                         / "src/cuwheel/data"))
    fl = sub.add_parser("file")
    fl.add_argument("paths", nargs="+")
    args = ap.parse_args()
    if args.cmd == "fetch":
        cmd_fetch(args)
    elif args.cmd == "file":
        cmd_file(args)
    else:
        from torch_abi_pack import build  # type: ignore[import-not-found]

        build(Path(args.out), Path(args.data))


if __name__ == "__main__":
    main()

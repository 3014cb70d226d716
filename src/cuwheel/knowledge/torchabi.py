"""The torch C++ ABI of PyPI's torch releases: which release and platform exports which
symbol (``data/torch_abi.toml``, one ``[[release]]`` per column, and ``data/torch_abi.bin``,
the symbols), read from the wheels themselves by tools/torch_symbols.py
(docs/compat.md#torch-abi).

A symbol's key is its name on Linux (ELF resolves a name against every loaded library)
and ``dll!name`` on Windows (a PE import names the DLL that must export it, lower-cased).
The key's hash is the first 48 bits of its BLAKE2b-64 digest.  ``torch_abi.bin`` is
``MAGIC`` then a zlib stream of little-endian arrays:

* u32 header: hash bits, symbols N, patterns P, columns C, pattern words W, wide ids;
* u16 patterns: per pattern a run count, then (first, last) column of each run;
* u32 bucket counts, 2**16 of them (symbols whose hash has those top 16 bits);
* u32 low 32 bits of each hash, sorted, bucket after bucket;
* u16 (u32 when wide) pattern of each symbol.

A lookup is a bisection in one bucket; the whole table is decoded once per process.
"""

from __future__ import annotations

import bisect
import functools
import hashlib
import itertools
import zlib
from array import array
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import TORCH_ABI, TORCH_ABI_BIN, data_path
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, tables

__all__ = [
    "BIN_FILE",
    "BUCKET_BITS",
    "DATA_FILE",
    "HASH_BITS",
    "MAGIC",
    "TorchAbi",
    "TorchRelease",
    "build_torch_abi",
    "load_torch_abi",
    "symbol_hash",
    "symbol_key",
    "torch_releases_defining",
]

DATA_FILE = TORCH_ABI
BIN_FILE = TORCH_ABI_BIN
MAGIC = b"CWTABI1\n"
HASH_BITS = 48
BUCKET_BITS = 16
# The decoded table may not exceed this (the shipped one: a few MiB).
_MAX_BODY = 64 << 20
PLATFORMS = ("linux-x86_64", "linux-aarch64", "win-amd64")


def symbol_key(name: str, dll: str | None = None) -> str:
    """The key of a symbol: its name (ELF), or ``dll!name`` with the DLL lower-cased (PE:
    Windows resolves an import against the one DLL it names, case-insensitively)."""
    return name if dll is None else f"{dll.lower()}!{name}"


def symbol_hash(key: str) -> int:
    digest = hashlib.blake2b(key.encode("utf-8", "surrogateescape"), digest_size=8).digest()
    return int.from_bytes(digest, "little") >> (64 - HASH_BITS)


@dataclass(frozen=True)
class TorchRelease:
    """One column: what one PyPI torch wheel's own libraries export."""

    column: int
    version: str  # "2.1.2"
    platform: str  # "linux-x86_64", "linux-aarch64", "win-amd64"
    wheel: str
    sha256: str
    cuda: bool  # the wheel has torch's CUDA libraries
    libraries: tuple[tuple[str, int], ...]  # (file, symbols read)

    @property
    def windows(self) -> bool:
        return self.platform.startswith("win")


class TorchAbi:
    """The releases and the symbol table (decoded on first use)."""

    def __init__(self, releases: tuple[TorchRelease, ...], meta: DataSource | None,
                 blob: bytes) -> None:
        self.releases = releases
        self.meta = meta
        self._blob = blob
        self._table: tuple[array[int], array[int], array[int], list[frozenset[int]]] | None = None

    def _decoded(self) -> tuple[array[int], array[int], array[int], list[frozenset[int]]]:
        if self._table is None:
            self._table = _decode(self._blob, len(self.releases))
        return self._table

    def columns(self, key: str) -> frozenset[int]:
        """The columns that export ``key`` (empty: none does)."""
        starts, low, ids, patterns = self._decoded()
        h = symbol_hash(key)
        shift = HASH_BITS - BUCKET_BITS
        b = h >> shift
        lo, hi = starts[b], starts[b + 1]
        want = h & ((1 << shift) - 1)
        i = bisect.bisect_left(low, want, lo, hi)
        if i < hi and low[i] == want:
            return patterns[ids[i]]
        return frozenset()

    def on(self, platform: str) -> tuple[TorchRelease, ...]:
        return tuple(r for r in self.releases if r.platform == platform)

    def dlls(self) -> tuple[str, ...]:
        """The torch DLL names the Windows columns read (for a bare name's lookup)."""
        return tuple(sorted({lib for r in self.releases if r.windows for lib, _ in r.libraries}))

    @property
    def symbols(self) -> int:
        return len(self._decoded()[1])


def _decode(blob: bytes, columns: int
            ) -> tuple[array[int], array[int], array[int], list[frozenset[int]]]:
    problem = f"{BIN_FILE}: damaged"
    if not blob.startswith(MAGIC):
        raise CatalogError([f"{BIN_FILE}: not a torch ABI table (bad magic)"])
    try:
        d = zlib.decompressobj()
        body = d.decompress(blob[len(MAGIC):], _MAX_BODY)
    except zlib.error as exc:
        raise CatalogError([f"{problem} ({exc})"]) from None
    if d.unconsumed_tail or not d.eof:
        raise CatalogError([f"{problem} (over {_MAX_BODY} bytes, or truncated)"])
    head = array("I", body[:24])
    bits, n, npat, ncol, words, wide = head
    if bits != HASH_BITS or ncol != columns:
        raise CatalogError([f"{BIN_FILE}: {ncol} columns of {bits}-bit hashes, but "
                            f"{DATA_FILE} lists {columns} releases ({HASH_BITS}-bit)"])
    at = 24
    pat = array("H", body[at : at + 2 * words])
    at += 2 * words
    nb = 1 << BUCKET_BITS
    counts = array("I", body[at : at + 4 * nb])
    at += 4 * nb
    low = array("I", body[at : at + 4 * n])
    at += 4 * n
    ids = array("I" if wide else "H", body[at : at + (4 if wide else 2) * n])
    at += (4 if wide else 2) * n
    if at != len(body) or len(counts) != nb or sum(counts) != n or len(ids) != n:
        raise CatalogError([f"{problem} (its arrays do not add up)"])
    patterns: list[frozenset[int]] = []
    i = 0
    while i < len(pat) and len(patterns) < npat:
        runs = pat[i]
        cols: set[int] = set()
        for r in range(runs):
            first, last = pat[i + 1 + 2 * r], pat[i + 2 + 2 * r]
            if not first <= last < columns:
                raise CatalogError([f"{problem} (a pattern names column {last})"])
            cols.update(range(first, last + 1))
        patterns.append(frozenset(cols))
        i += 1 + 2 * runs
    if len(patterns) != npat or i != len(pat) or (ids and max(ids) >= npat):
        raise CatalogError([f"{problem} (its patterns do not add up)"])
    starts = array("I", itertools.accumulate(counts, initial=0))
    return starts, low, ids, patterns


def build_torch_abi(data: Mapping[str, Any], blob: bytes, file: str = DATA_FILE) -> TorchAbi:
    """Validate a parsed ``torch_abi.toml`` (the table is checked when first decoded);
    raises CatalogError listing every problem."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    out: list[TorchRelease] = []
    seen: set[tuple[str, str]] = set()
    for i, raw in enumerate(tables(data, "release", chk)):
        f = chk.fields(raw, f"release[{i}]",
                       {"version": str, "platform": str, "wheel": str, "sha256": str,
                        "cuda": bool, "libraries": dict, "read_bytes": int})
        if not {"version", "platform", "wheel", "sha256", "cuda", "libraries"} <= f.keys():
            continue
        where = f"release {f['version']} {f['platform']}"
        if f["platform"] not in PLATFORMS:
            chk.problem(where, f"platform must be one of {list(PLATFORMS)}")
        if (f["version"], f["platform"]) in seen:
            chk.problem(where, "recorded twice")
        seen.add((f["version"], f["platform"]))
        if len(f["sha256"]) != 64:
            chk.problem(where, "sha256 must be 64 hex digits")
        libs = tuple(sorted((str(k), int(v)) for k, v in f["libraries"].items()))
        out.append(TorchRelease(len(out), f["version"], f["platform"], f["wheel"],
                                f["sha256"], f["cuda"], libs))
    if chk.problems:
        raise CatalogError(chk.problems)
    return TorchAbi(tuple(out), meta, blob)


@functools.cache
def load_torch_abi() -> TorchAbi:
    """The shipped tables, read once (the symbols decoded on first lookup)."""
    blob = data_path(BIN_FILE).read_bytes()
    return build_torch_abi(read_data_file(DATA_FILE), blob)


def torch_releases_defining(symbol: str, dll: str | None = None) -> tuple[TorchRelease, ...]:
    """The PyPI torch releases (every platform) whose own libraries export ``symbol``, in
    the data's order (platform, then version); empty when none does.

    An MSVC-decorated name (``?...``) is looked up in ``dll`` (e.g. ``c10.dll``), or in
    every torch DLL the data read when ``dll`` is None; an Itanium or C name on Linux."""
    abi = load_torch_abi()
    cols: set[int] = set(abi.columns(symbol_key(symbol)))
    if dll is not None:
        cols |= abi.columns(symbol_key(symbol, dll))
    elif symbol.startswith("?"):
        for name in abi.dlls():
            cols |= abi.columns(symbol_key(symbol, name))
    return tuple(r for r in abi.releases if r.column in cols)

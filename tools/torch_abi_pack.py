"""Pack the per-wheel symbol records of tools/torch_symbols.py into cuwheel's data files.

``torch_abi.toml``: one ``[[release]]`` per column (version, platform, wheel, sha256,
whether the build is CUDA, the libraries read and their symbol counts, the bytes read).
``torch_abi.bin``: for every symbol name any column exports, a 48-bit hash of the key
(cuwheel.knowledge.torchabi.symbol_key: the name on Linux, ``dll!name`` on Windows) and
the set of columns exporting it, as described in that module.  Prints the collision
count, the number of presence patterns and the sizes.
"""

from __future__ import annotations

import json
import re
import sys
import zlib
from array import array
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "src"))

from cuwheel.knowledge.torchabi import (
    BUCKET_BITS,
    HASH_BITS,
    MAGIC,
    symbol_hash,
    symbol_key,
)

PLATFORM_ORDER = ("linux-x86_64", "linux-aarch64", "win-amd64")


def _vkey(v: str) -> tuple[int, ...]:
    return tuple(int(x) for x in v.split("."))


def pack(records: list[dict], dll_names: bool = True) -> tuple[bytes, dict[str, int]]:
    """The .bin bytes and statistics for ``records`` (already in column order)."""
    presence: dict[int, list[int]] = {}
    names: dict[int, str] = {}
    collisions = 0
    for col, rec in enumerate(records):
        windows = rec["platform"].startswith("win")
        for lib, info in rec["libraries"].items():
            for name, _weak in info["names"]:
                key = symbol_key(name, lib if windows else None)
                h = symbol_hash(key)
                old = names.setdefault(h, key)
                if old != key:
                    collisions += 1
                    continue
                cols = presence.setdefault(h, [])
                if not cols or cols[-1] != col:
                    cols.append(col)
    patterns: dict[tuple[int, ...], int] = {}
    hashes = sorted(presence)
    ids = array("I")
    for h in hashes:
        runs: list[int] = []
        for c in presence[h]:
            if runs and runs[-1] == c - 1:
                runs[-1] = c
            else:
                runs += [c, c]
        ids.append(patterns.setdefault(tuple(runs), len(patterns)))
    pat = array("H")
    for runs in patterns:
        pat.append(len(runs) // 2)
        pat.extend(runs)
    buckets = array("I", bytes(4 << BUCKET_BITS))
    low = array("I")
    shift = HASH_BITS - BUCKET_BITS
    for h in hashes:
        buckets[h >> shift] += 1
        low.append(h & ((1 << shift) - 1))
    wide = len(patterns) > 0xFFFF
    idarr = ids if wide else array("H", ids)
    head = array("I", [HASH_BITS, len(hashes), len(patterns), len(records), len(pat),
                       int(wide)])
    body = b"".join(a.tobytes() for a in (head, pat, buckets, low, idarr))
    blob = MAGIC + zlib.compress(body, 9)
    return blob, {"symbols": len(hashes), "patterns": len(patterns),
                  "collisions": collisions, "raw": len(body), "packed": len(blob)}


def _toml_str(s: str) -> str:
    return json.dumps(s)


def build(out: Path, data: Path) -> None:
    records = [json.loads(p.read_text()) for p in sorted((out / "raw").glob("*.json"))]
    records.sort(key=lambda r: (PLATFORM_ORDER.index(r["platform"]), _vkey(r["version"])))
    blob, stats = pack(records)
    (data / "torch_abi.bin").write_bytes(blob)
    lines = [
        "# What torch's own libraries export, per release and platform of PyPI's torch wheels:",
        "# one [[release]] per column of torch_abi.bin (in this order), read from the wheel",
        "# itself by tools/torch_symbols.py (source L: the package's own files).",
        "#",
        "#   version, platform   the release and cuwheel platform name",
        "#   wheel, sha256       the file read (PyPI's sha256)",
        "#   cuda                true when the wheel has torch's CUDA libraries (libtorch_cuda,",
        "#                       torch_cuda.dll); PyPI's win-amd64 wheels are CPU-only in every",
        "#                       release, linux-aarch64 ones before 2.11 (pip's +cuXYZ builds come",
        "#                       from download.pytorch.org only); which CUDA major each carries is",
        "#                       packages.toml [[carrier_build]]",
        "#   libraries           torch/lib file -> defined dynamic symbols / export names read",
        "#   read_bytes          compressed bytes fetched by range requests for those libraries",
        "#",
        f"# torch_abi.bin: {stats['symbols']} distinct keys, {stats['patterns']} presence "
        "patterns,",
        f"# {stats['collisions']} 48-bit hash collisions between distinct keys; "
        f"{stats['packed']} bytes.",
        "",
        "[meta]",
        'title = "torch C++ ABI: the symbols each PyPI torch release exports"',
        f'compiled = "{time_today()}"',
        'sources = ["L: the torch wheels named below, read by tools/torch_symbols.py"]',
        "",
    ]
    for r in records:
        libs = ", ".join(f"{_toml_str(k)} = {v['symbols']}"
                         for k, v in sorted(r["libraries"].items()))
        sent = sum(v["sent"] for v in r["libraries"].values())
        lines += [
            "[[release]]",
            f'version = "{r["version"]}"',
            f'platform = "{r["platform"]}"',
            f"wheel = {_toml_str(r['filename'])}",
            f'sha256 = "{r["sha256"]}"',
            f"cuda = {'true' if r['cuda_build'] else 'false'}",
        ]
        lines += [f"libraries = {{ {libs} }}", f"read_bytes = {sent}", ""]
    (data / "torch_abi.toml").write_text("\n".join(lines))
    print(json.dumps(stats))


def time_today() -> str:
    import datetime

    return datetime.date.today().isoformat()


if __name__ == "__main__":
    build(Path(sys.argv[1]), Path(sys.argv[2]) if len(sys.argv) > 2 else
          Path(__file__).resolve().parents[1] / "src/cuwheel/data")
    _ = re

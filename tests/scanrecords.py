"""Synthetic scan records for the summary's memory and page tests (and bench/bench_scale.py):
many records of the shape a real scan writes, made from one real record.

The template is the record `cuwheel scan` writes today for a small wheel of committed
binaries (tests/data/bin); each synthetic record varies what a summary counts (project,
version, platform, GPU states, findings, errors) and carries 2 to 12 binaries, about
the size of a record of a real CUDA wheel's.

    python tests/scanrecords.py OUT.jsonl N     # writes N records
"""

from __future__ import annotations

import hashlib
import json
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
BIN = HERE / "data" / "bin"
STATES = ("runs", "runs except", "depends on dispatch", "does not run", "wrong platform")
PLATFORMS = ("manylinux_2_28_x86_64", "manylinux_2_28_aarch64", "win_amd64")


def template() -> dict[str, Any]:
    """A real record: a wheel of two committed binaries, scanned by this tree's code."""
    sys.path.insert(0, str(HERE))
    import wheelfactory
    from cuwheel.scan import WheelRef, scan

    with tempfile.TemporaryDirectory() as d:
        w = wheelfactory.make_wheel(
            Path(d), {"pkg/sm80.so": (BIN / "sm80.so").read_bytes(),
                      "pkg/sm90a.so": (BIN / "sm90a.so").read_bytes()},
            name="alpha", version="1.0", tag="cp311-cp311-manylinux_2_28_x86_64")
        (line,) = scan([WheelRef(w, Path(w).name)], workers=1)
    rec: dict[str, Any] = json.loads(line)
    return rec


def records(n: int, base: dict[str, Any] | None = None) -> Iterator[dict[str, Any]]:
    """``n`` records varied from ``base`` (default: :func:`template`), deterministically."""
    base = base or template()
    gpus = sorted(base["gpus"])
    binary = base["inventory"]["binaries"][0]
    finding = base["check"]["findings"][0]
    for i in range(n):
        # Shallow copies: the parts varied are new objects, the rest is shared.
        rec = {**base, "wheel": dict(base["wheel"]), "inventory": dict(base["inventory"]),
               "check": dict(base["check"])}
        project = f"proj{i % 97}"
        version = f"{i % 13}.{i % 7}"
        plat = PLATFORMS[i % len(PLATFORMS)]
        filename = f"{project}-{version}-cp311-cp311-{plat}.whl"
        sha = hashlib.sha256(str(i).encode()).hexdigest()
        rec["input"] = f"https://files.example.org/{i}/{filename}"
        rec["wheel"].update(filename=filename, name=project, version=version,
                            tags=[f"cp311-cp311-{plat}"], sha256=sha, size=1000 + i)
        bins = []
        for k in range(2 + i % 11):
            bins.append({**binary, "path": f"{project}/lib/libk{k}.so"})
        rec["inventory"]["binaries"] = bins
        rec["inventory"]["path"] = filename
        if i % 5 == 4:
            rec["gpus"] = None
        else:
            rec["gpus"] = {g: STATES[(i + j) % len(STATES)] for j, g in enumerate(gpus)}
        codes = ("DEP001", "DC007", "TAG008", "DC001")
        rec["check"]["findings"] = [
            {**finding, "code": codes[(i + k) % len(codes)], "library": b["path"]}
            for k, b in enumerate(bins[: i % 4])
        ]
        rec["check"]["passed"] = not rec["check"]["findings"]
        if i % 50 == 49:
            rec["check"] = None
            rec["error"] = "cannot be checked: synthetic"
        yield rec


def write(path: str | Path, n: int) -> int:
    """Write ``n`` records to ``path`` (JSON Lines); the file's size in bytes."""
    size = 0
    with open(path, "w", encoding="utf-8") as f:
        for rec in records(n):
            line = json.dumps(rec, sort_keys=True, separators=(",", ":")) + "\n"
            f.write(line)
            size += len(line)
    return size


if __name__ == "__main__":
    print(write(sys.argv[1], int(sys.argv[2])))

#!/usr/bin/env python3
"""Re-pack installed distributions into wheels: a corpus of real device code on a machine
that reaches no package index (the GPU machine: its PyTorch install brings NVIDIA's CUDA
libraries, Triton and torch itself).

Each wheel holds exactly the files the distribution's RECORD lists, deflated at zlib's
default level like most published wheels; its name is rebuilt from the dist-info's WHEEL
tags.  Nothing here is a cuwheel rule: the benchmarks only need bytes that real wheels hold.

Usage: python bench/repack_installed.py OUT_DIR [--match REGEX] [--jobs N]
"""

from __future__ import annotations

import argparse
import csv
import os
import re
import sys
import zipfile
from concurrent.futures import ProcessPoolExecutor
from importlib import metadata
from pathlib import Path


def _wheel_name(dist: metadata.Distribution) -> str:
    name = re.sub(r"[-_.]+", "_", dist.metadata["Name"]).lower()
    tags = ["py3-none-any"]
    wheel = dist.read_text("WHEEL") or ""
    found = [ln.split(":", 1)[1].strip() for ln in wheel.splitlines() if ln.startswith("Tag:")]
    if found:
        tags = found[:1]
    return f"{name}-{dist.version}-{tags[0]}.whl"


def _pack(args: tuple[str, str, str]) -> tuple[str, int]:
    root, record, out = args
    with open(record, newline="", encoding="utf-8") as fh:
        rows = [r[0] for r in csv.reader(fh) if r]
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zf:
        for rel in rows:
            path = os.path.normpath(os.path.join(root, rel))
            if not os.path.isfile(path) or rel.endswith(".pyc"):
                continue
            zf.write(path, rel)
    return out, os.path.getsize(out)


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("out")
    ap.add_argument("--match", default=r"^(nvidia-|torch$|triton$|torchvision$)")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    a = ap.parse_args()
    Path(a.out).mkdir(parents=True, exist_ok=True)
    pat = re.compile(a.match, re.I)
    work: list[tuple[str, str, str]] = []
    seen: set[str] = set()
    for dist in metadata.distributions():
        name = dist.metadata["Name"] or ""
        if not pat.search(name) or name.lower() in seen:
            continue
        seen.add(name.lower())
        record = str(dist.locate_file(f"{dist._path.name}/RECORD"))  # type: ignore[attr-defined]
        if not os.path.isfile(record):
            continue
        root = str(dist.locate_file(""))
        work.append((root, str(record), os.path.join(a.out, _wheel_name(dist))))
    total = 0
    with ProcessPoolExecutor(a.jobs) as pool:
        for out, size in pool.map(_pack, work):
            total += size
            print(f"{size / 1e6:9.1f} MB  {os.path.basename(out)}", flush=True)
    print(f"{len(work)} wheels, {total / 1e9:.2f} GB in {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

#!/usr/bin/env python3
"""Differential check of cuwheel against NVIDIA's cuobjdump on real wheels.

For every shared library in the given wheels, compares cuwheel's SASS / PTX multisets
with ``cuobjdump --list-elf --list-ptx`` (default and ``-all``), selecting containers the
way cuobjdump does (per ELF object: .nv_fatbin if present, else __nv_relfatbin; -all:
both) and dropping the ``f`` that cuobjdump drops on cubin names.  For a Windows DLL,
which the Linux cuobjdump cannot open, each device-code section (``.nv_fatb``,
``__nv_rel``) is extracted with pefile and listed on its own.  Not part of CI: it
needs real wheels, e.g. ``pip download --no-deps nvidia-cublas bitsandbytes -d DIR``.

Usage: python bench/oracle_real.py WHEEL...
"""

from __future__ import annotations

import collections
import os
import sys
import tempfile
import zipfile

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests"))

import cuobjdump_oracle as oracle
import cuwheel
from cuwheel.model.inventory import Binary, CodeKind, FatbinContainer


def cuwheel_lists(b: Binary, all_sections: bool) -> tuple[collections.Counter[str], ...]:
    has_fatbin = any(c.section == ".nv_fatbin" for c in b.containers)
    chosen = [
        c
        for c in b.containers
        if c.named_section and (all_sections or (c.section == ".nv_fatbin") == has_fatbin)
    ]
    return _lists(chosen)


def _lists(containers: list[FatbinContainer]) -> tuple[collections.Counter[str], ...]:
    sass: collections.Counter[str] = collections.Counter()
    ptx: collections.Counter[str] = collections.Counter()
    for c in containers:
        for e in c.entries:
            if e.kind is CodeKind.SASS:
                sass[e.arch.base.sass if e.arch.variant == "f" else e.arch.sass] += 1
            elif e.kind is CodeKind.PTX:
                ptx["sm_" + e.arch.ptx.removeprefix("compute_")] += 1
    return sass, ptx


def compare_dll(path: str, binary: Binary, tmp: str) -> int:
    disagreements = 0
    for section in (".nv_fatb", "__nv_rel"):
        mine = _lists([c for c in binary.containers if c.section == section])
        if not any(mine):
            continue
        raw = os.path.join(tmp, "section.bin")
        with open(raw, "wb") as f:
            f.write(oracle.extract_pe_section(path, section))
        label = f"{os.path.basename(path)} {section}"
        try:
            sass, ptx = oracle.list_device_code(raw)
        except Exception as exc:  # cuobjdump's own failure is a result here
            print(f"{label:40} cuobjdump failed: {str(exc).splitlines()[-1][:80]}")
            continue
        same = mine == (sass, ptx)
        disagreements += not same
        print(
            f"{label:40} cuobjdump ELF {sum(sass.values()):5} PTX {sum(ptx.values()):4}"
            f"  cuwheel ELF {sum(mine[0].values()):5} PTX {sum(mine[1].values()):4}"
            f"  {'agree' if same else 'DISAGREE'}"
        )
    return disagreements


def main() -> int:
    disagreements = 0
    for whl in sys.argv[1:]:
        with zipfile.ZipFile(whl) as z, tempfile.TemporaryDirectory() as tmp:
            for info in z.infolist():
                is_dll = info.filename.lower().endswith((".dll", ".pyd"))
                if ".so" not in info.filename and not is_dll:
                    continue
                path = z.extract(info, tmp)
                binaries = cuwheel.inspect(path).binaries
                if not binaries:
                    continue
                if is_dll:
                    disagreements += compare_dll(path, binaries[0], tmp)
                    continue
                for all_sections in (False, True):
                    label = f"{os.path.basename(info.filename)} {'-all' if all_sections else ''}"
                    try:
                        sass, ptx = oracle.list_device_code(path, all_sections=all_sections)
                    except Exception as exc:  # cuobjdump's own failure is a result here
                        print(f"{label:40} cuobjdump failed: {str(exc).splitlines()[-1][:80]}")
                        continue
                    mine = cuwheel_lists(binaries[0], all_sections)
                    same = mine == (sass, ptx)
                    disagreements += not same
                    print(
                        f"{label:40} cuobjdump ELF {sum(sass.values()):5} PTX {sum(ptx.values()):4}"
                        f"  cuwheel ELF {sum(mine[0].values()):5} PTX {sum(mine[1].values()):4}"
                        f"  {'agree' if same else 'DISAGREE'}"
                    )
    return 1 if disagreements else 0


if __name__ == "__main__":
    sys.exit(main())

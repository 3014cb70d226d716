"""cuobjdump as an independent oracle for the fixture tests.

Nothing here imports cuwheel: it runs NVIDIA's ``cuobjdump`` (from the pip wheel
``nvidia-cuda-cuobjdump``, or from PATH) and parses its listing.

Name conventions, exactly as cuobjdump 13.5 prints them:

* cubins: ``<stem>.<n>.sm_90a.cubin`` -> ``"sm_90a"``; ``f`` cubins show without the ``f``
  (``sm_100f`` -> ``"sm_100"``), ``a`` is kept.
* PTX: ``<stem>.<n>.sm_100f.ptx`` -> ``"sm_100f"`` (PTX keeps both suffixes, and is named
  ``sm_`` although it is a ``compute_`` target).
* Entries with an identifier (``nvcc -G``) and bare cubins drop the ``<n>``:
  ``k.sm_80.cubin`` / ``k90.sm_90.cubin``.
* LTO-IR (kind 8) is never listed.
"""

from __future__ import annotations

import collections
import importlib.metadata
import os
import re
import shutil
import subprocess
from pathlib import Path

__all__ = [
    "CuobjdumpError",
    "extract_pe_section",
    "find_cuobjdump",
    "list_device_code",
    "list_entry_kernels",
]

_DIST = "nvidia-cuda-cuobjdump"
_LINE = re.compile(r"^\s*(ELF|PTX) file\s+\d+:\s+(\S+)\s*$")
_NAME = re.compile(r"\.(sm_\d+[af]?)\.(cubin|ptx)$")
# "info" lines that mean "nothing of that kind here", not a failure.
_EMPTY = ("does not contain device code", "No ELF file found", "No PTX file found")


class CuobjdumpError(RuntimeError):
    """cuobjdump failed or printed something this parser does not understand."""


def find_cuobjdump() -> str | None:
    """Path of the cuobjdump binary: the pip wheel's copy first, then PATH; None if absent."""
    try:
        dist = importlib.metadata.distribution(_DIST)
    except importlib.metadata.PackageNotFoundError:
        dist = None
    if dist is not None:
        for f in dist.files or ():
            if f.name == "cuobjdump" or f.name == "cuobjdump.exe":
                p = Path(str(dist.locate_file(f)))
                if p.is_file():
                    if not os.access(p, os.X_OK):
                        try:
                            p.chmod(p.stat().st_mode | 0o111)
                        except OSError:
                            continue
                    return str(p)
    return shutil.which("cuobjdump")


def _run(args: list[str]) -> subprocess.CompletedProcess[str]:
    exe = find_cuobjdump()
    if exe is None:
        raise CuobjdumpError("cuobjdump not found (pip install nvidia-cuda-cuobjdump)")
    return subprocess.run([exe, *args], capture_output=True, text=True, check=False)


def list_device_code(
    path: str | os.PathLike[str], all_sections: bool = False
) -> tuple[collections.Counter[str], collections.Counter[str]]:
    """Multisets (SASS names, PTX names) from ``cuobjdump --list-elf --list-ptx [-all] path``.

    Files without device code give two empty Counters (cuobjdump says "does not contain
    device code" and exits 255, or "No ELF/PTX file found").  Raises CuobjdumpError when
    cuobjdump prints anything else it does not recognise (e.g. "fatal: Invalid ELF"), or
    exits non-zero after listing something.
    """
    args = ["--list-elf", "--list-ptx"]
    if all_sections:
        args.append("-all")
    proc = _run([*args, os.fspath(path)])
    sass: collections.Counter[str] = collections.Counter()
    ptx: collections.Counter[str] = collections.Counter()
    unknown: list[str] = []
    saw_empty = False
    for line in (proc.stdout + "\n" + proc.stderr).splitlines():
        if not line.strip() or line.lstrip().startswith("member "):
            continue
        m = _LINE.match(line)
        if m:
            n = _NAME.search(m.group(2))
            if n is None:
                unknown.append(line)
            else:
                (sass if m.group(1) == "ELF" else ptx)[n.group(1)] += 1
        elif "cuobjdump info" in line and any(s in line for s in _EMPTY):
            saw_empty = True
        else:
            unknown.append(line)
    # cuobjdump exits 255 for "does not contain device code": that is an empty answer.
    if unknown or (proc.returncode != 0 and (sass or ptx or not saw_empty)):
        raise CuobjdumpError(
            f"cuobjdump {' '.join(args)} {path} exited {proc.returncode}: "
            + "; ".join(unknown or [(proc.stderr or proc.stdout).strip()])
        )
    return sass, ptx


def list_device_code_sequence(
    path: str | os.PathLike[str], all_sections: bool = False
) -> list[tuple[str, str]]:
    """Same listing, in cuobjdump's order: [("ELF"|"PTX", name), ...]."""
    args = ["--list-elf", "--list-ptx"] + (["-all"] if all_sections else [])
    proc = _run([*args, os.fspath(path)])
    if proc.returncode != 0 and "does not contain device code" not in proc.stdout + proc.stderr:
        raise CuobjdumpError(f"cuobjdump exited {proc.returncode}: {proc.stderr.strip()}")
    out = []
    for line in proc.stdout.splitlines():
        m = _LINE.match(line)
        if m and (n := _NAME.search(m.group(2))):
            out.append((m.group(1), n.group(1)))
    return out


def extract_pe_section(path: str | os.PathLike[str], name: str) -> bytes:
    """Bytes of the PE section called ``name`` (compared on its first 8 bytes, as stored).

    Reads ``min(VirtualSize, SizeOfRawData)`` bytes from ``PointerToRawData``.  Raises
    KeyError when the image has no such section.
    """
    import pefile  # type: ignore[import-untyped]  # test-only dependency

    want = name.encode()[:8]
    pe = pefile.PE(os.fspath(path), fast_load=True)
    try:
        for s in pe.sections:
            if s.Name.rstrip(b"\0") == want:
                size = min(s.Misc_VirtualSize, s.SizeOfRawData)
                with open(path, "rb") as f:
                    f.seek(s.PointerToRawData)
                    data = f.read(size)
                if len(data) != size:
                    raise ValueError(f"{path}: section {name!r} runs past the end of the file")
                return data
    finally:
        pe.close()
    raise KeyError(f"{path}: no PE section {want.decode(errors='replace')!r}")


_ELF_HEAD = re.compile(r"^Fatbin elf code:")
_SYMBOL = re.compile(r"^FUNC\s+\S+\s+\S+\s+ENTRY\s+(\S+)\s*$")


def list_entry_kernels(path: str | os.PathLike[str], all_sections: bool = False
                       ) -> list[list[str]]:
    """Per cubin in cuobjdump's order, the names of the ENTRY functions that
    ``cuobjdump -symbols [-all] path`` prints (``FUNC GLOBAL DEFAULT ENTRY _Z5plainPf``)."""
    proc = _run(["-symbols", *(["-all"] if all_sections else []), os.fspath(path)])
    if proc.returncode != 0:
        raise CuobjdumpError(f"cuobjdump -symbols exited {proc.returncode}: {proc.stderr.strip()}")
    out: list[list[str]] = []
    for line in proc.stdout.splitlines():
        if _ELF_HEAD.match(line):
            out.append([])
        elif (m := _SYMBOL.match(line.strip())) and out:
            out[-1].append(m.group(1))
    return out


_OBJECT = re.compile(
    r"^\s*0x[0-9a-f]+\s+\S+\s+\S+\s+OBJECT\s+\S+\s+\S+\s+\S+\s+(0x[0-9a-f]+)\s+(\S+)\s*$")


def list_device_objects(path: str | os.PathLike[str]) -> list[list[str]]:
    """Per cubin in cuobjdump's order, the defined OBJECT symbols (section index not 0) of
    the ``.symtab`` that ``cuobjdump -elf path`` prints (LOCAL ones included, which
    ``-symbols`` leaves out)."""
    proc = _run(["-elf", os.fspath(path)])
    if proc.returncode != 0:
        raise CuobjdumpError(f"cuobjdump -elf exited {proc.returncode}: {proc.stderr.strip()}")
    out: list[list[str]] = []
    in_symtab = False
    for line in proc.stdout.splitlines():
        if _ELF_HEAD.match(line):
            out.append([])
            in_symtab = False
        elif line.startswith(".section "):
            in_symtab = line.strip() == ".section .symtab"
        elif (in_symtab and out and (m := _OBJECT.match(line)) and int(m.group(1), 16)
              and m.group(2) not in out[-1]):
            out[-1].append(m.group(2))
    return out

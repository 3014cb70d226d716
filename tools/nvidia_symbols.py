"""Regenerate src/cuwheel/data/nvidia_symbols.toml: for each NVIDIA library on PyPI, the
release of its wheel that first exports each dynamic symbol (and the release that no
longer does), read from the wheels themselves with cuwheel's readers.

Each wheel is fetched from the files PyPI's simple index (PEP 691 JSON) lists, its sha256
checked against the index's, read with ``payload="none"`` (headers, symbol tables and
version sections only: the device code is not decoded) and deleted when larger than
``--keep`` bytes; what was read is cached per sha256 under ``--cache``, so a run can be
resumed and the data file re-rendered offline.  ``--wheels DIR`` reads local wheel files
instead (the test regenerates a sample this way).  ``--carrier torch`` also records, per
torch release with a Linux x86_64 wheel, the NVIDIA releases its METADATA pins (read with
HTTP range requests: the zip's central directory, then METADATA; through a
``cuda-toolkit[...]==X`` pin, that cuda-toolkit's METADATA).

C++ names (``_Z...``, ``?...``) and the linker's own symbols are left out
(:func:`recorded`).  A library is one file name of one distribution on one OS
(``libnvJitLink.so.12`` of ``nvidia-nvjitlink-cu12`` on linux); its history lists the
releases read and, per release, the symbols first exported there (for the first release
read, only the names that carry a release, ``_12_0``: no requirement on the distribution
can ask for less than the rest).  ``--select minor`` reads the first and the last release
of each major.minor only: a symbol's "first" is then the first release read that exports
it, an upper bound on the true first.

The shipped data was made by these runs (2026-12-02: 339 wheels, 97,960 MiB streamed,
762 s CPU; each wheel over 64 MiB deleted once read), then a run with no project, which
renders the data file from the cache alone:

    T=tools/nvidia_symbols.py
    python $T --project nvidia-nvjitlink-cu12 --project nvidia-nvjitlink --os linux --os windows
    python $T --project nvidia-cusparse-cu12 --project nvidia-cusparse --os linux
    python $T --project nvidia-cusparse-cu12 --project nvidia-cusparse \
        --project nvidia-cufft-cu12 --project nvidia-cufft --os windows --select minor
    python $T --project nvidia-cufft-cu12 --project nvidia-cufft --project nvidia-cublas-cu12 \
        --project nvidia-cublas --project nvidia-cusolver-cu12 --project nvidia-cusolver \
        --project nvidia-nccl-cu12 --project nvidia-nccl-cu13 --os linux --select minor
    python $T --project nvidia-cudnn-cu12 --project nvidia-cudnn-cu13 --os linux --select minor
    python $T --project nvidia-cublas-cu12 --project nvidia-cublas --os windows --select minor
    python $T --carrier torch --carrier cuda-toolkit
    python $T --date 2026-12-02
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import json
import os
import posixpath
import re
import sys
import time
import urllib.request
from collections.abc import Iterable, Sequence
from typing import Any

from packaging.utils import parse_wheel_filename
from packaging.version import Version

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "src"))

from cuwheel.knowledge.nvidia_symbols import release_suffix  # noqa: E402
from cuwheel.read.sources.source import WheelSource, read_source  # noqa: E402

DATA = os.path.join(HERE, "..", "src", "cuwheel", "data", "nvidia_symbols.toml")
INDEX = "https://pypi.org/simple/{}/"
ACCEPT = "application/vnd.pypi.simple.v1+json"
OS_OF = {"linux": re.compile(r"^(many|musl)?linux.*_x86_64$"),
         "windows": re.compile(r"^win_amd64$")}


def index_files(project: str) -> list[dict[str, Any]]:
    req = urllib.request.Request(INDEX.format(project), headers={"Accept": ACCEPT})
    with urllib.request.urlopen(req, timeout=60) as resp:
        files: list[dict[str, Any]] = json.load(resp)["files"]
    return files


def wheel_os(filename: str) -> str | None:
    tags = parse_wheel_filename(filename)[3]
    for os_name, pattern in OS_OF.items():
        if any(pattern.match(t.platform) for t in tags):
            return os_name
    return None


def pick(files: Iterable[dict[str, Any]], os_name: str, select: str) -> list[dict[str, Any]]:
    """One wheel per final release for ``os_name``, oldest first; ``minor``: the first
    and last release of each major.minor."""
    by_version: dict[Version, dict[str, Any]] = {}
    for f in files:
        name = f["filename"]
        if not name.endswith(".whl") or f.get("yanked"):
            continue
        version = parse_wheel_filename(name)[1]
        if version.is_prerelease or version.is_devrelease or wheel_os(name) != os_name:
            continue
        by_version.setdefault(version, f)
    ordered = sorted(by_version)
    if select == "minor":
        keep: dict[tuple[int, ...], list[Version]] = {}
        for v in ordered:
            keep.setdefault(v.release[:2], []).append(v)
        ordered = sorted({v for vs in keep.values() for v in (vs[0], vs[-1])})
    return [by_version[v] for v in ordered]


def download(f: dict[str, Any], folder: str) -> tuple[str, int]:
    """The wheel on disk (sha256 checked) and the bytes transferred."""
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f["filename"])
    want = f["hashes"]["sha256"]
    if os.path.exists(path) and sha256_of(path) == want:
        return path, 0
    h = hashlib.sha256()
    size = 0
    with urllib.request.urlopen(f["url"], timeout=120) as resp, open(path + ".part", "wb") as out:
        while chunk := resp.read(1 << 20):
            h.update(chunk)
            out.write(chunk)
            size += len(chunk)
    if h.hexdigest() != want:
        os.unlink(path + ".part")
        raise SystemExit(f"{f['filename']}: sha256 {h.hexdigest()} is not the index's {want}")
    os.rename(path + ".part", path)
    return path, size


def sha256_of(path: str) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        while chunk := fh.read(1 << 20):
            h.update(chunk)
    return h.hexdigest()


def read_wheel(path: str) -> dict[str, Any]:
    """What a wheel's libraries export: {file name: {"exported": [...], "nodes": [...]}}."""
    source = read_source(WheelSource(path), "none")
    libs: dict[str, Any] = {}
    for b in source.binaries:
        if b.format not in ("elf", "pe") or b.file_type not in ("shared", "dll"):
            continue
        name = posixpath.basename(b.path.split("!")[-1])
        libs[name] = {"exported": sorted(b.exported), "nodes": list(b.version_defs),
                      "member": b.path.split("!")[-1]}
    return libs


def read_cached(path: str, sha: str, cache: str) -> dict[str, Any]:
    os.makedirs(cache, exist_ok=True)
    at = os.path.join(cache, sha + ".json")
    if os.path.exists(at):
        with open(at, encoding="utf-8") as fh:
            doc: dict[str, Any] = json.load(fh)
        return doc
    name = os.path.basename(path)
    n, version, _, _ = parse_wheel_filename(name)
    doc = {"filename": name, "sha256": sha, "project": str(n), "version": str(version),
           "os": wheel_os(name), "libs": read_wheel(path)}
    with open(at + ".part", "w", encoding="utf-8") as fh:
        json.dump(doc, fh)
    os.rename(at + ".part", at)
    return doc


# Symbols the linker defines in every shared object, never an API.
LINKER_SYMBOLS = frozenset({"_edata", "_end", "__bss_start", "_init", "_fini"})


def recorded(name: str, nodes: Sequence[str]) -> bool:
    """Whether a symbol is part of the data: NVIDIA's APIs are C names; C++ names
    (``_Z...``, MSVC's ``?...``: cuDNN's and cuBLASLt's internal classes, tens of
    thousands, changing in every release), the linker's own symbols and the absolute
    symbol naming a version node are left out."""
    return (not name.startswith(("_Z", "?")) and name not in LINKER_SYMBOLS
            and name not in nodes)


def histories(docs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    """Per (project, os, library file name): the releases read and, per release, the
    symbols first exported there and those exported before but no longer."""
    groups: dict[tuple[str, str, str], list[tuple[Version, dict[str, Any], dict[str, Any]]]] = {}
    for doc in docs:
        for lib, facts in doc["libs"].items():
            key = (doc["project"], doc["os"], lib)
            groups.setdefault(key, []).append((Version(doc["version"]), doc, facts))
    out = []
    for (project, os_name, lib), rows in sorted(groups.items()):
        rows.sort(key=lambda r: r[0])
        first: dict[str, int] = {}
        last: dict[str, int] = {}
        nodes: set[str] = set()
        for i, (_version, _doc, facts) in enumerate(rows):
            nodes.update(facts["nodes"])
            for name in facts["exported"]:
                if not recorded(name, facts["nodes"]):
                    continue
                first.setdefault(name, i)
                last[name] = i
        added: dict[str, list[str]] = {}
        removed: dict[str, list[str]] = {}
        for name in sorted(first):
            # the first release read: only the names that carry a release (_12_0)
            if first[name] or release_suffix(name) is not None:
                added.setdefault(str(rows[first[name]][0]), []).append(name)
            # a symbol missing from a release between two that export it is not "removed"
            if last[name] + 1 < len(rows):
                removed.setdefault(str(rows[last[name] + 1][0]), []).append(name)
        order = {str(r[0]): i for i, r in enumerate(rows)}
        out.append({
            "distribution": project, "os": os_name, "library": lib,
            "version_nodes": sorted(nodes),
            "releases": [str(r[0]) for r in rows],
            "wheels": [f"{r[1]['filename']} sha256:{r[1]['sha256']}" for r in rows],
            "added": dict(sorted(added.items(), key=lambda kv: order[kv[0]])),
            "removed": dict(sorted(removed.items(), key=lambda kv: order[kv[0]])),
        })
    return out


def _range(url: str, start: int, end: int | None = None) -> bytes:
    spec = f"bytes={start}-" if end is None else f"bytes={start}-{end - 1}"
    if start < 0:
        spec = f"bytes={start}"
    req = urllib.request.Request(url, headers={"Range": spec})
    with urllib.request.urlopen(req, timeout=60) as resp:
        data: bytes = resp.read()
    return data


def remote_member(url: str, suffix: str) -> tuple[str, bytes] | None:
    """One member of a remote wheel, by the end of its name, read with HTTP range requests:
    the zip's end of central directory, its central directory, then the member (the
    carrier's 900 MB wheel is never fetched whole)."""
    import struct
    import zlib

    tail = _range(url, -(1 << 16))
    at = tail.rfind(b"PK\x05\x06")
    if at < 0:
        return None
    count, cd_size, cd_off = struct.unpack_from("<HII", tail, at + 10)
    if cd_off == 0xFFFFFFFF or count == 0xFFFF:  # zip64: the locator precedes the record
        loc = tail.rfind(b"PK\x06\x07", 0, at)
        (z64,) = struct.unpack_from("<Q", tail, loc + 8)
        rec = _range(url, z64, z64 + 56)
        count, cd_size, cd_off = struct.unpack_from("<QQQ", rec, 32)
    cd = _range(url, cd_off, cd_off + cd_size)
    pos = 0
    for _ in range(count):
        (method, csize, nlen, xlen, clen, off) = (
            struct.unpack_from("<H", cd, pos + 10)[0], struct.unpack_from("<I", cd, pos + 20)[0],
            *struct.unpack_from("<HHH", cd, pos + 28), struct.unpack_from("<I", cd, pos + 42)[0])
        name = cd[pos + 46 : pos + 46 + nlen].decode("utf-8", "replace")
        pos += 46 + nlen + xlen + clen
        if not name.endswith(suffix):
            continue
        head = _range(url, off, off + 30)
        n2, x2 = struct.unpack_from("<HH", head, 26)
        raw = _range(url, off + 30 + n2 + x2, off + 30 + n2 + x2 + csize)
        return name, (zlib.decompress(raw, -15) if method == 8 else raw)
    return None


LINUX_X86 = {"sys_platform": "linux", "platform_system": "Linux", "os_name": "posix",
             "platform_machine": "x86_64", "extra": ""}


def nvidia_pins(metadata: str, env: dict[str, str]) -> list[tuple[str, str, list[str]]]:
    """(name, pinned version, extras) of each ``==`` Requires-Dist on an NVIDIA
    distribution or cuda-toolkit whose marker holds in ``env``."""
    from packaging.requirements import Requirement
    from packaging.utils import canonicalize_name

    out = []
    for line in metadata.splitlines():
        if not line.startswith("Requires-Dist:"):
            continue
        req = Requirement(line.split(":", 1)[1].strip())
        name = canonicalize_name(req.name)
        if not (name.startswith("nvidia-") or name == "cuda-toolkit"):
            continue
        if req.marker is not None and not req.marker.evaluate(env):
            continue
        pinned = [sp.version for sp in req.specifier if sp.operator in ("==", "===")]
        # cuda-toolkit pins its components by prefix: nvidia-cublas==13.1.0.3.*
        if pinned and pinned[0].count("*") <= 1 and pinned[0].rstrip(".*").count(".") >= 2:
            out.append((str(name), pinned[0].removesuffix(".*"), sorted(req.extras)))
    return out


def carrier_pins(project: str = "torch") -> list[dict[str, Any]]:
    """Per final release of ``project`` with a Linux x86_64 wheel: the NVIDIA releases its
    METADATA pins (through ``cuda-toolkit[...]==X``: the pins of that cuda-toolkit's
    METADATA under those extras)."""
    from packaging.utils import canonicalize_name

    by_version: dict[Version, dict[str, Any]] = {}
    for f in index_files(project):
        name = f["filename"]
        if not name.endswith(".whl") or f.get("yanked") or wheel_os(name) != "linux":
            continue
        version = parse_wheel_filename(name)[1]
        if version.is_prerelease or version.is_devrelease or version.local:
            continue
        by_version.setdefault(version, f)
    toolkit = {parse_wheel_filename(f["filename"])[1]: f
               for f in index_files("cuda-toolkit") if f["filename"].endswith(".whl")}
    out = []
    for version in sorted(by_version):
        f = by_version[version]
        got = remote_member(f["url"], ".dist-info/METADATA")
        if got is None:
            continue
        pins: dict[str, str] = {}
        via = ""
        for name, pinned, extras in nvidia_pins(got[1].decode("utf-8", "replace"), LINUX_X86):
            if name != "cuda-toolkit":
                pins[name] = pinned
                continue
            tk = toolkit.get(Version(pinned))
            meta = remote_member(tk["url"], ".dist-info/METADATA") if tk else None
            if meta is None:
                continue
            via = f"cuda-toolkit {pinned} ({tk['filename'] if tk else ''} sha256:" \
                  f"{tk['hashes']['sha256'] if tk else ''})"
            text = meta[1].decode("utf-8", "replace")
            for extra in extras:
                for n, p, _ in nvidia_pins(text, {**LINUX_X86, "extra": extra}):
                    pins.setdefault(canonicalize_name(n), p)
        if pins:
            out.append({"carrier": project, "release": str(version),
                        "wheel": f"{f['filename']} sha256:{f['hashes']['sha256']}",
                        "via": via, "pins": [f"{n}=={p}" for n, p in sorted(pins.items())]})
        print(f"pins of {f['filename']}: {len(pins)}", file=sys.stderr)
    return out


def toolkit_pins() -> list[dict[str, Any]]:
    """Per final release of the cuda-toolkit metapackage: the NVIDIA releases its METADATA
    pins under any of its extras (a requirement ``cuda-toolkit[nvjitlink]==12.*`` installs
    the nvJitLink release its cuda-toolkit release pins)."""
    from packaging.utils import canonicalize_name

    by_version: dict[Version, dict[str, Any]] = {}
    for f in index_files("cuda-toolkit"):
        name = f["filename"]
        if not name.endswith(".whl") or f.get("yanked"):
            continue
        version = parse_wheel_filename(name)[1]
        if not (version.is_prerelease or version.is_devrelease or version.local):
            by_version.setdefault(version, f)
    out = []
    for version in sorted(by_version):
        f = by_version[version]
        got = remote_member(f["url"], ".dist-info/METADATA")
        if got is None:
            continue
        text = got[1].decode("utf-8", "replace")
        extras = [line.split(":", 1)[1].strip() for line in text.splitlines()
                  if line.startswith("Provides-Extra:")]
        pins: dict[str, str] = {}
        for extra in extras:
            for n, p, _ in nvidia_pins(text, {**LINUX_X86, "extra": extra}):
                pins.setdefault(canonicalize_name(n), p)
        if pins:
            out.append({"carrier": "cuda-toolkit", "platform": "any", "release": str(version),
                        "wheel": f"{f['filename']} sha256:{f['hashes']['sha256']}", "via": "",
                        "pins": [f"{n}=={p}" for n, p in sorted(pins.items())]})
        print(f"pins of {f['filename']}: {len(pins)}", file=sys.stderr)
    return out


def _q(text: str) -> str:
    return json.dumps(text)  # a TOML basic string for the names these files hold


def _array(items: Sequence[str], indent: str = "  ") -> str:
    if not items:
        return "[]"
    return "[\n" + "".join(f"{indent}{_q(i)},\n" for i in items) + "]"


def render(entries: Sequence[dict[str, Any]], today: str | None = None,
           pins: Sequence[dict[str, Any]] = ()) -> str:
    today = today or datetime.date.today().isoformat()
    lines = [
        "# Generated by tools/nvidia_symbols.py from NVIDIA's wheels on PyPI; do not edit by hand.",
        "# Per [[source]]: the wheels read (file name and sha256: the source of every fact",
        "# below); per [[library]]: the releases read and, per release, the dynamic symbols it",
        "# exports first (added) or no longer exports (removed); of the first release read,",
        "# only names that carry a release (_12_0).  [[carrier_pins]]: torch's NVIDIA pins.",
        "",
        "[meta]",
        'title = "The release of NVIDIA\'s library wheels that first exports each symbol"',
        f'compiled = "{today}"',
        "sources = [",
        '  "NVIDIA\'s wheels on PyPI, read with cuwheel\'s ELF / PE readers: each [[library]]\'s '
        '[[source]] `wheels` (file name and sha256)",',
        "]",
        'note = "Regenerate with tools/nvidia_symbols.py; docs/checks.md#dep013."',
    ]
    sources: dict[tuple[str, str], set[str]] = {}
    for e in entries:
        sources.setdefault((e["distribution"], e["os"]), set()).update(e["wheels"])
    for (dist, os_name), wheels in sorted(sources.items()):
        ordered = sorted(wheels, key=lambda w: parse_wheel_filename(w.split(" ")[0])[1])
        lines += ["", "[[source]]", f"distribution = {_q(dist)}", f"os = {_q(os_name)}",
                  f"wheels = {_array(ordered)}"]
    for e in entries:
        lines += ["", "[[library]]",
                  f"distribution = {_q(e['distribution'])}",
                  f"os = {_q(e['os'])}",
                  f"library = {_q(e['library'])}",
                  f"version_nodes = {json.dumps(e['version_nodes'])}",
                  f"releases = {json.dumps(e['releases'])}"]
        for key in ("added", "removed"):
            if e[key]:
                lines.append(f"[library.{key}]")
                for release, names in e[key].items():
                    lines.append(f"{_q(release)} = {_array(names)}")
    for p in pins:
        lines += ["", "[[carrier_pins]]",
                  f"carrier = {_q(p['carrier'])}",
                  f"platform = {_q(p.get('platform', 'linux-x86_64'))}",
                  f"release = {_q(p['release'])}",
                  f"wheel = {_q(p['wheel'])}"]
        if p["via"]:
            lines.append(f"via = {_q(p['via'])}")
        lines.append(f"pins = {_array(p['pins'])}")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawTextHelpFormatter)
    ap.add_argument("--project", action="append", default=[], help="a PyPI project to read")
    ap.add_argument("--os", action="append", choices=sorted(OS_OF), help="default: linux")
    ap.add_argument("--select", choices=("all", "minor"), default="all")
    ap.add_argument("--download", default="/tmp/wheels/floors", help="where wheels go")
    ap.add_argument("--keep", type=int, default=64 << 20,
                    help="delete a downloaded wheel larger than this after reading it")
    ap.add_argument("--cache", default="/tmp/wheels/floors/read",
                    help="one JSON per wheel read (by sha256)")
    ap.add_argument("--wheels", help="read the wheel files of this folder, not the index")
    ap.add_argument("--carrier", action="append", default=[],
                    help="read the NVIDIA pins of each release of this carrier (torch) or of "
                    "the cuda-toolkit metapackage")
    ap.add_argument("--out", default=DATA)
    ap.add_argument("--date", help="the [meta] compiled date (default today)")
    args = ap.parse_args(argv)
    transferred = 0
    started = time.process_time()
    if args.wheels:
        for name in sorted(os.listdir(args.wheels)):
            if name.endswith(".whl"):
                path = os.path.join(args.wheels, name)
                read_cached(path, sha256_of(path), args.cache)
    for project in args.project:
        files = index_files(project)
        for os_name in args.os or ["linux"]:
            for f in pick(files, os_name, args.select):
                sha = f["hashes"]["sha256"]
                if os.path.exists(os.path.join(args.cache, sha + ".json")):
                    continue
                path, size = download(f, args.download)
                transferred += size
                read_cached(path, sha, args.cache)
                if os.path.getsize(path) > args.keep:
                    os.unlink(path)
                print(f"read {f['filename']} ({size >> 20} MiB fetched)", file=sys.stderr)
    for carrier in args.carrier:
        found = toolkit_pins() if carrier == "cuda-toolkit" else carrier_pins(carrier)
        os.makedirs(args.cache, exist_ok=True)
        with open(os.path.join(args.cache, f"{carrier}.pins"), "w", encoding="utf-8") as fh:
            json.dump(found, fh)
    docs = []
    pins: list[dict[str, Any]] = []
    if os.path.isdir(args.cache):
        for name in sorted(os.listdir(args.cache)):
            if name.endswith(".pins"):
                with open(os.path.join(args.cache, name), encoding="utf-8") as fh:
                    pins += json.load(fh)
        for name in sorted(os.listdir(args.cache)):
            if name.endswith(".json"):
                with open(os.path.join(args.cache, name), encoding="utf-8") as fh:
                    docs.append(json.load(fh))
    if not docs:
        print("nothing read", file=sys.stderr)
        return 1
    with open(args.out, "w", encoding="utf-8") as fh:
        fh.write(render(histories(docs), args.date, pins))
    print(f"{len(docs)} wheels, {transferred >> 20} MiB fetched, "
          f"{time.process_time() - started:.1f} s CPU; wrote {args.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Exported programs and other device-code artifacts that are not wheels (docs/artifacts.md):
AOTInductor packages (``.pt2``: a zip of ``<name>/data/aotinductor/<model>/`` with a wrapper
library, cubins or fatbins and ``*_metadata.json``), ExecuTorch programs and data files
(``.pte`` / ``.ptd``: flatbuffers "ET.." / "FT01", read by read/artifacts/executorch.py), Triton
caches (a directory of ``<hash>/<kernel>.cubin`` next to ``<kernel>.json``) and plain
libraries.  Each is read into the same ``Binary`` facts as a wheel's members, plus what
the artifact records about itself: the toolkit paths its build left in it, the host it
needs (CPU ISA, platform) and the metadata the exporter wrote.  The CUDA train all that
says is judged in cuwheel.rules.artifact_train.
"""

from __future__ import annotations

import dataclasses
import mmap
import os
import re

from cuwheel._json import load_json
from cuwheel._paths import open_untrusted, read_untrusted
from cuwheel.errors import InputError, JsonError
from cuwheel.model.artifact import ArtifactFacts, TrainEvidence
from cuwheel.model.inventory import Binary, Problem, Source
from cuwheel.read.binary.embedded import container_ranges, embedded_cubins
from cuwheel.read.binary.sniff import SNIFF_BYTES
from cuwheel.read.sources.source import read_member, read_path
from cuwheel.read.sources.wheelfile import WheelFile
from cuwheel.read.sources.zipdir import DEFAULT_LIMITS, Limits, Member

__all__ = ["artifact_kind", "read_artifact"]

# Members and embedded images read per artifact; beyond these the input is refused.
MAX_TEXT_MEMBER = 8 << 20
MAX_TEXT_TOTAL = 64 << 20  # text members of one package read, all together
MAX_MEMBER = 1 << 30  # an ExecuTorch segment or a plain library read whole
MAX_SCANNED = 512 << 20  # a host library searched for embedded cubins
MAX_KERNEL_JSON = 1 << 20

_AOTI_DIR = re.compile(r"(?:^|/)data/aotinductor/")
_BUILD_PATH = [
    # a toolkit install named by version: /usr/local/cuda-13.0/..., CUDA\v13.0\...
    re.compile(rb"cuda-([0-9]{1,2})\.([0-9]{1,2})(?![0-9])"),
    re.compile(rb"CUDA[\\/]+v([0-9]{1,2})\.([0-9]{1,2})(?![0-9])"),
    # NVIDIA's CUDA 13 wheels install under nvidia/cu13/ (major only)
    re.compile(rb"nvidia[\\/]+cu([0-9]{2})[\\/]"),
]


def artifact_kind(path: str) -> str | None:
    """The artifact kind of ``path`` from its name and first bytes; None for wheels, plain
    directories and anything else (they are read as before)."""
    if os.path.isdir(path):
        return "triton-cache" if _is_triton_cache(path) else None
    lower = path.lower()
    if lower.endswith(".whl"):
        return None
    try:
        # The one opener: a FIFO would block open(); only a regular file is looked at.
        with open_untrusted(path) as fh:
            head = fh.read(SNIFF_BYTES)
    except OSError:
        return None
    if head[:4] in (b"PK\x03\x04", b"PK\x05\x06"):
        return "aoti-package" if lower.endswith(".pt2") else None
    from cuwheel.read.artifacts.executorch import flatbuffer_kind

    # None too for a file named .pt2 / .pte / .ptd that is not one: it is read as a file
    return flatbuffer_kind(head)


def _is_triton_cache(root: str) -> bool:
    """A directory whose entries are ``<hash>/`` folders holding a kernel's ``.json``
    beside its ``.cubin`` (Triton's file cache layout); the first 64 folders are looked at."""
    try:
        with os.scandir(root) as it:
            subdirs = sorted(e.path for e in it if e.is_dir(follow_symlinks=False))[:64]
    except OSError:
        return False
    for d in subdirs:
        try:
            names = set(os.listdir(d))
        except OSError:
            continue
        for n in names:
            if n.endswith(".cubin") and n[: -len(".cubin")] + ".json" in names:
                return True
    return False


def _build_paths(where: str, text: bytes) -> list[TrainEvidence]:
    found: dict[tuple[int, int | None], str] = {}
    for rx in _BUILD_PATH:
        for m in rx.finditer(text):
            major = int(m.group(1))
            minor = int(m.group(2)) if rx.groups > 1 else None
            if 9 <= major <= 99:
                found.setdefault((major, minor), m.group(0).decode("ascii", "replace"))
    return [TrainEvidence("build-path", a, b, f"{where}: {s}") for (a, b), s in found.items()]


def _dedupe(ev: list[TrainEvidence]) -> list[TrainEvidence]:
    seen: dict[tuple[str, int, int | None], TrainEvidence] = {}
    for e in ev:
        seen.setdefault((e.source, e.major, e.minor), e)
    return list(seen.values())


def _metadata_json(raw: bytes) -> list[tuple[str, str]]:
    try:
        obj = load_json(raw, max_bytes=MAX_TEXT_MEMBER)
    except JsonError:
        return []
    if not isinstance(obj, dict):
        return []
    return [(k, v) for k, v in obj.items() if isinstance(k, str) and isinstance(v, str)
            and k.startswith("AOTI_")]


def _read_aoti(path: str, limits: Limits) -> Source:
    notes: list[str] = []
    binaries: list[Binary] = []
    problems: list[Problem] = []
    metadata: list[tuple[str, str]] = []
    evidence: list[TrainEvidence] = []
    try:
        wf = WheelFile(path, limits)
    except InputError as exc:
        src = Source("aoti-package", path, problems=(Problem(exc.path, exc.problem),))
        return _done(src)
    seen = 0
    text_left = MAX_TEXT_TOTAL
    with wf:
        members = [m for m in wf.members if not m.is_dir()]
        if not any(_AOTI_DIR.search(m.name) for m in members):
            problems.append(Problem(path, "no data/aotinductor/ member: not an AOTInductor "
                                          "package"))
        for m in members:
            if not _AOTI_DIR.search(m.name):
                continue
            seen += 1
            display = wf.display(m.name)
            if m.name.endswith(("_metadata.json", ".cpp", ".h", ".json")):
                if m.file_size > text_left:
                    notes.append(f"{display}: {m.file_size} bytes; past the package's "
                                 f"{MAX_TEXT_TOTAL} bytes of text, not read")
                    continue
                raw = wf.read_small(m.name, MAX_TEXT_MEMBER)
                if raw is None:
                    continue
                text_left -= len(raw)
                if m.name.endswith("_metadata.json"):
                    metadata += _metadata_json(raw)
                else:
                    evidence += _build_paths(m.name.rsplit("/", 1)[-1], raw)
                continue
            # the binary's facts are streamed, as a wheel member's are (any size)
            bs, ps, is_bin = read_member(wf, m.name)
            binaries += bs
            problems += ps
            if not is_bin or ps or not any(b.format in ("elf", "pe") for b in bs):
                continue
            # cubins embedded whole in a host library: searched in libraries up to a size
            if m.file_size > MAX_SCANNED:
                notes.append(f"{display}: {m.file_size} bytes; not searched for embedded cubins")
                continue
            try:
                binaries += _spooled_cubins(wf, m, display, container_ranges(bs))
            except InputError as exc:
                problems.append(Problem(exc.path, exc.problem))
    src = Source("aoti-package", path, files_seen=seen, binaries=tuple(binaries),
                 problems=tuple(problems))
    return _done(src, metadata, _dedupe(evidence), tuple(notes))


def _spooled_cubins(wf: WheelFile, m: Member, display: str,
                    skip: list[tuple[int, int]]) -> list[Binary]:
    """The cubins embedded in member ``m``: its bytes written to a temporary file as they
    are inflated and searched through a map of it (memory: one chunk and the images)."""
    import tempfile

    with tempfile.TemporaryFile() as tmp:
        for chunk in wf.chunks(m):
            tmp.write(chunk)
        tmp.flush()
        if tmp.tell() == 0:
            return []
        with mmap.mmap(tmp.fileno(), 0, access=mmap.ACCESS_READ) as mm:
            return embedded_cubins(display, mm, skip=skip)  # type: ignore[arg-type]


def _read_triton_cache(root: str) -> Source:
    binaries: list[Binary] = []
    problems: list[Problem] = []
    metadata: list[tuple[str, str]] = []
    files = 0
    real_root = os.path.realpath(root)
    for d in sorted(os.listdir(root)):
        sub = os.path.join(root, d)
        if not os.path.isdir(sub) or os.path.islink(sub):
            continue
        for n in sorted(os.listdir(sub)):
            p = os.path.join(sub, n)
            if os.path.islink(p) or not os.path.isfile(p):
                continue
            files += 1
            if n.endswith(".json") and not n.startswith("__grp__"):
                try:
                    raw = read_untrusted(p, MAX_KERNEL_JSON, real_root)
                    if raw is None:
                        continue
                    obj = load_json(raw, max_bytes=MAX_KERNEL_JSON)
                except (OSError, ValueError):
                    problems.append(Problem(p, "unreadable kernel metadata (JSON)"))
                    continue
                if isinstance(obj, dict):
                    tgt = obj.get("target")
                    if isinstance(tgt, dict) and isinstance(tgt.get("arch"), int):
                        metadata.append(("TRITON_TARGET", f"{tgt.get('backend')}:{tgt['arch']}"))
                    if isinstance(obj.get("triton_version"), str):
                        metadata.append(("TRITON_VERSION", obj["triton_version"]))
                continue
            bs, ps, _ = read_path(p)
            binaries += bs
            problems += ps
    src = Source("triton-cache", root, files_seen=files, binaries=tuple(binaries),
                 problems=tuple(problems))
    return _done(src, metadata)


def _done(src: Source, metadata: list[tuple[str, str]] | tuple[tuple[str, str], ...] = (),
          evidence: list[TrainEvidence] | None = None,
          notes: tuple[str, ...] = ()) -> Source:
    """The Source with its artifact facts; the host from its binaries when they agree.  The
    evidence its binaries give (the runtime they link, the toolkit of their cubins, the PTX
    ISA) is judged from them above the reader (cuwheel.rules.artifact_train)."""
    hosts = {b.machine for b in src.binaries if b.machine and b.machine != "cuda"}
    formats = {b.format for b in src.binaries if b.machine != "cuda"}
    facts = ArtifactFacts(
        src.kind, tuple(dict.fromkeys(metadata)), tuple(evidence or ()),
        hosts.pop() if len(hosts) == 1 else None,
        formats.pop() if len(formats) == 1 else None, notes,
    )  # fmt: skip
    return dataclasses.replace(src, artifact=facts)


def read_artifact(path: str, limits: Limits = DEFAULT_LIMITS) -> Source:
    """Read one artifact into a Source whose ``artifact`` holds its own records; a plain
    library (or any binary file) when it is no other kind.  Unreadable inputs become
    problems of the Source, never exceptions."""
    kind = artifact_kind(path)
    if kind == "aoti-package":
        return _read_aoti(path, limits)
    if kind == "triton-cache":
        return _read_triton_cache(path)
    if kind in ("executorch-program", "executorch-data"):
        from cuwheel.read.artifacts.executorch import read_executorch

        src, metadata, et_notes = read_executorch(path, kind)
        return _done(src, metadata, None, et_notes)
    bs, ps, is_bin = read_path(path)  # streamed, any size
    if not is_bin and not ps:
        ps = [Problem(path, "not an artifact cuwheel can read (AOTInductor .pt2, ExecuTorch "
                            ".pte/.ptd, Triton cache directory or a binary)")]
    paths: list[TrainEvidence] = []
    notes: tuple[str, ...] = ()
    if is_bin and not ps and any(b.format in ("elf", "pe") for b in bs):
        try:
            with open_untrusted(path) as f, \
                    mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ) as mm:
                if len(mm) <= MAX_SCANNED:  # searched through the map, never copied
                    bs += embedded_cubins(path, mm, skip=container_ranges(bs))  # type: ignore[arg-type]
                    paths = _build_paths(os.path.basename(path), mm)  # type: ignore[arg-type]
                else:
                    notes = (f"{len(mm)} bytes; not searched for embedded cubins or paths",)
        except (OSError, ValueError) as exc:
            ps.append(Problem(path, str(exc)))
    src = Source("library", path, files_seen=1, binaries=tuple(bs), problems=tuple(ps))
    return _done(src, (), paths, notes)

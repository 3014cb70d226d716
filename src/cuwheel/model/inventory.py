"""The inventory: immutable facts about the CUDA device code and linkage of binaries.

Facts only: nothing here knows about release rows, policies or verdicts.  Readers and
parsers build these objects; checks, compat and reports read them.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from enum import Enum

from cuwheel.model.arch import Arch
from cuwheel.model.artifact import ArtifactFacts

__all__ = [
    "ArchCoverage",
    "Binary",
    "BuildRecord",
    "CodeKind",
    "Compression",
    "FatbinContainer",
    "FatbinEntry",
    "Inventory",
    "Problem",
    "Source",
    "Toolkit",
    "UndefinedSymbol",
    "VersionNeed",
    "WheelInfo",
    "member_of",
]

class CodeKind(str, Enum):
    """What a fatbin entry holds (entry header field ``kind``)."""

    SASS = "sass"  # kind 2: a cubin (device ELF)
    PTX = "ptx"  # kind 1: PTX text
    LTOIR = "lto-ir"  # kind 8: NVVM IR for link-time optimisation


class Compression(str, Enum):
    NONE = "none"
    LZ4 = "lz4"  # flag 0x2000, raw LZ4 block
    ZSTD = "zstd"  # flag 0x8000, one zstd frame


@dataclass(frozen=True)
class Toolkit:
    """The CUDA toolkit release that produced a cubin, as recorded inside it."""

    major: int
    minor: int
    # Where it was read: "tkinfo" (.note.nv.tkinfo), "cuinfo" (.note.nv.cuinfo) or
    # "e_version" (ABI v7 cubins keep major*10+minor in the ELF header's e_version).
    source: str
    # Full version when the tkinfo note gives it ("13.0.88"), else None.
    full: str | None = None

    def __str__(self) -> str:
        return self.full or f"{self.major}.{self.minor}"


@dataclass(frozen=True)
class FatbinEntry:
    """One entry of a fatbin container: a cubin, a PTX text or an LTO-IR module."""

    offset: int  # of the entry header, from the start of the binary
    kind: CodeKind
    arch: Arch  # the real target; the variant comes from the entry flags
    code_version: tuple[int, int]  # cubin: (1, ELF ABI version); PTX / LTO: (ISA major, minor)
    flags: int
    header_size: int
    stored_size: int  # payload bytes in the file (padding included)
    compression: Compression
    compressed_size: int  # exact compressed stream length; 0 when stored
    uncompressed_size: int  # exact size of the code once decompressed (or stored length)
    host: str  # "linux", "windows" or "unknown" (flags 0x10 / 0x40)
    debug: bool  # flag 0x2
    identifier: str | None = None
    # Facts that need the payload; None where it was not decoded or not present.
    toolkit: Toolkit | None = None
    relocatable: bool | None = None  # cubin e_type ET_REL (True) or ET_EXEC (False)
    # The cubin has a kernel (a .text.<name> section); None where it was not decoded.
    kernels: bool | None = None
    # The entry kernels' mangled names (a cubin's ENTRY functions, a PTX text's .entry
    # directives), each once in file order; None where they were not read (inspect
    # --kernels reads them; model/kernels.py names their families).
    kernel_names: tuple[str, ...] | None = None
    # The module-scope device variables it defines (a cubin's STT_OBJECT symbols; a PTX
    # text's .global / .const definitions, for a text without kernels only), read with the
    # kernel names; None where not read.
    data_names: tuple[str, ...] | None = None

    @property
    def name(self) -> str:
        """``sm_90a`` for SASS, ``compute_90a`` for PTX / LTO-IR."""
        return self.arch.sass if self.kind is CodeKind.SASS else self.arch.ptx

    @property
    def ptx_isa(self) -> str | None:
        if self.kind is CodeKind.PTX:
            return f"{self.code_version[0]}.{self.code_version[1]}"
        return None


@dataclass(frozen=True)
class FatbinContainer:
    """One fatbin container (magic 0xBA55ED50) and where it was found."""

    offset: int  # from the start of the binary
    size: int  # header + payload
    # The section that holds it (".nv_fatbin", "__nv_relfatbin", PE ".nv_fatb" / "__nv_rel",
    # or any other section for a container found by the magic scan); None when outside
    # every section or the file has no sections (raw fatbin).
    section: str | None
    named_section: bool  # True when `section` is one of the device-code sections
    relocatable: bool  # in __nv_relfatbin / __nv_rel: relocatable (-rdc) device code
    entries: tuple[FatbinEntry, ...]
    # Toolkit recorded in the cubin(s) decoded from this container (one nvcc run makes a
    # container, so its cubins share it); None when none was decoded or none recorded it.
    toolkit: Toolkit | None = None
    # Written by nvcc's device-link step (its .nvFatBinSegment / .nvFatBi wrapper record
    # has version 2): for whole-program code a stub without kernels that follows the link
    # line's -arch, for -rdc code the linked image.  None when no record names it.
    device_link: bool | None = None
    # Of a kernel-less container's device variables, those the host code takes the
    # address of besides registering them (read/binary/hostrefs.py): () when it reads none, None
    # where that was not determined (containers with kernels, other machines than x86-64).
    host_reads: tuple[str, ...] | None = None

    @property
    def shape(self) -> tuple[object, ...]:
        """The facts a container's verdict depends on: its relocatability and each entry's
        kind, target, code version, compression, relocatability and whether it has kernels
        and, once names were read, whether it has none, whether it has variables and which
        the host code reads (rules/loading.py judges each shape once; rules/shapes.py
        numbers them)."""
        return (self.relocatable,
                tuple((e.kind, e.arch, e.code_version, e.compression, e.relocatable, e.kernels,
                       e.kernel_names == (), bool(e.data_names))
                      for e in self.entries), self.host_reads)


@dataclass(frozen=True)
class ArchCoverage:
    """How much of a binary's device code targets one architecture."""

    arch: Arch
    kind: CodeKind
    containers: int  # containers holding at least one such entry
    entries: int
    stored_bytes: int
    uncompressed_bytes: int


@dataclass(frozen=True, slots=True)
class UndefinedSymbol:
    """A dynamic symbol a binary uses but does not define (ELF ``.dynsym`` with
    ``SHN_UNDEF``), with the version its ``.gnu.version`` entry requires."""

    name: str
    # The required version (``GLIBC_2.34``) and the library whose ``.gnu.version_r``
    # entry names it (``libc.so.6``); None for an unversioned reference, which binds to
    # whatever object in the load scope defines the name first.
    version: str | None = None
    library: str | None = None
    weak: bool = False  # STB_WEAK: resolves to 0 when no object defines it


@dataclass(frozen=True, slots=True)
class VersionNeed:
    """One ``.gnu.version_r`` entry: the versions a binary requires of one library
    (``libc.so.6``: ``GLIBC_2.2.5``, ``GLIBC_2.34``), in file order."""

    library: str
    versions: tuple[str, ...]


@dataclass(frozen=True)
class Binary:
    """One host binary (or raw device-code file) and what it contains."""

    path: str  # display path, e.g. "torch-2.14.1-...whl!torch/lib/libtorch_cuda.so"
    format: str  # "elf", "pe", "cubin", "fatbin", "ptx"
    size: int
    file_type: str | None = None  # "shared", "executable", "object" (ELF); "dll", "exe" (PE)
    machine: str | None = None  # "x86_64", "aarch64", "AMD64", "ARM64", "cuda" ...
    archive: str | None = None  # for an ar member: the archive's display path
    member: str | None = None  # for an ar member: its name in the archive
    # Host linkage
    needed: tuple[str, ...] = ()  # ELF DT_NEEDED / PE imported DLLs, in file order
    # ELF DT_RPATH / DT_RUNPATH entries, split on ':' in file order; an empty entry is
    # kept as "" (ld.so reads it as the working directory)
    rpath: tuple[str, ...] = ()
    runpath: tuple[str, ...] = ()
    soname: str | None = None
    exported: tuple[str, ...] = ()  # defined dynamic symbols / PE exports, once each
    # ELF symbol versioning: the undefined GLOBAL / WEAK dynamic symbols in table order
    # (once per name and version), the .gnu.version_r requirements, and the versions the
    # binary itself defines (.gnu.version_d, without the base entry that repeats the
    # SONAME).  Empty for PE and for ELF files without these sections.
    undefined: tuple[UndefinedSymbol, ...] = ()
    version_needs: tuple[VersionNeed, ...] = ()
    version_defs: tuple[str, ...] = ()
    # The CUDA runtime is linked in statically (libcudart_static: its shared-memory name
    # format in .rodata, docs/formats.md#a-statically-linked-cuda-runtime); ELF only.
    static_cudart: bool = False
    # Device code
    containers: tuple[FatbinContainer, ...] = ()
    # Raw PTX file facts (format "ptx"): its .version and .target
    ptx_version: str | None = None
    # Structures of the file that could not be read, one line each naming the structure
    # and its offset (".nv_fatbin: bytes at 0x1234 are not a fatbin container"); the
    # other facts were still read.  Empty for a file read whole.  docs/inspect.md says
    # which problems are anomalies and which make the whole file unreadable (a Problem).
    anomalies: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if self.anomalies:  # names read from hostile files: keep each one line
            from cuwheel.errors import one_line

            object.__setattr__(self, "anomalies", tuple(one_line(a) for a in self.anomalies))

    def entries(self, *, relocatable: bool | None = None) -> Iterator[FatbinEntry]:
        for c in self.containers:
            if relocatable is None or c.relocatable == relocatable:
                yield from c.entries

    @property
    def has_device_code(self) -> bool:
        return any(c.entries for c in self.containers)

    def coverage(self) -> tuple[ArchCoverage, ...]:
        """Per (kind, arch): containers carrying it and the bytes it costs (computed once:
        a renderer asks for it per section, and torch's largest library has 3,000 entries)."""
        found: tuple[ArchCoverage, ...] | None = self.__dict__.get("_coverage")
        if found is None:
            found = self._coverage()
            object.__setattr__(self, "_coverage", found)
        return found

    def _coverage(self) -> tuple[ArchCoverage, ...]:
        acc: dict[tuple[CodeKind, Arch], list[int]] = {}
        for c in self.containers:
            seen: set[tuple[CodeKind, Arch]] = set()
            for e in c.entries:
                key = (e.kind, e.arch)
                row = acc.setdefault(key, [0, 0, 0, 0])
                if key not in seen:
                    row[0] += 1
                    seen.add(key)
                row[1] += 1
                row[2] += e.stored_size
                row[3] += e.uncompressed_size
        order = {CodeKind.SASS: 0, CodeKind.PTX: 1, CodeKind.LTOIR: 2}
        return tuple(
            ArchCoverage(arch, kind, r[0], r[1], r[2], r[3])
            for (kind, arch), r in sorted(acc.items(), key=lambda kv: (order[kv[0][0]], kv[0][1]))
        )

    @property
    def containers_with_code(self) -> int:
        return sum(1 for c in self.containers if c.entries)


@dataclass(frozen=True)
class BuildRecord:
    """A package release a wheel says its binaries were built against, and the member that
    says so (xformers' ``xformers/cpp_lib.json``: ``"torch": "2.10.0+cu128"``)."""

    member: str
    package: str  # canonical distribution name: "torch"
    version: str  # as written, cut to MAX_NAME characters


@dataclass(frozen=True)
class WheelInfo:
    """What a wheel's name and dist-info say (facts, not judged)."""

    name: str
    version: str
    tags: tuple[str, ...]  # "cp311-cp311-manylinux_2_28_x86_64", ...
    requires_dist: tuple[str, ...]
    local_version: str | None  # "cu130" from "2.14.1+cu130"
    # The ``Tag:`` lines of ``*.dist-info/WHEEL`` in file order; None when the wheel has
    # no readable WHEEL file (the tags above come from the file name).
    wheel_file_tags: tuple[str, ...] | None = None
    requires_python: str | None = None  # METADATA Requires-Python, as written
    build_records: tuple[BuildRecord, ...] = ()  # what the wheel says it was built against


@dataclass(frozen=True)
class Problem:
    """An input that could not be read, with the one-line reason."""

    path: str
    message: str

    def __post_init__(self) -> None:
        # Paths and messages may carry names read from hostile files; keep them one line.
        from cuwheel.errors import one_line

        object.__setattr__(self, "path", one_line(self.path))
        object.__setattr__(self, "message", one_line(self.message))

    def __str__(self) -> str:
        return f"{self.path}: {self.message}"


@dataclass(frozen=True)
class Source:
    """One inspected target: a wheel, directory, installed distribution, single file or
    artifact (docs/artifacts.md)."""

    kind: str  # "wheel", "directory", "distribution", "file"
    path: str
    wheel: WheelInfo | None = None
    files_seen: int = 0  # files examined (binaries or not)
    binaries: tuple[Binary, ...] = ()
    problems: tuple[Problem, ...] = ()
    # An exported program or other artifact's own records (model/artifact.py); kind is then
    # its artifact kind ("aoti-package", ...)
    artifact: ArtifactFacts | None = None

    def member(self, path: str) -> str | None:
        """``path`` relative to this source (see :func:`member_of`)."""
        return member_of(self.path, path)


def member_of(source: str, path: str) -> str | None:
    """A display path relative to its source: ``x.whl!lib/a.so`` -> ``lib/a.so``, the same
    below a directory, a single file its own name; None when it is not inside ``source``.
    Every report names members this way (check, compat, scan)."""
    for sep in ("!", "/", "\\"):
        if path.startswith(source + sep) and len(path) > len(source) + 1:
            return path[len(source) + 1 :]
    if path == source:
        return path.replace("\\", "/").rsplit("/", 1)[-1]
    return None


@dataclass(frozen=True)
class Inventory:
    """Everything one inspect run found."""

    sources: tuple[Source, ...] = field(default_factory=tuple)

    @property
    def binaries(self) -> tuple[Binary, ...]:
        return tuple(b for s in self.sources for b in s.binaries)

    @property
    def problems(self) -> tuple[Problem, ...]:
        return tuple(p for s in self.sources for p in s.problems)

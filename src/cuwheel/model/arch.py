"""GPU architecture identifiers and the arch-list spellings of nvcc, CMake and PyTorch.

``Arch(90, "a")`` is ``sm_90a`` (SASS) or ``compute_90a`` (PTX).  The number is the
compute capability as nvcc spells it (major * 10 + minor: 7.5 -> 75, 10.0 -> 100,
12.1 -> 121), which is also the value of the fatbin entry's ``arch`` field.

``ArchSpec`` is one item of an architecture list: an ``Arch`` plus whether SASS (a
cubin), PTX, or both are wanted.  Each consumer spells such lists differently; this
module parses and formats them without knowing which architectures exist (that is
the catalog's job, see :mod:`cuwheel.knowledge.catalog`):

=====================  ==========================================  ==========================
consumer               spelling                                    functions
=====================  ==========================================  ==========================
generic / nvcc names   ``sm_90a``, ``compute_90``, ``sm_86+PTX``   ``parse_arch_specs``
PyTorch                ``8.0;8.6;9.0a;12.0+PTX``                   ``*_torch_arch_list``
CMake                  ``80-real;90-virtual;120``                  ``*_cmake_architectures``
nvcc ``-gencode``      ``arch=compute_86,code=[sm_86,compute_86]`` ``*_gencode``
=====================  ==========================================  ==========================

Named groups (``all-major``, PyTorch's ``Ampere``) depend on a CUDA release or a
consumer version, so the parsers take them as a mapping supplied by the caller.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal

from cuwheel.errors import ArchSpellingError, shown

__all__ = [
    "Arch",
    "ArchSpec",
    "ArchSpellingError",
    "Variant",
    "format_arch_specs",
    "format_cmake_architectures",
    "format_gencode",
    "format_torch_arch_list",
    "normalize_specs",
    "parse_arch_specs",
    "parse_cmake_architectures",
    "parse_gencode",
    "parse_torch_arch_list",
]

Variant = Literal["", "a", "f"]


# "sm_90a", "compute_100f", "lto_89", "sm90", "90a", "9.0a", "10.0f", "12.1"
_ARCH_RE = re.compile(
    r"""^(?:(?P<prefix>sm|compute|lto)_?)?
        (?:(?P<major>[0-9]{1,2})\.(?P<minor>[0-9])|(?P<number>[0-9]{2,3}))
        (?P<variant>[af]?)$""",
    re.VERBOSE | re.IGNORECASE | re.ASCII,
)


@dataclass(frozen=True, order=True)
class Arch:
    """One GPU architecture: compute capability number and variant suffix."""

    number: int
    variant: Variant = ""

    def __post_init__(self) -> None:
        if not 10 <= self.number <= 999:
            raise ValueError(f"compute capability number out of range: {self.number!r}")
        if self.variant not in ("", "a", "f"):
            raise ValueError(f"unknown architecture variant: {self.variant!r}")

    @classmethod
    def parse(cls, text: str) -> Arch:
        """Parse one architecture in any common spelling, ignoring whether it names SASS or PTX.

        Accepts ``sm_90a``, ``compute_90a``, ``lto_90a``, ``90a``, ``9.0a`` (case of the
        prefix does not matter).  Raises ``ArchSpellingError``.
        """
        arch, _prefix = _parse_arch(text)
        return arch

    @property
    def major(self) -> int:
        return self.number // 10

    @property
    def minor(self) -> int:
        return self.number % 10

    @property
    def cc(self) -> str:
        """Compute capability as ``X.Y`` (without the variant)."""
        return f"{self.major}.{self.minor}"

    @property
    def sass(self) -> str:
        """Real-architecture name, e.g. ``sm_90a``."""
        return f"sm_{self.number}{self.variant}"

    @property
    def ptx(self) -> str:
        """Virtual-architecture name, e.g. ``compute_90a``."""
        return f"compute_{self.number}{self.variant}"

    @property
    def dotted(self) -> str:
        """Compute capability with the variant, as PyTorch spells it: ``9.0a``."""
        return f"{self.cc}{self.variant}"

    @property
    def base(self) -> Arch:
        """The same architecture without ``a`` / ``f``."""
        return Arch(self.number)

    def __str__(self) -> str:
        return self.sass


def _parse_arch(text: str) -> tuple[Arch, str | None]:
    m = _ARCH_RE.match(text.strip())
    if m is None:
        raise ArchSpellingError(f"not a GPU architecture: {shown(text)}")
    if m["number"] is not None:
        number = int(m["number"])
        if m["number"].startswith("0"):
            raise ArchSpellingError(f"not a GPU architecture: {shown(text)}")
    else:
        major = int(m["major"])
        if major == 0 or m["major"].startswith("0"):
            raise ArchSpellingError(f"not a GPU architecture: {shown(text)}")
        number = major * 10 + int(m["minor"])
    variant = m["variant"].lower()
    try:
        arch = Arch(number, variant)  # type: ignore[arg-type]  # checked by the regex
    except ValueError as exc:
        raise ArchSpellingError(f"not a GPU architecture: {shown(text)} ({exc})") from exc
    prefix = m["prefix"].lower() if m["prefix"] else None
    return arch, prefix


@dataclass(frozen=True, order=True)
class ArchSpec:
    """One item of an architecture list: build SASS and/or PTX for ``arch``."""

    arch: Arch
    sass: bool = True
    ptx: bool = False

    def __post_init__(self) -> None:
        if not (self.sass or self.ptx):
            raise ValueError(f"{self.arch}: an arch spec needs SASS or PTX (or both)")

    @classmethod
    def parse(cls, text: str) -> ArchSpec:
        """Parse one item in any single-item spelling.

        ``sm_90a`` / ``90-real`` -> SASS; ``compute_90`` / ``90-virtual`` -> PTX;
        ``8.6+PTX`` / ``sm_86+PTX`` -> both; a bare ``90``, ``9.0a`` or ``100f`` -> SASS only
        (use :func:`parse_cmake_architectures` for CMake's meaning of a bare number).
        """
        t = text.strip()
        low = t.lower()
        if low.endswith("+ptx"):
            arch, prefix = _parse_arch(t[:-4])
            if prefix not in (None, "sm"):
                raise ArchSpellingError(f"'+PTX' needs a real architecture: {shown(text)}")
            return cls(arch, sass=True, ptx=True)
        for suffix, sass, ptx in (("-real", True, False), ("-virtual", False, True)):
            if low.endswith(suffix):
                arch, prefix = _parse_arch(t[: -len(suffix)])
                if prefix is not None:
                    raise ArchSpellingError(f"CMake-style {suffix!r} takes a number: {shown(text)}")
                return cls(arch, sass=sass, ptx=ptx)
        arch, prefix = _parse_arch(t)
        if prefix == "lto":
            raise ArchSpellingError(f"LTO-IR targets are neither SASS nor PTX: {shown(text)}")
        if prefix == "compute":
            return cls(arch, sass=False, ptx=True)
        return cls(arch, sass=True, ptx=False)

    def __str__(self) -> str:
        if self.sass and self.ptx:
            return f"{self.arch.sass}+PTX"
        return self.arch.sass if self.sass else self.arch.ptx


def normalize_specs(specs: Iterable[ArchSpec]) -> tuple[ArchSpec, ...]:
    """Merge items of the same arch (SASS | PTX) and sort by arch."""
    acc: dict[Arch, tuple[bool, bool]] = {}
    for s in specs:
        sass, ptx = acc.get(s.arch, (False, False))
        acc[s.arch] = (sass or s.sass, ptx or s.ptx)
    return tuple(ArchSpec(a, sass, ptx) for a, (sass, ptx) in sorted(acc.items()))


GroupMap = Mapping[str, Sequence[ArchSpec]]


def _group(name: str, groups: GroupMap | None) -> Sequence[ArchSpec] | None:
    if not groups:
        return None
    for key, value in groups.items():
        if key.lower() == name.lower():
            return value
    return None


_GENCODE_RE = re.compile(
    r"""(?:--generate-code|-gencode)?[=\s]*
        arch=(?P<arch>[\w.]+)\s*,\s*code=(?P<code>\[[^\]]*\]|"[^"]*"|'[^']*'|[\w.]+(?:,[\w.]+)*)""",
    re.VERBOSE | re.IGNORECASE,
)


def parse_gencode(text: str) -> tuple[ArchSpec, ...]:
    """Parse nvcc ``-gencode`` clauses: ``arch=compute_86,code=[sm_86,compute_86]``.

    Several clauses may follow each other (``-gencode=...``, ``-gencode ...``,
    ``--generate-code ...`` or bare).  Every ``sm_*`` in ``code`` is a SASS item and every
    ``compute_*`` a PTX item; which virtual arch produced a cubin is not kept.
    """
    specs: list[ArchSpec] = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        if text[pos].isspace():
            pos += 1
            continue
        m = _GENCODE_RE.match(text, pos)
        if m is None:
            raise ArchSpellingError(f"not an nvcc -gencode clause: {text[pos:]!r}")
        virtual, vprefix = _parse_arch(m["arch"])
        if vprefix != "compute":
            raise ArchSpellingError(f"-gencode arch= must be a compute_* name: {m['arch']!r}")
        code = m["code"].strip("[]\"'")
        for item in (c.strip() for c in code.split(",")):
            arch, prefix = _parse_arch(item)
            if prefix == "sm":
                if arch.number < virtual.number:
                    raise ArchSpellingError(f"{item} cannot be built from {m['arch']}")
                specs.append(ArchSpec(arch, sass=True, ptx=False))
            elif prefix == "compute":
                if arch != virtual:
                    raise ArchSpellingError(f"code={item} differs from arch={m['arch']}")
                specs.append(ArchSpec(arch, sass=False, ptx=True))
            else:
                raise ArchSpellingError(f"-gencode code= needs sm_* or compute_*: {item!r}")
        pos = m.end()
    if not specs:
        raise ArchSpellingError("empty -gencode list")
    return normalize_specs(specs)


def parse_arch_specs(text: str, groups: GroupMap | None = None) -> tuple[ArchSpec, ...]:
    """Parse a list in any spelling: items separated by ``;``, ``,`` or spaces.

    Items: see :meth:`ArchSpec.parse`; ``arch=...,code=...`` gencode clauses; names in
    ``groups`` (e.g. a CUDA release's ``all-major``).  Result normalised.
    """
    if "arch=" in text.lower():
        return parse_gencode(text)
    specs: list[ArchSpec] = []
    for item in re.split(r"[;,\s]+", text.strip()):
        if not item:
            continue
        group = _group(item, groups)
        if group is not None:
            specs.extend(group)
        else:
            specs.append(ArchSpec.parse(item))
    return normalize_specs(specs)


def format_arch_specs(specs: Iterable[ArchSpec]) -> str:
    """Generic spelling: ``sm_80;sm_86;sm_120+PTX;compute_90`` (normalised)."""
    return ";".join(str(s) for s in normalize_specs(specs))


def parse_torch_arch_list(text: str, names: GroupMap | None = None) -> tuple[ArchSpec, ...]:
    """Parse PyTorch's ``TORCH_CUDA_ARCH_LIST``: ``8.0;8.6 9.0a;12.0+PTX``.

    ``X.Y`` is SASS, ``X.Y+PTX`` adds PTX of the same arch.  ``names`` maps PyTorch's
    architecture names (``Ampere``...) to what they stand for.
    """
    specs: list[ArchSpec] = []
    for item in re.split(r"[;\s]+", text.strip()):
        if not item:
            continue
        group = _group(item, names)
        if group is not None:
            specs.extend(group)
            continue
        ptx = item.lower().endswith("+ptx")
        core = item[:-4] if ptx else item
        if not re.fullmatch(r"[0-9]{1,2}\.[0-9][af]?", core):
            raise ArchSpellingError(f"not a TORCH_CUDA_ARCH_LIST item: {item!r}")
        arch, _ = _parse_arch(core)
        specs.append(ArchSpec(arch, sass=True, ptx=ptx))
    if not specs:
        raise ArchSpellingError("empty TORCH_CUDA_ARCH_LIST")
    return normalize_specs(specs)


def format_torch_arch_list(specs: Iterable[ArchSpec]) -> str:
    """Spell a list as ``TORCH_CUDA_ARCH_LIST`` (``8.0;8.6;12.0+PTX``).

    PyTorch cannot ask for PTX without the SASS of the same arch; such a list raises
    ``ArchSpellingError``.  Which archs a PyTorch version accepts is checked by the caller.
    """
    items: list[str] = []
    for s in normalize_specs(specs):
        if not s.sass:
            raise ArchSpellingError(
                f"TORCH_CUDA_ARCH_LIST cannot ask for {s.arch.ptx} PTX without the "
                f"{s.arch.sass} cubin ('X.Y+PTX' always builds both)"
            )
        items.append(s.arch.dotted + ("+PTX" if s.ptx else ""))
    return ";".join(items)


def parse_cmake_architectures(text: str, groups: GroupMap | None = None) -> tuple[ArchSpec, ...]:
    """Parse ``CMAKE_CUDA_ARCHITECTURES``: ``80-real;90-virtual;120`` (bare = SASS + PTX)."""
    specs: list[ArchSpec] = []
    for item in re.split(r"[;\s]+", text.strip()):
        if not item:
            continue
        group = _group(item, groups)
        if group is not None:
            specs.extend(group)
            continue
        if not re.fullmatch(r"[0-9]{2,3}[af]?(-real|-virtual)?", item, re.IGNORECASE | re.ASCII):
            raise ArchSpellingError(f"not a CMAKE_CUDA_ARCHITECTURES item: {item!r}")
        spec = ArchSpec.parse(item)
        if "-" not in item:
            spec = ArchSpec(spec.arch, sass=True, ptx=True)
        specs.append(spec)
    if not specs:
        raise ArchSpellingError("empty CMAKE_CUDA_ARCHITECTURES")
    return normalize_specs(specs)


def format_cmake_architectures(specs: Iterable[ArchSpec]) -> str:
    """Spell a list as ``CMAKE_CUDA_ARCHITECTURES`` (``80-real;90-virtual;120``)."""
    items: list[str] = []
    for s in normalize_specs(specs):
        name = f"{s.arch.number}{s.arch.variant}"
        items.append(name if s.sass and s.ptx else name + ("-real" if s.sass else "-virtual"))
    return ";".join(items)


def format_gencode(specs: Iterable[ArchSpec]) -> tuple[str, ...]:
    """nvcc flags, one ``-gencode=arch=compute_XY,code=...`` per SASS / PTX item.

    One flag per code object (as PyTorch writes them), so no brackets need quoting.
    """
    flags: list[str] = []
    for s in normalize_specs(specs):
        if s.sass:
            flags.append(f"-gencode=arch={s.arch.ptx},code={s.arch.sass}")
        if s.ptx:
            flags.append(f"-gencode=arch={s.arch.ptx},code={s.arch.ptx}")
    return tuple(flags)

"""CUDA's loading rules: which fatbin entry the driver loads on which GPU, and which
containers of a binary are modules at all (docs/compat.md#rules-per-fatbin-container).

The unit is the fatbin container: what ``__cudaRegisterFatBinary`` registers and
``cuModuleLoadData`` loads.  The driver picks the best entry of a container for the
device: a cubin of exactly its compute capability, else a compatible cubin, else PTX it
can JIT-compile (if it knows the PTX ISA).  These rules were checked against a real
driver on an H200 (tests/probe).  Everything here is a pure function of inventory facts
and the catalog; nothing reads files, picks targets or knows about rows and policies.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import Enum, IntEnum

from cuwheel.knowledge.active import active_catalog, active_memo
from cuwheel.knowledge.thresholds import load_thresholds
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, FatbinContainer, FatbinEntry
from cuwheel.rules._memo import per_binary
from cuwheel.rules.kernels import kernel_less_reason

__all__ = ["STUB_REASON", "ContainerVerdict", "SassFit", "Verdict", "codec_gate",
           "counted_containers", "family_members", "ignored_reason", "is_tegra", "judge_container",
           "link_stub_index", "ptx_fits", "ptx_isa_gate", "sass_fits", "worst"]


class Verdict(str, Enum):
    """What happens when code meets a GPU, best first; ``rank`` orders them.

    Containers get NATIVE ... NO_CODE; HOST, OTHER_GPUS, DEPENDS, PARTIAL and PLATFORM
    describe a library as a whole.
    """

    HOST = "host code only"  # links a CUDA runtime but carries no device code
    NATIVE = "native SASS"
    COMPATIBLE = "compatible SASS"
    PTX_JIT = "PTX JIT"
    # Library level only (docs/compat.md#from-containers-to-a-wheel): a module built for
    # other GPUs alone; a library that runs only if its host code picks kernels by CC;
    # one where some kernels have no code for the GPU.
    OTHER_GPUS = "for other GPUs"
    DEPENDS = "depends on dispatch"
    PARTIAL = "partial"  # some containers run, others miss code for it (library level only)
    DRIVER = "driver too old"
    NO_CODE = "no code"
    # The binary is for a platform no machine with this GPU has (an x86_64 library on a
    # Jetson); library level only.
    PLATFORM = "wrong platform"

    @property
    def rank(self) -> int:
        return list(Verdict).index(self)

    @property
    def runs(self) -> bool:
        """Runs on the GPU.  PARTIAL does not: some of the library's kernels are missing
        there (docs/compat.md#from-containers-to-a-library-and-a-wheel)."""
        return self.rank <= Verdict.PTX_JIT.rank

    @property
    def fails(self) -> bool:
        """A library-level verdict under which the library does not run: it fails the wheel
        (a culprit), where OTHER_GPUS and DEPENDS do not."""
        return self in (Verdict.PARTIAL, Verdict.DRIVER, Verdict.NO_CODE, Verdict.PLATFORM)

    @property
    def loads(self) -> bool:
        """A container verdict under which the driver loads the container."""
        return self in (Verdict.NATIVE, Verdict.COMPATIBLE, Verdict.PTX_JIT)

    @property
    def short(self) -> str:
        return _SHORT[self]


_SHORT = {
    Verdict.HOST: "host",
    Verdict.NATIVE: "native",
    Verdict.COMPATIBLE: "compat",
    Verdict.PTX_JIT: "JIT",
    Verdict.OTHER_GPUS: "other",
    Verdict.DEPENDS: "depends",
    Verdict.PARTIAL: "partial",
    Verdict.DRIVER: "driver",
    Verdict.NO_CODE: "-",
    Verdict.PLATFORM: "plat",
}


def worst(verdicts: Iterable[Verdict]) -> Verdict | None:
    return max(verdicts, key=lambda v: v.rank, default=None)


# ---------------------------------------------------------------------------- entries


def family_members(arch: Arch) -> tuple[Arch, ...]:
    """The CCs an ``f`` target covers: the union of every release's ``families`` entry
    (``sm_100f`` -> 10.0, 10.3, 10.7), and a renamed member under its new name too:
    ``sm_101f`` -> 10.1 and 11.0, the sm_11x family being sm_110f and sm_101f
    (docs/cuda.md#families).  Unknown f target: its own CC only."""
    members: set[Arch] = set()
    key = Arch(arch.number, "f")
    for r in active_catalog().releases:
        members.update(m.base for m in r.family(key))
    for rn in active_catalog().renames:
        if rn.old.base in members:
            members.add(rn.new.base)
    return tuple(sorted(members)) or (arch.base,)


def _renamed(code: Arch, device: Arch) -> bool:
    """Whether ``code`` names the device's CC by its old name (``sm_101a`` on CC 11.0)."""
    return any(rn.old.base == code.base and rn.new.base == device.base
               for rn in active_catalog().renames)


def is_tegra(arch: Arch) -> bool:
    """Whether CC ``arch`` is an integrated Tegra / Jetson / DRIVE GPU (catalog ``tegra``;
    a renamed CC, Thor's 10.1, is looked up under its current name)."""
    return active_catalog().is_tegra(arch)


class SassFit(IntEnum):
    """How a cubin fits a GPU (sass_fits), in order: not at all, by binary compatibility
    (a later minor of its major, a member of its family), or natively (its own CC)."""

    NONE = 0
    COMPATIBLE = 1
    NATIVE = 2


def sass_fits(code: Arch, device: Arch) -> tuple[SassFit, str]:
    """How (SassFit) and why, for a cubin of ``code`` on ``device``.

    docs/cuda.md#loading-rules: a plain cubin runs on later minors of its major, an ``a``
    cubin on its CC only, an ``f`` cubin on the members of its family; and Tegra GPUs
    have no binary compatibility at all, with each other or with desktop GPUs
    (docs/cuda.md#tegra-exception): there only a cubin of exactly the CC runs.
    """
    if code.number == device.number:
        what = {"a": "built for exactly", "f": "a family cubin of", "": "matches"}[code.variant]
        return SassFit.NATIVE, f"{code.sass} {what} CC {device.cc}"
    if code.variant == "a":
        return SassFit.NONE, f"{code.sass} runs on CC {code.cc} only (arch-specific 'a' cubin)"
    if code.variant == "f" and device in family_members(code):
        # Before the Tegra rule: the family table names its members, Tegra ones included
        # (sm_101f, Thor's CUDA 12.x name, is in the sm_11x family).
        return SassFit.COMPATIBLE, (
            f"{code.sass} runs on the members of its family, CC {device.cc} among them")
    tegra = [a for a in (code, device) if is_tegra(a)]
    if tegra:
        return SassFit.NONE, (
            f"{code.sass} does not run on CC {device.cc}: CC {tegra[0].cc} is a Tegra GPU, "
            "which has no SASS binary compatibility (only an exact-CC cubin or PTX runs)"
        )
    if code.variant == "f":
        fam = family_members(code)
        return SassFit.NONE, f"{code.sass} runs on its family only ({', '.join(a.cc for a in fam)})"
    if code.major == device.major and code.minor < device.minor:
        return SassFit.COMPATIBLE, f"{code.sass} runs on later minors of CC {code.major}.x"
    if code.major != device.major:
        return SassFit.NONE, f"{code.sass} does not run across majors (CC {device.cc})"
    return SassFit.NONE, f"{code.sass} needs CC >= {code.cc}"


def ptx_fits(code: Arch, device: Arch) -> tuple[bool, str]:
    """Whether PTX for ``code`` can be JIT-compiled for ``device`` (ISA gate aside)."""
    if code.variant == "a":
        if code.number == device.number:
            return True, f"{code.ptx} PTX is for exactly CC {device.cc}"
        if _renamed(code, device):
            # ptxas 13.0 compiles '.target sm_101a' for sm_110a only (docs/cuda.md#families)
            return True, f"{code.ptx} PTX is CC {device.cc} under its old name"
        return False, f"{code.ptx} PTX runs on CC {code.cc} only"
    if code.variant == "f":
        fam = family_members(code)
        if device in fam:
            return True, f"CC {device.cc} is in the {code.sass} family"
        return False, (f"{code.ptx} PTX covers only its family ({', '.join(a.cc for a in fam)})")
    if device.number >= code.number:
        return True, f"{code.ptx} PTX JIT-compiles for any CC >= {code.cc}"
    return False, f"{code.ptx} PTX needs CC >= {code.cc}"


def ptx_isa_gate(
    isa: tuple[int, int], cuda: tuple[int, int] | None, os: str
) -> tuple[bool, str]:
    """Whether a driver supporting CUDA ``cuda`` can JIT PTX of ``isa`` (None: not given,
    assumed able); the reason names the release and its driver."""
    isa_name = f"{isa[0]}.{isa[1]}"
    rel = active_catalog().release_for_ptx_isa(isa)
    if rel is None:
        return False, f"PTX ISA {isa_name} is newer than every CUDA release known"
    need = rel.min_driver(os)
    need_txt = f"CUDA {rel.name} driver" + (f" (>= {need})" if need else "")
    if cuda is None:
        return True, f"PTX ISA {isa_name} needs a {need_txt}; driver not given, assumed"
    if cuda >= rel.version:
        return True, f"PTX ISA {isa_name} needs a {need_txt}: have CUDA {cuda[0]}.{cuda[1]}"
    return False, (
        f"PTX ISA {isa_name} needs a {need_txt}; this driver supports CUDA "
        f"{cuda[0]}.{cuda[1]} (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)"
    )


def codec_gate(entry: FatbinEntry, cuda: tuple[int, int] | None, os: str) -> str | None:
    """Why a driver supporting CUDA ``cuda`` cannot decode ``entry``'s payload (a zstd entry
    needs a CUDA 12.4 driver, catalog ``[fatbin_codecs]``), or None when it can or the driver
    is not given (docs/cuda.md#compressed-fatbins)."""
    rel = active_catalog().codec_release(entry.compression.value)
    if rel is None or cuda is None or cuda >= rel.version:
        return None
    need = rel.min_driver(os)
    return (
        f"{entry.name} is {entry.compression.value}-compressed, which needs a CUDA {rel.name} "
        f"driver" + (f" (>= {need})" if need else "") + f"; this driver supports CUDA "
        f"{cuda[0]}.{cuda[1]} (CUDA_ERROR_INVALID_SOURCE: device kernel image is invalid)"
    )


# ---------------------------------------------------------------------------- containers

# nvcc's device-link step puts a kernel-less cubin for the link line's -arch (sm_75 when
# none is given) first in .nv_fatbin of every linked binary; see docs/compat.md.  Its size
# bound is measured: data/thresholds.toml [stub_max_cubin].
_LINKED = frozenset({"shared", "executable", "dll", "exe"})
_FATBIN_SECTIONS = frozenset({".nv_fatbin", ".nv_fatb"})
STUB_REASON = "nvcc device-link stub (small cubins, no kernels): never needed at run time"


def link_stub_index(binary: Binary) -> int | None:
    """Index of nvcc's device-link stub container, or None.

    The inventory marks the container nvcc's device-link step wrote (its wrapper record);
    in a binary without relocatable (-rdc) code that container links nothing and is the
    kernel-less stub.  Where no record marks it, the stub is recognised by shape: the first
    of several ``.nv_fatbin`` containers of a linked binary, holding only small cubins, and
    with no wrapper record of its own where the others have one (cuRAND 10.4.0.35's stub
    has none: docs/formats.md#wrapper-records).  Binaries with relocatable code are left
    alone: there the device-link container is the real linked image.
    """
    if binary.file_type not in _LINKED or any(c.relocatable for c in binary.containers):
        return None
    marked = [i for i, c in enumerate(binary.containers) if c.device_link]
    if marked:
        stub = binary.containers[marked[0]]
        return marked[0] if all(e.kind is CodeKind.SASS for e in stub.entries) else None
    named = [i for i, c in enumerate(binary.containers) if c.section in _FATBIN_SECTIONS]
    if named and binary.containers[named[0]].device_link is not None:
        return None  # a translation unit's own record: no stub
    if len(named) < 2:
        return None
    first = binary.containers[named[0]]
    largest = load_thresholds().stub_max_cubin
    if first.entries and all(
        e.kind is CodeKind.SASS and e.uncompressed_size <= largest for e in first.entries
    ):
        return named[0]
    return None


def ignored_reason(container: FatbinContainer, *, stub: bool = False) -> str | None:
    """Why the driver never loads ``container`` as a module of its own, or None when it does
    (``stub``: the caller found it to be nvcc's device-link stub, :func:`link_stub_index`)."""
    if not container.entries:
        return "empty container (nothing to load)"
    if container.relocatable or any(
        e.kind is CodeKind.SASS and e.relocatable for e in container.entries
    ):
        return (
            "relocatable device code (-rdc): input to a device link, not a loadable module "
            "(the driver answers CUDA_ERROR_NOT_FOUND for its unresolved symbols)"
        )
    if any(e.kind is CodeKind.LTOIR for e in container.entries):
        # LTO-IR exists only for link-time code (-dc / -dlto): such a container is a device
        # library for nvcc -dlink or nvJitLink, not a module (cuSPARSE's .rodata fatbins).
        return "holds LTO-IR: input to a device link (nvcc -dlink, nvJitLink), not a module"
    if stub:
        return STUB_REASON
    return kernel_less_reason(container)


@per_binary
def _counted(binary: Binary) -> tuple[tuple[int, FatbinContainer], ...]:
    stub = link_stub_index(binary)
    return tuple(
        (i, c) for i, c in enumerate(binary.containers) if ignored_reason(c, stub=i == stub) is None
    )


def counted_containers(binary: Binary) -> Iterator[tuple[int, FatbinContainer]]:
    """(index, container) of the containers the runtime loads as modules: everything but
    empty, relocatable, LTO-IR and device-link stub containers (:func:`ignored_reason`)."""
    return iter(_counted(binary))


@dataclass(frozen=True)
class ContainerVerdict:
    """One fatbin container on one device.

    ``verdict`` is what the rules say the driver does with the container's bytes (None when
    it holds no SASS or PTX).  ``ignored`` says why a container does not count for its
    library (empty, relocatable, LTO-IR only, nvcc's device-link stub); None when it counts.
    """

    offset: int
    size: int
    section: str | None
    codes: tuple[str, ...]  # entry names in file order: "sm_90", "compute_120"
    verdict: Verdict | None
    reason: str
    chosen: str | None = None  # the entry the driver would use
    ignored: str | None = None

    @property
    def counted(self) -> bool:
        return self.ignored is None and self.verdict is not None


def judge_container(
    container: FatbinContainer,
    device: Arch,
    *,
    cuda: tuple[int, int] | None = None,
    os: str = "linux",
    stub: bool = False,
) -> ContainerVerdict:
    """What the driver does with ``container`` on a GPU that reports CC ``device``, under a
    driver supporting CUDA ``cuda`` (None: not given, its gates assumed met)."""
    entries = container.entries
    # A library holds thousands of containers of a few shapes (cuFFT: 48k of about 20):
    # the verdict depends only on each entry's loading facts, so it is worked out once per
    # shape, device and driver (docs/compat.md#from-containers-to-a-wheel).
    key = (container.shape, device, cuda, os, stub)
    judged = active_memo("containers")
    known = judged.get(key)
    if known is None:
        ignored = ignored_reason(container, stub=stub)
        codes = tuple(e.name for e in entries)
        if not any(e.kind in (CodeKind.SASS, CodeKind.PTX) for e in entries):
            known = (None, ignored or "no code", None, ignored, codes)
        else:
            known = (*_pick(entries, device, cuda, os), ignored, codes)
        if len(judged) >= JUDGED_MAX:
            judged.clear()
        judged[key] = known
    verdict, reason, chosen, ignored, codes = known
    return ContainerVerdict(container.offset, container.size, container.section, codes,
                            verdict=verdict, reason=reason, chosen=chosen, ignored=ignored)


# judge_container's verdicts by container shape, in the active Rules' memo "containers"
# (its own state: a verdict depends on the catalog); cleared when full (a bound on memory).
JUDGED_MAX = 1 << 14


def _pick(
    entries: Iterable[FatbinEntry], device: Arch, cuda: tuple[int, int] | None, os: str
) -> tuple[Verdict, str, str | None]:
    entries = tuple(entries)
    best_sass: tuple[SassFit, FatbinEntry, str] | None = None
    refusals: list[str] = []
    for e in entries:
        if e.kind is not CodeKind.SASS:
            continue
        level, why = sass_fits(e.arch, device)
        if level and (
            best_sass is None or (level, e.arch.number) > (best_sass[0], best_sass[1].arch.number)
        ):
            best_sass = (level, e, why)
        if not level:
            refusals.append(why)
    if best_sass is not None:
        level, e, why = best_sass
        undecodable = codec_gate(e, cuda, os)
        if undecodable is not None:
            return Verdict.DRIVER, undecodable, None
        return (Verdict.NATIVE if level is SassFit.NATIVE else Verdict.COMPATIBLE), why, e.name
    jit: tuple[FatbinEntry, str] | None = None
    gated: tuple[FatbinEntry, str] | None = None
    for e in entries:
        if e.kind is not CodeKind.PTX:
            continue
        fits, why = ptx_fits(e.arch, device)
        if not fits:
            refusals.append(why)
            continue
        ok, isa_why = ptx_isa_gate(e.code_version, cuda, os)
        if ok and (jit is None or e.arch.number > jit[0].arch.number):
            jit = (e, f"{why}; {isa_why}")
        elif not ok and gated is None:
            gated = (e, f"{why}, but {isa_why}")
    if jit is not None:
        e, why = jit
        undecodable = codec_gate(e, cuda, os)
        if undecodable is not None:
            return Verdict.DRIVER, undecodable, None
        reason = f"no cubin for CC {device.cc}: the first load JIT-compiles {e.name} ({why})"
        return Verdict.PTX_JIT, reason, e.name
    if gated is not None:
        return Verdict.DRIVER, gated[1], None
    if any(e.kind is CodeKind.LTOIR for e in entries):
        refusals.append("LTO-IR is never loaded by the driver")
    reason = f"nothing for CC {device.cc}: " + "; ".join(_grouped(refusals))
    return Verdict.NO_CODE, reason, None


# The verb of a refusal (sass_fits, ptx_fits) when several codes share it.
_PLURAL = (("does not ", "do not "), ("needs ", "need "), ("runs ", "run "), ("is ", "are "),
           ("covers ", "cover "))


def _grouped(refusals: list[str]) -> list[str]:
    """Refusals that differ only in the code they name, said once: ``sm_70, sm_75 do not
    run across majors (CC 6.1)``, not the same clause for every architecture."""
    groups: dict[str, list[str]] = {}
    for why in dict.fromkeys(refusals):
        code, _, rest = why.partition(" ")
        if not re.fullmatch(r"(sm|compute)_[0-9]+[af]?", code) or not rest:
            code, rest = "", why
        groups.setdefault(rest, []).append(code)
    out: list[str] = []
    for rest, codes in groups.items():
        if len(named := [c for c in codes if c]) < 2:
            out.append(f"{named[0]} {rest}" if named else rest)
            continue
        for one, many in _PLURAL:
            if rest.startswith(one):
                rest = many + rest[len(one):]
                break
        out.append(f"{', '.join(named)} {rest}")
    return out

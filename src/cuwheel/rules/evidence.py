"""What the bytes say about how a library was built, for the roll-up (rules/rollup.py):
which toolkit could have built it, whether it keeps kernels per architecture, whether it
is a module of arch-specific code, and which libraries are run-time alternatives of one
another (docs/compat.md#from-containers-to-a-wheel)."""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.cuda import Release
from cuwheel.knowledge.linkage import runtime_majors
from cuwheel.knowledge.thresholds import load_thresholds
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, Toolkit
from cuwheel.rules._memo import per_binary
from cuwheel.rules.loading import counted_containers

__all__ = [
    "DISPATCH_ARCH_SETS",
    "FLOOR_SHARE",
    "Alternative",
    "alternatives",
    "build_floor",
    "builder_knows",
    "core_library",
    "dispatches_by_arch",
    "group_label",
    "per_architecture_build",
    "release_at_or_below",
    "specialised_only",
    "split_path",
]

# A library whose containers come in this many different SASS architecture sets picks its
# kernels by architecture at run time (when its toolkit knew the GPU).  Measured on real
# wheels: data/thresholds.toml [dispatch_arch_sets] says on which (docs/compat.md).
DISPATCH_ARCH_SETS: int = load_thresholds().dispatch_arch_sets



def specialised_only(binary: Binary) -> bool:
    """Every SASS / PTX entry of the binary is arch- or family-specific (``sm_90a``,
    ``sm_100f``): a module built for those GPUs alone (vLLM's FlashMLA, flash-attention's
    Hopper module), which its package loads only there."""
    entries = [
        e for c in binary.containers for e in c.entries if e.kind in (CodeKind.SASS, CodeKind.PTX)
    ]
    return bool(entries) and all(e.arch.variant for e in entries)


# The lowest architecture a library's build starts at: the smallest first architecture that
# at least this share of its containers with plain code start at.  Measured on vLLM's and
# faiss-gpu's libraries: data/thresholds.toml [floor_share].
FLOOR_SHARE: float = load_thresholds().floor_share


@per_binary
def build_floor(binary: Binary) -> Arch | None:
    """The architecture the library's build starts at (:data:`FLOOR_SHARE`); None when no
    counted container has plain code."""
    firsts: dict[int, int] = {}
    for _, c in counted_containers(binary):
        plain = [e.arch.number for e in c.entries
                 if e.kind in (CodeKind.SASS, CodeKind.PTX) and not e.arch.variant]
        if plain:
            firsts[min(plain)] = firsts.get(min(plain), 0) + 1
    total = sum(firsts.values())
    for number in sorted(firsts):
        if firsts[number] >= FLOOR_SHARE * total:
            return Arch(number)
    return None


@per_binary
def _sass_sets(binary: Binary) -> set[frozenset[Arch]]:
    return {
        frozenset(e.arch for e in c.entries if e.kind is CodeKind.SASS)
        for _, c in counted_containers(binary)
    }


def dispatches_by_arch(binary: Binary) -> bool:
    """The binary's counted containers come in at least :data:`DISPATCH_ARCH_SETS`
    different SASS architecture sets: a library that keeps kernels per architecture and
    chooses among them."""
    return len(_sass_sets(binary)) >= DISPATCH_ARCH_SETS


def per_architecture_build(binary: Binary, device: Arch) -> bool:
    """Every counted container with plain SASS holds exactly one plain architecture, there
    are several of them, and one of them is exactly this GPU's: the library builds each
    architecture apart (cuFFT, cuSPARSE), so the kernels of a container for another GPU are
    also in this GPU's own container."""
    archs = _one_plain_each(binary)
    return archs is not None and len(archs) > 1 and device.base in archs


@per_binary
def _one_plain_each(binary: Binary) -> frozenset[Arch] | None:
    """The plain SASS architectures of the counted containers when each holds at most one;
    None when some container holds several."""
    archs: set[Arch] = set()
    for _, c in counted_containers(binary):
        plain = {e.arch for e in c.entries if e.kind is CodeKind.SASS and not e.arch.variant}
        if len(plain) > 1:
            return None
        archs |= plain
    return frozenset(archs)


def _first_release(device: Arch) -> Release | None:
    """The first CUDA release whose nvcc builds for CC ``device``."""
    for r in active_catalog().releases:
        if any(a.number == device.number for a in r.sass):
            return r
    return None


def release_at_or_below(version: tuple[int, int]) -> Release | None:
    below = [r for r in active_catalog().releases if r.version <= version]
    return below[-1] if below else None


def builder_knows(binary: Binary, device: Arch) -> tuple[bool | None, str]:
    """Could the toolkit that built ``binary`` know CC ``device`` (so that its host code
    could pick kernels around it)?  True / False / None (nothing tells), and the evidence.

    The newest toolkit that built it is at least each of: the toolkit recorded in its
    cubins, the release of its newest PTX ISA, the first release of the CUDA runtime major
    it links (``libcudart.so.12`` comes from a 12.x toolkit), and one that builds for the
    newest GPU it has code for.  When that lower bound knows the GPU: True.  When it does
    not and the cubins' notes or the runtime major bound it from above: False."""
    first = _first_release(device)
    newest, tks, isa = _builder_facts(binary)
    if newest is not None and newest >= device.number:
        return True, f"it carries code for CC {device.cc} or newer"
    if first is None:
        return False, f"no CUDA release in the catalog builds for CC {device.cc}"
    bounds: list[tuple[tuple[int, int], str]] = []  # (lower bound, evidence)
    if tks:
        tk = max(tks, key=lambda t: (t.major, t.minor))
        bounds.append(((tk.major, tk.minor), f"its cubins were built by CUDA {tk}"))
    isa_rel = active_catalog().release_for_ptx_isa(isa) if isa is not None else None
    if isa_rel is not None:
        bounds.append((isa_rel.version, f"its PTX ISA needs CUDA {isa_rel.name}+"))
    majors = [m for m, _ in runtime_majors(binary)]
    same = [r for r in active_catalog().releases if majors and r.major == max(majors)]
    if same:
        bounds.append((min(r.version for r in same), f"it links the CUDA {max(majors)} runtime"))
    if not bounds:
        return None, "nothing tells which toolkit built it"
    low, why = max(bounds)
    came = f"CC {device.cc} came with CUDA {first.name}"
    if low >= first.version:
        return True, f"{why}; {came}"
    # bounded from above: a toolkit note names the release; a runtime major its last one
    upper = [(t.major, t.minor) for t in tks]
    if same:
        upper.append(max(r.version for r in same))
    if upper and max(upper) < first.version:
        return False, f"{why}; {came}"
    return None, f"{why}, which may be before {came.split(' came')[0]}"


@per_binary
def _builder_facts(
    binary: Binary,
) -> tuple[int | None, tuple[Toolkit, ...], tuple[int, int] | None]:
    """What :func:`builder_knows` reads off the counted containers, whatever the GPU: the
    newest architecture with SASS or PTX, the toolkits the containers and entries record,
    the newest PTX ISA."""
    entries = [e for _, c in counted_containers(binary) for e in c.entries]
    numbers = [e.arch.number for e in entries if e.kind in (CodeKind.SASS, CodeKind.PTX)]
    tks = [c.toolkit for _, c in counted_containers(binary) if c.toolkit is not None]
    tks += [e.toolkit for e in entries if e.toolkit is not None]
    isas = [e.code_version for e in entries if e.kind is CodeKind.PTX]
    return (max(numbers) if numbers else None), tuple(tks), (max(isas) if isas else None)



# ---------------------------------------------------------------------------- alternatives

# bitsandbytes' libbitsandbytes_cuda128.so / _rocm63.so / _cpu.so, and the like: one stem,
# a backend and version suffix (docs/compat.md#run-time-alternatives).
# A versioned backend (cuda128, rocm63, xpu2025: the version is what picks one), or an
# unversioned cpu / mps fallback of the same stem (libbitsandbytes_cpu.so).  torch's
# libtorch_cuda.so / libtorch_cuda_linalg.so / libtorch_cpu.so are no such set: no version.
_ALTERNATIVE = re.compile(
    r"^(?P<stem>.+?)_(?:(?P<backend>cuda|rocm|hip|xpu)(?P<version>[0-9]{2,4})"
    r"(?P<flavor>(?:_[a-z]+)*)|(?P<fallback>cpu|mps))"
    r"(?P<ext>\.(?:so|dll|dylib|pyd)(?:\.[0-9]+)*)$",
    re.ASCII,
)


@dataclass(frozen=True)
class Alternative:
    """One library of a set of run-time alternatives."""

    path: str
    backend: str  # "cuda", "rocm", ...
    cuda: tuple[int, int] | None  # the CUDA version its name says (cuda128 -> 12.8)
    flavor: str  # "_nocublaslt" and the like, "" for none


def split_path(path: str) -> tuple[str, str]:
    """(folder with its separator, file name) of a library path (``x.whl!a/b.so``)."""
    cut = max(path.rfind("/"), path.rfind("!"), path.rfind("\\"))
    return path[: cut + 1], path[cut + 1 :]


def alternatives(paths: Iterable[str]) -> tuple[tuple[Alternative, ...], ...]:
    """Groups (two or more, same directory and stem) of libraries that a package loads
    one of at run time, chosen by the CUDA (or ROCm ...) version of the process."""
    groups: dict[tuple[str, str, str], list[Alternative]] = {}
    for p in paths:
        folder, base = split_path(p)
        m = _ALTERNATIVE.match(base)
        if m is None:
            continue
        backend = m["backend"] or m["fallback"]
        ver = m["version"] or ""
        cuda = (int(ver[:-1]), int(ver[-1])) if m["backend"] == "cuda" else None
        groups.setdefault((folder, m["stem"], m["ext"]), []).append(
            Alternative(p, backend, cuda, m["flavor"] or "")
        )
    # a set: at least two versioned members (a lone _cuda12x.so beside _cpu.so picks nothing)
    return tuple(
        tuple(g) for g in groups.values() if sum(1 for a in g if a.backend not in _FALLBACK) > 1
    )


_FALLBACK = ("cpu", "mps")


def group_label(path: str) -> str:
    """``libbitsandbytes_*.so``: the name a set of alternatives goes by."""
    base = split_path(path)[1]
    m = _ALTERNATIVE.match(base)
    return f"{m['stem']}_*{m['ext']}" if m else base


def core_library(binaries: Iterable[Binary]) -> str | None:
    """The path of a wheel's core library: the one library with device code that every
    other binary linking (through DT_NEEDED, directly or not) an in-wheel library with
    device code reaches; of several such, the one that reaches the others (torch:
    libtorch_cuda.so, which libtorch.so, libtorch_python.so and libtorch_cuda_linalg.so
    all reach, and which itself links libtorch_nvshmem.so).  None when no library is
    reached by at least two others, or when several are and none reaches the rest.
    Importing the package loads it, so a GPU it has no code for is one the wheel does
    not run on (docs/compat.md#wheel-verdicts)."""
    elf = [b for b in binaries if b.format in ("elf", "pe") and b.archive is None]
    by_name: dict[str, Binary] = {}
    for b in elf:
        by_name.setdefault(b.path.replace("\\", "/").rsplit("/", 1)[-1].lower(), b)
        if b.soname:
            by_name.setdefault(b.soname.lower(), b)
    edges = {b.path: {by_name[n.lower()].path for n in b.needed if n.lower() in by_name}
             for b in elf}
    reach: dict[str, set[str]] = {}
    for start in edges:  # every binary's in-wheel closure (a few dozen binaries at most)
        seen: set[str] = set()
        todo = list(edges[start])
        while todo:
            p = todo.pop()
            if p not in seen:
                seen.add(p)
                todo.extend(edges.get(p, ()))
        seen.discard(start)
        reach[start] = seen
    device = {b.path for b in elf if b.has_device_code}
    users = [p for p in edges if reach[p] & device]
    cores = [d for d in device
             if sum(1 for u in users if d in reach[u]) >= 2
             and all(d in reach[u] for u in users if u != d and u not in reach[d])]
    top = [c for c in cores if all(o == c or o in reach[c] for o in cores)]
    return top[0] if len(top) == 1 else None

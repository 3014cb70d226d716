"""What the facts of an error text mean against the catalog: which package and CUDA major
ship a library (data/packages.toml), which manylinux policy first allows a symbol version
(data/manylinux.toml), which GPU an architecture is and which toolkits know it (gpus.toml,
cuda.toml), which driver a CUDA major needs (cuda.toml [[minor_compat]]).

A resolver takes the facts its rule rests on and all the text's facts and returns a
:class:`Resolution` (the evidence in words, what to install), or None when, read against
the catalog, the rule does not apply after all.  data/errors.toml names resolvers by their
key in :data:`RESOLVERS`; a new kind of fact answer (the torch ABI of a ``_ZN3c10`` symbol,
NVIDIA's versioned symbols) is one more function here and one more rule there.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from cuwheel.doctor.facts import Fact

__all__ = ["RESOLVERS", "Resolution"]


@dataclass(frozen=True)
class Resolution:
    because: tuple[str, ...] = ()  # what the facts mean, one sentence each
    install: tuple[str, ...] = ()  # distributions / requirements that would supply the fix
    sure: bool | None = None  # None: the rule's own
    fix: str | None = None  # a fix more precise than the rule's
    title: str | None = None  # a title naming what the facts name, instead of the rule's


Resolver = Callable[[Sequence[Fact], Sequence[Fact]], Resolution | None]


def _of(facts: Sequence[Fact], kind: str, detail: str | None = None) -> list[Fact]:
    return [f for f in facts if f.kind == kind and (detail is None or f.detail == detail)]


def _os(facts: Sequence[Fact]) -> str | None:
    oses = [f.value for f in _of(facts, "os")]
    return "windows" if "windows" in oses else "linux" if oses else None


def _majors(facts: Sequence[Fact]) -> list[int]:
    out: list[int] = []
    for f in _of(facts, "cuda"):
        m = int(f.value.split(".")[0])
        if m not in out:
            out.append(m)
    return out


# -- libraries ----------------------------------------------------------------------
def _stem(name: str) -> str:
    """``cudart64_101.dll`` -> ``cudart64``, ``libcudnn.so.5`` -> ``libcudnn``."""
    base = re.sub(r"\.so(\.\d+)*$|\.dll$", "", name, flags=re.I)
    return re.sub(r"[_.\d]+$", "", base).lower()


def _component_by_stem(name: str) -> tuple[str, str | None] | None:
    """(component name, the version the name spells) for a library no recorded major
    ships: ``cudart64_101.dll`` -> ("cudart", "10.1")."""
    from cuwheel.knowledge.active import active_catalog

    stem = _stem(name)
    for c in active_catalog().components:
        if any(_stem(p.replace("*", "")) == stem for p in c.linux + c.windows):
            digits = re.findall(r"\d+", name.rsplit(".dll", 1)[0].split(".so", 1)[-1]
                                if ".so" in name else name.split("64_", 1)[-1])
            version = None
            if digits:
                d = digits[-1] if ".so" in name else digits[0]
                version = f"{d[:-1]}.{d[-1]}" if len(d) == 3 else d
            return c.name, version
    return None


# Libraries whose file name spells their own major, not CUDA's: cudnn64_8.dll is cuDNN 8
# (nvidia-cudnn-cu12 ships cuDNN 8 and 9 under one name), libnccl.so.2 NCCL 2.
_OWN_MAJOR = {"cudnn": re.compile(r"(?:64_|\.so\.)(\d{1,2})(?:\.dll)?$", re.I)}


def _own_major(component: str, name: str) -> str | None:
    p = _OWN_MAJOR.get(component)
    m = p.search(name) if p else None
    return m[1] if m else None


def _library(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    from cuwheel.knowledge.active import active_catalog

    because: list[str] = []
    install: list[str] = []
    sure = True
    majors = _majors(facts)
    names = [f for f in used if f.kind in ("library", "component")]
    for f in names:
        if f.kind == "library" and active_catalog().is_driver_library(f.value):
            continue
        if f.kind == "component":
            comps = [c for c in active_catalog().components if c.name == f.value]
        else:
            comps = list(active_catalog().find_library(f.value))
        if majors:
            comps = [c for c in comps if c.major in majors] or comps
        if comps:
            ms = ", ".join(f"CUDA {c.major}: {c.distribution}" for c in comps)
            own = _own_major(comps[0].name, f.value)
            mine = f" {own}" if own else ""
            because.append(f"{f.value}: {ms}." if f.kind == "component" else
                           f"{f.value} is {comps[0].name}{mine} ({ms}).")
            pin = f"=={own}.*" if own else ""
            install += [c.distribution + pin for c in comps if c.distribution + pin not in install]
            continue
        found = _component_by_stem(f.value) if f.kind == "library" else None
        if found:
            comp, version = found
            known = sorted({c.major for c in active_catalog().components if c.name == comp})
            v = f" {version}" if version else ""
            because.append(f"{f.value} is {comp}{v}, a release no NVIDIA wheel the catalog "
                           f"knows ships (its wheels are of CUDA {', '.join(map(str, known))}):"
                           " install that release, or the tool's build for the CUDA you have.")
        elif "missing" in (f.detail or ""):
            because.append(f"{f.value} is no CUDA library the catalog knows.")
            sure = False
    if not because and not [f for f in used if f.kind == "symptom"]:
        return None  # every library named is the driver's: the driver rule's
    if not because:
        because.append("the text names no library: the import of a compiled module failed "
                       "for a DLL it needs.")
        sure = False
    for f in _of(facts, "os-error"):
        because.append("Windows error 127: the DLL was found but lacks a function the caller "
                       "needs (another version of it)." if f.value == "127" else
                       "Windows error 126: the DLL (or one it needs) was not found.")
    fix = " or ".join(f"pip install {r}" for r in install) if install else None
    driver = active_catalog().is_driver_library
    named = [f.value for f in names if not (f.kind == "library" and driver(f.value))]
    title = f"{', '.join(named[:2])} not found by the loader" if named else None
    return Resolution(tuple(because), tuple(install), sure, fix, title)


def _driver_library(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    from cuwheel.knowledge.active import active_catalog

    libs = [f for f in used if f.kind == "library"]
    driver = active_catalog().is_driver_library
    if libs and not any(driver(f.value) for f in libs) and len(libs) == len(used):
        return None
    because = [f"{f.value} is the NVIDIA driver's, never a wheel's." for f in libs
               if active_catalog().is_driver_library(f.value)]
    if any(f.value == "wsl" for f in _of(facts, "os")):
        because.append("WSL: the driver's libraries are in /usr/lib/wsl/lib.")
    return Resolution(tuple(because))


# -- symbol versions -------------------------------------------------------------------
def _symbol_version(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    from cuwheel.knowledge.tagpolicy import load_tag_policies

    policies = load_tag_policies()
    arch = "aarch64" if any("aarch64" in f.quote for f in facts) else "x86_64"
    because: list[str] = []
    glibc: tuple[int, ...] | None = None
    for f in used:
        if f.kind != "version-node":
            continue
        asked = f" of {f.detail}" if f.detail else ""
        p = policies.oldest_allowing("manylinux", arch, f.value)
        if p is not None:
            because.append(f"{f.value}{asked}: {p.name} is the oldest manylinux policy "
                           "allowing it.")
        elif policies.governs("manylinux", arch, f.value):
            because.append(f"{f.value}{asked} is newer than every manylinux policy allows: a "
                           "build with a toolchain newer than any manylinux image's.")
        if f.value.startswith("GLIBC_"):
            v = tuple(int(x) for x in f.value[6:].split("."))
            glibc = max(glibc or v, v)
    title = None
    if glibc:
        need = ".".join(map(str, glibc))
        because.append(f"so this system's glibc is older than {need}, the newest version the "
                       "binary asks for.")
        title = f"the system's glibc is older than {need}, which a binary needs"
    if because and arch == "x86_64" and not any("x86_64" in f.quote for f in facts):
        because.append("(policies of x86_64: the text names no architecture)")
    return Resolution(tuple(because), title=title)


# -- torch builds ----------------------------------------------------------------------
def _torch_build(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    because = []
    for f in _of(facts, "package"):
        if f.value.endswith("+cpu"):
            because.append(f"{f.value.lstrip('=')} is a CPU-only build.")
        elif "+cu" in f.value:
            because.append(f"{f.value.lstrip('=')} is a CUDA build.")
    return Resolution(tuple(because))


# -- the driver ----------------------------------------------------------------------
def _driver_floor(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    from cuwheel.knowledge.active import active_catalog

    os = _os(facts) or "linux"
    because: list[str] = []
    drivers = [f.value for f in _of(facts, "driver")]
    ptx = any("ptx" in u.value.lower() for u in used if u.kind == "cuda-error")
    if ptx:  # PTX needs the driver of the toolkit that compiled it, not the runtime's floor
        for f in _of(facts, "cuda"):
            if "." not in f.value:
                continue  # a major alone ("xla_cuda12") names no release
            try:
                r = active_catalog().release(f.value)
            except (LookupError, ValueError):  # a release the catalog does not know
                continue
            need = r.min_driver(os)
            if need:
                because.append(f"PTX of CUDA {r.name} needs driver >= {need} ({os}).")
    else:
        for m in _majors(facts) or [12, 13]:
            floor = active_catalog().minor_compat_floor(m)
            need = None if floor is None else floor.floor(os)
            if need:
                because.append(f"a CUDA {m} runtime needs driver >= {need} ({os}).")
    if drivers:
        because.append(f"the text shows driver {', '.join(drivers)}.")
    return Resolution(tuple(because))


def _forward_compat(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    from cuwheel.knowledge.active import active_catalog

    fc = active_catalog().forward_compat
    because = [f"forward compatibility applies to {fc.applies_to} only."] if fc else []
    return Resolution(tuple(because))


# -- GPU architectures ------------------------------------------------------------------
def _gpu_arch(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    from cuwheel.knowledge.active import active_catalog
    from cuwheel.model.arch import Arch

    archs = _of(facts, "arch")
    asked = [f for f in archs if f.detail in ("gpu", "ptxas")] or archs[:1]
    built = [f.value for f in archs if f.detail == "built"]
    because: list[str] = []
    for f in asked:
        try:
            arch = Arch.parse(f.value)
        except ValueError:
            continue
        gpu = active_catalog().gpu_for_arch(arch)
        names = ", ".join(p.name for p in gpu.products[:3]) if gpu else "no GPU the catalog knows"
        rels = active_catalog().releases_supporting(arch)
        known = (f"CUDA {rels[0].name} to {rels[-1].name}" if rels and rels[-1].name != "13.5"
                 else f"CUDA {rels[0].name} and later" if rels else "no CUDA release")
        because.append(f"{f.value} is compute capability {arch.cc} ({names}); nvcc builds "
                       f"it in {known}.")
        if built and f.value not in built:
            because.append(f"the build carries {' '.join(built)}: not {f.value}.")
    return Resolution(tuple(because))


def _first_release(f: Fact, library: str | None) -> str | None:
    """'S is first exported by DIST R (REQ)' from the NVIDIA symbol histories that DEP013
    reads (docs/checks.md#dep013); None when the data does not know the symbol."""
    from cuwheel.knowledge.nvidia_symbols import first_release_exporting

    if library is None or (rel := first_release_exporting(library, f.value)) is None:
        return None
    return rel.requirement()


def _nvjitlink(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    because = []
    install: list[str] = []
    for f in used:
        m = re.search(r"_(\d{2})_(\d{1,2})$", f.value)
        lib = f.detail if f.detail and f.detail.startswith("libnvJitLink") else (
            f"libnvJitLink.so.{m[1]}" if m else None)
        if f.kind == "symbol" and (req := _first_release(f, lib)) is not None:
            because.append(f"{f.value} is exported by {lib} from {req.replace('>=', ' ')} "
                           f"on: the loaded libnvJitLink is older.")
            install.append(req)
        elif m:
            because.append(f"{f.value} is nvJitLink's entry point of CUDA {m[1]}.{m[2]}: the "
                           f"loaded libnvJitLink is older than {m[1]}.{m[2]}.")
    if not install:
        if any("_12_" in f.value or f.detail == "libnvJitLink.so.12" for f in used):
            install.append("nvidia-nvjitlink-cu12")
        if any("_13_" in f.value or f.detail == "libnvJitLink.so.13" for f in used):
            install.append("nvidia-nvjitlink")
        return Resolution(tuple(because), tuple(install))
    fix = f"pip install '{install[0]}'" if len(install) == 1 else None
    return Resolution(tuple(because), tuple(dict.fromkeys(install)), fix=fix)


def _symbol_release(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    """An undefined symbol asked with an NVIDIA library's version node: the release of that
    library that first exports it (the generic answer stays when the data does not know)."""
    because: list[str] = []
    install: list[str] = []
    for f in _of(used, "symbol"):
        if (req := _first_release(f, f.detail)) is not None:
            because.append(f"{f.value} is exported by {f.detail} from "
                           f"{req.replace('>=', ' ')} on: the copy the loader found is older.")
            install.append(req)
    if not install:
        return Resolution()
    fix = f"pip install '{install[0]}'" if len(install) == 1 else None
    return Resolution(tuple(because), tuple(dict.fromkeys(install)), sure=True, fix=fix)


# -- torch's C++ ABI ---------------------------------------------------------------------
def _torch_abi(used: Sequence[Fact], facts: Sequence[Fact]) -> Resolution | None:
    """Which PyPI torch releases export the symbol the extension asked for (the same
    table DEP011 and ENV009 read, docs/compat.md#torch-abi)."""
    from cuwheel.knowledge.torchabi import load_torch_abi, torch_releases_defining
    from cuwheel.rules.torch_abi import loadable_span, requirement_for

    because: list[str] = []
    install: list[str] = []
    known = sorted({r.version for r in load_torch_abi().releases})
    for f in _of(used, "symbol"):
        releases = torch_releases_defining(f.value)
        if not releases:
            because.append(f"no torch release on PyPI exports {f.value}: the extension was "
                           f"built against a source or nightly build of torch.")
            continue
        versions = sorted({r.version for r in releases})
        platforms = sorted({r.platform for r in releases})
        because.append(f"{f.value} is exported by torch {loadable_span(versions)} "
                       f"({', '.join(platforms)}): the installed torch is another release.")
        if (req := requirement_for(versions, known)) is not None and req not in install:
            install.append(req)
    if not because:
        return None
    fix = (f"pip install '{install[0]}' (the releases that export it)" if len(install) == 1
           else None)
    return Resolution(tuple(because), tuple(install), fix=fix)


RESOLVERS: dict[str, Resolver] = {
    "library": _library,
    "driver-library": _driver_library,
    "symbol-version": _symbol_version,
    "torch-build": _torch_build,
    "driver-floor": _driver_floor,
    "forward-compat": _forward_compat,
    "gpu-arch": _gpu_arch,
    "nvjitlink": _nvjitlink,
    "torch-abi": _torch_abi,
    "symbol-release": _symbol_release,
}

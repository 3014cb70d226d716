"""Will this code run on GPU X with driver Y: CUDA's loading rules applied to inventory facts.

Pure functions over :mod:`cuwheel.inventory` facts and the :mod:`cuwheel.catalog`; nothing
here reads files or talks to a GPU.  The rules are those of the fact sheet
(``cuda-facts.md`` section 3, verified on an H200 with ``cuModuleLoadData``):

* cubin ``sm_XY`` (and ``sm_XYf``, the same cubin) runs on CC X.Y' with Y' >= Y, same major;
* cubin ``sm_XYa`` runs on CC X.Y only;
* PTX ``compute_XY`` JIT-compiles on every CC >= X.Y when the driver knows its PTX ISA
  (ISA -> the toolkit release that introduced it -> that release's driver);
* PTX ``compute_XYf`` within the family (catalog ``families``), ``compute_XYa`` on X.Y only;
* a binary linked against CUDA runtime major M needs a driver at or above M's
  minor-version-compatibility floor.

The unit is the fatbin container (what the runtime registers and the driver loads).  How
containers roll up into a library and a wheel verdict is documented in ``docs/compat.md``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum

from cuwheel import catalog
from cuwheel.arch import Arch, ArchSpellingError
from cuwheel.errors import CuwheelError
from cuwheel.inventory import Binary, CodeKind, FatbinContainer, FatbinEntry, Inventory, Source

__all__ = [
    "CompatError",
    "ContainerVerdict",
    "Driver",
    "LibraryVerdict",
    "Matrix",
    "RuntimeCheck",
    "SourceVerdict",
    "Target",
    "TargetReport",
    "Verdict",
    "binary_os",
    "catalog_targets",
    "driver_cuda_version",
    "effective_arch",
    "evaluate",
    "evaluate_binary",
    "evaluate_container",
    "family_members",
    "link_stub_index",
    "matrix",
    "parse_driver",
    "runtime_check",
    "runtime_majors",
    "target_for_cc",
    "targets_for_gpu",
]


class CompatError(CuwheelError):
    """A compat question cannot be asked as given (unknown GPU, bad driver version ...)."""


class Verdict(str, Enum):
    """What happens when code meets a GPU, best first; ``rank`` orders them."""

    HOST = "host code only"  # links a CUDA runtime but carries no device code
    NATIVE = "native SASS"
    COMPATIBLE = "compatible SASS"
    PTX_JIT = "PTX JIT"
    PARTIAL = "partial"  # some containers run, others have no code (library level only)
    DRIVER = "driver too old"
    NO_CODE = "no code"

    @property
    def rank(self) -> int:
        return list(Verdict).index(self)

    @property
    def runs(self) -> bool:
        """Loads on the GPU (PARTIAL: some of the library's code does; see docs/compat.md)."""
        return self.rank <= Verdict.PARTIAL.rank

    @property
    def short(self) -> str:
        return _SHORT[self]


_SHORT = {
    Verdict.HOST: "host",
    Verdict.NATIVE: "native",
    Verdict.COMPATIBLE: "compat",
    Verdict.PTX_JIT: "JIT",
    Verdict.PARTIAL: "partial",
    Verdict.DRIVER: "driver",
    Verdict.NO_CODE: "-",
}


def _worst(verdicts: Iterable[Verdict]) -> Verdict | None:
    return max(verdicts, key=lambda v: v.rank, default=None)


# ---------------------------------------------------------------------------- driver


def _vt(version: str) -> tuple[int, ...]:
    return tuple(int(p) for p in version.split("."))


@dataclass(frozen=True)
class Driver:
    """The driver of the target machine: its version ("580.65.06"), the CUDA version its
    driver API reports ((13, 0)), or both (NVML gives both)."""

    version: str | None = None
    cuda: tuple[int, int] | None = None

    def __post_init__(self) -> None:
        if self.version is None and self.cuda is None:
            raise ValueError("a Driver needs a version or a CUDA version")

    def __str__(self) -> str:
        parts = []
        if self.version:
            parts.append(f"driver {self.version}")
        if self.cuda:
            parts.append(f"CUDA {self.cuda[0]}.{self.cuda[1]}")
        return " / ".join(parts)


def parse_driver(text: str) -> Driver:
    """``"580.65.06"`` (a driver version: first number >= 100) or ``"13.0"`` (the CUDA version
    the driver supports, as ``nvidia-smi`` prints it).  Raises CompatError."""
    t = text.strip()
    if not re.fullmatch(r"\d+(\.\d+){1,3}", t):
        raise CompatError(
            f"--driver takes a driver version ('580.65.06') or a CUDA version ('13.0'), "
            f"got {text!r}"
        )
    parts = _vt(t)
    if parts[0] >= 100:
        return Driver(version=t)
    if len(parts) != 2:
        raise CompatError(f"a CUDA driver version is 'MAJOR.MINOR' ('13.0'), got {text!r}")
    return Driver(cuda=(parts[0], parts[1]))


def driver_cuda_version(driver: Driver, os: str = "linux") -> tuple[int, int] | None:
    """The CUDA version a driver supports: given, or the newest release whose minimum
    driver for ``os`` the version reaches.  None when it cannot be placed."""
    if driver.cuda is not None:
        return driver.cuda
    assert driver.version is not None
    have = _vt(driver.version)
    best: tuple[int, int] | None = None
    for r in catalog.releases():
        if os == "windows" and r.driver_windows is not None:
            reached = _vt(r.driver_windows) <= have
        elif os == "windows" and r.driver_linux is not None:
            # Windows minimum not tabulated (13.x): both OSes share the driver branch (R580).
            reached = _vt(r.driver_linux)[:1] <= have[:1]
        elif r.driver_linux is not None:
            reached = _vt(r.driver_linux) <= have
        else:
            continue
        if reached:
            best = r.version
    return best


def _min_driver(driver_version: str | None, cuda: tuple[int, int] | None, os: str) -> str | None:
    """A lower bound for the driver version: given, or the minimum of its CUDA release."""
    if driver_version is not None:
        return driver_version
    if cuda is None:
        return None
    try:
        r = catalog.release(cuda)
    except LookupError:
        return None
    return r.driver_windows if os == "windows" else r.driver_linux


# ---------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """A GPU to ask about: its compute capability as current drivers report it, a label
    ("H200", "sm_90", "GPU 0: NVIDIA H200") and optionally the driver it runs."""

    arch: Arch  # no variant
    label: str
    driver: Driver | None = None
    family: str | None = None

    def __post_init__(self) -> None:
        if self.arch.variant:
            raise ValueError(f"a target is a compute capability, not {self.arch}")

    def with_driver(self, driver: Driver | None) -> Target:
        return Target(self.arch, self.label, driver, self.family)


def _canonical(arch: Arch) -> tuple[Arch, str | None]:
    """Map a renamed CC to its current name (10.1 -> 11.0, Thor)."""
    for rn in catalog.renames():
        if arch == rn.old.base:
            return rn.new.base, (
                f"CC {arch.cc} is {rn.new.base.cc} from CUDA {rn.first_release_with_new} on "
                f"({rn.note or 'renamed'})"
            )
    return arch, None


def target_for_cc(text: str, driver: Driver | None = None) -> Target:
    """``"8.9"``, ``"sm_89"``, ``"89"`` -> a Target; raises CompatError."""
    try:
        arch = Arch.parse(text)
    except ArchSpellingError as exc:
        raise CompatError(f"--cc takes a compute capability ('8.9', 'sm_89'): {exc}") from exc
    if arch.variant:
        raise CompatError(f"--cc takes a compute capability, not a variant target: {text!r}")
    arch, _ = _canonical(arch)
    gpu = catalog.gpu_for_arch(arch)
    return Target(arch, f"sm_{arch.number}", driver, gpu.family if gpu else None)


def targets_for_gpu(query: str, driver: Driver | None = None) -> tuple[Target, ...]:
    """GPUs of the catalog that ``query`` names ("RTX 4090", "GB200", "Blackwell"): exact
    hits if any, else every hit; one Target per compute capability.  Raises CompatError."""
    matches = catalog.find_gpus(query)
    if not query.strip() or not matches:
        raise CompatError(f"no GPU in the catalog matches {query!r} (try 'cuwheel gpus')")
    exact = [m for m in matches if m.exact]
    out: list[Target] = []
    for m in exact or matches:
        names = ", ".join(p.name for p in m.products[:3]) + (", ..." if len(m.products) > 3 else "")
        label = f"{names} (CC {m.gpu.cc})" if names else f"{m.gpu.family} (CC {m.gpu.cc})"
        out.append(Target(m.gpu.arch, label, driver, m.gpu.family))
    return tuple(sorted(out, key=lambda t: t.arch))


def effective_arch(target: Target, os: str = "linux") -> tuple[Arch, str | None]:
    """The CC the device reports under the target's driver: a CUDA 12.x driver reports
    Thor as 10.1, a 13.x driver as 11.0 (catalog ``rename``).  Unknown driver: current."""
    cuda = driver_cuda_version(target.driver, os) if target.driver else None
    for rn in catalog.renames():
        if target.arch == rn.new.base and cuda is not None:
            first = catalog.parse_version(rn.first_release_with_new)
            if cuda < first:
                return rn.old.base, (
                    f"a CUDA {cuda[0]}.{cuda[1]} driver reports this GPU as CC "
                    f"{rn.old.base.cc} ({rn.old.base.sass}); it is {rn.new.base.sass} from "
                    f"CUDA {rn.first_release_with_new} on"
                )
    return target.arch, None


def _driver_knows_gpu(arch: Arch, cuda: tuple[int, int] | None) -> str | None:
    """A warning when the GPU first appears in a release newer than the driver's CUDA."""
    if cuda is None:
        return None
    supporting = catalog.releases_supporting(arch)
    if supporting and supporting[0].version > cuda:
        return (
            f"{arch.sass} first appears in CUDA {supporting[0].name}; a CUDA "
            f"{cuda[0]}.{cuda[1]} driver may not support this GPU at all"
        )
    return None


# ---------------------------------------------------------------------------- rules


def family_members(arch: Arch) -> tuple[Arch, ...]:
    """The CCs an ``f`` target covers: the union of every release's ``families`` entry
    (``sm_100f`` -> 10.0, 10.3, 10.7).  Unknown f target: its own CC only."""
    members: set[Arch] = set()
    key = Arch(arch.number, "f")
    for r in catalog.releases():
        members.update(m.base for m in r.family(key))
    return tuple(sorted(members)) or (arch.base,)


def _sass_fits(code: Arch, device: Arch) -> tuple[int, str]:
    """(0 no, 1 compatible, 2 native) and why, for a cubin of ``code`` on ``device``."""
    if code.variant == "a":
        if code.number == device.number:
            return 2, f"{code.sass} is built for exactly CC {device.cc}"
        return 0, f"{code.sass} runs on CC {code.cc} only (arch-specific 'a' cubin)"
    name = code.sass + (" (an f cubin is a plain cubin)" if code.variant == "f" else "")
    if code.number == device.number:
        return 2, f"{name} matches CC {device.cc}"
    if code.major == device.major and code.minor < device.minor:
        return 1, f"{name} runs on later minors of CC {code.major}.x"
    if code.major != device.major:
        return 0, f"{name} does not run across majors (CC {device.cc})"
    return 0, f"{name} needs CC >= {code.cc}"


def _ptx_fits(code: Arch, device: Arch) -> tuple[bool, str]:
    if code.variant == "a":
        if code.number == device.number:
            return True, f"{code.ptx} PTX is for exactly CC {device.cc}"
        return False, f"{code.ptx} PTX runs on CC {code.cc} only"
    if code.variant == "f":
        fam = family_members(code)
        if device in fam:
            return True, f"CC {device.cc} is in the {code.sass} family"
        return False, (f"{code.ptx} PTX covers only its family ({', '.join(a.cc for a in fam)})")
    if device.number >= code.number:
        return True, f"{code.ptx} PTX JIT-compiles for any CC >= {code.cc}"
    return False, f"{code.ptx} PTX needs CC >= {code.cc}"


def _ptx_isa_gate(entry: FatbinEntry, cuda: tuple[int, int] | None, os: str) -> tuple[bool, str]:
    """Whether the driver can JIT this PTX's ISA; reason names the release and driver."""
    isa = entry.code_version
    isa_name = f"{isa[0]}.{isa[1]}"
    rel = catalog.release_for_ptx_isa(isa)
    if rel is None:
        return False, f"PTX ISA {isa_name} is newer than every CUDA release known"
    need = rel.driver_windows if os == "windows" else rel.driver_linux
    need_txt = f"CUDA {rel.name} driver" + (f" (>= {need})" if need else "")
    if cuda is None:
        return True, f"PTX ISA {isa_name} needs a {need_txt}; driver not given, assumed"
    if cuda >= rel.version:
        return True, f"PTX ISA {isa_name} needs a {need_txt}: have CUDA {cuda[0]}.{cuda[1]}"
    return False, (
        f"PTX ISA {isa_name} needs a {need_txt}; this driver supports CUDA "
        f"{cuda[0]}.{cuda[1]} (CUDA_ERROR_UNSUPPORTED_PTX_VERSION)"
    )


@dataclass(frozen=True)
class ContainerVerdict:
    """One fatbin container on one target.

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


# nvcc's device-link step puts a kernel-less cubin for the link line's -arch (sm_75 when
# none is given) first in .nv_fatbin of every linked binary; see docs/compat.md.
_STUB_MAX_CUBIN = 4096
_LINKED = frozenset({"shared", "executable", "dll", "exe"})
_FATBIN_SECTIONS = frozenset({".nv_fatbin", ".nv_fatb"})


def link_stub_index(binary: Binary) -> int | None:
    """Index of nvcc's device-link stub container, or None.

    The inventory marks the container nvcc's device-link step wrote (its wrapper record);
    in a binary without relocatable (-rdc) code that container links nothing and is the
    kernel-less stub.  Where a binary records no wrappers, the stub is recognised by shape:
    the first of several ``.nv_fatbin`` containers of a linked binary, holding only small
    cubins.  Binaries with relocatable code are left alone: there the device-link
    container is the real linked image.
    """
    if binary.file_type not in _LINKED or any(c.relocatable for c in binary.containers):
        return None
    marked = [i for i, c in enumerate(binary.containers) if c.device_link]
    if marked:
        stub = binary.containers[marked[0]]
        return marked[0] if all(e.kind is CodeKind.SASS for e in stub.entries) else None
    if any(c.device_link is not None for c in binary.containers):
        return None  # the records name no device-link container
    named = [i for i, c in enumerate(binary.containers) if c.section in _FATBIN_SECTIONS]
    if len(named) < 2:
        return None
    first = binary.containers[named[0]]
    if first.entries and all(
        e.kind is CodeKind.SASS and e.uncompressed_size <= _STUB_MAX_CUBIN for e in first.entries
    ):
        return named[0]
    return None


def _ignored_reason(container: FatbinContainer) -> str | None:
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
    return None


STUB_REASON = "nvcc device-link stub (small cubins, no kernels): never needed at run time"


def evaluate_container(
    container: FatbinContainer, target: Target, os: str = "linux", *, stub: bool = False
) -> ContainerVerdict:
    """The verdict for one container: the best entry the driver would pick on ``target``.
    ``stub``: the caller found it to be nvcc's device-link stub (:func:`link_stub_index`)."""
    codes = tuple(e.name for e in container.entries)
    ignored = _ignored_reason(container) or (STUB_REASON if stub else None)
    base = (container.offset, container.size, container.section, codes)
    if not any(e.kind in (CodeKind.SASS, CodeKind.PTX) for e in container.entries):
        return ContainerVerdict(*base, verdict=None, reason=ignored or "no code", ignored=ignored)
    verdict, reason, chosen = _rules(container, target, os)
    return ContainerVerdict(*base, verdict=verdict, reason=reason, chosen=chosen, ignored=ignored)


def _rules(container: FatbinContainer, target: Target, os: str) -> tuple[Verdict, str, str | None]:
    device, _ = effective_arch(target, os)
    cuda = driver_cuda_version(target.driver, os) if target.driver else None
    best_sass: tuple[int, FatbinEntry, str] | None = None
    refusals: list[str] = []
    for e in container.entries:
        if e.kind is not CodeKind.SASS:
            continue
        level, why = _sass_fits(e.arch, device)
        if level and (
            best_sass is None or (level, e.arch.number) > (best_sass[0], best_sass[1].arch.number)
        ):
            best_sass = (level, e, why)
        if not level:
            refusals.append(why)
    if best_sass is not None:
        level, e, why = best_sass
        return (Verdict.NATIVE if level == 2 else Verdict.COMPATIBLE), why, e.name
    jit: tuple[FatbinEntry, str] | None = None
    gated: tuple[FatbinEntry, str] | None = None
    for e in container.entries:
        if e.kind is not CodeKind.PTX:
            continue
        fits, why = _ptx_fits(e.arch, device)
        if not fits:
            refusals.append(why)
            continue
        ok, isa_why = _ptx_isa_gate(e, cuda, os)
        if ok and (jit is None or e.arch.number > jit[0].arch.number):
            jit = (e, f"{why}; {isa_why}")
        elif not ok and gated is None:
            gated = (e, f"{why}, but {isa_why}")
    if jit is not None:
        e, why = jit
        reason = f"no cubin for CC {device.cc}: the first load JIT-compiles {e.name} ({why})"
        return Verdict.PTX_JIT, reason, e.name
    if gated is not None:
        return Verdict.DRIVER, gated[1], None
    if any(e.kind is CodeKind.LTOIR for e in container.entries):
        refusals.append("LTO-IR is never loaded by the driver")
    reason = f"nothing for CC {device.cc}: " + "; ".join(dict.fromkeys(refusals))
    if device.base != target.arch:
        reason += f" (the device reports CC {device.cc} under this driver)"
    for rn in catalog.renames():
        old, new = rn.old.base, rn.new.base
        if device == new and any(e.arch.base == old for e in container.entries):
            reason += (
                f"; {old.sass} is this GPU's CUDA {rn.last_release_with_old} name: whether a "
                f"CUDA {rn.first_release_with_new}+ driver still loads it is not verified, "
                f"rebuild for {new.sass}"
            )
    return Verdict.NO_CODE, reason, None


# ---------------------------------------------------------------------------- runtime linkage


def binary_os(binary: Binary) -> str:
    """``"windows"`` for PE files, else ``"linux"`` (the OS whose driver would load it)."""
    return "windows" if binary.format == "pe" else "linux"


def runtime_majors(binary: Binary) -> tuple[tuple[int, str], ...]:
    """CUDA majors the binary is tied to, with the library that says so: its own soname or
    a DT_NEEDED / imported DLL shipped by a toolkit component of exactly one CUDA major
    (``libcudart.so.13`` -> 13; ``libcurand.so.10``, in 11, 12 and 13, says nothing)."""
    os = binary_os(binary)
    out: list[tuple[int, str]] = []
    names = ([binary.soname] if binary.soname else []) + list(binary.needed)
    for name in names:
        comps = [c for c in catalog.find_library(name, os=os) if c.extra is not None]
        majors = {c.major for c in comps}
        if len(majors) == 1:
            out.append((majors.pop(), name))
    return tuple(dict.fromkeys(out))


@dataclass(frozen=True)
class RuntimeCheck:
    """Minor-version compatibility: the runtime major a binary links against needs a driver
    at or above that major's floor.  ``ok`` is None when no driver was given."""

    major: int
    library: str
    floor: str | None
    ok: bool | None
    reason: str


def runtime_check(binary: Binary, driver: Driver | None) -> RuntimeCheck | None:
    majors = runtime_majors(binary)
    if not majors:
        return None
    major, lib = max(majors)
    os = binary_os(binary)
    mc = catalog.minor_compat_floor(major)
    floor = (mc.driver_windows if os == "windows" else mc.driver_linux) if mc else None
    floor_txt = f"driver >= {floor}" if floor else f"a CUDA {major}.x driver"
    need = f"{lib} (CUDA {major}) needs {floor_txt} (minor-version compatibility floor)"
    if driver is None:
        return RuntimeCheck(major, lib, floor, None, need)
    cuda = driver_cuda_version(driver, os)
    if driver.version is not None and floor is not None:
        ok = _vt(driver.version) >= _vt(floor)
    elif cuda is not None:
        if cuda[0] != major:
            ok = cuda[0] > major
        else:
            low = _min_driver(None, (major, 0), os)
            ok = cuda > (major, 0) or floor is None or (low is not None and _vt(low) >= _vt(floor))
    else:
        return RuntimeCheck(major, lib, floor, None, need + f"; {driver} could not be placed")
    return RuntimeCheck(major, lib, floor, ok, f"{need}: {'ok' if ok else 'too old'} ({driver})")


# ---------------------------------------------------------------------------- roll-ups


@dataclass(frozen=True)
class LibraryVerdict:
    """One binary on one target: its containers' verdicts rolled up (docs/compat.md)."""

    path: str
    verdict: Verdict
    reason: str
    containers: tuple[ContainerVerdict, ...]
    runtime: RuntimeCheck | None
    has_device_code: bool

    def count(self, verdict: Verdict) -> int:
        return sum(1 for c in self.containers if c.counted and c.verdict is verdict)

    @property
    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for c in self.containers:
            key = c.verdict.value if c.counted and c.verdict else "ignored"
            out[key] = out.get(key, 0) + 1
        return out


def _codes_summary(cvs: Sequence[ContainerVerdict], limit: int = 6) -> str:
    names = sorted({n for c in cvs for n in c.codes})
    return ", ".join(names[:limit]) + (", ..." if len(names) > limit else "")


def evaluate_binary(
    binary: Binary, target: Target, *, strict: bool = False
) -> LibraryVerdict | None:
    """Roll one binary's containers up; None for binaries with neither device code nor a
    CUDA runtime link (nothing to say).  ``strict``: a library is its worst container."""
    os = binary_os(binary)
    stub = link_stub_index(binary)
    cvs = tuple(
        evaluate_container(c, target, os, stub=i == stub) for i, c in enumerate(binary.containers)
    )
    cvs = _with_jit_link(binary, cvs)
    counted = [c for c in cvs if c.counted]
    rt = runtime_check(binary, target.driver)
    if not counted and rt is None:
        return None
    if rt is not None and rt.ok is False:
        return LibraryVerdict(binary.path, Verdict.DRIVER, rt.reason, cvs, rt, bool(counted))
    if not counted:
        why = "no device code that the driver loads"
        if cvs:
            why += f" ({len(cvs)} container(s) ignored: {cvs[0].ignored})"
        return LibraryVerdict(binary.path, Verdict.HOST, why, cvs, rt, False)
    verdicts = [c.verdict for c in counted if c.verdict is not None]
    worst = _worst(verdicts)
    assert worst is not None
    running = [c for c in counted if c.verdict is not None and c.verdict.runs]
    if worst.runs or not running or strict:
        first = next(c for c in counted if c.verdict is worst)
        if len(counted) == 1:
            reason = first.reason
        else:
            same = sum(1 for v in verdicts if v is worst)
            reason = f"{same} of {len(counted)} containers: {first.reason}"
        return LibraryVerdict(binary.path, worst, reason, cvs, rt, True)
    best_run = _worst(c.verdict for c in running if c.verdict is not None)
    missing = [c for c in counted if c.verdict is not None and not c.verdict.runs]
    reason = (
        f"{len(running)} of {len(counted)} containers load ({best_run.value if best_run else ''}"
        f" at worst); {len(missing)} have no usable code for this GPU (they hold "
        f"{_codes_summary(missing)}): kernels built only for other GPUs, which a library "
        f"that picks kernels by architecture never loads here, or kernels missing for this one"
    )
    return LibraryVerdict(binary.path, Verdict.PARTIAL, reason, cvs, rt, True)


def _with_jit_link(
    binary: Binary, cvs: tuple[ContainerVerdict, ...]
) -> tuple[ContainerVerdict, ...]:
    """-rdc binaries: when the linked image has nothing for the GPU, the CUDA runtime
    device-links the relocatable containers (``__nv_relfatbin``) itself at first load,
    JIT-compiling their PTX (seen on the H200: librdc.so, linked for sm_80 only, runs).
    That works when every relocatable container has code the rules load."""
    rel = [
        cv
        for c, cv in zip(binary.containers, cvs, strict=True)
        if c.relocatable and cv.verdict is not None
    ]
    if not rel or not all(cv.verdict in _LOADS for cv in rel):
        return cvs
    worst = _worst(cv.verdict for cv in rel if cv.verdict is not None)
    assert worst is not None
    via = (
        max(worst, Verdict.PTX_JIT, key=lambda v: v.rank)
        if any(cv.verdict is Verdict.PTX_JIT for cv in rel)
        else worst
    )
    out = []
    for c, cv in zip(binary.containers, cvs, strict=True):
        if cv.counted and cv.verdict is Verdict.NO_CODE and not c.relocatable:
            cv = replace(
                cv,
                verdict=via,
                reason=(
                    f"{cv.reason}; but the CUDA runtime device-links the {len(rel)} relocatable "
                    f"(-rdc) container(s) of this binary at first load"
                    + (" (JIT-compiling their PTX)" if via is Verdict.PTX_JIT else "")
                ),
            )
        out.append(cv)
    return tuple(out)


_LOADS = frozenset({Verdict.NATIVE, Verdict.COMPATIBLE, Verdict.PTX_JIT})


@dataclass(frozen=True)
class SourceVerdict:
    """One inspected target (wheel, directory, distribution, file): its worst library."""

    path: str
    kind: str
    verdict: Verdict | None  # None: nothing CUDA in it
    libraries: tuple[LibraryVerdict, ...]


@dataclass(frozen=True)
class TargetReport:
    """Everything inspected, on one target GPU + driver."""

    target: Target
    device: Arch  # the CC the rules used (rename applied)
    verdict: Verdict | None  # worst source; None when nothing CUDA was found
    sources: tuple[SourceVerdict, ...]
    notes: tuple[str, ...]

    @property
    def runs(self) -> bool:
        return self.verdict is None or self.verdict.runs


def _evaluate_source(source: Source, target: Target, strict: bool) -> SourceVerdict:
    libs = tuple(
        lv
        for lv in (evaluate_binary(b, target, strict=strict) for b in source.binaries)
        if lv is not None
    )
    return SourceVerdict(source.path, source.kind, _worst(lv.verdict for lv in libs), libs)


def evaluate(inventory: Inventory, target: Target, *, strict: bool = False) -> TargetReport:
    """Every source of ``inventory`` on ``target``; the report's verdict is the worst."""
    sources = tuple(_evaluate_source(s, target, strict) for s in inventory.sources)
    device, rename_note = effective_arch(target)
    notes: list[str] = []
    if rename_note:
        notes.append(rename_note)
    cuda = driver_cuda_version(target.driver) if target.driver else None
    knows = _driver_knows_gpu(target.arch, cuda)
    if knows:
        notes.append(knows)
    if target.driver is not None and cuda is None:
        notes.append(f"{target.driver} is older than every CUDA release in the catalog")
    if target.driver is None and any(
        lv.verdict is Verdict.PTX_JIT or lv.runtime is not None
        for s in sources
        for lv in s.libraries
    ):
        notes.append("no driver given: driver gates (PTX ISA, runtime floor) assumed met")
    verdict = _worst(s.verdict for s in sources if s.verdict is not None)
    return TargetReport(target, device, verdict, sources, tuple(notes))


# ---------------------------------------------------------------------------- matrix


@dataclass(frozen=True)
class Matrix:
    """Rows: targets (GPUs); columns: libraries with device code; cells: verdicts."""

    targets: tuple[Target, ...]
    columns: tuple[str, ...]  # library display paths
    cells: tuple[tuple[Verdict | None, ...], ...]  # [row][column]; None: not evaluated
    reports: tuple[TargetReport, ...]

    def row_runs(self, i: int) -> bool:
        return all(v is None or v.runs for v in self.cells[i])


def catalog_targets(driver: Driver | None = None) -> tuple[Target, ...]:
    """One target per GPU of the catalog (its products in the label)."""
    out = []
    for g in catalog.load_catalog().gpus:
        names = ", ".join(p.name for p in g.products[:2])
        label = f"{g.cc} {g.family}" + (f" ({names})" if names else "")
        out.append(Target(g.arch, label, driver, g.family))
    return tuple(out)


def matrix(inventory: Inventory, targets: Sequence[Target], *, strict: bool = False) -> Matrix:
    reports = tuple(evaluate(inventory, t, strict=strict) for t in targets)
    columns: list[str] = []
    for r in reports:
        for s in r.sources:
            for lv in s.libraries:
                if lv.has_device_code and lv.path not in columns:
                    columns.append(lv.path)
    order = {b.path: i for i, b in enumerate(inventory.binaries)}
    columns.sort(key=lambda p: order.get(p, len(order)))
    rows = []
    for r in reports:
        by_path = {lv.path: lv.verdict for s in r.sources for lv in s.libraries}
        rows.append(tuple(by_path.get(c) for c in columns))
    return Matrix(tuple(targets), tuple(columns), tuple(rows), reports)

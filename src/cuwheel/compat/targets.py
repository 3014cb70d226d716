"""The GPUs and drivers compat is asked about: a GPU by catalog name or compute capability,
a driver by version or CUDA version, and the CC a device reports under a given driver
(docs/compat.md#driver-gates)."""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from cuwheel.errors import CompatError, shown
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.cuda import parse_version
from cuwheel.knowledge.gpus import Gpu, Product
from cuwheel.model.arch import Arch, ArchSpellingError
from cuwheel.rules.runtime import Driver, driver_cuda_version, version_tuple

__all__ = [
    "Target",
    "catalog_targets",
    "driver_knows_gpu",
    "effective_arch",
    "parse_driver",
    "target_for_cc",
    "targets_for_gpu",
]


# ---------------------------------------------------------------------------- driver


def parse_driver(text: str) -> Driver:
    """``"580.65.06"`` (a driver version: first number >= 100) or ``"13.0"`` (the CUDA version
    the driver supports, as ``nvidia-smi`` prints it).  Raises CompatError."""
    t = text.strip()
    if not re.fullmatch(r"[0-9]{1,6}(\.[0-9]{1,6}){0,3}", t):
        raise CompatError(
            f"--driver takes a driver version ('580.65.06'), a driver branch ('580') or a "
            f"CUDA version ('13.0'), got {shown(text)}"
        )
    parts = version_tuple(t)
    if parts[0] >= 1000:  # NVIDIA's branches have three digits: R384 ... R580
        raise CompatError(
            f"--driver {t}: no NVIDIA driver branch has more than three digits; a driver "
            "version is '580.65.06', a branch '580'"
        )
    if parts[0] >= 100:
        return Driver(version=t)
    if len(parts) == 1:
        raise CompatError(
            f"--driver {t}: a driver branch is >= 100 ('580'); for the CUDA version the "
            f"driver supports write {t}.0"
        )
    if len(parts) != 2:
        raise CompatError(f"a CUDA driver version is 'MAJOR.MINOR' ('13.0'), got {text!r}")
    newest = active_catalog().releases[-1]
    if parts[0] > newest.version[0] + 1:  # the next major may be out; two ahead is a typo
        raise CompatError(
            f"--driver {t}: no CUDA {parts[0]}.x driver exists (the catalog's newest release "
            f"is {newest.name})"
        )
    return Driver(cuda=(parts[0], parts[1]))




# ---------------------------------------------------------------------------- targets


@dataclass(frozen=True)
class Target:
    """A GPU to ask about: its compute capability as current drivers report it, a label
    ("H200", "sm_90", "GPU 0: NVIDIA H200") and optionally the driver it runs."""

    arch: Arch  # no variant
    label: str
    driver: Driver | None = None
    family: str | None = None
    # Row platforms whose machines carry this GPU (catalog ``hosts``); None: not known,
    # nothing is judged about the platform.
    hosts: tuple[str, ...] | None = None

    def __post_init__(self) -> None:
        if self.arch.variant:
            raise ValueError(f"a target is a compute capability, not {self.arch}")

    def with_driver(self, driver: Driver | None) -> Target:
        return Target(self.arch, self.label, driver, self.family, self.hosts)


def _canonical(arch: Arch) -> tuple[Arch, str | None]:
    """Map a renamed CC to its current name (10.1 -> 11.0, Thor)."""
    for rn in active_catalog().renames:
        if arch == rn.old.base:
            return rn.new.base, (
                f"CC {arch.cc} is {rn.new.base.cc} from CUDA {rn.first_release_with_new} on "
                f"({rn.note or 'renamed'})"
            )
    return arch, None


def _hosts(gpu: Gpu, products: Sequence[Product]) -> tuple[str, ...] | None:
    return gpu.fixed_hosts(products)


def target_for_cc(text: str, driver: Driver | None = None) -> Target:
    """``"8.9"``, ``"sm_89"``, ``"89"`` -> a Target; raises CompatError."""
    try:
        arch = Arch.parse(text)
    except ArchSpellingError as exc:
        raise CompatError(f"--cc takes a compute capability ('8.9', 'sm_89'): {exc}") from exc
    if arch.variant:
        raise CompatError(f"--cc takes a compute capability, not a variant target: {text!r}")
    arch, _ = _canonical(arch)
    gpu = active_catalog().gpu_for_arch(arch)
    if gpu is None:
        return Target(arch, f"sm_{arch.number}", driver)
    return Target(arch, f"sm_{arch.number}", driver, gpu.family, _hosts(gpu, gpu.products))


def targets_for_gpu(query: str, driver: Driver | None = None) -> tuple[Target, ...]:
    """GPUs of the catalog that ``query`` names ("RTX 4090", "GB200", "Blackwell"): exact
    hits if any, else every hit; one Target per compute capability.  Raises CompatError."""
    matches = active_catalog().find_gpus(query)
    if not query.strip() or not matches:
        raise CompatError(f"no GPU in the catalog matches {query!r}"
                          f"{active_catalog().gpu_hint(query) if query.strip() else ''} "
                          "(try 'cuwheel gpus')")
    exact = [m for m in matches if m.exact]
    out: list[Target] = []
    for m in exact or matches:
        names = ", ".join(p.name for p in m.products[:3]) + (", ..." if len(m.products) > 3 else "")
        label = f"{names} (CC {m.gpu.cc})" if names else f"{m.gpu.family} (CC {m.gpu.cc})"
        out.append(Target(m.gpu.arch, label, driver, m.gpu.family, _hosts(m.gpu, m.products)))
    return tuple(sorted(out, key=lambda t: t.arch))


def effective_arch(target: Target, os: str = "linux") -> tuple[Arch, str | None]:
    """The CC the device reports under the target's driver: a CUDA 12.x driver reports
    Thor as 10.1, a 13.x driver as 11.0 (catalog ``rename``).  Unknown driver: current."""
    cuda = driver_cuda_version(target.driver, os) if target.driver else None
    for rn in active_catalog().renames:
        if target.arch == rn.new.base and cuda is not None:
            first = parse_version(rn.first_release_with_new)
            if cuda < first:
                return rn.old.base, (
                    f"a CUDA {cuda[0]}.{cuda[1]} driver reports this GPU as CC "
                    f"{rn.old.base.cc} ({rn.old.base.sass}); it is {rn.new.base.sass} from "
                    f"CUDA {rn.first_release_with_new} on"
                )
    return target.arch, None


def driver_knows_gpu(arch: Arch, cuda: tuple[int, int] | None) -> str | None:
    """A warning when the GPU first appears in a release newer than the driver's CUDA."""
    if cuda is None:
        return None
    supporting = active_catalog().releases_supporting(arch)
    if supporting and supporting[0].version > cuda:
        return (
            f"{arch.sass} first appears in CUDA {supporting[0].name}; a CUDA "
            f"{cuda[0]}.{cuda[1]} driver may not support this GPU at all"
        )
    return None


def catalog_targets(driver: Driver | None = None) -> tuple[Target, ...]:
    """One target per GPU of the catalog (its products in the label)."""
    out = []
    for g in active_catalog().gpus:
        names = ", ".join(p.name for p in g.products[:2])
        label = f"{g.cc} {g.family}" + (f" ({names})" if names else "")
        out.append(Target(g.arch, label, driver, g.family, _hosts(g, g.products)))
    return tuple(out)

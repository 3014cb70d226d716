"""What a binary needs from the NVIDIA driver, and what a driver supports
(docs/compat.md#driver-gates).

* A driver version ("580.65.06") is placed in the newest CUDA release whose minimum driver
  it reaches (the release notes' table in the catalog);
* a binary linked against CUDA runtime major M needs a driver at or above M's
  minor-version-compatibility floor; below it, NVIDIA's forward-compatibility package is
  the way out, on Linux and some GPUs only (docs/cuda.md#forward-compatibility).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import binary_os, runtime_majors
from cuwheel.knowledge.platforms import load_platforms
from cuwheel.model.inventory import Binary

__all__ = [
    "Driver",
    "RuntimeCheck",
    "binary_platform",
    "driver_cuda_version",
    "forward_compat_applies",
    "min_driver",
    "package_major",
    "reaches",
    "runtime_check",
    "version_tuple",
]


def version_tuple(version: str) -> tuple[int, ...]:
    """``\"580.65.06\"`` -> ``(580, 65, 6)``."""
    return tuple(int(p) for p in version.split("."))


def reaches(have: str, floor: str) -> bool:
    """Whether driver ``have`` is at least ``floor``; a bare branch (``"580"``) stands for
    any driver of that branch, judged by branch."""
    h, f = version_tuple(have), version_tuple(floor)
    return h[0] >= f[0] if len(h) == 1 else h >= f


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


def driver_cuda_version(driver: Driver, os: str = "linux") -> tuple[int, int] | None:
    """The CUDA version a driver supports: given, or the newest release whose minimum
    driver for ``os`` the version reaches.  None when it cannot be placed."""
    if driver.cuda is not None:
        return driver.cuda
    assert driver.version is not None
    have = version_tuple(driver.version)
    best: tuple[int, int] | None = None
    for r in active_catalog().releases:
        if os == "windows" and r.driver_windows is not None:
            reached = reaches(driver.version, r.driver_windows)
        elif os == "windows" and r.driver_linux is not None:
            # Windows minimum not tabulated (13.x): both OSes share the driver branch (R580).
            reached = version_tuple(r.driver_linux)[:1] <= have[:1]
        elif r.driver_linux is not None:
            reached = reaches(driver.version, r.driver_linux)
        else:
            continue
        if reached:
            best = r.version
    return best


def min_driver(driver_version: str | None, cuda: tuple[int, int] | None, os: str) -> str | None:
    """A lower bound for the driver version: given, or the minimum of its CUDA release."""
    if driver_version is not None:
        return driver_version
    if cuda is None:
        return None
    try:
        r = active_catalog().release(cuda)
    except LookupError:
        return None
    return r.min_driver(os)



def binary_platform(binary: Binary) -> str | None:
    """The row platform whose machines run ``binary`` (``linux-aarch64`` for an aarch64
    ELF: each row platform's native format and machine, data/platforms.toml), whatever its
    wheel's tag says; None for device code and machines of no row platform."""
    for p in load_platforms().rows:
        if binary.format == p.binary_format and binary.machine == p.binary_machine:
            return p.name
    return None


def forward_compat_applies(segment: str, os: str) -> bool:
    """Whether NVIDIA's forward-compatibility package can bring a newer-major runtime to an
    older driver for a product of ``segment`` ("datacenter", "embedded", ...) on ``os``."""
    fc = active_catalog().forward_compat
    return fc is not None and os in fc.os and segment in fc.segments


@dataclass(frozen=True)
class RuntimeCheck:
    """Minor-version compatibility: the runtime major a binary links against needs a driver
    at or above that major's floor.  ``ok`` is None when no driver was given."""

    major: int
    library: str
    floor: str | None
    ok: bool | None
    reason: str


def runtime_check(binary: Binary, driver: Driver | None,
                  static_major: int | None = None) -> RuntimeCheck | None:
    """The driver gate of the CUDA runtime ``binary`` links: dynamically (its DT_NEEDED),
    else statically (``Binary.static_cudart``) of major ``static_major``, which the
    package's other evidence gives (:func:`package_major`); None when neither applies."""
    majors = runtime_majors(binary)
    if not majors and binary.static_cudart and static_major is not None:
        majors = ((static_major, "libcudart_static (linked in)"),)
    if not majors:
        return None
    major, lib = max(majors)
    os = binary_os(binary)
    mc = active_catalog().minor_compat_floor(major)
    floor = mc.floor(os) if mc else None
    floor_txt = f"driver >= {floor}" if floor else f"a CUDA {major}.x driver"
    need = f"{lib} (CUDA {major}) needs {floor_txt} (minor-version compatibility floor)"
    if driver is None:
        return RuntimeCheck(major, lib, floor, None, need)
    cuda = driver_cuda_version(driver, os)
    if driver.version is not None and floor is not None:
        ok = reaches(driver.version, floor)
    elif cuda is not None:
        if cuda[0] != major:
            ok = cuda[0] > major
        else:
            # Windows 13.x minimums are not tabulated: both OSes share the driver branch.
            low = min_driver(None, (major, 0), os) or min_driver(None, (major, 0), "linux")
            ok = cuda > (major, 0) or floor is None or (
                low is not None and version_tuple(low) >= version_tuple(floor)
            )
    else:
        return RuntimeCheck(major, lib, floor, None, need + f"; {driver} could not be placed")
    reason = f"{need}: {'ok' if ok else 'too old'} ({driver})"
    fc = active_catalog().forward_compat
    if not ok and fc is not None and os in fc.os:
        # Not a verdict: whether the package is installed (and the GPU eligible) is unknown.
        reason += (
            f"; NVIDIA's forward-compatibility package ({fc.package}) can run it on "
            f"{fc.applies_to}"
        )
    return RuntimeCheck(major, lib, floor, ok, reason)


def package_major(binaries: Iterable[Binary]) -> int | None:
    """The CUDA major of a package's statically linked runtime: the toolkit recorded in its
    cubins, else the runtime major its binaries link (CuPy 13.6 cupy-cuda12x: the static
    runtime in cupy_backends' runtime module, libnvrtc.so.12 linked beside it), the most
    common first; None when nothing says."""
    found: Counter[int] = Counter()
    for b in binaries:
        for c in b.containers:
            if c.toolkit is not None:
                found[c.toolkit.major] += 1
        for major, _ in runtime_majors(b):
            found[major] += 1
    return max(found.items(), key=lambda kv: (kv[1], kv[0]))[0] if found else None

"""Driver-library checks (DRV): the NVIDIA driver's libraries come with the driver; a wheel
never bundles them, never declares a package that stands in for them, and never points its
run path at the toolkit's link-time stubs."""

from __future__ import annotations

import posixpath

from packaging.utils import canonicalize_name

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding
from cuwheel.knowledge import catalog

__all__ = ["STUB_PACKAGES", "STUB_TOOLKIT_EXTRAS", "check_driver"]

# Packages that carry stand-ins for driver libraries (docs/cuda.md#driver-provided-libraries:
# the cuda-toolkit extra `nvml` installs nvidia-nvml-dev, headers and a link-time
# libnvidia-ml stub).
STUB_PACKAGES = ("nvidia-nvml-dev", "nvidia-nvml-dev-cu11", "nvidia-nvml-dev-cu12")
STUB_TOOLKIT_EXTRAS = ("nvml",)


def check_driver(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for lib in ctx.libs:
        names = {posixpath.basename(lib.member)}
        if lib.binary.soname:
            names.add(lib.binary.soname)
        hit = sorted(n for n in names if catalog.is_driver_library(n))
        if hit:
            out.append(ctx.finding(
                "DRV001",
                f"{hit[0]} is a driver library: it must come from the installed NVIDIA driver",
                lib.name,
            ))  # fmt: skip
        for e in lib.binary.rpath + lib.binary.runpath:
            if "stubs" in e.split("/"):
                out.append(ctx.finding(
                    "DRV003",
                    f"run path entry {e!r} points at link-time stubs of driver libraries",
                    lib.name,
                ))  # fmt: skip
    for d in ctx.declared:
        if not d.applies:
            continue
        stub = d.name in STUB_PACKAGES
        if d.name == "cuda-toolkit":
            from packaging.requirements import Requirement

            extras = Requirement(d.text).extras
            stub = stub or any(e in extras for e in STUB_TOOLKIT_EXTRAS)
        if stub:
            out.append(ctx.finding(
                "DRV002",
                f"requirement {d.label} installs a stand-in for a driver library "
                f"({canonicalize_name(d.name)}); the driver provides it",
            ))  # fmt: skip
    return out

"""Driver-library checks (DRV): the NVIDIA driver's libraries come with the driver; a wheel
never bundles them, never declares a package that stands in for them, and never points its
run path at the toolkit's link-time stubs."""

from __future__ import annotations

import posixpath
import re

from packaging.utils import canonicalize_name

from cuwheel.checks.context import CheckContext, Lib
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.packages import load_driver_stand_ins

__all__ = ["check_driver", "driver_identity"]

# Packages that carry stand-ins for driver libraries, the cuda-toolkit extras that install
# them, and the entry points only driver libraries export: data/packages.toml [driver]
# (docs/cuda.md#driver-provided-libraries).


# auditwheel's renaming of a grafted library: libcuda.so.535.104.05 -> libcuda-3e1a2b4c.so....
_GRAFTED = re.compile(r"^(?P<stem>[^/]+?)-[0-9a-f]{8,}(?P<rest>\.so(?:\.[\w.]*)?|\.dll)$", re.I)


def driver_identity(lib: Lib) -> str | None:
    """Which driver library ``lib`` is, whatever its file is called: by file name or
    SONAME, by the name auditwheel renamed (``libcuda-<hash>.so.<version>``), or by the
    driver API it exports; None when it is none."""
    names = {posixpath.basename(lib.member)}
    if lib.binary.soname:
        names.add(lib.binary.soname)
    for n in sorted(names):
        if active_catalog().is_driver_library(n):
            return n
    for n in sorted(names):
        m = _GRAFTED.match(n)
        if m and active_catalog().is_driver_library(m["stem"] + m["rest"]):
            return f"{m['stem'] + m['rest']} (renamed {n})"
    # The driver API's entry points confirm a copy whose name was changed further; alone
    # they do not: XLA's and others' lazy-loading shims export them too (jax's CUDA plugin).
    exported = set(lib.binary.exported)
    for name, symbols in load_driver_stand_ins().exports:
        stem = name.split(".so", 1)[0]
        if symbols <= exported and any(n.startswith(stem) for n in names):
            return f"{name} (named {sorted(names)[0]}; it exports {', '.join(sorted(symbols))})"
    return None


def check_driver(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    drivers: dict[str, str] = {}  # member -> what driver library it is
    for lib in ctx.libs:
        who = driver_identity(lib)
        if who is not None:
            drivers[lib.member] = who
            out.append(ctx.finding(
                "DRV001",
                f"{who} is a driver library: it must come from the installed NVIDIA driver",
                lib.name,
            ))  # fmt: skip
        for e in lib.binary.rpath + lib.binary.runpath:
            if "stubs" in e.split("/"):
                out.append(ctx.finding(
                    "DRV003",
                    f"run path entry {e!r} points at link-time stubs of driver libraries",
                    lib.name,
                ))  # fmt: skip
    for lib in ctx.loadable_libs():
        for name in lib.binary.needed:
            shipped = ctx.ships(name)
            if shipped is not None and shipped.member in drivers:
                out.append(ctx.finding(
                    "DRV004",
                    f"needs {name}, the bundled copy of {drivers[shipped.member]}: it would "
                    "load a driver that does not match the machine's kernel module",
                    lib.name,
                ))  # fmt: skip
    for d in ctx.declared:
        if not d.applies:
            continue
        stand_ins = load_driver_stand_ins()
        stub = d.name in stand_ins.packages
        if d.name == "cuda-toolkit":
            from packaging.requirements import Requirement

            extras = Requirement(d.text).extras
            stub = stub or any(e in extras for e in stand_ins.toolkit_extras)
        if stub:
            out.append(ctx.finding(
                "DRV002",
                f"requirement {d.label} installs a stand-in for a driver library "
                f"({canonicalize_name(d.name)}); the driver provides it",
            ))  # fmt: skip
    return out

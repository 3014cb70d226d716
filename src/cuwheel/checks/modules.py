"""Module checks (MOD): modules the policy names (``no-cuda`` globs over paths in the wheel,
e.g. the Python extension ``pkg/_C*.so``) link no CUDA library and carry no device code,
so that importing them works on a machine without a GPU."""

from __future__ import annotations

import fnmatch

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.active import active_catalog

__all__ = ["check_modules"]


def check_modules(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for pattern in ctx.policy.no_cuda:
        matched = [lib for lib in ctx.libs if fnmatch.fnmatchcase(lib.member, pattern)]
        if not matched:
            out.append(ctx.finding("MOD003", f"no-cuda pattern {pattern!r} matches no binary"))
        for lib in matched:
            cuda = active_catalog().is_cuda_library
            linked = [n for n in lib.binary.needed if cuda(n, driver=True)]
            if linked:
                out.append(ctx.finding(
                    "MOD001",
                    f"links {', '.join(linked)}, but policy no-cuda = {pattern!r} says it must "
                    "not depend on CUDA",
                    lib.name,
                ))  # fmt: skip
            if lib.binary.has_device_code:
                out.append(ctx.finding(
                    "MOD002",
                    f"has device code in {lib.binary.containers_with_code} containers, but "
                    f"policy no-cuda = {pattern!r} says it must not depend on CUDA",
                    lib.name,
                ))  # fmt: skip
    return out

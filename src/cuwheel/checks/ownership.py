"""Ownership checks (OWN): every exported symbol matching a policy pattern (allocator,
stream helpers, thread pool) is defined in exactly one shipped library."""

from __future__ import annotations

import fnmatch

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding

__all__ = ["check_ownership"]


def check_ownership(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    for pattern in ctx.policy.owned_symbols:
        owners: dict[str, list[str]] = {}
        for lib in ctx.loadable_libs():
            for sym in lib.binary.exported:
                if fnmatch.fnmatchcase(sym, pattern):
                    owners.setdefault(sym, []).append(lib.name)
        if not owners:
            out.append(ctx.finding(
                "OWN002", f"owned-symbols pattern {pattern!r} matches no exported symbol"
            ))  # fmt: skip
        for sym in sorted(owners):
            libs = owners[sym]
            if len(libs) > 1:
                out.append(ctx.finding(
                    "OWN001",
                    f"{sym} (owned-symbols {pattern!r}) is defined in {len(libs)} libraries: "
                    + ", ".join(libs),
                ))  # fmt: skip
    return out

"""Input checks (IN): fail closed when nothing was read or a member could not be read."""

from __future__ import annotations

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding

__all__ = ["check_inputs"]


def check_inputs(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    src = ctx.source
    if not src.binaries:
        out.append(ctx.finding(
            "IN001",
            f"no binary was read from {src.files_seen} files: nothing was verified",
        ))  # fmt: skip
    for p in src.problems:
        path = src.member(p.path) if p.path != src.path else None
        out.append(ctx.finding("IN002", f"could not be read: {p.message}", path))
    for lib in ctx.libs:
        # The binary was read, but one of its structures was not: what it held is unknown.
        for a in lib.binary.anomalies:
            out.append(ctx.finding("IN002", f"part could not be read: {a}", lib.name))
    return out

"""What every format of a check report names the same way: the wheel-level "library" of
findings that belong to no library, and the codes that occurred, in data/codes.toml's
order."""

from __future__ import annotations

from collections.abc import Sequence

from cuwheel.checks.codes import CODES
from cuwheel.checks.findings import Finding

__all__ = ["WHEEL", "codes_in"]

WHEEL = "(wheel)"


def codes_in(findings: Sequence[Finding]) -> list[str]:
    """The codes that occur in ``findings``, once each, in the order of CODES."""
    seen = {f.code for f in findings}
    return [c for c in CODES if c in seen] + sorted(seen - CODES.keys())

"""Checks: judge an inspected wheel against its release row and the check policy.

Each check is a pure function of (inventory facts, row, policy) -> findings with stable
codes (:mod:`cuwheel.checks.codes`); :func:`check_wheel` inspects a wheel, picks its row
and runs them all; :mod:`cuwheel.render.check` renders the result.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuwheel._lazy import lazy_names

# name -> module that defines it: imported on first use, so that ``cuwheel.checks.codes``
# (explain, the config's policy) does not load every check (bench/bench_startup.py).
_NAMES = {
    "CODES": "codes", "FAMILIES": "codes", "Code": "codes", "Severity": "codes",
    "Finding": "findings", "Stats": "findings", "WheelReport": "findings",
    "CheckPolicy": "policy", "Waiver": "policy",
    "check_installed": "runner", "check_source": "runner", "check_wheel": "runner",
    "check_wheels": "runner",
}  # fmt: skip

__all__ = [
    "CODES",
    "FAMILIES",
    "CheckPolicy",
    "Code",
    "Finding",
    "Severity",
    "Stats",
    "Waiver",
    "WheelReport",
    "check_installed",
    "check_source",
    "check_wheel",
    "check_wheels",
]


__getattr__, __dir__ = lazy_names(
    "cuwheel.checks", {n: f".{m}" for n, m in _NAMES.items()}, globals(), __all__
)


if TYPE_CHECKING:  # pragma: no cover - names for type checkers and editors
    from cuwheel.checks.codes import CODES, FAMILIES, Code, Severity
    from cuwheel.checks.findings import Finding, Stats, WheelReport
    from cuwheel.checks.policy import CheckPolicy, Waiver
    from cuwheel.checks.runner import check_installed, check_source, check_wheel, check_wheels

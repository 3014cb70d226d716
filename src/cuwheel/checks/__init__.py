"""Checks: judge an inspected wheel against its release row and the check policy.

Each check is a pure function of (inventory facts, row, policy) -> findings with stable
codes (:mod:`cuwheel.checks.codes`); :func:`check_wheel` inspects a wheel, picks its row
and runs them all; :mod:`cuwheel.render.check` renders the result.
"""

from __future__ import annotations

from cuwheel.checks.codes import CODES, FAMILIES, Code, Severity
from cuwheel.checks.findings import Finding, Stats, WheelReport
from cuwheel.checks.policy import CheckPolicy, Waiver
from cuwheel.checks.runner import check_installed, check_source, check_wheel, check_wheels

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

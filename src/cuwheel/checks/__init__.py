"""Checks: judge an inspected wheel against its release row and the check policy.

Each check is a pure function of (inventory facts, row, policy) -> findings with stable
codes (:mod:`cuwheel.checks.codes`); :func:`check_wheel` inspects a wheel, picks its row
and runs them all; :mod:`cuwheel.checks.report` renders the result.
"""

from __future__ import annotations

from typing import Any

from cuwheel.checks.codes import CODES, FAMILIES, Code, Severity
from cuwheel.checks.findings import Finding, Stats, WheelReport
from cuwheel.checks.policy import CheckPolicy, Waiver

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
    "check_source",
    "check_wheel",
    "check_wheels",
    "plan_for_wheel",
]

_LAZY = ("check_source", "check_wheel", "check_wheels", "plan_for_wheel")


def __getattr__(name: str) -> Any:
    # The runner imports cuwheel.config, which imports the policy from this package.
    if name in _LAZY:
        from cuwheel.checks import runner

        return getattr(runner, name)
    raise AttributeError(name)

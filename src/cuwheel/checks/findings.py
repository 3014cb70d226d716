"""Findings (verdicts) and the per-wheel report that carries them; no facts are computed here.
:class:`Finding` is the one finding type: ``check``'s and ``doctor``'s."""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from cuwheel.checks.codes import Severity

__all__ = ["Finding", "Stats", "Unreadable", "WheelReport"]


@dataclass(frozen=True)
class Finding:
    """One judgement: a code, its severity and a one-line message with the evidence.

    ``library`` is the binary's path inside the wheel (doctor: the installed binary's
    path), or None for the wheel as a whole.  ``waived`` holds the waiver's reason when a
    per-file waiver covers the finding.  Doctor's findings also name the ``distribution``,
    the error its use raises as the user will see it (``error_text``) and the ``fix``.
    """

    code: str
    severity: Severity
    message: str
    library: str | None = None
    check: str = ""
    waived: str | None = None
    distribution: str | None = None
    error_text: str | None = None
    fix: str | None = None

    @property
    def family(self) -> str:
        return self.code.rstrip("0123456789")

    def line(self) -> str:
        """``library: message`` (the wheel's findings have no library prefix)."""
        return f"{self.library}: {self.message}" if self.library else self.message

    def waive(self, reason: str) -> Finding:
        return replace(self, waived=reason)


@dataclass(frozen=True)
class Stats:
    """How much was read: a check that read nothing must not pass."""

    files: int = 0
    binaries: int = 0
    device_binaries: int = 0
    containers: int = 0
    entries: int = 0


@dataclass(frozen=True)
class WheelReport:
    """The verdict on one wheel against one release row."""

    wheel: str  # file name
    path: str
    row: str
    train: str
    platform: str | None
    sass: tuple[str, ...]
    ptx: tuple[str, ...]
    stats: Stats
    libraries: tuple[str, ...]  # binaries checked, by path in the wheel
    checks: tuple[str, ...]  # names of the checks that ran
    findings: tuple[Finding, ...] = ()
    fail_on: Severity = Severity.ERROR
    notes: tuple[str, ...] = field(default=())
    profile: str = "audit"
    claim: str | None = None  # the GPUs judged, described (None for the CPU row)
    claimed: tuple[str, ...] = ()  # the claim's GPU architectures ("8.0", "9.0"), for ART003
    config: str | None = None  # the configuration file the policy and rows came from
    row_from: str | None = None  # how the row was chosen ("the wheel's +cu130 and ...")

    @property
    def failing(self) -> tuple[Finding, ...]:
        return tuple(f for f in self.findings if f.waived is None and f.severity >= self.fail_on)

    @property
    def passed(self) -> bool:
        return not self.failing

    def count(self, severity: Severity) -> int:
        return sum(1 for f in self.findings if f.waived is None and f.severity == severity)

    @property
    def waived(self) -> int:
        return sum(1 for f in self.findings if f.waived is not None)


@dataclass(frozen=True)
class Unreadable:
    """An input that could not be checked (no report): a failed entry in every format."""

    input: str  # the path or distribution name as given
    error: str  # the one-line error

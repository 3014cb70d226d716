"""Check codes: one stable code per judgement, grouped into families by prefix.

Selecting or ignoring a prefix (``DC``, ``DEP0``, ``RP002``) picks every code that starts
with it.  docs/checks.md has one section per code with its causes and the fix.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

__all__ = ["CODES", "FAMILIES", "Code", "Severity", "known_prefix"]


class Severity(IntEnum):
    """How bad a finding is; a run fails on findings at or above its failing severity."""

    INFO = 0
    WARNING = 1
    ERROR = 2

    def __str__(self) -> str:
        return self.name.lower()

    @classmethod
    def parse(cls, text: str) -> Severity:
        try:
            return cls[text.strip().upper()]
        except KeyError:
            raise ValueError(
                f"unknown severity {text!r}; expected error, warning or info"
            ) from None


@dataclass(frozen=True)
class Code:
    code: str
    severity: Severity  # default; policy options may lower it (never silently drop it)
    title: str


FAMILIES = {
    "IN": "inputs: what was read (fail closed)",
    "DC": "device code against the row's architectures",
    "CPU": "the CPU row",
    "DEP": "declared CUDA dependencies (Linux)",
    "RP": "run paths (Linux)",
    "DRV": "driver libraries",
    "WIN": "Windows rows",
    "MOD": "modules that must not depend on CUDA",
    "OWN": "symbol ownership",
    "TAG": "platform tag (machine, glibc, Python ABI), local version and CUDA train",
}

_E, _W, _I = Severity.ERROR, Severity.WARNING, Severity.INFO

CODES: dict[str, Code] = {
    c.code: c
    for c in (
        Code("IN001", _E, "nothing was inspected"),
        Code("IN002", _E, "a member could not be read"),
        Code("DC001", _E, "a claimed GPU or architecture gets no code from a library"),
        Code("DC002", _E, "SASS for an architecture the row does not claim"),
        Code("DC003", _E, "no PTX for the row's PTX architecture in a library"),
        Code("DC004", _E, "a CUDA wheel without any device code"),
        Code("DC005", _W, "PTX for an architecture the row does not list"),
        Code("DC006", _I, "a module of arch- or family-specific code only"),
        Code("DC007", _I, "a claimed GPU runs only by JIT-compiling PTX"),
        Code("CPU001", _E, "device code in a CPU wheel"),
        Code("CPU002", _E, "a CPU wheel links a CUDA library"),
        Code("CPU003", _E, "a CPU wheel declares a CUDA requirement"),
        Code("DEP001", _E, "a linked CUDA library is neither declared nor bundled"),
        Code("DEP002", _W, "a declared CUDA package that no binary links"),
        Code("DEP003", _E, "a CUDA requirement of another CUDA major"),
        Code("DEP004", _W, "a cuda-toolkit requirement not pinned to a CUDA major"),
        Code("DEP005", _E, "CUDA requirements in a row that declares none"),
        Code("DEP006", _W, "a linked CUDA library comes only with an extra"),
        Code("DEP007", _E, "a requirement no real release on the index satisfies"),
        Code("RP001", _E, "no run path reaches the directory of a linked CUDA library"),
        Code("RP002", _E, "an absolute run path entry"),
        Code("RP003", _E, "a run path entry relative to the working directory"),
        Code("DRV001", _E, "a driver library is bundled"),
        Code("DRV002", _E, "a requirement stands in for a driver library"),
        Code("DRV003", _E, "a run path entry points at driver stubs"),
        Code("DRV004", _E, "a library needs a bundled driver library"),
        Code("WIN001", _E, "a DLL imports the CUDA runtime DLL"),
        Code("WIN002", _E, "a DLL imports a CUDA library DLL that the wheel does not ship"),
        Code("WIN003", _E, "an NVIDIA requirement applies on Windows"),
        Code("MOD001", _E, "a module that must not depend on CUDA links a CUDA library"),
        Code("MOD002", _E, "a module that must not depend on CUDA has device code"),
        Code("MOD003", _W, "a no-cuda pattern matches no binary"),
        Code("OWN001", _E, "an owned symbol is defined in several libraries"),
        Code("OWN002", _W, "an ownership pattern matches no exported symbol"),
        Code("TAG001", _E, "a binary's machine does not match the platform tag"),
        Code("TAG002", _W, "no +cuXYZ local version names the train"),
        Code("TAG003", _E, "the local version names another train than the row's"),
        Code("TAG004", _E, "a linked CUDA library of another CUDA major"),
        Code("TAG005", _E, "device code built by a toolkit of another CUDA major"),
        Code("TAG006", _I, "device code built by another release of the train's major"),
        Code("TAG007", _W, "PTX newer than the train's toolkit emits"),
        Code("TAG008", _E, "a binary needs symbol versions beyond its platform tag's policy"),
        Code("TAG009", _E, "an unversioned reference that older glibc has only in another library"),
        Code("TAG010", _W, "the WHEEL file's tags disagree with the file name's"),
        Code("TAG011", _E, "an extension module bound to another CPython than the wheel's tags"),
        Code("TAG012", _E, "an abi3 module uses stable-ABI symbols newer than its abi3 floor"),
        Code("TAG013", _W, "an abi3 module uses symbols outside the stable ABI"),
    )
}


def known_prefix(prefix: str) -> bool:
    """Whether ``prefix`` selects at least one code."""
    p = prefix.strip().upper()
    return bool(p) and any(code.startswith(p) for code in CODES)

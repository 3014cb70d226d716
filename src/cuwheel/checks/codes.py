"""Check codes: one stable code per judgement, grouped into families by prefix.

Selecting or ignoring a prefix (``DC``, ``DEP0``, ``RP002``) picks every code that starts
with it.  The codes, their families, default severities, titles and explanations (causes
and fix) live in ``data/codes.toml``, validated when this module is imported; docs/checks.md's
per-code sections are generated from it and ``cuwheel explain CODE`` prints it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from cuwheel._datafiles import CODES as CODES_FILE
from cuwheel._validate import Checker, did_you_mean
from cuwheel.errors import CatalogError, UnknownCode, shown

__all__ = [
    "CODES",
    "FAMILIES",
    "RENAMED",
    "Code",
    "Renamed",
    "Severity",
    "current_code",
    "family_of",
    "find_codes",
    "known_prefix",
]

DATA_FILE = CODES_FILE


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
    explanation: str = ""  # Markdown: what the finding means, its causes and the fix
    # the one-line fix a finding of this code carries (doctor's ENV codes), with {fields}
    fix: str | None = None

    @property
    def family(self) -> str:
        return family_of(self.code)

    def fix_text(self, **fields: object) -> str:
        """The fix, its ``{fields}`` filled in; KeyError when the code has none."""
        if self.fix is None:
            raise KeyError(f"{self.code} has no fix text in codes.toml")
        return self.fix.format(**fields)


@dataclass(frozen=True)
class Renamed:
    """A code that was renamed: ``--ignore``, ``--select``, waivers and ``explain`` still
    take ``old`` and mean ``new``, with a deprecation note."""

    old: str
    new: str
    since: str  # the cuwheel release that renamed it
    note: str = ""

    def deprecation(self) -> str:
        return (f"check code {self.old} was renamed {self.new} in cuwheel {self.since}; "
                f"write {self.new}" + (f" ({self.note})" if self.note else ""))


_CODE = re.compile(r"([A-Z]+)[0-9]{3}")


def family_of(code: str) -> str:
    """The family prefix of a code (``DEP`` of ``DEP001``)."""
    return code.rstrip("0123456789")


def _parse(data: dict[str, Any]) -> tuple[dict[str, str], dict[str, Code], dict[str, Renamed]]:
    """Families, codes and renamed codes of ``codes.toml``'s tables; CatalogError listing
    every problem."""
    from cuwheel.knowledge._load import read_meta, tables

    chk = Checker(DATA_FILE)
    read_meta(data, chk)
    for key in data.keys() - {"meta", "family", "code", "renamed"}:
        chk.problem(key, "unknown table")
    families: dict[str, str] = {}
    for i, raw in enumerate(tables(data, "family", chk)):
        where = f"[[family]] #{i + 1}"
        f = chk.fields(raw, where, {"prefix": str, "title": str})
        if "prefix" not in f or "title" not in f:
            continue
        if not re.fullmatch(r"[A-Z]+", f["prefix"]):
            chk.problem(where, f"prefix must be capital letters: {f['prefix']!r}")
        elif f["prefix"] in families:
            chk.problem(where, f"prefix {f['prefix']!r} twice")
        families[f["prefix"]] = f["title"]
    codes: dict[str, Code] = {}
    own: set[str] = set()  # codes with an explanation of their own
    seen: set[str] = set()
    for i, raw in enumerate(tables(data, "code", chk)):
        where = f"[[code]] #{i + 1}"
        c = chk.fields(raw, where, {"code": str, "severity": str, "title": str},
                       {"explain": str, "same-as": str, "fix": str})  # fmt: skip
        if not {"code", "severity", "title"} <= c.keys():
            continue
        code = c["code"]
        where = f"[[code]] {code}"
        m = _CODE.fullmatch(code)
        if not m:
            chk.problem(where, "a code is capital letters and three digits")
        elif m[1] not in families:
            chk.problem(where, f"no [[family]] with prefix {m[1]!r}")
        if code in seen:
            chk.problem(where, "defined twice")
        seen.add(code)
        severity = chk.convert(where, Severity.parse, c["severity"])
        if not c["title"].strip():
            chk.problem(where, "empty title")
        text = c.get("explain", "").strip()
        same = c.get("same-as")
        if (not text) == (same is None):
            chk.problem(where, "needs exactly one of 'explain' (non-empty) and 'same-as'")
        elif same is not None:
            if same not in own:
                chk.problem(where, f"same-as {same!r}: no earlier code with its own explain")
            else:
                text = codes[same].explanation
        else:
            own.add(code)
        fix = c.get("fix")
        if fix is not None and not fix.strip():
            chk.problem(where, "empty fix")
        if severity is not None:
            codes[code] = Code(code, severity, c["title"], text, fix)
    for prefix in families:
        if not any(family_of(code) == prefix for code in codes):
            chk.problem(f"[[family]] {prefix}", "no code of this family")
    renamed: dict[str, Renamed] = {}
    for i, raw in enumerate(tables(data, "renamed", chk)):
        where = f"[[renamed]] #{i + 1}"
        r = chk.fields(raw, where, {"old": str, "new": str, "since": str}, {"note": str})
        if not {"old", "new", "since"} <= r.keys():
            continue
        old, new = r["old"], r["new"]
        if not _CODE.fullmatch(old):
            chk.problem(where, f"old {old!r} is not a code")
        if old in codes:
            chk.problem(where, f"old {old!r} is a code in use: it cannot also redirect")
        if new not in codes:
            chk.problem(where, f"new {new!r} is no code")
        if old in renamed:
            chk.problem(where, f"{old!r} renamed twice")
        renamed[old] = Renamed(old, new, r["since"], r.get("note", ""))
    if chk.problems:
        raise CatalogError(chk.problems)
    return families, codes, renamed


def _load() -> tuple[dict[str, str], dict[str, Code], dict[str, Renamed]]:
    from cuwheel.knowledge._load import read_data_file

    return _parse(read_data_file(DATA_FILE))


FAMILIES: dict[str, str]
CODES: dict[str, Code]
RENAMED: dict[str, Renamed]  # old code -> its redirect
FAMILIES, CODES, RENAMED = _load()


def current_code(code: str) -> str:
    """``code`` as it is called now: a renamed code's new name (with a
    :class:`~cuwheel.errors.CodeRenamed` warning, the deprecation note), else itself."""
    import warnings

    from cuwheel.errors import CodeRenamed

    c = code.strip().upper()
    r = RENAMED.get(c)
    if r is None:
        return c
    warnings.warn(CodeRenamed(r.deprecation()), stacklevel=2)
    return r.new


def known_prefix(prefix: str) -> bool:
    """Whether ``prefix`` selects at least one code (a renamed code's old name too)."""
    p = prefix.strip().upper()
    return bool(p) and (p in RENAMED or any(code.startswith(p) for code in CODES))


def find_codes(query: str) -> list[Code]:
    """The codes ``query`` names, case-insensitively: one code (``dc001``), or every code a
    prefix selects (``DC``, ``DEP0``), in the order of CODES.  UnknownCode, with the nearest
    code or family, when it names none."""
    q = current_code(query)
    if q in CODES:
        return [CODES[q]]
    found = [c for c in CODES.values() if q and c.code.startswith(q)]
    if not found:
        hint = did_you_mean(q, [*CODES, *FAMILIES])
        raise UnknownCode(
            f"no check code {shown(query)}{hint or '; cuwheel explain --list shows them all'}"
        )
    return found

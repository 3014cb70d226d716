"""Check policy: ``[tool.cuwheel.check]`` and the matching command-line options.

Keys (all optional)::

    select = ["DC", "DEP"]          # only codes with these prefixes (default: all)
    ignore = ["DEP002"]             # drop codes with these prefixes
    fail-on = "error"               # or "warning": the severity at which a run fails
    device-code = "strict"          # or "warn": DC001-DC003 become warnings
    accept-ptx-for-sass = false     # PTX that JIT-compiles for a claimed arch stands in for SASS
    accept-missing-ptx = false      # the row's PTX may be missing (reported as info)
    allow-variants = true           # sm_90a next to a claimed sm_90 is no unclaimed SASS
    allow-extra = ["sm_103"]        # more architectures that are no unclaimed SASS
    owned-symbols = ["cw_cuda_*"]   # each matching symbol defined in exactly one library
    no-cuda = ["pkg/_C*.so"]        # modules (paths in the wheel) that must not use CUDA
    [[tool.cuwheel.check.waivers]]  # per-file waivers; a reason is required
    code = "DC002"; path = "pkg/lib/libfoo.so"; reason = "vendored, rebuilt upstream"
"""

from __future__ import annotations

import fnmatch
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from cuwheel._validate import did_you_mean, str_list
from cuwheel.checks.codes import CODES, Severity, current_code, known_prefix
from cuwheel.model.arch import Arch, ArchSpellingError

__all__ = ["CHECK_KEYS", "CheckPolicy", "Waiver", "parse_check_table", "parse_prefixes"]

CHECK_KEYS = (
    "profile",
    "select",
    "ignore",
    "fail-on",
    "device-code",
    "accept-ptx-for-sass",
    "accept-missing-ptx",
    "allow-variants",
    "allow-extra",
    "owned-symbols",
    "no-cuda",
    "waivers",
)
WAIVER_KEYS = ("code", "path", "reason")


@dataclass(frozen=True)
class Waiver:
    """Waive findings whose code starts with ``code`` on files matching ``path`` (a glob;
    ``*`` also covers findings about the wheel as a whole)."""

    code: str
    path: str
    reason: str

    def covers(self, code: str, library: str | None) -> bool:
        return code.startswith(self.code) and fnmatch.fnmatchcase(library or "", self.path)


@dataclass(frozen=True)
class CheckPolicy:
    # data/profiles.toml: None = the row's profile, else "audit" (checks/profiles.py)
    profile: str | None = None
    select: tuple[str, ...] = ()
    ignore: tuple[str, ...] = ()
    fail_on: Severity = Severity.ERROR
    device_code: str = "strict"
    accept_ptx_for_sass: bool = False
    accept_missing_ptx: bool = False
    allow_variants: bool = True
    allow_extra: tuple[Arch, ...] = ()
    owned_symbols: tuple[str, ...] = ()
    no_cuda: tuple[str, ...] = ()
    waivers: tuple[Waiver, ...] = ()

    def enabled(self, code: str) -> bool:
        if self.select and not any(code.startswith(p) for p in self.select):
            return False
        return not any(code.startswith(p) for p in self.ignore)

    def waiver_for(self, code: str, library: str | None) -> Waiver | None:
        for w in self.waivers:
            if w.covers(code, library):
                return w
        return None

    def with_options(self, **changes: Any) -> CheckPolicy:
        """A copy with command-line options applied (None values are left alone)."""
        return replace(self, **{k: v for k, v in changes.items() if v is not None})


def parse_prefixes(values: Sequence[str], where: str, problems: list[str]) -> tuple[str, ...]:
    """Code prefixes (``DC``, ``dep0``, ``RP002``; commas allowed), each checked."""
    out: list[str] = []
    for value in values:
        for item in value.split(","):
            p = item.strip().upper()
            if not p:
                continue
            if not known_prefix(p):
                hint = did_you_mean(p, list(CODES))
                problems.append(f"{where}: {item.strip()!r} is no check code or prefix{hint}")
                continue
            out.append(current_code(p))
    return tuple(out)


def _bool(value: object, where: str, problems: list[str]) -> bool | None:
    if isinstance(value, bool):
        return value
    problems.append(f"{where}: expected true or false, got {value!r}")
    return None


def parse_check_table(raw: object, where: str, problems: list[str]) -> CheckPolicy:
    """Validate ``[tool.cuwheel.check]``; every problem is appended to ``problems``."""
    if raw is None:
        return CheckPolicy()
    if not isinstance(raw, Mapping):
        problems.append(f"{where}: expected a table, got {raw!r}")
        return CheckPolicy()
    for key in raw:
        if key not in CHECK_KEYS:
            hint = did_you_mean(key, CHECK_KEYS) or f"; known keys: {', '.join(CHECK_KEYS)}"
            problems.append(f"{where}: unknown key {key!r}{hint}")
    changes: dict[str, Any] = {}
    if "profile" in raw:
        from cuwheel.checks.profiles import load_profiles

        v = raw["profile"]
        known = sorted(load_profiles())
        if v in known:
            changes["profile"] = v
        else:
            problems.append(f"{where}.profile: expected one of {known}, got {v!r}"
                            + did_you_mean(str(v), known))
    for key in ("select", "ignore"):
        if key in raw:
            changes[key] = parse_prefixes(
                str_list(raw[key], f"{where}.{key}", problems), f"{where}.{key}", problems
            )
    if "fail-on" in raw:
        v = raw["fail-on"]
        if v in ("error", "warning"):
            changes["fail_on"] = Severity.parse(v)
        else:
            problems.append(f"{where}.fail-on: expected 'error' or 'warning', got {v!r}")
    if "device-code" in raw:
        v = raw["device-code"]
        if v in ("strict", "warn"):
            changes["device_code"] = v
        else:
            problems.append(f"{where}.device-code: expected 'strict' or 'warn', got {v!r}")
    for key in ("accept-ptx-for-sass", "accept-missing-ptx", "allow-variants"):
        if key in raw:
            b = _bool(raw[key], f"{where}.{key}", problems)
            if b is not None:
                changes[key.replace("-", "_")] = b
    if "allow-extra" in raw:
        archs: list[Arch] = []
        for text in str_list(raw["allow-extra"], f"{where}.allow-extra", problems):
            try:
                archs.append(Arch.parse(text))
            except ArchSpellingError as exc:
                problems.append(f"{where}.allow-extra: {exc}")
        changes["allow_extra"] = tuple(archs)
    for key in ("owned-symbols", "no-cuda"):
        if key in raw:
            changes[key.replace("-", "_")] = tuple(str_list(raw[key], f"{where}.{key}", problems))
    if "waivers" in raw:
        changes["waivers"] = _waivers(raw["waivers"], f"{where}.waivers", problems)
    return replace(CheckPolicy(), **changes)


def _waivers(raw: object, where: str, problems: list[str]) -> tuple[Waiver, ...]:
    if not isinstance(raw, list):
        problems.append(f"{where}: expected an array of tables ([[...waivers]])")
        return ()
    out: list[Waiver] = []
    for i, item in enumerate(raw):
        w = f"{where}[{i}]"
        if not isinstance(item, Mapping):
            problems.append(f"{w}: expected a table, got {item!r}")
            continue
        for key in item:
            if key not in WAIVER_KEYS:
                problems.append(f"{w}: unknown key {key!r}{did_you_mean(key, WAIVER_KEYS)}")
        values = {k: item.get(k) for k in WAIVER_KEYS}
        ok = True
        for k in WAIVER_KEYS:
            v = values[k]
            if not isinstance(v, str) or not v.strip():
                what = "a reason (why the finding is acceptable)" if k == "reason" else repr(k)
                problems.append(f"{w}: a waiver needs {what}")
                ok = False
        if not ok:
            continue
        code = str(values["code"]).strip().upper()
        if not known_prefix(code):
            problems.append(f"{w}: {values['code']!r} is no check code or prefix")
            continue
        code = current_code(code)
        out.append(Waiver(code, str(values["path"]), str(values["reason"]).strip()))
    return tuple(out)

"""Check profiles (``data/profiles.toml``): named policies — which codes are off, which
severities differ from the defaults, and how device code is judged ("loads": per GPU, by
the loading rules; "exact": the row's arch list, both ways)."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from cuwheel._datafiles import PROFILES
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError, ConfigError
from cuwheel.knowledge._load import read_data_file, read_meta

if TYPE_CHECKING:
    from cuwheel.checks.codes import Severity

__all__ = [
    "COVERAGES", "DEFAULT_PROFILE", "ROW_PROFILE", "Profile", "load_profiles", "profile",
    "profile_names",
]  # fmt: skip

COVERAGES = ("loads", "exact")
DEFAULT_PROFILE = "audit"  # a wheel judged without a row: what makes it fail for users
ROW_PROFILE = "release"  # a wheel judged against a project's row: the row is its contract


@dataclass(frozen=True)
class Profile:
    name: str
    description: str
    coverage: str  # "loads" or "exact"
    off: frozenset[str]
    severities: Mapping[str, Severity]

    def severity(self, code: str, default: Severity) -> Severity | None:
        """The severity of ``code`` under this profile; None when the profile turns it off."""
        if code in self.off:
            return None
        return self.severities.get(code, default)


def _parse(data: Mapping[str, Any]) -> dict[str, Profile]:
    from cuwheel.checks.codes import CODES, Severity

    chk = Checker(PROFILES)
    read_meta(data, chk)
    raw = data.get("profile")
    out: dict[str, Profile] = {}
    if not isinstance(raw, dict):
        chk.problem("[profile]", "expected tables [profile.NAME]")
        raw = {}
    for name, table in raw.items():
        where = f"[profile.{name}]"
        f = chk.fields(table, where, {"description": str, "coverage": str, "off": list},
                       {"severity": dict})
        if f.get("coverage") not in COVERAGES:
            chk.problem(where, f"coverage must be one of {COVERAGES}, got {f.get('coverage')!r}")
        off = f.get("off", [])
        sev: dict[str, Severity] = {}
        for code, value in (f.get("severity") or {}).items():
            if code not in CODES:
                chk.problem(where, f"unknown check code {code!r}")
            try:
                sev[code] = Severity.parse(str(value))
            except ValueError as exc:
                chk.problem(where, str(exc))
        for code in off:
            if code not in CODES:
                chk.problem(where, f"unknown check code {code!r} in 'off'")
        out[name] = Profile(name, f.get("description", ""), f.get("coverage", "loads"),
                            frozenset(off), sev)
    for needed in (DEFAULT_PROFILE, ROW_PROFILE):
        if needed not in out:
            chk.problem("[profile]", f"no default profile {needed!r}")
    if chk.problems:
        raise CatalogError(chk.problems)
    return out


@functools.cache
def load_profiles() -> dict[str, Profile]:
    """The shipped profiles, validated once; CatalogError when the data is broken."""
    return _parse(read_data_file(PROFILES))


@functools.cache
def profile_names() -> frozenset[str]:
    """The shipped profiles' names, read without the check codes their validation needs
    (a row's ``profile`` key is checked at every ``plan``; bench/bench_startup.py)."""
    raw = read_data_file(PROFILES).get("profile")
    return frozenset(raw) if isinstance(raw, dict) else frozenset()


def profile(name: str | None) -> Profile:
    """The profile ``name`` (None: the default); ConfigError naming the known ones."""
    profiles = load_profiles()
    key = name or DEFAULT_PROFILE
    if key not in profiles:
        raise ConfigError(f"unknown check profile {key!r}; known: {', '.join(sorted(profiles))}")
    return profiles[key]

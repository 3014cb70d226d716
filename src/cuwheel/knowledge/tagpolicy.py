"""What a Linux platform tag promises (``data/manylinux.toml``) and CPython's stable ABI
(``data/stable_abi.toml``).

manylinux.toml is auditwheel's policy data, copied by ``tools/gen_tag_data.py`` and
checked against the installed auditwheel by the tests: per policy (``manylinux_2_28``,
alias ``manylinux2014`` ...), per architecture, the symbol versions (``GLIBC_2.28``,
``GLIBCXX_3.4.24``, ``CXXABI_1.3.11``, ``GCC_7.0.0`` ...) a wheel of that tag may require.
A version is *governed* when its prefix (the text before the first ``_``, as auditwheel
splits it) is one the policy lists for the architecture; the oldest policy whose set holds
it is the oldest tag the version allows.  It also lists the symbols glibc 2.32 / 2.34 moved
into ``libc.so.6`` from libpthread, libdl, librt, libutil, libanl and libresolv.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import MANYLINUX, STABLE_ABI
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, tables

__all__ = [
    "Moved",
    "PlatformTag",
    "TagPolicies",
    "TagPolicy",
    "load_stable_abi",
    "load_tag_policies",
    "parse_platform_tag",
]

_MANY = re.compile(r"^manylinux_(\d+)_(\d+)_(.+)$")
_MUSL = re.compile(r"^musllinux_(\d+)_(\d+)_(.+)$")
_VERSION = re.compile(r"\d+(\.\d+)*")


@dataclass(frozen=True)
class TagPolicy:
    """One manylinux / musllinux policy."""

    name: str  # "manylinux_2_28", "musllinux_1_2"
    aliases: tuple[str, ...]  # "manylinux2014"
    priority: int  # higher: older, more compatible (auditwheel's order)
    family: str  # "manylinux" or "musllinux"
    libc: tuple[int, int]  # (2, 28): glibc for manylinux, musl for musllinux
    # architecture -> version prefix -> allowed versions (full names, "GLIBC_2.28")
    symbol_versions: Mapping[str, Mapping[str, frozenset[str]]]

    def tag(self, arch: str) -> str:
        return f"{self.name}_{arch}"


@dataclass(frozen=True)
class Moved:
    """A symbol glibc moved into libc.so.6: before ``glibc`` only ``library`` has it."""

    library: str  # "librt.so.1"
    glibc: tuple[int, int]  # (2, 34)


@dataclass(frozen=True)
class PlatformTag:
    """A parsed Linux platform tag and the policy that judges it."""

    tag: str  # as in the file name: "manylinux2014_x86_64"
    family: str
    libc: tuple[int, int]
    arch: str
    policy: TagPolicy | None  # None: no policy of the family at or below this libc


@dataclass(frozen=True)
class TagPolicies:
    policies: tuple[TagPolicy, ...]  # most compatible first
    moved: Mapping[str, Moved]
    meta: DataSource | None

    def family(self, family: str) -> tuple[TagPolicy, ...]:
        return tuple(p for p in self.policies if p.family == family)

    def oldest_allowing(self, family: str, arch: str, version: str) -> TagPolicy | None:
        """The most compatible policy of ``family`` whose ``arch`` set holds ``version``
        (None: none does, or the version is not governed; see :meth:`governs`)."""
        prefix = version.partition("_")[0]
        for p in self.family(family):
            if version in p.symbol_versions.get(arch, {}).get(prefix, ()):
                return p
        return None

    def governs(self, family: str, arch: str, version: str) -> bool:
        """Whether the policies of ``family`` say anything about ``version``'s prefix."""
        prefix = version.partition("_")[0]
        return any(prefix in p.symbol_versions.get(arch, {}) for p in self.family(family))


def parse_platform_tag(tag: str, policies: TagPolicies) -> PlatformTag | None:
    """``manylinux_2_28_x86_64`` / ``manylinux2014_aarch64`` / ``musllinux_1_2_x86_64`` ->
    its family, libc version, architecture and policy (the exact one, else the newest of
    the family at or below its libc version); None for any other tag."""
    for p in policies.policies:  # the legacy names: each policy's aliases (manylinux2014)
        for alias in p.aliases:
            if tag.startswith(alias + "_") and len(tag) > len(alias) + 1:
                return PlatformTag(tag, p.family, p.libc, tag[len(alias) + 1:], p)
    m = _MANY.match(tag) or _MUSL.match(tag)
    if not m:
        return None
    family = "manylinux" if tag.startswith("manylinux") else "musllinux"
    libc = (int(m.group(1)), int(m.group(2)))
    arch = m.group(3)
    below = [p for p in policies.family(family) if p.libc <= libc]
    best = max(below, key=lambda p: p.libc, default=None)
    return PlatformTag(tag, family, libc, arch, best)


def _libc_of(name: str) -> tuple[str, tuple[int, int]] | None:
    m = re.fullmatch(r"(manylinux|musllinux)_(\d+)_(\d+)", name)
    return (m.group(1), (int(m.group(2)), int(m.group(3)))) if m else None


def build_tag_policies(data: Mapping[str, Any]) -> TagPolicies:
    chk = Checker(MANYLINUX)
    meta = read_meta(data, chk)
    out: list[TagPolicy] = []
    raws = [r for r in tables(data, "policy", chk) if isinstance(r, dict)]
    raws.sort(key=lambda r: -r.get("priority", 0) if isinstance(r.get("priority"), int) else 0)
    # (family, arch, prefix) -> what the more compatible policies allow
    allowed: dict[tuple[str, str, str], frozenset[str]] = {}
    for i, raw in enumerate(raws):
        where = f"policy[{i}]"
        f = chk.fields(raw, where, {"name": str, "aliases": list, "priority": int},
                       {"added_versions": dict})
        if "name" not in f:
            continue
        fam = _libc_of(f["name"])
        if fam is None:
            chk.problem(where, f"not a manylinux_X_Y / musllinux_X_Y name: {f['name']!r}")
            continue
        versions: dict[str, dict[str, frozenset[str]]] = {}
        for arch, prefixes in (f.get("added_versions") or {}).items():
            if not isinstance(prefixes, dict):
                chk.problem(where, f"added_versions.{arch}: expected a table")
                continue
            per: dict[str, frozenset[str]] = {}
            for prefix, names in prefixes.items():
                if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
                    chk.problem(where, f"added_versions.{arch}.{prefix}: expected strings")
                    continue
                key = (fam[0], arch, prefix)
                per[prefix] = allowed[key] = allowed.get(key, frozenset()) | frozenset(
                    f"{prefix}_{n}" for n in names)
            versions[arch] = per
        out.append(TagPolicy(f["name"], tuple(str(a) for a in f.get("aliases", [])),
                             f.get("priority", 0), fam[0], fam[1], versions))
    moved: dict[str, Moved] = {}
    raw_moved = data.get("moved", {})
    if not isinstance(raw_moved, dict):
        chk.problem("[moved]", "expected a table")
        raw_moved = {}
    for sym, row in raw_moved.items():
        f = chk.fields(row, f"moved.{sym}", {"library": str, "glibc": str})
        if {"library", "glibc"} <= f.keys():
            if not _VERSION.fullmatch(f["glibc"]):
                chk.problem(f"moved.{sym}", f"not a glibc version: {f['glibc']!r}")
                continue
            major, minor = (int(x) for x in f["glibc"].split(".")[:2])
            moved[sym] = Moved(f["library"], (major, minor))
    if chk.problems:
        raise CatalogError(chk.problems)
    return TagPolicies(tuple(out), moved, meta)


@functools.cache
def load_tag_policies() -> TagPolicies:
    """The shipped ``manylinux.toml``, read and validated once."""
    return build_tag_policies(read_data_file(MANYLINUX))


@functools.cache
def load_stable_abi() -> Mapping[str, tuple[int, int]]:
    """Stable-ABI symbol -> the Python version that added it (``(3, 10)``)."""
    data = read_data_file(STABLE_ABI)
    chk = Checker(STABLE_ABI)
    read_meta(data, chk)
    out: dict[str, tuple[int, int]] = {}
    symbols = data.get("symbols")
    if not isinstance(symbols, dict):
        chk.problem("[symbols]", "expected a table")
        symbols = {}
    for name, added in symbols.items():
        if not isinstance(added, str) or not re.fullmatch(r"3\.\d+", added):
            chk.problem(f"symbols.{name}", f"not a Python 3 version: {added!r}")
            continue
        out[name] = (3, int(added.split(".")[1]))
    if chk.problems:
        raise CatalogError(chk.problems)
    return out

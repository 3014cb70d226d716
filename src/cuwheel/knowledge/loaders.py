"""The variant libraries of ``data/loaders.toml``: packages that ship one library per CUDA
version and load one of them at run time (bitsandbytes' ``libbitsandbytes_cudaXYZ``), per
package release range, each with the source file and tag that say how
(docs/doctor.md, docs/compat.md#run-time-alternatives).  The doctor reads the file's other
tables (doctor/conventions.py); the roll-up and the doctor both pick variants here."""

from __future__ import annotations

import functools
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.version import InvalidVersion, Version

from cuwheel._datafiles import LOADERS
from cuwheel._validate import Checker

__all__ = ["RULES", "Variants", "parse_variants", "select_variant", "variants_for"]

DATA_FILE = LOADERS
# How a package picks among its variants for a process with CUDA X.Y:
#   nearest: the exact one, else the highest of the same major below it, else the lowest
#            of the same major above it (minor-version compatibility);
#   exact:   the exact one only (else none, and the package falls back to its CPU build).
RULES = ("nearest", "exact")


def select_variant(available: Iterable[tuple[int, int]], cuda: tuple[int, int],
                   rule: str = "nearest") -> tuple[int, int] | None:
    """Which of a set's CUDA versions a process with CUDA ``cuda`` loads under ``rule``."""
    have = sorted(set(available))
    if cuda in have:
        return cuda
    if rule == "exact":
        return None
    same = [v for v in have if v[0] == cuda[0]]
    lower = [v for v in same if v < cuda]
    if lower:
        return max(lower)
    return min(same) if same else None


@dataclass(frozen=True)
class Variants:
    distribution: str
    pattern: re.Pattern[str]  # groups major, minor
    selected_by: str  # the distribution whose CUDA version selects ("torch")
    override: str | None  # the environment variable that names the variant instead
    rule: str = "nearest"
    versions: SpecifierSet | None = None  # the package releases this entry describes

    def version_of(self, path: str) -> tuple[int, int] | None:
        m = self.pattern.search(path.replace("\\", "/"))
        return (int(m["major"]), int(m["minor"])) if m else None

    def applies(self, version: str | None) -> bool:
        """Whether this entry describes release ``version`` (None: unknown, any entry)."""
        if version is None or self.versions is None:
            return True
        try:
            return self.versions.contains(Version(version), prereleases=True)
        except InvalidVersion:
            return False

    def select(self, available: Iterable[tuple[int, int]],
               cuda: tuple[int, int]) -> tuple[int, int] | None:
        return select_variant(available, cuda, self.rule)


def parse_variants(data: dict[str, Any], chk: Checker) -> tuple[Variants, ...]:
    from cuwheel.knowledge._load import tables

    out = []
    for i, raw in enumerate(tables(data, "variants", chk)):
        where = f"[[variants]] #{i + 1}"
        f = chk.fields(raw, where, {"distribution": str, "pattern": str, "selected_by": str,
                                    "rule": str, "source": str},
                       {"override": str, "versions": str, "how": str})  # fmt: skip
        if not {"distribution", "pattern", "selected_by", "rule"} <= f.keys():
            continue
        if f["rule"] not in RULES:
            chk.problem(where, f"rule must be one of {', '.join(RULES)}: {f['rule']!r}")
            continue
        try:
            pattern = re.compile(f["pattern"])
            versions = SpecifierSet(f["versions"]) if "versions" in f else None
        except (re.error, InvalidSpecifier) as exc:
            chk.problem(where, f"pattern or versions: {exc}")
            continue
        if set(pattern.groupindex) != {"major", "minor"}:
            chk.problem(where, "pattern needs the groups major and minor")
            continue
        out.append(Variants(f["distribution"], pattern, f["selected_by"], f.get("override"),
                            f["rule"], versions))
    return tuple(out)


@functools.cache
def _variants() -> tuple[Variants, ...]:
    from cuwheel.errors import CatalogError
    from cuwheel.knowledge._load import read_data_file

    chk = Checker(DATA_FILE)
    found = parse_variants(read_data_file(DATA_FILE), chk)
    if chk.problems:
        raise CatalogError(chk.problems)
    return found


def variants_for(distribution: str | None, version: str | None) -> Variants | None:
    """The entry for release ``version`` of ``distribution`` (first match in file order)."""
    if distribution is None:
        return None
    key = distribution.lower().replace("_", "-")
    return next((v for v in _variants() if v.distribution.lower() == key
                 and v.applies(version)), None)

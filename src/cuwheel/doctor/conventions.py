"""How packages load CUDA libraries beyond the dynamic loader (``data/loaders.toml``):
a carrier's preloads (torch's ``_load_global_deps``), the folders it hands to
``os.add_dll_directory`` on Windows, and libraries shipped in variants of which the
package loads one (bitsandbytes' ``libbitsandbytes_cudaXYZ``).  docs/doctor.md."""

from __future__ import annotations

import functools
import re
from dataclasses import dataclass

from cuwheel._validate import Checker, TableList
from cuwheel.errors import CatalogError

__all__ = ["Conventions", "DllDirectories", "Preload", "Variants", "conventions"]

DATA_FILE = "loaders.toml"


@dataclass(frozen=True)
class Preload:
    carrier: str  # the distribution (and top-level package) that preloads
    first: str  # the library it loads first, relative to its site directory
    libraries: tuple[tuple[str, str], ...]  # (folder, file glob), in load order


@dataclass(frozen=True)
class DllDirectories:
    carrier: str
    folders: tuple[str, ...]  # relative to the site directory


@dataclass(frozen=True)
class Variants:
    distribution: str
    pattern: re.Pattern[str]  # groups major, minor
    selected_by: str  # the distribution whose CUDA version selects ("torch")
    override: str | None  # the environment variable that names the variant instead

    def version_of(self, path: str) -> tuple[int, int] | None:
        m = self.pattern.search(path.replace("\\", "/"))
        return (int(m["major"]), int(m["minor"])) if m else None

    @staticmethod
    def select(
        available: list[tuple[int, int]], cuda: tuple[int, int]
    ) -> tuple[int, int] | None:
        """The variant the package loads for CUDA ``cuda`` (rules/evidence.select_variant)."""
        from cuwheel.rules.evidence import select_variant

        return select_variant(available, cuda)


@dataclass(frozen=True)
class Conventions:
    preloads: tuple[Preload, ...]
    dll_directories: tuple[DllDirectories, ...]
    variants: tuple[Variants, ...]


def _parse(data: dict[str, object]) -> Conventions:
    from cuwheel.knowledge._load import read_meta, tables

    chk = Checker(DATA_FILE)
    read_meta(data, chk)
    for key in data.keys() - {"meta", "preload", "dll_directories", "variants"}:
        chk.problem(key, "unknown table")
    preloads = []
    for i, raw in enumerate(tables(data, "preload", chk)):
        f = chk.fields(raw, f"[[preload]] #{i + 1}", {"carrier": str, "os": str, "first": str,
                       "source": str, "libraries": TableList})  # fmt: skip
        libs: list[tuple[str, str]] = []
        for pair in f.get("libraries", []):
            if not (isinstance(pair, list) and len(pair) == 2
                    and all(isinstance(p, str) for p in pair)):  # fmt: skip
                chk.problem(f"[[preload]] #{i + 1}", f"a library is [folder, glob]: {pair!r}")
                continue
            libs.append((pair[0], pair[1]))
        if len(f) == 5:
            preloads.append(Preload(f["carrier"], f["first"], tuple(libs)))
    dlls = []
    for i, raw in enumerate(tables(data, "dll_directories", chk)):
        f = chk.fields(raw, f"[[dll_directories]] #{i + 1}",
                       {"carrier": str, "folders": list, "source": str})  # fmt: skip
        if len(f) == 3:
            dlls.append(DllDirectories(f["carrier"], tuple(f["folders"])))
    variants = []
    for i, raw in enumerate(tables(data, "variants", chk)):
        where = f"[[variants]] #{i + 1}"
        f = chk.fields(raw, where, {"distribution": str, "pattern": str, "selected_by": str,
                                    "rule": str, "source": str}, {"override": str})  # fmt: skip
        if not {"distribution", "pattern", "selected_by"} <= f.keys():
            continue
        try:
            pattern = re.compile(f["pattern"])
        except re.error as exc:
            chk.problem(where, f"pattern: {exc}")
            continue
        if set(pattern.groupindex) != {"major", "minor"}:
            chk.problem(where, "pattern needs the groups major and minor")
            continue
        variants.append(Variants(f["distribution"], pattern, f["selected_by"], f.get("override")))
    if chk.problems:
        raise CatalogError(chk.problems)
    return Conventions(tuple(preloads), tuple(dlls), tuple(variants))


@functools.cache
def conventions() -> Conventions:
    from cuwheel.knowledge._load import read_data_file

    return _parse(read_data_file(DATA_FILE))

"""How packages load CUDA libraries beyond the dynamic loader (``data/loaders.toml``):
a carrier's preloads (torch's ``_load_global_deps``), the folders it hands to
``os.add_dll_directory`` on Windows, and libraries shipped in variants of which the
package loads one (bitsandbytes' ``libbitsandbytes_cudaXYZ``), and modules a package
imports only for an optional feature (CuPy's cuTENSOR).  docs/doctor.md."""

from __future__ import annotations

import fnmatch
import functools
from dataclasses import dataclass

from cuwheel._datafiles import LOADERS
from cuwheel._validate import Checker, TableList
from cuwheel.errors import CatalogError
from cuwheel.knowledge.loaders import Variants, parse_variants

__all__ = [
    "Conventions",
    "DllDirectories",
    "OptionalModules",
    "Preload",
    "PreloadList",
    "Variants",
    "conventions",
]

DATA_FILE = LOADERS


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
class PreloadList:
    """A package that preloads, at import, the libraries a JSON file of its own names:
    a list of ``{"package_name", "filename_regex"}``, each loaded (RTLD_GLOBAL) from the
    first file of that installed distribution whose name the expression matches."""

    carrier: str
    file: str  # relative to the site directory


@dataclass(frozen=True)
class OptionalModules:
    """Modules of a package imported only where a feature is asked for (a failed import
    makes the feature unavailable, not the package)."""

    distribution: str  # a glob of the normalised distribution name
    feature: str
    modules: tuple[str, ...]  # globs relative to the site directory

    def holds(self, distribution: str, relpath: str) -> bool:
        name = distribution.lower().replace("_", "-").replace(".", "-")
        return fnmatch.fnmatchcase(name, self.distribution) and any(
            fnmatch.fnmatchcase(relpath, m) for m in self.modules)


@dataclass(frozen=True)
class Conventions:
    preloads: tuple[Preload, ...]
    dll_directories: tuple[DllDirectories, ...]
    variants: tuple[Variants, ...]
    preload_lists: tuple[PreloadList, ...] = ()
    optional_modules: tuple[OptionalModules, ...] = ()

    def optional_feature(self, distribution: str, relpath: str) -> str | None:
        """The feature a module at ``relpath`` (relative to its site) of ``distribution``
        serves when it is one a failed import only disables, else None."""
        return next((o.feature for o in self.optional_modules
                     if o.holds(distribution, relpath)), None)  # fmt: skip


def _parse(data: dict[str, object]) -> Conventions:
    from cuwheel.knowledge._load import read_meta, tables

    chk = Checker(DATA_FILE)
    read_meta(data, chk)
    for key in data.keys() - {"meta", "preload", "dll_directories", "variants", "preload_list",
                              "optional_modules"}:
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
    variants = parse_variants(data, chk)
    lists = []
    for i, raw in enumerate(tables(data, "preload_list", chk)):
        f = chk.fields(raw, f"[[preload_list]] #{i + 1}",
                       {"carrier": str, "file": str, "source": str})  # fmt: skip
        if len(f) == 3:
            lists.append(PreloadList(f["carrier"], f["file"]))
    optional = []
    for i, raw in enumerate(tables(data, "optional_modules", chk)):
        f = chk.fields(raw, f"[[optional_modules]] #{i + 1}",
                       {"distribution": str, "feature": str, "modules": list, "source": str})
        if len(f) == 4:
            optional.append(OptionalModules(f["distribution"], f["feature"],
                                            tuple(str(m) for m in f["modules"])))
    if chk.problems:
        raise CatalogError(chk.problems)
    return Conventions(tuple(preloads), tuple(dlls), variants, tuple(lists), tuple(optional))


@functools.cache
def conventions() -> Conventions:
    from cuwheel.knowledge._load import read_data_file

    return _parse(read_data_file(DATA_FILE))

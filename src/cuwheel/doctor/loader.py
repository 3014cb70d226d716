"""Which file the loader takes for each library a binary needs, in one process of an
environment, and what goes wrong (docs/doctor.md#which-library-is-loaded).

Linux follows glibc's ld.so(8): a name with a slash is a path; a name a loaded object
already has as its SONAME is that object; else DT_RPATH of the object (when it has no
DT_RUNPATH) and of the objects that loaded it, ``LD_LIBRARY_PATH``, the object's own
DT_RUNPATH (for its direct dependencies only), the ld.so cache, the default directories.
``$ORIGIN`` is the directory of the object.  A candidate of another machine is skipped.
Carriers' preloads (torch's ``_load_global_deps``) come first, as ``import torch`` does.

Windows follows the search order of ``LoadLibraryExW`` with
``LOAD_LIBRARY_SEARCH_DEFAULT_DIRS`` that Python 3.8+ uses for extension modules: the
directory of the DLL being loaded, the folders given to ``os.add_dll_directory`` (those a
carrier adds, ``data/loaders.toml``), System32; not ``PATH``.  A DLL name already loaded
is that DLL.

Only what decides the CUDA libraries is followed: system libraries outside the
environment are resolved but not read unless their name is a CUDA library.
"""

from __future__ import annotations

import fnmatch
import os
from collections.abc import Callable
from dataclasses import dataclass, field

from cuwheel.doctor.conventions import conventions
from cuwheel.doctor.environment import Environment
from cuwheel.doctor.ldcache import LdCache
from cuwheel.doctor.preload import preload_list
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.linkage import binary_os
from cuwheel.knowledge.nvidia_symbols import first_release_exporting
from cuwheel.knowledge.platforms import load_platforms
from cuwheel.model.inventory import Binary

__all__ = [
    "Conflict",
    "Loaded",
    "Process",
    "Resolution",
    "SearchContext",
    "binary_os",
    "cannot_open",
    "simulate",
]

# Objects followed in one process at most: a bound on hostile or huge environments.
MAX_OBJECTS = 5000


def cannot_open(name: str) -> str:
    """glibc's dlerror text for a needed library no directory holds (what ``import`` or
    ``ctypes.CDLL`` raise, after ``ImportError:`` / ``OSError:``)."""
    return f"{name}: cannot open shared object file: No such file or directory"


MAX_SEARCH_DIRS = 4096


@dataclass(frozen=True)
class SearchContext:
    """What the loader of this machine searches besides the binaries' own run paths."""

    ld_library_path: tuple[str, ...] = ()
    ld_cache: LdCache | None = None
    default_dirs: tuple[str, ...] | None = None  # None: ld.so's for the machine
    # Environment variables that packages read (BNB_CUDA_VERSION).
    environ: tuple[tuple[str, str], ...] = ()

    @classmethod
    def from_environ(cls, env: dict[str, str], ld_cache: LdCache | None) -> SearchContext:
        # Each directory once, as the loader's search of it ends the same every time (131,000
        # empty entries are one "."), and at most MAX_SEARCH_DIRS of them.
        llp = tuple(dict.fromkeys(env.get("LD_LIBRARY_PATH", "").split(":")))[:MAX_SEARCH_DIRS] \
            if env.get("LD_LIBRARY_PATH") else ()
        keep = tuple(sorted((k, v) for k, v in env.items() if k.startswith("BNB_")))
        return cls(llp, ld_cache, None, keep)


@dataclass(frozen=True)
class Resolution:
    """One needed name of one object: the file the loader takes, and how it found it."""

    needed_by: str  # path of the object that needs it
    name: str
    path: str | None  # None: not found
    how: str  # "RUNPATH $ORIGIN/../lib", "LD_LIBRARY_PATH", "ld.so cache", "already loaded"
    searched: tuple[str, ...] = ()  # directories tried, in order


@dataclass(frozen=True)
class Loaded:
    """An object in the process: where from, who loaded it first and how."""

    path: str
    name: str  # its SONAME (or file name)
    by: str  # the object that needed it, or "torch preload"
    how: str
    binary: Binary | None  # None when not read (a system library)


@dataclass(frozen=True)
class Conflict:
    code: str  # ENV004 ...
    library: str  # the soname concerned
    message: str
    error_text: str | None = None  # the exact error the import raises, where one does
    paths: tuple[str, ...] = ()
    by: str | None = None  # the object whose load it concerns (for the report's owner)


@dataclass
class Process:
    """The objects one process of the environment loads, in order, and the conflicts."""

    loaded: dict[str, Loaded] = field(default_factory=dict)  # by SONAME / DLL name
    order: list[str] = field(default_factory=list)
    resolutions: list[Resolution] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    preloaded_by: str | None = None


def _once(dirs: list[str]) -> tuple[str, ...]:
    return tuple(dict.fromkeys(dirs))


def _expand(entry: str, origin: str) -> str:
    return entry.replace("${ORIGIN}", origin).replace("$ORIGIN", origin)


class _Simulation:
    def __init__(self, env: Environment, ctx: SearchContext,
                 reader: Callable[[str], Binary | None]) -> None:  # fmt: skip
        self.env = env
        self.ctx = ctx
        self.reader = reader
        self.known = {b.path: b for d in env.distributions for b in d.binaries}
        self.read_cache: dict[str, Binary | None] = {}
        self.proc = Process()
        self.missing_seen: set[str] = set()

    # -- reading ---------------------------------------------------------------------
    def binary(self, path: str) -> Binary | None:
        b = self.known.get(path) or self.known.get(os.path.realpath(path))
        if b is not None:
            return b
        if path not in self.read_cache:
            self.read_cache[path] = self.reader(path)
        return self.read_cache[path]

    def worth_reading(self, path: str, name: str, os_name: str) -> bool:
        return self.env.inside(path) or active_catalog().is_cuda_library(name, os_name)

    # -- Linux ---------------------------------------------------------------------------
    def search_linux(self, obj: Binary, path: str, name: str,
                     chain: tuple[tuple[Binary, str], ...]) -> Resolution:  # fmt: skip
        if "/" in name:
            p = _expand(name, os.path.dirname(path))
            return Resolution(path, name, p if os.path.isfile(p) else None, "path")
        if name in self.proc.loaded:
            return Resolution(path, name, self.proc.loaded[name].path, "already loaded")
        tried: list[str] = []
        stages: list[tuple[str, list[tuple[str, str]]]] = []
        if not obj.runpath:
            rp = []
            for o, opath in ((obj, path), *chain):
                if o.runpath:
                    break
                rp += [(e, os.path.dirname(opath)) for e in o.rpath]
            stages.append(("RPATH", [(e, _expand(e, org)) for e, org in rp]))
        stages.append(("LD_LIBRARY_PATH", [(d, d) for d in self.ctx.ld_library_path]))
        stages.append(("RUNPATH", [(e, _expand(e, os.path.dirname(path))) for e in obj.runpath]))
        for stage, dirs in stages:
            for raw, d in dirs:
                cand = os.path.join(d or ".", name)
                tried.append(d or ".")
                if os.path.isfile(cand) and self.machine_fits(obj, cand, name):
                    how = stage if stage == "LD_LIBRARY_PATH" else f"{stage} {raw}"
                    return Resolution(path, name, os.path.normpath(cand), how, _once(tried))
        if self.ctx.ld_cache is not None:
            hit = self.ctx.ld_cache.lookup(name, obj.machine)
            tried.append(f"ld.so cache ({self.ctx.ld_cache.path})")
            if hit and os.path.isfile(hit):
                return Resolution(path, name, hit, "ld.so cache", _once(tried))
        defaults = self.ctx.default_dirs
        if defaults is None:
            # ld.so(8)'s default path for the object's machine (data/platforms.toml)
            defaults = load_platforms().linux.loader_dirs(obj.machine)
        for d in defaults:
            tried.append(d)
            cand = os.path.join(d, name)
            if os.path.isfile(cand) and self.machine_fits(obj, cand, name):
                return Resolution(path, name, cand, "default directory", _once(tried))
        return Resolution(path, name, None, "not found", _once(tried))

    def machine_fits(self, obj: Binary, cand: str, name: str) -> bool:
        if not self.worth_reading(cand, name, "linux"):
            return True
        b = self.binary(cand)
        return b is None or b.machine is None or obj.machine is None or b.machine == obj.machine

    # -- Windows -------------------------------------------------------------------------
    def search_windows(self, path: str, name: str) -> Resolution:
        key = name.lower()
        if key in self.proc.loaded:
            return Resolution(path, name, self.proc.loaded[key].path, "already loaded")
        dirs = [("the DLL's directory", os.path.dirname(path))]
        for dd in conventions().dll_directories:
            if self.env.distribution(dd.carrier) is None:
                continue
            for site in self.env.sites:
                dirs += [(f"os.add_dll_directory ({dd.carrier})", os.path.join(site, f))
                         for f in dd.folders if os.path.isdir(os.path.join(site, f))]  # fmt: skip
        tried = []
        for how, d in dirs:
            tried.append(d)
            try:
                names = {n.lower(): n for n in os.listdir(d)}  # DLL names are not case-sensitive
            except OSError:
                continue
            if key in names:
                return Resolution(path, name, os.path.join(d, names[key]), how, _once(tried))
        return Resolution(path, name, None, "not found", _once(tried))

    # -- the process -----------------------------------------------------------------------
    def load(self, path: str, by: str, how: str) -> None:
        """Load ``path`` and, breadth first, what it needs."""
        queue: list[tuple[str, str, str, tuple[tuple[Binary, str], ...]]] = [(path, by, how, ())]
        while queue and len(self.proc.order) < MAX_OBJECTS:
            p, who, how_, chain = queue.pop(0)
            b = self.binary(p)
            name = (b.soname if b is not None and b.soname else os.path.basename(p))
            key = name.lower() if b is not None and b.format == "pe" else name
            if b is not None and b.format != "pe" and not b.soname:
                key = p  # no SONAME: ld.so knows the object by its path only
            if key in self.proc.loaded:
                continue
            self.proc.loaded[key] = Loaded(p, name, who, how_, b)
            self.proc.order.append(key)
            if b is None:
                continue
            os_name = binary_os(b)
            for need in b.needed:
                if os_name == "linux" and active_catalog().is_driver_library(need):
                    continue  # the driver's: never the environment's to provide
                if os_name == "windows" and not active_catalog().is_cuda_library(need, "windows"):
                    continue  # system DLLs (kernel32, the CRT) are not followed
                r = (self.search_windows(p, need) if os_name == "windows"
                     else self.search_linux(b, p, need, chain))  # fmt: skip
                self.proc.resolutions.append(r)
                if r.path is None:
                    self.report_missing(b, p, need, r, os_name)
                    continue
                if r.how == "already loaded":
                    continue
                if os_name == "linux" and not self.worth_reading(r.path, need, "linux"):
                    nm = need
                    if nm not in self.proc.loaded:
                        self.proc.loaded[nm] = Loaded(r.path, nm, p, r.how, None)
                        self.proc.order.append(nm)
                    continue
                queue.append((r.path, p, r.how, ((b, p), *chain)))

    def report_missing(self, b: Binary, path: str, name: str, r: Resolution, os_name: str) -> None:
        shipped = self.env.index.get(name, ())
        owner = self.env.owner(path)
        feature = owner and conventions().optional_feature(
            owner.name, os.path.relpath(path, owner.site).replace(os.sep, "/"))
        key = f"{name} {feature}" if feature else name
        cuda = active_catalog().is_cuda_library(name, os_name)
        if not (cuda or shipped) or key in self.missing_seen:
            return
        self.missing_seen.add(key)
        comps = active_catalog().find_library(name, os=os_name)
        where = ""
        if shipped:
            where = f"; the environment has it at {shipped[0]}, which no search reaches"
        elif comps:
            where = f"; it ships in {' or '.join(sorted({c.distribution for c in comps}))}"
        if os_name == "windows":
            text = (f"DLL load failed while importing {os.path.basename(path).split('.')[0]}: "
                    "The specified module could not be found.")  # fmt: skip
        else:
            text = cannot_open(name)
        msg = (f"{name}, needed by {path}, is in none of the directories searched "
               f"({', '.join(r.searched) or 'none'}){where}")  # fmt: skip
        if feature and owner:
            # imported only inside try/except ImportError (data/loaders.toml)
            msg += (f": {owner.name} imports this module only for its optional {feature} "
                    f"support, which is unavailable; the rest of {owner.name} loads")
            self.proc.conflicts.append(Conflict("ENV010", name, msg, text, (path,), path))
            return
        self.proc.conflicts.append(Conflict("ENV004", name, msg, text, (path,), path))

    # -- preloads ----------------------------------------------------------------------------
    def preload(self) -> None:
        """A carrier's preloads, as its import does them (data/loaders.toml)."""
        for pre in conventions().preloads:
            if self.env.distribution(pre.carrier) is None:
                continue
            first = next((os.path.join(s, pre.first) for s in self.env.sites
                          if os.path.isfile(os.path.join(s, pre.first))), None)  # fmt: skip
            if first is None:
                continue
            label = f"{pre.carrier} preload"
            self.load(first, label, f"import {pre.carrier}")
            if not any(k.startswith("libcudart.so") for k in self.proc.loaded):
                continue
            self.proc.preloaded_by = pre.carrier
            major = self.env.torch_cuda[0] if self.env.torch_cuda else None
            for folder, pattern in pre.libraries:
                hit = self.preload_path(folder, pattern, major)
                if hit is not None:
                    self.load(hit, label, f"{label} from {os.path.dirname(hit)}")

        for pl in conventions().preload_lists:
            if self.env.distribution(pl.carrier) is not None:
                for hit in preload_list(self.env, pl.file):
                    self.load(hit, f"{pl.carrier} preload", f"import {pl.carrier}: {pl.file}")

    def preload_path(self, folder: str, pattern: str, major: int | None) -> str | None:
        for site in self.env.sites:
            dirs = [os.path.join(site, "nvidia", folder, "lib")]
            if major is not None:
                dirs.append(os.path.join(site, "nvidia", f"cu{major}", "lib"))
            dirs.append(os.path.join(site, folder, "lib"))
            for d in dirs:
                try:
                    names = sorted(os.listdir(d))
                except OSError:
                    continue
                for n in names:
                    if fnmatch.fnmatchcase(n, pattern):
                        return os.path.join(d, n)
        return None

    # -- what is wrong -----------------------------------------------------------------------
    def judge(self) -> None:
        stems: dict[str, list[Loaded]] = {}
        for key in self.proc.order:
            lo = self.proc.loaded[key]
            if ".so." in lo.name and active_catalog().is_cuda_library(lo.name, "linux"):
                stems.setdefault(lo.name.split(".so.", 1)[0], []).append(lo)
        for stem, los in stems.items():
            if len({lo.name for lo in los}) > 1:
                what = "; ".join(f"{lo.name} from {lo.path} (needed by {lo.by}, {lo.how})"
                                 for lo in los)  # fmt: skip
                self.proc.conflicts.append(Conflict(
                    "ENV005", stem,
                    f"{len(los)} versions of {stem} in one process: {what}",
                    None, tuple(lo.path for lo in los), los[-1].by))  # fmt: skip
        for key in self.proc.order:
            lo = self.proc.loaded[key]
            if self.env.inside(lo.path) or lo.binary is None or lo.binary.format == "pe":
                continue
            if not active_catalog().is_cuda_library(lo.name, "linux"):
                continue
            ours = [p for p in self.env.index.get(lo.name, ()) if p != lo.path]
            if ours:
                self.proc.conflicts.append(Conflict(
                    "ENV006", lo.name,
                    f"{lo.name} resolves to {lo.path} ({lo.how}, needed by {lo.by}), not to "
                    f"the environment's {ours[0]}",
                    None, (lo.path, ours[0]), lo.by))  # fmt: skip
        for key in self.proc.order:
            lo = self.proc.loaded[key]
            if lo.binary is None:
                continue
            for u in lo.binary.undefined:
                if u.weak or u.version is None or u.library is None:
                    continue
                prov = self.proc.loaded.get(u.library)
                if (prov is None or prov.binary is None
                        or not active_catalog().is_cuda_library(u.library, "linux")):
                    continue
                pb = prov.binary
                if u.version not in pb.version_defs:
                    text = (f"{prov.path}: version `{u.version}' not found "
                            f"(required by {lo.path})")  # fmt: skip
                elif u.name not in pb.exported:
                    text = f"{lo.path}: undefined symbol: {u.name}, version {u.version}"
                else:
                    continue
                first = first_release_exporting(u.library, u.name, "linux")
                since = (f"; {first.distribution} {first.first} is the first release that "
                         f"does: install {first.requirement()}"
                         if first is not None and not first.at_first_read else "")
                self.proc.conflicts.append(Conflict(
                    "ENV007", u.library,
                    f"{lo.name} needs {u.name}@{u.version} of {u.library}; the copy loaded, "
                    f"{prov.path} ({prov.how}), does not define it{since}",
                    text, (lo.path, prov.path), lo.path))  # fmt: skip
                break  # one symbol per object is enough to fail its load


def simulate(
    env: Environment,
    entries: list[str],
    ctx: SearchContext,
    reader: Callable[[str], Binary | None],
) -> Process:
    """Load the carriers' preloads, then every path of ``entries`` (the environment's
    modules), into one process; resolve and judge what they need."""
    sim = _Simulation(env, ctx, reader)
    sim.preload()
    for path in entries:
        sim.load(path, "import", "an entry of the environment")
    sim.judge()
    return sim.proc

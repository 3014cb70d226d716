"""data/nvidia_symbols.toml: which release of an NVIDIA library's wheel first exports each
dynamic symbol, and which no longer does, read from NVIDIA's wheels on PyPI by
tools/nvidia_symbols.py (the wheels' file names and sha256 are the source).

NVIDIA versions its C APIs in the symbol names, not in ELF version nodes: nvJitLink
exports ``__nvJitLinkAddData_12_4`` from 12.4 on (its header maps ``nvJitLinkAddData`` to
the newest), cuFFT ``__cufftXtSetJITCallback_12_7`` (from 11.3.0.4), cuBLAS ``cublasCreate_v2`` and
``cublasSgemm_64``; the one version node each library defines repeats its SONAME
(``libnvJitLink.so.12``; NCCL defines none).  A binary that references a symbol added in
release R needs R or newer of the distribution, whatever its requirement says
(docs/checks.md#dep013).

The data lists, per library, the symbols new in each release read after the first; for
the first release, only the names that carry a release in them (``_12_0``), so that an
``undefined symbol: __nvJitLinkAddData_12_0`` can still be placed.  ``[[carrier_pins]]``:
the NVIDIA releases each torch release's Linux x86_64 wheel pins in its METADATA, and
each cuda-toolkit release's (platform ``any``).
Named to sit beside a resolver of other packages' symbols (torch's): ``SymbolHistory`` is
one package's library over its releases, ``first_release_exporting`` the one question
asked of it."""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from packaging.utils import InvalidWheelFilename, parse_wheel_filename
from packaging.version import InvalidVersion, Version

from cuwheel._datafiles import NVIDIA_SYMBOLS
from cuwheel._validate import Checker
from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import DataSource, each_table, read_data_file, read_meta

__all__ = [
    "DATA_FILE",
    "CarrierPins",
    "SymbolHistories",
    "SymbolHistory",
    "SymbolRelease",
    "build_symbol_histories",
    "first_release_exporting",
    "load_symbol_histories",
    "release_suffix",
]

DATA_FILE = NVIDIA_SYMBOLS
_OS = frozenset({"linux", "windows"})
_WHEEL = re.compile(r"(\S+\.whl) sha256:([0-9a-f]{64})")
# A release in a symbol's name: __nvJitLinkAddData_12_4, __cufftXtSetJITCallback_12_7.
_SUFFIX = re.compile(r"_([0-9]{1,3})_([0-9]{1,3})$")


def release_suffix(symbol: str) -> tuple[int, int] | None:
    """The (major, minor) a symbol's name carries (``_12_4``), or None."""
    m = _SUFFIX.search(symbol)
    return (int(m[1]), int(m[2])) if m else None


@dataclass(frozen=True)
class SymbolRelease:
    """Where one symbol of one library starts (and stops) among the releases read."""

    distribution: str
    library: str
    symbol: str
    first: str  # the first release read that exports it
    removed: str | None  # the first release read after ``first`` that no longer does
    at_first_read: bool  # ``first`` is the oldest release read: it may be older still

    def requirement(self) -> str:
        """What a requirement on the distribution must say to get the symbol."""
        spec = "" if self.at_first_read else f">={self.first}"
        if self.removed is not None:
            spec += ("," if spec else "") + f"<{self.removed}"
        return self.distribution + spec


@dataclass(frozen=True)
class SymbolHistory:
    """One library file of one distribution on one OS over the releases read."""

    distribution: str
    os: str
    library: str  # file name: libnvJitLink.so.12, nvJitLink_120_0.dll
    version_nodes: tuple[str, ...]
    releases: tuple[str, ...]  # read, oldest first
    wheels: tuple[tuple[str, str], ...]  # (file name, sha256) per release
    added: Mapping[str, str]  # symbol -> release that first exports it
    removed: Mapping[str, str]  # symbol -> first later release that no longer does

    def lookup(self, symbol: str) -> SymbolRelease | None:
        first = self.added.get(symbol)
        if first is None:
            return None
        return SymbolRelease(self.distribution, self.library, symbol, first,
                             self.removed.get(symbol), first == self.releases[0])

    def exports(self, symbol: str, release: str) -> bool | None:
        """Whether ``release`` (one read) exports ``symbol``; None when the data cannot say
        (a symbol of no record, a release not read)."""
        if symbol not in self.added or release not in self.releases:
            return None
        v = Version(release)
        if v < Version(self.added[symbol]):
            return False
        gone = self.removed.get(symbol)
        return gone is None or v < Version(gone)


    def exports_at(self, symbol: str, version: str) -> bool | None:
        """Whether a release, read or not, exports ``symbol``: True from its first release
        read to its removal, False up to the last release read before that first (and from
        the removal on); None between those two, before the first release read, or for a
        symbol of no record.  Releases between two read are taken to agree with both."""
        if symbol not in self.added:
            return None
        v = Version(version)
        first = Version(self.added[symbol])
        gone = self.removed.get(symbol)
        if gone is not None and v >= Version(gone):
            return False
        if v >= first:
            return True
        before = [Version(r) for r in self.releases if Version(r) < first]
        return False if before and v <= max(before) else None


@dataclass(frozen=True)
class CarrierPins:
    """The NVIDIA releases one release of a carrier (torch) pins in its METADATA on a
    platform (through ``cuda-toolkit[...]==X``: that cuda-toolkit's pins)."""

    carrier: str
    platform: str
    release: str
    wheel: str
    pins: Mapping[str, str]  # distribution -> version


@dataclass(frozen=True)
class SymbolHistories:
    libraries: tuple[SymbolHistory, ...]
    meta: DataSource | None
    carrier_pins: tuple[CarrierPins, ...] = ()

    def pins_of(self, carrier: str, platform: str | None) -> tuple[CarrierPins, ...]:
        return tuple(p for p in self.carrier_pins if p.carrier == carrier and (
            platform is None or p.platform in (platform, "any")))

    def of(self, library: str, os: str | None = None) -> tuple[SymbolHistory, ...]:
        """The histories of a library file name (DLL names: any case), every distribution."""
        key = library.lower() if library.lower().endswith(".dll") else library
        return tuple(
            h for h in self.libraries
            if (h.library.lower() if key.endswith(".dll") else h.library) == key
            and (os is None or h.os == os)
        )  # fmt: skip


def _releases(chk: Checker, where: str, raw: Any, names: Mapping[str, Any]) -> dict[str, str]:
    out: dict[str, str] = {}
    if not isinstance(raw, dict):
        chk.problem(where, "expected a table of release = [symbols]")
        return out
    for release, symbols in raw.items():
        if release not in names:
            chk.problem(where, f"release {release!r} is not one of the releases read")
            continue
        if not isinstance(symbols, list) or not all(isinstance(s, str) and s for s in symbols):
            chk.problem(f"{where}.{release}", "expected an array of symbol names")
            continue
        for s in symbols:
            if s in out:
                chk.problem(f"{where}.{release}", f"{s!r} is listed twice")
            out[s] = release
    return out


def build_symbol_histories(data: Mapping[str, Any], file: str = DATA_FILE) -> SymbolHistories:
    """Validate a parsed ``nvidia_symbols.toml``; CatalogError listing every problem."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    sources: dict[tuple[str, str], dict[str, tuple[str, str]]] = {}  # -> release -> wheel
    for i, f in enumerate(each_table(data, "source", chk, {"distribution": str, "os": str,
                                                           "wheels": list})):
        where = f"source[{i}]"
        if len(f) < 3:
            continue
        by_release: dict[str, tuple[str, str]] = {}
        for w in f["wheels"]:
            m = _WHEEL.fullmatch(w) if isinstance(w, str) else None
            if m is None:
                chk.problem(where, f"'wheels' must give '<file>.whl sha256:<hex>': {w!r}")
                continue
            try:
                release = str(parse_wheel_filename(m[1])[1])
            except (InvalidWheelFilename, InvalidVersion):
                chk.problem(where, f"not a wheel file name: {m[1]!r}")
                continue
            by_release[release] = (m[1], m[2])
        sources[(f["distribution"], f["os"])] = by_release
    out: list[SymbolHistory] = []
    seen: set[tuple[str, str, str]] = set()
    required = {"distribution": str, "os": str, "library": str, "releases": list,
                "version_nodes": list}
    for i, f in enumerate(each_table(data, "library", chk, required,
                                     {"added": dict, "removed": dict})):
        where = f"library[{i}]"
        if not required.keys() <= f.keys():
            continue
        if f["os"] not in _OS:
            chk.problem(where, f"os must be one of {sorted(_OS)}: {f['os']!r}")
        key = (f["distribution"], f["os"], f["library"])
        if key in seen:
            chk.problem(where, f"{key} is listed twice")
        seen.add(key)
        try:
            versions = [Version(r) for r in f["releases"]]
        except (InvalidVersion, TypeError):
            chk.problem(where, "'releases' must be versions")
            continue
        if not versions or versions != sorted(set(versions)):
            chk.problem(where, "'releases' must be distinct and oldest first")
        source = sources.get((f["distribution"], f["os"]), {})
        wheels = [source.get(str(v)) for v in versions]
        if not all(wheels):
            chk.problem(where, "a release read has no wheel in the [[source]] of "
                        f"{f['distribution']} on {f['os']}")
        names = {r: True for r in f["releases"]}
        added = _releases(chk, f"{where}.added", f.get("added", {}), names)
        removed = _releases(chk, f"{where}.removed", f.get("removed", {}), names)
        for s, r in removed.items():
            if s not in added:
                continue  # exported by the first release read, with no release in its name
            if Version(r) <= Version(added[s]):
                chk.problem(f"{where}.removed", f"{s!r} is removed before it is added")
        out.append(SymbolHistory(
            f["distribution"], f["os"], f["library"], tuple(f["version_nodes"]),
            tuple(f["releases"]), tuple(w for w in wheels if w), added, removed,
        ))  # fmt: skip
    pins: list[CarrierPins] = []
    for i, f in enumerate(each_table(data, "carrier_pins", chk,
                                     {"carrier": str, "platform": str, "release": str,
                                      "wheel": str, "pins": list}, {"via": str})):
        where = f"carrier_pins[{i}]"
        if len(f) < 5:
            continue
        pinned: dict[str, str] = {}
        for text in f["pins"]:
            name, _, version = str(text).partition("==")
            try:
                Version(version)
            except InvalidVersion:
                chk.problem(where, f"not a pin NAME==VERSION: {text!r}")
                continue
            pinned[name] = version
        pins.append(CarrierPins(f["carrier"], f["platform"], f["release"], f["wheel"], pinned))
    if chk.problems:
        raise CatalogError(chk.problems)
    return SymbolHistories(tuple(out), meta, tuple(pins))


@functools.cache
def load_symbol_histories() -> SymbolHistories:
    """The shipped ``nvidia_symbols.toml``, read and validated once."""
    return build_symbol_histories(read_data_file(DATA_FILE))


def first_release_exporting(
    library: str, symbol: str, os: str | None = None, distribution: str | None = None
) -> SymbolRelease | None:
    """The first release of the wheel that ships ``library`` (a file name:
    ``libnvJitLink.so.12``, ``nvJitLink_120_0.dll``) to export ``symbol``; for a name
    several distributions ship (``libcusparse.so.12``: nvidia-cusparse-cu12 and
    nvidia-cusparse), the oldest such release unless ``distribution`` names one.  None when
    no release read exports it after the first (or the library is not in the data)."""
    found = [
        r for h in load_symbol_histories().of(library, os)
        if distribution is None or h.distribution == distribution
        if (r := h.lookup(symbol)) is not None
    ]  # fmt: skip
    return min(found, key=lambda r: Version(r.first), default=None)

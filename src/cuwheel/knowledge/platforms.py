"""data/platforms.toml: every platform cuwheel names (release rows' and the toolkit's), with
its wheel tags (PEP 425 / 600 / 656), PEP 508 markers, machines, native binary format and
NVIDIA's names for it (redistrib manifest keys, wheel tags of NVIDIA's wheels).

:func:`load_platforms` reads and validates the file once; :func:`platform_record` and
:func:`platform_for_wheel_tag` look a platform up; :func:`host_platform` is this machine's.
"""

from __future__ import annotations

import fnmatch
import functools
import platform as _platform
import re
import sys
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._datafiles import PLATFORMS
from cuwheel._validate import Checker, TableList, did_you_mean
from cuwheel.errors import CatalogError, UnknownName
from cuwheel.knowledge._load import DataSource, read_data_file, read_meta, tables

__all__ = [
    "BINARY_FORMATS",
    "DATA_FILE",
    "MARKER_KEYS",
    "OSES",
    "LinuxFacts",
    "Platform",
    "Platforms",
    "build_platforms",
    "host_platform",
    "load_platforms",
    "platform_for_wheel_tag",
    "platform_record",
]

DATA_FILE = PLATFORMS
OSES = ("linux", "windows")
BINARY_FORMATS = ("elf", "pe")
MARKER_KEYS = ("sys_platform", "platform_system", "platform_machine", "os_name")
# a wheel platform tag glob: PEP 425 tags are [a-z0-9_] (get_platform() with '-', '.' -> '_')
_TAG_GLOB = re.compile(r"[a-z0-9_*]+")


@dataclass(frozen=True)
class Platform:
    """One platform: a platform of release rows (``row``), a toolkit target (``redist``),
    or both."""

    name: str  # "linux-x86_64", "linux-sbsa", "win-amd64"
    os: str  # "linux" / "windows"
    row: bool
    row_platform: str  # the row platform its machines belong to (itself for a row platform)
    tegra: bool
    sysconfig: str | None  # sysconfig.get_platform() of its Python
    machines: tuple[str, ...]  # platform.machine(), lower-cased
    markers: tuple[tuple[str, str], ...]  # PEP 508 marker -> value
    binary_format: str  # "elf" / "pe"
    binary_machine: str  # "x86_64", "aarch64", "AMD64", "ARM64" (the inventory's names)
    binary_code: int | None  # its ELF e_machine / PE Machine number
    wheel_tags: tuple[str, ...] = ()  # fnmatch patterns over wheel platform tags
    pip_platforms: tuple[str, ...] = ()  # pip --platform tags of NVIDIA's wheels for it
    redist: tuple[tuple[int, str], ...] = ()  # CUDA major -> redistrib manifest key
    nvidia_wheels: tuple[int, ...] = ()  # CUDA majors with NVIDIA component wheels
    note: str | None = None
    toolkit_dll_dirs: tuple[str, ...] = ()  # a toolkit tree's DLL folders besides bin/

    @property
    def toolkit(self) -> bool:
        """A platform ``cuwheel toolkit`` assembles for (NVIDIA publishes archives)."""
        return bool(self.redist)

    def marker_environment(self) -> dict[str, str]:
        return dict(self.markers)

    def redist_key(self, major: int) -> str | None:
        """The platform key of CUDA ``major``'s redistrib manifests; None: no archives."""
        return dict(self.redist).get(major)

    def matches_tag(self, tag: str) -> bool:
        return any(fnmatch.fnmatchcase(tag, pat) for pat in self.wheel_tags)


@dataclass(frozen=True)
class LinuxFacts:
    """platforms.toml ``[linux]``: what the manylinux checks need to know of Linux."""

    tag_arch: tuple[tuple[str, str], ...] = ()  # ELF machine -> manylinux tag architecture
    loaders: tuple[str, ...] = ()  # fnmatch patterns of the dynamic loader's names
    interpreter_libraries: tuple[str, ...] = ()  # NEEDED by CPython on glibc < 2.34
    ld_cache_abi: tuple[tuple[str, int], ...] = ()  # ELF machine -> ld.so.cache ABI bits
    default_dirs: tuple[str, ...] = ()  # the loader's default directories (ld.so(8))
    # ELF machine -> its loader's default directories where they are not default_dirs
    default_dirs_by_machine: tuple[tuple[str, tuple[str, ...]], ...] = ()

    def arch_of(self, machine: str | None) -> str | None:
        """``i386`` -> ``i686``; None for a machine no Linux wheel tag names."""
        return dict(self.tag_arch).get(machine or "")

    def cache_abi(self, machine: str | None) -> int | None:
        """The ABI bits (``flags & 0xff00``) of the ld.so cache entries ``machine``'s loader
        takes; None for a machine of no entry here (any entry then)."""
        return dict(self.ld_cache_abi).get(machine or "")

    def loader_dirs(self, machine: str | None) -> tuple[str, ...]:
        """The directories ``machine``'s loader searches last (``/lib64``, ``/usr/lib64``)."""
        return dict(self.default_dirs_by_machine).get(machine or "", self.default_dirs)

    def is_loader(self, name: str) -> bool:
        return any(fnmatch.fnmatchcase(name, p) for p in self.loaders)


@dataclass(frozen=True)
class Platforms:
    platforms: tuple[Platform, ...]
    meta: DataSource | None
    linux: LinuxFacts = LinuxFacts()

    @property
    def rows(self) -> tuple[Platform, ...]:
        return tuple(p for p in self.platforms if p.row)

    @property
    def toolkits(self) -> tuple[Platform, ...]:
        return tuple(p for p in self.platforms if p.toolkit)

    def get(self, name: str) -> Platform | None:
        return next((p for p in self.platforms if p.name == name), None)

    def record(self, name: str) -> Platform:
        """The platform named ``name``; UnknownName (listing the known ones) otherwise."""
        p = self.get(name)
        if p is not None:
            return p
        names = [q.name for q in self.platforms]
        shown = name if len(name) <= 40 else name[:40] + "..."
        raise UnknownName(
            f"unknown platform {shown!r}{did_you_mean(shown, names)}; known: {', '.join(names)}"
        )

    def for_wheel_tag(self, tag: str) -> Platform | None:
        """The row platform of a wheel platform tag (``manylinux_2_28_x86_64`` ->
        linux-x86_64); None for a tag of no row platform (``macosx_14_0_arm64``)."""
        return next((p for p in self.rows if p.matches_tag(tag)), None)

    def cpu(self, machine: str | None) -> str | None:
        """The ELF name of a machine, one name per instruction set whatever the OS calls it
        (``AMD64`` / ``amd64`` -> x86_64, ``ARM64`` / ``arm64`` -> aarch64): the Linux
        platform's binary machine whose ``platform.machine()`` names include it; None for
        a machine of no platform."""
        m = (machine or "").lower()
        return next(
            (p.binary_machine for p in self.platforms if p.binary_format == "elf"
             and m and (m in p.machines or m == p.binary_machine.lower())),
            None,
        )  # fmt: skip

    def os_of_sys_platform(self, sys_platform: str | None) -> str | None:
        """The OS of a ``sys.platform`` value (``win32`` -> windows); None for another."""
        return next((p.os for p in self.platforms
                     if dict(p.markers)["sys_platform"] == sys_platform), None)  # fmt: skip

    def os_of_format(self, binary_format: str | None) -> str | None:
        """The OS whose loader reads ``binary_format`` (``pe`` -> windows); None for another."""
        return next((p.os for p in self.platforms if p.binary_format == binary_format), None)

    def host(self, sys_platform: str, machine: str) -> Platform | None:
        """The platform of a machine (``sys.platform``, ``platform.machine()``): never a
        Tegra build (a Jetson is told from an Arm server by nothing these two say)."""
        m = machine.lower()
        return next(
            (p for p in self.platforms if not p.tegra and m in p.machines
             and dict(p.markers).get("sys_platform") == sys_platform),
            None,
        )  # fmt: skip


def _int_list(chk: Checker, where: str, key: str, value: object) -> tuple[int, ...]:
    if not isinstance(value, list) or not all(
        isinstance(v, int) and not isinstance(v, bool) for v in value
    ):
        chk.problem(where, f"{key!r} must be a list of integers")
        return ()
    return tuple(value)


def _one(chk: Checker, i: int, raw: object) -> Platform | None:
    where = f"platform[{i}]"
    f = chk.fields(
        raw, where,
        {"name": str, "os": str, "row": bool, "machines": list, "markers": dict, "binary": dict},
        {"row_platform": str, "tegra": bool, "sysconfig": str, "wheel_tags": list,
         "pip_platforms": list, "redist": dict, "nvidia_wheels": TableList, "note": str,
         "toolkit_dll_dirs": list},
    )  # fmt: skip
    if not {"name", "os", "row", "machines", "markers", "binary"} <= f.keys():
        return None
    where = f"platform {f['name']}"
    if f["os"] not in OSES:
        chk.problem(where, f"os must be one of {OSES}: {f['os']!r}")
    markers = chk.fields(f["markers"], f"{where}: markers", dict.fromkeys(MARKER_KEYS, str))
    b = chk.fields(f["binary"], f"{where}: binary", {"format": str, "machine": str},
                   {"e_machine": int, "pe_machine": int})
    if b.get("format") not in BINARY_FORMATS:
        chk.problem(where, f"binary format must be one of {BINARY_FORMATS}")
    if (b.get("format") == "pe") != (f["os"] == "windows"):
        chk.problem(where, "PE binaries are Windows', ELF binaries Linux'")
    if ("e_machine" in b and b.get("format") != "elf") or ("pe_machine" in b and b.get(
        "format"
    ) != "pe"):
        chk.problem(where, "e_machine is an ELF number, pe_machine a PE one")
    for tag in (*f.get("wheel_tags", []), *f.get("pip_platforms", [])):
        if not _TAG_GLOB.fullmatch(tag):
            chk.problem(where, f"not a wheel platform tag: {tag!r}")
    if f["row"] and not f.get("wheel_tags"):
        chk.problem(where, "a row platform needs wheel_tags")
    if f["row"] and f.get("row_platform", f["name"]) != f["name"]:
        chk.problem(where, "a row platform is its own row_platform")
    redist: list[tuple[int, str]] = []
    for major, key in (f.get("redist") or {}).items():
        if not re.fullmatch(r"[0-9]{1,3}", major) or not isinstance(key, str):
            chk.problem(where, f"redist: expected a CUDA major = manifest key: {major!r}")
        else:
            redist.append((int(major), key))
    wheels = _int_list(chk, where, "nvidia_wheels", f.get("nvidia_wheels", []))
    if wheels and not f.get("pip_platforms"):
        chk.problem(where, "nvidia_wheels needs pip_platforms")
    dll_dirs = f.get("toolkit_dll_dirs", [])
    if not all(isinstance(d, str) and d.startswith("bin/") and ".." not in d.split("/")
               for d in dll_dirs):  # fmt: skip
        chk.problem(where, "toolkit_dll_dirs: expected folders under bin/ of the tree")
        dll_dirs = []
    if dll_dirs and f["os"] != "windows":
        chk.problem(where, "toolkit_dll_dirs: DLLs are Windows'")
    if len(markers) < len(MARKER_KEYS) or {"format", "machine"} - b.keys():
        return None
    return Platform(
        f["name"], f["os"], f["row"], f.get("row_platform", f["name"]), f.get("tegra", False),
        f.get("sysconfig"), tuple(m.lower() for m in f["machines"]),
        tuple((k, markers[k]) for k in MARKER_KEYS), b["format"], b["machine"],
        b.get("e_machine", b.get("pe_machine")),
        tuple(f.get("wheel_tags", [])), tuple(f.get("pip_platforms", [])), tuple(redist),
        wheels, f.get("note"), tuple(dll_dirs),
    )  # fmt: skip


def build_platforms(data: Mapping[str, Any], file: str = DATA_FILE) -> Platforms:
    """Validate a parsed ``platforms.toml``; CatalogError listing every problem."""
    chk = Checker(file)
    meta = read_meta(data, chk)
    out: list[Platform] = []
    for i, raw in enumerate(tables(data, "platform", chk)):
        p = _one(chk, i, raw)
        if p is not None:
            out.append(p)
    names = [p.name for p in out]
    if len(set(names)) != len(names):
        chk.problem("platform", "duplicate platform names")
    rows = {p.name for p in out if p.row}
    for p in out:
        if p.row_platform not in rows:
            chk.problem(f"platform {p.name}", f"row_platform {p.row_platform!r} is no row platform")
    hosts = [(dict(p.markers)["sys_platform"], m) for p in out if not p.tegra for m in p.machines]
    if len(set(hosts)) != len(hosts):
        chk.problem("platform", "two platforms claim one (sys_platform, machine)")
    linux = _linux(chk, data.get("linux"),
                   {p.binary_machine for p in out if p.binary_format == "elf"})
    if chk.problems:
        raise CatalogError(chk.problems)
    return Platforms(tuple(out), meta, linux)


def _linux(chk: Checker, raw: object, elf_machines: set[str]) -> LinuxFacts:
    f = chk.fields(raw, "[linux]",
                   {"tag_arch": dict, "loaders": list, "interpreter_libraries": list,
                    "ld_cache_abi": dict, "default_dirs": list,
                    "default_dirs_by_machine": dict})  # fmt: skip
    arch = f.get("tag_arch", {})
    for machine, tag in arch.items():
        if not (isinstance(tag, str) and _TAG_GLOB.fullmatch(tag) and "*" not in tag):
            chk.problem("[linux]", f"tag_arch: {machine} -> {tag!r} is no tag architecture")
    abi: list[tuple[str, int]] = []
    for machine, bits in f.get("ld_cache_abi", {}).items():
        # glibc: the ABI is the flags' second byte (FLAG_REQUIRED_MASK 0xff00)
        if isinstance(bits, bool) or not isinstance(bits, int) or bits & ~0xFF00 or not bits:
            chk.problem("[linux]", f"ld_cache_abi: {machine} -> {bits!r} is no ABI byte (0xNN00)")
        elif machine not in elf_machines:
            chk.problem("[linux]", f"ld_cache_abi: {machine!r} is the machine of no platform")
        else:
            abi.append((machine, bits))
    dirs = _dirs(chk, "default_dirs", f.get("default_dirs", []))
    by_machine: list[tuple[str, tuple[str, ...]]] = []
    for machine, value in f.get("default_dirs_by_machine", {}).items():
        if machine not in elf_machines:
            chk.problem("[linux]", f"default_dirs_by_machine: {machine!r} is the machine of "
                                   "no platform")  # fmt: skip
        by_machine.append((machine, _dirs(chk, f"default_dirs_by_machine.{machine}", value)))
    return LinuxFacts(tuple((str(k), str(v)) for k, v in arch.items()),
                      tuple(f.get("loaders", [])), tuple(f.get("interpreter_libraries", [])),
                      tuple(abi), dirs, tuple(by_machine))  # fmt: skip


def _dirs(chk: Checker, key: str, value: object) -> tuple[str, ...]:
    if not (isinstance(value, list) and value
            and all(isinstance(d, str) and d.startswith("/") for d in value)):  # fmt: skip
        chk.problem("[linux]", f"{key}: expected a list of absolute directories")
        return ()
    return tuple(value)


@functools.cache
def load_platforms() -> Platforms:
    """The shipped ``platforms.toml``, read and validated once."""
    return build_platforms(read_data_file(DATA_FILE))


def platform_record(name: str) -> Platform:
    """The platform named ``name`` (row or toolkit); UnknownName otherwise."""
    return load_platforms().record(name)


def platform_for_wheel_tag(tag: str) -> Platform | None:
    return load_platforms().for_wheel_tag(tag)


def host_platform(sys_platform: str | None = None, machine: str | None = None) -> Platform | None:
    """This machine's platform (``sys.platform`` and ``platform.machine()`` unless given):
    linux-x86_64, linux-sbsa (any Arm64 Linux: Jetsons are not told apart), win-amd64,
    win-arm64; None for a machine of no platform (macOS, riscv64).  Row callers take its
    ``row_platform``, the toolkit its ``name``."""
    return load_platforms().host(
        sys.platform if sys_platform is None else sys_platform,
        _platform.machine() if machine is None else machine,
    )

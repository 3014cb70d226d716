"""The platform facts that moved into data/platforms.toml (issue 24) are what the code uses:
the ld.so cache's ABI bits and the loader's default directories (doctor/), a machine's one
name per instruction set and a row platform's OS (checks/artifact.py), ``sys.platform``'s OS
(toolkit/env.py) and the stub's e_machine (toolkit/stubs.py).  Each is also checked against
an independent statement of the fact: glibc's ldconfig.h constants and ``ldconfig -p``, ld.so(8),
the ELF gABI's machine numbers and our ELF reader, the Python docs' ``sys.platform`` and
``platform.machine()`` values, all written out here by hand."""

from __future__ import annotations

import copy
import os
import shutil
import struct
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import pytest

import _absent
from cuwheel.checks import artifact as art
from cuwheel.doctor import (
    SearchContext,
    diagnose,
    ldcache,
    loader,
    parse_ld_cache,
    read_environment,
)
from cuwheel.doctor.diagnose import read_file_binary
from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.platforms import build_platforms, load_platforms
from cuwheel.model.inventory import Binary
from cuwheel.toolkit import env as tk_env
from cuwheel.toolkit import stubs

DOC = Path(__file__).parent / "data" / "bin_doctor"
LINUX = sys.platform.startswith("linux")
TABLE = load_platforms()

# glibc sysdeps/generic/ldconfig.h: FLAG_X8664_LIB64, FLAG_AARCH64_LIB64 (FLAG_ELF_LIBC6 = 3
# in the low byte); elf/cache.c prints them as "x86-64" and "AArch64" in `ldconfig -p`.
GLIBC_ABI = {"x86_64": 0x0300, "aarch64": 0x0A00}
LDCONFIG_LABEL = {"x86-64": "x86_64", "AArch64": "aarch64"}
# ld.so(8): /lib then /usr/lib; /lib64 then /usr/lib64 for 64-bit objects on x86-64 / AArch64.
LD_SO_DIRS = {"x86_64": ("/lib64", "/usr/lib64"), "aarch64": ("/lib64", "/usr/lib64"),
              "i386": ("/lib", "/usr/lib")}  # fmt: skip
# ELF gABI e_machine: EM_X86_64 = 62, EM_AARCH64 = 183.
GABI = {"x86_64": 62, "aarch64": 183}


# ------------------------------------------------------------------------- the ld.so cache


def _cache(entries: list[tuple[int, str, str]]) -> bytes:
    """A new-format cache laid out by glibc's dl-cache.h, independently of the reader."""
    head = 48 + 24 * len(entries)
    strings, offs = b"", []
    for _, key, value in entries:
        k = head + len(strings)
        strings += key.encode() + b"\0"
        offs.append((k, head + len(strings)))
        strings += value.encode() + b"\0"
    out = b"glibc-ld.so.cache1.1" + struct.pack("<IIB3xI12x", len(entries), len(strings), 2, 0)
    for (flags, _, _), (k, v) in zip(entries, offs, strict=True):
        out += struct.pack("<iIIIQ", flags, k, v, 0, 0)
    return out + strings


def test_ld_cache_abi_is_glibcs() -> None:
    assert dict(TABLE.linux.ld_cache_abi) == GLIBC_ABI


def test_the_cache_lookup_takes_the_tables_abi(monkeypatch: pytest.MonkeyPatch) -> None:
    # one soname for each ABI, each at its own path; ELF libc6 in the low byte
    blob = _cache([(bits | 3, "libcudart.so.13", f"/{m}/libcudart.so.13")
                   for m, bits in GLIBC_ABI.items()])  # fmt: skip
    cache = parse_ld_cache(blob)
    for m in GLIBC_ABI:
        assert cache.lookup("libcudart.so.13", m) == f"/{m}/libcudart.so.13"
    assert cache.lookup("libcudart.so.13", "riscv64") == "/x86_64/libcudart.so.13"  # any: first
    # the lookup follows the table, not a copy of it: swap the two machines' bits
    swapped = replace(TABLE, linux=replace(TABLE.linux, ld_cache_abi=(
        ("x86_64", GLIBC_ABI["aarch64"]), ("aarch64", GLIBC_ABI["x86_64"]))))
    monkeypatch.setattr(ldcache, "load_platforms", lambda: swapped)
    assert cache.lookup("libcudart.so.13", "x86_64") == "/aarch64/libcudart.so.13"


@_absent.skip_without("glibc", not (LINUX and os.path.exists("/etc/ld.so.cache")))
def test_the_machines_own_cache_has_the_tables_abi() -> None:
    ldconfig = shutil.which("ldconfig") or "/sbin/ldconfig"
    out = subprocess.run([ldconfig, "-p"], capture_output=True, text=True, check=True).stdout
    entries = {(e.soname, e.path): e for e in parse_ld_cache(
        Path("/etc/ld.so.cache").read_bytes()).entries}
    checked = 0
    for line in out.splitlines()[1:]:
        name, arrow, path = line.strip().partition(" => ")
        if not arrow or "(" not in name:
            continue
        soname, _, label = name.partition(" (")
        labels = label.rstrip(")").split(",")  # "libc6,x86-64" / "libc6,AArch64"
        machines = [LDCONFIG_LABEL[x] for x in labels if x in LDCONFIG_LABEL]
        if not machines:
            continue
        assert entries[(soname, path)].abi == TABLE.linux.cache_abi(machines[0]), line
        checked += 1
    import platform

    if platform.machine() in ("x86_64", "aarch64"):
        assert checked > 10


# ------------------------------------------------------------------ the loader's default path


def test_default_dirs_are_ld_sos() -> None:
    for machine, dirs in LD_SO_DIRS.items():
        assert TABLE.linux.loader_dirs(machine) == dirs
    assert TABLE.linux.loader_dirs(None) == ("/lib", "/usr/lib")


def _site(tmp_path: Path) -> Path:
    site = tmp_path / "site"
    info = site / "cw_rt-1.0.dist-info"
    info.mkdir(parents=True)
    (site / "cw_rt").mkdir()
    shutil.copyfile(DOC / "rt13.so", site / "cw_rt" / "rt13.so")
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: cw-rt\nVersion: 1.0\n")
    (info / "RECORD").write_text("cw_rt/rt13.so,,\ncw_rt-1.0.dist-info/METADATA,,\n")
    return site


def _resolution(site: Path) -> loader.Resolution:
    from cuwheel import compat

    env = read_environment([str(site)], workers=1)
    targets = compat.targets_for_gpu("H100", compat.parse_driver("580.65.06"))
    d = diagnose(env, targets[:1], SearchContext((), None, None))
    return next(r for r in d.process.resolutions if r.name == "libcudart.so.13")


def test_the_loader_searches_the_tables_default_dirs(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    site = _site(tmp_path)
    fixture = read_file_binary(str(DOC / "rt13.so"))
    assert fixture is not None and fixture.machine == "x86_64"
    machine = fixture.machine
    # the table's directories end the search ...
    r = _resolution(site)
    assert r.searched[-2:] == LD_SO_DIRS[machine]
    # ... and a library there is found there, once the table says so
    sysdir = tmp_path / "sys"
    sysdir.mkdir()
    shutil.copyfile(DOC / "libcudart.so.13", sysdir / "libcudart.so.13")
    moved = replace(TABLE, linux=replace(TABLE.linux, default_dirs_by_machine=(
        (machine, (str(sysdir),)),)))
    monkeypatch.setattr(loader, "load_platforms", lambda: moved)
    r = _resolution(site)
    assert (r.path, r.how) == (str(sysdir / "libcudart.so.13"), "default directory")


def test_a_binarys_os_is_its_formats() -> None:
    def b(fmt: str) -> Binary:
        return Binary(path="x", format=fmt, size=0)

    assert [loader.binary_os(b(f)) for f in ("elf", "pe")] == ["linux", "windows"]


# ----------------------------------------------------------------- machines, OSes, platforms

# platform.machine() on each OS (Python docs; uname -m on Linux, PROCESSOR_ARCHITECTURE on
# Windows, macOS's arm64): one name per instruction set
MACHINE_NAMES = {"x86_64": "x86_64", "AMD64": "x86_64", "amd64": "x86_64",
                 "aarch64": "aarch64", "arm64": "aarch64", "ARM64": "aarch64",
                 "riscv64": None, "i386": None, "": None, None: None}  # fmt: skip
ROW_HOSTS = {"linux-x86_64": ("linux", "x86_64"), "linux-aarch64": ("linux", "aarch64"),
             "linux-sbsa": ("linux", "aarch64"), "win-amd64": ("windows", "x86_64"),
             "win-arm64": ("windows", "aarch64"),
             # names outside the table, by their parts (as before the table)
             "linux-riscv64": ("linux", None), "windows-x86_64": ("windows", "x86_64"),
             "macos-arm64": (None, "aarch64")}  # fmt: skip
# sys.platform (Python docs)
SYS_PLATFORM = {"linux": "linux", "win32": "windows", "darwin": None, "cygwin": None}


@pytest.mark.parametrize(("name", "want"), MACHINE_NAMES.items())
def test_an_artifacts_machine(name: str | None, want: str | None) -> None:
    assert art._machine(name) == TABLE.cpu(name) == want


@pytest.mark.parametrize(("name", "want"), ROW_HOSTS.items())
def test_a_row_platforms_host(name: str, want: tuple[str | None, str | None]) -> None:
    assert art._wheel_host(name) == want
    p = TABLE.get(name)
    if p is not None:
        assert want == (p.os, TABLE.cpu(p.binary_machine))


@pytest.mark.parametrize(("value", "want"), SYS_PLATFORM.items())
def test_host_os(value: str, want: str | None, monkeypatch: pytest.MonkeyPatch) -> None:
    assert TABLE.os_of_sys_platform(value) == want
    monkeypatch.setattr(sys, "platform", value)  # what toolkit/env.py reads
    assert tk_env.host_os() == (want or "linux")


@pytest.mark.parametrize("machine", sorted(stubs.RETURN_34))
def test_the_stubs_e_machine(machine: str, tmp_path: Path) -> None:
    assert stubs.e_machine(machine) == GABI[machine]
    (p,) = [p for p in TABLE.platforms if p.row and p.binary_machine == machine]
    assert p.binary_code == GABI[machine]
    (tmp_path / "include").mkdir()
    (tmp_path / "include" / "cuda.h").write_text("CUresult CUDAAPI cuInit(unsigned int);\n")
    stub = stubs.write_driver_stub(tmp_path, machine)
    assert stub is not None
    data = stub.read_bytes()
    assert struct.unpack_from("<H", data, 18)[0] == GABI[machine]
    read = read_file_binary(str(stub))
    assert read is not None and read.machine == machine
    assert stubs.write_driver_stub(tmp_path / "none", "riscv64") is None


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(("key", "value", "says"), [
    ("ld_cache_abi", {"x86_64": 0x0303}, "no ABI byte"),
    ("ld_cache_abi", {"x86_64": True}, "no ABI byte"),
    ("ld_cache_abi", {"mips": 0x0600}, "machine of no platform"),
    ("default_dirs", ["lib"], "absolute directories"),
    ("default_dirs", [], "absolute directories"),
    ("default_dirs_by_machine", {"x86_64": ["/lib64", 3]}, "absolute directories"),
    ("default_dirs_by_machine", {"sparc": ["/lib64"]}, "machine of no platform"),
])  # fmt: skip
def test_bad_linux_facts_are_refused(key: str, value: object, says: str) -> None:
    data = copy.deepcopy(read_data_file("platforms.toml"))
    data["linux"][key] = value
    with pytest.raises(CatalogError, match=says):
        build_platforms(data)
    del data["linux"][key]
    with pytest.raises(CatalogError, match=key):
        build_platforms(data)


def test_a_windows_toolkits_dll_folders_are_on_path(tmp_path: Path) -> None:
    # NVIDIA's CUDA 13 wheels: cudart64_13.dll in bin/x86_64, cusparseLt_13.dll in bin/x64
    for d in ("bin/x86_64", "bin/x64", "bin/arm64"):
        (tmp_path / d).mkdir(parents=True)
    win = TABLE.get("win-amd64")
    assert win is not None and win.toolkit_dll_dirs == ("bin/x86_64", "bin/x64")
    lines = tk_env.env_lines(tmp_path, "windows", environ={"PATH": "C:\\w"}, host="windows")
    (path,) = [ln for ln in lines if ln.startswith("PATH=")]
    bins = [str(tmp_path / d) for d in ("bin", "bin/x86_64", "bin/x64")]
    assert path == "PATH=" + ";".join([*bins, "C:\\w"])
    # a Linux tree puts no DLL folder on PATH
    lines = tk_env.env_lines(tmp_path, "linux", environ={}, host="linux")
    assert f"PATH={tmp_path / 'bin'}" in lines


@pytest.mark.parametrize(("platform", "dirs", "says"), [
    ("win-amd64", ["x64"], "folders under bin/"),
    ("win-amd64", ["bin/../../etc"], "folders under bin/"),
    ("linux-x86_64", ["bin/x64"], "DLLs are Windows'"),
])  # fmt: skip
def test_bad_dll_folders_are_refused(platform: str, dirs: list[str], says: str) -> None:
    data = copy.deepcopy(read_data_file("platforms.toml"))
    (row,) = [p for p in data["platform"] if p["name"] == platform]
    row["toolkit_dll_dirs"] = dirs
    with pytest.raises(CatalogError, match=says):
        build_platforms(data)

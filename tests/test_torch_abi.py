"""The torch C++ ABI: which torch releases export which symbol (tools/torch_symbols.py,
data/torch_abi.toml + torch_abi.bin), which releases a binary loads with
(rules/torch_abi.py) and the findings on it (DEP011, DEP012).

Oracles: binutils' ``nm -D`` and ``objdump -p`` for what a file exports and imports, the
torch that CI installs (2.13.0+cpu) for a column of the shipped table, and the real
dynamic loader (``dlopen`` with RTLD_NOW after ``import torch``) for the answer.
Fixtures: tests/data/build_torchabi.sh."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

import _absent
import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.config import parse_config
from cuwheel.knowledge import torchabi
from cuwheel.knowledge.torchabi import build_torch_abi, load_torch_abi, torch_releases_defining
from cuwheel.read.inspect import inspect
from cuwheel.rules import torch_abi as rules
from cuwheel.rules.torch_abi import requirement_for, resolve_torch_abi

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "tests" / "data" / "bin"
sys.path.insert(0, str(ROOT / "tools"))
import torch_abi_pack  # noqa: E402
import torch_symbols  # noqa: E402

NEW = "_ZN3c1010TensorImpl15set_fake_deviceENS_6DeviceE"  # libc10.so from 2.13.0
OLD = "_ZN3c1013getDtypeNamesB5cxx11ENS_10ScalarTypeE"  # libc10.so until 2.12.x
COMMON = "_ZN3c1019UndefinedTensorImpl10_singletonE"


def _nm_defined(path: Path) -> set[str]:
    out = subprocess.run(["nm", "-D", "--defined-only", str(path)], check=True,
                         capture_output=True, text=True).stdout
    return {ln.split()[-1] for ln in out.splitlines() if ln.split()}


# The linker's boundary symbols: the CPU build's libc10.so exports them, PyPI's CUDA
# build's does not (its link keeps them local); no extension imports them from torch.
BOUNDARY = {"_end", "_edata", "__bss_start"}


def _front(path: Path) -> tuple[set[str], str]:
    data = path.read_bytes()
    names, _, how = torch_symbols.elf_front(iter([data[i : i + 4096]
                                                 for i in range(0, len(data), 4096)]))
    return {n for n, _ in names}, how


def _binary(path: Path):  # type: ignore[no-untyped-def]
    (b,) = inspect([str(path)], workers=1, payload="none").sources[0].binaries
    return b


def test_front_read_equals_the_whole_file() -> None:
    """The front read (GNU ld's layout: .gnu.hash, then .dynsym) finds what nm -D and
    the section-header reader find; the hidden symbol is not exported."""
    got, how = _front(BIN / "torchabi_c10.so")
    assert how == "gnu-hash-first"
    whole = set(_binary(BIN / "torchabi_c10.so").exported)
    assert got == _nm_defined(BIN / "torchabi_c10.so") == whole
    assert COMMON in got and "cw_hidden" not in got


def _installed_torch_lib() -> Path:
    torch = _absent.torch()
    return Path(torch.__file__).parent / "lib"


def test_a_column_regenerated_from_the_installed_torch() -> None:
    """libc10.so of the torch CI installs (2.13.0+cpu, download.pytorch.org) read by the
    front read: nm -D agrees, and the shipped table's 2.13.0 linux-x86_64 column (read
    from PyPI's CUDA wheel) exports exactly as many libc10 names, each of them."""
    torch = _absent.torch()
    lib = _installed_torch_lib() / "libc10.so"
    got, _ = _front(lib)
    assert got == _nm_defined(lib)
    abi = load_torch_abi()
    version = torch.__version__.split("+")[0]
    (col,) = [r for r in abi.releases if (r.version, r.platform) == (version, "linux-x86_64")]
    got -= BOUNDARY
    assert dict(col.libraries)["libc10.so"] == len(got)
    missing = [n for n in got if col.column not in abi.columns(n)]
    assert not missing, missing[:5]


def test_pack_round_trip() -> None:
    """Two columns packed from the front read of the stand-in library, one lacking a
    symbol: each name's columns come back, an absent name has none."""
    names = sorted(_front(BIN / "torchabi_c10.so")[0])
    rec = {"version": "9.0.0", "platform": "linux-x86_64", "filename": "torch-9.0.0.whl",
           "sha256": "0" * 64, "cuda_build": False, "size": 1,
           "libraries": {"libc10.so": {"names": [[n, False] for n in names], "symbols": 3,
                                       "sent": 1}}}
    rec2 = {**rec, "version": "9.1.0", "libraries": {"libc10.so": {
        "names": [[n, False] for n in names if n != COMMON], "symbols": 2, "sent": 1}}}
    win = {**rec, "platform": "win-amd64", "libraries": {"c10.dll": {
        "names": [["?x@c10@@YAXXZ", False]], "symbols": 1, "sent": 1}}}
    blob, stats = torch_abi_pack.pack([rec, rec2, win])
    assert stats["symbols"] == len(names) + 1 and stats["collisions"] == 0
    releases = [{"version": r["version"], "platform": r["platform"], "wheel": "w",
                 "sha256": "0" * 64, "cuda": False, "libraries": {"x": 1}, "read_bytes": 1}
                for r in (rec, rec2, win)]
    meta = {"title": "t", "compiled": "2026-01-01", "sources": ["L"]}
    abi = build_torch_abi({"meta": meta, "release": releases}, blob)
    assert abi.columns(COMMON) == {0}
    assert abi.columns("_ZN3c106detail14torchCheckFailEPKcS2_jS2_") == {0, 1}
    assert abi.columns("?x@c10@@YAXXZ") == frozenset()  # a Windows name is keyed by its DLL
    assert abi.columns(torchabi.symbol_key("?x@c10@@YAXXZ", "C10.DLL")) == {2}
    assert abi.columns("_ZN3c103fooEv") == frozenset()


def test_a_damaged_table_is_a_catalog_error() -> None:
    from cuwheel.errors import CatalogError

    blob = (ROOT / "src/cuwheel/data/torch_abi.bin").read_bytes()
    data = torchabi.read_data_file(torchabi.DATA_FILE)
    import zlib

    bomb = torchabi.MAGIC + zlib.compress(bytes(65 << 20), 9)  # 64 KiB inflating to 65 MiB
    for bad in (b"XXXXXXXX" + blob[8:], blob[:-100], blob[:8] + bytes(100), bomb):
        with pytest.raises(CatalogError):
            build_torch_abi(data, bad).columns(COMMON)


def test_the_real_loader_agrees_inside_and_outside_the_answer() -> None:
    """torchabi_new.so imports a symbol libc10.so exports from 2.13.0 on, torchabi_old.so
    one it dropped in 2.13.0.  The installed torch's release is inside the first answer and
    outside the second, and dlopen(RTLD_NOW) after `import torch` says the same."""
    torch = _absent.torch()
    version = torch.__version__.split("+")[0]
    new = resolve_torch_abi(_binary(BIN / "torchabi_new.so"))
    old = resolve_torch_abi(_binary(BIN / "torchabi_old.so"))
    assert new is not None and old is not None
    assert new.imported == old.imported == 2
    assert version in new.versions and version not in old.versions
    assert old.lacking[version] == OLD
    code = ("import ctypes, os, sys, torch\n"
            "try:\n ctypes.CDLL(sys.argv[1], os.RTLD_NOW)\n"
            "except OSError as e:\n print(e); sys.exit(1)\n")
    ok = subprocess.run([sys.executable, "-c", code, str(BIN / "torchabi_new.so")],
                        capture_output=True, text=True)
    assert ok.returncode == 0, ok.stdout + ok.stderr
    bad = subprocess.run([sys.executable, "-c", code, str(BIN / "torchabi_old.so")],
                         capture_output=True, text=True)
    assert bad.returncode == 1 and f"undefined symbol: {OLD}" in bad.stdout


def test_torch_releases_defining() -> None:
    """explain's question: the releases that define a symbol, every platform."""
    got = {(r.version, r.platform) for r in torch_releases_defining(OLD)}
    assert ("2.12.1", "linux-x86_64") in got and ("2.13.0", "linux-x86_64") not in got
    assert torch_releases_defining("_ZN3c10NoSuchThingEv") == ()
    win = torch_releases_defining("?torchCheckMsgImpl@detail@c10@@YAPEBDPEBD0@Z")
    assert win and {r.platform for r in win} == {"win-amd64"}


def test_requirement_for() -> None:
    known = ["2.0.0", "2.0.1", "2.1.0", "2.1.1", "2.1.2", "2.2.0", "2.3.0"]
    assert requirement_for(["2.1.0", "2.1.1", "2.1.2"], known) == "torch>=2.1,<2.2"
    assert requirement_for(["2.1.1", "2.1.2"], known) == "torch>=2.1.1,<2.2"
    assert requirement_for(["2.1.1"], known) == "torch==2.1.1"
    assert requirement_for(["2.3.0"], known) == "torch>=2.3,<2.4"
    assert requirement_for([], known) is None


# -- findings, on a table made for the test ---------------------------------------------
def _fake_abi(columns: dict[tuple[str, str], set[str]], cuda: bool = True):  # type: ignore[no-untyped-def]
    recs = [{"version": v, "platform": p, "filename": "w", "sha256": "0" * 64,
             "cuda_build": cuda, "size": 1,
             "libraries": {("c10.dll" if p.startswith("win") else "libc10.so"):
                           {"names": [[n, False] for n in sorted(names)], "symbols": 1,
                            "sent": 1}}}
            for (v, p), names in columns.items()]
    blob, _ = torch_abi_pack.pack(recs)
    releases = [{"version": r["version"], "platform": r["platform"], "wheel": "w",
                 "sha256": "0" * 64, "cuda": cuda,
                 "libraries": {k: 1 for k in r["libraries"]}, "read_bytes": 1} for r in recs]
    meta = {"title": "t", "compiled": "2026-01-01", "sources": ["L"]}
    return build_torch_abi({"meta": meta, "release": releases}, blob)


LINUX = "cp311-cp311-manylinux_2_17_x86_64.manylinux2014_x86_64"


def _check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, abi, member: str,  # type: ignore[no-untyped-def]
           data: bytes, requires: tuple[str, ...], tag: str = LINUX):
    monkeypatch.setattr(rules, "load_torch_abi", lambda: abi)
    tmp_path.mkdir(exist_ok=True)
    spec = cw.Spec({member: data}, "1.0", tag, requires, name="ext")
    cfg = parse_config({}, "test")
    report = check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={}, audit=True)
    return {f.code: f for f in report.findings}


def test_dep011_names_the_releases_that_load(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    lx = "linux-x86_64"
    abi = _fake_abi({("2.0.0", lx): {COMMON}, ("2.1.0", lx): {COMMON, NEW},
                     ("2.1.1", lx): {COMMON, NEW}, ("2.2.0", lx): {COMMON}})
    ext = cw.fixture("torchabi_new.so")
    got = _check(tmp_path, monkeypatch, abi, "ext/_C.so", ext, ("torch>=2.0",))
    f = got["DEP011"]
    assert f.severity.name == "ERROR"
    assert "only 2.1.0-2.1.1 define them all" in f.message
    assert f"2.2.0 lacks {NEW}" in f.message and "require torch>=2.1,<2.2" in f.message
    assert "DEP010" not in got
    assert "DEP011" not in _check(tmp_path / "b", monkeypatch, abi, "ext/_C.so", ext,
                                  ("torch>=2.1,<2.2",))
    # no requirement at all stays DEP009
    none = _check(tmp_path / "c", monkeypatch, abi, "ext/_C.so", ext, ())
    assert "DEP009" in none and "DEP011" not in none


# -- doctor ---------------------------------------------------------------------------
def _env(tmp_path: Path, torch_version: str, ext: str):  # type: ignore[no-untyped-def]
    from cuwheel import compat
    from cuwheel.doctor import SearchContext, diagnose, read_environment
    from test_doctor import make_dist

    site = tmp_path / "site"
    make_dist(site, "torch", {"torch/lib/libc10.so": BIN / "torchabi_c10.so",
                              "torch/version.py": f"__version__ = '{torch_version}'\n"
                                                  "cuda = None\n".encode()},
              version=torch_version.split("+")[0])
    make_dist(site, "ext", {"ext/_C.so": BIN / ext}, requires=("torch",))
    env = read_environment([str(site)], workers=1)
    targets = compat.targets_for_gpu("H100", compat.parse_driver("580.65.06"))
    d = diagnose(env, targets[:1], SearchContext(default_dirs=()))
    return [f for t in d.targets for r in t.distributions for f in r.findings
            if f.code == "ENV009"]


def test_doctor_with_a_torch_the_data_knows(tmp_path: Path) -> None:
    """torch 2.13.0 installed: the data's answer (torchabi_old.so imports what 2.13.0
    dropped) whatever the stand-in libc10.so exports."""
    (f,) = _env(tmp_path, "2.13.0", "torchabi_old.so")
    assert f.error_text == f"undefined symbol: {OLD}"
    assert "torch 2.13.0's libraries (data/torch_abi.toml) do not export" in f.message
    assert f.fix is not None and f.fix.startswith("pip install 'torch>=")
    assert not _env(tmp_path / "b", "2.13.0", "torchabi_new.so")


def test_doctor_with_a_torch_the_data_does_not_know(tmp_path: Path) -> None:
    """A torch release PyPI never had: the installed libc10.so (the stand-in exports
    COMMON only of the two) is what the same symbols are looked up in."""
    (f,) = _env(tmp_path, "2.99.0+custom", "torchabi_new.so")
    assert f.error_text == f"undefined symbol: {NEW}"
    assert "the installed torch 2.99.0+custom does not export" in f.message


def _objdump_imports(path: Path) -> set[tuple[str, str]]:
    """(DLL, name) of every import by name, as binutils' objdump -p lists them: after a
    "DLL Name:" line and its "vma: Hint/Ord Member-Name" header, one "vma hint name" line
    per import, up to an empty line."""
    out = subprocess.run(["objdump", "-p", str(path)], check=True, capture_output=True,
                         text=True).stdout
    got: set[tuple[str, str]] = set()
    dll = None
    for line in out.splitlines():
        s = line.strip()
        if s.startswith("DLL Name:"):
            dll = s.split(":", 1)[1].strip()
        elif not s:
            dll = None
        elif dll is not None and not s.startswith("vma:"):
            parts = s.split()
            if len(parts) == 3 and parts[1].isdigit():
                got.add((dll, parts[2]))
    return got


@pytest.mark.parametrize("name", ["win_sm80_86.dll", "win_hostonly.dll", "win_rdc.dll"])
def test_pe_imports_by_name_match_objdump(name: str) -> None:
    b = _binary(BIN / name)
    ours = {(u.library, u.name) for u in b.undefined}
    assert ours and ours == _objdump_imports(BIN / name)


def test_compat_notes_the_same_answer() -> None:
    """compat's note on a wheel names the releases resolve_torch_abi gives (the loader
    test above holds that answer against dlopen)."""
    from cuwheel import compat

    inv = inspect([str(BIN / "torchabi_old.so")], workers=1, payload="none")
    target = compat.targets_for_gpu("H100")[0]
    (note,) = [n for n in compat.evaluate(inv, target).notes if "torch" in n]
    ans = resolve_torch_abi(inv.sources[0].binaries[0])
    assert ans is not None and "2.13.0" not in ans.versions
    assert f"loads with torch {rules.loadable_span(ans.versions)} on linux-x86_64" in note
    assert ans.versions[-1] == "2.12.1"  # getDtypeNames left libc10.so in 2.13.0


def test_explain_names_the_releases_that_export_the_symbol() -> None:
    """`explain "undefined symbol: ..."` answers from the same table: a libc10 symbol that
    2.13.0 dropped (OLD) is named with a requirement that admits 2.12 and not 2.13; one
    that first appears in 2.13.0 (NEW) with one that admits 2.13; a torch-namespace name no
    release exports says so instead of guessing."""
    from packaging.specifiers import SpecifierSet

    from cuwheel.doctor.explain import diagnose_text

    def lead(symbol: str) -> tuple[str, str, tuple[str, ...]]:
        d = diagnose_text(f"ImportError: /x/ext.so: undefined symbol: {symbol}")
        assert d.lead is not None
        return d.lead.id, " ".join(d.lead.because), d.lead.install

    rule, why, install = lead(OLD)
    assert rule == "extension-mismatch" and "2.12" in why
    (req,) = install
    spec = SpecifierSet(req.removeprefix("torch"))
    assert "2.12.1" in spec and "2.13.0" not in spec
    _, why, install = lead(NEW)
    (req,) = install
    assert "2.13.0" in SpecifierSet(req.removeprefix("torch"))
    _, why, install = lead("_ZN3c10NoSuchThingEv")
    assert "no torch release" in why and install == ()

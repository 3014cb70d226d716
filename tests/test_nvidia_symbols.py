"""Releases of NVIDIA libraries that export each symbol (data/nvidia_symbols.toml), the
tool that writes them (tools/nvidia_symbols.py) and DEP013.

The tool is run offline on wheels of two releases of a stand-in library built with gcc
and a version script (tests/data/build_nvsyms.sh says what each release exports: the
oracle here); the shipped data is checked for shape and against ``readelf`` on the real
wheels it names (network).  DEP013 runs on a library linked against a stand-in
libnvJitLink.so.12 the way cuSPARSE 12.x links the real one."""

from __future__ import annotations

import hashlib
import importlib.util
import shutil
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

import _absent
from cuwheel import check_wheel
from cuwheel._toml import tomllib
from cuwheel.errors import CatalogError
from cuwheel.knowledge.nvidia_symbols import (
    build_symbol_histories,
    first_release_exporting,
    load_symbol_histories,
    release_suffix,
)
from wheelfactory import make_wheel

ROOT = Path(__file__).resolve().parents[1]
BIN = ROOT / "tests" / "data" / "bin"
TAG = "py3-none-manylinux_2_17_x86_64"


def _tool() -> ModuleType:
    spec = importlib.util.spec_from_file_location("nvidia_symbols_tool",
                                                  ROOT / "tools" / "nvidia_symbols.py")
    assert spec is not None and spec.loader is not None
    mod = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = mod
    spec.loader.exec_module(mod)
    return mod


def test_tool_regenerates_a_sample_offline(tmp_path: Path) -> None:
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for version, lib in (("1.0", "nvsym_r1.so"), ("1.1", "nvsym_r2.so")):
        make_wheel(wheels, {"nvidia/cwjit/lib/libcwjit.so.1": (BIN / lib).read_bytes()},
                   name="nvidia_cwjit_cu12", version=version, tag=TAG)
    out = tmp_path / "data.toml"
    rc = _tool().main(["--wheels", str(wheels), "--cache", str(tmp_path / "cache"),
                       "--out", str(out), "--date", "2026-12-02"])
    assert rc == 0
    data = build_symbol_histories(tomllib.loads(out.read_text()))
    [h] = data.libraries
    assert (h.distribution, h.os, h.library) == ("nvidia-cwjit-cu12", "linux", "libcwjit.so.1")
    assert h.releases == ("1.0", "1.1")
    assert h.version_nodes == ("libcwjit.so.1",)
    assert [w for w, _ in h.wheels] == sorted(p.name for p in wheels.iterdir())
    sha = hashlib.sha256((wheels / h.wheels[0][0]).read_bytes()).hexdigest()
    assert h.wheels[0][1] == sha
    # build_nvsyms.sh: r2 adds cwLinkAdd_1_1 and cwLinkDestroy and drops cwLinkOld; of r1's
    # own symbols only the one with a release in its name is listed
    assert dict(h.added) == {"cwLinkAdd_1_0": "1.0", "cwLinkAdd_1_1": "1.1",
                             "cwLinkDestroy": "1.1"}
    assert dict(h.removed) == {"cwLinkOld": "1.1"}
    assert h.exports("cwLinkAdd_1_1", "1.0") is False
    assert h.exports("cwLinkAdd_1_1", "1.1") is True
    r = h.lookup("cwLinkAdd_1_1")
    assert r is not None and r.requirement() == "nvidia-cwjit-cu12>=1.1"


def _data(wheels: list[str] | None = None, **library: Any) -> dict[str, Any]:
    lib = {"distribution": "nvidia-x-cu12", "os": "linux", "library": "libx.so.1",
           "version_nodes": [], "releases": ["1.0", "1.1"], "added": {"1.1": ["f"]}}
    lib.update(library)
    if wheels is None:
        wheels = [f"nvidia_x_cu12-{v}-py3-none-any.whl sha256:{'0' * 64}"
                  for v in ("1.0", "1.1")]
    return {"meta": {"title": "t", "compiled": "2026-12-02", "sources": ["s"]},
            "source": [{"distribution": "nvidia-x-cu12", "os": "linux", "wheels": wheels}],
            "library": [lib]}


def test_loader_refuses_bad_wheels() -> None:
    with pytest.raises(CatalogError, match="'wheels' must give"):
        build_symbol_histories(_data(wheels=["x.whl"]))
    with pytest.raises(CatalogError, match="has no wheel in the"):
        build_symbol_histories(_data(wheels=[f"nvidia_x_cu12-1.0-py3-none-any.whl sha256:"
                                             f"{'0' * 64}"]))


@pytest.mark.parametrize("change, problem", [
    ({"os": "macos"}, "os must be one of"),
    ({"releases": ["1.1", "1.0"]}, "oldest first"),
    ({"added": {"2.0": ["f"]}}, "is not one of the releases read"),
    ({"added": {"1.0": ["f"], "1.1": ["f"]}}, "listed twice"),
    ({"removed": {"1.0": ["f"]}}, "removed before it is added"),
])
def test_loader_refuses_bad_data(change: dict[str, Any], problem: str) -> None:
    with pytest.raises(CatalogError, match=problem):
        build_symbol_histories(_data(**change))


def test_shipped_data() -> None:
    data = load_symbol_histories()
    names = {(h.distribution, h.os) for h in data.libraries}
    # what the issue asks for at least; NCCL defines no version node at all
    for want in ("nvidia-nvjitlink-cu12", "nvidia-nvjitlink", "nvidia-cusparse-cu12"):
        assert (want, "linux") in names
    assert ("nvidia-nvjitlink-cu12", "windows") in names
    for h in data.libraries:
        assert len(h.wheels) == len(h.releases)
        for file, _ in h.wheels:
            assert canon(file.split("-")[0]) == canon(h.distribution)


def canon(name: str) -> str:
    return name.lower().replace("_", "-")


def test_first_release_exporting() -> None:
    r = first_release_exporting("libnvJitLink.so.12", "__nvJitLinkAddData_12_4")
    assert r is not None and r.distribution == "nvidia-nvjitlink-cu12"
    # the name says 12.4: the release is the first 12.4 on PyPI
    assert r.first.startswith("12.4.") and not r.at_first_read
    assert r.requirement() == f"nvidia-nvjitlink-cu12>={r.first}"
    win = first_release_exporting("NVJITLINK_120_0.DLL", "__nvJitLinkAddData_12_4", "windows")
    assert win is not None and win.first == r.first
    assert first_release_exporting("libnvJitLink.so.12", "nvJitLinkNoSuch_12_4") is None
    assert first_release_exporting("libnosuch.so.1", "__nvJitLinkAddData_12_4") is None
    assert release_suffix("__nvJitLinkAddData_12_4") == (12, 4)
    assert release_suffix("cublasCreate_v2") is None


def test_suffix_releases_match_the_names() -> None:
    """Every nvJitLink symbol named for release X.Y is first exported by a release X.Y or
    newer, never an older one: the data and the names agree."""
    for h in load_symbol_histories().libraries:
        if "nvjitlink" not in h.distribution:
            continue
        for symbol, first in h.added.items():
            named = release_suffix(symbol)
            if named is not None and first != h.releases[0]:
                have = tuple(int(x) for x in first.split(".")[:2])
                assert have >= named, (h.library, symbol, first)


def _user_wheel(tmp_path: Path, requires: tuple[str, ...]) -> str:
    return make_wheel(tmp_path, {"cwuser/libnvsym_user.so": (BIN / "nvsym_user.so").read_bytes()},
                      name="cwuser", version="1.0", tag=TAG, requires=requires)


def _dep013(path: str) -> list[str]:
    report = check_wheel(path, [], audit=True)
    return [f.message for f in report.findings if f.code == "DEP013"]


def test_dep013_bare_requirement(tmp_path: Path) -> None:
    first = first_release_exporting("libnvJitLink.so.12", "__nvJitLinkAddData_12_4")
    assert first is not None
    [msg] = _dep013(_user_wheel(tmp_path, ("nvidia-nvjitlink-cu12",)))
    assert "__nvJitLinkAddData_12_4" in msg and "__nvJitLinkCreate_12_0" not in msg
    assert f"first exported by nvidia-nvjitlink-cu12 {first.first}" in msg
    assert msg.endswith(f"require nvidia-nvjitlink-cu12>={first.first}")
    assert "admits 12.0.76 ..." in msg


def test_dep013_satisfied(tmp_path: Path) -> None:
    first = first_release_exporting("libnvJitLink.so.12", "__nvJitLinkAddData_12_4")
    assert first is not None
    assert _dep013(_user_wheel(tmp_path, (f"nvidia-nvjitlink-cu12>={first.first}",))) == []
    # through cuda-toolkit: its releases 12.0.0 ... 12.3.x pin nvJitLink 12.0 ... 12.3
    # (cuda-toolkit 12.0.0's METADATA: nvidia-nvjitlink-cu12==12.0.76)
    (tmp_path / "tk").mkdir()
    [msg] = _dep013(_user_wheel(tmp_path / "tk", ("cuda-toolkit[nvjitlink]==12.*",)))
    assert "cuda-toolkit[nvjitlink]==12.* admits cuda-toolkit 12.0.0 ... 12.3." in msg
    assert "which pin nvidia-nvjitlink-cu12 12.0.76 ... 12.3.101" in msg
    assert msg.endswith("require cuda-toolkit[nvjitlink]>=12.4.0 (its pins have it)")
    (tmp_path / "tk2").mkdir()
    assert _dep013(_user_wheel(tmp_path / "tk2", ("cuda-toolkit[nvjitlink]>=12.4,<13",))) == []


READELF = shutil.which("readelf")


@pytest.mark.network
@_absent.skip_without("readelf", READELF is None)
def test_data_against_readelf_on_real_wheels(tmp_path: Path) -> None:
    """The boundary releases of nvJitLink 12.4's names, read by readelf from the wheels
    the data names (sha256 checked)."""
    import zipfile

    h = next(h for h in load_symbol_histories().of("libnvJitLink.so.12", "linux"))
    first = h.added["__nvJitLinkAddData_12_4"]
    i = h.releases.index(first)
    try:
        urls = {f["filename"]: f["url"] for f in _tool().index_files(h.distribution)}
    except OSError as exc:
        _absent.skip("network", str(exc))
    for file, sha in h.wheels[i - 1 : i + 1]:
        data = urllib.request.urlopen(urls[file], timeout=120).read()
        assert hashlib.sha256(data).hexdigest() == sha
        (tmp_path / file).write_bytes(data)
        with zipfile.ZipFile(tmp_path / file) as z:
            z.extract("nvidia/nvjitlink/lib/libnvJitLink.so.12", tmp_path / file[:-4])
        so = tmp_path / file[:-4] / "nvidia/nvjitlink/lib/libnvJitLink.so.12"
        text = subprocess.run([READELF or "readelf", "--dyn-syms", "-W", str(so)],
                              capture_output=True, text=True, check=True).stdout
        defined = {line.split()[7].split("@")[0] for line in text.splitlines()
                   if len(line.split()) >= 8 and line.split()[6] != "UND"}
        assert ("__nvJitLinkAddData_12_4" in defined) == (file == h.wheels[i][0])


def test_carrier_pins_read_from_torch() -> None:
    """torch 2.5.1's METADATA pins nvidia-nvjitlink-cu12==12.4.127 (its Linux x86_64
    wheels); 2.11 pins CUDA 13's through cuda-toolkit[...]==13.0.2."""
    data = load_symbol_histories()
    by = {p.release: p for p in data.pins_of("torch", "linux-x86_64")}
    assert by["2.5.1"].pins["nvidia-nvjitlink-cu12"] == "12.4.127"
    assert by["2.11.0"].pins["nvidia-nvjitlink"].startswith("13.0.")
    assert "nvidia-nvjitlink-cu12" not in by["2.1.0"].pins  # pinned by none of 2.1 ... 2.4


def test_dep013_through_torch(tmp_path: Path) -> None:
    """An extension using __nvJitLinkAddData_12_6, whose libnvJitLink.so.12 torch
    installs: torch 2.5 and 2.6 (CUDA 12.4 builds) pin nvJitLink 12.4.127, which lacks it;
    2.7 (CUDA 12.6) pins a 12.6."""
    import checkwheels as cw

    lib = cw.patch((BIN / "nvsym_user.so").read_bytes(), b"__nvJitLinkAddData_12_4",
                   b"__nvJitLinkAddData_12_6")
    path = make_wheel(tmp_path, {"cwuser/libnvsym_user.so": lib}, name="cwuser",
                      version="1.0", tag=TAG, requires=("torch>=2.5,<2.11",))
    [msg] = _dep013(path)
    assert "__nvJitLinkAddData_12_6 of libnvJitLink.so.12, which torch installs" in msg
    assert "admits torch 2.5.0 ... 2.6.0, which pin nvidia-nvjitlink-cu12 12.4.127" in msg
    assert msg.endswith("require torch>=2.7.0 (its pins have it)")
    (tmp_path / "good").mkdir()
    good = make_wheel(tmp_path / "good", {"cwuser/libnvsym_user.so": lib}, name="cwuser",
                      version="1.0", tag=TAG, requires=("torch>=2.7,<2.11",))
    assert _dep013(good) == []


def test_dep013_exact_pin_between_releases_read(tmp_path: Path) -> None:
    """A pin to a release the data did not read is judged by the releases around it: 12.3.0
    is older than 12.3.101, which lacks __nvJitLinkAddData_12_4; 12.4.100 is newer than
    12.4.99, which has it."""
    [msg] = _dep013(_user_wheel(tmp_path, ("nvidia-nvjitlink-cu12==12.3.0",)))
    assert "nvidia-nvjitlink-cu12==12.3.0 admits 12.3.0, which lacks it" in msg
    (tmp_path / "b").mkdir()
    assert _dep013(_user_wheel(tmp_path / "b", ("nvidia-nvjitlink-cu12==12.4.100",))) == []


def test_unversioned_reference_binds_to_a_needed_library() -> None:
    """NCCL defines no version node: a reference names no library and binds to whichever
    NEEDED library defines it.  ncclCommSplit is new in NCCL 2.18 (its release notes);
    the CUDA 13 wheels start at 2.27, which all have it."""
    from cuwheel.checks.nvidia_symbols import symbol_needs

    needs = symbol_needs(("libc.so.6", "libnccl.so.2"),
                         iter([("ncclCommSplit", None), ("malloc", None)]), "linux")
    assert list(needs) == [("libnccl.so.2", "nvidia-nccl-cu12")]
    [r] = needs[("libnccl.so.2", "nvidia-nccl-cu12")]
    assert r.symbol == "ncclCommSplit" and r.first.startswith("2.18.")


@pytest.mark.parametrize(("text", "good", "bad"), [
    # the real loader (bench/results/nvidia_symbols_loader-2vcpu-2026-12-02.txt): cuSPARSE
    # 12.3.1.170 fails beside nvJitLink 12.3.101 with this text and loads with 12.4.99
    ("OSError: .../libcusparse.so.12: undefined symbol: __nvJitLinkComplete_12_4, version "
     "libnvJitLink.so.12", "12.4.99", "12.3.101"),
    # cuSOLVER 11.7.5.82 fails beside cuBLAS 12.8.5.5 and loads with 12.9.0.13
    ("OSError: .../libcusolver.so.11: undefined symbol: cublasSetEnvironmentMode, version "
     "libcublas.so.12", "12.9.0.13", "12.8.5.5"),
])
def test_explain_names_the_release_that_exports_the_symbol(text: str, good: str,
                                                           bad: str) -> None:
    from packaging.requirements import Requirement

    from cuwheel.doctor.explain import diagnose_text

    lead = diagnose_text(text).lead
    assert lead is not None and lead.packaging
    (req,) = [Requirement(r) for r in lead.install]
    assert good in req.specifier and bad not in req.specifier
    assert good in " ".join(lead.because) and good in lead.fix

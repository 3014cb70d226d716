"""Trust boundaries of installed distributions (`inspect --dist`, `check --dist`,
read/sources/installed.py): a RECORD row or a link that leads out of site-packages is never
opened, and METADATA / RECORD / WHEEL are read bounded (a FIFO or an oversized file is a
problem, not a hang or an allocation)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))
import cuwheel
from cuwheel.read.inspect import installed_source
from cuwheel.read.sources import installed

BIN = Path(__file__).parent / "data" / "bin"


def _install(site: Path, name: str, files: dict[str, bytes], extra_rows: list[str]) -> Path:
    info = site / f"{name}-1.0.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "WHEEL").write_text("Wheel-Version: 1.0\nTag: py3-none-manylinux_2_28_x86_64\n")
    rows = []
    for rel, data in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(data)
        rows.append(f"{rel},,")
    rows += extra_rows + [f"{info.name}/{n},," for n in ("METADATA", "WHEEL", "RECORD")]
    (info / "RECORD").write_text("\n".join(rows) + "\n")
    return info


def test_record_rows_and_links_out_of_site_packages_are_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = tmp_path / "secret"
    secret.mkdir()
    (secret / "outside.so").write_bytes((BIN / "sm80.so").read_bytes())
    site = tmp_path / "a" / "b" / "site"
    os.makedirs(site / "pkg")
    os.symlink(str(secret), site / "pkg" / "door")  # a link in site-packages that leads out
    os.symlink("../pkg", site / "pkg" / "loop")
    _install(site, "cwtrustdist", {"pkg/k.so": (BIN / "sm80.so").read_bytes()}, [
        "../../../secret/outside.so,,", "pkg/door/outside.so,,",
        f"{secret}/outside.so,,", "pkg/loop/loop/loop/k.so,,", "pkg/door,,",
    ])
    monkeypatch.syspath_prepend(str(site))
    dist = installed.find("cwtrustdist")
    rel = [os.path.relpath(f, dist.base) for f in dist.files]
    assert [r for r in rel if ".dist-info" not in r] == [os.path.join("pkg", "k.so")]
    inv = cuwheel.inspect([], dists=["cwtrustdist"])
    paths = [b.path for b in inv.sources[0].binaries]
    assert paths and all("secret" not in p and "outside" not in p for p in paths)
    src = installed_source("cwtrustdist")
    assert [b.path.split("!")[1] for b in src.binaries] == ["pkg/k.so"]


@pytest.mark.parametrize("which", ["METADATA", "RECORD", "WHEEL"])
def test_oversized_or_special_dist_files_are_problems(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, which: str
) -> None:
    site = tmp_path / "site"
    info = _install(site, "cwtrustbig", {"pkg/k.so": (BIN / "sm80.so").read_bytes()}, [])
    monkeypatch.setattr(installed, "MAX_DIST_FILE", 4096)
    with open(info / which, "ab") as f:  # a sparse tail: big, cheap
        f.truncate(1 << 30)
    monkeypatch.syspath_prepend(str(site))
    dist = installed.find("cwtrustbig")
    assert any(f"{which} larger than 4096 bytes" in p.message for p in dist.problems)
    # a FIFO in its place: refused at once, never waited on
    os.unlink(info / which)
    os.mkfifo(info / which)
    dist = installed.find("cwtrustbig")
    assert any("not a regular file" in p.message for p in dist.problems)

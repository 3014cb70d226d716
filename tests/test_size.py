"""The size ledger and its what-if, on fixtures built with nvcc (tests/data/build_size.sh):
the ledger against zipfile's member sizes and cuobjdump's extracted cubins, the what-if
against the real rebuilds, the GPUs given up against compat on the rebuild."""

from __future__ import annotations

import os
import subprocess
import zipfile
from collections import Counter
from pathlib import Path

import pytest

import _absent
import cuwheel.cli
from cuobjdump_oracle import find_cuobjdump
from cuwheel.compat import evaluate, target_for_cc
from cuwheel.model.arch import Arch
from cuwheel.read.inspect import inspect
from cuwheel.size import Scenario, container_mode, estimate, ledger, measure, parse_drop
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
TAG = "cp312-cp312-manylinux_2_28_x86_64"


def _wheel(tmp: Path, so: str, name: str = "sz") -> str:
    d = tmp / so
    d.mkdir()
    return make_wheel(d, {f"{name}/lib{name}.so": (BIN / so).read_bytes(),
                          f"{name}/__init__.py": b"x = 1\n" * 50},
                      name=name, version="1.0", tag=TAG)  # fmt: skip


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    tmp = tmp_path_factory.mktemp("size")
    names = ("size_base", "size_drop75", "size_ptx90", "size_none", "size_size")
    return {n: _wheel(tmp, f"{n}.so") for n in names}


def test_zipped_shares_add_up_to_the_member(wheels: dict[str, str]) -> None:
    inv = inspect([wheels["size_base"]])
    (src,) = ledger(inv, measure(inv))
    (lib,) = src.libraries
    with zipfile.ZipFile(wheels["size_base"]) as z:
        info = z.getinfo("sz/libsz.so")
    assert lib.zipped == info.compress_size and lib.size == info.file_size
    assert sum(a.zipped for a in lib.archs) + lib.other_zipped == info.compress_size
    assert src.size == os.path.getsize(wheels["size_base"])
    # built for 7.5, 8.0, 9.0 with PTX each (build_size.sh), so six rows
    assert [a.name for a in src.archs] == ["sm_75", "sm_80", "sm_90",
                                           "compute_75", "compute_80", "compute_90"]
    # nvcc's default mode: cubins stored, PTX zstd (docs/formats.md)
    assert all(a.zipped > 0 for a in src.archs)


@_absent.needs_cuobjdump
def test_sass_bytes_match_the_cubins_cuobjdump_extracts(tmp_path: Path) -> None:
    so = BIN / "size_base.so"
    subprocess.run([str(find_cuobjdump()), "-xelf", "all", str(so)], cwd=tmp_path,
                   check=True, capture_output=True)  # fmt: skip
    sizes: Counter[str] = Counter()
    for f in tmp_path.glob("*.cubin"):
        arch = next(p for p in f.name.split(".") if p.startswith("sm_"))
        sizes[arch] += f.stat().st_size
    inv = inspect([str(so)])
    (src,) = ledger(inv, measure(inv))
    got = {a.name: a.uncompressed for a in src.archs if a.name.startswith("sm_")}
    assert got == dict(sizes)


CASES = [
    ("size_drop75", Scenario(*parse_drop(["75"]))),
    ("size_ptx90", Scenario(ptx_from=Arch(90))),
    ("size_none", Scenario(compression="none")),
    ("size_size", Scenario(compression="size")),
]


def test_what_if_within_two_percent_of_the_real_rebuilds(wheels: dict[str, str]) -> None:
    inv = inspect([wheels["size_base"]])
    measured = measure(inv, scenarios=[sc for _, sc in CASES])
    for real, sc in CASES:
        e = estimate(inv, measured, sc, gpus=False)
        assert {x.method for x in e.sources} == {"simulated"}
        size = os.path.getsize(wheels[real])
        assert abs(e.estimate - size) <= 0.02 * size, (sc.label, e.estimate, size)
        assert e.size == os.path.getsize(wheels["size_base"])
    # the same on the bare .so files (bytes in the file, not in a zip): the linker lays
    # segments out on 4 KiB pages, so the file moves by whole pages (docs/size.md#accuracy)
    inv = inspect([str(BIN / "size_base.so")])
    measured = measure(inv, scenarios=[sc for _, sc in CASES])
    for real, sc in CASES:
        e = estimate(inv, measured, sc, gpus=False)
        size = (BIN / f"{real}.so").stat().st_size
        assert abs(e.estimate - size) <= max(0.02 * size, 2 * 4096), (sc.label, e.estimate, size)


def test_gpus_given_up_are_the_ones_the_rebuild_loses(wheels: dict[str, str]) -> None:
    inv = inspect([wheels["size_base"]])
    e = estimate(inv, measure(inv), Scenario(*parse_drop(["75"])))
    lost = {g.cc for g in e.gpus if g.lost}
    rebuilt = inspect([wheels["size_drop75"]])
    for cc in ("7.5", "8.0", "8.6", "9.0", "12.0"):
        before = evaluate(inv, target_for_cc(cc)).runs
        after = evaluate(rebuilt, target_for_cc(cc)).runs
        assert (before and not after) == (cc in lost), cc
    assert "7.5" in lost


def test_compression_mode_per_container() -> None:
    # what each fixture was built with (tests/data/build.sh, fixtures.toml)
    want = {"cm_none.so": {"none"}, "cm_size.so": {"zstd"}, "cm_speed_all.so": {"lz4"},
            "cm_default.so": {"mixed:none+zstd", "none"}}  # fmt: skip
    inv = inspect([str(BIN / n) for n in want])
    for b in inv.binaries:
        modes = {container_mode(c) for c in b.containers if c.entries}
        assert modes == want[Path(b.path).name], b.path


def test_sampling_is_bounded_and_adds_up(wheels: dict[str, str]) -> None:
    inv = inspect([wheels["size_base"]])
    full = ledger(inv, measure(inv))[0].libraries[0]
    sampled_m = measure(inv, budget=64 << 10)  # one 64 KiB block in several, each alone
    assert next(iter(sampled_m[0].binaries.values())).sampled
    lib = ledger(inv, sampled_m)[0].libraries[0]
    assert sum(a.zipped for a in lib.archs) + lib.other_zipped == lib.zipped == full.zipped
    # blocks deflated alone miss the matches between architectures' copies of the same
    # kernels (one stream lets the second copy of near-identical PTX cost 45 bytes): the
    # shares move, the device code's total stays of the same order
    assert [a.name for a in lib.archs] == [a.name for a in full.archs]
    code, code_full = sum(a.zipped for a in lib.archs), sum(a.zipped for a in full.archs)
    assert 0.5 * code_full <= code <= 2 * code_full


def test_cli_size(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                  wheels: dict[str, str]) -> None:  # fmt: skip
    args = ["size", wheels["size_base"], "--drop", "sm_75,compute_75", "--budget", "1"]
    assert cuwheel.cli.main(args) == 0  # past the budget: simulated at deflate level 1
    out = capsys.readouterr().out
    assert "sm_75" in out and "gives up: 7.5" in out
    assert cuwheel.cli.main(["size", wheels["size_base"], "--ptx-from", "sm_9x"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--ptx-from" in err and "Traceback" not in err
    bad = tmp_path / "bad.whl"
    bad.write_bytes(Path(wheels["size_base"]).read_bytes()[:5000])
    assert cuwheel.cli.main(["size", str(bad)]) == 2
    assert "Traceback" not in capsys.readouterr().err

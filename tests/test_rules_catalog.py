"""A catalog built by a caller reaches every verdict (rules/judge.py): check, compat and
doctor judge with the ``Rules`` they are given, and two Rules of different catalogs used in
one process never answer from each other's caches.

The catalogs here are the shipped data with one fact changed, so every difference in the
verdicts is that fact's: CC 8.6 marked a Tegra GPU (no SASS binary compatibility, so the
sm_80 cubin that runs on an A10 no longer does: docs/cuda.md#tegra-exception), or CUDA 13's
minor-version-compatibility floor raised above the driver judged (docs/cuda.md)."""

from __future__ import annotations

import copy
import sys
from pathlib import Path
from typing import Any

import pytest

import _absent
import checkwheels as cw
import cuwheel
from cuwheel import compat
from cuwheel.checks import check_wheel
from cuwheel.config import parse_config
from cuwheel.doctor import SearchContext, diagnose, read_environment
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.catalog import DATA_FILES, Catalog, load_catalog
from cuwheel.model.arch import Arch

BIN = Path(__file__).parent / "data" / "bin"
DOC = BIN.parent / "bin_doctor"
LINUX_TAG = "cp311-cp311-manylinux_2_28_x86_64"
NO_SYSTEM = SearchContext((), None, ())


def _catalog(change: Any) -> Catalog:
    tables = {n: copy.deepcopy(read_data_file(n)) for n in DATA_FILES}
    change(tables)
    return cuwheel.build_catalog(tables)


def _tegra_86(tables: dict[str, Any]) -> None:
    (gpu,) = [g for g in tables["gpus.toml"]["gpu"] if g["cc"] == "8.6"]
    gpu["tegra"] = True


def _floor_13(tables: dict[str, Any]) -> None:
    (mc,) = [m for m in tables["cuda.toml"]["minor_compat"] if m["major"] == 13]
    mc["driver_linux"] = "590.44.01"


@pytest.fixture(scope="module")
def tegra() -> cuwheel.Rules:
    return cuwheel.rules_for(_catalog(_tegra_86))


@pytest.fixture(scope="module")
def floor() -> cuwheel.Rules:
    return cuwheel.rules_for(_catalog(_floor_13))


def _sm80_wheel(tmp_path: Path) -> str:
    spec = cw.Spec({"pkg/k.so": (BIN / "sm80only.so").read_bytes()}, "1.0", LINUX_TAG, ())
    return spec.build(tmp_path)


def _states(inv: cuwheel.Inventory, gpu: str, rules: cuwheel.Rules | None,
            driver: str | None = None) -> tuple[cuwheel.WheelState, set[cuwheel.Verdict]]:
    drv = compat.parse_driver(driver) if driver else None
    rep = compat.evaluate(inv, compat.targets_for_gpu(gpu, drv)[0], rules=rules)
    return rep.state, {lv.verdict for s in rep.sources for lv in s.libraries}


def test_compat_judges_with_the_catalog_it_is_given(tmp_path: Path,
                                                    tegra: cuwheel.Rules) -> None:
    inv = cuwheel.inspect([_sm80_wheel(tmp_path)], workers=1)
    W, V = cuwheel.WheelState, cuwheel.Verdict
    assert _states(inv, "A10", None) == (W.RUNS, {V.COMPATIBLE})
    assert _states(inv, "A10", tegra) == (W.DOES_NOT_RUN, {V.NO_CODE})
    with tegra.active():  # a block judged with it
        assert _states(inv, "A10", None) == (W.DOES_NOT_RUN, {V.NO_CODE})
    assert _states(inv, "A10", None) == (W.RUNS, {V.COMPATIBLE})  # and after it, the shipped
    table = compat.matrix(inv, compat.targets_for_gpu("A10")[:1], rules=tegra)
    assert table.cells == ((V.NO_CODE,),)


def test_compat_driver_floor_of_the_catalog(tmp_path: Path, floor: cuwheel.Rules) -> None:
    spec = cw.Spec({"pkg/rt13.so": (DOC / "rt13.so").read_bytes()}, "1.0", LINUX_TAG, ())
    inv = cuwheel.inspect([spec.build(tmp_path)], workers=1)
    shipped = _states(inv, "H100", None, "580.65.06")[1]
    assert cuwheel.Verdict.DRIVER not in shipped  # 580.65.06 is the shipped CUDA 13 floor
    assert _states(inv, "H100", floor, "580.65.06")[1] == {cuwheel.Verdict.DRIVER}


def test_check_judges_with_the_catalog_it_is_given(tmp_path: Path,
                                                   tegra: cuwheel.Rules) -> None:
    wheel = _sm80_wheel(tmp_path)
    cfg = parse_config({}, "test")

    def missing(rules: cuwheel.Rules | None) -> list[str]:
        report = check_wheel(wheel, cfg.rows, cfg.check, environ={}, audit=True, gpus="A10",
                             rules=rules)
        return [f.message for f in report.findings if f.code == "DC001"]

    assert missing(None) == []
    (msg,) = missing(tegra)
    assert "CC 8.6" in msg and "Tegra" in msg, msg
    assert missing(None) == []  # the shipped rules' answer is not the other's


def _dist(site: Path, name: str, files: dict[str, Path]) -> None:
    info = site / f"{name.replace('-', '_')}-1.0.dist-info"
    info.mkdir(parents=True)
    rows = []
    for rel, src in files.items():
        (site / rel).parent.mkdir(parents=True, exist_ok=True)
        (site / rel).write_bytes(src.read_bytes())
        rows.append(f"{rel},,")
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (info / "RECORD").write_text("\n".join([*rows, f"{info.name}/METADATA,,"]) + "\n")


def _codes(site: Path, gpu: str, driver: str, rules: cuwheel.Rules | None) -> set[str]:
    env = read_environment([str(site)], workers=1)
    targets = compat.targets_for_gpu(gpu, compat.parse_driver(driver))[:1]
    d = diagnose(env, targets, NO_SYSTEM, rules=rules)
    return {f.code for t in d.targets for r in t.distributions for f in r.findings}


@_absent.skip_without("linux", not sys.platform.startswith("linux"), "Linux fixtures' loader")
def test_doctor_judges_with_the_catalog_it_is_given(tmp_path: Path, tegra: cuwheel.Rules,
                                                    floor: cuwheel.Rules) -> None:
    _dist(tmp_path, "cw-ext", {"cw_ext/k.so": BIN / "sm80only.so"})
    _dist(tmp_path, "cw-rt", {"cw_rt/rt13.so": DOC / "rt13.so",
                              "cw_rt/libcudart.so.13": DOC / "libcudart.so.13"})
    assert not {"ENV001", "ENV002"} & _codes(tmp_path, "A10", "580.65.06", None)
    assert "ENV001" in _codes(tmp_path, "A10", "580.65.06", tegra)  # no kernel image
    assert "ENV002" in _codes(tmp_path, "A10", "580.65.06", floor)  # driver too old
    assert not {"ENV001", "ENV002"} & _codes(tmp_path, "A10", "580.65.06", None)


def test_two_rules_never_share_answers(tegra: cuwheel.Rules) -> None:
    """The same container and library judged by turns with the shipped rules and with
    another catalog's: each keeps its own answers, in caches of its own."""
    inv = cuwheel.inspect([str(BIN / "sm80only.so")], workers=1)
    (b,) = [b for b in inv.binaries if b.containers]
    shipped = cuwheel.Rules.default()
    other = cuwheel.rules_for(tegra.catalog)  # a second Rules of that catalog: its own memo
    a86 = Arch.parse("sm_86")
    for _ in range(2):
        for rules, want in ((shipped, cuwheel.Verdict.COMPATIBLE),
                            (tegra, cuwheel.Verdict.NO_CODE),
                            (other, cuwheel.Verdict.NO_CODE)):
            got = {cv.verdict for cv in rules.judge_containers(b, a86) if cv.counted}
            assert got == {want}, rules
            assert rules.is_tegra(a86) is (want is cuwheel.Verdict.NO_CODE)
    memos = [r.memo("containers") for r in (shipped, tegra, other)]
    assert all(memos) and len({id(m) for m in memos}) == 3
    assert memos[0] != memos[1]  # the same key, each its own verdict
    assert cuwheel.Rules.default() is shipped
    assert shipped.catalog is load_catalog() and active_catalog() is load_catalog()
    with tegra.active():
        assert active_catalog() is tegra.catalog


def test_a_rules_object_travels_as_its_catalog(tegra: cuwheel.Rules) -> None:
    """scan sends its Rules to worker processes: the catalog goes, the caches stay home."""
    import pickle

    tegra.judge_containers(
        cuwheel.inspect([str(BIN / "sm80only.so")], workers=1).binaries[0], Arch.parse("sm_86"))
    copied = pickle.loads(pickle.dumps(tegra))
    assert copied.catalog == tegra.catalog and copied.memo("containers") == {}
    assert copied.is_tegra(Arch.parse("sm_86"))


@pytest.mark.parametrize("workers", [1, 2])
def test_scan_judges_with_the_catalog_it_is_given(tmp_path: Path, tegra: cuwheel.Rules,
                                                  workers: int) -> None:
    """Each record's per-GPU states come from the Rules scan is given, in worker
    processes too (the Rules travels as its catalog); such records bypass the cache,
    whose key does not hold the catalog."""
    import json

    from cuwheel.scan import RecordOptions, WheelRef, scan
    from cuwheel.scan.cache import Cache

    wheels = [_sm80_wheel(tmp_path / str(i)) for i in range(2)]
    refs = [WheelRef(w, Path(w).name) for w in wheels]
    opts = RecordOptions(check=False)

    def states(rules: cuwheel.Rules | None, cache: Cache | None = None) -> set[str]:
        lines = scan(refs, options=opts, workers=workers, rules=rules, cache=cache)
        return {json.loads(line)["gpus"]["sm_86"] for line in lines}

    cache = Cache(str(tmp_path / "cache"), opts)
    assert states(None, cache) == {"runs"}
    assert states(tegra, cache) == {"does not run"}
    assert states(None, cache) == {"runs"}

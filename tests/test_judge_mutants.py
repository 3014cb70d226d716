"""Library- and wheel-level judgements that issue 30's mutation pass found untested (each
test names the mutant of bench/mutate.py it kills).  Expectations by hand from the rule
each states (docs/compat.md), on nvcc-built fixtures and on containers of known shape."""

from __future__ import annotations

from pathlib import Path

import pytest
import zstandard

import checkwheels as cw
import cuwheel
from cuwheel import compat
from cuwheel.compat import Verdict
from cuwheel.errors import FatbinError
from cuwheel.knowledge import catalog
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import (
    Binary,
    CodeKind,
    Compression,
    FatbinContainer,
    FatbinEntry,
    Toolkit,
)
from cuwheel.read.device.candidate import Candidate
from cuwheel.read.device.containers import assign_containers
from cuwheel.read.device.fatbin import decompress_prefix
from cuwheel.rules.trains import LibraryTrain, wheel_release
from wheelfactory import make_wheel


def _e(name: str, kernels: bool = True) -> FatbinEntry:
    return FatbinEntry(0, CodeKind.SASS, Arch.parse(name), (1, 8), 0, 64, 64, Compression.NONE,
                       0, 64, "linux", False, toolkit=Toolkit(12, 8, "tkinfo"), kernels=kernels)


def _lib(*sets: tuple[tuple[str, ...], bool]) -> Binary:
    cs = tuple(FatbinContainer(i * 64, 64, ".nv_fatbin", True, False,
                               tuple(_e(n, k) for n in names), Toolkit(12, 8, "tkinfo"),
                               device_link=False)
               for i, (names, k) in enumerate(sets))
    return Binary("lib.so", "elf", 0, "shared", "aarch64", containers=cs)


def _verdict(b: Binary, cc: str) -> Verdict:
    lv = compat.evaluate_binary(b, compat.target_for_cc(cc))
    assert lv is not None
    return lv.verdict


def test_kernel_less_containers_do_not_count() -> None:  # J5
    # sm_90 with kernels beside sm_75 cubins without any: on 9.0 the second is nothing
    # the library needs; counted, it would hold code for older GPUs only (in doubt)
    b = _lib((("sm_90",), True), (("sm_75", "sm_80"), False))
    assert _verdict(b, "9.0") is Verdict.NATIVE
    assert _verdict(_lib((("sm_90",), True), (("sm_75", "sm_80"), True)), "9.0") \
        is Verdict.DEPENDS


def test_desktop_code_is_for_other_gpus_on_a_jetson() -> None:  # J3
    # Orin (CC 8.7, Tegra): a container of desktop sm_80 / sm_86 code is for the other
    # side of the divide, not code for older GPUs of Orin's own side
    b = _lib((("sm_87",), True), (("sm_80", "sm_86"), True))
    assert _verdict(b, "8.7") is Verdict.NATIVE


def _variants(tmp_path: Path, files: dict[str, str]) -> Path:
    members = {f"bitsandbytes/libbitsandbytes_cuda{v}.so": cw.fixture(src)
               for v, src in files.items()}
    members["bitsandbytes/__init__.py"] = b""
    return Path(make_wheel(tmp_path, members, name="bitsandbytes", version="0.50.2",
                           tag="py3-none-manylinux_2_24_x86_64"))


def test_a_group_without_a_cuda_version_is_its_best_variant(tmp_path: Path) -> None:  # J1
    # on 9.0: sm80.so (sm_80 + compute_80) runs by PTX JIT, row_x86_cu13.so (sm_90) natively
    whl = _variants(tmp_path, {"128": "sm80.so", "130": "row_x86_cu13.so"})
    (src,) = compat.evaluate(cuwheel.inspect([str(whl)]), compat.target_for_cc("9.0")).sources
    (g,) = src.groups
    assert g.verdict is Verdict.NATIVE and g.chosen is not None and "cuda130" in g.chosen


def test_cuda_12_9_loads_the_newest_variant_below_it(tmp_path: Path) -> None:  # J2
    whl = _variants(tmp_path, {"121": "sm80.so", "128": "row_x86_cu13.so"})
    report = compat.evaluate(cuwheel.inspect([str(whl)]), compat.target_for_cc("9.0"),
                             cuda=(12, 9))
    (g,) = report.sources[0].groups
    assert g.chosen is not None and "cuda128" in g.chosen and g.verdict is Verdict.NATIVE


def test_the_wheels_train_is_its_libraries_most_common() -> None:  # J4
    r121, r128 = catalog.release((12, 1)), catalog.release((12, 8))
    trains = [LibraryTrain(r121, "a"), LibraryTrain(r128, "b"), LibraryTrain(r128, "c")]
    picked = wheel_release(trains)
    assert picked is not None and picked[0] is r128


def test_a_zstd_payload_that_inflates_past_its_size_is_an_error() -> None:  # J6
    data = b"\x7fELF" + bytes(4096)
    # no content size in the frame (zstd's "unknown", which is no size; it was read as
    # one, 2**64 - 1, before): only the stream itself shows it is longer
    frame = zstandard.ZstdCompressor(write_content_size=False).compress(data)
    with pytest.raises(FatbinError, match="inflates beyond"):
        decompress_prefix(Compression.ZSTD, frame, len(frame), len(data) - 1, len(data) - 1)
    assert decompress_prefix(Compression.ZSTD, frame, len(frame), len(data), len(data)) == data


def test_a_candidate_inside_a_kept_container_is_dropped() -> None:  # J7
    first = Candidate(0, end=200, complete=True)
    inner = Candidate(64, end=128, complete=True, index=1)
    after = Candidate(200, end=300, complete=True, index=2)
    kept, problems = assign_containers({0: first, 64: inner, 200: after}, [])
    assert [c.offset for c in kept] == [0, 200] and not problems

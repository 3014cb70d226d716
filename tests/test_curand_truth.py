"""NVIDIA's cuRAND 10.4.5.25 (CUDA 13.4) on an H200 with driver 580 (CUDA 13.0), called for
real: tests/probe/curand_truth.py's committed results, tests/probe/curand_truth.json.

Three of the library's 1760 fatbin containers have, for CC 9.0, nothing but compute_75 PTX
of ISA 9.4, which a CUDA 13.0 driver cannot JIT-compile, and the driver refuses exactly
those three (CUDA_ERROR_UNSUPPORTED_PTX_VERSION).  Yet every generator type, ordering and
distribution of the host API ran, with lazy and with eager module loading, and gave the
same answers as the CUDA 13.0 cuRAND (10.4.0.35) installed beside it: the three containers
hold no kernel (two are empty modules, one is device data only), so nothing is ever
launched from them.  A judge that reads kernels must call this library runnable there
(issue 30); the local stand-in is tests/data/bin/family_newptx.so (test_family_truth.py).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

import _absent
import cuwheel
from cuwheel import compat
from cuwheel.model.arch import Arch

HERE = Path(__file__).parent
RESULTS = json.loads((HERE / "probe" / "curand_truth.json").read_text())
WHEEL = "nvidia_curand-10.4.5.25-py3-none-manylinux_2_27_x86_64.whl"
RNGS = {"PSEUDO_DEFAULT", "PSEUDO_XORWOW", "PSEUDO_MRG32K3A", "PSEUDO_MTGP32", "PSEUDO_MT19937",
        "PSEUDO_PHILOX4_32_10", "QUASI_DEFAULT", "QUASI_SOBOL32", "QUASI_SCRAMBLED_SOBOL32",
        "QUASI_SOBOL64", "QUASI_SCRAMBLED_SOBOL64"}  # fmt: skip
DISTS = {"generate32", "generate64", "uniform", "uniform_double", "normal", "normal_double",
         "lognormal", "lognormal_double", "poisson_4", "poisson_2000", "seeds"}  # fmt: skip
# curandGenerate (32-bit) is for the 32-bit generators, curandGenerateLongLong for the
# 64-bit Sobol ones (cuRAND's host API documentation); anything else is TYPE_ERROR.
SIXTY_FOUR = {"QUASI_SOBOL64", "QUASI_SCRAMBLED_SOBOL64"}


def _calls(lib: str) -> list[dict[str, Any]]:
    return [r for r in RESULTS["calls"] if r["lib"] == lib]


def test_the_run() -> None:
    assert RESULTS["gpu"] == "NVIDIA H200" and RESULTS["cc"] == "9.0"
    assert RESULTS["driver"].startswith("580.") and len(RESULTS["cuwheel_commit"]) == 40
    assert {c["curand_version"] for c in _calls("new")} == {10405}
    assert {c["curand_version"] for c in _calls("installed")} == {10400}


@pytest.mark.parametrize("lib", ["new", "installed"])
def test_every_generator_and_distribution_ran(lib: str) -> None:
    calls = _calls(lib)
    assert {c["rng"] for c in calls} == RNGS and {c["dist"] for c in calls} == DISTS
    assert {c["loading"] for c in calls} == {"", "EAGER"}
    generated = Counter()
    for c in calls:
        assert "crash" not in c and c["create"] == "SUCCESS", c
        if c.get("ordering_status", "SUCCESS") != "SUCCESS":
            assert c["ordering_status"] == "OUT_OF_RANGE", c  # an ordering of another rng
            continue
        wrong_width = (c["dist"] == "generate32") == (c["rng"] in SIXTY_FOUR) and c["dist"] in (
            "generate32",
            "generate64",
        )
        if wrong_width:
            assert c["generate"] == "TYPE_ERROR", c
            continue
        assert c["generate"] == "SUCCESS", c
        assert c["last_error"] == c["sync"] == "cudaSuccess", c
        assert c.get("values_ok") is (None if c["dist"] == "seeds" else True), c
        generated[c["rng"]] += 1
    assert set(generated) == RNGS
    assert sum(generated.values()) > 250


def test_the_cuda_13_4_library_answers_as_the_cuda_13_0_one() -> None:
    def key(c: dict[str, Any]) -> tuple[str, ...]:
        return (c["loading"], c["rng"], c["ordering"], c["dist"])

    def answer(c: dict[str, Any]) -> tuple[Any, ...]:
        return tuple(c.get(k) for k in ("create", "ordering_status", "generate", "sync"))

    new = {key(c): answer(c) for c in _calls("new")}
    old = {key(c): answer(c) for c in _calls("installed")}
    assert new == old and len(new) > 400


def test_the_driver_refuses_exactly_the_new_ptx_containers() -> None:
    loads = RESULTS["container_loads"]["new"]
    cols = loads["columns"]
    rows = [dict(zip(cols, r, strict=True)) for r in loads["rows"]]
    assert loads["containers"] == len(rows) == 1760  # every container was loaded
    failed = [r for r in rows if r["rc"] != 0]
    assert {r["result"] for r in failed} == {
        "CUDA_ERROR_UNSUPPORTED_PTX_VERSION",
        "CUDA_ERROR_NO_BINARY_FOR_GPU",
    }
    too_new = [r for r in rows if r["result"] == "CUDA_ERROR_UNSUPPORTED_PTX_VERSION"]
    assert [r["index"] for r in too_new] == [10, 11, 12]
    assert {r["entries"] for r in too_new} == {"ptx75 sass75"}
    # the verdicts the probe's cuwheel gave (commit in the file) agree container by container
    for r in rows:
        assert (r["predicted"] in ("native", "compat", "JIT")) == (r["rc"] == 0), r


# ------------------------------------------------- the wheel itself (downloaded, 77 MB)


@pytest.fixture(scope="module")
def library(tmp_path_factory: pytest.TempPathFactory) -> Path:
    if os.environ.get("CUWHEEL_SKIP_NETWORK") == "1":
        _absent.skip("network", "CUWHEEL_SKIP_NETWORK=1")
    wheel = Path("/tmp/wheels") / WHEEL  # the shared download cache, when there is one
    if not wheel.is_file():
        dest = tmp_path_factory.mktemp("curand")
        cmd = [sys.executable, "-m", "pip", "download", "-q", "--no-deps",
               "--only-binary=:all:", "--platform", "manylinux_2_27_x86_64", "-d", str(dest),
               "nvidia-curand==10.4.5.25"]  # fmt: skip
        if subprocess.run(cmd, capture_output=True, timeout=900).returncode != 0:
            _absent.skip("network")
        wheel = dest / WHEEL
    import zipfile

    out = tmp_path_factory.mktemp("curand_lib") / "libcurand.so.10"
    with zipfile.ZipFile(wheel) as z:
        out.write_bytes(z.read("nvidia/cu13/lib/libcurand.so.10"))
    return out


@pytest.mark.network
def test_todays_container_verdicts_match_the_driver(library: Path) -> None:
    target = compat.Target(Arch(90), "H200", compat.parse_driver(RESULTS["driver"]))
    (b,) = cuwheel.inspect([str(library)]).binaries
    loads = RESULTS["container_loads"]["new"]
    rows = [dict(zip(loads["columns"], r, strict=True)) for r in loads["rows"]]
    assert len(b.containers) == len(rows)
    for r in rows:
        c = b.containers[r["index"]]
        assert c.offset == r["offset"]
        cv = compat.evaluate_container(c, target, compat.binary_os(b))
        assert cv.verdict is not None and cv.verdict.loads == (r["rc"] == 0), r


@pytest.mark.network
def test_the_refused_containers_hold_no_kernel(library: Path) -> None:
    import zstandard

    data = library.read_bytes()
    (b,) = cuwheel.inspect([str(library)]).binaries
    for i in (10, 11, 12):
        for e in b.containers[i].entries:
            raw = data[e.offset + e.header_size : e.offset + e.header_size + e.compressed_size]
            body = zstandard.ZstdDecompressor().decompress(raw, e.uncompressed_size)
            if e.kind.value == "ptx":
                assert b".entry" not in body and body.startswith(b"\n")
            else:  # a cubin: a kernel is a .text.<name> section
                assert body[:4] == b"\x7fELF" and b".text." not in body


@pytest.mark.network
def test_the_library_runs_on_the_older_driver(library: Path) -> None:
    """Read as ``cuwheel compat`` reads (kernel and variable names): the three refused
    containers hold no kernel, and the host code never takes the address of their tables'
    shadows beyond registering them (read/binary/hostrefs.py)."""
    target = compat.Target(Arch(90), "H200", compat.parse_driver(RESULTS["driver"]))
    (b,) = cuwheel.inspect([str(library)], payload="kernels").binaries
    assert [b.containers[i].host_reads for i in (10, 11, 12)] == [None, None, ()]
    lv = compat.evaluate_binary(b, target)
    assert lv is not None and lv.verdict.runs  # DRIVER TOO OLD before read/binary/hostrefs.py

"""The roll-up's library verdicts against launches through real libraries on an H200.

tests/probe/library_truth.py ran on the H200 machine (driver 580.159.04) and launched the
kernels of tests/data/bin/dispatch_*.so (tests/data/build_dispatch.sh) two ways: the kernel
the library has for the GPU's compute capability (``cw_dispatch``), and every kernel
(``cw_all``).  Its results are committed (tests/probe/library_truth.json); here today's
roll-up is recomputed for the same GPU and compared with what the driver did.
"""

from __future__ import annotations

import json
from pathlib import Path

import cuwheel
from cuwheel import compat
from cuwheel.compat import Verdict
from cuwheel.model.arch import Arch

HERE = Path(__file__).parent
RESULTS = json.loads((HERE / "probe" / "library_truth.json").read_text())
BIN = HERE / "data" / "bin"


def _ran(library: str, function: str) -> bool:
    (row,) = [r for r in RESULTS["launches"]
              if r["library"] == library and r["function"] == function]  # fmt: skip
    return bool(row["error"] == 0)


def _today(library: str) -> Verdict:
    target = compat.Target(Arch.parse(RESULTS["cc"]), RESULTS["gpu"],
                           compat.parse_driver(RESULTS["driver"]))  # fmt: skip
    (b,) = cuwheel.inspect([str(BIN / library)]).binaries
    lv = compat.evaluate_binary(b, target)
    assert lv is not None
    return lv.verdict


def test_the_probe_ran_on_a_hopper_gpu() -> None:
    assert RESULTS["cc"] == "9.0" and len(RESULTS["launches"]) == 6
    # a kernel without code for the GPU fails as users see it
    errors = {r["error_name"] for r in RESULTS["launches"] if r["error"]}
    assert errors == {"cudaErrorNoKernelImageForDevice"}


def test_one_container_per_architecture_runs_when_the_library_dispatches() -> None:
    # k_a sm_75 | k_b sm_80 | k_c sm_90: the Hopper container is this GPU's own build of
    # the library's kernels; the roll-up takes the NVIDIA-style shape to dispatch
    assert _ran("dispatch_perarch.so", "cw_dispatch")
    assert _today("dispatch_perarch.so").runs
    # the same bytes from host code that calls every kernel fail: the shape is a judgement
    # about the host code, which the docs state (docs/compat.md#from-containers-to-a-wheel)
    assert not _ran("dispatch_perarch.so", "cw_all")


def test_an_older_list_beside_this_gpus_code_depends_on_the_host_code() -> None:
    # k_a {sm_75, sm_80} | k_c sm_90 from CUDA 13.0: both outcomes happen on one library
    assert _ran("dispatch_lists.so", "cw_dispatch")
    assert not _ran("dispatch_lists.so", "cw_all")
    assert _today("dispatch_lists.so") is Verdict.DEPENDS


def test_a_library_built_before_the_gpu_does_not_run() -> None:
    # k_a {sm_75, sm_80} | k_p compute_80 from "CUDA 11.0": its host code knows 7.5 and 8.0
    # only and sends the H200 to k_a, whatever it picks it cannot pick for 9.0
    assert not _ran("dispatch_before.so", "cw_dispatch")
    assert not _ran("dispatch_before.so", "cw_all")
    assert _today("dispatch_before.so") is Verdict.PARTIAL

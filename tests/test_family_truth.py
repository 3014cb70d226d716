"""Kernel families against launches on an H200: today's verdicts, recomputed, against what
the driver did through each library's own host code.

tests/probe/family_truth.py ran on the H200 machine (driver 580.159.04, CUDA 13.0) and
called the host code of tests/data/bin/family_*.so (tests/data/build_family.sh) with the
runtime's default (lazy) module loading and with CUDA_MODULE_LOADING=EAGER; the results
and the cuwheel commit that ran are in tests/probe/family_truth.json.  Which kernel is in
which container is written here by hand from the build script, never read from cuwheel.
Every case agrees with the driver today (the last two, the kernel-less units, since
read/hostrefs.py reads whether host code uses their variables).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cuwheel
from cuwheel import compat
from cuwheel.compat import Verdict
from cuwheel.model.arch import Arch

HERE = Path(__file__).parent
RESULTS = json.loads((HERE / "probe" / "family_truth.json").read_text())
BIN = HERE / "data" / "bin"

# Per single-kernel entry point: the targets of the one translation unit holding that kernel
# (build_family.sh), and whether a CC 9.0 GPU with a CUDA 13.0 driver has code for it.
KERNELS = {
    "cw_gemm75": ("cwfam::Gemm<float, 75>", {"sm_75"}, False),
    "cw_gemm80": ("cwfam::Gemm<float, 80>", {"sm_80", "compute_80"}, True),  # PTX JIT
    "cw_gemm90": ("cwfam::Gemm<float, 90>", {"sm_90a"}, True),
    "cw_epilogue": ("cwfam::Epilogue<float>", {"sm_75"}, False),
}


def _ran(library: str, function: str, loading: str = "default") -> bool:
    (row,) = [r for r in RESULTS["launches"] if (r["library"], r["function"], r["loading"])
              == (library, function, loading)]  # fmt: skip
    assert row["error"] is not None, row  # the child process finished
    return bool(row["error"] == 0)


def _target() -> compat.Target:
    return compat.Target(Arch.parse(RESULTS["cc"]), RESULTS["gpu"],
                         compat.parse_driver(RESULTS["driver"]))  # fmt: skip


def _binary(library: str) -> cuwheel.Binary:
    # with the kernels' names, as compat reads (docs/compat.md#kernel-families)
    (b,) = cuwheel.inspect([str(BIN / library)], payload="kernels").binaries
    return b


def _today(library: str) -> compat.LibraryVerdict:
    lv = compat.evaluate_binary(_binary(library), _target())
    assert lv is not None
    return lv


def test_the_probe_ran_on_a_hopper_gpu_with_a_cuda_13_0_driver() -> None:
    assert RESULTS["cc"] == "9.0" and RESULTS["driver"].startswith("580.")
    assert len(RESULTS["cuwheel_commit"]) == 40
    assert len(RESULTS["launches"]) == 2 * 18
    # each call gave the same answer with lazy and with eager module loading
    for r in RESULTS["launches"]:
        assert _ran(r["library"], r["function"], "EAGER") == _ran(r["library"], r["function"])
    errors = {r["error_name"] for r in RESULTS["launches"] if r["error"]}
    assert errors == {"cudaErrorNoKernelImageForDevice", "cudaErrorUnsupportedPtxVersion"}


PER_KERNEL = [
    (lib, fn)
    for lib in ("family_dispatch.so", "family_sm75.so", "family_unique.so")
    for fn in sorted(KERNELS)
    if fn != "cw_epilogue" or lib == "family_unique.so"
]


@pytest.mark.parametrize(("library", "function"), PER_KERNEL)
def test_each_kernel_runs_where_its_container_loads(library: str, function: str) -> None:
    """Per kernel: the driver ran it where the container of its translation unit has code
    for the GPU, and today's container verdict for that container says the same."""
    _, targets, has_code = KERNELS[function]
    assert _ran(library, function) == has_code
    b = _binary(library)
    stub = compat.link_stub_index(b)
    (container,) = [c for i, c in enumerate(b.containers)
                    if i != stub and {e.name for e in c.entries} == targets]  # fmt: skip
    cv = compat.evaluate_container(container, _target(), compat.binary_os(b))
    assert cv.verdict is not None and cv.verdict.loads == has_code


def test_same_device_code_same_verdict_whatever_the_host_code_calls() -> None:
    """family_sm75.so has family_dispatch.so's device code, and host code that calls the
    sm_75 instantiation on every GPU: it fails where family_dispatch.so runs.  Device code
    cannot tell the two apart, so no judge that reads it can; the verdicts must be equal."""
    a, b = _binary("family_dispatch.so"), _binary("family_sm75.so")
    assert [(c.size, [e.name for e in c.entries]) for c in a.containers] == [
        (c.size, [e.name for e in c.entries]) for c in b.containers
    ]
    assert _ran("family_dispatch.so", "cw_dispatch")
    assert not _ran("family_sm75.so", "cw_dispatch")
    assert _today("family_dispatch.so").verdict is _today("family_sm75.so").verdict


def test_per_architecture_instantiations_of_one_template_run() -> None:
    # Gemm<float, 75> sm_75 | Gemm<float, 80> compute_80 + sm_80 | Gemm<float, 90> sm_90a:
    # the sm_75 unit is a specialisation for older GPUs; the host code picks by CC and runs
    assert _ran("family_dispatch.so", "cw_dispatch")
    assert _today("family_dispatch.so").verdict.runs  # was DEPENDS ON DISPATCH


def test_a_kernel_unique_to_a_turing_only_unit_does_not_run() -> None:
    # cwfam::Epilogue exists only in the sm_75 unit and the host code runs it on every GPU
    assert not _ran("family_unique.so", "cw_dispatch")
    assert not _today("family_unique.so").verdict.runs


def test_the_missing_kernel_is_named_by_family() -> None:
    lv = _today("family_unique.so")
    assert lv.verdict is Verdict.PARTIAL  # was DEPENDS ON DISPATCH, no kernel named
    assert "cwfam::Epilogue" in lv.reason and "cwfam::Gemm" not in lv.reason


def test_kernel_less_units_of_too_new_ptx_do_not_stop_a_library() -> None:
    """family_newptx.so: a sm_90 kernel beside two units with no kernel whose only code for
    CC 9.0 is PTX ISA 9.4 (cuRAND 10.4.5.25's shape, tests/test_curand_truth.py).  The
    driver refuses those two containers (tests/probe/h200_results.json), yet the library's
    host code ran, with lazy and with eager loading: nothing in them is ever launched."""
    assert _ran("family_newptx.so", "cw_dispatch")
    assert _ran("family_newptx.so", "cw_dispatch", "EAGER")
    # DRIVER TOO OLD from the two kernel-less containers, before read/hostrefs.py: the
    # table's host shadow is taken only by its registration
    assert _today("family_newptx.so").verdict is Verdict.NATIVE


def test_a_kernel_less_unit_is_needed_when_its_host_code_reads_its_variables() -> None:
    """family_newvar.so: the same shape, but the ISA 9.4 unit's device variable is read by
    that unit's own host code (cudaMemcpyFromSymbol).  The kernel elsewhere still runs; the
    read fails with the too-new-PTX error: a kernel-less container is never needed only
    while no host code touches its variables (cuRAND's tables are not even visible)."""
    for loading in ("default", "EAGER"):
        assert _ran("family_newvar.so", "cw_dispatch", loading)
    (row,) = [r for r in RESULTS["launches"]
              if (r["library"], r["function"], r["loading"])
              == ("family_newvar.so", "cw_read_table", "default")]  # fmt: skip
    assert row["error_name"] == "cudaErrorUnsupportedPtxVersion"
    # a call of the library fails on this driver, so it must not be called runnable; the
    # variable that host code reads is named
    lv = _today("family_newvar.so")
    assert not lv.verdict.runs and "cw_table" in lv.reason

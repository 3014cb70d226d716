"""The one roll-up (rules/rollup.py) on trimmed copies of real published wheels and on
containers of known shape.

Expectations come from outside cuwheel: what users of these wheels report (faiss-gpu
1.7.2 fails with cuBLAS errors on an A100, facebookresearch/faiss#2026), how the package
loads its libraries (bitsandbytes/cextension.py: one ``libbitsandbytes_cuda{XY}`` chosen by
the CUDA version torch reports), what NVIDIA's nvcc can build (CUDA 13.0 dropped Volta and
Pascal: docs/cuda.md), and how the modules are built (vLLM's FlashMLA is sm_90a / sm_100f
only, FlashAttention-2 sm_80+).  The fixtures are made by tests/data/real/trim_real.py
from the published wheels (sha256 in that script): the same libraries, NEEDED entries and
kinds of fatbin containers.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cuwheel
from cuwheel import compat
from cuwheel.compat import Target, Verdict, WheelState
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, CodeKind, Compression, FatbinContainer, FatbinEntry
from cuwheel.model.inventory import Toolkit as Tk
from cuwheel.rules import evidence, rollup

REAL = Path(__file__).parent / "data" / "real"
FAISS = REAL / "faiss_gpu-1.7.2-cp310-cp310-manylinux_2_17_x86_64.manylinux2014_x86_64.whl"
BNB = REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl"
VLLM = REAL / "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl"


@pytest.fixture
def run_cli(capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    import cuwheel.cli

    def run(*argv: str) -> tuple[int, str, str]:
        code = cuwheel.cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def _gpu(name: str) -> Target:
    (t,) = compat.targets_for_gpu(name)[:1]
    return t


def _report(wheel: Path, gpu: str, cuda: tuple[int, int] | None = None) -> compat.TargetReport:
    return compat.evaluate(cuwheel.inspect([str(wheel)]), _gpu(gpu), cuda=cuda)


# ---------------------------------------------------------------------------- real wheels


def test_faiss_built_by_cuda_10_does_not_run_on_ampere() -> None:
    r = _report(FAISS, "A100")
    assert r.state is WheelState.DOES_NOT_RUN and r.state.exit_code == 1
    (lib,) = r.culprits
    assert lib.path.endswith("_swigfaiss.cpython-310-x86_64-linux-gnu.so")
    assert lib.verdict is Verdict.PARTIAL
    # the cuBLAS containers: code for older GPUs only, from a toolkit before sm_80 existed
    assert "predates CC 8.0" in lib.reason and "CUDA 10.0" in lib.reason
    # on a GPU its toolkit knew, the per-architecture cuBLAS containers are for other GPUs
    t4 = _report(FAISS, "T4")
    assert t4.state is WheelState.RUNS and t4.runs


def test_bitsandbytes_variants_are_alternatives() -> None:
    v100 = _report(BNB, "V100")
    assert v100.state is WheelState.RUNS
    (g,) = v100.sources[0].groups
    assert set(g.running) == {f"libbitsandbytes_cuda{v}.so" for v in (118, 121, 124, 126, 128)}
    # no CUDA 13 nvcc builds for Volta: not for this GPU, never a failure
    assert set(g.not_for) == {"libbitsandbytes_cuda130.so", "libbitsandbytes_cuda132.so"}
    assert not g.failing
    # Pascal: sm_60 is in the 11.8 - 12.6 builds only
    p100 = _report(BNB, "P100")
    (g,) = p100.sources[0].groups
    assert p100.state is WheelState.RUNS
    assert g.failing == ("libbitsandbytes_cuda128.so",)
    # the CUDA version of the process picks the one that loads
    assert _report(BNB, "P100", cuda=(12, 6)).state is WheelState.RUNS
    picked = _report(BNB, "P100", cuda=(12, 8))
    assert picked.state is WheelState.DOES_NOT_RUN
    assert "libbitsandbytes_cuda128.so" in picked.sources[0].reason
    cu13 = _report(BNB, "V100", cuda=(13, 0))
    assert cu13.state is WheelState.DOES_NOT_RUN
    assert cu13.sources[0].groups[0].verdict is Verdict.OTHER_GPUS
    # the ROCm, XPU and CPU libraries of the set say nothing about an NVIDIA GPU
    assert _report(BNB, "H100").state is WheelState.RUNS


def test_vllm_on_turing_runs_except_flash_attention_2() -> None:
    r = _report(VLLM, "T4")
    assert r.state is WheelState.RUNS_EXCEPT and r.state.exit_code == 3
    assert [Path(lv.path).name for lv in r.culprits] == ["_vllm_fa2_C.abi3.so"]
    other = {Path(lv.path).name for lv in r.sources[0].other_gpus}
    assert other == {"_flashmla_C.abi3.so", "_flashmla_extension_C.abi3.so", "_vllm_fa3_C.abi3.so"}
    core = next(lv for lv in r.sources[0].libraries if lv.path.endswith("vllm/_C.abi3.so"))
    assert core.verdict.runs


def test_cli_leads_with_the_culprit_and_the_gpu_asked(run_cli) -> None:  # type: ignore[no-untyped-def]
    # --no-kernels for the trimmed fixtures: their containers were rebuilt from the real
    # libraries' smallest cubins (trim_real.py), whose kernels are not the real ones
    rc, out, _ = run_cli("compat", str(VLLM), "--gpu", "T4", "--no-kernels")
    assert rc == 3
    first = out.splitlines()[0]
    assert "T4" in first and "RUNS EXCEPT" in first and "_vllm_fa2_C.abi3.so" in first
    assert len(out.splitlines()) <= 12
    # the real wheel gives the same answer with its kernels read (docs/compat.md)
    rc, out, _ = run_cli("compat", str(FAISS), "--gpu", "A100", "--format", "json",
                         "--no-kernels")
    doc = json.loads(out)
    assert rc == 1 and doc["state"] == "does not run" and doc["exit_code"] == 1
    (src,) = doc["targets"][0]["sources"]
    assert src["culprits"] == ["faiss/_swigfaiss.cpython-310-x86_64-linux-gnu.so"]
    rc, out, _ = run_cli("compat", str(BNB), "--gpu", "V100", "--cuda", "13.0", "--no-kernels")
    assert rc == 1 and "libbitsandbytes_cuda130.so" in out


# ---------------------------------------------------------------------------- shapes


# the PTX ISA each toolkit emits (PTX ISA release notes): CUDA 10.2 -> 6.5, 12.8 -> 8.7
_ISA = {(10, 2): (6, 5), (12, 8): (8, 7), None: (8, 0)}


def _entry(name: str, tk: tuple[int, int] | None = None) -> FatbinEntry:
    ptx = name.startswith("compute_")
    arch = Arch.parse(name.split("_", 1)[1] if ptx else name)
    return FatbinEntry(
        0, CodeKind.PTX if ptx else CodeKind.SASS, arch, _ISA[tk] if ptx else (1, 8), 0, 64,
        64, Compression.NONE, 0, 64, "linux", False,
        toolkit=Tk(*tk, "tkinfo") if tk and not ptx else None, kernels=True,
    )  # fmt: skip


def _lib(*sets: tuple[str, ...], tk: tuple[int, int] | None = (12, 8)) -> Binary:
    cs = tuple(
        # device_link False: each a translation unit's own container (no device-link stub)
        FatbinContainer(i * 64, 64, ".nv_fatbin", True, False,
                        tuple(_entry(n, tk) for n in s), Tk(*tk, "tkinfo") if tk else None,
                        device_link=False)
        for i, s in enumerate(sets)
    )  # fmt: skip
    return Binary("lib.so", "elf", 0, "shared", "x86_64", containers=cs)


def _verdict(b: Binary, cc: str) -> Verdict:
    lv = compat.evaluate_binary(b, compat.target_for_cc(cc))
    assert lv is not None
    return lv.verdict


def test_dispatch_threshold_both_sides() -> None:
    # on 9.0: one loading container, the rest older-only sets; the toolkit (12.8) knew 9.0
    loads = ("sm_90",)
    older = [("sm_50",), ("sm_60",), ("sm_70",), ("sm_75",), ("sm_80",), ("sm_86",),
             ("sm_50", "sm_60"), ("sm_70", "sm_80")]  # fmt: skip
    assert evidence.DISPATCH_ARCH_SETS == 8
    seven = _lib(loads, ("sm_50", "sm_60"), ("sm_60", "sm_70"), ("sm_70", "sm_75"),
                 ("sm_75", "sm_80"), ("sm_80", "sm_86"), ("sm_50", "sm_86"))  # fmt: skip
    assert len({frozenset(s) for s in [loads, *older[:6]]}) == 7
    assert _verdict(seven, "9.0") is Verdict.DEPENDS
    eight = _lib(loads, *older[6:], ("sm_60", "sm_70"), ("sm_70", "sm_75"), ("sm_75", "sm_80"),
                 ("sm_80", "sm_86"), ("sm_50", "sm_86"))  # fmt: skip
    assert _verdict(eight, "9.0") is Verdict.NATIVE
    # history bounds it: the same eight sets from a CUDA 10.2 build cannot dispatch to 9.0
    old = _lib(("sm_75", "compute_75"), *older[6:], ("sm_60", "sm_70"), ("sm_70", "sm_75"),
               ("sm_50", "sm_61"), ("sm_52", "sm_70"), ("sm_50", "sm_75"), tk=(10, 2))  # fmt: skip
    assert _verdict(old, "9.0") is Verdict.PARTIAL


def test_build_floor_both_sides() -> None:
    # vLLM's _C shape: most containers start at sm_70, one helper at sm_52 (+ PTX)
    helper = ("sm_52", "compute_52")
    main = [("sm_70", "sm_80", "sm_90")] * 10
    b = _lib(helper, *main)  # the helper starts 1 of 11 (9%): below the floor share
    assert evidence.build_floor(b) == Arch(70)
    # on a P100 the helper loads, but the library's kernels are for newer GPUs: missing
    assert _verdict(b, "6.0") is Verdict.PARTIAL
    assert _verdict(b, "7.0").runs  # the helper by PTX JIT, the rest natively
    # with the helper's share at the floor share (1 of 10 = 10%) it counts: the library
    # starts at sm_52 and its newer-only containers are for other GPUs
    assert evidence.FLOOR_SHARE == 0.1
    b10 = _lib(helper, *main[:-1])
    assert evidence.build_floor(b10) == Arch(52)
    assert _verdict(b10, "6.0") is Verdict.PTX_JIT


def test_per_architecture_build_both_sides() -> None:
    # cuFFT's shape: one architecture per container, this GPU's among them
    assert _verdict(_lib(("sm_80",), ("sm_86",), ("sm_90",)), "9.0") is Verdict.NATIVE
    # one container of two architectures breaks the shape: the gap is in doubt
    assert _verdict(_lib(("sm_80", "sm_86"), ("sm_90",)), "9.0") is Verdict.DEPENDS
    # this GPU has no container of its own (it loads PTX): in doubt
    assert _verdict(_lib(("sm_80",), ("sm_86",), ("compute_90",)), "9.0") is Verdict.DEPENDS


def test_builder_knows_evidence() -> None:
    # a toolkit before the GPU: False; unknown toolkit and only older code: None
    knew, why = evidence.builder_knows(_lib(("sm_75",), tk=(10, 2)), Arch(80))
    assert knew is False and "10.2" in why
    assert evidence.builder_knows(_lib(("sm_75",), tk=None), Arch(80))[0] is None
    assert evidence.builder_knows(_lib(("sm_75",), ("sm_90",), tk=None), Arch(80))[0] is True


def test_module_of_arch_specific_code_is_for_other_gpus() -> None:
    b = _lib(("sm_90a",), ("sm_100f",))
    assert _verdict(b, "8.0") is Verdict.OTHER_GPUS
    assert _verdict(b, "9.0") is Verdict.NATIVE


@pytest.mark.parametrize(
    ("names", "groups"),
    [
        (["p/libx_cuda118.so", "p/libx_cuda128.so", "p/libx_cpu.so"], 1),
        (["p/libx_cuda118.so", "q/libx_cuda128.so"], 0),  # another directory
        (["p/libx_cuda118.so"], 0),  # alone
        (["p/liba_cuda118.so", "p/libb_cuda118.so"], 0),  # other stems
        (["p/x_cuda118.dll", "p/x_rocm62.dll"], 1),
        # torch's libraries: a backend name with no version picks nothing
        (["t/libtorch_cuda.so", "t/libtorch_cpu.so", "t/libtorch_cuda_linalg.so"], 0),
        (["p/libx_cuda121_nocublaslt.so", "p/libx_cuda121.so"], 1),
    ],
)
def test_alternatives_grouping(names: list[str], groups: int) -> None:
    assert len(evidence.alternatives(names)) == groups


def test_combined_state_order() -> None:
    S = WheelState
    assert rollup.combine_states([S.RUNS, S.DEPENDS]) is S.DEPENDS
    assert rollup.combine_states([S.RUNS_EXCEPT, S.UNKNOWN]) is S.UNKNOWN
    assert rollup.combine_states([S.DOES_NOT_RUN, S.UNKNOWN]) is S.DOES_NOT_RUN
    assert rollup.combine_states([]) is S.NOTHING
    assert {s.exit_code for s in S} == {0, 1, 2, 3, 4}


def test_alternatives_all_for_another_platform_are_wrong_platform_in_scan() -> None:
    # bitsandbytes' x86_64 wheel on a Jetson (aarch64 only): every variant is a linux-x86_64
    # binary, so the scan record says "wrong platform", not "does not run".
    from cuwheel.scan.record import PLATFORM, gpu_states

    (source,) = cuwheel.inspect(
        [REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl"], workers=1
    ).sources
    states = gpu_states(source)
    assert states is not None
    assert states["sm_87"] == PLATFORM == "wrong platform"
    assert states["sm_80"] == "runs"


def test_a_gpu_no_known_platform_carries_is_said_so() -> None:
    # Jetson TK1 (CC 3.2) is a 32-bit ARM board: no row platform carries it.
    report = _report(REAL / "faiss_gpu-1.7.2-cp310-cp310-manylinux_2_17_x86_64."
                     "manylinux2014_x86_64.whl", "Jetson TK1")
    reasons = [lv.reason for s in report.sources for lv in s.libraries]
    assert any("no platform cuwheel knows carries this GPU" in r for r in reasons)
    assert not any(r.rstrip().endswith("are") for r in reasons)

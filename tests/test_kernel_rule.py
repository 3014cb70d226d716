"""The roll-up's kernel rule (rules/kernels.py, rules/library.py): a container that misses a
GPU is for other GPUs when each of its kernel families has code that loads elsewhere in the
library, and missing code otherwise, named by family.  On nvcc-built libraries
(tests/data/build_kernels.sh); expectations by hand from the build script's layout."""

from __future__ import annotations

from pathlib import Path

import pytest

import cuwheel
from cuwheel import compat
from cuwheel.compat import Verdict
from cuwheel.model.arch import Arch
from cuwheel.rules.library import judge_library
from cuwheel.rules.loading import ContainerVerdict

BIN = Path(__file__).parent / "data" / "bin"


def _judge(library: str, cc: str, *, payload: str = "kernels", driver: str = "580.65.06"):
    target = compat.Target(Arch.parse(cc), cc, compat.parse_driver(driver))
    (b,) = cuwheel.inspect([str(BIN / library)], payload=payload).binaries
    lv = compat.evaluate_binary(b, target)
    assert lv is not None
    return b, lv


def _judgement(library: str, cc: str):
    b, lv = _judge(library, cc)
    cvs: list[ContainerVerdict] = list(lv.containers)
    j = judge_library(b, cvs, Arch.parse(cc))
    assert j is not None
    return j


def test_per_arch_instances_of_one_template_run_on_hopper() -> None:
    # kj::scale<1> sm_75 | <2>, <3> sm_80 + compute_80 | <4> sm_90a: on CC 9.0 the sm_90a
    # container loads natively and the compute_80 one by JIT; the Turing container's
    # family has code here, so it is for other GPUs and nothing is missing
    _, lv = _judge("kern_perarch.so", "9.0")
    assert lv.verdict is Verdict.PTX_JIT
    assert "kj::scale" in lv.reason and "missing" not in lv.reason
    j = _judgement("kern_perarch.so", "9.0")
    assert j.missing == () and j.missing_families == () and len(j.specialised) == 1


def test_a_kernel_unique_to_a_turing_container_is_missing_on_hopper() -> None:
    _, lv = _judge("kern_unique.so", "9.0")
    assert lv.verdict is Verdict.PARTIAL and not lv.verdict.runs
    assert "kj::turing_only" in lv.reason
    j = _judgement("kern_unique.so", "9.0")
    assert j.missing_families == ("kj::turing_only",)
    assert len(j.missing) == 1 and len(j.specialised) == 1  # scale<1>'s container is not


def test_the_turing_kernel_runs_on_turing() -> None:
    # on CC 7.5 the sm_75 containers load; the compute_80 and sm_90a ones miss it, and
    # their family (kj::scale) has Turing code: for other GPUs
    _, lv = _judge("kern_unique.so", "7.5")
    assert lv.verdict is Verdict.NATIVE
    j = _judgement("kern_unique.so", "7.5")
    assert j.missing == () and len(j.specialised) == 2


def test_on_ampere_the_arch_specific_hopper_container_is_for_other_gpus() -> None:
    j = _judgement("kern_unique.so", "8.0")
    # kj::turing_only has no code for CC 8.0 (sm_75 SASS does not run across majors)
    assert j.missing_families == ("kj::turing_only",)
    _, lv = _judge("kern_perarch.so", "8.0")
    assert lv.verdict is Verdict.NATIVE


@pytest.mark.parametrize("library", ["kern_perarch.so", "kern_unique.so"])
def test_without_kernel_names_the_architecture_evidence_decides(library: str) -> None:
    # read without names (the default payload), the same bytes are judged as before:
    # an older-only container beside this GPU's code is in doubt
    _, lv = _judge(library, "9.0", payload="sample")
    assert lv.verdict is Verdict.DEPENDS


def test_compat_cli_names_the_missing_family(capsys: pytest.CaptureFixture[str]) -> None:
    from cuwheel.cli import main

    assert main(["compat", str(BIN / "kern_unique.so"), "--gpu", "H100",
                 "--driver", "580"]) == 1
    out = capsys.readouterr().out
    assert "DOES NOT RUN" in out and "kj::turing_only" in out
    assert main(["compat", str(BIN / "kern_perarch.so"), "--gpu", "H100",
                 "--driver", "580"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("H100 (CC 9.0) with driver 580: RUNS")


def test_a_family_is_missing_only_when_every_loading_container_was_read() -> None:
    # container 0 loads but its kernels are unknown (a cubin without a symbol table, or
    # names not read); container 1 misses the GPU with a kernel found nowhere else: it may
    # be in container 0, so it is left to the architecture evidence, not named missing
    from cuwheel.model.inventory import CodeKind, Compression, FatbinContainer, FatbinEntry
    from cuwheel.rules.kernels import split_by_kernels

    def c(arch: str, names: tuple[str, ...] | None) -> FatbinContainer:
        e = FatbinEntry(0, CodeKind.SASS, Arch.parse(arch), (1, 8), 0, 64, 64,
                        Compression.NONE, 0, 64, "linux", False, kernels=True,
                        kernel_names=names)
        return FatbinContainer(0, 64, ".nv_fatbin", True, False, (e,))

    blind = split_by_kernels([c("sm_90", None), c("sm_75", ("_Z4onlyv",))], [0], [1])
    assert blind.unknown == (1,) and not blind.unique
    read = split_by_kernels([c("sm_90", ("_Z5otherv",)), c("sm_75", ("_Z4onlyv",))], [0], [1])
    assert read.unique == {1: frozenset({"only"})} and read.families([1]) == ("only",)

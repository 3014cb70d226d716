"""The core library of a wheel (rules/evidence.py core_library, rules/rollup.py judge_wheel):
the library with device code that every other library linking in-wheel device code reaches
through DT_NEEDED.  When it has no code for a GPU the wheel does not run, whatever else
does (torch's libtorch_cuda.so, which libtorch.so, libtorch_python.so and MAGMA's
libtorch_cuda_linalg.so all link)."""

from __future__ import annotations

from pathlib import Path

import pytest

import _absent
import checkwheels as cw
import cuwheel
from cuwheel import compat
from cuwheel.compat import WheelState
from cuwheel.model.arch import Arch
from cuwheel.rules.evidence import core_library
from wheelfactory import make_wheel

TORCH = Path("/opt/pypi-more/files/torch-2.14.1-cp311-cp311-manylinux_2_28_x86_64.whl")


def _wheel(tmp_path: Path, users: int) -> Path:
    """pkg/libkcore.so.1: sm80only.so (sm_80 SASS only); ``users`` libraries with code for
    every major (allmajor.so) whose libgcc_s.so.1 entry is renamed libkcore.so.1 (same
    length, in place): they link the core."""
    members = {"pkg/libkcore.so.1": cw.fixture("sm80only.so")}
    for i in range(users):
        members[f"pkg/_ext{i}.so"] = cw.patch(cw.fixture("allmajor.so"), b"libgcc_s.so.1",
                                              b"libkcore.so.1")
    members["pkg/__init__.py"] = b""
    return Path(make_wheel(tmp_path, members, name="pkg", version="1.0",
                           tag="cp311-cp311-manylinux_2_28_x86_64"))


def _state(whl: Path, cc: str) -> compat.WheelVerdict:
    inv = cuwheel.inspect([str(whl)])
    target = compat.Target(Arch.parse(cc), cc, None)
    return compat.evaluate(inv, target).sources[0]


def test_a_core_library_without_code_stops_the_wheel(tmp_path: Path) -> None:
    whl = _wheel(tmp_path, 2)
    (src,) = cuwheel.inspect([str(whl)]).sources
    core = core_library(src.binaries)
    assert core is not None and core.endswith("pkg/libkcore.so.1")
    wv = _state(whl, "9.0")  # sm_80 SASS does not run on CC 9.0; the users' code does
    assert wv.state is WheelState.DOES_NOT_RUN
    assert "libkcore.so.1, the core library" in wv.reason
    assert _state(whl, "8.0").state is WheelState.RUNS


def test_one_user_makes_no_core(tmp_path: Path) -> None:
    whl = _wheel(tmp_path, 1)
    (src,) = cuwheel.inspect([str(whl)]).sources
    assert core_library(src.binaries) is None
    assert _state(whl, "9.0").state is WheelState.RUNS_EXCEPT


@pytest.mark.network
@_absent.skip_without("torch-wheel", not TORCH.is_file())
def test_torchs_core_is_libtorch_cuda() -> None:
    (src,) = cuwheel.inspect([str(TORCH)], payload="none").sources
    core = core_library(src.binaries)
    assert core is not None and core.endswith("!torch/lib/libtorch_cuda.so")

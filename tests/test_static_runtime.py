"""A statically linked CUDA runtime (read/binary/elf.py STATIC_CUDART, rules/runtime.py
package_major, rules/rollup.py judge_wheel): libcudart_static leaves its shared-memory name
format ("/cudart.shm.") in .rodata, stripped or not, and no libcudart.so in DT_NEEDED.  The
module then needs its CUDA major's minor-version-compatibility driver floor, and so does
the package, whose runtime it is (CuPy's cupy_backends runtime module)."""

from __future__ import annotations

from pathlib import Path

import cuwheel
from cuwheel import compat
from cuwheel.compat import Verdict, WheelState
from cuwheel.model.arch import Arch
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"


def test_the_static_runtime_is_seen_in_stripped_libraries() -> None:
    # kern_static.so / dispatch_before.so: nvcc -cudart=static, strip --strip-unneeded
    for name in ("kern_static.so", "dispatch_before.so"):
        (b,) = cuwheel.inspect(BIN / name).binaries
        assert b.static_cudart and not any("libcudart" in n for n in b.needed), name
    for name in ("sm80.so", "kern_perarch.so", "hostonly.so"):
        (b,) = cuwheel.inspect(BIN / name).binaries
        assert not b.static_cudart, name


def _wheel(tmp_path: Path) -> Path:
    members = {"pkg/_runtime.so": (BIN / "kern_static.so").read_bytes(),
               "pkg/kernels.fatbin": (BIN / "k86.fatbin").read_bytes(),
               "pkg/__init__.py": b""}
    return Path(make_wheel(tmp_path, members, name="pkg", version="1.0",
                           tag="cp311-cp311-manylinux_2_28_x86_64"))


def _report(whl: Path, driver: str) -> compat.WheelVerdict:
    target = compat.Target(Arch.parse("8.6"), "8.6", compat.parse_driver(driver))
    return compat.evaluate(cuwheel.inspect([str(whl)]), target).sources[0]


def test_a_too_old_driver_stops_the_package_of_a_static_runtime(tmp_path: Path) -> None:
    whl = _wheel(tmp_path)
    # CUDA 13's minor-version floor is 580.65.06 (docs/cuda.md); the cubins say 13.0
    old = _report(whl, "575.57.08")
    lv = next(lv for lv in old.libraries if lv.path.endswith("_runtime.so"))
    assert lv.verdict is Verdict.DRIVER and "libcudart_static (linked in) (CUDA 13)" in lv.reason
    # the fatbin (sm_86, no runtime of its own) still loads: before, the package was
    # "runs except"; its runtime is the static one, so it does not run
    other = next(lv for lv in old.libraries if lv.path.endswith("kernels.fatbin"))
    assert other.verdict.runs
    assert old.state is WheelState.DOES_NOT_RUN
    assert "_runtime.so, which links the CUDA runtime statically" in old.reason
    assert _report(whl, "580.65.06").state is WheelState.RUNS

"""DEP011 and DEP012 on published wheels (downloaded: marked network).

auto_gptq 0.7.1 requires `torch >=1.13.0`; its Linux modules were built against torch 2.2
(glibc's ld.so relocates them against PyPI's 2.2.2 torch/lib with no undefined torch
symbol, and reports some against 2.1.2 and 2.4.0: bench/torch_abi_loader.py), and its
Windows modules import from torch_cuda.dll / c10_cuda.dll, which no PyPI torch for Windows
ships.  The import lists of the Windows modules are compared with objdump -p."""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

import _absent
from cuwheel.checks import check_wheel
from cuwheel.config import parse_config
from test_torch_abi import _binary, _objdump_imports

pytestmark = [
    pytest.mark.network,
    _absent.skip_without("network", os.environ.get("CUWHEEL_SKIP_NETWORK") == "1"),
]

LINUX = "manylinux2014_x86_64"
WINDOWS = "win_amd64"


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    dest = tmp_path_factory.mktemp("wheels")
    out = {}
    for plat in (LINUX, WINDOWS):
        r = subprocess.run([sys.executable, "-m", "pip", "download", "-q", "--no-deps",
                            "--only-binary=:all:", "--platform", plat, "--python-version",
                            "3.11", "-d", str(dest), "auto-gptq==0.7.1"],
                           capture_output=True, text=True, timeout=600)
        if r.returncode != 0:
            _absent.skip("network", r.stderr.strip()[-200:])
        out[plat] = next(p for p in dest.glob("auto_gptq-*.whl") if plat.split("_")[-1] in p.name
                         or (plat == WINDOWS and "win" in p.name))
    return out


def _report(path: Path):  # type: ignore[no-untyped-def]
    cfg = parse_config({}, "test")
    report = check_wheel(path, cfg.rows, cfg.check, environ={}, audit=True)
    return {f.code: f for f in report.findings}


def test_auto_gptq_linux_loads_with_torch_2_2_only(wheels: dict[str, Path]) -> None:
    f = _report(wheels[LINUX])["DEP011"]
    assert "only 2.2.0-2.2.2 define them all" in f.message
    assert f.message.endswith("require torch>=2.2,<2.3")


def test_auto_gptq_windows_needs_a_cuda_torch(wheels: dict[str, Path],
                                              tmp_path: Path) -> None:
    got = _report(wheels[WINDOWS])
    f = got["DEP012"]
    assert f.severity.name == "ERROR"
    assert "c10_cuda.dll, torch_cuda.dll" in f.message and "download.pytorch.org" in f.message
    assert "DEP011" not in got
    with zipfile.ZipFile(wheels[WINDOWS]) as z:
        z.extract("exllama_kernels.cp311-win_amd64.pyd", tmp_path)
    pyd = tmp_path / "exllama_kernels.cp311-win_amd64.pyd"
    assert {(u.library, u.name) for u in _binary(pyd).undefined} == _objdump_imports(pyd)

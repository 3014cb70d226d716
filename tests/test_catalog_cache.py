"""The catalog kept between runs (knowledge/_cache.py): used when valid, rebuilt silently
when missing, damaged, stale (other data or code) or planted, never trusted."""

from __future__ import annotations

import os
import pickle
from pathlib import Path

import pytest

from cuwheel.knowledge import _cache
from cuwheel.knowledge.catalog import DATA_FILES, Catalog, build_catalog, read_data_file


def _fresh() -> Catalog:
    return build_catalog({n: read_data_file(n) for n in DATA_FILES})


@pytest.fixture()
def counted(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> list[int]:
    monkeypatch.setenv("CUWHEEL_CACHE", str(tmp_path / "cache"))
    return []


def _load(calls: list[int]) -> Catalog:
    def build() -> Catalog:
        calls.append(1)
        return _fresh()

    return _cache.cached(DATA_FILES, build, Catalog)


def _files(tmp_path: Path) -> list[Path]:
    return sorted((tmp_path / "cache").glob("catalog-*.pickle"))


def test_built_once_then_read_and_equal(counted: list[int], tmp_path: Path) -> None:
    first = _load(counted)
    assert counted == [1] and len(_files(tmp_path)) == 1
    second = _load(counted)
    assert counted == [1]  # from the file
    assert second == first == _fresh()
    assert second.find_library("libcublas.so.13") == first.find_library("libcublas.so.13")


@pytest.mark.parametrize("damage", ["truncate", "garbage", "other key", "empty"])
def test_a_damaged_file_is_rebuilt_silently(counted: list[int], tmp_path: Path,
                                            damage: str,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    _load(counted)
    (path,) = _files(tmp_path)
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "garbage":
        path.write_bytes(data[:100] + b"\xff" * 500)
    elif damage == "other key":
        path.write_bytes(data.replace(data[24:40], b"0" * 16, 1))
    else:
        path.write_bytes(b"")
    assert _load(counted) == _fresh()
    assert counted == [1, 1]
    assert capsys.readouterr() == ("", "")
    assert _load(counted) is not None and counted == [1, 1]  # and written again


def test_stale_data_changes_the_key(counted: list[int], monkeypatch: pytest.MonkeyPatch,
                                    tmp_path: Path) -> None:
    key = _cache._key(DATA_FILES)
    real = _cache._read_bytes

    def edited(path: str) -> bytes:
        data = real(path)
        return data + b"\n# edited\n" if path.endswith("gpus.toml") else data

    monkeypatch.setattr(_cache, "_read_bytes", edited)
    assert _cache._key(DATA_FILES) not in (None, key)


def test_a_planted_class_runs_nothing(counted: list[int], tmp_path: Path) -> None:
    _load(counted)
    (path,) = _files(tmp_path)
    head = path.read_bytes().split(b"\n", 2)
    marker = tmp_path / "ran"
    evil = pickle.dumps(_Evil(str(marker)))
    path.write_bytes(head[0] + b"\n" + head[1] + b"\n" + evil)
    assert _load(counted) == _fresh()
    assert not marker.exists() and counted == [1, 1]


class _Evil:
    def __init__(self, path: str) -> None:
        self.path = path

    def __reduce__(self) -> tuple[object, tuple[str]]:
        return (os.mkdir, (self.path,))


def test_an_unwritable_cache_costs_only_the_saving(monkeypatch: pytest.MonkeyPatch,
                                                   tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    monkeypatch.setenv("CUWHEEL_CACHE", str(blocker / "cache"))
    calls: list[int] = []
    assert _load(calls) == _fresh() and _load(calls) == _fresh()
    assert calls == [1, 1]


def _call(module: str, name: str, args: tuple[object, ...]) -> bytes:
    """A protocol-4 pickle that calls ``module``'s ``name`` (STACK_GLOBAL resolves dotted
    names attribute by attribute) with ``args``."""
    def s(x: object) -> bytes:
        return pickle.dumps(x, 4)[2:-1]  # the value's opcodes, no PROTO / STOP

    return b"\x80\x04" + s(module) + s(name) + b"\x93" + s(args) + b"R."


@pytest.mark.parametrize(("name", "why"), [
    ("os.mkdir", "a module the catalog's code imported"),
    ("_write", "a function, not a catalog class"),
])
def test_a_planted_reference_through_a_catalog_module_runs_nothing(
    counted: list[int], tmp_path: Path, name: str, why: str
) -> None:
    _load(counted)
    (path,) = _files(tmp_path)
    head = path.read_bytes().split(b"\n", 2)
    marker = tmp_path / "ran"
    args = (str(marker),) if name == "os.mkdir" else (str(marker), str(marker / "x"), "k", 1)
    evil = _call("cuwheel.knowledge._cache", name, args)
    path.write_bytes(head[0] + b"\n" + head[1] + b"\n" + evil)
    assert _load(counted) == _fresh()
    assert not marker.exists() and counted == [1, 1], why

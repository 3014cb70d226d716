"""Trust boundaries of the catalog cache (knowledge/_cache.py, issue 31): a cache
directory another user can write into cannot change what cuwheel answers.

Against the code before issue 31 each of these fails: a planted valid Catalog (A100 as CC
12.0) was loaded, an entry of another shape was a traceback on use, a pickle of colliding
integers cost its quadratic time, saving deleted every ``catalog-*.pickle``, and a
world-writable directory was used.
"""

from __future__ import annotations

import dataclasses
import os
import pickle
import struct
import subprocess
import sys
import time
from pathlib import Path

import pytest

from cuwheel.knowledge import _cache
from cuwheel.knowledge.catalog import DATA_FILES, Catalog, build_catalog, read_data_file

SRC = Path(os.environ.get("CW_TEST_SRC") or Path(__file__).resolve().parent.parent / "src")


def _fresh() -> Catalog:
    return build_catalog({n: read_data_file(n) for n in DATA_FILES})


@pytest.fixture()
def cache(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Path:
    folder = tmp_path / "cache"
    monkeypatch.setenv("CUWHEEL_CACHE", str(folder))
    return folder


def _load(calls: list[int]) -> Catalog:
    def build() -> Catalog:
        calls.append(1)
        return _fresh()

    return _cache.cached(DATA_FILES, build, Catalog)


def _entry_path(cache: Path) -> Path:
    key = _cache._key(DATA_FILES)
    assert key is not None
    return cache / f"catalog-{key[:32]}.pickle"


def _plant(cache: Path, body: bytes) -> Path:
    """A file as another user would plant it: the right name and header (the key is
    computable from the installed files), no MAC it could know."""
    key = _cache._key(DATA_FILES)
    assert key is not None
    cache.mkdir(exist_ok=True)
    path = _entry_path(cache)
    path.write_bytes(_cache._MAGIC + key.encode() + b"\n" + body)
    return path


def _a100_as_cc120(cat: Catalog) -> Catalog:
    arch = next(g.arch for g in cat.gpus if g.cc == "12.0")
    gpus = tuple(dataclasses.replace(g, arch=arch) if g.cc == "8.0" else g for g in cat.gpus)
    return dataclasses.replace(cat, gpus=gpus)


def test_a_planted_valid_catalog_is_not_believed(cache: Path) -> None:
    fresh = _fresh()
    forged = _a100_as_cc120(fresh)
    assert forged != fresh
    _plant(cache, pickle.dumps(forged, protocol=5))
    calls: list[int] = []
    assert _load(calls) == fresh and calls == [1]


def test_the_planted_catalog_does_not_reach_gpus(cache: Path) -> None:
    forged = _a100_as_cc120(_fresh())
    _plant(cache, pickle.dumps(forged, protocol=5))
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "A100", "--json"],
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(SRC),
                               "CUWHEEL_CACHE": str(cache)})  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert '"cc": "8.0"' in proc.stdout and '"cc": "12.0"' not in proc.stdout, proc.stdout[:800]


def _broken_catalog() -> Catalog:
    cat = _fresh()
    bad = object.__new__(Catalog)
    for f in dataclasses.fields(Catalog):
        object.__setattr__(bad, f.name, getattr(cat, f.name))
    object.__setattr__(bad, "gpus", 5)  # another shape
    return bad


def test_an_entry_of_another_shape_is_rebuilt_even_with_a_valid_mac(cache: Path) -> None:
    calls: list[int] = []
    _load(calls)
    secret = _cache._secret(str(cache), create=False)
    assert secret is not None
    key = _cache._key(DATA_FILES)
    assert key is not None
    path = _entry_path(cache)
    path.unlink()
    _cache._write(str(cache), str(path), key, _broken_catalog(), secret)
    assert path.exists()
    got = _load(calls)
    assert calls == [1, 1] and got.find_gpus("A100")


def test_an_entry_of_another_shape_planted_is_not_a_traceback(cache: Path) -> None:
    _plant(cache, pickle.dumps(_broken_catalog(), protocol=5))
    got = _load([])
    assert got.find_gpus("A100")


def _colliding_set(n: int) -> bytes:
    """A protocol-4 pickle of a set of ``n`` integers k * (2**61 - 1): every one hashes to
    0, so building the set costs n**2 / 2 comparisons.  Written opcode by opcode (making
    the set here would cost that time too)."""
    m = (1 << 61) - 1
    out = [b"\x80\x04\x8f("]  # PROTO 4, EMPTY_SET, MARK
    for k in range(1, n + 1):
        raw = (k * m).to_bytes(((k * m).bit_length() + 8) // 8, "little", signed=True)
        out.append(b"\x8a" + struct.pack("<B", len(raw)) + raw)  # LONG1
    out.append(b"\x90.")  # ADDITEMS, STOP
    return b"".join(out)


def test_a_pickle_of_colliding_integers_costs_no_time(cache: Path) -> None:
    _plant(cache, _colliding_set(50_000))
    t0 = time.process_time()  # CPU time, not the wall clock
    assert _load([]) == _fresh()
    assert time.process_time() - t0 < 3.0


def test_saving_removes_only_cuwheels_own_entries(cache: Path) -> None:
    cache.mkdir()
    theirs = cache / "catalog-0123456789abcdef.pickle"
    theirs.write_bytes(b"someone else's file")
    calls: list[int] = []
    _load(calls)
    assert theirs.read_bytes() == b"someone else's file"
    # one of cuwheel's, of another key (older data): removed by the next save
    secret = _cache._secret(str(cache), create=False)
    assert secret is not None
    old = cache / ("catalog-" + "f" * 32 + ".pickle")
    _cache._write(str(cache), str(old), "f" * 64, (1, 2), secret)
    assert old.exists() and not _entry_path(cache).exists()  # the newer entry went
    _load(calls)
    assert not old.exists() and theirs.exists() and calls == [1, 1]


@pytest.mark.parametrize("mode", [0o777, 0o775, 0o1777])
def test_a_folder_others_can_write_is_bypassed_with_one_line(cache: Path, mode: int) -> None:
    cache.mkdir()
    os.chmod(cache, mode)
    calls: list[int] = []
    assert _load(calls) == _fresh() and _load(calls) == _fresh()
    assert calls == [1, 1] and not list(cache.iterdir())
    why = _cache.refusal()
    assert why is not None and "writable by its group or others" in why and "\n" not in why


def test_the_cli_says_the_bypass_in_one_line(cache: Path) -> None:
    cache.mkdir()
    os.chmod(cache, 0o777)
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "A100"],
                          capture_output=True, text=True, check=False, timeout=120,
                          env={**os.environ, "PYTHONPATH": str(SRC),
                               "CUWHEEL_CACHE": str(cache)})  # fmt: skip
    assert proc.returncode == 0
    lines = [ln for ln in proc.stderr.splitlines() if "catalog cache" in ln]
    assert len(lines) == 1 and lines[0].startswith("cuwheel: warning: "), proc.stderr


def test_a_secret_others_can_read_is_not_a_secret(cache: Path) -> None:
    calls: list[int] = []
    _load(calls)
    assert (os.stat(cache / "catalog.key").st_mode & 0o777) == 0o600
    os.chmod(cache / "catalog.key", 0o644)
    _load(calls)
    assert calls == [1, 1]


def test_entries_are_written_private_and_atomically(cache: Path) -> None:
    _load([])
    path = _entry_path(cache)
    assert not os.stat(path).st_mode & 0o077
    assert not [p for p in cache.iterdir() if p.name.endswith(".tmp")]


def test_a_fifo_in_the_entrys_place_is_not_waited_on(cache: Path) -> None:
    _load([])
    path = _entry_path(cache)
    path.unlink()
    os.mkfifo(path)
    # in a child: a blocking open() would wait for ever (the timeout ends it, and fails)
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "A100", "--json"],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(SRC),
                               "CUWHEEL_CACHE": str(cache)})  # fmt: skip
    assert proc.returncode == 0 and '"cc": "8.0"' in proc.stdout, proc.stderr


def test_a_fifo_beside_the_entry_is_not_waited_on_when_saving(cache: Path) -> None:
    """Saving looks at every other ``catalog-*.pickle`` to remove only cuwheel's own: a FIFO
    of that name is refused by the one opener, not opened for ever."""
    _load([])
    _entry_path(cache).unlink()  # the next run saves anew
    os.mkfifo(cache / ("catalog-" + "e" * 32 + ".pickle"))
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "A100", "--json"],
                          capture_output=True, text=True, check=False, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(SRC),
                               "CUWHEEL_CACHE": str(cache)})  # fmt: skip
    assert proc.returncode == 0 and _entry_path(cache).exists(), proc.stderr


# -- the code-execution gadgets stay refused by the unpickler itself (behind the MAC) -----


def _call(module: str, name: str, args: tuple[object, ...]) -> bytes:
    def s(x: object) -> bytes:
        return pickle.dumps(x, 4)[2:-1]

    return b"\x80\x04" + s(module) + s(name) + b"\x93" + s(args) + b"R."


GADGETS = [
    ("os", "mkdir"), ("posix", "mkdir"), ("builtins", "eval"), ("builtins", "exec"),
    ("builtins", "__import__"), ("builtins", "getattr"), ("builtins", "open"),
    ("builtins", "type"), ("subprocess", "call"), ("shutil", "rmtree"),
    ("cuwheel.knowledge._cache", "os.mkdir"), ("cuwheel.knowledge._cache", "_write"),
    ("cuwheel.knowledge._cache", "os"), ("cuwheel.knowledge.catalog", "build_catalog"),
    ("cuwheel.model.inventory", "Binary.__init__"), ("cuwheel.knowledge", "_cache"),
    ("copyreg", "__newobj__"), ("copyreg", "add_extension"), ("pickle", "loads"),
    ("cuwheel.read.sources.installed", "find"), ("cuwheel", "inspect"), ("io", "open"),
    ("codecs", "open"), ("functools", "partial"), ("operator", "attrgetter"),
]


@pytest.mark.parametrize(("module", "name"), GADGETS)
def test_each_gadget_is_refused_by_the_unpickler(tmp_path: Path, module: str,
                                                 name: str) -> None:  # fmt: skip
    marker = tmp_path / "ran"
    with pytest.raises(pickle.UnpicklingError):
        _cache._unpickle(_call(module, name, (str(marker),)))
    assert not marker.exists()

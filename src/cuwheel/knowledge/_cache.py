"""The validated catalog kept between runs: parsing and validating the TOML data files is
most of a one-library ``cuwheel inspect``'s own time, and their answer only changes with
the files or with the code that reads them.

The cache file (``catalog-<key>.pickle`` under ``$CUWHEEL_CACHE`` or the user cache
directory, ``$XDG_CACHE_HOME/cuwheel``) is named and headed by a BLAKE2b hash over cuwheel's
version, Python's, the data files' bytes and the source of every module whose classes the
catalog holds (``cuwheel.knowledge``, ``cuwheel.model``). It is never trusted: a file with
another key, a damaged one, or one naming a class outside those modules is ignored and
rebuilt, silently; a cache directory that cannot be written only costs the saving.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

# The C modules, not pickle/hashlib: their Python layers cost more to import than the
# cache saves (a one-file inspect counts every millisecond; bench/bench_startup.py).
try:
    import _pickle as pickle
except ImportError:  # pragma: no cover - an interpreter without the C accelerator
    import pickle  # type: ignore[no-redef]
try:
    from _blake2 import blake2b
except ImportError:  # pragma: no cover
    from hashlib import blake2b

__all__ = ["cache_dir", "cached"]

T = TypeVar("T")
_MAGIC = b"cuwheel-catalog-cache 1\n"
_PROTOCOL = 5
_MAX_BYTES = 16 << 20  # the catalog pickles to ~64 KB
_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))  # the cuwheel package
# Modules whose classes a cached object may hold; their source is part of the key.
_PACKAGES = ("knowledge", "model")
_BUILTINS = {("builtins", n) for n in ("frozenset", "set", "tuple", "list", "dict", "object",
                                       "int", "str", "bytes", "float", "bool", "complex")}
_BUILTINS.add(("copyreg", "_reconstructor"))


def cache_dir() -> str:
    """Where the catalog's file lives: cuwheel's one cache rule (``_paths.cache_root``)."""
    from cuwheel._paths import cache_root

    return cache_root()


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:
        return f.read()


def _key(data_files: Iterable[str]) -> str | None:
    """The hash of everything the cached object depends on; None where the package is
    not plain files (a zip import): no cache then."""
    # The version without importing cuwheel/__init__ here (the package is loaded: we are
    # in it); the sources below are the finer key.
    version = getattr(sys.modules.get("cuwheel"), "__version__", "")
    h = blake2b(f"{version}\0{sys.version}\0{_PROTOCOL}\0".encode(), digest_size=32)
    try:
        for name in sorted(data_files):
            h.update(name.encode() + b"\0" + _read_bytes(os.path.join(_ROOT, "data", name)))
        for pkg in _PACKAGES:
            folder = os.path.join(_ROOT, pkg)
            sources = sorted(n for n in os.listdir(folder) if n.endswith(".py"))
            if not sources:  # bytecode only: nothing to key on
                return None
            for n in sources:
                h.update(f"\0{pkg}/{n}\0".encode() + _read_bytes(os.path.join(folder, n)))
    except OSError:
        return None
    return h.hexdigest()


class _Restricted(pickle.Unpickler):
    """Only cuwheel's catalog classes and plain containers: a planted file runs nothing."""

    def find_class(self, module: str, name: str) -> Any:
        if (module, name) in _BUILTINS:
            return super().find_class(module, name)
        top = module.split(".")
        if len(top) >= 2 and top[0] == "cuwheel" and top[1] in _PACKAGES and "." not in name:
            # A class defined in that module, nothing else it holds: not a function (the
            # loader would call it), not a module it imported (``os``), not a dotted name.
            found = super().find_class(module, name)
            if isinstance(found, type) and found.__module__ == module:
                return found
        raise pickle.UnpicklingError(f"{module}.{name} is not a catalog class")


def _read(path: str, key: str, kind: type[T]) -> T | None:
    try:
        with open(path, "rb") as f:
            head = f.read(len(_MAGIC) + len(key) + 1)
            if head != _MAGIC + key.encode() + b"\n":
                return None
            body = f.read(_MAX_BYTES + 1)
        if len(body) > _MAX_BYTES:
            return None
        obj = _Restricted(io.BytesIO(body)).load()
    except Exception:  # any damage means: rebuild
        return None
    return obj if isinstance(obj, kind) else None


def _write(folder: str, path: str, key: str, obj: object, stem: str = "catalog") -> None:
    with contextlib.suppress(Exception):  # a cache that cannot be written is no error
        body = pickle.dumps(obj, protocol=_PROTOCOL)
        import tempfile

        os.makedirs(folder, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalog-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(_MAGIC + key.encode() + b"\n" + body)
            os.replace(tmp, path)  # a reader sees the old file or the whole new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        for old in os.listdir(folder):  # other keys: other data or code
            stale = os.path.join(folder, old)
            if old.startswith(stem + "-") and old.endswith(".pickle") and stale != path:
                with contextlib.suppress(OSError):
                    os.unlink(stale)


def cached(data_files: Iterable[str], build: Callable[[], T], kind: type[T]) -> T:
    """``build()``'s object, from the cache when a valid entry for these data files and
    this code is there, else built (which raises as it would without a cache) and kept."""
    files = tuple(data_files)
    key = _key(files)
    if key is None:
        return build()
    folder = cache_dir()
    # one file per kind of object (the catalog's keeps its name); each replaces only its own
    stem = "catalog" if kind.__name__ == "Catalog" else kind.__name__.lower()
    path = os.path.join(folder, f"{stem}-{key[:32]}.pickle")
    found = _read(path, key, kind)
    if found is not None:
        return found
    obj = build()
    _write(folder, path, key, obj, stem)
    return obj

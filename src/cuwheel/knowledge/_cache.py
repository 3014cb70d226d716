"""The validated catalog kept between runs: parsing and validating the TOML data files is
most of a one-library ``cuwheel inspect``'s own time, and their answer only changes with
the files or with the code that reads them.

The cache file (``catalog-<key>.pickle`` under ``$CUWHEEL_CACHE`` or the user cache
directory, ``$XDG_CACHE_HOME/cuwheel``) is named and headed by a BLAKE2b hash over cuwheel's
version, Python's, the data files' bytes and the source of every module whose classes the
catalog holds (``cuwheel.knowledge``, ``cuwheel.model``). It is never trusted
(docs/trust.md#a-hostile-cache-directory):

* the directory must be the user's own and not group- or world-writable, else the cache is
  bypassed (built, not read or written) and :func:`refusal` says why in one line;
* every entry carries a keyed BLAKE2b MAC under a per-user secret (``catalog.key``, 32
  random bytes, mode 0600, beside the entries): a file planted by another user, even with
  the right key and a valid catalog, fails the MAC and is never unpickled, so no pickle
  of colliding integers costs time either;
* what is unpickled names only catalog classes and plain containers, and is walked after
  loading (every object of an allowed type, every dataclass with all its fields, at most
  MAX_OBJECTS objects) before it is used;
* an entry is written to a temporary file renamed into place; saving removes only the
  older entries that are cuwheel's own (its header and a valid MAC), never another file.

A file with another key, a damaged one, or one that fails any check is ignored and rebuilt,
silently; a cache directory that cannot be written only costs the saving.
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Callable, Iterable
from typing import Any, TypeVar

from cuwheel._datafiles import os_path

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
_SECRET = "catalog.key"
_SECRET_BYTES = 32
_MAC_BYTES = 32
MAX_OBJECTS = 1_000_000  # objects of one loaded entry walked (the catalog holds ~20,000)
_refusal: list[str] = []


def refusal() -> str | None:
    """Why this run did not use the catalog's cache directory, in one line (a directory of
    another user, or one that others may write); None when it was used or absent."""
    return _refusal[-1] if _refusal else None


def _private(st: os.stat_result) -> bool:
    """Owned by this user and writable by no one else (POSIX; Windows has no such bits)."""
    if not hasattr(os, "getuid"):
        return True
    return st.st_uid == os.getuid() and not st.st_mode & 0o022


def cache_dir() -> str:
    """Where the catalog's file lives: cuwheel's one cache rule (``_paths.cache_root``)."""
    from cuwheel._paths import cache_root

    return cache_root()


def _read_bytes(path: str) -> bytes:
    with open(path, "rb") as f:  # cuwheel's own package files, not untrusted input
        return f.read()


def _folder(folder: str, create: bool) -> bool:
    """Whether ``folder`` may hold the cache: a real directory (not a link) of this user
    that no one else may write; created 0700 when missing and ``create``."""
    import stat

    try:
        st = os.lstat(folder)
    except FileNotFoundError:
        if not create:
            return False
        try:
            os.makedirs(folder, mode=0o700, exist_ok=True)
            st = os.lstat(folder)
        except OSError:
            return False
    except OSError:
        return False
    if not stat.S_ISDIR(st.st_mode) or not _private(st):
        why = "not a directory" if not stat.S_ISDIR(st.st_mode) else (
            "owned by another user" if hasattr(os, "getuid") and st.st_uid != os.getuid()
            else "writable by its group or others")
        _refusal.append(f"catalog cache {folder}: {why}; not used")
        return False
    return True


def _secret(folder: str, create: bool) -> bytes | None:
    """The per-user key of the entries' MACs (``catalog.key``, mode 0600, this user's);
    made once when missing and ``create``; None when it is not there or not private."""
    from cuwheel._paths import open_untrusted

    path = os.path.join(folder, _SECRET)
    try:
        fh = open_untrusted(path, follow=False)
    except FileNotFoundError:
        if not create:
            return None
        try:
            tmp = f"{path}.{os.getpid()}.tmp"
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            try:
                os.write(fd, os.urandom(_SECRET_BYTES))
            finally:
                os.close(fd)
            os.link(tmp, path)  # never replaces a key another run made first
        except OSError:
            pass
        finally:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
        return _secret(folder, False)
    except OSError:
        return None
    with fh:
        st = os.fstat(fh.fileno())
        if not _private(st) or st.st_mode & 0o077:
            return None
        data = fh.read(_SECRET_BYTES + 1)
    return data if len(data) == _SECRET_BYTES else None


def _mac(secret: bytes, key: str, body: bytes) -> bytes:
    return blake2b(_MAGIC + key.encode() + b"\n" + body, key=secret,
                   digest_size=_MAC_BYTES).digest()


def _key(data_files: Iterable[str]) -> str | None:
    """The hash of everything the cached object depends on; None where the package is
    not plain files (a zip import): no cache then."""
    # The version without importing cuwheel/__init__ here (the package is loaded: we are
    # in it); the sources below are the finer key.
    version = getattr(sys.modules.get("cuwheel"), "__version__", "")
    h = blake2b(f"{version}\0{sys.version}\0{_PROTOCOL}\0".encode(), digest_size=32)
    try:
        for name in sorted(data_files):
            h.update(name.encode() + b"\0" + _read_bytes(os_path(_ROOT, name)))
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


_cache_missing = object()
_KINDS: dict[str, type | tuple[type, ...]] = {
    "tuple": tuple, "dict": dict, "Mapping": dict, "frozenset": frozenset, "set": set,
    "list": list, "str": str, "int": int, "float": (int, float), "bool": bool,
    "bytes": bytes, "None": type(None),
}  # fmt: skip


_Alt = type | tuple[type, ...] | str | None  # a kind, a class name, or None: anything
_PLANS: dict[type, tuple[tuple[str, tuple[_Alt, ...]], ...] | None] = {}
_NAMED: dict[tuple[type, str], bool] = {}


def _alts(annotation: str) -> tuple[_Alt, ...]:
    """An annotation's alternatives: a kind (``tuple[...]``, ``str``), a class name, or None
    where the annotation says nothing checkable (``Any``, a form not parsed here)."""
    out: list[_Alt] = []
    for alt in annotation.split("|"):
        name = alt.strip().split("[", 1)[0].rsplit(".", 1)[-1]
        kind = _KINDS.get(name)
        if kind is not None:
            out.append(kind)
        elif name in ("Any", "object") or not name.isidentifier():
            out.append(None)
        else:
            out.append(name)
    return tuple(out)


def _plan(cls: type) -> tuple[tuple[str, tuple[_Alt, ...]], ...] | None:
    """Per catalog class, once: its fields and what each may hold; None for a class
    outside the catalog's modules."""
    if cls not in _PLANS:
        import dataclasses

        ok = cls.__module__.split(".")[:2] in [["cuwheel", p] for p in _PACKAGES]
        _PLANS[cls] = tuple((f.name, _alts(str(f.type))) for f in dataclasses.fields(cls)) \
            if ok else None
    return _PLANS[cls]


def _fits(value: object, alts: tuple[_Alt, ...]) -> bool:
    """Whether ``value`` is of one of the outer types its field's annotation names."""
    cls = type(value)
    for alt in alts:
        if alt is None:
            return True
        if isinstance(alt, str):
            hit = _NAMED.get((cls, alt))
            if hit is None:  # the class, or a name of a plain type (``Variant``, a Literal)
                hit = _NAMED[(cls, alt)] = any(c.__name__ == alt for c in cls.__mro__) or \
                    not hasattr(cls, "__dataclass_fields__")
            if hit:
                return True
        elif isinstance(value, alt) and not (alt is int and cls is bool):
            return True
    return False


def _conforms(obj: object) -> bool:
    """Every object reachable from ``obj`` is a plain value or container or a catalog
    class, and every dataclass has all its fields of their outer types: an entry of
    another shape is refused here, not an AttributeError later.  Iterative, at most
    MAX_OBJECTS objects.  The collector waits meanwhile: the just-unpickled objects are
    all young, and each collection would walk them again (20 ms instead of 2)."""
    import gc

    was = gc.isenabled()
    gc.disable()
    try:
        return _walk(obj)
    finally:
        if was:
            gc.enable()


def _walk(obj: object) -> bool:
    plain = (str, int, float, bool, bytes, type(None))
    seqs = (tuple, list, frozenset, set)
    stack, n = [obj], 0
    while stack:
        node = stack.pop()
        n += 1
        if n > MAX_OBJECTS:
            return False
        cls = type(node)
        if cls in plain:
            continue
        if cls in seqs:
            stack.extend(node)  # type: ignore[arg-type]
        elif cls is dict:
            stack.extend(node.keys())  # type: ignore[attr-defined]
            stack.extend(node.values())  # type: ignore[attr-defined]
        elif hasattr(cls, "__dataclass_fields__"):
            plan = _plan(cls)
            if plan is None:
                return False
            for name, alts in plan:
                value = getattr(node, name, _cache_missing)
                if value is _cache_missing or not _fits(value, alts):
                    return False
                stack.append(value)
        else:
            return False
    return True


def _unpickle(body: bytes) -> object:
    """The object of a (verified) entry's body, through the restricted unpickler."""
    return _Restricted(io.BytesIO(body)).load()


def _entry(path: str, key: str, secret: bytes) -> bytes | None:
    """The verified body of the entry at ``path``: a regular file of this user that
    others cannot write, headed by this key, its MAC valid; None otherwise."""
    from cuwheel._paths import open_untrusted

    head_len = len(_MAGIC) + len(key) + 1
    with open_untrusted(path) as f:
        if not _private(os.fstat(f.fileno())):
            return None
        if f.read(head_len) != _MAGIC + key.encode() + b"\n":
            return None
        mac = f.read(_MAC_BYTES)
        body = f.read(_MAX_BYTES + 1)
    if len(body) > _MAX_BYTES:
        return None
    import hmac

    return body if hmac.compare_digest(mac, _mac(secret, key, body)) else None


def _read(path: str, key: str, kind: type[T], secret: bytes) -> T | None:
    try:
        body = _entry(path, key, secret)
        if body is None:
            return None
        obj = _unpickle(body)
    except Exception:  # any damage means: rebuild
        return None
    return obj if isinstance(obj, kind) and _conforms(obj) else None


def _ours(path: str, secret: bytes) -> bool:
    """Whether ``path`` is an entry this user's cuwheel wrote (any key): only those are
    removed when a newer one is saved."""
    from cuwheel._paths import open_untrusted

    try:
        with open_untrusted(path) as f:  # a FIFO in the folder: refused, not waited on
            head = f.read(len(_MAGIC) + 200)
        if not head.startswith(_MAGIC) or b"\n" not in head[len(_MAGIC):]:
            return False
        key = head[len(_MAGIC):].split(b"\n", 1)[0].decode("ascii")
        return _entry(path, key, secret) is not None
    except (OSError, UnicodeDecodeError):
        return False


def _write(folder: str, path: str, key: str, obj: object, secret: bytes,
           stem: str = "catalog") -> None:
    with contextlib.suppress(Exception):  # a cache that cannot be written is no error
        body = pickle.dumps(obj, protocol=_PROTOCOL)
        import tempfile

        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".catalog-", suffix=".tmp")
        try:
            with os.fdopen(fd, "wb") as f:  # mkstemp: 0600
                f.write(_MAGIC + key.encode() + b"\n" + _mac(secret, key, body) + body)
            os.replace(tmp, path)  # a reader sees the old file or the whole new one
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        for old in os.listdir(folder):  # cuwheel's own entries of other keys only
            stale = os.path.join(folder, old)
            if (old.startswith(stem + "-") and old.endswith(".pickle") and stale != path
                    and _ours(stale, secret)):
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
    _refusal.clear()
    secret = _secret(folder, create=True) if _folder(folder, create=True) else None
    if secret is not None:
        found = _read(path, key, kind, secret)
        if found is not None:
            return found
    obj = build()
    if secret is not None:
        _write(folder, path, key, obj, secret, stem)
    return obj

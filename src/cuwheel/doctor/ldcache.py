"""The ld.so cache (``/etc/ld.so.cache``) that ``ldconfig`` writes and glibc's loader
searches after ``LD_LIBRARY_PATH`` and DT_RUNPATH (docs/doctor.md#the-ldso-cache).

Format: glibc's ``sysdeps/generic/dl-cache.h``.  The current ("new") format starts with
the 20 bytes ``glibc-ld.so.cache1.1``, then ``nlibs`` (u32), ``len_strings`` (u32),
``flags`` (u8), three bytes of padding, ``extension_offset`` (u32) and three unused u32
(48 bytes in all), then ``nlibs`` entries of 24 bytes: ``flags`` (i32), ``key`` and
``value`` (u32 offsets of the soname and the path, from the start of the new-format
header), ``osversion`` (u32) and ``hwcap`` (u64).  Caches of glibc before 2.32 may put an
old-format table (magic ``ld.so-1.7.0``, 12-byte entries) first; the new table follows it,
8-byte aligned.  Entry flags: bits 0-7 the type (3: ELF libc6), bits 8-15 the ABI, per
machine in data/platforms.toml ``[linux] ld_cache_abi`` (0x0300 x86-64 lib64, 0x0a00
AArch64 lib64).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from cuwheel._paths import read_untrusted
from cuwheel.errors import InputError
from cuwheel.knowledge.platforms import load_platforms

__all__ = ["LdCache", "LdCacheEntry", "parse_ld_cache", "read_ld_cache"]

_NEW = b"glibc-ld.so.cache1.1"
_OLD = b"ld.so-1.7.0"
_NEW_HEADER = 48
_NEW_ENTRY = 24
_OLD_ENTRY = 12
# A real cache is tens of KiB; anything far bigger is not one.
MAX_CACHE = 64 << 20
MAX_STRING = 4096  # PATH_MAX: the longest path the loader opens


@dataclass(frozen=True)
class LdCacheEntry:
    soname: str
    path: str
    flags: int

    @property
    def abi(self) -> int:
        return self.flags & 0xFF00


@dataclass(frozen=True)
class LdCache:
    path: str
    entries: tuple[LdCacheEntry, ...]

    def lookup(self, soname: str, machine: str | None) -> str | None:
        """The path ldconfig recorded for ``soname`` for ``machine``'s ABI (the first entry,
        as the loader takes it); None when the cache has none."""
        want = load_platforms().linux.cache_abi(machine)
        for e in self.entries:
            if e.soname == soname and (want is None or e.abi == want):
                return e.path
        return None


def _cstr(data: bytes, base: int, off: int, path: str, memo: dict[int, str]) -> str:
    """The string at ``off``, decoded once per offset (two million entries naming one
    string share one ``str``), at most MAX_STRING bytes (a path is at most PATH_MAX)."""
    found = memo.get(off)
    if found is not None:
        return found
    at = base + off
    end = data.find(b"\0", at, at + MAX_STRING + 1)
    if off < 0 or at >= len(data):
        raise InputError(path, f"string offset {off:#x} outside the cache")
    if end < 0:
        raise InputError(path, f"string at {off:#x} has no NUL within {MAX_STRING} bytes")
    memo[off] = text = data[at:end].decode("utf-8", "surrogateescape")
    return text


def parse_ld_cache(data: bytes, path: str = "ld.so.cache") -> LdCache:
    """The entries of a cache file's bytes; InputError for bytes that are not a cache."""
    base = 0
    if data.startswith(_OLD):
        if len(data) < 16:
            raise InputError(path, "truncated old-format header")
        (n_old,) = struct.unpack_from("<I", data, 12)
        base = 16 + n_old * _OLD_ENTRY
        base += -base % 8
    if data[base : base + len(_NEW)] != _NEW:
        raise InputError(path, "not a glibc ld.so cache (no 'glibc-ld.so.cache1.1' header)")
    if len(data) < base + _NEW_HEADER:
        raise InputError(path, "truncated header")
    nlibs, _len_strings = struct.unpack_from("<II", data, base + 20)
    table = base + _NEW_HEADER
    if table + nlibs * _NEW_ENTRY > len(data):
        raise InputError(path, f"{nlibs} entries do not fit in {len(data)} bytes")
    entries = []
    memo: dict[int, str] = {}
    for i in range(nlibs):
        flags, key, value, _osv, _hwcap = struct.unpack_from("<iIIIQ", data, table + i * 24)
        entries.append(LdCacheEntry(_cstr(data, base, key, path, memo),
                                    _cstr(data, base, value, path, memo), flags))
    return LdCache(path, tuple(entries))


def read_ld_cache(path: str = "/etc/ld.so.cache") -> LdCache | None:
    """The cache at ``path``; None when there is none (not Linux, a container without
    ldconfig).  InputError when it is there but unreadable or not a cache."""
    try:
        data = read_untrusted(path, MAX_CACHE)  # regular, never a blocking FIFO
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise InputError(path, exc.strerror or str(exc)) from None
    if data is None:
        raise InputError(path, f"over {MAX_CACHE} bytes: not an ld.so cache")
    return parse_ld_cache(data, path)

"""Build small wheels at test time (zipfile only; nothing here imports cuwheel).

``make_wheel(path, {arcname: bytes})`` writes a PEP 427 wheel: the given members plus a
``<name>-<version>.dist-info/`` with METADATA, WHEEL and RECORD (sha256 + size of each
member, RECORD itself unhashed).  ``compression`` is ``zipfile.ZIP_DEFLATED`` (default) or
``zipfile.ZIP_STORED``; ``per_member`` overrides it for single members.

``raw_zip`` writes members exactly as given, with no checks and no dist-info, for hostile
names that ``zipfile`` would refuse or rewrite.
"""

from __future__ import annotations

import base64
import hashlib
import os
import struct
import zipfile
import zlib
from collections.abc import Mapping

__all__ = ["make_wheel", "raw_zip", "wheel_name"]

_DATE = (2024, 1, 1, 0, 0, 0)


def wheel_name(name: str = "cwfixture", version: str = "1.0", tag: str = "py3-none-any") -> str:
    return f"{name}-{version}-{tag}.whl"


def _record_hash(data: bytes) -> str:
    digest = hashlib.sha256(data).digest()
    return "sha256=" + base64.urlsafe_b64encode(digest).rstrip(b"=").decode()


def make_wheel(
    path: str | os.PathLike[str],
    members: Mapping[str, bytes],
    *,
    name: str = "cwfixture",
    version: str = "1.0",
    tag: str = "py3-none-any",
    compression: int = zipfile.ZIP_DEFLATED,
    per_member: Mapping[str, int] | None = None,
    requires: tuple[str, ...] = (),
    wheel_tags: tuple[str, ...] | None = None,
    wheel_file: bool = True,
) -> str:
    """Write a wheel at ``path`` (a directory gets the canonical file name); return its path.
    ``wheel_tags``: the WHEEL file's Tag lines (default: ``tag``); ``wheel_file=False``
    leaves the WHEEL file out."""
    path = os.fspath(path)
    if os.path.isdir(path):
        path = os.path.join(path, wheel_name(name, version, tag))
    dist_info = f"{name}-{version}.dist-info"
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    files: dict[str, bytes] = dict(members)
    files[f"{dist_info}/METADATA"] = ("\n".join(meta) + "\n").encode()
    tag_lines = "".join(f"Tag: {t}\n" for t in (wheel_tags if wheel_tags is not None else (tag,)))
    if wheel_file:
        files[f"{dist_info}/WHEEL"] = (
            "Wheel-Version: 1.0\nGenerator: cuwheel-tests\nRoot-Is-Purelib: false\n"
            + tag_lines
        ).encode()
    record = [f"{n},{_record_hash(d)},{len(d)}" for n, d in files.items()]
    record.append(f"{dist_info}/RECORD,,")
    files[f"{dist_info}/RECORD"] = ("\n".join(record) + "\n").encode()
    with zipfile.ZipFile(path, "w") as zf:
        for arcname, data in files.items():
            method = (per_member or {}).get(arcname, compression)
            zi = zipfile.ZipInfo(arcname, date_time=_DATE)
            zi.compress_type = method
            zi.external_attr = 0o644 << 16
            zf.writestr(zi, data)
    return path


def raw_zip(
    path: str | os.PathLike[str],
    members: list[tuple[bytes, bytes]],
    *,
    deflate: bool = True,
    declared_sizes: Mapping[int, int] | None = None,
) -> str:
    """A zip written by hand: ``members`` are (raw name bytes, data).

    ``declared_sizes`` maps a member index to the uncompressed size written in its local
    and central headers (a lie, for zip bombs); the CRC is always that of the real data.
    """
    path = os.fspath(path)
    out = bytearray()
    central = bytearray()
    for i, (name, data) in enumerate(members):
        if deflate:
            c = zlib.compressobj(9, zlib.DEFLATED, -15)
            body = c.compress(data) + c.flush()
            method = 8
        else:
            body, method = data, 0
        crc = zlib.crc32(data)
        usize = (declared_sizes or {}).get(i, len(data))
        offset = len(out)
        out += struct.pack(
            "<IHHHHHIIIHH", 0x04034B50, 20, 0, method, 0, 0x21, crc, len(body), usize,
            len(name), 0,
        )
        out += name + body
        central += struct.pack(
            "<IHHHHHHIIIHHHHHII", 0x02014B50, 20, 20, 0, method, 0, 0x21, crc, len(body),
            usize, len(name), 0, 0, 0, 0, 0o644 << 16, offset,
        )
        central += name
    cd_offset = len(out)
    out += central
    out += struct.pack(
        "<IHHHHIIH", 0x06054B50, 0, 0, len(members), len(members), len(central), cd_offset, 0
    )
    with open(path, "wb") as f:
        f.write(out)
    return path

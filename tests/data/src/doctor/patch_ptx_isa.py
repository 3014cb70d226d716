"""Rewrite the PTX ISA of a library's uncompressed PTX fatbin entries in place: the entry
header's version (minor at byte 24, major at 26: docs/formats.md) and the text's
``.version`` line, same length.  Used by tests/data/build_doctor.sh to make PTX newer than
a driver (the h200 probe edits raw PTX the same way)."""

import struct
import sys
from pathlib import Path

path, old, new = sys.argv[1], sys.argv[2], sys.argv[3]
data = bytearray(Path(path).read_bytes())
o_maj, o_min = (int(x) for x in old.split("."))
n_maj, n_min = (int(x) for x in new.split("."))
magic = b"\x50\xed\x55\xba\x01\x00\x10\x00"
count = 0
at = data.find(magic)
while at >= 0:
    size = struct.unpack_from("<Q", data, at + 8)[0]
    e = at + 16
    while e < at + 16 + size:
        kind, _, hsize = struct.unpack_from("<HHI", data, e)
        psize = struct.unpack_from("<Q", data, e + 8)[0]
        flags = struct.unpack_from("<Q", data, e + 40)[0] if hsize >= 48 else 0
        vmin, vmaj = struct.unpack_from("<HH", data, e + 24)
        if kind == 1 and (vmaj, vmin) == (o_maj, o_min):
            assert not flags & 0xA000, "compressed PTX: build with --compress-mode=none"
            struct.pack_into("<HH", data, e + 24, n_min, n_maj)
            body = bytes(data[e + hsize : e + hsize + psize])
            line_old, line_new = f".version {old}".encode(), f".version {new}".encode()
            assert len(line_old) == len(line_new) and line_old in body
            data[e + hsize : e + hsize + psize] = body.replace(line_old, line_new, 1)
            count += 1
        e += hsize + psize
    at = data.find(magic, at + 16 + size)
assert count, "no PTX entry of that ISA"
Path(path).write_bytes(bytes(data))
print(f"{path}: {count} PTX entr{'y' if count == 1 else 'ies'} {old} -> {new}")

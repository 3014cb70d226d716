"""Turn a wheel into a variant wheel (PEP 825 draft): ``*.dist-info/variant.json`` added,
its RECORD line added, the label appended to the file name.  Independent of cuwheel (the
wheel is copied member by member with zipfile), for tests and bench/variant_real.py."""

from __future__ import annotations

import base64
import hashlib
import os
import zipfile


def make_variant_wheel(src: str, out_dir: str, label: str, variant_json: str) -> str:
    stem = os.path.basename(src)[: -len(".whl")]
    out = os.path.join(out_dir, f"{stem}-{label}.whl")
    data = variant_json.encode()
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    with zipfile.ZipFile(src) as zin, zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED) as zout:
        infos = zin.infolist()
        record = next(i.filename for i in infos if i.filename.endswith(".dist-info/RECORD"))
        dist_info = record.rsplit("/", 1)[0]
        for info in infos:
            if info.filename == record:
                continue
            with zin.open(info) as f, zout.open(info, "w", force_zip64=True) as g:
                while chunk := f.read(16 << 20):
                    g.write(chunk)
        zout.writestr(f"{dist_info}/variant.json", data)
        lines = zin.read(record).decode().splitlines()
        lines.insert(len(lines) - 1, f"{dist_info}/variant.json,sha256={digest},{len(data)}")
        zout.writestr(record, "\n".join(lines) + "\n")
    return out

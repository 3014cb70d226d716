"""Reconstruct an ExecuTorch CUDA-backend program (``et_cuda.pte.gz``) and its data file
(``aoti_cuda_blob.ptd``) from the AOTInductor export in this directory.

    python3 tests/data/artifacts/make_executorch.py EXECUTORCH_WHEEL

A RECONSTRUCTION, not an export: the real export (make_artifacts.py's ExecuTorch child,
executorch 1.2.0 with torch 2.11 on the H200) failed only at serialization, for want of
the ``flatc`` binary on that machine's PATH, and the device budget allowed no second run.
What is faithful: the flatbuffers are written by the ``flatc`` that executorch 1.2.0
ships (executorch/data/bin/flatc), from the schemas it ships (exir/_serialize/program.fbs,
extension/flat_tensor/serialize/flat_tensor.fbs), read out of the wheel at build time (none
is copied here); the headers ("eh00" after the program's file identifier, "FH01" in the
data file), the 128-byte segment alignment and the layout the CUDA backend produces
(executorch/backends/aoti/aoti_backend.py): one delegate "CudaBackend" per method with the
compile spec ``method_name``, named data ``forward_so_blob`` (the AOTInductor wrapper
library, built with ``aot_inductor.embed_kernel_binary`` so its cubins are inside it) in the
program's segments, and ``forward_weights_blob`` in the data file.  The wrapper library is
the real one from aoti_embedded.pt2 (trimmed as trim.py says).  What is not: the program
has no values, instructions or operators (the graph that calls the delegate), and the
weights blob is 256 zero bytes.  pip download --no-deps --only-binary=:all: --python-version
3.12 --platform manylinux_2_28_x86_64 executorch==1.2.0 gives the wheel.
"""

from __future__ import annotations

import gzip
import json
import os
import subprocess
import sys
import tempfile
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
SEGMENT_ALIGN = 128


def _pad(n: int, align: int) -> int:
    return (n + align - 1) // align * align


def _flatc(tmp: str, schema: str, doc: dict[str, object], name: str, ext: str) -> bytes:
    """``doc`` as a binary flatbuffer, written by flatc (named by the schema's
    file_extension)."""
    path = os.path.join(tmp, name + ".json")
    with open(path, "w") as f:
        json.dump(doc, f)
    subprocess.run([os.path.join(tmp, "flatc"), "--binary", "-o", tmp, schema, path],
                   check=True)
    with open(os.path.join(tmp, name + "." + ext), "rb") as f:
        return f.read()


def _with_segments(flat: bytes, header: bytes, segments: list[bytes]) -> tuple[bytes, int]:
    """The flatbuffer with ``header`` after its identifier (root offset moved), then the
    segments, each at a 128-byte boundary; and where the first segment starts."""
    root = int.from_bytes(flat[:4], "little") + len(header)
    body = root.to_bytes(4, "little") + flat[4:8] + header + flat[8:]
    base = _pad(len(body), SEGMENT_ALIGN)
    out = bytearray(body + bytes(base - len(body)))
    for seg in segments:
        out += seg + bytes(_pad(len(seg), SEGMENT_ALIGN) - len(seg))
    return bytes(out), base


def main(wheel: str) -> None:
    with zipfile.ZipFile(os.path.join(HERE, "aoti_embedded.pt2")) as z:
        so = next(z.read(n) for n in z.namelist() if n.endswith(".wrapper.so"))
    weights = bytes(256)
    with tempfile.TemporaryDirectory() as tmp, zipfile.ZipFile(wheel) as w:
        for src, dst in (("executorch/data/bin/flatc", "flatc"),
                         ("executorch/exir/_serialize/program.fbs", "program.fbs"),
                         ("executorch/exir/_serialize/scalar_type.fbs", "scalar_type.fbs"),
                         ("executorch/extension/flat_tensor/serialize/flat_tensor.fbs",
                          "flat_tensor.fbs")):
            with open(os.path.join(tmp, dst), "wb") as f:
                f.write(w.read(src))
        os.chmod(os.path.join(tmp, "flatc"), 0o755)
        # Segment offsets are relative to the first segment; the so blob is segment 0.
        program = {
            "version": 0,
            "execution_plan": [{
                "name": "forward",
                "container_meta_type": {"encoded_inp_str": "", "encoded_out_str": ""},
                "values": [], "inputs": [], "outputs": [], "chains": [], "operators": [],
                "delegates": [{
                    "id": "CudaBackend",
                    "processed": {"location": "INLINE", "index": 0},
                    "compile_specs": [{"key": "method_name", "value": list(b"forward")}],
                }],
                "non_const_buffer_sizes": [0],
            }],
            "backend_delegate_data": [{"data": []}],
            "segments": [{"offset": 0, "size": len(so)}],
            "named_data": [{"key": "forward_so_blob", "segment_index": 0}],
        }
        flat = _flatc(tmp, os.path.join(tmp, "program.fbs"), program, "program", "pte")
        # eh00 (32 bytes): header size, program size, segment base offset, segment size
        size = len(flat) + 32
        base = _pad(size, SEGMENT_ALIGN)
        header = (b"eh00" + (32).to_bytes(4, "little") + size.to_bytes(8, "little")
                  + base.to_bytes(8, "little") + len(so).to_bytes(8, "little"))
        pte, got = _with_segments(flat, header, [so])
        assert got == base, (got, base)
        # gzip: the trimmed library is mostly zeros (tests unpack it into a temporary dir)
        with gzip.GzipFile(os.path.join(HERE, "et_cuda.pte.gz"), "wb", 9, mtime=0) as g:
            g.write(pte)
        data = {
            "version": 0,
            "segments": [{"offset": 0, "size": len(weights)}],
            "named_data": [{"key": "forward_weights_blob", "segment_index": 0}],
        }
        flat = _flatc(tmp, os.path.join(tmp, "flat_tensor.fbs"), data, "flat_tensor", "ptd")
        # FH01 (40 bytes, padded to 48): header size, flatbuffer offset (the padded header
        # length) and size, segment base offset and size; inserted like the program's.
        hlen = 48
        seg_base = _pad(hlen + len(flat), SEGMENT_ALIGN)
        header = (b"FH01" + (40).to_bytes(4, "little") + hlen.to_bytes(8, "little")
                  + len(flat).to_bytes(8, "little") + seg_base.to_bytes(8, "little")
                  + len(weights).to_bytes(8, "little"))
        ptd, got = _with_segments(flat, header + bytes(hlen - len(header)), [weights])
        assert got == seg_base, (got, seg_base)
        with open(os.path.join(HERE, "aoti_cuda_blob.ptd"), "wb") as f:
            f.write(ptd)


if __name__ == "__main__":
    main(sys.argv[1])

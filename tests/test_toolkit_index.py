"""`cuwheel toolkit --source wheels` against a local package index (PEP 503 pages on the
test HTTP server; pip's own configuration switched off): the release comes from NVIDIA's
`cuda-toolkit` meta-package (its real METADATA of 12.9.0 and 12.9.1, tests/data/redist/),
the component versions from its pins, and a CUDA 12 build set, whose nvcc wheel holds only
ptxas (as NVIDIA's nvidia-cuda-nvcc-cu12 does), is refused naming --source redist.  The
component wheels are tiny, in NVIDIA's layout (nvidia/cuda_runtime/..., RECORD)."""

from __future__ import annotations

import base64
import contextlib
import hashlib
import io
import json
import os
import zipfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from cuwheel.cli import main
from redistserver import Served, serve

REDIST = Path(__file__).parent / "data" / "redist"
TAG = "py3-none-manylinux2014_x86_64.manylinux_2_17_x86_64"
# cuda.h as NVIDIA writes it (abridged): the driver stub is made from these declarations
CUDA_H = b"#define CUDAAPI\nCUresult CUDAAPI cuInit(unsigned int Flags);\n"


def wheel_bytes(dist: str, version: str, files: dict[str, bytes], metadata: bytes | None = None,
                tag: str = TAG) -> tuple[str, bytes]:  # fmt: skip
    name = dist.replace("-", "_")
    info = f"{name}-{version}.dist-info"
    meta = metadata or f"Metadata-Version: 2.1\nName: {dist}\nVersion: {version}\n".encode()
    wheel = f"Wheel-Version: 1.0\nRoot-Is-Purelib: true\nTag: {tag}\n".encode()
    listed = {**files, f"{info}/METADATA": meta, f"{info}/WHEEL": wheel}
    lines = []
    for n, d in listed.items():
        digest = base64.urlsafe_b64encode(hashlib.sha256(d).digest()).rstrip(b"=").decode()
        lines.append(f"{n},sha256={digest},{len(d)}")
    lines.append(f"{info}/RECORD,,")
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for n, d in listed.items():
            zi = zipfile.ZipInfo(n)
            zi.external_attr = (0o100755 if "/bin/" in n else 0o100644) << 16
            zf.writestr(zi, d)
        zf.writestr(f"{info}/RECORD", "\n".join(lines) + "\n")
    return f"{name}-{version}-{tag}.whl", buf.getvalue()


def components(version: dict[str, str]) -> list[tuple[str, str, dict[str, bytes]]]:
    cudart = f"\x7fELF cudart {version['cudart']}".encode()
    return [
        ("nvidia-cuda-nvcc-cu12", version["nvcc"], {
            "nvidia/cuda_nvcc/bin/ptxas": b"\x7fELF ptxas",
            "nvidia/cuda_nvcc/nvvm/libdevice/libdevice.10.bc": b"BC",
        }),
        ("nvidia-cuda-runtime-cu12", version["cudart"], {
            "nvidia/__init__.py": b"",
            "nvidia/cuda_runtime/include/cuda.h": CUDA_H,
            "nvidia/cuda_runtime/include/cuda_runtime.h": b"/* runtime */\n",
            "nvidia/cuda_runtime/lib/libcudart.so.12": cudart,
        }),
        ("nvidia-cuda-cccl-cu12", version["cccl"], {
            "nvidia/cuda_cccl/include/cuda/std/version": b"// cccl\n",
        }),
    ]  # fmt: skip


@pytest.fixture
def index(monkeypatch: pytest.MonkeyPatch) -> Iterator[Served]:
    served = Served()
    pages: dict[str, list[tuple[str, bytes]]] = {}
    # each release's pins, as its METADATA gives them
    releases = {"12.9.0": {"nvcc": "12.9.41", "cudart": "12.9.37", "cccl": "12.9.27"},
                "12.9.1": {"nvcc": "12.9.86", "cudart": "12.9.79", "cccl": "12.9.27"}}  # fmt: skip
    for label, pins in releases.items():
        meta = (REDIST / f"cuda_toolkit-{label}.METADATA").read_bytes()
        pages.setdefault("cuda-toolkit", []).append(
            wheel_bytes("cuda-toolkit", label, {}, meta, "py2.py3-none-any")
        )
        for dist, version, files in components(pins):
            pages.setdefault(dist, []).append(wheel_bytes(dist, version, files))
    for dist, wheels in pages.items():
        links = []
        for file_name, data in dict(wheels).items():
            served.files[f"/files/{file_name}"] = data
            links.append(f'<a href="/files/{file_name}#sha256={hashlib.sha256(data).hexdigest()}">'
                         f"{file_name}</a>")  # fmt: skip
        page = "<html><body>" + "".join(links) + "</body></html>"
        served.files[f"/simple/{dist}/"] = page.encode()
        served.types[f"/simple/{dist}/"] = "text/html"
    with serve(served):
        monkeypatch.setenv("PIP_CONFIG_FILE", os.devnull)
        monkeypatch.setenv("PIP_INDEX_URL", f"{served.url}/simple/")
        for var in ("PIP_FIND_LINKS", "PIP_EXTRA_INDEX_URL", "PIP_CONSTRAINT"):
            monkeypatch.delenv(var, raising=False)
        yield served


def run(*argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(list(argv))
    return code, out.getvalue(), err.getvalue()


def toolkit(tmp: Path, *args: str) -> tuple[int, str, str]:
    return run("toolkit", "--source", "wheels", "--platform", "linux-x86_64", "--no-progress",
               "--prefix", str(tmp / "cuda"), "--cache", str(tmp / "cache"), *args)  # fmt: skip


def test_a_cuda_12_build_set_from_wheels_is_refused_naming_the_fix(
    index: Served, tmp_path: Path
) -> None:
    code, out, err = toolkit(tmp_path, "--train", "cu129", "--for", "build")
    assert code == 2 and out == ""
    (line,) = err.strip().splitlines()
    assert line.startswith("cuwheel: error: cu129 (CUDA 12.9.1) for linux-x86_64 from wheels "
                           "has no working nvcc: bin/nvcc, nvvm/bin/cicc, bin/nvlink, "
                           "bin/fatbinary missing")  # fmt: skip
    assert "nvidia-cuda-nvcc-cu12 12.9.86" in line and "use --source redist" in line
    assert not (tmp_path / "cuda").exists()
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".cuda")] == []


def test_the_newest_release_on_the_index_and_its_pins(index: Served, tmp_path: Path) -> None:
    code, out, err = toolkit(tmp_path, "--train", "cu129", "--for", "runtime")
    assert code == 0, err
    # one resolution: the meta-package with its cudart extra, in one pip run
    pages = [r[0] for r in index.requests if r[0].startswith("/simple/")]
    assert sorted(pages) == ["/simple/cuda-toolkit/", "/simple/nvidia-cuda-runtime-cu12/"]
    prefix = tmp_path / "cuda"
    lock = json.loads((prefix / "cuwheel-toolkit.lock").read_text())
    # the catalog's newest 12.9 is 12.9.2; this index's is 12.9.1, and the index decides
    assert lock["cuda"] == "12.9.1"
    assert [(c["package"], c["version"]) for c in lock["components"]] == [
        ("nvidia-cuda-runtime-cu12", "12.9.79")]  # fmt: skip
    assert (prefix / "lib" / "libcudart.so.12").read_bytes() == b"\x7fELF cudart 12.9.79"
    # the driver stub for CMake's CUDA::cuda_driver, from the wheel's cuda.h
    assert (prefix / "lib64" / "stubs" / "libcuda.so").read_bytes().startswith(b"\x7fELF")
    env = dict(line.split("=", 1) for line in out.splitlines())
    assert "CUDACXX" not in env
    # a named release: its own pins
    code, _, err = toolkit(tmp_path, "--train", "12.9.0", "--for", "runtime")
    assert code == 0, err
    assert (prefix / "lib" / "libcudart.so.12").read_bytes() == b"\x7fELF cudart 12.9.37"
    # the index is gone: asked again (--refresh), the train's last answer and the cached
    # wheels serve
    index.files.clear()
    code, _, err = toolkit(tmp_path, "--train", "cu129", "--for", "runtime", "--refresh")
    assert code == 0, err
    assert (prefix / "lib" / "libcudart.so.12").read_bytes() == b"\x7fELF cudart 12.9.79"
    assert index.requests[-1][0] == "/simple/cuda-toolkit/"  # asked, and answered 404

"""Unpacking NVIDIA component wheels into a CUDA tree (toolkit/extract.py), on tiny
hand-made wheels: the nvidia/<dir>/ prefix is dropped, dist-info stays out, and every file
must match the wheel's RECORD."""

from __future__ import annotations

import base64
import hashlib
import io
import zipfile
from pathlib import Path

import pytest

from cuwheel.errors import ToolkitError
from cuwheel.toolkit.extract import Tree, extract_wheel


def record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def wheel(path: Path, files: dict[str, bytes], *, record: dict[str, bytes] | None = None,
          unlisted: dict[str, bytes] | None = None) -> Path:  # fmt: skip
    dist = "nvidia_cuda_runtime-13.0.96.dist-info"
    listed = dict(files)
    listed[f"{dist}/METADATA"] = b"Metadata-Version: 2.1\nName: nvidia-cuda-runtime\n"
    lines = [record_line(n, d) for n, d in (record or listed).items()]
    lines.append(f"{dist}/RECORD,,")
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in {**listed, **(unlisted or {})}.items():
            info = zipfile.ZipInfo(name)
            info.external_attr = (0o100755 if "/bin/" in name else 0o100644) << 16
            zf.writestr(info, data)
        zf.writestr(f"{dist}/RECORD", "\n".join(lines) + "\n")
    return path


FILES = {
    "nvidia/__init__.py": b"",
    "nvidia/cu13/include/cuda_runtime.h": b"/* header */\n",
    "nvidia/cu13/lib/libcudart.so.13": b"\x7fELF runtime",
    "nvidia/cu13/bin/x86_64/cudart64_13.dll": b"MZ dll",
}


def test_wheel_files_land_in_the_cuda_tree(tmp_path: Path) -> None:
    tree = tmp_path / "tree"
    tree.mkdir()
    n = extract_wheel(wheel(tmp_path / "w.whl", FILES), Tree(tree), "w.whl", "cudart")
    assert n == 3
    assert (tree / "include" / "cuda_runtime.h").read_bytes() == b"/* header */\n"
    assert (tree / "lib" / "libcudart.so.13").read_bytes() == b"\x7fELF runtime"
    assert (tree / "bin" / "x86_64" / "cudart64_13.dll").read_bytes() == b"MZ dll"
    assert sorted(p.name for p in tree.iterdir()) == ["bin", "include", "lib"]


def test_a_file_that_does_not_match_record_is_refused(tmp_path: Path) -> None:
    lied = {**FILES, "nvidia/cu13/lib/libcudart.so.13": b"what RECORD says"}
    path = wheel(tmp_path / "w.whl", FILES, record=lied)
    with pytest.raises(ToolkitError, match=r"^w\.whl: nvidia/cu13/lib/libcudart\.so\.13 does not"):
        extract_wheel(path, Tree(tmp_path), "w.whl", "cudart")


def test_a_file_missing_from_record_is_refused(tmp_path: Path) -> None:
    path = wheel(tmp_path / "w.whl", FILES, unlisted={"nvidia/cu13/lib/extra.so": b"x"})
    with pytest.raises(ToolkitError, match=r"extra\.so is not listed in RECORD"):
        extract_wheel(path, Tree(tmp_path), "w.whl", "cudart")


def test_traversal_in_a_wheel_is_refused(tmp_path: Path) -> None:
    path = wheel(tmp_path / "w.whl", {**FILES, "nvidia/cu13/../../../evil": b"x"})
    (tmp_path / "t").mkdir()
    with pytest.raises(ToolkitError, match=r"'\.\.' in member path"):
        extract_wheel(path, Tree(tmp_path / "t"), "w.whl", "cudart")
    assert not (tmp_path / "evil").exists()


def test_not_a_wheel(tmp_path: Path) -> None:
    (tmp_path / "x.whl").write_bytes(b"PK\x05\x06" + bytes(18))
    with pytest.raises(ToolkitError, match="not a wheel"):
        extract_wheel(tmp_path / "x.whl", Tree(tmp_path), "x.whl", "cudart")
    buf = io.BytesIO(b"not a zip at all")
    (tmp_path / "y.whl").write_bytes(buf.getvalue())
    with pytest.raises(ToolkitError, match=r"^y\.whl: unreadable archive: not a zip"):
        extract_wheel(tmp_path / "y.whl", Tree(tmp_path), "y.whl", "cudart")

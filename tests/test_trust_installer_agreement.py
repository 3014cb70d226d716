"""Differential test: the files cuwheel reads from a wheel are the files an installer
writes.  Wheels with generated member names (``.`` and empty components, a file where
another member needs a directory) are installed with PyPA's ``installer`` and read with
:class:`cuwheel.read.sources.source.WheelFile`: the installer succeeds exactly when cuwheel finds
no install clash, and then every installed file has the bytes cuwheel read for its path."""

from __future__ import annotations

import base64
import hashlib
import os
import sys
import tempfile
import zipfile

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from installer import install
from installer.destinations import SchemeDictionaryDestination
from installer.sources import WheelFile as InstallerWheel

from cuwheel.read.sources.wheelfile import WheelFile
from cuwheel.read.sources.zipdir import installed_path

DIST_INFO = "p-1.0.dist-info"
SEGMENTS = st.sampled_from(["z", "y", "lib.so", ".", ""])
NAMES = st.lists(SEGMENTS, min_size=1, max_size=4).map("/".join).filter(
    lambda n: bool(n) and not n.endswith("/") and n.strip("/.") != "" and n[0] != "/")


def _hash(data: bytes) -> str:
    return "sha256=" + base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(
        b"=").decode()


def _build(path: str, members: list[tuple[str, bytes]]) -> None:
    files = list(members)
    files.append((f"{DIST_INFO}/METADATA", b"Metadata-Version: 2.1\nName: p\nVersion: 1.0\n"))
    files.append((f"{DIST_INFO}/WHEEL",
                  b"Wheel-Version: 1.0\nGenerator: t\nRoot-Is-Purelib: false\nTag: py3-none-any\n"))
    record = "".join(f"{n},{_hash(d)},{len(d)}\n" for n, d in files) + f"{DIST_INFO}/RECORD,,\n"
    files.append((f"{DIST_INFO}/RECORD", record.encode()))
    with zipfile.ZipFile(path, "w") as zf:
        for name, data in files:
            zf.writestr(name, data)


def _installed(wheel: str, target: str) -> dict[str, bytes] | None:
    scheme = {k: target for k in ("purelib", "platlib", "headers", "scripts", "data")}
    dest = SchemeDictionaryDestination(scheme, interpreter=sys.executable, script_kind="posix")
    try:
        with InstallerWheel.open(wheel) as source:
            install(source, dest, {})
    except OSError:  # FileExistsError, NotADirectoryError: the installer refuses
        return None
    out = {}
    for root, _, names in os.walk(target):
        for n in names:
            rel = os.path.relpath(os.path.join(root, n), target).replace(os.sep, "/")
            if not rel.startswith(DIST_INFO):
                with open(os.path.join(root, n), "rb") as f:
                    out[rel] = f.read()
    return out


def _cuwheel_view(wheel: str) -> tuple[dict[str, bytes], bool]:
    view = {}
    clash = False
    with WheelFile(wheel) as wf:
        for m in wf.members:
            why = wf.refusal(m)
            if why and "install" in why:
                clash = True
                continue
            if m.name.startswith(DIST_INFO) or m.is_dir():
                continue
            view[installed_path(m.name)] = b"".join(wf.chunks(m))
    return view, clash


@settings(max_examples=int(os.environ.get("CUWHEEL_TRUST_FUZZ", "150")), deadline=None,
          suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.tuples(NAMES, st.binary(min_size=1, max_size=8)), min_size=1, max_size=5,
                unique_by=lambda t: t[0]))
def test_cuwheel_reads_what_the_installer_writes(members: list[tuple[str, bytes]]) -> None:
    with tempfile.TemporaryDirectory() as d:
        wheel = os.path.join(d, "p-1.0-py3-none-any.whl")
        _build(wheel, members)
        installed = _installed(wheel, os.path.join(d, "target"))
        view, clash = _cuwheel_view(wheel)
    assert (installed is None) == clash, (members, installed, view)
    if installed is not None:
        assert installed == view


def test_a_shadowed_library_is_a_problem_not_a_pass(tmp_path: os.PathLike[str]) -> None:
    # z/lib.so has device code, z/./lib.so (written last, what pip installs) has none
    from pathlib import Path

    import cuwheel
    import wheelfactory

    bin_dir = Path(__file__).parent / "data" / "bin"
    wheel = wheelfactory.make_wheel(tmp_path, {
        "z/lib.so": (bin_dir / "sm80.so").read_bytes(),
        "z/./lib.so": (bin_dir / "hostonly.so").read_bytes()}, name="p")  # fmt: skip
    (src,) = cuwheel.inspect([wheel], workers=1).sources
    assert [b.path.split("!")[1] for b in src.binaries] == ["z/./lib.so"]
    assert not any(b.containers for b in src.binaries)  # the installed one: host code only
    (problem,) = src.problems
    assert problem.path.endswith("!z/lib.so") and "overwrites it" in problem.message

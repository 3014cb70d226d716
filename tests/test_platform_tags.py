"""The platform-tag checks beyond one good and one broken wheel (tests/test_checks.py):
what each finding names, that the corrected wheels pass, the edge cases of the rules, and
that the vendored data (data/manylinux.toml, data/stable_abi.toml) matches its sources."""

from __future__ import annotations

import json
import re
import shutil
import struct
import subprocess
from dataclasses import replace
from importlib import resources
from pathlib import Path
from typing import Any

import pytest

import _absent
import checkwheels as cw
from cuwheel.checks import Severity, check_wheel
from cuwheel.checks.findings import Finding, WheelReport
from cuwheel.checks.runner import audit_plan, check_source
from cuwheel.config import parse_config
from cuwheel.errors import ConfigError
from cuwheel.knowledge.tagpolicy import (
    load_stable_abi,
    load_tag_policies,
    parse_platform_tag,
)
from cuwheel.model.inventory import Binary, Source, UndefinedSymbol, VersionNeed, WheelInfo
from wheelfactory import make_wheel

X86 = cw.linux_x86_cu13()
WIN = cw.win_amd64_cu13()
NEW = ("TAG008", "TAG009", "TAG010", "TAG011", "TAG012", "TAG013")


def run(tmp_path: Any, spec: cw.Spec, audit: bool | None = None) -> WheelReport:
    config = parse_config({"check": {}}, "test")
    return check_wheel(spec.build(tmp_path), config.rows, config.check, environ={},
                       audit=audit)


def new(report: WheelReport) -> list[Finding]:
    return [f for f in report.findings if f.code in NEW]


def with_lib(data: bytes, tag: str, member: str = "pkg/lib/libx.so") -> cw.Spec:
    return replace(X86.with_member(member, data), tag=f"cp311-cp311-{tag}")


# ---------------------------------------------------------------- TAG008: each bullet
def test_newer_glibc_link_names_symbol_library_and_tags(tmp_path: Any) -> None:
    (f,) = new(run(tmp_path, with_lib(cw.fixture("tag_shm234.so"), "manylinux_2_28_x86_64")))
    assert f.code == "TAG008" and f.library == "pkg/lib/libx.so"
    assert "GLIBC_2.34 of libc.so.6 (shm_open, shm_unlink) needs manylinux_2_34_x86_64" \
        in f.message
    assert "tagged manylinux_2_28_x86_64" in f.message
    assert f.message.endswith("the wheel could honestly carry manylinux_2_34_x86_64")


def test_libstdcxx_versions_beyond_the_tag(tmp_path: Any) -> None:
    (f,) = new(run(tmp_path, with_lib(cw.fixture("tag_cxx.so"), "manylinux_2_28_x86_64")))
    assert f.code == "TAG008"
    assert "GLIBCXX_3.4.29 of libstdc++.so.6 (_ZNSt7__cxx1112basic_stringIcSt11char_traits" \
        "IcESaIcEE7reserveEv) needs manylinux_2_34_x86_64" in f.message
    assert "GLIBCXX_3.4.26 of libstdc++.so.6" in f.message
    assert "needs manylinux_2_31_x86_64" in f.message
    assert "CXXABI_1.3.9" not in f.message  # allowed by manylinux_2_28 (CXXABI_1.3.11)


@pytest.mark.parametrize(("fixture", "honest"), [
    ("tag_shm234.so", "manylinux_2_34_x86_64"),
    ("tag_cxx.so", "manylinux_2_34_x86_64"),
    ("tag_memcpy214.so", "manylinux_2_17_x86_64"),
])
def test_the_honest_tag_passes(tmp_path: Any, fixture: str, honest: str) -> None:
    report = run(tmp_path, with_lib(cw.fixture(fixture), honest))
    assert new(report) == [] and report.passed, report.findings


def test_symver_fix_passes_manylinux1(tmp_path: Any) -> None:
    assert new(run(tmp_path, with_lib(cw.fixture("tag_memcpy225.so"), "manylinux1_x86_64"))) == []


def test_several_tags_bind_the_most_compatible(tmp_path: Any) -> None:
    spec = with_lib(cw.fixture("tag_shm234.so"),
                    "manylinux_2_24_x86_64.manylinux_2_34_x86_64")
    (f,) = new(run(tmp_path, spec))
    assert "tagged manylinux_2_24_x86_64" in f.message


def test_glibc_binary_in_a_musllinux_wheel(tmp_path: Any) -> None:
    spec = replace(cw.cpu().with_member("pkg/lib/libx.so", cw.fixture("tag_memcpy225.so")),
                   tag="cp311-cp311-musllinux_1_2_x86_64")
    (f,) = new(run(tmp_path, spec))
    assert f.code == "TAG008" and "GLIBC_2.2.5" in f.message and "musl" in f.message


def test_linux_tag_promises_nothing(tmp_path: Any) -> None:
    assert new(run(tmp_path, with_lib(cw.fixture("tag_shm234.so"), "linux_x86_64"))) == []


# ---------------------------------------------------------------- TAG009
def test_unversioned_librt_reference(tmp_path: Any) -> None:
    (f,) = new(run(tmp_path, with_lib(cw.fixture("tag_noshm.so"), "manylinux2014_x86_64")))
    assert f.code == "TAG009" and f.severity is Severity.ERROR
    assert "shm_open, shm_unlink" in f.message and "librt.so.1" in f.message
    assert "manylinux_2_34_x86_64" in f.message


def test_unversioned_librt_reference_is_fine_from_glibc_234(tmp_path: Any) -> None:
    assert new(run(tmp_path, with_lib(cw.fixture("tag_noshm.so"), "manylinux_2_34_x86_64"))) == []


def test_librt_through_a_shipped_library_counts(tmp_path: Any) -> None:
    """The binary NEEDs a library the wheel ships, which NEEDs librt.so.1."""
    user = cw.patch(cw.fixture("tag_noshm.so"), b"libc.so.6", b"libz.so")
    spec = with_lib(user, "manylinux2014_x86_64").with_member("pkg/lib/libz.so",
                                                              cw.fixture("tag_rt.so"))
    assert [f.code for f in new(run(tmp_path, spec))] == []


def _synthetic(binary: Binary, tag: str = "manylinux2014_x86_64") -> list[Finding]:
    name = f"pkg-1.0-cp311-cp311-{tag}.whl"
    source = Source("wheel", name, WheelInfo("pkg", "1.0", (f"cp311-cp311-{tag}",), (), None,
                                             wheel_file_tags=(f"cp311-cp311-{tag}",)),
                    1, (binary,))
    plan, train_from, _ = audit_plan(source)
    report = check_source(source, plan, train_from=train_from, audit=True)
    return new(report)


def test_dl_family_in_a_shared_library_is_info_in_an_executable_error() -> None:
    undefined = (UndefinedSymbol("dlopen"), UndefinedSymbol("dlsym"),
                 UndefinedSymbol("pthread_create", weak=True))
    lib = Binary("pkg-1.0-cp311-cp311-manylinux2014_x86_64.whl!pkg/libx.so", "elf", 100,
                 "shared", "x86_64", needed=("libc.so.6",), undefined=undefined)
    (f,) = _synthetic(lib)
    assert f.code == "TAG009" and f.severity is Severity.INFO and "CPython" in f.message
    exe = replace(lib, path="pkg-1.0-cp311-cp311-manylinux2014_x86_64.whl!pkg/bin/tool",
                  file_type="executable")
    (f,) = _synthetic(exe)
    assert f.severity is Severity.ERROR and "dlopen, dlsym" in f.message
    assert "pthread_create" not in f.message  # weak: resolves to 0 when missing


def test_loader_and_ungoverned_versions_are_left_out() -> None:
    lib = Binary("pkg-1.0-cp311-cp311-manylinux2014_x86_64.whl!pkg/libx.so", "elf", 100,
                 "shared", "x86_64", needed=("libc.so.6",),
                 version_needs=(VersionNeed("ld-linux-x86-64.so.2", ("GLIBC_2.35",)),
                                VersionNeed("libcudart.so.12", ("libcudart.so.12",))))
    assert _synthetic(lib) == []
    private = replace(lib, version_needs=(VersionNeed("libc.so.6", ("GLIBC_PRIVATE",)),))
    (f,) = _synthetic(private)
    assert "needs no manylinux tag" in f.message and "linux_x86_64" in f.message


# ---------------------------------------------------------------- TAG010
def test_wheel_without_a_wheel_file_is_an_error(tmp_path: Any) -> None:
    path = make_wheel(tmp_path, X86.members, name=X86.name, version=X86.version, tag=X86.tag,
                      requires=X86.requires, wheel_file=False)
    config = parse_config({"check": {}}, "test")
    report = check_wheel(path, config.rows, config.check, environ={})
    (f,) = new(report)
    assert f.code == "TAG010" and f.severity is Severity.ERROR and not report.passed


def test_compressed_tag_sets_compare_expanded(tmp_path: Any) -> None:
    spec = replace(X86, tag="cp311-cp311-manylinux_2_28_x86_64.manylinux_2_34_x86_64",
                   wheel_tags=("cp311-cp311-manylinux_2_34_x86_64",
                               "cp311-cp311-manylinux_2_28_x86_64"))
    assert new(run(tmp_path, spec)) == []
    (f,) = new(run(tmp_path, replace(spec, wheel_tags=("cp311-cp311-manylinux_2_28_x86_64",))))
    assert "only the file name says cp311-cp311-manylinux_2_34_x86_64" in f.message


# ---------------------------------------------------------------- TAG011
def test_one_module_per_python_covers_the_wheel(tmp_path: Any) -> None:
    """DALI's layout: a py3-none wheel with _C for each CPython its Requires-Python admits."""
    spec = replace(X86, tag="py3-none-manylinux_2_28_x86_64")
    for minor in (10, 11, 12):
        spec = spec.with_member(f"pkg/_C.cpython-3{minor}-x86_64-linux-gnu.so",
                                cw.fixture("hostonly.so"))
    path = make_wheel(tmp_path, spec.members, name=spec.name, version=spec.version,
                      tag=spec.tag, requires=spec.requires)
    # Requires-Python >=3.10,<3.13 (make_wheel writes none: add it to METADATA)
    _set_requires_python(path, ">=3.10,<3.13")
    config = parse_config({"check": {}}, "test")
    assert new(check_wheel(path, config.rows, config.check, environ={})) == []
    _set_requires_python(path, ">=3.10")
    found = new(check_wheel(path, config.rows, config.check, environ={}))
    assert {f.code for f in found} == {"TAG011"} and "on 3.13 and later" in found[0].message


def _set_requires_python(path: str, spec: str) -> None:
    import zipfile

    with zipfile.ZipFile(path) as zf:
        items = [(i, zf.read(i)) for i in zf.infolist()]
    with zipfile.ZipFile(path, "w") as zf:
        for info, data in items:
            if info.filename.endswith("/METADATA"):
                text = re.sub(r"Requires-Python: .*\n", "", data.decode())
                data = (text + f"Requires-Python: {spec}\n").encode()
            zf.writestr(info, data)


def test_a_cpython_tagged_module_matching_the_wheel_is_fine(tmp_path: Any) -> None:
    spec = X86.with_member("pkg/_C.cpython-311-x86_64-linux-gnu.so", cw.fixture("hostonly.so"))
    assert new(run(tmp_path, spec)) == []
    other = X86.with_member("pkg/_C.cpython-310-x86_64-linux-gnu.so", cw.fixture("hostonly.so"))
    (f,) = new(run(tmp_path, other))
    assert f.code == "TAG011" and "3.10" in f.message


def test_abi3_pyd_importing_a_versioned_python_dll(tmp_path: Any) -> None:
    dll = cw.patch(cw.fixture("win_hostonly.dll"), b"KERNEL32.dll", b"python39.dll")
    spec = replace(WIN.with_member("pkg/_m.pyd", dll), tag="cp39-abi3-win_amd64")
    (f,) = new(run(tmp_path, spec))
    assert f.code == "TAG011" and "imports python39.dll" in f.message


# ---------------------------------------------------------------- TAG012 / TAG013
def test_requires_python_raises_the_abi3_floor(tmp_path: Any) -> None:
    spec = replace(X86.with_member("pkg/abi3_310.abi3.so", cw.fixture("tag_abi3_310.so")),
                   tag="cp38-abi3-manylinux_2_28_x86_64")
    path = spec.build(tmp_path)
    _set_requires_python(path, ">=3.10")
    config = parse_config({"check": {}}, "test")
    assert new(check_wheel(path, config.rows, config.check, environ={})) == []


def test_abi3_floor_names_the_symbol_and_version(tmp_path: Any) -> None:
    spec = replace(X86.with_member("pkg/abi3_310.abi3.so", cw.fixture("tag_abi3_310.so")),
                   tag="cp38-abi3-manylinux_2_28_x86_64")
    (f,) = new(run(tmp_path, spec))
    assert "PyModule_AddType (stable ABI since 3.10)" in f.message
    assert "on 3.8-3.9" in f.message and "cp310-abi3" in f.message


def test_version_specific_wheels_are_not_held_to_the_stable_abi(tmp_path: Any) -> None:
    spec = X86.with_member("pkg/nonlimited.cpython-311-x86_64-linux-gnu.so",
                           cw.fixture("tag_nonlimited.so"))
    assert new(run(tmp_path, spec)) == []


# ---------------------------------------------------------------- Windows machine (TAG001)
def _pe_machine(data: bytes, machine: int) -> bytes:
    out = bytearray(data)
    (lfanew,) = struct.unpack_from("<I", out, 0x3C)
    struct.pack_into("<H", out, lfanew + 4, machine)
    return bytes(out)


def test_pe_machine_against_the_windows_tag(tmp_path: Any) -> None:
    arm = _pe_machine(cw.fixture("win_hostonly.dll"), 0xAA64)
    report = run(tmp_path, WIN.with_member("pkg/_arm.pyd", arm))
    assert [f.code for f in report.findings if f.library == "pkg/_arm.pyd"] == ["TAG001"]
    # no row is for win-arm64: the rows refuse it (exit 2), an audit judges it
    with pytest.raises(ConfigError, match="matches no row"):
        run(tmp_path, replace(WIN, tag="cp311-cp311-win_arm64"))
    report = run(tmp_path, replace(WIN, tag="cp311-cp311-win_arm64"), audit=True)
    assert {f.library for f in report.findings if f.code == "TAG001"} == {
        "pkg/pkg_cuda.dll", "pkg/_C.pyd"}


# ---------------------------------------------------------------- the data and its sources
def test_manylinux_data_matches_the_installed_auditwheel() -> None:
    auditwheel = _absent.extra("auditwheel")
    mine = {p.name: p for p in load_tag_policies().policies}
    pol = resources.files(auditwheel).joinpath("policy")
    seen = set()
    for family in ("manylinux", "musllinux"):
        for p in json.loads(pol.joinpath(f"{family}-policy.json").read_text()):
            if p["name"] == "linux":
                continue
            seen.add(p["name"])
            m = mine[p["name"]]
            assert (m.aliases, m.priority) == (tuple(p["aliases"]), p["priority"])
            got = {a: {k: set(v) for k, v in d.items()} for a, d in m.symbol_versions.items()}
            want = {a: {k: {f"{k}_{x}" for x in v} for k, v in d.items()}
                    for a, d in p["symbol_versions"].items()}
            assert got == want, p["name"]
    assert seen == set(mine)


def test_stable_abi_data_matches_the_installed_abi3info() -> None:
    abi3info = _absent.extra("abi3info")
    want = {s.name: (o.added.major, o.added.minor)
            for s, o in {**abi3info.FUNCTIONS, **abi3info.DATAS}.items()}
    assert dict(load_stable_abi()) == want


def _libc() -> Path | None:
    p = Path("/lib/x86_64-linux-gnu/libc.so.6")
    if not p.exists() or shutil.which("readelf") is None:
        return None
    text = subprocess.run(["readelf", "-V", "-W", str(p)], capture_output=True, text=True,
                          check=True).stdout
    return p if "GLIBC_2.34" in text else None


@_absent.skip_without("glibc", _libc() is None, "readelf and a glibc >= 2.34 libc.so.6")
def test_moved_symbols_are_in_a_new_libc_with_a_compat_version() -> None:
    libc = _libc()
    assert libc is not None
    text = subprocess.run(["readelf", "--dyn-syms", "-W", str(libc)], capture_output=True,
                          text=True, check=True).stdout
    versions: dict[str, set[str]] = {}
    for line in text.splitlines():
        m = re.search(r"\s(\S+?)(@@?)(GLIBC_\S+)", line)
        if m:
            versions.setdefault(m.group(1), set()).add(m.group(2) + m.group(3))
    moved = load_tag_policies().moved
    assert {m.library for m in moved.values()} == {
        "libdl.so.2", "librt.so.1", "libpthread.so.0", "libutil.so.1", "libanl.so.1",
        "libresolv.so.2"}
    for name, m in moved.items():
        vs = versions[name]
        assert f"@@GLIBC_{m.glibc[0]}.{m.glibc[1]}" in vs, name
        assert any(v.startswith("@GLIBC_") for v in vs), name
    assert moved["shm_open"].library == "librt.so.1" and moved["dlopen"].glibc == (2, 34)


def test_platform_tags_parse() -> None:
    P = load_tag_policies()
    t = parse_platform_tag("manylinux2014_aarch64", P)
    assert t is not None and t.policy is not None and t.policy.name == "manylinux_2_17"
    t = parse_platform_tag("manylinux_2_30_x86_64", P)
    assert t is not None and t.policy is not None and t.policy.name == "manylinux_2_28"
    assert parse_platform_tag("linux_x86_64", P) is None
    assert P.oldest_allowing("manylinux", "x86_64", "GLIBC_PRIVATE") is None
    assert P.governs("manylinux", "x86_64", "GLIBC_PRIVATE")
    assert not P.governs("manylinux", "x86_64", "libcudart.so.12")


@pytest.mark.parametrize(("tag", "flagged"), [("manylinux_2_14_x86_64", False),
                                              ("manylinux_2_13_x86_64", True)])
def test_glibc_symbol_at_exactly_a_policyless_tag(tmp_path: Any, tag: str, flagged: bool) -> None:
    """tag_memcpy214.so needs GLIBC_2.14 (memcpy@GLIBC_2.14): manylinux_2_14, a tag with no
    policy of its own (PEP 600: glibc 2.14 or newer), allows it; manylinux_2_13 does not."""
    found = new(run(tmp_path, with_lib(cw.fixture("tag_memcpy214.so"), tag)))
    assert bool([f for f in found if f.code == "TAG008"]) == flagged, found

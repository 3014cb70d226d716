"""check and compat judge device code through one copy of CUDA's loading rules.

Over every (entry kind, variant, compute capability) the catalog knows, a library with one
container holding one entry is judged by ``cuwheel check`` (DC001 against a row claiming
that GPU's SASS) and by ``cuwheel compat`` (the container on that GPU).  They must agree:

* PTX: check accepts the PTX as standing in for the missing cubin exactly when compat says
  the container JIT-compiles it;
* SASS: check never passes a container that compat says does not load there (check is
  stricter on purpose: it wants the claimed cubin itself, not a compatible one).

The two cases where the copies used to disagree are regression tests at the end.
"""

from __future__ import annotations

import pytest

from cuwheel import compat
from cuwheel.checks import CheckPolicy, Severity, check_source
from cuwheel.compat import Driver, Target, Verdict
from cuwheel.knowledge import catalog
from cuwheel.model.arch import Arch, ArchSpec
from cuwheel.model.inventory import (
    Binary,
    CodeKind,
    Compression,
    FatbinContainer,
    FatbinEntry,
    Source,
    WheelInfo,
)
from cuwheel.plan.rows import Plan, Row, Train

WHEEL = "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
LIB = "pkg/libk.so"


def _entry(kind: CodeKind, arch: Arch, isa: tuple[int, int] = (8, 0)) -> FatbinEntry:
    return FatbinEntry(
        offset=0x100, kind=kind, arch=arch,
        code_version=(1, 8) if kind is CodeKind.SASS else isa, flags=0x11, header_size=64,
        stored_size=4096 if kind is not CodeKind.SASS else 20000,
        compression=Compression.NONE, compressed_size=0,
        uncompressed_size=4096 if kind is not CodeKind.SASS else 20000,
        host="linux", debug=False, relocatable=False if kind is CodeKind.SASS else None,
    )  # fmt: skip


def _container(*entries: FatbinEntry) -> FatbinContainer:
    return FatbinContainer(
        offset=0x100, size=16 + sum(e.stored_size for e in entries), section=".nv_fatbin",
        named_section=True, relocatable=False, entries=entries,
    )  # fmt: skip


def _source(*containers: FatbinContainer) -> Source:
    binary = Binary(path=f"{WHEEL}!{LIB}", format="elf", size=1 << 20, file_type="shared",
                    machine="x86_64", containers=containers)
    info = WheelInfo("pkg", "1.0", ("cp311-cp311-manylinux_2_28_x86_64",), (), None)
    return Source("wheel", WHEEL, wheel=info, files_seen=1, binaries=(binary,))


def _plan(gpu: Arch, release: catalog.Release, profile: str = "release") -> Plan:
    row = Row(name="t", platform="linux-x86_64", cuda=(release.name,), sass=(gpu,), ptx="none",
              profile=profile)
    return Plan(row, Train(release), "linux-x86_64", (ArchSpec(gpu),))


def _dc001(source: Source, plan: Plan, code: str = "DC001") -> list[tuple[Severity, str]]:
    policy = CheckPolicy(select=(code,), accept_ptx_for_sass=True)
    report = check_source(source, plan, policy)
    return [(f.severity, f.message) for f in report.findings if f.code == code]


def _codes() -> list[Arch]:
    """Every SASS / PTX target some release builds, a and f variants included."""
    return sorted({a for r in catalog.releases() for a in r.sass})


def _gpus() -> list[Arch]:
    return [g.arch for g in catalog.load_catalog().gpus]


NEWEST = catalog.releases()[-1]


@pytest.mark.parametrize("code", _codes(), ids=str)
def test_ptx_stands_in_exactly_where_compat_jits(code: Arch) -> None:
    c = _container(_entry(CodeKind.PTX, code))
    for gpu in _gpus():
        verdict = compat.evaluate_container(c, Target(gpu, gpu.sass)).verdict
        found = _dc001(_source(c), _plan(gpu, NEWEST))
        assert len(found) == 1, (code, gpu, found)
        accepted = found[0][0] is Severity.INFO
        assert accepted == (verdict is Verdict.PTX_JIT), (code.ptx, gpu.cc, verdict, found)


@pytest.mark.parametrize("code", _codes(), ids=str)
def test_check_never_passes_a_cubin_compat_refuses(code: Arch) -> None:
    c = _container(_entry(CodeKind.SASS, code))
    for gpu in _gpus():
        verdict = compat.evaluate_container(c, Target(gpu, gpu.sass)).verdict
        found = _dc001(_source(c), _plan(gpu, NEWEST))
        if not found:
            assert verdict is not None and verdict.loads, (code.sass, gpu.cc, verdict)


@pytest.mark.parametrize("kind", [CodeKind.SASS, CodeKind.PTX])
@pytest.mark.parametrize("code", _codes(), ids=str)
def test_audit_coverage_is_compat_library_verdict(code: Arch, kind: CodeKind) -> None:
    """The audit profile judges coverage by loading: DC001 exactly where compat says the
    library does not run, DC006 exactly where compat calls it a module for other GPUs."""
    lib = (_container(_entry(kind, code)),)
    for gpu in _gpus():
        lv = compat.evaluate_binary(_source(*lib).binaries[0], Target(gpu, gpu.sass))
        assert lv is not None
        plan = _plan(gpu, NEWEST, "audit")
        dc001 = _dc001(_source(*lib), plan)
        dc006 = _dc001(_source(*lib), plan, "DC006")
        assert bool(dc006) == lv.specialised, (code, kind, gpu, lv)
        assert bool(dc001) == (not lv.verdict.runs and not lv.specialised), (code, gpu, lv)


def test_family_ptx_on_thor_under_cuda_12_agrees() -> None:
    """compute_100f PTX on CC 10.1 (Thor's CUDA 12 name): check used to accept it (same
    major, higher minor) and compat refused it (10.1 is not in the sm_100 family)."""
    c = _container(_entry(CodeKind.PTX, Arch(100, "f"), isa=(8, 8)))
    thor = Arch(101)
    cv = compat.evaluate_container(c, Target(thor, "Thor", Driver(cuda=(12, 9))))
    assert cv.verdict is Verdict.NO_CODE
    found = _dc001(_source(c), _plan(thor, catalog.release("12.9")))
    assert [s for s, _ in found] == [Severity.ERROR]
    assert "can JIT-compile" not in found[0][1]


def test_lto_only_container_is_no_module_for_check_either() -> None:
    """A container holding only LTO-IR is a device-link input: compat ignores it, and check
    used to count it (one such container gave DC001 errors)."""
    real = _container(_entry(CodeKind.SASS, Arch(90)))
    lto = _container(_entry(CodeKind.LTOIR, Arch(90)), _entry(CodeKind.LTOIR, Arch(80)))
    lto = FatbinContainer(0x9000, lto.size, ".nv_fatbin", True, False, lto.entries)
    source = _source(real, lto)
    assert _dc001(source, _plan(Arch(90), NEWEST)) == []
    lv = compat.evaluate_binary(source.binaries[0], Target(Arch(90), "H100"))
    assert lv is not None and lv.verdict is Verdict.NATIVE
    assert [c.ignored is not None for c in lv.containers] == [False, True]

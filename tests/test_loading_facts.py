"""CUDA's loading rules, as check and compat apply them, against facts stated by hand.

Every expected value below is written out from a document, never computed by cuwheel:

* the CUDA C++ Programming Guide's binary compatibility rules: a cubin for ``sm_XY`` runs
  on CC ``X.Z`` for ``Z >= Y`` of the same major only; an ``sm_XYa`` cubin on CC ``X.Y``
  only; an ``sm_XYf`` cubin on the members of its family (the PTX ISA's family table:
  sm_100f covers 10.0, 10.3 and 10.7; sm_120f covers 12.0 and 12.1); PTX for
  ``compute_XY`` JIT-compiles for any CC ``>= X.Y``, ``compute_XYa`` for ``X.Y`` only,
  ``compute_XYf`` for its family;
* docs/checks.md's text for DC001 (release profile: the claimed architecture's own cubin,
  or with ``accept-ptx-for-sass`` PTX that JIT-compiles for it; audit profile: code that
  loads) and DC006 (a module of ``a`` / ``f`` code only);
* NVIDIA's ``cuobjdump`` listing of the committed fixtures (tests/data/bin, built by
  tests/data/build.sh), which pins what each fixture holds independently of cuwheel's
  readers.

What the real driver did with these rules is tests/test_compat_probe.py's part.
"""

from __future__ import annotations

import sys
from collections import Counter
from pathlib import Path

import pytest

import cuwheel
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

sys.path.insert(0, str(Path(__file__).parent))
from cuobjdump_oracle import find_cuobjdump, list_device_code

BIN = Path(__file__).parent / "data" / "bin"
WHEEL = "pkg-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
LIB = "pkg/libk.so"
CUDA13 = Driver("580.65.06", (13, 0))


def _entry(name: str, isa: tuple[int, int] = (8, 0)) -> FatbinEntry:
    sass = name.startswith("sm_")
    return FatbinEntry(
        offset=0x100, kind=CodeKind.SASS if sass else CodeKind.PTX, arch=Arch.parse(name),
        code_version=(1, 8) if sass else isa, flags=0x11, header_size=64,
        stored_size=20000, compression=Compression.NONE, compressed_size=0,
        uncompressed_size=20000, host="linux", debug=False, relocatable=False if sass else None,
    )  # fmt: skip


def _container(*entries: FatbinEntry, offset: int = 0x100) -> FatbinContainer:
    return FatbinContainer(
        offset=offset, size=16 + sum(e.stored_size for e in entries), section=".nv_fatbin",
        named_section=True, relocatable=False, entries=entries,
    )  # fmt: skip


def _source(*containers: FatbinContainer) -> Source:
    binary = Binary(path=f"{WHEEL}!{LIB}", format="elf", size=1 << 20, file_type="shared",
                    machine="x86_64", containers=containers)
    info = WheelInfo("pkg", "1.0", ("cp311-cp311-manylinux_2_28_x86_64",), (), None)
    return Source("wheel", WHEEL, wheel=info, files_seen=1, binaries=(binary,))


def _findings(
    source: Source, gpu: str, profile: str, release: str = "13.0"
) -> list[tuple[str, Severity]]:
    arch = Arch.parse(gpu)
    rel = catalog.release(release)
    row = Row(name="t", platform="linux-x86_64", cuda=(rel.name,), sass=(arch,), ptx="none",
              profile=profile)
    plan = Plan(row, Train(rel), "linux-x86_64", (ArchSpec(arch),))
    policy = CheckPolicy(select=("DC001", "DC006"), accept_ptx_for_sass=True)
    return [(f.code, f.severity) for f in check_source(source, plan, policy).findings]


ERROR, INFO = Severity.ERROR, Severity.INFO

# Release profile: one container holding one entry, a row claiming one GPU's SASS, with
# accept-ptx-for-sass.  A cubin counts only for its own CC (an a / f cubin of the claimed
# CC included); anything else is DC001, an info when the container's PTX JIT-compiles for
# the GPU, an error otherwise.  (code, claimed sm, findings)
RELEASE = [
    ("sm_80", "sm_80", []),
    ("sm_80", "sm_86", [("DC001", ERROR)]),  # it would load (same major), but is not the claim
    ("sm_86", "sm_80", [("DC001", ERROR)]),
    ("sm_90a", "sm_90", []),
    ("sm_100f", "sm_100", []),
    ("sm_100f", "sm_103", [("DC001", ERROR)]),
    ("sm_120", "sm_121", [("DC001", ERROR)]),
    ("compute_86", "sm_86", [("DC001", INFO)]),  # PTX of exactly the CC
    ("compute_80", "sm_90", [("DC001", INFO)]),  # PTX JIT to a higher CC
    ("compute_80", "sm_120", [("DC001", INFO)]),  # ... across majors
    ("compute_90", "sm_89", [("DC001", ERROR)]),  # never to a lower one
    ("compute_90", "sm_80", [("DC001", ERROR)]),
    ("compute_86", "sm_80", [("DC001", ERROR)]),  # nor to a lower minor of its major
    ("compute_90a", "sm_90", [("DC001", INFO)]),
    ("compute_90a", "sm_100", [("DC001", ERROR)]),  # a: that CC only
    ("compute_100f", "sm_103", [("DC001", INFO)]),  # f: its family
    ("compute_100f", "sm_120", [("DC001", ERROR)]),
    ("compute_100f", "sm_110", [("DC001", ERROR)]),
    ("compute_120f", "sm_121", [("DC001", INFO)]),
    ("compute_120", "sm_121", [("DC001", INFO)]),
]


@pytest.mark.parametrize(("code", "gpu", "expected"), RELEASE)
def test_release_profile_wants_the_claimed_cubin(
    code: str, gpu: str, expected: list[tuple[str, Severity]]
) -> None:
    assert _findings(_source(_container(_entry(code))), gpu, "release") == expected


# Audit profile: DC001 exactly where nothing of the library loads on the claimed GPU;
# DC006 (and no DC001) for a module of a / f code only.  (code, claimed sm, findings)
AUDIT = [
    ("sm_80", "sm_80", []),
    ("sm_80", "sm_86", []),  # later minor of the same major
    ("sm_80", "sm_89", []),
    ("sm_86", "sm_80", [("DC001", ERROR)]),  # never an earlier minor
    ("sm_80", "sm_90", [("DC001", ERROR)]),  # never across majors
    ("sm_90", "sm_100", [("DC001", ERROR)]),
    ("sm_100", "sm_120", [("DC001", ERROR)]),
    ("sm_90a", "sm_90", []),
    ("sm_90a", "sm_100", [("DC006", INFO)]),
    ("sm_100a", "sm_103", [("DC006", INFO)]),
    ("sm_100f", "sm_103", []),
    ("sm_100f", "sm_120", [("DC006", INFO)]),
    ("compute_80", "sm_90", []),
    ("compute_80", "sm_120", []),
    ("compute_89", "sm_89", []),
    ("compute_90", "sm_89", [("DC001", ERROR)]),
    ("compute_86", "sm_80", [("DC001", ERROR)]),
    ("compute_120", "sm_100", [("DC001", ERROR)]),
]


@pytest.mark.parametrize(("code", "gpu", "expected"), AUDIT)
def test_audit_profile_follows_the_loading_rules(
    code: str, gpu: str, expected: list[tuple[str, Severity]]
) -> None:
    assert _findings(_source(_container(_entry(code))), gpu, "audit") == expected


@pytest.mark.parametrize(
    ("codes", "gpu", "expected"),
    [
        # The driver picks a container's best entry: the exact cubin over a compatible one
        # and over PTX; a compatible cubin over PTX; the newest PTX that fits.
        (("sm_80", "sm_90", "compute_90"), "9.0", Verdict.NATIVE),
        (("sm_80", "sm_86", "compute_86"), "8.9", Verdict.COMPATIBLE),
        (("sm_86", "sm_80"), "8.6", Verdict.NATIVE),
        (("compute_80", "sm_80"), "8.9", Verdict.COMPATIBLE),
        (("sm_90", "compute_80"), "8.9", Verdict.PTX_JIT),
        (("sm_90a",), "9.0", Verdict.NATIVE),
        (("sm_100f",), "10.3", Verdict.COMPATIBLE),
        (("sm_100f",), "10.0", Verdict.NATIVE),
        (("sm_103f",), "10.0", Verdict.NO_CODE),  # sm_103f's family is 10.3 and 10.7
        (("compute_100f",), "10.7", Verdict.PTX_JIT),
        (("compute_100f",), "9.0", Verdict.NO_CODE),
        (("sm_86",), "8.0", Verdict.NO_CODE),
        (("sm_75",), "8.0", Verdict.NO_CODE),
    ],
)
def test_container_best_entry(codes: tuple[str, ...], gpu: str, expected: Verdict) -> None:
    cv = compat.evaluate_container(
        _container(*(_entry(c) for c in codes)), Target(Arch.parse(gpu), gpu, CUDA13)
    )
    assert cv.verdict is expected


def test_newest_fitting_ptx_is_chosen() -> None:
    c = _container(_entry("compute_75"), _entry("compute_86"), _entry("compute_90"))
    cv = compat.evaluate_container(c, Target(Arch.parse("8.9"), "8.9", CUDA13))
    assert cv.verdict is Verdict.PTX_JIT and cv.chosen == "compute_86"


@pytest.mark.parametrize(
    ("isa", "cuda", "expected"),
    [
        # PTX ISA release table: ISA 8.5 came with CUDA 12.5, 8.4 with 12.4, 9.0 with 13.0.
        ((8, 5), (12, 5), Verdict.PTX_JIT),
        ((8, 5), (12, 4), Verdict.DRIVER),
        ((8, 4), (12, 4), Verdict.PTX_JIT),
        ((9, 0), (13, 0), Verdict.PTX_JIT),
        ((9, 0), (12, 9), Verdict.DRIVER),
    ],
)
def test_ptx_isa_needs_its_release_driver(
    isa: tuple[int, int], cuda: tuple[int, int], expected: Verdict
) -> None:
    c = _container(_entry("compute_80", isa=isa))
    cv = compat.evaluate_container(c, Target(Arch.parse("9.0"), "H100", Driver(cuda=cuda)))
    assert cv.verdict is expected


# -- the committed fixtures: what cuobjdump lists in them, and how each runs

# (fixture, cuobjdump's cubins, cuobjdump's PTX) as cuobjdump 13.5 names them: "f" dropped
# from cubin names; every fixture linked by nvcc carries a device-link stub cubin for its
# first -arch next to the real one.
LISTED = [
    ("sm80.so", {"sm_80": 2}, {"sm_80": 1}),
    ("sm80only.so", {"sm_80": 2}, {}),
    ("sm90a.so", {"sm_90a": 2}, {}),
    ("sm100f.so", {"sm_100": 2}, {}),
    ("ptx120.so", {}, {"sm_120": 1}),
]


@pytest.fixture(scope="module")
def cuobjdump() -> str:
    path = find_cuobjdump()
    assert path is not None, "nvidia-cuda-cuobjdump (in the test extra) is not installed"
    return path


@pytest.mark.parametrize(("name", "cubins", "ptx"), LISTED, ids=[x[0] for x in LISTED])
def test_fixture_contents_by_cuobjdump(
    cuobjdump: str, name: str, cubins: dict[str, int], ptx: dict[str, int]
) -> None:
    assert list_device_code(BIN / name) == (Counter(cubins), Counter(ptx))


@pytest.fixture(scope="module")
def fixtures() -> dict[str, Binary]:
    inv = cuwheel.inspect([str(BIN / name) for name, _, _ in LISTED])
    return {Path(b.path).name: b for b in inv.binaries}


# (fixture, GPU CC, library verdict under a CUDA 13.0 driver), from the rules above.
RUNS = [
    ("sm80.so", "8.0", Verdict.NATIVE),
    ("sm80.so", "8.6", Verdict.COMPATIBLE),
    ("sm80.so", "9.0", Verdict.PTX_JIT),  # compute_80 PTX; also what the H200 did
    ("sm80.so", "7.5", Verdict.NO_CODE),
    ("sm80only.so", "8.9", Verdict.COMPATIBLE),
    ("sm80only.so", "9.0", Verdict.NO_CODE),
    ("sm90a.so", "9.0", Verdict.NATIVE),
    ("sm90a.so", "10.0", Verdict.OTHER_GPUS),  # a module of sm_90a code only
    ("sm100f.so", "10.3", Verdict.COMPATIBLE),
    ("sm100f.so", "12.0", Verdict.OTHER_GPUS),
    ("ptx120.so", "12.0", Verdict.PTX_JIT),
    ("ptx120.so", "12.1", Verdict.PTX_JIT),
    ("ptx120.so", "9.0", Verdict.NO_CODE),
]


@pytest.mark.parametrize(("name", "gpu", "expected"), RUNS)
def test_fixture_verdicts(
    fixtures: dict[str, Binary], name: str, gpu: str, expected: Verdict
) -> None:
    lv = compat.evaluate_binary(fixtures[name], Target(Arch.parse(gpu), gpu, CUDA13))
    assert lv is not None and lv.verdict is expected, lv


# -- regressions where check and compat used to disagree


def test_family_ptx_on_thor_under_cuda_12() -> None:
    """compute_100f PTX on CC 10.1 (Thor's CUDA 12 name): 10.1 is not in the sm_100
    family (PTX ISA family table), so neither compat nor check may accept it."""
    c = _container(_entry("compute_100f", isa=(8, 8)))
    cv = compat.evaluate_container(c, Target(Arch(101), "Thor", Driver(cuda=(12, 9))))
    assert cv.verdict is Verdict.NO_CODE
    assert _findings(_source(c), "sm_101", "release", "12.9") == [("DC001", ERROR)]


def test_lto_only_container_is_no_module() -> None:
    """A container holding only LTO-IR is a device-link input, never loaded as a module."""
    real = _container(_entry("sm_90"))
    lto_entries = tuple(
        FatbinEntry(
            offset=0x100, kind=CodeKind.LTOIR, arch=Arch(a), code_version=(8, 0), flags=0x11,
            header_size=64, stored_size=4096, compression=Compression.NONE, compressed_size=0,
            uncompressed_size=4096, host="linux", debug=False, relocatable=None,
        )
        for a in (90, 80)
    )
    source = _source(real, _container(*lto_entries, offset=0x9000))
    assert _findings(source, "sm_90", "release") == []
    lv = compat.evaluate_binary(source.binaries[0], Target(Arch(90), "H100"))
    assert lv is not None and lv.verdict is Verdict.NATIVE
    assert [c.ignored is not None for c in lv.containers] == [False, True]


@pytest.mark.parametrize(
    ("codes", "gpu", "expected"),
    [
        # docs/checks.md, DC002: "a/f variants of claimed archs are allowed"; a variant of an
        # architecture the row does not claim is SASS the row does not list
        (("sm_90", "sm_90a"), "sm_90", []),
        (("sm_100", "sm_100f"), "sm_100", []),
        (("sm_80", "sm_90a"), "sm_80", [("DC002", ERROR)]),
        (("sm_80", "sm_86"), "sm_80", [("DC002", ERROR)]),
    ],
)
def test_unclaimed_sass_and_variants(
    codes: tuple[str, ...], gpu: str, expected: list[tuple[str, Severity]]
) -> None:
    arch = Arch.parse(gpu)
    rel = catalog.release("13.0")
    row = Row(name="t", platform="linux-x86_64", cuda=(rel.name,), sass=(arch,), ptx="none",
              profile="release")
    plan = Plan(row, Train(rel), "linux-x86_64", (ArchSpec(arch),))
    source = _source(_container(*(_entry(c) for c in codes)))
    report = check_source(source, plan, CheckPolicy(select=("DC002",)))
    assert [(f.code, f.severity) for f in report.findings] == expected


def test_a_library_whose_containers_all_load_names_the_rule() -> None:
    """When every container loads, the library's reason is the container's own rule."""
    target = Target(Arch(90), "H100", CUDA13)
    one = compat.evaluate_binary(_source(_container(_entry("sm_90"))).binaries[0], target)
    assert one is not None and one.verdict is Verdict.NATIVE
    assert one.reason == "sm_90 matches CC 9.0"
    two = compat.evaluate_binary(
        _source(_container(_entry("sm_90")), _container(_entry("sm_80"), _entry("sm_90"),
                                                        offset=0x9000)).binaries[0], target)
    assert two is not None and two.verdict is Verdict.NATIVE
    assert two.reason == "2 of 2 containers: sm_90 matches CC 9.0"

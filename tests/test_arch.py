"""Arch and arch-list spellings: parsing every spelling in use, and round trips."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from cuwheel.model.arch import (
    Arch,
    ArchSpec,
    ArchSpellingError,
    format_arch_specs,
    format_cmake_architectures,
    format_gencode,
    format_torch_arch_list,
    normalize_specs,
    parse_arch_specs,
    parse_cmake_architectures,
    parse_gencode,
    parse_torch_arch_list,
)

SASS = (True, False)
PTX = (False, True)
BOTH = (True, True)


def spec(number: int, variant: str = "", kind: tuple[bool, bool] = SASS) -> ArchSpec:
    return ArchSpec(Arch(number, variant), sass=kind[0], ptx=kind[1])  # type: ignore[arg-type]


# The spellings listed in the issue, with what each one means (nvcc / CMake / PyTorch docs).
@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("sm_90a", spec(90, "a")),
        ("compute_90", spec(90, "", PTX)),
        ("9.0a", spec(90, "a")),
        ("8.6+PTX", spec(86, "", BOTH)),
        ("90-real", spec(90)),
        ("90-virtual", spec(90, "", PTX)),
        ("90", spec(90)),
        ("100f", spec(100, "f")),
        ("sm_121a", spec(121, "a")),
        ("12.1", spec(121)),
        ("compute_100f", spec(100, "f", PTX)),
        ("SM_86", spec(86)),
        ("sm_86+PTX", spec(86, "", BOTH)),
    ],
)
def test_single_spellings(text: str, expected: ArchSpec) -> None:
    assert ArchSpec.parse(text) == expected


def test_arch_parse_properties() -> None:
    a = Arch.parse("10.3f")
    assert (a.number, a.variant, a.major, a.minor, a.cc) == (103, "f", 10, 3, "10.3")
    assert (a.sass, a.ptx, a.dotted, str(a.base)) == ("sm_103f", "compute_103f", "10.3f", "sm_103")
    assert Arch.parse("compute_75") == Arch(75)
    assert Arch.parse("lto_90a") == Arch(90, "a")


@pytest.mark.parametrize(
    "bad", ["", "sm_", "sm_9", "sm_90b", "9.10", "0.5", "sm_090", "compute_90+PTX", "lto_90", "x"]
)
def test_bad_single_spellings(bad: str) -> None:
    with pytest.raises(ArchSpellingError):
        ArchSpec.parse(bad)


def test_gencode_clause_from_issue() -> None:
    # nvcc: arch=compute_86,code=[sm_86,compute_86] embeds an sm_86 cubin + compute_86 PTX.
    assert parse_arch_specs("arch=compute_86,code=[sm_86,compute_86]") == (spec(86, "", BOTH),)


def test_gencode_forms() -> None:
    text = (
        "-gencode arch=compute_80,code=[sm_80,sm_86] "
        "-gencode=arch=compute_90a,code=sm_90a --generate-code arch=compute_120,code=compute_120"
    )
    assert parse_gencode(text) == (spec(80), spec(86), spec(90, "a"), spec(120, "", PTX))
    with pytest.raises(ArchSpellingError):
        parse_gencode("arch=sm_80,code=sm_80")  # arch= must be virtual
    with pytest.raises(ArchSpellingError):
        parse_gencode("arch=compute_90,code=sm_80")  # a cubin older than its PTX
    with pytest.raises(ArchSpellingError):
        parse_gencode("arch=compute_80,code=compute_86")


def test_named_group_expands() -> None:
    groups = {"all-major": [spec(75), spec(120, "", BOTH)]}
    assert parse_arch_specs("all-major;sm_90", groups) == (spec(75), spec(90), spec(120, "", BOTH))
    with pytest.raises(ArchSpellingError):
        parse_arch_specs("all-major")  # without the release's groups it is unknown


def test_torch_list_examples() -> None:
    # docs/cuda.md#architecture-list-spellings: "8.0;8.6+PTX" -> sm_80, sm_86 cubins +
    # compute_86 PTX.
    assert parse_torch_arch_list("8.0;8.6+PTX") == (spec(80), spec(86, "", BOTH))
    assert parse_torch_arch_list("8.0 9.0a") == (spec(80), spec(90, "a"))
    names = {"Ampere": parse_torch_arch_list("8.0;8.6+PTX")}
    assert parse_torch_arch_list("Ampere;9.0", names) == (spec(80), spec(86, "", BOTH), spec(90))
    with pytest.raises(ArchSpellingError):
        format_torch_arch_list([spec(90, "", PTX)])  # PTX without the cubin
    with pytest.raises(ArchSpellingError):
        parse_torch_arch_list("sm_80")


def test_cmake_list_example() -> None:
    # docs/cuda.md#architecture-list-spellings: 80-real;90-virtual;120 -> sm_80 |
    # compute_90 | compute_120 + sm_120.
    assert parse_cmake_architectures("80-real;90-virtual;120") == (
        spec(80),
        spec(90, "", PTX),
        spec(120, "", BOTH),
    )
    with pytest.raises(ArchSpellingError):
        parse_cmake_architectures("sm_80")


# ---------------------------------------------------------------- property-based round trips

archs = st.builds(
    Arch,
    st.integers(min_value=10, max_value=999),
    st.sampled_from(["", "a", "f"]),
)
kinds = st.sampled_from([SASS, PTX, BOTH])
specs = st.builds(lambda a, k: ArchSpec(a, sass=k[0], ptx=k[1]), archs, kinds)
spec_lists = st.lists(specs, max_size=12).map(normalize_specs)


@given(archs)
def test_arch_names_round_trip(a: Arch) -> None:
    assert Arch.parse(a.sass) == a
    assert Arch.parse(a.ptx) == a
    assert Arch.parse(f"{a.number}{a.variant}") == a
    if a.major < 100:
        assert Arch.parse(a.dotted) == a


@given(specs)
def test_spec_round_trip(s: ArchSpec) -> None:
    assert ArchSpec.parse(str(s)) == s


@given(spec_lists)
def test_generic_list_round_trip(lst: tuple[ArchSpec, ...]) -> None:
    if lst:
        assert parse_arch_specs(format_arch_specs(lst)) == lst


@given(spec_lists)
def test_cmake_round_trip(lst: tuple[ArchSpec, ...]) -> None:
    if lst:
        text = format_cmake_architectures(lst)
        assert parse_cmake_architectures(text) == lst
        assert format_cmake_architectures(parse_cmake_architectures(text)) == text


@given(spec_lists)
def test_gencode_round_trip(lst: tuple[ArchSpec, ...]) -> None:
    if lst:
        assert parse_gencode(" ".join(format_gencode(lst))) == lst


@given(spec_lists)
def test_torch_round_trip(lst: tuple[ArchSpec, ...]) -> None:
    lst = tuple(s for s in lst if s.arch.major < 100)  # X.Y spelling: major < 100
    if not lst:
        return
    if all(s.sass for s in lst):
        text = format_torch_arch_list(lst)
        assert parse_torch_arch_list(text) == lst
    else:
        with pytest.raises(ArchSpellingError):
            format_torch_arch_list(lst)


@given(st.lists(specs, max_size=12))
def test_normalize_is_idempotent_and_merges(items: list[ArchSpec]) -> None:
    once = normalize_specs(items)
    assert normalize_specs(once) == once
    assert len({s.arch for s in once}) == len(once)
    for s in once:
        assert s.sass == any(i.sass for i in items if i.arch == s.arch)
        assert s.ptx == any(i.ptx for i in items if i.arch == s.arch)

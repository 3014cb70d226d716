"""Wheel-variant properties derived from nvcc-built fixtures (tests/data/build_size.sh:
what each was built for is written here by hand), validated by variantlib, and declared
properties of variant wheels checked (VAR001-VAR004)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import _absent
import cuwheel.cli
from cuwheel.read.inspect import inspect
from cuwheel.variant import derive, read_declared, variant_json, verify
from variantwheel import make_variant_wheel
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
TAG = "cp312-cp312-manylinux_2_28_x86_64"
NS = "nvidia"


def _wheel(tmp: Path, libs: dict[str, str]) -> str:
    members = {f"pkg/{name}": (BIN / so).read_bytes() for name, so in libs.items()}
    return make_wheel(tmp, members, name="pkg", version="1.0", tag=TAG)


def test_properties_of_one_library(tmp_path: Path) -> None:
    # size_base.so: -gencode arch=compute_X,code=[sm_X,compute_X] for 75, 80, 90, cudart shared
    d = derive(inspect([_wheel(tmp_path, {"a.so": "size_base.so"})]).sources[0])
    sm = [f"{NS} :: sm_arch :: {n}_{k}" for n in (75, 80, 90) for k in ("real", "virtual")]
    assert set(d.properties) == {f"{NS} :: cuda_version_lower_bound :: 13.0", *sm}
    assert d.partial == () and d.libraries == ("pkg/a.so",)


def test_ptx_only_where_built(tmp_path: Path) -> None:
    # size_ptx90.so: SASS 75, 80, 90; PTX only compute_90
    d = derive(inspect([_wheel(tmp_path, {"a.so": "size_ptx90.so"})]).sources[0])
    assert set(d.values("sm_arch")) == {"75_real", "80_real", "90_real", "90_virtual"}


def test_a_value_one_library_lacks_is_not_derived(tmp_path: Path) -> None:
    w = _wheel(tmp_path, {"a.so": "size_base.so", "b.so": "size_drop75.so"})
    d = derive(inspect([w]).sources[0])
    assert f"{NS} :: sm_arch :: 75_real" not in d.properties
    assert [(p.value, p.missing) for p in d.partial] == [
        (f"{NS} :: sm_arch :: 75_real", ("pkg/b.so",)),
        (f"{NS} :: sm_arch :: 75_virtual", ("pkg/b.so",)),
    ]


def test_variantlib_validates_what_is_written(tmp_path: Path) -> None:
    vdi = _absent.extra("variantlib", "variantlib.variant_dist_info")
    d = derive(inspect([_wheel(tmp_path, {"a.so": "size_base.so"})]).sources[0])
    text = variant_json(d, "cu130")
    v = vdi.VariantDistInfo(text, expected_label="cu130")
    assert sorted(p.to_str() for p in v.variant_desc.properties) == sorted(d.properties)
    assert json.loads(text)["variants"]["cu130"][NS]["sm_arch"] == sorted(d.values("sm_arch"))


@pytest.mark.parametrize(
    ("wrong", "code"),
    [
        (f"{NS} :: sm_arch :: 86_real", "VAR001"),  # built for 75, 80, 90 only
        (f"{NS} :: cuda_version_lower_bound :: 12.8", "VAR002"),  # links libcudart.so.13
        (f"{NS} :: cuda_version_upper_bound :: 13.0", "VAR002"),
        (f"{NS} :: sm_arch :: 75", "VAR003"),
        (f"{NS} :: sm_arch :: 130_real", "VAR003"),
        (f"{NS} :: driver :: 580", "VAR003"),
    ],
)
def test_a_wrong_declared_property_fails(tmp_path: Path, wrong: str, code: str,
                                         capsys: pytest.CaptureFixture[str]) -> None:  # fmt: skip
    w = _wheel(tmp_path, {"a.so": "size_base.so"})
    d = derive(inspect([w]).sources[0])
    text = variant_json(d, "cu130", (*d.properties, wrong))
    bad = make_variant_wheel(w, str(tmp_path), "cu130", text)
    declared = read_declared(bad)
    assert declared is not None and declared.label == "cu130" and wrong in declared.properties
    assert [f.code for f in verify(derive(inspect([bad]).sources[0]), declared)] == [code]
    assert cuwheel.cli.main(["variant", bad]) == 1
    assert f"error: {code} {wrong}" in capsys.readouterr().out
    good = make_variant_wheel(w, str(tmp_path), "cu130ok", variant_json(d, "cu130ok"))
    assert cuwheel.cli.main(["variant", good]) == 0
    assert "PASS" in capsys.readouterr().out


def test_unreadable_variant_metadata(tmp_path: Path) -> None:
    w = _wheel(tmp_path, {"a.so": "size_base.so"})
    d = derive(inspect([w]).sources[0])
    other = make_variant_wheel(w, str(tmp_path), "cu130", variant_json(d, "other"))
    declared = read_declared(other)
    assert declared is not None
    assert [f.code for f in verify(d, declared)] == ["VAR004"]
    renamed = tmp_path / "pkg-1.0-cp312-cp312-manylinux_2_28_x86_64-x1.whl"
    renamed.write_bytes(Path(w).read_bytes())  # a label, no variant.json
    declared = read_declared(str(renamed))
    assert declared is not None and [f.code for f in verify(d, declared)] == ["VAR004"]
    assert read_declared(w) is None  # not a variant wheel


def test_a_build_tag_is_not_a_label(tmp_path: Path) -> None:
    w = Path(_wheel(tmp_path, {"a.so": "size_base.so"}))
    built = tmp_path / "pkg-1.0-1-cp312-cp312-manylinux_2_28_x86_64.whl"  # build tag "1"
    built.write_bytes(w.read_bytes())
    assert read_declared(str(built)) is None
    long = tmp_path / "pkg-1.0-cp312-cp312-manylinux_2_28_x86_64-abcdefghijklmnopq.whl"
    long.write_bytes(w.read_bytes())  # 17 characters: PEP 825 (02bcf971) allows 16
    declared = read_declared(str(long))
    assert declared is not None and any("does not match" in p for p in declared.problems)

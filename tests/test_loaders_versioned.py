"""Loaders per package release (data/loaders.toml, knowledge/loaders.py): bitsandbytes
loads the nearest variant of the same CUDA major from 0.50.0 (cextension.py
get_cuda_bnb_library_path, tag 0.50.0 and 0.50.2); 0.49.0 builds the exact
``libbitsandbytes_cuda{X}{Y}`` name from torch.version.cuda and loads that or nothing
(tag 0.49.0).  Checked through the roll-up (compat) and the selection itself."""

from __future__ import annotations

from pathlib import Path

import pytest

import checkwheels as cw
import cuwheel
from cuwheel import compat
from cuwheel.compat import WheelState
from cuwheel.knowledge.loaders import select_variant, variants_for
from cuwheel.model.arch import Arch
from wheelfactory import make_wheel


def test_the_rule_follows_the_release() -> None:
    assert variants_for("bitsandbytes", "0.49.0").rule == "exact"
    assert variants_for("bitsandbytes", "0.50.0").rule == "nearest"
    assert variants_for("bitsandbytes", "0.50.2").rule == "nearest"
    assert variants_for("bitsandbytes", "1.0.0.dev1").rule == "nearest"
    assert variants_for("somepkg", "1.0") is None
    have = [(12, 8), (13, 0)]
    assert select_variant(have, (12, 9), "nearest") == (12, 8)
    assert select_variant(have, (12, 9), "exact") is None
    assert select_variant(have, (13, 0), "exact") == (13, 0)


@pytest.mark.parametrize(("version", "state"), [("0.49.0", WheelState.DOES_NOT_RUN),
                                                ("0.50.2", WheelState.RUNS)])
def test_a_process_on_cuda_12_9_with_only_a_12_8_variant(tmp_path: Path, version: str,
                                                         state: WheelState) -> None:
    members = {"bitsandbytes/libbitsandbytes_cuda128.so": cw.fixture("sm80.so"),
               "bitsandbytes/libbitsandbytes_cuda130.so": cw.fixture("sm80.so"),
               "bitsandbytes/__init__.py": b""}
    whl = make_wheel(tmp_path, members, name="bitsandbytes", version=version,
                     tag="py3-none-manylinux_2_24_x86_64")
    target = compat.Target(Arch.parse("8.0"), "8.0", None)
    report = compat.evaluate(cuwheel.inspect([str(whl)]), target, cuda=(12, 9))
    assert report.sources[0].state is state

"""data/thresholds.toml: the measured thresholds are read from data (the rules' constants
are the file's values) and a broken file says every problem."""

from __future__ import annotations

import copy

import pytest

from cuwheel.errors import CatalogError
from cuwheel.knowledge._load import read_data_file
from cuwheel.knowledge.thresholds import build_thresholds, load_thresholds
from cuwheel.rules import evidence


def test_the_rules_read_the_data() -> None:
    t = load_thresholds()
    # docs/compat.md states these values and the measurements behind them
    assert (t.dispatch_arch_sets, t.floor_share, t.stub_max_cubin) == (8, 0.1, 4096)
    assert t.dispatch_arch_sets == evidence.DISPATCH_ARCH_SETS
    assert t.floor_share == evidence.FLOOR_SHARE


def test_a_broken_file_says_every_problem() -> None:
    data = copy.deepcopy(read_data_file("thresholds.toml"))
    data["dispatch_arch_sets"]["value"] = 1
    data["floor_share"]["value"] = 1.5
    data["stub_max_cubin"]["measured"] = " "
    del data["meta"]["sources"]
    with pytest.raises(CatalogError) as info:
        build_thresholds(data)
    text = str(info.value)
    for needle in ("[dispatch_arch_sets]: value must be in [2, 1000]",
                   "[floor_share]: value must be in [0.0, 1.0]",
                   "[stub_max_cubin]: 'measured' must say", "[meta]"):  # fmt: skip
        assert needle in text, needle

"""The one train spelling (model/train.py) and its three callers: plan rows (ConfigError),
the toolkit (ToolkitError) and the torch arch table (None)."""

from __future__ import annotations

import pytest

from cuwheel.errors import ConfigError, ToolkitError, TrainSpellingError
from cuwheel.knowledge.torch import torch_arch_list
from cuwheel.model.train import TrainName, parse_train_name
from cuwheel.plan.rows import parse_train as plan_train
from cuwheel.toolkit import parse_train as toolkit_train


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("cu130", TrainName(13, 0)),
        ("CU126", TrainName(12, 6)),
        (" cu118\n", TrainName(11, 8)),
        ("cu100", TrainName(10, 0)),  # two-digit major, the oldest the catalog knows
        ("cu99999", TrainName(9999, 9)),  # five digits: the longest cuXYZ
        ("13.0", TrainName(13, 0)),
        ("13.0.2", TrainName(13, 0, "13.0.2")),
        ("13.2.999999", TrainName(13, 2, "13.2.999999")),  # six-digit patch
        ("013.0", TrainName(13, 0)),  # leading zeros read as the number
    ],
)
def test_accepted_spellings(text: str, expected: TrainName) -> None:
    assert parse_train_name(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "cu13",  # a mistake for cu130, not CUDA 1.3
        "cu1",
        "cu",
        "cu1000000",  # seven digits
        "13",
        "1.3",  # one-digit major
        "13.10",  # two-digit minor (cu1310 would be ambiguous)
        "13.0.1234567",  # seven-digit patch
        "13.0.2.1",  # four parts
        "13.0.",
        "cu13.0",
        "rocm6.2",
        "cpu",  # the CPU train is the plan's word, not a CUDA train
        "cu\u0661\u0663\u0660",  # Arabic-Indic digits
        "\uff11\uff13.\uff10",  # full-width digits
        "cu" + "1" * 5000,
        "",
    ],
)
def test_rejected_spellings(text: str) -> None:
    with pytest.raises(TrainSpellingError, match="not a CUDA train"):
        parse_train_name(text)


def test_the_message_is_one_bounded_line() -> None:
    with pytest.raises(TrainSpellingError) as info:
        parse_train_name("cu\x1b[31m" + "9" * 5000)
    text = str(info.value)
    assert len(text) < 200 and "\x1b" not in text and "\n" not in text


def test_name_and_dotted() -> None:
    t = parse_train_name("12.8.1")
    assert (t.name, t.dotted, t.version, t.release) == ("cu128", "12.8", (12, 8), "12.8.1")


def test_each_caller_keeps_its_error_type() -> None:
    with pytest.raises(ConfigError, match="cu130, not cu13"):
        plan_train("cu13")
    with pytest.raises(ToolkitError, match="not a CUDA train"):
        toolkit_train("cu13")
    assert plan_train("cpu").is_cpu
    assert toolkit_train("13.0.2") == ("cu130", "13.0.2")
    assert toolkit_train("cu130") == ("cu130", None)


def test_torch_reads_only_the_cu_spelling_of_a_local_label() -> None:
    # PyTorch 2.7's cu126 build is in data/torch_archs.toml; a label of another spelling
    # is no train, so the version alone names nothing
    assert torch_arch_list("2.7.1+cu126") is not None
    assert torch_arch_list("2.7.1+CU126") is None
    assert torch_arch_list("2.7.1+12.6") is None

"""Which row judges a wheel: one decision for the API and the CLI (checks/rowpick.py,
docs/checks.md#which-row-judges-a-wheel).

A table of (configuration, wheel file name, flags) -> the row chosen, or exit 2 with the
words the refusal must say, written by hand from the rule; each case runs through
``check_wheel(path, load_config(file))`` and through ``cuwheel check --config file``, and
both must give the same row (or the same one-line error).
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pytest

import checkwheels as cw
from cuwheel.checks import check_wheel
from cuwheel.cli import main
from cuwheel.config import load_config
from cuwheel.errors import ConfigError

EXECUTORCH = cw.EXECUTORCH_TOML

# Two CUDA 13 rows on one platform: a wheel that names only the major is ambiguous.
SPLIT = """\
[[rows]]
name = "x86-13.0"
platform = "linux-x86_64"
cuda = "13.0"
sass = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]

[[rows]]
name = "x86-13.2"
platform = "linux-x86_64"
cuda = "13.2"
sass = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
"""

# CUDA 12.6 and 12.8 rows: a library that only links libcudart.so.12 needs a record to pick.
TWELVE = """\
[[rows]]
name = "x86-12.6"
platform = "linux-x86_64"
cuda = "12.6"
sass = ["sm_80", "sm_90"]

[[rows]]
name = "x86-12.8"
platform = "linux-x86_64"
cuda = "12.8"
sass = ["sm_80", "sm_90"]
"""

CONFIGS = {"executorch": EXECUTORCH, "split": SPLIT, "twelve": TWELVE, "none": None}


def _spec(kind: str, version: str) -> cw.Spec:
    specs = {
        "x86": cw.linux_x86_cu13(),
        "arm": cw.linux_aarch64_cu13(),
        "orin": cw.linux_aarch64_cu126(),
        "win": cw.win_amd64_cu13(),
        "cpu": cw.cpu(),
        # a host library linking libcudart.so.13, no device code: only the major is named
        "rt13": replace(cw.linux_x86_cu13(), members={
            "pkg/__init__.py": b"", "pkg/_C.so": cw.fixture("hostcudart.so")}),
        # a torch extension linking libcudart.so.12; with xformers' build record
        # (xformers/cpp_lib.json, as xformers 0.0.35 publishes it: torch 2.10.0+cu128)
        "ext12": cw.Spec({"xformers/_C.so": cw.fixture("deps_torchext_cu12.so")}, "1.0",
                         "py39-none-manylinux_2_28_x86_64", name="xformers"),
        "ext12rec": cw.Spec({"xformers/_C.so": cw.fixture("deps_torchext_cu12.so"),
                             "xformers/cpp_lib.json": json.dumps(
                                 {"version": {"cuda": 1208, "torch": "2.10.0+cu128"}}).encode()},
                            "1.0", "py39-none-manylinux_2_28_x86_64", name="xformers"),
    }
    return replace(specs[kind], version=version)


# (config, wheel kind, version, flags) -> row, or "!" + words the exit-2 line must hold
CASES: list[tuple[str, str, str, tuple[str, ...], str]] = [
    # PyPI names (no local version): the wheel's own evidence and its platform tag
    ("executorch", "x86", "1.0", (), "linux-x86_64-cu13"),
    ("executorch", "arm", "1.0", (), "linux-aarch64-cu13"),
    ("executorch", "orin", "1.0", (), "jetson-cu126"),  # cubins of 12.6 on aarch64
    ("executorch", "cpu", "1.0", (), "cpu"),
    # cubins of CUDA 13.0 on Windows: the row covers 13.2 and 13.4 only
    ("executorch", "win", "1.0", (), "!cu130 on win-amd64|win-amd64-cu13|--row"),
    # a local version, --train and --row
    ("executorch", "x86", "1.0+cu130", (), "linux-x86_64-cu13"),
    ("executorch", "x86", "1.0", ("--train", "cu130"), "linux-x86_64-cu13"),
    ("executorch", "win", "1.0", ("--train", "cu132"), "win-amd64-cu13"),
    ("executorch", "win", "1.0+cu134", (), "win-amd64-cu13"),
    ("executorch", "win", "1.0", ("--row", "win-amd64-cu13"), "win-amd64-cu13"),
    ("executorch", "orin", "1.0+cu126", (), "jetson-cu126"),
    ("executorch", "x86", "1.0", ("--audit",), "audit"),
    # a train no row covers: --train and +cuXYZ say the same, naming the file in use
    ("executorch", "x86", "1.0+cu128", (), "!cu128 on linux-x86_64|linux-x86_64-cu13|--row"
                                            "|cuwheel.toml"),
    ("executorch", "x86", "1.0", ("--train", "cu128"), "!cu128 on linux-x86_64"
                                                      "|linux-x86_64-cu13|--row|cuwheel.toml"),
    # only the major named (a linked libcudart.so.13): one row of CUDA 13 -> it, two -> exit 2
    ("executorch", "rt13", "1.0", (), "linux-x86_64-cu13"),
    ("split", "rt13", "1.0", (), "!CUDA 13 on linux-x86_64|x86-13.0|x86-13.2|--row"),
    ("split", "x86", "1.0", (), "x86-13.0"),  # the cubins name 13.0
    ("split", "rt13", "1.0", ("--train", "cu132"), "x86-13.2"),
    # the build the wheel records names the release the soname does not
    ("twelve", "ext12", "1.0", (), "!CUDA 12 on linux-x86_64|x86-12.6|x86-12.8|--row"),
    ("twelve", "ext12rec", "1.0", (), "x86-12.8"),
    # the built-in matrix (no configuration): anyone's wheel is audited, unless a row is named
    ("none", "x86", "1.0", (), "audit"),
    ("none", "x86", "1.0+cu130", (), "audit"),
    ("none", "x86", "1.0", ("--row", "linux-x86_64-cu13"), "linux-x86_64-cu13"),
]


def _options(flags: tuple[str, ...]) -> dict[str, object]:
    out: dict[str, object] = {}
    it = iter(flags)
    for flag in it:
        if flag == "--audit":
            out["audit"] = True
        else:
            out[flag[2:]] = next(it)
    return out


@pytest.mark.parametrize(("config", "kind", "version", "flags", "expected"), CASES,
                         ids=[f"{c[0]}-{c[1]}-{c[2]}-{'_'.join(c[3]) or 'noflag'}"
                              for c in CASES])
def test_the_row_chosen_is_the_same_through_the_api_and_the_cli(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str],
    config: str, kind: str, version: str, flags: tuple[str, ...], expected: str,
) -> None:
    for var in ("CUWHEEL_ROW", "CUWHEEL_TRAIN", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)
    project = tmp_path / "project"
    project.mkdir()
    monkeypatch.chdir(project)
    text = CONFIGS[config]
    argv_config: list[str] = []
    if text is not None:
        (project / "cuwheel.toml").write_text(text, encoding="utf-8")
        argv_config = ["--config", str(project / "cuwheel.toml")]
    cfg = load_config(argv_config[1] if argv_config else None)
    assert (cfg.path is None) == (text is None)
    wheel = _spec(kind, version).build(tmp_path)

    api_row: str | None = None
    api_error: str | None = None
    try:
        api_row = check_wheel(wheel, cfg, cfg.check, environ={}, **_options(flags)).row
    except ConfigError as exc:
        api_error = str(exc)

    code = main(["check", wheel, *argv_config, *flags, "-f", "json"])
    data = json.loads(capsys.readouterr().out)
    if expected.startswith("!"):
        assert api_error is not None, api_row
        assert code == 2 and not data["passed"] and data["wheels"] == []
        (entry,) = data["unreadable"]
        assert entry["input"] == wheel and entry["error"] == api_error
        for words in expected[1:].split("|"):
            assert words in api_error, (words, api_error)
        assert "\n" not in api_error
    else:
        assert api_error is None, api_error
        assert api_row == expected
        (report,) = data["wheels"]
        assert report["row"] == expected and code in (0, 1)
        assert data["unreadable"] == []
        assert report["row_from"], report


def test_the_row_is_named_in_the_first_lines(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    (tmp_path / "cuwheel.toml").write_text(EXECUTORCH, encoding="utf-8")
    wheel = _spec("x86", "1.0").build(tmp_path)
    main(["check", wheel, "--config", str(tmp_path / "cuwheel.toml"), "--color", "never"])
    lines = capsys.readouterr().out.splitlines()
    assert lines[2].startswith("  row linux-x86_64-cu13: train cu130 on linux-x86_64")
    assert lines[3].startswith("  row chosen by what its libraries say (cubins built by "
                               "CUDA 13.0")
    assert "manylinux_2_28_x86_64" in lines[3]


def test_contradictory_flags_are_refused_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    wheel = _spec("x86", "1.0+cu130").build(tmp_path)
    for flags, words in (
        (("--strict", "--fail-on", "error"), "--strict is --fail-on warning"),
        (("--audit", "--row", "linux-x86_64-cu13"), "--audit judges the wheel without a row"),
        (("--archs", "8.0", "--gpus", "A100"), "--archs and --gpus"),
        (("-q", "-o", "-"), "-q prints nothing on stdout"),
        (("--cpu-baseline", "x86-64-v3"), "--cpu-baseline claims the CPU of an --artifact"),
    ):
        assert main(["check", wheel, *flags]) == 2
        captured = capsys.readouterr()
        assert captured.out == ""
        (line,) = captured.err.splitlines()
        assert words in line


def test_output_dash_is_stdout_and_exit_zero(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "cuwheel.toml").write_text(EXECUTORCH, encoding="utf-8")
    broken = cw.broken_seeds()["linux-x86_64-cu13"]
    wheel = replace(broken, version="1.0").build(tmp_path)
    assert main(["check", wheel, "-f", "json", "-o", "-"]) == 1
    assert json.loads(capsys.readouterr().out)["passed"] is False
    assert not (tmp_path / "-").exists()
    # --exit-zero: the findings still say FAIL, the exit status is 0; exit 2 still wins
    assert main(["check", wheel, "--exit-zero", "-f", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["passed"] is False
    assert main(["check", wheel, str(tmp_path / "missing.whl"), "--exit-zero"]) == 2

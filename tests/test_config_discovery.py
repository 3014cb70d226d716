"""Config discovery: the nearest cuwheel.toml, or pyproject.toml with [tool.cuwheel], upwards."""

from __future__ import annotations

import json
from importlib import resources
from pathlib import Path

import jsonschema
import pytest

import _absent
import checkwheels as cw
from cuwheel.cli import main_inner
from cuwheel.config import find_config, load_config
from cuwheel.errors import ConfigError

IGNORE_DEP002 = '[tool.cuwheel.check]\nignore = ["DEP002"]\n'


def _tree(tmp_path: Path) -> Path:
    """proj/pyproject.toml with the table; proj/sub/pyproject.toml without; proj/sub/a/b."""
    proj = tmp_path / "proj"
    deep = proj / "sub" / "a" / "b"
    deep.mkdir(parents=True)
    (proj / "pyproject.toml").write_text(IGNORE_DEP002, encoding="utf-8")
    (proj / "sub" / "pyproject.toml").write_text('[project]\nname = "x"\n', encoding="utf-8")
    return deep


def test_found_from_a_subdirectory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    deep = _tree(tmp_path)
    monkeypatch.chdir(deep)
    # the nearer pyproject.toml has no [tool.cuwheel] table, so it is passed over
    want = (tmp_path / "proj" / "pyproject.toml").resolve()
    assert find_config() == want
    config = load_config()
    assert config.source == str(want)
    assert config.check.ignore == ("DEP002",)


def test_cuwheel_toml_wins_in_its_directory(tmp_path: Path) -> None:
    deep = _tree(tmp_path)
    own = tmp_path / "proj" / "sub" / "cuwheel.toml"
    own.write_text('[check]\nignore = ["RP"]\n', encoding="utf-8")
    assert find_config(deep) == own.resolve()
    assert load_config(find_config(deep)).check.ignore == ("RP",)
    # and in the same directory as a pyproject.toml with the table
    (tmp_path / "proj" / "cuwheel.toml").write_text("", encoding="utf-8")
    assert find_config(tmp_path / "proj") == (tmp_path / "proj" / "cuwheel.toml").resolve()


def test_broken_pyproject_is_reported_not_skipped(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    deep = _tree(tmp_path)
    (tmp_path / "proj" / "sub" / "pyproject.toml").write_text("[tool.cuwheel\n", encoding="utf-8")
    monkeypatch.chdir(deep)
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config()


def test_nothing_found_means_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    if find_config(tmp_path) is not None:
        _absent.skip("configuration")
    monkeypatch.chdir(tmp_path)
    assert load_config().source == "built-in defaults"


def test_check_names_the_config_it_used(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    deep = _tree(tmp_path)
    wheel = cw.linux_x86_cu13().build(tmp_path)
    monkeypatch.chdir(deep)
    want = str((tmp_path / "proj" / "pyproject.toml").resolve())
    assert main_inner(["check", wheel]) == 0
    assert f"config: {want}" in capsys.readouterr().out
    assert main_inner(["check", wheel, "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    schema = json.loads(
        resources.files("cuwheel").joinpath("data/check.schema.json").read_text("utf-8"))
    jsonschema.validate(data, schema)
    assert [w["config"] for w in data["wheels"]] == [want]
    # without a configuration the JSON says so (null) and the text adds no line
    bare = tmp_path / "bare"
    bare.mkdir()
    if find_config(bare) is None:
        monkeypatch.chdir(bare)
        assert main_inner(["check", wheel, "--format", "json"]) == 0
        assert [w["config"] for w in json.loads(capsys.readouterr().out)["wheels"]] == [None]

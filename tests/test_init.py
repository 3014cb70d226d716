"""cuwheel init: the template, --pyproject, -o / --force, --train / --platform, --from."""

from __future__ import annotations

import json
import sys
from importlib import resources
from pathlib import Path
from typing import Any

import jsonschema
import pytest

import checkwheels as cw
from cuwheel import __version__
from cuwheel.checks.runner import check_wheel
from cuwheel.cli import main
from cuwheel.config import load_config
from cuwheel.config_init import append_table, derive_rows, init_text, toml_str
from cuwheel.errors import ConfigError
from cuwheel.model.arch import Arch
from wheelfactory import make_wheel

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

FIXTURES = Path(__file__).parent / "data" / "fixtures.toml"


def _fixture_archs(name: str, key: str) -> set[str]:
    """What tests/data/fixtures.toml says a fixture carries (written from its build)."""
    data = tomllib.loads(FIXTURES.read_text(encoding="utf-8"))
    return set(data["fixture"][name][key])


def _schema_errors(table: dict[str, Any]) -> list[str]:
    schema = json.loads(
        resources.files("cuwheel").joinpath("data/config.schema.json").read_text("utf-8"))
    return [e.message for e in jsonschema.Draft202012Validator(schema).iter_errors(table)]


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    work = tmp_path / "proj"
    work.mkdir()
    monkeypatch.chdir(work)
    return work


# ----------------------------------------------------------------------------- template


def test_init_writes_a_config_plan_uses_from_below(
    cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["init"]) == 0
    path = cwd / "cuwheel.toml"
    text = path.read_text(encoding="utf-8")
    first, second = text.splitlines()[:2]
    assert first.startswith("# Written by `cuwheel init`")
    assert second.startswith("#:schema ")
    # No path into this venv: the schema of this version at the project's address, whose
    # repository path is the file this package ships.
    url = second.split(" ", 1)[1]
    assert url.startswith("https://raw.githubusercontent.com/cuwheel/cuwheel/v")
    shipped = resources.files("cuwheel").joinpath("data/config.schema.json")
    assert url.endswith("/src/cuwheel/data/config.schema.json") and shipped.is_file()
    assert f"/v{__version__}/" in url  # the tag of the release that wrote it
    data = tomllib.loads(text)
    assert _schema_errors(data) == []
    platforms = {r.get("platform") for r in data["rows"]}
    assert platforms == {"linux-x86_64", "linux-aarch64", "win-amd64", None}
    # the trains of the built-in rows (docs/config.md, "Starting a configuration"), written
    # out by hand: a change to the built-in trains must change this line too
    assert data["trains"] == ["cpu", "cu126", "cu130", "cu132", "cu134"]
    config = load_config(path)
    # every train has a row on every platform (the CPU train: the CPU row)
    for train in config.trains:
        plats = {r.platform for r in config.rows if r.covers(train)}
        assert plats == ({None} if train.is_cpu else {"linux-x86_64", "linux-aarch64",
                                                      "win-amd64"}), train
    # found from a subdirectory: cu126 on x86_64 has a row here, not in the built-in rows
    deep = cwd / "src" / "pkg"
    deep.mkdir(parents=True)
    capsys.readouterr()
    import os

    os.chdir(deep)
    assert main(["plan", "--train", "cu126", "--platform", "linux-x86_64", "-f", "json"]) == 0
    plan = json.loads(capsys.readouterr().out)
    assert plan["row_definition"]["platform"] == "linux-x86_64"
    assert plan["row_definition"]["cuda"] == ["12.6"]
    assert plan["config"] == str(cwd / "cuwheel.toml")
    assert main(["plan", "--train", "cu126", "--platform", "linux-x86_64", "--config",
                 os.devnull]) == 2  # (the built-in rows have no such row: the file is used)


def test_existing_file_is_kept_without_force(
    cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (cwd / "cuwheel.toml").write_text("# mine\n", encoding="utf-8")
    assert main(["init"]) == 2
    err = capsys.readouterr().err
    assert "exists" in err and "--force" in err and len(err.strip().splitlines()) == 1
    assert (cwd / "cuwheel.toml").read_text(encoding="utf-8") == "# mine\n"
    assert main(["init", "--force"]) == 0
    assert "rows" in tomllib.loads((cwd / "cuwheel.toml").read_text(encoding="utf-8"))


def test_output_elsewhere_and_stdout(cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "-o", "other.toml"]) == 0
    assert (cwd / "other.toml").is_file() and not (cwd / "cuwheel.toml").exists()
    capsys.readouterr()
    assert main(["init", "-o", "-", "--schema", "none"]) == 0
    out = capsys.readouterr().out
    assert not (cwd / "cuwheel.toml").exists()
    assert "#:schema" not in out
    assert tomllib.loads(out)["rows"]
    assert main(["init", "-o", "no/such/dir/c.toml"]) == 2


def test_train_and_platform_restrict_the_template(cwd: Path) -> None:
    assert main(["init", "--train", "cu130", "--platform", "linux-x86_64"]) == 0
    config = load_config(cwd / "cuwheel.toml")
    assert [t.name for t in config.trains] == ["cu130"]
    assert {r.platform for r in config.rows} == {"linux-x86_64"}
    assert not any(r.is_cpu for r in config.rows)
    # a train without a built-in row on the platform gets one its nvcc can build
    text = init_text(trains=["cu118"], platforms=["linux-x86_64"])
    (row,) = load_config_text(cwd, text).rows
    assert row.cuda == ("11.8",) and Arch(120) not in row.sass and Arch(80) in row.sass
    assert main(["init", "-o", "-", "--train", "cu13"]) == 2
    assert main(["init", "-o", "-", "--platform", "solaris"]) == 2


def load_config_text(where: Path, text: str) -> Any:
    path = where / "probe.toml"
    path.write_text(text, encoding="utf-8")
    return load_config(path)


# ----------------------------------------------------------------------------- --pyproject


PYPROJECT = '[project]\nname = "x"  # keep me\nversion = "1"\n\n[tool.ruff]\nline-length = 99'


def test_pyproject_append_keeps_the_users_text(cwd: Path) -> None:
    path = cwd / "pyproject.toml"
    path.write_text(PYPROJECT, encoding="utf-8")  # no final newline
    assert main(["init", "--pyproject"]) == 0
    text = path.read_text(encoding="utf-8")
    assert text.startswith(PYPROJECT)
    data = tomllib.loads(text)
    assert data["tool"]["ruff"] == {"line-length": 99}
    assert "#:schema" not in text  # it would apply to the whole pyproject.toml
    assert _schema_errors(data["tool"]["cuwheel"]) == []
    assert load_config(path).source == str(path)
    assert not (cwd / "cuwheel.toml").exists()
    # the table is there now: refused, even with --force, and the file is left alone
    assert main(["init", "--pyproject"]) == 2
    assert main(["init", "--pyproject", "--force"]) == 2
    assert path.read_text(encoding="utf-8") == text


def test_pyproject_missing_or_broken(cwd: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["init", "--pyproject"]) == 2
    assert "no such file" in capsys.readouterr().err
    (cwd / "pyproject.toml").write_text("[project\n", encoding="utf-8")
    assert main(["init", "--pyproject"]) == 2
    assert (cwd / "pyproject.toml").read_text(encoding="utf-8") == "[project\n"


def test_append_table_sees_dotted_and_inline_tables() -> None:
    table = init_text(pyproject=True, trains=["cpu"])
    for existing in ('[tool.cuwheel.check]\nignore = ["RP"]\n',
                     'tool.cuwheel.trains = ["cpu"]\n',
                     '[tool]\ncuwheel = { trains = ["cpu"] }\n'):
        with pytest.raises(ConfigError, match="already has"):
            append_table(existing, table)


def test_toml_strings_survive_hostile_text() -> None:
    for text in ['a"b', "back\\slash", "line\nbreak\x7f", "tab\there", "\u202e", "ü"]:
        assert tomllib.loads(f"k = {toml_str(text)}\n")["k"] == text
    undecodable = "bad\udc80byte"
    assert tomllib.loads(f"k = {toml_str(undecodable)}\n")["k"] == "bad\ufffdbyte"


# ----------------------------------------------------------------------------- --from


def _no_dc_errors(path: str, config: Path, **selection: str) -> list[str]:
    cfg = load_config(config)
    report = check_wheel(path, cfg.rows, cfg.check, **selection)  # type: ignore[arg-type]
    return [f"{f.code} {f.message}" for f in report.findings
            if f.code.startswith("DC") and f.severity.name == "ERROR"]


def test_from_a_wheel_round_trips(cwd: Path, tmp_path: Path) -> None:
    wheel = cw.linux_x86_cu13().build(tmp_path)
    assert main(["init", "--from", wheel]) == 0
    path = cwd / "cuwheel.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    assert _schema_errors(data) == []
    (row,) = data["rows"]
    assert row["platform"] == "linux-x86_64" and row["cuda"] == "13.0"
    assert data["trains"] == ["cu130"]
    assert set(row["sass"]) == _fixture_archs("row_x86_cu13.so", "sass")
    want_ptx = _fixture_archs("row_x86_cu13.so", "ptx")
    assert row["ptx"] == "newest" and want_ptx == {"compute_120"}
    assert row["dependencies"] == "declare"
    assert _no_dc_errors(wheel, path) == []


def test_from_takes_the_archs_every_library_ships(cwd: Path, tmp_path: Path) -> None:
    """Two libraries with different SASS: the row claims what both carry (a union row
    would ask each library for GPUs it has no code for)."""
    members = {
        "pkg/__init__.py": b"",
        "pkg/lib/libpkg_cuda.so": cw.fixture("row_x86_cu13.so"),
        "pkg/lib/libother.so": cw.fixture("allmajor.so"),
    }
    wheel = make_wheel(tmp_path, members, name="pkg", version="1.0+cu130",
                       tag="cp311-cp311-manylinux_2_28_x86_64", requires=(cw.CU13_LINUX,))
    assert main(["init", "--from", wheel]) == 0
    path = cwd / "cuwheel.toml"
    (row,) = tomllib.loads(path.read_text(encoding="utf-8"))["rows"]
    a = _fixture_archs("row_x86_cu13.so", "sass")
    b = _fixture_archs("allmajor.so", "sass")
    assert set(row["sass"]) == a & b != a | b
    assert _no_dc_errors(wheel, path) == []
    # the union, written by hand, fails the same wheel
    union = path.read_text(encoding="utf-8").replace(
        "sass = " + json.dumps(row["sass"]),
        "sass = " + json.dumps(sorted(a | b, key=lambda s: int(s[3:]))))
    assert union != path.read_text(encoding="utf-8")
    path.write_text(union, encoding="utf-8")
    assert any(e.startswith("DC001") for e in _no_dc_errors(wheel, path))


def test_from_several_wheels_and_without_local_version(cwd: Path, tmp_path: Path) -> None:
    wheels = [cw.linux_x86_cu13().build(tmp_path), cw.linux_aarch64_cu126().build(tmp_path),
              cw.win_amd64_cu13().build(tmp_path), cw.cpu().build(tmp_path)]
    assert main(["init", *[a for w in wheels for a in ("--from", w)]]) == 0
    config = load_config(cwd / "cuwheel.toml")
    assert {(r.platform, r.cuda) for r in config.rows} == {
        ("linux-x86_64", ("13.0",)), ("linux-aarch64", ("12.6",)), ("win-amd64", ("13.2",)),
        (None, ())}
    for w in wheels:
        assert _no_dc_errors(w, cwd / "cuwheel.toml") == [], w
    # --platform keeps to one of them
    text = init_text(wheels=wheels, platforms=["linux-aarch64"])
    assert {r.platform for r in load_config_text(cwd, text).rows} == {"linux-aarch64", None}
    # no +cuXYZ: the train from what the library says, and the comment says how to check
    bare = cw.linux_x86_cu13()
    (tmp_path / "bare").mkdir()
    bare_wheel = make_wheel(tmp_path / "bare", bare.members, name="bare", version="1.0",
                            tag=bare.tag, requires=bare.requires)
    text = init_text(wheels=[bare_wheel])
    assert "local-version = false" in text and 'profile = "audit"' in text
    (row,) = load_config_text(cwd, text).rows
    assert _no_dc_errors(bare_wheel, cwd / "probe.toml", row=row.name) == []
    # the row is found by what the wheel's libraries say, and --strict passes it
    cfg = load_config(cwd / "probe.toml")
    report = check_wheel(bare_wheel, cfg, cfg.check, environ={})
    assert report.row == row.name and report.findings == (), report.findings


@pytest.mark.parametrize("make", ["missing", "text", "corrupt", "directory"])
def test_bad_from_is_exit_2(
    make: str, cwd: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    if make == "missing":
        arg = str(tmp_path / "nope-1.0-py3-none-any.whl")
    elif make == "text":
        arg = str(tmp_path / "notes.txt")
        Path(arg).write_text("x", encoding="utf-8")
    elif make == "corrupt":
        arg = str(tmp_path / "pkg-1.0+cu130-cp311-cp311-manylinux_2_28_x86_64.whl")
        Path(arg).write_bytes(b"PK\x03\x04 not really a zip")
    else:
        arg = str(tmp_path)
    assert main(["init", "--from", arg]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "Traceback" not in err
    assert not (cwd / "cuwheel.toml").exists()


def test_pyproject_line_ends_are_kept(cwd: Path) -> None:
    path = cwd / "pyproject.toml"
    path.write_bytes(PYPROJECT.replace("\n", "\r\n").encode() + b"\r\n")
    before = path.read_bytes()
    assert main(["init", "--pyproject"]) == 0
    after = path.read_bytes()
    assert after.startswith(before + b"\r\n")
    assert b"\n" not in after.replace(b"\r\n", b"")
    assert load_config(path).rows


def test_cuwheel_toml_would_shadow_the_pyproject_table(
    cwd: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (cwd / "pyproject.toml").write_text('[tool.cuwheel.check]\nignore = ["RP"]\n',
                                        encoding="utf-8")
    assert main(["init"]) == 2
    assert "[tool.cuwheel]" in capsys.readouterr().err
    assert not (cwd / "cuwheel.toml").exists()
    assert main(["init", "-o", "elsewhere.toml"]) == 0
    assert main(["init", "--force"]) == 0 and (cwd / "cuwheel.toml").is_file()


def test_schema_line_with_blanks(cwd: Path) -> None:
    spaced = cwd / "my schemas" / "c.json"
    text = init_text(trains=["cpu"], schema=str(spaced))
    assert text.splitlines()[1] == f"#:schema {spaced.as_uri()}"
    assert init_text(trains=["cpu"], schema="https://example.invalid/c.json").splitlines()[1] \
        == "#:schema https://example.invalid/c.json"
    with pytest.raises(ConfigError):
        init_text(trains=["cpu"], schema="rel path/c.json")


def test_from_keeps_the_arch_specific_suffix(cwd: Path, tmp_path: Path) -> None:
    """A wheel whose only library ships sm_90a (built for Hopper alone) gets a row saying
    sm_90a: a plain sm_90 row would ask for code that runs on later GPUs too."""
    members = {"pkg/__init__.py": b"", "pkg/libk.so": cw.fixture("sm90a.so")}
    wheel = make_wheel(tmp_path, members, name="pkg", version="1.0+cu130",
                       tag="cp311-cp311-manylinux_2_28_x86_64", requires=(cw.CU13_LINUX,))
    assert main(["init", "--from", wheel]) == 0
    (row,) = tomllib.loads((cwd / "cuwheel.toml").read_text(encoding="utf-8"))["rows"]
    assert row["sass"] == ["sm_90a"]  # sm90a.so: SASS sm_90a alone, no PTX


def test_template_rows_start_where_torch_does(cwd: Path) -> None:
    """PyTorch's cu130 wheels: x86_64 and Windows "7.5;8.0;8.6;9.0;10.0;12.0", aarch64
    (Arm servers) "8.0;9.0;10.0;11.0;12.0" (data/init_rows.toml cites the build scripts)."""
    text = init_text(trains=["cu130"])
    rows = {r["platform"]: r["sass"] for r in tomllib.loads(text)["rows"]}
    x86 = ["sm_75", "sm_80", "sm_86", "sm_90", "sm_100", "sm_120"]
    assert rows == {"linux-x86_64": x86, "win-amd64": x86,
                    "linux-aarch64": ["sm_80", "sm_90", "sm_100", "sm_110", "sm_120"]}
    assert "Jetson Orin" in text  # a note: its row (sm_87) is one a project adds itself


def test_from_reads_requirements_as_check_does(cwd: Path, tmp_path: Path) -> None:
    """nvidia-ml-py (NVML's Python bindings) installs no CUDA library: a wheel that
    requires only it declares no NVIDIA packages, as check reads it (DEP rules)."""
    members = {"pkg/__init__.py": b"", "pkg/lib/libpkg_cuda.so": cw.fixture("row_x86_cu13.so")}
    bindings = make_wheel(tmp_path, members, name="pkg", version="1.0+cu130",
                          tag="cp311-cp311-manylinux_2_28_x86_64",
                          requires=("nvidia-ml-py>=12",))
    (d,) = derive_rows([bindings])
    assert d.row.dependencies == "none"
    assert not any("NVIDIA requirements" in c for c in d.comments)
    (tmp_path / "b").mkdir()
    declared = make_wheel(tmp_path / "b", members, name="pkg", version="1.0+cu130",
                          tag="cp311-cp311-manylinux_2_28_x86_64",
                          requires=("nvidia-ml-py>=12", cw.CU13_LINUX))
    (d,) = derive_rows([declared])
    assert d.row.dependencies == "declare"
    assert any(c == f"NVIDIA requirements: {cw.CU13_LINUX.split(';')[0].strip()}"
               for c in d.comments)

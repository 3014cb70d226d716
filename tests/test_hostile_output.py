"""Output turned against its reader, and flags and configuration that used to crash: every
hostile input is built here, each test asserts the exit status, the one-line message and
that no traceback escapes (issue 10's output and parsing parts; issue 13's "Why" items)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import replace
from pathlib import Path

import pytest

import checkwheels as cw
import cuwheel
from cuwheel import compat
from cuwheel.cli import main
from cuwheel.config import parse_config
from cuwheel.plan import emit
from cuwheel.plan.rows import plan_for, select_row
from cuwheel.render.check import to_github, to_json, to_junit, to_text
from cuwheel.render.compat import matrix_svg, matrix_text, report_json, report_text
from cuwheel.render.escape import dumps, escape
from cuwheel.render.inspect_json import render_json
from cuwheel.render.inspect_text import render_text
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
BIG = "1" * 5000
# An OSC title sequence, a CSI colour, C1 NEL and CSI, a bidi override, an isolate, an
# undecodable byte (kept as a lone surrogate by surrogateescape), a newline.
HOSTILE = "x\x1b]0;pwned\x07\x1b[31m\x85\x9b\u202e\u2066\udcff\nLD_PRELOAD=/evil.so"
RAW = ("\x1b", "\x07", "\x85", "\x9b", "\u202e", "\u2066", "\udcff", "\n")


def _clean(text: str) -> None:
    """One printable line per line: none of the raw characters survive."""
    for ch in RAW[:-1]:
        assert ch not in text, repr(ch)
    assert "LD_PRELOAD" not in "".join(
        line for line in text.splitlines() if line.startswith("LD_PRELOAD")
    )


def _one_error(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert "Traceback" not in err
    assert len(lines) == 1, lines
    assert lines[0].startswith("cuwheel: error: ")
    return lines[0]


# ------------------------------------------------------------------ the one escape


def test_escape_shows_what_was_there() -> None:
    assert escape("a\nb\tc") == "a\\nb\\tc"
    assert escape("\x1b[31m") == "\\x1b[31m"
    assert escape("\x85\x9b") == "\\x85\\x9b"
    assert escape("\u202e\u2066\u200f") == "\\u202e\\u2066\\u200f"
    assert escape("\udcff") == "\\xff"  # an undecodable byte, visibly
    assert escape("libcudart.so.13 é 中") == "libcudart.so.13 é 中"  # printable stays


def test_json_holds_only_valid_unicode() -> None:
    text = dumps({"k\udc80": ["\udcff", "ok \U0001f600", "\x1b"]})
    text.encode("utf-8")  # strict: no lone surrogate
    doc = json.loads(text)
    assert doc == {"k\\x80": ["\\xff", "ok \U0001f600", "\x1b"]}


# ------------------------------------------------------------------ every writer


def _hostile_inventory() -> cuwheel.Inventory:
    inv = cuwheel.inspect(BIN / "two_tu.so")
    src = inv.sources[0]
    b = replace(src.binaries[0], path=f"{src.path}!{HOSTILE}.so", needed=(HOSTILE,),
                rpath=(HOSTILE,), runpath=(HOSTILE,), anomalies=(HOSTILE,))
    return replace(inv, sources=(replace(src, path=HOSTILE, kind="wheel", binaries=(b,)),))


def test_inspect_text_and_json_escape_hostile_names() -> None:
    inv = _hostile_inventory()
    text = render_text(inv, full=True)
    _clean(text)
    assert "\\x1b]0;pwned\\x07" in text and "\\u202e" in text and "\\xff" in text
    doc = render_json(inv, full=True)
    doc.encode("utf-8")
    assert "\\udcff" not in doc and "\\\\xff" in doc


def test_compat_text_json_and_svg_escape_hostile_names() -> None:
    inv = _hostile_inventory()
    target = compat.target_for_cc("8.0", None)
    reports = [compat.evaluate(inv, target)]
    _clean(report_text(reports, verbose=True))
    dumps(report_json(reports, containers=True)).encode("utf-8")
    m = compat.matrix(inv, [target])
    _clean(matrix_text(m))
    svg = matrix_svg(m, title=HOSTILE)
    ET.fromstring(svg)  # well-formed XML 1.0 (the parser rejects \x1b, \x07, surrogates)
    _clean(svg)


def test_check_writers_escape_hostile_names(tmp_path: Path) -> None:
    cfg = parse_config({}, "test")
    spec = cw.broken_seeds()["linux-aarch64-cu13"]
    report = cuwheel.checks.check_wheel(spec.build(tmp_path), cfg.rows, cfg.check, environ={})
    assert report.findings
    findings = tuple(replace(f, message=f"{f.message} {HOSTILE}", library=HOSTILE)
                     for f in report.findings)
    report = replace(report, wheel=HOSTILE, findings=findings, libraries=(HOSTILE,),
                     notes=(HOSTILE,))
    _clean(to_text([report]))
    root = ET.fromstring(to_junit([report]))  # XML 1.0-valid
    assert root.findall("./testsuite")
    gh = to_github([report])
    assert all(line.startswith("::") or line.startswith("\\x") or "PASS" in line
               or "FAIL" in line for line in gh.splitlines())
    _clean(gh)
    to_json([report]).encode("utf-8")


def test_env_format_cannot_inject_a_variable() -> None:
    rows = parse_config({}, "test").rows
    plan = plan_for(select_row(rows, cuwheel.plan.rows.parse_train("13.0"), "linux-x86_64"),
                    cuwheel.plan.rows.parse_train("13.0"), "linux-x86_64")
    evil = replace(plan, row=replace(plan.row, name="ok\nLD_PRELOAD=/evil.so"))
    lines, _ = emit.env_lines(evil, "2.14", "3.31")
    assert not any(line.startswith("LD_PRELOAD") for line in "\n".join(lines).splitlines())
    assert "CUWHEEL_ROW=ok\\nLD_PRELOAD=/evil.so" in lines


def test_row_name_with_a_newline_is_a_config_error(tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "cuwheel-rows.toml"
    cfg.write_text('trains = ["cu130"]\n[[rows]]\nname = "a\\nLD_PRELOAD=/x.so"\n'
                   'platform = "linux-x86_64"\ncuda = "13"\nsass = ["sm_80"]\n')
    assert main(["plan", "--config", str(cfg), "--train", "13.0"]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "name must be" in line and "a\\nLD_PRELOAD" in line


def test_strict_ascii_stdout_gets_no_unicode_error(tmp_path: Path) -> None:
    so = tmp_path / "é中.so"
    so.write_bytes((BIN / "sm80.so").read_bytes())
    env = {**os.environ, "PYTHONIOENCODING": "ascii:strict"}
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "inspect", str(so)],
                          capture_output=True, text=True, env=env, check=False)
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr
    assert "\\xe9" in proc.stdout  # what ASCII cannot show, shown escaped


# ------------------------------------------------------------------ numbers and names


@pytest.mark.parametrize(
    ("argv", "env", "needle"),
    [
        (["plan", "--train", "cu" + BIG], {}, "not a CUDA train"),
        (["plan", "--train", BIG + ".0"], {}, "not a CUDA train"),
        (["plan", "--train", "\uff11\uff13.\uff10"], {}, "not a CUDA train"),
        (["plan"], {"CUWHEEL_TRAIN": "cu" + BIG}, "$CUWHEEL_TRAIN"),
        (["plan"], {"CUWHEEL_TRAIN": "\uff11\uff13.\uff10"}, "$CUWHEEL_TRAIN"),
        (["plan", "-f", "cmake", "--train", "13.0", "--platform", "linux-x86_64",
          "--cmake-version", "3.x"], {}, "--cmake-version must be a version"),
        (["plan", "-f", "torch", "--train", "13.0", "--platform", "linux-x86_64",
          "--torch-version", "banana"], {}, "--torch-version must be a version"),
        (["plan", "-f", "torch", "--train", "13.0", "--platform", "linux-x86_64",
          "--torch-version", BIG], {}, "--torch-version must be a version"),
        (["compat", "x.so", "--cc", "8.0", "--driver", BIG], {}, "--driver takes"),
        (["compat", "x.so", "--cc", "8.0", "--driver", "5" + BIG + ".1"], {}, "--driver takes"),
        (["compat", "x.so", "--cc", "sm_\u0668\u0660"], {}, "not a GPU architecture"),
        (["compat", "x.so", "--cc", "\uff18.\uff10"], {}, "not a GPU architecture"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_hostile_flags_are_one_line_errors(argv, env, needle, monkeypatch, capsys) -> None:
    for var in ("CUWHEEL_TRAIN", "CUWHEEL_ROW", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    assert main(argv) == 2
    line = _one_error(capsys.readouterr().err)
    assert needle in line
    assert len(line) < 400  # a 5,000-digit number is named, not echoed


@pytest.mark.parametrize(
    ("toml", "needle"),
    [
        (f'trains = ["cu{BIG}"]\n', "not a CUDA train"),
        ('trains = ["\uff11\uff13.\uff10"]\n', "not a CUDA train"),
        (f'[[rows]]\nplatform = "linux-x86_64"\ncuda = "{BIG}"\n', "cuda must be"),
        ('[[rows]]\nplatform = "linux-x86_64"\ncuda = "\uff11\uff13"\n', "cuda must be"),
        ('[[rows]]\nplatform = "linux-x86_64"\ncuda = "13"\nsass = ["sm_\u0668\u0660"]\n',
         "not a GPU architecture"),
        ('torch-version = "banana"\n', "torch-version must be a version"),
        ("x = " + "[" * 100_000 + "]" * 100_000 + "\n", "nested too deeply"),
    ],
    ids=lambda v: str(v)[:30],
)
def test_hostile_config_is_a_one_line_error(toml, needle, tmp_path: Path, capsys) -> None:
    cfg = tmp_path / "rows.toml"
    cfg.write_text(toml, encoding="utf-8")
    assert main(["plan", "--config", str(cfg), "--train", "13.0",
                 "--platform", "linux-x86_64"]) == 2
    line = _one_error(capsys.readouterr().err)
    assert needle in line
    assert len(line) < 600


def test_unicode_digits_never_reach_cuwheel_row(tmp_path: Path, capsys) -> None:
    for text in ("\uff11\uff13.\uff10", "cu\uff11\uff13\uff10", "13.\u0660"):
        with pytest.raises(cuwheel.errors.ConfigError):
            cuwheel.plan.rows.parse_train(text)


def test_driver_branch_is_accepted(tmp_path: Path, capsys) -> None:
    assert compat.parse_driver("580") == compat.Driver("580")
    with pytest.raises(compat.CompatError, match=r"13\.0"):
        compat.parse_driver("13")


# ------------------------------------------------------------------ issue 13: "Why"


def _wheel(tmp_path: Path) -> str:
    members = {"pkg/__init__.py": b"", "pkg/a.so": (BIN / "sm80.so").read_bytes()}
    return make_wheel(tmp_path, members, name="pkg", version="1.0",
                      tag="py3-none-manylinux_2_28_x86_64")


@pytest.mark.parametrize("where", ["missing/dir/r.xml", "."])
def test_check_bad_output_path_is_one_line_exit_2(where, tmp_path: Path, capsys,
                                                   monkeypatch) -> None:
    monkeypatch.chdir(tmp_path)
    whl = _wheel(tmp_path)
    assert main(["check", whl, "-f", "junit", "-o", where]) == 2
    line = _one_error(capsys.readouterr().err)
    assert "-o" in line


def test_check_one_unusable_wheel_does_not_abort_the_run(tmp_path: Path, capsys) -> None:
    whl = _wheel(tmp_path)
    notwheel = tmp_path / "notes.txt"
    notwheel.write_text("hi")
    d = tmp_path / "adir"
    d.mkdir()
    code = main(["check", str(notwheel), whl, str(tmp_path / "missing.whl"), "--format", "json"])
    cap = capsys.readouterr()
    assert code == 2
    assert "Traceback" not in cap.err
    errors = cap.err.splitlines()
    assert len(errors) == 2 and all(e.startswith("cuwheel: error: ") for e in errors)
    assert "not a wheel" in errors[0] and "wrong number of parts" not in cap.err
    assert "no such file" in errors[1]
    assert len(json.loads(cap.out)["wheels"]) == 1  # the usable one is still reported


def test_check_a_directory_checks_its_wheels(tmp_path: Path, capsys) -> None:
    d = tmp_path / "dist"
    d.mkdir()
    _wheel(d)
    code = main(["check", str(d), "--json"])
    assert code in (0, 1)
    assert len(json.loads(capsys.readouterr().out)["wheels"]) == 1
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["check", str(empty)]) == 2
    assert "no wheel" in _one_error(capsys.readouterr().err)


def test_inspect_missing_file_error_once_empty_dir_exit_2(tmp_path: Path, capsys) -> None:
    assert main(["inspect", str(tmp_path / "nope.whl")]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""
    assert "nope.whl" in _one_error(cap.err)
    empty = tmp_path / "empty"
    empty.mkdir()
    assert main(["inspect", str(empty)]) == 2
    assert "empty directory" in _one_error(capsys.readouterr().err)
    assert main(["inspect", "--dist", "no-such-dist-cuwheel"]) == 2
    cap = capsys.readouterr()
    assert cap.out == ""  # no fake header


@pytest.mark.parametrize("workers", ["0", "-3", "x", "٣"])
def test_inspect_workers_must_be_positive(workers, capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["inspect", "--workers", workers, str(BIN / "sm80.so")])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1, err  # one line, no usage block
    assert err.startswith("cuwheel inspect: error: argument --workers") and "--help" in err


def test_bare_cuwheel_prints_help_and_dash_v(capsys) -> None:
    assert main([]) == 0
    out = capsys.readouterr().out
    assert "usage: cuwheel" in out and "examples:" in out
    with pytest.raises(SystemExit) as info:
        main(["-V"])
    assert info.value.code == 0
    assert capsys.readouterr().out.strip() == f"cuwheel {cuwheel.__version__}"


def test_bad_flag_is_one_line_with_the_nearest_spelling(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["check", "x.whl", "--zzqqx"])
    assert info.value.code == 2
    assert capsys.readouterr().err == (
        "cuwheel check: error: unrecognized option '--zzqqx' (see cuwheel check --help)\n")
    with pytest.raises(SystemExit):
        main(["check", "--formt", "json", "x.whl"])
    assert capsys.readouterr().err == (
        "cuwheel check: error: unrecognized option '--formt'; did you mean '--format'? "
        "(see cuwheel check --help)\n")
    with pytest.raises(SystemExit):
        main(["check", "x.whl", "--format", "jsn"])
    err = capsys.readouterr().err
    assert "did you mean 'json'?" in err and "choose from" not in err
    assert len(err.splitlines()) == 1


@pytest.mark.parametrize("prefix", ["--form", "--out", "--forma"])
def test_no_prefix_abbreviations(prefix: str, capsys) -> None:
    """A prefix is no option: adding an option later must not change what it means."""
    with pytest.raises(SystemExit) as info:
        main(["check", prefix, "json", "x.whl"])
    assert info.value.code == 2
    assert f"unrecognized option {prefix!r}" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["scan", "--summ", "x"])  # a subcommand with many long options
    assert "unrecognized option '--summ'" in capsys.readouterr().err


def test_a_mistyped_command_names_the_nearest(capsys) -> None:
    with pytest.raises(SystemExit) as info:
        main(["chekc", "x.whl"])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "did you mean 'check'?" in err and len(err.splitlines()) == 1


@pytest.mark.parametrize("plat", ["linux_x86_64", "manylinux_2_28_x86_64", "linux-x86-64"])
def test_platform_near_miss_is_suggested(plat, capsys, monkeypatch) -> None:
    monkeypatch.delenv("CUWHEEL_ROW", raising=False)
    assert main(["plan", "--train", "13.0", "--platform", plat]) == 2
    assert "did you mean 'linux-x86_64'" in _one_error(capsys.readouterr().err)


def test_missing_row_hint_pastes_as_valid_toml(tmp_path: Path, capsys) -> None:
    # A project's own rows: the built-in trains no longer apply.
    cfg = tmp_path / "pyproject.toml"
    cfg.write_text('[tool.cuwheel]\n[[tool.cuwheel.rows]]\nplatform = "linux-x86_64"\n'
                   'cuda = "13.0"\nsass = ["sm_80"]\n')
    assert main(["plan", "--config", str(cfg), "--train", "13.0", "--platform",
                 "linux-x86_64"]) == 0
    capsys.readouterr()
    assert main(["plan", "--config", str(cfg), "--train", "13.0", "--platform",
                 "win-amd64"]) == 2
    err = capsys.readouterr().err
    hint = "\n".join(line[4:] for line in err.splitlines()[1:])
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]
    with cfg.open("a") as f:
        f.write(hint + "\n")
    assert tomllib.loads(cfg.read_text())
    assert main(["plan", "--config", str(cfg), "--train", "13.0", "--platform",
                 "win-amd64"]) == 0

"""The conventions a daily user relies on (issue 34): shell completion sourced in a real
shell, ``help CMD``, CLICOLOR_FORCE, ``--isolated``."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

import cuwheel.cli
from cuwheel.cli._completion import SHELLS, script

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "CLICOLOR_FORCE", "CLICOLOR", "CUWHEEL_COLOR")}
    env["PYTHONPATH"] = SRC + os.pathsep + env.get("PYTHONPATH", "")
    return {**env, **extra}


def _bash_complete(line: str) -> list[str]:
    """What the generated bash completion offers for ``line`` (the cursor at its end), run
    by a real bash that sourced ``cuwheel completion bash`` as a user's ~/.bashrc would."""
    bash = shutil.which("bash")
    assert bash is not None  # CI's image has bash; a test that cannot run must not pass
    driver = (
        'eval "$("$PY" -m cuwheel completion bash)"\n'
        'read -r -a COMP_WORDS <<< "$LINE"\n'
        'if [[ "$LINE" == *" " ]]; then COMP_WORDS+=(""); fi\n'
        "COMP_CWORD=$(( ${#COMP_WORDS[@]} - 1 ))\n"
        "_cuwheel\n"
        'printf "%s\\n" "${COMPREPLY[@]}"\n'
        "complete -p cuwheel >&2\n"
    )
    out = subprocess.run([bash, "--norc", "--noprofile", "-c", driver], capture_output=True,
                         text=True, check=True, env=_env(PY=sys.executable, LINE=line))
    assert "-F _cuwheel cuwheel" in out.stderr  # registered for the command
    return [w for w in out.stdout.splitlines() if w]


def test_bash_completes_commands_options_and_values() -> None:
    assert set(_bash_complete("cuwheel ch")) == {"check"}
    commands = set(_bash_complete("cuwheel "))
    assert {"check", "inspect", "completion", "help", "gpus"} <= commands
    assert "--format" in _bash_complete("cuwheel check --fo")
    assert "--fail-on" in _bash_complete("cuwheel check --fa")
    assert set(_bash_complete("cuwheel check --format ")) == {
        "text", "json", "junit", "github", "sarif"}
    assert set(_bash_complete("cuwheel -q --color never check --fail-on ")) == {
        "error", "warning"}
    assert set(_bash_complete("cuwheel --color a")) == {"auto", "always"}
    assert _bash_complete("cuwheel explain DC00") == [f"DC00{i}" for i in range(1, 10)]
    assert set(_bash_complete("cuwheel completion ")) == set(SHELLS)
    assert _bash_complete("cuwheel check --config ") == []  # a file: readline's default
    assert "--dist" not in _bash_complete("cuwheel gpus --")  # gpus has no --dist


def test_every_option_of_every_command_is_offered() -> None:
    """The script is generated from the parser: nothing a command takes is missing."""
    text = script("bash")
    parser = cuwheel.cli.build_parser()
    for name in cuwheel.cli.SUBCOMMANDS:
        sub = cuwheel.cli._subparser(parser, name[1:])
        line = next(ln for ln in text.splitlines() if ln.strip().startswith(f"{name[1:]}) opts="))
        for option in sub._option_string_actions:
            assert f" {option} " in line.replace("'", " "), (name, option)


@pytest.mark.parametrize("shell", SHELLS)
def test_every_shell_script_parses(shell: str) -> None:
    """Each script is checked by its own shell where that shell is installed; bash (always
    present) checks the bash and zsh scripts' syntax (zsh's is bash's behind bashcompinit)."""
    text = script(shell)
    assert "cuwheel" in text and "check" in text and "--format" in text
    exe = {"bash": "bash", "zsh": "zsh", "fish": "fish", "powershell": "pwsh"}[shell]
    found = shutil.which(exe)
    if shell in ("bash", "zsh"):
        body = text if shell == "bash" else text.replace(
            "autoload -U +X bashcompinit && bashcompinit\n", "")
        bash = shutil.which("bash")
        assert bash is not None
        subprocess.run([bash, "-n", "-c", body], check=True)
    if shell == "fish" and found:
        subprocess.run([found, "--no-execute", "-c", text], check=True)
    if shell == "fish":  # every line is one `complete` command with a closed quote
        for line in text.splitlines()[1:]:
            unquoted = line.replace("\\'", "")
            assert line.startswith("complete -c cuwheel") and unquoted.count("'") % 2 == 0, line
    if shell == "powershell":
        assert text.count("{") == text.count("}") and "Register-ArgumentCompleter" in text


def test_help_command_is_the_commands_help(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as info:
        cuwheel.cli.main(["check", "--help"])
    assert info.value.code == 0
    direct = capsys.readouterr().out
    with pytest.raises(SystemExit) as info:
        cuwheel.cli.main(["help", "check"])
    assert info.value.code == 0
    assert capsys.readouterr().out == direct and direct.startswith("usage: cuwheel check")
    with pytest.raises(SystemExit) as info:
        cuwheel.cli.main(["help", "chekc"])
    assert info.value.code == 2
    assert "did you mean 'check'?" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cuwheel.cli.main(["help"])
    assert "completion" in capsys.readouterr().out


def test_clicolor_force_colours_a_pipe_and_no_color_wins() -> None:
    def run(**env: str) -> str:
        return subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "zzz-no-gpu"],
                              capture_output=True, text=True, env=_env(**env)).stderr

    argv = [sys.executable, "-m", "cuwheel", "explain", "DC999"]  # an error: on stderr

    def err(**env: str) -> str:
        return subprocess.run(argv, capture_output=True, text=True, env=_env(**env)).stderr

    assert "\x1b[" not in err()
    assert "\x1b[" in err(CLICOLOR_FORCE="1")
    assert "\x1b[" not in err(CLICOLOR_FORCE="0")
    assert "\x1b[" not in err(CLICOLOR_FORCE="1", NO_COLOR="1")
    assert run() == run(CLICOLOR="0")


def test_isolated_ignores_the_project_config(tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "cuwheel.toml").write_text(
        '[[rows]]\nname = "mine"\nplatform = "linux-x86_64"\ncuda = "13.0"\n'
        'sass = ["sm_90"]\nptx = "none"\n')
    monkeypatch.chdir(tmp_path)
    for var in ("CUWHEEL_TRAIN", "CUWHEEL_ROW", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)
    argv = ["plan", "-f", "torch", "--train", "cu130", "--platform", "linux-x86_64"]
    assert cuwheel.cli.main(argv) == 0
    project = capsys.readouterr()
    assert project.out.strip() == "9.0" and "cuwheel.toml" in project.err
    for isolated in ([*argv, "--isolated"], ["--isolated", *argv]):
        assert cuwheel.cli.main(isolated) == 0
        builtin = capsys.readouterr()
        assert builtin.out.strip().endswith("+PTX") and "built-in defaults" in builtin.err
    assert cuwheel.cli.main([*argv, "--isolated", "--config", "cuwheel.toml"]) == 2
    assert "--isolated" in capsys.readouterr().err


BIN = Path(__file__).parent / "data" / "bin"


@pytest.mark.parametrize(("argv", "says"), [
    (["compat", "--cuda", "99.9", "--gpu", "H100"], "unknown CUDA release 99.9"),
    (["compat", "--cuda", "12.7", "--gpu", "H100"], "never released"),
    (["compat", "--driver", "99999", "--gpu", "H100"], "more than three digits"),
    (["compat", "--driver", "99.0", "--gpu", "H100"], "no CUDA 99.x driver"),
    (["compat", "--gpu", "H1OO"], "did you mean 'H100'?"),
    (["plan", "--python", "2.7", "--train", "cu130"], "got '2.7'"),
    (["plan", "-f", "matrix", "--python", "3"], "got '3'"),
    (["plan", "--train", "cu13O"], "did you mean 'cu130'?"),
])
def test_values_outside_the_catalog_are_one_line_errors(
        argv: list[str], says: str, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.chdir(tmp_path)
    if argv[0] == "compat":
        argv = [*argv, str(BIN / "sm80.so")]
    assert cuwheel.cli.main(argv) == 2
    cap = capsys.readouterr()
    assert cap.out == "" and len(cap.err.splitlines()) == 1 and says in cap.err, cap.err


def test_values_the_catalog_knows_still_answer(capsys: pytest.CaptureFixture[str]) -> None:
    for argv in (["--cuda", "12.8", "--gpu", "H100"], ["--driver", "580.65.06", "--gpu", "H100"],
                 ["--driver", "13.0", "--cc", "8.0"]):
        assert cuwheel.cli.main(["compat", *argv, str(BIN / "sm80.so")]) == 0, argv
    capsys.readouterr()


def test_a_gpu_name_with_letters_for_digits_is_suggested(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert cuwheel.cli.main(["gpus", "H1OO"]) == 1
    assert capsys.readouterr().out == "no GPU matches 'H1OO'; did you mean 'H100'?\n"
    assert cuwheel.cli.main(["gpus", "zzqqxx"]) == 1
    assert capsys.readouterr().out == "no GPU matches 'zzqqxx'\n"


def test_targets_from_a_pattern_a_list_file_and_stdin(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The shell of Windows (and a quoted pattern anywhere) leaves ``dist/*.whl`` alone:
    cuwheel expands it; ``@FILE`` and ``-`` read one target a line."""
    import io

    from cuwheel.cli._common import expand_targets
    from cuwheel.errors import CuwheelError

    for name in ("b.whl", "a.whl", "c.txt"):
        (tmp_path / name).write_bytes(b"")
    monkeypatch.chdir(tmp_path)
    assert expand_targets(["*.whl"]) == ["a.whl", "b.whl"]
    assert expand_targets([str(tmp_path / "?.whl")]) == [str(tmp_path / n)
                                                         for n in ("a.whl", "b.whl")]
    (tmp_path / "list").write_text("# wheels\nc.txt\n\n  *.whl  \n")
    assert expand_targets(["@list"]) == ["c.txt", "a.whl", "b.whl"]
    monkeypatch.setattr("sys.stdin", io.StringIO("b.whl\nhttps://x/y?z=1\n"))
    assert expand_targets(["-", "c.txt"]) == ["b.whl", "https://x/y?z=1", "c.txt"]
    (tmp_path / "odd[1].whl").write_bytes(b"")  # an existing name is no pattern
    assert expand_targets(["odd[1].whl"]) == ["odd[1].whl"]
    with pytest.raises(CuwheelError, match=r"dist/\*\.whl: no file matches"):
        expand_targets(["dist/*.whl"])
    with pytest.raises(CuwheelError, match="@nothing"):
        expand_targets(["@nothing"])


def test_check_of_a_pattern_the_shell_did_not_expand(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`cuwheel check "dist/*.so"` as PowerShell passes it: every match is checked."""
    import shutil as sh

    for name in ("sm80.so", "sm80only.so"):
        sh.copy(BIN / name, tmp_path / name)
    assert cuwheel.cli.main(["inspect", str(tmp_path / "sm80*.so"), "--json"]) == 0
    import json

    doc = json.loads(capsys.readouterr().out)
    names = sorted(Path(t["path"]).name for t in doc["sources"])
    assert names == ["sm80.so", "sm80only.so"], names
    assert cuwheel.cli.main(["inspect", str(tmp_path / "zz*.so")]) == 2
    assert "no file matches" in capsys.readouterr().err


def test_docs_json_names_every_shipped_schema() -> None:
    """docs/json.md lists every schema in the package, with the document's name and
    version as the schema itself declares them."""
    import json
    import re

    data = Path(cuwheel.cli.__file__).parents[1] / "data"
    doc = (Path(__file__).parents[1] / "docs" / "json.md").read_text(encoding="utf-8")
    for path in sorted(data.glob("*.schema.json")):
        assert f"`{path.name}`" in doc, path.name
        props = json.loads(path.read_text(encoding="utf-8")).get("properties", {})
        name = props.get("schema", {}).get("const")
        if name is not None:
            row = re.search(rf"^\| `{re.escape(name)}` \| (\d+) \|.*`{re.escape(path.name)}`",
                            doc, flags=re.M)
            assert row is not None, name
            assert int(row[1]) == props["version"]["const"], name


# The first major of each GitHub-owned action that runs on Node 24 (their release notes:
# actions/checkout v5.0.0, actions/setup-python v6.0.0, actions/upload-artifact v5.0.0);
# Node 20 actions are deprecated on GitHub's runners, and actionlint reports them.
NODE24 = {"actions/checkout": 5, "actions/setup-python": 6, "actions/upload-artifact": 5}


def test_doc_workflows_use_no_deprecated_action_runtime() -> None:
    import re

    root = Path(__file__).parents[1]
    seen = 0
    for doc in ("README.md", "docs/integrations.md", "action.yml"):
        text = (root / doc).read_text(encoding="utf-8")
        for name, major in re.findall(r"uses:\s*(actions/[\w-]+)@v(\d+)", text):
            assert name in NODE24, name  # a new action: add its Node 24 major above
            assert int(major) >= NODE24[name], (doc, name, major)
            seen += 1
    assert seen >= 5


def test_toolkit_names_the_wheels_source_when_the_redist_host_is_unreachable(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A network that reaches only the package index: the default source fails with a
    line saying which source would work; a chosen --source gets no such advice."""
    import socket

    with socket.socket() as s:  # a port nothing listens on: the connection is refused
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    argv = ["toolkit", "--train", "cu130", "--platform", "linux-x86_64", "--prefix",
            str(tmp_path / "tk"), "--cache", str(tmp_path / "cache"), "--base-url",
            f"http://127.0.0.1:{port}/"]
    assert cuwheel.cli.main(argv) == 2
    err = capsys.readouterr().err.splitlines()
    assert "cannot connect" in err[0] and "--source wheels" in err[1], err
    assert all(len(line) <= 80 for line in err[1:])
    assert cuwheel.cli.main([*argv, "--source", "redist"]) == 2
    assert "--source wheels" not in capsys.readouterr().err


def test_a_refusal_shared_by_several_architectures_is_said_once(
        capsys: pytest.CaptureFixture[str]) -> None:
    """allmajor.so holds SASS of six majors (cuobjdump --list-elf lists them): on CC 3.0
    five refuse for the same reason, said once with the five names."""
    assert cuwheel.cli.main(["compat", str(BIN / "allmajor.so"), "--cc", "3.0",
                             "--color", "never"]) == 1
    out = " ".join(capsys.readouterr().out.split())
    assert out.count("across majors") == 1, out
    assert "sm_75, sm_80, sm_90, sm_100, sm_120 do not run across majors (CC 3.0)" in out
    assert "sm_110 does not run on CC 3.0" in out  # a different reason stays its own


REAL = Path(__file__).parent / "data" / "real"
BNB = str(REAL / "bitsandbytes-0.50.2-py3-none-manylinux_2_24_x86_64.whl")
VLLM = str(REAL / "vllm-0.19.1-cp38-abi3-manylinux_2_31_x86_64.whl")
# Every command's human-readable output (machine formats, env lines, JSON and scripts,
# are data and keep their lines whole).
TEXT_RUNS = [
    ["inspect", str(BIN / "sm80.so")], ["inspect", BNB], ["gpus"], ["gpus", "H100"],
    ["plan", "-f", "torch", "--train", "cu130"],
    ["compat", str(BIN / "allmajor.so"), "--gpu", "H100", "--cc", "3.0", "-v"],
    ["compat", BNB, "--matrix"], ["compat", VLLM, "--gpu", "T4", "--driver", "535"],
    ["check", BNB], ["check", VLLM, "--gpus", "P40,T4"], ["check", BNB, "--audit", "-v"],
    ["explain", "DC001"], ["explain"], ["explain", "DEP"],
    ["explain", "CUDA error: no kernel image is available for execution on the device"],
    ["doctor", "--cc", "8.0", "--driver", "580"], ["size", BNB], ["variant", BNB],
    ["check", "--formt", "json", "x.whl"], ["compat", "--driver", "99999", "--gpu", "A100"],
    *[[name[1:], "--help"] for name in cuwheel.cli.SUBCOMMANDS], ["--help"],
]


@pytest.mark.parametrize("columns", [80, 200])
def test_every_command_fits_the_terminal(columns: int, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    """At COLUMNS=80 and 200 no line is wider than the terminal, except a line that is one
    word (a path that cannot be broken)."""
    monkeypatch.setenv("COLUMNS", str(columns))
    # messages as a terminal shows them (elsewhere they stay one line per problem)
    monkeypatch.setattr("cuwheel.cli._common._is_terminal", lambda stream: True)
    monkeypatch.chdir(tmp_path)
    for var in ("CUWHEEL_TRAIN", "CUWHEEL_ROW", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)
    for argv in TEXT_RUNS:
        with contextlib.suppress(SystemExit):
            cuwheel.cli.main(list(argv))
        cap = capsys.readouterr()
        for line in (cap.out + cap.err).splitlines():
            assert len(line) <= columns or " " not in line.strip(), (argv, line)
        assert cap.out or cap.err, argv


def test_exported_names_are_read_only_when_asked_for() -> None:
    """inspect(exports=False) leaves the export names out and nothing else: the same
    containers, needed libraries and undefined symbols (what compat and a check judge)."""
    from cuwheel.read.inspect import inspect

    lib = str(BIN / "sm80.so")
    full = inspect([lib], workers=1).binaries[0]
    lean = inspect([lib], workers=1, exports=False).binaries[0]
    assert full.exported and lean.exported == ()
    assert (lean.containers, lean.needed, lean.undefined) == (
        full.containers, full.needed, full.undefined)
    assert inspect([lib], workers=1).binaries[0].exported == full.exported  # switch restored

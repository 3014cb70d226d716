"""One output grammar across commands: every command with every format, JSON documents in
the common envelope and valid against the shipped schema, ``-o FILE`` and ``-q`` the same
everywhere, the config and row each command used named, ``check --dist``."""

from __future__ import annotations

import json
import os
import shutil
import sys
from pathlib import Path

import jsonschema
import pytest

import _absent
import cuwheel.cli
from cuwheel.render.envelope import COMMANDS, ENVELOPE_KEYS, SCHEMAS, load_schema
from wheelfactory import make_wheel

BIN = Path(__file__).parent / "data" / "bin"
TAG = "cp312-cp312-manylinux_2_28_x86_64"


@pytest.fixture()
def cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path):  # type: ignore[no-untyped-def]
    """``cuwheel`` through its real main(), from an empty directory (no config above it
    but the ones a test writes) and without the release variables of a CI job."""
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    for var in ("CUWHEEL_TRAIN", "CUWHEEL_ROW", "CUWHEEL_PLATFORM", "CU_VERSION",
                "DESIRED_CUDA", "NO_COLOR", "CUWHEEL_COLOR", "FORCE_COLOR"):
        monkeypatch.delenv(var, raising=False)

    def run(*argv: str) -> tuple[int, str, str]:
        code = cuwheel.cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


@pytest.fixture()
def wheel(tmp_path: Path) -> str:
    lib = (BIN / "sm80.so").read_bytes()
    return make_wheel(tmp_path, {"pkg/libk.so": lib, "pkg/__init__.py": b""},
                      name="demo", version="1.0+cu130", tag=TAG,
                      requires=("nvidia-cuda-runtime==13.*",))


def _site(tmp: Path) -> Path:
    """An installed environment for doctor: one distribution with a library built for sm_80."""
    site = tmp / "site"
    if not site.exists():
        (site / "demo").mkdir(parents=True)
        shutil.copyfile(BIN / "sm80.so", site / "demo" / "libk.so")
        info = site / "demo-1.0.dist-info"
        info.mkdir()
        (info / "METADATA").write_text("Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n")
        (info / "RECORD").write_text("demo/libk.so,,\ndemo-1.0.dist-info/METADATA,,\n")
    return site


def _cases(wheel: str, tmp: Path) -> list[tuple[tuple[str, ...], str]]:
    """(argv, format) for every command and every format it has."""
    plan = ("plan", "--train", "cu130", "--platform", "linux-x86_64")
    so = str(BIN / "sm80.so")
    records = tmp / "scan.jsonl"
    out: list[tuple[tuple[str, ...], str]] = []
    out += [(("inspect", wheel, "-f", f), f) for f in ("text", "json")]
    out += [((*plan, "-f", f), f) for f in ("env", "sh", "torch", "cmake", "nvcc", "json")]
    out += [(("plan", "-f", "matrix", "--python", "3.12"), "matrix")]
    out += [(("check", wheel, "-f", f), f)
            for f in ("text", "json", "junit", "github", "sarif")]
    out += [(("explain", "DC001", "-f", f), f) for f in ("text", "json")]
    out += [(("compat", so, "--cc", "9.0", "-f", f), f) for f in ("text", "json")]
    out += [(("compat", so, "--cc", "9.0", "--matrix", "-f", f), f)
            for f in ("text", "json", "svg")]
    out += [(("gpus", "A100", "-f", f), f) for f in ("text", "json")]
    out += [(("explain", "CUDA error: no kernel image is available for execution on the "
              "device", "-f", f), f) for f in ("text", "json")]
    out += [(("doctor", "--path", str(_site(tmp)), "--gpu", "H100", "--driver", "580",
              "--ld-cache", "none", "-f", f), f) for f in ("text", "json")]
    out += [(("size", wheel, "--drop", "sm_80", "-f", f), f)
            for f in ("text", "json", "svg", "html")]
    out += [(("variant", wheel, "-f", f), f) for f in ("text", "json", "variant-json")]
    out += [(("scan", wheel, "-o", str(records), "--no-cache", "--summary", f), f)
            for f in ("text", "json", "html")]
    return out


def _validate(doc: dict[str, object]) -> None:
    schema = str(doc.get("schema", ""))
    assert schema.startswith("cuwheel-"), doc.keys()
    name = schema[len("cuwheel-"):]
    assert name in COMMANDS
    assert tuple(doc)[: len(ENVELOPE_KEYS)] == ENVELOPE_KEYS
    assert doc["version"] == COMMANDS[name]
    assert doc["tool"] == {"name": "cuwheel", "version": cuwheel.__version__}
    jsonschema.Draft202012Validator(load_schema(name)).validate(doc)


def test_every_command_and_format(cli, wheel: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    seen: set[str] = set()
    for argv, fmt in _cases(wheel, tmp_path):
        code, out, err = cli(*argv)
        assert code in (0, 1), (argv, err)
        assert "Traceback" not in err
        assert out, argv
        if fmt == "json":
            doc = json.loads(out)
            _validate(doc)
            seen.add(doc["schema"])
        elif fmt == "matrix":
            doc = json.loads(out)
            assert list(doc) == ["include"]  # fromJSON: any other key is a dimension
            jsonschema.Draft202012Validator(load_schema("matrix")).validate(doc)
        elif fmt == "svg":
            assert out.startswith("<svg ")
        elif fmt == "sarif":  # its own standard (tests/test_check_sarif.py validates it)
            assert json.loads(out)["version"] == "2.1.0"
        elif fmt == "junit":
            assert out.startswith("<?xml")
        elif fmt == "variant-json":  # the PEP 825 file itself, no envelope
            assert "variants" in json.loads(out)
        elif fmt == "html":
            assert "<html" in out.lower()
    # Every document in the envelope was produced and validated, but toolkit's (its
    # test serves a redist; tests/test_toolkit_redist.py).
    expected = {f"cuwheel-{c}" for c in ("inspect", "plan", "check", "compat",
                                          "compat-matrix", "gpus", "scan-summary", "explain",
                                          "doctor", "size", "variant")}
    assert expected <= seen


def test_schemas_ship_and_share_the_envelope() -> None:
    first = None
    for name in SCHEMAS:
        schema = load_schema(name)
        jsonschema.Draft202012Validator.check_schema(schema)
        if name == "matrix":
            assert "schema" not in schema["properties"]
            continue
        props = schema["properties"]
        assert tuple(props)[:5] == ENVELOPE_KEYS
        assert props["schema"] == {"const": f"cuwheel-{name}", "description": props["schema"]
                                   ["description"]}
        assert props["version"]["const"] == COMMANDS[name]
        assert schema["additionalProperties"] is False
        assert set(ENVELOPE_KEYS) <= set(schema["required"])
        shared = {k: props[k] for k in ("tool", "config", "row")}
        first = first or shared
        assert shared == first, name


@pytest.mark.parametrize("fmt", ["json", "text"])
def test_output_file_and_quiet_the_same_everywhere(cli, wheel: str, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                   fmt: str) -> None:
    so = str(BIN / "sm80.so")
    for argv in (("inspect", so), ("check", wheel), ("compat", so, "--cc", "8.0"),
                 ("gpus", "H100"), ("plan", "--train", "cu130", "--platform", "linux-x86_64"),
                 ("doctor", "--path", str(_site(tmp_path)), "--gpu", "H100", "--driver", "580",
                  "--ld-cache", "none")):
        f = fmt if argv[0] != "plan" or fmt == "json" else "env"
        code, out, _ = cli(*argv, "-f", f)
        target = tmp_path / f"{argv[0]}.{f}"
        code_o, out_o, _ = cli(*argv, "-f", f, "-o", str(target))
        assert (code_o, out_o) == (code, ""), argv
        written = target.read_text("utf-8")
        if f == "json":  # the same document (inspect's read times may not be part of it)
            assert json.loads(written) == json.loads(out), argv
        else:
            assert written == out, argv
        code_q, out_q, _ = cli(*argv, "-f", f, "-q")
        assert (code_q, out_q) == (code, ""), argv


@pytest.mark.parametrize("command", [("plan", "--train", "cpu"), ("gpus", "A100"),
                                     ("compat", str(BIN / "sm80.so"), "--cc", "8.0")])
def test_bad_output_path_is_a_usage_error(cli, tmp_path: Path, command: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    for bad in (str(tmp_path), str(tmp_path / "missing" / "x.json")):
        code, out, err = cli(*command, "-o", bad)
        assert code == 2 and out == "" and err.startswith("cuwheel: error: -o "), err
        assert "Traceback" not in err


def test_plan_names_the_config_and_row_it_used(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    argv = ("plan", "--train", "cu130", "--platform", "linux-x86_64")
    code, out, err = cli(*argv, "-f", "json")
    doc = json.loads(out)
    assert doc["config"] is None and doc["row"] == doc["row_definition"]["name"]
    assert "from built-in defaults" in err and doc["row"] in err
    # A project's config above the working directory: found, and named.
    project = Path.cwd().parent / "cuwheel.toml"
    project.write_text(
        'trains = ["cu130"]\n[[rows]]\nname = "ours"\nplatform = "linux-x86_64"\n'
        'cuda = "13.0"\nsass = ["sm_90"]\nptx = "none"\n', "utf-8")
    sub = Path.cwd() / "sub"
    sub.mkdir()
    os.chdir(sub)
    code, out, err = cli(*argv, "-f", "json")
    doc = json.loads(out)
    assert code == 0 and (doc["config"], doc["row"], doc["sass"]) == (
        str(project), "ours", ["sm_90"])
    code, out, err = cli(*argv, "-f", "torch")
    assert out == "9.0\n" and f"row ours (cu130, linux-x86_64) from {project}" in err
    code, out, err = cli(*argv, "-f", "torch", "-q")
    assert (code, out, err) == (0, "", "")


def test_compat_names_libraries_relative_to_their_wheel(cli, wheel: str) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = cli("compat", wheel, "--cc", "8.0", "-f", "json")
    assert code == 0
    doc = json.loads(out)
    src = doc["targets"][0]["sources"][0]
    assert src["path"] == wheel and [lib["path"] for lib in src["libraries"]] == ["pkg/libk.so"]
    _, out, _ = cli("compat", wheel, "--cc", "8.0")
    assert "    pkg/libk.so: native SASS" in out


def _install(site: Path, name: str, version: str, tag: str, files: dict[str, bytes],
             requires: tuple[str, ...] = ()) -> None:
    """Lay out what an installer leaves in site-packages (PEP 376/627 dist-info)."""
    info = site / f"{name}-{version}.dist-info"
    info.mkdir(parents=True)
    meta = ["Metadata-Version: 2.1", f"Name: {name}", f"Version: {version}"]
    meta += [f"Requires-Dist: {r}" for r in requires]
    (info / "METADATA").write_text("\n".join(meta) + "\n", "utf-8")
    (info / "WHEEL").write_text(f"Wheel-Version: 1.0\nRoot-Is-Purelib: false\nTag: {tag}\n")
    record = []
    for rel, data in files.items():
        p = site / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        record.append(f"{rel},,")
    record += [f"{info.name}/{n},," for n in ("METADATA", "WHEEL", "RECORD")]
    (info / "RECORD").write_text("\n".join(record) + "\n", "utf-8")


def test_check_dist_judges_an_installed_distribution_as_its_wheel(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lib = (BIN / "sm80.so").read_bytes()
    site = tmp_path / "site"
    files = {"pkg/libk.so": lib, "pkg/__init__.py": b""}
    _install(site, "cwinstalled", "2.0+cu130", TAG, files, ("nvidia-cuda-runtime==13.*",))
    monkeypatch.syspath_prepend(str(site))
    whl = make_wheel(tmp_path, files, name="cwinstalled", version="2.0+cu130", tag=TAG,
                     requires=("nvidia-cuda-runtime==13.*",))
    code_w, out_w, _ = cli("check", whl, "-f", "json")
    code_d, out_d, err = cli("check", "--dist", "cwinstalled", "-f", "json")
    assert code_d == code_w, err
    as_wheel, as_dist = json.loads(out_w)["wheels"][0], json.loads(out_d)["wheels"][0]
    assert as_dist["wheel"] == os.path.basename(whl)
    assert as_dist["libraries"] == as_wheel["libraries"] == ["pkg/libk.so"]
    assert [(f["code"], f["library"]) for f in as_dist["findings"]] == [
        (f["code"], f["library"]) for f in as_wheel["findings"]]
    code, out, err = cli("check", "--dist", "no-such-dist-here")
    assert code == 2 and "no-such-dist-here: no such distribution is installed" in err
    # the input is a failed entry of the report too (docs/checks.md#unreadable-inputs)
    assert out.splitlines() == ["cuwheel check no-such-dist-here", "  ERROR: not checked: "
                                "no-such-dist-here: no such distribution is installed"]
    code, _, err = cli("check")
    assert code == 2 and "nothing to check" in err


def test_check_env_checks_installed_distributions_with_binaries(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    _install(site, "cwbinary", "1.0", TAG, {"cwb/libk.so": (BIN / "sm80.so").read_bytes()})
    _install(site, "cwpure", "1.0", "py3-none-any", {"cwpure/__init__.py": b""})
    monkeypatch.syspath_prepend(str(site))
    code, out, _ = cli("check", "--env", "-f", "json")
    assert code in (0, 1)
    names = [w["wheel"] for w in json.loads(out)["wheels"]]
    assert f"cwbinary-1.0-{TAG}.whl" in names
    assert not any(n.startswith("cwpure-") for n in names)


def test_scan_summary_document(cli, wheel: str, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    records = tmp_path / "r.jsonl"
    code, out, _ = cli("scan", wheel, "-o", str(records), "--no-cache", "--summary", "json",
                       "--exit-zero")
    assert code == 0
    doc = json.loads(out)
    _validate(doc)
    assert doc["wheels"] == 1


@_absent.skip_without("unix", shutil.which("bash") is None or sys.platform == "win32")
def test_plan_matrix_to_github_output(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The README's `$GITHUB_OUTPUT` recipe: one line, readable back by fromJSON."""
    import subprocess

    out_file = tmp_path / "github_output"
    script = ('echo "matrix=$("$PY" -m cuwheel plan -f matrix --python 3.12)" '
              '>> "$GITHUB_OUTPUT"')
    env = {**os.environ, "PY": sys.executable, "GITHUB_OUTPUT": str(out_file)}
    subprocess.run(["bash", "-c", script], check=True, env=env, cwd=tmp_path)
    lines = out_file.read_text().splitlines()
    assert len(lines) == 1 and lines[0].startswith("matrix=")
    assert json.loads(lines[0][len("matrix="):])["include"]


def test_help_examples_parse() -> None:
    """Every example at the end of a command's --help is a command line its parser takes."""
    import re
    import shlex

    parser = cuwheel.cli.build_parser()
    count = 0
    for name in cuwheel.cli.SUBCOMMANDS:
        module = __import__(f"cuwheel.cli.{name}", fromlist=["EXAMPLES"])
        for line in getattr(module, "EXAMPLES", "").splitlines()[1:]:
            command = re.split(r"\s{2,}", line.strip())[0]  # the description follows
            argv = shlex.split(re.sub(r"\s>>?\s.*", "", command))  # less a redirection
            assert argv[0] == "cuwheel" and argv[1] == name[1:], line
            parser.parse_args(argv[1:])  # SystemExit on a flag it does not know
            count += 1
    assert count >= 15


def test_check_takes_the_row_from_flags_or_the_variables_plan_exports(  # type: ignore[no-untyped-def]
    cli, wheel: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`cuwheel plan --format env` exports CUWHEEL_ROW / CUWHEEL_TRAIN / CUWHEEL_PLATFORM;
    check in the same job must judge the wheel against that row (and `--row` alone must do
    so without --train)."""
    def row_of(*argv: str) -> tuple[str, str, str | None]:
        code, out, err = cli("check", wheel, "-f", "json", *argv)
        assert code in (0, 1), err
        w = json.loads(out)["wheels"][0]
        return w["row"], w["train"], w["platform"]

    assert row_of()[0] == "audit"  # no project config: audited, not the seed rows
    assert row_of("--row", "linux-x86_64-cu13") == ("linux-x86_64-cu13", "cu130",
                                                    "linux-x86_64")
    _, out, _ = cli("plan", "--train", "cu130", "--platform", "linux-x86_64")
    for line in out.splitlines():
        key, _, value = line.partition("=")
        if key in ("CUWHEEL_ROW", "CUWHEEL_TRAIN", "CUWHEEL_PLATFORM"):
            monkeypatch.setenv(key, value)
    assert row_of() == ("linux-x86_64-cu13", "cu130", "linux-x86_64")
    monkeypatch.delenv("CUWHEEL_ROW")
    # The train alone (no row, no config): audited; the wheel's +cu130 outranks the
    # environment, a flag outranks both (docs/config.md: flags > wheel > environment).
    monkeypatch.setenv("CUWHEEL_TRAIN", "cu129")
    assert row_of()[:2] == ("audit", "cu130")
    assert row_of("--train", "cu129")[:2] == ("audit", "cu129")


def test_dc003_counts_the_containers_without_the_ptx(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """DC003 once said 'no compute_120 PTX in 0 of 475 containers' whatever the count."""
    lib = (BIN / "sm80only.so").read_bytes()  # SASS sm_80 only: no PTX at all
    whl = make_wheel(tmp_path, {"pkg/libk.so": lib}, name="noptx", version="1.0+cu130",
                     tag=TAG, requires=("nvidia-cuda-runtime==13.*",))
    code, out, _ = cli("check", whl, "--row", "linux-x86_64-cu13", "-f", "json")
    (dc003,) = [f for f in json.loads(out)["wheels"][0]["findings"] if f["code"] == "DC003"]
    assert code == 1 and " in 0 of " not in dc003["message"], dc003
    assert "compute_120" in dc003["message"]


def test_check_reports_a_row_error_before_reading_the_wheel(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The row is picked before the wheel is read: a misconfigured CI job fails at once,
    not after inflating a 500 MB wheel (here the wheel is garbage and never opened)."""
    junk = tmp_path / f"demo-1.0-{TAG}.whl"
    junk.write_bytes(b"not a zip at all")
    code, out, err = cli("check", str(junk), "--row", "no-such-row")
    assert code == 2 and out == "" and "no-such-row" in err and "zip" not in err, err


def test_check_dist_bounds_a_hostile_wheel_file(  # type: ignore[no-untyped-def]
    cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An installed WHEEL file with 400 tags, all three parts distinct: the wheel's name
    joins them as compressed sets, but its tags are the lines themselves (their product
    would be 64 million), and a 100 kB tag is cut."""
    site = tmp_path / "site"
    _install(site, "cwhostile", "1.0", "py3-none-any", {"cwh/__init__.py": b""})
    lines = [f"Tag: py{i}-abi{i}-plat{i}" for i in range(400)] + ["Tag: " + "x" * 100_000]
    (site / "cwhostile-1.0.dist-info" / "WHEEL").write_text("\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(site))
    from cuwheel.read.inspect import installed_source

    src = installed_source("cwhostile")
    assert src.wheel is not None and len(src.wheel.tags) == 401
    assert max(len(t) for t in src.wheel.tags) < 100_000
    assert src.path.startswith("cwhostile-1.0-py0.py1.")


@pytest.mark.parametrize("command", sorted(n[1:] for n in cuwheel.cli.SUBCOMMANDS))
def test_global_options_before_or_after_every_command(command: str) -> None:
    """-q, -v and --color parse on every command, written before its name or after it."""
    parser = cuwheel.cli.build_parser()
    required = {"toolkit": ["--prefix", "p"], "size": ["w.whl"], "variant": ["w.whl"],
                "completion": ["bash"]}.get(command, [])
    for argv in (["-qv", "--color", "never", command, *required],
                 [command, *required, "-q", "-v", "--color=never"]):
        hoisted, first = cuwheel.cli._hoist(argv)
        assert first == command
        args = parser.parse_args(hoisted)
        assert (args.quiet, args.verbose, args.color) == (True, True, "never"), argv


def test_a_bad_global_option_is_one_line_naming_it(cli) -> None:  # type: ignore[no-untyped-def]
    code, out, err = cli("--colr", "always", "gpus", "A100")
    assert code == 2 and out == ""
    assert err.splitlines() == [
        "cuwheel: error: unrecognized option '--colr'; did you mean '--color'? (cuwheel --help)"
    ]


def test_force_color_and_no_color(cli, monkeypatch: pytest.MonkeyPatch, wheel: str) -> None:  # type: ignore[no-untyped-def]
    _, out, _ = cli("check", wheel)  # captured output is no terminal: plain
    assert "\x1b[" not in out and "FAIL" in out
    monkeypatch.setenv("FORCE_COLOR", "1")
    assert "\x1b[" in cli("check", wheel)[1]
    monkeypatch.setenv("NO_COLOR", "1")  # NO_COLOR wins over FORCE_COLOR
    assert cli("check", wheel)[1] == out
    assert "\x1b[" in cli("--color", "always", "check", wheel)[1]  # the flag wins


def test_help_prose_wraps_to_the_terminal(monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Description paragraphs fit COLUMNS; the examples keep their layout."""
    monkeypatch.setenv("COLUMNS", "60")
    for argv in (["--help"], ["plan", "--help"], ["check", "--help"]):
        with pytest.raises(SystemExit):
            cuwheel.cli.main(argv)
        out = capsys.readouterr().out
        blocks = out.split("\n\n")
        description = blocks[1]  # after the usage
        assert len(description.splitlines()) > 1 or argv == ["--help"], argv
        assert all(len(line) <= 60 for line in description.splitlines()), argv
        examples = next(b for b in blocks if b.startswith("examples:"))
        # a command stays on its line; a description that does not fit beside it goes under
        assert all(len(line) <= 60 or "  " not in line.strip()
                   for line in examples.splitlines()), argv
        assert any(line.startswith("      ") for line in examples.splitlines()), argv


def test_plan_without_a_train_suggests_only_what_plan_takes(cli) -> None:  # type: ignore[no-untyped-def]
    code, _, err = cli("plan")
    assert code == 2 and "no train selected" in err
    assert "--row" not in err and "--train" in err and "CUWHEEL_ROW" in err


@pytest.mark.parametrize("argv", [["--version"], ["--help"], ["check", "--help"]])
def test_version_and_help_load_no_library_code(argv: list[str]) -> None:
    """Start-up is bounded by what is imported, not timed (bench/bench_startup.py times it):
    --version and --help build parsers only, without the readers, checks or catalogs."""
    import subprocess

    code = ("import sys; from cuwheel.cli import main\n"
            "try:\n    main(sys.argv[1:])\nexcept SystemExit:\n    pass\n"
            "print('\\n'.join(sorted(m for m in sys.modules if m.startswith('cuwheel'))))")
    out = subprocess.run([sys.executable, "-c", code, *argv], capture_output=True, text=True,
                         check=True, env={**os.environ, "COLUMNS": "80"}).stdout
    loaded = {line for line in out.splitlines() if line.startswith("cuwheel")}
    heavy = {m for m in loaded if m.partition(".")[2].split(".")[0] in
             {"checks", "read", "knowledge", "rules", "model", "plan", "config", "compat",
              "scan", "toolkit", "config_init"}}
    assert heavy == set(), heavy
    # --help built the subcommands' parsers; --version none
    assert ("cuwheel.cli._check" in loaded) == (argv != ["--version"])

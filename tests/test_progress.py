"""Progress of long commands (cli/_progress.py): on a terminal (a pseudo-terminal from the
pty module) the display is drawn on stderr; with stderr a pipe, or with -q, nothing is
written there; stdout is byte-identical either way."""

from __future__ import annotations

import os
import pty
import select
import subprocess
import sys
from pathlib import Path

import pytest

import checkwheels as cw

SRC = str(Path(__file__).resolve().parents[1] / "src")


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items()
           if k not in ("NO_COLOR", "FORCE_COLOR", "CUWHEEL_COLOR", "TERM", "COLUMNS")}
    env.update(TERM="xterm-256color", COLUMNS="120", PYTHONPATH=SRC)
    return env


def _run(argv: list[str], cwd: Path, *, tty: bool) -> tuple[int, bytes, bytes]:
    """(exit status, stdout, stderr) of ``python -m cuwheel ARGV``; with ``tty`` stderr is
    a pseudo-terminal whose output is collected as the command runs."""
    cmd = [sys.executable, "-m", "cuwheel", *argv]
    if not tty:
        p = subprocess.run(cmd, capture_output=True, env=_env(), cwd=cwd, timeout=300)
        return p.returncode, p.stdout, p.stderr
    master, slave = pty.openpty()
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=slave, stdin=subprocess.DEVNULL,
                            env=_env(), cwd=cwd)
    os.close(slave)
    assert proc.stdout is not None
    out, err = bytearray(), bytearray()
    streams = {proc.stdout.fileno(): out, master: err}
    while streams:
        ready, _, _ = select.select(list(streams), [], [], 300)
        assert ready, "no output in 300 s"
        for fd in ready:
            try:
                block = os.read(fd, 65536)
            except OSError:  # EIO: the terminal's last writer is gone
                block = b""
            if block:
                streams[fd] += block
            else:
                del streams[fd]
    os.close(master)
    proc.stdout.close()
    return proc.wait(timeout=60), bytes(out), bytes(err)


@pytest.fixture(scope="module")
def wheels(tmp_path_factory: pytest.TempPathFactory) -> Path:
    d = tmp_path_factory.mktemp("wheels")
    cw.linux_x86_cu13().build(d)
    cw.broken_seeds()["linux-aarch64-cu13"].build(d)  # a second wheel, with findings
    return d


@pytest.mark.parametrize("argv", [
    ["check", "{d}"],
    ["inspect", "{d}"],
    ["compat", "{d}", "--cc", "8.0"],
    ["scan", "{d}", "--no-cache", "--workers", "1"],
])
def test_progress_on_a_terminal_only(wheels: Path, tmp_path: Path, argv: list[str]) -> None:
    args = [a.format(d=wheels) for a in argv]
    code, out, err = _run(args, tmp_path, tty=True)
    piped_code, piped_out, piped_err = _run(args, tmp_path, tty=False)
    assert code == piped_code
    assert out == piped_out  # the result does not depend on where stderr goes
    assert out.strip(), "the command printed its result"
    assert b"\x1b[" in err, err  # drawn: cursor and colour sequences on the terminal
    assert argv[0].encode() in err, err  # the overall line names the command
    assert b"\x1b[" not in piped_err and b"\r" not in piped_err, piped_err
    if argv[0] != "scan":  # scan's record count is its own line on stderr
        assert piped_err == b"", piped_err
    quiet_code, quiet_out, quiet_err = _run([*args, "-q"], tmp_path, tty=True)
    assert quiet_code == code
    assert quiet_out == b""
    assert b"\x1b[" not in quiet_err, quiet_err  # no progress with -q, even on a terminal


def test_check_text_written_a_wheel_at_a_time_is_the_one_render(wheels: Path) -> None:
    """check writes each wheel's text as it is checked, then the table: the same bytes as
    one render of every report."""
    from cuwheel.checks import check_wheel
    from cuwheel.config import parse_config
    from cuwheel.render.check import text_block, text_table, to_text

    cfg = parse_config({}, "test")
    reports = [check_wheel(w, cfg.rows, cfg.check, environ={}, audit=True)
               for w in sorted(wheels.glob("*.whl"))]
    assert len(reports) == 2 and not all(r.passed for r in reports)
    for verbose in (False, True):
        whole = to_text(reports, verbose=verbose, width=80)
        parts = "".join(text_block(r, verbose=verbose, width=80) for r in reports)
        assert parts + text_table(reports) == whole
        assert "summary" in text_table(reports) and text_table(reports[:1]) == ""

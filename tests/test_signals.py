"""Any number of SIGINT / SIGTERM to a many-target run, sent to its main process or to its
whole process group (Ctrl-C), ends it: one line on stderr, no traceback, no worker left,
and at most a second of CPU after the first signal (cuwheel/_signals.py,
read/workers.stop_pool). The workers here sleep inside their item, as a worker reading a
large library (or blocked writing its result to a parent that stopped reading) does; the
child writes a marker as each item starts, so the signals come while work is in flight,
whatever the machine's speed. A bounded wait only turns a hang into a failure."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

import _absent

BIN = Path(__file__).parent / "data" / "bin"
SRC = str(Path(__file__).resolve().parents[1] / "src")

CHILD = """\
import os, sys, time
import cuwheel.read.schedule as schedule
schedule._PARALLEL_THRESHOLD = 0  # a pool even for small inputs
real = schedule.run_item
marks = sys.argv.pop(1)
def run_item(item, *args):
    open(os.path.join(marks, str(os.getpid())), "w").close()
    time.sleep(300)  # a long item: only the signal ends the run
    return real(item, *args)
schedule.run_item = run_item
from cuwheel.cli import entry
entry()
"""


def _tree_cpu(pid: int) -> float:
    """CPU seconds (user + system) used so far by ``pid`` and its children (Linux /proc)."""
    tick = os.sysconf("SC_CLK_TCK")
    total = 0.0
    out = subprocess.run(["ps", "-o", "pid=", "--ppid", str(pid)], capture_output=True,
                         text=True).stdout.split()
    for p in [pid, *map(int, out)]:
        try:
            fields = Path(f"/proc/{p}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _alive_in_group(pgid: int) -> list[str]:
    out = subprocess.run(["ps", "-o", "pid=,stat=", "-g", str(pgid)], capture_output=True,
                         text=True).stdout.splitlines()
    return [line for line in out if line.split()[1:2] != ["Z"]]


@_absent.skip_without("linux", not sys.platform.startswith("linux"), "/proc")
@pytest.mark.parametrize(("signum", "to_group", "count", "code"), [
    (signal.SIGINT, False, 2, 130),   # the two-Ctrl-C hang of issue 34
    (signal.SIGINT, False, 1, 130),
    (signal.SIGINT, True, 3, 130),    # Ctrl-C: the terminal signals the whole group
    (signal.SIGTERM, False, 3, 143),
    (signal.SIGTERM, True, 2, 143),
])
def test_signals_end_a_many_target_run(signum: int, to_group: bool, count: int, code: int,
                                       tmp_path: Path) -> None:
    targets = []
    for i in range(8):
        target = tmp_path / f"lib{i}.so"
        shutil.copy(BIN / "sm80.so", target)
        targets.append(str(target))
    marks = tmp_path / "marks"
    marks.mkdir()
    env = {**os.environ, "PYTHONPATH": SRC + os.pathsep + os.environ.get("PYTHONPATH", "")}
    before = os.times()
    child = subprocess.Popen(
        [sys.executable, "-c", CHILD, str(marks), "inspect", "--workers", "2", "--json",
         *targets], stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, env=env,
        start_new_session=True)
    try:
        for _ in range(600):  # every worker inside an item
            if len(list(marks.iterdir())) >= 2 or child.poll() is not None:
                break
            time.sleep(0.05)
        assert child.poll() is None and len(list(marks.iterdir())) >= 2
        used_before = _tree_cpu(child.pid)
        for _ in range(count):
            (os.killpg if to_group else os.kill)(child.pid, signum)
            time.sleep(0.05)
        _, err = child.communicate(timeout=60)  # a hang fails here instead of blocking
    finally:
        if child.poll() is None:
            os.killpg(child.pid, signal.SIGKILL)
            child.wait()
    after = os.times()
    used = (after.children_user - before.children_user
            + after.children_system - before.children_system)
    text = err.decode()
    assert child.returncode == code, text
    assert "Traceback" not in text and "Exception" not in text, text
    assert text.strip().splitlines() == [
        "cuwheel: interrupted" if signum == signal.SIGINT else "cuwheel: terminated"], text
    assert _alive_in_group(child.pid) == []  # no worker outlives the run
    assert used - used_before <= 1.0, (used, used_before)

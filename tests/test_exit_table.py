"""One exit-code table (issue 35): ``cuwheel.errors.Exit`` holds every number; the errors
(``CuwheelError.exit_code``) and the answers (``WheelState.exit_code``) take theirs from it,
and no command returns a bare number.  The documented tables (docs/cli.md#exit-status,
docs/compat.md#wheel-verdicts) are the oracle."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from cuwheel.errors import CuwheelError, Exit, InputError
from cuwheel.rules.rollup import WheelState

ROOT = Path(__file__).resolve().parent.parent
SRC = ROOT / "src" / "cuwheel"


def _doc_states() -> dict[str, int]:
    """docs/compat.md's state table: heading -> exit status."""
    text = (ROOT / "docs" / "compat.md").read_text("utf-8")
    block = text[text.index("| state | meaning | exit |"):]
    rows = {}
    for line in block.splitlines()[2:]:
        if not line.startswith("|"):
            break
        cells = [c.strip() for c in line.strip("|").split("|")]
        rows[cells[0].upper()] = int(cells[-1])
    return rows


def test_every_state_exits_as_documented() -> None:
    doc = _doc_states()
    assert {s.heading for s in WheelState} == set(doc)
    for state in WheelState:
        assert isinstance(state.exit_code, Exit)
        assert state.exit_code == doc[state.heading], state


def test_errors_exit_as_documented() -> None:
    text = (ROOT / "docs" / "cli.md").read_text("utf-8")
    assert "| command | 0 | 1 | 2 | other |" in text
    assert re.search(r"\*\*2\*\* the run could not answer", text)
    assert "130 on Ctrl-C, 128 + the signal's number" in text
    assert CuwheelError.exit_code is Exit.UNUSABLE
    assert InputError("x", "y").exit_code == 2
    assert Exit.signalled(15) == 143
    assert Exit.signalled(2) == Exit.INTERRUPTED


def _bare_exits(tree: ast.AST) -> list[int]:
    """Lines where a number, not an ``Exit``, is returned or exited with."""
    found = []
    for node in ast.walk(tree):
        values: list[ast.expr] = []
        if isinstance(node, ast.Return) and node.value is not None:
            values = [node.value]
        elif isinstance(node, ast.Call) and node.args and (
            (isinstance(node.func, ast.Name) and node.func.id in ("SystemExit", "exit"))
            or (isinstance(node.func, ast.Attribute) and node.func.attr == "exit")
        ):
            values = [node.args[0]]
        while values:
            v = values.pop()
            if isinstance(v, ast.IfExp):
                values += [v.body, v.orelse]
            elif (isinstance(v, ast.BinOp) and any(  # 128 + a signal's number
                isinstance(side, ast.Constant) and side.value == 128 for side in (v.left, v.right)
            )) or (isinstance(v, ast.Constant) and type(v.value) is int):
                found.append(v.lineno)
    return found


def test_no_command_returns_a_bare_number() -> None:
    bad = {}
    for path in sorted((SRC / "cli").glob("*.py")):
        lines = _bare_exits(ast.parse(path.read_text("utf-8")))
        if lines:
            bad[path.name] = lines
    assert bad == {}


def test_no_second_table_of_states_to_numbers() -> None:
    # a mapping WheelState.X -> int, or an exit_code assigned a number, outside errors.py
    offenders = []
    for path in sorted(SRC.rglob("*.py")):
        tree = ast.parse(path.read_text("utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Dict) and any(
                isinstance(k, ast.Attribute) and isinstance(k.value, ast.Name)
                and k.value.id == "WheelState" for k in node.keys
            ) and any(isinstance(v, ast.Constant) and type(v.value) is int for v in node.values):
                offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
            if isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "exit_code" for t in targets) and (
                    isinstance(node.value, ast.Constant)
                ):
                    offenders.append(f"{path.relative_to(SRC)}:{node.lineno}")
    assert offenders == []


def test_the_checks_find_a_bare_number() -> None:
    tree = ast.parse("def f(a, n):\n    if a:\n        return 2\n    if n:\n"
                     "        return 128 + n\n    raise SystemExit(0 if a else 1)\n")
    assert sorted(_bare_exits(tree)) == [3, 5, 6, 6]
    assert _bare_exits(ast.parse("def g():\n    return 80 - 2\n")) == []

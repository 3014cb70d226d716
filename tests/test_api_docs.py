"""docs/api.md and the package agree: every name its tables document can be imported where
the page says (a bare name from ``cuwheel``, a dotted one from its module), and every name
``cuwheel.__all__`` exports is documented there."""

from __future__ import annotations

import builtins
import importlib
import re
from pathlib import Path

import pytest

import cuwheel

API_MD = Path(__file__).resolve().parent.parent / "docs" / "api.md"
END = "## Where things go"  # the tables after it name files, not importable names

_SPAN = re.compile(r"`([^`]+)`")
_CALL = re.compile(r"^((?:cuwheel\.)?[A-Za-z_][\w.]*)\(")
_TYPE = re.compile(r"^[A-Z][a-z][A-Za-z0-9]*$|^__[a-z]+__$")
_DOTTED = re.compile(r"^cuwheel(\.\w+)+$")


def documented(text: str) -> tuple[set[str], set[str]]:
    """(bare names, dotted names) in the table cells of ``text`` before END: a call's name
    (``select(rows, ...)``), a type (``Inventory``), a dunder, or ``cuwheel.x.y``; argument
    names, attributes and values (``payload``, ``.plan``, ``WHEEL``) are not names."""
    bare: set[str] = set()
    dotted: set[str] = set()
    for line in text.split(END, 1)[0].splitlines():
        if not line.startswith("|") or set(line) <= {"|", "-", " "}:
            continue
        for span in _SPAN.findall(line):
            span = span.strip()
            m = _CALL.match(span)
            name = m.group(1) if m else span if (_TYPE.match(span) or _DOTTED.match(span)) else None
            if name is None or hasattr(builtins, name):
                continue
            (dotted if name.startswith("cuwheel.") else bare).add(name)
    return bare, dotted


def resolve(dotted: str) -> object:
    """The object a dotted name names: the longest importable module, then attributes."""
    parts = dotted.split(".")
    for cut in range(len(parts), 0, -1):
        try:
            obj: object = importlib.import_module(".".join(parts[:cut]))
        except ModuleNotFoundError:
            continue
        for attr in parts[cut:]:
            obj = getattr(obj, attr)
        return obj
    raise ModuleNotFoundError(dotted)


BARE, DOTTED = documented(API_MD.read_text("utf-8"))


def test_the_page_names_enough() -> None:
    # the parser reads the tables at all (a page rewritten into another layout would
    # otherwise pass with nothing checked)
    assert {"inspect", "select", "check_wheel", "evaluate", "Inventory", "ToolkitError"} <= BARE
    assert "cuwheel.plan.emit.nvcc_flags" in DOTTED


@pytest.mark.parametrize("name", sorted(BARE))
def test_documented_name_is_importable_from_cuwheel(name: str) -> None:
    assert name in cuwheel.__all__, f"docs/api.md documents {name}; cuwheel does not export it"
    assert getattr(cuwheel, name) is not None


@pytest.mark.parametrize("name", sorted(DOTTED))
def test_documented_dotted_name_is_importable(name: str) -> None:
    assert resolve(name) is not None


def test_every_export_is_documented() -> None:
    assert sorted(set(cuwheel.__all__) - BARE) == []


def test_exports_resolve() -> None:
    for name in cuwheel.__all__:
        assert getattr(cuwheel, name) is not None
    assert sorted(dir(cuwheel)) == sorted(cuwheel.__all__)


def test_the_parser_tells_names_from_other_text() -> None:
    page = (
        "| Call | Returns | Raises |\n|---|---|---|\n"
        "| `f(x, *, y=None)` / `cuwheel.m.g(z)` | `Thing`: its `.attr`, `WHEEL`, `payload`,"
        " `sm_90a` | `ValueError`, `BadError` |\n"
        "prose `NotATable` and `h()`\n"
        "## Where things go\n| `Later` | `k()` |\n"
    )
    assert documented(page) == ({"f", "Thing", "BadError"}, {"cuwheel.m.g"})

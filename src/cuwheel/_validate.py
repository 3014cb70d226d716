"""The one validation kit of cuwheel's TOML readers (the catalog's data files, the
``[tool.cuwheel]`` rows and the check policy): each records a problem and goes on, so that
every problem of a file is reported at once."""

from __future__ import annotations

import difflib
from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeVar

__all__ = ["Checker", "TableList", "did_you_mean", "nearest", "str_list"]


# Letters typed for the digits they look like (H1OO for H100, cu13O for cu130).
_LOOKALIKE = str.maketrans({"o": "0", "i": "1", "l": "1"})


def _folded(word: str) -> str:
    return "".join(word.lower().split()).translate(_LOOKALIKE)


def nearest(word: str, known: Sequence[str]) -> str | None:
    """The known word ``word`` most likely meant: one equal to it but for case, blanks and
    look-alike letters (O for 0, l or I for 1), else the closest spelling, else None."""
    folded = _folded(word)
    for k in known:
        if _folded(k) == folded and k != word:
            return k
    lowered = {k.lower(): k for k in known}
    close = difflib.get_close_matches(word.lower(), list(lowered), n=1, cutoff=0.6)
    return lowered[close[0]] if close and lowered[close[0]] != word else None


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the closest known word, or an empty string."""
    close = nearest(word, known)
    return f"; did you mean {close!r}?" if close else ""


def str_list(value: object, where: str, problems: list[str]) -> list[str]:
    """A string or a list of strings, as a list; anything else is a problem."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    problems.append(f"{where}: expected a string or a list of strings, got {value!r}")
    return []


_T = TypeVar("_T")


class TableList:
    """Marker for ``Checker.fields``: an array whose items are checked by the caller."""


class Checker:
    """Collects every problem of one data file instead of stopping at the first."""

    def __init__(self, file: str) -> None:
        self.file = file
        self.problems: list[str] = []

    def problem(self, where: str, message: str) -> None:
        self.problems.append(f"{self.file}: {where}: {message}")

    def fields(
        self,
        raw: object,
        where: str,
        required: Mapping[str, type],
        optional: Mapping[str, type] | None = None,
    ) -> dict[str, Any]:
        """Check a table's keys and value types; return the valid values."""
        optional = optional or {}
        if not isinstance(raw, dict):
            self.problem(where, f"expected a table, got {type(raw).__name__}")
            return {}
        out: dict[str, Any] = {}
        for key, value in raw.items():
            expected = required.get(key) or optional.get(key)
            if expected is None:
                self.problem(where, f"unknown key {key!r}")
            elif expected is TableList:
                if not isinstance(value, list):
                    self.problem(where, f"{key!r} must be an array")
                else:
                    out[key] = value
            elif expected is list and not (
                isinstance(value, list) and all(isinstance(v, str) for v in value)
            ):
                self.problem(where, f"{key!r} must be a list of strings")
            elif not isinstance(value, expected) or isinstance(value, bool) is not (
                expected is bool
            ):
                self.problem(where, f"{key!r} must be {expected.__name__}, got {value!r}")
            else:
                out[key] = value
        for key in required:
            if key not in raw:
                self.problem(where, f"missing key {key!r}")
        return dict(out)

    def convert(self, where: str, func: Callable[[str], _T], arg: str) -> _T | None:
        try:
            return func(arg)
        except ValueError as exc:
            self.problem(where, str(exc))
            return None


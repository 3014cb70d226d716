"""Small helpers shared by the config readers ([tool.cuwheel] rows and check policy):
each records a problem and goes on, so that every problem in a file is reported at once."""

from __future__ import annotations

import difflib
from collections.abc import Sequence


def did_you_mean(word: str, known: Sequence[str]) -> str:
    """``; did you mean 'x'?`` for the closest known word, or an empty string."""
    close = difflib.get_close_matches(word, list(known), n=1, cutoff=0.6)
    return f"; did you mean {close[0]!r}?" if close else ""


def str_list(value: object, where: str, problems: list[str]) -> list[str]:
    """A string or a list of strings, as a list; anything else is a problem."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return list(value)
    problems.append(f"{where}: expected a string or a list of strings, got {value!r}")
    return []

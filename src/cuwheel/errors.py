"""Exceptions of cuwheel; each owns the exit status the CLI gives it."""

from __future__ import annotations

__all__ = ["ConfigError", "CuwheelError", "InputError", "one_line"]


def one_line(text: str) -> str:
    """``text`` with control characters escaped: names read from hostile files (section
    names, member names) must not break a one-line error message."""
    if text.isprintable():
        return text
    return "".join(ch if ch.isprintable() else ch.encode("unicode_escape").decode() for ch in text)


class CuwheelError(Exception):
    """Base class: a problem that makes a run unusable (exit status 2)."""

    exit_code = 2


class InputError(CuwheelError):
    """An input file is truncated, corrupt, hostile or of an unknown kind.

    ``path`` names the file (with its container, e.g. ``x.whl!lib/a.so``) so that
    the one-line message says which input failed.
    """

    def __init__(self, path: str, problem: str) -> None:
        path, problem = one_line(path), one_line(problem)
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class ConfigError(CuwheelError):
    """A configuration file or option is invalid; ``problems`` lists every problem found."""

    def __init__(self, problems: list[str] | str) -> None:
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        super().__init__("; ".join(self.problems))

"""What every subcommand shares: one output grammar (``--format``, ``--json``, ``-o``,
``-q``, ``--color``), one way to write results and messages, colour on a terminal.

Exit status is owned by :func:`cuwheel.cli.main`: 0 ok, 1 findings / does not run, 2
unusable input or usage; a handler returns 0 or 1 and raises CuwheelError for 2.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
from typing import TextIO

from cuwheel.errors import CuwheelError
from cuwheel.render.escape import escape

CONFIG_HELP = (
    "pyproject.toml or rows file (default: the nearest cuwheel.toml, or pyproject.toml "
    "with [tool.cuwheel], in this directory or above; docs/config.md)"
)

__all__ = [
    "add_output", "color_enabled", "colorize", "error", "info", "warn", "write_output",
]  # fmt: skip


def add_output(
    p: argparse.ArgumentParser,
    formats: tuple[str, ...],
    default: str = "text",
    help: str | None = None,
) -> None:
    """``--format/-f``, ``--json`` (= --format json), ``-o FILE``, ``-q``, ``--color``."""
    detail = f"; {help}" if help else ""
    p.add_argument(
        "--format", "-f", choices=formats, default=default,
        help=f"output format: {', '.join(formats)} (default: {default}){detail}",
    )  # fmt: skip
    if "json" in formats:
        p.add_argument(
            "--json", action="store_const", dest="format", const="json",
            help="same as --format json",
        )  # fmt: skip
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write the result to FILE, not stdout ('-': stdout)")
    p.add_argument(
        "--quiet", "-q", action="store_true",
        help="print no result on stdout (errors still go to stderr; -o still writes)",
    )  # fmt: skip
    p.add_argument(
        "--color", choices=("auto", "always", "never"), default="auto",
        help="colour text results: auto (a terminal; NO_COLOR, FORCE_COLOR), always, never",
    )  # fmt: skip


def check_output_path(path: str) -> None:
    """A one-line CuwheelError (exit 2) when ``-o PATH`` cannot be written, before any work."""
    from pathlib import Path

    if path == "-":  # stdout, as in most tools
        return
    p = Path(path)
    if p.is_dir():
        raise CuwheelError(f"-o {escape(path)}: is a directory; name a file")
    parent = p.parent
    if not parent.is_dir():
        raise CuwheelError(f"-o {escape(path)}: directory {escape(str(parent))} does not exist")


def write_output(args: argparse.Namespace, text: str) -> None:
    """The result to ``-o FILE`` or stdout (``-o -``; nothing on stdout with ``-q``)."""
    path = getattr(args, "output", None)
    if path and path != "-":
        check_output_path(path)
        try:
            with open(path, "w", encoding="utf-8", errors="backslashreplace") as f:
                f.write(text)
        except OSError as exc:
            raise CuwheelError(f"-o {escape(path)}: {exc.strerror or exc}") from None
        return
    if getattr(args, "quiet", False):
        return
    if getattr(args, "format", "text") == "text" and color_enabled(args, sys.stdout):
        text = colorize(text)
    sys.stdout.write(text)


def _message(level: str, text: str) -> None:
    stream = sys.stderr
    line = f"cuwheel: {level}: {escape(text)}"
    if color_enabled(None, stream):
        line = line.replace(f"{level}:", _paint(level, f"{level}:"), 1)
    print(line, file=stream)


def error(text: str) -> None:
    _message("error", text)


def info(text: str) -> None:
    """What a command used (config, row) on stderr, where it does not mix with the result."""
    _message("info", text)


def warn(text: str) -> None:
    _message("warning", text)


def color_enabled(args: argparse.Namespace | None, stream: TextIO) -> bool:
    choice = getattr(args, "color", None) or os.environ.get("CUWHEEL_COLOR", "auto")
    if choice == "never":
        return False
    if choice == "always":
        return True
    # no-color.org and force-color.org: set and non-empty counts; NO_COLOR wins over both.
    if os.environ.get("NO_COLOR"):
        return False
    if os.environ.get("FORCE_COLOR"):
        return True
    if os.environ.get("TERM") == "dumb":
        return False
    return bool(getattr(stream, "isatty", lambda: False)())


_SGR = {"error": "1;31", "warning": "33", "info": "36", "FAIL": "1;31", "PASS": "1;32",
        "DOES NOT RUN": "1;31", "RUNS": "1;32", "waived": "2"}
_WORDS = re.compile(r"(?<![\w-])(error|warning|info|waived|FAIL|PASS|DOES NOT RUN|RUNS)(?=[\s:(])")


def _paint(word: str, text: str) -> str:
    return f"\x1b[{_SGR[word]}m{text}\x1b[0m"


def colorize(text: str) -> str:
    """Severities and verdicts of an (already escaped) text result in colour."""
    return _WORDS.sub(lambda m: _paint(m[1], m[1]), text)

"""Command-line interface: a thin layer that parses flags and calls the public API.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``handler`` (a function ``(args) -> int``) as a default.
"""

from __future__ import annotations

import argparse
import importlib
import sys
from collections.abc import Sequence

from cuwheel import __version__
from cuwheel.errors import CuwheelError

__all__ = ["main", "main_inner"]

# One line per subcommand module (module name under cuwheel.cli).
SUBCOMMANDS = [
    "_inspect",
    "_gpus",
    "_plan",
    "_compat",
    "_check",
    "_scan",
]


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's (the others' modules, and the
    libraries they import, are not loaded: start-up time matters in CI loops)."""
    parser = argparse.ArgumentParser(
        prog="cuwheel",
        description="Make CUDA wheels run on every GPU they claim.",
    )
    parser.add_argument("--version", action="version", version=f"cuwheel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        if only is None or name == f"_{only}":
            importlib.import_module(f"cuwheel.cli.{name}").register(sub)
    return parser


def main_inner(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; raises CuwheelError for unusable input or configuration."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Subcommand modules are named after their command (cuwheel.cli._inspect: inspect).
    first = argv[0] if argv else None
    only = first if first is not None and f"_{first}" in SUBCOMMANDS else None
    args = build_parser(only).parse_args(argv)
    handler = args.handler
    code: int = handler(args)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    try:
        return main_inner(argv)
    except CuwheelError as exc:
        print(f"cuwheel: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("cuwheel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0

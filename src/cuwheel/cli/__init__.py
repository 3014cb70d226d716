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
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="cuwheel",
        description="Make CUDA wheels run on every GPU they claim.",
    )
    parser.add_argument("--version", action="version", version=f"cuwheel {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    for name in SUBCOMMANDS:
        importlib.import_module(f"cuwheel.cli.{name}").register(sub)
    return parser


def main_inner(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; raises CuwheelError for unusable input or configuration."""
    args = build_parser().parse_args(argv)
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

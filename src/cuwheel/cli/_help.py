"""``cuwheel help [COMMAND]``: the same text as ``cuwheel [COMMAND] --help`` (as git, pip
and uv answer it)."""

from __future__ import annotations

import argparse
from typing import Any

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "help",
        help="a command's help: 'cuwheel help check' = 'cuwheel check --help'",
        description="Print the help of COMMAND (without one: the list of commands).",
    )
    p.add_argument("topic", nargs="?", metavar="COMMAND", help="the command to describe")
    p.set_defaults(handler=_run)


def _run(args: argparse.Namespace) -> int:
    from cuwheel.cli import main_inner

    # The command's own parser answers, so a mistyped name gets its suggestion there.
    return main_inner([args.topic, "--help"] if args.topic else ["--help"])


EXAMPLES = """\
examples:
  cuwheel help check                        every option of check
"""

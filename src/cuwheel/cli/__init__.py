"""Command-line interface: a thin layer that parses flags and calls the public API.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``handler`` (a function ``(args) -> int``) as a default.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import re
import sys
from collections.abc import Sequence
from typing import NoReturn

from cuwheel import __version__
from cuwheel._validate import did_you_mean
from cuwheel.errors import CatalogError, CuwheelError
from cuwheel.render.escape import escape

__all__ = ["main", "main_inner"]

# One line per subcommand module (module name under cuwheel.cli).
SUBCOMMANDS = [
    "_inspect",
    "_gpus",
    "_plan",
    "_compat",
    "_check",
    "_explain",
    "_doctor",
    "_toolkit",
    "_scan",
    "_init",
    "_size",
    "_variant",
]


class _Parser(argparse.ArgumentParser):
    """argparse with near-miss suggestions for choices and the subcommand's own usage on a
    bad flag (exit status 2, one line after the usage)."""

    def error(self, message: str) -> NoReturn:
        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            known = re.findall(r"'([^']*)'", m[2]) or [c.strip() for c in m[2].split(",")]
            hint = did_you_mean(m[1], known)
            if hint:
                message = f"{message}{hint}"
        self.print_usage(sys.stderr)
        self.exit(2, f"{self.prog}: error: {escape(message)}\n")


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's (the others' modules, and the
    libraries they import, are not loaded: start-up time matters in CI loops)."""
    parser = _Parser(
        prog="cuwheel",
        description="Make CUDA wheels run on every GPU they claim.",
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "--version", "-V", action="version", version=f"cuwheel {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in SUBCOMMANDS:
        if only is None or name == f"_{only}":
            module = importlib.import_module(f"cuwheel.cli.{name}")
            module.register(sub)
            examples = getattr(module, "EXAMPLES", None)
            if examples:  # each command's --help ends with its examples
                p = sub.choices[name[1:]]
                p.epilog = examples
                p.formatter_class = argparse.RawDescriptionHelpFormatter
    return parser


EPILOG = """\
examples:
  cuwheel inspect dist/*.whl            device code and CUDA linkage of wheels
  cuwheel check dist/                   check every wheel of a directory
  cuwheel explain DC001                 what a check code means, its causes and the fix
  cuwheel plan -f torch --train cu130   TORCH_CUDA_ARCH_LIST of a release row
  cuwheel compat x.whl --gpu "RTX 4090" --driver 580
  cuwheel gpus A100                     compute capability of a GPU
  cuwheel doctor                        why CUDA code fails on this machine
  cuwheel init --from dist/x.whl        a starting cuwheel.toml from a wheel's contents

exit status: 0 ok, 1 findings / does not run, 2 unusable input or usage.
"""


def _subparser(parser: argparse.ArgumentParser, command: str) -> argparse.ArgumentParser:
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            found = action.choices.get(command)
            if isinstance(found, argparse.ArgumentParser):
                return found
    return parser


def main_inner(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; raises CuwheelError for unusable input or configuration."""
    argv = list(sys.argv[1:] if argv is None else argv)
    # Subcommand modules are named after their command (cuwheel.cli._inspect: inspect).
    first = argv[0] if argv else None
    only = first if first is not None and f"_{first}" in SUBCOMMANDS else None
    parser = build_parser(only)
    if not argv:  # bare `cuwheel`: the help, not an error
        parser.print_help()
        return 0
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return 2
    if extra:  # the subcommand's usage, not the top-level one
        _subparser(parser, args.command).error(f"unrecognized arguments: {' '.join(extra)}")
    handler = args.handler
    code: int = handler(args)
    return code


def _safe_streams() -> None:
    """A strict stdout (LANG=C, PYTHONIOENCODING=ascii) must not turn a printable name
    into a UnicodeEncodeError: what it cannot encode is written as ``\\xNN``/``\\uNNNN``."""
    for stream in (sys.stdout, sys.stderr):
        reconfigure = getattr(stream, "reconfigure", None)
        if reconfigure is not None:
            with contextlib.suppress(ValueError, OSError):  # a detached stream
                reconfigure(errors="backslashreplace")


def main(argv: Sequence[str] | None = None) -> int:
    from cuwheel._signals import Terminated, terminate_cleanly

    _safe_streams()
    try:
        with terminate_cleanly():  # SIGTERM runs every clean-up (staging, downloads)
            return main_inner(argv)
    except CuwheelError as exc:
        from cuwheel.cli._common import error

        if isinstance(exc, CatalogError):  # a packaging bug: its list, line by line
            for line in str(exc).split("\n"):
                error(line)
        else:
            error(str(exc))
        hint = getattr(exc, "hint", None)
        if hint:
            for line in hint.split("\n"):
                print(f"    {escape(line)}", file=sys.stderr)
        return exc.exit_code
    except Terminated as exc:
        print("cuwheel: terminated", file=sys.stderr)
        return 128 + exc.signum
    except KeyboardInterrupt:
        print("cuwheel: interrupted", file=sys.stderr)
        return 130
    except BrokenPipeError:
        return 0

"""``cuwheel init``: write a starting configuration (cuwheel.toml, or [tool.cuwheel] appended
to pyproject.toml), from the built-in rows or from existing wheels."""

from __future__ import annotations

import argparse
import os
import sys
from typing import TYPE_CHECKING, Any

from cuwheel.cli._common import write_file
from cuwheel.errors import ConfigError, CuwheelError, Exit
from cuwheel.render.escape import escape

if TYPE_CHECKING:
    from pathlib import Path

__all__ = ["register"]


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "init",
        help="write a starting cuwheel.toml (or [tool.cuwheel] in pyproject.toml)",
        description=(
            "Write a commented starting configuration: the built-in release rows for the "
            "current CUDA trains on Linux x86_64 / aarch64 and Windows, or rows read off "
            "existing wheels (--from). Never overwrites a file without --force."
        ),
    )
    p.add_argument(
        "--from", dest="wheels", action="append", default=[], metavar="WHEEL",
        help="derive the rows from this wheel (repeatable): its train, platform, the SASS "
        "every library ships, its PTX and NVIDIA requirements",
    )  # fmt: skip
    p.add_argument("--train", action="append", default=[],
                   help="keep to this train: cu130, 13.0 or cpu (repeatable)")
    p.add_argument("--platform", action="append", default=[],
                   help="keep to this platform: linux-x86_64, linux-aarch64, win-amd64... "
                   "(repeatable)")
    p.add_argument("--pyproject", action="store_true",
                   help="append a [tool.cuwheel] table to ./pyproject.toml (or to -o FILE) "
                   "instead of writing cuwheel.toml")
    p.add_argument("--output", "-o", metavar="FILE",
                   help="write FILE instead of ./cuwheel.toml; '-' prints to stdout")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    p.add_argument(
        "--schema", metavar="PATH_OR_URL",
        help="the JSON Schema named by the '#:schema' line editors read (default: this "
        "version's schema at the project's URL; 'none' leaves the line out)",
    )  # fmt: skip
    p.set_defaults(handler=_run)


def _command(args: argparse.Namespace) -> str:
    words = ["cuwheel", "init"]
    for w in args.wheels:
        words += ["--from", w]
    for t in args.train:
        words += ["--train", t]
    for pl in args.platform:
        words += ["--platform", pl]
    if args.pyproject:
        words.append("--pyproject")
    import shlex

    return " ".join(shlex.quote(w) for w in words)


def _run(args: argparse.Namespace) -> int:
    from pathlib import Path

    from cuwheel.config_init import init_text, schema_url

    schema: str | None
    if args.schema is None:
        schema = schema_url()
    elif args.schema.strip().lower() == "none":
        schema = None
    else:
        schema = args.schema
    text = init_text(
        wheels=args.wheels, trains=args.train, platforms=args.platform,
        command=_command(args), schema=schema, pyproject=args.pyproject,
    )  # fmt: skip
    if args.output == "-":
        sys.stdout.write(text)
        return Exit.OK
    if args.pyproject:
        return _append(Path(args.output or "pyproject.toml"), text)
    if args.output is None and not args.force:
        _refuse_shadowing(Path("pyproject.toml"))
    return _write(Path(args.output or "cuwheel.toml"), text, args.force)


def _refuse_shadowing(pyproject: Path) -> None:
    """A cuwheel.toml beside a pyproject.toml with [tool.cuwheel] is found first and takes
    the table's place silently (docs/config.md): not without --force."""
    from cuwheel.config import read_config_text
    from cuwheel.config_init import has_table

    try:
        text = read_config_text(pyproject)  # bounded, regular (the config rule)
    except (OSError, ValueError):
        return
    if has_table(text):
        raise ConfigError(
            "./pyproject.toml has a [tool.cuwheel] table, and a cuwheel.toml beside it would "
            "be used instead; pass --force to write it anyway, or -o FILE"
        )


def _where(path: Path) -> str:
    return escape(os.fspath(path))


def _write(path: Path, text: str, force: bool) -> int:
    if path.is_dir():
        raise CuwheelError(f"{_where(path)}: is a directory; name a file")
    if not path.parent.is_dir():
        raise CuwheelError(f"{_where(path)}: directory {_where(path.parent)} does not exist")
    if os.path.lexists(path) and not force:
        raise ConfigError(f"{_where(path)} exists; pass --force to overwrite it, or -o FILE")
    # never through a link: --force replaces the project's file, not one it points at
    write_file(os.fspath(path), text, "", links=False)
    print(f"wrote {_where(path)}: {_rows(text)}; plan and check find it here and below")
    return Exit.OK


def _append(path: Path, table: str) -> int:
    from cuwheel.config import read_config_text
    from cuwheel.config_init import append_table

    if not path.is_file():
        raise ConfigError(f"{_where(path)}: no such file; --pyproject appends to an existing "
                          "pyproject.toml (without it, init writes cuwheel.toml)")
    if path.is_symlink():
        raise CuwheelError(f"{_where(path)}: is a symbolic link; not written through")
    try:
        existing = read_config_text(path)  # bounded, regular, UTF-8 (the config rule)
    except OSError as exc:
        raise CuwheelError(f"{_where(path)}: cannot read: {exc.strerror or exc}") from None
    except ValueError as exc:
        raise ConfigError(f"{_where(path)}: {exc}") from None
    combined = append_table(existing, table, _where(path))
    write_file(os.fspath(path), combined, "", links=False)  # whole, renamed into place
    print(f"appended [tool.cuwheel] to {_where(path)}: {_rows(table)}")
    return Exit.OK


def _rows(text: str) -> str:
    n = sum(1 for line in text.splitlines() if line.strip().endswith("rows]]"))
    return f"{n} row{'' if n == 1 else 's'}"

"""What every subcommand shares: one output grammar (``--format``, ``--json``, ``-o``,
``-q``, ``--color``), one way to write results and messages, colour on a terminal.

Exit status is owned by :func:`cuwheel.cli.main`: 0 ok, 1 findings / does not run, 2
unusable input or usage; a handler returns 0 or 1 and raises CuwheelError for 2.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import re
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING, TextIO

from cuwheel.errors import CuwheelError
from cuwheel.render.escape import escape

if TYPE_CHECKING:
    from cuwheel.compat import Driver, Target
    from cuwheel.config import Config

CONFIG_HELP = (
    "pyproject.toml or rows file (default: the nearest cuwheel.toml, or pyproject.toml "
    "with [tool.cuwheel], in this directory or above; docs/config.md)"
)

__all__ = [
    "add_output", "asked_targets", "color_enabled", "colorize", "error", "expand_targets",
    "info", "library_notes", "project_config", "text_width", "warn", "write_file", "write_output",
]  # fmt: skip


def project_config(args: argparse.Namespace) -> Config:
    """``--config FILE``, else (unless ``--isolated``) the nearest project configuration,
    else the built-in defaults."""
    from cuwheel.config import default_config, load_config

    if getattr(args, "isolated", False) and not getattr(args, "config", None):
        return default_config()
    return load_config(getattr(args, "config", None))


def expand_targets(values: list[str]) -> list[str]:
    """Targets as a user meant them: ``-`` is a list on standard input and ``@FILE`` a list
    in FILE (one a line; blank lines and ``#`` comments skipped), and a pattern the shell
    left alone (PowerShell, cmd and cibuildwheel's Windows test-command expand no ``*``;
    a quoted one anywhere) names the files it matches, in name order. A pattern matching
    nothing is a one-line error naming it. A URL is never a pattern."""
    import glob

    out: list[str] = []
    stdin_read = False
    for value in values:
        if value == "-" or (value.startswith("@") and len(value) > 1):
            from cuwheel.scan.inputs import read_list

            if value == "-":
                if stdin_read:
                    raise CuwheelError("'-' (targets on standard input) may be given once")
                stdin_read = True
            try:
                listed = read_list("-" if value == "-" else value[1:])
            except CuwheelError as exc:  # named as written: @FILE
                raise CuwheelError(f"{value}: {str(exc).partition(': ')[2]}") from None
            out.extend(expand_targets([v for v in listed if v != "-" and not v.startswith("@")]))
            continue
        if "://" in value or not any(c in value for c in "*?[") or os.path.exists(value):
            out.append(value)
            continue
        matches = sorted(glob.glob(value, recursive=True))
        if not matches:
            raise CuwheelError(f"{value}: no file matches this pattern")
        out.extend(matches)
    return out


def add_output(
    p: argparse.ArgumentParser,
    formats: tuple[str, ...],
    default: str = "text",
    help: str | None = None,
) -> None:
    """``--format/-f``, ``--json`` (= --format json), ``-o FILE``, ``-q``, ``--color``."""
    detail = f"; {help}" if help else ""
    p.add_argument(
        "--format", "-f", choices=formats, default=default, metavar="FORMAT",
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


def check_output_path(path: str, what: str = "-o") -> None:
    """A one-line CuwheelError (exit 2) when ``what PATH`` cannot be written, before any work."""
    from pathlib import Path

    if path == "-":  # stdout, as in most tools
        return
    p = Path(path)
    if p.is_dir():
        raise CuwheelError(f"{what} {escape(path)}: is a directory; name a file")
    parent = p.parent
    if not parent.is_dir():
        raise CuwheelError(f"{what} {escape(path)}: directory {escape(str(parent))} does not exist")


def write_file(path: str, text: str, what: str = "-o", *, links: bool = True) -> None:
    """The one place a result file is written (``-o``, ``compat --svg``, ``toolkit
    --lock``, ``init``): to a temporary file beside it, flushed and renamed into place, so
    a full disk or a kill leaves the previous file whole, never a cut-off document.  A
    path that is a stream (``/dev/stdout``, a FIFO) is written as a stream.  ``links``
    False: a path that is a symbolic link is refused (a project file that leads out of the
    project).  A one-line CuwheelError (exit 2) naming ``what`` and the path otherwise."""
    import stat
    import tempfile

    where = f"{what} {escape(path)}" if what else escape(path)
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if not links and os.path.islink(path):
        raise CuwheelError(f"{where}: is a symbolic link; not written through")
    data = text.encode("utf-8", "backslashreplace")
    if st is not None and not stat.S_ISREG(st.st_mode):
        if stat.S_ISDIR(st.st_mode):
            raise CuwheelError(f"{where}: is a directory; name a file")
        try:
            with open(path, "wb") as f:  # a terminal, a pipe: no file to replace
                f.write(data)
        except OSError as exc:
            raise CuwheelError(f"{where}: {exc.strerror or exc}") from None
        return
    real = os.path.realpath(path) if links else os.path.abspath(path)
    folder = os.path.dirname(real)
    if not os.path.isdir(folder):
        raise CuwheelError(f"{where}: directory {escape(folder)} does not exist")
    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=f".{os.path.basename(real)}.",
                                   suffix=".tmp")  # fmt: skip
        with os.fdopen(fd, "wb") as f:
            if st is not None:
                mode = stat.S_IMODE(st.st_mode)
            else:
                umask = os.umask(0)
                os.umask(umask)
                mode = 0o666 & ~umask
            if hasattr(os, "fchmod"):
                os.fchmod(f.fileno(), mode)
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, real)
        tmp = None
    except OSError as exc:
        raise CuwheelError(f"{where}: {exc.strerror or exc}") from None
    finally:
        if tmp is not None:
            with contextlib.suppress(OSError):
                os.unlink(tmp)


def write_output(args: argparse.Namespace, text: str) -> None:
    """The result to ``-o FILE`` (:func:`write_file`) or stdout (``-o -``; nothing on
    stdout with ``-q``); a stdout that cannot take it (a full disk, a closed descriptor)
    is a one-line CuwheelError (exit 2)."""
    path = getattr(args, "output", None)
    if path and path != "-":
        check_output_path(path)
        write_file(path, text)
        return
    if getattr(args, "quiet", False):
        return
    if getattr(args, "format", "text") == "text":
        width = text_width(sys.stdout)
        if width is not None and not getattr(args, "fits_itself", False):
            from cuwheel.render.fit import fit

            text = fit(text, width)
        if color_enabled(args, sys.stdout):
            text = colorize(text)
    write_stdout(text)


def write_stdout(text: str) -> None:
    """``text`` on stdout, flushed: a failure is one CuwheelError line, not a traceback
    at exit (a broken pipe stays BrokenPipeError: the reader left, cuwheel.cli.main)."""
    try:
        sys.stdout.write(text)
        sys.stdout.flush()
    except BrokenPipeError:
        raise
    except (OSError, ValueError, AttributeError) as exc:
        raise CuwheelError(f"stdout: {getattr(exc, 'strerror', None) or exc}") from None


def _is_terminal(stream: TextIO) -> bool:
    return bool(getattr(stream, "isatty", lambda: False)())


def fit_message(line: str, stream: TextIO) -> str:
    """A message fitted to a terminal; elsewhere (a CI log, a pipe) one line per problem,
    whatever ``COLUMNS`` says: that is what a log search or a test reads."""
    if not _is_terminal(stream):
        return line
    width = text_width(stream)
    if width is None or len(line) <= width:
        return line
    from cuwheel.render.fit import fit_line

    return "\n".join(fit_line(line, width))


def text_width(stream: TextIO) -> int | None:
    """The columns text results are fitted to: ``COLUMNS``, else the terminal's width;
    None for a pipe or file without ``COLUMNS`` (its lines are written whole, as ls and
    git do)."""
    env = os.environ.get("COLUMNS", "")
    if env.isdigit() and int(env) > 0:
        return int(env)
    if not getattr(stream, "isatty", lambda: False)():
        return None
    try:
        return os.get_terminal_size(stream.fileno()).columns or None
    except (AttributeError, ValueError, OSError):
        return None


def _message(level: str, text: str) -> None:
    stream = sys.stderr
    if stream is None:  # a closed stderr: print(file=None) would write it on stdout
        return
    line = f"cuwheel: {level}: {escape(text)}"
    line = fit_message(line, stream)
    with contextlib.suppress(OSError, ValueError):  # a stderr that fails says nothing
        if color_enabled(None, stream):
            line = line.replace(f"{level}:", _paint(level, f"{level}:"), 1)
        print(line, file=stream, flush=True)


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
    # bixense.com/clicolors: CLICOLOR_FORCE other than 0 colours a pipe too; CLICOLOR=0
    # turns a terminal's colour off.
    if os.environ.get("CLICOLOR_FORCE", "0") not in ("", "0"):
        return True
    if os.environ.get("CLICOLOR") == "0":
        return False
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


@contextlib.contextmanager
def library_notes() -> Iterator[None]:
    """The library's notes to the user (a renamed check code: errors.CodeRenamed) as one
    warning line each on stderr, whatever the interpreter's warning filters say."""
    import warnings

    from cuwheel.errors import CodeRenamed

    with warnings.catch_warnings():
        warnings.simplefilter("always", CodeRenamed)
        previous = warnings.showwarning

        def route(message: Warning | str, category: type[Warning], *a: object,
                  **k: object) -> None:
            if issubclass(category, CodeRenamed):
                warn(str(message))
            else:
                previous(message, category, *a, **k)  # type: ignore[arg-type]

        warnings.showwarning = route
        yield


def asked_targets(args: argparse.Namespace) -> tuple[Driver | None, list[Target]]:
    """The ``--driver`` and the GPUs ``--gpu`` and ``--cc`` name (compat and doctor ask
    alike)."""
    from cuwheel import compat

    driver = compat.parse_driver(args.driver) if args.driver else None
    targets = [t for name in args.gpu for t in compat.targets_for_gpu(name, driver)]
    targets += [compat.target_for_cc(cc, driver) for cc in args.cc]
    return driver, targets

"""Command-line interface: a thin layer that parses flags and calls the public API.

Each subcommand lives in its own module exposing ``register(subparsers)``, which adds
its parser and sets ``handler`` (a function ``(args) -> int``) as a default.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib
import os
import re
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from cuwheel import __version__
from cuwheel.errors import CatalogError, CuwheelError, Exit
from cuwheel.render.escape import escape

__all__ = ["entry", "main", "main_inner"]

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
    "_completion",
    "_help",
]


class _Parser(argparse.ArgumentParser):
    """argparse without prefix abbreviations (``--form`` is no ``--format``: an option added
    later must not change what a script's spelling means), and one line per usage error
    with the nearest known spelling of a mistyped option or value (exit status 2)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("allow_abbrev", False)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        from cuwheel._validate import did_you_mean

        m = re.search(r"invalid choice: '([^']*)' \(choose from (.*)\)", message)
        if m:
            known = re.findall(r"'([^']*)'", m[2]) or [c.strip() for c in m[2].split(",")]
            hint = did_you_mean(m[1], known)
            if hint:  # the nearest spelling, not the whole list
                message = f"{message[: m.start()]}invalid choice: {m[1]!r}{hint}"
        from cuwheel.cli._common import fit_message

        line = f"{self.prog}: error: {escape(message)} (see {self.prog} --help)"
        self.exit(Exit.UNUSABLE, fit_message(line, sys.stderr) + "\n")

    def unrecognized(self, extra: list[str]) -> NoReturn:
        """The first unknown option (with the nearest option of this command), else the
        stray arguments."""
        from cuwheel._validate import did_you_mean

        for word in extra:
            if word.startswith("-") and word != "-":
                flag = word.split("=", 1)[0]
                known = [o for o in self._option_string_actions if o.startswith("--")]
                self.error(f"unrecognized option {flag!r}{did_you_mean(flag, known)}")
        self.error(f"unrecognized arguments: {' '.join(extra)}")


class _Formatter(argparse.RawDescriptionHelpFormatter):
    """Prose paragraphs wrapped to the terminal (argparse reads ``COLUMNS``); a paragraph
    with an indented line (examples, lists) is kept as written. The width is read once per
    ``COLUMNS`` value: argparse makes a formatter for every option it adds."""

    def __init__(self, prog: str, indent_increment: int = 2, max_help_position: int = 24,
                 width: int | None = None) -> None:
        import os

        columns = _columns(os.environ.get("COLUMNS"))
        super().__init__(prog, indent_increment, max_help_position, width or columns)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        import textwrap

        out = []
        for para in text.strip("\n").split("\n\n"):
            if any(line[:1].isspace() for line in para.splitlines()):
                out.append(textwrap.indent("\n".join(_example_lines(para, width)), indent))
            else:
                out.append(textwrap.fill(" ".join(para.split()), width, initial_indent=indent,
                                         subsequent_indent=indent))
        return "\n\n".join(out) + ("\n" if text.endswith("\n") else "")


def _example_lines(para: str, width: int) -> list[str]:
    """An example block as written where it fits; a line too wide has its description
    (after a gap of two spaces or more) on the lines under the command."""
    import textwrap

    out: list[str] = []
    for line in para.splitlines():
        m = re.fullmatch(r"( *)(\S.*?\S) {2,}(\S.*)", line)
        if len(line) <= width:
            out.append(line)
            continue
        if m is None:  # one long command: continued with a backslash, as a shell reads it
            out += _continued(line, width)
            continue
        out.append(f"{m[1]}{m[2]}")
        out += textwrap.wrap(m[3], width, initial_indent=f"{m[1]}    ",
                             subsequent_indent=f"{m[1]}    ", break_long_words=False)
    return out


def _continued(line: str, width: int) -> list[str]:
    indent = " " * (len(line) - len(line.lstrip(" ")) + 4)
    out: list[str] = []
    while len(line) > width:
        cut = line.rfind(" ", len(indent), width - 1)
        # outside quotes only: inside, the next line's indent would join the argument
        while cut > len(indent) and (line[:cut].count("'") % 2 or line[:cut].count('"') % 2):
            cut = line.rfind(" ", len(indent), cut)
        if cut <= len(indent):
            break
        out.append(line[:cut] + " \\")
        line = indent + line[cut + 1 :]
    return [*out, line]


class _SubParser(_Parser):
    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)


@functools.lru_cache(maxsize=4)
def _columns(env: str | None) -> int:
    """shutil.get_terminal_size's answer (COLUMNS, else the terminal, else 80) less
    argparse's margin, without importing shutil (and its compressors) for a --help."""
    import os

    if env and env.isdigit() and int(env) > 0:
        return int(env) - 2
    try:
        return os.get_terminal_size(sys.__stdout__.fileno()).columns - 2  # type: ignore[union-attr]
    except (AttributeError, ValueError, OSError):
        return 80 - 2


class _Names:
    """Subparsers for the top-level help only: each command's name and one-line help are
    registered, its options (which that help does not show) are not built."""

    def __init__(self, real: Any) -> None:
        self._real = real
        self.choices = real.choices

    def add_parser(self, name: str, **kwargs: Any) -> Any:
        self._real.add_parser(name, help=kwargs.get("help"), add_help=False)
        return _Ignored()


class _Ignored:
    """A parser whose options are dropped (see _Names)."""

    def __getattr__(self, name: str) -> Any:
        return lambda *args, **kwargs: self


def build_parser(only: str | None = None, *, names_only: bool = False
                 ) -> argparse.ArgumentParser:
    """The parser; with ``only``, just that subcommand's (the others' modules, and the
    libraries they import, are not loaded: start-up time matters in CI loops); with
    ``names_only``, every command without its options (for ``cuwheel --help``)."""
    parser = _Parser(
        prog="cuwheel",
        description="Make CUDA wheels run on every GPU they claim.",
        epilog=EPILOG,
        formatter_class=_Formatter,
    )
    parser.add_argument(
        "--version", "-V", action="version", version=f"cuwheel {__version__}"
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_SubParser)
    for name in SUBCOMMANDS:
        if names_only:
            importlib.import_module(f"cuwheel.cli.{name}").register(_Names(sub))
        elif only is None or name == f"_{only}":
            module = importlib.import_module(f"cuwheel.cli.{name}")
            module.register(sub)
            p = sub.choices[name[1:]]
            p.epilog = getattr(module, "EXAMPLES", None)  # --help ends with its examples
            add_globals(p)
    add_globals(parser)
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

global options (before or after COMMAND): -q/--quiet, -v/--verbose, --color
auto|always|never (colour honours NO_COLOR, FORCE_COLOR and CLICOLOR_FORCE),
--isolated (no project configuration). 'cuwheel help CMD' = 'cuwheel CMD --help';
'cuwheel completion bash|zsh|fish|powershell' prints a completion script.

exit status: 0 ok, 1 findings / does not run, 2 unusable input or usage.
"""

# Options every command takes, before or after its name: flag -> takes a value.
GLOBALS = {"-q": False, "--quiet": False, "-v": False, "--verbose": False, "--color": True,
           "--isolated": False}


def add_globals(p: argparse.ArgumentParser) -> None:
    """``-q``, ``-v`` and ``--color`` on a parser that does not define them itself."""
    have = p._option_string_actions
    if "--quiet" not in have and "-q" not in have:
        p.add_argument("--quiet", "-q", action="store_true", help="print no result on stdout")
    if "--verbose" not in have and "-v" not in have:
        p.add_argument("--verbose", "-v", action="store_true", help="show every detail")
    if "--color" not in have:
        p.add_argument("--color", choices=("auto", "always", "never"), default=None,
                       help="colour: auto (a terminal; NO_COLOR, FORCE_COLOR), always, never")
    if "--isolated" not in have:
        p.add_argument("--isolated", action="store_true",
                       help="ignore cuwheel.toml and pyproject.toml: the built-in defaults")


def _hoist(argv: list[str]) -> tuple[list[str], str | None]:
    """Global options written before the command moved after it (the subcommand's parser
    owns them), and the command's name; a bad option before the command is a one-line
    usage error naming it."""
    leading: list[str] = []
    i = 0
    while i < len(argv) and argv[i].startswith("-") and argv[i] != "-":
        flag = argv[i].split("=", 1)[0]
        if flag in ("-h", "--help", "-V", "--version"):
            return argv, None
        if flag not in GLOBALS and not re.fullmatch(r"-[qv]+", flag):  # -qv: both
            from cuwheel._validate import did_you_mean

            known = [*GLOBALS, "--help", "--version"]
            raise CuwheelError(
                f"unrecognized option {flag!r}{did_you_mean(flag, known)} (cuwheel --help)"
            )
        takes = GLOBALS.get(flag, False) and "=" not in argv[i]
        leading += argv[i : i + 1 + takes]
        i += 1 + takes
    if i >= len(argv):
        return argv, None
    return [argv[i], *leading, *argv[i + 1 :]], argv[i]


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
    if argv in (["--version"], ["-V"]):  # no parser to build: a CI loop's first call
        print(f"cuwheel {__version__}")
        raise SystemExit(Exit.OK)  # as argparse's version action ends
    if argv in ([], ["-h"], ["--help"]):  # the commands' names and help, not their options
        build_parser(names_only=True).print_help()
        if argv:
            raise SystemExit(Exit.OK)  # as argparse's help action ends
        return Exit.OK  # bare `cuwheel`: the help, not an error
    argv, first = _hoist(argv)
    # Subcommand modules are named after their command (cuwheel.cli._inspect: inspect).
    only = first if first is not None and f"_{first}" in SUBCOMMANDS else None
    parser = build_parser(only)
    if not argv:  # bare `cuwheel`: the help, not an error
        parser.print_help()
        return Exit.OK
    args, extra = parser.parse_known_args(argv)
    if args.command is None:
        parser.print_help(sys.stderr)
        return Exit.UNUSABLE
    if extra:  # the subcommand's own options, not the top-level ones
        sub = _subparser(parser, args.command)
        own = sub if isinstance(sub, _Parser) else parser
        assert isinstance(own, _Parser)
        own.unrecognized(extra)
    for dest in ("targets", "wheels", "inputs"):  # -, @FILE, a pattern the shell left
        if getattr(args, dest, None):
            from cuwheel.cli._common import expand_targets

            setattr(args, dest, expand_targets(getattr(args, dest)))
    if args.isolated and getattr(args, "config", None):
        raise CuwheelError("--isolated and --config contradict each other: give one")
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


def _quiet_stdout() -> None:
    """After stdout failed, nothing more may reach it: not the interpreter's flush at exit
    (a second error, exit 120) and not a later line of a half-written document."""
    with contextlib.suppress(OSError, ValueError, AttributeError):
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)


def _stderr_usable() -> bool:
    """A stderr to say errors on: not closed (``2>&-``), so no error line can land on
    stdout (``print(file=None)`` writes there) and no result stands without its errors."""
    if sys.stderr is None:
        return False
    try:
        fd = sys.stderr.fileno()
    except (OSError, ValueError, AttributeError):
        return True  # a stream of no descriptor (one in memory) takes what is written
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def main(argv: Sequence[str] | None = None) -> int:
    if not _stderr_usable():
        return Exit.UNUSABLE  # nothing on stdout: a result whose errors cannot be said would lie
    _safe_streams()
    try:
        return _main_streams(argv)
    finally:
        cache = sys.modules.get("cuwheel.knowledge._cache")
        why = cache.refusal() if cache is not None else None
        if why:
            from cuwheel.cli._common import warn

            warn(why)


def _main_streams(argv: Sequence[str] | None) -> int:
    from cuwheel._signals import Terminated, terminate_cleanly
    from cuwheel.cli._common import library_notes

    try:
        # SIGTERM runs every clean-up (staging, downloads); renamed codes noted on stderr
        with terminate_cleanly(), library_notes():
            code = main_inner(argv)
        try:
            if sys.stdout is not None:
                sys.stdout.flush()
        except BrokenPipeError:
            raise
        except (OSError, ValueError) as exc:
            raise CuwheelError(f"stdout: {getattr(exc, 'strerror', None) or exc}") from None
        return code
    except CuwheelError as exc:
        if str(exc).startswith("stdout: "):
            _quiet_stdout()
        from cuwheel.cli._common import error

        if isinstance(exc, CatalogError):  # a packaging bug: its list, line by line
            for line in str(exc).split("\n"):
                error(line)
        else:
            error(str(exc))
        hint = exc.hint
        if hint:
            for line in hint.split("\n"):
                print(f"    {escape(line)}", file=sys.stderr)
        return exc.exit_code
    except Terminated as exc:
        print("cuwheel: terminated", file=sys.stderr)
        return Exit.signalled(exc.signum)
    except KeyboardInterrupt:
        print("cuwheel: interrupted", file=sys.stderr)
        return Exit.INTERRUPTED
    except BrokenPipeError:
        _quiet_stdout()
        return Exit.OK
    except OSError as exc:  # an output stream or file that failed past every other guard
        from cuwheel.cli._common import error

        if exc.filename is None:
            _quiet_stdout()
        error(f"{exc.filename or 'output'}: {exc.strerror or exc}")
        return Exit.UNUSABLE


def entry() -> None:
    """The ``cuwheel`` command (console script and ``python -m cuwheel``): main's status as
    the process's. A run ended by a signal exits as soon as its clean-up is done, without
    the interpreter's exit hooks: those join library threads (a process pool's manager)
    that a second Ctrl-C or a worker killed mid-write can leave waiting."""
    code = main()
    if code >= Exit.SIGNALLED:  # 130: SIGINT, 128 + N: SIGTERM / SIGHUP (clean-up already run)
        import os

        for stream in (sys.stdout, sys.stderr):
            with contextlib.suppress(Exception):
                stream.flush()
        os._exit(code)
    sys.exit(code)

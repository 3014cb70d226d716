"""Every exception cuwheel raises, in one place; each error of a run owns the exit status
the CLI gives it (2: unusable input, configuration or question).

Three channels are kept apart: a parser meets malformed bytes -> its :class:`Malformed`
subclass, which the reader turns into an :class:`InputError` naming the file (any other
exception from a parser is a bug); a configuration or question is wrong ->
:class:`ConfigError` / :class:`CompatError` listing every problem; a wheel breaks a rule ->
a finding, never an exception.
"""

from __future__ import annotations

from enum import IntEnum

__all__ = [
    "ArError",
    "ArchSpellingError",
    "CatalogError",
    "CodeRenamed",
    "CompatError",
    "ConfigError",
    "CuwheelError",
    "DownloadError",
    "ElfError",
    "Exit",
    "FatbinError",
    "IndexUnusable",
    "InputError",
    "JsonError",
    "Malformed",
    "NoGpuError",
    "PeError",
    "Stopped",
    "StreamError",
    "ToolkitError",
    "TrainSpellingError",
    "Unexpressible",
    "UnknownCode",
    "UnknownName",
    "one_line",
    "shown",
]


class Exit(IntEnum):
    """Every exit status cuwheel gives, in one table (docs/cli.md#exit-status); the errors
    (``CuwheelError.exit_code``) and the answers (``WheelState.exit_code``) own theirs from
    here, and the commands return these, never a bare number."""

    OK = 0  # all is well (or --exit-zero)
    NO = 1  # the answer is "no": failing findings, does not run, nothing matched
    UNUSABLE = 2  # the run could not answer: unusable input, an unreachable service
    RUNS_EXCEPT = 3  # compat / doctor: runs except named libraries
    DEPENDS = 4  # compat / doctor: depends on dispatch
    SIGNALLED = 128  # + the signal's number: SIGTERM, SIGHUP (clean-up done)
    INTERRUPTED = 130  # Ctrl-C (128 + SIGINT)

    @classmethod
    def signalled(cls, signum: int) -> int:
        """The status of a run ended by signal ``signum``."""
        return int(cls.SIGNALLED) + signum


def one_line(text: str) -> str:
    """``text`` with control characters escaped: names read from hostile files (section
    names, member names) must not break a one-line error message (the one escaping
    function, :func:`cuwheel._text.escape`)."""
    from cuwheel._text import escape

    return escape(text)


def shown(text: str, limit: int = 40) -> str:
    """``'text'`` quoted for a message: escaped, and cut after ``limit`` characters (a
    5,000-digit number is named, not echoed)."""
    cut = text if len(text) <= limit else text[:limit] + "..."
    return "'" + one_line(cut) + "'"


class CuwheelError(Exception):
    """Base class: a problem that makes a run unusable (exit status 2)."""

    exit_code: Exit = Exit.UNUSABLE
    hint: str | None = None  # lines the CLI prints under the message (what to do instead)


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

    def __init__(self, problems: list[str] | str, *, hint: str | None = None) -> None:
        if isinstance(problems, str):
            problems = [problems]
        self.problems = list(problems)
        # Lines printed after the message, as they are (a TOML snippet to paste).
        self.hint = hint
        super().__init__("; ".join(self.problems))


class CatalogError(CuwheelError):
    """A data file of the catalog is invalid (a packaging bug); ``problems`` lists all."""

    def __init__(self, problems: list[str] | tuple[str, ...]) -> None:
        self.problems = list(problems)
        super().__init__("invalid catalog data:\n  " + "\n  ".join(self.problems))


class UnknownName(CuwheelError, LookupError):
    """A catalog lookup found nothing (an unknown CUDA release, a torch version without
    data); the message lists what is known."""


class UnknownCode(UnknownName):
    """A check code or code prefix that names no code (``cuwheel explain DC01``); the
    message suggests the nearest known one."""


class CompatError(CuwheelError):
    """A compat question cannot be asked as given (unknown GPU, bad driver version ...)."""


class NoGpuError(CuwheelError):
    """No NVIDIA driver or GPU could be found on this machine."""


class ToolkitError(CuwheelError):
    """A CUDA toolkit cannot be assembled as asked: a train without a release, an archive
    whose checksum or size is wrong, a hostile archive member, a download that failed.
    The message is one line naming the file or URL and the problem; nothing is installed."""

    def __init__(self, message: str) -> None:
        super().__init__(one_line(message))


class Unexpressible(ConfigError):
    """A row cannot be written for a consumer (e.g. ``100f`` for CMake 3.25)."""

    def __init__(self, consumer: str, problems: list[str]) -> None:
        self.consumer = consumer
        super().__init__([f"{consumer}: {p}" for p in problems])


class CodeRenamed(FutureWarning):
    """A renamed check code was given (``--ignore``, a waiver, ``explain``): it still works,
    as its new name; the message is the deprecation note (data/codes.toml ``[[renamed]]``).
    A warning, not an error: the CLI prints it as one line on stderr."""


class ArchSpellingError(ValueError):
    """A text is not a valid architecture spelling, or a list cannot be spelled for a consumer."""


class TrainSpellingError(ValueError):
    """The text spells no CUDA train (cuwheel.model.train.parse_train_name)."""


class IndexUnusable(InputError):
    """The index as a whole cannot be used: every wheel of the run would say the same."""


class JsonError(ValueError):
    """A document that is not bounded, valid JSON; the message says why, in one line."""


class DownloadError(Exception):
    """A download that failed: ``problem`` says why (one line, without the URL);
    ``kept``: its partial file stays for a resumed run."""

    def __init__(self, url: str, problem: str, *, kept: bool = False) -> None:
        super().__init__(f"{url}: {problem}")
        self.url = url
        self.problem = problem
        self.kept = kept


class Stopped(Exception):
    """The run's Stop was set while this download was in flight."""


# ---------------------------------------------------------------------------- parsers


class Malformed(ValueError):
    """Bytes that break their format, raised by a parser; ``offset`` is where, when known.
    Readers turn it into an InputError (or a per-binary anomaly) naming the file."""

    def __init__(self, message: str, offset: int | None = None) -> None:
        super().__init__(message)
        self.offset = offset


class StreamError(Malformed):
    """A byte-range request is impossible (beyond the end of the file, absurd size)."""


class ElfError(Malformed):
    """A host ELF file is malformed."""


class PeError(Malformed):
    """A PE/COFF image is malformed."""


class ArError(Malformed):
    """An ar archive is malformed."""


class FatbinError(Malformed):
    """A fatbin container or entry header is malformed (message says which field)."""

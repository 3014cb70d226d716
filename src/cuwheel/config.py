"""``[tool.cuwheel]`` configuration: release rows, trains, and which row a build uses.

The built-in ``data/default_rows.toml`` has the same shape as ``[tool.cuwheel]`` and is
its schema.  A project's table replaces the defaults key by key (``rows`` as a whole).
Every problem in a file is reported at once (one :class:`ConfigError`), unknown keys with
a "did you mean".

Which row a build or a wheel uses is :mod:`cuwheel.plan.select`'s job.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from cuwheel._datafiles import DEFAULT_ROWS, data_path
from cuwheel._toml import tomllib
from cuwheel._validate import did_you_mean, str_list
from cuwheel.errors import ConfigError, shown
from cuwheel.knowledge import catalog
from cuwheel.model.arch import Arch, ArchSpellingError
from cuwheel.plan.rows import (
    DEPENDENCY_POLICIES,
    PTX_POLICIES,
    Project,
    Row,
    Train,
    check_rows,
    parse_train,
)

if TYPE_CHECKING:
    from cuwheel.checks.policy import CheckPolicy

__all__ = [
    "BUILT_IN",
    "Config",
    "check_consumer_version",
    "default_config",
    "load_config",
    "parse_config",
]

# A row name reaches $GITHUB_ENV, file names and XML: ASCII letters, digits and ._+-, at
# most 64 characters.
ROW_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]{0,63}", re.ASCII)
# torch-version / cmake-version: 1 to 4 ASCII numbers of at most 6 digits.
CUDA_ITEM_RE = re.compile(r"cpu|[0-9]{1,3}(\.[0-9]{1,3})?", re.ASCII)
CONSUMER_VERSION_RE = re.compile(r"[0-9]{1,6}(\.[0-9]{1,6}){0,3}", re.ASCII)


# A CPython a CUDA wheel is built for: 3.N, or 3.Nt for the free-threaded build (PEP 703).
PYTHON_VERSION_RE = re.compile(r"3\.(?:[0-9]|[1-9][0-9])t?", re.ASCII)


def check_python_version(value: str, key: str) -> str | None:
    """The problem with a ``python`` value of a matrix (2.7, 3, 3.12.1), or None."""
    if not PYTHON_VERSION_RE.fullmatch(value):
        return f"{key}: a Python version is 3.N or 3.Nt (3.12, 3.13t), got {shown(value)}"
    return None


def check_consumer_version(value: str, key: str) -> str | None:
    """The problem with a torch-version / cmake-version value, or None."""
    if not CONSUMER_VERSION_RE.fullmatch(value):
        return f"{key} must be a version like '2.14' or '3.31.6', got {shown(value)}"
    return None

TOP_KEYS = ("trains", "python", "torch-version", "cmake-version", "rows", "check")
ROW_KEYS = (
    "name", "platform", "cuda", "sass", "ptx", "dependencies", "note", "profile",
    "library-trains", "optional", "local-version",
)  # fmt: skip


BUILT_IN = "built-in defaults"


@dataclass(frozen=True)
class Config:
    """The release matrix and its settings, validated against the catalog."""

    rows: tuple[Row, ...]
    trains: tuple[Train, ...]  # trains the project releases
    python: tuple[str, ...]
    torch_version: str
    cmake_version: str
    source: str  # where it came from: a path or BUILT_IN
    warnings: tuple[str, ...] = ()
    # [tool.cuwheel.check] as validated; None: no table. Kept apart from `check` so that a
    # configuration without one loads no check code (plan's start-up, bench_startup.py).
    check_table: CheckPolicy | None = None

    @property
    def check(self) -> CheckPolicy:
        """What `cuwheel check` enforces: the table's policy, else the default one."""
        if self.check_table is not None:
            return self.check_table
        from cuwheel.checks.policy import CheckPolicy

        return CheckPolicy()

    @property
    def path(self) -> str | None:
        """The file the configuration came from; None for the built-in defaults."""
        return None if self.source == BUILT_IN else self.source

    @property
    def project(self) -> Project:
        """The release matrix alone, as plan's emitters take it."""
        return Project(
            self.rows, self.trains, self.python, self.torch_version, self.cmake_version
        )


def _did_you_mean(key: str, known: tuple[str, ...]) -> str:
    return did_you_mean(key, known) or f"; known keys: {', '.join(known)}"


def _archs(values: list[str], where: str, problems: list[str]) -> tuple[Arch, ...]:
    out: list[Arch] = []
    for v in values:
        try:
            out.append(Arch.parse(v))
        except ArchSpellingError as exc:
            problems.append(f"{where}: {exc}")
    return tuple(out)


def _parse_row(raw: object, index: int, problems: list[str]) -> Row | None:
    where = f"rows[{index}]"
    if not isinstance(raw, dict):
        problems.append(f"{where}: expected a table, got {raw!r}")
        return None
    for key in raw:
        if key not in ROW_KEYS:
            problems.append(f"{where}: unknown key {key!r}{_did_you_mean(key, ROW_KEYS)}")
    if "name" in raw and isinstance(raw["name"], str):
        where = f"rows[{index}] ({raw['name']!r})"
    if "cuda" not in raw:
        problems.append(f'{where}: missing key \'cuda\' (e.g. cuda = "13.0", "13" or "cpu")')
        return None
    cuda = [c.strip().lower() for c in str_list(raw["cuda"], f"{where}: cuda", problems)]
    cuda = [c[:-2] if c.endswith(".x") else c for c in cuda]
    bad = [c for c in cuda if not CUDA_ITEM_RE.fullmatch(c)]
    if bad:
        problems.extend(
            f"{where}: cuda must be 'cpu' or versions like '13', '13.x' or '12.6', got {shown(c)}"
            for c in bad
        )
        return None
    is_cpu = cuda == ["cpu"]
    if "cpu" in cuda and not is_cpu:
        problems.append(f"{where}: 'cpu' cannot be combined with CUDA versions")
    platform = raw.get("platform")
    if platform is not None and not isinstance(platform, str):
        problems.append(f"{where}: platform must be a string")
        platform = None
    if platform is None and not is_cpu:
        problems.append(f"{where}: a CUDA row needs a platform (e.g. 'linux-x86_64')")
    sass = _archs(str_list(raw.get("sass", []), f"{where}: sass", problems), where, problems)
    ptx_raw = raw.get("ptx", "none" if is_cpu else "newest")
    ptx: str | tuple[Arch, ...]
    if isinstance(ptx_raw, str) and ptx_raw in PTX_POLICIES:
        ptx = ptx_raw
    elif isinstance(ptx_raw, list):
        ptx = _archs(str_list(ptx_raw, f"{where}: ptx", problems), where, problems)
    else:
        problems.append(
            f"{where}: ptx must be 'newest', 'none' or a list of architectures, got {ptx_raw!r}"
        )
        ptx = "none"
    deps = raw.get("dependencies", "none" if is_cpu else "declare")
    if deps not in DEPENDENCY_POLICIES:
        problems.append(
            f"{where}: dependencies must be one of {', '.join(DEPENDENCY_POLICIES)}, got {deps!r}"
        )
        deps = "none"
    note = raw.get("note")
    if note is not None and not isinstance(note, str):
        problems.append(f"{where}: note must be a string")
        note = None
    profile = raw.get("profile")
    if profile is not None:
        from cuwheel.checks.profiles import profile_names

        if profile not in profile_names():
            problems.append(f"{where}: profile must be one of {sorted(profile_names())}, "
                            f"got {profile!r}")
            profile = None
    lib_trains: list[tuple[str, str]] = []
    raw_lt = raw.get("library-trains", {})
    if not isinstance(raw_lt, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in raw_lt.items()
    ):
        problems.append(f"{where}: library-trains must map path globs to trains ('cu118', "
                        "'13.0' or 'infer')")
    else:
        for glob_, train_name in raw_lt.items():
            if train_name != "infer":
                try:
                    parse_train(train_name)
                except ConfigError as exc:
                    problems.extend(f"{where}: library-trains {glob_!r}: {p}" for p in exc.problems)
                    continue
            lib_trains.append((glob_, train_name))
    optional = str_list(raw.get("optional", []), f"{where}: optional", problems)
    local_version = raw.get("local-version", True)
    if not isinstance(local_version, bool):
        problems.append(f"{where}: local-version must be true (the wheels carry +cuXYZ) or "
                        f"false (published without one), got {local_version!r}")
        local_version = True
    name = raw.get("name")
    if isinstance(name, str) and not ROW_NAME_RE.fullmatch(name):
        problems.append(
            f"{where}: name must be 1 to 64 ASCII letters, digits and '._+-' "
            f"(it reaches $GITHUB_ENV and file names), got {shown(name)}"
        )
        name = None
    if not isinstance(name, str):
        if name is not None and not isinstance(raw.get("name"), str):
            problems.append(f"{where}: name must be a string")
        name = "cpu" if is_cpu else f"{platform}-cu{'+'.join(c.replace('.', '') for c in cuda)}"
    return Row(
        name=name,
        platform=None if is_cpu else platform,
        cuda=() if is_cpu else tuple(cuda),
        sass=sass,
        ptx=ptx,
        dependencies=str(deps),
        note=note,
        profile=profile if isinstance(profile, str) else None,
        library_trains=tuple(lib_trains),
        optional=tuple(optional),
        local_version=local_version,
    )


def _defaults_table() -> dict[str, Any]:
    text = data_path(DEFAULT_ROWS)
    data: dict[str, Any] = tomllib.loads(text.read_text(encoding="utf-8"))
    data.pop("meta", None)
    return data


def parse_config(table: Mapping[str, Any], source: str) -> Config:
    """Validate a ``[tool.cuwheel]`` table (merged over the defaults); raises ConfigError."""
    problems: list[str] = []
    for key in table:
        if key not in TOP_KEYS:
            problems.append(
                f"{source}: [tool.cuwheel]: unknown key {key!r}{_did_you_mean(key, TOP_KEYS)}"
            )
    merged = {**_defaults_table(), **{k: v for k, v in table.items() if k in TOP_KEYS}}

    row_problems: list[str] = []
    raw_rows = merged.get("rows", [])
    if not isinstance(raw_rows, list):
        row_problems.append("rows: expected an array of tables ([[tool.cuwheel.rows]])")
        raw_rows = []
    rows = [r for i, raw in enumerate(raw_rows) if (r := _parse_row(raw, i, row_problems))]
    errors, warnings = check_rows(rows)
    problems.extend(f"{source}: {p}" for p in row_problems + errors)

    trains: list[Train] = []
    raw_trains = merged.get("trains", [])
    if "rows" in table and "trains" not in table:
        # The project's own rows without its own trains: the built-in trains are the seed
        # project's, so release what the rows cover (the newest release of each pattern).
        raw_trains = _trains_of(rows)
    for t in str_list(raw_trains, f"{source}: trains", problems):
        try:
            train = parse_train(t)
        except ConfigError as exc:
            problems.extend(f"{source}: trains: {p}" for p in exc.problems)
            continue
        trains.append(train)
        if not any(r.covers(train) for r in rows):
            problems.append(f"{source}: trains: {train} has no row; add one or drop the train")
    python = str_list(merged.get("python", []), f"{source}: python", problems)
    problems.extend(p for v in python if (p := check_python_version(v, f"{source}: python")))
    versions: dict[str, str] = {}
    for key in ("torch-version", "cmake-version"):
        value = merged.get(key)
        if not isinstance(value, str):
            problems.append(f"{source}: {key} must be a string like '2.14', got {value!r}")
            continue
        problem = check_consumer_version(value, key)
        if problem:
            problems.append(f"{source}: {problem}")
            continue
        versions[key] = value
    check = None
    if merged.get("check") is not None:
        from cuwheel.checks.policy import parse_check_table

        check = parse_check_table(merged["check"], f"{source}: [tool.cuwheel.check]", problems)
    if problems:
        raise ConfigError(problems)
    return Config(
        tuple(rows),
        tuple(trains),
        tuple(python),
        versions["torch-version"],
        versions["cmake-version"],
        source,
        tuple(f"{source}: {w}" for w in warnings),
        check,
    )


def _trains_of(rows: list[Row]) -> list[str]:
    out: list[str] = []
    for row in rows:
        if row.is_cpu:
            names = ["cpu"]
        else:
            names = []
            for pattern in row.cuda:
                covered = [r for r in catalog.releases()
                           if Row("x", row.platform, (pattern,)).covers(Train(r))]
                if covered:
                    names.append(covered[-1].train)
        out += [n for n in names if n not in out]
    return out


def default_config() -> Config:
    """The built-in release matrix (``data/default_rows.toml``)."""
    return parse_config({}, BUILT_IN)


CONFIG_NAMES = ("cuwheel.toml", "pyproject.toml")


def find_config(start: str | os.PathLike[str] | None = None) -> Path | None:
    """The nearest configuration at or above ``start`` (default: the current directory).

    Like ruff and pytest: in each directory from ``start`` up to the root, a
    ``cuwheel.toml`` counts, and so does a ``pyproject.toml`` holding ``[tool.cuwheel]``;
    a ``pyproject.toml`` without the table is passed over, so a project's own config is
    found from any of its subdirectories (docs/config.md)."""
    here = Path(start if start is not None else Path.cwd()).resolve()
    for directory in (here, *here.parents):
        own = directory / "cuwheel.toml"
        if own.is_file():
            return own
        pyproject = directory / "pyproject.toml"
        if pyproject.is_file() and _has_table(pyproject):
            return pyproject
    return None


MAX_CONFIG = 4 << 20  # a config of a thousand rows is ~100 KB


def read_config_text(p: Path) -> str:
    """A config file's text, read as every untrusted file is (cuwheel._paths: a regular
    file, never a FIFO, at most MAX_CONFIG bytes, its size known before a byte is read)
    and decoded by the stated rule (UTF-8; UTF-16/32 with a BOM); OSError, or ValueError
    whose message is one line."""
    from cuwheel._paths import decode_text, read_untrusted

    data = read_untrusted(os.fspath(p), MAX_CONFIG)
    if data is None:
        raise ValueError(f"larger than {MAX_CONFIG} bytes; not a configuration")
    return decode_text(data, strict=True)


def _has_table(pyproject: Path) -> bool:
    # An unreadable or invalid pyproject.toml is reported when it is loaded, not skipped:
    # passing over a broken file would silently apply someone else's rows.
    try:
        text = read_config_text(pyproject)
    except (OSError, ValueError):
        return True
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return True
    tool = data.get("tool")
    return isinstance(tool, dict) and "cuwheel" in tool


def load_config(path: str | os.PathLike[str] | None = None) -> Config:
    """Read ``[tool.cuwheel]`` from ``path`` (a pyproject.toml or a file shaped like the
    defaults).  Without a path: the nearest configuration above the current directory
    (:func:`find_config`), else the built-in defaults."""
    if path is None:
        found = find_config()
        if found is None:
            return default_config()
        path = found
        required = False
    else:
        required = True
    p = Path(path)
    try:
        data = tomllib.loads(read_config_text(p))
    except OSError as exc:
        raise ConfigError(f"{p}: cannot read: {exc.strerror or exc}") from None
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{p}: not valid TOML: {exc}") from None
    except RecursionError:
        raise ConfigError(f"{p}: not valid TOML: nested too deeply") from None
    except ValueError as exc:  # over MAX_CONFIG, or not UTF-8 (read_config_text)
        raise ConfigError(f"{p}: {exc}") from None
    if p.name == "pyproject.toml" or "tool" in data:
        tool = data.get("tool", {})
        table = tool.get("cuwheel") if isinstance(tool, dict) else None
        if table is None:
            if required:
                raise ConfigError(f"{p}: no [tool.cuwheel] table")
            return default_config()
        if not isinstance(table, dict):
            raise ConfigError(f"{p}: [tool.cuwheel] must be a table")
        return _parse_bounded(table, str(p))
    data.pop("meta", None)
    return _parse_bounded(data, str(p))


def _parse_bounded(table: Mapping[str, Any], source: str) -> Config:
    try:
        return parse_config(table, source)
    except RecursionError:  # a value nested so deeply that describing it recurses
        raise ConfigError(f"{source}: a value is nested too deeply") from None

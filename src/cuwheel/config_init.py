"""A starting configuration (``cuwheel init``): the TOML text of a ``cuwheel.toml`` or of a
``[tool.cuwheel]`` table to append to ``pyproject.toml``.

Two sources of rows:

* the template: the built-in starting rows (``data/init_rows.toml``) for the trains and
  platforms asked for (default: the platforms those rows are for), a row made up for a
  train no built-in row of that platform covers;
* existing wheels (``--from``): one row per (platform, train) of the wheels, the GPUs the
  roll-up finds each wheel runs on natively (:mod:`cuwheel.init_wheels`).

The TOML text is :mod:`cuwheel.init_toml`'s, read back by the loader before it is handed
out, so what ``init`` writes is a configuration ``plan`` and ``check`` accept.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace

from cuwheel._datafiles import CONFIG_SCHEMA, INIT_ROWS, data_path
from cuwheel._toml import tomllib
from cuwheel._version import __version__
from cuwheel.errors import ConfigError, shown
from cuwheel.init_toml import defaults_list, document, finish, toml_str
from cuwheel.init_wheels import DerivedRow, derive_rows
from cuwheel.knowledge import catalog
from cuwheel.knowledge.platforms import platform_record
from cuwheel.plan.rows import Row, Train, parse_train
from cuwheel.rules.judge import Rules

__all__ = [
    "DerivedRow",
    "append_table",
    "derive_rows",
    "has_table",
    "init_text",
    "schema_path",
    "schema_url",
    "toml_str",
]


def schema_path() -> str:
    """Where the installed ``data/config.schema.json`` is."""
    return str(data_path(CONFIG_SCHEMA))


def schema_url() -> str:
    """The ``#:schema`` init writes: this version's schema at the project's address, the
    same on every machine (a path into one venv would not be, and a committed file holds it)."""
    from cuwheel._urls import config_schema_url

    return config_schema_url(__version__)


# ----------------------------------------------------------------------------- template


def _parse_trains(names: Sequence[str]) -> list[Train]:
    out: list[Train] = []
    for n in names:
        t = parse_train(n)
        if t not in out:
            out.append(t)
    return out


def _check_platforms(names: Sequence[str]) -> list[str]:
    from cuwheel.plan.rows import platform_suggestion

    known = [p.name for p in catalog.load_catalog().platforms]
    out: list[str] = []
    for n in names:
        if n not in known:
            raise ConfigError(f"--platform: unknown platform {shown(n)}"
                              f"{platform_suggestion(n)}; known: {', '.join(known)}")
        if n not in out:
            out.append(n)
    return out


def _template_rows(
    trains: Sequence[Train], platforms: Sequence[str]
) -> list[tuple[Sequence[str], Row]]:
    from cuwheel.config import parse_config

    text = data_path(INIT_ROWS)
    data = tomllib.loads(text.read_text(encoding="utf-8"))
    data.pop("meta", None)  # where the rows come from: for readers, not a config key
    builtin = parse_config(data, INIT_ROWS).rows
    if not platforms:  # the platforms of the built-in rows
        platforms = list(dict.fromkeys(r.platform for r in builtin if r.platform is not None))
    rows: list[Row] = []
    notes: dict[str, list[str]] = {}
    for platform in platforms:
        own = [r for r in builtin if r.platform == platform]
        for train in trains:
            if train.is_cpu:
                continue
            hit = next((r for r in own if r.covers(train)), None)
            if hit is not None:
                if all(r.name != hit.name for r in rows):
                    rows.append(replace(hit, profile=None))
                continue
            model = platform if own else builtin[0].platform
            like = own or [r for r in builtin if r.platform == model]
            made = _made_up_row(train, platform, like)
            rows.append(made)
            notes[made.name] = [
                f"No built-in row for {train} on {platform}: the architectures of the "
                f"built-in {model} row that CUDA {made.cuda[0]} builds."
            ]
    if any(t.is_cpu for t in trains):
        rows.append(Row(name="cpu", platform=None, cuda=(), ptx="none", dependencies="none"))
        notes["cpu"] = ["The CPU wheels: no device code, no CUDA requirement."]
    return [(notes.get(r.name, ()), r) for r in rows]


def _made_up_row(train: Train, platform: str, like: Sequence[Row]) -> Row:
    """A row for a train no built-in row of the platform covers: the architectures of the
    platform's newest built-in row that this train's nvcc builds."""
    release = train.release
    assert release is not None
    model = max(like, key=lambda r: max((x.version for x in r.releases()), default=(0, 0)))
    sass = tuple(a for a in model.sass if release.accepts(a))
    if not sass:
        raise ConfigError(
            f"--train {train}: CUDA {release.name} builds none of {platform}'s architectures "
            f"({' '.join(a.sass for a in model.sass)}); write its row by hand"
        )
    ptx = model.ptx if isinstance(model.ptx, str) else "newest"
    # Windows wheels declare no NVIDIA packages (data/init_rows.toml's Windows row)
    deps = "none" if platform_record(platform).os == "windows" else "declare"
    return Row(name=f"{platform}-{train}", platform=platform, cuda=(release.name,),
               sass=sass, ptx=ptx, dependencies=deps)


def _template(
    trains: Sequence[str], platforms: Sequence[str], *, command: str, schema: str | None,
    pyproject: bool,
) -> str:
    builtin_trains = [parse_train(str(t)) for t in defaults_list("trains")]
    chosen = _parse_trains(trains) if trains else builtin_trains
    plats = _check_platforms(platforms) if platforms else []
    blocks = _template_rows(chosen, plats)
    released = [t for t in chosen if any(r.covers(t) for _, r in blocks)]
    if not blocks:
        raise ConfigError("nothing to write: no row for the trains and platforms asked for")
    return finish(document(released, blocks, command=command, schema=schema,
                             pyproject=pyproject), pyproject)


def _from_wheels(
    paths: Sequence[str], trains: Sequence[str], platforms: Sequence[str], *, command: str,
    schema: str | None, pyproject: bool, rules: Rules | None = None,
) -> str:
    derived = derive_rows(paths, rules=rules)
    if trains:
        wanted = _parse_trains(trains)
        derived = [d for d in derived if d.train in wanted]
    if platforms:
        plats = _check_platforms(platforms)
        derived = [d for d in derived if d.row.is_cpu or d.row.platform in plats]
    if not derived:
        raise ConfigError("nothing to write: no wheel of the trains and platforms asked for")
    trains_out: list[Train] = []
    for d in derived:
        if d.train not in trains_out:
            trains_out.append(d.train)
    trains_out.sort(key=lambda t: t.release.version if t.release else (0, 0))
    blocks = [(d.comments, d.row) for d in derived]
    text = document(trains_out, blocks, command=command, schema=schema, pyproject=pyproject)
    return finish(text, pyproject)


# ----------------------------------------------------------------------------- public


def init_text(
    *,
    wheels: Sequence[str] = (),
    trains: Sequence[str] = (),
    platforms: Sequence[str] = (),
    command: str = "cuwheel init",
    schema: str | None = None,
    pyproject: bool = False,
    rules: Rules | None = None,
) -> str:
    """The TOML text of a starting configuration.

    Without ``wheels``: the template (built-in rows of ``trains`` on ``platforms``; default:
    the built-in trains on Linux x86_64 / aarch64 and Windows x64).  With ``wheels``: rows
    read off them (:func:`derive_rows`), kept to ``trains`` / ``platforms`` when given.
    ``command`` is named in the first comment; ``schema`` (a path or URL) becomes a
    ``#:schema`` line for editors; ``pyproject``: a ``[tool.cuwheel]`` table to append to a
    pyproject.toml (no ``#:schema`` line: that would apply to the whole file).
    ConfigError / InputError (exit 2) for what cannot be made into rows.  ``rules``: the
    judge of the wheels (rules/judge.py; default: the shipped catalog's)."""
    if wheels:
        return _from_wheels(wheels, trains, platforms, command=command, schema=schema,
                            pyproject=pyproject, rules=rules)
    return _template(trains, platforms, command=command, schema=schema, pyproject=pyproject)


_TABLE_RE = re.compile(r"^\s*\[\[?\s*tool\s*\.\s*cuwheel\s*[.\]]", re.MULTILINE)


def has_table(pyproject_text: str) -> bool:
    """Whether a pyproject.toml already has a ``[tool.cuwheel]`` table (parsed when it is
    valid TOML, else looked for line by line)."""
    try:
        data = tomllib.loads(pyproject_text)
    except (tomllib.TOMLDecodeError, RecursionError):
        return bool(_TABLE_RE.search(pyproject_text))
    tool = data.get("tool")
    return isinstance(tool, dict) and "cuwheel" in tool


def append_table(pyproject_text: str, table_text: str, where: str = "pyproject.toml") -> str:
    """``pyproject_text`` with ``table_text`` appended after a blank line, the user's text
    kept byte for byte; ConfigError when it has the table already or is not valid TOML."""
    try:
        tomllib.loads(pyproject_text)
    except (tomllib.TOMLDecodeError, RecursionError) as exc:
        raise ConfigError(f"{where}: not valid TOML ({exc}); fix it first") from None
    if has_table(pyproject_text):
        raise ConfigError(f"{where}: already has a [tool.cuwheel] table; edit it, or remove "
                          "it and run init again")
    eol = "\r\n" if "\r\n" in pyproject_text else "\n"  # keep the file's line ends
    if not pyproject_text or pyproject_text.endswith(eol * 2):
        sep = ""
    elif pyproject_text.endswith(eol):
        sep = eol
    else:
        sep = eol * 2
    combined = pyproject_text + sep + table_text.replace("\n", eol)
    try:
        tomllib.loads(combined)
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{where}: the table would not fit in the file ({exc})") from None
    return combined

"""What every catalog data file shares: its ``[meta]`` table (title, compile date, sources)
and the value checks of the loaders (source marks, driver versions, sm names)."""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from cuwheel._validate import Checker
from cuwheel.errors import CatalogError
from cuwheel.model.arch import Arch

__all__ = [
    "SOURCE_MARKS",
    "DataSource",
    "driver_version",
    "each_table",
    "read_data_file",
    "read_meta",
    "sass_name",
    "source_mark",
    "tables",
]

SOURCE_MARKS = frozenset({"L", "D", "S", "P", "C", "?"})


@dataclass(frozen=True)
class DataSource:
    """The ``[meta]`` table of one data file: where its facts come from."""

    file: str
    title: str
    compiled: str
    sources: tuple[str, ...]
    note: str | None = None


def read_data_file(name: str) -> dict[str, Any]:
    """A data file shipped in ``cuwheel/data``, parsed; CatalogError when it is no TOML."""
    from cuwheel._datafiles import data_path  # here: a catalog from the cache needs neither
    from cuwheel._toml import tomllib

    text = data_path(name).read_text(encoding="utf-8")
    try:
        data: dict[str, Any] = tomllib.loads(text)
        return data
    except tomllib.TOMLDecodeError as exc:
        raise CatalogError([f"{name}: {exc}"]) from exc


def tables(data: Mapping[str, Any], key: str, chk: Checker) -> list[Any]:
    value = data.get(key, [])
    if not isinstance(value, list):
        chk.problem(key, "expected an array of tables")
        return []
    return value


def each_table(
    data: Mapping[str, Any],
    key: str,
    chk: Checker,
    required: Mapping[str, type],
    optional: Mapping[str, type] | None = None,
) -> Iterator[dict[str, Any]]:
    """The valid fields of each table of the array ``key`` (problems named ``key[i]``)."""
    for i, raw in enumerate(tables(data, key, chk)):
        yield chk.fields(raw, f"{key}[{i}]", required, optional)


def read_meta(data: Mapping[str, Any], chk: Checker) -> DataSource | None:
    m = chk.fields(
        data.get("meta"),
        "[meta]",
        {"title": str, "compiled": str, "sources": list},
        {"note": str, "unreleased": list},
    )
    if "compiled" in m and not re.fullmatch(r"\d{4}-\d{2}-\d{2}", m["compiled"]):
        chk.problem("[meta]", f"'compiled' must be a date YYYY-MM-DD: {m['compiled']!r}")
    if m.get("sources") == []:
        chk.problem("[meta]", "'sources' must name at least one source")
    if not {"title", "compiled", "sources"} <= m.keys():
        return None
    return DataSource(chk.file, m["title"], m["compiled"], tuple(m["sources"]), m.get("note"))


def source_mark(chk: Checker, where: str, value: str | None) -> str:
    if value is None:
        return "?"
    if value not in SOURCE_MARKS:
        chk.problem(where, f"source mark must be one of {sorted(SOURCE_MARKS)}: {value!r}")
    return value


def driver_version(chk: Checker, where: str, value: str | None) -> str | None:
    if value is not None and not re.fullmatch(r"\d+(\.\d+)*", value):
        chk.problem(where, f"not a driver version: {value!r}")
    return value


def sass_name(text: str) -> Arch:
    if not text.startswith("sm_"):
        raise ValueError(f"expected an sm_* name, got {text!r}")
    return Arch.parse(text)

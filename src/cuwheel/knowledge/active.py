"""The catalog a judgement uses and its judge's memo store, in force for a block
(rules/judge.py's Rules.active sets them; the rule modules read them and never import the
judge, so a catalog a caller builds reaches every rule: docs/api.md)."""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from cuwheel.knowledge.catalog import Catalog, load_catalog

__all__ = ["active_catalog", "active_memo", "catalog_active", "default_memos"]

# The catalog judged with now and the judge's memo store (Rules.memo, rules/judge.py):
# set together by Rules.active, read by the rule modules, which never import the judge.
_ACTIVE: contextvars.ContextVar[tuple[Catalog, dict[str, dict[Any, Any]]] | None] = (
    contextvars.ContextVar("catalog", default=None))


def active_catalog() -> Catalog:
    """The catalog of the Rules judging now (Rules.active), else the shipped one."""
    found = _ACTIVE.get()
    return found[0] if found is not None else load_catalog()


def active_memo(name: str) -> dict[Any, Any]:
    """The memo ``name`` of the Rules judging now (Rules.memo), else the shipped
    catalog's default Rules' (rules/judge.py)."""
    found = _ACTIVE.get()
    store = found[1] if found is not None else default_memos()
    memo = store.get(name)
    if memo is None:
        memo = store[name] = {}
    return memo


@functools.cache
def default_memos() -> dict[str, dict[Any, Any]]:
    """The memo store of the default Rules (the shipped catalog's, one per process)."""
    return {}


@contextmanager
def catalog_active(catalog: Catalog, memos: dict[str, dict[Any, Any]] | None = None
                   ) -> Iterator[Catalog]:
    """:func:`active_catalog` is ``catalog`` (and :func:`active_memo` reads ``memos``)
    inside the block (for Rules.active alone)."""
    token = _ACTIVE.set((catalog, memos if memos is not None else {}))
    try:
        yield catalog
    finally:
        _ACTIVE.reset(token)

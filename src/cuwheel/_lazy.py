"""Names of a package imported on first use (PEP 562 module ``__getattr__``), so that
``import cuwheel`` or ``cuwheel.checks`` costs no more than the command needs."""

from __future__ import annotations

import importlib
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["lazy_names"]


def lazy_names(
    package: str, where: Mapping[str, str], namespace: dict[str, Any], names: list[str]
) -> tuple[Callable[[str], Any], Callable[[], list[str]]]:
    """The module ``__getattr__`` and ``__dir__`` of ``package``: ``where`` maps each name
    to the module defining it (absolute, or relative to ``package`` when it starts with a
    dot); a name is imported once, then kept in ``namespace``."""

    def getattr_(name: str) -> Any:
        module = where.get(name)
        if module is None:
            raise AttributeError(f"module {package!r} has no attribute {name!r}")
        value = getattr(importlib.import_module(module, package), name)
        namespace[name] = value
        return value

    def dir_() -> list[str]:
        return names

    return getattr_, dir_

"""TOML reading on every supported Python, in one place: the standard library's ``tomllib``
from 3.11, its backport ``tomli`` on 3.10 (a dependency there, pyproject.toml)."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - exercised on 3.10 only
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

__all__ = ["tomllib"]

"""The one envelope of every JSON document cuwheel writes, and the shipped schemas.

Every document starts with the same five keys (docs/json.md)::

    {"schema": "cuwheel-<command>", "version": N, "tool": {"name": "cuwheel", "version": ...},
     "config": "<file the rows and policy came from>" | null, "row": "<row name>" | null, ...}

``version`` is the version of that command's document; it grows when a key is removed or
changes meaning (a new key is not a new version).  ``data/<command>.schema.json`` is the
JSON Schema of each (draft 2020-12), shipped in the package.
"""

from __future__ import annotations

import json
from functools import cache
from typing import Any

from cuwheel._datafiles import data_path, schema_name
from cuwheel._version import __version__

__all__ = ["COMMANDS", "ENVELOPE_KEYS", "SCHEMAS", "envelope", "load_schema"]

ENVELOPE_KEYS = ("schema", "version", "tool", "config", "row")

# Document version per command.  2: the common envelope replaced inspect's and plan's
# ``schema_version`` and compat's ``"cuwheel-compat/1"``, and was added to check.
# explain 2: an error text's diagnosis (facts, causes, distributions) replaced its matches.
COMMANDS: dict[str, int] = {
    "inspect": 2,
    "plan": 2,
    "check": 2,
    "compat": 3,
    "compat-matrix": 3,
    "explain": 2,
    "doctor": 1,
    "gpus": 1,
    "scan-summary": 2,
    "toolkit": 1,
    "size": 1,
    "variant": 1,
}


def envelope(
    command: str, *, config: str | None = None, row: str | None = None
) -> dict[str, Any]:
    """The leading keys of ``command``'s JSON document; callers add their own after them."""
    return {
        "schema": f"cuwheel-{command}",
        "version": COMMANDS[command],
        "tool": {"name": "cuwheel", "version": __version__},
        "config": config,
        "row": row,
    }


# ``plan --format matrix`` is a GitHub Actions matrix (``{"include": [...]}``), read by
# ``fromJSON``: any other top-level key would become a matrix dimension, so it has a schema
# but no envelope.
SCHEMAS = (*COMMANDS, "matrix")


@cache
def _schema_text(command: str) -> str:
    if command not in SCHEMAS:
        raise KeyError(command)
    text: str = data_path(schema_name(command)).read_text("utf-8")
    return text


def load_schema(command: str) -> dict[str, Any]:
    """The JSON Schema of ``command``'s document (a fresh copy each call)."""
    schema: dict[str, Any] = json.loads(_schema_text(command))
    return schema

"""The one loader for every JSON document cuwheel reads from outside its own package
(redist manifests, lockfiles, index pages, pip reports, scan records and caches), bounded
before ``json`` sees it (docs/scan.md, docs/toolkit.md: trust boundaries):

* at most ``max_bytes`` of text;
* arrays and objects nested at most ``max_depth`` deep (the C parser recurses, and so do
  the walkers of a record: a 100,000-deep document is refused, not a RecursionError);
* numbers of at most ``MAX_DIGITS`` characters, finite (no ``NaN``, ``Infinity``, no
  ``1e999`` that becomes ``inf``): a 100,000-digit integer is refused, not converted.

Any violation, and any invalid JSON or undecodable UTF-8, is a :class:`JsonError` whose
message is one line; the caller names the file.
"""

from __future__ import annotations

import json
import math
from typing import Any

from cuwheel.errors import JsonError

__all__ = ["MAX_DEPTH", "MAX_DIGITS", "load_json"]

MAX_DEPTH = 64
MAX_DIGITS = 40
MAX_BYTES = 64 << 20


def _depth(doc: Any, limit: int) -> None:
    """JsonError when ``doc`` nests deeper than ``limit`` (iterative: a walk that cannot
    itself run out of stack)."""
    stack: list[tuple[Any, int]] = [(doc, 1)]
    pop, push = stack.pop, stack.append
    while stack:
        node, depth = pop()
        if depth > limit:
            raise JsonError(f"nested more than {limit} deep")
        items = node.values() if type(node) is dict else node
        for child in items:
            if type(child) is dict or type(child) is list:
                push((child, depth + 1))


def _int(text: str) -> int:
    if len(text) > MAX_DIGITS:
        raise JsonError(f"a number of {len(text)} digits (at most {MAX_DIGITS})")
    return int(text)


def _float(text: str) -> float:
    if len(text) > MAX_DIGITS:
        raise JsonError(f"a number of {len(text)} characters (at most {MAX_DIGITS})")
    value = float(text)
    if not math.isfinite(value):
        raise JsonError(f"number {text} is out of range")
    return value


def _constant(text: str) -> Any:
    raise JsonError(f"{text} is not a JSON number")


def load_json(
    data: bytes | str, *, max_bytes: int = MAX_BYTES, max_depth: int = MAX_DEPTH
) -> Any:
    """The document in ``data``; JsonError when it is too large, too deep, holds an
    unbounded number, or is not UTF-8 JSON."""
    if len(data) > max_bytes:
        raise JsonError(f"larger than {max_bytes} bytes")
    if isinstance(data, bytes):
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise JsonError(f"not UTF-8 (byte {exc.start})") from None
    else:
        text = data
    if text.startswith("\ufeff"):
        text = text[1:]
    try:
        doc = json.loads(text, parse_int=_int, parse_float=_float, parse_constant=_constant)
    except JsonError:
        raise
    except RecursionError:  # the C parser's own guard, far deeper than max_depth
        raise JsonError(f"nested more than {max_depth} deep") from None
    except ValueError as exc:
        raise JsonError(f"not valid JSON: {str(exc).splitlines()[0]}") from None
    if type(doc) is dict or type(doc) is list:
        _depth(doc, max_depth)
    return doc

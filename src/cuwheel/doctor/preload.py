"""A package's own preload list (``data/loaders.toml`` ``[[preload_list]]``: faiss-gpu-cu12's
``faiss/PRELOAD_SHARED_LIBRARIES.json``), read as untrusted input.

The list names each library by a regular expression its package applies with
``re.search``.  The file comes from a site cuwheel does not trust, so its expressions are
never handed to ``re``, whose backtracking can take exponential time on a crafted pattern:
the subset real lists use (literal characters, ``.``, ``[...]`` classes, ``\\`` escapes,
``*`` / ``+`` / ``?`` on one of those, ``^`` and ``$``) is matched here in time linear in
the name times the pattern (docs/trust.md); any other expression names nothing.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence

from cuwheel._json import load_json
from cuwheel._paths import read_untrusted
from cuwheel.doctor.environment import Environment
from cuwheel.errors import JsonError

__all__ = ["MAX_LIST", "MAX_PATTERN", "compile_pattern", "preload_list"]

MAX_LIST = 1 << 16  # bytes of a preload list read; real ones are a few hundred
MAX_PATTERN = 256  # characters of one expression
_MAX_NAME = 4096  # characters of a file name matched (longer: no match)

Atom = Callable[[str], bool]
Step = tuple[Atom, str]  # (what one character must be, "" / "*" / "+" / "?")


def _equal(c: str) -> Atom:
    return lambda x: x == c


def _word(x: str) -> bool:
    return x.isalnum() or x == "_"


def _any(x: str) -> bool:
    return x != "\n"


def _class(body: str) -> Atom | None:
    """``[...]`` without its brackets: ranges, single characters, a leading ``^``."""
    negate = body.startswith("^")
    body = body[1:] if negate else body
    if not body or "\\" in body or "[" in body:
        return None
    spans: list[tuple[str, str]] = []
    i = 0
    while i < len(body):
        if i + 2 < len(body) and body[i + 1] == "-":
            spans.append((body[i], body[i + 2]))
            i += 3
        else:
            spans.append((body[i], body[i]))
            i += 1
    return lambda c: any(lo <= c <= hi for lo, hi in spans) != negate


def compile_pattern(pattern: str) -> tuple[bool, bool, tuple[Step, ...]] | None:
    """(anchored at the start, at the end, the steps) of ``pattern``, or None when it is
    outside the subset this module matches (a group, an alternation, a repeat count, a
    back-reference, a quantifier with nothing to repeat)."""
    if len(pattern) > MAX_PATTERN:
        return None
    start = pattern.startswith("^")
    end = pattern.endswith("$") and not pattern.endswith("\\$")
    body = pattern[int(start) : len(pattern) - int(end)]
    steps: list[Step] = []
    i = 0
    while i < len(body):
        c = body[i]
        atom: Atom | None
        if c in "()|{}^$":
            return None
        if c in "*+?":
            if not steps or steps[-1][1]:
                return None  # nothing to repeat, or a repeat of a repeat
            steps[-1] = (steps[-1][0], c)
            i += 1
            continue
        if c == "\\":
            if i + 1 >= len(body) or (body[i + 1].isalnum() and body[i + 1] not in "dw"):
                return None  # \1, \b, \A ...: not in the subset
            e = body[i + 1]
            atom = str.isdigit if e == "d" else _word if e == "w" else _equal(e)
            i += 2
        elif c == "[":
            close = body.find("]", i + 2)
            atom = _class(body[i + 1 : close]) if close > 0 else None
            i = close + 1
        elif c == ".":
            atom, i = _any, i + 1
        else:
            atom, i = _equal(c), i + 1
        if atom is None:
            return None
        steps.append((atom, ""))
    return start, end, tuple(steps)


def _closure(states: set[int], steps: Sequence[Step]) -> set[int]:
    """States reachable without a character: past every ``*`` / ``?`` step."""
    out = set(states)
    todo = list(states)
    while todo:
        s = todo.pop()
        if s < len(steps) and steps[s][1] in ("*", "?") and s + 1 not in out:
            out.add(s + 1)
            todo.append(s + 1)
    return out


def search(compiled: tuple[bool, bool, tuple[Step, ...]], name: str) -> bool:
    """``re.search`` of the subset, by simulating every position at once (no backtracking)."""
    start, end, steps = compiled
    if len(name) > _MAX_NAME:
        return False
    final = len(steps)
    states = _closure({0}, steps)
    for ch in name:
        if final in states and not end:
            return True
        nxt: set[int] = set()
        for s in states:
            if s < final and steps[s][0](ch):
                nxt.add(s + 1)
                if steps[s][1] in ("*", "+"):
                    nxt.add(s)
        if not start:
            nxt.add(0)  # a match may begin at the next character
        states = _closure(nxt, steps)
    return final in states


def preload_list(env: Environment, file: str) -> list[str]:
    """The files a package's preload list names (conventions.PreloadList), in its order:
    per entry, the first installed file of ``package_name`` whose base name the entry's
    ``filename_regex`` matches.  A list that cannot be read (not a regular file, larger
    than MAX_LIST, outside its site after links, not JSON), an entry of another shape, an
    expression outside the subset or a distribution not installed names nothing."""
    for site in env.sites:
        path = os.path.join(site, file)
        if not os.path.lexists(path):
            continue
        try:
            raw = read_untrusted(path, MAX_LIST, root=site)
            entries = load_json(raw) if raw is not None else None
        except (OSError, JsonError):
            entries = None
        out: list[str] = []
        for e in entries if isinstance(entries, list) else []:
            if not (isinstance(e, dict) and isinstance(e.get("package_name"), str)
                    and isinstance(e.get("filename_regex"), str)):
                continue
            pattern = compile_pattern(e["filename_regex"])
            dist = env.distribution(e["package_name"])
            if pattern is None or dist is None:
                continue
            hit = next((p for p in dist.files if search(pattern, os.path.basename(p))), None)
            if hit is not None:
                out.append(hit)
        return out
    return []

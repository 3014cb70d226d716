"""The TOML text ``cuwheel init`` writes (docs/config.md#init): TOML basic strings and
comments that hostile text cannot break, a release row as ``[[rows]]`` lines, the document
around the rows, and the check that what is handed out loads.

Every text made here is read back by the configuration loader (:func:`finish`) before it is
handed out, so what ``init`` writes is a configuration ``plan`` and ``check`` accept.
"""

from __future__ import annotations

import os
import textwrap
from collections.abc import Iterable, Sequence

from cuwheel._datafiles import DEFAULT_ROWS, data_path
from cuwheel._toml import tomllib
from cuwheel._version import __version__
from cuwheel.errors import ConfigError, shown
from cuwheel.plan.rows import Row, Train

__all__ = ["comment_directive", "defaults", "defaults_list", "document", "finish", "toml_str"]


def toml_str(text: str) -> str:
    """A TOML basic string: quotes, backslashes and controls escaped; an undecodable byte
    (a lone surrogate) becomes U+FFFD."""
    out = ['"']
    for ch in text:
        o = ord(ch)
        if ch in '"\\':
            out.append("\\" + ch)
        elif o < 0x20 or o == 0x7F:
            out.append(f"\\u{o:04x}")
        elif 0xD800 <= o <= 0xDFFF:
            out.append("\ufffd")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def _comment(text: str) -> str:
    """One comment line: line breaks and controls cannot end the comment early."""
    clean = "".join(
        ch if ch.isprintable() and not 0xD800 <= ord(ch) <= 0xDFFF else "?" for ch in text
    )
    return f"# {clean}".rstrip()


def _str_list(values: Iterable[str]) -> str:
    return "[" + ", ".join(toml_str(v) for v in values) + "]"


def _row_lines(row: Row, prefix: str) -> list[str]:
    lines = [f"[[{prefix}rows]]", f"name = {toml_str(row.name)}"]
    if row.is_cpu:
        lines.append('cuda = "cpu"')
        lines.append('dependencies = "none"')
        return lines
    assert row.platform is not None
    lines.append(f"platform = {toml_str(row.platform)}")
    cuda = row.cuda[0] if len(row.cuda) == 1 else list(row.cuda)
    lines.append(f"cuda = {toml_str(cuda) if isinstance(cuda, str) else _str_list(cuda)}")
    lines.append(f"sass = {_str_list(a.sass for a in row.sass)}")
    if isinstance(row.ptx, str):
        lines.append(f"ptx = {toml_str(row.ptx)}")
    else:
        lines.append(f"ptx = {_str_list(a.ptx for a in row.ptx)}")
    lines.append(f"dependencies = {toml_str(row.dependencies)}")
    if row.library_trains:
        items = ", ".join(f"{toml_str(g)} = {toml_str(t)}" for g, t in row.library_trains)
        lines.append(f"library-trains = {{ {items} }}")
    if row.profile:
        lines.append(f"profile = {toml_str(row.profile)}")
    if not row.local_version:
        lines.append("local-version = false")
    if row.note:
        lines.append(f"note = {toml_str(row.note)}")
    return lines


_HEAD_KEYS = """\
# Trains this project releases: `cuwheel plan --format matrix` stays inside them, and each
# needs a row below.  cuXYZ names a CUDA release (cu130 = CUDA 13.0); cpu the CPU wheels.
trains = {trains}
# Python versions of the matrix.
python = {python}
# The consumer versions that read the emitted lists (TORCH_CUDA_ARCH_LIST, CMake).
torch-version = {torch}
cmake-version = {cmake}
"""

_ROWS_DOC = """\
# Release rows: a CUDA train on one platform -> the SASS architectures to build, the PTX
# to embed ("newest": PTX of the highest SASS, "none", or a list) and whether the wheel
# declares its NVIDIA packages ("declare") or bundles / needs none ("none").  A row's cuda
# is a major ("13": every 13.x release), one release ("12.6") or a list of them.  Wheels
# are checked against the row their +cuXYZ local version, or the CUDA release their own
# libraries record, names on their platform tag.  A row holds its wheels to exactly these
# architectures, both ways, and its PTX in every library (profile "release", the default);
# profile = "audit" judges them only by what loads on each listed GPU (docs/checks.md).
"""


def document(
    trains: Sequence[Train],
    blocks: Sequence[tuple[Sequence[str], Row]],
    *,
    command: str,
    schema: str | None,
    pyproject: bool,
    extra_comments: Sequence[str] = (),
) -> str:
    defaults_ = defaults()
    prefix = "tool.cuwheel." if pyproject else ""
    out = [_comment(f"Written by `{command}` (cuwheel {__version__}); docs/config.md.")]
    if schema and not pyproject:
        out.append(comment_directive(schema))
    out += [_comment(c) for c in extra_comments]
    out.append("")
    if pyproject:
        out.append("[tool.cuwheel]")
    out.append(
        _HEAD_KEYS.format(
            trains=_str_list(t.name for t in trains),
            python=_str_list(str(v) for v in defaults_list("python")),
            torch=toml_str(str(defaults_.get("torch-version", ""))),
            cmake=toml_str(str(defaults_.get("cmake-version", ""))),
        )
    )
    out.append(_ROWS_DOC.rstrip("\n"))
    for comments, row in blocks:
        out.append("")
        for c in comments:  # wrapped at blanks only: a path or requirement stays whole
            out += [_comment(line) for line in textwrap.wrap(
                c, 88, break_long_words=False, break_on_hyphens=False)]
        out += _row_lines(row, prefix)
    return "\n".join(out) + "\n"


def comment_directive(schema: str) -> str:
    # Taplo and Tombi read a "#:schema PATH-OR-URL" comment at the top of a document
    # (docs/config.md#editors).  A path with blanks in it is written as a file: URL.
    if all(ch.isprintable() and not ch.isspace() for ch in schema):
        return f"#:schema {schema}"
    if os.path.isabs(schema) and all(ch.isprintable() for ch in schema):
        from pathlib import Path

        return f"#:schema {Path(schema).as_uri()}"
    raise ConfigError(f"--schema {shown(schema)}: a #:schema line takes a URL or a path "
                      "without blanks (or an absolute path)")


def defaults() -> dict[str, object]:
    text = data_path(DEFAULT_ROWS)
    data: dict[str, object] = tomllib.loads(text.read_text(encoding="utf-8"))
    return data


def _validate(text: str, pyproject: bool) -> None:
    """What init hands out must load; a failure here is a bug of cuwheel, said plainly."""
    from cuwheel.config import parse_config

    data = tomllib.loads(text)
    table = data["tool"]["cuwheel"] if pyproject else data
    try:
        parse_config(table, "cuwheel init")
    except ConfigError as exc:
        raise ConfigError(
            ["the configuration init made does not load (a cuwheel bug):", *exc.problems]
        ) from None


def defaults_list(key: str) -> list[object]:
    value = defaults().get(key, [])
    return list(value) if isinstance(value, list) else [value]


def finish(text: str, pyproject: bool) -> str:
    _validate(text, pyproject)
    return text

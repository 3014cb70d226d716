"""The output-escaping functions, re-exported from their leaf module :mod:`cuwheel._text`
(errors and plan emitters use them too, and must not import the renderers)."""

from __future__ import annotations

from cuwheel._text import (
    dumps,
    escape,
    escape_lines,
    gh_data,
    gh_prop,
    json_clean,
    xml_attr,
    xml_text,
)

__all__ = [
    "dumps",
    "escape",
    "escape_lines",
    "gh_data",
    "gh_prop",
    "json_clean",
    "xml_attr",
    "xml_text",
]

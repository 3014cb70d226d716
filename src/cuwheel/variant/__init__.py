"""Wheel-variant properties (PEP 825 draft) derived from a wheel's device code, written as
the ``variant.json`` variantlib validates, and declared properties verified against the
code (docs/variants.md)."""

from __future__ import annotations

from cuwheel.variant.properties import (
    Declared,
    Derived,
    Partial,
    Vocabulary,
    derive,
    parse_property,
    read_declared,
    variant_json,
    verify,
    vocabulary,
)

__all__ = [
    "Declared",
    "Derived",
    "Partial",
    "Vocabulary",
    "derive",
    "parse_property",
    "read_declared",
    "variant_json",
    "verify",
    "vocabulary",
]

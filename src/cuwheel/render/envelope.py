"""The JSON envelope and the shipped schemas, re-exported from their leaf module
:mod:`cuwheel._envelope` (the plan emitters use them too, and must not import the
renderers)."""

from __future__ import annotations

from cuwheel._envelope import COMMANDS, ENVELOPE_KEYS, SCHEMAS, envelope, load_schema

__all__ = ["COMMANDS", "ENVELOPE_KEYS", "SCHEMAS", "envelope", "load_schema"]

"""Wheel-variant properties (PEP 825 draft) derived from a wheel's device code, written as
the ``variant.json`` variantlib validates, and declared properties verified against the
code (docs/variants.md).  The names are :mod:`cuwheel.variant.properties`'s."""

from __future__ import annotations

from cuwheel.variant.properties import *  # noqa: F403  (its __all__, listed once there)
from cuwheel.variant.properties import __all__ as __all__

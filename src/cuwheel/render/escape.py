"""The output-escaping functions, re-exported from their leaf module :mod:`cuwheel._text`
(errors and plan emitters use them too, and must not import the renderers)."""

from __future__ import annotations

from cuwheel._text import *  # noqa: F403  (its __all__, listed once there)
from cuwheel._text import __all__ as __all__

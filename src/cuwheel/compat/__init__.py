"""compat: will this wheel run on GPU X with driver Y (docs/compat.md)."""

from __future__ import annotations

from cuwheel.compat.evaluate import *  # noqa: F403 - the package's API is evaluate's
from cuwheel.compat.evaluate import __all__ as __all__

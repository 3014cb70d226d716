"""``python -m cuwheel``."""

from cuwheel.cli import entry

entry()

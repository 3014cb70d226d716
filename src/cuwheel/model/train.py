"""How a CUDA release train is spelled: ``cu130`` (as PyTorch's local versions and wheel
indexes name it), ``13.0`` or a release ``13.0.2`` (see docs/config.md, "Trains").

The one parser of a train's spelling; whether the release exists is the catalog's question
(:func:`cuwheel.knowledge.catalog.release`), not this module's.  Callers wrap
:class:`TrainSpellingError` in their own error (ConfigError, ToolkitError).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from cuwheel.errors import TrainSpellingError, shown

__all__ = ["MAX_TRAIN_CHARS", "TrainName", "parse_train_name"]

# No spelling is longer ("cu99999" + ".999999" twice); longer text is named, not scanned.
MAX_TRAIN_CHARS = 32

# ASCII digits only ([0-9], re.ASCII: a Unicode digit is no train), every number bounded.
# The major has at least two digits: CUDA 10.0 is the oldest release the catalog knows, and
# 'cu13' is a mistake for cu130, not CUDA 1.3.  The minor is one digit, as in the cuXYZ
# spelling (cu1210 could be 12.10 or 121.0).
_CU = re.compile(r"cu([0-9]{2,5})([0-9])", re.ASCII)
_DOTTED = re.compile(r"([0-9]{2,5})\.([0-9])(?:\.([0-9]{1,6}))?", re.ASCII)


@dataclass(frozen=True)
class TrainName:
    """A train as spelled: its CUDA major.minor, and the release when one was named."""

    major: int
    minor: int
    release: str | None = None  # "13.0.2" for the text "13.0.2"; None for cu130 / 13.0

    @property
    def name(self) -> str:
        """``cu130``."""
        return f"cu{self.major}{self.minor}"

    @property
    def version(self) -> tuple[int, int]:
        return (self.major, self.minor)

    @property
    def dotted(self) -> str:
        """``13.0``."""
        return f"{self.major}.{self.minor}"


def parse_train_name(text: str) -> TrainName:
    """``cu130`` / ``CU130`` / ``13.0`` -> ``TrainName(13, 0)``; ``13.0.2`` -> the same with
    release ``13.0.2``.  Surrounding blanks are ignored; TrainSpellingError for anything
    else (``cu13``, ``13``, ``13.10``, ``rocm6.2``, non-ASCII digits, over-long numbers)."""
    t = text.strip().lower() if len(text) <= 4 * MAX_TRAIN_CHARS else text
    if len(t) <= MAX_TRAIN_CHARS:
        m = _CU.fullmatch(t)
        if m is not None:
            return TrainName(int(m[1]), int(m[2]))
        m = _DOTTED.fullmatch(t)
        if m is not None:
            major, minor = int(m[1]), int(m[2])
            release = f"{major}.{minor}.{int(m[3])}" if m[3] is not None else None
            return TrainName(major, minor, release)
    raise TrainSpellingError(
        f"not a CUDA train: {shown(text)}; expected cuXYZ (cu130), X.Y (13.0) or a release X.Y.Z"
    )

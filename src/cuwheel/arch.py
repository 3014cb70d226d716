"""GPU architecture identifiers: compute capability plus the ``a`` / ``f`` variant.

``Arch(90, "a")`` is ``sm_90a`` (SASS) or ``compute_90a`` (PTX).  The number is the
compute capability as nvcc spells it (major * 10 + minor: 7.5 -> 75, 10.0 -> 100,
12.1 -> 121), which is also the value of the fatbin entry's ``arch`` field.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

__all__ = ["Arch", "Variant"]

Variant = Literal["", "a", "f"]


@dataclass(frozen=True, order=True)
class Arch:
    """One GPU architecture: compute capability number and variant suffix."""

    number: int
    variant: Variant = ""

    def __post_init__(self) -> None:
        if not 10 <= self.number <= 999:
            raise ValueError(f"compute capability number out of range: {self.number!r}")
        if self.variant not in ("", "a", "f"):
            raise ValueError(f"unknown architecture variant: {self.variant!r}")

    @property
    def major(self) -> int:
        return self.number // 10

    @property
    def minor(self) -> int:
        return self.number % 10

    @property
    def cc(self) -> str:
        """Compute capability as ``X.Y`` (without the variant)."""
        return f"{self.major}.{self.minor}"

    @property
    def sass(self) -> str:
        """Real-architecture name, e.g. ``sm_90a``."""
        return f"sm_{self.number}{self.variant}"

    @property
    def ptx(self) -> str:
        """Virtual-architecture name, e.g. ``compute_90a``."""
        return f"compute_{self.number}{self.variant}"

    @property
    def base(self) -> Arch:
        """The same architecture without ``a`` / ``f``."""
        return Arch(self.number)

    def __str__(self) -> str:
        return self.sass

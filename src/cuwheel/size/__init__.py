"""Shaping a release: the size ledger per architecture and its what-if (docs/size.md),
and wheel-variant properties derived from the code (docs/variants.md)."""

from __future__ import annotations

from cuwheel.size.ledger import ArchBytes, LibraryLedger, SourceLedger, container_mode, ledger
from cuwheel.size.measure import BinaryBytes, SourceBytes, measure
from cuwheel.size.modes import MODES
from cuwheel.size.scenario import Scenario, parse_drop
from cuwheel.size.whatif import Estimate, GpuChange, estimate, gpu_changes

__all__ = [
    "MODES",
    "ArchBytes",
    "BinaryBytes",
    "Estimate",
    "GpuChange",
    "LibraryLedger",
    "Scenario",
    "SourceBytes",
    "SourceLedger",
    "container_mode",
    "estimate",
    "gpu_changes",
    "ledger",
    "measure",
    "parse_drop",
]

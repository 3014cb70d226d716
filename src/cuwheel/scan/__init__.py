"""``cuwheel scan``: audit many wheels at once.

Inputs (:mod:`cuwheel.scan.inputs`: directories, files, lists of files or URLs, a simple
package index) become :class:`WheelRef` s; every wheel is read by the scheduler of
:func:`cuwheel.read.inspect.iter_inspect` (or as tasks of a Dask cluster,
:mod:`cuwheel.scan.dask_engine`), and each gives one JSON Lines record
(:mod:`cuwheel.scan.record`), cached by the wheel's sha256 (:mod:`cuwheel.scan.cache`).
:mod:`cuwheel.scan.summary` reports across the records.  docs/scan.md has the formats.
"""

from __future__ import annotations

from cuwheel.scan.engine import ScanResult, scan
from cuwheel.scan.inputs import Filters, WheelRef
from cuwheel.scan.record import RECORD_VERSION, RecordOptions

__all__ = ["RECORD_VERSION", "Filters", "RecordOptions", "ScanResult", "WheelRef", "scan"]

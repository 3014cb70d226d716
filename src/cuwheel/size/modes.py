"""nvcc's fatbin compression modes, as cuwheel models them (docs/size.md#compression-modes)."""

from __future__ import annotations

from cuwheel.model.inventory import CodeKind, Compression

__all__ = ["MODES"]

# nvcc 13.0 --compress-mode: the codec of SASS and of PTX/LTO-IR entries and its level.
# Measured on the fixtures cm_*.so and bench/size_rebuild.sh's builds (docs/size.md):
# "default" stores cubins and writes PTX as zstd level 5; "size" is zstd level 19 for
# everything; "speed" is LZ4 (fast) for PTX, and for cubins too with -compress-all;
# "none" stores everything.
MODES: dict[str, dict[CodeKind, tuple[Compression, int]]] = {
    "none": {CodeKind.SASS: (Compression.NONE, 0), CodeKind.PTX: (Compression.NONE, 0)},
    "default": {CodeKind.SASS: (Compression.NONE, 0), CodeKind.PTX: (Compression.ZSTD, 5)},
    "size": {CodeKind.SASS: (Compression.ZSTD, 19), CodeKind.PTX: (Compression.ZSTD, 19)},
    "speed": {CodeKind.SASS: (Compression.NONE, 0), CodeKind.PTX: (Compression.LZ4, 0)},
    "speed-all": {CodeKind.SASS: (Compression.LZ4, 0), CodeKind.PTX: (Compression.LZ4, 0)},
}

"""cuwheel: make CUDA wheels run on every GPU they claim."""

from __future__ import annotations

from cuwheel.errors import ConfigError, CuwheelError, InputError
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import (
    Binary,
    CodeKind,
    Compression,
    FatbinContainer,
    FatbinEntry,
    Inventory,
    Problem,
    Source,
    Toolkit,
    WheelInfo,
)

__version__ = "0.1.0"

__all__ = [
    "Arch",
    "Binary",
    "CodeKind",
    "Compression",
    "ConfigError",
    "CuwheelError",
    "FatbinContainer",
    "FatbinEntry",
    "InputError",
    "Inventory",
    "Problem",
    "Source",
    "Toolkit",
    "WheelInfo",
    "__version__",
    "inspect",
]


def __getattr__(name: str) -> object:
    # Imported lazily so `import cuwheel` stays cheap for the data-model users.
    if name == "inspect":
        from cuwheel.read.inspect import inspect

        return inspect
    raise AttributeError(name)

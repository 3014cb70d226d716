"""The index of cuwheel's data files (``cuwheel/data``): every file's name is written here
and only here (tests/test_architecture.py fails on a data file's name elsewhere), and the
one way to reach the folder.  Nothing is imported at start-up beyond ``os``: the catalog's
cache keys on these files before anything else is loaded."""

from __future__ import annotations

import os
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from importlib.abc import Traversable

__all__ = [
    "ALL",
    "FOLDER",
    "data_path",
    "folder",
    "os_path",
    "schema_name",
]

FOLDER = "data"  # under the cuwheel package

CODES = "codes.toml"
CONSUMERS = "consumers.toml"
CUDA = "cuda.toml"
CUDA_ERRORS = "cuda_errors.toml"
DEFAULT_ROWS = "default_rows.toml"
ERRORS = "errors.toml"
GPUS = "gpus.toml"
HOST_ISA = "host_isa.toml"
INIT_ROWS = "init_rows.toml"
LOADERS = "loaders.toml"
MANYLINUX = "manylinux.toml"
NVIDIA_SYMBOLS = "nvidia_symbols.toml"
PACKAGES = "packages.toml"
PLATFORMS = "platforms.toml"
PROFILES = "profiles.toml"
STABLE_ABI = "stable_abi.toml"
THRESHOLDS = "thresholds.toml"
TOOLKITS = "toolkits.toml"
TORCH_ABI = "torch_abi.toml"
TORCH_ABI_BIN = "torch_abi.bin"
TORCH_ARCHS = "torch_archs.toml"
VARIANTS = "variants.toml"

# The JSON Schemas: one per command document (cuwheel._envelope.SCHEMAS), plus config's.
_SCHEMA_SUFFIX = ".schema.json"
CONFIG_SCHEMA = "config" + _SCHEMA_SUFFIX

ALL: tuple[str, ...] = (
    CODES, CONSUMERS, CUDA, CUDA_ERRORS, DEFAULT_ROWS, ERRORS, GPUS, HOST_ISA, INIT_ROWS,
    LOADERS, MANYLINUX, NVIDIA_SYMBOLS, PACKAGES, PLATFORMS, PROFILES, STABLE_ABI,
    THRESHOLDS, TOOLKITS, TORCH_ABI, TORCH_ABI_BIN, TORCH_ARCHS, VARIANTS,
)  # fmt: skip


def schema_name(document: str) -> str:
    """The file of ``document``'s JSON Schema (``compat`` -> ``compat.schema.json``)."""
    return document + _SCHEMA_SUFFIX


def folder() -> Traversable:
    """The data folder as installed (a zip import too)."""
    from importlib import resources

    return resources.files("cuwheel").joinpath(FOLDER)


def data_path(name: str) -> Traversable:
    """The data file ``name`` (one of this module's names)."""
    return folder().joinpath(name)


def os_path(package_root: str, name: str) -> str:
    """The data file ``name`` as a file-system path under the package at ``package_root``
    (for readers that must not import importlib.resources)."""
    return os.path.join(package_root, FOLDER, name)

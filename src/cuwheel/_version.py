"""cuwheel's version, in a leaf module: writers stamp it into documents and the package's
``__init__`` re-exports it (pyproject.toml's ``version`` is the same string)."""

__all__ = ["__version__"]

__version__ = "0.1.0"

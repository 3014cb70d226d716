"""cuwheel example: a tiny CUDA extension (see examples/cuda_ext/README.md)."""

from cuda_ext._ext import add_one

__all__ = ["add_one"]

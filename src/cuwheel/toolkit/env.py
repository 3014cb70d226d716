"""The environment of an assembled toolkit, printed the way ``cuwheel plan`` prints its own
(``KEY=VALUE`` lines for ``$GITHUB_ENV``; :func:`cuwheel.plan.emit.sh_lines` quotes them
for a shell).

``CUDA_HOME`` and ``CUDA_PATH`` always; ``CUDACXX`` when the prefix has nvcc; ``PATH`` and
``LD_LIBRARY_PATH`` (Linux) only when the toolkit is for the host's OS, since a Windows
runtime assembled on Linux for a cross-build is linked against, not run.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from cuwheel.knowledge.platforms import load_platforms

__all__ = ["env_lines", "host_os"]


def host_os() -> str:
    """The OS of this machine's ``sys.platform`` (data/platforms.toml); Linux for one of no
    platform there (macOS), whose toolkit would be a cross-build's."""
    return load_platforms().os_of_sys_platform(sys.platform) or "linux"


def _join(first: list[str], rest: str | None, sep: str) -> str:
    return sep.join(first + ([rest] if rest else []))


def env_lines(
    prefix: Path,
    target_os: str,
    *,
    environ: Mapping[str, str] | None = None,
    host: str | None = None,
) -> list[str]:
    env = os.environ if environ is None else environ
    host = host or host_os()
    root = str(prefix)
    lines = [f"CUDA_HOME={root}", f"CUDA_PATH={root}"]
    nvcc = prefix / "bin" / ("nvcc.exe" if target_os == "windows" else "nvcc")
    if nvcc.is_file():
        lines.append(f"CUDACXX={nvcc}")
    if target_os != host:
        return lines
    sep = ";" if host == "windows" else ":"
    bins = [str(prefix / "bin")]
    # the DLL folders of the OS's toolkits (data/platforms.toml: bin/x86_64, bin/x64)
    folders = dict.fromkeys(d for p in load_platforms().platforms if p.os == target_os
                            for d in p.toolkit_dll_dirs)  # fmt: skip
    bins += [str(prefix.joinpath(*d.split("/"))) for d in folders
             if prefix.joinpath(*d.split("/")).is_dir()]  # fmt: skip
    lines.append(f"PATH={_join(bins, env.get('PATH'), sep)}")
    if target_os == "linux":
        lines.append(
            f"LD_LIBRARY_PATH={_join([str(prefix / 'lib64')], env.get('LD_LIBRARY_PATH'), sep)}"
        )
    return lines

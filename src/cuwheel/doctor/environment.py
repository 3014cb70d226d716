"""An installed Python environment as doctor sees it: its site directories, the
distributions installed there (``*.dist-info`` with their RECORD), the binaries each
ships, read by :func:`cuwheel.read.inspect.inspect`, and the CUDA version of its torch
(``torch/version.py``).  docs/doctor.md#what-is-read."""

from __future__ import annotations

import os
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field, replace

from cuwheel._paths import decode_text, read_untrusted
from cuwheel._text import normalized_name as _norm
from cuwheel.model.inventory import Binary, Problem
from cuwheel.read.sources.installed import distributions, site_dirs

__all__ = ["Distribution", "Environment", "read_environment", "torch_cuda_version"]

# Files worth reading: shared objects, extension modules, DLLs and raw device code.
_BINARY_NAME = re.compile(r"\.(so(\.[0-9]+)*|pyd|dll|cubin|fatbin|ptx)$", re.IGNORECASE)
# torch/version.py: ``cuda = '13.0'`` or ``cuda: Optional[str] = '13.0'`` (None on CPU builds).
_TORCH_CUDA = re.compile(r"^cuda\s*(?::[^=\n]*)?=\s*['\"]([0-9]+)\.([0-9]+)", re.MULTILINE)
_TORCH_VERSION = re.compile(r"^__version__\s*(?::[^=\n]*)?=\s*['\"]([^'\"]{1,64})", re.MULTILINE)


MAX_VERSION_PY = 1 << 20  # torch/version.py is about 400 bytes


@dataclass(frozen=True)
class Distribution:
    name: str
    version: str
    site: str  # the site directory that holds its dist-info
    files: tuple[str, ...]  # absolute paths of its RECORD's regular files
    binaries: tuple[Binary, ...] = ()  # read ones; ``path`` is the absolute file path
    problems: tuple[Problem, ...] = ()
    requires: tuple[str, ...] = ()  # normalised names of its Requires-Dist, extras included

    @property
    def label(self) -> str:
        return f"{self.name} {self.version}"


@dataclass(frozen=True)
class Environment:
    sites: tuple[str, ...]
    distributions: tuple[Distribution, ...]
    torch_version: str | None = None
    torch_cuda: tuple[int, int] | None = None  # torch.version.cuda; None: no torch / CPU
    # basename -> every installed file of that name, in site order
    index: dict[str, tuple[str, ...]] = field(default_factory=dict, compare=False)

    def owner(self, path: str) -> Distribution | None:
        real = os.path.realpath(path)
        for d in self.distributions:
            if real in d.files or path in d.files:
                return d
        return None

    def import_order(self) -> tuple[Distribution, ...]:
        """The distributions, each after those it depends on: those its Requires-Dist names,
        and those that ship a library its binaries need (a package whose module links
        another's library imports that package first: torchaudio 2.11's modules need
        torch's libc10.so and its METADATA requires nothing).  A cycle keeps site order."""
        by_name = {_norm(d.name): d for d in self.distributions}
        ships: dict[str, str] = {}
        for d in self.distributions:
            for p in d.files:
                ships.setdefault(os.path.basename(p), _norm(d.name))
        deps: dict[str, list[str]] = {}
        for d in self.distributions:
            key = _norm(d.name)
            linked = (ships.get(n) for b in d.binaries for n in b.needed)
            deps[key] = [r for r in dict.fromkeys([*d.requires, *linked])
                         if r is not None and r != key and r in by_name]  # fmt: skip
        done: dict[str, Distribution] = {}
        for d in self.distributions:
            stack = [(_norm(d.name), iter(deps[_norm(d.name)]))]
            seen = {stack[0][0]}
            while stack:
                cur, it = stack[-1]
                nxt = next((r for r in it if r not in done and r not in seen), None)
                if nxt is None:
                    stack.pop()
                    done.setdefault(cur, by_name[cur])
                else:
                    seen.add(nxt)
                    stack.append((nxt, iter(deps[nxt])))
        return tuple(done.values())

    def distribution(self, name: str) -> Distribution | None:
        key = _norm(name)
        return next((d for d in self.distributions if _norm(d.name) == key), None)

    def inside(self, path: str) -> bool:
        real = os.path.realpath(path)
        return any(real.startswith(os.path.realpath(s) + os.sep) for s in self.sites)


def torch_cuda_version(site_dirs: Iterable[str]) -> tuple[str | None, tuple[int, int] | None]:
    """(torch.__version__, torch.version.cuda) read from the first ``torch/version.py`` of
    ``site_dirs`` without importing it; (None, None) when there is no torch.  The file is
    opened as every untrusted file is (cuwheel._paths.open_untrusted: regular, inside its
    site directory, at most MAX_VERSION_PY bytes)."""
    for site in site_dirs:
        path = os.path.join(site, "torch", "version.py")
        try:
            data = read_untrusted(path, MAX_VERSION_PY, os.path.realpath(site))
        except OSError:
            continue
        text = decode_text(data or b"")
        v = _TORCH_VERSION.search(text)
        c = _TORCH_CUDA.search(text)
        return (v[1] if v else None), ((int(c[1]), int(c[2])) if c else None)
    return None, None


def default_sites() -> list[str]:
    """The running interpreter's import path, as directories."""
    return site_dirs()


def read_environment(
    sites: Sequence[str] | None = None,
    *,
    only: Sequence[str] = (),
    workers: int | None = None,
) -> Environment:
    """The distributions installed in ``sites`` (default: this interpreter's sys.path),
    the first of each name winning as imports do, read by the one reader of installed
    distributions (cuwheel.read.sources.installed: bounded, RECORD rows inside the site only); the
    binaries of every one (of ``only``, when given, by distribution name) are read."""
    from cuwheel.read.inspect import inspect

    site_list = [os.path.abspath(s) for s in (default_sites() if sites is None else sites)]
    found: list[Distribution] = []
    seen: set[str] = set()
    for site in site_list:
        for dist in distributions([site]):
            if _norm(dist.name) in seen:
                continue
            seen.add(_norm(dist.name))
            # a RECORD row that is itself a link is not the distribution's file (its
            # target, when the distribution's, has a row of its own)
            files = tuple(f for f in dist.files if not os.path.islink(f))
            found.append(Distribution(dist.name, dist.version, site, files, (),
                                      dist.problems, dist.requires))  # fmt: skip
    wanted = {_norm(n) for n in only}
    to_read = [
        p for d in found if not wanted or _norm(d.name) in wanted
        for p in d.files if _BINARY_NAME.search(p)
    ]  # fmt: skip
    # "sample" as compat reads: a decoded cubin tells a kernel-less device-link stub apart
    inventory = inspect(to_read, workers=workers, payload="sample")
    by_path = {s.path: s for s in inventory.sources}
    dists = []
    index: dict[str, list[str]] = {}
    for d in found:
        binaries: list[Binary] = []
        problems: list[Problem] = list(d.problems)
        for p in d.files:
            index.setdefault(os.path.basename(p), []).append(p)
            src = by_path.get(p)
            if src is not None:
                binaries += src.binaries
                # a file that is no binary at all (a text file named .so) says nothing
                problems += [x for x in src.problems if "not a wheel, directory" not in x.message]
        dists.append(Distribution(d.name, d.version, d.site, d.files, tuple(binaries),
                                  tuple(problems), d.requires))  # fmt: skip
    tv, tc = torch_cuda_version(site_list)
    return Environment(tuple(site_list), tuple(dists), tv, tc,
                       {k: tuple(v) for k, v in index.items()})  # fmt: skip


def with_kernel_names(env: Environment, paths: Iterable[str], *,
                      workers: int | None = None) -> Environment:
    """``env`` with the binaries at ``paths`` read again with their kernel and variable
    names (payload "kernels", as ``cuwheel compat`` reads): the evidence that tells a
    container for other GPUs from missing code, read only where a verdict needs it
    (doctor/diagnose.py)."""
    from cuwheel.read.inspect import inspect

    wanted = sorted(set(paths))
    if not wanted:
        return env
    inventory = inspect(wanted, workers=workers, payload="kernels")
    again = {b.path: b for src in inventory.sources for b in src.binaries}
    dists = tuple(
        replace(d, binaries=tuple(again.get(b.path, b) for b in d.binaries))
        if any(b.path in again for b in d.binaries) else d
        for d in env.distributions
    )
    return replace(env, distributions=dists)

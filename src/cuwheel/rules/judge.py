"""The judge: CUDA's rules applied with one :class:`~cuwheel.knowledge.catalog.Catalog`.

A :class:`Rules` is built from a catalog (``Rules(catalog)``; :meth:`Rules.default` for
the shipped one).  Its methods are the judgements: containers, libraries, wheels and
environments, train inference and driver floors; its caches are its own state, so two
Rules of different catalogs never answer from each other's.  check, compat, doctor, scan
and init take one (``rules=``) and judge under it (:meth:`Rules.active`): the rule modules
(rules/*.py, checks/, compat/, doctor/) read its catalog and memo store from
:mod:`cuwheel.knowledge.active`, never from the catalog module's lookups, and never import
this module (tests/test_architecture.py checks both).
"""

from __future__ import annotations

import contextvars
import functools
from collections.abc import Callable, Collection, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any, ParamSpec, TypeVar

if TYPE_CHECKING:
    from cuwheel.knowledge.catalog import Catalog
    from cuwheel.knowledge.cuda import Release
    from cuwheel.model.arch import Arch
    from cuwheel.model.inventory import Binary, FatbinContainer
    from cuwheel.rules.library import LibraryJudgement, LibraryVerdict
    from cuwheel.rules.loading import ContainerVerdict
    from cuwheel.rules.rollup import WheelVerdict
    from cuwheel.rules.runtime import Driver, RuntimeCheck
    from cuwheel.rules.trains import LibraryTrain

__all__ = ["Rules", "active_rules", "judging", "rules_for"]

_P = ParamSpec("_P")
_R = TypeVar("_R")

_ACTIVE: contextvars.ContextVar[Rules | None] = contextvars.ContextVar("cuwheel_rules",
                                                                      default=None)


def _judging(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """A method of Rules run with its Rules active (the rule modules read it)."""

    @functools.wraps(fn)
    def run(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        self = args[0]
        assert isinstance(self, Rules)
        with self.active():
            return fn(*args, **kwargs)

    return run


class Rules:
    """Every rule, applied with ``catalog``; the answers it remembers are its own."""

    def __init__(self, catalog: Catalog, memos: dict[str, dict[Any, Any]] | None = None
                 ) -> None:
        self.catalog = catalog
        self._memos: dict[str, dict[Any, Any]] = {} if memos is None else memos

    def __reduce__(self) -> tuple[type[Rules], tuple[Catalog]]:
        # to a worker process: the catalog, not what these rules remember
        return (Rules, (self.catalog,))

    def __repr__(self) -> str:
        return f"Rules({len(self.catalog.gpus)} GPUs, {len(self.catalog.releases)} releases)"

    @classmethod
    def default(cls) -> Rules:
        """The Rules of the shipped catalog (one per process)."""
        return _default()

    def memo(self, name: str) -> dict[Any, Any]:
        """The cache ``name`` of these rules (rules/loading.py's container verdicts and
        the like): state of this object, never shared with Rules of another catalog."""
        found = self._memos.get(name)
        if found is None:
            found = self._memos[name] = {}
        return found

    @contextmanager
    def active(self) -> Iterator[Rules]:
        """Judge with these rules inside the block (the rule modules read
        :func:`active_rules`)."""
        from cuwheel.knowledge.active import catalog_active

        token = _ACTIVE.set(self)
        try:
            with catalog_active(self.catalog, self._memos):
                yield self
        finally:
            _ACTIVE.reset(token)

    # -- containers ----------------------------------------------------------------
    @_judging
    def sass_fits(self, code: Arch, device: Arch) -> tuple[int, str]:
        from cuwheel.rules.loading import sass_fits

        return sass_fits(code, device)

    @_judging
    def ptx_fits(self, code: Arch, device: Arch) -> tuple[bool, str]:
        from cuwheel.rules.loading import ptx_fits

        return ptx_fits(code, device)

    @_judging
    def family_members(self, arch: Arch) -> tuple[Arch, ...]:
        from cuwheel.rules.loading import family_members

        return family_members(arch)

    @_judging
    def is_tegra(self, arch: Arch) -> bool:
        from cuwheel.rules.loading import is_tegra

        return is_tegra(arch)

    @_judging
    def judge_container(self, container: FatbinContainer, device: Arch, *,
                        cuda: tuple[int, int] | None = None, os: str = "linux",
                        stub: bool = False) -> ContainerVerdict:
        from cuwheel.rules.loading import judge_container

        return judge_container(container, device, cuda=cuda, os=os, stub=stub)

    @_judging
    def judge_containers(self, binary: Binary, device: Arch, *,
                         cuda: tuple[int, int] | None = None,
                         os: str = "linux") -> tuple[ContainerVerdict, ...]:
        from cuwheel.rules.shapes import judge_containers

        return judge_containers(binary, device, cuda=cuda, os=os)

    # -- libraries and wheels ------------------------------------------------------
    @_judging
    def judge_library(self, binary: Binary, cvs: Sequence[ContainerVerdict], device: Arch,
                      *, strict: bool = False) -> LibraryJudgement | None:
        from cuwheel.rules.library import judge_library

        return judge_library(binary, cvs, device, strict=strict)

    @_judging
    def judge_wheel(self, path: str, kind: str, libraries: Sequence[LibraryVerdict],
                    device: Arch, *, cuda: tuple[int, int] | None = None,
                    unread: Sequence[str] = (), core: str | None = None,
                    static: Collection[str] = (),
                    variant_rule: str = "nearest") -> WheelVerdict:
        from cuwheel.rules.rollup import judge_wheel

        return judge_wheel(path, kind, libraries, device, cuda=cuda, unread=unread,
                           core=core, static=static, variant_rule=variant_rule)

    @_judging
    def builder_knows(self, binary: Binary, device: Arch) -> tuple[bool | None, str]:
        from cuwheel.rules.evidence import builder_knows

        return builder_knows(binary, device)

    # -- driver floors -------------------------------------------------------------
    @_judging
    def driver_cuda_version(self, driver: Driver, os: str = "linux") -> tuple[int, int] | None:
        from cuwheel.rules.runtime import driver_cuda_version

        return driver_cuda_version(driver, os)

    @_judging
    def min_driver(self, driver_version: str | None, cuda: tuple[int, int] | None,
                   os: str) -> str | None:
        from cuwheel.rules.runtime import min_driver

        return min_driver(driver_version, cuda, os)

    @_judging
    def runtime_check(self, binary: Binary, driver: Driver | None,
                      static_major: int | None = None) -> RuntimeCheck | None:
        from cuwheel.rules.runtime import runtime_check

        return runtime_check(binary, driver, static_major)

    @_judging
    def runtime_majors(self, binary: Binary) -> tuple[tuple[int, str], ...]:
        from cuwheel.knowledge.linkage import runtime_majors

        return runtime_majors(binary)

    # -- trains --------------------------------------------------------------------
    @_judging
    def infer_train(self, binary: Binary, requires: Sequence[str] = (), *,
                    project: str | None = None) -> LibraryTrain:
        """The CUDA release train of one library (rules/trains.py)."""
        from cuwheel.rules.trains import infer_train

        return infer_train(binary, requires, project=project)

    @_judging
    def wheel_release(self, trains: Sequence[LibraryTrain]) -> tuple[Release, str | None] | None:
        from cuwheel.rules.trains import wheel_release

        return wheel_release(trains)

    @_judging
    def release_of(self, train: str) -> Release:
        from cuwheel.rules.trains import release_of

        return release_of(train)


@functools.cache
def _default() -> Rules:
    from cuwheel.knowledge.active import default_memos
    from cuwheel.knowledge.catalog import load_catalog

    # its memos are the store the rule modules read when no Rules is active
    return Rules(load_catalog(), default_memos())


def active_rules() -> Rules:
    """The Rules being judged with: the innermost :meth:`Rules.active`, else the default."""
    found = _ACTIVE.get()
    return found if found is not None else _default()


def rules_for(catalog: Catalog) -> Rules:
    """Rules built from ``catalog`` (a fresh object: its caches start empty)."""
    return Rules(catalog)


def judging(rules: Rules | None) -> AbstractContextManager[Rules]:
    """The block of an entry point (check, compat, doctor, scan, init) that judges with
    ``rules``; None: the rules already active (the default outside any)."""
    return (rules if rules is not None else active_rules()).active()

"""Emitters: a resolved release row (:class:`cuwheel.plan.rows.Plan`) in each consumer's terms.

* ``TORCH_CUDA_ARCH_LIST`` for PyTorch-style builds (``8.0;8.6;12.0+PTX``);
* ``CMAKE_CUDA_ARCHITECTURES`` for CMake (``80-real;86-real;120``);
* nvcc ``-gencode`` flags;
* ``KEY=VALUE`` lines for ``$GITHUB_ENV`` or a build env file;
* JSON, and a GitHub Actions matrix of rows x Python versions.

Only what a consumer accepts is emitted (the catalog records what PyTorch and CMake
versions take); a row that a consumer cannot express raises :class:`Unexpressible`
naming the consumer and the item, never a silently shortened list.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cuwheel._text import escape
from cuwheel.errors import ConfigError, Unexpressible
from cuwheel.knowledge import catalog
from cuwheel.model.arch import (
    ArchSpellingError,
    format_cmake_architectures,
    format_gencode,
    format_torch_arch_list,
)
from cuwheel.plan.rows import Plan, Project, parse_train, plan_for

__all__ = [
    "Emitted",
    "Unexpressible",
    "cmake_architectures",
    "emit_all",
    "env_lines",
    "matrix",
    "nvcc_flags",
    "plan_json",
    "torch_arch_list",
]


def _v(text: str) -> tuple[int, int]:
    return catalog.parse_version(text if "." in text else text + ".0")


def _v3(text: str) -> tuple[int, ...]:
    return tuple(int(x) for x in text.split("."))


def torch_arch_list(plan: Plan, torch_version: str) -> str:
    """``TORCH_CUDA_ARCH_LIST`` for ``plan`` (empty for the CPU row)."""
    if not plan.targets:
        return ""
    consumer = catalog.torch_consumer(torch_version)
    problems: list[str] = []
    for t in plan.targets:
        if t.arch not in consumer.accepted:
            why = " (no 'f' suffix)" if t.arch.variant == "f" else ""
            problems.append(
                f"torch {torch_version} does not accept {t.arch.dotted}{why} "
                f"({t.arch.sass} of {plan.row.describe()})"
            )
    try:
        value = format_torch_arch_list(plan.targets)
    except ArchSpellingError as exc:
        problems.append(str(exc))
        value = ""
    if problems:
        raise Unexpressible("TORCH_CUDA_ARCH_LIST", problems)
    return value


def cmake_architectures(plan: Plan, cmake_version: str) -> str:
    """``CMAKE_CUDA_ARCHITECTURES`` for ``plan`` (empty for the CPU row)."""
    if not plan.targets:
        return ""
    c = catalog.cmake_consumer()
    problems: list[str] = []
    version = _v3(cmake_version)
    if version < _v3(c.min_version):
        problems.append(f"CMake {cmake_version} lacks -real/-virtual (needs {c.min_version})")
    f_targets = [t for t in plan.targets if t.arch.variant == "f"]
    if f_targets and version < _v3(c.f_accepted):
        names = ", ".join(f"{t.arch.number}f" for t in f_targets)
        known = (
            f"CMake {c.f_rejected} rejects it at configure time"
            if version <= _v3(c.f_rejected)
            else f"CMake {cmake_version} is not known to accept it"
        )
        problems.append(
            f"{names}: {known}; CMake {c.f_accepted} accepts it "
            f"(pass --cmake-version {c.f_accepted} if you build with it, or drop the f target)"
        )
    if problems:
        raise Unexpressible("CMAKE_CUDA_ARCHITECTURES", problems)
    return format_cmake_architectures(plan.targets)


def nvcc_flags(plan: Plan) -> tuple[str, ...]:
    """nvcc ``-gencode`` flags for ``plan``; the row was checked against the train's nvcc."""
    return format_gencode(plan.targets)


@dataclass(frozen=True)
class Emitted:
    """Each consumer's value, or why it cannot be expressed."""

    torch: str | None
    cmake: str | None
    nvcc: tuple[str, ...]
    problems: tuple[str, ...]


def emit_all(plan: Plan, torch_version: str, cmake_version: str) -> Emitted:
    problems: list[str] = []
    torch: str | None
    cmake: str | None
    try:
        torch = torch_arch_list(plan, torch_version)
    except Unexpressible as exc:
        torch = None
        problems.extend(exc.problems)
    try:
        cmake = cmake_architectures(plan, cmake_version)
    except Unexpressible as exc:
        cmake = None
        problems.extend(exc.problems)
    return Emitted(torch, cmake, nvcc_flags(plan), tuple(problems))


def env_lines(plan: Plan, torch_version: str, cmake_version: str) -> tuple[list[str], list[str]]:
    """``KEY=VALUE`` lines (for ``$GITHUB_ENV``) and the problems of omitted keys."""
    e = emit_all(plan, torch_version, cmake_version)
    release = plan.train.release
    lines = [
        f"CUWHEEL_TRAIN={plan.train.name}",
        f"CUWHEEL_ROW={plan.row.name}",
        f"CUWHEEL_PLATFORM={plan.platform or ''}",
        f"CUWHEEL_CUDA={release.name if release else ''}",
        f"CUWHEEL_DEPENDENCIES={'declare' if plan.declares_dependencies else 'none'}",
    ]
    if e.torch is not None:
        lines.append(f"TORCH_CUDA_ARCH_LIST={e.torch}")
    if e.cmake is not None:
        lines.append(f"CMAKE_CUDA_ARCHITECTURES={e.cmake}")
        env_var = catalog.cmake_consumer().env_var
        if env_var:
            lines.append(f"{env_var}={e.cmake}")
    lines.append(f"CUWHEEL_NVCC_FLAGS={' '.join(e.nvcc)}")
    # One line per variable whatever a row name holds: a newline in a value would inject a
    # second variable (LD_PRELOAD=...) into $GITHUB_ENV.
    lines = [escape(line) for line in lines]
    return lines, list(e.problems)


def sh_lines(lines: list[str]) -> list[str]:
    """``export KEY='VALUE'`` lines a POSIX shell can source (``eval "$(cuwheel plan -f sh)"``).

    The ``env`` format is for ``$GITHUB_ENV`` and ``--env-file``, which take values
    verbatim; a shell would split ``8.0;8.6`` at the ``;``, so here values are quoted.
    """
    import shlex

    out = []
    for line in lines:
        key, _, value = line.partition("=")
        out.append(f"export {key}={shlex.quote(value)}")
    return out


def plan_json(
    plan: Plan, torch_version: str, cmake_version: str, *, config: str | None = None
) -> dict[str, Any]:
    """The ``cuwheel-plan`` document (data/plan.schema.json): the common envelope naming
    ``config`` and the row, then the plan and every consumer's value."""
    from cuwheel._envelope import envelope

    e = emit_all(plan, torch_version, cmake_version)
    release = plan.train.release
    row = plan.row
    return {
        **envelope("plan", config=config, row=row.name),
        "train": plan.train.name,
        "cuda": release.name if release else None,
        "platform": plan.platform,
        "row_definition": {
            "name": row.name,
            "platform": row.platform,
            "cuda": list(row.cuda) if row.cuda else "cpu",
            "sass": [a.sass for a in row.sass],
            "ptx": row.ptx if isinstance(row.ptx, str) else [a.ptx for a in row.ptx],
            "dependencies": row.dependencies,
            "note": row.note,
        },
        "sass": [a.sass for a in plan.sass],
        "ptx": [a.ptx for a in plan.ptx],
        "dependencies": "declare" if plan.declares_dependencies else "none",
        "torch": {"version": torch_version, "TORCH_CUDA_ARCH_LIST": e.torch},
        "cmake": {"version": cmake_version, "CMAKE_CUDA_ARCHITECTURES": e.cmake},
        "nvcc": {"flags": list(e.nvcc)},
        "problems": list(e.problems),
        "warnings": list(plan.warnings),
    }


def matrix(
    config: Project,
    *,
    trains: Sequence[str] = (),
    platforms: Sequence[str] = (),
    python: Sequence[str] = (),
) -> dict[str, Any]:
    """A GitHub Actions matrix (``{"include": [...]}``) of rows x Python versions.

    Restricted to the project's trains (``config.trains``), optionally narrowed to
    ``trains`` / ``platforms``; an empty result is a ConfigError.
    """
    selected = list(config.trains)
    if trains:
        wanted = [parse_train(t) for t in trains]
        for w in wanted:
            if w not in selected:
                names = ", ".join(t.name for t in config.trains)
                raise ConfigError(f"train {w} is not one of the project's trains ({names})")
        selected = [t for t in selected if t in wanted]
    pythons = list(python) or list(config.python)
    if not pythons:
        raise ConfigError("no Python versions for the matrix: set python = [...] or --python")
    include: list[dict[str, Any]] = []
    for train in selected:
        for row in config.rows:
            if not row.covers(train):
                continue
            if platforms and not row.is_cpu and row.platform not in platforms:
                continue
            plan = plan_for(row, train, row.platform)
            e = emit_all(plan, config.torch_version, config.cmake_version)
            for py in pythons:
                include.append(
                    {
                        "train": train.name,
                        "cuda": train.release.name if train.release else "",
                        "platform": row.platform or "any",
                        "row": row.name,
                        "python": py,
                        "dependencies": "declare" if plan.declares_dependencies else "none",
                        "torch_cuda_arch_list": e.torch,
                        "cmake_cuda_architectures": e.cmake,
                        "nvcc_flags": " ".join(e.nvcc),
                        "problems": list(e.problems),
                    }
                )
    if not include:
        raise ConfigError(
            "the matrix is empty: no row of the selected trains "
            f"({', '.join(t.name for t in selected) or 'none'}) matches"
            + (f" platforms {', '.join(platforms)}" if platforms else "")
        )
    return {"include": include}

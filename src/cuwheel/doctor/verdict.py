"""The one place doctor asks what an installed distribution does on a GPU.

Everything goes through :func:`judge_distribution`: which of a distribution's libraries
load at run time (variants: the one the package selects, data/loaders.toml, by the rule of
knowledge/loaders.select_variant) and the one roll-up's answer on them (rules/rollup.py, through
the compat API): the distribution's state, its culprits and its libraries.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from cuwheel.compat import LibraryVerdict, Target, Verdict, WheelState, evaluate
from cuwheel.doctor.conventions import conventions
from cuwheel.doctor.environment import Distribution
from cuwheel.model.inventory import Binary, Inventory, Source

__all__ = ["DistributionVerdict", "VariantChoice", "judge_distribution", "loaded_binaries"]


@dataclass(frozen=True)
class VariantChoice:
    """A package's variant libraries and the one it loads."""

    selected: str | None  # path of the variant loaded; None: none fits
    alternatives: tuple[str, ...]  # every variant, in file order
    why: str


@dataclass(frozen=True)
class DistributionVerdict:
    verdict: Verdict | None  # None: nothing CUDA loads
    libraries: tuple[LibraryVerdict, ...]  # of the binaries that load, worst first
    variants: VariantChoice | None = None
    state: WheelState = WheelState.NOTHING  # the roll-up's answer for what loads
    culprits: tuple[LibraryVerdict, ...] = ()  # what does not run, worst first


def _variant_choice(
    dist: Distribution, cuda: tuple[int, int] | None, environ: dict[str, str]
) -> VariantChoice | None:
    for v in conventions().variants:
        if v.distribution.lower() != dist.name.lower() or not v.applies(dist.version):
            continue
        found = [(b.path, v.version_of(b.path)) for b in dist.binaries]
        variants = [(p, ver) for p, ver in found if ver is not None]
        if not variants:
            return None
        paths = tuple(p for p, _ in variants)
        override = environ.get(v.override) if v.override else None
        if override is not None:
            want = next((p for p, ver in variants if f"{ver[0]}{ver[1]}" == override), None)
            why = f"{v.override}={override} names it" if want else (
                f"{v.override}={override} names a variant the package does not ship")
            return VariantChoice(want, paths, why)
        if cuda is None:
            return VariantChoice(None, paths, (
                f"the variant depends on {v.selected_by}'s CUDA version, and no "
                f"{v.selected_by} build for CUDA is installed"))  # fmt: skip
        pick = v.select([ver for _, ver in variants], cuda)
        cu = f"{cuda[0]}.{cuda[1]}"
        if pick is None:
            return VariantChoice(None, paths, (
                f"{v.selected_by} is built for CUDA {cu} and no variant is for CUDA "
                f"{cuda[0]}"))  # fmt: skip
        path = next(p for p, ver in variants if ver == pick)
        how = "its exact match" if pick == cuda else "the nearest of its major"
        return VariantChoice(path, paths, (
            f"{v.selected_by} is built for CUDA {cu}: {os.path.basename(path)} is {how}"))
    return None


def loaded_binaries(
    dist: Distribution, cuda: tuple[int, int] | None, environ: dict[str, str]
) -> tuple[tuple[Binary, ...], VariantChoice | None]:
    """The binaries of ``dist`` that load at run time: all but the variants not selected."""
    choice = _variant_choice(dist, cuda, environ)
    if choice is None:
        return dist.binaries, None
    skip = set(choice.alternatives) - {choice.selected}
    return tuple(b for b in dist.binaries if b.path not in skip), choice


def judge_distribution(
    dist: Distribution,
    target: Target,
    cuda: tuple[int, int] | None,
    environ: dict[str, str],
) -> DistributionVerdict:
    """What ``dist`` does on ``target``: its loaded libraries judged by the compat API
    (``cuda``: the CUDA version of the torch that selects variants)."""
    binaries, choice = loaded_binaries(dist, cuda, environ)
    inv = Inventory((Source("distribution", dist.label, binaries=binaries),))
    src = evaluate(inv, target, cuda=cuda).sources[0]
    libs = tuple(sorted(src.libraries, key=lambda lv: (-lv.verdict.rank, lv.path)))
    verdict, state = src.verdict, src.state
    if choice is not None and choice.selected is None:
        # the package finds no library to load
        verdict, state = Verdict.NO_CODE, WheelState.DOES_NOT_RUN
    return DistributionVerdict(verdict, libs, choice, state, src.culprits)

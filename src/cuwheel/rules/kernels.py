"""Kernel-level evidence for the library roll-up (rules/library.py;
docs/compat.md#kernel-families): a container with no code for a GPU is a specialisation
for other GPUs when each of its kernel families has an instantiation in a container that
loads there, and missing code otherwise (its kernels unique to containers that miss the
GPU, named by family).  The family is the kernel's name without template arguments
(model/kernels.py): vLLM instantiates its Marlin MoE template per architecture, in
containers for sm_75 only beside containers for compute_80 and sm_90a, and its host code
picks the instantiation by compute capability.

Only containers whose every SASS and PTX entry had its kernels read (``inspect
--kernels``) are judged here; the others, and every container of a binary read without
names, stay with the architecture-set evidence (rules/evidence.py).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from cuwheel.model.inventory import CodeKind, FatbinContainer
from cuwheel.model.kernels import kernel_family

__all__ = ["KernelSplit", "container_families", "kernel_less_reason", "split_by_kernels"]


def container_families(c: FatbinContainer) -> frozenset[str] | None:
    """The kernel families of a container's SASS and PTX entries; None when some entry's
    kernels were not read (or a cubin has no symbol table: a stripped one)."""
    fams: set[str] = set()
    for e in c.entries:
        if e.kind not in (CodeKind.SASS, CodeKind.PTX):
            continue
        if e.kernel_names is None:
            return None
        fams.update(kernel_family(n) for n in e.kernel_names)
    return frozenset(fams)


@dataclass(frozen=True)
class KernelSplit:
    """Containers that miss a GPU, split by their kernels."""

    specialised: tuple[int, ...]  # every family has code that loads elsewhere
    # container -> its families with no code that loads on the GPU (none elsewhere)
    unique: dict[int, frozenset[str]]
    unknown: tuple[int, ...]  # no names: judged by the architecture-set evidence alone
    # Families of the specialised containers (for the verdict's text), sorted
    other_gpu_families: tuple[str, ...] = ()

    def families(self, containers: Iterable[int]) -> tuple[str, ...]:
        """The unique families of ``containers``, sorted."""
        out: set[str] = set()
        for i in containers:
            out |= self.unique.get(i, frozenset())
        return tuple(sorted(out))


def split_by_kernels(
    containers: Sequence[FatbinContainer], loads: Iterable[int], misses: Iterable[int]
) -> KernelSplit:
    """Split the containers ``misses`` (indexes into ``containers``, none of which loads on
    the GPU) by the kernels of the containers ``loads`` (those that do).  A family found in
    no loading container is unique only when every loading container's names were read;
    otherwise the container is left to the other evidence (``unknown``)."""
    loadable: set[str] = set()
    blind = False  # some loading container's kernels are not known
    for i in loads:
        fams = container_families(containers[i])
        if fams is None:
            blind = True
        else:
            loadable |= fams
    spec: list[int] = []
    unique: dict[int, frozenset[str]] = {}
    unknown: list[int] = []
    covered: set[str] = set()
    for i in misses:
        fams = container_families(containers[i])
        if fams is None:
            unknown.append(i)
            continue
        absent = fams - loadable
        if not absent:
            spec.append(i)
            covered |= fams
        elif blind:
            unknown.append(i)
        else:
            unique[i] = frozenset(absent)
    return KernelSplit(tuple(spec), unique, tuple(unknown), tuple(sorted(covered)))


def kernel_less_reason(c: FatbinContainer) -> str | None:
    """Why ``c`` is never loaded for want of kernels, or None.  A module is loaded when one
    of its kernels is launched or the host code uses one of its variables
    (docs/compat.md#kernel-less-containers): with neither, it never is."""
    code = [e for e in c.entries if e.kind in (CodeKind.SASS, CodeKind.PTX)]
    named = bool(code) and all(e.kernel_names == () for e in code)
    data = any(e.data_names for e in code)
    if all(e.kind is CodeKind.SASS and e.kernels is False for e in c.entries) and (
            not named or not data):
        # Every cubin was decoded and none has a .text.<kernel> section: nothing to launch
        # (cuFFTW 12.0's lone device-link stub, which has no wrapper record either).
        return "no kernels (its cubins have no .text section): never needed at run time"
    if named and not data:
        return "no kernels and no device variables (read from its code): never loaded at run time"
    if named and c.host_reads == ():
        return ("no kernels, and no device variable the host code reads (read from its code): "
                "never loaded at run time")
    return None

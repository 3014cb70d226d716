"""Which CUDA train a library was built for, read from its own facts: the runtime it links
(``libcudart.so.12`` -> CUDA 12), the toolkit recorded in its cubins (12.2), and the wheel's
CUDA requirements (``nvidia-cuda-runtime-cu12==12.6.77``, ``cuda-toolkit==13.0.3``,
``torch==2.7.1+cu126``), and the project's name where it states a major (``-cu12``,
``cupy-cuda12x``, NVIDIA's ``nvidia-cublas`` of CUDA 13): a promise the libraries must keep,
so it wins over what they link (TAG004 then reports the library that breaks it).  A wheel
can ship one library per train (bitsandbytes' ``libbitsandbytes_cuda118.so`` ...
``_cuda132.so``): each is judged by its own."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass

from packaging.requirements import InvalidRequirement, Requirement

from cuwheel.errors import TrainSpellingError, UnknownName
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.cuda import Release
from cuwheel.knowledge.linkage import runtime_majors
from cuwheel.model.inventory import Binary, WheelInfo
from cuwheel.model.train import TrainName, parse_train_name
from cuwheel.rules.loading import counted_containers

__all__ = [
    "LibraryTrain", "infer_train", "named_major", "pinned_release", "release_of",
    "train_requires",
    "wheel_release",
]  # fmt: skip


@dataclass(frozen=True)
class LibraryTrain:
    release: Release | None
    evidence: str  # what says so, for reports
    # The CUDA major alone, where only a linked soname says it (libcudart.so.13): which
    # 13.x built the library is unknown, so ``release`` is None.
    major_only: int | None = None
    # The project name that states the major (``nvidia-foo-cu12``), when it decided.
    named: str | None = None

    @property
    def major(self) -> int | None:
        return self.release.major if self.release else self.major_only

    def describe(self) -> str:
        """``cu124``, ``CUDA 13 (release unknown)`` or ``none``."""
        if self.release is not None:
            return self.release.train
        if self.major_only is not None:
            return f"CUDA {self.major_only} (release unknown)"
        return "none"


def _release(major: int, minor: int | None) -> Release | None:
    """The release (major, minor) when known, else the newest of ``major`` at or below it."""
    same = [r for r in active_catalog().releases if r.major == major]
    if not same:
        return None
    if minor is not None:
        below = [r for r in same if r.minor <= minor]
        if below:
            return below[-1]
    return same[-1]


def pinned_release(requires: Sequence[str]) -> tuple[Release, str] | None:
    """The CUDA release the wheel's requirements pin, and the requirement that does."""
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = req.name.lower().replace("_", "-")
        for spec in req.specifier:
            if spec.operator not in ("==", "===", "~="):
                continue
            m = re.match(r"([0-9]{1,6})\.([0-9]{1,6})", spec.version)
            local = _local_train(spec.version)
            if local is not None and name == "torch":
                r = _release(local.major, local.minor)
            elif m and (name == "cuda-toolkit" or name.startswith("nvidia-cuda-runtime")):
                r = _release(int(m[1]), int(m[2]))
            else:
                continue
            if r is not None:
                return r, req.name + str(req.specifier)
    return None


# A name part stating a CUDA major: foo-cu12, foo_cu118 (11), cupy-cuda12x, jax-cuda12-plugin.
_NAME_MAJOR = re.compile(r"(?:^|[-_.])cu(?:da)?(1[0-9]|[2-9][0-9])[0-9]?x?(?=$|[-_.])",
                         re.ASCII | re.IGNORECASE)


def named_major(project: str) -> int | None:
    """The CUDA major a project's name states: NVIDIA's own distributions by the catalog
    (``nvidia-cublas`` is CUDA 13's, ``nvidia-cublas-cu12`` CUDA 12's), else a ``-cuXX`` /
    ``_cuXX`` / ``-cudaXX(x)`` part of the name; None when it states none."""
    from packaging.utils import canonicalize_name

    name = canonicalize_name(project)
    majors = {c.major for c in active_catalog().components
              if canonicalize_name(c.distribution) == name}
    if len(majors) == 1:
        return majors.pop()
    m = _NAME_MAJOR.search(name)
    return int(m[1]) if m else None


def infer_train(
    binary: Binary, requires: Sequence[str] = (), *, project: str | None = None
) -> LibraryTrain:
    """The train of one library: its cubins' toolkit (major.minor) where it agrees with the
    runtime it links, else the linked runtime's major (minor from the requirements' pins;
    without one the major alone, ``major_only``: never a guessed release), else the
    requirements alone; none for a binary with no CUDA at all (no device code, no CUDA
    library linked) or when nothing says.  A ``project`` name that states a major
    (:func:`named_major`) decides the major of a library with CUDA in it: the library's
    own evidence when it agrees, else that major (its release from a pin of that major)."""
    own = _own_train(binary, requires)
    named = named_major(project) if project else None
    if named is None or own.evidence == _NO_CUDA or own.major == named:
        return own
    pin = pinned_release(requires)
    says = f"the project name {project} states CUDA {named}"
    if own.major is not None:
        says += f" (the library's own: {own.evidence})"
    if pin is not None and pin[0].major == named:
        return LibraryTrain(pin[0], f"{says}, {pin[1]}", named=project)
    return LibraryTrain(None, says, named, named=project)


_NO_CUDA = "no CUDA in this binary"


def _own_train(binary: Binary, requires: Sequence[str]) -> LibraryTrain:
    cuda = active_catalog().is_cuda_library
    if not binary.containers and not any(cuda(n, driver=True) for n in binary.needed) and not (
        binary.soname and cuda(binary.soname, driver=True)
    ):
        return LibraryTrain(None, _NO_CUDA)
    links = runtime_majors(binary)
    link_major = max((m for m, _ in links), default=None)
    link_lib = next((lib for m, lib in links if m == link_major), None)
    toolkits = [c.toolkit for _, c in counted_containers(binary) if c.toolkit is not None]
    tk = max(toolkits, key=lambda t: (t.major, t.minor), default=None)
    pin = pinned_release(requires)
    if tk is not None and (link_major is None or tk.major == link_major):
        r = _release(tk.major, tk.minor)
        if r is not None:
            why = f"cubins built by CUDA {tk}" + (f", links {link_lib}" if link_lib else "")
            return LibraryTrain(r, why)
    if link_major is not None:
        if pin is not None and pin[0].major == link_major:
            return LibraryTrain(pin[0], f"links {link_lib}, {pin[1]}")
        return LibraryTrain(None, f"links {link_lib} (release unknown)", link_major)
    if pin is not None:
        return LibraryTrain(pin[0], pin[1])
    return LibraryTrain(None, "nothing names a CUDA train")


def wheel_release(trains: Sequence[LibraryTrain]) -> tuple[Release, str | None] | None:
    """The one release a wheel's libraries point at, for a wheel-level row: the most common
    named release (ties: the newest); else, where only sonames name a major, the newest
    release of the most common such major, with a note saying the release is unknown;
    None when no library says anything."""
    found = Counter(t.release for t in trains if t.release is not None)
    if found:
        return max(found.items(), key=lambda kv: (kv[1], kv[0].version))[0], None
    majors = Counter(t.major_only for t in trains if t.major_only is not None)
    if not majors:
        return None
    major = max(majors.items(), key=lambda kv: (kv[1], kv[0]))[0]
    release = [r for r in active_catalog().releases if r.major == major][-1]
    return release, (f"no library names its CUDA {major} release; the wheel is judged as "
                     f"{release.train}, each library as CUDA {major} (release unknown)")


def release_of(train: str) -> Release:
    """``cu130`` / ``13.0`` -> the release; UnknownName (a LookupError) when none."""
    try:
        name = parse_train_name(train)
    except TrainSpellingError as exc:
        raise UnknownName(str(exc)) from exc
    return active_catalog().release(name.version)


def _local_train(version: str) -> TrainName | None:
    """The train of a ``+cu128`` local version (model/train.py spells it), else None."""
    local = version.partition("+")[2]
    try:
        return parse_train_name(local) if local.startswith("cu") else None
    except TrainSpellingError:
        return None


def train_requires(wheel: WheelInfo | None) -> tuple[str, ...]:
    """The requirements :func:`infer_train` reads for a wheel: the builds it records
    (xformers' ``cpp_lib.json``: ``torch`` ``2.10.0+cu128``, as ``torch==2.10.0+cu128``)
    first, since they say what it was built against, then its Requires-Dist, then the
    wheel itself as a pin (``nvidia-cuda-runtime==13.0.96``): NVIDIA's CUDA runtime wheel
    is versioned by the CUDA release it comes with (13.0.96 is CUDA 13.0 Update 2), while
    the soname it ships (``libcudart.so.13``) names only the major.  A soname is not a
    release."""
    if wheel is None:
        return ()
    built = tuple(f"{r.package}=={r.version}" for r in wheel.build_records)
    return (*built, *wheel.requires_dist, f"{wheel.name}=={wheel.version}")

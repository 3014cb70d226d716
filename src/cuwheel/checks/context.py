"""What every check reads: one wheel's facts, its row (a resolved Plan) and the policy,
plus lookups derived from them once (install paths, declared requirements, platform)."""

from __future__ import annotations

import fnmatch
import functools
import posixpath
import re
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from packaging.markers import default_environment
from packaging.requirements import InvalidRequirement, Requirement
from packaging.specifiers import SpecifierSet
from packaging.utils import canonicalize_name

from cuwheel.checks.claims import Claim, claim_from_specs, implicit_claim
from cuwheel.checks.codes import CODES, Severity
from cuwheel.checks.findings import Finding
from cuwheel.checks.policy import CheckPolicy
from cuwheel.checks.profiles import DEFAULT_PROFILE, ROW_PROFILE, Profile
from cuwheel.checks.profiles import profile as load_profile
from cuwheel.knowledge.active import active_catalog
from cuwheel.knowledge.catalog import Component, Platform
from cuwheel.knowledge.platforms import platform_record
from cuwheel.model.arch import Arch
from cuwheel.model.inventory import Binary, FatbinContainer, Source
from cuwheel.plan.rows import Plan
from cuwheel.rules.loading import counted_containers
from cuwheel.rules.trains import LibraryTrain, infer_train, release_of, train_requires

__all__ = ["CheckContext", "Declared", "Lib", "declared_requirements", "platform_environment"]

_EXTRA_RE = re.compile(r"""\bextra\s*==\s*["']([^"']+)["']""")
_CUDA_NAME_RE = re.compile(r"^nvidia-.*-cu\d+$|^nvidia-cuda-|^cuda-toolkit$")


def platform_environment(platform: str, extra: str = "") -> dict[str, str]:
    """PEP 508 marker values of a Python on row platform ``platform`` (its sys_platform,
    platform_system, platform_machine and os_name from data/platforms.toml; the rest this
    Python's); UnknownName for a platform of no record."""
    env: dict[str, str] = {k: str(v) for k, v in default_environment().items()}
    env.update(platform_record(platform).marker_environment())
    env["extra"] = extra
    return env


def _majors(spec: SpecifierSet) -> frozenset[int] | None:
    """CUDA majors a cuda-toolkit specifier allows; None when it names none."""

    def major(v: str) -> int | None:
        m = re.match(r"[0-9]{1,6}", v)
        return int(m.group()) if m else None

    pinned = {major(s.version) for s in spec if s.operator in ("==", "===", "~=")}
    pinned.discard(None)
    if pinned:
        return frozenset(p for p in pinned if p is not None)
    lower = [major(s.version) for s in spec if s.operator in (">=", ">")]
    upper = [major(s.version) for s in spec if s.operator in ("<", "<=")]
    lows = [x for x in lower if x is not None]
    if lows and upper:
        return frozenset({max(lows)})
    return None


@dataclass(frozen=True)
class Declared:
    """One Requires-Dist line and what it means for CUDA."""

    text: str
    name: str  # canonical
    components: tuple[Component, ...]  # catalog components it installs
    majors: frozenset[int] | None  # CUDA majors (None: not pinned)
    applies: bool  # marker true on this wheel's platform without extras
    extras: tuple[str, ...]  # extras under which it applies, when only there
    is_cuda: bool
    # Components its own requirements install and it loads first (a carrier such as
    # torch; packages.toml [[carrier]]), for any CUDA major.
    carried: tuple[Component, ...] = ()

    def provides(self, library: str, major: int | None, os: str | None) -> Component | None:
        """The component through which this requirement puts ``library`` in place."""
        for c in self.components:
            if (major is None or c.major == major) and c.ships(library, os):
                return c
        for c in self.carried:
            if c.ships(library, os):
                return c
        return None

    @property
    def label(self) -> str:
        return self.text.split(";")[0].strip()



def declared_requirements(
    requires: Sequence[str], platform: Platform | None
) -> tuple[Declared, ...]:
    """What each Requires-Dist line means for CUDA on row platform ``platform`` (None: every
    marker taken to apply): the one reading of a wheel's NVIDIA requirements, for the
    checks and for ``init --from``."""
    comps = active_catalog().components
    out = []
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        name = canonicalize_name(req.name)
        if name == "cuda-toolkit":
            majors = _majors(req.specifier)
            found = tuple(
                c for c in comps
                if c.extra in req.extras and (majors is None or c.major in majors)
            )  # fmt: skip
        else:
            found = tuple(c for c in comps if canonicalize_name(c.distribution) == name)
            majors = frozenset(c.major for c in found) or None
        applies, extras = True, ()
        if req.marker is not None and platform is not None:
            env = platform_environment(platform.name)
            applies = req.marker.evaluate(env)
            if not applies:
                names = tuple(_EXTRA_RE.findall(str(req.marker)))
                extras = tuple(
                    e for e in names
                    if req.marker.evaluate(platform_environment(platform.name, e))
                )  # fmt: skip
        is_cuda = bool(found) or bool(_CUDA_NAME_RE.search(name))
        carrier = active_catalog().carrier(name)
        carried: tuple[Component, ...] = ()
        if carrier is not None and platform is not None and platform.os in carrier.os:
            carried = tuple(c for c in comps if c.name in carrier.components)
        out.append(Declared(text, name, found, majors, applies, extras, is_cuda, carried))
    return tuple(out)

@dataclass(frozen=True)
class Lib:
    """A binary of the wheel with its member path and where it lands when installed."""

    binary: Binary
    member: str  # path inside the wheel (or the archive path for ar members)
    installed: str | None  # path relative to site-packages; None outside it

    @property
    def name(self) -> str:
        return self.member

    @property
    def loadable(self) -> bool:
        """Loaded at run time (shared object, executable, DLL, raw device code)."""
        b = self.binary
        return b.archive is None and b.file_type not in ("object",)

    def runtime_containers(self) -> tuple[FatbinContainer, ...]:
        """Containers the CUDA runtime loads as modules: the loading rules' counted
        containers (no empty, -rdc, LTO-IR or device-link stub containers; docs/compat.md)."""
        return tuple(c for _, c in counted_containers(self.binary))


class CheckContext:
    """Facts + row + policy for one wheel; derived lookups are computed once."""

    def __init__(
        self,
        source: Source,
        plan: Plan,
        policy: CheckPolicy,
        local: str | None,
        train_from: str,
        *,
        profile: Profile | None = None,
        claim: Claim | None = None,
        audit: bool = False,
    ) -> None:
        self.source = source
        self.plan = plan
        self.policy = policy
        self.local = local  # the wheel's local version ("cu130"), if any
        self.train_from = train_from  # where the row's train came from (a flag, the wheel...)
        self.wheel_name = posixpath.basename(source.path.replace("\\", "/"))
        self.audit = audit  # no row: the plan was made up from what the wheel says
        # A project's row is the wheel's build contract (profile "release"); a wheel judged
        # without one, by what makes it fail for users ("audit"); docs/checks.md#profiles.
        self.profile = profile or load_profile(
            policy.profile or plan.row.profile or (DEFAULT_PROFILE if audit else ROW_PROFILE))
        self._claim = claim
        self._trains: dict[str, LibraryTrain] = {}

    # -- claim and trains -----------------------------------------------------------
    @functools.cached_property
    def claim(self) -> Claim:
        """The GPUs the wheel must run on: given, else the row's, else its own SASS."""
        if self._claim is not None:
            return self._claim
        if self.plan.targets:
            return claim_from_specs(self.plan.targets, f"row {self.plan.row.name!r}")
        plat = self.platform.name if self.platform else None
        return implicit_claim([lib.binary for lib in self.loadable_libs()], plat)

    def carrier_archs(self, lib: Lib) -> tuple[tuple[Arch, ...], str | None]:
        """GPUs a library claims through its carrier: an extension that links torch's
        libraries, built against a known torch build (the build the wheel records, else the
        one its requirement pins, ``torch==2.7.1+cu128``), supports what that torch build
        supports on its train (data/torch_archs.toml); ``((), None)`` when nothing says."""
        from cuwheel.knowledge.torch import torch_arch_list

        cat = active_catalog()
        if not any(
            (pkg := cat.package_of(n, self.os)) is not None and pkg.name == "torch"
            for n in lib.binary.needed
        ):
            return (), None
        wheel = self.source.wheel
        version = next(
            (r.version for r in (wheel.build_records if wheel else ()) if r.package == "torch"),
            None,
        ) or _pinned(wheel.requires_dist if wheel else (), "torch")
        if version is None or self.platform is None:
            return (), None
        release = self.train_of(lib).release
        train = release.train if release is not None and "+" not in version else None
        try:
            archs = torch_arch_list(version, train, self.platform.name)
        except ValueError:
            archs = None
        if archs is None:
            return (), None
        return archs.sass, f"torch {version}, which it extends, on {self.platform.name}"

    def train_of(self, lib: Lib) -> LibraryTrain:
        """The library's train: the row's (or a row's ``library-trains`` entry), or, in
        audit mode and for ``infer`` entries, what the library itself says."""
        known = self._trains.get(lib.member)
        if known is None:
            known = self._trains[lib.member] = self._train_of(lib)
        return known

    def _train_of(self, lib: Lib) -> LibraryTrain:
        wanted: str | None = None
        for pattern, train in self.plan.row.library_trains:
            if fnmatch.fnmatchcase(lib.member, pattern):
                wanted = train
                break
        requires = train_requires(self.source.wheel)
        if wanted == "infer" or (wanted is None and self.audit):
            return infer_train(lib.binary, requires, project=self.project)
        if wanted is not None:
            return LibraryTrain(release_of(wanted), f"row {self.plan.row.name!r}: {wanted}")
        return LibraryTrain(self.plan.train.release, f"the row's train {self.plan.train}")

    @property
    def project(self) -> str | None:
        """The wheel's project name (evidence of its train in audit mode)."""
        return self.source.wheel.name if self.source.wheel else None

    def optional(self, lib: Lib) -> bool:
        """A plugin the row marks optional: its CUDA dependencies may come with an extra."""
        return any(fnmatch.fnmatchcase(lib.member, p) for p in self.plan.row.optional)

    # -- row ----------------------------------------------------------------------
    @property
    def is_cpu(self) -> bool:
        return self.plan.train.is_cpu

    @property
    def major(self) -> int | None:
        r = self.plan.train.release
        return r.major if r else None

    # -- platform -------------------------------------------------------------------
    @functools.cached_property
    def platform_tags(self) -> tuple[str, ...]:
        from packaging.utils import InvalidWheelFilename, parse_wheel_filename

        try:
            tags = parse_wheel_filename(self.wheel_name)[3]
        except InvalidWheelFilename:
            return ()
        return tuple(sorted({t.platform for t in tags}))

    @functools.cached_property
    def platform(self) -> Platform | None:
        for tag in self.platform_tags:
            p = active_catalog().platform_for_wheel_tag(tag)
            if p is not None:
                return p
        if self.plan.platform:
            return active_catalog().platform(self.plan.platform)
        return None

    @property
    def os(self) -> str | None:
        return self.platform.os if self.platform else None

    # -- binaries ------------------------------------------------------------------
    @functools.cached_property
    def libs(self) -> tuple[Lib, ...]:
        out = []
        for b in self.source.binaries:
            path = b.archive or b.path
            member = self.source.member(path) or path
            out.append(Lib(b, member, _installed(member)))
        return tuple(out)

    def loadable_libs(self) -> Iterator[Lib]:
        return (lib for lib in self.libs if lib.loadable)

    @functools.cached_property
    def bundled(self) -> dict[str, Lib]:
        """File names of the libraries the wheel ships -> the shipping binary.

        The loader finds a DT_NEEDED entry by file name, never by SONAME: an
        auditwheel-renamed ``libcudart-45e7f3ed.so.12`` (SONAME ``libcudart.so.12``) does not
        satisfy ``NEEDED libcudart.so.12``.  Windows DLL names are case-insensitive.
        """
        out: dict[str, Lib] = {}
        for lib in self.libs:
            if not lib.loadable:
                continue
            out.setdefault(_key(posixpath.basename(lib.member)), lib)
        return out

    def ships(self, library: str) -> Lib | None:
        """The shipped library a NEEDED / imported name loads, by file name."""
        return self.bundled.get(_key(library))

    def ships_soname(self, library: str) -> Lib | None:
        """A shipped library whose SONAME is ``library`` but whose file name is not: the
        loader will not find it under that name (a hint for findings)."""
        for lib in self.libs:
            if lib.loadable and lib.binary.soname == library and self.ships(library) is None:
                return lib
        return None

    # -- requirements -------------------------------------------------------------
    @functools.cached_property
    def declared(self) -> tuple[Declared, ...]:
        wheel = self.source.wheel
        if wheel is None:
            return ()
        return declared_requirements(wheel.requires_dist, self.platform)

    # -- findings -----------------------------------------------------------------
    def finding(
        self, code: str, message: str, library: str | None = None, severity: Severity | None = None
    ) -> Finding:
        return Finding(
            code, severity if severity is not None else CODES[code].severity, message, library
        )


def _pinned(requires: Sequence[str], name: str) -> str | None:
    """The version a requirement pins exactly (``torch==2.7.1+cu128``), or None."""
    for text in requires:
        try:
            req = Requirement(text)
        except InvalidRequirement:
            continue
        if canonicalize_name(req.name) != name:
            continue
        for spec in req.specifier:
            if spec.operator in ("==", "===") and "*" not in spec.version:
                return spec.version
    return None


def _key(name: str) -> str:
    return name.lower() if name.lower().endswith(".dll") else name


def _installed(member: str) -> str | None:
    """Where a wheel member lands, relative to site-packages (PEP 427 .data dirs)."""
    parts = member.split("/")
    if parts and parts[0].endswith(".data"):
        if len(parts) > 2 and parts[1] in ("purelib", "platlib"):
            return "/".join(parts[2:])
        return None
    return member

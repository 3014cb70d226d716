"""Platform-tag promises (TAG008-TAG013): what the wheel's tags say about the systems and
Pythons it runs on, against what its binaries need.

- TAG008 / TAG009: symbol versions against the Linux tags (checks/symbol_versions.py).
- TAG010: the WHEEL file's ``Tag:`` lines against the file name's tags.
- TAG011: extension modules bound to one CPython (``.cpython-39-x86_64-linux-gnu.so``,
  ``.cp39-win_amd64.pyd``, an import of ``python39.dll``) in a wheel that installs on others.
- TAG012 / TAG013: abi3 modules that use stable-ABI symbols newer than the wheel's abi3
  floor, or ``Py*`` / ``_Py*`` symbols outside the stable ABI (abi3audit's rule, on the
  module's undefined dynamic symbols; data/stable_abi.toml).

Pure functions of the inventory and the tags; the PE machine against ``win_amd64`` /
``win_arm64`` is TAG001 (checks/tags.py).
"""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from packaging.specifiers import InvalidSpecifier, SpecifierSet
from packaging.tags import parse_tag

from cuwheel.checks.codes import Severity
from cuwheel.checks.context import CheckContext, Lib
from cuwheel.checks.findings import Finding
from cuwheel.checks.symbol_versions import check_symbol_versions, shown_symbols
from cuwheel.knowledge.tagpolicy import load_stable_abi
from cuwheel.model.inventory import Binary

__all__ = ["check_abi3", "check_platform_tags", "check_symbol_versions", "check_wheel_file"]

def check_platform_tags(ctx: CheckContext) -> list[Finding]:
    """TAG008-TAG013."""
    return [*check_symbol_versions(ctx), *check_wheel_file(ctx), *check_abi3(ctx)]


# -- the WHEEL file -----------------------------------------------------------------------
def _expand(tags: Iterable[str]) -> set[str] | None:
    out: set[str] = set()
    for t in tags:
        try:
            out |= {str(x) for x in parse_tag(t)}
        except ValueError:
            return None
    return out


def check_wheel_file(ctx: CheckContext) -> list[Finding]:
    """TAG010."""
    wheel = ctx.source.wheel
    if wheel is None or not wheel.tags:
        return []
    if wheel.wheel_file_tags is None:
        return [ctx.finding(
            "TAG010",
            "the wheel has no readable .dist-info/WHEEL file: pip refuses to install it",
            severity=Severity.ERROR,
        )]  # fmt: skip
    named = set(wheel.tags)
    declared = _expand(wheel.wheel_file_tags)
    if declared == named:
        return []
    said = ", ".join(wheel.wheel_file_tags) or "no Tag line"
    only_wheel = sorted((declared or set()) - named)
    only_name = sorted(named - (declared or set()))
    detail = []
    if only_name:
        detail.append(f"only the file name says {', '.join(only_name)}")
    if only_wheel:
        detail.append(f"only WHEEL says {', '.join(only_wheel)}")
    return [ctx.finding(
        "TAG010",
        f"WHEEL's Tag lines ({said}) disagree with the file name's tags "
        f"({'; '.join(detail) or 'unparsable Tag line'}): the file was renamed instead of "
        f"retagged, so no tool checked the name's promise (auditwheel repair and "
        f"`wheel tags` rewrite both)",
    )]  # fmt: skip


# -- CPython version of extension modules -------------------------------------------------
_ELF_MODULE = re.compile(r"\.cpython-3(\d+)[a-z]*-[^./]+\.so$")
_PE_MODULE = re.compile(r"\.cp3(\d+)[a-z]*-win[^./]*\.pyd$", re.IGNORECASE)
_PYTHON_DLL = re.compile(r"^python3(\d+)[a-z]*\.dll$", re.IGNORECASE)


_FUTURE = 40  # minors up to 3.39 stand for "and later"


def _pythons(tags: Iterable[str], requires_python: str | None) -> tuple[set[int], int | None]:
    """(the CPython 3 minors the wheel installs on, its abi3 floor): its tags
    (``cp311-cp311`` -> 3.11; ``cp39-abi3`` -> 3.9 and later; ``py39-none`` /
    ``py3-none`` -> 3.9 / 3.0 and later) within its Requires-Python."""
    spec: SpecifierSet | None = None
    if requires_python:
        try:
            spec = SpecifierSet(requires_python)
        except InvalidSpecifier:
            spec = None
    ok = [spec is None or spec.contains(f"3.{m}", prereleases=True) for m in range(_FUTURE)]
    admitted: set[int] = set()
    abi3: set[int] = set()
    for t in tags:
        interp, abi, _plat = [*t.split("-"), "", ""][:3]
        m = re.fullmatch(r"(cp|py)3(\d*)", interp)
        if not m:
            continue
        minor = int(m.group(2)) if m.group(2) else 0
        if abi in ("abi3", "none"):
            span = {v for v in range(minor, _FUTURE) if ok[v]}
            if abi == "abi3":
                abi3 |= span
            admitted |= span
        elif m.group(1) == "cp" and minor < _FUTURE and ok[minor]:
            admitted.add(minor)
    return admitted, min(abi3) if abi3 else None


def check_abi3(ctx: CheckContext) -> list[Finding]:
    """TAG011, TAG012, TAG013."""
    wheel = ctx.source.wheel
    if wheel is None:
        return []
    admitted, abi3 = _pythons(wheel.tags, wheel.requires_python)
    if not admitted:
        return []
    out = _bound_modules(ctx, admitted)
    if abi3 is not None:
        for lib in ctx.loadable_libs():
            out += _limited_api(ctx, lib, abi3)
    return out


def _admits(admitted: set[int]) -> str:
    """{9, 10, ..., 39} -> "3.9 and later"; {11, 12, 13, 14} -> "3.11-3.14"."""
    runs: list[list[int]] = []
    for m in sorted(admitted):
        if runs and runs[-1][1] == m - 1:
            runs[-1][1] = m
        else:
            runs.append([m, m])
    parts = []
    for a, b in runs:
        if b == _FUTURE - 1:
            parts.append(f"3.{a} and later")
        else:
            parts.append(f"3.{a}" if a == b else f"3.{a}-3.{b}")
    return ", ".join(parts)


def _bound(lib: Lib) -> tuple[tuple[str, str], list[tuple[int, str]]]:
    """(the module's key: directory and name without the version suffix, the CPython
    minors its file name or python3XY.dll import binds it to, each with the evidence)."""
    b = lib.binary
    folder, base = posixpath.split(lib.member)
    bound: list[tuple[int, str]] = []
    m = (_ELF_MODULE if b.format == "elf" else _PE_MODULE).search(base)
    if m:
        bound.append((int(m.group(1)), f"is named for CPython 3.{m.group(1)} only"))
        base = base[: m.start()]
    if b.format == "pe":
        for name in b.needed:
            d = _PYTHON_DLL.match(name)
            if d is not None:
                bound.append((int(d.group(1)), f"imports {name} (CPython 3.{d.group(1)} "
                              "only; abi3 modules import python3.dll)"))
    return (folder, base.split(".")[0]), bound


def _bound_modules(ctx: CheckContext, admitted: set[int]) -> list[Finding]:
    """A module bound to one CPython is found (or loads) there only: fine when the
    wheel's other Pythons get their own copy (DALI ships _C for 3.10 ... 3.15)."""
    found = [(lib, *_bound(lib)) for lib in ctx.loadable_libs()]
    covered: dict[tuple[str, str], set[int]] = {}
    for _lib, key, bound in found:
        if len({m for m, _ in bound}) == 1:
            covered.setdefault(key, set()).add(bound[0][0])
    out = []
    for lib, key, bound in found:
        if not bound:
            continue
        minors = {m for m, _ in bound}
        missing = admitted - covered.get(key, set())
        if len(minors) == 1 and not missing:
            continue
        minor, what = bound[0] if len(minors) == 1 else max(bound)
        if len(minors) > 1:
            what = "; ".join(w for _, w in bound)
        ext = "*.abi3.so" if lib.binary.format == "elf" else "*.pyd"
        out.append(ctx.finding(
            "TAG011",
            f"{what}, in a wheel that installs on {_admits(admitted)}: on "
            f"{_admits(missing or admitted - {minor})} the module is not found or does not "
            f"load; name it {ext} (built with Py_LIMITED_API), ship one per Python, or tag "
            f"the wheel cp3{minor}-cp3{minor}",
            lib.name,
        ))  # fmt: skip
    return out


def _is_module(b: Binary) -> bool:
    return any(s.startswith("PyInit_") for s in b.exported)


def _limited_api(ctx: CheckContext, lib: Lib, floor: int) -> list[Finding]:
    b = lib.binary
    if b.format != "elf" or not b.undefined or not _is_module(b):
        return []
    stable = load_stable_abi()
    newer: dict[tuple[int, int], list[str]] = {}
    outside: list[str] = []
    for u in b.undefined:
        name = u.name
        if u.weak or not name.startswith(("Py", "_Py")) or name.startswith("PyInit_"):
            continue
        added = stable.get(name)
        if added is None:
            outside.append(name)
        elif added > (3, floor):
            newer.setdefault(added, []).append(name)
    out = []
    if newer:
        top = max(newer)
        parts = "; ".join(f"{shown_symbols(names)} (stable ABI since {v[0]}.{v[1]})"
                          for v, names in sorted(newer.items()))
        out.append(ctx.finding(
            "TAG012",
            f"uses {parts} in an abi3 wheel that installs on Python 3.{floor} and later "
            f"(its tags and Requires-Python): on 3.{floor}-3.{top[1] - 1} the module fails "
            f"to load (undefined symbol); tag it cp3{top[1]}-abi3 (or raise Requires-Python), "
            f"or build with Py_LIMITED_API=0x03{floor:02X}0000",
            lib.name,
        ))  # fmt: skip
    if outside:
        out.append(ctx.finding(
            "TAG013",
            f"uses {shown_symbols(outside)}, outside CPython's stable ABI, in an abi3 wheel: the "
            f"symbols may change or vanish in other Python versions; build with "
            f"Py_LIMITED_API, or tag the wheel for one CPython",
            lib.name,
        ))  # fmt: skip
    return out

"""Symbol versions against the wheel's Linux platform tags (TAG008, TAG009).

- TAG008: symbol versions (``GLIBC_2.34``, ``GLIBCXX_3.4.29``, ``CXXABI_1.3.13``,
  ``GCC_12.0.0`` ...) beyond the manylinux policy of the wheel's most compatible tag
  (auditwheel's policy data, data/manylinux.toml), or glibc versions in a musllinux wheel.
- TAG009: unversioned references to symbols that glibc before 2.32 / 2.34 keeps in
  libpthread / libdl / librt / libutil / libanl / libresolv, without that library on the
  binary's NEEDED chain: they resolve from libc on new glibc only.

The tag architecture of each ELF machine, the dynamic loader's names and the libraries a
Python process already holds are data/platforms.toml ``[linux]``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

from cuwheel.checks.codes import Severity
from cuwheel.checks.context import CheckContext, Lib
from cuwheel.checks.findings import Finding
from cuwheel.knowledge.platforms import load_platforms
from cuwheel.knowledge.tagpolicy import (
    PlatformTag,
    TagPolicies,
    TagPolicy,
    load_tag_policies,
    parse_platform_tag,
)
from cuwheel.model.inventory import Binary

__all__ = ["check_symbol_versions", "shown_symbols"]

_SHOWN = 3  # symbols named per version in a message


def shown_symbols(names: Iterable[str]) -> str:
    names = sorted(set(names))
    more = f", +{len(names) - _SHOWN} more" if len(names) > _SHOWN else ""
    return ", ".join(names[:_SHOWN]) + more


def _linux_tags(ctx: CheckContext, policies: TagPolicies) -> dict[str, PlatformTag]:
    """Per architecture, the wheel's most compatible manylinux / musllinux tag (the
    promise that binds: a wheel tagged 2_24 and 2_28 must run on glibc 2.24)."""
    out: dict[str, PlatformTag] = {}
    for tag in ctx.platform_tags:
        p = parse_platform_tag(tag, policies)
        if p is None:
            continue
        have = out.get(p.arch)
        if have is None or (p.family, p.libc) < (have.family, have.libc):
            out[p.arch] = p
    return out


def _elf_libs(ctx: CheckContext) -> Iterator[tuple[Lib, str]]:
    linux = load_platforms().linux
    for lib in ctx.loadable_libs():
        b = lib.binary
        arch = linux.arch_of(b.machine) if b.format == "elf" else None
        if arch is not None:
            yield lib, arch


def _requirements(b: Binary) -> Iterator[tuple[str, str]]:
    """(library, version) of every .gnu.version_r requirement, the loader's left out."""
    linux = load_platforms().linux
    for need in b.version_needs:
        if not linux.is_loader(need.library):
            for v in need.versions:
                yield need.library, v


def _oldest(policies: TagPolicies, family: str, arch: str,
            reqs: Iterable[tuple[str, str]]) -> tuple[TagPolicy | None, str | None]:
    """The most compatible policy allowing every governed version of ``reqs``, and the
    first version no policy allows (then the first is None)."""
    worst: TagPolicy | None = None
    for _lib, v in reqs:
        if not policies.governs(family, arch, v):
            continue
        p = policies.oldest_allowing(family, arch, v)
        if p is None:
            return None, v
        if worst is None or p.priority < worst.priority:
            worst = p
    return worst, None


def check_symbol_versions(ctx: CheckContext) -> list[Finding]:
    """TAG008 and TAG009."""
    libs = list(_elf_libs(ctx))
    if not libs:
        return []
    policies = load_tag_policies()
    tags = _linux_tags(ctx, policies)
    if not tags:
        return []
    out: list[Finding] = []
    # What the whole wheel could honestly carry, per architecture.
    honest: dict[str, tuple[TagPolicy | None, str | None]] = {}
    for arch, tag in tags.items():
        reqs = [r for lib, a in libs if a == arch for r in _requirements(lib.binary)]
        honest[arch] = _oldest(policies, tag.family, arch, reqs)
    for lib, arch in libs:
        found = tags.get(arch)
        if found is None:
            continue  # another machine than the tags name: TAG001
        if found.family == "musllinux":
            out += _glibc_in_musl(ctx, lib, found)
            continue
        out += _beyond(ctx, policies, lib, found, honest[arch])
        out += _moved(ctx, policies, lib, found)
    return out


def _honest_text(tag: PlatformTag, honest: tuple[TagPolicy | None, str | None]) -> str:
    best, blocker = honest
    if blocker is not None:
        return (f"no {tag.family} tag allows {blocker}: the wheel can honestly carry only "
                f"linux_{tag.arch}")
    if best is None:
        return f"the wheel could carry {tag.tag}"
    return f"the wheel could honestly carry {best.tag(tag.arch)}"


def _beyond(ctx: CheckContext, policies: TagPolicies, lib: Lib, tag: PlatformTag,
            honest: tuple[TagPolicy | None, str | None]) -> list[Finding]:
    promise = tag.policy
    if promise is None:
        return []
    arch = tag.arch
    over: list[tuple[int, str, str, str]] = []  # (order, version, library, needs)
    seen: set[tuple[str, str]] = set()
    for library, v in _requirements(lib.binary):
        if (library, v) in seen or not policies.governs("manylinux", arch, v):
            continue
        seen.add((library, v))
        if tag.family == "manylinux" and v.startswith("GLIBC_") and _glibc_ok(v, tag.libc):
            continue  # e.g. manylinux_2_30 (no policy of its own): GLIBC_2.30 is allowed
        p = policies.oldest_allowing("manylinux", arch, v)
        if p is not None and p.priority >= promise.priority:
            continue
        need = p.tag(arch) if p is not None else "no manylinux tag"
        over.append((p.priority if p is not None else -1, v, library, need))
    if not over:
        return []
    over.sort()
    by_version: dict[tuple[str, str], list[str]] = {}
    for u in lib.binary.undefined:
        if u.version is not None and u.library is not None:
            by_version.setdefault((u.version, u.library), []).append(u.name)
    parts = []
    for _, v, library, need in over:
        syms = by_version.get((v, library), [])
        what = f" ({shown_symbols(syms)})" if syms else ""
        parts.append(f"{v} of {library}{what} needs {need}")
    return [ctx.finding(
        "TAG008",
        f"{'; '.join(parts)}; the wheel is tagged {tag.tag} (glibc {tag.libc[0]}."
        f"{tag.libc[1]}+): it fails to load on the older systems that tag admits; "
        f"{_honest_text(tag, honest)}",
        lib.name,
    )]  # fmt: skip


def _glibc_ok(version: str, libc: tuple[int, int]) -> bool:
    m = re.fullmatch(r"GLIBC_(\d+)\.(\d+)(?:\.\d+)?", version)
    return m is not None and (int(m.group(1)), int(m.group(2))) <= libc


def _glibc_in_musl(ctx: CheckContext, lib: Lib, tag: PlatformTag) -> list[Finding]:
    glibc = sorted({v for library, v in _requirements(lib.binary) if v.startswith("GLIBC_")})
    if not glibc:
        return []
    return [ctx.finding(
        "TAG008",
        f"requires {', '.join(glibc[:_SHOWN])} (glibc symbol versions) in a {tag.tag} wheel: "
        f"musl has no glibc versions, so the library does not load there; build it on a "
        f"musllinux image, or tag it manylinux",
        lib.name,
    )]  # fmt: skip


def _reachable(ctx: CheckContext, lib: Lib) -> set[str]:
    """NEEDED names on the binary's load chain: its own, and those of the libraries the
    wheel ships that it (transitively) needs."""
    seen: set[str] = set()
    todo = list(lib.binary.needed)
    while todo:
        name = todo.pop()
        if name in seen:
            continue
        seen.add(name)
        dep = ctx.ships(name)
        if dep is not None:
            todo.extend(dep.binary.needed)
    return seen


def _moved(ctx: CheckContext, policies: TagPolicies, lib: Lib,
           tag: PlatformTag) -> list[Finding]:
    moved = policies.moved
    hits: dict[tuple[str, tuple[int, int]], list[str]] = {}
    for u in lib.binary.undefined:
        if u.version is None and not u.weak:
            m = moved.get(u.name)
            if m is not None and tag.libc < m.glibc:
                hits.setdefault((m.library, m.glibc), []).append(u.name)
    if not hits:
        return []
    reach = _reachable(ctx, lib)
    interpreter = load_platforms().linux.interpreter_libraries
    out: list[Finding] = []
    for (library, glibc), names in sorted(hits.items()):
        if library in reach:
            continue
        g = f"{glibc[0]}.{glibc[1]}"
        if library in interpreter and lib.binary.file_type == "shared":
            out.append(ctx.finding(
                "TAG009",
                f"references {shown_symbols(names)} without a symbol version and does not NEED "
                f"{library}: on glibc before {g} they resolve only because the process "
                f"already has {library} (CPython links it there); a host that does not "
                f"fails to load the library; link it with -l{library[3:].split('.')[0]}",
                lib.name,
                severity=Severity.INFO,
            ))  # fmt: skip
            continue
        out.append(ctx.finding(
            "TAG009",
            f"references {shown_symbols(names)} without a symbol version and does not NEED "
            f"{library}: glibc before {g} has them only in {library}, so on the glibc "
            f"{tag.libc[0]}.{tag.libc[1]}-{glibc[0]}.{glibc[1] - 1} that {tag.tag} admits "
            f"the library fails to load (undefined symbol); link it with "
            f"-l{library[3:].split('.')[0]} against the old glibc, or tag the wheel "
            f"manylinux_{glibc[0]}_{glibc[1]}_{tag.arch}",
            lib.name,
        ))  # fmt: skip
    return out

"""Tag and train checks (TAG): the platform tag matches every binary's machine; the
``+cuXYZ`` local version names the row's train; linked CUDA libraries and the toolkit
recorded in cubins belong to the train's CUDA major."""

from __future__ import annotations

from cuwheel.checks.context import CheckContext
from cuwheel.checks.findings import Finding
from cuwheel.errors import ConfigError
from cuwheel.knowledge.active import active_catalog
from cuwheel.model.inventory import CodeKind
from cuwheel.plan.rows import Train, parse_train

__all__ = ["check_machine", "check_train"]


def check_machine(ctx: CheckContext) -> list[Finding]:
    """TAG001 for binaries something loads; relocatable objects and archives of them are
    data to a linker (a wheel that bundles a compiler ships them for another machine)."""
    out: list[Finding] = []
    native = [lib for lib in ctx.libs if lib.binary.format in ("elf", "pe") and lib.loadable]
    if not native:
        return out
    tags = ctx.platform_tags
    p = ctx.platform
    if p is None:
        tag = ", ".join(tags) or "?"
        for lib in native:
            out.append(ctx.finding(
                "TAG001",
                f"{lib.binary.format.upper()} {lib.binary.machine} binary in a wheel tagged {tag}",
                lib.name,
            ))  # fmt: skip
        return out
    fmt, machine = p.binary_format, p.binary_machine
    for lib in native:
        b = lib.binary
        if b.format != fmt or (b.machine is not None and b.machine != machine):
            out.append(ctx.finding(
                "TAG001",
                f"{b.format.upper()} {b.machine} binary in a {', '.join(tags)} wheel "
                f"(expects {fmt.upper() if fmt else '?'} {machine})",
                lib.name,
            ))  # fmt: skip
    return out


def check_train(ctx: CheckContext) -> list[Finding]:
    out: list[Finding] = []
    train = ctx.plan.train
    if ctx.local is None:
        if ctx.plan.row.local_version:  # a row published without one says so
            out.append(ctx.finding(
                "TAG002",
                f"the wheel's version has no +{train} local version; the train came from "
                f"{ctx.train_from}",
            ))  # fmt: skip
    else:
        try:
            named = parse_train(ctx.local)
        except ConfigError:
            named = None
        if named != train:
            out.append(ctx.finding(
                "TAG003", f"local version +{ctx.local} does not name the row's train {train}"
            ))  # fmt: skip
    if train.release is None:
        return out
    for lib in ctx.loadable_libs():
        lt = ctx.train_of(lib)
        release = lt.release
        if lt.major is not None:
            for name in lib.binary.needed:
                comps = active_catalog().find_library(name, os=ctx.os)
                if comps and not any(c.major == lt.major for c in comps):
                    majors = "/".join(str(m) for m in sorted({c.major for c in comps}))
                    label = Train(release) if release is not None else lt.describe()
                    out.append(ctx.finding(
                        "TAG004",
                        f"links {name} (CUDA {majors}) in a {label} wheel (CUDA {lt.major})"
                        + (f": its name {lt.named} states CUDA {lt.major}" if lt.named else ""),
                        lib.name,
                    ))  # fmt: skip
        if release is None:
            if lt.named and lt.major is not None:  # the name states the major alone
                containers = lib.runtime_containers()
                other = [t for c in containers if (t := c.toolkit) is not None
                         and t.major != lt.major]
                if other:
                    names = ", ".join(sorted({str(t) for t in other}))
                    out.append(ctx.finding(
                        "TAG005",
                        f"cubins of {len(other)} of {len(containers)} container(s) were built "
                        f"by CUDA {names}, not CUDA {lt.major}, which its name {lt.named} "
                        "states",
                        lib.name,
                    ))  # fmt: skip
            continue
        train = Train(release)
        containers = lib.runtime_containers()
        tks = [c.toolkit for c in containers if c.toolkit is not None]
        other = [t for t in tks if t.major != release.major]
        if other:
            names = ", ".join(sorted({str(t) for t in other}))
            out.append(ctx.finding(
                "TAG005",
                f"cubins of {len(other)} of {len(containers)} container(s) were built by CUDA "
                f"{names}, not CUDA {release.major} of train {train}",
                lib.name,
            ))  # fmt: skip
        minor = sorted(
            {
                f"{t.major}.{t.minor}"
                for t in tks
                if t.major == release.major and t.minor != release.minor
            }
        )
        if minor:
            out.append(ctx.finding(
                "TAG006",
                f"cubins built by CUDA {', '.join(minor)} in a {train} wheel (CUDA "
                f"{release.name})",
                lib.name,
            ))  # fmt: skip
        isas = sorted(
            {
                e.code_version
                for c in containers
                for e in c.entries
                if e.kind is CodeKind.PTX and e.code_version > release.ptx_isa
            }
        )
        if isas:
            names = ", ".join(f"{a}.{b}" for a, b in isas)
            out.append(ctx.finding(
                "TAG007",
                f"PTX ISA {names} is newer than CUDA {release.name} emits "
                f"({release.ptx_isa_name}); a driver of that release cannot JIT-compile it",
                lib.name,
            ))  # fmt: skip
    return out

"""Compact, readable text summary of an inventory (one block per binary)."""

from __future__ import annotations

from cuwheel.model.inventory import Binary, CodeKind, Inventory, Source
from cuwheel.model.kernels import family_rows
from cuwheel.render.escape import escape_lines

__all__ = ["render_text"]


def _size(n: int) -> str:
    value = float(n)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1000 or unit == "GB":
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1000
    return f"{n} B"


def _cuda_libraries(needed: tuple[str, ...]) -> tuple[list[str], list[str]]:
    """Split linked libraries into (CUDA runtime libraries, driver libraries)."""
    from cuwheel.knowledge.catalog import find_library, is_driver_library

    runtime, driver = [], []
    for name in needed:
        if is_driver_library(name):
            driver.append(name)
        elif find_library(name):
            runtime.append(name)
    return runtime, driver


# Kernel families listed per binary without --all.
_FAMILIES_SHOWN = 8


def _kernel_lines(b: Binary, full: bool) -> list[str]:
    """The kernel families (inspect --kernels), the most instantiated first."""
    rows = family_rows((e.kind.value, e.name, e.kernel_names) for e in b.entries())
    if rows is None:
        return []
    total = sum(n for _, n, _, _ in rows)
    out = [f"    kernels: {total} in {len(rows)} families"]
    rows.sort(key=lambda r: (-r[1], r[0]))
    for family, n, sass, ptx in rows if full else rows[:_FAMILIES_SHOWN]:
        targets = ", ".join(sass + [p.replace("sm_", "compute_") for p in ptx])
        out.append(f"      {family}  {n} kernel{'s' if n != 1 else ''} ({targets})")
    if not full and len(rows) > _FAMILIES_SHOWN:
        out.append(f"      ... {len(rows) - _FAMILIES_SHOWN} more families (--all lists them)")
    return out


def _binary_lines(b: Binary, full: bool, source: Source | None = None) -> list[str]:
    kind = {"elf": "ELF", "pe": "PE", "cubin": "cubin", "fatbin": "fatbin", "ptx": "PTX"}[b.format]
    what = " ".join(x for x in (kind, b.file_type or "", b.machine or "") if x)
    name = b.path
    if source is not None and source.kind != "file" and name.startswith(source.path):
        # Under its wheel's (or directory's) header: the member path alone.
        name = name[len(source.path):].lstrip("!/\\") or name
    lines = [f"  {name}  [{what}, {_size(b.size)}]"]
    if b.containers:
        sections: dict[str, int] = {}
        for c in b.containers:
            key = c.section or ("(file)" if b.format in ("fatbin", "cubin", "ptx") else "(none)")
            sections[key] = sections.get(key, 0) + 1
        where = ", ".join(f"{k} {v}" for k, v in sections.items())
        lines.append(f"    containers: {len(b.containers)} ({where})")
        total = b.containers_with_code
        for label, k in (("SASS", CodeKind.SASS), ("PTX ", CodeKind.PTX), ("LTO ", CodeKind.LTOIR)):
            cov = [a for a in b.coverage() if a.kind is k]
            if not cov:
                if k is not CodeKind.LTOIR:
                    lines.append(f"    {label}  none")
                continue
            parts = []
            for a in cov:
                target = a.arch.sass if k is CodeKind.SASS else a.arch.ptx
                parts.append(f"{target} {a.containers}/{total} ({_size(a.stored_bytes)})")
            lines.append(f"    {label}  " + ", ".join(parts))
        isas = sorted({e.ptx_isa for e in b.entries() if e.ptx_isa})
        comp: dict[str, int] = {}
        for e in b.entries():
            comp[e.compression.value] = comp.get(e.compression.value, 0) + 1
        tk = sorted({str(c.toolkit) for c in b.containers if c.toolkit is not None})
        extra = []
        if isas:
            extra.append("PTX ISA " + ", ".join(isas))
        extra.append("compression " + ", ".join(f"{k} {v}" for k, v in sorted(comp.items())))
        extra.append("toolkit " + (", ".join(tk) if tk else "not recorded"))
        lines.append("    " + "; ".join(extra))
        lines += _kernel_lines(b, full)
    for note in b.anomalies:  # what could not be read: the facts above may be incomplete
        lines.append(f"    warning: {note}")
    runtime, driver = _cuda_libraries(b.needed)
    if runtime or driver:
        lines.append("    links CUDA: " + " ".join(runtime + driver))
    paths = [("rpath", b.rpath), ("runpath", b.runpath)]
    for label, value in paths:
        if value:
            lines.append(f"    {label}: " + ":".join(value))
    if full:
        if b.needed:
            lines.append("    needed: " + " ".join(b.needed))
        for i, c in enumerate(b.containers):
            rel = " relocatable" if c.relocatable else ""
            rel += " device-link" if c.device_link else ""
            lines.append(
                f"    container {i} @0x{c.offset:x} {c.section or '-'}{rel} {_size(c.size)}"
            )
            for e in c.entries:
                bits = [e.kind.value, e.name, e.compression.value, _size(e.uncompressed_size)]
                if e.ptx_isa:
                    bits.append(f"ISA {e.ptx_isa}")
                if e.toolkit:
                    bits.append(f"toolkit {e.toolkit}")
                if e.debug:
                    bits.append("debug")
                lines.append("      " + " ".join(bits))
    return lines


LEGEND = (
    "legend: 'sm_80 2/3 (1.2 MB)' = SASS for sm_80 in 2 of the binary's 3 fatbin containers "
    "with code, 1.2 MB stored; PTX = compute_XY code the driver JIT-compiles for newer GPUs"
)


def _artifact_lines(s: Source) -> list[str]:
    """An artifact's own records: its train and the evidence, the GPUs it runs on, its host
    (docs/artifacts.md)."""
    from cuwheel.knowledge import catalog
    from cuwheel.rules.artifact import isa_needs, runs_on
    from cuwheel.rules.artifact_train import runtime_imported, strongest, train_evidence

    a = s.artifact
    assert a is not None
    evidence = train_evidence(s)
    t = strongest(evidence)
    lines = [f"  {a.label}: CUDA train " + (f"{t.train} (decided by {t.source}: {t.where})"
                                            if t else "not recorded")]
    for e in evidence:
        if t is None or (e.source, e.where) != (t.source, t.where):
            lines.append(f"    also {e.source} {e.train}: {e.where}")
    gpus = []
    for arch in runs_on(s):
        g = catalog.gpu_for_arch(arch)
        names = ", ".join(p.name for p in g.products[:3]) if g else ""
        gpus.append(f"{arch.cc}" + (f" ({names})" if names else ""))
    lines.append("  runs on: CC " + "; ".join(gpus) if gpus else "  runs on: no GPU")
    host = " ".join(x for x in (a.platform or "", a.machine or "") if x) or "not recorded"
    isa = " ".join(a.cpu_isa)
    needs = isa_needs(a.cpu_isa, a.machine)
    beyond = (" (beyond the baseline: " + ", ".join(f"{n.name} {n.level}" for n in needs) + ")"
              if needs else "")
    lines.append(f"  host: {host}" + (f"; CPU ISA {isa}{beyond}" if isa else ""))
    if runtime_imported(s):
        lines.append("  CUDA runtime: imported from the process (cuda* symbols, no libcudart)")
    floor = catalog.minor_compat_floor(t.major) if t is not None else None
    if t is not None and floor is not None:
        drv = floor.floor("windows" if a.platform == "win32" else "linux")
        if drv:
            lines.append(f"  driver: {drv} or later for CUDA {t.major}.x "
                         "(minor-version compatibility)")
    shown = [f"{k}={v}" for k, v in a.metadata if k not in ("AOTI_CPU_ISA", "AOTI_PLATFORM",
                                                            "AOTI_MACHINE")]
    if shown:
        lines.append("  recorded: " + ", ".join(shown[:12])
                     + (f" (+{len(shown) - 12} more)" if len(shown) > 12 else ""))
    return lines


def _source_lines(s: Source, full: bool, device_only: bool = False) -> list[str]:
    with_code = sum(1 for b in s.binaries if b.has_device_code)
    head = s.path
    if s.wheel:
        head += f"  ({s.wheel.name} {s.wheel.version})"
    n = len(s.binaries)
    counts = (f"{s.files_seen} {'file' if s.files_seen == 1 else 'files'} read, "
              f"{n} {'binary' if n == 1 else 'binaries'}, {with_code} with device code")
    lines = [f"{s.kind} {head}", f"  {counts}"] if s.kind != "file" else []
    if s.artifact is not None:
        lines += _artifact_lines(s)
    if device_only:
        shown = [b for b in s.binaries if b.has_device_code]
    elif full:
        shown = list(s.binaries)
    else:
        shown = [b for b in s.binaries if b.has_device_code or b.needed or b.anomalies]
    for b in shown:
        lines += _binary_lines(b, full, s)
    hidden = len(s.binaries) - len(shown)
    if hidden:
        what = "without device code" if device_only else (
            "without device code or linked libraries")
        lines.append(f"  ({hidden} more binaries {what}; --all lists them)")
    return lines


def verdict_lines(inv: Inventory) -> list[str]:
    """The result in one line, and what to run next."""
    binaries = [b for s in inv.sources for b in s.binaries]
    code = [b for b in binaries if b.has_device_code]
    sass = sorted({a.arch for b in code for a in b.coverage() if a.kind is CodeKind.SASS})
    ptx = sorted({a.arch for b in code for a in b.coverage() if a.kind is CodeKind.PTX})
    problems = len(inv.problems) + sum(1 for b in binaries if b.anomalies)
    if not binaries:
        verdict = "no binaries found"
    elif not code:
        word = "binary" if len(binaries) == 1 else "binaries"
        verdict = f"{len(binaries)} {word}, none with device code"
    else:
        carry = "carries" if len(code) == 1 else "carry"
        verdict = (f"{len(code)} of {len(binaries)} binaries {carry} device code: "
                   f"SASS {' '.join(a.sass for a in sass) or 'none'}; "
                   f"PTX {' '.join(a.ptx for a in ptx) or 'none'}")
    if problems:
        verdict += f"; INCOMPLETE: {problems} input(s) could not be read fully (see stderr)"
    out = [f"result: {verdict}"]
    wheels = [s.path for s in inv.sources if s.kind == "wheel"]
    if code:
        target = wheels[0] if len(wheels) == 1 else "TARGET"
        nxt = f'cuwheel compat {target} --gpu "RTX 4090"'
        if wheels:
            nxt += f"  or  cuwheel check {target}"
        out.append(f"next: {nxt}")
    return out


def render_text(inv: Inventory, *, full: bool = False, device_only: bool = False,
                sources: list[Source] | None = None) -> str:
    lines: list[str] = []
    shown = inv.sources if sources is None else sources
    for i, s in enumerate(shown):
        if i:
            lines.append("")
        lines += _source_lines(s, full, device_only)
    if any(b.containers for s in shown for b in s.binaries):
        lines += ["", LEGEND]
    lines += verdict_lines(inv)
    return escape_lines(lines)

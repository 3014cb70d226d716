"""The NVIDIA provider plugin's properties (``nvidia :: sm_arch :: 90_real``,
``nvidia :: cuda_version_lower_bound :: 13.0``) derived from a wheel's device code, and
declared ones verified against it (docs/variants.md).

Format: PEP 825 (draft of 17-Feb-2026): ``*.dist-info/variant.json`` holds one variant,
``{label: {namespace: {feature: [values]}}}``, values a set written as a sorted list; the
label is the file name's last component.  Vocabulary and provider: data/variants.toml.

A value is derived only when every library with device code backs it, as compat's
roll-up judges the library (through cuwheel.size.verdicts, the one place): ``XY_real``
when it has SASS sm_XY and runs on CC X.Y (or does when its host code dispatches by
compute capability), ``XY_virtual`` when it has PTX compute_XY and its PTX alone does;
``cuda_version_lower_bound`` is the highest CUDA runtime major a library links
(minor-version compatibility: a driver of that major runs any of its minors).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cache
from typing import Any

from cuwheel._datafiles import VARIANTS
from cuwheel._json import load_json
from cuwheel._validate import Checker, TableList
from cuwheel.checks.codes import CODES
from cuwheel.checks.findings import Finding
from cuwheel.errors import CatalogError, InputError, JsonError
from cuwheel.knowledge import catalog
from cuwheel.knowledge._load import read_data_file, read_meta
from cuwheel.knowledge.linkage import runtime_majors
from cuwheel.model.inventory import CodeKind, Inventory, Source, member_of
from cuwheel.read.sources.wheelfile import WheelFile

__all__ = [
    "Declared",
    "Derived",
    "Partial",
    "Vocabulary",
    "derive",
    "parse_property",
    "read_declared",
    "variant_json",
    "verify",
    "vocabulary",
]

DATA_FILE = VARIANTS
MAX_VARIANT_JSON = 1 << 20


@dataclass(frozen=True)
class Vocabulary:
    schema: str
    dist_info_file: str
    label: re.Pattern[str]
    value: re.Pattern[str]
    namespace: str
    requires: tuple[str, ...]
    plugin_api: str
    lower_bound: str
    upper_bound: str
    sm_arch: str
    cuda_major: tuple[int, int]
    cuda_minor: tuple[int, int]
    sm_major: tuple[int, int]
    sm_minor: tuple[int, int]

    def cuda_value_ok(self, v: str) -> bool:
        m = re.fullmatch(r"([0-9]+)(?:\.([0-9]+))?", v)
        if not m:
            return False
        major_ok = self.cuda_major[0] <= int(m[1]) <= self.cuda_major[1]
        return major_ok and (m[2] is None or self.cuda_minor[0] <= int(m[2]) <= self.cuda_minor[1])

    def sm_value(self, number: int, kind: CodeKind) -> str | None:
        """``90_real`` / ``90_virtual``; None when outside the plugin's vocabulary."""
        major, minor = number // 10, number % 10
        if not (self.sm_major[0] <= major <= self.sm_major[1]):
            return None
        if not (self.sm_minor[0] <= minor <= self.sm_minor[1]):
            return None
        return f"{number}_{'real' if kind is CodeKind.SASS else 'virtual'}"

    def sm_value_ok(self, v: str) -> bool:
        m = re.fullmatch(r"([0-9]+)_(real|virtual)", v)
        if not m or len(m[1]) < 2:
            return False
        kind = CodeKind.SASS if m[2] == "real" else CodeKind.PTX
        return self.sm_value(int(m[1]), kind) == v


def _pair(chk: Checker, where: str, v: Any) -> tuple[int, int]:
    if not (isinstance(v, list) and len(v) == 2 and all(isinstance(x, int) for x in v)):
        chk.problem(where, "expected [low, high]")
        return (0, 0)
    return (v[0], v[1])


@cache
def vocabulary() -> Vocabulary:
    """data/variants.toml, validated (CatalogError lists every problem)."""
    data = read_data_file(DATA_FILE)
    chk = Checker(DATA_FILE)
    read_meta(data, chk)
    fmt = {"schema": str, "dist_info_file": str, "label": str, "value": str}
    f = chk.fields(data.get("format"), "[format]", fmt, {})
    p = chk.fields(data.get("provider"), "[provider]",
                   {"namespace": str, "requires": list, "plugin_api": str}, {})  # fmt: skip
    ft = chk.fields(data.get("features"), "[features]",
                    {"lower_bound": str, "upper_bound": str, "sm_arch": str}, {})  # fmt: skip
    v = chk.fields(data.get("vocabulary"), "[vocabulary]",
                   {"cuda_major": TableList, "cuda_minor": TableList, "sm_major": TableList,
                    "sm_minor": TableList},
                   {})  # fmt: skip
    pairs = {k: _pair(chk, f"[vocabulary] {k}", v.get(k)) for k in v}
    if chk.problems:
        raise CatalogError(chk.problems)
    return Vocabulary(
        f["schema"], f["dist_info_file"], re.compile(f["label"]), re.compile(f["value"]),
        p["namespace"], tuple(p["requires"]), p["plugin_api"],
        ft["lower_bound"], ft["upper_bound"], ft["sm_arch"],
        pairs["cuda_major"], pairs["cuda_minor"], pairs["sm_major"], pairs["sm_minor"],
    )  # fmt: skip


# ---------------------------------------------------------------------------- derive


@dataclass(frozen=True)
class Partial:
    """A value some libraries back and others do not (so it is not derived)."""

    value: str  # "nvidia :: sm_arch :: 75_real"
    missing: tuple[str, ...]  # libraries without it (relative to the wheel)


@dataclass(frozen=True)
class Derived:
    source: str
    libraries: tuple[str, ...]  # libraries whose code was used
    properties: tuple[str, ...]  # "namespace :: feature :: value", sorted
    partial: tuple[Partial, ...]
    lower_bound_from: str | None  # the library and runtime that set the lower bound
    ptx_jit_needs: str | None  # CUDA release of the newest PTX ISA (a JIT needs its driver)
    notes: tuple[str, ...]

    def values(self, feature: str) -> tuple[str, ...]:
        head = f"{vocabulary().namespace} :: {feature} :: "
        return tuple(p[len(head) :] for p in self.properties if p.startswith(head))


def _backed(source: Source, voc: Vocabulary, notes: list[str]) -> dict[str, set[str]]:
    """Per library with device code: the sm_arch values it backs.  ``XY_real``: it has SASS
    sm_XY (no a / f) and compat's roll-up says it runs on CC X.Y, or does so when its host
    code dispatches by compute capability (a kernel left to PTX there does not stop it; a
    missing one does); ``XY_virtual``: it has PTX compute_XY and, with every SASS entry
    left out, the same holds.
    Libraries of a / f kernels only (no plain entry at all) back nothing and are noted."""
    from cuwheel.compat import target_for_cc
    from cuwheel.size.verdicts import CARRIES, judge
    from cuwheel.size.whatif import Scenario, apply

    libs = [b for b in source.binaries if b.has_device_code]
    have: dict[str, dict[CodeKind, set[int]]] = {}
    skipped: set[str] = set()
    for b in libs:
        kinds: dict[CodeKind, set[int]] = {CodeKind.SASS: set(), CodeKind.PTX: set()}
        for e in b.entries():
            if e.arch.variant or e.kind is CodeKind.LTOIR:
                continue
            if voc.sm_value(e.arch.number, e.kind) is None:
                skipped.add(e.name)
                continue
            kinds[e.kind].add(e.arch.number)
        have[b.path] = kinds
    if skipped:
        notes.append(f"{', '.join(sorted(skipped))}: outside the plugin's vocabulary")
    out: dict[str, set[str]] = {}
    name = {b.path: member_of(source.path, b.path) or b.path for b in libs}
    for b in libs:
        if not any(have[b.path].values()):
            notes.append(f"{name[b.path]}: arch-specific (a / f) kernels only, no plugin value")
        else:
            out[name[b.path]] = set()
    inv = Inventory((source,))
    for kind in (CodeKind.SASS, CodeKind.PTX):
        numbers = sorted({n for k in have.values() for n in k[kind]})
        if not numbers:
            continue
        targets = [target_for_cc(f"{n // 10}.{n % 10}") for n in numbers]
        if kind is CodeKind.PTX:  # the PTX alone: every SASS entry left out
            every = frozenset(e.arch for b in libs for e in b.entries() if e.kind is CodeKind.SASS)
            inv = apply(Inventory((source,)), Scenario(drop_sass=every))
        judged = judge(inv, targets)
        for b in libs:
            row = judged.libraries.get(b.path)
            if row is None or name[b.path] not in out:
                continue
            for i, n in enumerate(numbers):
                if n in have[b.path][kind] and row[i] in CARRIES:
                    value = voc.sm_value(n, kind)
                    assert value is not None
                    out[name[b.path]].add(value)
    return out


def derive(source: Source) -> Derived:
    """The NVIDIA properties every library of ``source`` backs."""
    voc = vocabulary()
    ns = voc.namespace
    notes: list[str] = []
    per_lib = _backed(source, voc, notes)
    props: list[str] = []
    partial: list[Partial] = []
    if per_lib:
        every = set.intersection(*per_lib.values())
        some = set.union(*per_lib.values())
        props += [f"{ns} :: {voc.sm_arch} :: {v}" for v in every]
        for v in sorted(some - every):
            missing = tuple(n for n, s in per_lib.items() if v not in s)
            partial.append(Partial(f"{ns} :: {voc.sm_arch} :: {v}", missing))
    # CUDA lower bound: the newest runtime major any library links
    best: tuple[int, str] | None = None
    majors: set[int] = set()
    for b in source.binaries:
        for major, lib in runtime_majors(b):
            majors.add(major)
            name = member_of(source.path, b.path) or b.path
            if best is None or major > best[0]:
                best = (major, f"{name}: {lib}, CUDA {major}")
    if len(majors) > 1:  # one library per CUDA major, picked at run time (bitsandbytes)
        notes.append(
            f"libraries link CUDA runtimes {', '.join(map(str, sorted(majors)))}: alternatives "
            f"the package picks from; the lower bound is the newest, where every one loads"
        )
    if best is not None and voc.cuda_value_ok(f"{best[0]}.0"):
        props.append(f"{ns} :: {voc.lower_bound} :: {best[0]}.0")
    elif per_lib:
        notes.append("no library links a CUDA runtime of one major: no lower bound derived")
    isas = {e.code_version for b in source.binaries for e in b.entries() if e.kind is CodeKind.PTX}
    jit: str | None = None
    if isas:
        r = catalog.release_for_ptx_isa(max(isas))
        jit = r.name if r is not None else None
    return Derived(
        source.path, tuple(per_lib), tuple(sorted(props)), tuple(partial),
        best[1] if best else None, jit, tuple(notes),
    )  # fmt: skip


def variant_json(derived: Derived, label: str, properties: tuple[str, ...] | None = None) -> str:
    """``variant.json`` for ``*.dist-info`` (PEP 825), one variant ``label``."""
    voc = vocabulary()
    if not voc.label.fullmatch(label):
        raise InputError(label, f"a variant label matches {voc.label.pattern}")
    table: dict[str, dict[str, list[str]]] = {}
    for p in properties if properties is not None else derived.properties:
        ns, feature, value = parse_property(p)
        table.setdefault(ns, {}).setdefault(feature, []).append(value)
    for feats in table.values():
        for k in feats:
            feats[k] = sorted(set(feats[k]))
    doc = {
        "$schema": voc.schema,
        "default-priorities": {"namespace": sorted(table) or [voc.namespace]},
        "providers": {
            voc.namespace: {"requires": list(voc.requires), "plugin-api": voc.plugin_api}
        },
        "variants": {label: table},
    }
    return json.dumps(doc, indent=4, sort_keys=True) + "\n"


_PROPERTY = re.compile(r"\s*([a-z0-9_]+)\s*::\s*([a-z0-9_]+)\s*::\s*([a-z0-9_.]+)\s*")


def parse_property(text: str) -> tuple[str, str, str]:
    m = _PROPERTY.fullmatch(text)
    if not m:
        raise InputError(text, "a property is 'namespace :: feature :: value'")
    return m[1], m[2], m[3]


# ---------------------------------------------------------------------------- declared


@dataclass(frozen=True)
class Declared:
    """What a variant wheel declares: its label and properties, and format problems."""

    label: str | None  # from the file name
    properties: tuple[str, ...]
    problems: tuple[str, ...]


def _file_label(path: str) -> str | None:
    """The variant label of a wheel file name (PEP 825), as variantlib's pattern reads it."""
    stem = path.replace("\\", "/").rsplit("/", 1)[-1]
    if not stem.endswith(".whl"):
        return None
    parts = stem[:-4].split("-")
    if len(parts) == 7:
        return parts[6]
    if len(parts) == 6 and not parts[2][:1].isdigit():
        return parts[5]
    return None


def read_declared(wheel: str) -> Declared | None:
    """The wheel's ``*.dist-info/variant.json`` and file-name label; None when it has
    neither (not a variant wheel).  Raises InputError for an unreadable wheel."""
    voc = vocabulary()
    label = _file_label(wheel)
    with WheelFile(wheel) as wf:
        names = [
            n for n in wf.infos
            if n.count("/") == 1 and n.split("/")[0].endswith(".dist-info")
            and n.endswith("/" + voc.dist_info_file)
        ]  # fmt: skip
        raw = wf.read_small(names[0], MAX_VARIANT_JSON) if names else None
    if label is None and not names:
        return None
    problems: list[str] = []
    props: list[str] = []
    if label is not None and not voc.label.fullmatch(label):
        problems.append(f"file-name label {label!r} does not match {voc.label.pattern}")
    if not names:
        problems.append(f"the file name has label {label!r} but no *.dist-info/"
                        f"{voc.dist_info_file}")  # fmt: skip
        return Declared(label, (), tuple(problems))
    try:
        # the one bounded loader: a 100,000-deep variant.json is a problem, not a
        # RecursionError
        doc = load_json(raw, max_bytes=MAX_VARIANT_JSON) if raw is not None else None
    except JsonError as exc:
        doc = None
        problems.append(f"{names[0]}: not JSON ({exc})")
    if raw is None:
        problems.append(f"{names[0]}: too big or unreadable")
    if isinstance(doc, dict):
        variants = doc.get("variants")
        if not isinstance(variants, dict) or len(variants) != 1:
            problems.append(f"{names[0]}: 'variants' must hold exactly one variant")
        else:
            (vlabel, table), = variants.items()
            if label is not None and vlabel != label:
                problems.append(f"{names[0]} has label {vlabel!r}, the file name {label!r}")
            label = label or str(vlabel)
            props += _table_properties(table, voc, problems, names[0])
    elif doc is not None:
        problems.append(f"{names[0]}: not a JSON object")
    return Declared(label, tuple(sorted(props)), tuple(problems))


def _table_properties(table: Any, voc: Vocabulary, problems: list[str], where: str) -> list[str]:
    out: list[str] = []
    ident = re.compile(r"[a-z0-9_]+")
    if not isinstance(table, dict):
        problems.append(f"{where}: a variant is {{namespace: {{feature: [values]}}}}")
        return out
    for ns, feats in table.items():
        if not isinstance(feats, dict) or not ident.fullmatch(str(ns)):
            problems.append(f"{where}: bad namespace {ns!r}")
            continue
        for feature, values in feats.items():
            if not ident.fullmatch(str(feature)) or not isinstance(values, list):
                problems.append(f"{where}: bad feature {ns} :: {feature!r}")
                continue
            for v in values:
                if not isinstance(v, str) or not voc.value.fullmatch(v):
                    problems.append(f"{where}: bad value {ns} :: {feature} :: {v!r}")
                    continue
                out.append(f"{ns} :: {feature} :: {v}")
    return out


# ---------------------------------------------------------------------------- verify


# every code verify may emit (tests/test_codes.py holds it against codes.toml)
CODES_EMITTED = ("VAR001", "VAR002", "VAR003", "VAR004")


def _finding(code: str, message: str, library: str | None = None) -> Finding:
    return Finding(code, CODES[code].severity, message, library, check="variant")


def verify(derived: Derived, declared: Declared) -> tuple[Finding, ...]:
    """Declared NVIDIA properties the code does not back (VAR001-VAR004)."""
    voc = vocabulary()
    ns = voc.namespace
    out = [_finding("VAR004", p) for p in declared.problems]
    partial = {p.value: p.missing for p in derived.partial}
    lower = derived.values(voc.lower_bound)
    for prop in declared.properties:
        pns, feature, value = parse_property(prop)
        if pns != ns:
            continue
        if feature == voc.sm_arch:
            if not voc.sm_value_ok(value):
                out.append(_finding("VAR003", f"{prop}: not a value of the provider's sm_arch"))
            elif prop in derived.properties:
                continue
            elif prop in partial:
                out.append(_finding(
                    "VAR001",
                    f"{prop}: not backed by {len(partial[prop])} of {len(derived.libraries)} "
                    f"libraries: {', '.join(partial[prop][:5])}"
                    + (", ..." if len(partial[prop]) > 5 else ""),
                ))  # fmt: skip
            else:
                out.append(_finding(
                    "VAR001",
                    f"{prop}: no library has it ({len(derived.libraries)} with device code)",
                ))  # fmt: skip
        elif feature in (voc.lower_bound, voc.upper_bound):
            if not voc.cuda_value_ok(value):
                out.append(_finding("VAR003", f"{prop}: not a CUDA version of the provider"))
                continue
            if not lower:
                continue
            need = tuple(int(x) for x in lower[0].split("."))
            have = tuple(int(x) for x in value.split("."))
            if feature == voc.lower_bound and have < need:
                out.append(_finding(
                    "VAR002",
                    f"{prop}: the code needs a CUDA {lower[0]} driver or newer "
                    f"({derived.lower_bound_from})",
                ))  # fmt: skip
            if feature == voc.upper_bound and have <= need:
                out.append(_finding(
                    "VAR002",
                    f"{prop}: excludes every driver the code can run on (it needs "
                    f"{lower[0]} or newer: {derived.lower_bound_from})",
                ))  # fmt: skip
        else:
            out.append(_finding("VAR003", f"{prop}: not a feature of the provider"))
    return tuple(out)

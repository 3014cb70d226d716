"""data/errors.toml: the causes of run-time error texts as rules over the facts a text
states (:mod:`.facts`); validated when first used (docs/doctor.md#error-texts).

A rule holds when its clauses do (:meth:`Rule.holds`); what it means for the facts at hand
is its resolver's (:mod:`.resolve`), named by the data.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from dataclasses import dataclass

from cuwheel._datafiles import ERRORS
from cuwheel._validate import Checker, TableList
from cuwheel.doctor.facts import KINDS, Fact
from cuwheel.errors import CatalogError

__all__ = ["Clause", "Rule", "load_rules"]

DATA_FILE = ERRORS


@dataclass(frozen=True)
class Clause:
    kind: str
    value: frozenset[str] = frozenset()  # lower-cased
    prefix: tuple[str, ...] = ()  # lower-cased
    detail: frozenset[str] = frozenset()  # lower-cased

    def facts(self, facts: Sequence[Fact]) -> list[Fact]:
        """The facts this clause holds for."""
        return [f for f in facts if f.kind == self.kind and self._fits(f)]

    def _fits(self, f: Fact) -> bool:
        v = f.value.lower()
        if self.value and v not in self.value:
            return False
        if self.prefix and not v.startswith(self.prefix):
            return False
        return not self.detail or (f.detail or "").lower() in self.detail


@dataclass(frozen=True)
class Rule:
    id: str
    title: str
    cause: str
    fix: str
    when: tuple[Clause, ...]
    unless: tuple[Clause, ...]
    any: bool
    alone: bool
    packaging: bool
    sure: bool
    resolve: str | None
    supersedes: tuple[str, ...]
    codes: tuple[str, ...]
    command: str | None

    def holds(self, facts: Sequence[Fact]) -> list[Fact] | None:
        """The facts the rule rests on, or None when it does not hold."""
        found = [c.facts(facts) for c in self.when]
        ok = any(found) if self.any else all(found)
        if not ok or any(c.facts(facts) for c in self.unless):
            return None
        return list(dict.fromkeys(f for fs in found for f in fs))


def _clauses(chk: Checker, where: str, raw: object) -> tuple[Clause, ...]:
    if not isinstance(raw, list):
        chk.problem(where, "expected an array of clause tables")
        return ()
    out = []
    for i, c in enumerate(raw):
        w = f"{where}[{i}]"
        f = chk.fields(c, w, {"kind": str}, {"value": list, "prefix": list, "detail": list})
        if "kind" not in f:
            continue
        if f["kind"] not in KINDS:
            chk.problem(w, f"unknown fact kind {f['kind']!r} ({', '.join(KINDS)})")
        low = {k: tuple(s.lower() for s in f.get(k, ())) for k in ("value", "prefix", "detail")}
        out.append(Clause(f["kind"], frozenset(low["value"]), low["prefix"],
                          frozenset(low["detail"])))  # fmt: skip
    return tuple(out)


def _check_names(chk: Checker, where: str, clauses: Sequence[Clause]) -> None:
    from cuwheel.knowledge.cudaerrors import load_cuda_errors

    errors = load_cuda_errors()
    for c in clauses:
        if c.kind == "cuda-error":
            for name in sorted(c.value):
                if errors.by_name(name) is None:
                    chk.problem(where, f"no CUDA error {name!r} in cuda_errors.toml")


def parse_rules(data: dict[str, object], *, check_names: bool = True) -> tuple[Rule, ...]:
    """Validate errors.toml's tables (CatalogError listing every problem)."""
    from cuwheel.doctor.resolve import RESOLVERS
    from cuwheel.knowledge._load import read_meta, tables

    chk = Checker(DATA_FILE)
    read_meta(data, chk)
    for key in data.keys() - {"meta", "cause"}:
        chk.problem(key, "unknown table")
    out: list[Rule] = []
    for i, raw in enumerate(tables(data, "cause", chk)):
        where = f"[[cause]] #{i + 1}"
        f = chk.fields(raw, where, {"id": str, "title": str, "cause": str, "fix": str,
                                    "when": TableList, "codes": list},
                       {"unless": TableList, "any": bool, "alone": bool, "packaging": bool,
                        "sure": bool, "resolve": str, "supersedes": list, "command": str})
        if not {"id", "title", "cause", "fix", "when", "codes"} <= f.keys():
            continue
        where = f"[[cause]] {f['id']}"
        if any(r.id == f["id"] for r in out):
            chk.problem(where, "defined twice")
        when = _clauses(chk, f"{where} when", raw["when"])
        unless = _clauses(chk, f"{where} unless", raw.get("unless", []))
        if not when:
            chk.problem(where, "when: at least one clause")
        if check_names:
            _check_names(chk, where, when + unless)
        resolve = f.get("resolve")
        if resolve is not None and resolve not in RESOLVERS:
            chk.problem(where, f"unknown resolver {resolve!r} ({', '.join(sorted(RESOLVERS))})")
        command = f.get("command")
        if command is not None and not command.startswith("cuwheel "):
            chk.problem(where, "command must be a cuwheel command")
        packaging = f.get("packaging", True)
        if not packaging and f["codes"]:
            chk.problem(where, "a cause that is no packaging problem names no check codes")
        out.append(Rule(f["id"], f["title"], " ".join(f["cause"].split()),
                        " ".join(f["fix"].split()), when, unless, f.get("any", False),
                        f.get("alone", False), packaging, f.get("sure", True), resolve,
                        tuple(f.get("supersedes", ())), tuple(f["codes"]), command))
    ids = {r.id for r in out}
    for r in out:
        for s in r.supersedes:
            if s not in ids:
                chk.problem(f"[[cause]] {r.id}", f"supersedes unknown cause {s!r}")
    if chk.problems:
        raise CatalogError(chk.problems)
    return tuple(out)


@functools.lru_cache(maxsize=1)
def load_rules() -> tuple[Rule, ...]:
    """The shipped rules, in file order (most specific first)."""
    from cuwheel.knowledge._load import read_data_file

    return parse_rules(read_data_file(DATA_FILE))

"""``diagnose_text(text)``: the causes of a pasted run-time error, from the facts it states
(:mod:`.facts`) and the rules of data/errors.toml (:mod:`.rules`) resolved against the
catalog (:mod:`.resolve`); docs/doctor.md#error-texts.

The answer leads with the cause and its fix, names the facts it rests on, and says when it
is unsure.  An error that is no packaging problem (out of memory, a device-side assert, an
ECC fault, NCCL networking, a Python error) is named as such, with no package in it.
"""

from __future__ import annotations

from dataclasses import dataclass

from cuwheel.doctor.facts import Fact, extract_facts
from cuwheel.doctor.resolve import RESOLVERS, Resolution
from cuwheel.doctor.rules import Rule, load_rules
from cuwheel.rules.judge import Rules, judging

__all__ = ["Cause", "TextDiagnosis", "diagnose_text"]


@dataclass(frozen=True)
class Cause:
    """One cause the text's facts support."""

    id: str
    title: str
    packaging: bool
    sure: bool
    cause: str  # what happened, in general
    fix: str
    because: tuple[str, ...]  # what the facts mean against the catalog
    install: tuple[str, ...]  # distributions that supply the fix
    facts: tuple[Fact, ...]  # the facts the cause rests on
    codes: tuple[str, ...]  # check codes that predict it
    command: str | None  # the cuwheel command that finds the culprit


@dataclass(frozen=True)
class TextDiagnosis:
    facts: tuple[Fact, ...]
    causes: tuple[Cause, ...]  # the leading cause first

    @property
    def lead(self) -> Cause | None:
        return self.causes[0] if self.causes else None

    @property
    def packaging(self) -> bool | None:
        """Whether the leading cause is a packaging problem; None when nothing is known."""
        return None if not self.causes else self.causes[0].packaging


def _cause(rule: Rule, used: list[Fact], res: Resolution) -> Cause:
    sure = rule.sure if res.sure is None else (rule.sure and res.sure)
    fix = rule.fix if res.fix is None else f"{res.fix}; or: {rule.fix}"
    return Cause(rule.id, res.title or rule.title, rule.packaging, sure, rule.cause, fix,
                 res.because, res.install if rule.packaging else (), tuple(used), rule.codes,
                 rule.command)


def diagnose_text(text: str, rules: tuple[Rule, ...] | None = None, *,
                  judge: Rules | None = None) -> TextDiagnosis:
    """The facts ``text`` states and the causes they support, the most specific first; no
    causes when nothing is known (the caller says so, never a guess).  ``judge``: the
    catalog's rules the causes are resolved with (rules/judge.py; default: the shipped)."""
    with judging(judge):
        return _diagnose_text(text, rules)


def _diagnose_text(text: str, rules: tuple[Rule, ...] | None) -> TextDiagnosis:
    facts = extract_facts(text)
    rules = load_rules() if rules is None else rules
    held: list[Cause] = []
    for alone in (False, True):
        if alone and held:
            break
        for rule in rules:
            if rule.alone != alone:
                continue
            used = rule.holds(facts)
            if used is None:
                continue
            res = RESOLVERS[rule.resolve](used, facts) if rule.resolve else Resolution()
            if res is not None:
                held.append(_cause(rule, used, res))
    gone = {s for r in rules if any(c.id == r.id for c in held) for s in r.supersedes}
    return TextDiagnosis(facts, tuple(c for c in held if c.id not in gone))

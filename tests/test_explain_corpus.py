"""``cuwheel explain`` on real error texts: the corpus (tests/data/explain/corpus.toml) of
texts from public issue threads with the causes those threads established.  At least 90%
of the packaging causes must lead the answer, and no control (an error that is no
packaging problem) may get a packaging diagnosis.  The expected causes come from the
threads, not from the code; bench/explain_corpus.py prints the same score with each miss."""

from __future__ import annotations

import re
from collections import Counter
from pathlib import Path

import pytest
import tomllib

from cuwheel.doctor import diagnose_text, extract_facts
from cuwheel.doctor.rules import load_rules

CORPUS = Path(__file__).parent / "data" / "explain" / "corpus.toml"
# heldout.toml was collected after the rules were written and scored before they changed
# (12/15; bench/results/explain_heldout-frozen-rules-*.txt); it is part of the corpus now
CASES = [c for f in ("corpus.toml", "heldout.toml")
         for c in tomllib.loads((CORPUS.parent / f).read_text("utf-8"))["case"]]
PACKAGING = [c for c in CASES if c.get("packaging", True)]
CONTROLS = [c for c in CASES if not c.get("packaging", True)]


def _project(url: str) -> str:
    m = re.match(r"https://github\.com/([^/]+/[^/]+)/(?:issues|pull)/\d+$", url)
    assert m, url
    return m[1]


def test_the_corpus_is_what_the_issue_asks_for() -> None:
    assert len(CASES) >= 120
    assert len({_project(c["url"]) for c in CASES}) >= 40
    assert len(CONTROLS) >= 20
    assert len({c["url"] for c in CASES}) == len(CASES)  # one text per thread
    rules = {r.id: r for r in load_rules()}
    for c in CASES:
        assert set(c) <= {"url", "text", "cause", "facts", "packaging"}, c["url"]
        assert c["text"].strip() and len(c["text"]) < 2000, c["url"]
        # every cause class is one the rules can name, of the right kind
        assert c["cause"] in rules, c["cause"]
        assert rules[c["cause"]].packaging == c.get("packaging", True), c["url"]


def test_packaging_causes_named() -> None:
    missed = [(c["url"], c["cause"], [x.id for x in diagnose_text(c["text"]).causes])
              for c in PACKAGING if (diagnose_text(c["text"]).lead or _NONE).id != c["cause"]]
    named = len(PACKAGING) - len(missed)
    assert named >= 0.9 * len(PACKAGING), missed
    # no class is missed wholesale
    assert not [k for k, n in Counter(m[1] for m in missed).items()
                if n == Counter(c["cause"] for c in PACKAGING)[k]]


class _None:
    id = None


_NONE = _None()


@pytest.mark.parametrize("case", CONTROLS, ids=[c["url"].split("github.com/")[1] for c in CONTROLS])
def test_controls_get_no_packaging_diagnosis(case: dict[str, object]) -> None:
    d = diagnose_text(str(case["text"]))
    assert d.causes, "a control is still named as what it is"
    assert not [c.id for c in d.causes if c.packaging]
    assert all(c.install == () and c.codes == () for c in d.causes)
    assert d.lead is not None and not d.lead.packaging


def test_the_facts_each_text_states_are_read() -> None:
    missing = []
    for c in CASES:
        values = {f.value.lower() for f in extract_facts(c["text"])}
        missing += [(c["url"], x) for x in c["facts"] if x.lower() not in values]
    assert not missing

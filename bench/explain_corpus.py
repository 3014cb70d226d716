"""Score `cuwheel explain` on the corpus of real error texts (tests/data/explain/corpus.toml):
the share of packaging cases whose leading cause is the one the thread established, and
the controls (not packaging problems) given no packaging diagnosis.

    PYTHONPATH=src python bench/explain_corpus.py [--before]
        [--file tests/data/explain/heldout.toml]

``--before`` scores the ten-pattern matcher this replaced (``cuwheel.doctor.errors.
match_errors``, its ids mapped to the corpus' cause classes): run it with the old tree,
``git archive a2a6027 src | tar -x -C /tmp/cw-old; PYTHONPATH=/tmp/cw-old/src python
bench/explain_corpus.py --before``; without it the fact-based diagnosis is scored.
"""

from __future__ import annotations

import argparse
import sys
from collections import Counter
from pathlib import Path

import tomllib

CORPUS = Path(__file__).resolve().parents[1] / "tests" / "data" / "explain" / "corpus.toml"

# The old matcher's ids -> the corpus' cause classes (None: names none of them).
OLD_IDS = {
    "driver-missing": "driver-missing",
    "no-kernel-image": "no-kernel-image",
    "driver-too-old": "driver-too-old",
    "forward-compat": "forward-compat",
    "ptx-toolchain": "ptx-too-new",
    "ptx-jit-failed": None,
    "invalid-image": None,
    "nvjitlink-skew": "nvjitlink-skew",
    "undefined-symbol": None,
    "cannot-open": "library-missing",
}


def old_answer(text: str) -> tuple[str | None, bool]:
    """(leading cause class, whether any packaging diagnosis was given) of the old matcher."""
    from cuwheel.doctor.errors import match_errors

    hits = match_errors(text)
    if not hits:
        return None, False
    return OLD_IDS[hits[0].error.id], True


def new_answer(text: str) -> tuple[str | None, bool]:
    from cuwheel.doctor.explain import diagnose_text

    d = diagnose_text(text)
    lead = d.causes[0] if d.causes else None
    return (lead.id if lead else None), any(c.packaging for c in d.causes)


def score(before: bool, corpus: Path = CORPUS) -> int:
    cases = tomllib.loads(corpus.read_text(encoding="utf-8"))["case"]
    answer = old_answer if before else new_answer
    named = packaging = controls = clean = 0
    missed: Counter[str] = Counter()
    for c in cases:
        lead, any_packaging = answer(c["text"])
        if c.get("packaging", True):
            packaging += 1
            if lead == c["cause"]:
                named += 1
            else:
                missed[c["cause"]] += 1
                print(f"miss  {c['cause']:<20} got {lead!s:<20} {c['url']}")
        else:
            controls += 1
            if not any_packaging:
                clean += 1
            else:
                print(f"ctrl  {c['cause']:<20} got {lead!s:<20} {c['url']}")
    projects = {c["url"].split("/")[3] + "/" + c["url"].split("/")[4] for c in cases}
    print(f"corpus: {len(cases)} texts from {len(projects)} projects, {controls} controls")
    print(f"packaging causes named: {named}/{packaging} = {100 * named / packaging:.1f}%")
    print(f"controls without a packaging diagnosis: {clean}/{controls}")
    print("missed by class:", dict(missed.most_common()))
    return 0


if __name__ == "__main__":
    ap = argparse.ArgumentParser()
    ap.add_argument("--before", action="store_true")
    ap.add_argument("--file", type=Path, default=CORPUS, help="another corpus (heldout.toml)")
    a = ap.parse_args()
    sys.exit(score(a.before, a.file))

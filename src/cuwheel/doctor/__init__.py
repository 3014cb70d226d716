"""doctor: why CUDA code fails on this machine, before and after it fails (docs/doctor.md).

:mod:`.environment` reads the installed distributions, :mod:`.loader` resolves the
libraries they need as the dynamic loader will (:mod:`.ldcache`, :mod:`.conventions`),
:mod:`.verdict` asks the compat API what each does on a GPU, :mod:`.diagnose` puts it
together with the driver gates, and :mod:`.explain` turns the facts of a pasted error text
(:mod:`.facts`) into causes by the rules of data/errors.toml (:mod:`.rules`,
:mod:`.resolve`); :mod:`.culprits` finds the distributions behind them.  Renderers live in
:mod:`cuwheel.render.doctor` and :mod:`cuwheel.render.diagnosis`.

The names below are loaded on first use: explaining a pasted error (run by hand, often)
imports neither the checks nor the loader simulation.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuwheel._lazy import lazy_names

if TYPE_CHECKING:
    from cuwheel.doctor.diagnose import (
        Diagnosis,
        DistributionReport,
        Status,
        TargetDiagnosis,
        diagnose,
    )
    from cuwheel.doctor.environment import Distribution, Environment, read_environment
    from cuwheel.doctor.explain import Cause, TextDiagnosis, diagnose_text
    from cuwheel.doctor.facts import Fact, extract_facts
    from cuwheel.doctor.ldcache import LdCache, parse_ld_cache, read_ld_cache
    from cuwheel.doctor.loader import SearchContext

_WHERE = {
    "Diagnosis": "diagnose", "DistributionReport": "diagnose",
    "Status": "diagnose", "TargetDiagnosis": "diagnose", "diagnose": "diagnose",
    "Distribution": "environment", "Environment": "environment",
    "read_environment": "environment",
    "Cause": "explain", "TextDiagnosis": "explain", "diagnose_text": "explain",
    "Fact": "facts", "extract_facts": "facts",
    "LdCache": "ldcache", "parse_ld_cache": "ldcache", "read_ld_cache": "ldcache",
    "SearchContext": "loader",
}  # fmt: skip

__all__ = [
    "Cause",
    "Diagnosis",
    "Distribution",
    "DistributionReport",
    "Environment",
    "Fact",
    "LdCache",
    "SearchContext",
    "Status",
    "TargetDiagnosis",
    "TextDiagnosis",
    "diagnose",
    "diagnose_text",
    "extract_facts",
    "parse_ld_cache",
    "read_environment",
    "read_ld_cache",
]


__getattr__, __dir__ = lazy_names(
    "cuwheel.doctor", {n: f".{m}" for n, m in _WHERE.items()}, globals(), __all__
)

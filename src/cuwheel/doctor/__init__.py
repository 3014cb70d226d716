"""doctor: why CUDA code fails on this machine, before and after it fails (docs/doctor.md).

:mod:`.environment` reads the installed distributions, :mod:`.loader` resolves the
libraries they need as the dynamic loader will (:mod:`.ldcache`, :mod:`.conventions`),
:mod:`.verdict` asks the compat API what each does on a GPU, :mod:`.diagnose` puts it
together with the driver gates, and :mod:`.explain` turns the facts of a pasted error text (:mod:`.facts`) into causes
by the rules of data/errors.toml (:mod:`.rules`, :mod:`.resolve`).
Renderers live in :mod:`cuwheel.render.doctor`.
"""

from __future__ import annotations

from cuwheel.doctor.diagnose import (
    Diagnosis,
    DistributionReport,
    Finding,
    Status,
    TargetDiagnosis,
    diagnose,
)
from cuwheel.doctor.environment import Distribution, Environment, read_environment
from cuwheel.doctor.explain import Cause, TextDiagnosis, diagnose_text
from cuwheel.doctor.facts import Fact, extract_facts
from cuwheel.doctor.ldcache import LdCache, parse_ld_cache, read_ld_cache
from cuwheel.doctor.loader import SearchContext

__all__ = [
    "Diagnosis",
    "Distribution",
    "DistributionReport",
    "Environment",
    "Fact",
    "Cause",
    "Finding",
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

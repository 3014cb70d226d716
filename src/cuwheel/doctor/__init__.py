"""doctor: why CUDA code fails on this machine, before and after it fails (docs/doctor.md).

:mod:`.environment` reads the installed distributions, :mod:`.loader` resolves the
libraries they need as the dynamic loader will (:mod:`.ldcache`, :mod:`.conventions`),
:mod:`.verdict` asks the compat API what each does on a GPU, :mod:`.diagnose` puts it
together with the driver gates, and :mod:`.errors` maps pasted error texts to causes.
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
from cuwheel.doctor.errors import ErrorMatch, match_errors
from cuwheel.doctor.ldcache import LdCache, parse_ld_cache, read_ld_cache
from cuwheel.doctor.loader import SearchContext

__all__ = [
    "Diagnosis",
    "Distribution",
    "DistributionReport",
    "Environment",
    "ErrorMatch",
    "Finding",
    "LdCache",
    "SearchContext",
    "Status",
    "TargetDiagnosis",
    "diagnose",
    "match_errors",
    "parse_ld_cache",
    "read_environment",
    "read_ld_cache",
]

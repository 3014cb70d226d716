"""compat: will this wheel run on GPU X with driver Y (docs/compat.md).

Targets (:mod:`.targets`) are asked about; :mod:`.evaluate` judges every container of an
inventory on them through :mod:`cuwheel.rules` and rolls the verdicts up; this machine's
GPUs come from :mod:`.localgpu`.  Renderers live in :mod:`cuwheel.render.compat`.
"""

from __future__ import annotations

from cuwheel.compat.evaluate import (
    LibraryVerdict,
    Matrix,
    SourceVerdict,
    TargetReport,
    evaluate,
    evaluate_binary,
    evaluate_container,
    matrix,
)
from cuwheel.compat.targets import (
    Target,
    catalog_targets,
    effective_arch,
    parse_driver,
    target_for_cc,
    targets_for_gpu,
)
from cuwheel.errors import CompatError
from cuwheel.knowledge.linkage import binary_os, runtime_majors
from cuwheel.rules.loading import ContainerVerdict, Verdict, family_members, link_stub_index
from cuwheel.rules.rollup import GroupVerdict, WheelState, WheelVerdict
from cuwheel.rules.runtime import Driver, RuntimeCheck, driver_cuda_version, runtime_check

__all__ = [
    "CompatError",
    "ContainerVerdict",
    "Driver",
    "GroupVerdict",
    "LibraryVerdict",
    "Matrix",
    "RuntimeCheck",
    "SourceVerdict",
    "Target",
    "TargetReport",
    "Verdict",
    "WheelState",
    "WheelVerdict",
    "binary_os",
    "catalog_targets",
    "driver_cuda_version",
    "effective_arch",
    "evaluate",
    "evaluate_binary",
    "evaluate_container",
    "family_members",
    "link_stub_index",
    "matrix",
    "parse_driver",
    "runtime_check",
    "runtime_majors",
    "target_for_cc",
    "targets_for_gpu",
]

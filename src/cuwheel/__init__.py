"""cuwheel: make CUDA wheels run on every GPU they claim.

The public API (docs/api.md says what each entry point raises):

* inspect: ``inspect(targets) -> Inventory``, the immutable facts
  (``Source`` -> ``Binary`` -> ``FatbinContainer`` -> ``FatbinEntry``);
* plan: ``load_config()`` -> ``Config``; ``select(rows, ...)`` -> ``Selection`` (its
  ``plan`` is the resolved row); the emitters in :mod:`cuwheel.plan.emit`;
* check: ``check_wheel(path, rows, policy)`` / ``check_source(source, plan, policy)`` ->
  ``WheelReport`` of ``Finding`` s;
* compat: ``evaluate(inventory, target)`` -> ``TargetReport``, ``matrix(...)``, targets from
  ``targets_for_gpu`` / ``target_for_cc`` and drivers from ``parse_driver``;
* the judge: ``Rules.default()`` (the shipped catalog's) or ``rules_for(build_catalog(...))``;
  check, compat, doctor, scan and init take one as ``rules=``.

Names are imported on first use, so ``import cuwheel`` stays cheap.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from cuwheel._lazy import lazy_names
from cuwheel._version import __version__

# name -> module that defines it
_API = {
    # errors
    "CuwheelError": "cuwheel.errors",
    "InputError": "cuwheel.errors",
    "ConfigError": "cuwheel.errors",
    "CompatError": "cuwheel.errors",
    "CatalogError": "cuwheel.errors",
    "UnknownName": "cuwheel.errors",
    "NoGpuError": "cuwheel.errors",
    "ToolkitError": "cuwheel.errors",
    "Unexpressible": "cuwheel.errors",
    "UnknownCode": "cuwheel.errors",
    # facts
    "Arch": "cuwheel.model.arch",
    "ArchSpec": "cuwheel.model.arch",
    "Binary": "cuwheel.model.inventory",
    "CodeKind": "cuwheel.model.inventory",
    "Compression": "cuwheel.model.inventory",
    "FatbinContainer": "cuwheel.model.inventory",
    "FatbinEntry": "cuwheel.model.inventory",
    "Inventory": "cuwheel.model.inventory",
    "Problem": "cuwheel.model.inventory",
    "Source": "cuwheel.model.inventory",
    "Toolkit": "cuwheel.model.inventory",
    "WheelInfo": "cuwheel.model.inventory",
    # inspect
    "inspect": "cuwheel.read.inspect",
    # plan
    "Config": "cuwheel.config",
    "load_config": "cuwheel.config",
    "parse_config": "cuwheel.config",
    "init_text": "cuwheel.config_init",
    "Plan": "cuwheel.plan.rows",
    "Row": "cuwheel.plan.rows",
    "Train": "cuwheel.plan.rows",
    "parse_train": "cuwheel.plan.rows",
    "Selection": "cuwheel.plan.select",
    "select": "cuwheel.plan.select",
    # check
    "CheckPolicy": "cuwheel.checks",
    "Finding": "cuwheel.checks",
    "Severity": "cuwheel.checks",
    "WheelReport": "cuwheel.checks",
    "check_installed": "cuwheel.checks",
    "check_source": "cuwheel.checks",
    "check_wheel": "cuwheel.checks",
    # compat
    "ContainerVerdict": "cuwheel.compat",
    "Driver": "cuwheel.compat",
    "LibraryVerdict": "cuwheel.compat",
    "Matrix": "cuwheel.compat",
    "Target": "cuwheel.compat",
    "TargetReport": "cuwheel.compat",
    "Verdict": "cuwheel.compat",
    "WheelState": "cuwheel.compat",
    "WheelVerdict": "cuwheel.compat",
    "torch_releases_defining": "cuwheel.knowledge.torchabi",
    "evaluate": "cuwheel.compat",
    "matrix": "cuwheel.compat",
    "parse_driver": "cuwheel.compat",
    "target_for_cc": "cuwheel.compat",
    "targets_for_gpu": "cuwheel.compat",
    # the judge: every rule applied with one catalog
    "Catalog": "cuwheel.knowledge.catalog",
    "build_catalog": "cuwheel.knowledge.catalog",
    "load_catalog": "cuwheel.knowledge.catalog",
    "Rules": "cuwheel.rules.judge",
    "rules_for": "cuwheel.rules.judge",
}

__all__ = [
    "Arch",
    "ArchSpec",
    "Binary",
    "Catalog",
    "CatalogError",
    "CheckPolicy",
    "CodeKind",
    "CompatError",
    "Compression",
    "Config",
    "ConfigError",
    "ContainerVerdict",
    "CuwheelError",
    "Driver",
    "FatbinContainer",
    "FatbinEntry",
    "Finding",
    "InputError",
    "Inventory",
    "LibraryVerdict",
    "Matrix",
    "NoGpuError",
    "Plan",
    "Problem",
    "Row",
    "Rules",
    "Selection",
    "Severity",
    "Source",
    "Target",
    "TargetReport",
    "Toolkit",
    "ToolkitError",
    "Train",
    "Unexpressible",
    "UnknownCode",
    "UnknownName",
    "Verdict",
    "WheelInfo",
    "WheelReport",
    "WheelState",
    "WheelVerdict",
    "__version__",
    "build_catalog",
    "check_installed",
    "check_source",
    "check_wheel",
    "evaluate",
    "init_text",
    "inspect",
    "load_catalog",
    "load_config",
    "matrix",
    "parse_config",
    "parse_driver",
    "parse_train",
    "rules_for",
    "select",
    "target_for_cc",
    "targets_for_gpu",
    "torch_releases_defining",
]


__getattr__, __dir__ = lazy_names("cuwheel", _API, globals(), __all__)


if TYPE_CHECKING:  # pragma: no cover - names for type checkers and editors
    from cuwheel.checks import (
        CheckPolicy,
        Finding,
        Severity,
        WheelReport,
        check_installed,
        check_source,
        check_wheel,
    )
    from cuwheel.compat import (
        ContainerVerdict,
        Driver,
        LibraryVerdict,
        Matrix,
        Target,
        TargetReport,
        Verdict,
        WheelState,
        WheelVerdict,
        evaluate,
        matrix,
        parse_driver,
        target_for_cc,
        targets_for_gpu,
    )
    from cuwheel.config import Config, load_config, parse_config
    from cuwheel.config_init import init_text
    from cuwheel.errors import (
        CatalogError,
        CompatError,
        ConfigError,
        CuwheelError,
        InputError,
        NoGpuError,
        ToolkitError,
        Unexpressible,
        UnknownCode,
        UnknownName,
    )
    from cuwheel.knowledge.catalog import Catalog, build_catalog, load_catalog
    from cuwheel.knowledge.torchabi import torch_releases_defining
    from cuwheel.model.arch import Arch, ArchSpec
    from cuwheel.model.inventory import (
        Binary,
        CodeKind,
        Compression,
        FatbinContainer,
        FatbinEntry,
        Inventory,
        Problem,
        Source,
        Toolkit,
        WheelInfo,
    )
    from cuwheel.plan.rows import Plan, Row, Train, parse_train
    from cuwheel.plan.select import Selection, select
    from cuwheel.read.inspect import inspect
    from cuwheel.rules.judge import Rules, rules_for

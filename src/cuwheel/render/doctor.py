"""Renderers of ``cuwheel doctor``: text (the cause first) and JSON (the ``cuwheel-doctor``
document in the common envelope; schema in ``cuwheel/data/doctor.schema.json``)."""

from __future__ import annotations

import os
from typing import Any

from cuwheel.checks.codes import CODES
from cuwheel.doctor import Diagnosis, DistributionReport, Environment, Finding, Status
from cuwheel.knowledge.catalog import is_cuda_library
from cuwheel.render.compat import _library_json, _target_json
from cuwheel.render.envelope import envelope
from cuwheel.render.escape import dumps, escape_lines

__all__ = ["doctor_json", "doctor_text", "relative"]

_HEAD = {
    Status.DOES_NOT_RUN: "DOES NOT RUN",
    Status.RUNS_EXCEPT: "RUNS except",
    Status.DEPENDS: "DEPENDS ON DISPATCH",
    Status.UNKNOWN: "UNKNOWN",
    Status.RUNS: "RUNS",
}


def relative(env: Environment, path: str | None) -> str | None:
    """A path inside the environment relative to its site directory."""
    if path is None:
        return None
    for site in env.sites:
        if path.startswith(site.rstrip(os.sep) + os.sep):
            return path[len(site.rstrip(os.sep)) + 1 :]
    return path


def _finding_json(env: Environment, f: Finding) -> dict[str, Any]:
    return {
        "code": f.code,
        "severity": f.severity,
        "distribution": f.distribution,
        "library": relative(env, f.library),
        "message": f.message,
        "error_text": f.error_text,
        "fix": f.fix,
    }


def _dist_json(env: Environment, r: DistributionReport) -> dict[str, Any]:
    return {
        "name": r.name,
        "version": r.version,
        "status": r.status,
        "cause": r.cause,
        "verdict": r.verdict.value if r.verdict else None,
        "findings": [_finding_json(env, f) for f in r.findings],
        "variants": None if r.variants is None else {
            "selected": relative(env, r.variants.selected),
            "alternatives": [relative(env, p) for p in r.variants.alternatives],
            "why": r.variants.why,
        },
        "libraries": [_library_json(lv, "", False) | {"path": relative(env, lv.path)}
                      for lv in r.libraries],
        "problems": list(r.problems),
    }  # fmt: skip


def doctor_json(d: Diagnosis) -> str:
    env = d.environment
    doc: dict[str, Any] = {
        **envelope("doctor"),
        "status": d.status,
        "runs": d.status == Status.RUNS if d.status != Status.UNKNOWN else None,
        "environment": {
            "sites": list(env.sites),
            "distributions": len(env.distributions),
            "torch": None if env.torch_version is None else {
                "version": env.torch_version,
                "cuda": None if env.torch_cuda is None else "{}.{}".format(*env.torch_cuda),
            },
        },
        "targets": [
            {
                "target": _target_json(t.target),
                "status": t.status,
                "notes": list(t.notes),
                "distributions": [_dist_json(env, r) for r in t.distributions],
            }
            for t in d.targets
        ],
        "loader": {
            "preloaded_by": d.process.preloaded_by,
            "loaded": [
                {"name": lo.name, "path": lo.path, "by": relative(env, lo.by), "how": lo.how}
                for lo in (d.process.loaded[k] for k in d.process.order)
            ],
            "findings": [_finding_json(env, f) for f in d.loader_findings],
        },
    }  # fmt: skip
    return dumps(doc, indent=2) + "\n"


def _finding_lines(env: Environment, f: Finding) -> list[str]:
    where = relative(env, f.library)
    lines = [f"    {f.code} {f.severity}: {where + ': ' if where else ''}{f.message}"]
    if f.error_text:
        lines.append(f"      fails with: {f.error_text}")
    if f.fix:
        lines.append(f"      fix: {f.fix}")
    return lines


def doctor_text(d: Diagnosis, *, verbose: bool = False) -> str:
    env = d.environment
    torch = ""
    if env.torch_version:
        cu = f", CUDA {env.torch_cuda[0]}.{env.torch_cuda[1]}" if env.torch_cuda else ", no CUDA"
        torch = f"; torch {env.torch_version}{cu}"
    lines = [f"environment: {', '.join(env.sites)} ({len(env.distributions)} distributions{torch})"]
    for t in d.targets:
        drv = f" with {t.target.driver}" if t.target.driver else ""
        lines.append("")
        lines.append(f"{t.target.label}{drv}: {_HEAD[t.status]}")
        for n in t.notes:
            lines.append(f"  note: {n}")
        if not t.distributions:
            lines.append("  nothing installed has device code or links CUDA")
        for r in t.distributions:
            what = f" ({CODES[r.findings[0].code].title})" if (
                r.status == Status.RUNS_EXCEPT and r.findings) else ""
            lines.append(f"  {r.name} {r.version}: {r.status}{what}")
            if not r.findings:
                lines.append(f"    {r.cause}")
            for f in r.findings:
                lines += _finding_lines(env, f)
            if r.variants is not None:
                sel = relative(env, r.variants.selected) or "none"
                lines.append(f"    variant loaded: {sel} ({r.variants.why}; "
                             f"{len(r.variants.alternatives)} variants)")  # fmt: skip
            for p in r.problems:
                lines.append(f"    unread: {p}")
            if verbose:
                for lv in r.libraries:
                    lines.append(f"    {relative(env, lv.path)}: {lv.verdict.value} - {lv.reason}")
    orphans = [f for f in d.loader_findings if f.distribution is None]
    if orphans:
        lines += ["", "loader:"]
        for f in orphans:
            lines += _finding_lines(env, f)
    cuda = [d.process.loaded[k] for k in d.process.order if is_cuda_library(k, "linux")
            or is_cuda_library(k, "windows")]  # fmt: skip
    if verbose and cuda:
        lines += ["", "libraries in one process (name <- file, how found):"]
        for lo in cuda:
            lines.append(f"  {lo.name} <- {lo.path} ({lo.how}; by {relative(env, lo.by)})")
    return escape_lines(lines)

"""Renderers of ``cuwheel doctor``: text (the cause first) and JSON (the ``cuwheel-doctor``
document in the common envelope; schema in ``cuwheel/data/doctor.schema.json``)."""

from __future__ import annotations

import os
from typing import Any

from cuwheel.checks.codes import CODES
from cuwheel.checks.findings import Finding
from cuwheel.doctor import Diagnosis, DistributionReport, Environment, Status
from cuwheel.knowledge.catalog import is_cuda_library
from cuwheel.render.compat import _library_json, _target_json
from cuwheel.render.diagnosis import wrap
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
        "severity": str(f.severity),
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


def doctor_json(d: Diagnosis, error: dict[str, Any] | None = None) -> str:
    """The doctor document; ``error``: render.diagnosis.diagnosis_json of --error's text."""
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
    if error is not None:
        doc["error"] = error
    return dumps(doc, indent=2) + "\n"


def _groups(findings: tuple[Finding, ...]) -> list[list[Finding]]:
    """A distribution's findings, one group per cause: the same code, failure and fix (a
    wheel whose seven modules need the same driver is one group of seven)."""
    out: dict[tuple[str, str | None, str | None], list[Finding]] = {}
    for f in findings:
        out.setdefault((f.code, f.error_text, f.fix), []).append(f)
    return list(out.values())


def _modules(env: Environment, group: list[Finding]) -> str:
    names = [os.path.basename(f.library) for f in group if f.library]
    if not names:
        return ""
    shown = ", ".join(names[:3]) + (f" and {len(names) - 3} more" if len(names) > 3 else "")
    return f" ({len(names)} modules: {shown})" if len(names) > 1 else f" ({names[0]})"


def _group_lines(env: Environment, group: list[Finding], width: int, verbose: bool) -> list[str]:
    f = group[0]
    lines = wrap(f"{f.code} {f.severity}: {f.message}{_modules(env, group)}", width, "    ",
                 "      ")
    if f.error_text:
        lines += wrap(f.error_text, width, "      fails with: ", "        ")
    if f.fix:
        lines += wrap(f.fix, width, "      fix: ", "        ")
    if verbose and len(group) > 1:
        for g in group:
            lines += wrap(f"{relative(env, g.library)}: {g.message}", width, "      - ", "        ")
    return lines


def _headline(d: Diagnosis) -> str:
    """The first line: the culprit distribution and its cause, on the first target where
    something does not run as asked."""
    for t in d.targets:
        drv = f" with {t.target.driver}" if t.target.driver else ""
        for r in t.distributions:
            if r.status == Status.RUNS:
                continue
            what = CODES[r.findings[0].code].title if r.findings else r.cause
            return f"{r.name} {r.version} {r.status} on {t.target.label}{drv}: {what}"
    orphans = [f for f in d.loader_findings if f.distribution is None]
    if orphans:
        return f"the loader: {CODES[orphans[0].code].title}"
    labels = ", ".join(t.target.label for t in d.targets)
    return f"everything installed runs on {labels}" if d.targets else "nothing to judge"


def doctor_text(d: Diagnosis, *, verbose: bool = False, width: int = 100) -> str:
    """The diagnosis: the culprit and its cause first; one line per distribution per cause
    (with its failure and fix), ``verbose``: every module and the process's libraries."""
    env = d.environment
    torch = ""
    if env.torch_version:
        cu = f", CUDA {env.torch_cuda[0]}.{env.torch_cuda[1]}" if env.torch_cuda else ", no CUDA"
        torch = f"; torch {env.torch_version}{cu}"
    lines = wrap(_headline(d), width, "", "  ")
    lines += wrap(f"{', '.join(env.sites)} ({len(env.distributions)} distributions{torch})",
                  width, "environment: ", "  ")
    for t in d.targets:
        drv = f" with {t.target.driver}" if t.target.driver else ""
        lines.append("")
        lines.append(f"{t.target.label}{drv}: {_HEAD[t.status]}")
        for n in t.notes:
            lines += wrap(n, width, "  note: ", "    ")
        if not t.distributions:
            lines.append("  nothing installed has device code or links CUDA")
        for r in t.distributions:
            if r.status == Status.RUNS and not r.findings and not verbose:
                continue
            lines += wrap(f"{r.name} {r.version}: {r.status}" +
                          ("" if r.findings else f" - {r.cause}"), width, "  ", "    ")
            for group in _groups(r.findings):
                lines += _group_lines(env, group, width, verbose)
            if r.variants is not None:
                sel = relative(env, r.variants.selected) or "none"
                lines += wrap(f"{sel} ({r.variants.why}; {len(r.variants.alternatives)} "
                              "variants)", width, "    variant loaded: ", "      ")
            for p in r.problems:
                lines += wrap(p, width, "    unread: ", "      ")
            if verbose:
                for lv in r.libraries:
                    lines += wrap(f"{relative(env, lv.path)}: {lv.verdict.value} - {lv.reason}",
                                  width, "    ", "      ")
        quiet = [r for r in t.distributions if r.status == Status.RUNS and not r.findings]
        if quiet and not verbose:
            lines += wrap(", ".join(f"{r.name} {r.version}" for r in quiet), width,
                          "  runs: ", "    ")
    orphans = [f for f in d.loader_findings if f.distribution is None]
    if orphans:
        lines += ["", "loader:"]
        for group in _groups(tuple(orphans)):
            lines += _group_lines(env, group, width, verbose)
    cuda = [d.process.loaded[k] for k in d.process.order if is_cuda_library(k, "linux")
            or is_cuda_library(k, "windows")]  # fmt: skip
    if verbose and cuda:
        lines += ["", "libraries in one process (name <- file, how found):"]
        for lo in cuda:
            lines.append(f"  {lo.name} <- {lo.path} ({lo.how}; by {relative(env, lo.by)})")
    return escape_lines(lines)

"""A report across scan records: per project and per GPU, device-code coverage, and the
check findings by code; as text, JSON or a self-contained HTML page with the support
matrix (one row per wheel, one column per GPU compute capability).

Coverage is not judged here: each record carries, per GPU, the wheel's state from the
one roll-up (rules/rollup.py, the answer ``cuwheel compat`` gives: ``runs``, ``runs
except``, ``depends on dispatch``, ``does not run``), or ``wrong platform`` where no
machine of the wheel's platform carries the GPU.  The summary counts them.
"""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from collections.abc import Iterable
from html import escape
from typing import Any

from cuwheel.render.envelope import ENVELOPE_KEYS, envelope

__all__ = ["FORMATS", "read_records", "render", "summarize"]

FORMATS = ("text", "json", "html")
_STATES = ("runs", "runs except", "depends on dispatch", "does not run", "unknown",
           "wrong platform")


def read_records(paths: Iterable[str]) -> list[dict[str, Any]]:
    """Records from JSON Lines files (``-``: standard input); the last record of an
    input wins when one is found twice (a resumed scan)."""
    import sys

    from cuwheel.errors import InputError

    out: dict[str, dict[str, Any]] = {}
    for path in paths:
        try:
            f = sys.stdin if path == "-" else open(path, encoding="utf-8")  # noqa: SIM115
        except OSError as exc:
            raise InputError(path, exc.strerror or str(exc)) from None
        with f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    obj = json.loads(line)
                except ValueError:
                    raise InputError(f"{path}:{n}", "not a JSON record") from None
                if isinstance(obj, dict) and "input" in obj:
                    out[obj["input"]] = obj
    return list(out.values())


def _gpus() -> list[tuple[Any, str, tuple[str, ...] | None]]:
    """(Arch, label, the only platforms whose machines carry it or None) of every GPU
    compute capability in the catalog."""
    from cuwheel.knowledge import catalog

    out = []
    for g in sorted(catalog.load_catalog().gpus, key=lambda g: g.arch.number):
        names = [p.name for p in g.products][:2]
        label = f"{g.family}: {', '.join(names)}" if names else g.family
        out.append((g.arch, label, g.fixed_hosts()))
    return out


def summarize(records: list[dict[str, Any]]) -> dict[str, Any]:
    """The summary document (JSON-ready, deterministic: sorted throughout)."""
    gpus = _gpus()
    wheels = []
    projects: dict[str, dict[str, Any]] = defaultdict(lambda: {
        "wheels": 0, "versions": set(), "platforms": set(), "passed": 0, "failed": 0,
        "unchecked": 0, "device_code": 0, "findings": Counter(),
        "gpus": {g.sass: Counter() for g, _, _ in gpus}})
    codes: dict[str, dict[str, Any]] = {}
    per_gpu: dict[str, Counter[str]] = {g.sass: Counter() for g, _, _ in gpus}
    for rec in sorted(records, key=lambda r: (str((r.get("wheel") or {}).get("name")),
                                              str((r.get("wheel") or {}).get("filename")),
                                              r["input"])):
        w = rec.get("wheel") or {}
        name = w.get("name") or "(unknown)"
        p = projects[name]
        p["wheels"] += 1
        if w.get("version"):
            p["versions"].add(w["version"])
        for t in w.get("tags") or []:
            p["platforms"].add(t.rsplit("-", 1)[-1])
        chk = rec.get("check")
        if chk is None:
            p["unchecked"] += 1
        elif chk.get("passed"):
            p["passed"] += 1
        else:
            p["failed"] += 1
        seen_codes = set()
        for f in (chk or {}).get("findings", []):
            c = codes.setdefault(f["code"], {"severity": f["severity"], "findings": 0,
                                             "wheels": 0, "projects": set()})
            c["findings"] += 1
            c["projects"].add(name)
            p["findings"][f["code"]] += 1
            if f["code"] not in seen_codes:
                seen_codes.add(f["code"])
                c["wheels"] += 1
        states = rec.get("gpus")
        if states is not None:
            p["device_code"] += 1
            for g, st in states.items():
                p["gpus"][g][st] += 1
                per_gpu[g][st] += 1
        wheels.append({
            "input": rec["input"],
            "filename": w.get("filename"),
            "project": name,
            "version": w.get("version"),
            "sha256": w.get("sha256"),
            "passed": None if chk is None else chk.get("passed"),
            "error": rec.get("error"),
            "findings": dict(sorted(Counter(f["code"] for f in (chk or {}).get("findings", [])
                                            ).items())),
            "gpus": states,
        })
    return {
        **envelope("scan-summary"),
        "wheels": len(wheels),
        "with_device_code": sum(1 for w in wheels if w["gpus"] is not None),
        "passed": sum(1 for w in wheels if w["passed"] is True),
        "failed": sum(1 for w in wheels if w["passed"] is False),
        "errors": sum(1 for w in wheels if w["error"]),
        "gpus": [{"arch": g.sass, "cc": g.cc, "label": label,
                  **{s: per_gpu[g.sass][s] for s in _STATES}} for g, label, _ in gpus],
        "projects": {
            n: {"wheels": p["wheels"], "versions": sorted(p["versions"]),
                "platforms": sorted(p["platforms"]), "passed": p["passed"],
                "failed": p["failed"], "unchecked": p["unchecked"],
                "device_code": p["device_code"],
                "findings": dict(sorted(p["findings"].items())),
                "gpus": {g: {s: c[s] for s in _STATES} for g, c in p["gpus"].items()}}
            for n, p in sorted(projects.items())
        },
        "codes": {k: {"severity": v["severity"], "findings": v["findings"],
                      "wheels": v["wheels"], "projects": sorted(v["projects"])}
                  for k, v in sorted(codes.items())},
        "matrix": wheels,
    }


def render(summary: dict[str, Any], fmt: str) -> str:
    if fmt == "json":
        # The envelope first (render/envelope.py), then every key sorted: stable output.
        head = {k: summary[k] for k in ENVELOPE_KEYS}
        rest = json.loads(json.dumps(
            {k: v for k, v in summary.items() if k not in head}, sort_keys=True
        ))  # fmt: skip
        return json.dumps({**head, **rest}, indent=1) + "\n"
    if fmt == "html":
        return _html(summary)
    if fmt == "text":
        return _text(summary)
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


def _shown(gpus: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The GPUs from the oldest that any wheel has code for up to the newest: older ones
    are columns of nothing but 'none'."""
    first = next((k for k, g in enumerate(gpus)
                  if g["runs"] or g["runs except"] or g["depends on dispatch"]), len(gpus))
    return gpus[first:] if first < len(gpus) else gpus


def _text(s: dict[str, Any]) -> str:
    lines = [
        f"{s['wheels']} wheels: {s['with_device_code']} with device code, "
        f"{s['passed']} pass and {s['failed']} fail the audit, {s['errors']} unreadable",
        "",
        "per GPU (wheels with device code: runs / runs except / depends on dispatch / "
        "does not run / unknown / wrong platform)",
    ]
    for g in _shown(s["gpus"]):
        lines.append("  " + f"{g['arch']:<8}" + "".join(f"{g[x]:>6}" for x in _STATES)
                     + f"  {g['label']}")
    lines += ["", "per project"]
    for name, p in s["projects"].items():
        top = ", ".join(f"{k} x{v}" for k, v in sorted(p["findings"].items(),
                                                       key=lambda kv: (-kv[1], kv[0]))[:6])
        shown = {g["arch"] for g in _shown(s["gpus"])}
        no = [g for g, c in p["gpus"].items()
              if g in shown and c["does not run"]
              and c["does not run"] + c["wrong platform"] == p["device_code"]]
        n = p["wheels"]
        lines.append(f"  {name}: {n} wheel{'' if n == 1 else 's'} ({', '.join(p['versions'])}); "
                     f"{p['passed']} pass, {p['failed']} fail; {p['device_code']} with device code")
        if no and p["device_code"]:
            lines.append(f"    runs on none of its wheels: {' '.join(no)}")
        if top:
            lines.append(f"    findings: {top}")
    lines += ["", "findings by code (findings, wheels, projects)"]
    for code, c in s["codes"].items():
        lines.append(f"  {code:<7} {c['severity']:<8} {c['findings']:>6} {c['wheels']:>5} "
                     f"{len(c['projects']):>4}")
    return "\n".join(lines) + "\n"


_CSS = """
body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
table{border-collapse:collapse;margin:1em 0}th,td{border:1px solid #ccc;padding:2px 6px}
th{background:#f3f3f3;position:sticky;top:0}td.c{text-align:center;font-size:12px}
.runs{background:#7bc47f}.except{background:#f6d77a}.depends{background:#fbe9a8}
.none{background:#f0a3a3}.na{background:#eee;color:#999}.num{text-align:right}
.platform{background:#ddd;color:#666}
th.g{writing-mode:vertical-rl;transform:rotate(180deg);white-space:nowrap}
"""


_CELL = {
    "runs": ("runs", "runs"),
    "runs except": ("except", "except"),
    "depends on dispatch": ("depends", "depends"),
    "does not run": ("none", "no"),
    "unknown": ("na", "?"),
    "wrong platform": ("platform", "n/a"),
}


def _html(s: dict[str, Any]) -> str:
    gpus = _shown(s["gpus"])
    out = ["<!DOCTYPE html><html><head><meta charset='utf-8'>",
           "<title>cuwheel scan summary</title>", f"<style>{_CSS}</style></head><body>",
           "<h1>cuwheel scan summary</h1>",
           f"<p>{s['wheels']} wheels, {s['with_device_code']} with device code; "
           f"{s['passed']} pass and {s['failed']} fail the audit; "
           f"{s['errors']} unreadable.</p>",
           "<p>Cells, the answer <code>cuwheel compat</code> gives: "
           "<span class='runs'>runs</span>; "
           "<span class='except'>except</span> runs except named modules; "
           "<span class='depends'>depends</span> runs only if named libraries pick kernels "
           "by compute capability; "
           "<span class='none'>no</span> does not run; "
           "<span class='platform'>n/a</span> no machine of the wheel's platform has "
           "this GPU; "
           "<span class='na'>-</span> no device code in the wheel.</p>",
           "<h2>Support matrix</h2><table><tr><th>wheel</th><th>audit</th>"]
    out += [f"<th class='g' title='{escape(g['label'])}'>{escape(g['arch'])}</th>" for g in gpus]
    out.append("</tr>")
    for w in s["matrix"]:
        verdict = ("error" if w["error"] else "-" if w["passed"] is None
                   else "pass" if w["passed"] else "fail")
        title = escape(", ".join(f"{k} x{v}" for k, v in w["findings"].items()))
        out.append(f"<tr><td>{escape(w['filename'] or w['input'])}</td>"
                   f"<td title='{title}'>{verdict}</td>")
        for g in gpus:
            st = (w["gpus"] or {}).get(g["arch"])
            cls, text = _CELL.get(st or "", ("na", "-"))
            out.append(f"<td class='c {cls}' title='{escape(g['arch'])}'>{text}</td>")
        out.append("</tr>")
    out.append("</table><h2>Per GPU</h2><table><tr><th>arch</th><th>GPU</th>"
               + "".join(f"<th>{x}</th>" for x in _STATES) + "</tr>")
    for g in gpus:
        out.append(f"<tr><td>{g['arch']}</td><td>{escape(g['label'])}</td>"
                   + "".join(f"<td class='num'>{g[x]}</td>" for x in _STATES) + "</tr>")
    out.append("</table><h2>Per project</h2><table><tr><th>project</th><th>wheels</th>"
               "<th>versions</th><th>platforms</th><th>pass</th><th>fail</th>"
               "<th>findings</th></tr>")
    for name, p in s["projects"].items():
        f = ", ".join(f"{k} x{v}" for k, v in p["findings"].items())
        out.append(f"<tr><td>{escape(name)}</td><td class='num'>{p['wheels']}</td>"
                   f"<td>{escape(', '.join(p['versions']))}</td>"
                   f"<td>{escape(', '.join(p['platforms']))}</td>"
                   f"<td class='num'>{p['passed']}</td><td class='num'>{p['failed']}</td>"
                   f"<td>{escape(f)}</td></tr>")
    out.append("</table><h2>Findings by code</h2><table><tr><th>code</th><th>severity</th>"
               "<th>findings</th><th>wheels</th><th>projects</th></tr>")
    for code, c in s["codes"].items():
        out.append(f"<tr><td>{escape(code)}</td><td>{escape(c['severity'])}</td>"
                   f"<td class='num'>{c['findings']}</td><td class='num'>{c['wheels']}</td>"
                   f"<td>{escape(', '.join(c['projects']))}</td></tr>")
    out.append("</table></body></html>")
    return "\n".join(out) + "\n"

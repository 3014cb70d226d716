"""A report across scan records: per project and per GPU, device-code coverage, and the
check findings by code; as text, JSON or self-contained HTML with the support matrix
(one row per wheel, one column per GPU compute capability; a large matrix split into
pages of PAGE_ROWS rows beside an index page).

Memory does not grow with the records: :class:`Summary` counts as records come, and
keeps each wheel's matrix row in a temporary file, not in memory (docs/scan.md).

Coverage is not judged here: each record carries, per GPU, the wheel's state from the
one roll-up (rules/rollup.py, the answer ``cuwheel compat`` gives: ``runs``, ``runs
except``, ``depends on dispatch``, ``does not run``), or ``wrong platform`` where no
machine of the wheel's platform carries the GPU.  The summary counts them.
"""

from __future__ import annotations

import json
from collections import Counter
from collections.abc import Iterable, Iterator
from typing import Any, TextIO

from cuwheel.render.envelope import ENVELOPE_KEYS, envelope
from cuwheel.render.escape import escape_lines

__all__ = ["FORMATS", "Summary", "iter_records", "read_records", "render", "summarize", "write"]

FORMATS = ("text", "json", "html")
_STATES = ("runs", "runs except", "depends on dispatch", "does not run", "unknown",
           "wrong platform")


def read_records(paths: Iterable[str], damaged: list[Any] | None = None
                 ) -> list[dict[str, Any]]:
    """Records from JSON Lines files (``-``: standard input); the last record of an
    input wins when one is found twice (a resumed scan).  A damaged line is skipped and
    added to ``damaged`` (:class:`cuwheel.scan.record.DamagedLine`); every valid record
    is kept (scan/record.py: read_record_file).  Holds every record: for a report over
    many, :class:`Summary` reads them one at a time."""
    out: dict[str, dict[str, Any]] = {}
    for obj in iter_records(paths, [] if damaged is None else damaged):
        out[obj["input"]] = obj
    return list(out.values())


def iter_records(paths: Iterable[str], damaged: list[Any]) -> Iterator[dict[str, Any]]:
    """Every valid record of the JSON Lines files, one at a time (``-``: standard
    input); each damaged line added to ``damaged``."""
    import sys

    from cuwheel._paths import open_untrusted
    from cuwheel.errors import InputError
    from cuwheel.scan.record import RecordFile

    for path in paths:
        try:
            f = sys.stdin.buffer if path == "-" else open_untrusted(path)
        except OSError as exc:
            raise InputError(path, exc.strerror or str(exc)) from None
        with f:
            yield from RecordFile(f, path, damaged)


def _gpus() -> list[tuple[Any, str, tuple[str, ...] | None]]:
    """(Arch, label, the only platforms whose machines carry it or None) of every GPU
    compute capability in the catalog."""
    from cuwheel.knowledge.active import active_catalog

    out = []
    for g in sorted(active_catalog().gpus, key=lambda g: g.arch.number):
        names = [p.name for p in g.products][:2]
        label = f"{g.family}: {', '.join(names)}" if names else g.family
        out.append((g.arch, label, g.fixed_hosts()))
    return out


def _row(rec: dict[str, Any]) -> dict[str, Any]:
    """A record's row of the matrix, and (keys with ``_``) what it adds to the counts."""
    w = rec.get("wheel") or {}
    chk = rec.get("check")
    findings = (chk or {}).get("findings", [])
    return {
        "input": rec["input"],
        "filename": w.get("filename"),
        "project": w.get("name") or "(unknown)",
        "version": w.get("version"),
        "sha256": w.get("sha256"),
        "passed": None if chk is None else chk.get("passed"),
        "error": rec.get("error"),
        "findings": dict(sorted(Counter(f["code"] for f in findings).items())),
        "gpus": rec.get("gpus"),
        "_platforms": sorted({t.rsplit("-", 1)[-1] for t in w.get("tags") or []}),
        "_checked": chk is not None,
        "_severity": {f["code"]: f["severity"] for f in findings},
    }


class Summary:
    """The summary, aggregated one record at a time: counters per GPU, per project and
    per finding code, and the matrix rows spilled to a temporary file (their sort keys
    and offsets only in memory), so memory does not grow with the records' size.  The
    last record of an input wins (a resumed scan): its earlier row is taken back out
    of the counts."""

    def __init__(self) -> None:
        import tempfile

        self._gpus = _gpus()
        self._spill = tempfile.TemporaryFile()  # noqa: SIM115  # closed by close()
        self._where: dict[str, tuple[str, str, str, int, int]] = {}
        self.wheels = 0
        self._totals: Counter[str] = Counter()
        self._per_gpu: dict[str, Counter[str]] = {g.sass: Counter() for g, _, _ in self._gpus}
        self._projects: dict[str, dict[str, Any]] = {}
        self._codes: dict[str, dict[str, Any]] = {}

    def __enter__(self) -> Summary:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._spill.close()

    # -- adding ------------------------------------------------------------------------------
    def add(self, rec: dict[str, Any]) -> None:
        row = _row(rec)
        old = self._where.get(row["input"])
        if old is not None:
            self._apply(self._load(old[3], old[4]), -1)
        self._apply(row, 1)
        data = (json.dumps(row, sort_keys=True) + "\n").encode("utf-8", "surrogatepass")
        self._spill.seek(0, 2)
        off = self._spill.tell()
        self._spill.write(data)
        self._where[row["input"]] = (str(row["project"]), str(row["filename"]), row["input"],
                                     off, len(data))

    def add_all(self, records: Iterable[dict[str, Any]]) -> Summary:
        for rec in records:
            self.add(rec)
        return self

    def _load(self, off: int, n: int) -> dict[str, Any]:
        self._spill.seek(off)
        row: dict[str, Any] = json.loads(self._spill.read(n).decode("utf-8", "surrogatepass"))
        return row

    def _project(self, name: str) -> dict[str, Any]:
        p = self._projects.get(name)
        if p is None:
            p = self._projects[name] = {
                "wheels": 0, "versions": Counter(), "platforms": Counter(), "passed": 0,
                "failed": 0, "unchecked": 0, "device_code": 0, "findings": Counter(),
                "gpus": {g.sass: Counter() for g, _, _ in self._gpus}}
        return p

    def _apply(self, row: dict[str, Any], k: int) -> None:
        name = row["project"]
        p = self._project(name)
        self.wheels += k
        p["wheels"] += k
        if row["version"]:
            p["versions"][row["version"]] += k
        for t in row["_platforms"]:
            p["platforms"][t] += k
        verdict = ("unchecked" if not row["_checked"] else
                   "passed" if row["passed"] else "failed")
        p[verdict] += k
        self._totals[verdict] += k
        if row["error"]:
            self._totals["errors"] += k
        for code, n in row["findings"].items():
            c = self._codes.setdefault(code, {"severity": row["_severity"].get(code, ""),
                                              "findings": 0, "wheels": 0,
                                              "projects": Counter()})
            c["findings"] += k * n
            c["wheels"] += k
            c["projects"][name] += k
            p["findings"][code] += k * n
        states = row["gpus"]
        if states is not None:
            p["device_code"] += k
            self._totals["device_code"] += k
            for g, st in states.items():
                if g in p["gpus"]:
                    p["gpus"][g][st] += k
                    self._per_gpu[g][st] += k

    # -- the document --------------------------------------------------------------------
    def head(self) -> dict[str, Any]:
        """The summary document without its ``matrix`` (JSON-ready, sorted)."""
        t = self._totals
        return {
            **envelope("scan-summary"),
            "wheels": self.wheels,
            "with_device_code": t["device_code"],
            "passed": t["passed"],
            "failed": t["failed"],
            "errors": t["errors"],
            "gpus": [{"arch": g.sass, "cc": g.cc, "label": label,
                      **{s: self._per_gpu[g.sass][s] for s in _STATES}}
                     for g, label, _ in self._gpus],
            "projects": {
                n: {"wheels": p["wheels"], "versions": _kept(p["versions"]),
                    "platforms": _kept(p["platforms"]), "passed": p["passed"],
                    "failed": p["failed"], "unchecked": p["unchecked"],
                    "device_code": p["device_code"],
                    "findings": {c: v for c, v in sorted(p["findings"].items()) if v},
                    "gpus": {g: {s: c[s] for s in _STATES} for g, c in p["gpus"].items()}}
                for n, p in sorted(self._projects.items()) if p["wheels"] > 0
            },
            "codes": {k: {"severity": v["severity"], "findings": v["findings"],
                          "wheels": v["wheels"], "projects": _kept(v["projects"])}
                      for k, v in sorted(self._codes.items()) if v["wheels"] > 0},
        }

    def rows(self) -> Iterator[dict[str, Any]]:
        """The matrix rows, one wheel each, by project, file name and input."""
        for _, _, _, off, n in sorted(self._where.values()):
            row = self._load(off, n)
            yield {k: v for k, v in row.items() if not k.startswith("_")}

    def document(self) -> dict[str, Any]:
        return {**self.head(), "matrix": list(self.rows())}


def _kept(c: Counter[str]) -> list[str]:
    return sorted(k for k, v in c.items() if v > 0)


def summarize(records: Iterable[dict[str, Any]]) -> dict[str, Any]:
    """The summary document (JSON-ready, deterministic: sorted throughout)."""
    with Summary() as s:
        return s.add_all(records).document()


PAGE_ROWS = 2000  # matrix rows per HTML page: about 2.5 MB with every GPU column


def render(summary: dict[str, Any] | Summary, fmt: str) -> str:
    """The report as one string (an HTML matrix of more than PAGE_ROWS rows is cut
    there, with a note: :func:`write` to a file writes every page)."""
    import io

    buf = io.StringIO()
    write(summary, fmt, buf)
    return buf.getvalue()


def write(summary: dict[str, Any] | Summary, fmt: str, out: TextIO, *,
          path: str | None = None, page_rows: int = PAGE_ROWS) -> list[str]:
    """Write the report to ``out``, the matrix one row at a time.  HTML with more than
    ``page_rows`` rows: ``out`` (the file at ``path``) is an index page linking pages of
    ``page_rows`` rows each, written beside it as ``<stem>-0001.html``, ...; returns
    their paths.  Without ``path`` the matrix is cut at ``page_rows`` rows, and says so."""
    if isinstance(summary, Summary):
        head, rows, n = summary.head(), summary.rows(), summary.wheels
    else:
        head = {k: v for k, v in summary.items() if k != "matrix"}
        rows, n = iter(summary["matrix"]), len(summary["matrix"])
    if fmt == "json":
        _json(head, rows, out)
        return []
    if fmt == "html":
        from cuwheel.scan.summary_html import write_html

        return write_html(head, _shown(head["gpus"]), _STATES, rows, n, out, path,
                          max(1, page_rows))
    if fmt == "text":
        out.write(_text(head))
        return []
    raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")


_HOLE = "cuwheel-matrix-rows"


def _json(head: dict[str, Any], rows: Iterator[dict[str, Any]], out: TextIO) -> None:
    """The envelope first (render/envelope.py), then every key sorted: stable output;
    the matrix written row by row where the document holds its place."""
    first = {k: head[k] for k in ENVELOPE_KEYS}
    rest = json.loads(json.dumps(
        {**{k: v for k, v in head.items() if k not in first}, "matrix": _HOLE},
        sort_keys=True))  # fmt: skip
    text = json.dumps({**first, **rest}, indent=1) + "\n"
    # A JSON string holds no raw newline: the key at the top level is found only once.
    before, after = text.split(f'\n "matrix": "{_HOLE}"', 1)
    out.write(before + '\n "matrix": [')
    sep = "\n  "
    for row in rows:
        out.write(sep + json.dumps(row, indent=1, sort_keys=True).replace("\n", "\n  "))
        sep = ",\n  "
    out.write("]" if sep == "\n  " else "\n ]")
    out.write(after)


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
    return escape_lines(lines)  # names come from record files: one printable line each

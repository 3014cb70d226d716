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
from html import escape
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

    from cuwheel.errors import InputError
    from cuwheel.scan.record import RecordFile

    for path in paths:
        try:
            f = sys.stdin.buffer if path == "-" else open(path, "rb")  # noqa: SIM115
        except OSError as exc:
            raise InputError(path, exc.strerror or str(exc)) from None
        with f:
            yield from RecordFile(f, path, damaged)


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
        return _html(head, rows, n, out, path, max(1, page_rows))
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


def _page(title: str) -> str:
    return ("<!DOCTYPE html><html><head><meta charset='utf-8'>\n"
            f"<title>{escape(title)}</title>\n<style>{_CSS}</style></head><body>\n")


def _matrix_head(gpus: list[dict[str, Any]]) -> str:
    return ("<table><tr><th>wheel</th><th>audit</th>"
            + "".join(f"<th class='g' title='{escape(g['label'])}'>{escape(g['arch'])}</th>"
                      for g in gpus) + "</tr>\n")


def _matrix_row(w: dict[str, Any], gpus: list[dict[str, Any]]) -> str:
    verdict = ("error" if w["error"] else "-" if w["passed"] is None
               else "pass" if w["passed"] else "fail")
    title = escape(", ".join(f"{k} x{v}" for k, v in w["findings"].items()))
    cells = []
    for g in gpus:
        st = (w["gpus"] or {}).get(g["arch"])
        cls, text = _CELL.get(st or "", ("na", "-"))
        cells.append(f"<td class='c {cls}' title='{escape(g['arch'])}'>{text}</td>")
    return (f"<tr><td>{escape(w['filename'] or w['input'])}</td>"
            f"<td title='{title}'>{verdict}</td>" + "".join(cells) + "</tr>\n")


def _html(s: dict[str, Any], rows: Iterator[dict[str, Any]], n: int, out: TextIO,
          path: str | None, page_rows: int) -> list[str]:
    import itertools
    import os
    import urllib.parse

    gpus = _shown(s["gpus"])
    out.write(_page("cuwheel scan summary"))
    out.write("\n".join([
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
        "<h2>Support matrix</h2>\n"]))
    written: list[str] = []
    if n <= page_rows or path is None:
        out.write(_matrix_head(gpus))
        for w in itertools.islice(rows, page_rows):
            out.write(_matrix_row(w, gpus))
        out.write("</table>\n")
        if n > page_rows:
            out.write(f"<p>The first {page_rows} of {n} wheels: a summary written to a file "
                      "(<code>--summary-output FILE</code>) has every page.</p>\n")
    else:
        stem, ext = os.path.splitext(os.path.basename(path))
        ext = ext or ".html"
        pages = -(-n // page_rows)
        names = [f"{stem}-{k:04d}{ext}" for k in range(1, pages + 1)]
        out.write("<p>" + str(n) + f" wheels, {page_rows} a page:</p><ol>\n")
        for k, name in enumerate(names):
            a, b = k * page_rows + 1, min(n, (k + 1) * page_rows)
            out.write(f"<li><a href='{escape(urllib.parse.quote(name))}'>wheels {a} to {b}"
                      "</a></li>\n")
        out.write("</ol>\n")
        folder = os.path.dirname(path)
        index = escape(urllib.parse.quote(os.path.basename(path)))
        for k, name in enumerate(names):
            a, b = k * page_rows + 1, min(n, (k + 1) * page_rows)
            dest = os.path.join(folder, name)
            with open(dest, "w", encoding="utf-8") as f:
                f.write(_page(f"cuwheel scan summary: wheels {a} to {b} of {n}"))
                nav = [f"<a href='{index}'>summary</a>"]
                if k:
                    nav.append(f"<a href='{escape(urllib.parse.quote(names[k - 1]))}'>"
                               "previous</a>")
                if k + 1 < pages:
                    nav.append(f"<a href='{escape(urllib.parse.quote(names[k + 1]))}'>"
                               "next</a>")
                f.write(f"<h1>Support matrix: wheels {a} to {b} of {n}</h1>\n"
                        f"<p>{' | '.join(nav)}</p>\n")
                f.write(_matrix_head(gpus))
                for w in itertools.islice(rows, page_rows):
                    f.write(_matrix_row(w, gpus))
                f.write("</table></body></html>\n")
            written.append(dest)
    out.write("\n".join(_tables(s, gpus)) + "\n")
    return written


def _tables(s: dict[str, Any], gpus: list[dict[str, Any]]) -> list[str]:
    out = ["<h2>Per GPU</h2><table><tr><th>arch</th><th>GPU</th>"
           + "".join(f"<th>{x}</th>" for x in _STATES) + "</tr>"]
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
    return out

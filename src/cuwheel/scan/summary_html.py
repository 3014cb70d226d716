"""The scan summary as self-contained HTML (inline CSS, no script, no external link): the
support matrix (a row per wheel, a column per GPU), per GPU, per project and per code.
A matrix of more rows than a page holds is split into pages beside an index page
(docs/scan.md, the summary); rows are written as they come, never all held.
"""

from __future__ import annotations

import itertools
import os
import urllib.parse
from collections.abc import Iterator
from html import escape
from typing import Any, TextIO

__all__ = ["write_html"]

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


def write_html(s: dict[str, Any], gpus: list[dict[str, Any]], states: tuple[str, ...],
               rows: Iterator[dict[str, Any]], n: int, out: TextIO, path: str | None,
               page_rows: int) -> list[str]:
    """The summary ``s`` (without its matrix) as HTML to ``out``, the matrix ``rows``
    (``n`` of them) in columns ``gpus``; pages of ``page_rows`` rows beside ``path``
    when there are more (their paths returned), else one page."""
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
    out.write("\n".join(_tables(s, gpus, states)) + "\n")
    return written


def _tables(s: dict[str, Any], gpus: list[dict[str, Any]], states: tuple[str, ...]
            ) -> list[str]:
    out = ["<h2>Per GPU</h2><table><tr><th>arch</th><th>GPU</th>"
           + "".join(f"<th>{x}</th>" for x in states) + "</tr>"]
    for g in gpus:
        out.append(f"<tr><td>{g['arch']}</td><td>{escape(g['label'])}</td>"
                   + "".join(f"<td class='num'>{g[x]}</td>" for x in states) + "</tr>")
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

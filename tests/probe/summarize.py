#!/usr/bin/env python3
"""Write tests/probe/h200_summary.md from the committed probe results (h200_results.json).

    python3 tests/probe/summarize.py > tests/probe/h200_summary.md
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent


def main() -> int:
    d: dict[str, Any] = json.loads((HERE / "h200_results.json").read_text())
    m, s = d["machine"], d["summary"]
    cols = {name: i for i, name in enumerate(d["row_columns"])}
    rows = [r for r in d["rows"] if r[cols["rc"]] is not None]
    counted = [r for r in rows if r[cols["ignored"]] is None]
    ignored = [r for r in rows if r[cols["ignored"]] is not None]
    kinds = Counter(lib["path"].split("/", 1)[0] for lib in d["libraries"])
    out = [
        "# H200 probe: cuwheel.compat vs cuModuleLoadData",
        "",
        f"Machine: {m['gpu']} (CC {m['cc']}), driver {m['driver']} (cuDriverGetVersion "
        f"{m['driver_cuda']}), Python {m['python']}, CUDA_MODULE_LOADING="
        f"{m['CUDA_MODULE_LOADING']}. Written by `tests/probe/h200_probe.py` at cuwheel "
        f"commit {d.get('cuwheel_commit') or 'unrecorded'} (this page by "
        "`tests/probe/summarize.py`); full table in `h200_results.json`; rules and "
        "explanations in `docs/compat.md`.",
        "",
        f"- containers in the probed binaries: {s['containers_in_libraries']:,} in "
        f"{s['libraries']} binaries ("
        + ", ".join(f"{n} {k}" for k, n in sorted(kinds.items()))
        + "; `extra` = aarch64 wheels given with `--extra`, whose containers the driver loads "
        "whatever the host CPU)",
        f"- loaded with cuModuleLoadData: {s['probed']:,} (sampled, at most 200 per library); "
        f"crashed the process: {s['crashed']}",
        f"- **counted containers: {s['counted']:,}, agree {s['counted_agree']:,}, disagree "
        f"{s['counted_disagree']}**",
        f"- containers that do not count (stub, relocatable, LTO-IR, empty), loaded for the "
        f"record: {s['ignored_probed']}",
        f"- kernel launches through the runtime: {s['launches']}, agree {s['launches_agree']}",
        "",
        "## Counted containers: prediction -> driver",
        "",
        "| prediction | driver result | containers |",
        "|---|---|---|",
    ]
    pred = Counter((r[cols["predicted"]], r[cols["result"]]) for r in counted)
    out += [f"| {p} | {res} | {n} |" for (p, res), n in pred.most_common()]
    out += [
        "",
        "## Containers that do not count",
        "",
        "| kind | rules alone say | driver result | containers |",
        "|---|---|---|---|",
    ]
    ign = Counter(
        (r[cols["ignored"]], r[cols["predicted"]], r[cols["result"]]) for r in ignored
    )
    out += [f"| {k} | {p} | {res} | {n} |" for (k, p, res), n in ign.most_common()]
    ccols = {name: i for i, name in enumerate(d["crash_columns"])}
    for c in d["crashes"]:
        lib = d["libraries"][c[ccols["lib"]]]["path"]
        out.append(
            f"| {c[ccols['ignored']]} | {c[ccols['predicted']]} | **process crashed (return "
            f"code {c[ccols['returncode']]})** in {lib} container {c[ccols['index']]} "
            f"({c[ccols['section']]}, {c[ccols['codes']]}) | 1 |"
        )
    out += [
        "",
        "## Per library",
        "",
        "| library | containers | loaded | agree (counted) | library verdict | --strict |",
        "|---|---|---|---|---|---|",
    ]
    for lib in d["libraries"]:
        mine = [r for r in counted if r[cols["lib"]] == lib["id"]]
        agree = sum(1 for r in mine if r[cols["agree"]])
        out.append(
            f"| {lib['path']} | {lib['containers']} | {lib['probed']} | {agree}/{len(mine)} | "
            f"{lib['verdict']} | {lib['verdict_strict']} |"
        )
    out += [
        "",
        "## Kernel launches (CUDA runtime)",
        "",
        "| library | function | predicted | launch result | agree |",
        "|---|---|---|---|---|",
    ]
    for la in d["launches"]:
        out.append(
            f"| {la.get('library')} | {la.get('function')} | {la.get('predicted')} | "
            f"{la.get('launch_error_name')} | {la.get('agree')} |"
        )
    sys.stdout.write("\n".join(out) + "\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""``cuwheel scan``: audit many wheels; one JSON Lines record per wheel, and a summary."""

from __future__ import annotations

import argparse
import os
import sys
from typing import Any

__all__ = ["register"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "scan",
        help="audit many wheels (directories, lists, URLs, a package index): JSON Lines "
        "records, a cache, and a summary report",
        description="Inspect and audit every wheel of the inputs: one JSON record per wheel "
        "(the wheel, its inventory and its audit-mode check findings) on a line, read on "
        "every core (or a Dask cluster), cached by the wheel's sha256. Exit status: 0, or "
        "2 when some wheel could not be read. docs/scan.md has the record format.",
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="wheel file, directory (every *.whl under it) or http(s) URL")
    p.add_argument("--list", action="append", default=[], metavar="FILE",
                   help="a file of paths or URLs, one a line ('-': standard input)")
    p.add_argument("--index", metavar="URL",
                   help="a simple package index (PEP 503 / PEP 691), e.g. "
                   "https://pypi.org/simple/; needs --project")
    p.add_argument("--project", action="append", default=[], metavar="NAME",
                   help="only this project (glob allowed); repeatable")
    p.add_argument("--version", dest="versions", metavar="SPEC",
                   help="only versions in this range (PEP 440: '>=2.4,<3')")
    p.add_argument("--platform", action="append", default=[], metavar="GLOB",
                   help="only wheels with a platform tag matching (e.g. 'manylinux*_x86_64', "
                   "'win_amd64'); repeatable")
    p.add_argument("--pre", action="store_true", help="include pre-release versions")
    p.add_argument("-o", "--output", metavar="FILE",
                   help="write the records to FILE (default: standard output, unless "
                   "--summary)")
    p.add_argument("--resume", action="store_true",
                   help="keep the records already in --output and scan only the inputs "
                   "they do not name")
    p.add_argument("--records", action="append", default=[], metavar="FILE",
                   help="records of earlier scans to merge into the summary (not rescanned)")
    p.add_argument("--cache", metavar="DIR",
                   help="result cache (default: $XDG_CACHE_HOME/cuwheel/scan)")
    p.add_argument("--no-cache", action="store_true", help="neither read nor write the cache")
    p.add_argument("--no-check", action="store_true",
                   help="inventory only: leave the audit-mode check out of the records")
    p.add_argument("--detail", choices=("summary", "containers"), default="summary",
                   help="per binary: its coverage summary (default) or every container")
    p.add_argument("--toolkit", choices=("sample", "all", "none"), default="sample",
                   help="which cubins to decode for the toolkit that built them")
    p.add_argument("--workers", type=int, default=None,
                   help="worker processes of the local engine (default: every CPU)")
    p.add_argument("--engine", choices=("local", "dask"), default="local",
                   help="local: this machine's cores; dask: tasks on a Dask cluster "
                   "(pip install 'cuwheel[dask]')")
    p.add_argument("--dask-scheduler", metavar="ADDRESS",
                   help="the Dask scheduler (default: a local cluster of --workers processes)")
    p.add_argument("--download-dir", metavar="DIR",
                   help="keep downloaded wheels here (default: a temporary folder, removed)")
    p.add_argument("--summary", choices=("text", "json", "html"),
                   help="also report across the records: per project, per GPU, findings")
    p.add_argument("--summary-output", metavar="FILE",
                   help="write the summary to FILE (default: standard output)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    import json

    from cuwheel.errors import CuwheelError
    from cuwheel.scan.engine import ScanResult, scan
    from cuwheel.scan.inputs import Filters, expand, from_index, read_list
    from cuwheel.scan.record import RecordOptions

    filters = Filters(projects=tuple(args.project), versions=args.versions,
                      platforms=tuple(args.platform), prereleases=args.pre)
    items = list(args.inputs)
    for lst in args.list:
        items += read_list(lst)
    refs, missing = expand(items, filters)
    if args.index:
        have = {x.input for x in refs}
        refs += [r for r in from_index(args.index, filters, problems=missing)
                 if r.input not in have]
    elif args.project and not items:
        raise CuwheelError("--project without inputs: give --index URL (or inputs to filter)")
    if not refs and not args.records and not missing:
        raise CuwheelError("nothing to scan: give INPUTs, --list FILE or --index URL "
                           "with --project, or --records FILE to summarize")
    if args.resume and not args.output:
        raise CuwheelError("--resume needs --output FILE (the records to resume)")
    for m in missing:
        print(f"cuwheel: error: {m}", file=sys.stderr)

    options = RecordOptions(check=not args.no_check, detail=args.detail, payload=args.toolkit)
    cache = None
    if not args.no_cache:
        from cuwheel.scan.cache import Cache, default_cache_dir

        cache = Cache(args.cache or default_cache_dir(), options)

    done: set[str] = set()
    if args.resume and os.path.exists(args.output):
        done = _inputs_in(args.output)
        refs = [r for r in refs if r.input not in done]
    out: Any = None
    if args.output:
        out = open(args.output, "a" if args.resume else "w", encoding="utf-8")  # noqa: SIM115
    elif not args.summary:
        out = sys.stdout
    summary_sources = list(args.records)
    if args.output:
        summary_sources.append(args.output)
    collected: list[str] = []
    res = ScanResult()
    try:
        for line in scan(refs, options=options, workers=args.workers, cache=cache,
                         engine=args.engine, dask_address=args.dask_scheduler,
                         dask_workers=args.workers, download_dir=args.download_dir,
                         result=res):
            if out is not None:
                out.write(line + "\n")
                out.flush()
            if args.summary and not args.output:
                collected.append(line)
    finally:
        if out is not None and out is not sys.stdout:
            out.close()
    for bad in res.unreadable:
        print(f"cuwheel: error: {bad}: could not be read in full (see its record)",
              file=sys.stderr)
    if refs or done:
        kept = f", {len(done)} kept from {args.output}" if done else ""
        print(f"cuwheel scan: {res.records} records ({res.cached} from the cache, "
              f"{res.read} read){kept}", file=sys.stderr)
    if args.summary:
        from cuwheel.scan.summary import read_records, render, summarize

        records = read_records(summary_sources)
        records += [json.loads(x) for x in collected]
        text = render(summarize(_dedupe(records)), args.summary)
        if args.summary_output:
            with open(args.summary_output, "w", encoding="utf-8") as f:
                f.write(text)
        else:
            sys.stdout.write(text)
    return 2 if res.unreadable or missing else 0


def _inputs_in(path: str) -> set[str]:
    """The inputs the records in ``path`` name; a last line that an interrupted run cut
    short is removed (its wheel is scanned again)."""
    import json

    out = set()
    keep = 0
    with open(path, "rb") as f:
        for raw in f:
            if not raw.endswith(b"\n"):
                break
            try:
                obj = json.loads(raw)
            except ValueError:
                break
            keep += len(raw)
            if isinstance(obj, dict) and isinstance(obj.get("input"), str):
                out.add(obj["input"])
    if keep != os.path.getsize(path):
        os.truncate(path, keep)
    return out


def _dedupe(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    seen: dict[str, dict[str, Any]] = {}
    for r in records:
        seen[r["input"]] = r
    return list(seen.values())

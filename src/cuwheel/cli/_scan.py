"""``cuwheel scan``: audit many wheels; one JSON Lines record per wheel, and a summary."""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from cuwheel.errors import Exit

__all__ = ["register"]


def register(sub: Any) -> None:
    p: argparse.ArgumentParser = sub.add_parser(
        "scan",
        help="audit many wheels (directories, lists, URLs, a package index): JSON Lines "
        "records, a cache, and a summary report",
        description="Inspect and audit every wheel of the inputs: one JSON record per wheel "
        "(the wheel, its inventory and its audit-mode check findings) on a line, read on "
        "every core (or a Dask cluster), cached by the wheel's sha256. Exit status, as for "
        "check: 0 every scanned wheel passes its audit, 1 some wheel fails it (0 with "
        "--exit-zero), 2 some input or wheel could not be read or the index could not be "
        "used. docs/scan.md has the record format.",
    )
    p.add_argument("inputs", nargs="*", metavar="INPUT",
                   help="wheel file, directory (every *.whl under it) or http(s) URL")
    p.add_argument("--list", action="append", default=[], metavar="FILE",
                   help="a file of paths or URLs, one a line ('-': standard input)")
    p.add_argument("--index", metavar="URL",
                   help="a simple package index (PEP 503 / PEP 691), e.g. "
                   "https://pypi.org/simple/; needs --project")
    p.add_argument("--allow-host", action="append", default=[], metavar="HOST",
                   help="also download wheels the index links on this host (by default only "
                   "the index's own host, and PyPI's file host for PyPI)")
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
                   help="result cache (default: scan/ in $CUWHEEL_CACHE or the "
                   "platform's cache directory, ~/.cache/cuwheel)")
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
    p.add_argument("--max-in-flight", type=int, default=None, metavar="N",
                   help="wheels downloading, on disk or being read at once (default: twice "
                   "the workers); on Dask, tasks outstanding")
    p.add_argument("--download-dir", metavar="DIR",
                   help="keep downloaded wheels here (default: a temporary folder, removed)")
    p.add_argument("--summary", choices=("text", "json", "html"),
                   help="also report across the records: per project, per GPU, findings")
    p.add_argument("--summary-output", metavar="FILE",
                   help="write the summary to FILE (default: standard output)")
    p.add_argument("--exit-zero", action="store_true",
                   help="exit 0 even when scanned wheels fail their audit (2 still means "
                   "something could not be read)")
    p.set_defaults(handler=run)


def run(args: argparse.Namespace) -> int:
    from cuwheel.cli._common import error, warn
    from cuwheel.cli._progress import progress
    from cuwheel.errors import CuwheelError
    from cuwheel.render.escape import escape
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
        from cuwheel._remote import IndexPolicy

        policy = IndexPolicy(args.index if args.index.endswith("/") else args.index + "/",
                             allow_hosts=tuple(args.allow_host))
        refs += [r for r in from_index(args.index, filters, problems=missing, policy=policy)
                 if r.input not in have]
    elif args.project and not items:
        raise CuwheelError("--project without inputs: give --index URL (or inputs to filter)")
    if not refs and not args.records and not missing:
        raise CuwheelError("nothing to scan: give INPUTs, --list FILE or --index URL "
                           "with --project, or --records FILE to summarize")
    if args.max_in_flight is not None and args.max_in_flight < 1:
        raise CuwheelError("--max-in-flight must be at least 1")
    if args.resume and not args.output:
        raise CuwheelError("--resume needs --output FILE (the records to resume)")
    for m in missing:
        error(m)

    options = RecordOptions(check=not args.no_check, detail=args.detail, payload=args.toolkit)
    cache = None
    if not args.no_cache:
        from cuwheel.scan.cache import Cache, default_cache_dir

        cache = Cache(args.cache or default_cache_dir(), options)

    kept = 0
    damaged: list[Any] = []
    if args.resume:
        from cuwheel.scan.checkpoint import Checkpoint

        cp = Checkpoint.read(args.output, damaged)
        kept = cp.records
        refs = cp.remaining(refs)
        if damaged:
            warn(f"{args.output}: {len(damaged)} damaged line(s) skipped, "
                 f"{cp.records} valid records kept; first: {damaged[0]}")
    summary: Any = None
    if args.summary:
        from cuwheel.scan.summary import Summary, iter_records

        # Earlier records first, so that a wheel scanned now wins (the last record wins).
        summary = Summary().add_all(iter_records(
            [*args.records, *([args.output] if args.resume and kept else [])], damaged))
    out: Any = None
    if args.output:
        out = open(args.output, "a" if args.resume else "w", encoding="utf-8")  # noqa: SIM115
    elif not args.summary and not args.quiet:  # -q: no result on stdout, as everywhere
        out = sys.stdout
    res = ScanResult()
    failed = 0
    stdout = sys.stdout
    try:
        with progress(args, "scan", total=len(refs), unit="wheels") as bar:
            for line in scan(refs, options=options, workers=args.workers, cache=cache,
                             engine=args.engine, dask_address=args.dask_scheduler,
                             dask_workers=args.workers, download_dir=args.download_dir,
                             result=res, max_in_flight=args.max_in_flight):
                record = json.loads(line)
                if out is not None:
                    # stdout looked up now: on a terminal the progress display owns it
                    target = sys.stdout if out is stdout else out
                    target.write(line + "\n")
                    target.flush()  # the checkpoint: a stopped run keeps every record so far
                if summary is not None:
                    summary.add(record)
                failed += _failed(record)
                if bar is not None:
                    bar.step()
    finally:
        if out is not None and out is not sys.stdout:
            out.close()
    for bad in res.unreadable:
        error(f"{bad}: could not be read in full (see its record)")
    if refs or kept:
        was = f", {kept} kept from {args.output}" if kept else ""
        print(escape(f"cuwheel scan: {res.records} records ({res.cached} from the cache, "
                     f"{res.read} read){was}"), file=sys.stderr)
    if summary is not None:
        from cuwheel.scan.summary import write

        with summary:
            for d in damaged[:5]:
                warn(str(d))
            if len(damaged) > 5:
                warn(f"{len(damaged) - 5} more damaged lines skipped")
            if args.summary_output:
                with open(args.summary_output, "w", encoding="utf-8") as f:
                    write(summary, args.summary, f, path=args.summary_output)
            elif not args.quiet:
                write(summary, args.summary, sys.stdout)
    if res.unreadable or missing:
        return Exit.UNUSABLE
    if failed:
        # As check exits 1 on a failing wheel: a CI gate on a scan needs no summary parsing.
        print(f"cuwheel scan: {failed} wheel(s) fail their audit"
              + (" (--exit-zero: exit 0)" if args.exit_zero else ""), file=sys.stderr)
        return Exit.OK if args.exit_zero else Exit.NO
    return Exit.OK


def _failed(record: Any) -> bool:
    """Whether a record says its wheel's audit failed."""
    check = record.get("check") if isinstance(record, dict) else None
    return isinstance(check, dict) and check.get("passed") is False

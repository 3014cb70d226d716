"""``cuwheel toolkit``: assemble a train's CUDA toolkit into a prefix and print its env."""

from __future__ import annotations

import argparse
import contextlib
import sys
from collections.abc import Iterator
from typing import Any

from cuwheel.cli._common import add_output, check_output_path, write_file, write_output
from cuwheel.errors import Exit, ToolkitError
from cuwheel.render.escape import dumps, escape

__all__ = ["register"]

FORMATS = ("env", "sh", "json")


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "toolkit",
        help="assemble a train's CUDA toolkit (nvcc, runtime, ...) into a prefix, no installer",
        description=(
            "Assemble the CUDA toolkit of a release train into PREFIX from NVIDIA's "
            "checksummed redistributable archives (--source redist) or NVIDIA's component "
            "wheels on the package index (--source wheels), for any platform from any host, "
            "and print CUDA_HOME, CUDA_PATH, CUDACXX, PATH and LD_LIBRARY_PATH. Every "
            "archive's size and sha256 are checked; the tree is moved into place only when "
            "complete; PREFIX/cuwheel-toolkit.lock records what was installed."
        ),
    )
    p.add_argument(
        "--train",
        help="CUDA train: cu132 or 13.2 (its newest release) or a release, 13.2.1 (from the "
        "lockfile with --locked)",
    )
    p.add_argument(
        "--platform",
        help="linux-x86_64, linux-sbsa, linux-aarch64 or win-amd64 (default: this machine's)",
    )
    group = p.add_mutually_exclusive_group()
    group.add_argument("--components", help="comma-separated components: nvcc,cudart,cccl,...")
    group.add_argument(
        "--for", dest="for_", choices=("build", "runtime"), help="a component set (default build)"
    )
    p.add_argument("--prefix", required=True, help="directory to assemble the toolkit in")
    p.add_argument("--source", choices=("redist", "wheels"), default=None,
                   help="redist archives (default) or NVIDIA's wheels on the index")  # fmt: skip
    add_output(p, FORMATS, default="env",
               help="env: KEY=VALUE for $GITHUB_ENV; sh: quoted exports; json: the lock, "
               "the prefix and the env (data/toolkit.schema.json)")  # fmt: skip
    p.add_argument(
        "--base-url",
        help="where redistrib_<version>.json lives: a mirror URL, file:// URL or directory "
        "(default: $CUWHEEL_REDIST_URL or NVIDIA's redist directory)",
    )
    p.add_argument("--cache", help="download cache (default: $CUWHEEL_CACHE or the user cache)")
    p.add_argument("--lock", help="lockfile to write (or, with --locked, to install from)")
    p.add_argument(
        "--locked",
        action="store_true",
        help="install exactly the lockfile (--lock, or PREFIX/cuwheel-toolkit.lock)",
    )
    p.add_argument(
        "--refresh",
        action="store_true",
        help="--source wheels: ask the index for the train's newest release now (its answer "
        "is otherwise reused for an hour)",
    )
    p.add_argument(
        "--verify",
        action="store_true",
        help="re-hash every file of PREFIX against its record before calling it up to date "
        "(without --train: the prefix's own lockfile); damaged files are repaired by "
        "assembling again",
    )
    p.add_argument(
        "--no-repair",
        dest="repair",
        action="store_false",
        help="refuse (exit 2, naming the files) instead of repairing a damaged prefix",
    )
    p.add_argument("--jobs", "-j", type=int, default=4, help="parallel downloads (default 4)")
    p.add_argument("--progress", action=argparse.BooleanOptionalAction, default=None,
                   help="progress bar on stderr (default: on a terminal, without -q)")  # fmt: skip
    p.set_defaults(handler=_run)


class _Bars:
    """A rich progress bar per download, on stderr."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            DownloadColumn,
            Progress,
            TextColumn,
            TransferSpeedColumn,
        )

        self.progress = Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            DownloadColumn(),
            TransferSpeedColumn(),
            console=Console(stderr=True),
            transient=True,
        )
        import threading

        self.tasks: dict[str, Any] = {}
        self.lock = threading.Lock()

    def __call__(self, label: str, n: int, total: int | None) -> None:
        with self.lock:
            task = self.tasks.get(label)
            if task is None:
                task = self.tasks[label] = self.progress.add_task(label, total=total)
        self.progress.advance(task, n)


def _locked_lock(args: argparse.Namespace) -> Any:
    from pathlib import Path

    from cuwheel.toolkit import LOCK_NAME, normalize_train, read_lock

    path = Path(args.lock) if args.lock else Path(args.prefix) / LOCK_NAME
    if not path.is_file():
        why = "install from (--locked)" if args.locked else "verify against (--verify)"
        raise ToolkitError(f"{path}: no lockfile to {why}")
    lock = read_lock(path)
    given = {
        "--train": (args.train and normalize_train(args.train), lock.train),
        "--platform": (args.platform, lock.platform),
        "--source": (args.source, lock.source),
    }
    for flag, (value, locked) in given.items():
        if value is not None and value != locked:
            raise ToolkitError(f"{path}: {flag} {value} contradicts the lockfile's {locked}")
    if args.components or args.for_:
        raise ToolkitError(f"{path}: --locked installs the lockfile's components; drop the flag")
    return lock


@contextlib.contextmanager
def _suggest_wheels(args: argparse.Namespace) -> Iterator[None]:
    """A redist host that cannot be reached, with no --source chosen: the hint names the
    source that needs only the package index (networks that reach nothing else)."""
    try:
        yield
    except ToolkitError as exc:
        if args.source is None and not args.locked and "cannot connect" in str(exc):
            exc.hint = ("the redist host cannot be reached; --source wheels assembles the\n"
                        "same train from NVIDIA's wheels on the package index")
        raise


def _run(args: argparse.Namespace) -> int:
    from cuwheel.plan.emit import sh_lines
    from cuwheel.render.envelope import envelope
    from cuwheel.toolkit import Cache, env_lines, install, resolve
    from cuwheel.toolkit.resolve import NEWEST_MAX_AGE

    if args.output:
        check_output_path(args.output)
    if args.lock and not args.locked:  # before installing, not after
        check_output_path(args.lock, "--lock")

    cache = Cache.at(args.cache)
    if args.jobs < 1:
        raise ToolkitError("--jobs must be at least 1")
    if args.locked or (args.verify and not args.train):
        lock = _locked_lock(args)
    else:
        if not args.train:
            raise ToolkitError("--train is required (or --locked with a lockfile)")
        components = [c for c in (args.components or "").split(",") if c.strip()]
        if args.components is not None and not components:
            raise ToolkitError("--components names no component")
        with _suggest_wheels(args):
            lock = resolve(
                args.train,
                args.platform,
                components,
                args.for_,
                args.source or "redist",
                base_url=args.base_url,
                cache=cache,
                refresh_after=0 if args.refresh else NEWEST_MAX_AGE,
            )
    from cuwheel.cli._progress import enabled

    show = enabled(args)  # --progress/--no-progress, else a terminal without -q
    bars = _Bars() if show else None
    opts: dict[str, Any] = {"cache": cache, "jobs": args.jobs, "full_verify": args.verify,
                            "repair": args.repair}  # fmt: skip
    with _suggest_wheels(args):
        if bars is not None:
            with bars.progress:
                result = install(args.prefix, lock, progress=bars, **opts)
        else:
            result = install(args.prefix, lock, **opts)
    if args.lock and not args.locked:
        write_file(args.lock, lock.text(), "--lock")
    what = f"{lock.train} (CUDA {lock.cuda}) for {lock.platform} from {lock.source}"
    if result.repaired:
        print(f"cuwheel: {result.prefix} was damaged: {result.repaired.summary()}; "
              "assembled again", file=sys.stderr)  # fmt: skip
    if result.changed:
        mb = result.downloaded / 1e6
        print(
            escape(f"cuwheel: toolkit {what}: {len(lock.parts)} components in {result.prefix} "
                   f"({mb:.1f} MB downloaded, {result.from_cache} archives from the cache, "
                   f"{result.seconds:.1f} s)"),
            file=sys.stderr,
        )
    else:
        how = "every file re-hashed" if args.verify else "files checked"
        print(escape(f"cuwheel: toolkit {what}: {result.prefix} is up to date ({how})"),
              file=sys.stderr)
    lines = env_lines(result.prefix, lock.os)
    if args.format == "json":
        doc = {
            **envelope("toolkit"),
            **lock.to_json(),
            "prefix": str(result.prefix),
            "changed": result.changed,
            "env": dict(line.split("=", 1) for line in lines),
        }
        write_output(args, dumps(doc, indent=2) + "\n")
    else:
        write_output(args, "\n".join(sh_lines(lines) if args.format == "sh" else lines) + "\n")
    return Exit.OK

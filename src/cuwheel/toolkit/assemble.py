"""Assemble a CUDA toolkit into a prefix: download, verify, extract, lay out, lock, and move
into place in one rename.

:func:`install` makes a prefix hold exactly a lock (:func:`cuwheel.toolkit.resolve.resolve`
makes the lock).  The tree is built in a temporary directory beside the prefix and renamed
over it only when complete: a failed or interrupted run leaves the prefix as it was.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import tempfile
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

from cuwheel.errors import ToolkitError
from cuwheel.knowledge import platforms
from cuwheel.toolkit.cache import Cache
from cuwheel.toolkit.env import host_os
from cuwheel.toolkit.extract import Tree, extract_redist, extract_wheel
from cuwheel.toolkit.fetch import Download, Progress, fetch_all
from cuwheel.toolkit.lock import (
    LOCK_NAME,
    OWNER_NAME,
    Lock,
    Part,
    not_owned,
    read_lock,
    write_owner,
)
from cuwheel.toolkit.stubs import write_driver_stub
from cuwheel.toolkit.verify import Damage, verify_tree, write_record

__all__ = ["Installed", "check_build_tools", "install", "verify"]


@dataclass(frozen=True)
class Installed:
    prefix: Path
    lock: Lock
    changed: bool  # False: the prefix already held exactly this lock
    downloaded: int  # bytes downloaded by this run
    from_cache: int  # archives that were already in the cache
    seconds: float
    # what was wrong with the prefix that this run assembled again
    repaired: Damage = field(default_factory=Damage)


# ---------------------------------------------------------------------------- install


def _prefix_lock(prefix: Path) -> Lock | None:
    path = prefix / LOCK_NAME
    if not path.is_file():
        return None
    try:
        return read_lock(path)
    except ToolkitError:
        return None


def _check_prefix(prefix: Path) -> None:
    if prefix.is_symlink() or (prefix.exists() and not prefix.is_dir()):
        raise ToolkitError(f"{prefix}: exists and is not a directory")
    # trust: a prefix is replaced only when provably ours (toolkit/lock.py: not_owned)
    why = not_owned(prefix) if prefix.is_dir() and any(prefix.iterdir()) else None
    if why is not None:
        raise ToolkitError(
            f"{prefix}: not empty and not a cuwheel toolkit ({why}); nothing is "
            "replaced: choose a new or empty directory"
        )


def _layout_linux(tree: Path) -> None:
    """What a normal CUDA tree has and the archives / wheels leave out: ``lib64`` (nvcc's
    profile and CMake look there), the unversioned ``libX.so`` a linker's ``-lX`` needs,
    and ``nvvm/lib64``."""
    lib = tree / "lib"
    if lib.is_dir() and not (tree / "lib64").exists():
        os.symlink("lib", tree / "lib64")
    if lib.is_dir():
        versioned: dict[str, list[str]] = {}
        for entry in os.listdir(lib):
            m = re.fullmatch(r"(lib.+\.so)(\.\d+)+", entry)
            if m is not None:
                versioned.setdefault(m[1], []).append(entry)
        for base, names in versioned.items():
            if not (lib / base).exists() and not (lib / base).is_symlink():
                os.symlink(min(names, key=len), lib / base)
    nvvm_libs = [n for n in os.listdir(lib) if n.startswith("libnvvm.so")] if lib.is_dir() else []
    nvvm = tree / "nvvm"
    if nvvm.is_dir() and nvvm_libs and not (nvvm / "lib64").exists():
        (nvvm / "lib64").mkdir()
        for n in nvvm_libs:
            os.symlink(f"../../lib/{n}", nvvm / "lib64" / n)


def _version_json(tree: Path, lock: Lock) -> None:
    doc: dict[str, dict[str, str]] = {"cuda": {"name": "CUDA SDK", "version": lock.cuda}}
    for p in lock.parts:
        doc[p.package if lock.source == "redist" else p.component] = {
            "name": p.component,
            "version": p.version,
        }
    (tree / "version.json").write_text(json.dumps(doc, indent=2) + "\n")


def _extract(part: Part, blob: Path, tree: Tree) -> None:
    where = f"{part.url.rsplit('/', 1)[-1]} ({part.label})"
    if part.kind == "wheel":
        extract_wheel(blob, tree, where, part.label)
    else:
        assert part.top is not None
        extract_redist(blob, part.kind, part.top, tree, where, part.label)


# what a build toolkit's nvcc runs: the driver, the front end (cicc), the assembler, the
# device linker and the fat binary writer
BUILD_TOOLS = ("bin/nvcc", "nvvm/bin/cicc", "bin/ptxas", "bin/nvlink", "bin/fatbinary")


def _machine(platform: str) -> str:
    """The machine of ``platform``'s native code (x86_64, aarch64, AMD64); empty for a
    platform of no record (a lock file's word)."""
    known = platforms.load_platforms().get(platform)
    return known.binary_machine if known is not None else ""


def _runs_here(lock: Lock) -> bool:
    if lock.os != host_os():
        return False
    here = platforms.host_platform()
    return lock.os == "windows" or (
        here is not None and here.binary_machine == _machine(lock.platform)
    )


def check_build_tools(tree: Path, lock: Lock) -> None:
    """A toolkit with the nvcc component must compile: every tool nvcc runs is present and,
    when the toolkit is for this machine, ``nvcc --version`` runs and names the release.
    ToolkitError naming what is missing and the fix otherwise."""
    if not any(p.component == "nvcc" for p in lock.parts):
        return
    exe = ".exe" if lock.os == "windows" else ""
    missing = [t + exe for t in BUILD_TOOLS if not (tree / (t + exe)).is_file()]
    fix = "use --source redist" if lock.source == "wheels" else "the archives are incomplete"
    what = f"{lock.train} (CUDA {lock.cuda}) for {lock.platform} from {lock.source}"
    if missing:
        raise ToolkitError(
            f"{what} has no working nvcc: {', '.join(missing)} missing from the components "
            f"({', '.join(f'{p.package} {p.version}' for p in lock.parts)}); {fix}; "
            "nothing installed"
        )
    if not _runs_here(lock):
        return
    major_minor = ".".join(lock.cuda.split(".")[:2])
    try:
        result = subprocess.run(
            [str(tree / "bin" / ("nvcc" + exe)), "--version"],
            capture_output=True, text=True, timeout=120,
            env={**os.environ, "PATH": f"{tree / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}"},
        )  # fmt: skip
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ToolkitError(f"{what}: bin/nvcc does not run: {exc}; {fix}") from None
    if result.returncode != 0 or f"release {major_minor}" not in result.stdout:
        said = (result.stdout + result.stderr).strip().splitlines()[-1:] or ["no output"]
        raise ToolkitError(
            f"{what}: bin/nvcc --version did not name release {major_minor}: {said[0]}; {fix}"
        )


def _assemble(
    prefix: Path, lock: Lock, cache: Cache, jobs: int, progress: Progress | None,
    on_phase: Callable[[str], None] | None,
) -> tuple[int, int]:  # fmt: skip
    """Build the tree beside the prefix and rename it into place; (bytes downloaded,
    archives that were in the cache)."""
    items = [Download(p.url, p.sha256, p.size, p.label) for p in lock.parts]
    present = sum(1 for p in lock.parts if cache.blob(p.sha256).is_file())
    blobs, downloaded = fetch_all(items, cache, jobs=jobs, progress=progress)
    if on_phase is not None:
        on_phase("extracting")
    prefix.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{prefix.name}.cuwheel-", dir=prefix.parent))
    try:
        tree = staging / "tree"
        tree.mkdir()
        shared = Tree(tree)
        # the biggest archives first, so that the last one to finish is a small one
        order = sorted(lock.parts, key=lambda p: -blobs[p.sha256].stat().st_size)
        with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(order)))) as pool:
            futures = [pool.submit(_extract, p, blobs[p.sha256], shared) for p in order]
            try:
                for f in futures:
                    f.result()
            except BaseException:
                shared.stop.set()  # trust: every writer ends at its next member
                raise
        if lock.os == "linux":
            _layout_linux(tree)
            write_driver_stub(tree, _machine(lock.platform))
        check_build_tools(tree, lock)
        _version_json(tree, lock)
        text = lock.text()
        (tree / LOCK_NAME).write_text(text, encoding="utf-8")
        write_record(tree, text)
        write_owner(tree)  # trust: last, over the finished tree
        old = staging / "old"
        moved = prefix.exists()
        if moved:
            os.rename(prefix, old)
        try:
            os.rename(tree, prefix)
        except BaseException:
            if moved:
                os.rename(old, prefix)
            raise
    except BaseException:
        shutil.rmtree(staging, ignore_errors=True)
        raise
    shutil.rmtree(staging, ignore_errors=True)
    return downloaded, present


def verify(prefix: Path | str, *, full: bool = True) -> tuple[Lock, Damage]:
    """The prefix's lock and what differs from the files it recorded (``full``: every file
    re-hashed; else only those whose size, mtime or mode changed).  ToolkitError when the
    prefix holds no cuwheel toolkit."""
    prefix = Path(os.path.abspath(prefix))
    path = prefix / LOCK_NAME
    if not path.is_file():
        raise ToolkitError(f"{prefix}: no cuwheel toolkit here (no {LOCK_NAME})")
    lock = read_lock(path)
    return lock, verify_tree(prefix, path.read_text(encoding="utf-8"), full=full)


def install(
    prefix: Path | str,
    lock: Lock,
    *,
    cache: Cache | None = None,
    jobs: int = 4,
    progress: Progress | None = None,
    on_phase: Callable[[str], None] | None = None,
    full_verify: bool = False,
    repair: bool = True,
) -> Installed:
    """Make ``prefix`` hold exactly ``lock``: download what the cache lacks, check every
    file's size and sha256, extract safely, lay out the tree and rename it into place.

    A prefix that already holds the lock is verified against its file record first
    (``full_verify``: every file re-hashed): intact, it is up to date; damaged, it is
    assembled again from the (verified) archives, or with ``repair=False`` refused."""
    start = time.monotonic()
    prefix = Path(os.path.abspath(prefix))
    cache = cache or Cache.at()
    current = _prefix_lock(prefix)
    damage = Damage()
    if current is not None and current.same_content(lock):
        damage = verify_tree(
            prefix, (prefix / LOCK_NAME).read_text(encoding="utf-8"), full=full_verify
        )
        owned = not_owned(prefix)
        if not damage and owned is None:
            return Installed(prefix, current, False, 0, len(lock.parts), time.monotonic() - start)
        if not repair:
            why = damage.summary() if damage else owned
            raise ToolkitError(f"{prefix}: damaged: {why}; not repaired")
        # a repair replaces the prefix: only when cuwheel wrote it (its owner mark) and the
        # damage is to files cuwheel installed, never to files someone added
        if damage.extra or damage.unrecorded or not (prefix / OWNER_NAME).is_file():
            why = damage.summary() if damage else owned
            raise ToolkitError(
                f"{prefix}: {why}; not provably cuwheel's alone, nothing is replaced: move "
                "the added files away or choose a new directory"
            )
    else:
        _check_prefix(prefix)
    downloaded, present = _assemble(prefix, lock, cache, jobs, progress, on_phase)
    return Installed(prefix, lock, True, downloaded, present, time.monotonic() - start, damage)
